#!/usr/bin/env python3
"""make_dwpool_models.py DIR: small ONNX models for the depthwise convolution (nn.depthwise_conv2d, which
AlterOpLayout makes of a Conv with group = C) and the window pools, each with random inputs (NAME_inputs.npz)
and a float64 numpy reference written here from the ONNX definitions (NAME_ref.npz). Depthwise: strides 1 and
2, padding, dilation 2, channel multiplier 2, odd sizes, 5x5, asymmetric pads, fused bias + Clip(0, 6) and a
residual add. Pools: MaxPool / AveragePool 2-D with pads, ceil_mode, dilations, count_include_pad, a 1-D and a
3-D pool. Channel concatenates of packed convs' outputs, in NCHWc blocks or not (catc_* / catn_*). Used by
tests/cli/test_dwpool.sh; the names are listed one per line in DIR/models.txt."""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(11)
F = TensorProto.FLOAT
names = []


def save(name, nodes, x, inits, ref):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", F, list(x.shape))],
                          [helper.make_tensor_value_info("y", F, None)], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", y=ref.astype(np.float32))
    names.append(name)


def depthwise_ref(x, w, b, stride, pads, dil):
    """grouped cross-correlation with group = C, weight [C*M, 1, KH, KW], pads [top, left, bottom, right]"""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    m = oc // c
    oh = (h - (kh - 1) * dil - 1) // stride + 1
    ow = (wd - (kw - 1) * dil - 1) // stride + 1
    y = np.zeros((n, oc, oh, ow))
    for o in range(oc):
        for i in range(kh):
            for j in range(kw):
                win = x[:, o // m, i * dil:i * dil + (oh - 1) * stride + 1:stride, j * dil:j * dil + (ow - 1) * stride + 1:stride]
                y[:, o] += win * float(w[o, 0, i, j])
    return y + b.reshape(1, -1, 1, 1)


def depthwise(name, c, h, w_, k, stride, pads, dil=1, mult=1, residual=False):
    x = rng.standard_normal((1, c, h, w_)).astype(np.float32)
    w = rng.standard_normal((c * mult, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(c * mult).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pads[0], pads[1], pads[2], pads[3]], dilations=[dil, dil], group=c),
             helper.make_node("Clip", ["c", "lo", "hi"], ["r" if residual else "y"])]
    ref = np.clip(depthwise_ref(x, w, b, stride, pads, dil), 0, 6)
    if residual:  # needs the output shape of the input: stride 1, "same" padding, multiplier 1
        nodes.append(helper.make_node("Add", ["r", "x"], ["y"]))
        ref = ref + x
    save(name, nodes, x, inits, ref)


def conv_ref(x, w, b, stride, pad):
    """dense cross-correlation, weight [OC, C, K, K], the same pad on every side"""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oc, _, k, _ = w.shape
    oh = (x.shape[2] - k) // stride + 1
    ow = (x.shape[3] - k) // stride + 1
    y = np.zeros((x.shape[0], oc, oh, ow))
    for i in range(k):
        for j in range(k):
            win = x[:, :, i:i + (oh - 1) * stride + 1:stride, j:j + (ow - 1) * stride + 1:stride]
            y += np.einsum("nchw,oc->nohw", win, w[:, :, i, j].astype(np.float64))
    return y + b.reshape(1, -1, 1, 1)


def depthwise_blocked(name, c, h, w_, k, stride, pads, dil=1, residual=False):
    """a depthwise conv between packed convs, so that ConvertLayoutNCHWc runs it in NCHWc (data_block): a 1x1
    conv 8 -> c + bias + Relu, the depthwise conv + bias + Clip(0, 6) (+ the Relu output when residual), a 3x3
    stride-2 conv c -> 16 that reads it"""
    x = rng.standard_normal((1, 8, h, w_)).astype(np.float32)
    w1 = (rng.standard_normal((c, 8, 1, 1)) / 3).astype(np.float32)
    b1 = rng.standard_normal(c).astype(np.float32)
    w = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    w2 = (rng.standard_normal((16, c, 3, 3)) / 8).astype(np.float32)
    b2 = rng.standard_normal(16).astype(np.float32)
    inits = [numpy_helper.from_array(v, nm) for v, nm in
             [(w1, "W1"), (b1, "B1"), (w, "W"), (b, "B"), (w2, "W2"), (b2, "B2"),
              (np.array(0, np.float32), "lo"), (np.array(6, np.float32), "hi")]]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["e"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["e"], ["er"]),
             helper.make_node("Conv", ["er", "W", "B"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=list(pads), dilations=[dil, dil], group=c),
             helper.make_node("Clip", ["c", "lo", "hi"], ["r"])]
    e = np.maximum(conv_ref(x, w1, b1, 1, 0), 0)
    r = np.clip(depthwise_ref(e, w, b, stride, pads, dil), 0, 6)
    if residual:
        nodes.append(helper.make_node("Add", ["r", "er"], ["s"]))
        r = r + e
    nodes.append(helper.make_node("Conv", ["s" if residual else "r", "W2", "B2"], ["y"], kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    save(name, nodes, x, inits, conv_ref(r, w2, b2, 2, 1))


def pool_ref(x, kind, k, s, pads, dil, ceil, cip):
    """ONNX MaxPool / AveragePool over the trailing len(k) dims; pads [begin..., end...]"""
    nsp = len(k)
    insp = x.shape[2:]
    outsp = []
    for i in range(nsp):
        span = (k[i] - 1) * dil[i] + 1
        avail = insp[i] + pads[i] + pads[nsp + i] - span
        o = (math.ceil(avail / s[i]) if ceil else avail // s[i]) + 1
        if ceil and (o - 1) * s[i] >= insp[i] + pads[i]:
            o -= 1
        outsp.append(o)
    y = np.zeros(x.shape[:2] + tuple(outsp))
    for oidx in np.ndindex(*outsp):
        vals, counted = [], 0
        for kidx in np.ndindex(*k):
            pos = [oidx[i] * s[i] + kidx[i] * dil[i] - pads[i] for i in range(nsp)]
            inside = all(0 <= pos[i] < insp[i] for i in range(nsp))
            in_padded = all(-pads[i] <= pos[i] < insp[i] + pads[nsp + i] for i in range(nsp))
            if inside:
                vals.append(x[(slice(None), slice(None)) + tuple(pos)].astype(np.float64))
                counted += 1
            elif cip and in_padded:
                counted += 1
        sl = (slice(None), slice(None)) + oidx
        if kind == "MaxPool":
            y[sl] = np.max(np.stack(vals), axis=0)
        else:
            y[sl] = np.sum(np.stack(vals), axis=0) / max(counted, 1)
    return y


def pool(name, kind, shape, k, s, pads, dil=None, ceil=0, cip=0):
    x = rng.standard_normal(shape).astype(np.float32)
    nsp = len(k)
    dil = dil or [1] * nsp
    attrs = dict(kernel_shape=k, strides=s, pads=pads, ceil_mode=ceil)
    if kind == "MaxPool":
        attrs["dilations"] = dil
    else:
        attrs["count_include_pad"] = cip
    nodes = [helper.make_node(kind, ["x"], ["y"], **attrs)]
    save(name, nodes, x, [], pool_ref(x, kind, k, s, pads, dil, ceil, cip))


depthwise("dw_s1_pad1", 32, 28, 28, 3, 1, [1, 1, 1, 1], residual=True)
depthwise("dw_s2_pad1", 24, 29, 29, 3, 2, [1, 1, 1, 1])
depthwise("dw_s2_mult2_odd", 5, 13, 11, 3, 2, [1, 0, 2, 1], mult=2)
depthwise("dw_dil2_k5", 6, 17, 19, 5, 1, [2, 2, 2, 2], dil=2)
depthwise("dw_s3_nopad_mult3", 4, 15, 15, 3, 3, [0, 0, 0, 0], mult=3)
depthwise("dw_s1_wide", 3, 9, 70, 3, 1, [1, 1, 1, 1])
def pool_blocked(name, kind, c, h, w_, k, s, pads, ceil=0, cip=0, prepad=False):
    """a 2-D pool between packed convs, so that ConvertLayoutNCHWc runs it in NCHWc (data_block): a 1x1 conv
    8 -> c + bias + Relu, the pool, a 3x3 stride-2 conv c -> 16 that reads it. prepad: the pads as a zero Pad
    node before a pool without pads (torch's export of count_include_pad=True), which SimplifyExpr folds into
    the pool"""
    x = rng.standard_normal((1, 8, h, w_)).astype(np.float32)
    w1 = (rng.standard_normal((c, 8, 1, 1)) / 3).astype(np.float32)
    b1 = rng.standard_normal(c).astype(np.float32)
    w2 = (rng.standard_normal((16, c, 3, 3)) / 8).astype(np.float32)
    b2 = rng.standard_normal(16).astype(np.float32)
    inits = [numpy_helper.from_array(v, nm) for v, nm in [(w1, "W1"), (b1, "B1"), (w2, "W2"), (b2, "B2")]]
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=pads, ceil_mode=ceil)
    if kind == "AveragePool":
        attrs["count_include_pad"] = cip
    pre = []
    if prepad:
        attrs["pads"] = [0, 0, 0, 0]
        inits.append(numpy_helper.from_array(np.array([0, 0] + pads[:2] + [0, 0] + pads[2:], np.int64), "P"))
        pre = [helper.make_node("Pad", ["er", "P"], ["erp"], mode="constant")]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["e"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["e"], ["er"])] + pre + [
             helper.make_node(kind, ["erp" if prepad else "er"], ["p"], **attrs),
             helper.make_node("Conv", ["p", "W2", "B2"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])]
    e = np.maximum(conv_ref(x, w1, b1, 1, 0), 0)
    pooled = pool_ref(e, kind, [k, k], [s, s], pads, [1, 1], ceil, 1 if prepad else cip)
    save(name, nodes, x, inits, conv_ref(pooled, w2, b2, 2, 1))


depthwise_blocked("dwc_s1_pad1_res", 32, 20, 20, 3, 1, [1, 1, 1, 1], residual=True)
depthwise_blocked("dwc_s2_pad1", 48, 23, 23, 3, 2, [1, 1, 1, 1])
depthwise_blocked("dwc_s2_asym_k5", 16, 17, 14, 5, 2, [2, 1, 1, 2])
depthwise_blocked("dwc_dil2_nopad", 32, 13, 11, 3, 1, [0, 0, 0, 0], dil=2)
pool_blocked("poolc_max_s2_ceil", "MaxPool", 32, 23, 21, 3, 2, [0, 0, 0, 0], ceil=1)
pool_blocked("poolc_max_s2_pad1", "MaxPool", 16, 20, 20, 3, 2, [1, 1, 1, 1])
pool_blocked("poolc_avg_2x2", "AveragePool", 32, 14, 14, 2, 2, [0, 0, 0, 0])
pool_blocked("poolc_avg_pad_cip", "AveragePool", 16, 11, 13, 3, 1, [1, 0, 1, 1], cip=1)
pool_blocked("poolc_avg_prepad", "AveragePool", 32, 17, 17, 3, 1, [1, 1, 1, 1], prepad=True)
def concat_blocked(name, chans, gpool, with_input=False, twice=True, hw=(12, 10)):
    """a channel Concat of packed convs' outputs (1x1 or 3x3 convs 8 -> chans[i] + bias + Relu; the first one
    twice unless not twice; the graph input too with with_input), a 3x3 stride-2 conv -> 16 that reads it, and
    a global pool: with equal blocks ConvertLayoutNCHWc concatenates NCHWc blocks, else (different blocks, or
    the graph input in it) the concatenate stays NCHW"""
    x = rng.standard_normal((1, 8) + hw).astype(np.float32)
    inits, nodes, outs, refs = [], [], [], []
    for i, c in enumerate(chans):
        k = 1 if i % 2 == 0 else 3
        w = (rng.standard_normal((c, 8, k, k)) / 3).astype(np.float32)
        b = rng.standard_normal(c).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"W{i}"), numpy_helper.from_array(b, f"B{i}")]
        nodes += [helper.make_node("Conv", ["x", f"W{i}", f"B{i}"], [f"c{i}"], kernel_shape=[k, k],
                                   pads=[k // 2] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        outs.append(f"r{i}")
        refs.append(np.maximum(conv_ref(x, w, b, 1, k // 2), 0))
    cat_in, cat_ref = (outs + [outs[0]], refs + [refs[0]]) if twice else (outs, refs)
    if with_input:
        cat_in, cat_ref = cat_in + ["x"], cat_ref + [x.astype(np.float64)]
    cat = np.concatenate(cat_ref, axis=1)
    w2 = (rng.standard_normal((16, cat.shape[1], 3, 3)) / 8).astype(np.float32)
    b2 = rng.standard_normal(16).astype(np.float32)
    inits += [numpy_helper.from_array(w2, "Wf"), numpy_helper.from_array(b2, "Bf")]
    nodes += [helper.make_node("Concat", cat_in, ["cat"], axis=1),
              helper.make_node("Conv", ["cat", "Wf", "Bf"], ["d"], kernel_shape=[3, 3], strides=[2, 2],
                               pads=[1, 1, 1, 1]),
              helper.make_node(gpool, ["d"], ["y"])]
    d = conv_ref(cat, w2, b2, 2, 1)
    save(name, nodes, x, inits, d.max(axis=(2, 3), keepdims=True) if gpool == "GlobalMaxPool"
         else d.mean(axis=(2, 3), keepdims=True))


def grouped(name, c, oc, groups, h, w_, k, stride, pad):
    """a grouped (not depthwise) Conv + bias + Relu: AlterOpLayout packs it with a block inside one group"""
    x = rng.standard_normal((1, c, h, w_)).astype(np.float32)
    w = (rng.standard_normal((oc, c // groups, k, k)) / 3).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pad] * 4, group=groups),
             helper.make_node("Relu", ["c"], ["y"])]
    cg, og = c // groups, oc // groups
    ref = np.concatenate([conv_ref(x[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og], b[g * og:(g + 1) * og],
                                   stride, pad) for g in range(groups)], axis=1)
    save(name, nodes, x, [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")], np.maximum(ref, 0))


grouped("grp_32x4_s1", 128, 128, 32, 14, 13, 3, 1, 1)
grouped("grp_8x8_s2", 64, 64, 8, 15, 15, 3, 2, 1)
grouped("grp_2x16_1x1", 32, 64, 2, 9, 11, 1, 1, 0)
concat_blocked("catc_three", [16, 32, 16], "GlobalMaxPool")
concat_blocked("catn_mixed_blocks", [8, 16], "GlobalAveragePool")
concat_blocked("catn_with_input", [16, 16], "GlobalAveragePool", with_input=True)
concat_blocked("catc_in_place", [16, 32, 16], "GlobalAveragePool", twice=False)
concat_blocked("catn_in_place", [8, 16], "GlobalMaxPool", twice=False)
concat_blocked("catn_unaligned", [8, 16], "GlobalMaxPool", twice=False, hw=(5, 5))  # 8 x 5 x 5 floats: 800 bytes
pool("max_s2_pad1", "MaxPool", (1, 16, 56, 56), [3, 3], [2, 2], [1, 1, 1, 1])
pool("max_ceil_dil", "MaxPool", (2, 3, 15, 13), [3, 2], [2, 2], [1, 0, 1, 1], dil=[2, 2], ceil=1)
pool("avg_pad_ceil", "AveragePool", (1, 5, 11, 12), [3, 3], [2, 2], [1, 1, 1, 1], ceil=1)
pool("avg_cip_s1", "AveragePool", (1, 4, 9, 37), [3, 3], [1, 1], [1, 1, 1, 1], cip=1)
pool("max_1d_s3", "MaxPool", (1, 4, 50), [4], [3], [2, 1])
pool("avg_3d", "AveragePool", (1, 2, 6, 7, 9), [2, 3, 3], [2, 1, 2], [0, 1, 1, 1, 1, 0])


def grouped_blocked(name, cmid, groups, h, w_, stride):
    """a grouped 3x3 conv between packed 1x1 convs (8 -> cmid + Relu, grouped cmid -> cmid + Relu, cmid -> 16):
    in NCHWc when the first conv's block divides a group's channels, so the grouped conv reads and writes blocks
    (data_block, out_block)"""
    x = rng.standard_normal((1, 8, h, w_)).astype(np.float32)
    w1 = (rng.standard_normal((cmid, 8, 1, 1)) / 3).astype(np.float32)
    b1 = rng.standard_normal(cmid).astype(np.float32)
    wg = (rng.standard_normal((cmid, cmid // groups, 3, 3)) / 3).astype(np.float32)
    bg = rng.standard_normal(cmid).astype(np.float32)
    w2 = (rng.standard_normal((16, cmid, 1, 1)) / 3).astype(np.float32)
    b2 = rng.standard_normal(16).astype(np.float32)
    inits = [numpy_helper.from_array(v, nm) for v, nm in
             [(w1, "W1"), (b1, "B1"), (wg, "WG"), (bg, "BG"), (w2, "W2"), (b2, "B2")]]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "WG", "BG"], ["cg"], kernel_shape=[3, 3], strides=[stride, stride],
                              pads=[1, 1, 1, 1], group=groups),
             helper.make_node("Relu", ["cg"], ["rg"]),
             helper.make_node("Conv", ["rg", "W2", "B2"], ["y"], kernel_shape=[1, 1])]
    r1 = np.maximum(conv_ref(x, w1, b1, 1, 0), 0)
    g = cmid // groups
    rg = np.maximum(np.concatenate([conv_ref(r1[:, i * g:(i + 1) * g], wg[i * g:(i + 1) * g], bg[i * g:(i + 1) * g],
                                             stride, 1) for i in range(groups)], axis=1), 0)
    save(name, nodes, x, inits, conv_ref(rg, w2, b2, 1, 0))


# grouped convs in NCHWc: 8 channels a group (RegNet's group width), 16 a group, strides 1 and 2
grouped_blocked("grpc_8x3_s1", 24, 3, 10, 9, 1)
grouped_blocked("grpc_16x2_s2", 32, 2, 13, 12, 2)
# groups of 4 and 8 channels (ResNeXt-50's) merged into block-diagonal groups of 16 channels (4 and 2 groups
# each), which read and write NCHWc
grouped_blocked("grpm_4x32_s1", 128, 32, 11, 10, 1)
grouped_blocked("grpm_8x8_s2", 64, 8, 13, 14, 2)


def padded_blocks(name, c, cmid, h, w_):
    """output channels in no block of 8 or 16 (ShuffleNet's 58): c -> cmid 1x1 conv + Relu, a 3x3 depthwise on
    cmid channels, a 3x3 conv cmid -> cmid (padding 1) + Relu, a 1x1 conv cmid -> 16; the cmid-channel convs
    zero-pad their last block to 16 channels (to 8 where 16 would add more than a quarter; attribute channels)
    and store cmid"""
    x = rng.standard_normal((1, c, h, w_)).astype(np.float32)
    w1 = (rng.standard_normal((cmid, c, 1, 1)) / 3).astype(np.float32)
    b1 = rng.standard_normal(cmid).astype(np.float32)
    wd = rng.standard_normal((cmid, 1, 3, 3)).astype(np.float32)
    bd = rng.standard_normal(cmid).astype(np.float32)
    w3 = (rng.standard_normal((cmid, cmid, 3, 3)) / 8).astype(np.float32)
    b3 = rng.standard_normal(cmid).astype(np.float32)
    w4 = (rng.standard_normal((16, cmid, 1, 1)) / 3).astype(np.float32)
    b4 = rng.standard_normal(16).astype(np.float32)
    inits = [numpy_helper.from_array(v, nm) for v, nm in
             [(w1, "W1"), (b1, "B1"), (wd, "WD"), (bd, "BD"), (w3, "W3"), (b3, "B3"), (w4, "W4"), (b4, "B4")]]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "WD", "BD"], ["cd"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=cmid),
             helper.make_node("Conv", ["cd", "W3", "B3"], ["c3"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("Conv", ["r3", "W4", "B4"], ["y"], kernel_shape=[1, 1])]
    r1 = np.maximum(conv_ref(x, w1, b1, 1, 0), 0)
    cd = depthwise_ref(r1, wd, bd, 1, [1, 1, 1, 1], 1)
    r3 = np.maximum(conv_ref(cd, w3, b3, 1, 1), 0)
    save(name, nodes, x, inits, conv_ref(r3, w4, b4, 1, 0))


padded_blocks("padc_58_28x28", 24, 58, 28, 28)
padded_blocks("padc_116_14x14", 32, 116, 14, 14)
padded_blocks("padc_21_20x20", 40, 21, 20, 20)  # 21 classes: padded to 24 (blocks of 8), not 32


def wide_head(name, c, oc, h, w_):
    """SqueezeNet's classifier: a 1x1 conv c -> oc + Relu, then a global average pool; oc a multiple of 8 but
    not of 16 and at least 256: with AVX-512 its last block is zero-padded to 16 channels (channels=oc) instead
    of every block being 8 wide, half a vector"""
    x = rng.standard_normal((1, c, h, w_)).astype(np.float32)
    w1 = (rng.standard_normal((oc, c, 1, 1)) / 8).astype(np.float32)
    b1 = rng.standard_normal(oc).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(b1, "B1")]
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("GlobalAveragePool", ["r1"], ["y"])]
    r1 = np.maximum(conv_ref(x, w1, b1, 1, 0), 0)
    save(name, nodes, x, inits, r1.mean(axis=(2, 3), keepdims=True))


wide_head("padw_1000_13x13", 64, 1000, 13, 13)


def global_pool(name, kind, shape, p=2):
    x = (rng.standard_normal(shape) * 2 - 0.5).astype(np.float32)
    axes = tuple(range(2, len(shape)))
    xd = x.astype(np.float64)
    ref = {"GlobalAveragePool": lambda: xd.mean(axis=axes, keepdims=True),
           "GlobalMaxPool": lambda: xd.max(axis=axes, keepdims=True),
           "GlobalLpPool": lambda: (np.abs(xd) ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)}[kind]()
    attrs = {"p": p} if kind == "GlobalLpPool" else {}
    save(name, [helper.make_node(kind, ["x"], ["y"], **attrs)], x, [], ref)


# global pools of NCHW data: a row of at least a vector takes the row form (gpool_part), with or without a tail
global_pool("gpool_avg_56", "GlobalAveragePool", (1, 48, 56, 56))
global_pool("gpool_avg_7x9", "GlobalAveragePool", (2, 3, 7, 9))
global_pool("gpool_max_14", "GlobalMaxPool", (1, 20, 14, 14))
global_pool("gpool_max_1d", "GlobalMaxPool", (2, 5, 37))
global_pool("gpool_lp1_4x4", "GlobalLpPool", (1, 4, 4, 4), p=1)
global_pool("gpool_lp3_1d", "GlobalLpPool", (1, 6, 33), p=3)
global_pool("gpool_short_3x3", "GlobalAveragePool", (1, 2, 3, 3))

# 3-D convolutions (AlterOpLayout -> nn.conv3d_packed, NCDHW in and out): a 3x3x3 "same" conv, an R3D/MC3-style
# stem (3 channels, 3x7x7, strides 1x2x2), R(2+1)D's (1, 3, 3) spatial and (3, 1, 1) temporal halves (the
# temporal one at 8x8 = 64 positions per frame takes the temporal form, at 7x7 the direct form), S3D's temporal
# stride 2 with 7 taps, a dilation, 24 output channels (a block of 8), 46 (padded to 48: channels=46); with bias,
# a Relu, and a residual add
def conv3d_ref(x, w, b, strides, pads, dil):
    """cross-correlation, weight [OC, C, KD, KH, KW], pads [front, top, left, back, bottom, right]"""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0)) + tuple((pads[i], pads[3 + i]) for i in range(3)))
    oc, _, kd, kh, kw = w.shape
    k = (kd, kh, kw)
    o = [(x.shape[2 + i] - (k[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(3)]
    y = np.zeros((x.shape[0], oc) + tuple(o))
    for t in np.ndindex(*k):
        sl = tuple(slice(t[i] * dil[i], t[i] * dil[i] + (o[i] - 1) * strides[i] + 1, strides[i]) for i in range(3))
        y += np.einsum("ncdhw,oc->nodhw", x[(slice(None), slice(None)) + sl], w[:, :, t[0], t[1], t[2]].astype(np.float64))
    return y + b.reshape(1, -1, 1, 1, 1)


def conv3d(name, c, oc, dhw, k, strides=(1, 1, 1), pads=(0, 0, 0, 0, 0, 0), dil=(1, 1, 1), residual=False):
    x = rng.standard_normal((1, c) + dhw).astype(np.float32)
    w = (rng.standard_normal((oc, c) + k) / np.sqrt(c * np.prod(k))).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=list(k), strides=list(strides),
                              pads=list(pads), dilations=list(dil)),
             helper.make_node("Relu", ["c"], ["r" if residual else "y"])]
    ref = np.maximum(conv3d_ref(x, w, b, strides, pads, dil), 0)
    if residual:
        nodes.append(helper.make_node("Add", ["r", "x"], ["y"]))
        ref = ref + x
    save(name, nodes, x, [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")], ref)


conv3d("c3d_333_same", 16, 16, (5, 9, 11), (3, 3, 3), pads=(1, 1, 1, 1, 1, 1), residual=True)
conv3d("c3d_stem", 3, 32, (4, 20, 22), (3, 7, 7), strides=(1, 2, 2), pads=(1, 3, 3, 1, 3, 3))
conv3d("c3d_spatial", 32, 48, (3, 10, 10), (1, 3, 3), pads=(0, 1, 1, 0, 1, 1))
conv3d("c3d_temporal_form", 48, 32, (6, 8, 8), (3, 1, 1), pads=(1, 0, 0, 1, 0, 0))
conv3d("c3d_temporal_direct", 48, 32, (6, 7, 7), (3, 1, 1), pads=(1, 0, 0, 1, 0, 0))
conv3d("c3d_temporal_s2", 16, 32, (9, 4, 8), (7, 1, 1), strides=(2, 1, 1), pads=(3, 0, 0, 3, 0, 0))
conv3d("c3d_dilated", 8, 24, (7, 9, 9), (3, 3, 3), pads=(2, 2, 2, 2, 2, 2), dil=(2, 2, 2))
conv3d("c3d_wide", 16, 16, (2, 3, 56), (3, 3, 3), pads=(1, 1, 1, 1, 1, 1))  # AVX-512: a 14-column tile
conv3d("c3d_padc_46", 16, 46, (3, 6, 6), (3, 3, 3), pads=(1, 1, 1, 1, 1, 1))

with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(names) + "\n")
