# tests/need.sh — sourced by the test scripts: what this build compiled, and the checks that a
# script's part can run. meson passes the build's facts in the environment, from the same variables
# that decide what is compiled (tests/meson.build):
#   TS_FAMILIES   the chip families compiled, space-separated ("ipu tsp wse")
#   TS_HAS_ONNX   1 when ONNX import is compiled (protobuf-c found), else 0
#   TS_HAS_CAIRO, TS_HAS_PNG, TS_HAS_SDL2, TS_HAS_MPI   the same for cairo, libpng, SDL2 and MPI
# A part whose family or feature the build lacks exits 77 (meson's skip status) saying what is
# skipped and why; one whose family the build has but the binary does not list fails: a broken
# `tessera config --list` must not turn tests into skips. Run by hand (not through meson), the
# facts default to everything compiled.
: "${TS_FAMILIES=ipu tsp wse}" "${TS_HAS_ONNX=1}" "${TS_HAS_CAIRO=1}" "${TS_HAS_PNG=1}" "${TS_HAS_SDL2=1}"
: "${TS_HAS_MPI=1}"

# need_family TESSERA FAMILY WHAT: skip (77) if the build has no FAMILY, fail (exit 1) if the
# build has it and TESSERA does not list it.
need_family() {
  local t=$1 f=$2 what=$3
  case " $TS_FAMILIES " in
    *" $f "*) ;;
    *) echo "SKIP: $what: this build has no $f family (built: ${TS_FAMILIES:-none})"; exit 77 ;;
  esac
  if ! "$t" config --list | grep -q "^  $f "; then
    echo "FAIL: $what: the build compiled the $f family, but 'tessera config --list' does not list it:" >&2
    "$t" config --list >&2
    exit 1
  fi
}

# need_feature VAR NAME WHY WHAT: skip (77) unless the build has the feature (VAR is 1).
need_feature() {
  local var=$1 name=$2 why=$3 what=$4
  case "${!var}" in
    1) ;;
    0) echo "SKIP: $what: this build has no $name ($why)"; exit 77 ;;
    *) echo "FAIL: $what: $var is '${!var}', not 0 or 1" >&2; exit 1 ;;
  esac
}

# expect NAME CODE TEXT CMD...: run CMD; its exit status must be CODE and its stderr hold TEXT (TEXT
# may be empty). Counts with the calling script's ok and bad, writes in its $tmp.
expect() {
  local name=$1 code=$2 text=$3; shift 3
  "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  local got=$?
  if [ "$got" != "$code" ]; then
    bad "$name: exit $got, expected $code"; cat "$tmp/stderr" >&2
  elif [ -n "$text" ] && ! grep -qF -- "$text" "$tmp/stderr"; then
    bad "$name: stderr lacks '$text':"; cat "$tmp/stderr" >&2
  else
    ok
  fi
}

# begin_checks: a scratch directory $tmp (removed at exit) and the counters pass and fail, which
# ok and bad add to; the script ends with its counts.
begin_checks() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  pass=0
  fail=0
}
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
