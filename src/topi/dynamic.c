/* topi dynamic family: ops whose output extent depends on the data (bounded dynamic outputs).
 *
 *   vision.non_max_suppression(boxes [B, N, 4], scores [B, C, N], iou_threshold, score_threshold[, count])
 *        (count int64 [1]: only the first count boxes exist, for boxes and scores with a data-dependent extent)
 *        attrs center_point_box (0: [y1, x1, y2, x2] in either corner order, 1: [xc, yc, w, h]),
 *        max_output (boxes per class, > 0), has_score_threshold (0: no score filter; the input is ignored)
 *        -> selected [B*C*min(max_output, N), 3] int64 (batch, class, box), count [1]
 *   unique(x)           attrs axis, sorted -> y (x with dim axis = L), indices [L], inverse_indices [L],
 *                       counts [L], count [1]  (L = x's extent along axis; ONNX Unique without an axis is
 *                       imported as unique of the flattened input along axis 0)
 *   nonzero(x)          -> [max(rank, 1), numel] int64 (coordinates of the non-zero elements in row-major
 *                       order; a scalar counts as [1]), count [1]
 *   compress(x, cond)   attr axis; cond 1-D of length <= x's dim -> x with dim axis = len(cond), count [1]
 * and the two ops that read an extent as an ordinary int64 [1] input (src/ir/dynamic.c, DYN_MASK / DYN_PACK):
 *   dyn_mask(x, extent) attrs axis, fill ("zero", "one", "lowest": -inf / the dtype's minimum, "highest")
 *                       -> x with every position >= extent along axis set to fill (a static value)
 *   dyn_pack(x_1..x_n, e_1..e_n, total)  attr axis -> the first e_i slices of each x_i along axis, packed one
 *                       after the other (offsets e_1 + ... + e_{i-1}, each e_i clamped into [0, x_i's length]),
 *                       zeros after; the output's extent is total (the importer makes it the sum)
 *
 * Every output type is a static upper bound; the last output, int64 [1], receives the actual extent of the
 * data-dependent axis (the number of selected boxes, unique slices, non-zeros, true conditions). infer marks
 * the data-dependent outputs (Value.dyn_extent, dyn_axis), which the execution plan records and the executor
 * trims by after a run (runtime/executor.c: it compacts the valid part to the front of the buffer). Kernels
 * write in the upper-bound layout and zero what is past the extent (every output buffer is zero-filled first),
 * so readers that compute on the whole bound (src/ir/dynamic.c) see zeros there: valid indices, never garbage.
 *
 * The kernels are TE externs whose TIR is written directly, serial loops (one thread on GPUs):
 *   - NMS follows the ONNX reference (onnxruntime's): per batch and class, the boxes with score >
 *     score_threshold are candidates; repeatedly the best remaining candidate (highest score, the lowest box
 *     index among equal scores: stable) is taken and kept unless its IoU with a box already kept for this class
 *     is > iou_threshold, until max_output boxes are kept. O(N^2) per class (a selection scan per pick).
 *   - unique compares slices (x at one index of axis, all other dims row-major) lexicographically (floats:
 *     NaN after every number, all NaNs equal, -0 equal to 0, so the order is total): first[k]
 *     = the first slice equal to slice k; the distinct ones (first[k] == k) get their rank, which is the number
 *     of distinct slices before them (sorted=0: by position; sorted=1: by value); counts and inverse_indices
 *     follow from first and rank. O(L^2 * slice size).
 *   - nonzero and compress are one pass with a running count.
 *   - dyn_mask is an injective TE compute (a select on the position); dyn_pack a serial copy loop per piece. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "topi/topi.h"

static Expr *I(Arena *A, int64_t v) { return tir_idx(A, v); }
static Expr *V(Arena *A, Var *v) { return tir_varref(A, v); }
static Expr *ld0(Arena *A, Buffer *b) {
  Expr *z = I(A, 0);
  return tir_load(A, b, 1, &z);
}
static Stmt *st0(Arena *A, Buffer *b, Expr *v) {
  Expr *z = I(A, 0);
  return tir_store(A, b, 1, &z, v);
}
static Expr *ld1(Arena *A, Buffer *b, Expr *i) { return tir_load(A, b, 1, &i); }
static Stmt *st1(Arena *A, Buffer *b, Expr *i, Expr *v) { return tir_store(A, b, 1, &i, v); }
static Stmt *loop(Arena *A, Var *v, int64_t n, Stmt *body) { return tir_for(A, v, I(A, 0), I(A, n), FOR_SERIAL, body); }
static Var *ivar(Arena *A, const char *name) { return tir_var(A, name, MLC_I64); }
/* a scalar or one-element buffer's element (all-zero indices) */
static Expr *ld_scalar(Arena *A, Buffer *b) {
  Expr *z[MLC_MAX_DIMS];
  for (int d = 0; d < b->ndim; d++) z[d] = I(A, 0);
  return tir_load(A, b, b->ndim, z);
}
/* a comparable form of an element: float16/bfloat16 as float32, bool as int32 */
static Expr *cmp_form(Arena *A, Expr *e) {
  if (e->dtype == MLC_F16 || e->dtype == MLC_BF16) return tir_cast(A, MLC_F32, e);
  if (e->dtype == MLC_BOOL) return tir_cast(A, MLC_I32, e);
  return e;
}
static Expr *is_nonzero(Arena *A, Expr *e) {
  e = cmp_form(A, e);
  return tir_bin(A, E_NE, e, tir_const(A, e->dtype, 0));
}

/* out[...] = 0 over the whole buffer */
static Stmt *zero_fill(Arena *A, Buffer *b) {
  Var *v[MLC_MAX_DIMS];
  Expr *ix[MLC_MAX_DIMS];
  for (int d = 0; d < b->ndim; d++) {
    v[d] = ivar(A, arena_printf(A, "z%d", d));
    ix[d] = V(A, v[d]);
  }
  Stmt *s = tir_store(A, b, b->ndim, ix, tir_const(A, b->dtype, 0));
  for (int d = b->ndim - 1; d >= 0; d--) s = loop(A, v[d], b->shape[d], s);
  return s;
}

/* Wraps body in loops over every dim of `shape` except `skip` (-1: none); ix[d] receives each loop's var for
 * d != skip (the caller fills ix[skip]). Returns the loop nest around body, built by the callback. */
typedef Stmt *(*BodyFn)(Arena *A, Expr **ix, void *user);
static Stmt *nest_except(Arena *A, int ndim, const int64_t *shape, int skip, BodyFn fn, void *user, Expr **ix) {
  Var *v[MLC_MAX_DIMS];
  for (int d = 0; d < ndim; d++)
    if (d != skip) {
      v[d] = ivar(A, arena_printf(A, "d%d", d));
      ix[d] = V(A, v[d]);
    }
  Stmt *s = fn(A, ix, user);
  for (int d = ndim - 1; d >= 0; d--)
    if (d != skip) s = loop(A, v[d], shape[d], s);
  return s;
}

static void set_count_type(Node *n, int k) {
  n->outputs[k]->type = (TensorType){.dtype = MLC_I64, .ndim = 1, .dims = {1}};
}
static void mark_dynamic(Node *n, int out, int axis, int count_out) {
  n->outputs[out]->dyn_extent = n->outputs[count_out];
  n->outputs[out]->dyn_axis = axis;
}

static void extern_types(const Node *n, TeTensor *types) {
  memset(types, 0, sizeof(TeTensor) * (size_t)n->noutputs);
  for (int i = 0; i < n->noutputs; i++) {
    const TensorType *t = &n->outputs[i]->type;
    types[i].dtype = t->dtype;
    types[i].ndim = t->ndim;
    memcpy(types[i].shape, t->dims, sizeof(int64_t) * (size_t)t->ndim);
  }
}

/* ---------------------------------------------------------------- vision.non_max_suppression */

static mlc_status nms_infer(Node *n, Diag *d) {
  const TensorType *bx = &n->inputs[0]->type, *sc = &n->inputs[1]->type;
  if (bx->dtype != MLC_F32 || sc->dtype != MLC_F32)
    return diag_set(d, MLC_ERR_INVALID, "non_max_suppression: boxes and scores must be float32, got %s and %s",
                    mlc_dtype_name(bx->dtype), mlc_dtype_name(sc->dtype));
  if (bx->ndim != 3 || bx->dims[2] != 4 || sc->ndim != 3 || sc->dims[0] != bx->dims[0] || sc->dims[2] != bx->dims[1])
    return diag_set(d, MLC_ERR_INVALID, "non_max_suppression: boxes must be [B, N, 4] and scores [B, C, N]");
  for (int i = 2; i < 4; i++) {
    if (!n->inputs[i]) return diag_set(d, MLC_ERR_INVALID, "non_max_suppression: input %d is missing", i);
    const TensorType *t = &n->inputs[i]->type;
    if (t->dtype != MLC_F32 || tt_numel(t) != 1 || t->ndim > 1)
      return diag_set(d, MLC_ERR_INVALID, "non_max_suppression: %s must be a float32 scalar or [1] tensor",
                      i == 2 ? "iou_threshold" : "score_threshold");
  }
  if (n->ninputs > 4) {
    const TensorType *t = &n->inputs[4]->type;
    if (t->dtype != MLC_I64 || tt_numel(t) != 1 || t->ndim > 1)
      return diag_set(d, MLC_ERR_INVALID, "non_max_suppression: count must be an int64 scalar or [1] tensor");
  }
  int64_t m = ir_attr_int(n, "max_output", 0), nb = bx->dims[1];
  if (m <= 0) return diag_set(d, MLC_ERR_INVALID, "non_max_suppression: max_output must be positive");
  if (n->noutputs != 2) return diag_set(d, MLC_ERR_INVALID, "non_max_suppression has two outputs");
  int64_t per = m < nb ? m : nb;
  n->outputs[0]->type = (TensorType){.dtype = MLC_I64, .ndim = 2, .dims = {bx->dims[0] * sc->dims[1] * per, 3}};
  set_count_type(n, 1);
  mark_dynamic(n, 0, 0, 1);
  return MLC_OK;
}

typedef struct NmsCtx {
  int64_t max_out;
  bool center, has_score, counted;
} NmsCtx;

/* std::min / std::max as the reference computes them */
static Expr *fmin_(Arena *A, Expr *a, Expr *b) { return tir_select(A, tir_bin(A, E_LT, b, a), b, a); }
static Expr *fmax_(Arena *A, Expr *a, Expr *b) { return tir_select(A, tir_bin(A, E_LT, a, b), b, a); }

/* let var = value in body (body built after the var exists) */
#define MAX_LETS 40
typedef struct Lets {
  int n;
  Var *v[MAX_LETS];
  Expr *e[MAX_LETS];
} Lets;
static Expr *let(Lets *L, Arena *A, const char *name, Expr *value) {
  if (L->n == MAX_LETS) return value; /* never: the callers bind at most 30 */
  Var *v = tir_var(A, name, value->dtype);
  L->v[L->n] = v;
  L->e[L->n++] = value;
  return V(A, v);
}
static Stmt *wrap_lets(Arena *A, const Lets *L, Stmt *body) {
  for (int i = L->n - 1; i >= 0; i--) body = tir_let_stmt(A, L->v[i], L->e[i], body);
  return body;
}

/* The corners of box j of batch b as the reference's SuppressByIOU reads them, bound to lets in L:
 * c[0..3] = xmin, xmax, ymin, ymax, c[4] = the area. */
static void nms_corners(Lets *L, Arena *A, const NmsCtx *k, Buffer *boxes, Expr *b, Expr *j, Expr **c) {
  Expr *v[4];
  for (int q = 0; q < 4; q++) {
    Expr *i[3] = {b, j, I(A, q)};
    v[q] = let(L, A, "bx", tir_load(A, boxes, 3, i));
  }
  if (!k->center) {
    /* [y1, x1, y2, x2], corners in either order (MaxMin: lhs >= rhs gives min = rhs) */
    Expr *f = tir_bin(A, E_GE, v[1], v[3]), *g = tir_bin(A, E_GE, v[0], v[2]);
    c[0] = let(L, A, "xmin", tir_select(A, f, v[3], v[1]));
    c[1] = let(L, A, "xmax", tir_select(A, f, v[1], v[3]));
    c[2] = let(L, A, "ymin", tir_select(A, g, v[2], v[0]));
    c[3] = let(L, A, "ymax", tir_select(A, g, v[0], v[2]));
  } else {
    /* [x_center, y_center, width, height] */
    Expr *half = tir_float(A, MLC_F32, 2.0);
    Expr *w = let(L, A, "w", tir_bin(A, E_DIV, v[2], half)), *h = let(L, A, "h", tir_bin(A, E_DIV, v[3], half));
    c[0] = let(L, A, "xmin", tir_sub(A, v[0], w));
    c[1] = let(L, A, "xmax", tir_add(A, v[0], w));
    c[2] = let(L, A, "ymin", tir_sub(A, v[1], h));
    c[3] = let(L, A, "ymax", tir_add(A, v[1], h));
  }
  c[4] = let(L, A, "area", tir_mul(A, tir_sub(A, c[1], c[0]), tir_sub(A, c[3], c[2])));
}

/* The reference's SuppressByIOU(kept box, candidate) over 16 kept boxes at once: lane l of chunk ch compares
 * kept box s = 16 ch + l (its corners and area from the kb[5] arrays, s < nsel) with the candidate (corners c2),
 * hit[l] = 1 where it suppresses the candidate. */
static Stmt *nms_check_chunk(Arena *A, Buffer **kb, Expr *ch, Expr *nsel, Expr **c2, Expr *thr, Buffer *hit) {
  Var *lv = ivar(A, "lane");
  Expr *sidx = tir_add(A, tir_mul(A, ch, I(A, 16)), V(A, lv));
  Expr *c1[5];
  for (int q = 0; q < 5; q++) c1[q] = ld1(A, kb[q], sidx);
  Expr *ixmin = fmax_(A, c1[0], c2[0]), *ixmax = fmin_(A, c1[1], c2[1]);
  Expr *iymin = fmax_(A, c1[2], c2[2]), *iymax = fmin_(A, c1[3], c2[3]);
  Expr *inter = tir_mul(A, tir_sub(A, ixmax, ixmin), tir_sub(A, iymax, iymin));
  Expr *uni = tir_sub(A, tir_add(A, c1[4], c2[4]), inter);
  Expr *zero = tir_float(A, MLC_F32, 0.0);
  Expr *conds[8] = {
      tir_bin(A, E_LT, sidx, nsel),   tir_bin(A, E_GT, ixmax, ixmin), tir_bin(A, E_GT, iymax, iymin),
      tir_bin(A, E_GT, inter, zero),  tir_bin(A, E_GT, c1[4], zero),  tir_bin(A, E_GT, c2[4], zero),
      tir_bin(A, E_GT, uni, zero),    tir_bin(A, E_GT, tir_bin(A, E_DIV, inter, uni), thr),
  };
  Expr *all = conds[0];
  for (int i = 1; i < 8; i++) all = tir_bin(A, E_AND, all, conds[i]);
  Stmt *st = st1(A, hit, V(A, lv), tir_select(A, all, tir_int(A, MLC_I32, 1), tir_int(A, MLC_I32, 0)));
  return tir_for(A, lv, I(A, 0), I(A, 16), FOR_VECTORIZED, st);
}

/* the score of candidate i of class c of batch b: NonMaxSuppression's sort key (topi_merge_sort) */
typedef struct ScoreKey {
  Buffer *scores;
  Expr *b, *c;
} ScoreKey;
static Expr *score_key(Arena *A, Expr *i, void *user) {
  ScoreKey *k = user;
  Expr *ix[3] = {k->b, k->c, i};
  return tir_load(A, k->scores, 3, ix);
}

/* Per batch and class, the candidates in descending score order (topi_merge_sort: equal scores keep the
 * lower index first, the reference's pick); each that passes the score threshold (and
 * is one of the first `count` boxes) and overlaps none of the boxes kept so far by more than the IoU threshold
 * is kept, until max_output are. O(N log N + N * kept) per class, as ONNX Runtime's priority queue; the kept
 * boxes' corners and areas are kept in arrays, so the check against them is 16 boxes per vector step. */
static Stmt *nms_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  NmsCtx *k = user;
  Arena *A = c->arena;
  Buffer *boxes = ins[0], *scores = ins[1], *out = outs[0], *count = outs[1];
  int64_t B = scores->shape[0], C = scores->shape[1], N = scores->shape[2];
  int64_t M = k->max_out < N ? k->max_out : N, one = 1;
  Buffer *ord = tir_buffer(A, "nms_order", MLC_I64, 1, &N);
  Buffer *tmp = tir_buffer(A, "nms_merge", MLC_I64, 1, &N);
  Buffer *pi = tir_buffer(A, "nms_left", MLC_I64, 1, &one);
  Buffer *pj = tir_buffer(A, "nms_right", MLC_I64, 1, &one);
  Buffer *nsel = tir_buffer(A, "nms_nsel", MLC_I64, 1, &one);
  Buffer *total = tir_buffer(A, "nms_total", MLC_I64, 1, &one);
  Buffer *keep = tir_buffer(A, "nms_keep", MLC_I32, 1, &one);
  /* the kept boxes' corners and areas, whole chunks of 16 for the vectorized check */
  int64_t M16 = (M + 15) / 16 * 16, sixteen = 16;
  Buffer *kb[5], *hit = tir_buffer(A, "nms_hit", MLC_I32, 1, &sixteen);
  static const char *kbn[5] = {"nms_kept_xmin", "nms_kept_xmax", "nms_kept_ymin", "nms_kept_ymax", "nms_kept_area"};
  for (int q = 0; q < 5; q++) kb[q] = tir_buffer(A, kbn[q], MLC_F32, 1, &M16);
  Var *bv = ivar(A, "b"), *cv = ivar(A, "c"), *tv = ivar(A, "t"), *sv = ivar(A, "s"), *cand = ivar(A, "cand");
  Expr *b = V(A, bv), *cc = V(A, cv), *bi = V(A, cand);
  Expr *thr = ld_scalar(A, ins[2]), *sthr = ld_scalar(A, ins[3]);
  Expr *one_i = tir_int(A, MLC_I32, 1), *zero_i = tir_int(A, MLC_I32, 0);
  /* a candidate: above the score threshold, and with a run-time box count (boxes and scores carrying a
   * data-dependent extent) one of the first n */
  Expr *si[3] = {b, cc, bi};
  Expr *ok = k->has_score ? tir_bin(A, E_GT, tir_load(A, scores, 3, si), sthr) : NULL;
  if (k->counted) {
    Expr *nbox = tir_bin(A, E_MIN, tir_bin(A, E_MAX, ld_scalar(A, ins[4]), I(A, 0)), I(A, N));
    Expr *in = tir_bin(A, E_LT, bi, nbox);
    ok = ok ? tir_bin(A, E_AND, in, ok) : in;
  }
  /* IoU against the nsel boxes kept so far, 16 at a time, only while the candidate still stands */
  Lets L = {0};
  Expr *c2[5];
  nms_corners(&L, A, k, boxes, b, bi, c2);
  Var *lv = ivar(A, "lane");
  Stmt *any = tir_for(A, lv, I(A, 0), I(A, 16), FOR_SERIAL,
                      tir_if(A, tir_bin(A, E_NE, ld1(A, hit, V(A, lv)), zero_i), st0(A, keep, zero_i), NULL));
  Stmt *chunk[2] = {nms_check_chunk(A, kb, V(A, sv), ld0(A, nsel), c2, thr, hit), any};
  Expr *nchunks = tir_bin(A, E_FLOORDIV, tir_add(A, ld0(A, nsel), I(A, 15)), I(A, 16));
  Stmt *check = tir_for(A, sv, I(A, 0), nchunks, FOR_SERIAL,
                        tir_if(A, tir_bin(A, E_NE, ld0(A, keep), zero_i), tir_seq(A, 2, chunk), NULL));
  Expr *tot = ld0(A, total), *ns = ld0(A, nsel);
  Expr *o0[2] = {tot, I(A, 0)}, *o1[2] = {tot, I(A, 1)}, *o2[2] = {tot, I(A, 2)};
  Stmt *emit[10] = {tir_store(A, out, 2, o0, b), tir_store(A, out, 2, o1, cc), tir_store(A, out, 2, o2, bi)};
  for (int q = 0; q < 5; q++) emit[3 + q] = st1(A, kb[q], ns, c2[q]);
  emit[8] = st0(A, total, tir_add(A, tot, I(A, 1)));
  emit[9] = st0(A, nsel, tir_add(A, ns, I(A, 1)));
  Stmt *pick[2] = {st0(A, keep, one_i), check};
  Stmt *consider[2] = {tir_seq(A, 2, pick), tir_if(A, tir_bin(A, E_NE, ld0(A, keep), zero_i), tir_seq(A, 10, emit), NULL)};
  Stmt *body_t = wrap_lets(A, &L, tir_seq(A, 2, consider));
  Expr *go = tir_bin(A, E_LT, ld0(A, nsel), I(A, M));
  if (ok) go = tir_bin(A, E_AND, go, ok);
  Stmt *iter = tir_for(A, tv, I(A, 0), I(A, N), FOR_SERIAL,
                       tir_let_stmt(A, cand, ld1(A, ord, V(A, tv)), tir_if(A, go, body_t, NULL)));
  ScoreKey *sk = arena_alloc(A, sizeof *sk);
  *sk = (ScoreKey){.scores = scores, .b = b, .c = cc};
  Stmt *cls[3] = {st0(A, nsel, I(A, 0)), topi_merge_sort(A, N, ord, tmp, pi, pj, true, score_key, sk), iter};
  Stmt *body = loop(A, bv, B, loop(A, cv, C, tir_seq(A, 3, cls)));
  Stmt *all[4] = {zero_fill(A, out), st0(A, total, I(A, 0)), body, st0(A, count, ld0(A, total))};
  Stmt *r = tir_seq(A, 4, all);
  Buffer *scratch[13] = {ord, tmp, pi, pj, nsel, total, keep, hit, kb[0], kb[1], kb[2], kb[3], kb[4]};
  for (int i = 0; i < 13; i++) r = tir_allocate(A, scratch[i], r);
  return r;
}

static mlc_status nms_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  NmsCtx *k = arena_alloc(c->arena, sizeof *k);
  k->max_out = ir_attr_int(n, "max_output", 0);
  k->center = ir_attr_int(n, "center_point_box", 0) != 0;
  k->has_score = ir_attr_int(n, "has_score_threshold", 0) != 0;
  k->counted = n->ninputs > 4;
  TeTensor types[2];
  extern_types(n, types);
  te_extern(c, "non_max_suppression", "vision", n->ninputs, ins, 2, types, nms_extern, k, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- unique */

static mlc_status unique_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (x->dtype == MLC_STRING || mlc_dtype_size(x->dtype) <= 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "unique of %s is not supported", mlc_dtype_name(x->dtype));
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (x->ndim < 1 || axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "unique: axis %lld out of range for rank %d", (long long)axis, x->ndim);
  if (n->noutputs != 5) return diag_set(d, MLC_ERR_INVALID, "unique has five outputs");
  int64_t L = x->dims[axis];
  if (L < 1) return diag_set(d, MLC_ERR_INVALID, "unique: the axis is empty");
  n->outputs[0]->type = *x;
  for (int i = 1; i < 4; i++) n->outputs[i]->type = (TensorType){.dtype = MLC_I64, .ndim = 1, .dims = {L}};
  set_count_type(n, 4);
  mark_dynamic(n, 0, (int)axis, 4);
  mark_dynamic(n, 1, 0, 4);
  mark_dynamic(n, 3, 0, 4);
  return MLC_OK;
}

typedef struct UniqueCtx {
  int axis;
  bool sorted;
  Buffer *x, *cmp;
  Expr *j, *k; /* the two slices compared */
} UniqueCtx;

/* if cmp == 0: cmp = sign(x[.., j, ..] - x[.., k, ..]) at the element ix */
static Stmt *unique_cmp_elem(Arena *A, Expr **ix, void *user) {
  UniqueCtx *u = user;
  Expr *a[MLC_MAX_DIMS], *b[MLC_MAX_DIMS];
  for (int d = 0; d < u->x->ndim; d++) a[d] = b[d] = ix[d];
  a[u->axis] = u->j;
  b[u->axis] = u->k;
  Lets L = {0};
  Expr *va = let(&L, A, "va", cmp_form(A, tir_load(A, u->x, u->x->ndim, a)));
  Expr *vb = let(&L, A, "vb", cmp_form(A, tir_load(A, u->x, u->x->ndim, b)));
  Expr *m1 = tir_int(A, MLC_I32, -1), *p1 = tir_int(A, MLC_I32, 1), *z = tir_int(A, MLC_I32, 0);
  Expr *tie = z;
  if (dtype_is_float(va->dtype)) {
    /* neither < nor >: equal, or a NaN: NaNs order after every number and equal each other (a total order) */
    Expr *na = tir_bin(A, E_NE, va, va), *nb = tir_bin(A, E_NE, vb, vb);
    tie = tir_select(A, na, tir_select(A, nb, z, p1), tir_select(A, nb, m1, z));
  }
  Expr *sgn = tir_select(A, tir_bin(A, E_LT, va, vb), m1, tir_select(A, tir_bin(A, E_GT, va, vb), p1, tie));
  Stmt *set = wrap_lets(A, &L, st0(A, u->cmp, sgn));
  return tir_if(A, tir_bin(A, E_EQ, ld0(A, u->cmp), tir_int(A, MLC_I32, 0)), set, NULL);
}

/* cmp = the lexicographic order of slices j and k (-1, 0, 1) */
static Stmt *unique_cmp(Arena *A, UniqueCtx *proto, Expr *j, Expr *k) {
  UniqueCtx *u = arena_alloc(A, sizeof *u);
  *u = *proto;
  u->j = j;
  u->k = k;
  Expr *ix[MLC_MAX_DIMS];
  return tir_seq2(A, st0(A, u->cmp, tir_int(A, MLC_I32, 0)),
                  nest_except(A, u->x->ndim, u->x->shape, u->axis, unique_cmp_elem, u, ix));
}

typedef struct UniqueCopy {
  Buffer *x, *y;
  int axis;
  Expr *from, *to;
} UniqueCopy;

static Stmt *unique_copy_elem(Arena *A, Expr **ix, void *user) {
  UniqueCopy *u = user;
  Expr *a[MLC_MAX_DIMS], *b[MLC_MAX_DIMS];
  for (int d = 0; d < u->x->ndim; d++) a[d] = b[d] = ix[d];
  a[u->axis] = u->from;
  b[u->axis] = u->to;
  return tir_store(A, u->y, u->y->ndim, b, tir_load(A, u->x, u->x->ndim, a));
}

static Stmt *unique_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  UniqueCtx *proto = user;
  Arena *A = c->arena;
  Buffer *x = ins[0], *y = outs[0], *indices = outs[1], *inverse = outs[2], *counts = outs[3], *count = outs[4];
  int64_t L = x->shape[proto->axis], one = 1;
  Buffer *first = tir_buffer(A, "unique_first", MLC_I64, 1, &L);
  Buffer *rank = tir_buffer(A, "unique_rank", MLC_I64, 1, &L);
  Buffer *r = tir_buffer(A, "unique_r", MLC_I64, 1, &one);
  Buffer *nu = tir_buffer(A, "unique_n", MLC_I64, 1, &one);
  Buffer *cmp = tir_buffer(A, "unique_cmp", MLC_I32, 1, &one);
  UniqueCtx *u = arena_alloc(A, sizeof *u);
  *u = *proto;
  u->x = x;
  u->cmp = cmp;
  Expr *zero_i = tir_int(A, MLC_I32, 0);
  /* 1. first[k]: the first slice equal to slice k */
  Var *kv = ivar(A, "k"), *jv = ivar(A, "j");
  Expr *k = V(A, kv), *j = V(A, jv);
  Expr *fk = ld1(A, first, k);
  Stmt *match = tir_seq2(A, unique_cmp(A, u, j, k),
                         tir_if(A, tir_bin(A, E_EQ, ld0(A, cmp), zero_i), st1(A, first, k, j), NULL));
  Expr *open = tir_bin(A, E_AND, tir_bin(A, E_LT, j, k), tir_bin(A, E_EQ, fk, k));
  Stmt *s1 = loop(A, kv, L, tir_seq2(A, st1(A, first, k, k), loop(A, jv, L, tir_if(A, open, match, NULL))));
  /* 2. rank of each distinct slice, and their number */
  Var *kv2 = ivar(A, "k"), *jv2 = ivar(A, "j");
  Expr *k2 = V(A, kv2), *j2 = V(A, jv2);
  Expr *distinct_j = tir_bin(A, E_EQ, ld1(A, first, j2), j2);
  Stmt *inc = st0(A, r, tir_add(A, ld0(A, r), I(A, 1)));
  Stmt *before;
  if (u->sorted)
    before = tir_if(A, tir_bin(A, E_AND, distinct_j, tir_bin(A, E_NE, j2, k2)),
                    tir_seq2(A, unique_cmp(A, u, j2, k2), tir_if(A, tir_bin(A, E_LT, ld0(A, cmp), zero_i), inc, NULL)),
                    NULL);
  else
    before = tir_if(A, tir_bin(A, E_AND, distinct_j, tir_bin(A, E_LT, j2, k2)), inc, NULL);
  Stmt *rk[4] = {st0(A, r, I(A, 0)), loop(A, jv2, L, before), st1(A, rank, k2, ld0(A, r)),
                 st0(A, nu, tir_add(A, ld0(A, nu), I(A, 1)))};
  Stmt *s2 = loop(A, kv2, L, tir_if(A, tir_bin(A, E_EQ, ld1(A, first, k2), k2), tir_seq(A, 4, rk), NULL));
  /* 3. counts and inverse_indices */
  Var *jv3 = ivar(A, "j");
  Expr *j3 = V(A, jv3);
  Expr *rj = ld1(A, rank, ld1(A, first, j3));
  Stmt *cnt[2] = {st1(A, counts, rj, tir_add(A, ld1(A, counts, rj), I(A, 1))), st1(A, inverse, j3, rj)};
  Stmt *s3 = loop(A, jv3, L, tir_seq(A, 2, cnt));
  /* 4. y and indices */
  Var *kv4 = ivar(A, "k");
  Expr *k4 = V(A, kv4);
  UniqueCopy *cp = arena_alloc(A, sizeof *cp);
  *cp = (UniqueCopy){.x = x, .y = y, .axis = u->axis, .from = k4, .to = ld1(A, rank, k4)};
  Expr *ix[MLC_MAX_DIMS];
  Stmt *put[2] = {st1(A, indices, ld1(A, rank, k4), k4),
                  nest_except(A, x->ndim, x->shape, u->axis, unique_copy_elem, cp, ix)};
  Stmt *s4 = loop(A, kv4, L, tir_if(A, tir_bin(A, E_EQ, ld1(A, first, k4), k4), tir_seq(A, 2, put), NULL));
  Stmt *all[9] = {zero_fill(A, y), zero_fill(A, indices), zero_fill(A, counts), st0(A, nu, I(A, 0)),
                  s1, s2, s3, s4, st0(A, count, ld0(A, nu))};
  Stmt *body = tir_seq(A, 9, all);
  Buffer *scratch[5] = {first, rank, r, nu, cmp};
  for (int i = 0; i < 5; i++) body = tir_allocate(A, scratch[i], body);
  return body;
}

static mlc_status unique_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  UniqueCtx *u = arena_alloc(c->arena, sizeof *u);
  memset(u, 0, sizeof *u);
  u->axis = (int)ir_attr_int(n, "axis", 0);
  u->sorted = ir_attr_int(n, "sorted", 1) != 0;
  TeTensor types[5];
  extern_types(n, types);
  te_extern(c, "unique", "unique", 1, ins, 5, types, unique_extern, u, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- nonzero */

static mlc_status nonzero_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (x->dtype == MLC_STRING || mlc_dtype_size(x->dtype) <= 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nonzero of %s is not supported", mlc_dtype_name(x->dtype));
  if (n->noutputs != 2) return diag_set(d, MLC_ERR_INVALID, "nonzero has two outputs");
  int64_t numel = tt_numel(x);
  if (numel < 1) return diag_set(d, MLC_ERR_INVALID, "nonzero: empty input");
  n->outputs[0]->type = (TensorType){.dtype = MLC_I64, .ndim = 2, .dims = {x->ndim ? x->ndim : 1, numel}};
  set_count_type(n, 1);
  mark_dynamic(n, 0, 1, 1);
  return MLC_OK;
}

typedef struct NonzeroCtx {
  Buffer *x, *out, *k;
} NonzeroCtx;

static Stmt *nonzero_elem(Arena *A, Expr **ix, void *user) {
  NonzeroCtx *z = user;
  int r = z->x->ndim;
  Expr *k = ld0(A, z->k);
  Stmt *s[MLC_MAX_DIMS + 1];
  int ns = 0;
  for (int a = 0; a < (r ? r : 1); a++) {
    Expr *oi[2] = {I(A, a), k};
    s[ns++] = tir_store(A, z->out, 2, oi, r ? ix[a] : I(A, 0));
  }
  s[ns++] = st0(A, z->k, tir_add(A, k, I(A, 1)));
  return tir_if(A, is_nonzero(A, tir_load(A, z->x, r, ix)), tir_seq(A, ns, s), NULL);
}

static Stmt *nonzero_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  (void)user;
  Arena *A = c->arena;
  int64_t one = 1;
  NonzeroCtx *z = arena_alloc(A, sizeof *z);
  z->x = ins[0];
  z->out = outs[0];
  z->k = tir_buffer(A, "nonzero_n", MLC_I64, 1, &one);
  Expr *ix[MLC_MAX_DIMS];
  Stmt *all[4] = {zero_fill(A, z->out), st0(A, z->k, I(A, 0)),
                  nest_except(A, z->x->ndim, z->x->shape, -1, nonzero_elem, z, ix), st0(A, outs[1], ld0(A, z->k))};
  return tir_allocate(A, z->k, tir_seq(A, 4, all));
}

static mlc_status nonzero_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  TeTensor types[2];
  extern_types(n, types);
  te_extern(c, "nonzero", "nonzero", 1, ins, 2, types, nonzero_extern, NULL, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- compress */

static mlc_status compress_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *cnd = &n->inputs[1]->type;
  if (x->dtype == MLC_STRING || mlc_dtype_size(x->dtype) <= 0 || cnd->dtype == MLC_STRING)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "compress of %s is not supported", mlc_dtype_name(x->dtype));
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "compress: axis %lld out of range for rank %d", (long long)axis, x->ndim);
  if (cnd->ndim != 1 || cnd->dims[0] > x->dims[axis] || cnd->dims[0] < 1)
    return diag_set(d, MLC_ERR_INVALID, "compress: condition must be 1-D with 1 to %lld entries",
                    (long long)x->dims[axis]);
  if (n->noutputs != 2) return diag_set(d, MLC_ERR_INVALID, "compress has two outputs");
  n->outputs[0]->type = *x;
  n->outputs[0]->type.dims[axis] = cnd->dims[0];
  set_count_type(n, 1);
  mark_dynamic(n, 0, (int)axis, 1);
  return MLC_OK;
}

static Stmt *compress_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  int axis = *(int *)user;
  Arena *A = c->arena;
  Buffer *x = ins[0], *cnd = ins[1], *out = outs[0];
  int64_t one = 1;
  Buffer *k = tir_buffer(A, "compress_n", MLC_I64, 1, &one);
  Var *jv = ivar(A, "j");
  Expr *j = V(A, jv);
  UniqueCopy *cp = arena_alloc(A, sizeof *cp);
  *cp = (UniqueCopy){.x = x, .y = out, .axis = axis, .from = j, .to = ld0(A, k)};
  Expr *ix[MLC_MAX_DIMS];
  Stmt *take[2] = {nest_except(A, x->ndim, out->shape, axis, unique_copy_elem, cp, ix),
                   st0(A, k, tir_add(A, ld0(A, k), I(A, 1)))};
  Stmt *scan = loop(A, jv, cnd->shape[0], tir_if(A, is_nonzero(A, ld1(A, cnd, j)), tir_seq(A, 2, take), NULL));
  Stmt *all[4] = {zero_fill(A, out), st0(A, k, I(A, 0)), scan, st0(A, outs[1], ld0(A, k))};
  return tir_allocate(A, k, tir_seq(A, 4, all));
}

static mlc_status compress_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  int *axis = arena_alloc(c->arena, sizeof *axis);
  *axis = (int)ir_attr_int(n, "axis", 0);
  TeTensor types[2];
  extern_types(n, types);
  te_extern(c, "compress", "compress", 2, ins, 2, types, compress_extern, axis, outs);
  return MLC_OK;
}


/* ---------------------------------------------------------------- dyn_mask */

/* the fill constant of dyn_mask: "zero", "one", "lowest" (-inf, the dtype's minimum for integers, false) or
 * "highest" (+inf, the maximum, true) */
static bool fill_known(const char *f) {
  return !strcmp(f, "zero") || !strcmp(f, "one") || !strcmp(f, "lowest") || !strcmp(f, "highest");
}

static Expr *fill_const(Arena *A, mlc_dtype t, const char *f) {
  bool lo = !strcmp(f, "lowest"), hi = !strcmp(f, "highest");
  if (!lo && !hi) return tir_const(A, t, !strcmp(f, "one") ? 1 : 0);
  if (dtype_is_float(t)) return tir_const(A, t, lo ? -INFINITY : INFINITY);
  if (t == MLC_BOOL) return tir_int(A, t, hi);
  int bits = 8 * mlc_dtype_size(t);
  bool is_unsigned = t == MLC_U8 || t == MLC_U16 || t == MLC_U32 || t == MLC_U64;
  if (is_unsigned) return tir_int(A, t, lo ? 0 : bits == 64 ? -1 : (int64_t)((UINT64_C(1) << bits) - 1));
  if (bits == 64) return tir_int(A, t, lo ? INT64_MIN : INT64_MAX);
  return tir_int(A, t, lo ? -(INT64_C(1) << (bits - 1)) : (INT64_C(1) << (bits - 1)) - 1);
}

static mlc_status extent_input(const Node *n, int i, Diag *d) {
  const TensorType *e = &n->inputs[i]->type;
  if (e->dtype != MLC_I64 || tt_numel(e) != 1 || e->ndim > 1)
    return diag_set(d, MLC_ERR_INVALID, "%s: input %d (an extent) must be an int64 scalar or [1] tensor", n->op->name, i);
  return MLC_OK;
}

static mlc_status dyn_mask_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  int64_t axis = ir_attr_int(n, "axis", 0);
  const char *fill = ir_attr_string(n, "fill", "zero");
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "dyn_mask: axis %lld out of range for rank %d", (long long)axis, x->ndim);
  if (!fill_known(fill)) return diag_set(d, MLC_ERR_INVALID, "dyn_mask: unknown fill '%s'", fill);
  if (x->dtype == MLC_STRING || mlc_dtype_size(x->dtype) <= 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "dyn_mask of %s is not supported", mlc_dtype_name(x->dtype));
  mlc_status st = extent_input(n, 1, d);
  if (st) return st;
  n->outputs[0]->type = *x;
  return MLC_OK;
}

typedef struct MaskCtx {
  TeTensor *x, *ext;
  int axis;
  const char *fill;
} MaskCtx;

static Expr *te_scalar(TeCtx *c, TeTensor *t) {
  Expr *z[MLC_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) z[i] = I(c->arena, 0);
  return te_read(c, t, t->ndim, z);
}

static Expr *dyn_mask_body(TeCtx *c, Expr **idx, void *user) {
  MaskCtx *k = user;
  Arena *A = c->arena;
  Expr *in = tir_bin(A, E_LT, idx[k->axis], te_scalar(c, k->ext));
  return tir_select(A, in, te_read(c, k->x, k->x->ndim, idx), fill_const(A, k->x->dtype, k->fill));
}

static mlc_status dyn_mask_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  MaskCtx *k = arena_alloc(c->arena, sizeof *k);
  *k = (MaskCtx){.x = ins[0], .ext = ins[1], .axis = (int)ir_attr_int(n, "axis", 0),
                 .fill = ir_attr_string(n, "fill", "zero")};
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "dyn_mask", "injective", o->dtype, o->ndim, o->dims, dyn_mask_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- dyn_pack */

static mlc_status dyn_pack_infer(Node *n, Diag *d) {
  if (n->ninputs < 3 || n->ninputs % 2 == 0)
    return diag_set(d, MLC_ERR_INVALID, "dyn_pack takes pieces, their extents and the total extent (2n+1 inputs)");
  int np = (n->ninputs - 1) / 2;
  const TensorType *x = &n->inputs[0]->type;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "dyn_pack: axis %lld out of range for rank %d", (long long)axis, x->ndim);
  if (x->dtype == MLC_STRING || mlc_dtype_size(x->dtype) <= 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "dyn_pack of %s is not supported", mlc_dtype_name(x->dtype));
  TensorType o = *x;
  o.dims[axis] = 0;
  for (int i = 0; i < np; i++) {
    const TensorType *t = &n->inputs[i]->type;
    if (t->ndim != x->ndim || t->dtype != x->dtype)
      return diag_set(d, MLC_ERR_INVALID, "dyn_pack: piece %d has a different rank or dtype", i);
    for (int j = 0; j < x->ndim; j++)
      if (j != axis && t->dims[j] != x->dims[j])
        return diag_set(d, MLC_ERR_INVALID, "dyn_pack: piece %d differs in dim %d", i, j);
    o.dims[axis] += t->dims[axis];
  }
  for (int i = np; i < n->ninputs; i++) {
    mlc_status st = extent_input(n, i, d);
    if (st) return st;
  }
  n->outputs[0]->type = o; /* its extent, the last input, by the rule DYN_PACK (src/ir/dynamic.c) */
  return MLC_OK;
}

/* piece p's first min(extent_p, bound_p) slices along axis go to the running offset (the sum of the extents
 * before it, each clamped into its piece's bound; kept in a one-element buffer so the code stays linear in the
 * number of pieces), the rest of the output stays zero */
static Stmt *dyn_pack_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  int axis = ((int *)user)[0], np = ((int *)user)[1];
  Arena *A = c->arena;
  Buffer *out = outs[0];
  int64_t one = 1;
  Buffer *off = tir_buffer(A, "pack_offset", MLC_I64, 1, &one);
  Stmt **s = arena_alloc(A, sizeof(Stmt *) * (size_t)(2 * np + 2));
  int ns = 0;
  s[ns++] = zero_fill(A, out);
  s[ns++] = st0(A, off, I(A, 0));
  for (int p = 0; p < np; p++) {
    Buffer *x = ins[p];
    Expr *e = tir_bin(A, E_MIN, tir_bin(A, E_MAX, ld_scalar(A, ins[np + p]), I(A, 0)), I(A, x->shape[axis]));
    Var *jv = ivar(A, arena_printf(A, "j%d", p));
    Expr *j = V(A, jv);
    UniqueCopy *cp = arena_alloc(A, sizeof *cp);
    *cp = (UniqueCopy){.x = x, .y = out, .axis = axis, .from = j, .to = tir_add(A, ld0(A, off), j)};
    Expr *ix[MLC_MAX_DIMS];
    s[ns++] = tir_for(A, jv, I(A, 0), e, FOR_SERIAL, nest_except(A, x->ndim, x->shape, axis, unique_copy_elem, cp, ix));
    s[ns++] = st0(A, off, tir_add(A, ld0(A, off), e));
  }
  return tir_allocate(A, off, tir_seq(A, ns, s));
}

static mlc_status dyn_pack_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  int *u = arena_alloc(c->arena, 2 * sizeof *u);
  u[0] = (int)ir_attr_int(n, "axis", 0);
  u[1] = (n->ninputs - 1) / 2;
  TeTensor types[1];
  extern_types(n, types);
  te_extern(c, "dyn_pack", "dyn_pack", n->ninputs, ins, 1, types, dyn_pack_extern, u, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_dynamic[] = {
    /* name                        pattern     min max nout infer          compute  dyn */
    {"vision.non_max_suppression", PAT_OPAQUE, 4, 5, 2, nms_infer, nms_compute, DYN_SOURCE},
    {"unique", PAT_OPAQUE, 1, 1, 5, unique_infer, unique_compute, DYN_SOURCE},
    {"nonzero", PAT_OPAQUE, 1, 1, 2, nonzero_infer, nonzero_compute, DYN_SOURCE},
    {"compress", PAT_OPAQUE, 2, 2, 2, compress_infer, compress_compute, DYN_SOURCE},
    {"dyn_mask", PAT_INJECTIVE, 2, 2, 1, dyn_mask_infer, dyn_mask_compute, DYN_MASK},
    {"dyn_pack", PAT_OPAQUE, 3, -1, 1, dyn_pack_infer, dyn_pack_compute, DYN_PACK},
    {0},
};
