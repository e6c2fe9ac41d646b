#!/bin/sh
# Integer convolutions and matmuls (QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger) run as exact float32
# packed convs / matmuls (LowerConv steps 5 and 6): each model of make_intconv_models.py is compiled and run, and
# out.npz must equal the int64 reference exactly. Every model must compile to packed convs marked exact (no
# Winograd) or packed dense products, one per input-channel (K) chunk: the count chunks.txt gives (0: more than
# one, where the sums pass 2^24), added in int32.
# usage: test_intconv.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/intconv
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_intconv_models.py" "$dir"
tab=$(printf '\t')
while IFS="$tab" read -r m want; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar" --dump-ir "$dir/$m.ir"
  g="$dir/$m.ir/14_after_DeadCodeElim.txt"
  n=$(grep -c "nn.conv2d_packed(.*exact=1\|nn.dense_packed(" "$g" || true)
  if grep -q "winograd" "$g"; then echo "FAIL $m: a Winograd conv"; exit 1; fi
  if [ "$want" = 0 ]; then
    [ "$n" -ge 2 ] || { echo "FAIL $m: $n exact packed convs, want chunks"; exit 1; }
  else
    [ "$n" = "$want" ] || { echo "FAIL $m: $n exact packed convs, want $want"; exit 1; }
  fi
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 0
done <"$dir/chunks.txt"
echo "intconv: all passed"
