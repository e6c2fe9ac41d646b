#!/usr/bin/env python3
"""make_resize_models.py DIR: ONNX Resize-18 models with antialias=1 (linear and cubic, scales and sizes, dims
downscaled next to dims upscaled, exclude_outside, cubic_coeff_a, axes, tf_crop_and_resize with
extrapolation) and without it (2-D and 3-D linear, cubic and nearest resizes of the last axes, which mlc
computes as separable passes, the last axis first), each with a random input (NAME_inputs.npz) and a float64 reference (NAME_ref.npz) computed the
way the ONNX reference implementation defines Resize: dim by dim, each output coordinate's neighbours chosen
around it in the edge-padded input, with the antialias filter's coefficients when a dim is downscaled. Used
by tests/cli/test_resize.sh; the names are listed in DIR/models.txt."""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(11)
names = []


def cubic_kernel(x, a):
    x = abs(x)
    if x <= 1:
        return (a + 2) * x**3 - (a + 3) * x**2 + 1
    if x < 2:
        return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
    return 0.0


def coeffs(method, ratio, scale, a, antialias):
    if not antialias:
        if method == "linear":
            return np.array([1 - ratio, ratio])
        return np.array([cubic_kernel(ratio + 1, a), cubic_kernel(ratio, a), cubic_kernel(1 - ratio, a),
                         cubic_kernel(2 - ratio, a)])
    s = min(scale, 1.0)
    w = 1 if method == "linear" else 2
    first = int(math.floor(-w / s) + 1)
    js = np.arange(first, 2 - first)
    if method == "linear":
        c = np.clip(1 - np.abs((js - ratio) * s), 0, 1)
    else:
        c = np.array([cubic_kernel(s * (j - ratio), a) for j in js])
    return c / c.sum()


def neighbours(x, n, data):
    pad = int(math.ceil(n / 2))
    padded = np.pad(data, pad, mode="edge")
    x = x + pad
    idx = sorted(sorted(range(len(padded)), key=lambda i: (abs(x - i), i))[:n])
    return np.array(idx) - pad, padded[idx]


def interp_1d(data, scale, out_len, i, p, roi):
    n_in = len(data)
    if p["coord"] == "half_pixel":
        x = (i + 0.5) / scale - 0.5
    elif p["coord"] == "tf_crop_and_resize":
        r0, r1 = roi
        x = 0.5 * (r0 + r1) * (n_in - 1) if out_len == 1 else r0 * (n_in - 1) + i * (r1 - r0) * (n_in - 1) / (out_len - 1)
        if x < 0 or x > n_in - 1:
            return p["extrapolation"]
    else:
        raise ValueError(p["coord"])
    if p["method"] == "nearest":  # round_prefer_floor
        return float(data[min(max(math.ceil(x - 0.5), 0), n_in - 1)])
    xi = math.floor(x)
    ratio = 1.0 if x == xi else x - xi
    c = coeffs(p["method"], ratio, scale, p["a"], p["antialias"])
    idx, pts = neighbours(x, len(c), data)
    if p["exclude"]:
        c = np.where((idx < 0) | (idx >= n_in), 0.0, c)
        c = c / c.sum()
    return float(np.dot(c, pts))


def interp_nd(data, out_shape, scales, rois, p):
    if data.ndim == 1:
        return np.array([interp_1d(data, scales[0], out_shape[0], i, p, rois[0]) for i in range(out_shape[0])])
    inner = np.stack([interp_nd(data[j], out_shape[1:], scales[1:], rois[1:], p) for j in range(data.shape[0])])
    res = np.empty(out_shape)
    for idx in np.ndindex(*out_shape[1:]):
        col = inner[(slice(None),) + idx]
        for i in range(out_shape[0]):
            res[(i,) + idx] = interp_1d(col, scales[0], out_shape[0], i, p, rois[0])
    return res


def model(name, shape, method, scales=None, sizes=None, axes=None, exclude=0, a=-0.75, coord="half_pixel",
          roi=None, extrapolation=0.0, antialias=1, dtype=np.float32):
    """dtype uint8: the data in 0..255, the reference truncated toward zero as ONNX's reference (astype) and
    ONNX Runtime do (cubic's overshoot saturated)"""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == np.uint8:
        x = rng.integers(0, 256, shape).astype(np.uint8)
    r = len(shape)
    ax = list(axes) if axes is not None else list(range(r))
    full_scale, full_size, full_roi = [1.0] * r, list(shape), [(0.0, 1.0)] * r
    if roi is not None:
        for k, d in enumerate(ax):
            full_roi[d] = (roi[k], roi[len(ax) + k])
    if scales is not None:
        for k, d in enumerate(ax):
            full_scale[d] = scales[k]
        full_size = [int(math.floor(shape[d] * (full_roi[d][1] - full_roi[d][0]) * full_scale[d])) for d in range(r)]
    else:
        for k, d in enumerate(ax):
            full_size[d] = sizes[k]
            full_scale[d] = sizes[k] / shape[d]
    p = dict(method=method, coord=coord, exclude=exclude, a=a, antialias=bool(antialias), extrapolation=extrapolation)
    ref = interp_nd(x.astype(np.float64), full_size, full_scale, full_roi, p)
    inits = [numpy_helper.from_array(np.array(roi if roi is not None else [], np.float32), "roi"),
             numpy_helper.from_array(np.array(scales if scales is not None else [], np.float32), "scales")]
    ins = ["x", "roi", "scales"]
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        ins.append("sizes")
    attrs = dict(mode=method, antialias=antialias, coordinate_transformation_mode=coord, exclude_outside=exclude,
                 cubic_coeff_a=a, extrapolation_value=extrapolation)
    if axes is not None:
        attrs["axes"] = list(axes)
    node = helper.make_node("Resize", ins, ["y"], **attrs)
    et = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.FLOAT
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", et, list(shape))],
                          [helper.make_tensor_value_info("y", et, None)], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    if dtype == np.uint8:
        ref = np.clip(np.trunc(ref), 0, 255)
    np.savez(f"{out}/{name}_ref.npz", y=ref.astype(dtype))
    names.append(name)


model("aa_linear_up_down", (1, 2, 9, 12), "linear", scales=[1, 1, 2.0, 0.4])
model("aa_cubic_exclude", (1, 1, 13, 11), "cubic", scales=[1, 1, 0.45, 0.7], exclude=1)
model("aa_cubic_sizes_axes", (2, 9, 10, 8), "cubic", sizes=[4, 5, 3], axes=[1, 2, 3], a=-0.5)
model("aa_linear_big_factor", (1, 1, 4, 64), "linear", sizes=[3, 5], axes=[2, 3])
model("aa_tf_crop", (1, 1, 10, 10), "linear", scales=[0.5, 0.4], axes=[2, 3], coord="tf_crop_and_resize",
      roi=[0.1, -0.2, 0.85, 1.2], extrapolation=-3.0)
model("linear_up_2d", (1, 3, 10, 12), "linear", scales=[1, 1, 2.5, 3.0], antialias=0)
model("linear_down_up", (2, 2, 16, 7), "linear", sizes=[1, 2, 11, 20], antialias=0)
model("cubic_up_exclude", (1, 2, 6, 9), "cubic", scales=[1, 1, 1.5, 2.0], exclude=1, antialias=0)
model("nearest_up_2d", (1, 4, 5, 7), "nearest", scales=[1, 1, 3.0, 2.0], antialias=0)
model("linear_up_3d", (1, 2, 4, 5, 6), "linear", scales=[1, 1, 2.0, 1.5, 2.0], antialias=0)
model("linear_up_uint8", (1, 3, 5, 6), "linear", scales=[1, 1, 2.0, 2.0], antialias=0, dtype=np.uint8)
model("cubic_up_uint8", (1, 2, 6, 7), "cubic", scales=[1, 1, 2.0, 1.5], antialias=0, dtype=np.uint8)
model("aa_linear_down_uint8", (1, 2, 9, 10), "linear", scales=[1, 1, 0.6, 0.5], dtype=np.uint8)
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(names) + "\n")
