/* quant family: linear quantization (after Relay's qnn dialect).
 *
 *   qnn.quantize(x, scale, zp?)        y = saturate(round_half_even(x / scale) + zp)   attrs: axis, block_size,
 *                                      out_dtype, div_dtype (the dtype the division is rounded to), saturate
 *                                      (float8: x / scale + zp converted as Cast does, clamped when saturate)
 *   qnn.dequantize(x, scale, zp?)      y = (x - zp) * scale                             attrs: axis, block_size,
 *                                      out_dtype (float8 / float4 x and zp decoded to float32 first)
 *   qnn.dynamic_quantize(x)            -> y (uint8), scale (float32 scalar), zp (uint8 scalar) from min/max of x
 *   qnn.subtract_zero_point(x, zp?)    int32(x) - int32(zp)                            attrs: axis
 *   qnn.requantize(acc, s1, s2, s3, zp?, bias?)
 *                                      y = saturate(round((acc + bias) * (s1 * s2 / s3)) + zp)
 *                                      attrs: axis1, axis2 (output axis a 1-D s1 / s2 runs along), bias_axis,
 *                                      out_dtype, float32 (1: float32(acc + bias) * the multiplier rounded
 *                                      once, as ONNX Runtime does; set by LowerConv.requantize_float32)
 *
 * Granularity of a scale / zero point is read from its shape: one element is per-tensor; with block_size > 0
 * it has the rank of x and dim axis is ceil(x.dims[axis] / block_size) (blocked); otherwise it is 1-D along
 * axis (per-axis). The integer convolution and matmul of QLinearConv / ConvInteger / QLinearMatMul /
 * MatMulInteger are the nn family's nn.conv*d and nn.matmul on int32 operands (the zero points subtracted by
 * qnn.subtract_zero_point first), so the accumulation is int32 as the spec asks; qnn.requantize follows.
 * Arithmetic follows the ONNX reference: the multiplier s1 * s2 / s3 is rounded in the scales' dtype, the
 * product with the int32 accumulator is done in float64. qnn.requantize of a sum known to stay below 2^24 (an
 * 8-bit packed conv's or 8-bit depthwise conv's, bounded from their constant weights) to an 8- or 16-bit
 * output computes the same in float32, exactly: a = float(acc + bias) is exact, the float64 product a * m
 * (24 by 24 significant bits) is exact too, and it is hi + lo with hi = float32(a * m), lo = fma(a, m, -hi);
 * round half to even of hi is that of a * m except on a tie of hi (hi - round(hi) = +-0.5), which lo's sign
 * breaks (lo = 0: the tie is real). Half the vector instructions of the float64 form, which were most of a
 * quantized MobileNet's 1x1 conv kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "topi/topi.h"

/* ---------------------------------------------------------------- helpers */

static bool quant_dtype_ok(mlc_dtype t) {
  return t == MLC_I8 || t == MLC_U8 || t == MLC_I16 || t == MLC_U16 || t == MLC_I32 ||
         (dtype_is_lowbit(t) && t != MLC_F8E8M0);
}

/* Checks a scale / zero-point operand p against x (see the granularity rule above). */
static mlc_status check_param(const TensorType *x, const TensorType *p, int64_t axis, int64_t block, const char *what,
                              Diag *d) {
  if (tt_numel(p) == 1 && p->ndim <= 1 && block <= 0) return MLC_OK;
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "%s: axis %lld out of range for rank %d", what, (long long)axis, x->ndim);
  if (block > 0) {
    if (p->ndim != x->ndim)
      return diag_set(d, MLC_ERR_INVALID, "%s: blocked quantization needs rank %d, got %d", what, x->ndim, p->ndim);
    for (int i = 0; i < x->ndim; i++) {
      int64_t want = i == axis ? (x->dims[i] + block - 1) / block : x->dims[i];
      if (p->dims[i] != want)
        return diag_set(d, MLC_ERR_INVALID, "%s: dim %d is %lld, expected %lld for block_size %lld", what, i,
                        (long long)p->dims[i], (long long)want, (long long)block);
    }
    return MLC_OK;
  }
  if (p->ndim != 1 || p->dims[0] != x->dims[axis])
    return diag_set(d, MLC_ERR_INVALID, "%s: per-axis parameter must be 1-D of length %lld (dim %lld of the input)",
                    what, (long long)x->dims[axis], (long long)axis);
  return MLC_OK;
}

/* p read for output index idx (granularity as check_param accepted it). */
static Expr *param_read(TeCtx *c, TeTensor *p, Expr **idx, int64_t axis, int64_t block) {
  Arena *A = c->arena;
  Expr *pi[MLC_MAX_DIMS];
  int64_t numel = 1;
  for (int i = 0; i < p->ndim; i++) numel *= p->shape[i];
  if (numel == 1 && p->ndim <= 1 && block <= 0) {
    for (int i = 0; i < p->ndim; i++) pi[i] = tir_idx(A, 0);
  } else if (block > 0) {
    for (int i = 0; i < p->ndim; i++)
      pi[i] = i == axis ? tir_bin(A, E_FLOORDIV, idx[i], tir_idx(A, block)) : idx[i];
  } else {
    pi[0] = idx[axis];
  }
  return te_read(c, p, p->ndim, pi);
}

/* the zero point zp read for idx, or NULL where it is a constant 0 (nothing to add or subtract in integers or
 * before a clamp, where -0.0 + 0 and -0.0 saturate alike) */
static Expr *zero_point_read(TeCtx *c, TeTensor *zp, Expr **idx, int64_t axis, int64_t block) {
  if (!zp) return NULL;
  Expr *z = param_read(c, zp, idx, axis, block);
  return z->kind == E_INT && z->ival == 0 ? NULL : z;
}

static Expr *to(TeCtx *c, mlc_dtype t, Expr *e) { return e->dtype == t ? e : tir_cast(c->arena, t, e); }

/* a op b rounded to dtype t (float16/bfloat16 computed in float32 and rounded back) */
static Expr *fop(TeCtx *c, ExprKind k, mlc_dtype t, Expr *a, Expr *b) {
  mlc_dtype w = t == MLC_F16 || t == MLC_BF16 ? MLC_F32 : t;
  Expr *r = tir_bin(c->arena, k, to(c, w, a), to(c, w, b));
  return w == t ? r : tir_cast(c->arena, t, r);
}

/* saturate v to out's range and convert. A float v is clamped by ordered compares (v > lo ? v : lo), which
 * x86 does in one vmaxps / vminps each where numpy's NaN-propagating maximum takes three, and which sends NaN
 * to lo instead of converting it (undefined) */
static Expr *clamp_cast(TeCtx *c, Expr *v, mlc_dtype out) {
  Arena *A = c->arena;
  Expr *lo = tir_const(A, v->dtype, topi_int_lo(out)), *hi = tir_const(A, v->dtype, topi_int_hi(out));
  if (!dtype_is_float(v->dtype))
    return tir_cast(A, out, tir_bin(A, E_MIN, tir_bin(A, E_MAX, v, lo), hi));
  v = tir_select(A, tir_bin(A, E_GT, v, lo), v, lo);
  v = tir_select(A, tir_bin(A, E_LT, v, hi), v, hi);
  return tir_cast(A, out, v);
}

static Expr *round_he(TeCtx *c, Expr *v) { return tir_call(c->arena, INTRIN_ROUND, v->dtype, 1, &v); }

/* ---------------------------------------------------------------- quantize / dequantize */

static mlc_status qparams_infer(Node *n, bool quant, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *s = &n->inputs[1]->type;
  const TensorType *zp = n->ninputs > 2 && n->inputs[2] ? &n->inputs[2]->type : NULL;
  int64_t axis = ir_attr_int(n, "axis", 1), block = ir_attr_int(n, "block_size", 0);
  mlc_dtype out = (mlc_dtype)ir_attr_int(n, "out_dtype", quant ? (zp ? zp->dtype : MLC_U8) : s->dtype);
  mlc_dtype q = quant ? out : x->dtype;
  if (dtype_is_lowbit(s->dtype)) /* float8e8m0 scales (MX formats) and the like */
    return diag_set(d, MLC_ERR_UNSUPPORTED, "a scale of type %s is not supported", mlc_dtype_name(s->dtype));
  if (!dtype_is_float(s->dtype))
    return diag_set(d, MLC_ERR_INVALID, "scale must be a float tensor, got %s", mlc_dtype_name(s->dtype));
  if (!quant_dtype_ok(q))
    return diag_set(d, MLC_ERR_UNSUPPORTED,
                    "quantized type %s is not supported (int2/4/8/16/32, uint2/4/8/16, float8 and float4 are)",
                    mlc_dtype_name(q));
  if (quant ? !dtype_is_float(x->dtype) : !dtype_is_float(out))
    return diag_set(d, MLC_ERR_INVALID, "the unquantized side must be float, got %s",
                    mlc_dtype_name(quant ? x->dtype : out));
  if (zp && zp->dtype != q)
    return diag_set(d, MLC_ERR_INVALID, "zero point type %s differs from the quantized type %s",
                    mlc_dtype_name(zp->dtype), mlc_dtype_name(q));
  if (block < 0) return diag_set(d, MLC_ERR_INVALID, "block_size must be >= 0");
  mlc_status st = check_param(x, s, axis, block, "scale", d);
  if (st) return st;
  if (zp) {
    if ((st = check_param(x, zp, axis, block, "zero point", d))) return st;
    bool both_scalar = tt_numel(zp) == 1 && zp->ndim <= 1 && tt_numel(s) == 1 && s->ndim <= 1; /* [] and [1] */
    if (!both_scalar && (zp->ndim != s->ndim || tt_numel(zp) != tt_numel(s)))
      return diag_set(d, MLC_ERR_INVALID, "scale and zero point shapes differ");
  }
  TensorType o = *x;
  o.dtype = out;
  n->outputs[0]->type = o;
  return MLC_OK;
}

static mlc_status quantize_infer(Node *n, Diag *d) { return qparams_infer(n, true, d); }
static mlc_status dequantize_infer(Node *n, Diag *d) { return qparams_infer(n, false, d); }

static bool small_int(mlc_dtype t) { return t == MLC_U8 || t == MLC_I8 || t == MLC_U16 || t == MLC_I16; }

typedef struct QCtx {
  TeTensor *x, *scale, *zp;
  int64_t axis, block;
  mlc_dtype out, div;
  bool saturate; /* float8 outputs (QuantizeLinear 19+): clamp to the largest finite value */
} QCtx;

static Expr *quantize_body(TeCtx *c, Expr **idx, void *user) {
  QCtx *k = user;
  Expr *x = te_read(c, k->x, k->x->ndim, idx);
  Expr *s = param_read(c, k->scale, idx, k->axis, k->block);
  Expr *v = fop(c, E_DIV, k->div, x, s);
  if (dtype_is_lowfloat(k->out)) { /* float8 / float4: x / scale (+ zp, which the spec wants 0) converted */
    v = to(c, MLC_F32, v);
    if (k->zp) v = tir_add(c->arena, v, to(c, MLC_F32, param_read(c, k->zp, idx, k->axis, k->block)));
    return topi_to_lowfloat(c, v, k->out, k->saturate);
  }
  v = round_he(c, to(c, k->div == MLC_F64 ? MLC_F64 : MLC_F32, v));
  /* + zp and the clamp in float64, but for 8- and 16-bit outputs in float32: exact while |v| < 2^24, and a
   * larger |v| saturates alike */
  mlc_dtype at = k->div != MLC_F64 && small_int(k->out) ? MLC_F32 : MLC_F64;
  v = to(c, at, v);
  Expr *zp = zero_point_read(c, k->zp, idx, k->axis, k->block);
  if (zp) v = tir_add(c->arena, v, to(c, at, zp));
  return clamp_cast(c, v, k->out);
}

static Expr *dequantize_body(TeCtx *c, Expr **idx, void *user) {
  QCtx *k = user;
  Arena *A = c->arena;
  /* float8 / float4 inputs are decoded to float32 (exact), 8- and 16-bit integers widened to int32 (x - zp and
   * its float32 are exact), others to int64 */
  mlc_dtype xt = dtype_is_lowfloat(k->x->dtype) ? MLC_F32 : small_int(k->x->dtype) ? MLC_I32 : MLC_I64;
  Expr *x = to(c, xt, te_read(c, k->x, k->x->ndim, idx));
  Expr *zp = zero_point_read(c, k->zp, idx, k->axis, k->block);
  if (zp) x = tir_sub(A, x, to(c, xt, zp));
  Expr *s = param_read(c, k->scale, idx, k->axis, k->block);
  mlc_dtype w = k->out == MLC_F64 ? MLC_F64 : MLC_F32;
  return to(c, k->out, fop(c, E_MUL, k->out == MLC_F64 ? MLC_F64 : k->out, to(c, w, x), s));
}

static mlc_status qparams_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, bool quant) {
  QCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->scale = ins[1];
  k->zp = n->ninputs > 2 ? ins[2] : NULL;
  k->axis = ir_attr_int(n, "axis", 1);
  k->block = ir_attr_int(n, "block_size", 0);
  const TensorType *o = &n->outputs[0]->type;
  k->out = o->dtype;
  k->div = (mlc_dtype)ir_attr_int(n, "div_dtype", ins[1]->dtype);
  k->saturate = ir_attr_int(n, "saturate", 1) != 0;
  outs[0] = te_compute(c, quant ? "quantize" : "dequantize", "broadcast", o->dtype, o->ndim, o->dims,
                       quant ? quantize_body : dequantize_body, k);
  return MLC_OK;
}

static mlc_status quantize_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  return qparams_compute(c, n, ins, outs, true);
}
static mlc_status dequantize_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  return qparams_compute(c, n, ins, outs, false);
}

/* ---------------------------------------------------------------- dynamic quantization */

static mlc_status dynq_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (x->dtype != MLC_F32)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "qnn.dynamic_quantize of %s is not supported (float32 only)",
                    mlc_dtype_name(x->dtype));
  if (n->noutputs != 3) return diag_set(d, MLC_ERR_INVALID, "qnn.dynamic_quantize has three outputs");
  TensorType y = *x, s = {.dtype = MLC_F32, .ndim = 0}, z = {.dtype = MLC_U8, .ndim = 0};
  y.dtype = MLC_U8;
  n->outputs[0]->type = y;
  n->outputs[1]->type = s;
  n->outputs[2]->type = z;
  return MLC_OK;
}

typedef struct DynQCtx {
  TeTensor *x, *lo, *hi, *scale, *zp;
  ReduceKind red;
} DynQCtx;

static Expr *dynq_minmax_body(TeCtx *c, Expr **idx, void *user) {
  DynQCtx *k = user;
  IterVar *rax[MLC_MAX_DIMS];
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0; i < k->x->ndim; i++) {
    rax[i] = te_reduce_axis(c, arena_printf(c->arena, "r%d", i), k->x->shape[i]);
    xi[i] = tir_varref(c->arena, rax[i]->var);
  }
  /* the range always includes 0 (the spec's min(0, x_min), max(0, x_max)): start the reduction there */
  return te_reduce(c, k->red, te_read(c, k->x, k->x->ndim, xi), k->x->ndim, rax, tir_float(c->arena, MLC_F32, 0),
                   NULL);
}

static Expr *dynq_scale_body(TeCtx *c, Expr **idx, void *user) {
  DynQCtx *k = user;
  Arena *A = c->arena;
  Expr *r = tir_sub(A, te_read(c, k->hi, 0, NULL), te_read(c, k->lo, 0, NULL));
  return tir_bin(A, E_DIV, r, tir_float(A, MLC_F32, 255));
}

static Expr *dynq_zp_body(TeCtx *c, Expr **idx, void *user) {
  DynQCtx *k = user;
  Arena *A = c->arena;
  Expr *z = tir_sub(A, tir_float(A, MLC_F32, 0),
                    tir_bin(A, E_DIV, te_read(c, k->lo, 0, NULL), te_read(c, k->scale, 0, NULL)));
  return clamp_cast(c, round_he(c, z), MLC_U8);
}

static Expr *dynq_y_body(TeCtx *c, Expr **idx, void *user) {
  DynQCtx *k = user;
  Arena *A = c->arena;
  Expr *v = round_he(c, tir_bin(A, E_DIV, te_read(c, k->x, k->x->ndim, idx), te_read(c, k->scale, 0, NULL)));
  v = tir_add(A, v, tir_cast(A, MLC_F32, te_read(c, k->zp, 0, NULL)));
  return clamp_cast(c, v, MLC_U8);
}

static mlc_status dynq_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  DynQCtx *lo = arena_alloc(c->arena, sizeof *lo), *hi = arena_alloc(c->arena, sizeof *hi);
  lo->x = hi->x = ins[0];
  lo->red = RED_MIN;
  hi->red = RED_MAX;
  DynQCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->lo = te_compute(c, "dynq_min", "reduce", MLC_F32, 0, NULL, dynq_minmax_body, lo);
  k->hi = te_compute(c, "dynq_max", "reduce", MLC_F32, 0, NULL, dynq_minmax_body, hi);
  k->scale = te_compute(c, "dynq_scale", "injective", MLC_F32, 0, NULL, dynq_scale_body, k);
  k->zp = te_compute(c, "dynq_zero_point", "injective", MLC_U8, 0, NULL, dynq_zp_body, k);
  outs[0] = te_compute(c, "dynq_y", "broadcast", MLC_U8, ins[0]->ndim, ins[0]->shape, dynq_y_body, k);
  outs[1] = k->scale;
  outs[2] = k->zp;
  return MLC_OK;
}

/* ---------------------------------------------------------------- zero point subtraction */

static mlc_status subzp_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  const TensorType *zp = n->ninputs > 1 && n->inputs[1] ? &n->inputs[1]->type : NULL;
  if (!quant_dtype_ok(x->dtype) || x->dtype == MLC_I32)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "integer quantized input of %s is not supported (int8/uint8/int16/uint16)",
                    mlc_dtype_name(x->dtype));
  if (zp) {
    if (zp->dtype != x->dtype)
      return diag_set(d, MLC_ERR_INVALID, "zero point type %s differs from the input type %s",
                      mlc_dtype_name(zp->dtype), mlc_dtype_name(x->dtype));
    mlc_status st = check_param(x, zp, ir_attr_int(n, "axis", 0), 0, "zero point", d);
    if (st) return st;
  }
  TensorType o = *x;
  o.dtype = MLC_I32;
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct SubZpCtx {
  TeTensor *x, *zp;
  int64_t axis;
} SubZpCtx;

static Expr *subzp_body(TeCtx *c, Expr **idx, void *user) {
  SubZpCtx *k = user;
  Expr *v = to(c, MLC_I32, te_read(c, k->x, k->x->ndim, idx));
  if (k->zp) v = tir_sub(c->arena, v, to(c, MLC_I32, param_read(c, k->zp, idx, k->axis, 0)));
  return v;
}

static mlc_status subzp_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  SubZpCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->zp = n->ninputs > 1 ? ins[1] : NULL;
  k->axis = ir_attr_int(n, "axis", 0);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "subtract_zero_point", "broadcast", MLC_I32, o->ndim, o->dims, subzp_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- requantize */

static mlc_status requant_infer(Node *n, Diag *d) {
  const TensorType *acc = &n->inputs[0]->type;
  const TensorType *zp = n->ninputs > 4 && n->inputs[4] ? &n->inputs[4]->type : NULL;
  const TensorType *bias = n->ninputs > 5 && n->inputs[5] ? &n->inputs[5]->type : NULL;
  if (acc->dtype != MLC_I32) return diag_set(d, MLC_ERR_INVALID, "qnn.requantize expects an int32 accumulator");
  mlc_dtype out = (mlc_dtype)ir_attr_int(n, "out_dtype", zp ? zp->dtype : MLC_U8);
  if (!quant_dtype_ok(out))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "quantized output type %s is not supported", mlc_dtype_name(out));
  static const char *names[3] = {"first scale", "second scale", "output scale"};
  static const char *axes[3] = {"axis1", "axis2", ""};
  for (int i = 0; i < 3; i++) {
    const TensorType *s = &n->inputs[1 + i]->type;
    if (!dtype_is_float(s->dtype)) return diag_set(d, MLC_ERR_INVALID, "%s must be float", names[i]);
    if (s->dtype != n->inputs[1]->type.dtype) return diag_set(d, MLC_ERR_INVALID, "scale dtypes differ");
    if (tt_numel(s) == 1 && s->ndim <= 1) continue;
    if (!*axes[i]) return diag_set(d, MLC_ERR_UNSUPPORTED, "%s must be a scalar", names[i]);
    mlc_status st = check_param(acc, s, ir_attr_int(n, axes[i], -1), 0, names[i], d);
    if (st) return st;
  }
  if (zp && (tt_numel(zp) != 1 || zp->ndim > 1))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "output zero point must be a scalar");
  if (zp && zp->dtype != out) return diag_set(d, MLC_ERR_INVALID, "output zero point type differs from the output");
  if (bias) {
    if (bias->dtype != MLC_I32) return diag_set(d, MLC_ERR_INVALID, "bias must be int32");
    mlc_status st = check_param(acc, bias, ir_attr_int(n, "bias_axis", -1), 0, "bias", d);
    if (st) return st;
  }
  TensorType o = *acc;
  o.dtype = out;
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct RequantCtx {
  TeTensor *acc, *s[3], *zp, *bias;
  int64_t axis[3], bias_axis;
  mlc_dtype out;
  bool f32;     /* |acc + bias| < 2^24: the exact float32 form */
  bool onnxrt;  /* attribute float32: float32(acc + bias) * multiplier rounded once, as ONNX Runtime */
} RequantCtx;

static int64_t sum_abs_bytes(uint32_t word) {
  int64_t s = 0;
  for (int b = 0; b < 4; b++) s += llabs((long long)(int8_t)(uint8_t)(word >> (8 * b)));
  return s;
}

/* A bound on |v| for the integer sums whose constant weights bound them (0: unknown): an 8-bit
 * nn.conv2d_packed (data bytes 0..255 by int8 weight bytes, plus its offset), or the int32 cast of an 8-bit
 * nn.depthwise_conv2d (|x - zero point| <= 255 by the float32 weight, integer-valued) */
static int64_t int_sum_bound(const Value *v) {
  const Node *p = v ? v->producer : NULL;
  if (p && !strcmp(p->op->name, "cast") && p->ninputs == 1 && p->inputs[0] && p->inputs[0]->type.dtype == MLC_F32) {
    const Node *dw = p->inputs[0]->producer;
    if (!dw || strcmp(dw->op->name, "nn.depthwise_conv2d") || dw->ninputs != 2 || !dw->inputs[0] || !dw->inputs[1] ||
        (dw->inputs[0]->type.dtype != MLC_U8 && dw->inputs[0]->type.dtype != MLC_I8) || !dw->inputs[1]->data ||
        dw->inputs[1]->type.ndim != 4)
      return 0;
    const TensorType *wt = &dw->inputs[1]->type;
    const float *w = dw->inputs[1]->data;
    int64_t taps = wt->dims[1] * wt->dims[2] * wt->dims[3];
    double most = 0;
    for (int64_t o = 0; o < wt->dims[0]; o++) {
      double sum = 0;
      for (int64_t t = 0; t < taps; t++) {
        float x = w[o * taps + t];
        if (!(fabsf(x) <= 65536) || x != (float)(int32_t)x) return 0;
        sum += fabs((double)x);
      }
      if (sum > most) most = sum;
    }
    return (int64_t)most * 255 + 1;
  }
  if (!p || strcmp(p->op->name, "nn.conv2d_packed") || p->ninputs < 2 || !p->inputs[0] || !p->inputs[1] ||
      (p->inputs[0]->type.dtype != MLC_U8 && p->inputs[0]->type.dtype != MLC_I8) || !p->inputs[1]->data ||
      p->inputs[1]->type.ndim != 5)
    return 0;
  const Value *off = p->ninputs > 2 ? p->inputs[2] : NULL;
  if (off && !off->data) return 0;
  const TensorType *wt = &p->inputs[1]->type; /* [OC/ocb, C4, KH, KW, ocb] */
  const uint32_t *words = p->inputs[1]->data;
  int64_t occ = wt->dims[0], per = wt->dims[1] * wt->dims[2] * wt->dims[3], ocb = wt->dims[4], most = 0;
  int64_t noff = off ? tt_numel(&off->type) : 0;
  for (int64_t o = 0; o < occ * ocb; o++) {
    int64_t sum = 0;
    for (int64_t j = 0; j < per; j++) sum += sum_abs_bytes(words[((o / ocb) * per + j) * ocb + o % ocb]);
    sum = sum * 255 + (o < noff ? llabs((long long)((const int32_t *)off->data)[o]) : 0);
    if (sum > most) most = sum;
  }
  return most + 1;
}

/* the largest |bias| (0 without one), or -1 when it is not constant */
static int64_t bias_bound(const Value *b) {
  if (!b) return 0;
  if (!b->data || b->type.dtype != MLC_I32) return -1;
  int64_t most = 0;
  for (int64_t i = 0; i < tt_numel(&b->type); i++) {
    int64_t x = llabs((long long)((const int32_t *)b->data)[i]);
    if (x > most) most = x;
  }
  return most;
}

/* round half to even of a * m, for float32 a (an integer below 2^24 in magnitude) and m, exactly: r =
 * round(hi) and t = hi - r; on a tie of hi (|t| = 0.5) that lo's sign contradicts (t * lo > 0: hi rounded
 * down while a * m is above it, or up while it is below), the other neighbour r + 2t, written round(hi + t)
 * (hi + t = r + 2t exactly) so that the simplifier sees an integer-valued result */
static Expr *round_product_f32(TeCtx *c, Expr *a, Expr *m) {
  Arena *A = c->arena;
  Expr *hi = tir_mul(A, a, m), *zero = tir_float(A, MLC_F32, 0);
  Expr *fa[3] = {a, m, tir_sub(A, zero, hi)};
  Expr *lo = tir_call(A, INTRIN_FMA, MLC_F32, 3, fa), *r = round_he(c, hi), *t = tir_sub(A, hi, r);
  Expr *tie = tir_bin(A, E_EQ, tir_call(A, INTRIN_FABS, MLC_F32, 1, &t), tir_float(A, MLC_F32, 0.5));
  Expr *wrong = tir_bin(A, E_AND, tie, tir_bin(A, E_GT, tir_mul(A, t, lo), zero));
  return tir_select(A, wrong, round_he(c, tir_add(A, hi, t)), r);
}

static Expr *requant_body(TeCtx *c, Expr **idx, void *user) {
  RequantCtx *k = user;
  Arena *A = c->arena;
  Expr *acc = te_read(c, k->acc, k->acc->ndim, idx);
  if (k->bias) acc = tir_add(A, acc, param_read(c, k->bias, idx, k->bias_axis, 0));
  Expr *s[3];
  for (int i = 0; i < 3; i++) s[i] = param_read(c, k->s[i], idx, k->axis[i], 0);
  mlc_dtype st = k->s[0]->dtype;
  Expr *mult = fop(c, E_DIV, st, fop(c, E_MUL, st, s[0], s[1]), s[2]);
  mlc_dtype ft = (k->f32 || k->onnxrt) && small_int(k->out) ? MLC_F32 : MLC_F64;
  Expr *v = k->onnxrt ? round_he(c, tir_mul(A, to(c, MLC_F32, acc), to(c, MLC_F32, mult)))
            : k->f32  ? round_product_f32(c, to(c, MLC_F32, acc), mult)
                      : round_he(c, tir_mul(A, to(c, MLC_F64, acc), to(c, MLC_F64, mult)));
  v = to(c, ft, v);
  Expr *zp = zero_point_read(c, k->zp, idx, -1, 0);
  if (zp) v = tir_add(A, v, to(c, ft, zp));
  return clamp_cast(c, v, k->out);
}

static mlc_status requant_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  RequantCtx *k = arena_alloc(c->arena, sizeof *k);
  k->acc = ins[0];
  for (int i = 0; i < 3; i++) k->s[i] = ins[1 + i];
  k->axis[0] = ir_attr_int(n, "axis1", -1);
  k->axis[1] = ir_attr_int(n, "axis2", -1);
  k->axis[2] = -1;
  k->zp = n->ninputs > 4 ? ins[4] : NULL;
  k->bias = n->ninputs > 5 ? ins[5] : NULL;
  k->bias_axis = ir_attr_int(n, "bias_axis", -1);
  const TensorType *o = &n->outputs[0]->type;
  k->out = o->dtype;
  int64_t sum = int_sum_bound(n->inputs[0]), bias = bias_bound(k->bias ? n->inputs[5] : NULL);
  k->f32 = sum > 0 && bias >= 0 && sum + bias < ((int64_t)1 << 24) && k->s[0]->dtype == MLC_F32 &&
           small_int(k->out);
  k->onnxrt = ir_attr_int(n, "float32", 0) != 0;
  outs[0] = te_compute(c, "requantize", "broadcast", o->dtype, o->ndim, o->dims, requant_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_quant[] = {
    /* name                      pattern          min max nout infer           compute */
    {"qnn.quantize", PAT_BROADCAST, 2, 3, 1, quantize_infer, quantize_compute},
    {"qnn.dequantize", PAT_BROADCAST, 2, 3, 1, dequantize_infer, dequantize_compute},
    {"qnn.dynamic_quantize", PAT_OPAQUE, 1, 1, 3, dynq_infer, dynq_compute},
    {"qnn.subtract_zero_point", PAT_BROADCAST, 1, 2, 1, subzp_infer, subzp_compute},
    {"qnn.requantize", PAT_BROADCAST, 4, 6, 1, requant_infer, requant_compute},
    {0},
};
