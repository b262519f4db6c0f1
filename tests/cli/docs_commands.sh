#!/usr/bin/env bash
# tests/cli/docs_commands.sh TESSERA — every command and example config of README.md, docs/*.md
# and examples/ run as written. Commands are the lines of fenced code blocks that start with
# `tessera ` or `build/cli/tessera ` (with their `\` continuations); each runs with TESSERA in a
# scratch directory whose entries link to the source tree, so relative paths resolve and outputs
# land in the scratch directory. Commands of one file run in order (a compile feeds a disasm). A
# YAML block with `arch:` is loaded with `tessera config`; one with `workloads:` is listed with
# `tessera sweep --list`; each examples/*.yaml sweep loads (and runs, with TS_DOCS_FULL=1). Synopses (with CONFIG, [options], a|b)
# and the lines listed in `skip` below (each with its reason) are not run; a command that ran
# before, word for word but for its comment, is not run again. Ends with "N passed, N failed".
set -u
T=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=${TS_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
nskip=0
nrepeat=0
for e in "$root"/*; do [ "$(basename "$e")" = build ] || ln -s "$e" "$tmp/$(basename "$e")"; done
mkdir -p "$tmp/build/cli" && ln -s "$T" "$tmp/build/cli/tessera"

# Lines not run, as a substring of the line and why.
skip=(
  "--view|opens a window"
  "tessera view|opens a window"
  "model.onnx|a placeholder for the reader's own model"
  "exchange.lanes=|the example of a list value; the IPU has no list key"
)
skipped() {
  local line=$1 s
  for s in "${skip[@]}"; do
    if [[ "$line" == *"${s%%|*}"* ]]; then echo "${s#*|}"; return 0; fi
  done
  # synopses: placeholders in capitals, optional parts, alternatives
  if [[ "$line" =~ (\[|<|[A-Z]{3,}\.|[ =][A-Z]{4,}( |$)|lcs\|t10|text\|json) ]]; then echo "a synopsis"; return 0; fi
  return 1
}

declare -A ran=() # commands already run (without their comment): a repeat in another file passes
run_cmd() {
  local file=$1 cmd=$2 why key
  if why=$(skipped "$cmd"); then nskip=$((nskip + 1)); return; fi
  cmd=${cmd#build/cli/tessera }
  cmd=${cmd#tessera }
  key=$(sed 's/[[:space:]]*#.*$//; s/[[:space:]]*$//' <<<"$cmd")
  if [ -n "${ran[$key]:-}" ]; then nrepeat=$((nrepeat + 1)); return; fi
  ran[$key]=1
  (cd "$tmp" && eval "\"$T\" $cmd" >"$tmp/out" 2>&1)
  local st=$?
  if [ "$st" = 0 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: $file: exit $st: tessera $cmd" >&2; tail -3 "$tmp/out" >&2; fi
}

check_yaml() {
  local file=$1 n=$2 f="$tmp/block$2.yaml" named
  # A block that opens with "# PATH" of a file in the tree stands for that file: check the file.
  named=$(head -1 "$f" | sed -n 's/^# \([^ ]*\.yaml\)$/\1/p')
  if [ -n "$named" ] && [ -f "$root/$named" ]; then
    if grep -q '^workloads:' "$f"; then
      (cd "$tmp" && "$T" sweep "$named" --list >"$tmp/out" 2>&1)
    else
      (cd "$tmp" && "$T" config "$named" >"$tmp/out" 2>&1)
    fi
    if [ $? = 0 ]; then pass=$((pass + 1)); else
      fail=$((fail + 1)); echo "FAIL: $file: yaml block $n ($named) does not load:" >&2; tail -3 "$tmp/out" >&2; fi
    return
  fi
  if grep -q '^arch:\|^base:' "$f"; then
    cp "$f" "$tmp/cfg$n.yaml"
    (cd "$tmp" && "$T" config "cfg$n.yaml" >"$tmp/out" 2>&1)
  elif grep -q '^workloads:' "$f"; then
    (cd "$tmp" && "$T" sweep "block$n.yaml" --list >"$tmp/out" 2>&1)
  else
    return
  fi
  if [ $? = 0 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: $file: yaml block $n does not load:" >&2; tail -3 "$tmp/out" >&2; fi
}

for doc in "$root/README.md" "$root"/docs/*.md; do
  name=${doc#"$root"/}
  inblock=0 lang="" cmd="" n=0
  while IFS= read -r line || [ -n "$line" ]; do
    if [[ "$line" =~ ^\`\`\` ]]; then
      if [ "$inblock" = 0 ]; then
        inblock=1 lang=${line#\`\`\`} n=$((n + 1)); : >"$tmp/block$n.yaml"
      else
        inblock=0
        [ "$lang" = yaml ] && check_yaml "$name" "$n"
      fi
      continue
    fi
    [ "$inblock" = 1 ] || continue
    if [ "$lang" = yaml ]; then printf '%s\n' "$line" >>"$tmp/block$n.yaml"; continue; fi
    if [ -n "$cmd" ]; then
      cmd="$cmd ${line# }"
    elif [[ "$line" =~ ^(build/cli/)?tessera\  ]]; then
      cmd=$line
    else
      continue
    fi
    if [[ "$cmd" == *\\ ]]; then cmd=${cmd%\\}; continue; fi
    run_cmd "$name" "$cmd"
    cmd=""
  done <"$doc"
done

# Every example sweep loads (workloads, parameters and keys checked); with TS_DOCS_FULL=1 each runs
# and must run clean (minutes: the BERT and ResNet-50 sweeps).
for ex in "$root"/examples/*.yaml; do
  [ -e "$ex" ] || continue
  if [ "${TS_DOCS_FULL:-0}" = 1 ]; then
    (cd "$tmp" && "$T" sweep "$ex" -o "$tmp/ex.csv" -j 2 -q >"$tmp/out" 2>&1)
  else
    (cd "$tmp" && "$T" sweep "$ex" --list >"$tmp/out" 2>&1)
  fi
  if [ $? = 0 ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: ${ex#"$root"/} does not run clean:" >&2; tail -3 "$tmp/out" >&2; fi
  rm -f "$tmp/ex.csv" "$tmp/ex.csv.jsonl"
done

echo "docs commands: $pass passed, $fail failed, $nskip not run (synopses and the skip list), $nrepeat repeats of a command run before"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
