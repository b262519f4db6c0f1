#!/usr/bin/env bash
# tests/sweep/run.sh TESSERA [mpi] — `tessera sweep` from outside: a 100-point IPU sweep run straight
# through, killed half-way (SIGKILL and SIGTERM) and resumed, torn files resumed, failing points,
# zip and filters, and spec errors with file:line:col. With `mpi`, the same sweeps over MPI ranks
# instead (a meson test of its own, skipped when the build has no MPI). Ends with "N passed, N
# failed". Without the ipu family the script is skipped (77); with the family compiled but not
# listed by the binary it fails (tests/need.sh).
set -u
T=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
part=${2:-local}
root=${TS_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
data=$root/tests/sweep
check() { if eval "$2"; then ok; else bad "$1"; fi; }

# shellcheck source=tests/need.sh
. "$root/tests/need.sh"
begin_checks
need_family "$T" ipu "sweep: the sweeps run IPU points"

# MPI: rank 0 hands out points, the others run them; same files as a local sweep, also resumed.
if [ "$part" = mpi ]; then
  need_feature TS_HAS_MPI MPI "no MPI library found, or -Dmpi=disabled" "sweep mpi: mpirun sweeps"
  if ! ldd "$T" 2>/dev/null | grep -q libmpi; then
    echo "FAIL: sweep mpi: the build compiled MPI, but $T does not link an MPI library" >&2
    exit 1
  fi
  if ! command -v mpirun >/dev/null || ! mpirun -np 2 --oversubscribe --allow-run-as-root true >/dev/null 2>&1; then
    echo "SKIP: sweep mpi: mpirun cannot start 2 ranks on this host"
    exit 77
  fi
  "$T" sweep "$data/small.yaml" -o "$tmp/small.csv" -q 2>/dev/null
  check "the local sweep with a failing point exits 1" '[ $? = 1 ]'
  mpi() { ASAN_OPTIONS=detect_leaks=0 mpirun -np 3 --oversubscribe --allow-run-as-root "$T" sweep "$@"; }
  mpi "$data/small.yaml" -o "$tmp/mpi.csv" -q 2>/dev/null
  check "mpirun sweep with a failing point exits 1" '[ $? = 1 ]'
  check "mpirun CSV equals the local one" 'cmp -s "$tmp/mpi.csv" "$tmp/small.csv"'
  check "mpirun reports equal the local ones" 'cmp -s "$tmp/mpi.csv.jsonl" "$tmp/small.csv.jsonl"'
  { head -3 "$tmp/small.csv"; sed -n 6p "$tmp/small.csv"; } >"$tmp/mpi2.csv"
  head -2 "$tmp/small.csv.jsonl" >"$tmp/mpi2.csv.jsonl"
  mpi "$data/small.yaml" -o "$tmp/mpi2.csv" -q 2>/dev/null
  check "mpirun resume: CSV equals the local one" 'cmp -s "$tmp/mpi2.csv" "$tmp/small.csv"'
  check "mpirun resume: reports equal the local ones" 'cmp -s "$tmp/mpi2.csv.jsonl" "$tmp/small.csv.jsonl"'
  mpi "$data/bad/unknown_key.yaml" -o "$tmp/never.csv" >/dev/null 2>"$tmp/err"
  check "mpirun with a bad spec exits 2" '[ $? = 2 ]'
  check "mpirun with a bad spec says so once" '[ "$(grep -c "unknown key" "$tmp/err")" = 1 ]'
  echo "sweep mpi: $pass passed, $fail failed"
  [ "$fail" = 0 ]
  exit
fi
[ "$part" = local ] || { echo "usage: run.sh TESSERA [mpi]" >&2; exit 2; }

spec=$data/tiles_sram_clock.yaml

# The reference: 100 points straight through with 2 workers.
"$T" sweep "$spec" -o "$tmp/ref.csv" -j 2 -q
check "uninterrupted sweep exits 0" '[ $? = 0 ]'
check "100 rows and a header" '[ "$(wc -l <"$tmp/ref.csv")" = 101 ]'
check "100 reports" '[ "$(wc -l <"$tmp/ref.csv.jsonl")" = 100 ]'
check "no row has an error" '! grep -q ",[^,]\+$" <(tail -n +2 "$tmp/ref.csv")'
check "rows sorted by point id" 'tail -n +2 "$tmp/ref.csv" | cut -d, -f1 | sort -n -c'
check "header" '[ "$(head -1 "$tmp/ref.csv")" = "point,workload,tiles,tile.sram,clock,cycles,time_s,energy.total_j,bytes.network,stats.supersteps.count,error" ]'
check "axis values in base units" 'grep -q "^99,loop.s,16,1048576,2000000000," "$tmp/ref.csv"'
check "report lines" 'head -1 "$tmp/ref.csv.jsonl" | grep -q "^{\"point\":0,\"report\":{\"schema_version\":1,"'

# Kill a sweep once some rows exist, resume it, and compare with the reference byte for byte.
# kill_after SIG CSV: start the sweep, wait for >= 20 rows, send SIG; echo the sweep's exit status.
kill_after() {
  local sig=$1 out=$2
  "$T" sweep "$spec" -o "$out" -j 2 -q 2>/dev/null &
  local pid=$!
  for _ in $(seq 1 600); do
    [ -f "$out" ] && [ "$(wc -l <"$out")" -ge 21 ] && break
    sleep 0.02
  done
  kill -"$sig" "$pid" 2>/dev/null
  wait "$pid"
  echo $?
}
for sig in KILL TERM; do
  out=$tmp/$sig.csv
  st=$(kill_after $sig "$out")
  rows=$(($(wc -l <"$out") - 1))
  if [ "$rows" -ge 100 ]; then
    echo "note: the sweep finished before SIG$sig arrived; resume still checked" >&2
  else
    check "SIG$sig stops the sweep (status $st)" '[ "$st" != 0 ]'
  fi
  "$T" sweep "$spec" -o "$out" -j 2 -q
  check "resumed after SIG$sig exits 0" '[ $? = 0 ]'
  check "resumed after SIG$sig: CSV equals the reference" 'cmp -s "$out" "$tmp/ref.csv"'
  check "resumed after SIG$sig: reports equal the reference" 'cmp -s "$out.jsonl" "$tmp/ref.csv.jsonl"'
done

# Ctrl-C reaches the whole process group, workers included: a worker stopped by SIGINT writes
# no row (its point runs again), and the resumed sweep ends as a clean one, with status 0. The
# points of slow.yaml take 0.7 s of CPU each (200 turns of the loop), so the signal, 0.3 s after
# the start, finds both workers running. Under a sanitizer (scripts/test.sh sets TS_SANITIZED) the
# same loop runs about 8 times slower; its copy there runs 50 times instead of 200 (about 0.7 s),
# so that a point still outlasts the signal's wait.
slow=$data/slow.yaml
if [ "${TS_SANITIZED:-0}" = 1 ]; then
  sed 's/setzi \$m2, 200/setzi $m2, 50/' "$data/slow.s" >"$tmp/slow.s"
  sed "s|workloads: \[slow.s\]|workloads: [$tmp/slow.s]|" "$data/slow.yaml" >"$tmp/slow.yaml"
  grep -q "setzi \$m2, 50" "$tmp/slow.s" && grep -q "$tmp/slow.s" "$tmp/slow.yaml" || bad "the sanitizer's slow loop"
  slow=$tmp/slow.yaml
fi
"$T" sweep "$slow" -o "$tmp/slow_ref.csv" -j 2 -q
check "slow sweep exits 0" '[ $? = 0 ]'
out=$tmp/group.csv
setsid "$T" sweep "$slow" -o "$out" -j 2 -q 2>"$tmp/group.err" &
pid=$!
sleep 0.3
kill -INT -- "-$pid" 2>/dev/null
wait "$pid"
check "SIGINT to the group stops the sweep with 1" '[ $? = 1 ] && grep -q "sweep interrupted" "$tmp/group.err"'
check "SIGINT to the group writes no 'killed by signal' row" '! grep -q "killed by signal" "$out"'
"$T" sweep "$slow" -o "$out" -j 2 -q 2>"$tmp/group.err"
check "resumed after SIGINT to the group exits 0" '[ $? = 0 ] && [ ! -s "$tmp/group.err" ]'
check "resumed after SIGINT to the group: CSV equals the reference" 'cmp -s "$out" "$tmp/slow_ref.csv"'
check "resumed after SIGINT to the group: reports equal the reference" 'cmp -s "$out.jsonl" "$tmp/slow_ref.csv.jsonl"'

# SIGTERM to one worker only: its point gets no row, the others run, and the sweep says to run
# it again (status 1); run again, it ends as a clean sweep.
out=$tmp/one.csv
"$T" sweep "$slow" -o "$out" -j 1 -q 2>"$tmp/one.err" &
pid=$!
sleep 0.3
kill -TERM $(pgrep -P "$pid") 2>/dev/null
wait "$pid"
check "a worker stopped by SIGTERM gives 1" '[ $? = 1 ] && grep -q "1 point was stopped by a signal: run the sweep again" "$tmp/one.err"'
check "a worker stopped by SIGTERM leaves no row for its point" '[ "$(wc -l <"$out")" = 4 ] && ! grep -q "killed by signal" "$out"'
"$T" sweep "$slow" -o "$out" -j 2 -q 2>"$tmp/one.err"
check "resumed after a stopped worker exits 0" '[ $? = 0 ] && [ ! -s "$tmp/one.err" ]'
check "resumed after a stopped worker: CSV equals the reference" 'cmp -s "$out" "$tmp/slow_ref.csv"'

# A worker killed by SIGKILL left a failed row and no report: its point runs again, and the new
# row replaces the old one in the count too (it said "1 of 101 points failed" and exit 1).
out=$tmp/killed.csv
sed 's/^7,\(loop.s,[^,]*,[^,]*,[^,]*\),.*$/7,\1,,,,,,worker killed by signal 9/' "$tmp/ref.csv" >"$out"
grep -v '^{"point":7,' "$tmp/ref.csv.jsonl" >"$out.jsonl"
check "the killed worker's row is there" 'grep -q "^7,.*worker killed by signal 9$" "$out"'
"$T" sweep "$spec" -o "$out" -j 2 -q 2>"$tmp/killed.err"
check "resumed after a killed worker exits 0" '[ $? = 0 ]'
check "resumed after a killed worker says nothing failed" '[ ! -s "$tmp/killed.err" ]'
check "resumed after a killed worker: CSV equals the reference" 'cmp -s "$out" "$tmp/ref.csv"'
check "resumed after a killed worker: reports equal the reference" 'cmp -s "$out.jsonl" "$tmp/ref.csv.jsonl"'

# A torn file: some rows out of order, a half-written last row and half the reports.
out=$tmp/torn.csv
{ head -1 "$tmp/ref.csv"; sed -n '30,40p;2,10p' "$tmp/ref.csv"; sed -n 50p "$tmp/ref.csv" | head -c 20; } >"$out"
head -n 15 "$tmp/ref.csv.jsonl" >"$out.jsonl"
head -c 100 "$tmp/ref.csv.jsonl" | tail -c 50 >>"$out.jsonl"
"$T" sweep "$spec" -o "$out" -j 2 -q
check "torn sweep resumed exits 0" '[ $? = 0 ]'
check "torn sweep resumed: CSV equals the reference" 'cmp -s "$out" "$tmp/ref.csv"'
check "torn sweep resumed: reports equal the reference" 'cmp -s "$out.jsonl" "$tmp/ref.csv.jsonl"'

# A finished sweep run again runs nothing and changes nothing.
cp "$tmp/ref.csv" "$tmp/again.csv"; cp "$tmp/ref.csv.jsonl" "$tmp/again.csv.jsonl"
"$T" sweep "$spec" -o "$tmp/again.csv" -j 1 -q
check "re-run of a finished sweep exits 0" '[ $? = 0 ]'
check "re-run of a finished sweep leaves the CSV" 'cmp -s "$tmp/again.csv" "$tmp/ref.csv"'

# -j 1 gives the same bytes as -j 2.
"$T" sweep "$spec" -o "$tmp/j1.csv" --jsonl "$tmp/j1.jsonl" -j 1 -q
check "-j 1 equals -j 2" 'cmp -s "$tmp/j1.csv" "$tmp/ref.csv" && cmp -s "$tmp/j1.jsonl" "$tmp/ref.csv.jsonl"'

# Failing points are rows with an error; the others run; exit status 1.
"$T" sweep "$data/small.yaml" -o "$tmp/small.csv" -q 2>"$tmp/err"
check "a failing point gives exit 1" '[ $? = 1 ]'
check "6 rows" '[ "$(wc -l <"$tmp/small.csv")" = 7 ]'
check "the failing rows say why" '[ "$(grep -c "but the config has 2 tiles\"$" "$tmp/small.csv")" = 2 ]'
check "the others have metrics" 'grep -q "^2,loop.s,4,1000000000,120099,[0-9.e-]*,$" "$tmp/small.csv"'
check "stderr counts the failures" 'grep -q "2 of 6 points failed" "$tmp/err"'

# An output written by another spec is refused.
"$T" sweep "$data/small.yaml" -o "$tmp/ref.csv" -q 2>"$tmp/err"
check "another spec's CSV is refused with 2" '[ $? = 2 ]'
check "and says so" 'grep -q "header differs" "$tmp/err"'

# zip, ranges and filters: --list prints the points.
"$T" sweep "$data/zip.yaml" --list >"$tmp/zip.out"
check "zip --list" '[ "$(cat "$tmp/zip.out")" = "$(printf "point,workload,tiles,tile.sram\n0,loop.s,4,65536\n1,loop.s,8,131072\n2,loop.s,12,262144\n4,loop.s,4,65536\n5,loop.s,8,131072\n6,loop.s,12,262144")" ]'

# Spec errors: file:line:col, did-you-mean, exit 2.
spec_error() {
  local file=$1 want=$2
  (cd "$data" && "$T" sweep "bad/$file" -o "$tmp/never.csv" >/dev/null 2>"$tmp/err")
  local st=$?
  if [ "$st" = 2 ] && [ "$(cat "$tmp/err")" = "tessera: bad/$file:$want" ]; then ok; else
    bad "$file: exit $st, got '$(cat "$tmp/err")', expected 'tessera: bad/$file:$want'"; fi
  [ ! -e "$tmp/never.csv" ] || bad "$file: an output was written"
}
spec_error unknown_key.yaml "3:1: unknown key 'axis' (did you mean 'axes'?)"
spec_error unknown_axis.yaml "5:3: unknown key 'tile.sarm' for arch ipu (did you mean 'tile.sram'?)"
spec_error bad_value.yaml "4:18: clock: expected a frequency like '1.6 GHz', got '3 ns' ('ns' is a unit of time; use Hz, kHz, MHz, GHz or THz)"
spec_error bad_filter.yaml "5:17: filter: unknown axis 'tile.sram' (a filter names axes of this sweep)"
spec_error bad_metric.yaml "3:35: metrics: unknown report field 'cycels' (did you mean 'cycles'?)"
spec_error bad_range.yaml "4:40: tile.sram: unknown key 'facter' (did you mean 'factor'?)"
spec_error unknown_model.yaml "2:13: workloads: workload 'resnet5' is neither a file nor a built-in program (did you mean the model 'resnet50'?)"
spec_error unknown_param.yaml "2:13: workloads: matmul: unknown parameter 'q' (parameters: m, k, n, dtype)"
spec_error bad_sweep_metric.yaml "3:19: metrics: unknown sweep field 'sweep.mac_shar' (did you mean 'sweep.mac_share'?)"
spec_error unknown_planner.yaml "4:3: planner: unknown planner 't11': auto (the cheapest plan per operator, the default), lcs (load-compute-store), t10 (compute-shift) or split (t10's partitions, nothing rotating)"
spec_error max_tiles_twice.yaml "3:12: max_tiles: pinned here and swept as an axis: give one of them"
spec_error max_tiles_zero.yaml "4:18: max_tiles: 0 is out of range [1, 1000000000]"

# Models: compiled per point, one compile per (model, keys a lowering reads, planner).
"$T" sweep "$data/models.yaml" -o "$tmp/models.csv" -j 2 2>"$tmp/err"
check "a sweep over models exits 0" '[ $? = 0 ]'
check "8 rows, none an error" '[ "$(tail -n +2 "$tmp/models.csv" | grep -c ",$")" = 8 ]'
check "the clock shares a compile: 4 for 8 points" 'grep -q "4 compiles for 8 points" "$tmp/err"'
field() { sed -n "$(($1 + 2))p" "$tmp/models.csv" | awk -F, -v k="$2" '{print $(NF - k)}'; } # k from the end
check "a shared compile gives the cycles of its own" '[ "$(field 0 8)" = "$(field 1 8)" ]'
check "rows carry runs per second and the MAC share" '[ "$(field 0 3)" != "" ] && [ "$(field 0 1)" != "" ]'
"$T" sweep "$data/models.yaml" -o "$tmp/models1.csv" -j 1 -q
check "-j 1 and -j 2 give the same rows" 'cmp -s "$tmp/models.csv" "$tmp/models1.csv"'
# The mapping pinned (planner) and swept (max_tiles): a compile per tile count, each plan within
# its count (the row's sweep.plan names the tiles used), fewer tiles never faster on this matmul.
printf 'config: ipu_tiny4\nworkloads: ["matmul:m=32,k=32,n=32"]\nplanner: lcs\naxes:\n  max_tiles: [1, 2, 4]\nmetrics: [cycles, sweep.planner, sweep.plan]\n' >"$tmp/pin.yaml"
"$T" sweep "$tmp/pin.yaml" -o "$tmp/pin.csv" 2>"$tmp/err"
check "a sweep over max_tiles exits 0 with a compile per count" '[ $? = 0 ] && grep -q "3 compiles for 3 points" "$tmp/err"'
check "each plan uses at most its tiles, with the pinned planner" \
  'python3 -c "import csv,re,sys; r=list(csv.DictReader(open(sys.argv[1]))); sys.exit(not (len(r)==3 and all(r_[\"sweep.planner\"]==\"lcs\" and int(re.search(r\"(\\d+) tiles?\",r_[\"sweep.plan\"]).group(1))<=int(r_[\"max_tiles\"]) for r_ in r) and int(r[0][\"cycles\"])>=int(r[1][\"cycles\"])>=int(r[2][\"cycles\"])))" "$tmp/pin.csv"'
# The keys the compile cache shares over are read by no lowering: on every family, the program
# compiled with the clock, energy.* and power.* changed is the one compiled without (all but its
# .config fingerprint line).
same_program() {
  local cfg=$1 model=$2; shift 2
  "$T" compile -c "$cfg" "$model" -o "$tmp/p0.bin" 2>/dev/null && "$T" disasm "$tmp/p0.bin" | grep -v '^\.config' >"$tmp/p0.s" &&
    "$T" compile -c "$cfg" "$@" "$model" -o "$tmp/p1.bin" 2>/dev/null && "$T" disasm "$tmp/p1.bin" | grep -v '^\.config' >"$tmp/p1.s" &&
    cmp -s "$tmp/p0.s" "$tmp/p1.s"
}
for fc in "ipu ipu_tiny4 matmul:m=32,k=32,n=32" "tsp tsp_v1 matmul:m=8,k=64,n=64" "wse wse_4x4 matmul:m=8,k=8,n=8"; do
  read -r fam fcfg fmodel <<<"$fc"
  if "$T" config --list | grep -q "^  $fam "; then
    check "$fam: the clock, energy and power keys leave the program as it is" \
      'same_program $fcfg $fmodel --set clock=1.234GHz --set energy.static_power=5W --set power.node=7nm --set power.vdd=0.7 --set power.clock_share=0.5'
  fi
done

# Along the MK2's V-f curve a lower clock runs on a lower supply: less energy per run, more time.
printf 'config: ipu_mk2\nworkloads: ["matmul:m=64,k=64,n=64"]\naxes:\n  clock: [0.9 GHz, 1.325 GHz]\nmetrics: [time_s, energy.total_j]\n' >"$tmp/vf.yaml"
"$T" sweep "$tmp/vf.yaml" -o "$tmp/vf.csv" -q
check "V-f: one compile for both clocks, both rows clean" '[ $? = 0 ]'
check "V-f: the lower clock takes longer and less energy" 'awk -F, "NR==2{t0=\$(NF-2);e0=\$(NF-1)} NR==3{t1=\$(NF-2);e1=\$(NF-1)} END{exit !(t0 > t1 && e0 < e1)}" "$tmp/vf.csv"'
for p in 1 2; do
  "$T" run -c ipu_tiny4 --set tile.sram="$(field $p 10)" --set clock="$(field $p 9)" "matmul:m=32,k=32,n=32" \
    -f csv -o "$tmp/one.csv" 2>/dev/null
  check "point $p equals a run of its own" 'grep -q ",$(field $p 8),.*,$(field $p 6)," "$tmp/one.csv"'
done
spec_error bad_yaml.yaml "3:5: bad yaml: did not find expected ',' or ']'"

# A point that never ends stops at the default cycle limit: its row says so, the sweep goes on.
printf 'config: ipu_tiny4\nworkloads: [spin.s, loop.s]\n' >"$tmp/spin.yaml"
cp "$root/tests/data/cli/spin.s" "$data/loop.s" "$tmp/"
"$T" sweep "$tmp/spin.yaml" -o "$tmp/spin.csv" -q 2>"$tmp/err"
check "a point at the default cycle limit fails the sweep with 1" '[ $? = 1 ] && grep -q "1 of 2 points failed" "$tmp/err"'
check "its row names the default limit" 'grep -q "^0,spin.s,.*reached the default cycle limit of 1000000000 before the program finished: a longer point needs max_cycles in the sweep spec" "$tmp/spin.csv"'
check "the other point ran" 'grep -q "^1,loop.s,120099," "$tmp/spin.csv"'

# --jsonl naming the CSV is refused before anything is written (the reports overwrote the CSV).
cp "$tmp/ref.csv" "$tmp/same.csv"
(cd "$tmp" && "$T" sweep "$spec" -o same.csv --jsonl ./same.csv -q 2>"$tmp/err")
check "--jsonl equal to -o is a usage error" '[ $? = 2 ] && grep -q "is the CSV given with -o" "$tmp/err"'
check "--jsonl equal to -o leaves the CSV" 'cmp -s "$tmp/same.csv" "$tmp/ref.csv"'

# Usage.
"$T" sweep "$spec" >/dev/null 2>&1
check "no -o is a usage error" '[ $? = 2 ]'
"$T" sweep "$spec" -o "$tmp/x.csv" -j 0 >/dev/null 2>&1
check "-j 0 is a usage error" '[ $? = 2 ]'

echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
