#!/bin/sh
# NVPTX test: compiles models/cnn_small.onnx and every core conformance test that tests/onnx/expected_pass.txt
# lists for `--target "cuda -mcpu=sm_90"`, takes mod.ptx out of each package and assembles it with
# `ptxas -arch=sm_90`; fails on any compile or ptxas error. Exits 77 (ctest: skipped) without ptxas
# (looked up in PATH, then /usr/local/cuda/bin).
# MLC_TEST_SAMPLE=N keeps every N-th of those conformance models (tests/cli/sample.sh).
# usage: test_ptx.sh MLC BUILD_DIR [TEST_REGEX]
MLC=$1
B=$2/ptx
REGEX=${3:-.}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/cli/sample.sh"
NODE=$SRC/../shared/onnx-tests/node
TIER=$SRC/../shared/onnx-tests/tiers/core.txt
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
[ -x "$PTXAS" ] || { echo "SKIP: ptxas not found (install the CUDA toolkit or put ptxas in PATH)"; exit 77; }
mkdir -p $B || exit 1
TARGET="cuda -mcpu=sm_90"
pass=0; fail=0; unsupported=0; failed=""
check() { # name model.onnx
  name=$1; model=$2
  rm -rf $B/$name; mkdir -p $B/$name
  $MLC compile "$model" --target "$TARGET" --output $B/$name/m.tar >$B/$name/log 2>&1
  rc=$?
  if [ $rc -eq 3 ]; then unsupported=$((unsupported + 1)); return; fi
  if [ $rc -ne 0 ] || ! (cd $B/$name && tar xf m.tar mod.ptx) ||
     ! "$PTXAS" -arch=sm_90 $B/$name/mod.ptx -o $B/$name/mod.cubin >>$B/$name/log 2>&1; then
    fail=$((fail + 1)); failed="$failed $name"
    echo "FAIL $name:"; tail -3 $B/$name/log
  else
    pass=$((pass + 1))
  fi
}
check cnn_small $SRC/models/cnn_small.onnx
for t in $(grep -E "$REGEX" $TIER | grep -Fx -f - $SRC/tests/onnx/expected_pass.txt | sample); do
  check $t $NODE/$t/model.onnx
done
echo "ptxas -arch=sm_90 accepted $pass PTX files; $fail failed; $unsupported models unsupported on cuda"
[ -n "$failed" ] && echo "failed:$failed"
[ $fail -eq 0 ]
