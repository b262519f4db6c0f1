#!/usr/bin/env bash
# bench/scaling.sh BUILD [THREADS ...] — how the simulator's host threads scale: the speed-up of
# each thread count (default 1 2 4 8 16) over one thread on three workloads, wall time over wall
# time, each run's report compared with the one-thread report (they must be byte-identical):
#
#   1. the IPU BSP program of bench_ipu_bsp (1216 tiles of ipu_mk1, 100 supersteps; best of 3);
#   2. ResNet-50 batch 1 on ipu_mk1, compiled once, then run (load and simulation);
#   3. the whole-wafer stencil of bench_wse_stencil (750 x 994 PEs of wse2, nz 8, radius 4, one
#      step, timing only; its wall time excludes building and loading the program).
#
# A benchmark, not a test: it prints figures and fails only when a run fails or two reports
# differ. SKIP=ipu,resnet,stencil leaves parts out (the stencil needs about 4 GiB).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/scaling.sh BUILD [THREADS ...]" >&2; exit 2; }
B=$(cd "$1" && pwd)
shift
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 2 4 8 16)
T=$B/cli/tessera
skip=",${SKIP:-},"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
echo "host: $(nproc) cores; threads: ${threads[*]}"

speedups() { # name, then "threads wall" pairs on stdin: one line per count with its speed-up
  awk -v name="$1" 'NR == 1 {base = $2} {printf "  %-28s %2d threads: %8.2f s wall, %5.2fx\n", name, $1, $2, base / $2}'
}

if [[ $skip != *,ipu,* ]]; then
  for t in "${threads[@]}"; do
    "$B/bench/bench_ipu_bsp" 100 "$t" 3 >"$tmp/bsp" || { cat "$tmp/bsp" >&2; exit 1; }
    grep -q "reports identical" "$tmp/bsp" || { echo "bench_ipu_bsp: reports differ at $t threads" >&2; exit 1; }
    awk -v t="$t" '/^threads/ && $2 + 0 == t {for (i = 1; i <= NF; i++) if ($i == "wall,") print t, $(i - 2); exit}' "$tmp/bsp"
  done | speedups "IPU BSP program (best of 3)"
fi

if [[ $skip != *,resnet,* ]]; then
  "$T" compile -c ipu_mk1 resnet50 -o "$tmp/r50.bin" >/dev/null
  for t in "${threads[@]}"; do
    t0=$(now)
    "$T" run -q -c ipu_mk1 -j "$t" "$tmp/r50.bin" -f json -o "$tmp/r50_$t.json"
    echo "$t $(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}')"
    cmp -s "$tmp/r50_${threads[0]}.json" "$tmp/r50_$t.json" || { echo "ResNet-50: report differs at $t threads" >&2; exit 1; }
  done | speedups "ResNet-50 on ipu_mk1"
fi

if [[ $skip != *,stencil,* ]]; then
  for t in "${threads[@]}"; do
    "$B/bench/bench_wse_stencil" 750 994 8 4 1 "$t" >"$tmp/st" || { cat "$tmp/st" >&2; exit 1; }
    awk -v t="$t" '/wall time/ {print t, $3}' "$tmp/st"
    grep "simulated cycles" "$tmp/st" >"$tmp/st_cycles_$t"
    cmp -s "$tmp/st_cycles_${threads[0]}" "$tmp/st_cycles_$t" || { echo "stencil: cycles differ at $t threads" >&2; exit 1; }
  done | speedups "whole-wafer stencil"
fi
