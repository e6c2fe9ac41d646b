#!/bin/sh
# GPU check, for a machine with an NVIDIA GPU (about 8 minutes): builds mlc, compiles the core conformance
# tests and resnet50 for `cuda -arch=sm_XX` (XX from nvidia-smi), assembles every PTX with ptxas, then runs
# each package with `mlc run --device cuda` and the CPU build with `mlc run` on the same seeded inputs and
# compares the outputs (tests/cross/npz_compare.c), and times resnet50 on the GPU.
# `mlc run --device cuda` exits 3 while this build's runtime has no CUDA executor; the script reports that
# per model instead of counting it as a mismatch.
# usage: bench/gpu_check.sh [BUILD_DIR] [RESNET50_ONNX]
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-/tmp/build-gpu-check}
R50=${2:-/tmp/benchmodels/resnet50.onnx}
W=$B/gpu-check
cmake -S $SRC -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build $B -j "$(nproc)" --target mlc >/dev/null ||
  { echo "build failed"; exit 1; }
MLC=$B/mlc
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . )
[ -n "$SM" ] || { echo "no NVIDIA GPU (nvidia-smi found nothing); using sm_90 for the PTX checks"; SM=90; }
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
mkdir -p $W
cc -std=c17 -O2 -D_GNU_SOURCE -I$SRC/include -I$SRC -I$SRC/src $SRC/runtime/*.c $SRC/tests/cross/npz_compare.c \
  -o $W/npz_compare -lpthread -ldl -lm || exit 1
ok=0; bad=0; norun=0
check() { # name model.onnx
  n=$1; m=$2; d=$W/$n; mkdir -p $d
  if ! $MLC compile "$m" --target "cuda -arch=sm_$SM" --output $d/gpu.tar >$d/log 2>&1 ||
     ! (cd $d && tar xf gpu.tar mod.ptx) || { [ -x "$PTXAS" ] && ! "$PTXAS" -arch=sm_$SM $d/mod.ptx -o $d/mod.cubin >>$d/log 2>&1; }; then
    bad=$((bad + 1)); echo "FAIL compile/ptxas $n"; return
  fi
  $MLC compile "$m" --output $d/cpu.tar >>$d/log 2>&1 && $MLC run $d/cpu.tar --seed 3 --outputs $d/cpu.npz >>$d/log 2>&1
  $MLC run $d/gpu.tar --device cuda --seed 3 --outputs $d/gpu.npz >>$d/log 2>&1
  rc=$?
  if [ $rc -eq 3 ]; then norun=$((norun + 1)); return; fi
  if [ $rc -eq 0 ] && $W/npz_compare $d/gpu.npz $d/cpu.npz 1e-3 1e-4 >>$d/log 2>&1; then ok=$((ok + 1));
  else bad=$((bad + 1)); echo "FAIL run/compare $n"; tail -2 $d/log; fi
}
for t in $(grep -Fx -f $SRC/tests/onnx/expected_pass.txt $SRC/../shared/onnx-tests/tiers/core.txt); do
  check $t $SRC/../shared/onnx-tests/node/$t/model.onnx
done
[ -f "$R50" ] && check resnet50 "$R50" &&
  $MLC run $W/resnet50/gpu.tar --device cuda --repeat 20 --print-time
echo "gpu check: $ok matched the CPU, $bad failed, $norun not run (mlc run --device cuda unavailable: exit 3)"
[ $bad -eq 0 ]
