#!/usr/bin/env python3
"""make_spatial_models.py DIR: ONNX node tests (DIR/node/NAME/model.onnx + test_data_set_0/*.pb, the layout
of the ONNX backend tests) for the ops the conformance suite covers thinly: MaxPool's Indices output
(storage_order 0/1, pads, dilations, ceil_mode, 1-D/2-D/3-D, ties), MaxUnpool (repeated indices, indices in
their own plane and across planes, output_shape, 1-D/3-D), Col2Im (N-D with pads, dilations, strides),
RoiAlign (avg/max, half_pixel/output_half_pixel, fixed and adaptive grids with run-time and constant rois,
rois partly outside the image, opset 10) and DeformConv (groups, offset groups, strides, dilations, pads,
mask, bias). The expected outputs come from plain numpy loops written from the ONNX reference's
definitions. Used by tests/cli/test_spatial.sh; the names are listed one per line in DIR/models.txt."""
import itertools
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

ROOT = os.path.join(sys.argv[1], "node")
names = []


def save(name, node, inputs, outputs, opset, extra_nodes=()):
    d = os.path.join(ROOT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)

    def vi(n, a):
        return helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)

    g = helper.make_graph(list(extra_nodes) + [node], name, [vi(n, a) for n, a in inputs],
                          [vi(n, a) for n, a in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, vals in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(vals):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
    names.append(name)


# ---------------------------------------------------------------- MaxPool with Indices
def maxpool_ref(x, k, s, dil, pads, ceil, so):
    nsp = x.ndim - 2
    N, C = x.shape[:2]
    ins = x.shape[2:]
    outs = []
    for i in range(nsp):
        avail = ins[i] + pads[i] + pads[nsp + i] - ((k[i] - 1) * dil[i] + 1)
        o = -(-avail // s[i]) + 1 if ceil else avail // s[i] + 1
        if ceil and (o - 1) * s[i] >= ins[i] + pads[i]:
            o -= 1
        outs.append(o)
    Y = np.zeros((N, C) + tuple(outs), x.dtype)
    I = np.zeros((N, C) + tuple(outs), np.int64)
    plane = int(np.prod(ins))
    for n, c in itertools.product(range(N), range(C)):
        for o in itertools.product(*[range(v) for v in outs]):
            best = bi = None
            for kk in itertools.product(*[range(v) for v in k]):
                p = [o[i] * s[i] + kk[i] * dil[i] - pads[i] for i in range(nsp)]
                if any(p[i] < 0 or p[i] >= ins[i] for i in range(nsp)):
                    continue
                v = x[(n, c) + tuple(p)]
                if best is None or v > best:  # the first tap wins ties
                    best = v
                    f = 0
                    for i in (range(nsp) if so == 0 else reversed(range(nsp))):
                        f = f * ins[i] + p[i]
                    bi = (n * C + c) * plane + f
            Y[(n, c) + o] = best
            I[(n, c) + o] = bi
    return Y, I


rng = np.random.default_rng(0)
for name, shape, k, s, dil, pads, ceil, so in [
        ("maxpool_idx_2d_so1_ceil", (2, 3, 7, 6), [3, 2], [2, 2], [1, 1], [1, 0, 1, 1], 1, 1),
        ("maxpool_idx_2d_dil", (1, 2, 9, 8), [2, 3], [1, 2], [2, 2], [0, 1, 1, 0], 0, 0),
        ("maxpool_idx_1d", (2, 2, 11), [3], [2], [1], [1, 1], 1, 1),
        ("maxpool_idx_3d_so1", (1, 2, 5, 6, 4), [2, 3, 2], [2, 1, 2], [1, 1, 1], [1, 0, 0, 0, 1, 1], 0, 1),
        ("maxpool_idx_3d_ceil", (1, 2, 5, 6, 4), [2, 2, 2], [2, 2, 2], [1, 2, 1], [0, 1, 0, 0, 0, 1], 1, 0)]:
    x = np.round(rng.standard_normal(shape) * 2).astype(np.float32) / 2  # ties
    Y, I = maxpool_ref(x, k, s, dil, pads, ceil, so)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=k, strides=s, dilations=dil, pads=pads,
                            ceil_mode=ceil, storage_order=so)
    save(name, node, [("x", x)], [("y", Y), ("i", I)], 12)


# ---------------------------------------------------------------- MaxUnpool
def unpooled_shape(shape, k, s, pads):
    nsp = len(k)
    return [shape[0], shape[1]] + [(shape[2 + i] - 1) * s[i] - (pads[i] + pads[nsp + i]) + k[i] for i in range(nsp)]


def unpool_ref(x, I, k, s, pads, oshape):
    inf = unpooled_shape(x.shape, k, s, pads)
    Y = np.zeros(int(np.prod(inf)), x.dtype)
    for v, i in zip(x.flatten(), I.flatten()):
        Y[i] = v
    res = np.zeros(oshape if oshape is not None else inf, x.dtype)
    res[tuple(slice(0, i) for i in inf)] = Y.reshape(inf)
    return res


rng = np.random.default_rng(1)
for name, shape, k, s, pads, osh, local, cross in [
        ("maxunpool_dup_2d", (2, 3, 3, 3), [3, 3], [2, 2], [1, 1, 0, 0], None, False, False),
        ("maxunpool_1d_output_shape", (1, 2, 4), [2], [2], [0, 0], [1, 2, 10], False, False),
        ("maxunpool_3d", (1, 1, 2, 3, 2), [2, 2, 2], [2, 2, 1], [0] * 6, None, False, False),
        ("maxunpool_plane", (2, 3, 3, 4), [2, 3], [2, 2], [0, 1, 1, 0], [2, 3, 7, 9], True, False),
        ("maxunpool_plane_cross", (2, 3, 3, 4), [2, 3], [2, 2], [0, 1, 1, 0], None, True, True)]:
    x = rng.standard_normal(shape).astype(np.float32)
    inf = unpooled_shape(shape, k, s, pads)
    plane = int(np.prod(inf[2:]))
    if local:  # every index in its own (n, c) plane, as MaxPool's
        I = np.zeros(shape, np.int64)
        for n, c in itertools.product(range(shape[0]), range(shape[1])):
            I[n, c] = (n * shape[1] + c) * plane + rng.integers(0, plane, size=shape[2:])
    else:
        I = rng.integers(0, int(np.prod(inf)), size=shape).astype(np.int64)
    I.flat[1] = I.flat[0]  # repeated: the later update wins
    if cross:
        I[1, 1, 2, 3] = I[0, 0, 0, 0]
    ins = [("x", x), ("i", I)]
    if osh is not None:
        ins.append(("os", np.array(osh, np.int64)))
    node = helper.make_node("MaxUnpool", [n for n, _ in ins], ["y"], kernel_shape=k, strides=s, pads=pads)
    save(name, node, ins, [("y", unpool_ref(x, I, k, s, pads, osh))], 11 if not local else 22)


# ---------------------------------------------------------------- Col2Im
def col2im_ref(x, img, blk, dil, pads, st):
    nsp = len(img)
    N, CB, L = x.shape
    P = int(np.prod(blk))
    cols = [(img[i] + pads[i] + pads[nsp + i] - ((blk[i] - 1) * dil[i] + 1)) // st[i] + 1 for i in range(nsp)]
    y = np.zeros((N, CB // P) + tuple(img), np.float64)
    for n, c in itertools.product(range(N), range(CB // P)):
        for bi, b in enumerate(itertools.product(*[range(v) for v in blk])):
            for li, q in enumerate(itertools.product(*[range(v) for v in cols])):
                p = [q[i] * st[i] - pads[i] + b[i] * dil[i] for i in range(nsp)]
                if all(0 <= p[i] < img[i] for i in range(nsp)):
                    y[(n, c) + tuple(p)] += x[n, c * P + bi, li]
    return y.astype(x.dtype)


rng = np.random.default_rng(2)
for name, N, C, img, blk, dil, pads, st in [
        ("col2im_1d", 2, 3, [10], [3], [2], [1, 2], [2]),
        ("col2im_2d_all", 1, 2, [7, 6], [2, 3], [2, 1], [1, 0, 2, 1], [2, 3]),
        ("col2im_3d", 1, 2, [5, 4, 6], [2, 2, 3], [1, 2, 1], [0, 1, 1, 1, 0, 0], [1, 1, 2])]:
    nsp = len(img)
    cols = [(img[i] + pads[i] + pads[nsp + i] - ((blk[i] - 1) * dil[i] + 1)) // st[i] + 1 for i in range(nsp)]
    x = rng.standard_normal((N, C * int(np.prod(blk)), int(np.prod(cols)))).astype(np.float32)
    node = helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], dilations=dil, pads=pads, strides=st)
    save(name, node, [("x", x), ("img", np.array(img, np.int64)), ("blk", np.array(blk, np.int64))],
         [("y", col2im_ref(x, img, blk, dil, pads, st))], 18)


# ---------------------------------------------------------------- RoiAlign
def roi_ref(X, rois, bidx, mode, oh, ow, sr, scale, half):
    N, C, H, W = X.shape
    Y = np.zeros((rois.shape[0], C, oh, ow), np.float64)
    for r in range(rois.shape[0]):
        off = 0.5 if half else 0.0
        sw, sh, ew, eh = [float(v) * scale - off for v in rois[r]]
        rw, rh = ew - sw, eh - sh
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = sr if sr > 0 else int(np.ceil(rh / oh))
        gw = sr if sr > 0 else int(np.ceil(rw / ow))
        for c in range(C):
            img = X[bidx[r], c].astype(np.float64)
            for ph, pw in itertools.product(range(oh), range(ow)):
                vals = []
                for iy, ix in itertools.product(range(gh), range(gw)):
                    y = sh + ph * bh + (iy + 0.5) * bh / gh
                    x = sw + pw * bw + (ix + 0.5) * bw / gw
                    if y < -1 or y > H or x < -1 or x > W:
                        vals.append((0.0,) * 4)
                        continue
                    y, x = max(y, 0), max(x, 0)
                    yl, xl = int(y), int(x)
                    if yl >= H - 1:
                        yh = yl = H - 1
                        y = yl
                    else:
                        yh = yl + 1
                    if xl >= W - 1:
                        xh = xl = W - 1
                        x = xl
                    else:
                        xh = xl + 1
                    ly, lx = y - yl, x - xl
                    vals.append(((1 - ly) * (1 - lx) * img[yl, xl], (1 - ly) * lx * img[yl, xh],
                                 ly * (1 - lx) * img[yh, xl], ly * lx * img[yh, xh]))
                if mode == "avg":
                    Y[r, c, ph, pw] = sum(sum(v) for v in vals) / max(gh * gw, 1)
                else:
                    Y[r, c, ph, pw] = max(max(v) for v in vals) if vals else 0.0
    return Y.astype(X.dtype)


rng = np.random.default_rng(3)
for name, mode, oh, ow, sr, scale, half, opset, const in [
        ("roialign_adaptive_half", "avg", 3, 4, 0, 0.5, True, 16, False),
        ("roialign_adaptive_max", "max", 2, 3, 0, 1.0, False, 16, False),
        ("roialign_adaptive_const_avg", "avg", 3, 2, 0, 0.8, True, 16, True),
        ("roialign_adaptive_const_max", "max", 3, 2, 0, 0.8, False, 16, True),
        ("roialign_sr3_max_half", "max", 4, 2, 3, 0.25, True, 16, False),
        ("roialign_opset10", "avg", 3, 3, 2, 1.0, False, 10, False)]:
    X = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    R = 5
    x1, y1 = rng.uniform(-3, 10, R), rng.uniform(-3, 8, R)  # some rois partly outside, some reversed
    rois = np.stack([x1, y1, x1 + rng.uniform(-1, 12, R), y1 + rng.uniform(-1, 10, R)], 1).astype(np.float32)
    rois /= min(scale, 1.0)
    bidx = rng.integers(0, 2, R).astype(np.int64)
    attrs = dict(mode=mode, output_height=oh, output_width=ow, sampling_ratio=sr, spatial_scale=scale)
    if opset >= 16:
        attrs["coordinate_transformation_mode"] = "half_pixel" if half else "output_half_pixel"
    node = helper.make_node("RoiAlign", ["X", "rois", "bi"], ["Y"], **attrs)
    Y = roi_ref(X, rois, bidx, mode, oh, ow, sr, scale, half)
    if const:
        cn = helper.make_node("Constant", [], ["rois"], value=numpy_helper.from_array(rois, "rois_value"))
        save(name, node, [("X", X), ("bi", bidx)], [("Y", Y)], opset, extra_nodes=[cn])
    else:
        save(name, node, [("X", X), ("rois", rois), ("bi", bidx)], [("Y", Y)], opset)


# ---------------------------------------------------------------- DeformConv
def bilinear_zero(img, y, x):
    H, W = img.shape
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    fy, fx, v = y - y0, x - x0, 0.0
    for a, b in itertools.product((0, 1), (0, 1)):
        if 0 <= y0 + a < H and 0 <= x0 + b < W:
            v += (fy if a else 1 - fy) * (fx if b else 1 - fx) * img[y0 + a, x0 + b]
    return v


def deform_ref(X, Wt, off, B, mask, st, dil, pads, group, og):
    N, C = X.shape[:2]
    OC, icpg, kh, kw = Wt.shape
    oh, ow = off.shape[2:]
    off = off.reshape(N, og, kh, kw, 2, oh, ow)
    mask = np.ones((N, og, kh, kw, oh, ow)) if mask is None else mask.reshape(N, og, kh, kw, oh, ow)
    Y = np.zeros((N, OC, oh, ow))
    for n, oc, i, j in itertools.product(range(N), range(OC), range(oh), range(ow)):
        s = B[oc] if B is not None else 0.0
        for icl, a, b in itertools.product(range(icpg), range(kh), range(kw)):
            ic = oc // (OC // group) * icpg + icl
            o = ic // (C // og)
            y = i * st[0] - pads[0] + a * dil[0] + off[n, o, a, b, 0, i, j]
            x = j * st[1] - pads[1] + b * dil[1] + off[n, o, a, b, 1, i, j]
            s += Wt[oc, icl, a, b] * mask[n, o, a, b, i, j] * bilinear_zero(X[n, ic].astype(np.float64), y, x)
        Y[n, oc, i, j] = s
    return Y.astype(np.float32)


rng = np.random.default_rng(4)
for name, N, C, OC, hw, k, st, dil, pads, group, og, has_b, has_m in [
        ("deformconv_all", 2, 4, 6, (7, 8), (3, 2), (2, 1), (1, 2), (1, 0, 2, 1), 2, 2, True, True),
        ("deformconv_bias_no_mask", 1, 3, 2, (6, 6), (2, 2), (1, 2), (2, 1), (0, 1, 1, 0), 1, 3, True, False),
        ("deformconv_mask_no_bias", 1, 2, 4, (5, 7), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, 1, False, True)]:
    X = rng.standard_normal((N, C) + hw).astype(np.float32)
    Wt = rng.standard_normal((OC, C // group) + k).astype(np.float32)
    oh = (hw[0] + pads[0] + pads[2] - ((k[0] - 1) * dil[0] + 1)) // st[0] + 1
    ow = (hw[1] + pads[1] + pads[3] - ((k[1] - 1) * dil[1] + 1)) // st[1] + 1
    off = (rng.standard_normal((N, og * k[0] * k[1] * 2, oh, ow)) * 2).astype(np.float32)  # samples fall outside
    B = rng.standard_normal(OC).astype(np.float32) if has_b else None
    M = rng.uniform(0, 1, (N, og * k[0] * k[1], oh, ow)).astype(np.float32) if has_m else None
    ins, inames = [("X", X), ("W", Wt), ("off", off)], ["X", "W", "off"]
    if has_b:
        ins.append(("B", B))
        inames.append("B")
    elif has_m:
        inames.append("")
    if has_m:
        ins.append(("M", M))
        inames.append("M")
    node = helper.make_node("DeformConv", inames, ["Y"], kernel_shape=list(k), strides=list(st), dilations=list(dil),
                            pads=list(pads), group=group, offset_group=og)
    save(name, node, ins, [("Y", deform_ref(X, Wt, off, B, M, st, dil, pads, group, og))], 19)

with open(os.path.join(sys.argv[1], "models.txt"), "w") as f:
    f.write("\n".join(names) + "\n")
