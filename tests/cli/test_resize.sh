#!/bin/sh
# Resize end to end: each model of make_resize_models.py (antialias=1, and separable resizes of the last axes)
# is compiled, run and compared with its float64 reference (the ONNX reference implementation's algorithm), max
# relative error under 1e-4. The models without antialias must take the separable form: a "resize_last" buffer
# (the last axis resized first) in the kernel's TIR; uint8 models (truncated toward zero, as ONNX's reference
# and ONNX Runtime do) are compared exactly.
# usage: test_resize.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/resize
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_resize_models.py" "$dir"
for m in $(cat "$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar" --dump-ir "$dir/$m.ir" >/dev/null
  case $m in
    aa_*|*_uint8) ;; # (integer data: one pass, the float sums truncated once)
    *) grep -q "allocate resize_last" "$dir/$m.ir/30_tir.txt" || { echo "FAIL $m: not separable"; exit 1; } ;;
  esac
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4
done
echo "resize: all passed"
