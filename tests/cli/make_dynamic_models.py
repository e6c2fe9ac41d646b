#!/usr/bin/env python3
"""make_dynamic_models.py DIR: small ONNX models whose outputs have data-dependent shapes, computed from
run-time inputs: NonMaxSuppression (center_point_box 0 and 1, several batches and classes, flipped corners,
equal scores, iou_threshold / score_threshold as graph inputs or absent), Unique (sorted and unsorted, with an
axis, a negative axis or none; float32, float64, int64, int8), NonZero (float32, bool, int32, all zeros) and
Compress with a run-time condition. Each model NAME has one or more data sets NAME_inputs[K].npz with the
reference NAME_ref[K].npz (the exact expected arrays, shapes included): NonMaxSuppression from a numpy
transcription of the ONNX reference, cross-checked against torchvision.ops.nms where both apply (corner boxes,
distinct scores); Unique from numpy.unique (unsorted order recovered as the ONNX test generator does); NonZero
from numpy.nonzero. Names are listed in DIR/models.txt. DIR/fail.txt lists the models that must fail to
compile (a data-dependent output read by another node), one per line as NAME<TAB>expected message part.
Used by tests/cli/test_dynamic.sh."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(11)
names, fails = [], []


def vi(name, a):
    return helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(a.dtype)], list(a.shape))


def save(name, nodes, inputs, outputs, datasets, inits=(), opset=11):
    """inputs: [(name, example array)]; outputs: [(name, elem type)]; datasets: [(inputs dict, refs dict)]"""
    g = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, f"{out}/{name}.onnx")
    for k, (ins, refs) in enumerate(datasets):
        sfx = "" if k == 0 else str(k + 1)
        np.savez(f"{out}/{name}_inputs{sfx}.npz", **{k: np.ascontiguousarray(v) for k, v in ins.items()})
        np.savez(f"{out}/{name}_ref{sfx}.npz", **{k: np.ascontiguousarray(v) for k, v in refs.items()})
    names.append(name)


# ---------------------------------------------------------------- NonMaxSuppression
def iou_suppress(b1, b2, center, thr):
    """SuppressByIOU of the ONNX reference (onnxruntime's), float32 arithmetic"""
    f = np.float32
    if center == 0:
        x1min, x1max = (b1[3], b1[1]) if b1[1] >= b1[3] else (b1[1], b1[3])
        x2min, x2max = (b2[3], b2[1]) if b2[1] >= b2[3] else (b2[1], b2[3])
        y1min, y1max = (b1[2], b1[0]) if b1[0] >= b1[2] else (b1[0], b1[2])
        y2min, y2max = (b2[2], b2[0]) if b2[0] >= b2[2] else (b2[0], b2[2])
    else:
        w1, h1, w2, h2 = b1[2] / f(2), b1[3] / f(2), b2[2] / f(2), b2[3] / f(2)
        x1min, x1max, y1min, y1max = b1[0] - w1, b1[0] + w1, b1[1] - h1, b1[1] + h1
        x2min, x2max, y2min, y2max = b2[0] - w2, b2[0] + w2, b2[1] - h2, b2[1] + h2
    ixmin, ixmax = max(x1min, x2min), min(x1max, x2max)
    iymin, iymax = max(y1min, y2min), min(y1max, y2max)
    if ixmax <= ixmin or iymax <= iymin:
        return False
    inter = (ixmax - ixmin) * (iymax - iymin)
    a1 = (x1max - x1min) * (y1max - y1min)
    a2 = (x2max - x2min) * (y2max - y2min)
    union = a1 + a2 - inter
    if inter <= 0 or a1 <= 0 or a2 <= 0 or union <= 0:
        return False
    return inter / union > thr


def nms_ref(boxes, scores, max_out, iou, score_thr, center):
    sel = []
    B, C, N = scores.shape
    for b in range(B):
        for c in range(C):
            cand = [i for i in range(N) if score_thr is None or scores[b, c, i] > score_thr]
            cand.sort(key=lambda i: (-scores[b, c, i], i))  # score descending, ties by index (stable)
            kept = []
            for i in cand:
                if len(kept) >= max_out:
                    break
                if not any(iou_suppress(boxes[b, j], boxes[b, i], center, iou) for j in kept):
                    kept.append(i)
            sel += [[b, c, i] for i in kept]
    return np.array(sel, np.int64).reshape(-1, 3)


def torchvision_check(boxes, scores, max_out, iou, score_thr, want):
    """corner boxes [y1, x1, y2, x2] with distinct scores: torchvision's nms per batch and class agrees"""
    try:
        import torch
        import torchvision
    except ImportError:
        return
    sel = []
    B, C, N = scores.shape
    for b in range(B):
        yx = boxes[b]
        xy = np.stack([np.minimum(yx[:, 1], yx[:, 3]), np.minimum(yx[:, 0], yx[:, 2]),
                       np.maximum(yx[:, 1], yx[:, 3]), np.maximum(yx[:, 0], yx[:, 2])], 1)
        for c in range(C):
            idx = np.array([i for i in range(N) if score_thr is None or scores[b, c, i] > score_thr], np.int64)
            if len(idx) == 0:
                continue
            keep = torchvision.ops.nms(torch.from_numpy(xy[idx]), torch.from_numpy(scores[b, c, idx]), float(iou))
            sel += [[b, c, int(idx[k])] for k in keep.numpy()[:max_out]]
    got = np.array(sel, np.int64).reshape(-1, 3)
    assert got.shape == want.shape and (got == want).all(), (got, want)


def random_boxes(B, N, center, flip):
    if center:
        xy = rng.uniform(0, 10, (B, N, 2))
        wh = rng.uniform(0.5, 4, (B, N, 2))
        return np.concatenate([xy, wh], 2).astype(np.float32)
    lo = rng.uniform(0, 10, (B, N, 2))
    hi = lo + rng.uniform(0.5, 4, (B, N, 2))
    bx = np.concatenate([lo, hi], 2)  # [y1, x1, y2, x2]
    if flip:  # some boxes with their corners swapped
        f = rng.random((B, N)) < 0.4
        bx[f] = bx[f][:, [2, 3, 0, 1]]
    return bx.astype(np.float32)


def nms_model(name, B, C, N, max_out, center, thr_inputs, settings, ties=False, flip=False, opset=11):
    """thr_inputs: 'both' (iou and score thresholds are graph inputs), 'iou' (score_threshold absent)"""
    boxes = random_boxes(B, N, center, flip)
    scores = rng.random((B, C, N)).astype(np.float32)
    if ties:
        scores = np.round(scores * 4).astype(np.float32) / 4
    ins = ["boxes", "scores", "max_out", "iou"] + (["score"] if thr_inputs == "both" else [])
    node = helper.make_node("NonMaxSuppression", ins, ["selected"], center_point_box=center)
    inputs = [("boxes", boxes), ("scores", scores), ("iou", np.zeros(1, np.float32))]
    if thr_inputs == "both":
        inputs.append(("score", np.zeros(1, np.float32)))
    datasets = []
    for iou, score in settings:
        d = {"boxes": boxes, "scores": scores, "iou": np.array([iou], np.float32)}
        if thr_inputs == "both":
            d["score"] = np.array([score], np.float32)
        sthr = np.float32(score) if thr_inputs == "both" else None
        want = nms_ref(boxes, scores, max_out, np.float32(iou), sthr, center)
        if center == 0 and not ties:
            torchvision_check(boxes, scores, max_out, iou, sthr, want)
        datasets.append((d, {"selected": want}))
    save(name, [node], inputs, [("selected", TensorProto.INT64)], datasets,
         inits=[numpy_helper.from_array(np.array([max_out], np.int64), "max_out")], opset=opset)


nms_model("nms_corner", B=2, C=3, N=24, max_out=6, center=0, thr_inputs="both",
          settings=[(0.4, 0.3), (0.1, 0.0), (0.7, 0.8)])
nms_model("nms_corner_flipped", B=1, C=2, N=30, max_out=50, center=0, thr_inputs="iou", settings=[(0.3, None)],
          flip=True)
nms_model("nms_center", B=3, C=2, N=20, max_out=10, center=1, thr_inputs="both", settings=[(0.2, 0.5), (0.5, 0.1)])
nms_model("nms_center_ties", B=1, C=4, N=16, max_out=16, center=1, thr_inputs="both", settings=[(0.3, 0.2)],
          ties=True)
nms_model("nms_opset10", B=2, C=1, N=12, max_out=5, center=0, thr_inputs="both", settings=[(0.5, 0.4)], opset=10)

# NonMaxSuppression feeding a Gather: refused at compile time, naming both nodes
g = helper.make_graph(
    [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out"], ["sel"], name="nms"),
     helper.make_node("Gather", ["sel", "one"], ["y"], axis=1, name="Gather_12")],
    "nms_gather", [vi("boxes", np.zeros((1, 5, 4), np.float32)), vi("scores", np.zeros((1, 1, 5), np.float32))],
    [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
    initializer=[numpy_helper.from_array(np.array([3], np.int64), "max_out"),
                 numpy_helper.from_array(np.array(2, np.int64), "one")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), f"{out}/nms_gather.onnx")
fails.append(("nms_gather", "node 'nms' (NonMaxSuppression, opset 11): error: NonMaxSuppression's output 'sel' has "
              "a data-dependent shape and feeds 'Gather_12' (Gather); mlc supports data-dependent shapes only as "
              "graph outputs"))
# the shape of a NonZero: refused too (its static bound is not the answer)
g = helper.make_graph(
    [helper.make_node("NonZero", ["x"], ["nz"], name="nz"), helper.make_node("Shape", ["nz"], ["s"], name="shape")],
    "nonzero_shape", [vi("x", np.zeros((3, 4), np.float32))], [helper.make_tensor_value_info("s", TensorProto.INT64, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/nonzero_shape.onnx")
fails.append(("nonzero_shape", "NonZero's output 'nz' has a data-dependent shape and feeds 'shape' (Shape)"))
# max_output_boxes_per_class from a graph input bounds the shape: it must be known at compile time
g = helper.make_graph(
    [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out"], ["sel"], name="nms")], "nms_runtime_max",
    [vi("boxes", np.zeros((1, 5, 4), np.float32)), vi("scores", np.zeros((1, 1, 5), np.float32)),
     vi("max_out", np.zeros(1, np.int64))], [helper.make_tensor_value_info("sel", TensorProto.INT64, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), f"{out}/nms_runtime_max.onnx")
fails.append(("nms_runtime_max", "input 'max_output_boxes_per_class' bounds the output shape, so it must be known "
              "at compile time; it depends on the graph inputs 'max_out'"))


# ---------------------------------------------------------------- Unique
def unique_ref(x, axis, sorted_):
    if axis is None:
        y, idx, inv, cnt = np.unique(x, True, True, True)
    else:
        y, idx, inv, cnt = np.unique(x, True, True, True, axis=axis)
    inv = inv.reshape(-1)
    if not sorted_:  # first-occurrence order, as the ONNX test generator recovers it
        order = np.argsort(idx, kind="stable")
        remap = np.empty_like(order)
        remap[order] = np.arange(len(order))
        idx, cnt, inv = idx[order], cnt[order], remap[inv]
        y = np.take(x.reshape(-1) if axis is None else x, idx, axis=0 if axis is None else axis)
    i64 = lambda a: np.asarray(a, np.int64)
    return {"y": y, "indices": i64(idx), "inverse_indices": i64(inv), "counts": i64(cnt)}


def unique_model(name, x, axis, sorted_, more=()):
    attrs = {"sorted": sorted_}
    if axis is not None:
        attrs["axis"] = axis
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse_indices", "counts"], **attrs)
    outs = [("y", onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[x.dtype])] + \
        [(n, TensorProto.INT64) for n in ("indices", "inverse_indices", "counts")]
    ax = None if axis is None else axis % x.ndim
    datasets = [({"x": v}, unique_ref(v, ax, sorted_)) for v in (x,) + tuple(more)]
    save(name, [node], [("x", x)], outs, datasets)


cols = rng.integers(-3, 3, (3, 4)).astype(np.int64)
unique_model("unique_sorted_axis1_int64", cols[:, [0, 1, 0, 2, 3, 1, 0]], 1, 1,
             more=(rng.integers(0, 2, (3, 7)).astype(np.int64),))
rows = rng.random((4, 3)).astype(np.float32)
unique_model("unique_unsorted_axis0_f32", rows[[2, 0, 2, 1, 3, 3, 0, 2]], 0, 0)
unique_model("unique_sorted_flat_int8", rng.integers(-4, 4, (4, 5)).astype(np.int8), None, 1)
unique_model("unique_unsorted_flat_f64", np.round(rng.random((6, 4)) * 5).astype(np.float64), None, 0)
planes = rng.integers(0, 3, (2, 3, 3)).astype(np.float64)
unique_model("unique_unsorted_negaxis_f64", planes[:, [1, 0, 1, 2, 0], :], -2, 0)
unique_model("unique_sorted_negaxis_f32", planes[:, [1, 0, 1, 2, 0], :].astype(np.float32), -2, 1)
nan = np.array([2, np.nan, 1, np.nan, 2, -0.0, 0.0, 5], np.float32)  # NaNs collapse and sort last, -0 == 0
unique_model("unique_sorted_flat_nan", nan, None, 1)
unique_model("unique_unsorted_flat_nan", nan, None, 0)
unique_model("unique_sorted_flat_f16", (np.round(rng.random(15) * 4) - 2).astype(np.float16), None, 1)
unique_model("unique_unsorted_axis0_bool", (rng.random((6, 2)) < 0.5), 0, 0)
unique_model("unique_sorted_flat_uint16", rng.integers(0, 60000, 12).astype(np.uint16)[[0, 1, 2, 1, 5, 0, 7, 8, 9, 8]],
             None, 1)


# ---------------------------------------------------------------- NonZero and Compress on run-time data
def nonzero_model(name, x, more=()):
    node = helper.make_node("NonZero", ["x"], ["nz"])
    datasets = [({"x": v}, {"nz": np.array(np.nonzero(v), np.int64)}) for v in (x,) + tuple(more)]
    save(name, [node], [("x", x)], [("nz", TensorProto.INT64)], datasets, opset=13)


f = rng.random((3, 4, 5)).astype(np.float32)
f[f < 0.6] = 0
nonzero_model("nonzero_f32", f, more=(np.zeros_like(f), np.ones_like(f)))
nonzero_model("nonzero_bool", rng.random((6, 7)) < 0.3)
nonzero_model("nonzero_int32_1d", (rng.integers(0, 3, 17) - 1).astype(np.int32))
nonzero_model("nonzero_f16", np.array([[0, -0.0, 1.5], [2, 0, np.inf]], np.float16))
nonzero_model("nonzero_uint8_4d", (rng.integers(0, 4, (2, 3, 2, 3)) // 3).astype(np.uint8))

# several data-dependent outputs next to static ones in one graph; Unique with only some outputs named
x = np.round(rng.random((4, 5)) * 3).astype(np.float32)
nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Unique", ["x"], ["u", "", "", "cnt"], sorted=1)]
ref = unique_ref(x, None, 1)
save("mixed", nodes, [("x", x)], [("nz", TensorProto.INT64), ("r", TensorProto.FLOAT), ("u", TensorProto.FLOAT),
                                  ("cnt", TensorProto.INT64)],
     [({"x": x}, {"nz": np.array(np.nonzero(x), np.int64), "r": np.maximum(x, 0), "u": ref["y"], "cnt": ref["counts"]})],
     opset=13)


def compress_model(name, x, cond, axis):
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("Compress", ["x", "cond"], ["y"], **attrs)
    want = np.compress(cond, x, axis=axis)
    save(name, [node], [("x", x), ("cond", cond)], [("y", onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[x.dtype])],
         [({"x": x, "cond": cond}, {"y": want})])


compress_model("compress_axis1", rng.random((3, 6, 2)).astype(np.float32), rng.random(5) < 0.5, 1)
compress_model("compress_flat", rng.integers(0, 9, (4, 5)).astype(np.int64), rng.random(13) < 0.5, None)

with open(f"{out}/models.txt", "w") as fh:
    fh.write("\n".join(names) + "\n")
with open(f"{out}/fail.txt", "w") as fh:
    fh.write("".join(f"{n}\t{m}\n" for n, m in fails))
