#!/usr/bin/env bash
# tests/cli/values.sh TESSERA — a model's values from outside (docs/values.md): run --inputs and
# --outputs, compile --inputs and --weights-out. Errors in the values file are input errors (exit
# 2) that name the file, the entry and the tensor; the values compile --weights-out writes, given
# back with --inputs, give the same outputs (the same checksum) as the inputs they came from; a model
# a family refuses still gives its values. Needs ONNX support and the ipu family (else skipped).
set -u
T=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=${TS_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
models=$root/tests/data/models
npy=$root/tests/data/npy
# shellcheck source=tests/need.sh
. "$root/tests/need.sh"
begin_checks
need_feature TS_HAS_ONNX "ONNX support" "protobuf-c not found, or -Donnx=disabled" "cli values"
need_family "$T" ipu "cli values: models lowered for the IPU"

m=$models/resnet18_32.onnx
run=("$T" run -q -c ipu_mk2 "$m")
expect unknown 2 "bad_name.npz: entry 'nosuch': the model has no tensor of this name" \
  "${run[@]}" --inputs "$npy/bad_name.npz" -o "$tmp/r.txt"
expect shape 2 "bad_shape.npz: entry 'input': shape [1, 3, 16, 16] differs from the tensor's [1, 3, 32, 32]" \
  "${run[@]}" --inputs "$npy/bad_shape.npz" -o "$tmp/r.txt"
expect missing 2 "no_input.npz: no values for the data input 'input'" \
  "${run[@]}" --inputs "$npy/no_input.npz" -o "$tmp/r.txt"
expect activation 2 "is an activation, not an input or a weight" \
  "${run[@]}" --inputs "$npy/activation.npz" -o "$tmp/r.txt"
expect not_npz 2 "not a .npz archive" "${run[@]}" --inputs "$m" -o "$tmp/r.txt"
[ ! -e "$tmp/r.txt" ] && ok || bad "a failed run wrote its report"
expect program 2 "--outputs needs a model" "$T" run -q -c ipu_mk1 ipu_default --outputs "$tmp/o.npz"
expect compile_program 2 "--weights-out needs a model" "$T" compile -c ipu_mk2 ipu_default -o "$tmp/p.bin" \
  --weights-out "$tmp/w.npz"

# the values compile writes, given back, give the same outputs as the inputs they came from
expect weights_out 0 "" "$T" compile -c ipu_mk2 "$m" -o "$tmp/p.bin" --inputs "$models/resnet18_32_in.npz" \
  --weights-out "$tmp/w.npz"
expect run_in 0 "" "${run[@]}" --inputs "$models/resnet18_32_in.npz" --outputs "$tmp/o1.npz" -o "$tmp/r1.txt"
expect run_w 0 "" "${run[@]}" --inputs "$tmp/w.npz" --outputs "$tmp/o2.npz" -f json -o "$tmp/r2.json"
c1=$(grep -E '^  logits +\[1, 1000\] +[0-9a-f]{16} ' "$tmp/r1.txt" | awk '{print $4}')
c2=$(grep -o '"checksum": "[0-9a-f]*"' "$tmp/r2.json" | cut -d'"' -f4)
[ -n "$c1" ] && [ "$c1" = "$c2" ] && ok || bad "checksums differ: '$c1' (text, from the inputs) and '$c2' (JSON, from the weights)"
cmp -s "$tmp/o1.npz" "$tmp/o2.npz" && ok || bad "the outputs of the same values differ"
# a model the IPU refuses today still gives its values
"$T" compile -c ipu_mk2 "$models/mobilenetv2_32.onnx" -o "$tmp/m.bin" --inputs "$models/mobilenetv2_32_in.npz" \
  --weights-out "$tmp/mw.npz" 2>/dev/null
[ -s "$tmp/mw.npz" ] && ok || bad "a refused model wrote no values"

echo "values: $pass passed, $fail failed"
[ "$fail" = 0 ]
