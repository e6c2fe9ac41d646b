#!/usr/bin/env python3
"""make_dynshape_models.py DIR: models that compute with the run-time shape of data-dependent values (mlc's
bounded dynamic padding, src/ir/dynamic.c): Shape and Size of a NonZero / Compress result as run-time int64
values that ordinary integer ops compute on; reductions (ReduceSum, Mean, Max, Min, Prod, L2, LogSumExp) over
the data-dependent axis; TopK with K = min(K, n) computed at run time; Gather along the data-dependent axis by
data-dependent indices (negative ones counted from the extent); ConstantOfShape / Expand of such a shape, Range up to such a length; ArgMax / ArgMin over the data-dependent
axis;
Concat of pieces with different extents along their data-dependent axis (packed); Slice of part of the
data-dependent axis; Reshape / ConstantOfShape / Expand by shapes built from the run-time length (Shape, Gather,
Unsqueeze, Concat with constants), TopK with K = min(10, n) bounded by 10; If on run-time data whose branches give different data-dependent shapes (an empty
constant or a NonZero result); NonMaxSuppression of a data-dependent number of boxes (torchvision.ops.nms as
the reference); NonZero / Compress of data-dependent values; torchvision's MultiScaleRoIAlign on a
data-dependent number of boxes (RoiAlign per level, ScatterElements back into box order, expand_as of the
indices, a Reshape merging the data-dependent axis, a Slice to the run's own length; torchvision.ops.roi_align
as the reference). The last model is the
per-class post-processing of torchvision's SSD / RetinaNet heads (score threshold, topk of min(K, n) candidates,
boxes gathered, labels filled, torch.cat over the classes, a mean of the kept scores), exported from torch.
Each model NAME has data sets NAME_inputs[K].npz and references NAME_ref[K].npz (numpy or torch) with an empty,
a typical and a full extent; names go to DIR/models.txt, tolerances to DIR/tol.txt (NAME<TAB>tol).
Empty reductions follow ONNX (opset 18's rule): sums 0, the product 1, max -inf, min +inf, logsumexp -inf, and
a mean 0 / 0 = NaN (numpy's and torch's mean of nothing).
Used by tests/cli/test_dynshape.sh."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(5)
names, tols = [], []
H = helper.make_node


def vi(name, a):
    return helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(a.dtype)], list(a.shape))


def save(name, nodes, inputs, outputs, datasets, inits=(), opset=13, tol=None):
    g = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, f"{out}/{name}.onnx")
    for k, (ins, refs) in enumerate(datasets):
        sfx = "" if k == 0 else str(k + 1)
        np.savez(f"{out}/{name}_inputs{sfx}.npz", **{k: np.ascontiguousarray(v).reshape(np.shape(v)) for k, v in ins.items()})
        np.savez(f"{out}/{name}_ref{sfx}.npz", **{k: np.ascontiguousarray(v).reshape(np.shape(v)) for k, v in refs.items()})
    names.append(name)
    if tol is not None:
        tols.append((name, tol))


def i64(*v):
    return np.array(v, np.int64)


def c(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


# x [6, 5] with a threshold: empty, typical, full
x65 = rng.standard_normal((6, 5)).astype(np.float32)
thresholds = [np.float32(9), np.float32(0.3), np.float32(-9)]

# 1. Shape and Size of NonZero(x > t) as run-time values: shape [2, n], size 2n, and shape arithmetic on them
# (Gather, Unsqueeze, Concat with a constant, ReduceMin, Add, Mul)
nodes = [H("Greater", ["x", "t"], ["m"]), H("NonZero", ["m"], ["nz"]), H("Shape", ["nz"], ["shape"]),
         H("Size", ["nz"], ["size"]), H("Gather", ["shape", "one"], ["n"], axis=0),
         H("Unsqueeze", ["n", "zero"], ["n1"]), H("Concat", ["k7", "n1"], ["kn"], axis=0),
         H("ReduceMin", ["kn"], ["k"], keepdims=0), H("Mul", ["size", "n"], ["prod"]), H("Add", ["k", "prod"], ["sum"])]
ds = []
for t in thresholds:
    n = int((x65 > t).sum())
    ds.append(({"x": x65, "t": np.array(t)}, {"shape": i64(2, n), "size": np.array(2 * n), "k": np.array(min(7, n)),
                                             "sum": np.array(min(7, n) + 2 * n * n)}))
save("shape_of_nonzero", nodes, [("x", x65), ("t", np.array(np.float32(0)))],
     [(o, TensorProto.INT64) for o in ("shape", "size", "k", "sum")], ds,
     inits=[c("one", i64(1)[0]), c("zero", i64(0)), c("k7", i64(7))])
# Shape with start/end (opset 15) around the data-dependent axis, and one that leaves it out (static)
nodes = [H("Greater", ["x", "t"], ["m"]), H("NonZero", ["m"], ["nz"]), H("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
         H("GatherND", ["x", "nzt"], ["v"]), H("Unsqueeze", ["v", "ax"], ["v2"]),
         H("Shape", ["v2"], ["s_dyn"], start=1), H("Shape", ["v2"], ["s_static"], end=1)]
ds = [({"x": x65, "t": np.array(t)}, {"s_dyn": i64(int((x65 > t).sum())), "s_static": i64(1)}) for t in thresholds]
save("shape_slice", nodes, [("x", x65), ("t", np.array(np.float32(0)))],
     [("s_dyn", TensorProto.INT64), ("s_static", TensorProto.INT64)], ds, inits=[c("ax", i64(0))], opset=15)


# 5. reductions over the data-dependent axis of the kept rows x[cond] (Compress, axis 0), keepdims 0 and 1, and
# over both axes; empty sets give ONNX's identities
def red_ref(op, v, axes, keep):
    with np.errstate(all="ignore"):
        if op == "ReduceSum":
            r = v.sum(axis=axes, keepdims=keep)
        elif op == "ReduceMean":
            r = v.sum(axis=axes, keepdims=keep) / np.float32(np.prod([v.shape[a] for a in axes]))
        elif op == "ReduceMax":
            r = np.max(v, axis=axes, keepdims=keep, initial=-np.inf)
        elif op == "ReduceMin":
            r = np.min(v, axis=axes, keepdims=keep, initial=np.inf)
        elif op == "ReduceProd":
            r = v.prod(axis=axes, keepdims=keep)
        elif op == "ReduceL2":
            r = np.sqrt((v * v).sum(axis=axes, keepdims=keep))
        else:  # ReduceLogSumExp
            r = np.log(np.exp(v.astype(np.float64)).sum(axis=axes, keepdims=keep))
    return np.asarray(r, np.float32)


x64 = (rng.standard_normal((6, 4)) * 0.8).astype(np.float32)
conds = [np.zeros(6, bool), np.array([1, 0, 1, 1, 0, 0], bool), np.ones(6, bool)]
ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp"]
nodes = [H("Compress", ["x", "cond"], ["v"], axis=0)]
outs = []
for op in ops:
    for axes, keep in (([0], 0), ([0], 1), ([0, 1], 0)):
        o = f"{op}_{''.join(map(str, axes))}_{keep}"
        nodes.append(H(op, ["v"], [o], axes=axes, keepdims=keep))
        outs.append((o, op, axes, keep))
ds = [({"x": x64, "cond": cd}, {o: red_ref(op, x64[cd], tuple(axes), bool(keep)) for o, op, axes, keep in outs})
      for cd in conds]
save("reduce_dynamic_axis", nodes, [("x", x64), ("cond", conds[1])], [(o[0], TensorProto.FLOAT) for o in outs], ds,
     opset=11, tol=1e-5)
# integer max / mean: the dtype's minimum for an empty max, integer division for the mean (0 for an empty one)
xi = rng.integers(-50, 50, (6, 3)).astype(np.int32)
nodes = [H("Compress", ["x", "cond"], ["v"], axis=0), H("ReduceMax", ["v"], ["mx"], axes=[0], keepdims=0),
         H("ReduceSum", ["v"], ["sm"], axes=[0], keepdims=0)]
ds = [({"x": xi, "cond": cd}, {"mx": np.max(xi[cd], axis=0, initial=np.iinfo(np.int32).min).astype(np.int32),
                               "sm": xi[cd].sum(axis=0).astype(np.int32)}) for cd in conds]
save("reduce_dynamic_int", nodes, [("x", xi), ("cond", conds[1])], [("mx", TensorProto.INT32), ("sm", TensorProto.INT32)], ds,
     opset=11)


# ArgMax / ArgMin over the data-dependent axis, first and last index; the last data set's kept rows are all
# -inf in column 0 (the padding, masked to -inf too, must not win the last-index max)
xa6 = rng.integers(-3, 3, (6, 4)).astype(np.float32)  # ties
xa6[:, 0] = -np.inf
nodes = [H("Compress", ["x", "cond"], ["v"], axis=0)]
outs = []
for op in ("ArgMax", "ArgMin"):
    for last in (0, 1):
        for keep in (0, 1):
            o = f"{op}_{last}_{keep}"
            nodes.append(H(op, ["v"], [o], axis=0, keepdims=keep, select_last_index=last))
            outs.append((o, op, last, keep))


def arg_ref(op, v, last, keep):
    f = np.argmax if op == "ArgMax" else np.argmin
    r = (v.shape[0] - 1 - f(v[::-1], axis=0)) if last else f(v, axis=0)
    r = r.astype(np.int64)
    return r.reshape(1, -1) if keep else r


ds = [({"x": xa6, "cond": cd}, {o: arg_ref(op, xa6[cd], last, keep) for o, op, last, keep in outs})
      for cd in conds[1:]]  # an empty ArgMax is an error in ONNX and numpy
save("arg_dynamic_axis", nodes, [("x", xa6), ("cond", conds[1])], [(o[0], TensorProto.INT64) for o in outs], ds,
     opset=12)

# 3. Range up to the run-time length (torch.arange(x[mask].shape[0]) as torch exports it), and from 1 by 2
nodes = [H("Greater", ["x", "t"], ["m"]), H("NonZero", ["m"], ["nz"]), H("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
         H("GatherND", ["x", "nzt"], ["v"]), H("Shape", ["v"], ["sh"]), H("Gather", ["sh", "zero"], ["n"], axis=0),
         H("Range", ["zero", "n", "one"], ["r"]), H("Range", ["one", "n", "two"], ["r2"]),
         H("Add", ["r", "r"], ["r_twice"])]
ds = []
for t in thresholds:
    n = int((x65 > t).sum())
    ds.append(({"x": x65, "t": np.array(t)}, {"r": np.arange(n, dtype=np.int64), "r2": np.arange(1, n, 2, dtype=np.int64),
                                             "r_twice": 2 * np.arange(n, dtype=np.int64)}))
save("range_dynamic", nodes, [("x", x65), ("t", np.array(np.float32(0)))],
     [("r", TensorProto.INT64), ("r2", TensorProto.INT64), ("r_twice", TensorProto.INT64)], ds,
     inits=[c("zero", i64(0)[0]), c("one", i64(1)[0]), c("two", i64(2)[0])], opset=11)


# 2 + 3. TopK of the kept scores with K = min(K, n) at run time (torchvision's _topk_min pattern), boxes gathered
# by the TopK indices, labels from ConstantOfShape(Shape(values)) and a row index from Expand
def topk_nodes(K):
    return [H("Greater", ["s", "t"], ["m"]), H("NonZero", ["m"], ["nz"]), H("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
            H("GatherND", ["s", "nzt"], ["v"]), H("NonZero", ["m"], ["nz2"]),
            H("Transpose", ["nz2"], ["nzt2"], perm=[1, 0]), H("GatherND", ["b", "nzt2"], ["bk"]),
            H("Shape", ["v"], ["sh"]), H("Gather", ["sh", "zero"], ["n"], axis=0), H("Unsqueeze", ["n", "ax"], ["n1"]),
            H("Concat", ["kk", "n1"], ["kn"], axis=0), H("ReduceMin", ["kn"], ["k0"], keepdims=0),
            H("Reshape", ["k0", "one"], ["k"]), H("TopK", ["v", "k"], ["vals", "idx"], axis=-1),
            H("Gather", ["bk", "idx"], ["boxes"], axis=0), H("Shape", ["vals"], ["vsh"]),
            H("ConstantOfShape", ["vsh"], ["labels"], value=helper.make_tensor("v", TensorProto.INT64, [1], [3])),
            H("Expand", ["seven", "vsh"], ["sevens"]), H("Gather", ["vals", "last"], ["worst"], axis=0)]


N = 9
sc = rng.random(N).astype(np.float32)
bx = rng.random((N, 4)).astype(np.float32)
for K in (4, 20):
    ds = []
    for t in (np.float32(2), np.float32(0.4), np.float32(-1)):
        keep = sc > t
        v, bk = sc[keep], bx[keep]
        o = np.argsort(-v, kind="stable")[:min(K, len(v))]
        ref = {"vals": v[o], "idx": o.astype(np.int64), "boxes": bk[o], "labels": np.full(len(o), 3, np.int64),
               "sevens": np.full(len(o), 7, np.float32)}
        if len(o):
            ref["worst"] = np.array(v[o][-1], np.float32)  # Gather of index -1: the last kept one
        ds.append(({"s": sc, "b": bx, "t": np.array(t)}, ref))
    outs = [("vals", TensorProto.FLOAT), ("idx", TensorProto.INT64), ("boxes", TensorProto.FLOAT),
            ("labels", TensorProto.INT64), ("sevens", TensorProto.FLOAT), ("worst", TensorProto.FLOAT)]
    save(f"topk_runtime_k{K}", topk_nodes(K), [("s", sc), ("b", bx), ("t", np.array(np.float32(0)))], outs, ds,
         inits=[c("zero", i64(0)[0]), c("ax", i64(0)), c("kk", i64(K)), c("one", i64(1)), c("last", i64(-1)[0]),
                c("seven", np.array([7], np.float32))])

# 4. Concat of pieces with different extents (and a static piece) along their data-dependent axis
xa, xb = rng.standard_normal((5, 2)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
st = rng.standard_normal((2, 2)).astype(np.float32)
nodes = [H("Compress", ["a", "ca"], ["pa"], axis=0), H("Compress", ["b", "cb"], ["pb"], axis=0),
         H("Concat", ["pa", "st", "pb", "pa"], ["cat"], axis=0), H("ReduceSum", ["cat"], ["tot"], axes=[0], keepdims=0),
         H("Shape", ["cat"], ["catshape"])]
ds = []
for ca, cb in ((np.zeros(5, bool), np.zeros(4, bool)), (np.array([1, 0, 1, 0, 1], bool), np.array([0, 1, 0, 0], bool)),
               (np.ones(5, bool), np.ones(4, bool)), (np.zeros(5, bool), np.ones(4, bool))):
    cat = np.concatenate([xa[ca], st, xb[cb], xa[ca]])
    ds.append(({"a": xa, "b": xb, "ca": ca, "cb": cb}, {"cat": cat, "tot": cat.sum(0), "catshape": i64(*cat.shape)}))
save("concat_extents", nodes, [("a", xa), ("b", xb), ("ca", np.ones(5, bool)), ("cb", np.ones(4, bool))],
     [("cat", TensorProto.FLOAT), ("tot", TensorProto.FLOAT), ("catshape", TensorProto.INT64)], ds, inits=[c("st", st)],
     opset=11, tol=1e-6)


# Slice of part of the data-dependent axis: [1, 4) of the kept values, [2, INT64_MAX) and [1, -1) (step 1)
nodes = [H("Compress", ["x", "cond"], ["v"], axis=0),
         H("Slice", ["v", "s1", "e4", "ax"], ["mid"]), H("Slice", ["v", "s2", "big", "ax"], ["tail"]),
         H("Slice", ["v", "s1", "m1", "ax"], ["inner"])]
x8 = rng.standard_normal((8, 3)).astype(np.float32)
ds = [({"x": x8, "cond": cd}, {"mid": x8[cd][1:4], "tail": x8[cd][2:], "inner": x8[cd][1:-1]})
      for cd in (np.zeros(8, bool), np.array([0, 1, 0, 0, 0, 0, 0, 0], bool), np.array([1, 0, 1, 1, 0, 1, 1, 0], bool),
                 np.ones(8, bool))]
save("slice_dynamic_axis", nodes, [("x", x8), ("cond", np.ones(8, bool))],
     [("mid", TensorProto.FLOAT), ("tail", TensorProto.FLOAT), ("inner", TensorProto.FLOAT)], ds,
     inits=[c("s1", i64(1)), c("e4", i64(4)), c("s2", i64(2)), c("big", i64(2**63 - 1)), c("m1", i64(-1)),
            c("ax", i64(0))], opset=11)


# 6. If on run-time data whose branches differ along the data-dependent axis: "nothing kept" gives an empty
# constant, else the indices of the kept ones (NonZero) and their values doubled
then_g = helper.make_graph([H("Constant", [], ["ti"], value=helper.make_tensor("e", TensorProto.INT64, [0], [])),
                            H("Constant", [], ["tv"], value=helper.make_tensor("f", TensorProto.FLOAT, [0], []))],
                           "then", [], [helper.make_tensor_value_info("ti", TensorProto.INT64, [0]),
                                        helper.make_tensor_value_info("tv", TensorProto.FLOAT, [0])])
else_g = helper.make_graph([H("NonZero", ["m"], ["nz"]), H("Squeeze", ["nz"], ["ei"], axes=[0]),
                            H("Compress", ["x", "m"], ["kv"], axis=0), H("Add", ["kv", "kv"], ["ev"])],
                           "else", [], [helper.make_tensor_value_info("ei", TensorProto.INT64, None),
                                        helper.make_tensor_value_info("ev", TensorProto.FLOAT, None)])
nodes = [H("Greater", ["x", "t"], ["m"]), H("Cast", ["m"], ["mi"], to=TensorProto.INT64),
         H("ReduceSum", ["mi"], ["cnt"], keepdims=0), H("Equal", ["cnt", "zero"], ["none"]),
         H("If", ["none"], ["idx", "val"], then_branch=then_g, else_branch=else_g), H("Shape", ["idx"], ["idx_shape"])]
x7 = rng.standard_normal(7).astype(np.float32)
ds = []
for t in thresholds:
    k = x7 > t
    ds.append(({"x": x7, "t": np.array(t)}, {"idx": np.nonzero(k)[0].astype(np.int64), "val": 2 * x7[k],
                                            "idx_shape": i64(int(k.sum()))}))
save("if_dynamic_branches", nodes, [("x", x7), ("t", np.array(np.float32(0)))],
     [("idx", TensorProto.INT64), ("val", TensorProto.FLOAT), ("idx_shape", TensorProto.INT64)], ds,
     inits=[c("zero", i64(0)[0])], opset=11)


# the same bound in both branches, data-dependent in one: "the kept values if any, else all of them"; the
# result carries the taken branch's extent (a plain where would carry the kept ones' even when all are taken)
then_g = helper.make_graph([H("Compress", ["x", "m"], ["kv"], axis=0)], "then", [],
                           [helper.make_tensor_value_info("kv", TensorProto.FLOAT, None)])
else_g = helper.make_graph([H("Identity", ["x"], ["all"])], "else", [],
                           [helper.make_tensor_value_info("all", TensorProto.FLOAT, None)])
nodes = [H("Greater", ["x", "t"], ["m"]), H("Cast", ["m"], ["mi"], to=TensorProto.INT64),
         H("ReduceSum", ["mi"], ["cnt"], keepdims=0), H("Greater", ["cnt", "zero"], ["some"]),
         H("If", ["some"], ["val"], then_branch=then_g, else_branch=else_g)]
ds = [({"x": x7, "t": np.array(t)}, {"val": x7[x7 > t] if (x7 > t).any() else x7}) for t in thresholds]
save("if_same_bound", nodes, [("x", x7), ("t", np.array(np.float32(0)))], [("val", TensorProto.FLOAT)], ds,
     inits=[c("zero", i64(0)[0])], opset=11)


# Reshape, ConstantOfShape and Expand by shapes built from the run-time length (torchvision's RetinaNet / FCOS
# heads: Shape -> Gather -> Unsqueeze -> Concat with constants -> Reshape), and TopK with K = min(10, n) from
# ReduceMin or Min (its output bounded by 10, not by n's bound 40)
x40 = rng.standard_normal((40, 4)).astype(np.float32)
nodes = [H("Greater", ["s", "t"], ["m"]), H("Compress", ["x", "m"], ["kb"], axis=0), H("Compress", ["s", "m"], ["ks"], axis=0),
         H("Shape", ["kb"], ["sh"]), H("Gather", ["sh", "zero"], ["n"], axis=0), H("Unsqueeze", ["n", "ax"], ["n1"]),
         H("Concat", ["n1", "two_two"], ["shp"], axis=0), H("Reshape", ["kb", "shp"], ["r"]),
         H("Concat", ["n1", "minus1"], ["shp2"], axis=0), H("Reshape", ["r", "shp2"], ["back"]),
         H("Slice", ["sh", "zero1", "one1"], ["s1"]), H("Concat", ["s1", "three"], ["lshape"], axis=0),
         H("ConstantOfShape", ["lshape"], ["labels"], value=helper.make_tensor("v", TensorProto.INT64, [1], [5])),
         H("Concat", ["n1", "two"], ["eshape"], axis=0), H("Expand", ["ones12", "eshape"], ["ex"]),
         H("Concat", ["ten", "n1"], ["kn"], axis=0), H("ReduceMin", ["kn"], ["k0"], keepdims=1),
         H("TopK", ["ks", "k0"], ["best", "besti"]), H("Min", ["n1", "ten"], ["k1"]),
         H("TopK", ["ks", "k1"], ["worst", "worsti"], largest=0)]
ds = []
for t in (np.float32(9), np.float32(1.0), np.float32(0.2), np.float32(-9)):
    keep = x40[:, 0] > t
    kb, ks = x40[keep], x40[keep, 0]
    hi = np.argsort(-ks, kind="stable")[:min(10, len(ks))]
    lo = np.argsort(ks, kind="stable")[:min(10, len(ks))]
    ds.append(({"x": x40, "s": x40[:, 0], "t": np.array(t)},
               {"r": kb.reshape(-1, 2, 2), "back": kb, "labels": np.full((len(kb), 3), 5, np.int64),
                "ex": np.broadcast_to(np.array([[1, 2]], np.float32), (len(kb), 2)), "best": ks[hi],
                "besti": hi.astype(np.int64), "worst": ks[lo], "worsti": lo.astype(np.int64)}))
save("reshape_runtime_shape", nodes, [("x", x40), ("s", x40[:, 0]), ("t", np.array(np.float32(0)))],
     [(o, TensorProto.FLOAT if o in ("r", "back", "ex", "best", "worst") else TensorProto.INT64)
      for o in ("r", "back", "labels", "ex", "best", "besti", "worst", "worsti")], ds,
     inits=[c("zero", i64(0)[0]), c("ax", i64(0)), c("two_two", i64(2, 2)), c("minus1", i64(-1)), c("zero1", i64(0)),
            c("one1", i64(1)), c("three", i64(3)), c("two", i64(2)), c("ones12", np.array([[1, 2]], np.float32)),
            c("ten", i64(10))])


# NonMaxSuppression of the boxes kept by a score threshold (a data-dependent box count), and the kept boxes'
# coordinates gathered by the selection: torchvision.ops.nms as the reference
def nms_dynamic_model():
    import torch
    import torchvision
    n = 10
    xy = rng.random((n, 2)).astype(np.float32) * 4
    boxes = np.concatenate([xy, xy + 1 + rng.random((n, 2)).astype(np.float32)], 1)  # [x1, y1, x2, y2]
    yx = boxes[:, [1, 0, 3, 2]]  # ONNX corner order [y1, x1, y2, x2]
    sc = rng.random(n).astype(np.float32)
    nodes = [H("Greater", ["s", "t"], ["m"]), H("NonZero", ["m"], ["nz"]), H("Squeeze", ["nz"], ["keep"], axes=[0]),
             H("Gather", ["b", "keep"], ["kb"], axis=0), H("Gather", ["s", "keep"], ["ks"], axis=0),
             H("Unsqueeze", ["kb"], ["kb3"], axes=[0]), H("Unsqueeze", ["ks"], ["ks2"], axes=[0]),
             H("Unsqueeze", ["ks2"], ["ks3"], axes=[0]),
             H("NonMaxSuppression", ["kb3", "ks3", "maxo", "iou"], ["sel"]),
             H("Gather", ["sel", "two"], ["bi"], axis=1), H("Gather", ["kb", "bi"], ["picked"], axis=0)]
    ds = []
    for t in (np.float32(2), np.float32(0.3), np.float32(-1)):
        k = np.nonzero(sc > t)[0]
        kept = torchvision.ops.nms(torch.from_numpy(boxes[k]), torch.from_numpy(sc[k]), 0.3).numpy()
        ds.append(({"s": sc, "b": yx, "t": np.array(t)}, {"picked": yx[k][kept].reshape(-1, 4)}))
    save("nms_dynamic_boxes", nodes, [("s", sc), ("b", yx), ("t", np.array(np.float32(0)))],
         [("picked", TensorProto.FLOAT)], ds,
         inits=[c("maxo", i64(100)), c("iou", np.array([0.3], np.float32)), c("two", i64(2)[0])], opset=11)


nms_dynamic_model()


# torchvision's SSD / RetinaNet per-class post-processing, exported by torch (opset 11, as torchvision does)
def ssd_post_model():
    import torch
    from torchvision.models.detection import _utils as det_utils

    C, K, thr = 4, 5, 0.35

    class Post(torch.nn.Module):
        def forward(self, boxes, scores):  # boxes [N, 4], scores [N, C]
            ob, os_, ol = [], [], []
            for label in range(C):
                score = scores[:, label]
                keep = score > thr
                score, box = score[keep], boxes[keep]
                num_topk = det_utils._topk_min(score, K, 0)
                score, idxs = score.topk(num_topk)
                ob.append(box[idxs])
                os_.append(score)
                ol.append(torch.full_like(score, fill_value=label, dtype=torch.int64))
            s = torch.cat(os_, dim=0)
            return torch.cat(ob, dim=0), s, torch.cat(ol, dim=0), s.mean(), s.sum()

    n = 12
    boxes = rng.random((n, 4)).astype(np.float32)
    datasets = []
    for scale in (0.3, 0.6, 1.0):  # 0.3: nothing passes the threshold; 1.0: most pass
        sc = (rng.random((n, C)) * scale).astype(np.float32)
        if scale == 1.0:
            sc[:, 0] = 0.5 + 0.5 * rng.random(n).astype(np.float32)  # class 0: every box (n > K)
        datasets.append((boxes, sc))
    m = Post().eval()
    path = f"{out}/ssd_post.onnx"
    onames = ["boxes_out", "scores_out", "labels_out", "mean", "sum"]
    torch.onnx.export(m, (torch.from_numpy(boxes), torch.from_numpy(datasets[1][1])), path,
                      input_names=["boxes", "scores"], output_names=onames, opset_version=11)
    for k, ins in enumerate(datasets):
        sfx = "" if k == 0 else str(k + 1)
        with torch.no_grad():
            res = m(*[torch.from_numpy(a) for a in ins])
        np.savez(f"{out}/ssd_post_inputs{sfx}.npz", boxes=ins[0], scores=ins[1])
        np.savez(f"{out}/ssd_post_ref{sfx}.npz", **{nm: r.numpy() for nm, r in zip(onames, res)})
    names.append("ssd_post")
    tols.append(("ssd_post", 1e-5))


# NonZero and Compress of data-dependent values (torchvision's remove_small_boxes then the score threshold:
# keep = where(...)[0] twice): the padding of the first result never counts, indices count in its run's
# length; Gather of data-dependent rows by those indices
x10 = rng.standard_normal((10, 2)).astype(np.float32)
nodes = [H("Greater", ["a", "t"], ["m"]), H("NonZero", ["m"], ["nz"]), H("Squeeze", ["nz", "ax0"], ["keep"]),
         H("Gather", ["x", "keep"], ["kx"], axis=0), H("Gather", ["kx", "one"], ["kb"], axis=1),
         H("Greater", ["kb", "u"], ["m2"]), H("NonZero", ["m2"], ["nz2"]), H("Squeeze", ["nz2", "ax0"], ["keep2"]),
         H("Gather", ["keep", "keep2"], ["sel"], axis=0), H("Gather", ["kx", "keep2"], ["rows"], axis=0),
         H("Compress", ["kb", "m2"], ["vals"], axis=0), H("Compress", ["kx", "m2"], ["crows"], axis=0)]
ds = []
for t, u in ((np.float32(9), np.float32(0)), (np.float32(-0.3), np.float32(0.2)), (np.float32(-9), np.float32(-9))):
    keep = np.nonzero(x10[:, 0] > t)[0]
    kx = x10[keep]
    keep2 = np.nonzero(kx[:, 1] > u)[0]
    ds.append(({"x": x10, "a": x10[:, 0], "t": np.array(t), "u": np.array(u)},
               {"sel": keep[keep2], "rows": kx[keep2], "vals": kx[keep2, 1], "crows": kx[keep2]}))
save("nonzero_of_dynamic", nodes, [("x", x10), ("a", x10[:, 0]), ("t", np.array(np.float32(0))), ("u", np.array(np.float32(0)))],
     [("sel", TensorProto.INT64), ("rows", TensorProto.FLOAT), ("vals", TensorProto.FLOAT), ("crows", TensorProto.FLOAT)],
     ds, inits=[c("ax0", i64(0)), c("one", i64(1)[0])])

# torchvision's MultiScaleRoIAlign on a data-dependent number of boxes: each kept box gets a level, NonZero
# per level, RoiAlign (output_half_pixel: torch's aligned=False) of that level's boxes, the pooled features put
# back in box order by ScatterElements into ConstantOfShape(Shape) zeros, its indices expanded (expand_as:
# Where(shape == -1, 1, shape)) from the per-level positions; then the pooled features flattened (a Reshape
# merging the data-dependent axis with the others) and sliced to the run's own length (Slice ends from Shape)


def roi_align_model():
    import torch
    from torchvision.ops import roi_align
    feats = [rng.standard_normal((1, 2, 8, 8)).astype(np.float32), rng.standard_normal((1, 2, 4, 4)).astype(np.float32)]
    n = 7
    boxes = np.sort(rng.random((n, 2, 2)).astype(np.float32) * 30, axis=1).reshape(n, 4)[:, [0, 2, 1, 3]]
    level = rng.integers(0, 2, n).astype(np.int64)
    level[:2] = (0, 1)
    nodes = [H("Greater", ["s", "t"], ["m"]), H("NonZero", ["m"], ["nz"]), H("Squeeze", ["nz", "ax0"], ["keep"]),
             H("Gather", ["boxes", "keep"], ["kb"], axis=0), H("Gather", ["level", "keep"], ["kl"], axis=0),
             H("Shape", ["kb"], ["shb"]), H("Gather", ["shb", "zero"], ["nb"], axis=0), H("Unsqueeze", ["nb", "ax0"], ["nb1"]),
             H("Concat", ["nb1", "chw"], ["pshape"], axis=0), H("ConstantOfShape", ["pshape"], ["z"]),
             H("Reshape", ["pshape", "minus1"], ["pshape1"]), H("Shape", ["pshape1"], ["pl"]),
             H("ConstantOfShape", ["pl"], ["ones"], value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
             H("Mul", ["ones", "minus1"], ["negs"])]
    res = "z"
    for lv, scale in ((0, 0.25), (1, 0.125)):
        p = f"l{lv}_"
        nodes += [H("Equal", ["kl", f"lv{lv}"], [p + "eq"]), H("NonZero", [p + "eq"], [p + "nz"]),
                  H("Squeeze", [p + "nz", "ax0"], [p + "idx"]), H("Gather", ["kb", p + "idx"], [p + "rois"], axis=0),
                  H("Gather", ["bzero", p + "idx"], [p + "bi"], axis=0),
                  H("RoiAlign", [f"f{lv}", p + "rois", p + "bi"], [p + "pool"], output_height=2, output_width=2,
                    sampling_ratio=2, spatial_scale=scale, coordinate_transformation_mode="output_half_pixel"),
                  H("Reshape", [p + "idx", "m1111"], [p + "idx4"]),
                  H("Equal", ["pshape1", "negs"], [p + "isneg"]), H("Where", [p + "isneg", "ones", "pshape1"], [p + "eshape"]),
                  H("Shape", [p + "pool"], [p + "psh"]), H("Gather", [p + "psh", "zero1"], [p + "pn"], axis=0),
                  H("Concat", [p + "pn", "chw"], [p + "pshape"], axis=0),
                  H("Equal", [p + "pshape", "negs"], [p + "isneg2"]),
                  H("Where", [p + "isneg2", "ones", p + "pshape"], [p + "eshape2"]),
                  H("Expand", [p + "idx4", p + "eshape2"], [p + "eidx"]),
                  H("ScatterElements", [res, p + "eidx", p + "pool"], [p + "out"], axis=0)]
        res = p + "out"
    nodes += [H("Identity", [res], ["pooled"]), H("Reshape", [res, "minus1"], ["flat"]),
              H("Reshape", [res, "m1_8"], ["rows8"]), H("Add", ["zero1", "nb1"], ["end"]),
              H("Slice", ["kb", "zero1", "end", "zero1"], ["head"])]
    ds = []
    bzero = np.zeros(n, np.int64)
    for k in range(3):  # none, four of the seven (both levels), all
        sc = rng.random(n).astype(np.float32)
        t = (np.float32(9), np.sort(sc)[2], np.float32(-9))[k]
        keep = np.nonzero(sc > t)[0]
        assert k != 1 or set(level[keep]) == {0, 1}
        kb, kl = boxes[keep], level[keep]
        pooled = np.zeros((len(keep), 2, 2, 2), np.float32)
        for lv, scale in ((0, 0.25), (1, 0.125)):
            idx = np.nonzero(kl == lv)[0]
            if len(idx):
                r = roi_align(torch.from_numpy(feats[lv]), [torch.from_numpy(kb[idx])], 2, scale, 2, aligned=False)
                pooled[idx] = r.numpy()
        ds.append(({"s": sc, "t": np.array(t)},
                   {"pooled": pooled, "flat": pooled.reshape(-1), "rows8": pooled.reshape(-1, 8), "head": kb}))
    save("roi_align_dynamic", nodes, [("s", np.zeros(n, np.float32)), ("t", np.array(np.float32(0)))],
         [(o, TensorProto.FLOAT) for o in ("pooled", "flat", "rows8", "head")], ds, opset=16, tol=1e-5,
         inits=[c("boxes", boxes), c("level", level), c("f0", feats[0]), c("f1", feats[1]), c("bzero", bzero),
                c("ax0", i64(0)), c("zero", i64(0)[0]), c("zero1", i64(0)), c("chw", i64(2, 2, 2)), c("minus1", i64(-1)),
                c("lv0", i64(0)[0]), c("lv1", i64(1)[0]), c("m1111", i64(-1, 1, 1, 1)), c("m1_8", i64(-1, 8))])


roi_align_model()


ssd_post_model()

with open(f"{out}/models.txt", "w") as fh:
    fh.write("\n".join(names) + "\n")
with open(f"{out}/tol.txt", "w") as fh:
    fh.write("".join(f"{n}\t{t}\n" for n, t in tols))
