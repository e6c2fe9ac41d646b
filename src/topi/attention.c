/* topi attention family: rotary position embedding.
 *
 *   nn.rotary_embedding(x, cos_cache, sin_cache[, position_ids])  interleaved, num_heads, rotary_dim
 * x is (B, N, S, H) or (B, S, N*H) (num_heads given); cos/sin are (max_pos, R/2) indexed by position_ids
 * (B, S), or (B, S, R/2) without them; R = rotary_dim (0: H). Algorithm (as the ONNX reference), one
 * injective compute in x's own layout: for head position d < R, with i the rotation pair index,
 *   non-interleaved: pairs (d, d + R/2), i = d mod R/2;  interleaved: pairs (2i, 2i + 1), i = d / 2;
 *   first of a pair: cos[i] * x[d] - sin[i] * x[partner];  second: sin[i] * x[partner] + cos[i] * x[d];
 * positions d >= R pass through. float16/bfloat16 compute in float32. */
#include <string.h>
#include "topi/topi.h"

static Expr *to(TeCtx *c, mlc_dtype t, Expr *e) { return e->dtype == t ? e : tir_cast(c->arena, t, e); }

typedef struct RopeCtx {
  TeTensor *x, *cos, *sin, *pos;
  int64_t heads, hsize, rdim, max_pos;
  bool interleaved;
  mlc_dtype acc;
} RopeCtx;

static mlc_status rope_parse(const Node *n, RopeCtx *k, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *cs = &n->inputs[1]->type, *sn = &n->inputs[2]->type;
  const TensorType *pos = n->ninputs > 3 && n->inputs[3] ? &n->inputs[3]->type : NULL;
  memset(k, 0, sizeof *k);
  k->interleaved = ir_attr_int(n, "interleaved", 0) != 0;
  int64_t nh = ir_attr_int(n, "num_heads", 0);
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.rotary_embedding of %s is not supported", mlc_dtype_name(x->dtype));
  if (cs->dtype != x->dtype || sn->dtype != x->dtype)
    return diag_set(d, MLC_ERR_INVALID, "nn.rotary_embedding: cos/sin caches must have the input's dtype");
  int64_t seq, batch = x->dims[0];
  if (x->ndim == 4) {
    k->heads = x->dims[1];
    seq = x->dims[2];
    k->hsize = x->dims[3];
  } else if (x->ndim == 3) {
    if (nh <= 0 || x->dims[2] % nh != 0)
      return diag_set(d, MLC_ERR_INVALID, "nn.rotary_embedding: 3-D input needs num_heads dividing the hidden size");
    k->heads = nh;
    seq = x->dims[1];
    k->hsize = x->dims[2] / nh;
  } else {
    return diag_set(d, MLC_ERR_INVALID, "nn.rotary_embedding: input must be 3-D or 4-D");
  }
  k->rdim = ir_attr_int(n, "rotary_dim", 0);
  if (k->rdim == 0) k->rdim = k->hsize;
  if (k->rdim < 0 || k->rdim > k->hsize || k->rdim % 2)
    return diag_set(d, MLC_ERR_INVALID, "nn.rotary_embedding: rotary_embedding_dim %lld is not even and <= %lld",
                    (long long)k->rdim, (long long)k->hsize);
  int64_t half = k->rdim / 2;
  if (pos) {
    if (pos->ndim != 2 || pos->dims[0] != batch || pos->dims[1] != seq || !dtype_is_int(pos->dtype))
      return diag_set(d, MLC_ERR_INVALID, "nn.rotary_embedding: position_ids must be integer (batch, seq)");
    if (cs->ndim != 2 || cs->dims[1] != half || !tt_equal(cs, sn))
      return diag_set(d, MLC_ERR_INVALID, "nn.rotary_embedding: caches must be (max_position, %lld)", (long long)half);
    k->max_pos = cs->dims[0];
  } else {
    if (cs->ndim != 3 || cs->dims[0] != batch || cs->dims[1] != seq || cs->dims[2] != half || !tt_equal(cs, sn))
      return diag_set(d, MLC_ERR_INVALID, "nn.rotary_embedding: caches must be (batch, seq, %lld) without position_ids",
                      (long long)half);
  }
  k->acc = x->dtype == MLC_F64 ? MLC_F64 : MLC_F32;
  return MLC_OK;
}

static mlc_status rope_infer(Node *n, Diag *d) {
  RopeCtx k;
  mlc_status st = rope_parse(n, &k, d);
  if (st != MLC_OK) return st;
  n->outputs[0]->type = n->inputs[0]->type;
  return MLC_OK;
}

static Expr *rope_body(TeCtx *c, Expr **idx, void *user) {
  RopeCtx *k = user;
  Arena *A = c->arena;
  int nd = k->x->ndim;
  Expr *b = idx[0], *s = nd == 4 ? idx[2] : idx[1];
  Expr *last = idx[nd - 1];
  Expr *dd = nd == 4 ? last : tir_bin(A, E_FLOORMOD, last, tir_idx(A, k->hsize));
  Expr *base = tir_sub(A, last, dd); /* start of this head along the last axis */
  int64_t half = k->rdim / 2;
  Expr *x = to(c, k->acc, te_read(c, k->x, nd, idx));
  if (half == 0) return te_read(c, k->x, nd, idx);
  Expr *i, *first, *partner;
  if (k->interleaved) {
    i = tir_bin(A, E_FLOORDIV, dd, tir_idx(A, 2));
    first = tir_bin(A, E_EQ, tir_bin(A, E_FLOORMOD, dd, tir_idx(A, 2)), tir_idx(A, 0));
    partner = tir_select(A, first, tir_add(A, dd, tir_idx(A, 1)), tir_sub(A, dd, tir_idx(A, 1)));
  } else {
    first = tir_bin(A, E_LT, dd, tir_idx(A, half));
    i = tir_select(A, first, dd, tir_sub(A, dd, tir_idx(A, half)));
    partner = tir_select(A, first, tir_add(A, dd, tir_idx(A, half)), tir_sub(A, dd, tir_idx(A, half)));
  }
  Expr *rot = tir_bin(A, E_LT, dd, tir_idx(A, k->rdim));
  /* indices kept in range where the element is not rotated (the select discards them) */
  i = tir_bin(A, E_MIN, i, tir_idx(A, half - 1));
  partner = tir_bin(A, E_MIN, partner, tir_idx(A, k->hsize - 1));
  Expr *pi[MLC_MAX_DIMS];
  for (int j = 0; j < nd; j++) pi[j] = idx[j];
  pi[nd - 1] = tir_add(A, base, partner);
  Expr *xp = to(c, k->acc, te_read(c, k->x, nd, pi));
  Expr *ci[3];
  int cn;
  if (k->pos) {
    Expr *ps[2] = {b, s};
    Expr *p = tir_cast(A, MLC_I64, te_read(c, k->pos, 2, ps));
    ci[0] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, p, tir_idx(A, 0)), tir_idx(A, k->max_pos - 1));
    ci[1] = i;
    cn = 2;
  } else {
    ci[0] = b;
    ci[1] = s;
    ci[2] = i;
    cn = 3;
  }
  Expr *cv = to(c, k->acc, te_read(c, k->cos, cn, ci));
  Expr *sv = to(c, k->acc, te_read(c, k->sin, cn, ci));
  Expr *y1 = tir_sub(A, tir_mul(A, cv, x), tir_mul(A, sv, xp));
  Expr *y2 = tir_add(A, tir_mul(A, sv, xp), tir_mul(A, cv, x));
  Expr *y = tir_select(A, rot, tir_select(A, first, y1, y2), x);
  return to(c, k->x->dtype, y);
}

static mlc_status rope_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  RopeCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = rope_parse(n, k, d);
  if (st != MLC_OK) return st;
  k->x = ins[0];
  k->cos = ins[1];
  k->sin = ins[2];
  k->pos = n->ninputs > 3 ? ins[3] : NULL;
  outs[0] = te_compute(c, "rotary_embedding", "injective", ins[0]->dtype, ins[0]->ndim, ins[0]->shape, rope_body, k);
  return MLC_OK;
}

const OpDef topi_ops_attention[] = {
    /* name                 pattern        min max nout infer       compute */
    {"nn.rotary_embedding", PAT_INJECTIVE, 3, 4, 1, rope_infer, rope_compute},
    {0},
};
