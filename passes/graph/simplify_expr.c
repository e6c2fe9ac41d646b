/* SimplifyExpr: algebraic rewrites of single nodes with a constant operand (after TVM's relay SimplifyExpr).
 * power(x, c) with a constant scalar c == 2 becomes multiply(x, x) (both exact: one rounding). Torch exports
 * LayerNorm's variance as Pow(x - mean, 2): a multiply vectorizes, a pow is a libm call per element. */
#include <string.h>
#include "passes/graph/passes.h"

/* the value of a constant float scalar (any shape with one element); false otherwise */
static bool const_scalar(const Value *v, double *out) {
  if (!v || !v->data || tt_numel(&v->type) != 1) return false;
  switch (v->type.dtype) {
  case MLC_F32: *out = *(const float *)v->data; return true;
  case MLC_F64: *out = *(const double *)v->data; return true;
  default: return false;
  }
}

mlc_status pass_simplify_expr(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  const OpDef *mul = ir_op_find("multiply");
  if (!mul) return MLC_OK;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    double c;
    if (strcmp(n->op->name, "power") || n->ninputs != 2 || !n->inputs[0] || !const_scalar(n->inputs[1], &c))
      continue;
    const TensorType *x = &n->inputs[0]->type, *o = &n->outputs[0]->type;
    /* only when the exponent does not broadcast the result to a larger shape or another dtype */
    if (c != 2.0 || !tt_equal(x, o)) continue;
    n->op = mul;
    n->inputs[1] = n->inputs[0];
  }
  (void)d;
  return MLC_OK;
}
