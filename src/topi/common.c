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

Expr *topi_to_lowfloat(TeCtx *c, Expr *x, mlc_dtype to, bool saturate) {
  Arena *A = c->arena;
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
