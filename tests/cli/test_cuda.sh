#!/bin/sh
# `mlc run --device cuda`, the way a user meets it: compiles models/cnn_small.onnx for `--target cuda` and for
# the CPU, then checks
#   - --device cuda on this machine: without libcuda.so.1, exit 3 and "no NVIDIA driver: libcuda.so.1 not
#     found"; with a driver, either a run whose outputs match the CPU's (a GPU) or exit 3 "no CUDA device";
#   - the CUDA package without --device cuda, and the CPU package with it: exit 3 and the message naming the
#     right --device;
#   - the whole CLI path (load, inputs, --repeat/--print-time, --profile, --outputs) against the fake driver
#     tests/cuda/fake_libcuda.c (built here with cc; MLC_CUDA_DRIVER), and its "no CUDA device" answer.
# usage: test_cuda.sh MLC BUILD_DIR SOURCE_DIR
set -u
mlc=$1 dir=$2/cuda-cli src=$3
rm -rf "$dir" && mkdir -p "$dir"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# expect CODE TEXT COMMAND...: exit code CODE and TEXT in stderr
expect() {
  code=$1 text=$2
  shift 2
  "$@" >"$dir/out.txt" 2>"$dir/err.txt"
  got=$?
  if [ "$got" != "$code" ] || ! grep -qF -- "$text" "$dir/err.txt"; then
    fail "$* (exit $got, want $code with '$text')"; sed 's/^/  /' "$dir/err.txt"
  fi
}

model=$src/models/cnn_small.onnx
"$mlc" compile "$model" --target cuda --output "$dir/gpu.tar" >"$dir/log" 2>&1 || { cat "$dir/log"; echo "FAIL compile --target cuda"; exit 1; }
"$mlc" compile "$model" --output "$dir/cpu.tar" >>"$dir/log" 2>&1 || { cat "$dir/log"; echo "FAIL compile for the CPU"; exit 1; }
"$mlc" run "$dir/cpu.tar" --seed 5 --outputs "$dir/cpu.npz" >>"$dir/log" 2>&1 || { cat "$dir/log"; echo "FAIL run on the CPU"; exit 1; }

# the real driver, whatever this machine has
unset MLC_CUDA_DRIVER
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  expect 3 "no NVIDIA driver: libcuda.so.1 not found" "$mlc" run "$dir/gpu.tar" --device cuda
else
  "$mlc" run "$dir/gpu.tar" --device cuda --seed 5 --outputs "$dir/gpu.npz" >"$dir/out.txt" 2>"$dir/err.txt"
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "libcuda.so.1 and a GPU present: comparing cnn_small on the GPU with the CPU"
    if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
      /usr/bin/python3 "$src/tests/cli/compare_npz.py" "$dir/gpu.npz" "$dir/cpu.npz" --tol 1e-3 || fail "GPU outputs differ from the CPU's"
    fi
  elif [ $rc -ne 3 ] || ! grep -qF "no CUDA device" "$dir/err.txt"; then
    fail "run --device cuda with libcuda.so.1 present: exit $rc"; sed 's/^/  /' "$dir/err.txt"
  fi
fi

# each device refuses the other's package
expect 3 "this package was compiled for cuda: run it with --device cuda" "$mlc" run "$dir/gpu.tar"
expect 3 "not cuda: run it without --device cuda" "$mlc" run "$dir/cpu.tar" --device cuda
expect 1 "unknown device" "$mlc" run "$dir/gpu.tar" --device tpu

# the CLI path on the fake driver
if cc -std=c17 -D_GNU_SOURCE -shared -fPIC -O1 -o "$dir/libfakecuda.so" "$src/tests/cuda/fake_libcuda.c" 2>"$dir/cc.txt"; then
  export MLC_CUDA_DRIVER="$dir/libfakecuda.so"
  "$mlc" run "$dir/gpu.tar" --device cuda --repeat 3 --print-time --outputs "$dir/fake.npz" >"$dir/out.txt" 2>"$dir/err.txt" &&
    grep -q "Execution time summary (repeat 3" "$dir/out.txt" && [ -s "$dir/fake.npz" ] ||
    { fail "run --device cuda on the fake driver"; sed 's/^/  /' "$dir/err.txt"; }
  "$mlc" run "$dir/gpu.tar" --device cuda --profile >"$dir/out.txt" 2>"$dir/err.txt" &&
    grep -q "fused_nn_conv2d" "$dir/out.txt" || { fail "run --device cuda --profile on the fake driver"; sed 's/^/  /' "$dir/err.txt"; }
  "$mlc" run "$dir/gpu.tar" --device cuda --json >"$dir/out.txt" 2>"$dir/err.txt" &&
    grep -q '"status":"ok"' "$dir/out.txt" || { fail "run --device cuda --json on the fake driver"; sed 's/^/  /' "$dir/err.txt"; }
  export FAKE_CUDA_DEVICES=0
  expect 3 "no CUDA device" "$mlc" run "$dir/gpu.tar" --device cuda
  unset MLC_CUDA_DRIVER FAKE_CUDA_DEVICES
else
  echo "skipping the fake-driver checks (cannot build tests/cuda/fake_libcuda.c with cc):"; cat "$dir/cc.txt"
fi

[ $fails -eq 0 ] && echo "cuda CLI checks passed"
[ $fails -eq 0 ]
