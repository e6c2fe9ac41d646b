/* topi loss family: the negative log-likelihood loss (ONNX NegativeLogLikelihoodLoss; SoftmaxCrossEntropyLoss is
 * nn.log_softmax over the class axis followed by this op).
 *
 *   nn.nll_loss(x (N, C, d1..dk), target (N, d1..dk) integer[, weight (C)])
 *     attributes: reduction ("none" | "sum" | "mean"), has_ignore, ignore_index, mean_by_weight.
 * Algorithm (as the ONNX reference): per target element, with t = target[n, d..] and w = weight[t] (1 without
 * weight; the class index clamped into [0, C) for reading, as numpy's take(mode=clip)),
 *   l[n, d..] = t == ignore_index ? 0 : -x[n, t, d..] * w;
 * "none" returns l; "sum" one reduction over every axis; "mean" divides that sum by the sum of the gathered
 * weights (0 where ignored) when mean_by_weight is 1, else by the element count (np.mean). Accumulation is in
 * float32 (float64 for double inputs); the result has x's dtype. */
#include <string.h>
#include "topi/topi.h"

typedef enum Reduction { RD_NONE, RD_SUM, RD_MEAN } Reduction;

typedef struct NllCtx {
  TeTensor *x, *t, *w;
  TeTensor *sum, *wsum;
  Reduction red;
  bool has_ignore, by_weight;
  int64_t ignore, C, count;
  mlc_dtype acc, out;
} NllCtx;

static Expr *to(TeCtx *c, mlc_dtype t, Expr *e) { return e->dtype == t ? e : tir_cast(c->arena, t, e); }

static mlc_status nll_parse(const Node *n, NllCtx *k, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *t = &n->inputs[1]->type;
  const TensorType *w = n->ninputs > 2 && n->inputs[2] ? &n->inputs[2]->type : NULL;
  memset(k, 0, sizeof *k);
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.nll_loss of %s is not supported", mlc_dtype_name(x->dtype));
  if (t->dtype != MLC_I32 && t->dtype != MLC_I64)
    return diag_set(d, MLC_ERR_INVALID, "nn.nll_loss: target must be int32 or int64, not %s", mlc_dtype_name(t->dtype));
  if (x->ndim < 2 || t->ndim != x->ndim - 1)
    return diag_set(d, MLC_ERR_INVALID, "nn.nll_loss: input must be (N, C, d...) and target (N, d...)");
  for (int i = 0; i < t->ndim; i++)
    if (t->dims[i] != x->dims[i == 0 ? 0 : i + 1])
      return diag_set(d, MLC_ERR_INVALID, "nn.nll_loss: target dim %d is %lld, input has %lld", i, (long long)t->dims[i],
                      (long long)x->dims[i == 0 ? 0 : i + 1]);
  k->C = x->dims[1];
  if (w && (w->ndim != 1 || w->dims[0] != k->C || w->dtype != x->dtype))
    return diag_set(d, MLC_ERR_INVALID, "nn.nll_loss: weight must be (C) of the input's dtype");
  const char *r = ir_attr_string(n, "reduction", "mean");
  if (!strcmp(r, "none")) k->red = RD_NONE;
  else if (!strcmp(r, "sum")) k->red = RD_SUM;
  else if (!strcmp(r, "mean")) k->red = RD_MEAN;
  else return diag_set(d, MLC_ERR_INVALID, "nn.nll_loss: reduction '%s' is not none, sum or mean", r);
  if (k->C < 1) return diag_set(d, MLC_ERR_INVALID, "nn.nll_loss: no classes");
  k->has_ignore = ir_attr_int(n, "has_ignore", 0) != 0;
  k->ignore = ir_attr_int(n, "ignore_index", 0);
  k->by_weight = ir_attr_int(n, "mean_by_weight", 1) != 0;
  k->count = tt_numel(t);
  k->out = x->dtype;
  k->acc = x->dtype == MLC_F64 ? MLC_F64 : MLC_F32;
  return MLC_OK;
}

static mlc_status nll_infer(Node *n, Diag *d) {
  NllCtx k;
  mlc_status st = nll_parse(n, &k, d);
  if (st != MLC_OK) return st;
  TensorType o = n->inputs[1]->type;
  o.dtype = k.out;
  if (k.red != RD_NONE) o.ndim = 0;
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* the gathered weight (0 where ignored) and the loss at target index ti */
static void nll_elem(TeCtx *c, NllCtx *k, Expr **ti, Expr **weight, Expr **loss) {
  Arena *A = c->arena;
  int tn = k->t->ndim;
  Expr *t = tir_cast(A, MLC_I64, te_read(c, k->t, tn, ti));
  Expr *tc = tir_bin(A, E_MIN, tir_bin(A, E_MAX, t, tir_idx(A, 0)), tir_idx(A, k->C - 1));
  Expr *w = k->w ? to(c, k->acc, te_read(c, k->w, 1, &tc)) : tir_const(A, k->acc, 1);
  Expr *zero = tir_const(A, k->acc, 0);
  if (k->has_ignore) w = tir_select(A, tir_bin(A, E_EQ, t, tir_idx(A, k->ignore)), zero, w);
  Expr *xi[MLC_MAX_DIMS];
  xi[0] = ti[0];
  xi[1] = tc;
  for (int i = 1; i < tn; i++) xi[i + 1] = ti[i];
  Expr *x = to(c, k->acc, te_read(c, k->x, tn + 1, xi));
  Expr *l = tir_mul(A, tir_sub(A, zero, x), w);
  if (k->has_ignore) l = tir_select(A, tir_bin(A, E_EQ, t, tir_idx(A, k->ignore)), zero, l);
  *weight = w;
  *loss = l;
}

static Expr *nll_none_body(TeCtx *c, Expr **idx, void *user) {
  NllCtx *k = user;
  Expr *w, *l;
  nll_elem(c, k, idx, &w, &l);
  return to(c, k->out, l);
}

static Expr *nll_red_body(TeCtx *c, NllCtx *k, bool weights) {
  int tn = k->t->ndim;
  IterVar *r[MLC_MAX_DIMS];
  Expr *ti[MLC_MAX_DIMS];
  for (int i = 0; i < tn; i++) {
    r[i] = te_reduce_axis(c, "r", k->t->shape[i]);
    ti[i] = tir_varref(c->arena, r[i]->var);
  }
  Expr *w, *l;
  nll_elem(c, k, ti, &w, &l);
  return te_reduce(c, RED_SUM, weights ? w : l, tn, r, NULL, NULL);
}
static Expr *nll_sum_body(TeCtx *c, Expr **idx, void *user) { return nll_red_body(c, user, false); }
static Expr *nll_wsum_body(TeCtx *c, Expr **idx, void *user) { return nll_red_body(c, user, true); }

static Expr *nll_out_body(TeCtx *c, Expr **idx, void *user) {
  NllCtx *k = user;
  Arena *A = c->arena;
  Expr *s = te_read(c, k->sum, 0, NULL);
  if (k->red == RD_MEAN) {
    Expr *den = k->by_weight ? te_read(c, k->wsum, 0, NULL) : tir_const(A, k->acc, (double)k->count);
    s = tir_bin(A, E_DIV, s, den);
  }
  return to(c, k->out, s);
}

static mlc_status nll_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  NllCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = nll_parse(n, k, d);
  if (st != MLC_OK) return st;
  k->x = ins[0];
  k->t = ins[1];
  k->w = n->ninputs > 2 && n->inputs[2] ? ins[2] : NULL;
  if (k->red == RD_NONE) {
    outs[0] = te_compute(c, "nll_loss", "injective", k->out, k->t->ndim, k->t->shape, nll_none_body, k);
    return MLC_OK;
  }
  k->sum = te_compute(c, "nll_loss_sum", "reduce", k->acc, 0, NULL, nll_sum_body, k);
  if (k->red == RD_MEAN && k->by_weight)
    k->wsum = te_compute(c, "nll_weight_sum", "reduce", k->acc, 0, NULL, nll_wsum_body, k);
  outs[0] = te_compute(c, "nll_loss", "injective", k->out, 0, NULL, nll_out_body, k);
  return MLC_OK;
}

const OpDef topi_ops_loss[] = {
    /* name         pattern     min max nout infer      compute */
    {"nn.nll_loss", PAT_OPAQUE, 2, 3, 1, nll_infer, nll_compute},
    {0},
};
