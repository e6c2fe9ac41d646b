#!/usr/bin/env python3
"""make_reduce_models.py DIR: small ONNX models for the reductions over the innermost axis (reduce.c's row
form: the last dim split by the vector lanes, with a scalar remainder when they do not divide it) and for
layer norm, both as the LayerNormalization op and in the decomposed form that LayerNormFusion rewrites
(ReduceMean, Sub, Pow or Mul, ReduceMean, Add, Sqrt, Div, Mul, Add). Each model has random inputs
(NAME_inputs.npz) and a float64 numpy reference (NAME_ref.npz). Used by tests/cli/test_reduce.sh; the names
are listed one per line in DIR/models.txt, the decomposed layer norms (which must compile to nn.layer_norm)
in DIR/layernorm.txt."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(5)
names, fused = [], []


def save(name, nodes, x, inits, ref, opset=13, ydtype=None):
    et = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(x.dtype)]
    yt = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(ydtype or x.dtype)]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", et, list(x.shape))],
                          [helper.make_tensor_value_info("y", yt, None)], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", y=np.asarray(ref).astype(ydtype or x.dtype))
    names.append(name)


def reduce(name, op, x, axes, keepdims, ref_fn):
    inits, ins, attrs = [], ["x"], dict(keepdims=keepdims)
    if axes is not None:
        if op == "ReduceSum":  # opset 13: ReduceSum's axes are an input, the others' an attribute
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            ins.append("axes")
        else:
            attrs["axes"] = axes
    ax = tuple(a % x.ndim for a in axes) if axes is not None else None
    ref = ref_fn(x.astype(np.float64) if x.dtype.kind == "f" else x, ax, keepdims != 0)
    save(name, [helper.make_node(op, ins, ["y"], **attrs)], x, inits, ref)


def f32(*shape, lo=None, hi=None):
    if lo is not None:
        return rng.uniform(lo, hi, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def lse(x, a, k):
    m = np.max(x, axis=a, keepdims=True)
    r = np.log(np.sum(np.exp(x - m), axis=a, keepdims=True)) + m
    return r if k else np.squeeze(r, axis=a)


reduce("sum_rem", "ReduceSum", f32(3, 5, 37), [-1], 1, lambda x, a, k: np.sum(x, axis=a, keepdims=k))
reduce("mean_rows", "ReduceMean", f32(64, 256), [1], 0, lambda x, a, k: np.mean(x, axis=a, keepdims=k))
reduce("max_two_axes", "ReduceMax", f32(4, 20, 33), [1, 2], 1, lambda x, a, k: np.max(x, axis=a, keepdims=k))
reduce("min_all", "ReduceMin", f32(6, 40), None, 0, lambda x, a, k: np.min(x, axis=a, keepdims=k))
reduce("prod_rem", "ReduceProd", f32(5, 19, lo=0.9, hi=1.1), [1], 1, lambda x, a, k: np.prod(x, axis=a, keepdims=k))
reduce("l1_rows", "ReduceL1", f32(9, 48), [-1], 0, lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k))
reduce("l2_rem", "ReduceL2", f32(2, 3, 70), [2], 1, lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)))
reduce("sumsq_rows", "ReduceSumSquare", f32(4, 32), [1], 1, lambda x, a, k: np.sum(x * x, axis=a, keepdims=k))
reduce("logsum_rem", "ReduceLogSum", f32(3, 21, lo=0.1, hi=2.0), [1], 0,
       lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)))
reduce("logsumexp_rows", "ReduceLogSumExp", f32(7, 50) * 10, [1], 1, lse)
reduce("sum_int32", "ReduceSum", rng.integers(-100, 100, (3, 40)).astype(np.int32), [1], 1,
       lambda x, a, k: np.sum(x, axis=a, keepdims=k))
# many short rows: the row form's scratch (rows x lanes) would pass 4 MiB, so the direct form
reduce("sum_many_short_rows", "ReduceSum", f32(66000, 16), [1], 1, lambda x, a, k: np.sum(x, axis=a, keepdims=k))
reduce("mean_outer_axis", "ReduceMean", f32(40, 6), [0], 1, lambda x, a, k: np.mean(x, axis=a, keepdims=k))


def layernorm_ref(x, scale, bias, eps):
    x = x.astype(np.float64)
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y


def layernorm_decomposed(name, shape, square="pow", scale=True, bias=True, eps=1e-5):
    """the torch.onnx export of nn.LayerNorm at opset < 17"""
    x = f32(*shape) * 3 + 1
    h = shape[-1]
    s = f32(h) if scale else None
    b = f32(h) if bias else None
    inits = [numpy_helper.from_array(np.array(eps, np.float32), "eps")]
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]),
             helper.make_node("Sub", ["x", "m"], ["d"])]
    if square == "pow":
        inits.append(numpy_helper.from_array(np.array(2, np.float32), "two"))
        nodes.append(helper.make_node("Pow", ["d", "two"], ["sq"]))
    else:
        nodes.append(helper.make_node("Mul", ["d", "d"], ["sq"]))
    nodes += [helper.make_node("ReduceMean", ["sq"], ["v"], axes=[-1]),
              helper.make_node("Add", ["v", "eps"], ["ve"]),
              helper.make_node("Sqrt", ["ve"], ["sd"]),
              helper.make_node("Div", ["d", "sd"], ["n" if scale or bias else "y"])]
    last = "n"
    if scale:
        inits.append(numpy_helper.from_array(s, "scale"))
        nodes.append(helper.make_node("Mul", [last, "scale"], ["ns" if bias else "y"]))
        last = "ns"
    if bias:
        inits.append(numpy_helper.from_array(b, "bias"))
        nodes.append(helper.make_node("Add", [last, "bias"], ["y"]))
    save(name, nodes, x, inits, layernorm_ref(x, s, b, eps))
    fused.append(name)


layernorm_decomposed("ln_pow_scale_bias", (2, 8, 64))
layernorm_decomposed("ln_mul_scale", (3, 50), square="mul", bias=False, eps=1e-12)
layernorm_decomposed("ln_pow_plain", (4, 5, 20), scale=False, bias=False)
layernorm_decomposed("ln_pow_small_row", (6, 7), eps=1e-3)
x = f32(4, 48) * 2
s, b = f32(48), f32(48)
save("ln_op", [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5)], x,
     [numpy_helper.from_array(s, "scale"), numpy_helper.from_array(b, "bias")], layernorm_ref(x, s, b, 1e-5), opset=17)
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(names) + "\n")
with open(f"{out}/layernorm.txt", "w") as f:
    f.write("\n".join(fused) + "\n")
