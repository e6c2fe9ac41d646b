/* Helpers shared by the op families: numpy broadcasting. */
#include <string.h>
#include "topi/topi.h"

mlc_status topi_broadcast_shape(const TensorType *a, const TensorType *b, TensorType *out) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  TensorType r = {.dtype = a->dtype, .ndim = nd};
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) return MLC_ERR_INVALID;
    r.dims[i] = da == 1 ? db : da;
  }
  *out = r;
  return MLC_OK;
}

void topi_broadcast_index(TeCtx *c, const TeTensor *t, int ndim, Expr **idx, Expr **out_idx) {
  for (int i = 0; i < t->ndim; i++) {
    int o = i + (ndim - t->ndim);
    out_idx[i] = t->shape[i] == 1 ? tir_idx(c->arena, 0) : idx[o];
  }
}

typedef struct CastCtx {
  TeTensor *src;
  mlc_dtype to;
} CastCtx;

static Expr *cast_body(TeCtx *c, Expr **idx, void *user) {
  CastCtx *k = user;
  return tir_cast(c->arena, k->to, te_read(c, k->src, k->src->ndim, idx));
}

/* float8 / float4 largest finite values */
static double lowfloat_max(mlc_dtype t) {
  switch (t) {
  case MLC_F8E4M3FN: return 448;
  case MLC_F8E4M3FNUZ: return 240;
  case MLC_F8E5M2: case MLC_F8E5M2FNUZ: return 57344;
  default: return 6; /* float4 e2m1 */
  }
}

/* float8e8m0 (Cast round_mode up / down / nearest): codegen's conversion takes the exponent of |x| rounded up
 * and saturating, so x is first rounded here, on its float32 bits, to the power of two the mode picks: down
 * clears the mantissa; nearest clears it and steps up from 1.5 * 2^e on (a tie rounds up except below the
 * smallest normal, as ONNX's reference); without saturate a value above 2^127 becomes inf (then NaN). */
Expr *topi_to_e8m0(TeCtx *c, Expr *x, const char *round_mode, bool saturate) {
  Arena *A = c->arena;
  if (x->dtype != MLC_F32) x = tir_cast(A, MLC_F32, x);
  Expr *b = tir_call(A, INTRIN_REINTERPRET, MLC_U32, 1, &x);
#define U(v) tir_int(A, MLC_U32, (int64_t)(v))
  Expr *e = tir_bin(A, E_BITAND, tir_bin(A, E_SHR, b, U(23)), U(0xff));
  Expr *mant = tir_bin(A, E_BITAND, b, U(0x7fffff));
  Expr *pow2 = tir_bin(A, E_BITAND, b, U(0xff800000u)); /* sign and exponent */
  Expr *r = NULL;
  if (!strcmp(round_mode, "down")) {
    r = pow2;
  } else if (!strcmp(round_mode, "nearest")) {
    Expr *half = tir_bin(A, E_NE, tir_bin(A, E_BITAND, mant, U(0x400000)), U(0));
    Expr *rest = tir_bin(A, E_OR, tir_bin(A, E_NE, tir_bin(A, E_BITAND, mant, U(0x3fffff)), U(0)),
                         tir_bin(A, E_GT, e, U(0)));
    Expr *inc = tir_bin(A, E_AND, tir_bin(A, E_AND, half, rest), tir_bin(A, E_LT, e, U(saturate ? 0xfe : 0xff)));
    r = tir_select(A, inc, tir_bin(A, E_ADD, pow2, U(0x800000)), pow2);
  } else if (!saturate) { /* up */
    Expr *over = tir_bin(A, E_AND, tir_bin(A, E_EQ, e, U(0xfe)), tir_bin(A, E_NE, mant, U(0)));
    r = tir_select(A, over, U(0x7f800000), b);
  }
#undef U
  if (r) x = tir_call(A, INTRIN_REINTERPRET, MLC_F32, 1, &r);
  return tir_cast(A, MLC_F8E8M0, x);
}

Expr *topi_to_lowfloat(TeCtx *c, Expr *x, mlc_dtype to, bool saturate) {
  Arena *A = c->arena;
  if (to == MLC_F8E8M0) return topi_to_e8m0(c, x, "up", saturate);
  if (x->dtype != MLC_F32) x = tir_cast(A, MLC_F32, x); /* f16/bf16/ints exact or rounded once; f64 as ONNX */
  if (saturate) { /* NaN compares false and stays NaN; +-inf and out-of-range values clamp */
    Expr *hi = tir_float(A, MLC_F32, lowfloat_max(to)), *lo = tir_float(A, MLC_F32, -lowfloat_max(to));
    x = tir_select(A, tir_bin(A, E_GT, x, hi), hi, tir_select(A, tir_bin(A, E_LT, x, lo), lo, x));
  }
  return tir_cast(A, to, x);
}

TeTensor *topi_cast_stage(TeCtx *c, TeTensor *t, mlc_dtype to) {
  if (t->dtype == to) return t;
  CastCtx *k = arena_alloc(c->arena, sizeof *k);
  k->src = t;
  k->to = to;
  return te_compute(c, "cast", "elemwise", to, t->ndim, t->shape, cast_body, k);
}

static mlc_status read_pair(const Node *n, const char *name, int64_t *out, Diag *d) {
  int64_t v[4];
  int cnt = ir_attr_ints(n, name, v, 4);
  out[0] = out[1] = 1;
  if (cnt == 0) return MLC_OK;
  if (cnt != 2) return diag_set(d, MLC_ERR_INVALID, "attribute '%s' has %d values, expected 2", name, cnt);
  if (v[0] < 1 || v[1] < 1) return diag_set(d, MLC_ERR_INVALID, "attribute '%s' must be >= 1", name);
  out[0] = v[0];
  out[1] = v[1];
  return MLC_OK;
}

mlc_status topi_conv2d_window(const Node *n, int64_t *strides, int64_t *dil, int64_t *pad, Diag *d) {
  mlc_status st;
  if ((strides && (st = read_pair(n, "strides", strides, d))) || (dil && (st = read_pair(n, "dilation", dil, d))))
    return st;
  if (!pad) return MLC_OK;
  memset(pad, 0, 4 * sizeof *pad);
  int cnt = ir_attr_ints(n, "padding", pad, 4);
  if (cnt != 0 && cnt != 4) return diag_set(d, MLC_ERR_INVALID, "attribute 'padding' has %d values, expected 4", cnt);
  for (int i = 0; i < 4; i++)
    if (pad[i] < 0) return diag_set(d, MLC_ERR_INVALID, "pads must be >= 0");
  return MLC_OK;
}

Expr *topi_pad_window(Arena *a, Expr *y, Expr *x, int64_t top, int64_t left, int64_t h, int64_t w, Expr **cy,
                      Expr **cx) {
  Expr *ih = tir_sub(a, y, tir_idx(a, top)), *iw = tir_sub(a, x, tir_idx(a, left));
  Expr *ok = tir_bin(a, E_AND, tir_bin(a, E_GE, ih, tir_idx(a, 0)), tir_bin(a, E_LT, ih, tir_idx(a, h)));
  ok = tir_bin(a, E_AND, ok, tir_bin(a, E_GE, iw, tir_idx(a, 0)));
  ok = tir_bin(a, E_AND, ok, tir_bin(a, E_LT, iw, tir_idx(a, w)));
  *cy = tir_bin(a, E_MIN, tir_bin(a, E_MAX, ih, tir_idx(a, 0)), tir_idx(a, h - 1));
  *cx = tir_bin(a, E_MIN, tir_bin(a, E_MAX, iw, tir_idx(a, 0)), tir_idx(a, w - 1));
  return ok;
}

double topi_int_lo(mlc_dtype t) {
  switch (t) {
    case MLC_I2: return -2;
    case MLC_I4: return -8;
    case MLC_I8: return -128;
    case MLC_I16: return -32768;
    case MLC_I32: return -2147483648.0;
    default: return 0;
  }
}

double topi_int_hi(mlc_dtype t) {
  switch (t) {
    case MLC_I2: return 1;
    case MLC_U2: return 3;
    case MLC_I4: return 7;
    case MLC_U4: return 15;
    case MLC_I8: return 127;
    case MLC_U8: return 255;
    case MLC_I16: return 32767;
    case MLC_U16: return 65535;
    case MLC_I32: return 2147483647.0;
    case MLC_U32: return 4294967295.0;
    default: return 0;
  }
}
