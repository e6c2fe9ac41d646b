#!/usr/bin/env python3
"""Writes the test models of mlc with random (seeded) weights, using onnx.helper only:

  cnn_small.onnx   conv-relu-maxpool x2, flatten, gemm-relu, gemm   (input 1x3x32x32)
  resnet18.onnx    ResNet-18-shaped: 7x7/2 stem, maxpool, 4 stages of 2 basic blocks, GAP, FC 1000 (1x3x224x224)

With --reference, also writes MODEL_inputs.npz and MODEL_ref.npz computed by models/reference.py (numpy).
Usage: make_models.py OUT_DIR [--only cnn_small,resnet18] [--reference]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, name, seed):
        self.nodes, self.inits, self.name, self.k = [], [], name, 0
        self.rng = np.random.default_rng(seed)

    def fresh(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def weight(self, shape, fan_in):
        name = self.fresh("w")
        w = (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def bias(self, n):
        name = self.fresh("b")
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(n) * 0.05).astype(np.float32), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.fresh(op.lower() + "_")
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, pad=0, relu=True):
        y = self.node("Conv", [x, self.weight((cout, cin, k, k), cin * k * k), self.bias(cout)],
                      kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
        return self.node("Relu", [y]) if relu else y

    def model(self, x_shape, out, out_shape):
        g = helper.make_graph(self.nodes, self.name,
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="mlc-models")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def cnn_small():
    b = Builder("cnn_small", 1)
    x = b.conv("input", 3, 16, 3, pad=1)
    x = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.conv(x, 16, 32, 3, pad=1)
    x = b.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Flatten", [x], axis=1)
    x = b.node("Gemm", [x, b.weight((64, 32 * 8 * 8), 32 * 8 * 8), b.bias(64)], transB=1)
    x = b.node("Relu", [x])
    x = b.node("Gemm", [x, b.weight((10, 64), 64), b.bias(10)], transB=1)
    return b.model([1, 3, 32, 32], x, [1, 10])


def resnet18():
    b = Builder("resnet18", 2)
    x = b.conv("input", 3, 64, 7, stride=2, pad=3)
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = b.conv(x, cin, cout, 3, stride=stride, pad=1)
            y = b.conv(y, cout, cout, 3, pad=1, relu=False)
            sc = x if stride == 1 and cin == cout else b.conv(x, cin, cout, 1, stride=stride, relu=False)
            x = b.node("Relu", [b.node("Add", [y, sc])])
            cin = cout
    x = b.node("GlobalAveragePool", [x])
    x = b.node("Flatten", [x], axis=1)
    x = b.node("Gemm", [x, b.weight((1000, 512), 512), b.bias(1000)], transB=1)
    return b.model([1, 3, 224, 224], x, [1, 1000])


MODELS = {"cnn_small": cnn_small, "resnet18": resnet18}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--reference", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import reference
    for name in args.only.split(","):
        m = MODELS[name]()
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(m, path)
        if args.reference:
            shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
            x = np.random.default_rng(7).uniform(-1, 1, shape).astype(np.float32)
            np.savez(os.path.join(args.out, name + "_inputs.npz"), input=x)
            outs = reference.run(m, {"input": x})
            np.savez(os.path.join(args.out, name + "_ref.npz"), **outs)
        print(path)


if __name__ == "__main__":
    main()
