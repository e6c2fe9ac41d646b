#!/usr/bin/env python3
"""make_dynamic_models.py DIR: small ONNX models whose outputs have data-dependent shapes, computed from
run-time inputs: NonMaxSuppression (center_point_box 0 and 1, several batches and classes, flipped corners,
equal scores, iou_threshold / score_threshold as graph inputs or absent), Unique (sorted and unsorted, with an
axis, a negative axis or none; float32, float64, int64, int8), NonZero (float32, bool, int32, all zeros) and
Compress with a run-time condition; and real-model patterns that read those outputs (the extent carried
through the readers, src/ir/dynamic.c): detection post-processing gathering boxes, scores and class ids from
NonMaxSuppression's triples, x[x > t] and torch.masked_select, torch.nonzero then index_select of rows,
single-argument torch.where, Compress then elementwise ops / MatMul / Softmax / ReduceSum on the kept rows,
selected crops through convolutions, pooling, a transposed conv, Resize and Pad and one channel each picked by
x[arange(n), labels] (Mask R-CNN's mask head), Unique then Gather (the torch models exported with torch.onnx.export). Each model NAME has one or more data
sets NAME_inputs[K].npz with the reference NAME_ref[K].npz (the exact expected arrays, shapes included; the
readers' data sets include an empty and a full extent): NonMaxSuppression from a numpy transcription of the
ONNX reference, cross-checked against torchvision.ops.nms where both apply (corner boxes, distinct scores);
Unique from numpy.unique (unsorted order recovered as the ONNX test generator does); NonZero from
numpy.nonzero; the exported models from torch. Names are listed in DIR/models.txt; DIR/tol.txt gives
NAME<TAB>tolerance for the few computed in float arithmetic (the rest must match exactly). DIR/fail.txt lists
the models that must fail to compile (a reader that cannot carry the data-dependent shape: CumSum over the
dynamic axis, GatherElements along it, two different extents meeting, ...), one per line as NAME<TAB>expected
message part. (Shape, Size, reductions, ArgMax and TopK over the data-dependent axis, Gather along it, and the rest
of the run-time extents are tested in make_dynshape_models.py.)
Used by tests/cli/test_dynamic.sh."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(11)
names, fails, tols = [], [], []


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

# ---------------------------------------------------------------- readers of data-dependent shapes
# Real models read these outputs; mlc carries the extent through the readers that keep the dynamic axis whole
# (src/ir/dynamic.c) and the executor trims the derived outputs. Each has data sets with a typical, an empty
# (extent 0, where the op allows it) and a full extent (the upper bound).
def i64(*v):
    return np.array(v, np.int64)


def torch_export(name, module, args, in_names, out_names, datasets, opset=13):
    """exports module with torch.onnx.export; datasets: [input tuples]; references from running the module"""
    import torch
    path = f"{out}/{name}.onnx"
    torch.onnx.export(module, tuple(torch.from_numpy(a) for a in args), path, input_names=in_names,
                      output_names=out_names, opset_version=opset)
    for k, ins in enumerate(datasets):
        sfx = "" if k == 0 else str(k + 1)
        with torch.no_grad():
            res = module(*[torch.from_numpy(a) for a in ins])
        res = res if isinstance(res, tuple) else (res,)
        np.savez(f"{out}/{name}_inputs{sfx}.npz", **dict(zip(in_names, ins)))
        np.savez(f"{out}/{name}_ref{sfx}.npz", **{n: r.numpy() for n, r in zip(out_names, res)})
    names.append(name)


# detection post-processing (torchvision batched_nms / YOLO-head style): the selected triples index the boxes,
# the scores and the class ids, assembled into [K, 6] detections
def nms_post_model():
    N, C, max_out = 12, 3, 5
    boxes = random_boxes(1, N, 0, False)
    scores = rng.random((1, C, N)).astype(np.float32)
    H = helper.make_node
    nodes = [
        H("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score"], ["sel"], name="nms"),
        H("Gather", ["sel", "one"], ["cls"], axis=1), H("Gather", ["sel", "two"], ["bidx"], axis=1),
        H("Squeeze", ["boxes"], ["boxes2d"], axes=[0]),
        H("Gather", ["boxes2d", "bidx"], ["det_boxes"], axis=0),
        H("GatherND", ["scores", "sel"], ["det_scores"]),
        H("Slice", ["sel", "s2", "s3", "s1"], ["bcol"]), H("Reshape", ["bcol", "flat"], ["bidx2"]),
        H("Gather", ["boxes2d", "bidx2"], ["boxes_again"], axis=0),
        H("Sub", ["boxes_again", "det_boxes"], ["zero_boxes"]),
        H("Cast", ["cls"], ["cls_f"], to=TensorProto.FLOAT),
        H("Unsqueeze", ["det_scores"], ["s_col"], axes=[1]), H("Unsqueeze", ["cls_f"], ["c_col"], axes=[1]),
        H("Concat", ["det_boxes", "s_col", "c_col"], ["det"], axis=1),
    ]
    inits = [numpy_helper.from_array(v, n) for n, v in
             [("max_out", i64(max_out)), ("one", np.array(1, np.int64)), ("two", np.array(2, np.int64)),
              ("s1", i64(1)), ("s2", i64(2)), ("s3", i64(3)), ("flat", i64(-1))]]
    datasets = []
    for iou, score in [(0.5, 0.3), (0.5, 1.5), (1.0, -1.0)]:  # typical, nothing kept, every box kept (K = C * 5)
        sel = nms_ref(boxes, scores, max_out, np.float32(iou), np.float32(score), 0)
        det_boxes = boxes[0][sel[:, 2]]
        det_scores = scores[sel[:, 0], sel[:, 1], sel[:, 2]]
        det = np.concatenate([det_boxes, det_scores[:, None], sel[:, 1:2].astype(np.float32)], 1)
        datasets.append(({"boxes": boxes, "scores": scores, "iou": np.array([iou], np.float32),
                          "score": np.array([score], np.float32)},
                         {"det_boxes": det_boxes, "det_scores": det_scores, "cls": sel[:, 1], "det": det,
                          "zero_boxes": np.zeros_like(det_boxes)}))
    assert len(datasets[1][1]["cls"]) == 0 and len(datasets[2][1]["cls"]) == C * max_out
    save("nms_post", nodes, [("boxes", boxes), ("scores", scores), ("iou", np.zeros(1, np.float32)),
                             ("score", np.zeros(1, np.float32))],
         [("det_boxes", TensorProto.FLOAT), ("det_scores", TensorProto.FLOAT), ("cls", TensorProto.INT64),
          ("det", TensorProto.FLOAT), ("zero_boxes", TensorProto.FLOAT)], datasets, inits=inits)


nms_post_model()


def torch_models():
    import torch

    class MaskedIndex(torch.nn.Module):  # x[x > t]: NonZero -> Transpose -> GatherND
        def forward(self, x, t):
            return x[x > t]

    class MaskedSelect(torch.nn.Module):  # torch.masked_select, then elementwise
        def forward(self, x, t):
            return torch.masked_select(x, x > t) * 2 + 1

    class NonzeroRows(torch.nn.Module):  # torch.nonzero then index_select of the rows
        def forward(self, x, m):
            idx = torch.nonzero(m > 0.5)[:, 0]
            rows = x.index_select(0, idx)
            return idx, torch.relu(rows - 0.25), rows.sum(1)

    class WhereRowsCols(torch.nn.Module):  # single-argument torch.where: one index vector per axis
        def forward(self, x):
            r, c = torch.where(x > 0.5)
            return r, c, x.reshape(-1)[r * x.shape[1] + c]

    x = rng.random((3, 4, 5)).astype(np.float32)
    t = lambda v: np.array(v, np.float32)
    torch_export("masked_index", MaskedIndex(), (x, t(0.5)), ["x", "t"], ["y"],
                 [(x, t(0.5)), (x, t(2.0)), (x, t(-1.0))])
    torch_export("masked_select", MaskedSelect(), (x, t(0.5)), ["x", "t"], ["y"],
                 [(x, t(0.7)), (x, t(2.0)), (x, t(-1.0))])
    rows, m = rng.random((6, 3)).astype(np.float32), rng.random(6).astype(np.float32)
    torch_export("nonzero_rows", NonzeroRows(), (rows, m), ["x", "m"], ["idx", "rows", "sums"],
                 [(rows, m), (rows, np.zeros_like(m)), (rows, np.ones_like(m))])
    g = rng.random((4, 5)).astype(np.float32)
    torch_export("where_rows_cols", WhereRowsCols(), (g,), ["x"], ["r", "c", "v"],
                 [(g,), (np.zeros_like(g),), (np.ones_like(g),)])

    class CropHead(torch.nn.Module):  # Mask R-CNN's mask head: convs, pooling, upsampling per selected crop
        def __init__(self):
            super().__init__()
            torch.manual_seed(5)
            self.c1 = torch.nn.Conv2d(8, 16, 3, padding=1)
            self.c2 = torch.nn.Conv2d(16, 16, 3, padding=2, dilation=2)
            self.up = torch.nn.ConvTranspose2d(16, 8, 2, stride=2)
            self.c3 = torch.nn.Conv1d(1, 4, 3)

        def forward(self, crops, score, labels):
            keep = torch.nonzero(score > 0.5)[:, 0]
            x = torch.relu(self.c1(crops.index_select(0, keep)))
            x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 2)
            x = torch.nn.functional.interpolate(torch.relu(self.up(x)), scale_factor=2.0, mode="nearest")
            x = torch.nn.functional.pad(x, (1, 0, 0, 1))
            m = torch.sigmoid(x)[torch.arange(x.shape[0]), labels.index_select(0, keep)]  # one mask per crop
            return m, self.c3(m.mean(2).unsqueeze(1)), torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)

    crops = rng.standard_normal((6, 8, 10, 10)).astype(np.float32)
    score, labels = rng.random(6).astype(np.float32), rng.integers(0, 8, 6).astype(np.int64)
    torch_export("crop_head", CropHead().eval(), (crops, score, labels), ["crops", "score", "labels"],
                 ["masks", "rows", "pooled"],
                 [(crops, score, labels), (crops, np.zeros_like(score), labels),
                  (crops, np.ones_like(score), labels)])
    tols.append(("crop_head", 1e-5))

    class CropBoxHead(torch.nn.Module):  # Faster R-CNN v2's box head: 3x3 convs (Winograd) per selected crop
        def __init__(self):
            super().__init__()
            torch.manual_seed(6)
            self.c1 = torch.nn.Conv2d(32, 32, 3, padding=1)
            self.c2 = torch.nn.Conv2d(32, 32, 3, padding=1)
            self.fc = torch.nn.Linear(32 * 7 * 7, 10)

        def forward(self, crops, score):
            keep = torch.nonzero(score > 0.5)[:, 0]
            x = torch.relu(self.c1(crops.index_select(0, keep)))
            return self.fc(torch.relu(self.c2(x)).flatten(1))

    crops = rng.standard_normal((12, 32, 7, 7)).astype(np.float32)
    score = rng.random(12).astype(np.float32)
    torch_export("crop_box_head", CropBoxHead().eval(), (crops, score), ["crops", "score"], ["y"],
                 [(crops, score), (crops, np.zeros_like(score)), (crops, np.ones_like(score))])
    tols.append(("crop_box_head", 1e-4))  # Winograd's float error


torch_models()


# Compress keeping rows, then elementwise ops, MatMul, Gemm, and Softmax, TopK, a reduction and a layer norm
# along the rows
def compress_mlp_model():
    x = rng.random((6, 8)).astype(np.float32)
    scale, bias = rng.random(8).astype(np.float32), rng.random((1, 8)).astype(np.float32)
    w = rng.random((8, 5)).astype(np.float32)
    H = helper.make_node
    nodes = [H("Compress", ["x", "keep"], ["y"], axis=0), H("Relu", ["y"], ["r"]), H("Mul", ["r", "scale"], ["m"]),
             H("Add", ["m", "bias"], ["z"]), H("MatMul", ["z", "w"], ["h"]), H("Softmax", ["h"], ["p"], axis=1),
             H("ReduceSum", ["h"], ["hs"], axes=[1], keepdims=0), H("Gemm", ["z", "w2", "c2"], ["gm"], transB=1),
             H("TopK", ["h", "k2"], ["tv", "ti"], axis=1),
             # a layer norm as exported before opset 17 (LayerNormFusion makes it nn.layer_norm)
             H("ReduceMean", ["z"], ["mu"], axes=[-1]), H("Sub", ["z", "mu"], ["dz"]), H("Pow", ["dz", "two_f"], ["sq"]),
             H("ReduceMean", ["sq"], ["var"], axes=[-1]), H("Add", ["var", "eps"], ["ve"]), H("Sqrt", ["ve"], ["sd"]),
             H("Div", ["dz", "sd"], ["nz"]), H("Mul", ["nz", "gamma"], ["ng"]), H("Add", ["ng", "beta"], ["ln"])]
    gamma, beta = rng.random(8).astype(np.float32), rng.random(8).astype(np.float32)
    w2, c2 = rng.random((3, 8)).astype(np.float32), rng.random(3).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for n, v in
             [("scale", scale), ("bias", bias), ("w", w), ("w2", w2), ("c2", c2), ("k2", i64(2)), ("gamma", gamma),
              ("beta", beta), ("two_f", np.array(2, np.float32)), ("eps", np.array(1e-5, np.float32))]]
    datasets = []
    for keep in (rng.random(6) < 0.5, np.zeros(6, bool), np.ones(6, bool)):
        z = np.maximum(x[keep], 0) * scale + bias
        h = z @ w
        e = np.exp(h - h.max(1, keepdims=True))
        ti = np.argsort(-h, 1, kind="stable")[:, :2]
        datasets.append(({"x": x, "keep": keep}, {"z": z, "h": h, "p": e / e.sum(1, keepdims=True), "hs": h.sum(1),
                                                  "gm": z @ w2.T + c2, "tv": np.take_along_axis(h, ti, 1), "ti": ti,
                                                  "ln": (z - z.mean(1, keepdims=True)) / np.sqrt(z.var(1, keepdims=True)
                                                                                                 + 1e-5) * gamma + beta}))
    save("compress_mlp", nodes, [("x", x), ("keep", np.zeros(6, bool))],
         [(n, TensorProto.FLOAT) for n in ("z", "h", "p", "hs", "gm", "tv", "ln")] + [("ti", TensorProto.INT64)], datasets,
         inits=inits)
    tols.append(("compress_mlp", 1e-5))  # float sums in another order than numpy's


compress_mlp_model()


# Unique token ids looking up an embedding table, weighted by their counts
def unique_gather_model():
    V, D = 12, 4
    emb = rng.random((V, D)).astype(np.float32)
    H = helper.make_node
    nodes = [H("Unique", ["ids"], ["u", "first", "inv", "cnt"], sorted=1), H("Gather", ["emb", "u"], ["e"], axis=0),
             H("Cast", ["cnt"], ["cf"], to=TensorProto.FLOAT), H("Unsqueeze", ["cf"], ["cc"], axes=[1]),
             H("Mul", ["e", "cc"], ["we"]), H("Gather", ["ids", "first"], ["u_again"], axis=0)]
    datasets = []
    for ids in (rng.integers(0, V, 10), np.full(10, 3), rng.permutation(V)[:10]):  # typical, one id, all distinct
        ids = np.asarray(ids, np.int64)
        u, first, cnt = np.unique(ids, return_index=True, return_counts=True)
        datasets.append(({"ids": ids}, {"u": u, "e": emb[u], "we": emb[u] * cnt[:, None].astype(np.float32),
                                        "u_again": ids[first]}))
    save("unique_gather", nodes, [("ids", np.zeros(datasets[0][0]["ids"].shape, np.int64))],
         [("u", TensorProto.INT64), ("e", TensorProto.FLOAT), ("we", TensorProto.FLOAT), ("u_again", TensorProto.INT64)],
         datasets, inits=[numpy_helper.from_array(emb, "emb")])


unique_gather_model()


# readers that must still be refused: exit 3, naming the node that makes the extent and the reader
def fail_model(name, nodes, inputs, outname, msg, opset=11, inits=()):
    g = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs],
                          [helper.make_tensor_value_info(outname, TensorProto.FLOAT, None)], initializer=list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), f"{out}/{name}.onnx")
    fails.append((name, msg))


H = helper.make_node
x34, c4 = np.zeros((3, 4), np.float32), np.zeros(3, bool)
fail_model("conv_across_dynamic_axis", [H("Compress", ["x", "c"], ["a"], axis=1, name="ca"),
                                      H("Conv", ["a", "w"], ["y"], name="conv")],
           [("x", np.zeros((1, 4, 5, 5), np.float32)), ("c", np.zeros(4, bool))], "y",
           "computes across the data-dependent axis", inits=[numpy_helper.from_array(np.ones((2, 4, 1, 1), np.float32), "w")])
fail_model("nonzero_cumsum", [H("NonZero", ["x"], ["nz"], name="nz"),
                              H("CumSum", ["nz", "one"], ["s"], name="cumsum")], [("x", x34)], "s",
           "node 'nz' (NonZero, opset 11): error: NonZero's output 'nz' has a data-dependent shape and feeds 'cumsum' "
           "(CumSum): cumsum works along the data-dependent axis", inits=[numpy_helper.from_array(i64(1)[0], "one")])
fail_model("two_extents", [H("Compress", ["x", "c1"], ["a"], axis=0, name="ca"),
                           H("Compress", ["x", "c2"], ["b"], axis=0, name="cb"), H("Add", ["a", "b"], ["s"], name="add")],
           [("x", x34), ("c1", c4), ("c2", c4)], "s",
           "node 'ca' (Compress, opset 11): error: Compress's output 'a' has a data-dependent shape and feeds 'add' "
           "(Add): it also reads 'b', whose data-dependent extent comes from another node ('cb', Compress)")
# NonZero's [rank, n] flattened: the valid indices are not a prefix (a merge of [n, rank] is, make_dynshape_models)
fail_model("reshape_merge", [H("NonZero", ["x"], ["nz"], name="nz"), H("Reshape", ["nz", "shape"], ["s"], name="flat")],
           [("x", x34)], "s",
           "node 'nz' (NonZero, opset 11): error: NonZero's output 'nz' has a data-dependent shape and feeds 'flat' "
           "(Reshape): it merges or splits the data-dependent axis other than as a row-major prefix",
           inits=[numpy_helper.from_array(i64(-1), "shape")])
fail_model("unique_of_compress", [H("Compress", ["x", "c"], ["a"], axis=0, name="ca"),
                                  H("Unique", ["a"], ["s"], axis=0, name="uq")], [("x", x34), ("c", c4)], "s",
           "node 'ca' (Compress, opset 11): error: Compress's output 'a' has a data-dependent shape and feeds 'uq' "
           "(Unique): it cannot read a data-dependent shape itself")
# a static length for the data-dependent axis (a run with one row would broadcast to it)
fail_model("expand_static_length", [H("Compress", ["x", "c"], ["a"], axis=0, name="ca"),
                                    H("Expand", ["a", "shape"], ["s"], name="ex")], [("x", x34), ("c", c4)], "s",
           "node 'ca' (Compress, opset 11): error: Compress's output 'a' has a data-dependent shape and feeds 'ex' "
           "(Expand): its static shape gives the data-dependent axis a length of its own",
           inits=[numpy_helper.from_array(i64(2, 3, 4), "shape")])
fail_model("scatter_two_extents", [H("Compress", ["x", "c1"], ["a"], axis=0, name="ca"),
                                   H("Compress", ["i", "c2"], ["b"], axis=0, name="cb"),
                                   H("ScatterElements", ["x", "b", "a"], ["s"], axis=0, name="sc")],
           [("x", x34), ("i", np.zeros((3, 4), np.int64)), ("c1", c4), ("c2", c4)], "s",
           "node 'cb' (Compress, opset 11): error: Compress's output 'b' has a data-dependent shape and feeds 'sc' "
           "(ScatterElements): its indices and updates do not have one data-dependent extent along one axis")
# a Slice of axis 1 up to the run-time length of axis 0
fail_model("slice_end_other_axis", [H("Compress", ["x", "c"], ["a"], axis=0, name="ca"), H("Shape", ["a"], ["sh"]),
                                    H("Slice", ["sh", "zero", "one"], ["n"]),
                                    H("Slice", ["a", "zero", "n", "one"], ["s"], name="sl")], [("x", x34), ("c", c4)], "s",
           "node 'ca' (Compress, opset 11): error: Compress's output 'a' has a data-dependent shape and feeds 'sl' "
           "(Slice): its end is the run-time length of the data-dependent axis, given for another axis or with a "
           "negative step", inits=[numpy_helper.from_array(i64(0), "zero"), numpy_helper.from_array(i64(1), "one")])
fail_model("gather_elements_dynamic_axis", [H("Compress", ["x", "c"], ["a"], axis=0, name="ca"),
                                            H("GatherElements", ["a", "i"], ["s"], axis=0, name="pick")],
           [("x", x34), ("c", c4)], "s",
           "node 'ca' (Compress, opset 11): error: Compress's output 'a' has a data-dependent shape and feeds 'pick' "
           "(GatherElements): mlc cannot carry a data-dependent shape through gather",
           inits=[numpy_helper.from_array(np.zeros((1, 4), np.int64), "i")])
fail_model("topk_runtime_k_other_axis", [H("Compress", ["x", "c"], ["a"], axis=0, name="ca"),
                                         H("TopK", ["a", "k"], ["s", "si"], axis=1, name="topk")],
           [("x", x34), ("c", c4), ("k", i64(2))], "s",
           "node 'ca' (Compress, opset 11): error: Compress's output 'a' has a data-dependent shape and feeds 'topk' "
           "(TopK): its K is only known at run time and its input is data-dependent along another axis")
fail_model("softmax_dynamic_axis", [H("Compress", ["x", "c"], ["a"], axis=0, name="ca"),
                                    H("Softmax", ["a"], ["s"], axis=0, name="sm")], [("x", x34), ("c", c4)], "s",
           "node 'ca' (Compress, opset 13): error: Compress's output 'a' has a data-dependent shape and feeds 'sm' "
           "(Softmax): nn.softmax works along the data-dependent axis", opset=13)


with open(f"{out}/models.txt", "w") as fh:
    fh.write("\n".join(names) + "\n")
with open(f"{out}/tol.txt", "w") as fh:
    fh.write("".join(f"{n}\t{t}\n" for n, t in tols))
with open(f"{out}/fail.txt", "w") as fh:
    fh.write("".join(f"{n}\t{m}\n" for n, m in fails))
