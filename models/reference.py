"""A small numpy interpreter for the ops of the models in models/, to compute reference outputs.
Independent of mlc: written from the ONNX operator definitions, float64 accumulation."""
import numpy as np
from onnx import numpy_helper


def _attrs(node):
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pad_nchw(x, pads, value=0.0):
    n = len(pads) // 2
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)]
    return np.pad(x, width, constant_values=value)


def conv(x, w, b, a):
    s = a.get("strides", [1, 1])
    g = a.get("group", 1)
    x = _pad_nchw(x, a.get("pads", [0, 0, 0, 0]))
    n, c, h, wd = x.shape
    co, ci, kh, kw = w.shape
    oh, ow = (h - kh) // s[0] + 1, (wd - kw) // s[1] + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = x[:, :, i:i + s[0] * oh:s[0], j:j + s[1] * ow:s[1]]
    cols = cols.reshape(n, g, c // g, kh, kw, oh, ow)
    wg = w.astype(np.float64).reshape(g, co // g, ci, kh, kw)
    y = np.einsum("ngckhxy,gockh->ngoxy", cols, wg, optimize=True).reshape(n, co, oh, ow)
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def maxpool(x, a):
    k, s = a["kernel_shape"], a.get("strides", [1, 1])
    x = _pad_nchw(x, a.get("pads", [0, 0, 0, 0]), -np.inf)
    n, c, h, w = x.shape
    oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    y = np.full((n, c, oh, ow), -np.inf)
    for i in range(k[0]):
        for j in range(k[1]):
            y = np.maximum(y, x[:, :, i:i + s[0] * oh:s[0], j:j + s[1] * ow:s[1]])
    return y


def run(model, feeds):
    env = {k: v.astype(np.float64) for k, v in feeds.items()}
    for t in model.graph.initializer:
        env[t.name] = numpy_helper.to_array(t).astype(np.float64)
    for node in model.graph.node:
        a = _attrs(node)
        x = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Conv":
            y = conv(x[0], x[1], x[2] if len(x) > 2 else None, a)
        elif op == "Relu":
            y = np.maximum(x[0], 0)
        elif op == "MaxPool":
            y = maxpool(x[0], a)
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "GlobalAveragePool":
            y = x[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            ax = a.get("axis", 1)
            y = x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)
        elif op == "Gemm":
            A = x[0].T if a.get("transA", 0) else x[0]
            B = x[1].T if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(x) > 2 and x[2] is not None:
                y = y + a.get("beta", 1.0) * x[2]
        elif op == "BatchNormalization":
            sh = (1, -1) + (1,) * (x[0].ndim - 2)
            y = (x[0] - x[3].reshape(sh)) / np.sqrt(x[4].reshape(sh) + a.get("epsilon", 1e-5)) * x[1].reshape(sh) \
                + x[2].reshape(sh)
        elif op == "Clip":
            y = np.clip(x[0], x[1], x[2])
        elif op == "MatMul":
            y = x[0] @ x[1]
        elif op == "Transpose":
            y = np.transpose(x[0], a["perm"])
        elif op == "Reshape":
            y = x[0].reshape([int(d) for d in x[1]])
        elif op == "Softmax":
            e = np.exp(x[0] - x[0].max(axis=a.get("axis", -1), keepdims=True))
            y = e / e.sum(axis=a.get("axis", -1), keepdims=True)
        elif op == "ReduceMean":
            y = x[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))
        elif op in ("Sub", "Mul", "Div", "Pow"):
            y = {"Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power}[op](x[0], x[1])
        elif op == "Sqrt":
            y = np.sqrt(x[0])
        elif op == "Erf":
            from math import erf
            y = np.vectorize(erf)(x[0])
        else:
            raise NotImplementedError(op)
        env[node.output[0]] = y
    return {o.name: env[o.name].astype(np.float32) for o in model.graph.output}
