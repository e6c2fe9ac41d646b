#!/bin/sh
# GPU check, for a machine with an NVIDIA GPU (a few minutes; well under 8 on 16 cores): builds mlc, compiles
# every core conformance test that tests/onnx/expected_pass.txt lists and resnet50 for `cuda -arch=sm_XX`
# (XX from nvidia-smi) and for the CPU, runs each CPU package and each CUDA package (`mlc run --device cuda`)
# on the same seeded inputs, compares the outputs (tests/cross/npz_compare.c: rtol 1e-3, atol 1e-4; NaN
# matches NaN), and times resnet50 on the GPU (--repeat 20 --print-time, each run synchronised).
# Models the cuda target refuses (exit 3 from compile: float64 math and the like) are counted, not failed.
# Exits 77 with a message when there is no NVIDIA GPU or driver.
#
# The work is split in two phases, so that the GPU phase needs only a C compiler and the NVIDIA driver:
#   bench/gpu_check.sh [BUILD_DIR] [RESNET50_ONNX]      both phases on this machine (default)
#   bench/gpu_check.sh --prepare DIR [MODEL_ONNX]        phase 1, no GPU needed: build mlc, write every
#                                                        package and the CPU outputs into DIR (SM=90 default)
#   bench/gpu_check.sh --run DIR                         phase 2: build the runtime-only runner (runtime/*.c
#                                                        and src/cli/run.c, libc/pthreads/libdl only) with cc,
#                                                        run DIR's CUDA packages, compare, time the model
# (A 100 MB resnet50 package is too big to carry to some GPU machines: prepare squeezenet1_1 or mobilenet_v2.)
# Environment: SM=NN overrides the architecture, JOBS=N the parallelism (default: nproc), ONLY=REGEX picks
# conformance tests, BUILD=DIR the build folder of --prepare (default /tmp/build-gpu-check).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
SELF="$SRC/bench/gpu_check.sh"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
CFLAGS="-std=c17 -O2 -D_GNU_SOURCE -I$SRC/include -I$SRC -I$SRC/src"

gpu_sm() { # prints the first GPU's compute capability as NN, or nothing
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .\r'
}

# ---- per-model workers (run in parallel by xargs) ----
if [ "${1:-}" = "--one-compile" ]; then # DIR NAME MODEL SM MLC
  d=$2/$3; m=$4; sm=$5; mlc=$6
  mkdir -p "$d"
  "$mlc" compile "$m" --target "cuda -arch=sm_$sm" --output "$d/gpu.tar" >"$d/log" 2>&1
  rc=$?
  if [ $rc -eq 3 ]; then echo unsupported >"$d/status"; exit 0; fi
  if [ $rc -ne 0 ]; then echo compile-fail >"$d/status"; exit 0; fi
  if "$mlc" compile "$m" --output "$d/cpu.tar" >>"$d/log" 2>&1 &&
     "$mlc" run "$d/cpu.tar" --seed 3 --outputs "$d/cpu.npz" >>"$d/log" 2>&1; then
    rm -f "$d/cpu.tar"; echo ok >"$d/status"
  else
    echo cpu-fail >"$d/status"
  fi
  exit 0
fi
if [ "${1:-}" = "--one-run" ]; then # CASE_DIR RUNNER NPZ_COMPARE
  d=$2; run=$3; cmp=$4
  [ "$(cat "$d/status" 2>/dev/null)" = ok ] || exit 0
  if ! "$run" "$d/gpu.tar" --device cuda --seed 3 --outputs "$d/gpu.npz" >"$d/gpu.log" 2>&1; then
    echo run-fail >"$d/result"
  elif "$cmp" "$d/gpu.npz" "$d/cpu.npz" 1e-3 1e-4 >>"$d/gpu.log" 2>&1; then
    echo match >"$d/result"
  else
    echo mismatch >"$d/result"
  fi
  exit 0
fi

# xargs puts "NAME MODEL" last; the worker wants them before SM and MLC, so phase 1 feeds it through this
if [ "${1:-}" = "--one-compile-xargs" ]; then # CASES SM MLC NAME MODEL
  exec sh "$SELF" --one-compile "$2" "$5" "$6" "$3" "$4"
fi

# ---- phase 1: packages and CPU outputs ----
prepare_all() { # DIR MODEL BUILD
  W=$1 model=$2 B=$3
  cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    cmake --build "$B" -j "$JOBS" --target mlc >"$W.build.log" 2>&1 ||
    { tail -20 "$W.build.log"; echo "gpu check: building mlc failed"; exit 1; }
  rm -rf "$W/cases" && mkdir -p "$W/cases" || exit 1
  echo "$SM" >"$W/sm"
  node=$SRC/../shared/onnx-tests/node
  tier=$SRC/../shared/onnx-tests/tiers/core.txt
  {
    [ -f "$tier" ] && grep -Fx -f "$SRC/tests/onnx/expected_pass.txt" "$tier" | grep -E "${ONLY:-.}" |
      while read -r t; do echo "$t $node/$t/model.onnx"; done
    echo "cnn_small $SRC/models/cnn_small.onnx"
    if [ -n "$model" ] && [ -f "$model" ]; then echo "model $model"; fi
  } >"$W/list"
  if [ -n "$model" ] && [ ! -f "$model" ]; then echo "gpu check: $model not found: no model timing"; fi
  echo "gpu check: compiling $(wc -l <"$W/list") models for cuda -arch=sm_$SM and for the CPU ($JOBS jobs)"
  xargs -P "$JOBS" -n 2 sh "$SELF" --one-compile-xargs "$W/cases" "$SM" "$B/mlc" <"$W/list"
  n_unsup=$(grep -lx unsupported "$W"/cases/*/status 2>/dev/null | wc -l)
  n_cfail=$(grep -lx compile-fail "$W"/cases/*/status 2>/dev/null | wc -l)
  n_cpu=$(grep -lx cpu-fail "$W"/cases/*/status 2>/dev/null | wc -l)
  for s in $(grep -lx compile-fail "$W"/cases/*/status 2>/dev/null); do
    echo "FAIL compile for cuda: $(basename "$(dirname "$s")")"; tail -2 "$(dirname "$s")/log" | sed 's/^/  /'
  done
  echo "gpu check: prepared $(grep -lx ok "$W"/cases/*/status 2>/dev/null | wc -l) packages in $W" \
       "($n_unsup unsupported on cuda, $n_cfail failed to compile, $n_cpu failed on the CPU)"
}

# ---- phase 2: on the GPU ----
run_all() { # DIR
  W=$1
  [ -d "$W/cases" ] || { echo "gpu check: $W has no prepared packages (run --prepare first)"; exit 1; }
  if [ -z "$(gpu_sm)" ] && ! ls /usr/lib*/libcuda.so.1 /usr/lib/*/libcuda.so.1 /usr/local/nvidia/lib*/libcuda.so.1 \
       >/dev/null 2>&1 && [ -z "${MLC_CUDA_DRIVER:-}" ]; then
    echo "gpu check: no NVIDIA GPU here (nvidia-smi lists none and there is no libcuda.so.1): run it on a GPU machine"
    exit 77
  fi
  mkdir -p "$W/bin"
  cc $CFLAGS "$SRC"/runtime/*.c "$SRC/src/cli/run.c" "$SRC/src/cli/args.c" "$SRC/tests/cross/run_main.c" \
    -o "$W/bin/mlc-run" -lpthread -ldl -lm &&
    cc $CFLAGS "$SRC"/runtime/*.c "$SRC/tests/cross/npz_compare.c" -o "$W/bin/npz_compare" -lpthread -ldl -lm ||
    { echo "gpu check: building the runtime-only runner failed"; exit 1; }
  # one package first: a missing driver or GPU shows here, once, with the runtime's own message
  probe=$W/cases/cnn_small
  if [ -f "$probe/gpu.tar" ]; then
    "$W/bin/mlc-run" "$probe/gpu.tar" --device cuda >"$W/probe.log" 2>&1
    if [ $? -eq 3 ] && grep -q "no NVIDIA driver\|no CUDA device\|does not start" "$W/probe.log"; then
      sed 's/^mlc run: error: //' "$W/probe.log"; echo "gpu check: no usable NVIDIA GPU here: run it on a GPU machine"
      exit 77
    fi
  fi
  rm -f "$W"/cases/*/result
  ls -d "$W"/cases/* | xargs -P "$JOBS" -I{} sh "$SELF" --one-run {} "$W/bin/mlc-run" "$W/bin/npz_compare"
  ok=$(grep -lx match "$W"/cases/*/result 2>/dev/null | wc -l)
  bad=0
  for r in $(grep -Lx match "$W"/cases/*/result 2>/dev/null); do
    d=$(dirname "$r"); bad=$((bad + 1))
    echo "FAIL $(cat "$r") $(basename "$d"):"; tail -3 "$d/gpu.log" | sed 's/^/  /'
  done
  cfail=$(grep -lx "compile-fail\|cpu-fail" "$W"/cases/*/status 2>/dev/null | wc -l)
  unsup=$(grep -lx unsupported "$W"/cases/*/status 2>/dev/null | wc -l)
  if [ -f "$W/cases/model/gpu.tar" ]; then
    echo "gpu check: timing $(grep '^model ' "$W/list" | cut -d' ' -f2) on the GPU"
    "$W/bin/mlc-run" "$W/cases/model/gpu.tar" --device cuda --repeat 20 --print-time || bad=$((bad + 1))
  fi
  echo "gpu check: $ok matched the CPU, $bad failed on the GPU, $cfail failed to compile or run on the CPU," \
       "$unsup unsupported on cuda"
  [ $bad -eq 0 ] && [ $cfail -eq 0 ]
}

case "${1:-}" in
--prepare)
  [ $# -ge 2 ] || { echo "usage: bench/gpu_check.sh --prepare DIR [MODEL_ONNX]"; exit 1; }
  SM=${SM:-$(gpu_sm)}; SM=${SM:-90}
  W=$(mkdir -p "$2" && cd "$2" && pwd) || exit 1
  prepare_all "$W" "${3:-}" "${BUILD:-/tmp/build-gpu-check}"
  ;;
--run)
  [ $# -ge 2 ] || { echo "usage: bench/gpu_check.sh --run DIR"; exit 1; }
  W=$(cd "$2" && pwd) || exit 1
  run_all "$W"
  ;;
*)
  B=${1:-/tmp/build-gpu-check}
  R50=${2:-/tmp/benchmodels/resnet50.onnx}
  SM=${SM:-$(gpu_sm)}
  if [ -z "$SM" ] && [ -z "${MLC_CUDA_DRIVER:-}" ]; then
    echo "gpu check: no NVIDIA GPU here (nvidia-smi lists none): run it on a GPU machine, or split it:" \
         "--prepare DIR here, --run DIR there"
    exit 77
  fi
  SM=${SM:-90}
  mkdir -p "$B/gpu-check" || exit 1
  prepare_all "$B/gpu-check" "$R50" "$B" && run_all "$B/gpu-check"
  ;;
esac
