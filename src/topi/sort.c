/* topi sort family: top-k selection, cumulative sum / product, hardmax.
 *
 *   topk(x)      axis, k, largest, sorted; outputs values and int64 indices along axis (k long)
 *   cumsum(x)    axis, exclusive, reverse      cumprod(x): the same with products
 *   hardmax(x)   axis, flatten: 1 at the first maximum along axis (flatten=1: over all dims from axis on,
 *                as the opset < 13 2-D coercion), 0 elsewhere
 * Algorithms, as TE computes (no data-dependent control flow, so the generic schedules apply), except
 * top-k of rows longer than SORT_MIN on CPU targets, an extern: a selection for k <= n / 4 with keys of at
 * most 32 bits (topk_select_extern), a merge sort otherwise (topk_sort_extern):
 *   - top-k by ranking: rank[i] = #{m : x[m] beats x[i]} where m beats i if it is strictly better (larger for
 *     largest=1, smaller otherwise) or equal with a lower index, which is the stable order of the ONNX
 *     reference. Ranks are a permutation, so the j-th output is the unique i with rank[i] == j, found by a
 *     min-reduction; values are x gathered at that index. O(n^2) comparisons per row, fine for the axis
 *     lengths TopK sees in inference graphs (a few thousand).
 *   - cumulative ops as masked reductions over the axis (m <= i, m < i exclusive, mirrored for reverse).
 *   - hardmax: the max, then the first index holding it (a min-reduction), then a compare. */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

static Expr *to(TeCtx *c, mlc_dtype t, Expr *e) { return e->dtype == t ? e : tir_cast(c->arena, t, e); }
static mlc_dtype acc_of(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16 ? MLC_F32 : t == MLC_BOOL ? MLC_U8 : t; }

static mlc_status axis_attr(const Node *n, const TensorType *x, int *axis, Diag *d) {
  int64_t a = ir_attr_int(n, "axis", x->ndim - 1);
  if (a < 0 || a >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "%s: axis %lld out of range for rank %d", n->op->name, (long long)a, x->ndim);
  *axis = (int)a;
  return MLC_OK;
}

/* ---------------------------------------------------------------- topk */

static mlc_status topk_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (!dtype_is_float(x->dtype) && !dtype_is_int(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "topk of %s is not supported", mlc_dtype_name(x->dtype));
  int axis = 0;
  mlc_status st = axis_attr(n, x, &axis, d);
  if (st != MLC_OK) return st;
  int64_t k = ir_attr_int(n, "k", -1);
  if (k < 0 || k > x->dims[axis])
    return diag_set(d, MLC_ERR_INVALID, "topk: k = %lld is not in [0, %lld]", (long long)k, (long long)x->dims[axis]);
  if (n->noutputs != 2) return diag_set(d, MLC_ERR_INVALID, "topk has two outputs");
  TensorType v = *x;
  v.dims[axis] = k;
  n->outputs[0]->type = v;
  v.dtype = MLC_I64;
  n->outputs[1]->type = v;
  return MLC_OK;
}

typedef struct TopkCtx {
  TeTensor *x, *rank, *sel;
  int axis;
  int64_t n;
  bool largest;
  mlc_dtype acc;
} TopkCtx;

static Expr *topk_rank_body(TeCtx *c, Expr **idx, void *user) {
  TopkCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "m", k->n);
  Expr *m = tir_varref(A, r->var), *i = idx[k->axis];
  Expr *xi[MLC_MAX_DIMS];
  for (int d = 0; d < k->x->ndim; d++) xi[d] = d == k->axis ? m : idx[d];
  Expr *xm = to(c, k->acc, te_read(c, k->x, k->x->ndim, xi));
  Expr *xv = to(c, k->acc, te_read(c, k->x, k->x->ndim, idx));
  Expr *strict = tir_bin(A, k->largest ? E_GT : E_LT, xm, xv);
  Expr *tie = tir_bin(A, E_AND, tir_bin(A, E_EQ, xm, xv), tir_bin(A, E_LT, m, i));
  Expr *beats = tir_bin(A, E_OR, strict, tie);
  Expr *one = tir_select(A, beats, tir_idx(A, 1), tir_idx(A, 0));
  return te_reduce(c, RED_SUM, one, 1, &r, NULL, NULL);
}

static Expr *topk_sel_body(TeCtx *c, Expr **idx, void *user) {
  TopkCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "i", k->n);
  Expr *i = tir_varref(A, r->var);
  Expr *ri[MLC_MAX_DIMS];
  for (int d = 0; d < k->x->ndim; d++) ri[d] = d == k->axis ? i : idx[d];
  Expr *hit = tir_bin(A, E_EQ, te_read(c, k->rank, k->x->ndim, ri), idx[k->axis]);
  return te_reduce(c, RED_MIN, tir_select(A, hit, i, tir_idx(A, k->n)), 1, &r, NULL, NULL);
}

static Expr *topk_idx_body(TeCtx *c, Expr **idx, void *user) {
  TopkCtx *k = user;
  return te_read(c, k->sel, k->x->ndim, idx);
}

static Expr *topk_val_body(TeCtx *c, Expr **idx, void *user) {
  TopkCtx *k = user;
  Arena *A = c->arena;
  Expr *s = te_read(c, k->sel, k->x->ndim, idx);
  /* sel is always < n (ranks are a permutation); the clamp keeps the load in bounds regardless */
  s = tir_bin(A, E_MIN, s, tir_idx(A, k->n - 1));
  Expr *xi[MLC_MAX_DIMS];
  for (int d = 0; d < k->x->ndim; d++) xi[d] = d == k->axis ? s : idx[d];
  return te_read(c, k->x, k->x->ndim, xi);
}

/* ---- top-k by sorting (CPU, rows of more than SORT_MIN elements): per row along the axis, the indices
 * 0..n-1 sorted by topi_merge_sort (a bottom-up merge sort: one pass per width 1, 2, 4, .. < n, merging runs
 * [lo, mid) and [mid, hi) into a scratch row and copying it back; the right run's head goes first only when
 * strictly better, so equal elements keep the lower index first, the order of the ranking form; also
 * NonMaxSuppression's candidate order), then the first k written out. O(n log n) per row instead of the ranking form's O(n^2) comparisons, which took 1.6 ms per
 * 3234-long row (SSDlite's 90 per-class TopKs). The rows run one after another in one extern kernel. */
enum { SORT_MIN = 64 };

static Expr *I(Arena *A, int64_t v) { return tir_idx(A, v); }
static Expr *ld1(Arena *A, Buffer *b, Expr *i) { return tir_load(A, b, 1, &i); }
static Stmt *st1(Arena *A, Buffer *b, Expr *i, Expr *v) { return tir_store(A, b, 1, &i, v); }

/* the index of element pos of row (o, in) of buffer b along axis: o over the dims before it, in after */
static void row_index(Arena *A, const Buffer *b, int axis, Expr *o, Expr *pos, Expr *in, Expr **idx) {
  for (int d = b->ndim - 1; d > axis; d--) {
    idx[d] = tir_bin(A, E_FLOORMOD, in, I(A, b->shape[d]));
    in = tir_bin(A, E_FLOORDIV, in, I(A, b->shape[d]));
  }
  idx[axis] = pos;
  for (int d = axis - 1; d >= 0; d--) {
    idx[d] = tir_bin(A, E_FLOORMOD, o, I(A, b->shape[d]));
    o = tir_bin(A, E_FLOORDIV, o, I(A, b->shape[d]));
  }
}

Stmt *topi_merge_sort(Arena *A, int64_t n, Buffer *ord, Buffer *tmp, Buffer *pi, Buffer *pj, bool descending,
                      Expr *(*key)(Arena *A, Expr *index, void *user), void *user) {
  int nst = 1;
  for (int64_t w = 1; w < n; w *= 2) nst++;
  Stmt **st = arena_alloc(A, sizeof(Stmt *) * (size_t)nst);
  Var *iv = tir_var(A, "i", MLC_I64);
  Expr *zero = I(A, 0);
  st[0] = tir_for(A, iv, zero, I(A, n), FOR_SERIAL, st1(A, ord, tir_varref(A, iv), tir_varref(A, iv)));
  int s = 1;
  for (int64_t w = 1; w < n; w *= 2) {
    Var *rv = tir_var(A, "run", MLC_I64), *kv = tir_var(A, "k", MLC_I64), *cv = tir_var(A, "i", MLC_I64);
    Expr *lo = tir_mul(A, tir_varref(A, rv), I(A, 2 * w));
    Expr *mid = tir_bin(A, E_MIN, tir_add(A, lo, I(A, w)), I(A, n));
    Expr *hi = tir_bin(A, E_MIN, tir_add(A, lo, I(A, 2 * w)), I(A, n));
    Expr *a = ld1(A, pi, zero), *b = ld1(A, pj, zero);
    Expr *oa = ld1(A, ord, tir_bin(A, E_MIN, a, I(A, n - 1))), *ob = ld1(A, ord, tir_bin(A, E_MIN, b, I(A, n - 1)));
    Expr *right_better = tir_bin(A, descending ? E_GT : E_LT, key(A, ob, user), key(A, oa, user));
    Expr *left = tir_bin(A, E_AND, tir_bin(A, E_LT, a, mid),
                         tir_bin(A, E_OR, tir_bin(A, E_GE, b, hi), tir_bin(A, E_EQ, right_better, tir_const(A, MLC_BOOL, 0))));
    Stmt *ta[2] = {st1(A, tmp, tir_varref(A, kv), oa), st1(A, pi, zero, tir_add(A, a, I(A, 1)))};
    Stmt *tb[2] = {st1(A, tmp, tir_varref(A, kv), ob), st1(A, pj, zero, tir_add(A, b, I(A, 1)))};
    Stmt *merge = tir_for(A, kv, lo, tir_sub(A, hi, lo), FOR_SERIAL,
                          tir_if(A, left, tir_seq(A, 2, ta), tir_seq(A, 2, tb)));
    Stmt *run[3] = {st1(A, pi, zero, lo), st1(A, pj, zero, mid), merge};
    Stmt *pass[2] = {tir_for(A, rv, zero, I(A, (n + 2 * w - 1) / (2 * w)), FOR_SERIAL, tir_seq(A, 3, run)),
                     tir_for(A, cv, zero, I(A, n), FOR_SERIAL, st1(A, ord, tir_varref(A, cv), ld1(A, tmp, tir_varref(A, cv))))};
    st[s++] = tir_seq(A, 2, pass);
  }
  return tir_seq(A, s, st);
}

typedef struct RowKey {
  TeCtx *c;
  TopkCtx *k;
  Buffer *x;
  Expr *o, *in;
} RowKey;

static Expr *row_key(Arena *A, Expr *pos, void *user) {
  RowKey *r = user;
  Expr *xi[MLC_MAX_DIMS];
  row_index(A, r->x, r->k->axis, r->o, pos, r->in, xi);
  return to(r->c, r->k->acc, tir_load(A, r->x, r->x->ndim, xi));
}

static Stmt *topk_sort_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  TopkCtx *k = user;
  Arena *A = c->arena;
  Buffer *x = ins[0], *vals = outs[0], *inds = outs[1];
  int64_t n = k->n, kk = vals->shape[k->axis], outer = 1, inner = 1, one = 1;
  for (int d = 0; d < k->axis; d++) outer *= x->shape[d];
  for (int d = k->axis + 1; d < x->ndim; d++) inner *= x->shape[d];
  Buffer *ord = tir_buffer(A, "topk_order", MLC_I64, 1, &n), *tmp = tir_buffer(A, "topk_merge", MLC_I64, 1, &n);
  Buffer *pi = tir_buffer(A, "topk_left", MLC_I64, 1, &one), *pj = tir_buffer(A, "topk_right", MLC_I64, 1, &one);
  Var *ov = tir_var(A, "o", MLC_I64), *inv = tir_var(A, "in", MLC_I64), *jv = tir_var(A, "j", MLC_I64);
  Expr *o = tir_varref(A, ov), *in = tir_varref(A, inv), *zero = I(A, 0);
  RowKey *rk = arena_alloc(A, sizeof *rk);
  *rk = (RowKey){.c = c, .k = k, .x = x, .o = o, .in = in};
  /* the first k of the sorted row */
  Expr *j = tir_varref(A, jv), *sel = ld1(A, ord, j);
  Expr *xi[MLC_MAX_DIMS], *oi[MLC_MAX_DIMS];
  row_index(A, x, k->axis, o, sel, in, xi);
  row_index(A, vals, k->axis, o, j, in, oi);
  Stmt *w2[2] = {tir_store(A, vals, vals->ndim, oi, tir_load(A, x, x->ndim, xi)),
                 tir_store(A, inds, inds->ndim, oi, sel)};
  Stmt *row[2] = {topi_merge_sort(A, n, ord, tmp, pi, pj, k->largest, row_key, rk),
                  tir_for(A, jv, zero, I(A, kk), FOR_SERIAL, tir_seq(A, 2, w2))};
  Stmt *r = tir_for(A, ov, zero, I(A, outer), FOR_SERIAL,
                    tir_for(A, inv, zero, I(A, inner), FOR_SERIAL, tir_seq(A, 2, row)));
  Buffer *scratch[4] = {ord, tmp, pi, pj};
  for (int i = 0; i < 4; i++) r = tir_allocate(A, scratch[i], r);
  return r;
}

/* ---- top-k by selection (CPU, k at most a quarter of a long row, keys of at most 32 bits): each element's
 * key and index packed into one int64, key(x) * 2^32 + (2^31 - 1 - i), where key is an order-preserving
 * int32 map of x (floats: their bits with the magnitude flipped for negatives, -0 as +0, NaN above +inf;
 * reversed for largest=0). The packed values are distinct and order the elements as the sort does (better
 * first, then lower index). One pass over the row keeps the candidates in a buffer of 2k: an element
 * enters when it beats the k-th best kept so far; a full buffer is sorted (topi_merge_sort, descending) and
 * cut back to its best k. At the end the buffer (padded with INT64_MIN) is sorted and its first k unpacked.
 * O(n + k log k * (insertions / k)) per row: RetinaNet's 1000 best of 1.3M anchors took 330 ms as a full
 * sort. */
static bool packable(mlc_dtype t) {
  return t == MLC_F32 || t == MLC_F16 || t == MLC_BF16 || t == MLC_I32 || t == MLC_U32 || t == MLC_I16 ||
         t == MLC_U16 || t == MLC_I8 || t == MLC_U8 || t == MLC_BOOL;
}

/* the packed int64 of value v (of dtype t) at row position i */
static Expr *packed_key(Arena *A, mlc_dtype t, bool largest, Expr *v, Expr *i) {
  Expr *key;
  if (dtype_is_float(t)) {
    Expr *f = t == MLC_F32 ? v : tir_cast(A, MLC_F32, v);
    f = tir_add(A, f, tir_const(A, MLC_F32, 0.0)); /* -0 + 0 = +0 */
    Expr *bits = tir_cast(A, MLC_I64, tir_call(A, INTRIN_REINTERPRET, MLC_I32, 1, &f));
    key = tir_select(A, tir_bin(A, E_GE, bits, I(A, 0)), bits, tir_bin(A, E_BITXOR, bits, I(A, 0x7FFFFFFF)));
    key = tir_select(A, tir_bin(A, E_NE, f, f), I(A, 0x7FFFFFFF), key);
  } else {
    key = tir_cast(A, MLC_I64, v);
    if (t == MLC_U32) key = tir_sub(A, key, I(A, (int64_t)1 << 31));
  }
  if (!largest) key = tir_sub(A, I(A, -1), key);
  return tir_add(A, tir_mul(A, key, I(A, (int64_t)1 << 32)), tir_sub(A, I(A, 0x7FFFFFFF), i));
}

typedef struct BufKey {
  Buffer *buf;
} BufKey;

static Expr *buf_key(Arena *A, Expr *pos, void *user) { return ld1(A, ((BufKey *)user)->buf, pos); }

static Stmt *topk_select_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  TopkCtx *k = user;
  Arena *A = c->arena;
  Buffer *x = ins[0], *vals = outs[0], *inds = outs[1];
  int64_t n = k->n, kk = vals->shape[k->axis], cap = 2 * kk, outer = 1, inner = 1, one = 1;
  for (int d = 0; d < k->axis; d++) outer *= x->shape[d];
  for (int d = k->axis + 1; d < x->ndim; d++) inner *= x->shape[d];
  Buffer *buf = tir_buffer(A, "topk_kept", MLC_I64, 1, &cap), *best = tir_buffer(A, "topk_best", MLC_I64, 1, &kk);
  Buffer *ord = tir_buffer(A, "topk_order", MLC_I64, 1, &cap), *tmp = tir_buffer(A, "topk_merge", MLC_I64, 1, &cap);
  Buffer *pi = tir_buffer(A, "topk_left", MLC_I64, 1, &one), *pj = tir_buffer(A, "topk_right", MLC_I64, 1, &one);
  Buffer *cnt = tir_buffer(A, "topk_count", MLC_I64, 1, &one), *thr = tir_buffer(A, "topk_threshold", MLC_I64, 1, &one);
  Var *ov = tir_var(A, "o", MLC_I64), *inv = tir_var(A, "in", MLC_I64), *iv = tir_var(A, "i", MLC_I64);
  Var *jv = tir_var(A, "j", MLC_I64), *j2 = tir_var(A, "j", MLC_I64), *j3 = tir_var(A, "j", MLC_I64);
  Var *j4 = tir_var(A, "j", MLC_I64), *pv = tir_var(A, "packed", MLC_I64);
  Expr *o = tir_varref(A, ov), *in = tir_varref(A, inv), *i = tir_varref(A, iv), *zero = I(A, 0);
  BufKey *bk = arena_alloc(A, sizeof *bk);
  bk->buf = buf;
  /* the scan: packed value p of element i enters when it beats the threshold */
  Expr *xi[MLC_MAX_DIMS];
  row_index(A, x, k->axis, o, i, in, xi);
  Expr *p = tir_varref(A, pv);
  Expr *nc = ld1(A, cnt, zero);
  Expr *j = tir_varref(A, jv);
  Stmt *cut[5] = {topi_merge_sort(A, cap, ord, tmp, pi, pj, true, buf_key, bk),
                  tir_for(A, jv, zero, I(A, kk), FOR_SERIAL, st1(A, best, j, ld1(A, buf, ld1(A, ord, j)))),
                  tir_for(A, j2, zero, I(A, kk), FOR_SERIAL,
                          st1(A, buf, tir_varref(A, j2), ld1(A, best, tir_varref(A, j2)))),
                  st1(A, cnt, zero, I(A, kk)), st1(A, thr, zero, ld1(A, buf, I(A, kk - 1)))};
  Stmt *enter[3] = {st1(A, buf, nc, p), st1(A, cnt, zero, tir_add(A, nc, I(A, 1))),
                    tir_if(A, tir_bin(A, E_EQ, ld1(A, cnt, zero), I(A, cap)), tir_seq(A, 5, cut), NULL)};
  Stmt *scan_body = tir_let_stmt(A, pv, packed_key(A, x->dtype, k->largest, tir_load(A, x, x->ndim, xi), i),
                                 tir_if(A, tir_bin(A, E_GT, p, ld1(A, thr, zero)), tir_seq(A, 3, enter), NULL));
  /* the end: pad, sort, unpack the first k */
  Expr *q = ld1(A, buf, ld1(A, ord, tir_varref(A, j4)));
  Expr *idx = tir_sub(A, I(A, 0x7FFFFFFF), tir_bin(A, E_BITAND, q, I(A, 0xFFFFFFFF)));
  Expr *ri[MLC_MAX_DIMS], *oi[MLC_MAX_DIMS];
  Var *sv = tir_var(A, "sel", MLC_I64);
  Expr *sel = tir_varref(A, sv);
  row_index(A, x, k->axis, o, sel, in, ri);
  row_index(A, vals, k->axis, o, tir_varref(A, j4), in, oi);
  Stmt *w2[2] = {tir_store(A, vals, vals->ndim, oi, tir_load(A, x, x->ndim, ri)),
                 tir_store(A, inds, inds->ndim, oi, sel)};
  Stmt *row[6] = {st1(A, cnt, zero, zero), st1(A, thr, zero, I(A, INT64_MIN)),
                  tir_for(A, iv, zero, I(A, n), FOR_SERIAL, scan_body),
                  tir_for(A, j3, nc, tir_sub(A, I(A, cap), nc), FOR_SERIAL, st1(A, buf, tir_varref(A, j3), I(A, INT64_MIN))),
                  topi_merge_sort(A, cap, ord, tmp, pi, pj, true, buf_key, bk),
                  tir_for(A, j4, zero, I(A, kk), FOR_SERIAL, tir_let_stmt(A, sv, idx, tir_seq(A, 2, w2)))};
  Stmt *r = tir_for(A, ov, zero, I(A, outer), FOR_SERIAL,
                    tir_for(A, inv, zero, I(A, inner), FOR_SERIAL, tir_seq(A, 6, row)));
  Buffer *scratch[8] = {buf, best, ord, tmp, pi, pj, cnt, thr};
  for (int s = 0; s < 8; s++) r = tir_allocate(A, scratch[s], r);
  return r;
}

static mlc_status topk_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  TopkCtx *k = arena_alloc(c->arena, sizeof *k);
  memset(k, 0, sizeof *k);
  k->x = ins[0];
  mlc_status st = axis_attr(n, &n->inputs[0]->type, &k->axis, d);
  if (st != MLC_OK) return st;
  k->n = ins[0]->shape[k->axis];
  k->largest = ir_attr_int(n, "largest", 1) != 0;
  k->acc = acc_of(ins[0]->dtype);
  const TensorType *ot = &n->outputs[0]->type;
  if (c->target && c->target->kind == TARGET_CPU && k->n > SORT_MIN) {
    TeTensor types[2];
    memset(types, 0, sizeof types);
    for (int i = 0; i < 2; i++) {
      types[i].dtype = i ? MLC_I64 : ins[0]->dtype;
      types[i].ndim = ot->ndim;
      memcpy(types[i].shape, ot->dims, sizeof(int64_t) * (size_t)ot->ndim);
    }
    int64_t kk = ot->dims[k->axis];
    bool select = kk >= 1 && 4 * kk <= k->n && k->n < ((int64_t)1 << 31) && packable(ins[0]->dtype);
    te_extern(c, "topk", "sort", 1, ins, 2, types, select ? topk_select_extern : topk_sort_extern, k, outs);
    return MLC_OK;
  }
  k->rank = te_compute(c, "topk_rank", "reduce", MLC_I64, ins[0]->ndim, ins[0]->shape, topk_rank_body, k);
  k->sel = te_compute(c, "topk_select", "reduce", MLC_I64, ot->ndim, ot->dims, topk_sel_body, k);
  outs[0] = te_compute(c, "topk_values", "injective", ins[0]->dtype, ot->ndim, ot->dims, topk_val_body, k);
  outs[1] = te_compute(c, "topk_indices", "injective", MLC_I64, ot->ndim, ot->dims, topk_idx_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- cumsum / cumprod */

static mlc_status cum_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (!dtype_is_float(x->dtype) && !dtype_is_int(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(x->dtype));
  int axis = 0;
  mlc_status st = axis_attr(n, x, &axis, d);
  if (st != MLC_OK) return st;
  n->outputs[0]->type = *x;
  return MLC_OK;
}

typedef struct CumCtx {
  TeTensor *x;
  int axis;
  bool exclusive, reverse, prod;
  mlc_dtype acc;
} CumCtx;

static Expr *cum_body(TeCtx *c, Expr **idx, void *user) {
  CumCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "m", k->x->shape[k->axis]);
  Expr *m = tir_varref(A, r->var), *i = idx[k->axis];
  ExprKind cmp = k->reverse ? (k->exclusive ? E_GT : E_GE) : (k->exclusive ? E_LT : E_LE);
  Expr *in = tir_bin(A, cmp, m, i);
  Expr *xi[MLC_MAX_DIMS];
  for (int d = 0; d < k->x->ndim; d++) xi[d] = d == k->axis ? m : idx[d];
  Expr *v = to(c, k->acc, te_read(c, k->x, k->x->ndim, xi));
  v = tir_select(A, in, v, tir_const(A, k->acc, k->prod ? 1 : 0));
  return te_reduce(c, k->prod ? RED_PROD : RED_SUM, v, 1, &r, NULL, NULL);
}

static Expr *cast_body(TeCtx *c, Expr **idx, void *user) {
  TeTensor **io = user; /* source, and the output dtype from io[1] */
  return to(c, io[1]->dtype, te_read(c, io[0], io[0]->ndim, idx));
}

static mlc_status cum_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  CumCtx *k = arena_alloc(c->arena, sizeof *k);
  memset(k, 0, sizeof *k);
  k->x = ins[0];
  mlc_status st = axis_attr(n, &n->inputs[0]->type, &k->axis, d);
  if (st != MLC_OK) return st;
  k->exclusive = ir_attr_int(n, "exclusive", 0) != 0;
  k->reverse = ir_attr_int(n, "reverse", 0) != 0;
  k->prod = strcmp(n->op->name, "cumprod") == 0;
  k->acc = acc_of(ins[0]->dtype);
  TeTensor *r = te_compute(c, n->op->name, "reduce", k->acc, ins[0]->ndim, ins[0]->shape, cum_body, k);
  if (k->acc != ins[0]->dtype) {
    TeTensor **io = arena_alloc(c->arena, 2 * sizeof *io);
    io[0] = r;
    io[1] = ins[0];
    r = te_compute(c, arena_printf(c->arena, "%s_cast", n->op->name), "elemwise", ins[0]->dtype, ins[0]->ndim,
                   ins[0]->shape, cast_body, io);
  }
  outs[0] = r;
  return MLC_OK;
}

/* ---------------------------------------------------------------- hardmax */

typedef struct HardmaxCtx {
  TeTensor *x, *max, *first;
  int axis;
  bool flatten;
  mlc_dtype acc;
} HardmaxCtx;

static mlc_status hardmax_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "hardmax of %s is not supported", mlc_dtype_name(x->dtype));
  int axis = 0;
  mlc_status st = axis_attr(n, x, &axis, d);
  if (st != MLC_OK) return st;
  n->outputs[0]->type = *x;
  return MLC_OK;
}

static bool hm_red(const HardmaxCtx *k, int d) { return k->flatten ? d >= k->axis : d == k->axis; }

/* the reduced shape: x's with reduced dims set to 1 */
static void hm_shape(const HardmaxCtx *k, int64_t *s) {
  for (int d = 0; d < k->x->ndim; d++) s[d] = hm_red(k, d) ? 1 : k->x->shape[d];
}

static Expr *hm_reduce(TeCtx *c, Expr **idx, void *user, bool first) {
  HardmaxCtx *k = user;
  Arena *A = c->arena;
  IterVar *ax[MLC_MAX_DIMS];
  Expr *xi[MLC_MAX_DIMS];
  Expr *lin = tir_idx(A, 0);
  int na = 0;
  for (int d = 0; d < k->x->ndim; d++) {
    if (!hm_red(k, d)) {
      xi[d] = idx[d];
      continue;
    }
    ax[na] = te_reduce_axis(c, arena_printf(A, "r%d", d), k->x->shape[d]);
    xi[d] = tir_varref(A, ax[na]->var);
    lin = tir_add(A, tir_mul(A, lin, tir_idx(A, k->x->shape[d])), xi[d]);
    na++;
  }
  Expr *v = to(c, k->acc, te_read(c, k->x, k->x->ndim, xi));
  if (!first) return te_reduce(c, RED_MAX, v, na, ax, NULL, NULL);
  Expr *hit = tir_bin(A, E_EQ, v, te_read(c, k->max, k->x->ndim, idx));
  return te_reduce(c, RED_MIN, tir_select(A, hit, lin, tir_idx(A, INT64_MAX)), na, ax, NULL, NULL);
}

static Expr *hm_max_body(TeCtx *c, Expr **idx, void *user) { return hm_reduce(c, idx, user, false); }
static Expr *hm_first_body(TeCtx *c, Expr **idx, void *user) { return hm_reduce(c, idx, user, true); }

static Expr *hm_out_body(TeCtx *c, Expr **idx, void *user) {
  HardmaxCtx *k = user;
  Arena *A = c->arena;
  Expr *si[MLC_MAX_DIMS];
  Expr *lin = tir_idx(A, 0);
  for (int d = 0; d < k->x->ndim; d++) {
    si[d] = hm_red(k, d) ? tir_idx(A, 0) : idx[d];
    if (hm_red(k, d)) lin = tir_add(A, tir_mul(A, lin, tir_idx(A, k->x->shape[d])), idx[d]);
  }
  Expr *hit = tir_bin(A, E_EQ, te_read(c, k->first, k->x->ndim, si), lin);
  return tir_select(A, hit, tir_const(A, k->x->dtype, 1), tir_const(A, k->x->dtype, 0));
}

static mlc_status hardmax_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  HardmaxCtx *k = arena_alloc(c->arena, sizeof *k);
  memset(k, 0, sizeof *k);
  k->x = ins[0];
  mlc_status st = axis_attr(n, &n->inputs[0]->type, &k->axis, d);
  if (st != MLC_OK) return st;
  k->flatten = ir_attr_int(n, "flatten", 0) != 0;
  k->acc = acc_of(ins[0]->dtype);
  int64_t s[MLC_MAX_DIMS];
  hm_shape(k, s);
  k->max = te_compute(c, "hardmax_max", "reduce", k->acc, ins[0]->ndim, s, hm_max_body, k);
  k->first = te_compute(c, "hardmax_first", "reduce", MLC_I64, ins[0]->ndim, s, hm_first_body, k);
  outs[0] = te_compute(c, "hardmax", "injective", ins[0]->dtype, ins[0]->ndim, ins[0]->shape, hm_out_body, k);
  return MLC_OK;
}

const OpDef topi_ops_sort[] = {
    /* name      pattern     min max nout infer          compute      dyn */
    {"topk", PAT_OPAQUE, 1, 1, 2, topk_infer, topk_compute, DYN_ALONG_AXIS},
    {"cumsum", PAT_OPAQUE, 1, 1, 1, cum_infer, cum_compute, DYN_ALONG_AXIS},
    {"cumprod", PAT_OPAQUE, 1, 1, 1, cum_infer, cum_compute, DYN_ALONG_AXIS},
    {"hardmax", PAT_OPAQUE, 1, 1, 1, hardmax_infer, hardmax_compute},
    {0},
};
