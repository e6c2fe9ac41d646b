/* ONNX converters of the math family (see families.def): each maps an ONNX node onto graph ops of src/topi.
 *
 * Most ONNX elementwise ops map 1:1 onto a graph op of src/topi/math.c; the SIMPLE table lists them with
 * the float attributes they carry and their defaults. The rest normalise opset differences:
 *   - Add/Sub/Mul/Div/Pow/logic/comparisons before opset 7 had `broadcast`/`axis`: accepted where they
 *     mean numpy broadcasting (trailing alignment), otherwise an unsupported error naming the attribute;
 *   - Max/Min/Sum/Mean are variadic: a chain of binary broadcast ops (Mean divides by a constant count);
 *   - Clip takes min/max as attributes before opset 11 (-> clip with a_min/a_max) and as optional inputs
 *     from 11 (-> maximum/minimum with those scalar tensors, exact for every dtype);
 *   - Cast's `to` is a string in opset 1..5 and a dtype number after; CastLike takes it from input 1;
 *   - BitCast (opset 26) reinterprets each element's bits as `to`, which must have the input's bit width;
 *   - Mod's fmod selects C fmod semantics ("mod") or python's ("floor_mod"); BitShift's direction picks
 *     left_shift/right_shift. */
#include <math.h>
#include <string.h>
#include "frontends/onnx/onnx.h"
#include "runtime/rt.h"

/* ---- helpers ---- */

static Node *emit(OnnxCtx *cx, const OnnxNode *n, const char *op, int nin, Value **ins, Diag *d) {
  return onnx_emit(cx, n, op, nin, ins, 1, d);
}

/* one graph op without attributes */
static mlc_status emit_plain(OnnxCtx *cx, const OnnxNode *n, const char *op, int nin, Value **ins, Value **out,
                             Diag *d) {
  return onnx_finish_one(cx, n, emit(cx, n, op, nin, ins, d), out, d);
}

/* x converted to its own dtype: an identity (single-input Sum/Mean, empty Clip) */
static mlc_status emit_identity(OnnxCtx *cx, const OnnxNode *n, Value *x, Value **out, Diag *d) {
  Node *nd = emit(cx, n, "cast", 1, &x, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "dtype", x->type.dtype);
  return onnx_finish_one(cx, n, nd, out, d);
}

/* Before opset 7 the binary ops broadcast only with broadcast=1, aligning B at `axis` of A. Where that is
 * what numpy broadcasting does (no axis, or B ending at A's last dim), the graph op is the same. */
static mlc_status check_legacy_broadcast(OnnxCtx *cx, const OnnxNode *n, Diag *d) {
  if (n->opset >= 7 || n->ninputs < 2 || !n->inputs[0] || !n->inputs[1]) return MLC_OK;
  const TensorType *a = &n->inputs[0]->type, *b = &n->inputs[1]->type;
  int64_t bc = onnx_attr_int(n, "broadcast", 0);
  if (!bc) {
    if (!tt_equal(a, b) && (a->ndim != b->ndim || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->ndim)))
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "input shapes differ and broadcast=0 (opset %d)", n->opset);
    return MLC_OK;
  }
  if (onnx_has_attr(n, "axis")) {
    int64_t axis = onnx_attr_int(n, "axis", 0);
    if (axis < 0) axis += a->ndim;
    if (axis + b->ndim != a->ndim)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "legacy broadcast with axis=%lld of a rank-%d B into a rank-%d A is not supported",
                        (long long)onnx_attr_int(n, "axis", 0), b->ndim, a->ndim);
  }
  return MLC_OK;
}

/* ---- the 1:1 ops ---- */

typedef struct FloatAttr {
  const char *name;
  double dflt;
} FloatAttr;

static const struct {
  const char *onnx; /* ONNX op type */
  const char *op;   /* graph op */
  int nin;          /* inputs */
  bool legacy_bcast; /* had broadcast/axis before opset 7 */
  FloatAttr attrs[2]; /* float attributes copied with their defaults */
} SIMPLE[] = {
    {"Add", "add", 2, true},
    {"Sub", "subtract", 2, true},
    {"Mul", "multiply", 2, true},
    {"Div", "divide", 2, true},
    {"Pow", "power", 2, true},
    {"And", "logical_and", 2, true},
    {"Or", "logical_or", 2, true},
    {"Xor", "logical_xor", 2, true},
    {"Equal", "equal", 2, true},
    {"Less", "less", 2, true},
    {"Greater", "greater", 2, true},
    {"LessOrEqual", "less_equal", 2},
    {"GreaterOrEqual", "greater_equal", 2},
    {"BitwiseAnd", "bitwise_and", 2},
    {"BitwiseOr", "bitwise_or", 2},
    {"BitwiseXor", "bitwise_xor", 2},
    {"BitwiseNot", "bitwise_not", 1},
    {"Not", "logical_not", 1},
    {"Where", "where", 3},
    {"PRelu", "nn.prelu", 2},
    {"Neg", "negative", 1},
    {"Abs", "abs", 1},
    {"Exp", "exp", 1},
    {"Log", "log", 1},
    {"Sqrt", "sqrt", 1},
    {"Reciprocal", "reciprocal", 1},
    {"Sigmoid", "sigmoid", 1},
    {"Tanh", "tanh", 1},
    {"Erf", "erf", 1},
    {"Sin", "sin", 1},
    {"Cos", "cos", 1},
    {"Tan", "tan", 1},
    {"Asin", "asin", 1},
    {"Acos", "acos", 1},
    {"Atan", "atan", 1},
    {"Sinh", "sinh", 1},
    {"Cosh", "cosh", 1},
    {"Asinh", "asinh", 1},
    {"Acosh", "acosh", 1},
    {"Atanh", "atanh", 1},
    {"Floor", "floor", 1},
    {"Ceil", "ceil", 1},
    {"Round", "round", 1},
    {"Sign", "sign", 1},
    {"IsNaN", "isnan", 1},
    {"Relu", "nn.relu", 1},
    {"LeakyRelu", "nn.leaky_relu", 1, false, {{"alpha", 0.01}}},
    {"HardSigmoid", "nn.hard_sigmoid", 1, false, {{"alpha", 0.2}, {"beta", 0.5}}},
    {"HardSwish", "nn.hard_swish", 1},
    {"Elu", "nn.elu", 1, false, {{"alpha", 1.0}}},
    {"Selu", "nn.selu", 1, false, {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}}},
    {"Celu", "nn.celu", 1, false, {{"alpha", 1.0}}},
    {"Mish", "nn.mish", 1},
    {"Swish", "nn.swish", 1, false, {{"alpha", 1.0}}},
    {"Softplus", "nn.softplus", 1},
    {"Softsign", "nn.softsign", 1},
    {"ThresholdedRelu", "nn.thresholded_relu", 1, false, {{"alpha", 1.0}}},
    {"Shrink", "nn.shrink", 1, false, {{"bias", 0.0}, {"lambd", 0.5}}},
};

static mlc_status conv_simple(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  size_t k = 0;
  while (k < countof(SIMPLE) && strcmp(SIMPLE[k].onnx, n->op_type) != 0) k++;
  if (k == countof(SIMPLE)) return onnx_error(cx, n, d, MLC_ERR_INTERNAL, "no math mapping for %s", n->op_type);
  mlc_status st = onnx_need_inputs(cx, n, SIMPLE[k].nin, d);
  if (st != MLC_OK) return st;
  if (SIMPLE[k].legacy_bcast && (st = check_legacy_broadcast(cx, n, d)) != MLC_OK) return st;
  Node *nd = emit(cx, n, SIMPLE[k].op, SIMPLE[k].nin, n->inputs, d);
  if (nd)
    for (int i = 0; i < 2 && SIMPLE[k].attrs[i].name; i++)
      ir_set_float(onnx_graph(cx), nd, SIMPLE[k].attrs[i].name,
                   onnx_attr_float(n, SIMPLE[k].attrs[i].name, SIMPLE[k].attrs[i].dflt));
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---- ops with their own normalisation ---- */

static mlc_status conv_gelu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st != MLC_OK) return st;
  const char *ap = onnx_attr_string(n, "approximate", "none");
  if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "approximate must be 'none' or 'tanh', got '%s'", ap);
  Node *nd = emit(cx, n, "nn.gelu", 1, n->inputs, d);
  if (nd) ir_set_string(onnx_graph(cx), nd, "approximate", ap);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* SwiGLU(a, b) = Swish(a, alpha) * b (opset 28) */
static mlc_status conv_swiglu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st != MLC_OK) return st;
  Node *nd = emit(cx, n, "nn.swish", 1, n->inputs, d);
  if (nd) ir_set_float(onnx_graph(cx), nd, "alpha", onnx_attr_float(n, "alpha", 1.0));
  Value *gate;
  if ((st = onnx_finish_one(cx, n, nd, &gate, d)) != MLC_OK) return st;
  Value *ins[2] = {gate, n->inputs[1]};
  return emit_plain(cx, n, "multiply", 2, ins, &outs[0], d);
}

static mlc_status conv_isinf(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st != MLC_OK) return st;
  Node *nd = emit(cx, n, "isinf", 1, n->inputs, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "detect_positive", onnx_attr_int(n, "detect_positive", 1));
    ir_set_int(onnx_graph(cx), nd, "detect_negative", onnx_attr_int(n, "detect_negative", 1));
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status conv_mod(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st != MLC_OK) return st;
  int64_t fmod_ = onnx_attr_int(n, "fmod", 0);
  if (fmod_ != 0 && fmod_ != 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "fmod must be 0 or 1");
  return emit_plain(cx, n, fmod_ ? "mod" : "floor_mod", 2, n->inputs, &outs[0], d);
}

static mlc_status conv_bitshift(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st != MLC_OK) return st;
  const char *dir = onnx_attr_string(n, "direction", "");
  const char *op = strcmp(dir, "LEFT") == 0 ? "left_shift" : strcmp(dir, "RIGHT") == 0 ? "right_shift" : NULL;
  if (!op) return onnx_error(cx, n, d, MLC_ERR_INVALID, "direction must be LEFT or RIGHT, got '%s'", dir);
  return emit_plain(cx, n, op, 2, n->inputs, &outs[0], d);
}

/* Max, Min, Sum, Mean: variadic with broadcasting, as a left fold of binary ops */
static mlc_status conv_variadic(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const char *op = strcmp(n->op_type, "Max") == 0 ? "maximum" : strcmp(n->op_type, "Min") == 0 ? "minimum" : "add";
  if (n->ninputs < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs at least one input", n->op_type);
  mlc_status st = onnx_need_inputs(cx, n, n->ninputs, d);
  if (st != MLC_OK) return st;
  Value *acc = n->inputs[0];
  if (n->ninputs == 1) {
    st = emit_identity(cx, n, acc, &acc, d);
    if (st != MLC_OK) return st;
  }
  for (int i = 1; i < n->ninputs; i++) {
    Value *ins[2] = {acc, n->inputs[i]};
    if ((st = emit_plain(cx, n, op, 2, ins, &acc, d)) != MLC_OK) return st;
  }
  if (strcmp(n->op_type, "Mean") == 0 && n->ninputs > 1) {
    Value *cnt = onnx_scalar(cx, n, "const", acc->type.dtype, (double)n->ninputs);
    if (!cnt)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Mean of dtype %s is not supported",
                        mlc_dtype_name(acc->type.dtype));
    Value *ins[2] = {acc, cnt};
    if ((st = emit_plain(cx, n, "divide", 2, ins, &acc, d)) != MLC_OK) return st;
  }
  outs[0] = acc;
  return MLC_OK;
}

static mlc_status conv_clip(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st != MLC_OK) return st;
  Value *x = n->inputs[0];
  if (n->opset < 11) {
    Node *nd = emit(cx, n, "clip", 1, &x, d);
    if (nd) {
      ir_set_float(onnx_graph(cx), nd, "a_min", onnx_attr_float(n, "min", -INFINITY));
      ir_set_float(onnx_graph(cx), nd, "a_max", onnx_attr_float(n, "max", INFINITY));
    }
    return onnx_finish_one(cx, n, nd, &outs[0], d);
  }
  Value *lo = n->ninputs > 1 ? n->inputs[1] : NULL, *hi = n->ninputs > 2 ? n->inputs[2] : NULL;
  for (int i = 0; i < 2; i++) {
    Value *b = i ? hi : lo;
    if (b && b->type.ndim != 0 && !(b->type.ndim == 1 && b->type.dims[0] == 1))
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Clip %s must be a scalar", i ? "max" : "min");
  }
  Value *acc = x;
  if (!lo && !hi) return emit_identity(cx, n, x, &outs[0], d);
  if (lo) {
    Value *ins[2] = {acc, lo};
    if ((st = emit_plain(cx, n, "maximum", 2, ins, &acc, d)) != MLC_OK) return st;
  }
  if (hi) {
    Value *ins[2] = {acc, hi};
    if ((st = emit_plain(cx, n, "minimum", 2, ins, &acc, d)) != MLC_OK) return st;
  }
  outs[0] = acc;
  return MLC_OK;
}

/* opset 1..5: Cast's `to` is the TensorProto.DataType name */
static int dtype_from_onnx_name(const char *s) {
  static const struct { const char *name; int t; } names[] = {
      {"FLOAT", MLC_F32},  {"UINT8", MLC_U8},    {"INT8", MLC_I8},     {"UINT16", MLC_U16}, {"INT16", MLC_I16},
      {"INT32", MLC_I32},  {"INT64", MLC_I64},   {"STRING", MLC_STRING}, {"BOOL", MLC_BOOL}, {"FLOAT16", MLC_F16},
      {"DOUBLE", MLC_F64}, {"UINT32", MLC_U32},  {"UINT64", MLC_U64},  {"BFLOAT16", MLC_BF16},
  };
  for (size_t i = 0; i < countof(names); i++)
    if (strcmp(names[i].name, s) == 0) return names[i].t;
  return -1;
}

static mlc_status emit_cast(OnnxCtx *cx, const OnnxNode *n, Value *x, int64_t to, Value **out, Diag *d) {
  bool ok = to > 0 && to < MLC_DTYPE_COUNT && to != MLC_STRING && mlc_dtype_size((mlc_dtype)to) > 0;
  if (!ok)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "cast to ONNX data type %lld (%s) is not supported", (long long)to,
                      to == MLC_STRING ? "string" : to == 14 || to == 15 ? "complex" : mlc_dtype_name((mlc_dtype)to));
  if (x->type.dtype == MLC_STRING || mlc_dtype_size(x->type.dtype) == 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "cast from %s is not supported", mlc_dtype_name(x->type.dtype));
  /* saturate (opset 19+, default 1) applies to float8 targets; float4 always saturates */
  int64_t sat = n->opset >= 19 ? onnx_attr_int(n, "saturate", 1) : 1;
  /* round_mode (opset 25) applies to float8e8m0 targets */
  const char *rm = n->opset >= 25 ? onnx_attr_string(n, "round_mode", "up") : "up";
  if (to == MLC_F8E8M0 && strcmp(rm, "up") && strcmp(rm, "down") && strcmp(rm, "nearest"))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "round_mode '%s' is not one of up, down, nearest", rm);
  Node *nd = emit(cx, n, "cast", 1, &x, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "dtype", to);
  if (nd && rt_dtype_is_lowfloat((mlc_dtype)to)) ir_set_int(onnx_graph(cx), nd, "saturate", sat != 0);
  if (nd && to == MLC_F8E8M0) ir_set_string(onnx_graph(cx), nd, "round_mode", rm);
  return onnx_finish_one(cx, n, nd, out, d);
}

static mlc_status conv_cast(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st != MLC_OK) return st;
  int64_t to = -1;
  const char *s = n->opset < 6 ? onnx_attr_string(n, "to", NULL) : NULL;
  if (s) {
    to = dtype_from_onnx_name(s);
    if (to < 0) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "cast to '%s' is not supported", s);
  } else {
    if (!onnx_has_attr(n, "to")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Cast needs the 'to' attribute");
    to = onnx_attr_int(n, "to", 0);
  }
  return emit_cast(cx, n, n->inputs[0], to, &outs[0], d);
}

static mlc_status conv_castlike(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st != MLC_OK) return st;
  return emit_cast(cx, n, n->inputs[0], n->inputs[1]->type.dtype, &outs[0], d);
}

/* BitCast: the same bits read as `to` (same width, same shape; little endian like the host) */
static mlc_status conv_bitcast(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st != MLC_OK) return st;
  if (!onnx_has_attr(n, "to")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "BitCast needs the 'to' attribute");
  int64_t to = onnx_attr_int(n, "to", 0);
  mlc_dtype from = n->inputs[0]->type.dtype;
  bool ok = to > 0 && to < MLC_DTYPE_COUNT && to != MLC_STRING && mlc_dtype_size((mlc_dtype)to) > 0;
  if (!ok)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "bitcast to ONNX data type %lld is not supported", (long long)to);
  if (from == MLC_STRING || mlc_dtype_size(from) == 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "bitcast from %s is not supported", mlc_dtype_name(from));
  if (mlc_dtype_size((mlc_dtype)to) != mlc_dtype_size(from))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "BitCast from %s to %s: the bit widths differ (%d and %d)",
                      mlc_dtype_name(from), mlc_dtype_name((mlc_dtype)to), 8 * mlc_dtype_size(from),
                      8 * mlc_dtype_size((mlc_dtype)to));
  Node *nd = emit(cx, n, "bitcast", 1, n->inputs, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "dtype", to);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

const OnnxConverter onnx_ops_math[] = {
    {"Add", "", conv_simple},          {"Sub", "", conv_simple},
    {"Mul", "", conv_simple},          {"Div", "", conv_simple},
    {"Pow", "", conv_simple},          {"And", "", conv_simple},
    {"Or", "", conv_simple},           {"Xor", "", conv_simple},
    {"Equal", "", conv_simple},        {"Less", "", conv_simple},
    {"Greater", "", conv_simple},      {"LessOrEqual", "", conv_simple},
    {"GreaterOrEqual", "", conv_simple}, {"BitwiseAnd", "", conv_simple},
    {"BitwiseOr", "", conv_simple},    {"BitwiseXor", "", conv_simple},
    {"BitwiseNot", "", conv_simple},   {"Not", "", conv_simple},
    {"Where", "", conv_simple},        {"PRelu", "", conv_simple},
    {"Neg", "", conv_simple},          {"Abs", "", conv_simple},
    {"Exp", "", conv_simple},          {"Log", "", conv_simple},
    {"Sqrt", "", conv_simple},         {"Reciprocal", "", conv_simple},
    {"Sigmoid", "", conv_simple},      {"Tanh", "", conv_simple},
    {"Erf", "", conv_simple},          {"Sin", "", conv_simple},
    {"Cos", "", conv_simple},          {"Tan", "", conv_simple},
    {"Asin", "", conv_simple},         {"Acos", "", conv_simple},
    {"Atan", "", conv_simple},         {"Sinh", "", conv_simple},
    {"Cosh", "", conv_simple},         {"Asinh", "", conv_simple},
    {"Acosh", "", conv_simple},        {"Atanh", "", conv_simple},
    {"Floor", "", conv_simple},        {"Ceil", "", conv_simple},
    {"Round", "", conv_simple},        {"Sign", "", conv_simple},
    {"IsNaN", "", conv_simple},        {"Relu", "", conv_simple},
    {"LeakyRelu", "", conv_simple},    {"HardSigmoid", "", conv_simple},
    {"HardSwish", "", conv_simple},    {"Elu", "", conv_simple},
    {"Selu", "", conv_simple},         {"Celu", "", conv_simple},
    {"Mish", "", conv_simple},         {"Softplus", "", conv_simple},
    {"Softsign", "", conv_simple},     {"ThresholdedRelu", "", conv_simple},
    {"Shrink", "", conv_simple},       {"Gelu", "", conv_gelu},
    {"IsInf", "", conv_isinf},         {"Mod", "", conv_mod},
    {"BitShift", "", conv_bitshift},   {"Max", "", conv_variadic},
    {"Min", "", conv_variadic},        {"Sum", "", conv_variadic},
    {"Mean", "", conv_variadic},       {"Clip", "", conv_clip},
    {"Swish", "", conv_simple},        {"SwiGLU", "", conv_swiglu},
    {"Cast", "", conv_cast},           {"CastLike", "", conv_castlike},
    {"BitCast", "", conv_bitcast},
    {0},
};
