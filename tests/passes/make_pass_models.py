#!/usr/bin/env python3
"""Small ONNX models, one per graph pass rule, for the golden pass tests (tests/passes/golden.sh).
Each model is named after the pass it exercises; the golden file states the rule on its first line."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(3)
F = TensorProto.FLOAT


def save(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))


def const(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


x4 = helper.make_tensor_value_info("x", F, [1, 4])
y4 = helper.make_tensor_value_info("y", F, [1, 4])
save("simplify_inference", [helper.make_node("Identity", ["x"], ["a"], name="id"),
                            helper.make_node("Relu", ["a"], ["b"], name="relu"),
                            helper.make_node("Dropout", ["b"], ["y"], name="drop")], [x4], [y4])
save("eliminate_common_subexpr", [helper.make_node("Relu", ["x"], ["a"], name="relu_a"),
                                  helper.make_node("Relu", ["x"], ["b"], name="relu_b"),
                                  helper.make_node("Add", ["a", "b"], ["y"], name="add")], [x4], [y4])
save("fold_constant", [helper.make_node("Add", ["c1", "c2"], ["c"], name="const_add"),
                       helper.make_node("Mul", ["x", "c"], ["y"], name="mul")], [x4], [y4],
     [const("c1", [1, 4]), const("c2", [1, 4])])
save("dead_code_elim", [helper.make_node("Relu", ["x"], ["y"], name="used"),
                        helper.make_node("Sigmoid", ["x"], ["unused"], name="unused")], [x4], [y4])
xi = helper.make_tensor_value_info("x", F, [1, 3, 8, 8])
yo = helper.make_tensor_value_info("y", F, [1, 8, 8, 8])
save("fold_scale_axis", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["bn"], name="bn"),
    helper.make_node("Relu", ["bn"], ["y"], name="relu")], [xi], [yo],
    [const("w", [8, 3, 3, 3]), const("b", [8]), const("g", [8]), const("beta", [8]), const("mean", [8]),
     numpy_helper.from_array(rng.uniform(0.5, 2, [8]).astype(np.float32), "var")])
save("fuse_ops", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("Conv", ["r", "w2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
    helper.make_node("Add", ["c2", "r"], ["s"], name="residual"),
    helper.make_node("Relu", ["s"], ["y"], name="relu2")], [xi], [yo],
    [const("w", [8, 3, 3, 3]), const("b", [8]), const("w2", [8, 8, 1, 1])])
# a diamond: the conv's value read by the sigmoid and the multiply (x * sigmoid(x)) joins both into its group; the
# second conv's value read by a multiply and a reduction does not (the reduction is no elementwise epilogue)
save("fuse_diamond", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Sigmoid", ["c"], ["sg"], name="sigmoid"),
    helper.make_node("Mul", ["c", "sg"], ["silu"], name="silu"),
    helper.make_node("Conv", ["silu", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
    helper.make_node("ReduceMean", ["c2"], ["mean"], name="mean", axes=[2, 3], keepdims=1),
    helper.make_node("Mul", ["c2", "mean"], ["y"], name="scale")], [xi], [yo],
    [const("w", [8, 3, 3, 3]), const("b", [8]), const("w2", [8, 8, 1, 1]), const("b2", [8])])
x3 = helper.make_tensor_value_info("x", F, [2, 3, 4])
y3 = helper.make_tensor_value_info("y", F, [4, 1, 3])
save("fuse_reduce", [helper.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[2, 1, 0]),
                     helper.make_node("ReduceSum", ["t", "axes"], ["s"], name="sum", keepdims=1),
                     helper.make_node("Div", ["s", "two"], ["y"], name="div")], [x3],
     [helper.make_tensor_value_info("y", F, [4, 3, 1])],
     [numpy_helper.from_array(np.array([2], np.int64), "axes"), numpy_helper.from_array(np.float32(2.0), "two")])
xl = helper.make_tensor_value_info("x", F, [1, 3, 16, 16])
# conv3 has 16 output channels: with 32 its 8x8 output would be 16 F(2x2) tiles, and Winograd (see
# alter_op_layout_winograd)
save("convert_layout_nchwc", [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     strides=[2, 2]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Mul", ["r1", "scale"], ["m1"], name="scale"),
    helper.make_node("Conv", ["m1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="conv3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("MaxPool", ["c3"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p", "w4"], ["y"], name="conv4", kernel_shape=[1, 1])], [xl],
    [helper.make_tensor_value_info("y", F, [1, 16, 4, 4])],
    [const("w1", [16, 3, 3, 3]), const("b1", [16]), const("scale", [16, 1, 1]), const("w2", [32, 16, 1, 1]),
     const("b2", [32]), const("w3", [16, 32, 3, 3]), const("b3", [16]), const("w4", [16, 16, 1, 1])])
save("convert_layout_nchwc_pointwise", [
    helper.make_node("Conv", ["x", "w1"], ["c1"], name="expand", kernel_shape=[1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("Conv", ["r1", "w2"], ["c2"], name="project", kernel_shape=[1, 1]),
    helper.make_node("MaxPool", ["c2"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])],
    [helper.make_tensor_value_info("x", F, [1, 16, 8, 8])], [helper.make_tensor_value_info("y", F, [1, 16, 4, 4])],
    [const("w1", [32, 16, 1, 1]), const("w2", [16, 32, 1, 1])])
xd = helper.make_tensor_value_info("x", F, [2, 20])
save("alter_op_layout_dense", [
    helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="gemm", transB=1),
    helper.make_node("Relu", ["g"], ["r"], name="relu"),
    helper.make_node("MatMul", ["r", "w2"], ["y"], name="matmul")], [xd],
    [helper.make_tensor_value_info("y", F, [2, 32])],
    [const("w", [19, 20]), const("b", [19]), const("w2", [19, 32])])
xw = helper.make_tensor_value_info("x", F, [1, 32, 24, 24])
yw = helper.make_tensor_value_info("y", F, [1, 32, 12, 12])
save("alter_op_layout_winograd", [
    helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p", "w2"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
    [xw], [yw], [const("w", [32, 32, 3, 3]), const("w2", [32, 32, 3, 3])])
xdw = helper.make_tensor_value_info("x", F, [1, 8, 9, 9])
save("alter_op_layout_depthwise", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     strides=[2, 2], group=8),
    helper.make_node("Clip", ["c", "lo", "hi"], ["r"], name="relu6"),
    helper.make_node("Conv", ["r", "w2"], ["m"], name="dw_mult2", kernel_shape=[3, 3], group=8),
    helper.make_node("Conv", ["m", "w3"], ["y"], name="grouped", kernel_shape=[1, 1], group=4)], [xdw],
    [helper.make_tensor_value_info("y", F, [1, 8, 3, 3])],
    [const("w", [8, 1, 3, 3]), const("b", [8]), numpy_helper.from_array(np.float32(0.0), "lo"),
     numpy_helper.from_array(np.float32(6.0), "hi"), const("w2", [16, 1, 3, 3]), const("w3", [8, 4, 1, 1])])
xln = helper.make_tensor_value_info("x", F, [2, 4, 16])
save("layer_norm_fusion", [
    # torch's export: Pow form with scale and bias
    helper.make_node("ReduceMean", ["x"], ["m1"], name="mean1", axes=[-1]),
    helper.make_node("Sub", ["x", "m1"], ["d1"], name="sub1"),
    helper.make_node("Pow", ["d1", "two"], ["q1"], name="pow1"),
    helper.make_node("ReduceMean", ["q1"], ["v1"], name="var1", axes=[-1]),
    helper.make_node("Add", ["v1", "eps"], ["e1"], name="add_eps1"),
    helper.make_node("Sqrt", ["e1"], ["s1"], name="sqrt1"),
    helper.make_node("Div", ["d1", "s1"], ["n1"], name="div1"),
    helper.make_node("Mul", ["n1", "gamma"], ["g1"], name="scale1"),
    helper.make_node("Add", ["g1", "beta"], ["y1"], name="bias1"),
    # Mul form, eps first, no scale or bias; its normalised value is also read by a Relu, so the Add after
    # it stays outside the fused op
    helper.make_node("ReduceMean", ["y1"], ["m2"], name="mean2", axes=[2]),
    helper.make_node("Sub", ["y1", "m2"], ["d2"], name="sub2"),
    helper.make_node("Mul", ["d2", "d2"], ["q2"], name="square2"),
    helper.make_node("ReduceMean", ["q2"], ["v2"], name="var2", axes=[-1]),
    helper.make_node("Add", ["eps", "v2"], ["e2"], name="add_eps2"),
    helper.make_node("Sqrt", ["e2"], ["s2"], name="sqrt2"),
    helper.make_node("Div", ["d2", "s2"], ["n2"], name="div2"),
    helper.make_node("Relu", ["n2"], ["r2"], name="relu"),
    helper.make_node("Add", ["n2", "r2"], ["y2"], name="residual"),
    # not a layer norm: the statistics over axis 1
    helper.make_node("ReduceMean", ["y2"], ["m3"], name="mean3", axes=[1]),
    helper.make_node("Sub", ["y2", "m3"], ["d3"], name="sub3"),
    helper.make_node("Mul", ["d3", "d3"], ["q3"], name="square3"),
    helper.make_node("ReduceMean", ["q3"], ["v3"], name="var3", axes=[1]),
    helper.make_node("Add", ["v3", "eps"], ["e3"], name="add_eps3"),
    helper.make_node("Sqrt", ["e3"], ["s3"], name="sqrt3"),
    helper.make_node("Div", ["d3", "s3"], ["y"], name="div3")], [xln],
    [helper.make_tensor_value_info("y", F, [2, 4, 16])],
    [numpy_helper.from_array(np.float32(2.0), "two"), numpy_helper.from_array(np.float32(1e-5), "eps"),
     const("gamma", [16]), const("beta", [16])])
xb = helper.make_tensor_value_info("x", F, [1, 8, 8, 8])
save("convert_layout_nchwc_depthwise_pool", [
    helper.make_node("Conv", ["x", "w1"], ["e"], name="expand", kernel_shape=[1, 1]),
    helper.make_node("Relu", ["e"], ["er"], name="relu"),
    helper.make_node("Conv", ["er", "wd"], ["d"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=32),
    helper.make_node("MaxPool", ["d"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p", "w2"], ["y"], name="conv3x3", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     strides=[2, 2])], [xb],
    [helper.make_tensor_value_info("y", F, [1, 16, 2, 2])],
    [const("w1", [32, 8, 1, 1]), const("wd", [32, 1, 3, 3]), const("w2", [16, 32, 3, 3])])
save("simplify_expr", [helper.make_node("Pad", ["x", "zeros"], ["p"], name="pad_nothing", mode="constant"),
                       helper.make_node("Relu", ["p"], ["r"], name="relu"),
                       helper.make_node("Pow", ["r", "two"], ["y"], name="square")], [x4], [y4],
     [numpy_helper.from_array(np.zeros(4, np.int64), "zeros"), numpy_helper.from_array(np.float32(2.0), "two")])
xp = helper.make_tensor_value_info("x", F, [1, 4, 9, 9])
save("simplify_expr_pad_conv", [
    # Keras' ZeroPadding2D before a "VALID" strided conv and a depthwise conv: into their padding
    helper.make_node("Pad", ["x", "p_asym"], ["xp"], name="zero_pad", mode="constant"),
    helper.make_node("Conv", ["xp", "w1"], ["c1"], name="conv", kernel_shape=[3, 3], strides=[2, 2]),
    helper.make_node("Conv", ["xp", "wd"], ["c2"], name="depthwise", kernel_shape=[3, 3], group=4,
                     pads=[1, 0, 1, 0]),
    # a pad of another value, and one a pool reads too: kept
    helper.make_node("Pad", ["x", "p1", "one"], ["xq"], name="one_pad", mode="constant"),
    helper.make_node("Conv", ["xq", "w1"], ["c3"], name="conv_one", kernel_shape=[3, 3]),
    helper.make_node("Pad", ["x", "p1"], ["xr"], name="pool_pad", mode="constant"),
    helper.make_node("Conv", ["xr", "w1"], ["c4"], name="conv_pool_pad", kernel_shape=[3, 3]),
    helper.make_node("MaxPool", ["xr"], ["m"], name="pool", kernel_shape=[3, 3]),
    # torch's count_include_pad=True average pool: into its padding, counted; one with padding of its own that
    # it does not count, and one with ceil_mode: kept
    helper.make_node("Pad", ["x", "p2"], ["xa"], name="avg_pad", mode="constant"),
    helper.make_node("AveragePool", ["xa"], ["a1"], name="avg", kernel_shape=[3, 3]),
    helper.make_node("Pad", ["x", "p3"], ["xb"], name="avg_own_pad", mode="constant"),
    helper.make_node("AveragePool", ["xb"], ["a2"], name="avg_own", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Pad", ["x", "p4"], ["xc"], name="avg_ceil_pad", mode="constant"),
    helper.make_node("AveragePool", ["xc"], ["a3"], name="avg_ceil", kernel_shape=[3, 3], strides=[2, 2],
                     ceil_mode=1)], [xp],
    [helper.make_tensor_value_info(n, F, s) for n, s in (("c1", [1, 8, 4, 5]), ("c2", [1, 4, 10, 10]), ("c3", [1, 8, 9, 9]),
                                                         ("c4", [1, 8, 9, 9]), ("m", [1, 4, 9, 9]), ("a1", [1, 4, 11, 11]),
                                                         ("a2", [1, 4, 10, 10]), ("a3", [1, 4, 6, 6]))],
    [numpy_helper.from_array(np.array([0, 0, 0, 1, 0, 0, 1, 2], np.int64), "p_asym"),
     numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p1"),
     numpy_helper.from_array(np.array([0, 0, 2, 2, 0, 0, 2, 2], np.int64), "p2"),
     numpy_helper.from_array(np.array([0, 0, 1, 0, 0, 0, 0, 1], np.int64), "p3"),
     numpy_helper.from_array(np.array([0, 0, 2, 1, 0, 0, 1, 2], np.int64), "p4"),
     numpy_helper.from_array(np.float32(1.0), "one"), const("w1", [8, 4, 3, 3]), const("wd", [4, 1, 3, 3])])
xc = helper.make_tensor_value_info("x", F, [1, 8, 8, 8])
save("convert_layout_nchwc_concat", [
    helper.make_node("Conv", ["x", "w1"], ["a"], name="expand1x1", kernel_shape=[1, 1]),
    helper.make_node("Relu", ["a"], ["ar"], name="relu_a"),
    helper.make_node("Conv", ["x", "w3"], ["b"], name="expand3x3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["b"], ["br"], name="relu_b"),
    helper.make_node("Concat", ["ar", "br"], ["c"], name="concat", axis=1),
    helper.make_node("Conv", ["c", "w2"], ["d"], name="conv3x3", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                     strides=[2, 2]),
    helper.make_node("GlobalAveragePool", ["d"], ["y"], name="gap")], [xc],
    [helper.make_tensor_value_info("y", F, [1, 16, 1, 1])],
    [const("w1", [16, 8, 1, 1]), const("w3", [16, 8, 3, 3]), const("w2", [16, 32, 3, 3])])
xr = helper.make_tensor_value_info("x", F, [3, 2, 4])
save("hoist_rnn_projection", [
    helper.make_node("LSTM", ["x", "w", "r", "b"], ["y"], name="lstm", hidden_size=4, direction="bidirectional")],
    [xr], [helper.make_tensor_value_info("y", F, [3, 2, 2, 4])],
    [const("w", [2, 16, 4]), const("r", [2, 16, 4]), const("b", [2, 32])])
