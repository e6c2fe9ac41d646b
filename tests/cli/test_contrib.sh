#!/bin/sh
# The float com.microsoft ops of ONNX Runtime's optimizers (FusedConv, FusedGemm, Gelu, BiasGelu, FastGelu,
# QuickGelu, BiasAdd, FusedMatMul, SimplifiedLayerNormalization, SkipLayerNormalization,
# SkipSimplifiedLayerNormalization, Attention with each mask form, causal, an attention bias and another value
# width, MultiHeadAttention (cross and self), EmbedLayerNormalization, RotaryEmbedding, GroupNorm, SkipGroupNorm,
# BiasSplitGelu), its LayerNormalization before opset 17, and one BERT layer of those ops as its optimizer
# saves it: each model of make_contrib_models.py is compiled, run and compared with its numpy / torch reference
# (also the skip normalizations' sum and the mask lengths outputs).
# usage: test_contrib.sh MLC BUILD_DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sh "$here/run_models.sh" "$1" "$2/contrib" "$here/make_contrib_models.py"
echo "contrib: all passed"
