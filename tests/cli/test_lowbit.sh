#!/bin/sh
# The low-precision types end to end through the mlc CLI: each model of make_lowbit_models.py (an int4
# block-quantized MatMul, a uint4 per-axis one with int32_data weights, a float8 QDQ MatMul, float8 / int4 /
# uint4 / float4 graph inputs and outputs, bit-exact conversion sweeps of every float8 type and of float8e8m0's
# round modes) is compiled and run, and out.npz must equal the numpy reference
# (exactly, or within tol.txt's tolerance for the MatMuls). Inputs and outputs take the .npz forms of
# rt_lowbit_from_npz: float8 given as uint8 bit patterns or as float32 values, written as float32; int4 as
# int8, uint4 as uint8. An int4 input out of range and a float8 input given as int32 must be refused (exit 2),
# and the models of fail.txt (arithmetic on float8 / int4, a bad round_mode, float8e8m0 as a quantized type)
# must fail to compile with the exit code and message given there. With FoldConstant off, the int4 / uint4
# weights stay parameters, stored packed in mod.params (its size is checked) and unpacked at load.
# usage: test_lowbit.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/lowbit
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_lowbit_models.py" "$dir"
for m in $(cat "$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  tol=$(awk -F'\t' -v m="$m" '$1 == m { print $2 }' "$dir/tol.txt")
  for inputs in "$dir/${m}"_inputs*.npz; do
    "$mlc" run "$dir/$m.tar" --inputs "$inputs" --outputs "$dir/${m}_out.npz"
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol "${tol:-0}"
  done
done
# int4 / uint4 weights kept as parameters (FoldConstant off: DequantizeLinear runs in the package), which
# mod.params stores packed two per byte (an odd count included); the int4 MatMul as a shared library too
for m in int4_block_matmul uint4_axis_matmul lowbit_shape_ops; do
  echo "== $m (params packed)"
  "$mlc" compile "$dir/$m.onnx" --disable-pass FoldConstant --output "$dir/$m.nofold.tar"
  tol=$(awk -F'\t' -v m="$m" '$1 == m { print $2 }' "$dir/tol.txt")
  "$mlc" run "$dir/$m.nofold.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_nofold_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_nofold_out.npz" "$dir/${m}_ref.npz" --tol "${tol:-0}"
done
size=$(tar tvf "$dir/int4_block_matmul.nofold.tar" mod.params | awk '{ print $3 }')
# W 48x5 int4 (120 bytes packed, 240 not), scale 2x5 float32 (40), zp 2x5 int4 (5, 10 not), each after a
# 12-byte header aligned to 64: at most 360 bytes packed in any order, at least 394 unpacked
if [ "$size" -ge 394 ]; then echo "FAIL: mod.params is $size bytes: the int4 parameters are not packed"; exit 1; fi
"$mlc" compile "$dir/int4_block_matmul.onnx" --disable-pass FoldConstant --output-format so --output "$dir/i4.so"
"$mlc" run "$dir/i4.so" --inputs "$dir/int4_block_matmul_inputs.npz" --outputs "$dir/i4_so_out.npz"
/usr/bin/python3 "$here/compare_npz.py" "$dir/i4_so_out.npz" "$dir/int4_block_matmul_ref.npz" --tol 1e-5
# bad inputs: an int4 value out of range, a float8 input given as int32
/usr/bin/python3 - "$dir" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
np.savez(f"{d}/bad_int4.npz", x=np.array([[-9, 0, 0], [0, 0, 0]], np.int8), u=np.zeros(4, np.uint8))
np.savez(f"{d}/bad_fp8.npz", x=np.zeros(10, np.int32))
PY
for case in "int4_io bad_int4 out of the range of int4" "fp8_io bad_fp8 numpy has no float8_e5m2"; do
  set -- $case
  m=$1 npz=$2
  shift 2
  rc=0
  "$mlc" run "$dir/$m.tar" --inputs "$dir/$npz.npz" 2>"$dir/$npz.err" || rc=$?
  cat "$dir/$npz.err"
  if [ "$rc" != 2 ]; then echo "FAIL $m with $npz: exit code $rc, want 2"; exit 1; fi
  if ! grep -qF "$*" "$dir/$npz.err"; then echo "FAIL $m with $npz: the message lacks: $*"; exit 1; fi
done
tab=$(printf '\t')
while IFS="$tab" read -r m code msg; do
  echo "== $m (must fail)"
  rc=0
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar" 2>"$dir/$m.err" || rc=$?
  cat "$dir/$m.err"
  if [ "$rc" != "$code" ]; then echo "FAIL $m: exit code $rc, want $code"; exit 1; fi
  if ! grep -qF "$msg" "$dir/$m.err"; then echo "FAIL $m: the message lacks: $msg"; exit 1; fi
  if [ -e "$dir/$m.tar" ]; then echo "FAIL $m: a package was written"; exit 1; fi
done <"$dir/fail.txt"
echo "lowbit: all passed"
