#!/bin/sh
# Real architectures as torch.onnx.export writes them (models/export_zoo.py: GPT-2, T5, BART, LSTM / GRU LMs,
# 1-D audio, U-Nets, super-resolution, a YOLO head, RoIAlign, MLP-Mixer, einsum, MultiheadAttention, norms,
# pools, convs, fake quantization, int64 indexing, activations, a dynamic batch) and the sequence-op models of
# make_sequence_models.py: each is compiled, run and compared with torch or numpy (relative L2 under the model's
# tolerance, integer outputs exact).
# usage: test_zoo.sh MLC BUILD_DIR [--all]   (default: each model at its first opset; --all: every opset)
set -eu
mlc=$1 dir=$2/zoo
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
small=--small
[ "${3:-}" = --all ] && small=
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/../../models/export_zoo.py" "$dir" $small
/usr/bin/python3 "$here/make_sequence_models.py" "$dir"
cat "$dir/sequence_models.txt" >> "$dir/models.txt"
failed=""
while read -r m tol extra; do
  echo "== $m"
  # shellcheck disable=SC2086
  if "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar" $extra &&
     "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz" &&
     /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol "$tol" --l2; then
    :
  else
    failed="$failed $m"
  fi
done <<EOF
$(sample <"$dir/models.txt")
EOF
[ -z "$failed" ] || { echo "zoo: failed:$failed"; exit 1; }
echo "zoo: all passed"
