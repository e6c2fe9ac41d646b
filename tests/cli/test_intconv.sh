#!/bin/sh
# Integer convolutions and matmuls (QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger), LowerConv step 5
# and 6: each model of make_intconv_models.py is compiled three ways and out.npz must equal the int64 reference
# exactly wherever it runs:
#  - for the host without its u8 x s8 dot products (-mattr=-avx512vnni,-avxvnni), run: exact float32 packed
#    convs (no Winograd) or packed dense products, one per input-channel (K) chunk: the count chunks.txt gives
#    (0: more than one, where the sums pass 2^24), added in int32; a depthwise conv: nn.depthwise_conv2d of the
#    8-bit data (zero_point=);
#  - for AVX512-VNNI (znver4) and AVX-VNNI (alderlake), compiled only: the 8-bit packed convs chunks.txt's third
#    column gives (nn.conv2d_packed with int32 weight words; a matmul's is a 1x1 conv of its transposed data),
#    vpdpbusd on zmm / ymm;
#  - for the host as it is, run (the 8-bit form where the host has VNNI); the requantize-ties models also with
#    --pass-config LowerConv.requantize_float32=1 against their float32-rounded reference (NAME_ref_f32.npz).
# usage: test_intconv.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/intconv
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_intconv_models.py" "$dir"

check_run() { # model package suffix
  "$mlc" run "$dir/$2" --inputs "$dir/${1}_inputs.npz" --outputs "$dir/${1}_out$3.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${1}_out$3.npz" "$dir/${1}_ref.npz" --tol 0
}

tab=$(printf '\t')
while IFS="$tab" read -r m want int8; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --target "llvm -mattr=-avx512vnni,-avxvnni" --output "$dir/$m.float.tar" \
    --dump-ir "$dir/$m.float.ir"
  g="$dir/$m.float.ir/15_after_DeadCodeElim.txt"
  n=$(grep -c "nn.conv2d_packed(.*exact=1\|nn.dense_packed(\|nn.depthwise_conv2d(.*zero_point=" "$g" || true)
  if grep -q "winograd" "$g"; then echo "FAIL $m: a Winograd conv"; exit 1; fi
  if grep -q "pad_byte=" "$g"; then echo "FAIL $m: an 8-bit conv without VNNI"; exit 1; fi
  if [ "$want" = 0 ]; then
    [ "$n" -ge 2 ] || { echo "FAIL $m: $n exact packed convs, want chunks"; exit 1; }
  else
    [ "$n" = "$want" ] || { echo "FAIL $m: $n exact packed convs, want $want"; exit 1; }
  fi
  check_run "$m" "$m.float.tar" _float
  for cpu in znver4:zmm alderlake:ymm; do
    ir="$dir/$m.${cpu%%:*}.ir"
    "$mlc" compile "$dir/$m.onnx" --target "llvm -mcpu=${cpu%%:*}" --output "$dir/$m.${cpu%%:*}.tar" --dump-ir "$ir"
    n8=$(grep -c "nn.conv2d_packed(.*ty=Tensor\[([0-9, ]*), int32\]" "$ir/15_after_DeadCodeElim.txt" || true)
    [ "$n8" = "$int8" ] || { echo "FAIL $m (${cpu%%:*}): $n8 8-bit packed convs, want $int8"; exit 1; }
    if [ "$int8" != 0 ] && ! grep -q "vpdpbusd.*%${cpu#*:}" "$ir/50_asm.s"; then
      echo "FAIL $m (${cpu%%:*}): no vpdpbusd on ${cpu#*:}"
      exit 1
    fi
  done
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  check_run "$m" "$m.tar" ""
  if [ -f "$dir/${m}_ref_f32.npz" ]; then # ONNX Runtime's rounding: the ties go the other way
    "$mlc" compile "$dir/$m.onnx" --pass-config LowerConv.requantize_float32=1 --output "$dir/$m.f32.tar"
    "$mlc" run "$dir/$m.f32.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out_f32.npz"
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out_f32.npz" "$dir/${m}_ref_f32.npz" --tol 0
  fi
done <<EOF
$(sample <"$dir/chunks.txt")
EOF
echo "intconv: all passed"
