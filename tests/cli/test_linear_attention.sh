#!/bin/sh
# CausalConvWithState and LinearAttention (opset 27) end to end: each model of make_linear_attention_models.py
# is compiled, run and compared with its float64 numpy reference, under the tolerance models.txt gives it
# (1e-4 for float32, looser for float16 / bfloat16 inputs, 1e-9 for float64). Covers what the ONNX node tests
# do not: long sequences, dk != dv, 3 query heads per kv head, erase_gate, a float32 state with float16
# activations, float64 and bfloat16, and more (batch, kv head) pairs than threads; and FlexAttention's
# per-element modifier bodies (score, mask, prob) with grouped and multi-query heads.
# usage: test_linear_attention.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/linear_attention
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_linear_attention_models.py" "$dir"
while read -r m tol; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol "$tol"
done <"$dir/models.txt"
echo "linear_attention: all passed"
