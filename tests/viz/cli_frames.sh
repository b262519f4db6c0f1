#!/usr/bin/env bash
# tests/viz/cli_frames.sh — `tessera run --frames DIR --frame-every N --summary-png FILE` end to end:
# the frames and the summary are PNG files, the report is the same as without them, and misuse
# is refused with status 2. usage: cli_frames.sh TESSERA HAVE_PNG
set -u
T=$1
have_png=$2
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
if [ "$have_png" = 1 ]; then
  "$T" run -q -c ipu_mk1 --frames "$dir/frames" --frame-every 500 --summary-png "$dir/sum.png" > "$dir/frames.txt"
  check "run with frames" test $? -eq 0
  check "same report" cmp -s "$dir/plain.txt" "$dir/frames.txt"
  # the default workload ends at cycle 2297: 5 windows of 500 cycles
  check "five frames" test "$(ls "$dir/frames" | wc -l)" -eq 5
  check "frames are PNG" png_sig "$dir/frames/frame_000004.png"
  check "summary is PNG" png_sig "$dir/sum.png"
  check "no temporary files left" test -z "$(find "$dir" -name '*.tmp.*')"
fi
"$T" run -q -c ipu_mk1 --frame-every 100 > /dev/null 2> "$dir/err.txt"
check "--frame-every alone is refused" test $? -eq 2
check "message says why" grep -q "needs --frames DIR" "$dir/err.txt"
"$T" run -q -c ipu_mk1 --frames "$dir/f2" --frame-every 0 > /dev/null 2>&1
check "--frame-every 0 is refused" test $? -eq 2
if [ "$have_png" = 1 ]; then
  # the other families draw too, and their reports do not change
  for c in tsp_v1 wse_32x32; do
    "$T" run -q -c $c > "$dir/$c.txt"
    "$T" run -q -c $c --frames "$dir/f_$c" --frame-every 10 --summary-png "$dir/$c.png" > "$dir/$c.frames.txt"
    check "$c: run with frames" test $? -eq 0
    check "$c: same report" cmp -s "$dir/$c.txt" "$dir/$c.frames.txt"
    check "$c: frames written" test "$(ls "$dir/f_$c" | wc -l)" -ge 2
    check "$c: summary is PNG" png_sig "$dir/$c.png"
  done
fi
exit $fail
