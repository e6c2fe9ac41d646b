/* topi attention family: rotary position embedding, scaled dot-product attention and einsum (the general
 * tensor contraction).
 *
 *   nn.rotary_embedding(x, cos_cache, sin_cache[, position_ids])  interleaved, num_heads, rotary_dim
 * x is (B, N, S, H) or (B, S, N*H) (num_heads given); cos/sin are (max_pos, R/2) indexed by position_ids
 * (B, S), or (B, S, R/2) without them; R = rotary_dim (0: H). Algorithm (as the ONNX reference), one
 * injective compute in x's own layout: for head position d < R, with i the rotation pair index,
 *   non-interleaved: pairs (d, d + R/2), i = d mod R/2;  interleaved: pairs (2i, 2i + 1), i = d / 2;
 *   first of a pair: cos[i] * x[d] - sin[i] * x[partner];  second: sin[i] * x[partner] + cos[i] * x[d];
 * positions d >= R pass through. float16/bfloat16 compute in float32.
 *
 *   nn.attention(q, k, v[, mask, past_key, past_value, nonpad_kv_seqlen]) -> y, present_key, present_value, qk
 * attributes q_num_heads, kv_num_heads (3-D inputs), scale (0: 1/sqrt(head size)), softcap, is_causal,
 * qk_mode (0..3). Algorithm (as the ONNX reference, opset 23/24), stages in float32 (float64 for double):
 *   K', V' = concat(past, k/v) along the sequence (present_key/value, (B, Hkv, P + L, E));
 *   s[b,h,i,j] = sum_e (q*sqrt(scale)) (K'[b, h / (Hq/Hkv), j, e]*sqrt(scale))  (grouped-query heads repeat);
 *   c = softcap > 0 ? softcap * tanh(s / softcap) : s;
 *   bias = mask (bool: 0 / -inf, float: added; broadcast right-aligned to (B, H, S, T), columns past its
 *          last dim are masked) + causal (j <= i + offset: offset = P with a past, nonpad[b] - S with only
 *          nonpad_kv_seqlen, else 0) + padding (j < nonpad[b]);
 *   p = softmax_j(c + bias), with rows that are entirely -inf giving 0 instead of NaN;
 *   y[b,h,i,:] = sum_j p V'[b, h / (Hq/Hkv), j, :], in 3-D inputs' (B, S, H*Ev) layout when q was 3-D;
 *   qk (qk_mode 0 and 1: c, 2: c + bias, 3: p; as the reference).
 *
 *   einsum(x0, x1, ..)  equation: explicit ("ij,jk->ik") or implicit (output: ellipsis dims, then the labels
 * that occur once, sorted); "..." broadcasts right-aligned. Labels repeated within one operand read its
 * diagonal. One compute: out[free labels] = sum over the other labels of the product of the operands
 * (size-1 broadcast dims read index 0); float16/bfloat16 accumulate in float32. */
#include <math.h>
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

/* ---------------------------------------------------------------- scaled dot-product attention */

typedef struct AttnCtx {
  TeTensor *q, *k, *v, *mask, *pk, *pv, *nonpad;
  TeTensor *kt, *vt, *score, *max, *sum, *prob;
  bool q3;                 /* 3-D inputs (B, S, H*E) */
  int64_t B, Hq, Hkv, S, L, P, T, E, Ev;
  double sscale, softcap;
  bool causal;
  int qk_mode;
  mlc_dtype acc;
} AttnCtx;

static const TensorType *opt_in(const Node *n, int i) {
  return i < n->ninputs && n->inputs[i] ? &n->inputs[i]->type : NULL;
}

static mlc_status attn_parse(const Node *n, AttnCtx *k, Diag *d) {
  const TensorType *q = &n->inputs[0]->type, *kk = &n->inputs[1]->type, *v = &n->inputs[2]->type;
  const TensorType *mask = opt_in(n, 3), *pk = opt_in(n, 4), *pv = opt_in(n, 5), *np = opt_in(n, 6);
  memset(k, 0, sizeof *k);
  if (!dtype_is_float(q->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.attention of %s is not supported", mlc_dtype_name(q->dtype));
  if (kk->dtype != q->dtype || v->dtype != q->dtype)
    return diag_set(d, MLC_ERR_INVALID, "nn.attention: Q, K and V must have one dtype");
  if (q->ndim != kk->ndim || q->ndim != v->ndim || (q->ndim != 3 && q->ndim != 4))
    return diag_set(d, MLC_ERR_INVALID, "nn.attention: Q, K, V must all be 3-D or all 4-D");
  k->B = q->dims[0];
  if (kk->dims[0] != k->B || v->dims[0] != k->B) return diag_set(d, MLC_ERR_INVALID, "nn.attention: batch sizes differ");
  if (q->ndim == 3) {
    k->q3 = true;
    k->Hq = ir_attr_int(n, "q_num_heads", 0);
    k->Hkv = ir_attr_int(n, "kv_num_heads", 0);
    if (k->Hq <= 0 || k->Hkv <= 0 || q->dims[2] % k->Hq || kk->dims[2] % k->Hkv || v->dims[2] % k->Hkv)
      return diag_set(d, MLC_ERR_INVALID,
                      "nn.attention: 3-D inputs need q_num_heads / kv_num_heads dividing the hidden sizes");
    k->S = q->dims[1];
    k->L = kk->dims[1];
    k->E = q->dims[2] / k->Hq;
    if (kk->dims[2] / k->Hkv != k->E) return diag_set(d, MLC_ERR_INVALID, "nn.attention: Q and K head sizes differ");
    k->Ev = v->dims[2] / k->Hkv;
    if (v->dims[1] != k->L) return diag_set(d, MLC_ERR_INVALID, "nn.attention: K and V sequence lengths differ");
  } else {
    k->Hq = q->dims[1];
    k->Hkv = kk->dims[1];
    k->S = q->dims[2];
    k->L = kk->dims[2];
    k->E = q->dims[3];
    k->Ev = v->dims[3];
    if (kk->dims[3] != k->E) return diag_set(d, MLC_ERR_INVALID, "nn.attention: Q and K head sizes differ");
    if (v->dims[1] != k->Hkv || v->dims[2] != k->L)
      return diag_set(d, MLC_ERR_INVALID, "nn.attention: K and V heads / sequence lengths differ");
  }
  if (k->Hkv <= 0 || k->Hq % k->Hkv)
    return diag_set(d, MLC_ERR_INVALID, "nn.attention: q heads %lld are not a multiple of kv heads %lld",
                    (long long)k->Hq, (long long)k->Hkv);
  if ((pk == NULL) != (pv == NULL))
    return diag_set(d, MLC_ERR_INVALID, "nn.attention: past_key and past_value come together");
  if (pk) {
    if (pk->ndim != 4 || pv->ndim != 4 || pk->dims[0] != k->B || pk->dims[1] != k->Hkv || pk->dims[3] != k->E ||
        pv->dims[0] != k->B || pv->dims[1] != k->Hkv || pv->dims[2] != pk->dims[2] || pv->dims[3] != k->Ev ||
        pk->dtype != q->dtype || pv->dtype != q->dtype)
      return diag_set(d, MLC_ERR_INVALID, "nn.attention: past_key/past_value must be (B, kv_heads, P, head size)");
    k->P = pk->dims[2];
  }
  k->T = k->P + k->L;
  if (mask) {
    if (mask->ndim < 1 || mask->ndim > 4 || (mask->dtype != MLC_BOOL && mask->dtype != q->dtype))
      return diag_set(d, MLC_ERR_INVALID, "nn.attention: attn_mask must be bool or Q's dtype, rank <= 4");
    int64_t want[4] = {k->B, k->Hq, k->S, k->T};
    for (int i = 0; i < mask->ndim; i++) {
      int64_t m = mask->dims[mask->ndim - 1 - i], w = want[3 - i];
      if (i == 0 ? m > w : (m != 1 && m != w))
        return diag_set(d, MLC_ERR_INVALID, "nn.attention: attn_mask does not broadcast to (B, H, S, T)");
    }
  }
  if (np && (np->ndim != 1 || np->dims[0] != k->B || !dtype_is_int(np->dtype)))
    return diag_set(d, MLC_ERR_INVALID, "nn.attention: nonpad_kv_seqlen must be integer (batch)");
  double scale = ir_attr_float(n, "scale", 0.0);
  if (scale == 0.0) scale = 1.0 / sqrt((double)k->E);
  k->sscale = sqrt(scale);
  k->softcap = ir_attr_float(n, "softcap", 0.0);
  k->causal = ir_attr_int(n, "is_causal", 0) != 0;
  k->qk_mode = (int)ir_attr_int(n, "qk_mode", 0);
  if (k->qk_mode < 0 || k->qk_mode > 3)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.attention: qk_matmul_output_mode %d is not supported", k->qk_mode);
  k->acc = q->dtype == MLC_F64 ? MLC_F64 : MLC_F32;
  return MLC_OK;
}

static mlc_status attn_infer(Node *n, Diag *d) {
  AttnCtx k;
  mlc_status st = attn_parse(n, &k, d);
  if (st != MLC_OK) return st;
  mlc_dtype t = n->inputs[0]->type.dtype;
  TensorType y = {t, 4, {k.B, k.Hq, k.S, k.Ev}};
  if (k.q3) y = (TensorType){t, 3, {k.B, k.S, k.Hq * k.Ev}};
  n->outputs[0]->type = y;
  if (n->noutputs > 1) n->outputs[1]->type = (TensorType){t, 4, {k.B, k.Hkv, k.T, k.E}};
  if (n->noutputs > 2) n->outputs[2]->type = (TensorType){t, 4, {k.B, k.Hkv, k.T, k.Ev}};
  if (n->noutputs > 3) n->outputs[3]->type = (TensorType){t, 4, {k.B, k.Hq, k.S, k.T}};
  return MLC_OK;
}

static Expr *clamp_idx(Arena *A, Expr *i, int64_t n) {
  return tir_bin(A, E_MIN, tir_bin(A, E_MAX, i, tir_idx(A, 0)), tir_idx(A, n - 1));
}

/* element [b, h, s, e] of a (B, H, S, E) view of x, which is 4-D or 3-D (B, S, H*E) */
static Expr *read_heads(TeCtx *c, TeTensor *x, bool three, int64_t esize, Expr *b, Expr *h, Expr *s, Expr *e) {
  Arena *A = c->arena;
  if (three) {
    Expr *ix[3] = {b, s, tir_add(A, tir_mul(A, h, tir_idx(A, esize)), e)};
    return te_read(c, x, 3, ix);
  }
  Expr *ix[4] = {b, h, s, e};
  return te_read(c, x, 4, ix);
}

/* present_key / present_value: past then the new keys along the sequence */
static Expr *attn_present(TeCtx *c, AttnCtx *k, Expr **idx, TeTensor *past, TeTensor *x, int64_t esize) {
  Arena *A = c->arena;
  Expr *cur = read_heads(c, x, k->q3, esize, idx[0], idx[1], clamp_idx(A, tir_sub(A, idx[2], tir_idx(A, k->P)), k->L),
                         idx[3]);
  if (!past) return cur;
  Expr *pi[4] = {idx[0], idx[1], clamp_idx(A, idx[2], k->P), idx[3]};
  return tir_select(A, tir_bin(A, E_LT, idx[2], tir_idx(A, k->P)), te_read(c, past, 4, pi), cur);
}
static Expr *attn_pk_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  return attn_present(c, k, idx, k->pk, k->k, k->E);
}
static Expr *attn_pv_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  return attn_present(c, k, idx, k->pv, k->v, k->Ev);
}

static Expr *to_acc(TeCtx *c, AttnCtx *k, Expr *e) { return to(c, k->acc, e); }

/* softcapped scaled scores c[b, h, i, j] */
static Expr *attn_score_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "e", k->E);
  Expr *e = tir_varref(A, r->var);
  Expr *hk = tir_bin(A, E_FLOORDIV, idx[1], tir_idx(A, k->Hq / k->Hkv));
  Expr *sq = tir_const(A, k->acc, k->sscale);
  Expr *qv = tir_mul(A, to_acc(c, k, read_heads(c, k->q, k->q3, k->E, idx[0], idx[1], idx[2], e)), sq);
  Expr *ki[4] = {idx[0], hk, idx[3], e};
  Expr *kv = tir_mul(A, to_acc(c, k, te_read(c, k->kt, 4, ki)), sq);
  return te_reduce(c, RED_SUM, tir_mul(A, qv, kv), 1, &r, NULL, NULL);
}

static Expr *attn_capped(TeCtx *c, AttnCtx *k, Expr **idx) {
  Arena *A = c->arena;
  Expr *s = te_read(c, k->score, 4, idx);
  if (k->softcap > 0) {
    Expr *x = tir_bin(A, E_DIV, s, tir_const(A, k->acc, k->softcap));
    s = tir_mul(A, tir_call(A, INTRIN_TANH, k->acc, 1, &x), tir_const(A, k->acc, k->softcap));
  }
  return s;
}

/* the additive bias at [b, h, i, j] (0 or -inf from masks, or the float mask's value) */
static Expr *attn_bias(TeCtx *c, AttnCtx *k, Expr **idx) {
  Arena *A = c->arena;
  Expr *ninf = tir_const(A, k->acc, -INFINITY), *zero = tir_const(A, k->acc, 0);
  Expr *bias = zero;
  Expr *nonpad = NULL;
  if (k->nonpad) nonpad = tir_cast(A, MLC_I64, te_read(c, k->nonpad, 1, &idx[0]));
  if (k->mask) {
    int md = k->mask->ndim;
    Expr *mi[4];
    for (int i = 0; i < md; i++) {
      int od = 4 - md + i;
      int64_t ext = k->mask->shape[i];
      mi[i] = ext == 1 ? tir_idx(A, 0) : idx[od];
      if (i == md - 1) mi[i] = clamp_idx(A, idx[3], ext);
    }
    Expr *m = te_read(c, k->mask, md, mi);
    Expr *inside = tir_bin(A, E_LT, idx[3], tir_idx(A, k->mask->shape[md - 1]));
    if (k->mask->dtype == MLC_BOOL)
      bias = tir_select(A, tir_bin(A, E_AND, inside, m), zero, ninf);
    else
      bias = tir_select(A, inside, to_acc(c, k, m), ninf);
  }
  if (k->causal) {
    Expr *off;
    if (k->pk) off = tir_idx(A, k->P);
    else if (nonpad) off = tir_sub(A, nonpad, tir_idx(A, k->S));
    else off = tir_idx(A, 0);
    Expr *ok = tir_bin(A, E_LE, idx[3], tir_add(A, idx[2], off));
    bias = tir_select(A, ok, bias, ninf);
  }
  if (nonpad) bias = tir_select(A, tir_bin(A, E_LT, idx[3], nonpad), bias, ninf);
  return bias;
}

static Expr *attn_logit(TeCtx *c, AttnCtx *k, Expr **idx) {
  return tir_add(c->arena, attn_capped(c, k, idx), attn_bias(c, k, idx));
}

static Expr *attn_max_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  IterVar *r = te_reduce_axis(c, "j", k->T);
  Expr *li[4] = {idx[0], idx[1], idx[2], tir_varref(c->arena, r->var)};
  return te_reduce(c, RED_MAX, attn_logit(c, k, li), 1, &r, NULL, NULL);
}

/* x - max, with rows that are entirely -inf (max -inf) kept at -inf so exp gives 0, not NaN */
static Expr *attn_shifted(TeCtx *c, AttnCtx *k, Expr **li, Expr *mx) {
  Arena *A = c->arena;
  Expr *fin = tir_bin(A, E_GT, mx, tir_const(A, k->acc, -INFINITY));
  return tir_sub(A, attn_logit(c, k, li), tir_select(A, fin, mx, tir_const(A, k->acc, 0)));
}

static Expr *attn_sum_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "j", k->T);
  Expr *li[4] = {idx[0], idx[1], idx[2], tir_varref(A, r->var)};
  Expr *x = attn_shifted(c, k, li, te_read(c, k->max, 3, idx));
  return te_reduce(c, RED_SUM, tir_call(A, INTRIN_EXP, k->acc, 1, &x), 1, &r, NULL, NULL);
}

static Expr *attn_prob_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  Arena *A = c->arena;
  Expr *x = attn_shifted(c, k, idx, te_read(c, k->max, 3, idx));
  Expr *s = te_read(c, k->sum, 3, idx);
  Expr *p = tir_bin(A, E_DIV, tir_call(A, INTRIN_EXP, k->acc, 1, &x), s);
  return tir_select(A, tir_bin(A, E_GT, s, tir_const(A, k->acc, 0)), p, tir_const(A, k->acc, 0));
}

static Expr *attn_out_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  Arena *A = c->arena;
  Expr *b = idx[0], *h, *s, *ev;
  if (k->q3) {
    s = idx[1];
    h = tir_bin(A, E_FLOORDIV, idx[2], tir_idx(A, k->Ev));
    ev = tir_bin(A, E_FLOORMOD, idx[2], tir_idx(A, k->Ev));
  } else {
    h = idx[1];
    s = idx[2];
    ev = idx[3];
  }
  IterVar *r = te_reduce_axis(c, "j", k->T);
  Expr *j = tir_varref(A, r->var);
  Expr *pi[4] = {b, h, s, j};
  Expr *vi[4] = {b, tir_bin(A, E_FLOORDIV, h, tir_idx(A, k->Hq / k->Hkv)), j, ev};
  Expr *prod = tir_mul(A, te_read(c, k->prob, 4, pi), to_acc(c, k, te_read(c, k->vt, 4, vi)));
  Expr *sum = te_reduce(c, RED_SUM, prod, 1, &r, NULL, NULL);
  return sum;
}

typedef struct CastCtx {
  TeTensor *src;
  mlc_dtype t;
} CastCtx;

static Expr *attn_cast_body(TeCtx *c, Expr **idx, void *user) {
  CastCtx *k = user;
  return to(c, k->t, te_read(c, k->src, k->src->ndim, idx));
}

static Expr *attn_qk_body(TeCtx *c, Expr **idx, void *user) {
  AttnCtx *k = user;
  Expr *v;
  if (k->qk_mode == 3) v = te_read(c, k->prob, 4, idx);
  else if (k->qk_mode == 2) v = attn_logit(c, k, idx);
  else v = attn_capped(c, k, idx);
  return to(c, k->q->dtype, v);
}

static mlc_status attn_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  AttnCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = attn_parse(n, k, d);
  if (st != MLC_OK) return st;
  k->q = ins[0];
  k->k = ins[1];
  k->v = ins[2];
  k->mask = opt_in(n, 3) ? ins[3] : NULL;
  k->pk = opt_in(n, 4) ? ins[4] : NULL;
  k->pv = opt_in(n, 5) ? ins[5] : NULL;
  k->nonpad = opt_in(n, 6) ? ins[6] : NULL;
  mlc_dtype t = ins[0]->dtype;
  int64_t ksh[4] = {k->B, k->Hkv, k->T, k->E}, vsh[4] = {k->B, k->Hkv, k->T, k->Ev};
  int64_t ssh[4] = {k->B, k->Hq, k->S, k->T}, rsh[3] = {k->B, k->Hq, k->S};
  k->kt = te_compute(c, "present_key", "injective", t, 4, ksh, attn_pk_body, k);
  k->vt = te_compute(c, "present_value", "injective", t, 4, vsh, attn_pv_body, k);
  k->score = te_compute(c, "attn_score", "reduce", k->acc, 4, ssh, attn_score_body, k);
  k->max = te_compute(c, "attn_max", "reduce", k->acc, 3, rsh, attn_max_body, k);
  k->sum = te_compute(c, "attn_sum", "reduce", k->acc, 3, rsh, attn_sum_body, k);
  k->prob = te_compute(c, "attn_prob", "injective", k->acc, 4, ssh, attn_prob_body, k);
  const TensorType *yt = &n->outputs[0]->type;
  TeTensor *y = te_compute(c, "attention", "reduce", k->acc, yt->ndim, yt->dims, attn_out_body, k);
  if (k->acc != t) {
    CastCtx *cc = arena_alloc(c->arena, sizeof *cc);
    cc->src = y;
    cc->t = t;
    y = te_compute(c, "attention_cast", "injective", t, yt->ndim, yt->dims, attn_cast_body, cc);
  }
  outs[0] = y;
  if (n->noutputs > 1) outs[1] = k->kt;
  if (n->noutputs > 2) outs[2] = k->vt;
  if (n->noutputs > 3) outs[3] = te_compute(c, "qk_matmul_output", "injective", t, 4, ssh, attn_qk_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- einsum */

#define EIN_MAX_OPS TOPI_EINSUM_MAX_OPS
#define EIN_LABELS TOPI_EINSUM_LABELS /* letters are their ASCII codes (>= 65); ellipsis dims are 1 + position */
#define EIN_ELL 1

typedef struct EinCtx {
  int nops;
  TeTensor *ops[EIN_MAX_OPS];
  int rank[EIN_MAX_OPS];
  int lab[EIN_MAX_OPS][MLC_MAX_DIMS]; /* label of each operand dim */
  int nout, out[MLC_MAX_DIMS];
  int nred, red[EIN_LABELS];
  int64_t size[EIN_LABELS];
  mlc_dtype acc, dtype;
} EinCtx;

static bool ein_letter(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* parses one term (p .. end) for an operand of rank r (r < 0: the output, ellipsis of width ew) */
static mlc_status ein_term(const char *p, const char *end, int r, int ew, int *labels, int *nl, int *ell_width,
                           Diag *d) {
  int letters = 0;
  bool ell = false;
  for (const char *q = p; q < end; q++) {
    if (ein_letter(*q)) letters++;
    else if (*q == '.') {
      if (ell || end - q < 3 || q[1] != '.' || q[2] != '.') return diag_set(d, MLC_ERR_INVALID, "einsum: bad ellipsis");
      ell = true;
      q += 2;
    } else if (*q != ' ') {
      return diag_set(d, MLC_ERR_INVALID, "einsum: bad character '%c' in the equation", *q);
    }
  }
  int width = r >= 0 ? r - letters : ew;
  if (r >= 0 && (width < 0 || (!ell && width != 0)))
    return diag_set(d, MLC_ERR_INVALID, "einsum: term '%.*s' does not match an operand of rank %d", (int)(end - p), p, r);
  if (!ell) width = 0;
  if (width > 20 || letters + width > MLC_MAX_DIMS) return diag_set(d, MLC_ERR_INVALID, "einsum: term of too high rank");
  *ell_width = width;
  int n = 0;
  for (const char *q = p; q < end; q++) {
    if (ein_letter(*q)) labels[n++] = (unsigned char)*q;
    else if (*q == '.') {
      /* right-aligned: the last ellipsis dim is label EIN_ELL + ew - 1 */
      for (int i = 0; i < width; i++) labels[n++] = EIN_ELL + (ew - width) + i;
      q += 2;
    }
  }
  *nl = n;
  return MLC_OK;
}

static mlc_status ein_parse(const Node *n, EinCtx *k, Diag *d) {
  memset(k, 0, sizeof *k);
  const char *eq = ir_attr_string(n, "equation", NULL);
  if (!eq) return diag_set(d, MLC_ERR_INVALID, "einsum: no equation");
  k->nops = n->ninputs;
  if (k->nops > EIN_MAX_OPS) return diag_set(d, MLC_ERR_UNSUPPORTED, "einsum: more than %d operands", EIN_MAX_OPS);
  k->dtype = n->inputs[0]->type.dtype;
  if (k->dtype == MLC_BOOL || k->dtype == MLC_STRING)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "einsum of %s is not supported", mlc_dtype_name(k->dtype));
  const char *arrow = strstr(eq, "->");
  const char *lhs_end = arrow ? arrow : eq + strlen(eq);
  /* first pass: the widest ellipsis */
  int ew = 0, ewidth[EIN_MAX_OPS];
  const char *p = eq;
  for (int i = 0; i < k->nops; i++) {
    const TensorType *t = &n->inputs[i]->type;
    if (t->dtype != k->dtype) return diag_set(d, MLC_ERR_INVALID, "einsum: operands have different dtypes");
    const char *e = p;
    while (e < lhs_end && *e != ',') e++;
    if ((i < k->nops - 1) != (e < lhs_end && *e == ','))
      return diag_set(d, MLC_ERR_INVALID, "einsum: the equation has not %d operand terms", k->nops);
    int tmp[MLC_MAX_DIMS + 24], nl;
    k->rank[i] = t->ndim;
    mlc_status st = ein_term(p, e, t->ndim, 0, tmp, &nl, &ewidth[i], d);
    if (st != MLC_OK) return st;
    if (ewidth[i] > ew) ew = ewidth[i];
    p = e + 1;
  }
  /* second pass: labels, sizes */
  bool seen[EIN_LABELS] = {0};
  int count[EIN_LABELS] = {0};
  p = eq;
  for (int i = 0; i < k->nops; i++) {
    const TensorType *t = &n->inputs[i]->type;
    const char *e = p;
    while (e < lhs_end && *e != ',') e++;
    int nl, w;
    mlc_status st = ein_term(p, e, t->ndim, ew, k->lab[i], &nl, &w, d);
    if (st != MLC_OK) return st;
    for (int j = 0; j < nl; j++) {
      int l = k->lab[i][j];
      int64_t s = t->dims[j];
      if (!seen[l] || k->size[l] == 1) k->size[l] = s;
      else if (s != 1 && s != k->size[l])
        return diag_set(d, MLC_ERR_INVALID, "einsum: label sizes differ (%lld vs %lld)", (long long)s, (long long)k->size[l]);
      count[l]++;
      seen[l] = true;
    }
    p = e + 1;
  }
  if (arrow) {
    int w;
    mlc_status st = ein_term(arrow + 2, arrow + 2 + strlen(arrow + 2), -1, ew, k->out, &k->nout, &w, d);
    if (st != MLC_OK) return st;
    for (int j = 0; j < k->nout; j++) {
      if (!seen[k->out[j]]) return diag_set(d, MLC_ERR_INVALID, "einsum: output label not in any input");
      for (int i = 0; i < j; i++)
        if (k->out[i] == k->out[j]) return diag_set(d, MLC_ERR_INVALID, "einsum: repeated output label");
    }
  } else {
    for (int l = EIN_ELL; l < EIN_ELL + ew; l++) k->out[k->nout++] = l;
    for (int l = 'A'; l < EIN_LABELS; l++)
      if (seen[l] && count[l] == 1) k->out[k->nout++] = l;
  }
  if (k->nout > MLC_MAX_DIMS) return diag_set(d, MLC_ERR_INVALID, "einsum: output of too high rank");
  for (int l = 0; l < EIN_LABELS; l++) {
    if (!seen[l]) continue;
    bool in_out = false;
    for (int j = 0; j < k->nout; j++) in_out |= k->out[j] == l;
    if (!in_out) k->red[k->nred++] = l;
  }
  k->acc = k->dtype == MLC_F16 || k->dtype == MLC_BF16 ? MLC_F32 : k->dtype;
  return MLC_OK;
}

mlc_status topi_einsum_parse(const Node *n, TopiEinsum *e, Diag *d) {
  EinCtx k;
  mlc_status st = ein_parse(n, &k, d);
  if (st != MLC_OK) return st;
  memset(e, 0, sizeof *e);
  e->nops = k.nops;
  memcpy(e->rank, k.rank, sizeof e->rank);
  memcpy(e->lab, k.lab, sizeof e->lab);
  e->nout = k.nout;
  memcpy(e->out, k.out, sizeof e->out);
  memcpy(e->size, k.size, sizeof e->size);
  return MLC_OK;
}

static mlc_status ein_infer(Node *n, Diag *d) {
  EinCtx k;
  mlc_status st = ein_parse(n, &k, d);
  if (st != MLC_OK) return st;
  TensorType o = {k.dtype, k.nout, {0}};
  for (int j = 0; j < k.nout; j++) o.dims[j] = k.size[k.out[j]];
  n->outputs[0]->type = o;
  return MLC_OK;
}

static Expr *ein_body(TeCtx *c, Expr **idx, void *user) {
  EinCtx *k = user;
  Arena *A = c->arena;
  Expr *var[EIN_LABELS] = {0};
  for (int j = 0; j < k->nout; j++) var[k->out[j]] = idx[j];
  IterVar *r[EIN_LABELS];
  for (int j = 0; j < k->nred; j++) {
    r[j] = te_reduce_axis(c, "r", k->size[k->red[j]]);
    var[k->red[j]] = tir_varref(A, r[j]->var);
  }
  Expr *prod = NULL;
  for (int i = 0; i < k->nops; i++) {
    Expr *xi[MLC_MAX_DIMS];
    for (int j = 0; j < k->rank[i]; j++) {
      int l = k->lab[i][j];
      xi[j] = k->ops[i]->shape[j] == 1 && k->size[l] != 1 ? tir_idx(A, 0) : var[l];
    }
    Expr *v = to(c, k->acc, te_read(c, k->ops[i], k->rank[i], xi));
    prod = prod ? tir_mul(A, prod, v) : v;
  }
  if (k->nred > 0) prod = te_reduce(c, RED_SUM, prod, k->nred, r, NULL, NULL);
  return prod;
}

static mlc_status ein_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  EinCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = ein_parse(n, k, d);
  if (st != MLC_OK) return st;
  for (int i = 0; i < k->nops; i++) k->ops[i] = ins[i];
  const TensorType *o = &n->outputs[0]->type;
  TeTensor *y = te_compute(c, "einsum", k->nred ? "reduce" : "injective", k->acc, o->ndim, o->dims, ein_body, k);
  if (k->acc != k->dtype) {
    CastCtx *cc = arena_alloc(c->arena, sizeof *cc);
    cc->src = y;
    cc->t = k->dtype;
    y = te_compute(c, "einsum_cast", "injective", k->dtype, o->ndim, o->dims, attn_cast_body, cc);
  }
  outs[0] = y;
  return MLC_OK;
}

const OpDef topi_ops_attention[] = {
    /* name                 pattern        min max nout infer       compute */
    {"nn.rotary_embedding", PAT_INJECTIVE, 3, 4, 1, rope_infer, rope_compute},
    {"nn.attention", PAT_OPAQUE, 3, 7, 4, attn_infer, attn_compute},
    {"einsum", PAT_OPAQUE, 1, EIN_MAX_OPS, 1, ein_infer, ein_compute},
    {0},
};
