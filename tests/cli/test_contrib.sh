#!/bin/sh
# The float com.microsoft ops of ONNX Runtime's optimizers (FusedConv, FusedGemm, Gelu, BiasGelu, FastGelu,
# QuickGelu, BiasAdd, FusedMatMul, SimplifiedLayerNormalization, SkipLayerNormalization, SkipSimplifiedLayerNormalization,
# Attention with each mask form, causal, an attention bias and another value width, MultiHeadAttention (cross
# and self), EmbedLayerNormalization), its LayerNormalization before opset 17, and one BERT layer of those ops
# as its optimizer saves it: each model of make_contrib_models.py is compiled, run and compared with its
# numpy / torch reference (also the skip normalizations' sum and the mask lengths outputs).
# usage: test_contrib.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/contrib
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_contrib_models.py" "$dir"
tab=$(printf '\t')
while IFS="$tab" read -r m tol; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol "$tol"
done <"$dir/models.txt"
echo "contrib: all passed"
