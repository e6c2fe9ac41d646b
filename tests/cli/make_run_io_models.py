#!/usr/bin/env python3
"""make_run_io_models.py DIR: models whose inputs and outputs test `mlc run`'s .npz handling, each with
NAME.onnx, NAME_inputs.npz, NAME_ref.npz (and NAME_freeze.npz where inputs are bound at compile time):
- bf16_mul: bfloat16 in and out; the .npz holds float32 (numpy has no bfloat16), the reference is rounded to
  bfloat16 as the model computes it;
- output_names: graph outputs that are a constant from an If branch, inference Dropout's mask (a constant), an
  input, and one value under two names; every output must keep its ONNX name;
- bf16_range: Range over bfloat16 bounds bound with --freeze-inputs from float32 values."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def bf16_round(x):  # float32 -> nearest-even bfloat16, as float32
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def save(name, graph, opset, inputs, ref, freeze=None):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", **inputs)
    np.savez(f"{out}/{name}_ref.npz", **ref)
    if freeze is not None:
        np.savez(f"{out}/{name}_freeze.npz", **freeze)


rng = np.random.default_rng(7)
V = helper.make_tensor_value_info

# bfloat16 through the .npz files
x = bf16_round(rng.standard_normal(64).astype(np.float32) * 3)
g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["y"])], "bf16_mul",
                      [V("x", TensorProto.BFLOAT16, [64])], [V("y", TensorProto.BFLOAT16, [64])])
save("bf16_mul", g, 14, {"x": x}, {"y": bf16_round(x * x)})

# output names
then_c = helper.make_node("Constant", [], ["then_out"], value=numpy_helper.from_array(np.arange(3, dtype=np.float32)))
else_c = helper.make_node("Constant", [], ["else_out"], value=numpy_helper.from_array(-np.ones(3, np.float32)))
branch = lambda n, nm: helper.make_graph([n], nm, [], [V(n.output[0], TensorProto.FLOAT, [3])])
nodes = [
    helper.make_node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array(True))),
    helper.make_node("If", ["cond"], ["res"], then_branch=branch(then_c, "then"), else_branch=branch(else_c, "else")),
    helper.make_node("Dropout", ["x"], ["dropped", "mask"]),
    helper.make_node("Relu", ["x"], ["r"]),
    helper.make_node("Identity", ["r"], ["r_again"]),
]
xo = rng.standard_normal((2, 3)).astype(np.float32)
g = helper.make_graph(nodes, "output_names", [V("x", TensorProto.FLOAT, [2, 3])],
                      [V("res", TensorProto.FLOAT, [3]), V("mask", TensorProto.BOOL, [2, 3]),
                       V("dropped", TensorProto.FLOAT, [2, 3]), V("x", TensorProto.FLOAT, [2, 3]),
                       V("r", TensorProto.FLOAT, [2, 3]), V("r_again", TensorProto.FLOAT, [2, 3])])
r = np.maximum(xo, 0)
save("output_names", g, 13, {"x": xo},
     {"res": np.arange(3, dtype=np.float32), "mask": np.ones((2, 3), bool), "dropped": xo, "x": xo, "r": r,
      "r_again": r})

# bfloat16 values bound at compile time from float32
g = helper.make_graph([helper.make_node("Range", ["s", "l", "d"], ["y"])], "bf16_range",
                      [V(n, TensorProto.BFLOAT16, []) for n in "sld"], [V("y", TensorProto.BFLOAT16, [10])])
s, l, d = np.float32(1.5), np.float32(9), np.float32(0.75)
save("bf16_range", g, 13, {"s": s, "l": l, "d": d}, {"y": bf16_round(np.arange(1.5, 9, 0.75, dtype=np.float32))},
     freeze={"s": s, "l": l, "d": d})
with open(f"{out}/models.txt", "w") as f:
    f.write("bf16_mul output_names bf16_range\n")
