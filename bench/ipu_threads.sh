#!/usr/bin/env bash
# bench/ipu_threads.sh BUILD [PROGRAM [SUPERSTEPS]] — what bounds the IPU model's speed-up on host
# threads, in counts that are the same on any host (a loaded 2-core machine included):
#
#   1. bench_ipu_balance on PROGRAM (default `bsp`, the program of bench_ipu_bsp with SUPERSTEPS
#      supersteps, default 20; or a program file such as the r50.bin of `tessera compile -c ipu_mk1
#      resnet50 -o r50.bin`): rounds and barrier meetings per superstep, and the speed-up bound of
#      the parallel phase for 2 to 16 threads (the busiest thread of each round);
#   2. the serial fraction under callgrind (one thread): the host instructions of the model's step
#      (ts_ipu_step) outside the threads' two phases (run_range, finish_range), i.e. what the main
#      thread does alone between rounds (verdicts, the chip-wide sync, the exchange check);
#   3. the speed-up both allow together (Amdahl): 1 / (serial + parallel / bound).
#
# A benchmark, not a test. Callgrind runs the model about 50 times slower: ResNet-50 takes hours
# there, the BSP program seconds.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/ipu_threads.sh BUILD [PROGRAM [SUPERSTEPS]]" >&2; exit 2; }
B=$(cd "$1" && pwd)
prog=${2:-bsp}
steps=${3:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$B/bench/bench_ipu_balance" "$prog" ipu_mk1 "$steps" | tee "$tmp/balance"
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$B/bench/bench_ipu_balance" "$prog" ipu_mk1 "$steps" \
  >/dev/null 2>"$tmp/vg" || { cat "$tmp/vg" >&2; exit 1; }
callgrind_annotate --inclusive=yes "$tmp/cg" >"$tmp/ann"
ir() { # inclusive instructions of function $1
  awk -v f="$1" '{g = $0; gsub(/,/, "", $1)} g ~ (":" f " ") || g ~ (":" f "$") {print $1; exit}' "$tmp/ann"
}
step=$(ir ts_ipu_step); run=$(ir run_range); fin=$(ir finish_range)
awk -v s="$step" -v r="$run" -v f="$fin" 'BEGIN {
  ser = s - r - f
  printf "host instructions in the step: %.4g; run phase %.4g, commit phase %.4g, main thread alone %.4g: serial fraction %.4f\n", s, r, f, ser, ser / s
}'
awk -v s="$step" -v r="$run" -v f="$fin" '/^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$/ {
  ser = (s - r - f) / s
  printf "  %2d threads: speed-up at most %.2f (serial fraction with the model split\x27s bound %.2f)\n", $1, 1 / (ser + (1 - ser) / $3), $3
}' "$tmp/balance"
