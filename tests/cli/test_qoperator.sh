#!/bin/sh
# ONNX Runtime's QOperator int8 format (QuantizeLinear, QLinearConv and the com.microsoft contrib ops QLinearAdd,
# QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinear(Global)AveragePool, QLinearConcat, QGemm): each model of
# make_qoperator_models.py (one per contrib op, uint8 and int8, and a quantized ResNet-18 at 64x64, also in the
# QDQ format: float ops between DequantizeLinear and QuantizeLinear, which LowerQDQ makes integer) is compiled
# and run, and its output must match the numpy reference of the quantized graph within the tolerance models.txt
# gives (quantized outputs: steps). Compiled for an AVX512-VNNI CPU, all 20 of the ResNet's QLinearConvs must
# become 8-bit packed convs, and each of its 8 QLinearAdds (both dequantizes, the add, the quantize) must run in
# the kernel of the conv before it (FuseOps' prologue rule); likewise the QDQ ResNet's 20 Convs and its Gemm (a
# matmul by the transposed weight). The quantized MobileNetV2 (64x64; QDQ too): its 17 depthwise convs read
# their uint8 data (nn.depthwise_conv2d with a zero_point), its 35 others and its QGemm / Gemm are 8-bit packed
# convs. With ONNX Runtime's rounding (LowerConv.requantize_float32=1) each QDQ network gives exactly its
# QOperator twin's outputs.
# usage: test_qoperator.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/qoperator
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_qoperator_models.py" "$dir" --units --resnet18 64 --mobilenet-v2 64 --qdq
tab=$(printf '\t')
while IFS="$tab" read -r m tol; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --abs --tol "$tol"
done <<EOF
$(sample <"$dir/models.txt")
EOF
"$mlc" compile "$dir/qresnet18_64.onnx" --target "llvm -mcpu=znver4" --output "$dir/vnni.tar" --dump-ir "$dir/vnni.ir"
n=$(grep -c "nn.conv2d_packed(%[a-z_0-9]*, .*pad_byte=" "$dir/vnni.ir/15_after_DeadCodeElim.txt" || true)
[ "$n" = 20 ] || { echo "FAIL: $n of the 20 QLinearConvs are 8-bit packed convs for znver4"; exit 1; }
n=$(grep -c "^fused_nn_conv2d_packed_qnn_requantize_qnn_dequantize_qnn_dequantize_" "$dir/vnni.ir/10_fused_groups.txt" || true)
[ "$n" = 8 ] || { echo "FAIL: $n of the 8 QLinearAdds fused into their conv's kernel"; exit 1; }
"$mlc" compile "$dir/qdqresnet18_64.onnx" --target "llvm -mcpu=znver4" --output "$dir/vnni_qdq.tar" \
  --dump-ir "$dir/vnni_qdq.ir"
n=$(grep -c "nn.conv2d_packed(.*ty=Tensor\[([0-9, ]*), int32\]" "$dir/vnni_qdq.ir/15_after_DeadCodeElim.txt" || true)
[ "$n" = 21 ] || { echo "FAIL: $n of the QDQ ResNet's 20 Convs and Gemm are 8-bit packed convs for znver4"; exit 1; }
for m in $(printf "%s\n" qmobilenet_v2_64 qdqmobilenet_v2_64 | sample); do
  "$mlc" compile "$dir/$m.onnx" --target "llvm -mcpu=znver4" --output "$dir/$m.vnni.tar" --dump-ir "$dir/$m.ir"
  g="$dir/$m.ir/15_after_DeadCodeElim.txt"
  n=$(grep -c "nn.depthwise_conv2d(%[a-z_0-9A-Z]*, .*zero_point=" "$g" || true)
  [ "$n" = 17 ] || { echo "FAIL $m: $n of the 17 depthwise convs read 8-bit data"; exit 1; }
  n=$(grep -c "nn.conv2d_packed(.*ty=Tensor\[([0-9, ]*), int32\]" "$g" || true)
  [ "$n" = 36 ] || { echo "FAIL $m: $n of the 35 other convs and the Gemm are 8-bit packed convs"; exit 1; }
done
# ONNX Runtime's rounding (LowerConv.requantize_float32=1): each QDQ network's convs become float32 requantizes,
# as ONNX Runtime fuses QDQ into QLinearConv, so its outputs equal its QOperator twin's exactly
for m in $(printf "%s\n" resnet18_64 mobilenet_v2_64 | sample); do
  for f in q qdq; do
    "$mlc" compile "$dir/$f$m.onnx" --pass-config LowerConv.requantize_float32=1 --output "$dir/$f$m.ort.tar"
    "$mlc" run "$dir/$f$m.ort.tar" --inputs "$dir/q${m}_inputs.npz" --outputs "$dir/$f${m}_ort_out.npz"
  done
  /usr/bin/python3 "$here/compare_npz.py" "$dir/qdq${m}_ort_out.npz" "$dir/q${m}_ort_out.npz" --abs --tol 0
done
echo "qoperator: all passed"
