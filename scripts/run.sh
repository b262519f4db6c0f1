#!/usr/bin/env bash
# One command: install what is missing, build, and run the default simulation.
# Extra arguments go to `tessera run` (e.g. scripts/run.sh -c ipu_mk2 --format json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# A release build for running; development builds (the default buildtype) fail on warnings.
[ -d build ] || meson setup build --buildtype=release -Dwerror=false >/dev/null
ninja -C build >/dev/null
exec build/cli/tessera run "$@"
