#!/usr/bin/env python3
"""make_lowbit_models.py DIR: small ONNX models with the low-precision types (int4, uint4, float8, float4) and
their numpy references, for tests/cli/test_lowbit.sh.

onnx 1.12 has no helpers for these types, so the TensorProto fields are written here: int4/uint4 packed two
per byte, the first element in the low nibble, in raw_data or in int32_data (one packed byte per int32, the
last byte padded); float8 one byte per element. The float8 rounding of the references is computed
independently of mlc: every finite float8 value is enumerated from its bit fields, x is clamped to the largest
finite value (saturate=1) and the nearest value is taken, ties to the code with the even mantissa.

Models (each NAME has NAME_inputs.npz and NAME_ref.npz, listed in DIR/models.txt; DIR/tol.txt gives
NAME<TAB>tolerance for float results, the rest must be exact):
  int4_block_matmul   x[3,48] @ DequantizeLinear-21(W int4[48,5], scale[2,5], zp int4[2,5], axis 0,
                      block_size 32: the last block partial), the weight-only quantized LLM pattern
  uint4_axis_matmul   x[2,16] @ DequantizeLinear(W uint4[16,7] in int32_data, per-axis scale[7], zp uint4[7]
                      in int32_data: an odd count, so a padded byte)
  fp8_qdq             QuantizeLinear(x, scale, zp float8e4m3fn 0) -> DequantizeLinear -> MatMul with a
                      float8e4m3fn weight per-axis dequantized (axis 1): a float8 QDQ model
  fp8_io              float8e5m2 input -> Cast float32 -> Mul 2 -> Cast float8e5m2 (saturate 0: overflow to
                      inf) output; inputs given as uint8 bit patterns (NAME_inputs.npz) and as float32
                      values (NAME_inputs_f32.npz); the output is written as float32
  int4_io             int4 input[2,3] -> Transpose -> int4 output, and DequantizeLinear of it (int4 I/O as
                      int8 in .npz), uint4 input -> Cast int32
  lowbit_shape_ops    Reshape, Unsqueeze, Squeeze, Flatten, Expand, Slice, Concat, Pad, Gather, ConstantOfShape on
                      int4 and Identity, Reshape, Transpose on float8 (its bytes, NaN patterns included)
  fp4_cast            float32 -> Cast float4e2m1 -> output (written as float32), and back to float32
  fp8_sweep           Cast float32 -> each float8 type, saturate 1 and 0, BitCast to uint8: bit for bit on
                      values around every rounding and overflow boundary; every bit pattern decoded
  fp8_host            float8 graph inputs given as float32 in .npz (the host's conversion), BitCast to uint8
  e8m0_sweep          Cast float32 -> float8e8m0 in each round_mode, saturate 1 and 0, BitCast to uint8; every
                      bit pattern decoded
DIR/fail.txt lists models that must fail to compile, NAME<TAB>exit code<TAB>expected message part.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
names, tols, fails = [], [], []

FLOAT8E4M3FN, FLOAT8E5M2, UINT4, INT4, FLOAT4E2M1 = 17, 19, 21, 22, 23


# ---------------------------------------------------------------- independent float8 / float4 references
def lowfloat_values(ebits, mbits, bias, fn_nan=False, inf=False, nbits=8):
    """code -> value for every code of a small float format"""
    vals = {}
    for code in range(1 << nbits):
        s = code >> (nbits - 1)
        e = (code >> mbits) & ((1 << ebits) - 1)
        m = code & ((1 << mbits) - 1)
        mag = code & ((1 << (nbits - 1)) - 1)
        if fn_nan and mag == (1 << (nbits - 1)) - 1:
            v = np.nan
        elif inf and e == (1 << ebits) - 1:
            v = np.inf if m == 0 else np.nan
        elif e == 0:
            v = m * 2.0 ** (1 - bias - mbits)
        else:
            v = (1 + m / 2.0 ** mbits) * 2.0 ** (e - bias)
        vals[code] = -v if s else v
    return vals


E4M3FN = lowfloat_values(4, 3, 7, fn_nan=True)
E5M2 = lowfloat_values(5, 2, 15, inf=True)
E2M1 = lowfloat_values(2, 1, 1, nbits=4)


def round_to(table, x, saturate=True, overflow_code=None):
    """nearest finite value (ties: even mantissa, i.e. even code); saturate clamps first"""
    finite = sorted((c, v) for c, v in table.items() if np.isfinite(v))
    vmax = max(v for _, v in finite)
    res = []
    for xv in np.asarray(x, np.float64).ravel():
        if np.isnan(xv):
            res.append(next(c for c, v in table.items() if np.isnan(v) and c < (1 << 7)))
            continue
        if saturate:
            xv = min(max(xv, -vmax), vmax)
        best = None
        for c, v in finite:
            if v == 0 and (np.signbit(v) != np.signbit(xv)):
                continue  # keep the sign of zero
            d = abs(v - xv)
            if best is None or d < best[0] or (d == best[0] and c % 2 == 0 and best[1] % 2 == 1):
                best = (d, c)
        if not saturate and abs(xv) > vmax:
            # beyond the largest finite: does it round to it (within half an ulp of the next power)?
            c_max = max(c for c, v in finite if v == vmax)
            ulp = vmax - table[c_max - 1]
            if abs(xv) >= vmax + ulp / 2:
                best = (0, overflow_code | (0x80 if xv < 0 else 0))
        res.append(best[1])
    return np.array(res, np.uint8).reshape(np.shape(x))


def decode(table, codes):
    return np.array([table[int(c)] for c in np.asarray(codes).ravel()], np.float32).reshape(np.shape(codes))


# ---------------------------------------------------------------- TensorProto writers
def pack4(vals):
    """int4 / uint4 values -> packed bytes, first element in the low nibble"""
    v = (np.asarray(vals).ravel().astype(np.int64) & 15).astype(np.uint8)
    if v.size % 2:
        v = np.append(v, np.uint8(0))
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8)


def tensor(name, elem_type, dims, raw=None, int32=None):
    t = TensorProto()
    t.name = name
    t.data_type = elem_type
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = bytes(raw)
    else:
        t.int32_data.extend(int(b) for b in int32)
    return t


def vi(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def save(name, nodes, inputs, outputs, inits, ins, refs, opset=21, extra_inputs=None):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    onnx.save(m, f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", **ins)
    np.savez(f"{out}/{name}_ref.npz", **refs)
    for sfx, extra in (extra_inputs or {}).items():
        np.savez(f"{out}/{name}_inputs_{sfx}.npz", **extra)
    names.append(name)


# ---------------------------------------------------------------- int4 blocked weight-only quantized MatMul
K, N, B = 48, 5, 32
nb = (K + B - 1) // B
W = rng.integers(-8, 8, size=(K, N))
zp = rng.integers(-8, 8, size=(nb, N))
sc = (rng.random((nb, N)) * 0.1 + 0.01).astype(np.float32)
x = rng.standard_normal((3, K)).astype(np.float32)
rows = np.arange(K) // B
Wf = ((W - zp[rows]).astype(np.float32) * sc[rows]).astype(np.float32)
save("int4_block_matmul",
     [helper.make_node("DequantizeLinear", ["W", "scale", "zp"], ["Wf"], axis=0, block_size=B),
      helper.make_node("MatMul", ["x", "Wf"], ["y"])],
     [vi("x", TensorProto.FLOAT, [3, K])], [vi("y", TensorProto.FLOAT, [3, N])],
     [tensor("W", INT4, [K, N], raw=pack4(W)), helper.make_tensor("scale", TensorProto.FLOAT, [nb, N], sc.ravel()),
      tensor("zp", INT4, [nb, N], raw=pack4(zp))],
     {"x": x}, {"y": (x.astype(np.float64) @ Wf.astype(np.float64)).astype(np.float32)})
tols.append(("int4_block_matmul", 1e-5))

# ---------------------------------------------------------------- uint4 per-axis, int32_data
K2, N2 = 16, 7
W2 = rng.integers(0, 16, size=(K2, N2))
zp2 = rng.integers(0, 16, size=(N2,))
sc2 = (rng.random(N2) * 0.2 + 0.05).astype(np.float32)
x2 = rng.standard_normal((2, K2)).astype(np.float32)
W2f = ((W2 - zp2[None, :]).astype(np.float32) * sc2[None, :]).astype(np.float32)
save("uint4_axis_matmul",
     [helper.make_node("DequantizeLinear", ["W", "scale", "zp"], ["Wf"], axis=1),
      helper.make_node("MatMul", ["x", "Wf"], ["y"])],
     [vi("x", TensorProto.FLOAT, [2, K2])], [vi("y", TensorProto.FLOAT, [2, N2])],
     [tensor("W", UINT4, [K2, N2], int32=pack4(W2)), helper.make_tensor("scale", TensorProto.FLOAT, [N2], sc2),
      tensor("zp", UINT4, [N2], int32=pack4(zp2))],
     {"x": x2}, {"y": (x2.astype(np.float64) @ W2f.astype(np.float64)).astype(np.float32)})
tols.append(("uint4_axis_matmul", 1e-5))

# ---------------------------------------------------------------- float8 QDQ
x3 = (rng.standard_normal((4, 16)) * 3).astype(np.float32)
x3[0, :4] = [1000.0, -1000.0, 0.0, -0.0]  # saturates to +-448 * scale
s3 = np.float32(0.5)
W3codes = round_to(E4M3FN, rng.standard_normal((16, 8)) * 100)
ws3 = (rng.random(8) * 0.01 + 0.001).astype(np.float32)
q3 = round_to(E4M3FN, (x3 / s3).astype(np.float32))
xd3 = (decode(E4M3FN, q3) * s3).astype(np.float32)
W3f = (decode(E4M3FN, W3codes) * ws3[None, :]).astype(np.float32)
save("fp8_qdq",
     [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
      helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["xd"]),
      helper.make_node("DequantizeLinear", ["W", "ws"], ["Wf"], axis=1),
      helper.make_node("MatMul", ["xd", "Wf"], ["y"])],
     [vi("x", TensorProto.FLOAT, [4, 16])], [vi("y", TensorProto.FLOAT, [4, 8]), vi("xd", TensorProto.FLOAT, [4, 16])],
     [helper.make_tensor("s", TensorProto.FLOAT, [], [float(s3)]), tensor("zp", FLOAT8E4M3FN, [], raw=[0]),
      tensor("W", FLOAT8E4M3FN, [16, 8], raw=W3codes.ravel()), helper.make_tensor("ws", TensorProto.FLOAT, [8], ws3)],
     {"x": x3}, {"xd": xd3, "y": (xd3.astype(np.float64) @ W3f.astype(np.float64)).astype(np.float32)})
tols.append(("fp8_qdq", 1e-5))

# ---------------------------------------------------------------- float8 inputs and outputs
x4 = np.array([0.0, -0.0, 1.5, -3.25, 20000.0, 40000.0, -60000.0, 1e-5, np.inf, np.nan], np.float32)
c4 = round_to(E5M2, x4, saturate=False, overflow_code=0x7c)
c4[8] = 0x7c  # inf is a value of E5M2
doubled = decode(E5M2, c4).astype(np.float32) * np.float32(2)
y4 = decode(E5M2, round_to(E5M2, doubled, saturate=False, overflow_code=0x7c))
save("fp8_io",
     [helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
      helper.make_node("Mul", ["xf", "two"], ["yf"]),
      helper.make_node("Cast", ["yf"], ["y"], to=FLOAT8E5M2, saturate=0)],
     [vi("x", FLOAT8E5M2, [10])], [vi("y", FLOAT8E5M2, [10]), vi("xf", TensorProto.FLOAT, [10])],
     [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])],
     {"x": c4}, {"y": y4, "xf": decode(E5M2, c4)}, opset=19,
     extra_inputs={"f32": {"x": decode(E5M2, c4)}})

# ---------------------------------------------------------------- int4 / uint4 inputs and outputs
x5 = np.array([[-8, -1, 0], [1, 5, 7]], np.int8)
u5 = np.array([0, 3, 15, 9], np.uint8)
save("int4_io",
     [helper.make_node("Transpose", ["x"], ["xt"]),
      helper.make_node("DequantizeLinear", ["xt", "s"], ["xd"]),
      helper.make_node("Cast", ["u"], ["ui"], to=TensorProto.INT32)],
     [vi("x", INT4, [2, 3]), vi("u", UINT4, [4])],
     [vi("xt", INT4, [3, 2]), vi("xd", TensorProto.FLOAT, [3, 2]), vi("ui", TensorProto.INT32, [4])],
     [helper.make_tensor("s", TensorProto.FLOAT, [], [0.25])],
     {"x": x5, "u": u5}, {"xt": x5.T.copy(), "xd": (x5.T.astype(np.float32) * np.float32(0.25)), "ui": u5.astype(np.int32)})

# ---------------------------------------------------------------- the shape ops on int4 / float8 values
# Reshape, Unsqueeze, Squeeze, Flatten, Expand, Slice, Concat, Pad (with a constant int4 pad value), Gather,
# Identity and ConstantOfShape (an int4 value): ONNX allows the low-precision types there, and their bytes move
# unchanged (a float8 NaN pattern included).
x7 = np.array([[-8, -3, 0, 7], [1, 2, -1, 5]], np.int8)
f7 = np.array([0x00, 0x80, 0x7f, 0xff, 0x38, 0xb8], np.uint8)  # e4m3fn: 0, -0, NaN, -NaN, 1, -1
i64 = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
save("lowbit_shape_ops",
     [helper.make_node("Reshape", ["x", "shp"], ["r"]),
      helper.make_node("Unsqueeze", ["r", "ax0"], ["u"]),
      helper.make_node("Squeeze", ["u", "ax0"], ["sq"]),
      helper.make_node("Flatten", ["x"], ["fl"], axis=0),
      helper.make_node("Expand", ["x", "eshp"], ["ex"]),
      helper.make_node("Slice", ["x", "st", "en", "axs"], ["sl"]),
      helper.make_node("Concat", ["x", "x"], ["cc"], axis=0),
      helper.make_node("Pad", ["x", "pads", "padv"], ["pd"]),
      helper.make_node("Gather", ["x", "gi"], ["ga"], axis=1),
      helper.make_node("ConstantOfShape", ["cshp"], ["co"], value=tensor("v", INT4, [1], raw=pack4([-5]))),
      helper.make_node("Identity", ["f"], ["fi"]),
      helper.make_node("Reshape", ["f", "fshp"], ["fr"]),
      helper.make_node("Transpose", ["fr"], ["ft"]),
      helper.make_node("BitCast", ["ft"], ["fb"], to=TensorProto.UINT8)],
     [vi("x", INT4, [2, 4]), vi("f", FLOAT8E4M3FN, [6])],
     [vi("sq", INT4, [4, 2]), vi("fl", INT4, [1, 8]), vi("ex", INT4, [3, 2, 4]), vi("sl", INT4, [2, 2]),
      vi("cc", INT4, [4, 4]), vi("pd", INT4, [2, 6]), vi("ga", INT4, [2, 2]), vi("co", INT4, [2, 3]),
      vi("fi", FLOAT8E4M3FN, [6]), vi("fb", TensorProto.UINT8, [3, 2])],
     [i64("shp", [4, 2]), i64("ax0", [0]), i64("eshp", [3, 2, 4]), i64("st", [1]), i64("en", [3]), i64("axs", [1]),
      i64("pads", [0, 1, 0, 1]), tensor("padv", INT4, [], raw=pack4([-7])), i64("gi", [3, 0]), i64("cshp", [2, 3]),
      i64("fshp", [2, 3])],
     {"x": x7, "f": f7},
     {"sq": x7.reshape(4, 2), "fl": x7.reshape(1, 8), "ex": np.broadcast_to(x7, (3, 2, 4)).copy(), "sl": x7[:, 1:3].copy(),
      "cc": np.concatenate([x7, x7]), "pd": np.pad(x7, ((0, 0), (1, 1)), constant_values=-7), "ga": x7[:, [3, 0]].copy(),
      "co": np.full((2, 3), -5, np.int8), "fi": decode(E4M3FN, f7), "fb": f7.reshape(2, 3).T.copy()})

# ---------------------------------------------------------------- float4
x6 = np.array([0.25, 0.75, 1.25, 2.5, 5.0, 7.0, -100.0, -0.1, -1.75], np.float32)
c6 = round_to(E2M1, x6)
save("fp4_cast",
     [helper.make_node("Cast", ["x"], ["y"], to=FLOAT4E2M1),
      helper.make_node("Cast", ["y"], ["back"], to=TensorProto.FLOAT)],
     [vi("x", TensorProto.FLOAT, [9])], [vi("y", FLOAT4E2M1, [9]), vi("back", TensorProto.FLOAT, [9])], [],
     {"x": x6}, {"y": decode(E2M1, c6), "back": decode(E2M1, c6)}, opset=23)

# ---------------------------------------------------------------- conversion sweep, bit for bit
# Every float8 format, saturate 1 and 0, on values around every boundary: each format's values and the
# midpoints between neighbours (exact ties) and the float32 values either side of them, subnormals, the
# largest finite and beyond, infinities, NaN, signed zeros, random values over the whole float32 range. The
# float8 results go out through BitCast to uint8, so signs of zero and NaN patterns are compared too. Also
# every float8 bit pattern decoded (BitCast from uint8, Cast to float32).
FORMATS = {  # ONNX type: (values by code, NaN code, no-saturate overflow code (or None: inf), fnuz)
    17: (E4M3FN, 0x7f, 0x7f, False),
    18: (lowfloat_values(4, 3, 8), 0x80, 0x80, True),
    19: (E5M2, 0x7e, 0x7c, False),
    20: (lowfloat_values(5, 2, 16), 0x80, 0x80, True),
}
for t in (18, 20):  # FNUZ: 0x80 is NaN, not -0
    FORMATS[t][0][0x80] = np.nan


def round_vec(table, nan_code, ovf_code, fnuz, x, saturate):
    codes = np.array([c for c in range(256) if np.isfinite(table[c])])
    vals = np.array([table[c] for c in codes])
    vmax = vals.max()
    xs = np.asarray(x, np.float64)
    xc = np.clip(xs, -vmax, vmax) if saturate else xs
    d = np.abs(xc[:, None] - vals[None, :])
    zero_sign_bad = (vals[None, :] == 0) & (np.signbit(vals)[None, :] != np.signbit(xc)[:, None])
    if not fnuz:  # a zero keeps its sign (FNUZ has no -0)
        d[zero_sign_bad] = np.inf
    with np.errstate(invalid="ignore"):
        best = d.min(axis=1)
        cand = d == best[:, None]
    even = cand & (codes[None, :] % 2 == 0)
    pick = np.where(even.any(axis=1), even.argmax(axis=1), cand.argmax(axis=1))
    res = codes[pick].astype(np.int64)
    sign = np.where(np.signbit(xs), 0x80, 0)
    over = np.zeros(xs.shape, bool)
    if not saturate:  # beyond the largest finite by more than half an ulp, or by half when its code is odd
        top = np.sort(vals[vals > 0])
        limit = top[-1] + (top[-1] - top[-2]) / 2
        odd = int(codes[vals == top[-1]][0]) % 2 == 1
        over = (np.abs(xs) > limit) | ((np.abs(xs) == limit) & odd)
        res = np.where(over, ovf_code | (0 if fnuz else sign), res)
    res = np.where(np.isnan(xs), nan_code | (0 if fnuz else sign), res)
    return res.astype(np.uint8)


sweep = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30, -1e-30, 3.4e38, 1e-45], np.float32)]
for t, (table, *_r) in FORMATS.items():
    v = np.unique(np.array([table[c] for c in range(256) if np.isfinite(table[c])], np.float32))
    mid = ((v[:-1].astype(np.float64) + v[1:]) / 2).astype(np.float32)
    top = v[-1] + (v[-1] - v[-2]) / 2  # the overflow boundary and beyond
    extra = np.array([top, -top, top * 2, v[-1] * 1.01], np.float32)
    sweep += [v, mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf)), extra,
              np.nextafter(extra, np.float32(0))]
sweep.append((rng.standard_normal(500) * np.exp2(rng.integers(-30, 30, 500))).astype(np.float32))
sx = np.concatenate(sweep).astype(np.float32)
nodes, outs, refs = [], [], {}
for t, (table, nan_code, ovf, fnuz) in FORMATS.items():
    for sat in (1, 0):
        nm = f"t{t}_s{sat}"
        nodes += [helper.make_node("Cast", ["x"], [nm + "_f8"], to=t, saturate=sat),
                  helper.make_node("BitCast", [nm + "_f8"], [nm], to=TensorProto.UINT8)]
        outs.append(vi(nm, TensorProto.UINT8, [sx.size]))
        refs[nm] = round_vec(table, nan_code, ovf, fnuz, sx, sat)
    nm = f"t{t}_decode"
    nodes += [helper.make_node("BitCast", ["codes"], [nm + "_f8"], to=t),
              helper.make_node("Cast", [nm + "_f8"], [nm], to=TensorProto.FLOAT)]
    outs.append(vi(nm, TensorProto.FLOAT, [256]))
    refs[nm] = np.array([table[c] for c in range(256)], np.float32)
save("fp8_sweep", nodes, [vi("x", TensorProto.FLOAT, [sx.size]), vi("codes", TensorProto.UINT8, [256])], outs, [],
     {"x": sx, "codes": np.arange(256, dtype=np.uint8)}, refs, opset=19)

# the host's conversion of float32 .npz values for a float8 input (rt_lowbit_from_npz: no saturation), bit for bit
nodes, ins_, outs, refs = [], [], [], {}
for t, (table, nan_code, ovf, fnuz) in FORMATS.items():
    nodes.append(helper.make_node("BitCast", [f"x{t}"], [f"b{t}"], to=TensorProto.UINT8))
    ins_.append(vi(f"x{t}", t, [sx.size]))
    outs.append(vi(f"b{t}", TensorProto.UINT8, [sx.size]))
    refs[f"b{t}"] = round_vec(table, nan_code, ovf, fnuz, sx, False)
save("fp8_host", nodes, ins_, outs, [], {f"x{t}": sx for t in FORMATS}, refs, opset=19)

# float8e8m0 (Cast-25 round_mode up / down / nearest, saturate 1 / 0), bit for bit, on powers of two, values
# just above and below them, the midpoints 1.5 * 2^e (ties) and either side, the top of the range, zeros,
# infinities and NaN: normal values from log2 in float64 (up: ceil, down: floor, nearest: up from 1.5 * 2^e);
# zero and float32 subnormals keep ONNX's reference's reading of the exponent field (0, or 1 rounding up a
# nonzero mantissa). No sign: -x converts as x. Every bit pattern decoded too.
def e8m0_ref(x, mode, sat):
    x = np.asarray(x, np.float32)
    res = []
    for v in x.astype(np.float64):
        a = abs(v)
        if not np.isfinite(a):
            res.append(0xFF)
            continue
        if a < 2.0 ** -126:  # zero / subnormal: exponent field 0
            up = a != 0 and (mode == "up" or (mode == "nearest" and a > 2.0 ** -127))
            res.append(int(up))
            continue
        k = int(np.floor(np.log2(a)))
        while 2.0 ** k > a:
            k -= 1
        while 2.0 ** (k + 1) <= a:
            k += 1
        inc = (a > 2.0 ** k) if mode == "up" else (a >= 1.5 * 2.0 ** k) if mode == "nearest" else False
        code = k + 127 + int(inc)
        if code > 0xFE:
            code = 0xFE if sat else 0xFF
        res.append(code)
    return np.array(res, np.uint8)


p2 = np.exp2(np.arange(-126, 128, dtype=np.float64)).astype(np.float32)
ex = np.concatenate([p2, np.nextafter(p2, np.float32(np.inf)), np.nextafter(p2, np.float32(0)),
                     (p2[:-1] * 1.5).astype(np.float32), np.nextafter((p2[:-1] * 1.5).astype(np.float32), np.float32(0)),
                     np.nextafter((p2[:-1] * 1.5).astype(np.float32), np.float32(np.inf)),
                     np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-40, 0.124, -0.3, 1.1], np.float32)])
ex = np.concatenate([ex, -ex[:50]]).astype(np.float32)
nodes, outs, refs = [], [], {}
for mode in ("up", "down", "nearest"):
    for sat in (1, 0):
        nm = f"{mode}_s{sat}"
        nodes += [helper.make_node("Cast", ["x"], [nm + "_f8"], to=24, saturate=sat, round_mode=mode),
                  helper.make_node("BitCast", [nm + "_f8"], [nm], to=TensorProto.UINT8)]
        outs.append(vi(nm, TensorProto.UINT8, [ex.size]))
        refs[nm] = e8m0_ref(ex, mode, sat)
nodes += [helper.make_node("BitCast", ["codes"], ["c_f8"], to=24),
          helper.make_node("Cast", ["c_f8"], ["decoded"], to=TensorProto.FLOAT)]
outs.append(vi("decoded", TensorProto.FLOAT, [256]))
refs["decoded"] = np.array([np.nan if c == 255 else 2.0 ** (c - 127) for c in range(256)], np.float32)
save("e8m0_sweep", nodes, [vi("x", TensorProto.FLOAT, [ex.size]), vi("codes", TensorProto.UINT8, [256])], outs, [],
     {"x": ex, "codes": np.arange(256, dtype=np.uint8)}, refs, opset=25)

# ---------------------------------------------------------------- must fail
g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "fp8_add",
                      [vi("a", FLOAT8E4M3FN, [4]), vi("b", FLOAT8E4M3FN, [4])], [vi("y", FLOAT8E4M3FN, [4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
m.ir_version = 10
onnx.save(m, f"{out}/fp8_add.onnx")
fails.append(("fp8_add", 3, "node 'Add_0'" if False else "add: dtype float8_e4m3fn is not supported"))
g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "int4_matmul",
                      [vi("a", INT4, [2, 2]), vi("b", INT4, [2, 2])], [vi("y", INT4, [2, 2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
m.ir_version = 10
onnx.save(m, f"{out}/int4_matmul.onnx")
fails.append(("int4_matmul", 3, "nn.matmul of int4 is not supported"))
g = helper.make_graph([helper.make_node("Cast", ["a"], ["y"], to=24, round_mode="sideways")], "cast_e8m0_mode",
                      [vi("a", TensorProto.FLOAT, [4])], [vi("y", 24, [4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
m.ir_version = 11
onnx.save(m, f"{out}/cast_e8m0_mode.onnx")
fails.append(("cast_e8m0_mode", 2, "(Cast, opset 25): error: round_mode 'sideways' is not one of up, down, nearest"))
g = helper.make_graph([helper.make_node("QuantizeLinear", ["a", "s", "z"], ["y"])], "quant_e8m0",
                      [vi("a", TensorProto.FLOAT, [4])], [vi("y", 24, [4])],
                      initializer=[helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]), tensor("z", 24, [], raw=[127])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
m.ir_version = 11
onnx.save(m, f"{out}/quant_e8m0.onnx")
fails.append(("quant_e8m0", 3, "quantized type float8_e8m0fnu is not supported"))

with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(names) + "\n")
with open(f"{out}/tol.txt", "w") as f:
    f.write("".join(f"{n}\t{t}\n" for n, t in tols))
with open(f"{out}/fail.txt", "w") as f:
    f.write("".join(f"{n}\t{c}\t{msg}\n" for n, c, msg in fails))
