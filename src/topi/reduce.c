/* topi reduce family: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare} and ArgMax/ArgMin.
 *
 * Attributes (normalised by the importer): "axis" (ints, non-negative, sorted, unique; every axis when the
 * model gave none), "keepdims" (0/1); argmax/argmin also "select_last_index". A reduction is built from up
 * to three TE stages, all over the output shape:
 *   1. (logsumexp, argmax, argmin) m = max/min of x over the axes;
 *   2. r = combine(pre(x)) with a commutative combiner (sum, prod, min, max) through te_reduce, where pre is
 *      |x| (L1), x*x (L2, SumSquare), exp(x - m) (LogSumExp: stable, max first), or for argmax/argmin the
 *      index k where x == m (first: min of k, last: max of k; k = extent where x != m);
 *   3. out = post(r): r / count (mean), sqrt(r) (L2), log(r) (LogSum), log(r) + m (LogSumExp), and the cast
 *      back to the output dtype. Stage 3 is an elementwise epilogue, present only where needed.
 * float16/bfloat16 accumulate in float32; bool max/min in uint8; integer L2/LogSum/LogSumExp take the square
 * root / log in float64 and truncate back, as the ONNX reference does.
 * Stages 1 and 2 take the row form (RedForm) on CPU targets when the last input dim is reduced and holds at
 * least one vector: an rfactor by the vector lanes written into the compute (partials per lane, vectorized
 * along the contiguous row by the generic schedule, then a scalar horizontal combine and remainder). It
 * reassociates the float combine, so sums differ from the serial order in the last bits. */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

#define RED_ROW_MAX_SCRATCH (4 << 20) /* bytes of per-lane partials the row form may allocate */

typedef enum RedOp {
  R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQ, R_ARGMAX, R_ARGMIN, R_COUNT
} RedOp;

static const char *const red_names[R_COUNT] = {
    [R_SUM] = "sum",           [R_MEAN] = "mean",         [R_MAX] = "max",
    [R_MIN] = "min",           [R_PROD] = "prod",         [R_L1] = "reduce_l1",
    [R_L2] = "reduce_l2",      [R_LOGSUM] = "reduce_log_sum", [R_LOGSUMEXP] = "logsumexp",
    [R_SUMSQ] = "reduce_sum_square", [R_ARGMAX] = "argmax", [R_ARGMIN] = "argmin",
};

static bool is_half(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16; }
static bool is_arg(RedOp op) { return op == R_ARGMAX || op == R_ARGMIN; }

/* reads and checks the axis attribute; red[i] marks reduced dims */
static mlc_status red_axes(const Node *n, int ndim, bool *red, int *nred, Diag *d) {
  int64_t ax[MLC_MAX_DIMS + 1];
  int na = ir_attr_ints(n, "axis", ax, MLC_MAX_DIMS + 1);
  if (na > ndim) return diag_set(d, MLC_ERR_INVALID, "%s: %d axes for a rank-%d input", n->op->name, na, ndim);
  memset(red, 0, sizeof(bool) * MLC_MAX_DIMS);
  for (int i = 0; i < na; i++) {
    if (ax[i] < 0 || ax[i] >= ndim)
      return diag_set(d, MLC_ERR_INVALID, "%s: axis %lld out of range for rank %d", n->op->name, (long long)ax[i], ndim);
    if (red[ax[i]]) return diag_set(d, MLC_ERR_INVALID, "%s: axis %lld repeated", n->op->name, (long long)ax[i]);
    red[ax[i]] = true;
  }
  *nred = na;
  return MLC_OK;
}

static mlc_status red_infer(Node *n, RedOp op, Diag *d) {
  const char *name = red_names[op];
  if (n->ninputs != 1 || !n->inputs[0]) return diag_set(d, MLC_ERR_INVALID, "%s takes one input", name);
  if (n->noutputs != 1) return diag_set(d, MLC_ERR_INVALID, "%s has one output", name);
  const TensorType *x = &n->inputs[0]->type;
  mlc_dtype t = x->dtype;
  bool num = dtype_is_float(t) || dtype_is_int(t);
  bool ok = num || (t == MLC_BOOL && (op == R_MAX || op == R_MIN));
  if (!ok) {
    if (t == MLC_BOOL)
      return diag_set(d, MLC_ERR_INVALID, "%s: input dtype bool is not allowed", name);
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: input dtype %s is not supported", name, mlc_dtype_name(t));
  }
  bool red[MLC_MAX_DIMS];
  int nred;
  mlc_status st = red_axes(n, x->ndim, red, &nred, d);
  if (st != MLC_OK) return st;
  if (is_arg(op) && nred != 1) return diag_set(d, MLC_ERR_INVALID, "%s takes exactly one axis", name);
  bool keep = ir_attr_int(n, "keepdims", 1) != 0;
  TensorType out = {.dtype = is_arg(op) ? MLC_I64 : t, .ndim = 0};
  for (int i = 0; i < x->ndim; i++) {
    if (red[i]) {
      if (keep) out.dims[out.ndim++] = 1;
      if (is_arg(op) && x->dims[i] == 0)
        return diag_set(d, MLC_ERR_INVALID, "%s over an empty axis", name);
    } else {
      out.dims[out.ndim++] = x->dims[i];
    }
  }
  n->outputs[0]->type = out;
  return MLC_OK;
}

/* ---- compute ---- */

typedef enum RedStage { ST_EXTREME, ST_REDUCE, ST_POST } RedStage;

/* How one reduce stage is built. DIRECT: out[o] = combine over the reduced dims. The row form (rfactor by
 * the vector lanes L along the last input dim, extent K, Kmain = K - K % L):
 *   PART:    part[o, l] = combine over the other reduced dims and j < Kmain / L of pre(x[.., j * L + l]);
 *   TAIL:    tail[o]    = combine over the other reduced dims and t < K % L of pre(x[.., Kmain + t]);
 *   COMBINE: out[o]     = combine over l < L of part[o, l], starting from tail[o] (or the identity).
 * The schedule vectorizes part over l (one vector accumulator per output row, walked along contiguous
 * memory) and keeps the L-step horizontal combine and the remainder scalar. */
typedef enum RedForm { FORM_DIRECT, FORM_PART, FORM_TAIL, FORM_COMBINE } RedForm;

typedef struct RedArgs {
  RedOp op;
  RedStage stage;
  TeTensor *x;
  TeTensor *m; /* stage 1 result (logsumexp, argmax/argmin) */
  TeTensor *r; /* stage 2 result when a post stage follows */
  int ndim;    /* input rank */
  bool red[MLC_MAX_DIMS];
  bool keep;
  bool last;        /* argmax/argmin: select_last_index */
  mlc_dtype acc;    /* accumulation dtype */
  mlc_dtype out;    /* final dtype */
  int64_t count;    /* number of reduced elements per output */
  /* the row form (see red_row_ok): a reduction whose last input dim is reduced splits that dim by lanes */
  RedForm form;
  int ondim;        /* output rank */
  int64_t lanes;    /* 0: the direct form */
  int64_t kmain;    /* the last dim's elements covered by whole vectors */
  TeTensor *part;   /* FORM_COMBINE: the per-lane partials */
  TeTensor *tail;   /* FORM_COMBINE: the scalar remainder, or NULL */
} RedArgs;

/* input index from the output index and the reduce axes' vars (in dim order) */
static void red_in_index(const RedArgs *r, Expr **oidx, Expr **rvars, Expr **iidx) {
  int o = 0, k = 0;
  for (int i = 0; i < r->ndim; i++) {
    if (r->red[i]) {
      iidx[i] = rvars[k++];
      if (r->keep) o++;
    } else {
      iidx[i] = oidx[o++];
    }
  }
}

static Expr *to(TeCtx *c, mlc_dtype t, Expr *e) { return e->dtype == t ? e : tir_cast(c->arena, t, e); }

/* m with infinities replaced by 0, so exp(x - m) stays finite */
static Expr *finite_or_zero(TeCtx *c, Expr *m) {
  Arena *A = c->arena;
  Expr *inf = tir_bin(A, E_OR, tir_bin(A, E_EQ, m, tir_const(A, m->dtype, INFINITY)),
                      tir_bin(A, E_EQ, m, tir_const(A, m->dtype, -INFINITY)));
  return tir_select(A, inf, tir_const(A, m->dtype, 0), m);
}

/* the combiner of a reduce stage (also the horizontal combine of the row form's partials) */
static ReduceKind red_kind(const RedArgs *r) {
  if (r->stage == ST_EXTREME) return r->op == R_ARGMIN ? RED_MIN : RED_MAX;
  switch (r->op) {
    case R_MAX: return RED_MAX;
    case R_MIN: return RED_MIN;
    case R_PROD: return RED_PROD;
    case R_ARGMAX: case R_ARGMIN: return r->last ? RED_MAX : RED_MIN;
    default: return RED_SUM;
  }
}

static Expr *red_reduce_fn(TeCtx *c, Expr **idx, void *user) {
  RedArgs *r = user;
  Arena *A = c->arena;
  ReduceKind k = red_kind(r);
  if (r->form == FORM_COMBINE) {
    IterVar *l = te_reduce_axis(c, "kl", r->lanes);
    Expr *pi[MLC_MAX_DIMS + 1];
    memcpy(pi, idx, sizeof(Expr *) * (size_t)r->ondim);
    pi[r->ondim] = tir_varref(A, l->var);
    Expr *init = r->tail ? te_read(c, r->tail, r->ondim, idx) : NULL;
    return te_reduce(c, k, te_read(c, r->part, r->ondim + 1, pi), 1, &l, init, NULL);
  }
  IterVar *axes[MLC_MAX_DIMS];
  Expr *rv[MLC_MAX_DIMS];
  int na = 0;
  for (int i = 0; i < r->ndim; i++)
    if (r->red[i]) {
      bool row = i == r->ndim - 1 && r->form != FORM_DIRECT;
      int64_t ext = !row ? r->x->shape[i] : r->form == FORM_PART ? r->kmain / r->lanes : r->x->shape[i] - r->kmain;
      axes[na] = te_reduce_axis(c, arena_printf(A, row ? (r->form == FORM_PART ? "k%dj" : "k%dt") : "k%d", i), ext);
      rv[na] = tir_varref(A, axes[na]->var);
      if (row && r->form == FORM_PART) /* element j * L + l of the row; l is the partial's last index */
        rv[na] = tir_add(A, tir_mul(A, rv[na], tir_idx(A, r->lanes)), idx[r->ondim]);
      else if (row)
        rv[na] = tir_add(A, rv[na], tir_idx(A, r->kmain));
      na++;
    }
  Expr *iidx[MLC_MAX_DIMS];
  red_in_index(r, idx, rv, iidx);
  Expr *v = to(c, r->acc, te_read(c, r->x, r->ndim, iidx));
  if (r->stage == ST_REDUCE) {
    switch (r->op) {
      case R_L1:
        if (dtype_is_float(r->acc)) v = tir_call(A, INTRIN_FABS, r->acc, 1, &v);
        else if (dtype_is_signed(r->acc))
          v = tir_select(A, tir_bin(A, E_LT, v, tir_const(A, r->acc, 0)), tir_sub(A, tir_const(A, r->acc, 0), v), v);
        break;
      case R_L2: case R_SUMSQ: v = tir_mul(A, v, v); break;
      case R_LOGSUMEXP: {
        Expr *m = finite_or_zero(c, te_read(c, r->m, r->m->ndim, idx));
        Expr *e = tir_sub(A, v, m);
        v = tir_call(A, INTRIN_EXP, r->acc, 1, &e);
        break;
      }
      case R_ARGMAX: case R_ARGMIN: {
        Expr *m = te_read(c, r->m, r->m->ndim, idx);
        Expr *none = tir_idx(A, r->last ? -1 : r->count);
        v = tir_select(A, tir_bin(A, E_EQ, v, m), rv[0], none);
        break;
      }
      default: break;
    }
  }
  if (na == 0) return v;
  return te_reduce(c, k, v, na, axes, NULL, NULL);
}

/* Whether the reduction takes the row form: a CPU target, the last input dim reduced and at least one
 * vector long, and an accumulator the input already has (no per-element casts) that vector code handles.
 * argmax/argmin stay direct (their result is an index, not a combinable value). */
static int64_t red_row_lanes(TeCtx *c, const RedArgs *r, mlc_dtype in) {
  if (!c->target || c->target->kind != TARGET_CPU || is_arg(r->op) || r->ndim == 0 || !r->red[r->ndim - 1])
    return 0;
  mlc_dtype t = r->acc;
  if (in != t || !(t == MLC_F32 || t == MLC_F64 || t == MLC_I32 || t == MLC_I64)) return 0;
  int64_t lanes = topi_vector_lanes(c->target, t);
  if (lanes < 2 || r->x->shape[r->ndim - 1] < lanes) return 0;
  /* the generic schedule keeps the partials of every row in one scratch buffer (rows x lanes): past a few MiB
   * (many short rows) that allocation costs more than the vector loop saves */
  int64_t rows = 1;
  for (int i = 0; i < r->ndim; i++)
    if (!r->red[i]) rows *= r->x->shape[i];
  return rows * lanes * mlc_dtype_size(t) <= RED_ROW_MAX_SCRATCH ? lanes : 0;
}

/* one reduce stage (ST_EXTREME or ST_REDUCE) of the output's shape, direct or in the row form */
static TeTensor *red_stage(TeCtx *c, const RedArgs *base, RedStage stage, const char *name, mlc_dtype t,
                           const TensorType *ot) {
  Arena *A = c->arena;
  RedArgs *r = arena_memdup(A, base, sizeof *base);
  r->stage = stage;
  if (!r->lanes) return te_compute(c, name, "reduce", t, ot->ndim, ot->dims, red_reduce_fn, r);
  int64_t pshape[MLC_MAX_DIMS + 1];
  memcpy(pshape, ot->dims, sizeof(int64_t) * (size_t)ot->ndim);
  pshape[ot->ndim] = r->lanes;
  RedArgs *p = arena_memdup(A, r, sizeof *r);
  p->form = FORM_PART;
  RedArgs *cb = arena_memdup(A, r, sizeof *r);
  cb->form = FORM_COMBINE;
  cb->part = te_compute(c, arena_printf(A, "%s_part", name), "reduce_partial", t, ot->ndim + 1, pshape,
                        red_reduce_fn, p);
  if (r->kmain < r->x->shape[r->ndim - 1]) {
    RedArgs *tl = arena_memdup(A, r, sizeof *r);
    tl->form = FORM_TAIL;
    cb->tail = te_compute(c, arena_printf(A, "%s_tail", name), "reduce", t, ot->ndim, ot->dims, red_reduce_fn, tl);
  }
  return te_compute(c, name, "reduce", t, ot->ndim, ot->dims, red_reduce_fn, cb);
}

static Expr *red_post_fn(TeCtx *c, Expr **idx, void *user) {
  RedArgs *r = user;
  Arena *A = c->arena;
  Expr *v = te_read(c, r->r, r->r->ndim, idx);
  /* integer inputs take sqrt/log in float64 */
  mlc_dtype ft = dtype_is_float(r->acc) ? r->acc : MLC_F64;
  switch (r->op) {
    case R_MEAN:
      if (dtype_is_float(r->acc)) v = tir_bin(A, E_DIV, v, tir_const(A, r->acc, (double)r->count));
      else if (r->count > 0) v = tir_bin(A, E_DIV, v, tir_const(A, r->acc, (double)r->count));
      break;
    case R_L2: v = to(c, ft, v); v = tir_call(A, INTRIN_SQRT, ft, 1, &v); break;
    case R_LOGSUM: v = to(c, ft, v); v = tir_call(A, INTRIN_LOG, ft, 1, &v); break;
    case R_LOGSUMEXP: {
      Expr *m = finite_or_zero(c, te_read(c, r->m, r->m->ndim, idx));
      v = tir_add(A, tir_call(A, INTRIN_LOG, r->acc, 1, &v), m);
      break;
    }
    default: break;
  }
  if (r->out == MLC_BOOL && r->acc != MLC_BOOL) v = tir_bin(A, E_NE, v, tir_const(A, v->dtype, 0));
  return to(c, r->out, v);
}

static mlc_status red_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, RedOp op, Diag *d) {
  RedArgs base = {.op = op, .x = ins[0], .ndim = ins[0]->ndim};
  int nred;
  mlc_status st = red_axes(n, base.ndim, base.red, &nred, d);
  if (st != MLC_OK) return st;
  base.keep = ir_attr_int(n, "keepdims", 1) != 0;
  base.last = ir_attr_int(n, "select_last_index", 0) != 0;
  const TensorType *ot = &n->outputs[0]->type;
  base.out = ot->dtype;
  mlc_dtype t = ins[0]->dtype;
  base.acc = is_half(t) ? MLC_F32 : t == MLC_BOOL ? MLC_U8 : t;
  if (op == R_LOGSUMEXP && !dtype_is_float(t)) base.acc = MLC_F64;
  base.count = 1;
  for (int i = 0; i < base.ndim; i++)
    if (base.red[i]) base.count *= ins[0]->shape[i];
  /* argmax's "no match" index: the extent of the reduced axis */
  if (is_arg(op))
    for (int i = 0; i < base.ndim; i++)
      if (base.red[i]) base.count = ins[0]->shape[i];
  const char *name = red_names[op];

  base.ondim = ot->ndim;
  base.lanes = red_row_lanes(c, &base, t);
  if (base.lanes) {
    int64_t k = ins[0]->shape[base.ndim - 1];
    base.kmain = k - k % base.lanes;
  }
  if (op == R_LOGSUMEXP || is_arg(op))
    base.m = red_stage(c, &base, ST_EXTREME, arena_printf(c->arena, "%s_extreme", name), base.acc, ot);
  bool post = op == R_MEAN || op == R_L2 || op == R_LOGSUM || op == R_LOGSUMEXP || (!is_arg(op) && base.acc != base.out);
  mlc_dtype rt = is_arg(op) ? MLC_I64 : base.acc;
  TeTensor *red = red_stage(c, &base, ST_REDUCE, post ? arena_printf(c->arena, "%s_acc", name) : name, rt, ot);
  if (post) {
    RedArgs *p = arena_memdup(c->arena, &base, sizeof base);
    p->stage = ST_POST;
    p->r = red;
    red = te_compute(c, name, "elemwise", ot->dtype, ot->ndim, ot->dims, red_post_fn, p);
  }
  MLC_CHECK(d, red && red->dtype == ot->dtype, MLC_ERR_INTERNAL);
  outs[0] = red;
  return MLC_OK;
}

/* the OpDef table: enum and graph op name (as in red_names) */
#define RED_OPS(X)                                                                                    \
  X(R_SUM, "sum") X(R_MEAN, "mean") X(R_MAX, "max") X(R_MIN, "min") X(R_PROD, "prod")                 \
  X(R_L1, "reduce_l1") X(R_L2, "reduce_l2") X(R_LOGSUM, "reduce_log_sum") X(R_LOGSUMEXP, "logsumexp") \
  X(R_SUMSQ, "reduce_sum_square") X(R_ARGMAX, "argmax") X(R_ARGMIN, "argmin")

#define X(e, nm)                                                                                             \
  static mlc_status infer_##e(Node *n, Diag *d) { return red_infer(n, e, d); }                            \
  static mlc_status compute_##e(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {            \
    return red_compute(c, n, ins, outs, e, d);                                                             \
  }
RED_OPS(X)
#undef X

const OpDef topi_ops_reduce[] = {
#define X(e, nm) {nm, PAT_COMM_REDUCE, 1, 1, 1, infer_##e, compute_##e, DYN_REDUCE},
    RED_OPS(X)
#undef X
    {0},
};
