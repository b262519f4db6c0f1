#!/usr/bin/env bash
# One command: install what is missing, build, and run the default simulation.
# Extra arguments go to `tessera run` (e.g. scripts/run.sh -c ipu_mk2 --format json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
exec build/cli/tessera run "$@"
