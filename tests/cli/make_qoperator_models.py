#!/usr/bin/env python3
"""make_qoperator_models.py DIR [--units] [--resnet18 SIZE] [--resnet50 SIZE] [--mobilenet-v2 SIZE] [--qdq]
[--no-ref]: int8 models in ONNX Runtime's
QOperator format (QLinearConv, QuantizeLinear and the com.microsoft contrib ops QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat, QGemm,
QLinearSoftmax, QLinearReduceMean, MatMulIntegerToFloat, DynamicQuantizeMatMul, MatMulNBits), as ONNX
Runtime's quantizer writes them (the ONNX Model Zoo's int8 models), each with an input (NAME_inputs.npz) and a
numpy reference (NAME_ref.npz) of the quantized graph: every op is its float op between DequantizeLinear and
QuantizeLinear, in float32 (QLinearConv: the exact int32 sum requantized in float64). Names go to DIR/models.txt
with the tolerance of each (largest absolute difference; rounding ties may differ by one step).

- one model per contrib op (small shapes, both uint8 and int8 data);
- qresnet18_SIZE / qresnet50_SIZE: torchvision's ResNet (random weights, batch-norm statistics calibrated on
  random data, folded into the convs) quantized per output channel (int8 weights) and per tensor (uint8
  activations, ranges from a float run), each ReLU fused as a zero point of 0, the residual adds QLinearAdd, the
  head QLinearGlobalAveragePool, Flatten and a QGemm with float output;
- qmobilenet_v2_SIZE: torchvision's MobileNetV2 likewise, its depthwise 3x3 convs QLinearConvs with group =
  channels, each ReLU6 fused as the output range [0, max], the linear bottlenecks' adds QLinearAdd;
- with --qdq also each network in the QDQ format (qdq*: float ops between DequantizeLinear and QuantizeLinear,
  ONNX Runtime's default), with the same reference."""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32


# ---------------------------------------------------------------- numpy semantics of the quantized ops

def quantize(x, s, z, dt):
    lo, hi = (0, 255) if dt == np.uint8 else (-128, 127)
    return np.clip(np.rint(x.astype(F32) / F32(s)) + int(z), lo, hi).astype(dt)


def dequantize(q, s, z):
    return ((q.astype(np.int32) - np.int32(z)).astype(F32) * F32(s)).astype(F32)


def conv_int(x, w, stride, pad, groups=1):
    """sum over (x int) * (w int) of an NCHW conv, exact in float64 (sums far below 2^53)"""
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    cols = np.empty((n, c, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
    return np.einsum("ngkhw,gok->ngohw", cols.reshape(n, groups, cg * kh * kw, oh, ow),
                     w.reshape(groups, oc // groups, cg * kh * kw).astype(np.float64)).reshape(n, oc, oh, ow) \
        .astype(np.int64)


def qlinear_conv_ref(xq, xs, xz, wq, ws, yz_dt, ys, yz, b, stride, pad, groups=1):
    acc = conv_int(xq.astype(np.int64) - int(xz), wq.astype(np.int64), stride, pad, groups) + b[None, :, None, None]
    scale = (F32(xs) * ws.astype(F32) / F32(ys)).astype(np.float64)
    lo, hi = (0, 255) if yz_dt == np.uint8 else (-128, 127)
    return np.clip(np.rint(acc * scale[None, :, None, None]) + int(yz), lo, hi).astype(yz_dt)


def qparams(lo, hi, dt):
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if dt == np.uint8:
        s = (hi - lo) / 255 or 1.0
        z = int(np.clip(round(-lo / s), 0, 255))
    else:
        s = max(hi, -lo) / 127 or 1.0
        z = 0
    return F32(s), dt(z)


class Builder:
    def __init__(self, name):
        self.name, self.nodes, self.inits, self.n = name, [], [], 0

    def const(self, v, hint):
        self.n += 1
        nm = f"{hint}_{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(v), nm))
        return nm

    def node(self, op, ins, domain="", **attrs):
        self.n += 1
        out = f"{op}_{self.n}"
        self.nodes.append(helper.make_node(op, ins, [out], name=out, domain=domain or None, **attrs))
        return out

    def save(self, path, inputs, outputs):
        g = helper.make_graph(self.nodes, self.name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
        m.ir_version = 7
        onnx.save(m, path)


# ---------------------------------------------------------------- one model per contrib op

def unit_models(out, rng, names):
    ONNX = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.float32: TensorProto.FLOAT}

    def rand_q(shape, dt):
        lo, hi = (0, 255) if dt == np.uint8 else (-128, 127)
        return rng.integers(lo, hi + 1, shape).astype(dt)

    def qp(dt):
        return F32(rng.uniform(0.01, 0.05)), dt(rng.integers(100, 150) if dt == np.uint8 else rng.integers(-20, 20))

    def save(b, name, feeds, ref, tol):
        b.nodes[-1].output[0] = "y"
        b.save(f"{out}/{name}.onnx",
               [helper.make_tensor_value_info(k, ONNX[v.dtype.type], list(v.shape)) for k, v in feeds.items()],
               [helper.make_tensor_value_info("y", ONNX.get(ref.dtype.type, TensorProto.FLOAT), None)])
        np.savez(f"{out}/{name}_inputs.npz", **feeds)
        np.savez(f"{out}/{name}_ref.npz", y=ref)
        names.append((name, tol))

    for dt, tag in [(np.uint8, "u8"), (np.int8, "i8")]:
        for op, fn in [("QLinearAdd", np.add), ("QLinearMul", np.multiply)]:
            a, bq = rand_q((2, 8, 5, 6), dt), rand_q((8, 1, 6), dt)
            (as_, az), (bs, bz), (cs, cz) = qp(dt), qp(dt), qp(dt)
            if op == "QLinearMul":
                cs = F32(as_ * bs * 40)
            b = Builder(op)
            b.node(op, ["a", b.const(as_, "as"), b.const(az, "az"), "b", b.const(bs, "bs"), b.const(bz, "bz"),
                        b.const(cs, "cs"), b.const(cz, "cz")], "com.microsoft")
            ref = quantize(fn(dequantize(a, as_, az), dequantize(bq, bs, bz)), cs, cz, dt)
            save(b, f"{op.lower()}_{tag}", {"a": a, "b": bq}, ref, 1)
        x = rand_q((1, 6, 7, 9), dt)
        (xs, xz), (ys, yz) = qp(dt), qp(dt)
        xf = dequantize(x, xs, xz)
        for op, attrs, f in [
            ("QLinearSigmoid", {}, lambda v: 1 / (1 + np.exp(-v))),
            ("QLinearLeakyRelu", {"alpha": 0.2}, lambda v: np.where(v >= 0, v, F32(0.2) * v)),
            ("QLinearGlobalAveragePool", {}, lambda v: v.mean(axis=(2, 3), keepdims=True)),
            ("QLinearAveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                    "count_include_pad": 0}, None),
        ]:
            b = Builder(op)
            b.node(op, ["x", b.const(xs, "xs"), b.const(xz, "xz"), b.const(ys, "ys"), b.const(yz, "yz")],
                   "com.microsoft", **attrs)
            if f is None:  # 3x3 stride 2 pad 1 average over the window's inside positions
                xp = np.pad(xf, ((0, 0), (0, 0), (1, 1), (1, 1)))
                cnt = np.pad(np.ones_like(xf), ((0, 0), (0, 0), (1, 1), (1, 1)))
                oh, ow = 4, 5
                s_ = sum(xp[:, :, i:i + 2 * oh:2, j:j + 2 * ow:2] for i in range(3) for j in range(3))
                c_ = sum(cnt[:, :, i:i + 2 * oh:2, j:j + 2 * ow:2] for i in range(3) for j in range(3))
                fv = (s_ / c_).astype(F32)
            else:
                fv = f(xf).astype(F32)
            save(b, f"{op.lower()}_{tag}", {"x": x}, quantize(fv, ys, yz, dt), 1)
        # channels_last global pool: the mean over the axes between batch and channel
        b = Builder("QLinearGlobalAveragePool")
        b.node("QLinearGlobalAveragePool", ["x", b.const(xs, "xs"), b.const(xz, "xz"), b.const(ys, "ys"),
                                            b.const(yz, "yz")], "com.microsoft", channels_last=1)
        save(b, f"qlinearglobalaveragepool_nhwc_{tag}", {"x": x},
             quantize(xf.mean(axis=(1, 2), keepdims=True).astype(F32), ys, yz, dt), 1)
        # concat of three inputs with their own scales, along axis 1
        xs3 = [rand_q((2, c, 3, 4), dt) for c in (3, 5, 2)]
        ps = [qp(dt) for _ in range(4)]
        b = Builder("QLinearConcat")
        ins = [b.const(ps[0][0], "ys"), b.const(ps[0][1], "yz")]
        for i in range(3):
            ins += [f"x{i}", b.const(ps[i + 1][0], "s"), b.const(ps[i + 1][1], "z")]
        b.node("QLinearConcat", ins, "com.microsoft", axis=1)
        ref = quantize(np.concatenate([dequantize(xs3[i], *ps[i + 1]) for i in range(3)], axis=1), *ps[0], dt)
        save(b, f"qlinearconcat_{tag}", {f"x{i}": xs3[i] for i in range(3)}, ref, 1)
        # QDQ MatMul (LowerQDQ: an integer matmul): dequantized data [2, 5, 40] by a per-column int8 [40, 24]
        a = rand_q((2, 5, 40), dt)
        as_, az = qp(dt)
        wq = rng.integers(-127, 128, (40, 24)).astype(np.int8)
        ws = rng.uniform(0.005, 0.02, 24).astype(F32)
        b = Builder("QDQMatMul")
        fa = b.node("DequantizeLinear", ["a", b.const(as_, "as"), b.const(az, "az")])
        fw = b.node("DequantizeLinear", [b.const(wq, "w"), b.const(ws, "ws"), b.const(np.zeros(24, np.int8), "wz")],
                    axis=1)
        b.node("MatMul", [fa, fw])
        ref = (dequantize(a, as_, az).astype(np.float64) @ (wq.astype(np.float64) * ws[None, :])).astype(F32)
        save(b, f"qdq_matmul_{tag}", {"a": a}, ref, 1e-4)
        # QLinearSoftmax (last axis, opset 13 semantics) and QLinearReduceMean (axes 2, 3)
        x2 = rand_q((2, 3, 10), dt)
        ys, yz = (F32(1 / 256), dt(0)) if dt == np.uint8 else (F32(1 / 256), dt(-128))
        xf2 = dequantize(x2, xs, xz)
        e = np.exp(xf2 - xf2.max(axis=-1, keepdims=True))
        b = Builder("QLinearSoftmax")
        b.node("QLinearSoftmax", ["x", b.const(xs, "xs"), b.const(xz, "xz"), b.const(ys, "ys"), b.const(yz, "yz")],
               "com.microsoft", axis=-1, opset=13)
        save(b, f"qlinearsoftmax_{tag}", {"x": x2}, quantize((e / e.sum(axis=-1, keepdims=True)).astype(F32), ys, yz, dt),
             1)
        (ys, yz) = qp(dt)
        b = Builder("QLinearReduceMean")
        b.node("QLinearReduceMean", ["x", b.const(xs, "xs"), b.const(xz, "xz"), b.const(ys, "ys"), b.const(yz, "yz")],
               "com.microsoft", axes=[2, 3], keepdims=1)
        save(b, f"qlinearreducemean_{tag}", {"x": x}, quantize(xf.mean(axis=(2, 3), keepdims=True).astype(F32), ys, yz, dt),
             1)
        # MatMulIntegerToFloat: per-tensor A, B per column with a zero point, a float bias
        a = rand_q((2, 5, 40), dt)
        as_, az = qp(dt)
        wq = rng.integers(-120, 121, (40, 24)).astype(np.int8)
        wz = rng.integers(-3, 4, 24).astype(np.int8)
        ws = rng.uniform(0.005, 0.02, 24).astype(F32)
        bias = rng.uniform(-1, 1, 24).astype(F32)
        acc = (a.astype(np.int64) - int(az)) @ (wq.astype(np.int64) - wz.astype(np.int64))
        b = Builder("MatMulIntegerToFloat")
        b.node("MatMulIntegerToFloat", ["a", b.const(wq, "b"), b.const(as_, "as"), b.const(ws, "bs"), b.const(az, "az"),
                                        b.const(wz, "bz"), b.const(bias, "bias")], "com.microsoft")
        save(b, f"matmulintegertofloat_{tag}", {"a": a}, (acc.astype(F32) * (as_ * ws) + bias).astype(F32), 1e-3)
        # QGemm: per-column int8 B (transposed), int32 bias; quantized and float outputs
        a = rand_q((4, 20), dt)
        as_, az = qp(dt)
        wq = rng.integers(-127, 128, (7, 20)).astype(np.int8)
        ws = rng.uniform(0.005, 0.02, 7).astype(F32)
        c = rng.integers(-3000, 3000, 7).astype(np.int32)
        yf = (F32(0.5) * (dequantize(a, as_, az) @ (wq.astype(F32) * ws[:, None]).T) +
              c.astype(F32) * (F32(0.5) * as_ * ws)).astype(F32)  # C's scale is alpha * As * Bs
        for qout in (True, False):
            b = Builder("QGemm")
            ins = ["a", b.const(as_, "as"), b.const(az, "az"), b.const(wq, "w"), b.const(ws, "ws"),
                   b.const(np.zeros(7, np.int8), "wz"), b.const(c, "c")]
            ys, yz = qp(dt)
            if qout:
                ins += [b.const(ys, "ys"), b.const(yz, "yz")]
            b.node("QGemm", ins, "com.microsoft", transB=1, alpha=0.5)
            save(b, f"qgemm_{'q' if qout else 'f'}_{tag}", {"a": a}, quantize(yf, ys, yz, dt) if qout else yf,
                 1 if qout else 1e-4)


    # MatMulNBits (weight-only 2/4/8-bit blocks): K not a multiple of the block, packed uint8 or float zero points
    # or none (2^(bits-1)), a bias, g_idx (blocks in another order)
    for tag, bits, block, zkind, bias_on, gidx_on in [("4bit_zp", 4, 32, "u8", True, False),
                                                      ("4bit_nozp", 4, 16, None, False, False),
                                                      ("4bit_fzp_gidx", 4, 32, "f32", True, True),
                                                      ("8bit", 8, 16, "u8", False, False),
                                                      ("2bit", 2, 16, "u8", True, False)]:
        K, N = 72, 24
        nblk, mask = (K + block - 1) // block, (1 << bits) - 1
        q = rng.integers(0, mask + 1, (N, nblk * block))
        q[:, K:] = 0
        per = 8 // bits
        packed = np.zeros((N, nblk, block * bits // 8), np.uint8)
        for j in range(block * nblk):
            packed[:, j // block, (j % block) // per] |= (q[:, j] << ((j % block) % per * bits)).astype(np.uint8)
        scales = rng.uniform(0.01, 0.05, N * nblk).astype(F32)
        gidx = rng.permutation(np.arange(K) // block).astype(np.int32) if gidx_on else None
        blk_of = gidx if gidx_on else np.arange(K) // block
        zero = np.full((N, nblk), 1 << (bits - 1), np.float32)
        bld = Builder("MatMulNBits")
        ins = ["a", bld.const(packed, "b"), bld.const(scales, "s")]
        if zkind == "u8":
            zq = rng.integers(0, mask + 1, (N, nblk))
            zrow = (nblk * bits + 7) // 8
            zp = np.zeros((N, zrow), np.uint8)
            for j in range(nblk):
                zp[:, j * bits // 8] |= (zq[:, j] << (j * bits % 8)).astype(np.uint8)
            zero = zq.astype(np.float32)
            ins.append(bld.const(zp.reshape(-1), "zp"))
        elif zkind == "f32":
            zero = rng.uniform(0, mask, (N, nblk)).astype(F32)
            ins.append(bld.const(zero.reshape(-1), "zp"))
        else:
            ins.append("")
        ins.append(bld.const(gidx, "g") if gidx_on else "")
        bias = rng.uniform(-1, 1, N).astype(F32)
        ins.append(bld.const(bias, "bias") if bias_on else "")
        while ins and ins[-1] == "":
            ins.pop()
        bld.node("MatMulNBits", ins, "com.microsoft", K=K, N=N, bits=bits, block_size=block)
        w = ((q[:, :K].astype(F32) - zero[:, blk_of]) * scales.reshape(N, nblk)[:, blk_of]).astype(F32)
        a = rng.standard_normal((2, 3, K)).astype(F32)
        y = (a @ w.T + (bias if bias_on else 0)).astype(F32)
        save(bld, f"matmulnbits_{tag}", {"a": a}, y, 1e-4)
    # DynamicQuantizeMatMul: float A quantized by DynamicQuantizeLinear (uint8), int8 B per column, a bias
    a = rng.standard_normal((3, 40)).astype(F32)
    lo, hi = min(0.0, float(a.min())), max(0.0, float(a.max()))
    as_ = F32((hi - lo) / 255)
    az = np.uint8(np.clip(np.rint(F32(0 - lo) / as_), 0, 255))
    aq = np.clip(np.rint(a / as_) + int(az), 0, 255).astype(np.int64)
    wq = rng.integers(-127, 128, (40, 16)).astype(np.int8)
    ws = rng.uniform(0.005, 0.02, 16).astype(F32)
    bias = rng.uniform(-1, 1, 16).astype(F32)
    b = Builder("DynamicQuantizeMatMul")
    b.node("DynamicQuantizeMatMul", ["a", b.const(wq, "b"), b.const(ws, "bs"), "", b.const(bias, "bias")],
           "com.microsoft")
    acc = (aq - int(az)) @ wq.astype(np.int64)
    save(b, "dynamicquantizematmul", {"a": a}, (acc.astype(F32) * (as_ * ws) + bias).astype(F32), 1e-3)


# ---------------------------------------------------------------- quantized torchvision networks

def fold(conv, bn):
    """a conv followed by batch norm as one conv: (w, bias, stride, pad, groups)"""
    import torch
    w = conv.weight.detach().numpy().astype(F32)
    g = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().numpy()
    b = (bn.bias - bn.running_mean * bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().numpy()
    return (w * g[:, None, None, None]).astype(F32), b.astype(F32), conv.stride[0], conv.padding[0], conv.groups


class QNet:
    """builds a quantized network layer by layer next to its float run (for the activation ranges) and the numpy
    reference of the quantized graph; qdq: every quantized op as its float op between DequantizeLinear and
    QuantizeLinear (ONNX Runtime's default format), the same reference"""

    def __init__(self, name, qdq, with_ref):
        self.b, self.qdq, self.with_ref, self.ref = Builder(name), qdq, with_ref, {}

    def input(self, x):
        xs, xz = qparams(x.min(), x.max(), np.uint8)
        q0 = self.b.node("QuantizeLinear", ["x", self.b.const(xs, "xs"), self.b.const(xz, "xz")])
        if self.with_ref:
            self.ref[q0] = quantize(x.numpy(), xs, xz, np.uint8)
        return (q0, xs, xz), x

    def conv(self, tq, t, layer, act):
        """quantized conv (folded with its batch norm; act None, 'relu' or 'relu6' fused into the output range)
        of quantized tensor tq = (name, scale, zero point) with float value t: ((name, ys, yz), float out)"""
        import torch
        b = self.b
        w, bias, stride, pad, groups = layer
        with torch.no_grad():
            y = torch.nn.functional.conv2d(t, torch.from_numpy(w), torch.from_numpy(bias), stride, pad, 1, groups)
            if act == "relu":
                y = torch.relu(y)
            elif act == "relu6":
                y = torch.clamp(y, 0, 6)
        ys, yz = qparams(y.min(), y.max(), np.uint8)
        ws = (np.abs(w).reshape(w.shape[0], -1).max(1) / 127).astype(F32)
        ws[ws == 0] = 1
        wq = np.clip(np.rint(w / ws[:, None, None, None]), -127, 127).astype(np.int8)
        xs, xz = tq[1], tq[2]
        bq = np.rint(bias / (xs * ws)).astype(np.int32)
        oc = len(ws)
        attrs = dict(strides=[stride, stride], pads=[pad] * 4, kernel_shape=list(w.shape[2:]))
        if groups != 1:
            attrs["group"] = groups
        if self.qdq:
            fx = b.node("DequantizeLinear", [tq[0], b.const(xs, "xs"), b.const(xz, "xz")])
            fw = b.node("DequantizeLinear", [b.const(wq, "w"), b.const(ws, "ws"), b.const(np.zeros(oc, np.int8), "wz")],
                        axis=0)
            fb = b.node("DequantizeLinear", [b.const(bq, "b"), b.const((xs * ws).astype(F32), "bs"),
                                             b.const(np.zeros(oc, np.int32), "bz")], axis=0)
            fc = b.node("Conv", [fx, fw, fb], **attrs)
            name = b.node("QuantizeLinear", [fc, b.const(ys, "ys"), b.const(yz, "yz")])
        else:
            name = b.node("QLinearConv", [tq[0], b.const(xs, "xs"), b.const(xz, "xz"), b.const(wq, "w"),
                                          b.const(ws, "ws"), b.const(np.zeros(oc, np.int8), "wz"),
                                          b.const(ys, "ys"), b.const(yz, "yz"), b.const(bq, "b")], **attrs)
        if self.with_ref:
            self.ref[name] = qlinear_conv_ref(self.ref[tq[0]], xs, xz, wq, ws, np.uint8, ys, yz, bq, stride, pad,
                                              groups)
        return (name, ys, yz), y

    def add(self, pq, p, sq, sc, relu):
        """quantized p + sc (then ReLU when relu)"""
        import torch
        b = self.b
        y = p + sc
        if relu:
            y = torch.relu(y)
        cs, cz = qparams(y.min(), y.max(), np.uint8)
        if self.qdq:
            fa = b.node("DequantizeLinear", [pq[0], b.const(pq[1], "as"), b.const(pq[2], "az")])
            fb = b.node("DequantizeLinear", [sq[0], b.const(sq[1], "bs"), b.const(sq[2], "bz")])
            name = b.node("QuantizeLinear", [b.node("Add", [fa, fb]), b.const(cs, "cs"), b.const(cz, "cz")])
        else:
            name = b.node("QLinearAdd", [pq[0], b.const(pq[1], "as"), b.const(pq[2], "az"), sq[0],
                                         b.const(sq[1], "bs"), b.const(sq[2], "bz"), b.const(cs, "cs"),
                                         b.const(cz, "cz")], "com.microsoft")
        if self.with_ref:
            self.ref[name] = quantize(dequantize(self.ref[pq[0]], pq[1], pq[2]) +
                                      dequantize(self.ref[sq[0]], sq[1], sq[2]), cs, cz, np.uint8)
        return (name, cs, cz), y

    def head(self, tq, t, fc, out, name, size, x, names):
        """global average pool, flatten and the quantized fully connected layer fc with float output logits"""
        b = self.b
        p = t.mean(dim=(2, 3), keepdim=True)
        ps, pz = qparams(0, p.max(), np.uint8)
        if self.qdq:
            fp = b.node("GlobalAveragePool", [b.node("DequantizeLinear", [tq[0], b.const(tq[1], "xs"),
                                                                          b.const(tq[2], "xz")])])
            gp = b.node("QuantizeLinear", [fp, b.const(ps, "ys"), b.const(pz, "yz")])
        else:
            gp = b.node("QLinearGlobalAveragePool", [tq[0], b.const(tq[1], "xs"), b.const(tq[2], "xz"),
                                                     b.const(ps, "ys"), b.const(pz, "yz")], "com.microsoft")
        fl = b.node("Flatten", [gp], axis=1)
        w = fc.weight.detach().numpy().astype(F32)
        ws = (np.abs(w).max(1) / 127).astype(F32)
        wq = np.clip(np.rint(w / ws[:, None]), -127, 127).astype(np.int8)
        cq = np.rint(fc.bias.detach().numpy() / (ps * ws)).astype(np.int32)
        if self.qdq:
            fx = b.node("DequantizeLinear", [fl, b.const(ps, "as"), b.const(pz, "az")])
            fw = b.node("DequantizeLinear", [b.const(wq, "w"), b.const(ws, "ws"),
                                             b.const(np.zeros(len(ws), np.int8), "wz")], axis=0)
            fcb = b.node("DequantizeLinear", [b.const(cq, "c"), b.const((ps * ws).astype(F32), "cs"),
                                              b.const(np.zeros(len(ws), np.int32), "cz")], axis=0)
            b.node("Gemm", [fx, fw, fcb], transB=1)
        else:
            b.node("QGemm", [fl, b.const(ps, "as"), b.const(pz, "az"), b.const(wq, "w"), b.const(ws, "ws"),
                             b.const(np.zeros(len(ws), np.int8), "wz"), b.const(cq, "c")], "com.microsoft", transB=1)
        b.nodes[-1].output[0] = "logits"
        b.save(f"{out}/{name}.onnx", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
               [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)])
        np.savez(f"{out}/{name}_inputs.npz", x=x.numpy())
        if self.with_ref:
            pool = quantize(dequantize(self.ref[tq[0]], tq[1], tq[2]).mean(axis=(2, 3), keepdims=True).astype(F32),
                            ps, pz, np.uint8)
            logits = (dequantize(pool.reshape(1, -1), ps, pz) @ (wq.astype(F32) * ws[:, None]).T +
                      cq.astype(F32) * (ps * ws))
            np.savez(f"{out}/{name}_ref.npz", logits=logits.astype(F32))
        # a step of the pooled features is ps * |w|: a few rounding ties upstream move logits by about that
        names.append((name, float(4 * ps * np.abs(w).max())))


def calibrated(arch, size):
    """torchvision's arch with random weights and batch-norm statistics from random images, and an input"""
    import torch
    import torchvision
    torch.manual_seed(0)
    net = getattr(torchvision.models, arch)(weights=None)
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.randn(8, 3, size, size))
    net.eval()
    return net, torch.randn(1, 3, size, size)


def resnet_model(out, arch, size, names, with_ref, qdq=False):
    """torchvision's ResNet: each ReLU fused as a zero point of 0, the residual adds QLinearAdd with ReLU"""
    import torch
    net, x = calibrated(arch, size)
    q = QNet(f"q{arch}", qdq, with_ref)
    tq, t = q.input(x)
    tq, t = q.conv(tq, t, fold(net.conv1, net.bn1), "relu")
    mp = q.b.node("MaxPool", [tq[0]], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    if with_ref:
        r = np.pad(q.ref[tq[0]], ((0, 0), (0, 0), (1, 1), (1, 1)))  # 0 pads below every value of a zp-0 relu output
        oh = (r.shape[2] - 3) // 2 + 1
        q.ref[mp] = np.max([r[:, :, i:i + 2 * oh:2, j:j + 2 * oh:2] for i in range(3) for j in range(3)], axis=0)
    with torch.no_grad():
        t = torch.nn.functional.max_pool2d(t, 3, 2, 1)
        tq = (mp, tq[1], tq[2])
        for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
            for blk in layer:
                sq, sc = tq, t
                if blk.downsample is not None:
                    sq, sc = q.conv(tq, t, fold(blk.downsample[0], blk.downsample[1]), None)
                convs = [(blk.conv1, blk.bn1), (blk.conv2, blk.bn2)] + ([(blk.conv3, blk.bn3)] if hasattr(blk, "conv3")
                                                                        else [])
                hq, h = tq, t
                for i, (cv, bn) in enumerate(convs):
                    hq, h = q.conv(hq, h, fold(cv, bn), "relu" if i < len(convs) - 1 else None)
                tq, t = q.add(hq, h, sq, sc, True)
        q.head(tq, t, net.fc, out, f"{'qdq' if qdq else 'q'}{arch}_{size}", size, x, names)


def mobilenet_v2_model(out, size, names, with_ref, qdq=False):
    """torchvision's MobileNetV2: depthwise 3x3 convs (group = channels), each ReLU6 fused as the output range
    [0, max], the linear bottlenecks' residual adds QLinearAdd without activation"""
    import torch
    net, x = calibrated("mobilenet_v2", size)
    q = QNet("qmobilenet_v2", qdq, with_ref)
    tq, t = q.input(x)

    def conv_bn_act(tq, t, cba):  # torchvision's Conv2dNormActivation: conv, batch norm, ReLU6
        return q.conv(tq, t, fold(cba[0], cba[1]), "relu6")

    with torch.no_grad():
        feats = list(net.features)
        tq, t = conv_bn_act(tq, t, feats[0])
        for blk in feats[1:-1]:
            layers = list(blk.conv)  # [expand Conv2dNormActivation], depthwise one, project conv, batch norm
            hq, h = tq, t
            for cba in layers[:-2]:
                hq, h = conv_bn_act(hq, h, cba)
            hq, h = q.conv(hq, h, fold(layers[-2], layers[-1]), None)
            tq, t = q.add(hq, h, tq, t, False) if blk.use_res_connect else (hq, h)
        tq, t = conv_bn_act(tq, t, feats[-1])
        q.head(tq, t, net.classifier[1], out, f"{'qdq' if qdq else 'q'}mobilenet_v2_{size}", size, x, names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--resnet18", type=int, default=0)
    ap.add_argument("--resnet50", type=int, default=0)
    ap.add_argument("--mobilenet-v2", type=int, default=0)
    ap.add_argument("--units", action="store_true")
    ap.add_argument("--no-ref", action="store_true")
    ap.add_argument("--qdq", action="store_true", help="also the ResNets in the QDQ format")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = []
    if a.units:
        unit_models(a.out, np.random.default_rng(5), names)
    for qdq in (False, True) if a.qdq else (False,):
        if a.resnet18:
            resnet_model(a.out, "resnet18", a.resnet18, names, not a.no_ref, qdq)
        if a.resnet50:
            resnet_model(a.out, "resnet50", a.resnet50, names, not a.no_ref, qdq)
        if a.mobilenet_v2:
            mobilenet_v2_model(a.out, a.mobilenet_v2, names, not a.no_ref, qdq)
    with open(f"{a.out}/models.txt", "w") as f:
        f.write("".join(f"{n}\t{t:.6g}\n" for n, t in names))


if __name__ == "__main__":
    main()
