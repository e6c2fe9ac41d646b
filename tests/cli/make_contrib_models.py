#!/usr/bin/env python3
"""make_contrib_models.py DIR: one model per float com.microsoft op of ONNX Runtime's transformer optimizer
(frontends/onnx/convert_contrib.c), each with random inputs (NAME_inputs.npz) and a torch reference
(NAME_ref.npz) of the op as ONNX Runtime's contrib schema defines it; names and tolerances (largest error
relative to the largest reference value) go to DIR/models.txt."""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
F32 = np.float32
lines = []


def save(name, op, inputs, attrs, refs, domain="com.microsoft", consts=(), outputs=None, tol=1e-5, opset=17,
         int_inputs=(), values=None):
    """inputs: name -> array (graph inputs), or the node's input names with their arrays in values; consts:
    (name, array) initializers; refs: output arrays; int_inputs: the int32 inputs"""
    outputs = outputs or [f"y{i}" for i in range(len(refs))]
    node = helper.make_node(op, list(inputs), outputs, domain=domain or None, **attrs)
    values = values if values is not None else inputs
    feeds = {k: v for k, v in values.items() if k and k not in dict(consts)}
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info(k, TensorProto.INT32 if k in int_inputs else TensorProto.FLOAT,
                                                         list(v.shape)) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(o, TensorProto.INT32 if ref.dtype == np.int32 else
                                                         TensorProto.FLOAT, None)
                           for o, ref in zip(outputs, refs) if o],
                          [numpy_helper.from_array(v, k) for k, v in consts])
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    onnx.save(helper.make_model(g, opset_imports=opsets), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", **feeds)
    np.savez(f"{out}/{name}_ref.npz",
             **{o: v if v.dtype == np.int32 else v.astype(F32) for o, v in zip(outputs, refs) if o})
    lines.append(f"{name}\t{tol}")


def r(*shape):
    return rng.standard_normal(shape).astype(F32)


T = torch.from_numpy
x, b = r(2, 5, 16), r(16)
save("gelu", "Gelu", {"x": x}, {}, [torch.nn.functional.gelu(T(x)).numpy()])
save("bias_gelu", "BiasGelu", {"x": x, "b": b}, {}, [torch.nn.functional.gelu(T(x + b)).numpy()])
save("fast_gelu", "FastGelu", {"x": x, "b": b}, {}, [torch.nn.functional.gelu(T(x + b), approximate="tanh").numpy()])
save("fast_gelu_nobias", "FastGelu", {"x": x}, {}, [torch.nn.functional.gelu(T(x), approximate="tanh").numpy()])
save("quick_gelu", "QuickGelu", {"x": x}, {"alpha": 1.5}, [x * (1 / (1 + np.exp(-1.5 * x)))])
skip = r(2, 5, 16)
save("bias_add", "BiasAdd", {"x": x, "b": b, "skip": skip}, {}, [x + b + skip])
a, w = r(3, 4, 6), r(3, 5, 6)
save("fused_matmul", "FusedMatMul", {"a": a, "w": w}, {"alpha": 0.5, "transB": 1}, [0.5 * a @ w.transpose(0, 2, 1)])
a2, w2 = r(6, 4), r(6, 3)
save("fused_matmul_ta", "FusedMatMul", {"a": a2, "w": w2}, {"transA": 1}, [a2.T @ w2])
g, be = (1 + 0.1 * r(16)), 0.1 * r(16)


def ln(v):
    return torch.nn.functional.layer_norm(T(v), (16,), T(g), T(be), 1e-5).numpy()


def rms(v, eps=1e-6):
    return v / np.sqrt((v.astype(np.float64) ** 2).mean(-1, keepdims=True) + eps).astype(F32) * g


# ONNX Runtime's LayerNormalization of the default domain before opset 17 (where ONNX added its own)
save("layer_norm_opset13", "LayerNormalization", {"x": x, "g": g, "be": be}, {"epsilon": 1e-5}, [ln(x)], domain="",
     tol=1e-4, opset=13)
save("simplified_layer_norm", "SimplifiedLayerNormalization", {"x": x, "g": g}, {"epsilon": 1e-6}, [rms(x)], tol=1e-4)
save("simplified_layer_norm_onnx_domain", "SimplifiedLayerNormalization", {"x": x, "g": g}, {"epsilon": 1e-6},
     [rms(x)], domain="", tol=1e-4)
s = x + skip + b
save("skip_layer_norm", "SkipLayerNormalization", {"x": x, "skip": skip, "g": g, "be": be, "b": b},
     {"epsilon": 1e-5}, [ln(s), s], outputs=["y0", "", "", "y3"], tol=1e-4)
save("skip_layer_norm_nobias", "SkipLayerNormalization", {"x": x, "skip": skip, "g": g}, {"epsilon": 1e-5},
     [torch.nn.functional.layer_norm(T(x + skip), (16,), T(g), None, 1e-5).numpy()], tol=1e-4)
save("skip_simplified_layer_norm", "SkipSimplifiedLayerNormalization", {"x": x, "skip": skip, "g": g, "b": b},
     {"epsilon": 1e-6}, [rms(s), s], outputs=["y0", "", "", "y3"], tol=1e-4)


def attention_ref(x, w, b, heads, sizes, add=None, causal=False):
    """ONNX Runtime's Attention: the projection, per head softmax(q k^T / sqrt(h) + add) v"""
    qkv = x @ w + b
    B, S, _ = x.shape
    q, k, v = qkv[..., :sizes[0]], qkv[..., sizes[0]:2 * sizes[0]], qkv[..., 2 * sizes[0]:]

    def heads_of(t):
        return t.reshape(B, S, heads, -1).transpose(0, 2, 1, 3).astype(np.float64)

    q, k, v = heads_of(q), heads_of(k), heads_of(v)
    sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if add is not None:
        sc = sc + add
    if causal:
        sc = sc + np.triu(np.full((S, S), -1e30), 1)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(B, S, -1)


B, S, D, H = 2, 7, 32, 4
xa, wa, ba = r(B, S, D), 0.2 * r(D, 3 * D), 0.1 * r(3 * D)
consts = [("w", wa), ("b", ba)]
raw = np.ones((B, S), np.int32)
raw[0, 5:] = 0
raw[1, 3:] = 0
save("attention_raw_mask", "Attention", {"x": xa, "w": wa, "b": ba, "mask": raw}, {"num_heads": H},
     [attention_ref(xa, wa, ba, H, (D, D, D), ((1 - raw) * -10000.0)[:, None, None, :])], consts=consts, tol=1e-4,
     int_inputs={"mask"})
lens = np.array([4, 7], np.int32)
add = np.where(np.arange(S)[None, :] >= lens[:, None], -10000.0, 0.0)[:, None, None, :]
save("attention_lengths", "Attention", {"x": xa, "w": wa, "b": ba, "mask": lens}, {"num_heads": H},
     [attention_ref(xa, wa, ba, H, (D, D, D), add)], consts=consts, tol=1e-4, int_inputs={"mask"})
se = np.array([6, 7, 1, 2], np.int32)  # ends, then starts
j = np.arange(S)[None, :]
add = np.where((j >= se[:2, None]) | (j < se[2:, None]), -10000.0, 0.0)[:, None, None, :]
save("attention_start_end", "Attention", {"x": xa, "w": wa, "b": ba, "mask": se}, {"num_heads": H},
     [attention_ref(xa, wa, ba, H, (D, D, D), add)], consts=consts, tol=1e-4, int_inputs={"mask"})
save("attention_causal", "Attention", {"x": xa, "w": wa, "b": ba}, {"num_heads": H, "unidirectional": 1},
     [attention_ref(xa, wa, ba, H, (D, D, D), causal=True)], consts=consts, tol=1e-4)
# other value width (qkv_hidden_sizes), an attention bias, a 3-D raw mask
wv, bv = 0.2 * r(D, 2 * D + 16), 0.1 * r(2 * D + 16)
bias4 = 0.5 * r(1, H, S, S)
raw3 = (rng.random((B, S, S)) > 0.2).astype(np.int32)
raw3[:, :, 0] = 1
add = ((1 - raw3) * -10000.0)[:, None] + bias4
save("attention_sizes_bias", "Attention", ["x", "w", "b", "mask", "", "ab"],
     {"num_heads": H, "qkv_hidden_sizes": [D, D, 16]}, [attention_ref(xa, wv, bv, H, (D, D, 16), add)],
     consts=[("w", wv), ("b", bv)], tol=1e-4, int_inputs={"mask"}, values={"x": xa, "mask": raw3, "ab": bias4})


def mha_ref(q, k, v, heads, add=None):
    B, S, _ = q.shape

    def heads_of(t):
        return t.reshape(B, t.shape[1], heads, -1).transpose(0, 2, 1, 3).astype(np.float64)

    q, k, v = heads_of(q), heads_of(k), heads_of(v)
    sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if add is not None:
        sc = sc + add
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(B, S, -1)


# MultiHeadAttention: cross-attention (T != S, value width 16) with a bias, a raw key padding mask and an
# attention bias; self-attention with lengths
Tk = 5
qm, km, vm, bm = r(B, S, D), r(B, Tk, D), r(B, Tk, 16), 0.1 * r(2 * D + 16)
kpm = np.ones((B, Tk), np.int32)
kpm[0, 3:] = 0
abm = 0.5 * r(B, 1, S, Tk)
add = ((1 - kpm) * -10000.0)[:, None, None, :] + abm
save("multi_head_attention_cross", "MultiHeadAttention", ["q", "k", "v", "bias", "kpm", "ab"], {"num_heads": H},
     [mha_ref(qm + bm[:D], km + bm[D:2 * D], vm + bm[2 * D:], H, add)], tol=1e-4, int_inputs={"kpm"},
     values={"q": qm, "k": km, "v": vm, "bias": bm, "kpm": kpm, "ab": abm})
km2, vm2 = r(B, S, D), r(B, S, D)
lens2 = np.array([7, 2], np.int32)
add = np.where(np.arange(S)[None, :] >= lens2[:, None], -10000.0, 0.0)[:, None, None, :]
save("multi_head_attention_lengths", "MultiHeadAttention", ["q", "k", "v", "", "kpm"], {"num_heads": H},
     [mha_ref(qm, km2, vm2, H, add)], tol=1e-4, int_inputs={"kpm"}, values={"q": qm, "k": km2, "v": vm2, "kpm": lens2})
# RotaryEmbedding (com.microsoft): 3-D input with num_heads and an offset position, 4-D interleaved with
# positions [B, S] and a partial rotary dim


def rope_ref(x4, pos, cos, sin, interleaved, rd):
    """x4 [B, N, S, h]"""
    c, sn = cos[pos][:, None], sin[pos][:, None]  # [B, 1, S, rd/2]
    y = x4.copy()
    r = x4[..., :rd]
    if interleaved:
        x1, x2 = r[..., 0::2], r[..., 1::2]
        y[..., 0:rd:2], y[..., 1:rd:2] = x1 * c - x2 * sn, x1 * sn + x2 * c
    else:
        x1, x2 = r[..., :rd // 2], r[..., rd // 2:]
        y[..., :rd] = np.concatenate([x1 * c - x2 * sn, x1 * sn + x2 * c], -1)
    return y


Bq, Sq, Nq, hq = 2, 5, 2, 8
cosc, sinc = np.cos(r(16, hq // 2)), np.sin(r(16, hq // 2))
x3 = r(Bq, Sq, Nq * hq)
off = np.array([3], np.int64)
pos = np.broadcast_to(np.arange(Sq) + 3, (Bq, Sq))
y3 = rope_ref(x3.reshape(Bq, Sq, Nq, hq).transpose(0, 2, 1, 3), pos, cosc, sinc, False, hq)
save("rotary_offset_3d", "RotaryEmbedding", ["x", "pos", "cos", "sin"], {"num_heads": Nq},
     [y3.transpose(0, 2, 1, 3).reshape(Bq, Sq, -1)], consts=[("pos", off), ("cos", cosc), ("sin", sinc)],
     values={"x": x3}, tol=1e-5)
x4 = r(Bq, Nq, Sq, hq)
pos2 = rng.integers(0, 16, (Bq, Sq)).astype(np.int64)
cos4, sin4 = cosc[:, :2], sinc[:, :2]
save("rotary_4d_interleaved_partial", "RotaryEmbedding", ["x", "pos", "cos", "sin"],
     {"interleaved": 1, "rotary_embedding_dim": 4, "num_heads": Nq}, [rope_ref(x4, pos2, cos4, sin4, True, 4)],
     consts=[("pos", pos2), ("cos", cos4), ("sin", sin4)], values={"x": x4}, tol=1e-5)
# GroupNorm (channels last, SiLU), SkipGroupNorm (skip [N, C], bias, the sum output), BiasSplitGelu


def group_norm_nhwc(v, groups, gg, bb, eps):
    n_, h_, w_, c_ = v.shape
    t = v.reshape(n_, h_ * w_, groups, c_ // groups).astype(np.float64)
    m, var = t.mean((1, 3), keepdims=True), t.var((1, 3), keepdims=True)
    return (((t - m) / np.sqrt(var + eps)).reshape(v.shape) * gg + bb).astype(F32)


xg, gg, bg = r(2, 4, 5, 8), 1 + 0.1 * r(8), 0.1 * r(8)
yg = group_norm_nhwc(xg, 4, gg, bg, 1e-5)
save("group_norm_silu", "GroupNorm", {"x": xg, "g": gg, "b": bg}, {"groups": 4, "activation": 1, "epsilon": 1e-5},
     [yg / (1 + np.exp(-yg))], consts=[("g", gg), ("b", bg)], tol=1e-4)
skg, bsk = r(2, 8), r(8)
sg = xg + skg[:, None, None, :] + bsk
save("skip_group_norm", "SkipGroupNorm", {"x": xg, "g": gg, "b": bg, "skip": skg, "bias": bsk},
     {"groups": 2, "activation": 0, "epsilon": 1e-5}, [group_norm_nhwc(sg, 2, gg, bg, 1e-5), sg],
     consts=[("g", gg), ("b", bg), ("bias", bsk)], tol=1e-4)
xs, bs = r(2, 6, 16), r(16)
hs = xs + bs
save("bias_split_gelu", "BiasSplitGelu", {"x": xs, "b": bs}, {},
     [hs[..., :8] * torch.nn.functional.gelu(T(hs[..., 8:])).numpy()], consts=[("b", bs)], tol=1e-5)
# FusedConv (+ Z, activations with their parameters) and FusedGemm
xc, wc, bc, zc = r(1, 4, 9, 9), 0.3 * r(6, 4, 3, 3), 0.1 * r(6), r(1, 6, 9, 9)
conv = torch.nn.functional.conv2d(T(xc), T(wc), T(bc), 1, 1).numpy()
save("fused_conv_relu_z", "FusedConv", {"x": xc, "w": wc, "b": bc, "z": zc},
     {"activation": "Relu", "pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}, [np.maximum(conv + zc, 0)], tol=1e-5)
save("fused_conv_clip", "FusedConv", {"x": xc, "w": wc, "b": bc},
     {"activation": "Clip", "activation_params": [0.0, 0.5], "pads": [1, 1, 1, 1]}, [np.clip(conv, 0, 0.5)], tol=1e-5)
conv2 = torch.nn.functional.conv2d(T(xc), T(wc), None, 2).numpy()
save("fused_conv_leaky_s2", "FusedConv", {"x": xc, "w": wc},
     {"activation": "LeakyRelu", "activation_params": [0.1], "strides": [2, 2]},
     [np.where(conv2 > 0, conv2, 0.1 * conv2)])
ag, bgm, cg = r(3, 8), r(5, 8), r(5)
gm = ag @ bgm.T + cg
save("fused_gemm_leaky", "FusedGemm", {"a": ag, "b": bgm, "c": cg},
     {"transB": 1, "activation": "LeakyRelu", "activation_alpha": 0.2}, [np.where(gm > 0, gm, 0.2 * gm)])
save("fused_gemm_hardsigmoid", "FusedGemm", {"a": ag, "b": bgm, "c": cg},
     {"transB": 1, "activation": "HardSigmoid", "activation_alpha": 0.3, "activation_beta": 0.4},
     [np.clip(0.3 * gm + 0.4, 0, 1)])
# EmbedLayerNormalization: word + position (0..S-1) + segment embeddings, layer-normalized; the mask's lengths
V, P, H2 = 30, 16, 32
ids = rng.integers(0, V, (B, S)).astype(np.int32)
segs = rng.integers(0, 2, (B, S)).astype(np.int32)
we, pe, sge = r(V, H2), r(P, H2), r(2, H2)
ge, bee = 1 + 0.1 * r(H2), 0.1 * r(H2)
msk = np.ones((B, S), np.int32)
msk[1, 4:] = 0
emb = we[ids] + pe[:S][None] + sge[segs]
y = torch.nn.functional.layer_norm(T(emb), (H2,), T(ge), T(bee), 1e-12).numpy()
save("embed_layer_norm", "EmbedLayerNormalization", ["ids", "segs", "we", "pe", "sge", "ge", "bee", "mask"],
     {"epsilon": 1e-12}, [y, msk.sum(1).astype(np.int32), emb], outputs=["y0", "y1", "y2"], tol=1e-4,
     consts=[("we", we), ("pe", pe), ("sge", sge), ("ge", ge), ("bee", bee)], int_inputs={"ids", "segs", "mask"},
     values={"ids": ids, "segs": segs, "mask": msk, "we": we})
# one BERT layer as ONNX Runtime's optimizer saves it: EmbedLayerNormalization (its mask lengths) -> Attention ->
# SkipLayerNormalization -> MatMul, BiasGelu, MatMul -> SkipLayerNormalization
wq, bq = 0.2 * r(H2, 3 * H2), 0.1 * r(3 * H2)
w1, b1, w2, b2 = 0.2 * r(H2, 64), 0.1 * r(64), 0.2 * r(64, H2), 0.1 * r(H2)
g1, be1, g2, be2 = 1 + 0.1 * r(H2), 0.1 * r(H2), 1 + 0.1 * r(H2), 0.1 * r(H2)
nodes = [
    helper.make_node("EmbedLayerNormalization", ["ids", "segs", "we", "pe", "sge", "ge", "bee", "mask"], ["e", "mi"],
                     domain="com.microsoft", epsilon=1e-12),
    helper.make_node("Attention", ["e", "wq", "bq", "mi"], ["a"], domain="com.microsoft", num_heads=4),
    helper.make_node("SkipLayerNormalization", ["a", "e", "g1", "be1", "b2"], ["h"], domain="com.microsoft",
                     epsilon=1e-12),
    helper.make_node("MatMul", ["h", "w1"], ["f1"]),
    helper.make_node("BiasGelu", ["f1", "b1"], ["f2"], domain="com.microsoft"),
    helper.make_node("MatMul", ["f2", "w2"], ["f3"]),
    helper.make_node("SkipLayerNormalization", ["f3", "h", "g2", "be2", "b2"], ["y"], domain="com.microsoft",
                     epsilon=1e-12),
]
inits = dict(we=we, pe=pe, sge=sge, ge=ge, bee=bee, wq=wq, bq=bq, g1=g1, be1=be1, w1=w1, b1=b1, w2=w2, b2=b2, g2=g2,
             be2=be2)
g = helper.make_graph(nodes, "bert_layer", [helper.make_tensor_value_info(k, TensorProto.INT32, [B, S])
                                            for k in ("ids", "segs", "mask")],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      [numpy_helper.from_array(v, k) for k, v in inits.items()])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]),
          f"{out}/bert_layer_optimized.onnx")
np.savez(f"{out}/bert_layer_optimized_inputs.npz", ids=ids, segs=segs, mask=msk)
lens = msk.sum(1)
add = np.where(np.arange(S)[None, :] >= lens[:, None], -10000.0, 0.0)[:, None, None, :]


def lnorm(v, gg, bb):
    return torch.nn.functional.layer_norm(T(v.astype(F32)), (H2,), T(gg), T(bb), 1e-12).numpy()


h = lnorm(attention_ref(y, wq, bq, 4, (H2, H2, H2), add) + y + b2, g1, be1)
f2 = torch.nn.functional.gelu(T((h @ w1 + b1).astype(F32))).numpy()
np.savez(f"{out}/bert_layer_optimized_ref.npz", y=lnorm(f2 @ w2 + h + b2, g2, be2))
lines.append("bert_layer_optimized\t1e-4")
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
