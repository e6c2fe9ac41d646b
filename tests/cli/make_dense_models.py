#!/usr/bin/env python3
"""Small ONNX models whose products AlterOpLayout turns into nn.dense_packed (weights packed [N/bn][K][bn]),
each with inputs and a numpy reference computed here in float64: make_dense_models.py OUT_DIR writes
NAME.onnx, NAME_inputs.npz and NAME_ref.npz per case and prints the case names. Cases: N a multiple of the
block (16) and not (10, 19, 37: zero-padded blocks), M = 1 (matrix-vector) and M > 1 (5, 12, 128 rows, 197
rows: a prime, padded to 200 in the accumulator, and inputs with two or three row axes, NHWC-like: the tile
spans rows of the last), Gemm with transB = 0 and 1, MatMul with a [K, N] weight, and fused epilogues
(bias + relu, bias + residual add, GELU: a diamond, an add broadcasting to more rows); products of two run-time operands
(bmm_*: nn.batch_matmul with guarded row / column tiles); Einsum products (ein_*, einx_*: see below); then
softmax rows."""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
F = TensorProto.FLOAT


def save(name, nodes, xs, inits, ref):
    inputs = [helper.make_tensor_value_info(k, F, list(v.shape)) for k, v in xs.items()]
    outputs = [helper.make_tensor_value_info("y", F, list(ref.shape))]
    g = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    np.savez(os.path.join(out, name + "_inputs.npz"), **xs)
    np.savez(os.path.join(out, name + "_ref.npz"), y=ref.astype(np.float32))
    print(name)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def relu(v):
    return np.maximum(v, 0)


# Gemm + Relu: y = relu(x W^T + b) (transB = 1: W [N, K]) or relu(x W + b) (transB = 0: W [K, N])
for m, k, n in [(1, 64, 32), (1, 40, 10), (5, 37, 19), (12, 48, 37), (128, 64, 48), (197, 40, 37)]:
    for tb in (0, 1):
        x, w, b = f32(m, k), f32(n, k) if tb else f32(k, n), f32(n)
        wt = w.T if tb else w
        ref = relu(x.astype(np.float64) @ wt.astype(np.float64) + b)
        save(f"gemm_relu_m{m}_k{k}_n{n}_tb{tb}",
             [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="gemm", transB=tb),
              helper.make_node("Relu", ["g"], ["y"], name="relu")], {"x": x}, {"w": w, "b": b}, ref)

# MatMul of a rank-3 input with a [K, N] weight + bias + a residual add (two row axes when both are > 1)
for shape, n in [((1, 16, 32), 32), ((4, 3, 24), 24), ((2, 1, 16), 16), ((1, 197, 24), 24), ((1, 197, 96), 96),
                 ((1, 7, 7, 32), 32), ((2, 6, 10, 24), 24)]:
    k = shape[-1]
    x, w, b = f32(*shape), f32(k, n), f32(n)
    ref = x.astype(np.float64) @ w.astype(np.float64) + b + x
    save("matmul_residual_" + "x".join(map(str, shape)),
         [helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
          helper.make_node("Add", ["mm", "b"], ["mb"], name="bias"),
          helper.make_node("Add", ["mb", "x"], ["y"], name="residual")], {"x": x}, {"w": w, "b": b}, ref)

# GELU (erf form, as torch exports it) after a MatMul + bias: the product's value is read twice (x * ...), a
# diamond that FuseOps joins into the product's kernel
x, w, b = f32(1, 50, 64), f32(64, 96), f32(96)
h = x.astype(np.float64) @ w.astype(np.float64) + b
erf = np.vectorize(math.erf)
save("matmul_gelu_1x50x64_n96",
     [helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
      helper.make_node("Add", ["mm", "b"], ["h"], name="bias"),
      helper.make_node("Div", ["h", "sqrt2"], ["hs"], name="div"),
      helper.make_node("Erf", ["hs"], ["e"], name="erf"),
      helper.make_node("Add", ["e", "one"], ["e1"], name="add1"),
      helper.make_node("Mul", ["h", "e1"], ["he"], name="mul"),
      helper.make_node("Mul", ["he", "half"], ["y"], name="half")], {"x": x},
     {"w": w, "b": b, "sqrt2": np.float32(math.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)},
     h * (erf(h / math.sqrt(2)) + 1) * 0.5)

# an epilogue that broadcasts the product to a larger shape: the accumulator is computed whole, not tiled
x, w, c = f32(1, 24), f32(24, 16), f32(3, 16)
save("matmul_broadcast_add", [helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
                              helper.make_node("Add", ["mm", "c"], ["y"], name="add")], {"x": x}, {"w": w, "c": c},
     x.astype(np.float64) @ w.astype(np.float64) + c)

# MatMul with a rank-1 input (a vector times a matrix): y[N]
x, w = f32(40), f32(40, 21)
save("matmul_vector_k40_n21", [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], {"x": x}, {"w": w},
     x.astype(np.float64) @ w.astype(np.float64))

# products of two run-time operands (nn.batch_matmul, not packed) whose M or N has no divisor of 4 or more
# and is no multiple of the vector lanes: a ViT's 197 tokens (attention scores q k^T and their product with v)
for name, a, b in [("bmm_qk_197", (3, 197, 64), (3, 64, 197)), ("bmm_av_197", (3, 197, 197), (3, 197, 64)),
                   ("bmm_m50_n35", (2, 50, 20), (2, 20, 35))]:
    x, w = f32(*a), f32(*b)
    save(name, [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], {"x": x, "w": w}, {},
         x.astype(np.float64) @ w.astype(np.float64))

# Einsum: LowerEinsum makes the two-operand products nn.batch_matmul / nn.matmul (ein_*), with transposes where
# the labels are out of order, several labels merged into one GEMM axis, a batch label broadcast from extent 1,
# a constant operand (packed into nn.dense_packed), and an outer product (no contracted label); the others keep
# the generic einsum (einx_*: a diagonal, a label summed out of one operand, three operands). The test checks
# which form each got and compiles each with LowerEinsum disabled too.
def ein(name, eq, shapes, const=False):
    xs = {f"x{i}": f32(*s) for i, s in enumerate(shapes)}
    inits = {}
    if const:
        inits["x1"] = xs.pop("x1")
    ops = [xs.get(f"x{i}", inits.get(f"x{i}")) for i in range(len(shapes))]
    ref = np.einsum(eq, *[o.astype(np.float64) for o in ops])
    save(name, [helper.make_node("Einsum", [f"x{i}" for i in range(len(shapes))], ["y"], name="einsum", equation=eq)],
         xs, inits, np.asarray(ref))


ein("ein_maxvit_qk", "BGHID,BGHJD->BGHIJ", [(1, 4, 2, 49, 32), (1, 4, 2, 49, 32)])
ein("ein_maxvit_av", "BGHIJ,BGHJD->BGHID", [(1, 4, 2, 49, 49), (1, 4, 2, 49, 32)])
ein("ein_bhqd_out_of_order", "bqhd,bkhd->bhqk", [(2, 10, 3, 16), (2, 12, 3, 16)])
ein("ein_merge_groups", "abij,jkbc->aikc", [(3, 2, 5, 4), (4, 6, 2, 7)])
ein("ein_a_transposed", "bki,bkj->bij", [(2, 20, 9), (2, 20, 17)])
ein("ein_broadcast_batch", "bij,bjk->bik", [(1, 6, 8), (5, 8, 3)])
ein("ein_const_weight", "bsd,de->bse", [(2, 7, 24), (24, 40)], const=True)
ein("ein_outer", "i,j->ij", [(13,), (9,)])
ein("ein_inner", "i,i", [(33,), (33,)])
ein("ein_ellipsis", "...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)])
ein("einx_diagonal", "bii,bij->bj", [(2, 6, 6), (2, 6, 5)])
ein("einx_sum_out", "ij,jk->k", [(4, 5), (5, 6)])
ein("einx_three", "ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)])

# Softmax / LogSoftmax over a last axis of at least the vector lanes (the row form of nn.softmax: partial
# max/sum vectorized per row, exp once, then the elements after the last whole vector: 20, 49 as in a Swin
# window, 197 as in a ViT) and one shorter (the generic form); scores up to +-30
def softmax_ref(v, log):
    v = v.astype(np.float64)
    z = v - v.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True)) if log else np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)


for shape, op in [((4, 8, 32), "Softmax"), ((2, 128), "Softmax"), ((3, 64), "LogSoftmax"), ((5, 20), "Softmax"),
                  ((2, 3, 7, 49), "Softmax"), ((3, 197), "LogSoftmax"), ((4, 9), "Softmax")]:
    x = (f32(*shape) * 10).astype(np.float32)
    save(f"softmax_{op.lower()}_" + "x".join(map(str, shape)), [helper.make_node(op, ["x"], ["y"], name="sm", axis=-1)],
         {"x": x}, {}, softmax_ref(x, op == "LogSoftmax"))
