/* SimplifyExpr: algebraic rewrites of single nodes with a constant operand (after TVM's relay SimplifyExpr).
 * power(x, c) with a constant scalar c == 2 becomes multiply(x, x) (both exact: one rounding). Torch exports
 * LayerNorm's variance as Pow(x - mean, 2): a multiply vectorizes, a pow is a libm call per element.
 * An nn.pad that pads nothing (every pad 0, any mode) is bypassed: its readers read its input (unless its
 * output is a graph output). Torch exports DenseNet's transition AvgPool with such a Pad before it: a kernel
 * copying the tensor, and an op the NCHWc layout cannot pass through.
 * A constant-zero nn.pad of the spatial axes whose only readers are convolutions (as their data) becomes their
 * padding: TensorFlow and Keras export "SAME" strided convs and ZeroPadding2D as an explicit Pad before a
 * "VALID" conv, one more pass over the activation, and a packed conv pads its input itself. An average pool
 * with ceil_mode 0 reading it takes the pad too, counting the padding (count_include_pad 1: its windows over
 * the padded tensor were whole), where its own padding is 0 or counted already: torch exports avg_pool2d's
 * count_include_pad=True so (Inception-v3's pool branches), and the pad kept each block's concat NCHW. */
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

/* an average pool that can take a zero pad of its input into its padding: ceil_mode 0, and its own padding
 * zero or counted (the padded windows are whole, so the divisor is the window's size either way) */
static bool avg_pool_takes_pad(const Node *n) {
  if (ir_attr_int(n, "ceil_mode", 0)) return false;
  if (ir_attr_int(n, "count_include_pad", 0)) return true;
  int64_t pads[2 * 3] = {0};
  int cnt = ir_attr_ints(n, "padding", pads, 2 * 3);
  for (int k = 0; k < cnt; k++)
    if (pads[k]) return false;
  return true;
}

/* a convolution reading v as its data, or an average pool reading v that can take its pad, with v's spatial
 * rank */
static bool takes_pad(const Node *n, const Value *v) {
  const char *op = n->op->name;
  int nsp = !strcmp(op, "nn.conv1d") ? 1 : !strcmp(op, "nn.conv2d") ? 2 : !strcmp(op, "nn.conv3d") ? 3 : 0;
  if (!nsp && !strncmp(op, "nn.avg_pool", 11) && avg_pool_takes_pad(n))
    nsp = !strcmp(op, "nn.avg_pool1d") ? 1 : !strcmp(op, "nn.avg_pool2d") ? 2 : !strcmp(op, "nn.avg_pool3d") ? 3 : 0;
  if (!nsp || n->ninputs < 1 || n->inputs[0] != v || v->type.ndim != nsp + 2) return false;
  for (int k = 1; k < n->ninputs; k++)
    if (n->inputs[k] == v) return false;
  return true;
}

/* nn.pad n: zeros (constant mode, value 0) added before and after the spatial axes only, read by convolutions
 * (as their data) and average pools that can take it only: each of them takes the pad into its padding and
 * reads n's input */
static bool pad_into_convs(Graph *g, Node *n) {
  if (strcmp(n->op->name, "nn.pad") || n->noutputs != 1 || !n->inputs[0] || pass_is_graph_output(g, n->outputs[0]) ||
      strcmp(ir_attr_string(n, "pad_mode", "constant"), "constant") || ir_attr_float(n, "pad_value", 0) != 0)
    return false;
  double value;
  if (n->ninputs > 1 && n->inputs[1] && (!const_scalar(n->inputs[1], &value) || value != 0)) return false;
  Value *x = n->inputs[0], *y = n->outputs[0];
  int r = x->type.ndim;
  int64_t pw[2 * MLC_MAX_DIMS];
  if (r < 3 || r > 5 || ir_attr_ints(n, "pad_width", pw, 2 * MLC_MAX_DIMS) != 2 * r || pw[0] || pw[1] || pw[r] ||
      pw[r + 1])
    return false;
  for (int k = 0; k < 2 * r; k++)
    if (pw[k] < 0) return false;
  int readers = 0;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *m = g->nodes.v[i];
    for (int k = 0; k < m->ninputs; k++)
      if (m->inputs[k] == y) {
        if (!takes_pad(m, y)) return false;
        readers++;
        break;
      }
  }
  if (!readers) return false;
  int nsp = r - 2;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *m = g->nodes.v[i];
    if (m->ninputs < 1 || m->inputs[0] != y) continue;
    int64_t pads[2 * 3] = {0};
    int cnt = ir_attr_ints(m, "padding", pads, 2 * nsp);
    if (cnt != 0 && cnt != 2 * nsp) continue; /* (its infer rejected that already) */
    for (int s = 0; s < nsp; s++) {
      pads[s] += pw[2 + s];
      pads[nsp + s] += pw[r + 2 + s];
    }
    ir_set_ints(g, m, "padding", pads, 2 * nsp);
    if (!strncmp(m->op->name, "nn.avg_pool", 11)) ir_set_int(g, m, "count_include_pad", 1);
    m->inputs[0] = x;
  }
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
    if (pad_into_convs(g, n)) continue;
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
