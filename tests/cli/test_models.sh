#!/bin/sh
# End to end, as a user would: generate a model, `mlc compile` it, `mlc run` it on given inputs, and compare
# the outputs with the numpy reference (max relative error under 1e-4).
# usage: test_models.sh MLC BUILD_DIR MODEL
set -eu
mlc=$1 dir=$2/models model=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
/usr/bin/python3 "$here/../../models/make_models.py" "$dir" --only "$model" --reference >/dev/null
"$mlc" compile "$dir/$model.onnx" --target llvm --output "$dir/$model.tar"
"$mlc" run "$dir/$model.tar" --inputs "$dir/${model}_inputs.npz" --outputs "$dir/${model}_out.npz" --print-time
/usr/bin/python3 "$here/compare_npz.py" "$dir/${model}_out.npz" "$dir/${model}_ref.npz" --tol 1e-4
