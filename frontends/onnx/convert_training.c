/* ONNX converters of the training family (see families.def): the optimizers of the ai.onnx.preview.training
 * domain, one update step of each tensor, as elementwise graph ops (R the learning rate and T the update count,
 * both scalars, may be known only at run time):
 *   Adagrad(R, T, X.., G.., H..; decay_factor, epsilon, norm_coefficient) -> X_new.., H_new..:
 *     r = R / (1 + T * decay_factor), g = norm_coefficient * X + G, H_new = H + g * g,
 *     X_new = X - r * g / (sqrt(H_new) + epsilon);
 *   Momentum(R, T, X.., G.., V..; alpha, beta, mode, norm_coefficient) -> X_new.., V_new..:
 *     g = norm_coefficient * X + G, V_new = alpha * V + (T > 0 ? beta : 1) * g, X_new = X - R * V_new
 *     ('standard') or X - R * (g + alpha * V_new) ('nesterov');
 *   Adam(R, T, X.., G.., V.., H..; alpha, beta, epsilon, norm_coefficient, norm_coefficient_post)
 *     -> X_new.., V_new.., H_new..: g = norm_coefficient * X + G, V_new = alpha * V + (1 - alpha) * g,
 *     H_new = beta * H + (1 - beta) * g * g, r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R,
 *     X_new = (1 - norm_coefficient_post) * (X - r * V_new / (sqrt(H_new) + epsilon));
 *   Gradient(xs..; xs, y) -> d sum(y) / d x for each x of xs: reverse-mode differentiation of the graph imported
 *     so far, see gradient. */
#include <string.h>
#include "frontends/onnx/onnx.h"

typedef struct Step {
  OnnxCtx *cx;
  const OnnxNode *n;
  Diag *d;
  mlc_dtype t; /* the tensors' float type */
} Step;

static Value *bin(Step *s, const char *op, Value *a, Value *b) {
  return a && b ? onnx_binary(s->cx, s->n, op, a, b, s->d) : NULL;
}

static Value *num(Step *s, double v) { return onnx_scalar(s->cx, s->n, "c", s->t, v); }

static Value *unary(Step *s, const char *op, Value *x) { return onnx_apply(s->cx, s->n, op, 1, &x, NULL, 0, s->d); }

static Value *as_float(Step *s, Value *x) {
  if (!x || x->type.dtype == s->t) return x;
  Node *nd = onnx_emit(s->cx, s->n, "cast", 1, &x, 1, s->d);
  if (nd) ir_set_int(onnx_graph(s->cx), nd, "dtype", s->t);
  Value *y = NULL;
  return onnx_finish_one(s->cx, s->n, nd, &y, s->d) ? NULL : y;
}

/* cond ? a : b for the scalar T > 0 */
static Value *if_started(Step *s, Value *tpos, Value *a, Value *b) {
  if (!tpos || !a || !b) return NULL;
  Value *ins[3] = {tpos, a, b}, *y = NULL;
  return onnx_finish_one(s->cx, s->n, onnx_emit(s->cx, s->n, "where", 3, ins, 1, s->d), &y, s->d) ? NULL : y;
}

/* norm_coefficient * X + G */
static Value *regularized(Step *s, Value *x, Value *g) {
  double c = onnx_attr_float(s->n, "norm_coefficient", 0.0);
  return c == 0 ? g : bin(s, "add", bin(s, "multiply", num(s, c), x), g);
}

static mlc_status optimizer(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  bool adam = !strcmp(n->op_type, "Adam"), adagrad = !strcmp(n->op_type, "Adagrad");
  int groups = adam ? 4 : 3, k = (n->ninputs - 2) / groups;
  if (n->ninputs < 2 + groups || (n->ninputs - 2) % groups)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s takes R, T and %d tensors for each optimized input, got %d inputs",
                      n->op_type, groups, n->ninputs);
  mlc_status st = onnx_need_inputs(cx, n, n->ninputs, d);
  if (st) return st;
  Step s = {cx, n, d, n->inputs[2]->type.dtype};
  if (s.t != MLC_F32 && s.t != MLC_F64 && s.t != MLC_F16)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s of %s tensors is not supported", n->op_type,
                      mlc_dtype_name(s.t));
  Value *r = as_float(&s, n->inputs[0]), *t = as_float(&s, n->inputs[1]);
  Value *tpos = bin(&s, "greater", t, num(&s, 0));
  static const char *const required[4] = {"alpha", "beta", "mode", "norm_coefficient"};
  for (int i = 0; i < 4 && !adam && !adagrad; i++)
    if (!onnx_has_attr(n, required[i]))
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Momentum needs the attribute '%s'", required[i]);
  const char *mode = onnx_attr_string(n, "mode", "standard");
  if (!adam && !adagrad && strcmp(mode, "standard") && strcmp(mode, "nesterov"))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Momentum mode must be 'standard' or 'nesterov', got '%s'", mode);
  double alpha = onnx_attr_float(n, "alpha", adam ? 0.9 : 0.0), beta = onnx_attr_float(n, "beta", adam ? 0.999 : 0.0);
  double eps = onnx_attr_float(n, "epsilon", 1e-6);
  if (adagrad) /* r = R / (1 + T * decay_factor) */
    r = bin(&s, "divide", r,
            bin(&s, "add", num(&s, 1), bin(&s, "multiply", t, num(&s, onnx_attr_float(n, "decay_factor", 0.0)))));
  if (adam) { /* r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R */
    Value *bt = bin(&s, "subtract", num(&s, 1), bin(&s, "power", num(&s, beta), t));
    Value *at = bin(&s, "subtract", num(&s, 1), bin(&s, "power", num(&s, alpha), t));
    r = if_started(&s, tpos, bin(&s, "divide", bin(&s, "multiply", r, unary(&s, "sqrt", bt)), at), r);
  }
  for (int i = 0; i < k; i++) {
    Value *x = n->inputs[2 + i], *g = regularized(&s, x, n->inputs[2 + k + i]), *a = n->inputs[2 + 2 * k + i];
    Value *xn = NULL, *an = NULL, *hn = NULL;
    if (adagrad) { /* a: H */
      an = bin(&s, "add", a, bin(&s, "multiply", g, g));
      xn = bin(&s, "subtract", x, bin(&s, "divide", bin(&s, "multiply", r, g),
                                      bin(&s, "add", unary(&s, "sqrt", an), num(&s, eps))));
    } else if (!adam) { /* a: V */
      Value *bb = if_started(&s, tpos, num(&s, beta), num(&s, 1));
      an = bin(&s, "add", bin(&s, "multiply", num(&s, alpha), a), bin(&s, "multiply", bb, g));
      Value *step = strcmp(mode, "nesterov") ? an : bin(&s, "add", g, bin(&s, "multiply", num(&s, alpha), an));
      xn = bin(&s, "subtract", x, bin(&s, "multiply", r, step));
    } else { /* a: V, then H */
      Value *h = n->inputs[2 + 3 * k + i];
      an = bin(&s, "add", bin(&s, "multiply", num(&s, alpha), a), bin(&s, "multiply", num(&s, 1 - alpha), g));
      hn = bin(&s, "add", bin(&s, "multiply", num(&s, beta), h),
               bin(&s, "multiply", num(&s, 1 - beta), bin(&s, "multiply", g, g)));
      xn = bin(&s, "subtract", x, bin(&s, "multiply", r, bin(&s, "divide", an,
                                                            bin(&s, "add", unary(&s, "sqrt", hn), num(&s, eps)))));
      double post = onnx_attr_float(n, "norm_coefficient_post", 0.0);
      if (post != 0) xn = bin(&s, "multiply", num(&s, 1 - post), xn);
    }
    if (!xn || !an || (adam && !hn)) return d->status ? d->status : MLC_ERR_INTERNAL;
    outs[i] = xn;
    if (k + i < n->noutputs) outs[k + i] = an;
    if (adam && 2 * k + i < n->noutputs) outs[2 * k + i] = hn;
  }
  return MLC_OK;
}

/* ---------------------------------------------------------------- Gradient */

/* g summed down to the shape of v (the inverse of broadcasting v to g's shape) */
static Value *unbroadcast(Step *s, Value *g, const Value *v) {
  if (!g) return NULL;
  const TensorType *gt = &g->type, *vt = &v->type;
  int lead = gt->ndim - vt->ndim;
  int64_t axes[MLC_MAX_DIMS];
  int na = 0;
  for (int i = 0; i < gt->ndim; i++)
    if (i < lead || (vt->dims[i - lead] == 1 && gt->dims[i] != 1)) axes[na++] = i;
  if (na) {
    Node *nd = onnx_emit(s->cx, s->n, "sum", 1, &g, 1, s->d);
    if (nd) {
      ir_set_ints(onnx_graph(s->cx), nd, "axis", axes, na);
      ir_set_int(onnx_graph(s->cx), nd, "keepdims", 1);
    }
    if (!nd || onnx_finish_one(s->cx, s->n, nd, &g, s->d)) return NULL;
  }
  if (g->type.ndim == vt->ndim) return g;
  Node *r = onnx_emit(s->cx, s->n, "reshape", 1, &g, 1, s->d);
  if (r) ir_set_ints(onnx_graph(s->cx), r, "newshape", vt->dims, vt->ndim);
  return !r || onnx_finish_one(s->cx, s->n, r, &g, s->d) ? NULL : g;
}

/* a constant of v's type filled with x */
static Value *filled(Step *s, const char *what, const Value *v, double x) {
  int64_t n = tt_numel(&v->type);
  float *buf = arena_alloc(onnx_graph(s->cx)->arena, sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) buf[i] = (float)x;
  TensorType t = v->type;
  t.dtype = MLC_F32;
  Value *c = onnx_const(s->cx, arena_printf(onnx_graph(s->cx)->arena, "%s_%s", s->n->name, what), t, buf);
  return as_float(s, c);
}

/* adds the gradient contribution g to the one of v collected so far */
static bool accumulate(Step *s, Value **grads, const bool *live, const Value *v, Value *g) {
  if (v->id < 0 || v->data || !live[v->id]) return true; /* not computed from an x: no gradient wanted */
  if (!g) return false;
  grads[v->id] = grads[v->id] ? bin(s, "add", grads[v->id], g) : g;
  return grads[v->id] != NULL;
}

/* Gradient (ai.onnx.preview.training 1): the derivatives of sum(y) with respect to the inputs xs, by reverse-mode
 * differentiation of the graph ops that lie between them, newest first, the gradient of y seeded with ones:
 * add, subtract, multiply, divide (with broadcasting: each gradient summed back to its input's shape), negative,
 * copy, exp, tanh, sigmoid, nn.relu. Another op on the way is refused naming it; an x that y does not depend on
 * gets zeros. The ops of the default domain it differentiates keep their own outputs. */
static mlc_status gradient(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const char *yname = onnx_attr_string(n, "y", NULL);
  Value *y = onnx_lookup(cx, yname);
  if (!y || onnx_seq(y) || onnx_is_none(y))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Gradient: attribute y must name a tensor of the graph");
  if (n->noutputs != n->ninputs)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Gradient has %d inputs (xs) but %d outputs", n->ninputs,
                      n->noutputs);
  Step s = {cx, n, d, y->type.dtype};
  if (y->type.dtype != MLC_F32 && y->type.dtype != MLC_F64 && y->type.dtype != MLC_F16)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Gradient: y must be a float tensor, not %s",
                      mlc_dtype_name(y->type.dtype));
  Graph *g = onnx_graph(cx);
  int nv = g->values.n, last = g->nodes.n;
  Value **grads = arena_alloc(g->arena, sizeof(Value *) * (size_t)(nv + 1));
  memset(grads, 0, sizeof(Value *) * (size_t)(nv + 1));
  /* live: the values computed from an x; only the nodes between the xs and y are differentiated */
  bool *live = arena_alloc(g->arena, sizeof(bool) * (size_t)(nv + 1));
  memset(live, 0, sizeof(bool) * (size_t)(nv + 1));
  for (int i = 0; i < n->ninputs; i++)
    if (n->inputs[i] && n->inputs[i]->id >= 0 && n->inputs[i]->id < nv) live[n->inputs[i]->id] = true;
  for (int k = 0; k < last; k++) {
    Node *nd = g->nodes.v[k];
    bool any = false;
    for (int i = 0; i < nd->ninputs; i++) any |= nd->inputs[i] && nd->inputs[i]->id >= 0 && live[nd->inputs[i]->id];
    for (int i = 0; i < nd->noutputs && any; i++)
      if (nd->outputs[i]) live[nd->outputs[i]->id] = true;
  }
  grads[y->id] = filled(&s, "ones", y, 1);
  for (int k = last - 1; k >= 0; k--) {
    Node *nd = g->nodes.v[k];
    Value *go = NULL;
    for (int i = 0; i < nd->noutputs; i++)
      if (nd->outputs[i] && live[nd->outputs[i]->id] && grads[nd->outputs[i]->id])
        go = nd->noutputs == 1 ? grads[nd->outputs[i]->id] : nd->outputs[i];
    if (!go) continue;
    if (nd->noutputs != 1)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Gradient: cannot differentiate through node '%s' (%s)",
                        nd->name, nd->op->name);
    const char *op = nd->op->name;
    Value *a = nd->ninputs > 0 ? nd->inputs[0] : NULL, *b = nd->ninputs > 1 ? nd->inputs[1] : NULL;
    Value *out = nd->outputs[0];
    bool ok = true;
    if (!strcmp(op, "add") || !strcmp(op, "subtract")) {
      ok = accumulate(&s, grads, live, a, unbroadcast(&s, go, a)) &&
           accumulate(&s, grads, live, b, unbroadcast(&s, op[0] == 'a' ? go : unary(&s, "negative", go), b));
    } else if (!strcmp(op, "multiply")) {
      ok = accumulate(&s, grads, live, a, unbroadcast(&s, bin(&s, "multiply", go, b), a)) &&
           accumulate(&s, grads, live, b, unbroadcast(&s, bin(&s, "multiply", go, a), b));
    } else if (!strcmp(op, "divide")) { /* d(a/b) = da / b - a db / b^2 = (da - out db) / b */
      Value *gb = bin(&s, "divide", go, b);
      ok = accumulate(&s, grads, live, a, unbroadcast(&s, gb, a)) &&
           accumulate(&s, grads, live, b, unbroadcast(&s, unary(&s, "negative", bin(&s, "multiply", gb, out)), b));
    } else if (!strcmp(op, "negative")) {
      ok = accumulate(&s, grads, live, a, unary(&s, "negative", go));
    } else if (!strcmp(op, "copy")) {
      ok = accumulate(&s, grads, live, a, go);
    } else if (!strcmp(op, "exp")) {
      ok = accumulate(&s, grads, live, a, bin(&s, "multiply", go, out));
    } else if (!strcmp(op, "tanh")) { /* 1 - out^2 */
      ok = accumulate(&s, grads, live, a, bin(&s, "multiply", go, bin(&s, "subtract", num(&s, 1),
                                                               bin(&s, "multiply", out, out))));
    } else if (!strcmp(op, "sigmoid")) { /* out (1 - out) */
      ok = accumulate(&s, grads, live, a, bin(&s, "multiply", go, bin(&s, "multiply", out,
                                                               bin(&s, "subtract", num(&s, 1), out))));
    } else if (!strcmp(op, "nn.relu")) {
      Value *pos = bin(&s, "greater", a, onnx_scalar(cx, n, "zero", a->type.dtype, 0));
      ok = accumulate(&s, grads, live, a, bin(&s, "multiply", go, as_float(&s, pos)));
    } else {
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Gradient: cannot differentiate through node '%s' (%s)",
                        nd->name, op);
    }
    if (!ok) return d->status ? d->status : MLC_ERR_INTERNAL;
  }
  for (int i = 0; i < n->ninputs; i++) {
    Value *x = n->inputs[i];
    if (!x || onnx_seq(x)) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Gradient: input %d must be a tensor", i);
    Value *gx = x->id >= 0 && x->id < nv ? grads[x->id] : NULL;
    if (!gx) gx = filled(&s, "zeros", x, 0); /* y does not depend on x */
    Node *c = onnx_emit(cx, n, "copy", 1, &gx, 1, d); /* the gradient under the output's own name */
    if (!c || onnx_finish_one(cx, n, c, &outs[i], d)) return d->status ? d->status : MLC_ERR_INTERNAL;
  }
  return MLC_OK;
}

const OnnxConverter onnx_ops_training[] = {
    /* op_type   domain                       converter */
    {"Adagrad", "ai.onnx.preview.training", optimizer},
    {"Momentum", "ai.onnx.preview.training", optimizer},
    {"Adam", "ai.onnx.preview.training", optimizer},
    {"Gradient", "ai.onnx.preview.training", gradient},
    {NULL, NULL, NULL},
};
