#!/bin/sh
# End to end, as a user would: generate a model, `mlc compile` it at each given opt level, `mlc run` it on
# given inputs, and compare the outputs with the numpy reference (max relative error under 1e-4): the graph
# passes must not change results at any opt level.
# usage: test_models.sh MLC BUILD_DIR MODEL [OPT_LEVELS (default "3")]
set -eu
mlc=$1 dir=$2/models model=$3 levels=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
/usr/bin/python3 "$here/../../models/make_models.py" "$dir" --only "$model" --reference >/dev/null
for o in $levels; do
  echo "== $model at --opt-level $o"
  "$mlc" compile "$dir/$model.onnx" --target llvm --opt-level "$o" --output "$dir/$model.O$o.tar"
  "$mlc" run "$dir/$model.O$o.tar" --inputs "$dir/${model}_inputs.npz" --outputs "$dir/${model}_out.O$o.npz" --print-time
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${model}_out.O$o.npz" "$dir/${model}_ref.npz" --tol 1e-4
done
