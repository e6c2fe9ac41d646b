#!/usr/bin/env python3
"""Writes broken inputs for tests/cli/test_bad_input.sh into OUT_DIR (each one named after what is wrong)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
f32 = TensorProto.FLOAT


def save(name, nodes, inputs, outputs, inits=(), check=False, domains=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", 13)] + [helper.make_opsetid(dm, v) for dm, v in domains]
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return m


x = helper.make_tensor_value_info("x", f32, [1, 4])
y = helper.make_tensor_value_info("y", f32, [1, 4])
good = save("good", [helper.make_node("Relu", ["x"], ["y"], name="relu1")], [x], [y], check=True)
data = good.SerializeToString()
open(os.path.join(out, "truncated.onnx"), "wb").write(data[: len(data) // 2])
open(os.path.join(out, "garbage.onnx"), "wb").write(bytes(np.random.default_rng(0).integers(0, 256, 300, np.uint8)))
save("cycle", [helper.make_node("Relu", ["b"], ["a"], name="first"),
               helper.make_node("Add", ["x", "a"], ["b"], name="second"),
               helper.make_node("Relu", ["b"], ["y"], name="last")], [x], [y])
save("missing", [helper.make_node("Add", ["x", "nowhere"], ["y"], name="adder")], [x], [y])
# NonZero on a run-time input: a package with a data-dependent output, whose mod.json the test then corrupts
save("dyn", [helper.make_node("NonZero", ["x"], ["nz"], name="nz")], [x],
     [helper.make_tensor_value_info("nz", TensorProto.INT64, [2, None])])
# a Reshape by a shape computed from a data-dependent length with arithmetic (n + 1): refused naming the
# Compress that made the length and the Reshape (kept lengths are followed through Shape, Gather, Concat ...)
i64 = TensorProto.INT64
save("dyn_reshape", [helper.make_node("Greater", ["s", "t"], ["m"], name="keep"),
                     helper.make_node("Compress", ["v", "m"], ["kept"], axis=0, name="compress"),
                     helper.make_node("Shape", ["kept"], ["sh"], name="shape"),
                     helper.make_node("Add", ["sh", "one"], ["sh1"], name="plus_one"),
                     helper.make_node("Reshape", ["kept", "sh1"], ["r"], name="reshape_by_n_plus_1")],
     [helper.make_tensor_value_info("v", f32, [6]), helper.make_tensor_value_info("s", f32, [6]),
      helper.make_tensor_value_info("t", f32, [])], [helper.make_tensor_value_info("r", f32, None)],
     [numpy_helper.from_array(np.array([1], np.int64), "one")])
save("unsupported", [helper.make_node("FooOp", ["x"], ["t"], name="foo_node"),
                     helper.make_node("BarOp", ["t"], ["y"], name="bar_node")], [x], [y])
w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
w.raw_data = w.raw_data[:20]
save("short_raw", [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [x], [y], [w])
e = TensorProto()
e.name, e.data_type = "w", f32
e.dims.extend([4, 4])
e.data_location = TensorProto.EXTERNAL
for k, v in (("location", "../../../../etc/passwd"), ("offset", "0"), ("length", "64")):
    entry = e.external_data.add()
    entry.key, entry.value = k, v
save("escape", [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [x], [y], [e])
# other domains' ops with attributes that cannot work: a tree whose nodes form a cycle, a child out of range, a
# two-class tree classifier (unsupported), Attention with a KV cache (unsupported)
tree = dict(nodes_featureids=[0, 1], nodes_truenodeids=[1, 0], nodes_falsenodeids=[0, 0], nodes_trueleafs=[0, 1],
            nodes_falseleafs=[1, 0], leaf_targetids=[0], tree_roots=[0], n_targets=1,
            nodes_splits=numpy_helper.from_array(np.zeros(2, np.float32)),
            nodes_modes=numpy_helper.from_array(np.zeros(2, np.uint8)),
            leaf_weights=numpy_helper.from_array(np.ones(1, np.float32)))
yt = helper.make_tensor_value_info("y", f32, None)
save("tree_cycle", [helper.make_node("TreeEnsemble", ["x"], ["y"], name="forest", domain="ai.onnx.ml", **tree)],
     [x], [yt], domains=[("ai.onnx.ml", 5)])
tree.update(nodes_truenodeids=[5, 0])
save("tree_child", [helper.make_node("TreeEnsemble", ["x"], ["y"], name="forest", domain="ai.onnx.ml", **tree)],
     [x], [yt], domains=[("ai.onnx.ml", 5)])
save("tree_binary", [helper.make_node("TreeEnsembleClassifier", ["x"], ["y"], name="clf", domain="ai.onnx.ml",
                                      nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
                                      nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_values=[0.0, 0.0, 0.0],
                                      nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0], class_treeids=[0, 0],
                                      class_nodeids=[1, 2], class_ids=[0, 1], class_weights=[1.0, 1.0],
                                      classlabels_int64s=[0, 1])],
     [x], [helper.make_tensor_value_info("y", TensorProto.INT64, None)], domains=[("ai.onnx.ml", 3)])
# TfIdfVectorizer: IDF where two n-grams share a column (unsupported), a pool ngram_counts does not split
xt = helper.make_tensor_value_info("xt", TensorProto.INT64, [2, 6])
tfidf = dict(min_gram_length=1, max_gram_length=2, max_skip_count=0, mode="IDF", ngram_counts=[0, 2],
             ngram_indexes=[0, 1, 1], pool_int64s=[3, 4, 3, 4])
save("tfidf_idf_shared", [helper.make_node("TfIdfVectorizer", ["xt"], ["yt"], name="tfidf", **tfidf)], [xt],
     [helper.make_tensor_value_info("yt", f32, None)])
tfidf.update(mode="TF", ngram_counts=[0, 1], ngram_indexes=[0, 1])
save("tfidf_bad_pool", [helper.make_node("TfIdfVectorizer", ["xt"], ["yt"], name="tfidf", **tfidf)], [xt],
     [helper.make_tensor_value_info("yt", f32, None)])
# a sequence-typed input (its items' shapes must be given)
save("seq_input", [helper.make_node("ConcatFromSequence", ["xs"], ["ys"], name="cat", axis=0)],
     [helper.make_tensor_sequence_value_info("xs", f32, [2])], [helper.make_tensor_value_info("ys", f32, None)])
# Gradient through an op it cannot differentiate (MatMul)
save("gradient_matmul", [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
                         helper.make_node("Gradient", ["x"], ["dx"], name="grad", domain="ai.onnx.preview.training",
                                          xs=["x"], y="m")],
     [x], [helper.make_tensor_value_info("dx", f32, None)], [numpy_helper.from_array(np.ones((4, 2), np.float32), "w")],
     domains=[("ai.onnx.preview.training", 1)])
xa = helper.make_tensor_value_info("xa", f32, [1, 3, 8])
wa = numpy_helper.from_array(np.zeros((8, 24), np.float32), "wa")
pa = helper.make_tensor_value_info("past", f32, [2, 1, 2, 0, 4])
save("attention_past", [helper.make_node("Attention", ["xa", "wa", "", "", "past"], ["ya"], name="attn",
                                         domain="com.microsoft", num_heads=2)],
     [xa, pa], [helper.make_tensor_value_info("ya", f32, None)], [wa], domains=[("com.microsoft", 1)])
np.savez(os.path.join(out, "good_inputs.npz"), x=np.ones((1, 4), np.float32))
np.savez(os.path.join(out, "wrong_shape.npz"), x=np.ones((2, 4), np.float32))
np.savez(os.path.join(out, "wrong_dtype.npz"), x=np.ones((1, 4), np.float64))
np.savez(os.path.join(out, "wrong_name.npz"), z=np.ones((1, 4), np.float32))
open(os.path.join(out, "not_a_package.tar"), "w").write("hello\n")
