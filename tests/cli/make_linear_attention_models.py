#!/usr/bin/env python3
"""make_linear_attention_models.py DIR: small opset-27 ONNX models for CausalConvWithState and LinearAttention
(the recurrent layers of Gated DeltaNet / Mamba LLMs), each with random float32 inputs (NAME_inputs.npz) and a
float64 numpy reference written here from the ONNX definitions (NAME_ref.npz). Inputs are float32; a model
that tests another dtype casts them inside (Cast -> the op -> Cast back to float32), and its reference reads
the inputs rounded to that dtype. CausalConvWithState: long inputs with bias, past_state and SiLU, a decode
step, an input shorter than the kernel, float16 and bfloat16. LinearAttention: every update rule, head sizes
dk != dv, grouped (3 query heads per kv head) and multi-query heads, decay per head and per key dim, beta per
head and shared, erase_gate, explicit scale, float16 activations with a float32 state, float16 without a past
state, float64, bfloat16, and enough (batch, head) pairs for several threads. FlexAttention (ai.onnx.preview
1) with per-element score_mod / mask_mod / prob_mod bodies, grouped and multi-query heads. Used by
tests/cli/test_linear_attention.sh; DIR/models.txt lists one "NAME TOLERANCE" per line."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(27)
F = TensorProto.FLOAT
ONNX_DT = {"f32": F, "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16, "f64": TensorProto.DOUBLE}
lines = []


def rounded(x, dt):
    """x as the model sees it after its Cast to dt, in float64"""
    if dt == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dt == "bf16":  # round to nearest even on the upper 16 bits
        b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
        return b.astype(np.uint32).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def save(name, tol, op, attrs, inputs, dtypes, outputs, f64_out=False):
    """inputs: [(onnx input name, array or None)]; dtypes: the op's dtype of each input; outputs: the op's
    output names with their float64 references; f64_out: the outputs are float64 and kept so (not cast)"""
    nodes, graph_in, feed, op_in = [], [], {}, []
    for (nm, x), dt in zip(inputs, dtypes):
        if x is None:
            op_in.append("")
            continue
        graph_in.append(helper.make_tensor_value_info(nm, F, list(x.shape)))
        feed[nm] = x
        if dt == "f32":
            op_in.append(nm)
        else:
            nodes.append(helper.make_node("Cast", [nm], [nm + "_c"], to=ONNX_DT[dt]))
            op_in.append(nm + "_c")
    while op_in and op_in[-1] == "":
        op_in.pop()
    nodes.append(helper.make_node(op, op_in, [o if f64_out else o + "_r" for o, _ in outputs], **attrs))
    if not f64_out:
        for o, _ in outputs:
            nodes.append(helper.make_node("Cast", [o + "_r"], [o], to=F))
    odt = TensorProto.DOUBLE if f64_out else F
    g = helper.make_graph(nodes, name, graph_in, [helper.make_tensor_value_info(o, odt, None) for o, _ in outputs])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", **feed)
    np.savez(f"{out}/{name}_ref.npz", **{o: r.astype(np.float64 if f64_out else np.float32) for o, r in outputs})
    lines.append(f"{name} {tol}")


def causal_conv(name, b, c, length, k, bias=True, past=True, act=None, dt="f32", tol=1e-4):
    x = rng.standard_normal((b, c, length)).astype(np.float32)
    w = rng.standard_normal((c, 1, k)).astype(np.float32)
    bs = rng.standard_normal(c).astype(np.float32) if bias else None
    ps = rng.standard_normal((b, c, k - 1)).astype(np.float32) if past else None
    xr, wr = rounded(x, dt), rounded(w, dt)
    p = np.concatenate([rounded(ps, dt) if past else np.zeros((b, c, k - 1)), xr], axis=2)
    y = np.zeros((b, c, length))
    for j in range(k):
        y += wr[:, 0, j].reshape(1, c, 1) * p[:, :, j:j + length]
    if bias:
        y += rounded(bs, dt).reshape(1, c, 1)
    if act:
        y = y / (1 + np.exp(-y))
    attrs = {"activation": act} if act else {}
    save(name, tol, "CausalConvWithState", attrs,
         [("input", x), ("weight", w), ("bias", bs), ("past_state", ps)], [dt] * 4,
         [("output", y), ("present_state", p[:, :, length:])])


def linear_attention(name, b, t, hq, hkv, dk, dv, rule, past=True, decay_per_key=True, beta_per_head=True,
                     erase=False, scale=None, dt="f32", state_dt=None, tol=1e-4):
    state_dt = state_dt or dt
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    q = rng.standard_normal((b, t, hq * dk)).astype(np.float32)
    key = rng.standard_normal((b, t, hkv, dk))
    key = (key / np.linalg.norm(key, axis=-1, keepdims=True)).reshape(b, t, hkv * dk).astype(np.float32)
    v = rng.standard_normal((b, t, hkv * dv)).astype(np.float32)
    s0 = (rng.standard_normal((b, hkv, dk, dv)) * 0.5).astype(np.float32) if past else None
    decay = -rng.uniform(0.01, 0.7, (b, t, hkv * dk if decay_per_key else hkv)).astype(np.float32) if gated else None
    beta = rng.uniform(0.1, 0.9, (b, t, hkv if beta_per_head else 1)).astype(np.float32) if delta else None
    eg = rng.uniform(0.2, 1.0, (b, t, hkv * dk)).astype(np.float32) if erase else None
    qr, kr, vr = rounded(q, dt), rounded(key, dt), rounded(v, dt)
    sc = scale if scale else 1 / np.sqrt(dk)
    y = np.zeros((b, t, hq * dv))
    st = np.zeros((b, hkv, dk, dv))
    group = hq // hkv
    for bi in range(b):
        for h in range(hkv):
            s = rounded(s0[bi, h], state_dt) if past else np.zeros((dk, dv))
            for ti in range(t):
                kt = kr[bi, ti, h * dk:(h + 1) * dk]
                vt = vr[bi, ti, h * dv:(h + 1) * dv]
                if gated:
                    g = rounded(decay, dt)[bi, ti, h * dk:(h + 1) * dk] if decay_per_key else \
                        rounded(decay, dt)[bi, ti, h] * np.ones(dk)
                    s = np.exp(g)[:, None] * s
                if delta:
                    ke = kt * rounded(eg, dt)[bi, ti, h * dk:(h + 1) * dk] if erase else kt
                    bt = rounded(beta, dt)[bi, ti, h if beta_per_head else 0]
                    vt = bt * (vt - s.T @ ke)
                s = s + np.outer(kt, vt)
                for gi in range(group):
                    qh = h * group + gi
                    y[bi, ti, qh * dv:(qh + 1) * dv] = sc * (qr[bi, ti, qh * dk:(qh + 1) * dk] @ s)
            st[bi, h] = s
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule}
    if scale:
        attrs["scale"] = scale
    save(name, tol, "LinearAttention", attrs,
         [("query", q), ("key", key), ("value", v), ("past_state", s0), ("decay", decay), ("beta", beta),
          ("erase_gate", eg)], [dt, dt, dt, state_dt, dt, dt, dt],
         [("output", y), ("present_state", st)], f64_out=dt == "f64" and state_dt == "f64")


causal_conv("cc_silu_bias_past", 2, 48, 37, 4, act="silu")
causal_conv("cc_decode_step", 3, 20, 1, 4)
causal_conv("cc_short_input", 1, 7, 3, 6, bias=False, past=False, act="swish")
causal_conv("cc_f16_silu", 2, 16, 9, 3, act="silu", dt="f16", tol=1e-3)
causal_conv("cc_bf16", 2, 8, 11, 4, dt="bf16", tol=8e-3)

linear_attention("la_gated_delta_gqa", 2, 13, 6, 2, 12, 20, "gated_delta")
linear_attention("la_gated_per_head_mqa", 2, 9, 4, 1, 8, 16, "gated", past=False, decay_per_key=False, scale=0.3)
linear_attention("la_delta_erase_beta_shared", 2, 7, 3, 3, 16, 8, "delta", erase=True, beta_per_head=False)
linear_attention("la_linear_long", 1, 33, 4, 4, 32, 32, "linear")
linear_attention("la_gated_delta_many_pairs", 4, 5, 16, 8, 8, 8, "gated_delta", decay_per_key=False)
linear_attention("la_f16_state_f32", 2, 6, 4, 2, 8, 12, "gated_delta", dt="f16", state_dt="f32", tol=1e-3)
linear_attention("la_f16_no_past", 2, 6, 4, 2, 8, 12, "gated_delta", past=False, dt="f16", tol=1e-3)
linear_attention("la_f64", 2, 8, 2, 2, 8, 8, "gated_delta", erase=True, dt="f64", tol=1e-9)
linear_attention("la_bf16", 1, 6, 2, 2, 8, 8, "delta", dt="bf16", tol=8e-3)



def flex_attention(name, b, hq, hkv, lq, s_, e, ev, score=False, mask=False, prob=False, scale=None, tol=1e-5):
    """FlexAttention (ai.onnx.preview 1) with the per-element modifier bodies the node tests do not cover: score_mod
    (score, b, h, q_idx, kv_idx) adding a relative position and head bias, mask_mod (b, h, q_idx, kv_idx) a causal
    sliding window of 4, prob_mod (prob, b, h, q_idx, kv_idx) scaling by batch; grouped query heads"""
    q, k, v = (rng.standard_normal(sh).astype(np.float32) for sh in ((b, hq, lq, e), (b, hkv, s_, e), (b, hkv, s_, ev)))
    I = TensorProto.INT64
    idx_in = [helper.make_tensor_value_info(nm, I, []) for nm in ("b", "h", "qi", "ki")]
    c = lambda nm, val: helper.make_node("Constant", [], [nm], value=helper.make_tensor(nm, F, [], [val]))
    attrs = {}
    if score:
        attrs["score_mod"] = helper.make_graph(
            [helper.make_node("Sub", ["qi", "ki"], ["rel"]), helper.make_node("Cast", ["rel"], ["relf"], to=F),
             c("w_rel", 0.1), helper.make_node("Mul", ["relf", "w_rel"], ["t1"]),
             helper.make_node("Cast", ["h"], ["hf"], to=F), c("w_h", 0.01), helper.make_node("Mul", ["hf", "w_h"], ["t2"]),
             helper.make_node("Add", ["sc", "t1"], ["t3"]), helper.make_node("Add", ["t3", "t2"], ["sc_out"])],
            "score_mod", [helper.make_tensor_value_info("sc", F, [])] + idx_in, [helper.make_tensor_value_info("sc_out", F, [])])
    if mask:
        attrs["mask_mod"] = helper.make_graph(
            [helper.make_node("GreaterOrEqual", ["qi", "ki"], ["causal"]), helper.make_node("Sub", ["qi", "ki"], ["dist"]),
             helper.make_node("Constant", [], ["win"], value=helper.make_tensor("win", I, [], [4])),
             helper.make_node("Less", ["dist", "win"], ["near"]), helper.make_node("And", ["causal", "near"], ["keep"])],
            "mask_mod", idx_in, [helper.make_tensor_value_info("keep", TensorProto.BOOL, [])])
    if prob:
        attrs["prob_mod"] = helper.make_graph(
            [helper.make_node("Cast", ["b"], ["bf"], to=F), c("w_b", 0.5), helper.make_node("Mul", ["bf", "w_b"], ["t1"]),
             c("one", 1.0), helper.make_node("Add", ["t1", "one"], ["f"]), helper.make_node("Mul", ["pr", "f"], ["pr_out"])],
            "prob_mod", [helper.make_tensor_value_info("pr", F, [])] + idx_in, [helper.make_tensor_value_info("pr_out", F, [])])
    if scale is not None:
        attrs["scale"] = scale
    g = helper.make_graph([helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain="ai.onnx.preview", **attrs)],
                          name, [helper.make_tensor_value_info(nm, F, list(x.shape)) for nm, x in (("q", q), ("k", k), ("v", v))],
                          [helper.make_tensor_value_info("y", F, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)]),
              f"{out}/{name}.onnx")
    rep = hq // hkv
    K, V = np.repeat(k, rep, axis=1).astype(np.float64), np.repeat(v, rep, axis=1).astype(np.float64)
    sc = q.astype(np.float64) @ K.transpose(0, 1, 3, 2) * (scale if scale is not None else 1 / np.sqrt(e))
    bi, hi, qi, ki = np.ix_(np.arange(b), np.arange(hq), np.arange(lq), np.arange(s_))
    if score:
        sc = sc + 0.1 * (qi - ki) + 0.01 * hi
    if mask:
        sc = np.where((qi >= ki) & (qi - ki < 4), sc, -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    if prob:
        p = p * (1 + 0.5 * bi)
    np.savez(f"{out}/{name}_inputs.npz", q=q, k=k, v=v)
    np.savez(f"{out}/{name}_ref.npz", y=(p @ V).astype(np.float32))
    lines.append(f"{name} {tol}")


flex_attention("fa_score_mask_gqa", 2, 6, 2, 9, 9, 16, 8, score=True, mask=True)
flex_attention("fa_prob_scaled", 2, 4, 4, 5, 7, 8, 8, prob=True, scale=0.3)
flex_attention("fa_all_mqa", 1, 4, 1, 12, 12, 8, 16, score=True, mask=True, prob=True)

with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
