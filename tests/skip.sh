#!/usr/bin/env bash
# tests/skip.sh NAME REASON — the test NAME cannot run in this build: say so and exit 77, meson's
# skip status, so that the run counts it as skipped (never as passed). Registered in place of a
# test whose feature the build lacks (an optional dependency that was not found).
echo "SKIP: $1: $2"
exit 77
