#!/usr/bin/env python3
"""make_winograd_models.py DIR: small ONNX models whose 3x3 convs AlterOpLayout can rewrite into Winograd
(nn.winograd_input, nn.winograd_gemm, nn.winograd_output), each with random inputs (NAME_inputs.npz) and a float64 numpy reference of the direct
convolution (NAME_ref.npz). They cover output sizes that are not multiples of the 4x4 tile, padding 0 and 1,
batch 2, channel counts that are not multiples of 16, and fused epilogues (bias + relu, residual add + relu).
Used by tests/cli/test_winograd.sh."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
F = TensorProto.FLOAT


def conv_ref(x, w, pad):
    """direct cross-correlation in float64, NCHW, stride 1, 3x3"""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    oh, ow = h - 2, wd - 2
    y = np.zeros((n, w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,kc->nkhw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j].astype(np.float64))
    return y


def save(name, nodes, inputs, outputs, inits, feeds, ref):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    np.savez(os.path.join(out, name + "_inputs.npz"), **feeds)
    np.savez(os.path.join(out, name + "_ref.npz"), y=ref.astype(np.float32))


def arr(shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


# batch 2, 12 -> 24 channels (K a multiple of 8, not of 16), 13 x 13 with padding 1 (13 = 3 tiles + 1), bias, relu
x, w, b = arr([2, 12, 13, 13]), arr([24, 12, 3, 3], 0.3), arr([24])
save("wino_bias_relu", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["y"], name="relu")], [vi("x", [2, 12, 13, 13])], [vi("y", [2, 24, 13, 13])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")], {"x": x},
    np.maximum(conv_ref(x, w, 1) + b.reshape(1, -1, 1, 1), 0))

# padding 0: 11 x 10 -> 9 x 8 output (rows not a multiple of 4), 16 -> 32 channels, residual add + relu
x, w, r = arr([1, 16, 11, 10]), arr([32, 16, 3, 3], 0.25), arr([1, 32, 9, 8])
save("wino_residual", [
    helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3]),
    helper.make_node("Add", ["c", "r"], ["s"], name="residual"),
    helper.make_node("Relu", ["s"], ["y"], name="relu")], [vi("x", [1, 16, 11, 10]), vi("r", [1, 32, 9, 8])],
    [vi("y", [1, 32, 9, 8])], [numpy_helper.from_array(w, "w")], {"x": x, "r": r},
    np.maximum(conv_ref(x, w, 0) + r, 0))

# a ResNet-like block: 64 channels, 14 x 14, two convs (the second reads the first's relu) and the residual
x, w1, w2 = arr([1, 64, 14, 14]), arr([64, 64, 3, 3], 0.06), arr([64, 64, 3, 3], 0.06)
b1, b2 = arr([64]), arr([64])
h = np.maximum(conv_ref(x, w1, 1) + b1.reshape(1, -1, 1, 1), 0)
save("wino_block", [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Add", ["c2", "x"], ["s"], name="residual"),
    helper.make_node("Relu", ["s"], ["y"], name="relu2")], [vi("x", [1, 64, 14, 14])], [vi("y", [1, 64, 14, 14])],
    [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))], {"x": x},
    np.maximum(conv_ref(h.astype(np.float32), w2, 1) + b2.reshape(1, -1, 1, 1) + x, 0))


def conv_any(x, w, stride, pad):
    """direct cross-correlation in float64, NCHW, any kernel size, square stride and padding"""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    oh, ow = (x.shape[2] - kh) // stride + 1, (x.shape[3] - kw) // stride + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,kc->nkhw", x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride],
                           w[:, :, i, j].astype(np.float64))
    return y


def maxpool_ref(x, k, s, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    oh, ow = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    y = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for i in range(k):
        for j in range(k):
            y = np.maximum(y, x[:, :, i:i + s * oh:s, j:j + s * ow:s])
    return y


# Winograd between packed convs, so ConvertLayoutNCHWc keeps the activations NCHWc through it (the pad reads
# NCHWc, the output transform writes it): 1x1 conv + bias + relu -> max pool -> 3x3 Winograd conv + bias +
# the pool's output (residual) + relu -> 3x3 stride-2 conv. nchwc16 has 32 channels (block 16), nchwc8 24
# (block 8), batch 2 and sizes that are not whole tiles, and ends in a global average pool (which reads NCHWc);
# nchwc16's 29x29 pooled input is 64 F(4x4) tiles, enough for its GEMM to take two groups of tiles
# (gemm_tile_groups).
for name, n, c, k, hw, k2 in (("wino_nchwc16", 1, 16, 32, 58, 48), ("wino_nchwc8", 2, 8, 24, 22, 16)):
    x, w0, b0 = arr([n, c, hw, hw]), arr([k, c, 1, 1], 0.3), arr([k])
    w1, b1, w2 = arr([k, k, 3, 3], 0.1), arr([k]), arr([k2, k, 3, 3], 0.1)
    p = maxpool_ref(np.maximum(conv_any(x, w0, 1, 0) + b0.reshape(1, -1, 1, 1), 0), 3, 2, 1).astype(np.float32)
    r = np.maximum(conv_any(p, w1, 1, 1) + b1.reshape(1, -1, 1, 1) + p, 0).astype(np.float32)
    y = conv_any(r, w2, 2, 1)
    gap = [helper.make_node("GlobalAveragePool", ["c2"], ["y"], name="gap")] if name == "wino_nchwc8" else []
    if gap:
        y = y.mean(axis=(2, 3), keepdims=True)
    save(name, [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0", kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
        helper.make_node("MaxPool", ["r0"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "p"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2" if gap else "y"], name="conv2", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1])] + gap,
        [vi("x", [n, c, hw, hw])], [vi("y", list(y.shape))],
        [numpy_helper.from_array(a, nm) for a, nm in ((w0, "w0"), (b0, "b0"), (w1, "w1"), (b1, "b1"), (w2, "w2"))],
        {"x": x}, y)

# A direct conv whose weights per output block outgrow twice L1 (128 x 3 x 3 x 16 floats: 72 KiB) on an 8x8 map:
# without AVX-512 its schedule walks the input channel chunks outermost (order 2, chunks_outer_fallback), the
# conv computed per output block and half of the rows (topi_row_groups), its bias + relu epilogue after it;
# batch 2, NCHWc output (read by a 1x1 conv).
x, w0, b0, w1 = arr([2, 128, 16, 16]), arr([64, 128, 3, 3], 0.05), arr([64]), arr([32, 64, 1, 1], 0.2)
h = np.maximum(conv_any(x, w0, 2, 1) + b0.reshape(1, -1, 1, 1), 0).astype(np.float32)
save("chunks_nchwc", [
    helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0", kernel_shape=[3, 3], strides=[2, 2],
                     pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
    helper.make_node("Conv", ["r0", "w1"], ["y"], name="conv1", kernel_shape=[1, 1])],
    [vi("x", [2, 128, 16, 16])], [vi("y", [2, 32, 8, 8])],
    [numpy_helper.from_array(a, nm) for a, nm in ((w0, "w0"), (b0, "b0"), (w1, "w1"))], {"x": x},
    conv_any(h, w1, 1, 0))

# A Winograd GEMM whose weight block per (alpha^2 point, 16 output channels) is 1024 x 16 floats (64 KiB, more
# than any L1): its schedule streams the next block in while the register tiles multiply the current one
# (te_prefetch; the fallback's knob prefetch = 1); 6x6 with padding 1, 1024 -> 16 channels.
x, w = arr([1, 1024, 6, 6]), arr([16, 1024, 3, 3], 0.03)
save("wino_stream", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
     [vi("x", [1, 1024, 6, 6])], [vi("y", [1, 16, 6, 6])], [numpy_helper.from_array(w, "w")], {"x": x},
     conv_ref(x, w, 1))

# 256 -> 64 channels at 7x7: F(2x2)'s 16 tiles fit one AVX-512 register tile, and U streams (64 KiB blocks)
x, w = arr([1, 256, 7, 7]), arr([64, 256, 3, 3], 0.05)
save("wino_onepass", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
     [vi("x", [1, 256, 7, 7])], [vi("y", [1, 64, 7, 7])], [numpy_helper.from_array(w, "w")], {"x": x},
     conv_ref(x, w, 1))

def pointwise_relu(name, c, k, hw, scale):
    """a 1x1 conv (c -> k channels on an hw x hw map) + bias + relu"""
    x, w, b = arr([1, c, hw, hw]), arr([k, c, 1, 1], scale), arr([k])
    save(name, [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[1, 1]),
                helper.make_node("Relu", ["c"], ["y"], name="relu")],
         [vi("x", [1, c, hw, hw])], [vi("y", [1, k, hw, hw])],
         [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")], {"x": x},
         np.maximum(conv_any(x, w, 1, 0) + b.reshape(1, -1, 1, 1), 0))


# A direct 1x1 conv whose weights (512 -> 256 channels: 512 KiB) outgrow any L1, on a 7x7 map: each iteration
# of its parallel loop (an output channel block's rows) streams in the next block's weights (conv2d_x86.c's
# prefetch_fallback).
pointwise_relu("conv_stream", 512, 256, 7, 0.05)

# A 1x1 conv on an odd number of rows (35x35, so no row groups) whose input (157 KB) outweighs its weights
# (4 KB): planned for two cores it walks the rows outermost (order 1), so each thread reads half of the input,
# and for one core the output channel blocks (order 0).
pointwise_relu("rows_odd", 32, 32, 35, 0.2)
