#!/bin/sh
# ai.onnx.preview.training Gradient end to end: each model of make_training_models.py (broadcasting arithmetic,
# activations, a value used twice, an input the output does not depend on) is compiled, run and compared with
# torch autograd's derivatives of sum(y).
# usage: test_training.sh MLC BUILD_DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sh "$here/run_models.sh" "$1" "$2/training" "$here/make_training_models.py"
echo "training: all passed"
