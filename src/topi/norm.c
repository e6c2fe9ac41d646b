/* topi norm family: normalisations over a set of axes, each as one op with its own compute.
 *
 * Ops and attributes (normalised by the importer):
 *   nn.layer_norm(x, scale[, bias])  axis, epsilon, stash_type; outputs y[, mean[, inv_std_dev]]
 *   nn.rms_norm(x, scale)            axis, epsilon
 *   nn.group_norm(x, scale, bias)    num_groups, epsilon, param ("channel": scale/bias of shape (C), "group":
 *                                    of shape (G)); InstanceNormalization is group_norm with C groups
 *   nn.mvn(x)                        axis (ints): (x - mean) / (std + 1e-9), as the ONNX reference
 *   nn.lp_norm(x)                    axis, p (1 or 2): x / ||x||_p along axis
 *   nn.lrn(x)                        size, alpha, beta, bias: x / (bias + alpha/size * sum of squares over a
 *                                    channel window)^beta
 * Algorithm: statistics are computed over a "stats" tensor that has x's shape with the reduced dims set to 1
 * (group norm: the channel dim becomes the group count, and a reduce axis walks the channels of a group).
 * Two reduce stages (mean, then the variance around it: the two-pass form, numerically stable), an
 * elementwise stage for the reciprocal deviation, and the output stage reading x and the stats. float16 and
 * bfloat16 compute in float32, float64 in float64. When the last dim is normalised and holds a vector, each
 * sum takes reduce.c's row form (per-lane partials along the row, combine, remainder); layer and rms norm
 * then also get the per-row template below (everything computed at the output's row loop). */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

typedef enum NormKind { NK_LAYER, NK_RMS, NK_GROUP, NK_MVN, NK_LP } NormKind;

static Expr *to(TeCtx *c, mlc_dtype t, Expr *e) { return e->dtype == t ? e : tir_cast(c->arena, t, e); }
static mlc_dtype acc_of(mlc_dtype t) { return t == MLC_F64 ? MLC_F64 : MLC_F32; }

static NormKind kind_of(const Node *n) {
  const char *nm = n->op->name;
  if (!strcmp(nm, "nn.rms_norm")) return NK_RMS;
  if (!strcmp(nm, "nn.group_norm")) return NK_GROUP;
  if (!strcmp(nm, "nn.mvn")) return NK_MVN;
  if (!strcmp(nm, "nn.lp_norm")) return NK_LP;
  return NK_LAYER;
}

/* which dims are reduced, and for group norm the group size along dim 1 */
typedef struct NormSpec {
  int ndim;
  bool red[MLC_MAX_DIMS];
  int gdim;      /* -1, or the grouped dim (1) */
  int64_t gsize; /* channels per group */
  int64_t count; /* elements per statistic */
  int64_t sdims[MLC_MAX_DIMS];
} NormSpec;

static mlc_status norm_spec(const Node *n, const TensorType *x, NormSpec *s, Diag *d) {
  NormKind k = kind_of(n);
  const char *nm = n->op->name;
  memset(s, 0, sizeof *s);
  s->ndim = x->ndim;
  s->gdim = -1;
  if (k == NK_LAYER || k == NK_RMS || k == NK_LP) {
    int64_t axis = ir_attr_int(n, "axis", x->ndim - 1);
    if (axis < 0 || axis >= x->ndim)
      return diag_set(d, MLC_ERR_INVALID, "%s: axis %lld out of range for rank %d", nm, (long long)axis, x->ndim);
    for (int i = 0; i < x->ndim; i++) s->red[i] = k == NK_LP ? i == axis : i >= axis;
  } else if (k == NK_MVN) {
    int64_t ax[MLC_MAX_DIMS + 1];
    int na = ir_attr_ints(n, "axis", ax, MLC_MAX_DIMS + 1);
    if (na > x->ndim) return diag_set(d, MLC_ERR_INVALID, "%s: %d axes for rank %d", nm, na, x->ndim);
    for (int i = 0; i < na; i++) {
      if (ax[i] < 0 || ax[i] >= x->ndim)
        return diag_set(d, MLC_ERR_INVALID, "%s: axis %lld out of range for rank %d", nm, (long long)ax[i], x->ndim);
      s->red[ax[i]] = true;
    }
  } else {
    if (x->ndim < 2) return diag_set(d, MLC_ERR_INVALID, "%s: input must have rank >= 2", nm);
    int64_t g = ir_attr_int(n, "num_groups", 0), cch = x->dims[1];
    if (g <= 0 || cch % g != 0)
      return diag_set(d, MLC_ERR_INVALID, "%s: num_groups %lld does not divide %lld channels", nm, (long long)g,
                      (long long)cch);
    for (int i = 2; i < x->ndim; i++) s->red[i] = true;
    s->gdim = 1;
    s->gsize = cch / g;
  }
  s->count = 1;
  for (int i = 0; i < x->ndim; i++) {
    s->sdims[i] = s->red[i] ? 1 : x->dims[i];
    if (s->red[i]) s->count *= x->dims[i];
  }
  if (s->gdim >= 0) {
    s->sdims[s->gdim] = x->dims[s->gdim] / s->gsize;
    s->count *= s->gsize;
  }
  return MLC_OK;
}

/* checks that p broadcasts onto x (numpy rules, result x's shape), or has the per-channel/per-group shape */
static mlc_status check_param(const Node *n, const TensorType *x, const TensorType *p, const char *what,
                              int64_t want1d, Diag *d) {
  if (want1d > 0) {
    if (tt_numel(p) != want1d)
      return diag_set(d, MLC_ERR_INVALID, "%s: %s has %lld elements, expected %lld", n->op->name, what,
                      (long long)tt_numel(p), (long long)want1d);
    return MLC_OK;
  }
  TensorType b;
  if (topi_broadcast_shape(x, p, &b) != MLC_OK || b.ndim != x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "%s: %s does not broadcast to the input shape", n->op->name, what);
  for (int i = 0; i < x->ndim; i++)
    if (b.dims[i] != x->dims[i])
      return diag_set(d, MLC_ERR_INVALID, "%s: %s does not broadcast to the input shape", n->op->name, what);
  return MLC_OK;
}

static mlc_status norm_infer(Node *n, Diag *d) {
  NormKind k = kind_of(n);
  const char *nm = n->op->name;
  if (!n->inputs[0]) return diag_set(d, MLC_ERR_INVALID, "%s: missing input", nm);
  const TensorType *x = &n->inputs[0]->type;
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", nm, mlc_dtype_name(x->dtype));
  NormSpec s;
  mlc_status st = norm_spec(n, x, &s, d);
  if (st != MLC_OK) return st;
  int64_t want1d = 0;
  if (k == NK_GROUP)
    want1d = strcmp(ir_attr_string(n, "param", "channel"), "group") == 0 ? x->dims[1] / s.gsize : x->dims[1];
  for (int i = 1; i < n->ninputs; i++) {
    if (!n->inputs[i]) continue;
    if (n->inputs[i]->type.dtype != x->dtype)
      return diag_set(d, MLC_ERR_INVALID, "%s: input %d has dtype %s, expected %s", nm, i,
                      mlc_dtype_name(n->inputs[i]->type.dtype), mlc_dtype_name(x->dtype));
    st = check_param(n, x, &n->inputs[i]->type, i == 1 ? "scale" : "bias", want1d, d);
    if (st != MLC_OK) return st;
  }
  if (n->noutputs < 1 || n->noutputs > (k == NK_LAYER ? 3 : 1))
    return diag_set(d, MLC_ERR_INVALID, "%s: %d outputs", nm, n->noutputs);
  n->outputs[0]->type = *x;
  mlc_dtype u = ir_attr_int(n, "stash_type", 1) == 1 ? MLC_F32 : x->dtype;
  for (int i = 1; i < n->noutputs; i++) {
    TensorType t = {.dtype = u, .ndim = x->ndim};
    memcpy(t.dims, s.sdims, sizeof t.dims);
    n->outputs[i]->type = t;
  }
  return MLC_OK;
}

typedef struct NormCtx {
  NormKind kind;
  NormSpec s;
  TeTensor *x, *scale, *bias;
  TeTensor *mean, *var, *rstd;
  mlc_dtype acc, out;
  double eps;
  int p;          /* lp_norm */
  int param_mode; /* group norm: 0 channel, 1 group */
  int which;      /* reduce stage: 0 mean, 1 variance / sum of squares */
  /* the row form of a reduce stage (as reduce.c's: the last dim split by the lanes L, extent K) */
  int form;       /* 0 direct; 1 part[s.., l] over j < kmain / L; 2 the tail over the K - kmain rest;
                   * 3 the combine over l of part, from the tail */
  int64_t lanes;  /* 0: the direct form only */
  int64_t kmain;  /* K - K % L */
  TeTensor *part, *tail;
} NormCtx;

/* x index from a stats index and the reduce vars */
static void x_index(TeCtx *c, const NormCtx *k, Expr **sidx, Expr **rv, Expr **xi) {
  Arena *A = c->arena;
  int r = 0;
  for (int i = 0; i < k->s.ndim; i++) {
    if (i == k->s.gdim)
      xi[i] = tir_add(A, tir_mul(A, sidx[i], tir_idx(A, k->s.gsize)), rv[r++]);
    else if (k->s.red[i])
      xi[i] = rv[r++];
    else
      xi[i] = sidx[i];
  }
}

/* stats index from an x index */
static void s_index(TeCtx *c, const NormCtx *k, Expr **idx, Expr **si) {
  Arena *A = c->arena;
  for (int i = 0; i < k->s.ndim; i++) {
    if (i == k->s.gdim) si[i] = tir_bin(A, E_FLOORDIV, idx[i], tir_idx(A, k->s.gsize));
    else if (k->s.red[i]) si[i] = tir_idx(A, 0);
    else si[i] = idx[i];
  }
}

static Expr *reduce_body(TeCtx *c, Expr **idx, void *user) {
  NormCtx *k = user;
  Arena *A = c->arena;
  int nd = k->s.ndim;
  if (k->form == 3) {
    IterVar *l = te_reduce_axis(c, "rl", k->lanes);
    Expr *pi[MLC_MAX_DIMS + 1];
    memcpy(pi, idx, sizeof(Expr *) * (size_t)nd);
    pi[nd] = tir_varref(A, l->var);
    Expr *init = k->tail ? te_read(c, k->tail, nd, idx) : NULL;
    return te_reduce(c, RED_SUM, te_read(c, k->part, nd + 1, pi), 1, &l, init, NULL);
  }
  IterVar *ax[MLC_MAX_DIMS];
  Expr *rv[MLC_MAX_DIMS];
  int na = 0;
  for (int i = 0; i < nd; i++) {
    int64_t ext = i == k->s.gdim ? k->s.gsize : k->s.red[i] ? k->x->shape[i] : 0;
    if (ext == 0) continue;
    bool row = i == nd - 1 && k->form != 0;
    if (row) ext = k->form == 1 ? k->kmain / k->lanes : ext - k->kmain;
    ax[na] = te_reduce_axis(c, arena_printf(A, row ? (k->form == 1 ? "r%dj" : "r%dt") : "r%d", i), ext);
    rv[na] = tir_varref(A, ax[na]->var);
    if (row && k->form == 1) /* element j * L + l of the row; l is the partial's last index */
      rv[na] = tir_add(A, tir_mul(A, rv[na], tir_idx(A, k->lanes)), idx[nd]);
    else if (row)
      rv[na] = tir_add(A, rv[na], tir_idx(A, k->kmain));
    na++;
  }
  Expr *xi[MLC_MAX_DIMS];
  x_index(c, k, idx, rv, xi);
  Expr *v = to(c, k->acc, te_read(c, k->x, k->s.ndim, xi));
  if (k->which == 1) {
    if (k->mean) v = tir_sub(A, v, te_read(c, k->mean, k->s.ndim, idx));
    if (k->kind == NK_LP && k->p == 1) v = tir_call(A, INTRIN_FABS, k->acc, 1, &v);
    else v = tir_mul(A, v, v);
  }
  Expr *sum = na ? te_reduce(c, RED_SUM, v, na, ax, NULL, NULL) : v;
  return sum;
}

/* rstd = 1 / deviation, from the sum of squares */
static Expr *rstd_body(TeCtx *c, Expr **idx, void *user) {
  NormCtx *k = user;
  Arena *A = c->arena;
  Expr *ss = te_read(c, k->var, k->s.ndim, idx);
  Expr *one = tir_const(A, k->acc, 1.0);
  Expr *dev;
  if (k->kind == NK_LP) { /* a zero norm gives 0, as the ONNX reference does, not inf * 0 */
    dev = k->p == 1 ? ss : tir_call(A, INTRIN_SQRT, k->acc, 1, &ss);
    Expr *zero = tir_const(A, k->acc, 0.0);
    return tir_select(A, tir_bin(A, E_EQ, dev, zero), zero, tir_bin(A, E_DIV, one, dev));
  } else {
    Expr *var = tir_bin(A, E_DIV, ss, tir_const(A, k->acc, (double)k->s.count));
    if (k->kind == NK_MVN) {
      dev = tir_add(A, tir_call(A, INTRIN_SQRT, k->acc, 1, &var), tir_const(A, k->acc, 1e-9));
    } else {
      Expr *ve = tir_add(A, var, tir_const(A, k->acc, k->eps));
      dev = tir_call(A, INTRIN_SQRT, k->acc, 1, &ve);
    }
  }
  return tir_bin(A, E_DIV, one, dev);
}

/* mean = sum / count (an elementwise stage, inlined into its readers) */
static Expr *mean_body(TeCtx *c, Expr **idx, void *user) {
  NormCtx *k = user;
  Expr *s = te_read(c, k->var, k->s.ndim, idx);
  return tir_bin(c->arena, E_DIV, s, tir_const(c->arena, k->acc, (double)k->s.count));
}

static Expr *param_read(TeCtx *c, const NormCtx *k, TeTensor *p, Expr **idx) {
  Arena *A = c->arena;
  if (k->kind == NK_GROUP) {
    Expr *ch = idx[1];
    if (k->param_mode == 1) ch = tir_bin(A, E_FLOORDIV, ch, tir_idx(A, k->s.gsize));
    Expr *pi[MLC_MAX_DIMS];
    for (int i = 0; i < p->ndim; i++) pi[i] = p->shape[i] == 1 && i != p->ndim - 1 ? tir_idx(A, 0) : ch;
    return to(c, k->acc, te_read(c, p, p->ndim, pi));
  }
  Expr *pi[MLC_MAX_DIMS];
  topi_broadcast_index(c, p, k->s.ndim, idx, pi);
  return to(c, k->acc, te_read(c, p, p->ndim, pi));
}

static Expr *out_body(TeCtx *c, Expr **idx, void *user) {
  NormCtx *k = user;
  Arena *A = c->arena;
  Expr *si[MLC_MAX_DIMS];
  s_index(c, k, idx, si);
  Expr *v = to(c, k->acc, te_read(c, k->x, k->s.ndim, idx));
  if (k->mean) v = tir_sub(A, v, te_read(c, k->mean, k->s.ndim, si));
  v = tir_mul(A, v, te_read(c, k->rstd, k->s.ndim, si));
  if (k->scale) v = tir_mul(A, v, param_read(c, k, k->scale, idx));
  if (k->bias) v = tir_add(A, v, param_read(c, k, k->bias, idx));
  return to(c, k->out, v);
}

static Expr *cast_body(TeCtx *c, Expr **idx, void *user) {
  NormCtx *k = user; /* reuses .out for the dtype and .var for the source */
  return to(c, k->out, te_read(c, k->var, k->s.ndim, idx));
}

static TeTensor *stage(TeCtx *c, NormCtx *k, const char *name, const char *tag, mlc_dtype t, TeComputeFn fn) {
  NormCtx *u = arena_memdup(c->arena, k, sizeof *k);
  return te_compute(c, name, tag, t, k->s.ndim, k->s.sdims, fn, u);
}

/* The lanes of the row form, or 0: a CPU target, the last dim reduced (not grouped) and at least one vector
 * long, an input already in the accumulator's dtype. */
static int64_t row_lanes(TeCtx *c, const NormCtx *k) {
  int nd = k->s.ndim;
  if (!c->target || c->target->kind != TARGET_CPU || nd == 0 || !k->s.red[nd - 1] || k->s.gdim == nd - 1)
    return 0;
  if (k->x->dtype != k->acc) return 0;
  int64_t lanes = topi_vector_lanes(c->target, k->acc);
  return lanes > 1 && k->x->shape[nd - 1] >= lanes ? lanes : 0;
}

/* a sum over the normalised dims (k->which says of what): direct, or in the row form: per-lane partials
 * (tag "reduce_partial", vectorized along the row by the generic schedule), the scalar remainder, and their
 * combine */
static TeTensor *reduce_stage(TeCtx *c, NormCtx *k, const char *name) {
  Arena *A = c->arena;
  if (!k->lanes) return stage(c, k, name, "reduce", k->acc, reduce_body);
  int nd = k->s.ndim;
  int64_t pshape[MLC_MAX_DIMS + 1];
  memcpy(pshape, k->s.sdims, sizeof(int64_t) * (size_t)nd);
  pshape[nd] = k->lanes;
  NormCtx *p = arena_memdup(A, k, sizeof *k);
  p->form = 1;
  NormCtx cb = *k;
  cb.form = 3;
  cb.part = te_compute(c, arena_printf(A, "%s_part", name), "reduce_partial", k->acc, nd + 1, pshape, reduce_body, p);
  cb.tail = NULL;
  if (k->kmain < k->x->shape[nd - 1]) {
    NormCtx t = *k;
    t.form = 2;
    cb.tail = stage(c, &t, arena_printf(A, "%s_tail", name), "reduce", k->acc, reduce_body);
  }
  return stage(c, &cb, name, "reduce", k->acc, reduce_body);
}

static mlc_status norm_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  NormCtx k0 = {0}, *k = &k0;
  Arena *A = c->arena;
  k->kind = kind_of(n);
  TensorType xt = n->inputs[0]->type;
  mlc_status st = norm_spec(n, &xt, &k->s, d);
  if (st != MLC_OK) return st;
  k->x = ins[0];
  k->scale = n->ninputs > 1 ? ins[1] : NULL;
  k->bias = n->ninputs > 2 ? ins[2] : NULL;
  k->acc = acc_of(ins[0]->dtype);
  k->out = ins[0]->dtype;
  k->eps = ir_attr_float(n, "epsilon", 1e-5);
  k->p = (int)ir_attr_int(n, "p", 2);
  k->param_mode = strcmp(ir_attr_string(n, "param", "channel"), "group") == 0;
  const char *nm = n->op->name + 3;
  k->lanes = row_lanes(c, k);
  /* layer / rms norm with the output alone get the per-row template (partials per row); the others keep the
   * partials of every row in one scratch buffer, which must stay small (see reduce.c) */
  bool per_row = (k->kind == NK_LAYER || k->kind == NK_RMS) && n->noutputs == 1 && !k->s.red[0];
  int64_t rows = 1;
  for (int i = 0; i < k->s.ndim; i++) rows *= k->s.sdims[i];
  if (!per_row && rows * k->lanes * mlc_dtype_size(k->acc) > (4 << 20)) k->lanes = 0;
  if (k->lanes) {
    int64_t kk = k->x->shape[k->s.ndim - 1];
    k->kmain = kk - kk % k->lanes;
  }
  if (k->kind != NK_RMS && k->kind != NK_LP) {
    k->which = 0;
    k->var = reduce_stage(c, k, arena_printf(A, "%s_sum", nm));
    k->mean = stage(c, k, arena_printf(A, "%s_mean", nm), "elemwise", k->acc, mean_body);
    k->var = NULL;
  }
  k->which = 1;
  k->var = reduce_stage(c, k, arena_printf(A, "%s_sqsum", nm));
  k->rstd = stage(c, k, arena_printf(A, "%s_rstd", nm), "elemwise", k->acc, rstd_body);
  NormCtx *o = arena_memdup(A, k, sizeof *k);
  /* layer / rms norm in the row form with the output alone: the "layer_norm" template computes everything
   * per row (statistics that other outputs read could not live inside the output's row loop) */
  outs[0] = te_compute(c, nm, k->lanes && per_row ? "layer_norm" : "injective", k->out, k->s.ndim, k->x->shape,
                       out_body, o);
  /* layer norm's optional outputs: the mean and the reciprocal standard deviation, in the stash type */
  for (int i = 1; i < n->noutputs; i++) {
    NormCtx cc = *k;
    cc.var = i == 1 ? k->mean : k->rstd;
    cc.out = n->outputs[i]->type.dtype;
    outs[i] = stage(c, &cc, arena_printf(A, "%s_%s", nm, i == 1 ? "mean_out" : "rstd_out"), "elemwise", cc.out,
                    cast_body);
  }
  return MLC_OK;
}

/* ---------------------------------------------------------------- the per-row template */

/* Layer / rms norm in the row form (output tag "layer_norm"): the output's row axes (those not normalised)
 * fused into the parallel loop, its last axis split by the lanes and vectorized where they divide it; every
 * other stage is computed per row at that loop (compute_at): the partial sums vectorized along the row (j,
 * then l in vectors), their scalar combine and remainder, the mean and the reciprocal deviation once per row
 * (the group schedule inlined those two; here they are one value each, not a sqrt and a divide per element).
 * So a row is read from memory once and stays in L1 through the mean, the variance and the scaled output. */
void topi_layer_norm_space(const Target *t, const TeOp *a, TopiConfigSpace *s) { memset(s, 0, sizeof *s); }

void topi_layer_norm_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) { memset(cfg, 0, sizeof *cfg); }

void topi_layer_norm_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *os = te_stage(s, a->outputs[0]);
  int nd = a->naxes;
  if (!os || os->nleaf != nd || nd < 2) {
    if (os) topi_schedule_stage_generic(c, os);
    return;
  }
  /* the row axes: the leading ones the statistics keep (extent > 1 in the stats shape of every reduce stage) */
  int nrow = nd - 1;
  for (int i = 0; i < s->nstages; i++) {
    TeOp *op = s->stages[i]->op;
    if (op->kind != TE_COMPUTE || op == a) continue;
    for (int d = 0; d < nrow && d < op->naxes; d++)
      if (op->axes[d]->extent == 1 && a->axes[d]->extent != 1) nrow = d;
  }
  if (nrow == 0) {
    for (int i = 0; i < s->nstages; i++)
      if (s->stages[i]->attach == ATTACH_ROOT) topi_schedule_stage_generic(c, s->stages[i]);
    return;
  }
  int lanes = topi_vector_lanes(c->target, a->outputs[0]->dtype);
  int64_t numel = 1;
  for (int i = 0; i < nd; i++) numel *= a->axes[i]->extent;
  IterVar *rows[MLC_MAX_DIMS];
  for (int i = 0; i < nrow; i++) rows[i] = a->axes[i];
  IterVar *f = topi_fuse_range(os, rows, nrow);
  if (numel >= 16384 && f->extent > 1) te_parallel(os, f);
  IterVar *last = a->axes[nd - 1], *lo, *li;
  if (lanes > 1 && last->extent % lanes == 0 && last->extent > lanes) {
    topi_split(os, last, lanes, &lo, &li);
    te_vectorize(os, li);
  } else if (last->extent == lanes) {
    te_vectorize(os, last);
  }
  for (int i = 0; i < s->nstages; i++) {
    TeStage *st = s->stages[i];
    TeOp *op = st->op;
    if (op->kind != TE_COMPUTE || op == a) continue;
    st->attach = ATTACH_ROOT; /* the mean and the deviation were inlined: here they are per-row values */
    if (op->tag && !strcmp(op->tag, "reduce_partial") && st->nleaf == op->naxes + op->nreduce) {
      IterVar *order[2 * MLC_MAX_DIMS + 1];
      int k = 0;
      for (int d = 0; d < op->naxes - 1; d++) order[k++] = op->axes[d];
      for (int d = 0; d < op->nreduce; d++) order[k++] = op->reduce_axes[d];
      order[k++] = op->axes[op->naxes - 1];
      te_reorder(st, k, order);
      te_vectorize(st, op->axes[op->naxes - 1]);
    }
    te_compute_at(st, os, f);
  }
}

/* ---------------------------------------------------------------- LRN */

static mlc_status lrn_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.lrn of %s is not supported", mlc_dtype_name(x->dtype));
  if (x->ndim < 2) return diag_set(d, MLC_ERR_INVALID, "nn.lrn: input must have rank >= 2");
  if (ir_attr_int(n, "size", 0) < 1) return diag_set(d, MLC_ERR_INVALID, "nn.lrn: size must be positive");
  n->outputs[0]->type = *x;
  return MLC_OK;
}

typedef struct LrnCtx {
  TeTensor *x, *sq;
  int64_t size;
  double alpha, beta, bias;
  mlc_dtype acc;
} LrnCtx;

/* sum of squares over channels [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to [0, C) */
static Expr *lrn_sq_body(TeCtx *c, Expr **idx, void *user) {
  LrnCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "rc", k->size);
  int64_t C = k->x->shape[1];
  Expr *ch = tir_add(A, tir_sub(A, idx[1], tir_idx(A, (k->size - 1) / 2)), tir_varref(A, r->var));
  Expr *ok = tir_bin(A, E_AND, tir_bin(A, E_GE, ch, tir_idx(A, 0)), tir_bin(A, E_LT, ch, tir_idx(A, C)));
  Expr *cl = tir_bin(A, E_MIN, tir_bin(A, E_MAX, ch, tir_idx(A, 0)), tir_idx(A, C - 1));
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0; i < k->x->ndim; i++) xi[i] = i == 1 ? cl : idx[i];
  Expr *v = to(c, k->acc, te_read(c, k->x, k->x->ndim, xi));
  v = tir_select(A, ok, tir_mul(A, v, v), tir_const(A, k->acc, 0));
  return te_reduce(c, RED_SUM, v, 1, &r, NULL, NULL);
}

static Expr *lrn_out_body(TeCtx *c, Expr **idx, void *user) {
  LrnCtx *k = user;
  Arena *A = c->arena;
  Expr *s = te_read(c, k->sq, k->x->ndim, idx);
  Expr *base = tir_add(A, tir_const(A, k->acc, k->bias), tir_mul(A, tir_const(A, k->acc, k->alpha / (double)k->size), s));
  Expr *args[2] = {base, tir_const(A, k->acc, k->beta)};
  Expr *den = tir_call(A, INTRIN_POW, k->acc, 2, args);
  Expr *v = tir_bin(A, E_DIV, to(c, k->acc, te_read(c, k->x, k->x->ndim, idx)), den);
  return to(c, k->x->dtype, v);
}

static mlc_status lrn_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  LrnCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->size = ir_attr_int(n, "size", 1);
  k->alpha = ir_attr_float(n, "alpha", 1e-4);
  k->beta = ir_attr_float(n, "beta", 0.75);
  k->bias = ir_attr_float(n, "bias", 1.0);
  k->acc = acc_of(ins[0]->dtype);
  k->sq = te_compute(c, "lrn_sqsum", "reduce", k->acc, ins[0]->ndim, ins[0]->shape, lrn_sq_body, k);
  outs[0] = te_compute(c, "lrn", "injective", ins[0]->dtype, ins[0]->ndim, ins[0]->shape, lrn_out_body, k);
  return MLC_OK;
}

const OpDef topi_ops_norm[] = {
    /* name           pattern     min max nout infer       compute       dyn */
    {"nn.layer_norm", PAT_OPAQUE, 2, 3, -1, norm_infer, norm_compute, DYN_NORM_TAIL},
    {"nn.rms_norm", PAT_OPAQUE, 1, 2, 1, norm_infer, norm_compute, DYN_NORM_TAIL},
    {"nn.group_norm", PAT_OPAQUE, 1, 3, 1, norm_infer, norm_compute},
    {"nn.mvn", PAT_OPAQUE, 1, 1, 1, norm_infer, norm_compute},
    {"nn.lp_norm", PAT_OPAQUE, 1, 1, 1, norm_infer, norm_compute},
    {"nn.lrn", PAT_OPAQUE, 1, 1, 1, lrn_infer, lrn_compute},
    {0},
};
