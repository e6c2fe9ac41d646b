#!/bin/sh
# ai.onnx.ml TreeEnsemble, TreeEnsembleRegressor and TreeEnsembleClassifier (3+ classes) end to end: each model
# of make_ml_models.py (random trees with every node mode, set membership, NaN inputs tracked true or not,
# several targets, leaves with two target entries, each aggregate function, base values, LOGISTIC / SOFTMAX) is
# compiled, run and compared with the trees walked in Python (the regressors and classifiers also equal ONNX
# Runtime's outputs bit for bit); and TfIdfVectorizer models (each mode, skips, permuted and shared output columns)
# against counting the n-grams as ONNX Runtime does (equal to ONNX Runtime's outputs bit for bit).
# usage: test_ml.sh MLC BUILD_DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sh "$here/run_models.sh" "$1" "$2/ml" "$here/make_ml_models.py"
echo "ml: all passed"
