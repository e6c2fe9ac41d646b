#!/bin/sh
# int8 models in ONNX Runtime's QOperator format against ONNX Runtime, in the same run: ResNet-18, ResNet-50 and
# MobileNetV2 (depthwise QLinearConvs, ReLU6 as the output range) at 224x224, quantized by tests/cli/make_qoperator_models.py (QLinearConv per output channel, QLinearAdd,
# QLinearGlobalAveragePool, QGemm), and the same in the QDQ format (qdq*: float ops between DequantizeLinear and
# QuantizeLinear, ONNX Runtime's default format). mlc runs their convs as 8-bit packed convs on VNNI CPUs (vpdpbusd), else as
# exact float32 ones. The outputs agree to --tol 0.05 (relative L2): ONNX Runtime requantizes in float32, mlc in
# float64 as ONNX's reference does, so some values differ by a step. Options as bench/compare.sh
# (--threads, --rounds, ...); WORK=DIR keeps the models elsewhere than build/bench-quant.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-$here/../build/bench-quant}
mkdir -p "$work/models"
if [ ! -f "$work/models/qdqmobilenet_v2_224.onnx" ]; then
  /usr/bin/python3 "$here/../tests/cli/make_qoperator_models.py" "$work/models" --resnet18 224 --resnet50 224 \
    --mobilenet-v2 224 --qdq --no-ref
fi
exec "$here/compare.sh" --work "$work" --models qresnet18_224,qresnet50_224,qdqresnet18_224,qdqresnet50_224,qmobilenet_v2_224,qdqmobilenet_v2_224 --tol 0.05 "$@"
