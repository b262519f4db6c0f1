#!/usr/bin/env bash
# One command: install what is missing, build, and run every test: the normal build, then the
# AddressSanitizer + UndefinedBehaviorSanitizer build of the same suite, then the
# ThreadSanitizer build of the suites whose models run on threads (ipu, wse).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

[ -d build-test ] || meson setup build-test --buildtype=debugoptimized -Dwerror=true >/dev/null
ninja -C build-test
log=$(mktemp)
trap 'rm -f "$log"' EXIT
meson test -C build-test --print-errorlogs --num-processes "$jobs" | tee "$log"

# -O1, as the sanitizers' own docs advise: the tests ran 2.3 times faster than unoptimised
# (test_lower_tsp 33 s of CPU against 77 s), for about 80 s more of compiling (docs/testing.md).
# -g1 (line tables and functions, no variables): the reports' stacks keep their file:line, and the
# tree compiles about a quarter faster (tsp/products.c 5.5 s against 3.9 s; docs/testing.md).
[ -d build-asan ] || meson setup build-asan --buildtype=debug -Doptimization=1 -Dc_args=-g1 \
  -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true >/dev/null
# Timeouts are about 5x each test's time in the normal build (docs/testing.md). The ASan + UBSan
# build ran the tests 2 to 7 times slower unoptimised: its run multiplies them by 4, meson's and
# Check's alike. The docs suite (every command of the docs, as written: whole models) runs in the
# normal build only; the code it reaches is the code the cli suites run here. So do the calibration
# suites (published figures of the models the other suites run here). TS_SANITIZED=1 trims the
# longest tests to what they must show (docs/testing.md).
# Three end-to-end scripts of the cli suite run in the normal build only as well: sweep (the
# parallel runner, killed and resumed; its code runs here in test_sweep), cli_values and cli_ipu
# (whole models through the command line; their lowerings and runs are test_lower_ipu*'s here, the
# command line's paths the cli test's). docs/testing.md. So do the golden reports of the three
# families (ResNet-50 at 32 x 32 on the IPU and the TSP: the same lowerings and runs as
# test_values' ResNet-18 here; at 16 x 16 on the wafer, 17 s of CPU here: its operators' lowerings
# and runs are test_lower_wse's here, strided Convs, projections, the skip path, pools, the Gemm).
asan_tests=$(meson test -C build-asan --list --no-rebuild --no-suite docs --no-suite calibration |
  sed -n 's|^[^ ]* / ||p' |
  grep -vxE 'sweep|cli_values|cli_ipu|test_models_golden_(ipu|tsp|wse)')
[ -n "$asan_tests" ] || { echo "no test to run under ASan + UBSan" >&2; exit 1; }
# Only what these tests run is built here (their executables and the programs they depend on), not
# the benchmarks, the calibration suites or the tools: the test list is read before the build.
asan_targets=$(meson introspect build-asan --tests --targets | python3 -c '
import json, os, sys
root = os.path.abspath(sys.argv[1])
names = set(sys.argv[2].split())
info = json.load(sys.stdin)
files = {t["id"]: t["filename"] for t in info["targets"]}
out = set()
for t in info["tests"]:
    if t["name"] not in names:
        continue
    if os.path.abspath(t["cmd"][0]).startswith(root + os.sep):
        out.add(os.path.relpath(t["cmd"][0], root))
    for d in t["depends"]:
        out.update(os.path.relpath(f, root) for f in files.get(d, []))
print("\n".join(sorted(out)))' build-asan "$asan_tests")
[ -n "$asan_targets" ] || { echo "no target to build under ASan + UBSan" >&2; exit 1; }
# shellcheck disable=SC2086 # one target per word
ninja -C build-asan $asan_targets
# TS_SANITIZER=address: the lowering tests run their programs in the fast mode alone; the family
# tests run the threaded and lockstep code here in every mode (tests/arch/arch_modes.h).
# shellcheck disable=SC2086 # one test name per word
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  TS_SANITIZED=1 TS_SANITIZER=address CK_FORK=yes CK_TIMEOUT_MULTIPLIER=4 \
  meson test -C build-asan --no-rebuild --print-errorlogs \
  --num-processes "$jobs" --timeout-multiplier 4 $asan_tests | tee -a "$log"

# -g1 as for ASan + UBSan: ThreadSanitizer's reports keep their stacks' file:line (docs/testing.md).
[ -d build-tsan ] || meson setup build-tsan --buildtype=debugoptimized -Dc_args=-g1 -Db_sanitize=thread \
  -Db_lundef=false -Dwerror=true >/dev/null
# Only what the threaded suites run is built here (their test executables and what they link), not
# the whole tree: meson lists the suites' executables, relative to the build directory.
tsan_targets=$(meson introspect build-tsan --tests | python3 -c '
import json, os, sys
root = os.path.abspath(sys.argv[1])
for t in json.load(sys.stdin):
    if any(s.split(":")[-1] in ("ipu", "wse") for s in t["suite"]):
        print(os.path.relpath(t["cmd"][0], root))' build-tsan | sort -u)
[ -n "$tsan_targets" ] || { echo "no ipu or wse test to run under ThreadSanitizer" >&2; exit 1; }
# shellcheck disable=SC2086 # one target per word
ninja -C build-tsan $tsan_targets
# ThreadSanitizer ran the threaded models' tests 20 to 45 times slower (test_wse_modes 69 s for 1.7 s,
# test_ipu_kernels 56 s for 1.7 s): its run multiplies the timeouts by 10. TS_SANITIZED=1 trims
# test_wse_modes' sorted-lists and re-split cases to their threaded runs; TS_SANITIZER=thread runs
# the modes on threads only, on 3 threads where a test asks for 2 and 3 (tests/arch/arch_modes.c:
# a run on one thread has no race to find; the other builds compare every mode; docs/testing.md).
TSAN_OPTIONS=halt_on_error=1 TS_SANITIZED=1 TS_SANITIZER=thread CK_TIMEOUT_MULTIPLIER=10 \
  meson test -C build-tsan --no-rebuild --suite ipu \
  --suite wse --print-errorlogs --num-processes "$jobs" --timeout-multiplier 10 | tee -a "$log"
# meson stops the script above on any failure (pipefail); here every suite of the three builds passed.
passed=$(awk '/^Ok:/ {n += $2} END {print n + 0}' "$log")
failed=$(awk '/^Fail:/ {n += $2} /^Timeout:/ {n += $2} END {print n + 0}' "$log")
# a test whose family or optional dependency this build lacks exits 77: counted, and named
skipped=$(awk '/^Skipped:/ {n += $2} END {print n + 0}' "$log")
echo "all test suites passed (normal and sanitizer builds)"
echo "$passed passed, $skipped skipped, $failed failed"
if [ "$skipped" != 0 ]; then grep -h "^SKIP: " build-test/meson-logs/testlog.txt | sort -u; fi
