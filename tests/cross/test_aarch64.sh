#!/bin/sh
# Cross-architecture test: compiles models for AArch64 (NEON), cross-builds the runtime and an `mlc run`
# (tests/cross/run_main.c) with Debian's aarch64-linux-gnu toolchain, runs the packages under qemu-aarch64 and
# compares every output with the x86-64 build's on the same seeded random inputs (tests/cross/npz_compare.c).
# Models: models/cnn_small.onnx, two of tests/cli/make_winograd_models.py's (a direct conv in order 2 and a
# Winograd GEMM that prefetches its weights) and the conv / dense / elementwise tests of the core conformance
# tier that tests/onnx/expected_pass.txt lists. Exits 77 (ctest: skipped) when the cross tools are not installed.
# MLC_TEST_SAMPLE=N keeps every N-th of those conformance models (tests/cli/sample.sh).
# usage: test_aarch64.sh MLC BUILD_DIR [TEST_REGEX]
MLC=$1
B=$2/aarch64
REGEX=${3:-'^test_(conv|gemm|matmul|add|sub|mul|div|relu|sigmoid|tanh|exp|log|sqrt|abs|neg|leakyrelu|elu|selu|clip|max|min|softplus|hardsigmoid|erf|reciprocal|averagepool|maxpool|globalaveragepool|globalmaxpool|batchnorm|softmax)(_|$)'}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/cli/sample.sh"
NODE=$SRC/../shared/onnx-tests/node
TIER=$SRC/../shared/onnx-tests/tiers/core.txt
SYSROOT=/usr/aarch64-linux-gnu
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "SKIP: $tool not found (install gcc-aarch64-linux-gnu and qemu-user: make deps)"
    exit 77
  fi
done
[ -d $SYSROOT/lib ] || { echo "SKIP: no AArch64 libc in $SYSROOT (install libc6-dev-arm64-cross)"; exit 77; }
mkdir -p $B || exit 1
CFLAGS="-std=c17 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -I$SRC/include -I$SRC -I$SRC/src"
aarch64-linux-gnu-gcc $CFLAGS $SRC/runtime/*.c $SRC/src/cli/run.c $SRC/src/cli/args.c $SRC/tests/cross/run_main.c \
  -o $B/mlc-run -lpthread -ldl -lm || { echo "FAIL: cross-building the AArch64 runtime"; exit 1; }
cc $CFLAGS $SRC/runtime/*.c $SRC/tests/cross/npz_compare.c -o $B/npz_compare -lpthread -ldl -lm ||
  { echo "FAIL: building npz_compare"; exit 1; }
TARGET="llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
QEMU="qemu-aarch64 -L $SYSROOT"
pass=0; fail=0; failed=""
check() { # name model.onnx [compile options]
  name=$1; model=$2; shift 2
  if ! $MLC compile "$model" --target "$TARGET" "$@" --output $B/$name.a64.tar >$B/$name.log 2>&1 ||
     ! $MLC compile "$model" "$@" --output $B/$name.x86.tar >>$B/$name.log 2>&1 ||
     ! $MLC run $B/$name.x86.tar --seed 7 --outputs $B/$name.x86.npz >>$B/$name.log 2>&1 ||
     ! $QEMU $B/mlc-run $B/$name.a64.tar --seed 7 --outputs $B/$name.a64.npz >>$B/$name.log 2>&1 ||
     ! $B/npz_compare $B/$name.a64.npz $B/$name.x86.npz >>$B/$name.log 2>&1; then
    fail=$((fail + 1)); failed="$failed $name"
    echo "FAIL $name:"; tail -3 $B/$name.log
  else
    pass=$((pass + 1))
  fi
}
check cnn_small $SRC/models/cnn_small.onnx
# mlc run (x86-64) must refuse the AArch64 package: exit 3 and a message naming both architectures
$MLC run $B/cnn_small.a64.tar >$B/refuse.log 2>&1
rc=$?
if [ $rc -ne 3 ] || ! grep -q "compiled for aarch64" $B/refuse.log; then
  echo "FAIL: mlc run of an AArch64 package: exit $rc:"; cat $B/refuse.log; fail=$((fail + 1))
fi
# a direct conv whose schedule walks its input channel chunks outermost (order 2) with NEON's 4-vector blocks
/usr/bin/python3 "$SRC/tests/cli/make_winograd_models.py" $B/wino >/dev/null || { echo "FAIL: test models"; exit 1; }
check chunks_nchwc $B/wino/chunks_nchwc.onnx
# a Winograd GEMM with 64 KiB weight blocks, which it prefetches (prfm) one block ahead
check wino_stream $B/wino/wino_stream.onnx --pass-config AlterOpLayout.winograd=2
for t in $(grep -E "$REGEX" $TIER | grep -Fx -f - $SRC/tests/onnx/expected_pass.txt | sample); do
  check $t $NODE/$t/model.onnx
done
echo "aarch64 under qemu: $pass passed, $fail failed"
[ -n "$failed" ] && echo "failed:$failed"
[ $fail -eq 0 ]
