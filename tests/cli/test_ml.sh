#!/bin/sh
# ai.onnx.ml TreeEnsemble, TreeEnsembleRegressor and TreeEnsembleClassifier (3+ classes) end to end: each model of make_ml_models.py (random trees
# with every node mode, set membership, NaN inputs tracked true or not, several targets, leaves with two target
# entries, each aggregate function, base values, LOGISTIC / SOFTMAX) is compiled, run and compared with the trees
# walked in Python (the regressors and classifiers also equal ONNX Runtime's outputs bit for bit).
# usage: test_ml.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/ml
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_ml_models.py" "$dir"
tab=$(printf '\t')
while IFS="$tab" read -r m tol; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol "$tol"
done <"$dir/models.txt"
echo "ml: all passed"
