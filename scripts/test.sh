#!/usr/bin/env bash
# One command: install what is missing, build, and run every test: the normal build, then the
# AddressSanitizer + UndefinedBehaviorSanitizer build of the same suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

[ -d build-test ] || meson setup build-test --buildtype=debugoptimized -Dwerror=true >/dev/null
ninja -C build-test
meson test -C build-test --print-errorlogs --num-processes "$jobs"

[ -d build-asan ] || meson setup build-asan --buildtype=debug -Db_sanitize=address,undefined \
  -Db_lundef=false -Dwerror=true >/dev/null
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  CK_FORK=yes meson test -C build-asan --print-errorlogs --num-processes "$jobs" --timeout-multiplier 3
echo "all test suites passed (normal and sanitizer builds)"
