#!/usr/bin/env bash
# tests/viz/cli_frames.sh — `tessera run --frames DIR --frame-every N --summary-png FILE` end to end:
# the frames and the summary are PNG files, the report is the same as without them, and misuse
# is refused with status 2; traces with activity and power on every family.
# usage: cli_frames.sh TESSERA [png] — without `png` the checks that write no PNG; with it those
# that do (a meson test of its own, skipped when the build has no libpng). Either is skipped
# without one of the three families, and fails when the build has a family or libpng that the
# binary does not offer (tests/need.sh).
set -u
T=$1
part=${2:-base}
root=${TS_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/need.sh
. "$root/tests/need.sh"
case "$part" in
  base) ;;
  png) need_feature TS_HAS_PNG libpng "libpng not found" "viz_cli png: frames and summaries as PNG files" ;;
  *) echo "usage: cli_frames.sh TESSERA [png]" >&2; exit 2 ;;
esac
for f in ipu tsp wse; do need_family "$T" $f "viz_cli $part: runs on ipu_mk1, tsp_v1 and wse_32x32"; done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # check NAME CONDITION...
  local name=$1
  shift
  if "$@"; then echo "ok: $name"; else echo "FAIL: $name"; fail=1; fi
}
png_sig() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

"$T" run -q -c ipu_mk1 > "$dir/plain.txt"
check "run without frames" test $? -eq 0

if [ "$part" = png ]; then
  "$T" run -q -c ipu_mk1 --frames "$dir/frames" --frame-every 500 --summary-png "$dir/sum.png" > "$dir/frames.txt"
  check "run with frames" test $? -eq 0
  check "same report" cmp -s "$dir/plain.txt" "$dir/frames.txt"
  # the default workload ends at cycle 2297: 5 windows of 500 cycles
  check "five frames" test "$(ls "$dir/frames" | wc -l)" -eq 5
  check "frames are PNG" png_sig "$dir/frames/frame_000004.png"
  check "summary is PNG" png_sig "$dir/sum.png"
  check "no temporary files left" test -z "$(find "$dir" -name '*.tmp.*')"
  # the other families draw too, and their reports do not change
  for c in tsp_v1 wse_32x32; do
    "$T" run -q -c $c > "$dir/$c.txt"
    "$T" run -q -c $c --frames "$dir/f_$c" --frame-every 10 --summary-png "$dir/$c.png" > "$dir/$c.frames.txt"
    check "$c: run with frames" test $? -eq 0
    check "$c: same report" cmp -s "$dir/$c.txt" "$dir/$c.frames.txt"
    check "$c: frames written" test "$(ls "$dir/f_$c" | wc -l)" -ge 2
    check "$c: summary is PNG" png_sig "$dir/$c.png"
  done
  # the link heat map: a PNG on the wafer (with cairo)
  if [ "$TS_HAS_CAIRO" = 1 ]; then
    "$T" run -q -c wse_4x4 traffic:rate=0.05 --links-png "$dir/links.png" > /dev/null
    check "--links-png: run" test $? -eq 0
    check "--links-png: a PNG" png_sig "$dir/links.png"
  fi
  exit $fail
fi
"$T" run -q -c tsp_v1 --links-png "$dir/l.png" > /dev/null 2> "$dir/err.txt"
check "--links-png off the wafer is refused" test $? -eq 2
check "message says why" grep -q "the wafer's (wse), not tsp's" "$dir/err.txt"
check "nothing written" test ! -e "$dir/l.png"
"$T" run -q -c ipu_mk1 --frame-every 100 > /dev/null 2> "$dir/err.txt"
check "--frame-every alone is refused" test $? -eq 2
check "message says why" grep -q "needs --frames DIR" "$dir/err.txt"
"$T" run -q -c ipu_mk1 --trace-limit 5 > /dev/null 2>&1
check "--trace-limit alone is refused" test $? -eq 2
# a limit too small for the run: events are dropped, the run says so and the file records it
"$T" run -q -c ipu_mk1 --trace "$dir/small.json" --trace-limit 0.002 > /dev/null 2> "$dir/small.err"
check "small trace limit: the run succeeds" test $? -eq 0
check "small trace limit: warning names the dropped events" \
  grep -Eq "warning: trace .*small.json reached its limit of 0.002 MB: [1-9][0-9]* events were dropped \(raise it with --trace-limit MB\)" "$dir/small.err"
check "small trace limit: the file records them" grep -Eq '"dropped_events":[1-9]' "$dir/small.json"
"$T" run -q -c ipu_mk1 --trace "$dir/big.json" > /dev/null 2> "$dir/big.err"
check "default trace limit: no warning" test ! -s "$dir/big.err"
"$T" run -q -c ipu_mk1 --trace "$dir/x.json" --trace-limit 0.0001 > /dev/null 2>&1
check "--trace-limit below 1 kB is refused" test $? -eq 2
# traces: activity tracks and power on every family, the reports unchanged
for c in ipu_mk1 tsp_v1 wse_32x32; do
  [ -f "$dir/$c.txt" ] || "$T" run -q -c $c > "$dir/$c.txt"
  "$T" run -q -c $c --trace "$dir/$c.json" --trace-limit 5 --frame-every 50 > "$dir/$c.trace.txt"
  check "$c: run with a trace" test $? -eq 0
  check "$c: same report with a trace" cmp -s "$dir/$c.txt" "$dir/$c.trace.txt"
  check "$c: power counter" grep -q '"name":"power W"' "$dir/$c.json"
  check "$c: activity tracks" grep -q '"args":{"name":"activity"}' "$dir/$c.json"
done
check "tsp_v1: a track per slice" grep -q '"args":{"name":"slice x 94"}' "$dir/tsp_v1.json"
check "tsp_v1: east counter" grep -q '"name":"east bytes per cycle"' "$dir/tsp_v1.json"
# 5 MB hold 76 tracks of 64 KiB: the 1,024 PEs become 64 blocks of 4 x 4
check "wse_32x32: blocks of 4 x 4 PEs" grep -q '"args":{"name":"unit x 28-31 y 28-31"}' "$dir/wse_32x32.json"
check "wse_32x32: 64 tracks" test "$(grep -c '"name":"thread_name","ph":"M","pid":1' "$dir/wse_32x32.json")" -eq 64
"$T" run -q -c ipu_mk1 --frames "$dir/f2" --frame-every 0 > /dev/null 2>&1
check "--frame-every 0 is refused" test $? -eq 2
exit $fail
