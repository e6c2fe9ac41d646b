#!/usr/bin/env python3
"""make_ml_models.py DIR: ai.onnx.ml TreeEnsemble models (random trees: every node mode, set membership,
missing values tracked true, several targets, each aggregate function, post transforms) with inputs holding
NaNs, and a reference from walking each tree in Python as ONNX's reference implementation does; TfIdfVectorizer
models (each mode, weights, skips, n-gram lengths outside [min, max], a permuted and a shared output column)
against counting the n-grams item by item as ONNX Runtime does; names and tolerances go to DIR/models.txt."""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(11)
lines = []


def random_ensemble(ntrees, nfeat, ntargets, depth, modes, dtype):
    nodes = dict(feat=[], split=[], mode=[], tid=[], fid=[], tleaf=[], fleaf=[], mtt=[], members=[])
    leaves = dict(target=[], weight=[])
    roots = []

    def leaf():
        leaves["target"].append(int(rng.integers(0, ntargets)))
        leaves["weight"].append(float(dtype(rng.standard_normal())))
        return len(leaves["target"]) - 1

    def node(d):
        i = len(nodes["feat"])
        m = int(rng.choice(modes))
        nodes["feat"].append(int(rng.integers(0, nfeat)))
        nodes["mode"].append(m)
        nodes["mtt"].append(int(rng.integers(0, 2)))
        if m == 6:
            mem = sorted(set(int(v) for v in rng.integers(-3, 4, 3)))
            nodes["members"].append(mem)
            nodes["split"].append(0.0)
        else:
            nodes["members"].append(None)
            v = float(np.round(rng.standard_normal(), 1)) if m not in (4, 5) else float(rng.integers(-2, 3))
            nodes["split"].append(float(dtype(v)))  # as the model stores it
        for side in ("t", "f"):
            nodes[side + "id"].append(0)
            nodes[side + "leaf"].append(0)
        for side in ("t", "f"):
            if d + 1 >= depth or rng.random() < 0.25:
                nodes[side + "id"][i], nodes[side + "leaf"][i] = leaf(), 1
            else:
                nodes[side + "id"][i], nodes[side + "leaf"][i] = node(d + 1), 0
        return i

    for _ in range(ntrees):
        roots.append(node(0))
    return nodes, leaves, roots


def walk(nodes, root, x):
    """the index of the leaf x reaches from root"""
    i, is_leaf = root, False
    while not is_leaf:
        v, m, s = x[nodes["feat"][i]], nodes["mode"][i], nodes["split"][i]
        # IEEE comparisons (a NaN is unequal to everything), or true for a NaN where missing values track true
        c = [v <= s, v < s, v >= s, v > s, v == s, v != s, v in (nodes["members"][i] or ())][m]
        c = c or (math.isnan(v) and bool(nodes["mtt"][i]))
        i, is_leaf = (nodes["tid"][i], nodes["tleaf"][i]) if c else (nodes["fid"][i], nodes["fleaf"][i])
    return i


def model(name, ntrees, ntargets, depth, modes, agg, post=0, dtype=np.float32):
    nfeat = 5
    nodes, leaves, roots = random_ensemble(ntrees, nfeat, ntargets, depth, modes, dtype)
    x = np.round(rng.standard_normal((16, nfeat)) * 2, 1).astype(dtype)
    x[rng.random(x.shape) < 0.1] = np.nan
    x[:, 0] = rng.integers(-3, 4, 16)  # integers for the set membership and equality nodes
    init = {0: 0.0, 1: 0.0, 2: np.finfo(dtype).max, 3: np.finfo(dtype).min}[agg]
    ref = np.full((len(x), ntargets), init, np.float64)
    for s in range(len(x)):
        for r in roots:
            leaf = walk(nodes, r, x[s])
            w, t = leaves["weight"][leaf], leaves["target"][leaf]
            ref[s, t] = {0: ref[s, t] + w / ntrees, 1: ref[s, t] + w, 2: min(ref[s, t], w), 3: max(ref[s, t], w)}[agg]
    if post == 2:
        ref = 1 / (1 + np.exp(-np.maximum(ref, -700)))
    elif post == 1:
        e = np.exp(ref - ref.max(1, keepdims=True))
        ref = e / e.sum(1, keepdims=True)
    members = []
    for m in nodes["members"]:
        if m is not None:
            members += [float(v) for v in m] + [float("nan")]
    attrs = dict(nodes_featureids=nodes["feat"], nodes_truenodeids=nodes["tid"], nodes_falsenodeids=nodes["fid"],
                 nodes_trueleafs=nodes["tleaf"], nodes_falseleafs=nodes["fleaf"],
                 nodes_missing_value_tracks_true=nodes["mtt"], leaf_targetids=leaves["target"], tree_roots=roots,
                 n_targets=ntargets, aggregate_function=agg, post_transform=post,
                 nodes_splits=numpy_helper.from_array(np.array(nodes["split"], dtype)),
                 nodes_modes=numpy_helper.from_array(np.array(nodes["mode"], np.uint8)),
                 leaf_weights=numpy_helper.from_array(np.array(leaves["weight"], dtype)))
    if members:
        attrs["membership_values"] = numpy_helper.from_array(np.array(members, dtype))
    et = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    node = helper.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", et, list(x.shape))],
                          [helper.make_tensor_value_info("y", et, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)])
    onnx.save(m, f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", y=ref.astype(dtype))
    lines.append(f"{name}\t1e-5")


def legacy_attrs(nodes, roots, entries, prefix):
    """the trees as TreeEnsembleRegressor / Classifier (ai.onnx.ml 3) attributes: nodes named by (tree, node id)
    in depth-first order, leaves LEAF nodes with the (target or class, weight) entries entries(leaf) gives"""
    names = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
    a = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids", "falsenodeids",
                         "missing_value_tracks_true")}
    e = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}

    def emit(t, i, is_leaf, counter):
        my = counter[0]
        counter[0] += 1
        at = len(a["treeids"])
        a["treeids"].append(t)
        a["nodeids"].append(my)
        for k in ("featureids", "truenodeids", "falsenodeids", "missing_value_tracks_true", "values"):
            a[k].append(0)
        a["modes"].append("LEAF" if is_leaf else names[nodes["mode"][i]])
        if is_leaf:
            for tg, w in entries(i):
                for k, v in (("treeids", t), ("nodeids", my), ("ids", tg), ("weights", float(w))):
                    e[k].append(v)
            return my
        a["featureids"][at] = nodes["feat"][i]
        a["values"][at] = float(nodes["split"][i])
        a["missing_value_tracks_true"][at] = nodes["mtt"][i]
        a["truenodeids"][at] = emit(t, nodes["tid"][i], nodes["tleaf"][i], counter)
        a["falsenodeids"][at] = emit(t, nodes["fid"][i], nodes["fleaf"][i], counter)
        return my

    for t, r in enumerate(roots):
        emit(t, r, False, [0])
    attrs = {f"nodes_{k}": v for k, v in a.items()}
    attrs.update({f"{prefix}_{k}": v for k, v in e.items()})
    return attrs


def legacy_save(name, op, attrs, x, outs, refs):
    g = helper.make_graph([helper.make_node(op, ["x"], [o for o, _ in outs], domain="ai.onnx.ml", **attrs)], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info(o, t, None) for o, t in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    onnx.save(m, f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", **refs)
    lines.append(f"{name}\t1e-5")


def inputs(nfeat, nan=True):
    x = np.round(rng.standard_normal((16, nfeat)) * 2, 1).astype(np.float32)
    if nan:
        x[rng.random(x.shape) < 0.1] = np.nan
    x[:, 0] = rng.integers(-3, 4, 16)  # integers for the set membership and equality nodes
    return x


def legacy_model(name, ntrees, ntargets, depth, modes, agg, post="NONE", base=True):
    """the random trees as a TreeEnsembleRegressor: one target entry per leaf (a second one to the next target
    on some), base values; a MIN / MAX target no tree feeds is 0, as ONNX Runtime has it"""
    nodes, leaves, roots = random_ensemble(ntrees, 5, ntargets, depth, modes, np.float32)

    def entries(i):
        per = {leaves["target"][i]: leaves["weight"][i]}
        if ntargets > 1 and i % 3 == 0:
            per[(leaves["target"][i] + 1) % ntargets] = 0.5 * leaves["weight"][i]
        return list(per.items())

    x = inputs(5)
    bv = rng.standard_normal(ntargets).astype(np.float32) if base else np.zeros(ntargets, np.float32)
    aggi = ["AVERAGE", "SUM", "MIN", "MAX"].index(agg)
    ref = np.zeros((len(x), ntargets))
    for s_ in range(len(x)):
        got = [[] for _ in range(ntargets)]
        for r in roots:
            for tg, w in entries(walk(nodes, r, x[s_])):
                got[tg].append(w)
        for tg, g in enumerate(got):
            ref[s_, tg] = [sum(g) / ntrees, sum(g), min(g) if g else 0.0, max(g) if g else 0.0][aggi] + bv[tg]
    if post == "LOGISTIC":
        ref = 1 / (1 + np.exp(-ref))
    attrs = legacy_attrs(nodes, roots, entries, "target")
    attrs.update(n_targets=ntargets, aggregate_function=agg, post_transform=post, base_values=[float(v) for v in bv])
    legacy_save(name, "TreeEnsembleRegressor", attrs, x, [("y", TensorProto.FLOAT)], {"y": ref.astype(np.float32)})


def classifier_model(name, ntrees, nclasses, depth, modes, post="NONE"):
    """a TreeEnsembleClassifier as a random forest converts: every leaf holds a weight for each class (its class
    frequencies / trees), int64 labels; label = the labels at the highest score"""
    nodes, leaves, roots = random_ensemble(ntrees, 5, 1, depth, modes, np.float32)
    probs = rng.dirichlet(np.ones(nclasses), len(leaves["weight"])).astype(np.float32) / ntrees
    x = inputs(5, nan=False)
    scores = np.zeros((len(x), nclasses))
    for s_ in range(len(x)):
        for r in roots:
            scores[s_] += probs[walk(nodes, r, x[s_])]
    if post == "SOFTMAX":
        e = np.exp(scores - scores.max(1, keepdims=True))
        scores = e / e.sum(1, keepdims=True)
    labels = [10 * (c + 1) for c in range(nclasses)]
    attrs = legacy_attrs(nodes, roots, lambda i: [(c, probs[i, c]) for c in range(nclasses)], "class")
    attrs.update(classlabels_int64s=labels, post_transform=post)
    legacy_save(name, "TreeEnsembleClassifier", attrs, x, [("label", TensorProto.INT64), ("scores", TensorProto.FLOAT)],
                {"label": np.array(labels)[scores.argmax(1)].astype(np.int64), "scores": scores.astype(np.float32)})


def tfidf_ref(x, lo, hi, skips, mode, counts, index, pool, weights):
    """ONNX Runtime's loop: per row, per skip distance, per start item, the n-grams of length lo..hi that
    fit (unigrams on the first distance only), each found in the pool adding one to its entry's count; an
    entry's value (TF: its count, IDF: its weight or 1 where counted, TFIDF: count * weight) goes to its column"""
    entries = []
    for i, start in enumerate(counts):
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        entries += [tuple(pool[p:p + i + 1]) for p in range(start, end, i + 1)]
    rows = x.reshape(-1, x.shape[-1])
    cnt = np.zeros((len(rows), len(entries)), np.float32)
    for r, row in enumerate(rows):
        for sd in range(1, skips + 2):
            for s_ in range(len(row)):
                for n in range(max(lo, 1 if sd == 1 else 2), hi + 1):
                    if s_ + (n - 1) * sd >= len(row):
                        break
                    g = tuple(int(v) for v in row[s_:s_ + (n - 1) * sd + 1:sd])
                    for e, pg in enumerate(entries):
                        if pg == g:
                            cnt[r, e] += 1
    w = np.array(weights, np.float32) if weights else np.ones(len(entries), np.float32)
    val = cnt if mode == "TF" else (cnt > 0) * w if mode == "IDF" else cnt * w
    out = np.zeros((len(rows), max(index) + 1), np.float32)
    for e, o in enumerate(index):
        out[:, o] += val[:, e]
    return out.reshape(out.shape if x.ndim == 2 else out.shape[1:])


def tfidf_model(name, shape, dtype, lo, hi, skips, mode, counts, index, pool, weights=None, high=6):
    x = rng.integers(0, high, shape).astype(dtype)
    attrs = dict(min_gram_length=lo, max_gram_length=hi, max_skip_count=skips, mode=mode, ngram_counts=counts,
                 ngram_indexes=index, pool_int64s=pool)
    if weights:
        attrs["weights"] = weights
    t = TensorProto.INT32 if dtype == np.int32 else TensorProto.INT64
    g = helper.make_graph([helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)], name,
                          [helper.make_tensor_value_info("x", t, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", y=tfidf_ref(x, lo, hi, skips, mode, counts, index, pool, weights))
    lines.append(f"{name}\t1e-6")


model("tree_ensemble_leq_sum", 6, 1, 5, [0], 1)
model("tree_ensemble_all_modes_avg", 8, 3, 6, [0, 1, 2, 3, 4, 5, 6], 0)
model("tree_ensemble_min_double", 5, 2, 4, [1, 3, 6], 2, dtype=np.float64)
model("tree_ensemble_max_logistic", 5, 2, 4, [0, 2], 3, post=2)
model("tree_ensemble_softmax", 7, 4, 5, [0, 5, 6], 1, post=1)
legacy_model("tree_regressor_sum", 6, 1, 5, [0], "SUM")
legacy_model("tree_regressor_modes_avg", 8, 3, 5, [0, 1, 2, 3, 4, 5], "AVERAGE")
legacy_model("tree_regressor_min", 5, 3, 4, [1, 3], "MIN", base=False)
legacy_model("tree_regressor_max_logistic", 5, 2, 4, [0, 2], "MAX", post="LOGISTIC")
classifier_model("tree_classifier_3", 10, 3, 5, [0, 1])
classifier_model("tree_classifier_4_softmax", 6, 4, 4, [0, 3, 5], post="SOFTMAX")
# pool: unigrams 1 2 3 4, bigrams (1 2) (2 1) (3 3) (0 5), trigrams (1 2 3) (2 2 2)
POOL = [1, 2, 3, 4, 1, 2, 2, 1, 3, 3, 0, 5, 1, 2, 3, 2, 2, 2]
tfidf_model("tfidf_tf_123_skip2", (4, 24), np.int64, 1, 3, 2, "TF", [0, 4, 12], list(range(10)), POOL)
tfidf_model("tfidf_idf_weights_permuted", (30,), np.int32, 2, 3, 1, "IDF", [0, 4, 12],
            [9, 0, 8, 1, 7, 2, 6, 3, 5, 4], POOL, [0.5 + 0.25 * i for i in range(10)], high=4)
tfidf_model("tfidf_tfidf_shared_column", (3, 16), np.int32, 1, 2, 3, "TFIDF", [0, 4, 12],
            [0, 1, 2, 3, 1, 4, 4, 5, 6, 6], POOL, [1.5, 2.0, -1.0, 0.25, 3.0, 0.5, 1.25, 2.5, -0.5, 0.75])
tfidf_model("tfidf_idf_no_weights_short_rows", (5, 2), np.int64, 2, 3, 4, "IDF", [0, 4, 12], list(range(10)), POOL)
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
