#!/usr/bin/python3
"""RNN / GRU / LSTM variants the backend node tests do not cover, with a numpy reference written from the ONNX
operator spec: every direction, both layouts, sequence_lens (reverse reads len - 1 - s), initial states,
peepholes, clip, input_forget, linear_before_reset 0 and 1, other activations with alpha / beta, hidden and
input sizes that are not multiples of a vector, batch > 1, float16 and float64, and W / R / B as graph inputs
(not constants).

usage: make_rnn_models.py OUT_DIR    writes NAME.onnx, NAME_inputs.npz, NAME_ref.npz and models.txt (NAME tol)"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def act(name, x, alpha, beta):
    name = name.lower()
    if name == "tanh":
        return np.tanh(x)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "relu":
        return np.maximum(x, 0)
    if name == "leakyrelu":
        return np.where(x >= 0, x, alpha * x)
    if name == "hardsigmoid":
        return np.clip(alpha * x + beta, 0, 1)
    if name == "scaledtanh":
        return alpha * np.tanh(beta * x)
    if name == "affine":
        return alpha * x + beta
    if name == "softsign":
        return x / (1 + np.abs(x))
    raise ValueError(name)


def reference(cell, x, w, r, b, sl, h0, c0, p, hidden, direction, layout, clip, acts, alphas, betas, lbr,
              input_forget):
    """float64 evaluation of the ONNX recurrence; acts / alphas / betas per direction."""
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, B, _ = x.shape
    D = 2 if direction == "bidirectional" else 1
    H = hidden
    y = np.zeros((T, D, B, H))
    yh = np.zeros((D, B, H))
    yc = np.zeros((D, B, H))
    lens = sl if sl is not None else np.full(B, T)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    for d in range(D):
        rev = direction == "reverse" or d == 1
        f = [lambda v, k=k: act(acts[d][k], cl(v), alphas[d][k], betas[d][k]) for k in range(len(acts[d]))]
        wb = b[d, :GATES[cell] * H] if b is not None else np.zeros(GATES[cell] * H)
        rb = b[d, GATES[cell] * H:] if b is not None else np.zeros(GATES[cell] * H)
        for bi in range(B):
            h = h0[d, bi].copy() if h0 is not None else np.zeros(H)
            c = c0[d, bi].copy() if c0 is not None else np.zeros(H)
            n = int(lens[bi])
            for s in range(n):
                t = n - 1 - s if rev else s
                gx = w[d] @ x[t, bi] + wb
                if cell == "RNN":
                    h = f[0](gx + r[d] @ h + rb)
                elif cell == "GRU":
                    z = f[0](gx[:H] + r[d, :H] @ h + rb[:H])
                    rr = f[0](gx[H:2 * H] + r[d, H:2 * H] @ h + rb[H:2 * H])
                    if lbr:
                        nn = f[1](gx[2 * H:] + rr * (r[d, 2 * H:] @ h + rb[2 * H:]))
                    else:
                        nn = f[1](gx[2 * H:] + r[d, 2 * H:] @ (rr * h) + rb[2 * H:])
                    h = (1 - z) * nn + z * h
                else:
                    g = gx + r[d] @ h + rb
                    pi, po, pf = (p[d, :H], p[d, H:2 * H], p[d, 2 * H:]) if p is not None else (0, 0, 0)
                    i = f[0](g[:H] + pi * c)
                    fg = 1 - i if input_forget else f[0](g[2 * H:3 * H] + pf * c)
                    c = fg * c + i * f[1](g[3 * H:])
                    o = f[0](g[H:2 * H] + po * c)
                    h = o * f[2](c)
                y[t, d, bi] = h
            yh[d, bi], yc[d, bi] = h, c
    if layout:
        return y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)
    return y, yh, yc


def make(out, name, cell, T=5, B=2, I=6, H=5, direction="forward", layout=0, bias=True, seq=False, init=False,
         peep=False, clip=None, acts=None, alphas=None, betas=None, lbr=0, input_forget=0, dtype=np.float32,
         wb_inputs=False, tol=2e-5):
    rng = np.random.default_rng(len(name) * 7919 + sum(map(ord, name)))
    D = 2 if direction == "bidirectional" else 1
    G = GATES[cell]
    x = rng.standard_normal((B, T, I) if layout else (T, B, I))
    w = rng.standard_normal((D, G * H, I)) * 0.5
    r = rng.standard_normal((D, G * H, H)) * 0.5
    b = rng.standard_normal((D, 2 * G * H)) * 0.5 if bias else None
    sl = rng.integers(1, T + 1, B).astype(np.int32) if seq else None
    if seq:
        sl[0] = T
    hs = (B, D, H) if layout else (D, B, H)
    h0 = rng.standard_normal(hs) if init else None
    c0 = rng.standard_normal(hs) if init and cell == "LSTM" else None
    p = rng.standard_normal((D, 3 * H)) * 0.5 if peep else None
    acts_d = acts or DEFAULT_ACTS[cell]
    na = len(DEFAULT_ACTS[cell])
    acts_all = [acts_d[k % len(acts_d)] for k in range(na * D)]
    al = alphas or [0.0] * (na * D)
    be = betas or [0.0] * (na * D)
    cast = lambda a: None if a is None else a.astype(dtype).astype(np.float64)
    x, w, r, b, h0, c0, p = map(cast, (x, w, r, b, h0, c0, p))  # the reference sees the rounded inputs
    per_dir = lambda v: [v[d * na:(d + 1) * na] for d in range(D)]
    y, yh, yc = reference(cell, x, w, r, b, sl, h0, c0, p, H, direction, layout, clip, per_dir(acts_all),
                          per_dir(al), per_dir(be), lbr, input_forget)
    et = {np.float16: TensorProto.FLOAT16, np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}[dtype]
    feeds, inits, ins, inputs = {}, [], [], []

    def arg(nm, v, as_input, et_=et, npdt=dtype):
        if v is None:
            ins.append("")
            return
        ins.append(nm)
        if as_input:
            inputs.append(helper.make_tensor_value_info(nm, et_, list(v.shape)))
            feeds[nm] = v.astype(npdt)
        else:
            inits.append(numpy_helper.from_array(v.astype(npdt), nm))

    arg("X", x, True)
    arg("W", w, wb_inputs)
    arg("R", r, wb_inputs)
    arg("B", b, wb_inputs)
    arg("sequence_lens", sl, True, TensorProto.INT32, np.int32)
    arg("initial_h", h0, True)
    if cell == "LSTM":
        arg("initial_c", c0, True)
        arg("P", p, False)
    while ins and ins[-1] == "":
        ins.pop()
    attrs = dict(hidden_size=H, direction=direction, layout=layout, activations=acts_all)
    if alphas:
        attrs["activation_alpha"] = al
    if betas:
        attrs["activation_beta"] = be
    if clip is not None:
        attrs["clip"] = clip
    if cell == "GRU":
        attrs["linear_before_reset"] = lbr
    if cell == "LSTM":
        attrs["input_forget"] = input_forget
    outs = ["Y", "Y_h"] + (["Y_c"] if cell == "LSTM" else [])
    node = helper.make_node(cell, ins, outs, **attrs)
    refs = [y, yh, yc][:len(outs)]
    ovi = [helper.make_tensor_value_info(o, et, list(v.shape)) for o, v in zip(outs, refs)]
    graph = helper.make_graph([node], name, inputs, ovi, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    np.savez(os.path.join(out, name + "_inputs.npz"), **feeds)
    np.savez(os.path.join(out, name + "_ref.npz"), **{o: v.astype(dtype) for o, v in zip(outs, refs)})
    return "%s %g" % (name, tol)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    m = []
    for cell in ("RNN", "GRU", "LSTM"):
        c = cell.lower()
        m.append(make(out, c + "_fwd", cell))
        m.append(make(out, c + "_rev_seq", cell, direction="reverse", seq=True, B=3))
        m.append(make(out, c + "_bi_seq_init", cell, direction="bidirectional", seq=True, init=True, B=3))
        m.append(make(out, c + "_bi_layout1", cell, direction="bidirectional", layout=1, seq=True, init=True))
        m.append(make(out, c + "_clip", cell, clip=0.7, H=7, I=3))
        m.append(make(out, c + "_nobias_h16", cell, bias=False, H=16, I=20, B=3, T=4))
        m.append(make(out, c + "_h64_b5", cell, H=64, I=33, B=5, T=3, direction="bidirectional", tol=5e-5))
        m.append(make(out, c + "_wb_inputs", cell, wb_inputs=True, direction="bidirectional"))
        m.append(make(out, c + "_f16", cell, dtype=np.float16, direction="bidirectional", seq=True, tol=3e-3))
        m.append(make(out, c + "_f64", cell, dtype=np.float64, layout=1, init=True, tol=1e-9))
    # every activation given takes the alphas / betas listed: ONNX consumes them in order, here they align
    m.append(make(out, "rnn_leaky_bi", "RNN", acts=["LeakyRelu"], alphas=[0.05, 0.2], direction="bidirectional"))
    m.append(make(out, "rnn_relu", "RNN", acts=["Relu"], layout=1))
    m.append(make(out, "rnn_softsign", "RNN", acts=["Softsign"], seq=True, direction="reverse"))
    m.append(make(out, "gru_lbr", "GRU", lbr=1, direction="bidirectional", seq=True, init=True, B=3))
    m.append(make(out, "gru_lbr_h12_clip", "GRU", lbr=1, H=12, clip=1.1, layout=1))
    m.append(make(out, "gru_acts", "GRU", acts=["HardSigmoid", "ScaledTanh"], alphas=[0.3, 0.8], betas=[0.4, 1.2]))
    m.append(make(out, "lstm_peep_clip_seq", "LSTM", peep=True, clip=0.9, direction="bidirectional", seq=True,
                  init=True, B=3))
    m.append(make(out, "lstm_input_forget", "LSTM", input_forget=1, peep=True, layout=1, init=True))
    m.append(make(out, "lstm_acts", "LSTM", acts=["HardSigmoid", "ScaledTanh", "Affine"], alphas=[0.2, 0.9, 0.5],
                  betas=[0.5, 1.1, 0.1]))
    # one direction with >= 65536 multiply-adds per step: the gate blocks run on the thread pool
    m.append(make(out, "lstm_par_gates", "LSTM", H=64, B=4, I=16, T=4, seq=True, direction="reverse", peep=True,
                  tol=5e-5))
    m.append(make(out, "gru_par_gates", "GRU", H=128, B=2, I=8, T=3, init=True, tol=5e-5))
    with open(os.path.join(out, "models.txt"), "w") as f:
        f.write("\n".join(m) + "\n")


if __name__ == "__main__":
    main()
