#!/usr/bin/env bash
# tests/cli/noc.sh TESSERA — synthetic traffic from the command line (docs/noc.md): `traffic:SPEC` runs
# on a wafer config in `run` (the same report on 1 and 2 threads and in --lockstep) and as a
# `sweep` workload (a bad spec is refused when the sweep loads, at its line); a bad spec, another
# family's config, too few colours, an odd fabric.vcs under o1turn are input errors (exit 2) that
# say what is wrong.
set -u
T=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=${TS_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/need.sh
. "$root/tests/need.sh"
begin_checks
need_family "$T" wse "cli noc: traffic runs on the wafer"

cfg=(-c wse_4x4 -s mesh.width=8 -s mesh.height=8 -s fabric.routing=o1turn -s fabric.hop_latency=2)
wl=traffic:pattern=uniform,rate=0.3,flits=2,warmup=100,measure=400
expect run 0 "" "$T" run "${cfg[@]}" -f json -o "$tmp/a.json" "$wl"
expect run_threads 0 "" "$T" run "${cfg[@]}" -j 2 -f json -o "$tmp/b.json" "$wl"
expect run_lockstep 0 "" "$T" run "${cfg[@]}" --lockstep -f json -o "$tmp/c.json" "$wl"
if cmp -s "$tmp/a.json" "$tmp/b.json" && cmp -s "$tmp/a.json" "$tmp/c.json"; then ok; else bad "reports differ by mode"; fi
if grep -q '"traffic.latency.avg"' "$tmp/a.json"; then ok; else bad "no traffic.latency.avg in the report"; fi

expect bad_key 2 "traffic: unknown key 'speed'" "$T" run -c wse_4x4 traffic:speed=3
expect bad_value 2 "traffic: rate=2: expected a number in 1e-09..1" "$T" run -c wse_4x4 traffic:rate=2
expect other_family 2 "'traffic:rate=0.1' is a program generator of the wse family, not of ipu" "$T" run -c ipu_tiny4 traffic:rate=0.1
expect colours 2 "find no free colour among 24" "$T" run -c wse_4x4 -s mesh.width=8 -s mesh.height=8 traffic:rate=0.1
expect o1turn_odd 2 "o1turn needs an even fabric.vcs" "$T" run -c wse_4x4 -s fabric.routing=o1turn -s fabric.vcs=3 traffic:

cat >"$tmp/sweep.yaml" <<'YAML'
config: wse_4x4
workloads: ["traffic:pattern=transpose,rate=0.05,warmup=50,measure=200", "traffic:pattern=neighbour,rate=0.1,warmup=50,measure=200"]
axes:
  fabric.routing: [colour, xy]
metrics: [cycles, stats.traffic.offered, stats.traffic.accepted, stats.traffic.latency.avg]
YAML
expect sweep 0 "" "$T" sweep "$tmp/sweep.yaml" -o "$tmp/s.csv" -q
# four points, each with an empty error column (the last)
if [ "$(tail -n +2 "$tmp/s.csv" | grep -c ',$')" = 4 ]; then ok; else bad "sweep rows:"; cat "$tmp/s.csv" >&2; fi
sed 's/rate=0.05/rate=7/' "$tmp/sweep.yaml" >"$tmp/bad.yaml"
expect sweep_bad 2 "traffic: rate=7: expected a number in 1e-09..1" "$T" sweep "$tmp/bad.yaml" --list

echo "cli noc: $pass passed, $fail failed"
[ "$fail" = 0 ]
