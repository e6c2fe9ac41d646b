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
 *     X_new = (1 - norm_coefficient_post) * (X - r * V_new / (sqrt(H_new) + epsilon)). */
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

static Value *unary(Step *s, const char *op, Value *x) {
  if (!x) return NULL;
  Value *y = NULL;
  return onnx_finish_one(s->cx, s->n, onnx_emit(s->cx, s->n, op, 1, &x, 1, s->d), &y, s->d) ? NULL : y;
}

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

const OnnxConverter onnx_ops_training[] = {
    /* op_type   domain                       converter */
    {"Adagrad", "ai.onnx.preview.training", optimizer},
    {"Momentum", "ai.onnx.preview.training", optimizer},
    {"Adam", "ai.onnx.preview.training", optimizer},
    {NULL, NULL, NULL},
};
