#!/usr/bin/env python3
"""make_training_models.py DIR: ai.onnx.preview.training Gradient models (the derivatives of sum(y) with respect
to graph inputs, through broadcasting Add / Sub / Mul / Div, Neg, Identity, Exp, Tanh, Sigmoid, Relu, an input y
does not depend on, a constant operand), each with inputs and a torch autograd reference; names and tolerances
go to DIR/models.txt for tests/cli/run_models.sh."""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(3)
F = TensorProto.FLOAT
lines = []


def model(name, nodes, feeds, y, fn, consts=()):
    """nodes compute y from feeds (name -> array); fn computes y in torch from the same tensors"""
    xs = list(feeds)
    grads = [f"d_{x}" for x in xs]
    nodes = nodes + [helper.make_node("Gradient", xs, grads, domain="ai.onnx.preview.training", xs=xs, y=y)]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(k, F, list(v.shape)) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(y, F, None)] +
                          [helper.make_tensor_value_info(d, F, None) for d in grads],
                          [numpy_helper.from_array(v, k) for k, v in consts])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("ai.onnx.preview.training", 1)])
    onnx.save(m, f"{out}/{name}.onnx")
    ts = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in feeds.items()}
    yt = fn(**ts)
    yt.sum().backward()
    refs = {y: yt.detach().numpy().astype(np.float32)}
    refs.update({f"d_{k}": (t.grad if t.grad is not None else torch.zeros_like(t)).numpy().astype(np.float32)
                 for k, t in ts.items()})
    np.savez(f"{out}/{name}_inputs.npz", **feeds)
    np.savez(f"{out}/{name}_ref.npz", **refs)
    lines.append(f"{name}\t1e-5")


def r(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


# broadcasting: a [2, 3, 4], b [3, 1], c [4]; y = tanh(a * b - c) / (1 + sigmoid(b)) + exp(-c)
model("grad_broadcast_chain", [
    helper.make_node("Mul", ["a", "b"], ["ab"]), helper.make_node("Sub", ["ab", "c"], ["t"]),
    helper.make_node("Tanh", ["t"], ["th"]), helper.make_node("Sigmoid", ["b"], ["sb"]),
    helper.make_node("Add", ["one", "sb"], ["den"]), helper.make_node("Div", ["th", "den"], ["q"]),
    helper.make_node("Neg", ["c"], ["nc"]), helper.make_node("Exp", ["nc"], ["ec"]),
    helper.make_node("Add", ["q", "ec"], ["y"])],
    {"a": r(2, 3, 4), "b": r(3, 1), "c": r(4)}, "y",
    lambda a, b, c: torch.tanh(a * b - c) / (1 + torch.sigmoid(b)) + torch.exp(-c),
    consts=[("one", np.float32(1))])
# relu, a value used twice, identity, an input y does not depend on (zeros)
model("grad_relu_reuse_unused", [
    helper.make_node("Relu", ["a"], ["ra"]), helper.make_node("Identity", ["ra"], ["ia"]),
    helper.make_node("Mul", ["ia", "ra"], ["sq"]), helper.make_node("Div", ["sq", "b"], ["y"])],
    {"a": r(5, 6), "b": r(5, 6, lo=0.5, hi=2.0), "u": r(3)}, "y",
    lambda a, b, u: torch.relu(a) * torch.relu(a) / b)
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
