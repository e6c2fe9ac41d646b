/* SimplifyExpr: algebraic rewrites of single nodes with a constant operand (after TVM's relay SimplifyExpr).
 * power(x, c) with a constant scalar c == 2 becomes multiply(x, x) (both exact: one rounding). Torch exports
 * LayerNorm's variance as Pow(x - mean, 2): a multiply vectorizes, a pow is a libm call per element.
 * An nn.pad that pads nothing (every pad 0, any mode) is bypassed: its readers read its input (unless its
 * output is a graph output). Torch exports DenseNet's transition AvgPool with such a Pad before it: a kernel
 * copying the tensor, and an op the NCHWc layout cannot pass through. */
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

/* nn.pad whose pad_width is all zeros and whose output is its input's type */
static bool pads_nothing(const Graph *g, const Node *n) {
  if (strcmp(n->op->name, "nn.pad") || n->ninputs < 1 || !n->inputs[0] || n->noutputs != 1 ||
      pass_is_graph_output(g, n->outputs[0]) || !tt_equal(&n->inputs[0]->type, &n->outputs[0]->type))
    return false;
  int64_t pw[2 * MLC_MAX_DIMS];
  int cnt = ir_attr_ints(n, "pad_width", pw, 2 * MLC_MAX_DIMS);
  if (cnt <= 0) return false;
  for (int k = 0; k < cnt; k++)
    if (pw[k]) return false;
  return true;
}

mlc_status pass_simplify_expr(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  int kept = 0;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (pads_nothing(g, n)) {
      pass_replace_uses(g, n->outputs[0], n->inputs[0]);
      continue;
    }
    g->nodes.v[kept++] = n;
  }
  g->nodes.n = kept;
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
