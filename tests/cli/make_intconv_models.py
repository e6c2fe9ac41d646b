#!/usr/bin/env python3
"""make_intconv_models.py DIR: integer convolutions and matmuls (QLinearConv, ConvInteger, QLinearMatMul,
MatMulInteger) that LowerConv runs as exact float32 ones, or as 8-bit packed convs on a target with u8 x s8 dot
products (tests/cli/test_intconv.sh), each with a random input
(NAME_inputs.npz) and its exact reference (NAME_ref.npz) computed in int64: acc = conv(x - x_zp, w - w_zp)
(+ bias) or (a - a_zp) @ b; the QLinear ops' output is clip(round_half_even(acc * x_scale * w_scale / y_scale)
+ y_zp), with power-of-two scales so the product is exact (the ties models: full-mantissa scales and sums at
float32's rounding ties, the product in float64 as ONNX's reference does). The names are listed in DIR/models.txt;
DIR/chunks.txt gives the number of float ops each must become (0: more than one, the input channels or K split
so every partial sum stays below 2^24) and the number of 8-bit packed convs it must become with VNNI."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onnx

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(21)
names, chunks = [], []
NP = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def conv_ref(x, w, stride, pad, groups, dil=1):
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1, (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, oc, oh, ow), np.int64)
    og = oc // groups
    for o in range(oc):
        g = o // og
        for i in range(kh):
            for j in range(kw):
                a, b = i * dil, j * dil
                patch = xp[:, g * cg:(g + 1) * cg, a:a + stride * oh:stride, b:b + stride * ow:stride]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    return y


def model(name, xt, shape, oc, k, stride=1, pad=0, groups=1, wmax=127, qlinear=True, nchunks=1, dil=1, int8=1):
    lo, hi = (0, 255) if xt == TensorProto.UINT8 else (-128, 127)
    x = rng.integers(lo, hi + 1, shape).astype(NP[xt])
    xz = NP[xt](rng.integers(lo, hi + 1))
    w = rng.integers(-wmax, wmax + 1, (oc, shape[1] // groups, k, k)).astype(np.int8)
    acc = conv_ref(x.astype(np.int64) - int(xz), w.astype(np.int64), stride, pad, groups, dil)
    ins = [helper.make_tensor_value_info("x", xt, list(shape))]
    if qlinear:
        xs, ys = np.float32(0.5), np.float32(4.0)
        ws = (2.0 ** -rng.integers(1, 4, oc)).astype(np.float32)
        yt = xt
        yz = NP[yt](rng.integers(lo, hi + 1))
        b = rng.integers(-5000, 5000, oc).astype(np.int32)
        acc = acc + b[None, :, None, None]
        y = np.rint(acc * (xs * ws / ys).astype(np.float64)[None, :, None, None]) + int(yz)
        ref = np.clip(y, lo, hi).astype(NP[yt])
        inits = [numpy_helper.from_array(v, nm) for v, nm in
                 [(xs, "xs"), (np.array(xz), "xz"), (w, "w"), (ws, "ws"), (np.zeros(oc, np.int8), "wz"), (ys, "ys"),
                  (np.array(yz), "yz"), (b, "b")]]
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                                strides=[stride, stride], pads=[pad] * 4, group=groups, dilations=[dil, dil])
        outs = [helper.make_tensor_value_info("y", yt, None)]
    else:
        wz = rng.integers(-3, 4, oc).astype(np.int8)
        acc = conv_ref(x.astype(np.int64) - int(xz), w.astype(np.int64) - wz[:, None, None, None].astype(np.int64),
                       stride, pad, groups, dil)
        ref = acc.astype(np.int32)
        inits = [numpy_helper.from_array(v, nm) for v, nm in [(np.array(xz), "xz"), (w, "w"), (wz, "wz")]]
        node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=[stride, stride],
                                pads=[pad] * 4, group=groups, dilations=[dil, dil])
        outs = [helper.make_tensor_value_info("y", TensorProto.INT32, None)]
    g = helper.make_graph([node], name, ins, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", y=ref)
    names.append(name)
    chunks.append(f"{name}\t{nchunks}\t{int8}")


model("qlinear_u8_stride2", TensorProto.UINT8, (1, 16, 13, 11), 24, 3, stride=2, pad=1)
model("qlinear_i8_1x1", TensorProto.INT8, (2, 40, 7, 9), 32, 1)
# 512 channels of 3x3 taps with |w| up to 127: sums of |w| near 300k per output channel, times |x - zp| up to 255,
# pass 2^24: the input channels split into chunks (the exact count follows from the drawn weights and zero point)
model("qlinear_u8_chunked", TensorProto.UINT8, (1, 512, 6, 6), 16, 3, pad=1, nchunks=0)
# a conv AlterOpLayout would make Winograd in float32 (64 -> 64 channels, 3x3, 64 F(2x2) tiles): kept direct
model("qlinear_u8_winograd_shape", TensorProto.UINT8, (1, 64, 16, 16), 64, 3, pad=1, wmax=20)
# grouped: float32 on every target
model("convinteger_groups", TensorProto.UINT8, (1, 32, 10, 10), 48, 3, pad=1, groups=2, qlinear=False, int8=0)
# the 8-bit form's edges: 3 input channels (a word padded with the zero point byte) with int8 data (bytes x + 128)
# and a 7x7 stride-2 stem, a dilated conv, a weight zero point (w - wz still int8), output channels in no block
model("qlinear_i8_stem_c3", TensorProto.INT8, (1, 3, 23, 21), 16, 7, stride=2, pad=3)
model("qlinear_u8_dilated", TensorProto.UINT8, (1, 20, 12, 12), 40, 3, pad=2, dil=2)
# a 1x1 conv over 8x8 (whole vectors of columns): the 8-bit rows form, data words by broadcast weight words
model("qlinear_u8_1x1_rows", TensorProto.UINT8, (1, 36, 8, 8), 32, 1)
model("convinteger_wzp", TensorProto.UINT8, (1, 9, 9, 9), 20, 3, pad=1, wmax=100, qlinear=False)
# depthwise (group = channels): on a CPU nn.depthwise_conv2d of the bytes themselves (its padding stage subtracts
# the zero point), counted with the float ops; a channel multiplier of 2 with stride 2, int8 data with batch 2
model("qlinear_u8_depthwise_m2", TensorProto.UINT8, (1, 24, 15, 13), 48, 3, stride=2, pad=1, groups=24, int8=0)
model("qlinear_i8_depthwise", TensorProto.INT8, (2, 32, 9, 9), 32, 3, pad=1, groups=32, int8=0)
model("convinteger_depthwise", TensorProto.UINT8, (1, 16, 8, 8), 16, 3, pad=1, groups=16, qlinear=False, int8=0)


def ties_model(name, depthwise):
    """QLinearConv whose sums are the float32 ties of requantize's float32 form: m = x_scale * w_scale / y_scale
    (float32, full mantissa) and sums a with float32(a * m) = k + 0.5 while a * m is not, on the side that
    round half to even of the float32 product gets wrong;
    pixel (0, 0) of channel o sums exactly target o (a 1x1 conv reading one
    of its 16 input channels, or a depthwise 3x3 conv whose weight is its centre tap, plus the bias)"""
    xs, ys = np.float32(0.0123), np.float32(0.917)
    ws = np.float32(0.00231)
    m = np.float32(xs * ws) / ys
    acc = np.arange(-int(127 / m), int(127 / m), dtype=np.int64)
    hi = acc.astype(np.float32) * m
    lo = acc.astype(np.float64) * np.float64(m) - hi.astype(np.float64)
    # ties of hi that its round half to even gets wrong (a * m is on the other side)
    tie = (np.abs(hi - np.rint(hi)) == 0.5) & (np.rint(hi) != np.rint(acc * np.float64(m)))
    targets = np.concatenate([acc[tie & (lo > 0)][:8], acc[tie & (lo < 0)][:8]])  # 16 channels: a block
    assert len(targets) == 16, "too few ties"
    c = len(targets)
    xz, yz = np.uint8(100), np.uint8(128)
    x = rng.integers(0, 256, (1, 16 if not depthwise else c, 8, 8)).astype(np.uint8)
    if depthwise:
        w = np.zeros((c, 1, 3, 3), np.int8)
        w[:, 0, 1, 1] = 1
        b = (targets - (x[0, :, 0, 0].astype(np.int64) - int(xz))).astype(np.int32)
    else:
        w = np.zeros((c, 16, 1, 1), np.int8)
        w[:, 0] = 1
        b = (targets - (int(x[0, 0, 0, 0]) - int(xz))).astype(np.int32)
    wsv = np.full(c, ws, np.float32)
    a = conv_ref(x.astype(np.int64) - int(xz), w.astype(np.int64), 1, 1 if depthwise else 0, c if depthwise else 1)
    a = a + b[None, :, None, None]
    assert (a[0, :, 0, 0] == targets).all()
    ref = np.clip(np.rint(a * (xs * wsv / ys).astype(np.float64)[None, :, None, None]) + int(yz), 0, 255)
    inits = [numpy_helper.from_array(v, nm) for v, nm in
             [(xs, "xs"), (np.array(xz), "xz"), (w, "w"), (wsv, "ws"), (np.zeros(c, np.int8), "wz"), (ys, "ys"),
              (np.array(yz), "yz"), (b, "b")]]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1 if depthwise else 0] * 4, group=c if depthwise else 1)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", y=ref.astype(np.uint8))
    # LowerConv.requantize_float32=1 (ONNX Runtime's rounding): float32(a) * multiplier rounded once, which the
    # ties round the other way
    mult = (xs * wsv / ys).astype(np.float32)[None, :, None, None]
    ref32 = np.clip(np.rint(a.astype(np.float32) * mult) + int(yz), 0, 255)
    assert (ref32[0, :, 0, 0] != ref[0, :, 0, 0]).all()
    np.savez(f"{out}/{name}_ref_f32.npz", y=ref32.astype(np.uint8))
    names.append(name)
    chunks.append(f"{name}\t1\t{0 if depthwise else 1}")


ties_model("qlinear_u8_requantize_ties", False)
ties_model("qlinear_u8_depthwise_ties", True)


def matmul_model(name, xt, ashape, n, wmax=127, qlinear=False, nchunks=1):
    """MatMulInteger with the data's zero point a graph input (known at run time only: any in range), or
    QLinearMatMul with constant zero points and power-of-two scales; B a constant int8 [K, n]"""
    lo, hi = (0, 255) if xt == TensorProto.UINT8 else (-128, 127)
    a = rng.integers(lo, hi + 1, ashape).astype(NP[xt])
    az = NP[xt](rng.integers(lo, hi + 1))
    b = rng.integers(-wmax, wmax + 1, (ashape[-1], n)).astype(np.int8)
    acc = (a.astype(np.int64) - int(az)) @ b.astype(np.int64)
    if qlinear:
        xs, bs, ys = np.float32(0.25), np.float32(0.125), np.float32(64.0)
        yz = NP[xt](rng.integers(lo, hi + 1))
        ref = np.clip(np.rint(acc * float(xs * bs / ys)) + int(yz), lo, hi).astype(NP[xt])
        inits = [numpy_helper.from_array(v, nm) for v, nm in
                 [(xs, "as"), (np.array(az), "az"), (b, "b"), (bs, "bs"), (np.array(np.int8(0)), "bz"), (ys, "ys"),
                  (np.array(yz), "yz")]]
        node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
        ins, feeds = [helper.make_tensor_value_info("a", xt, list(ashape))], {"a": a}
        outs = [helper.make_tensor_value_info("y", xt, None)]
    else:
        ref = acc.astype(np.int32)
        inits = [numpy_helper.from_array(b, "b")]
        node = helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])
        ins = [helper.make_tensor_value_info("a", xt, list(ashape)), helper.make_tensor_value_info("az", xt, [])]
        feeds = {"a": a, "az": np.array(az)}
        outs = [helper.make_tensor_value_info("y", TensorProto.INT32, None)]
    g = helper.make_graph([node], name, ins, outs, initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", **feeds)
    np.savez(f"{out}/{name}_ref.npz", y=ref)
    names.append(name)
    chunks.append(f"{name}\t{nchunks}\t1")


matmul_model("matmulinteger_runtime_zp", TensorProto.UINT8, (2, 5, 300), 40)
matmul_model("matmulinteger_i8_runtime_zp", TensorProto.INT8, (3, 4, 100), 20)
matmul_model("qlinearmatmul_chunked", TensorProto.INT8, (16, 2048), 24, qlinear=True, nchunks=0)
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(names) + "\n")
with open(f"{out}/chunks.txt", "w") as f:
    f.write("\n".join(chunks) + "\n")
