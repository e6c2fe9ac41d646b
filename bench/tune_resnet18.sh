#!/bin/sh
# Issue 6's measurement on ResNet-18: 10 minutes of `mlc tune` (xgb), then per task default vs tuned, the whole
# model default vs tuned vs ONNX Runtime at 1 and 2 threads, and xgb vs random at 16 trials per task.
# usage: bench/tune_resnet18.sh [bench/tune.sh options, e.g. --minutes 2 --compare-trials 0 --mlc PATH]
# (later options override these defaults; see bench/tune.sh)
exec "$(dirname "$0")/tune.sh" resnet18 --minutes 10 --threads 1,2 --compare-trials 16 "$@"
