#!/usr/bin/env python3
"""Writes the test models of mlc with random (seeded) weights, using onnx.helper only:

  cnn_small.onnx     conv-relu-maxpool x2, flatten, gemm-relu, gemm   (input 1x3x32x32)
  resnet18.onnx      ResNet-18-shaped: 7x7/2 stem, maxpool, 4 stages of 2 basic blocks, GAP, FC 1000 (1x3x224x224)
  resnet18_bn.onnx   the same with BatchNormalization after every (bias-free) conv, as exported for inference
  mobilenet_v2.onnx  MobileNetV2-shaped inverted residual blocks (1x1 expand, 3x3 depthwise, 1x1 project,
                     BatchNorm, Clip 0..6), input 1x3x96x96
  transformer.onnx   2-layer transformer encoder (d 64, 4 heads, seq 32, GELU via Erf, LayerNorm decomposed
                     into ReduceMean/Sub/Pow/Sqrt/Div as torch exports it)

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

    def inits_i64(self, value):
        name = self.fresh("s")
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.int64), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.fresh(op.lower() + "_")
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def const(self, value):
        name = self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def batchnorm(self, x, c):
        r = self.rng
        params = [r.uniform(0.5, 1.5, c), r.standard_normal(c) * 0.1, r.standard_normal(c) * 0.1, r.uniform(0.5, 2, c)]
        return self.node("BatchNormalization", [x] + [self.const(p) for p in params], epsilon=1e-5)

    def conv(self, x, cin, cout, k, stride=1, pad=0, relu=True, bn=False, groups=1, relu6=False):
        w = self.weight((cout, cin // groups, k, k), cin // groups * k * k)
        y = self.node("Conv", [x, w] if bn else [x, w, self.bias(cout)], kernel_shape=[k, k], strides=[stride, stride],
                      pads=[pad] * 4, group=groups)
        if bn:
            y = self.batchnorm(y, cout)
        if relu6:
            return self.node("Clip", [y, self.const(0.0), self.const(6.0)])
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


def resnet18(bn=False):
    b = Builder("resnet18_bn" if bn else "resnet18", 2)
    x = b.conv("input", 3, 64, 7, stride=2, pad=3, bn=bn)
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = b.conv(x, cin, cout, 3, stride=stride, pad=1, bn=bn)
            y = b.conv(y, cout, cout, 3, pad=1, relu=False, bn=bn)
            sc = x if stride == 1 and cin == cout else b.conv(x, cin, cout, 1, stride=stride, relu=False, bn=bn)
            x = b.node("Relu", [b.node("Add", [y, sc])])
            cin = cout
    x = b.node("GlobalAveragePool", [x])
    x = b.node("Flatten", [x], axis=1)
    x = b.node("Gemm", [x, b.weight((1000, 512), 512), b.bias(1000)], transB=1)
    return b.model([1, 3, 224, 224], x, [1, 1000])


def mobilenet_v2():
    b = Builder("mobilenet_v2", 3)
    x = b.conv("input", 3, 16, 3, stride=2, pad=1, bn=True, relu6=True)
    cin = 16
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2), (6, 64, 2, 2)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else b.conv(x, cin, hidden, 1, bn=True, relu6=True)
            y = b.conv(y, hidden, hidden, 3, stride=stride, pad=1, bn=True, relu6=True, groups=hidden)
            y = b.conv(y, hidden, c, 1, bn=True, relu=False)
            x = b.node("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    x = b.conv(x, cin, 128, 1, bn=True, relu6=True)
    x = b.node("GlobalAveragePool", [x])
    x = b.node("Flatten", [x], axis=1)
    x = b.node("Gemm", [x, b.weight((10, 128), 128), b.bias(10)], transB=1)
    return b.model([1, 3, 96, 96], x, [1, 10])


def transformer(layers=2, d=64, heads=4, seq=32):
    b = Builder("transformer", 4)
    dh = d // heads

    def linear(x, n_in, n_out):
        return b.node("Add", [b.node("MatMul", [x, b.weight((n_in, n_out), n_in)]), b.bias(n_out)])

    def layernorm(x):
        mean = b.node("ReduceMean", [x], axes=[-1])
        xc = b.node("Sub", [x, mean])
        var = b.node("ReduceMean", [b.node("Pow", [xc, b.const(2.0)])], axes=[-1])
        y = b.node("Div", [xc, b.node("Sqrt", [b.node("Add", [var, b.const(1e-5)])])])
        return b.node("Add", [b.node("Mul", [y, b.const(b.rng.uniform(0.5, 1.5, d))]), b.bias(d)])

    def heads_first(x):
        r = b.node("Reshape", [x, b.inits_i64([1, seq, heads, dh])])
        return b.node("Transpose", [r], perm=[0, 2, 1, 3])

    x = "input"
    for _ in range(layers):
        q, k, v = (heads_first(linear(x, d, d)) for _ in range(3))
        kt = b.node("Transpose", [k], perm=[0, 1, 3, 2])
        scores = b.node("Div", [b.node("MatMul", [q, kt]), b.const(float(np.sqrt(dh)))])
        att = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), v])
        att = b.node("Reshape", [b.node("Transpose", [att], perm=[0, 2, 1, 3]), b.inits_i64([1, seq, d])])
        x = layernorm(b.node("Add", [x, linear(att, d, d)]))
        h = linear(x, d, 4 * d)
        gelu = b.node("Mul", [b.node("Mul", [h, b.node("Add", [b.node("Erf", [b.node("Div", [h, b.const(1.4142135)])]),
                                                              b.const(1.0)])]), b.const(0.5)])
        x = layernorm(b.node("Add", [x, linear(gelu, 4 * d, d)]))
    return b.model([1, seq, d], x, [1, seq, d])


MODELS = {"cnn_small": cnn_small, "resnet18": resnet18, "resnet18_bn": lambda: resnet18(bn=True),
          "mobilenet_v2": mobilenet_v2, "transformer": transformer}


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
