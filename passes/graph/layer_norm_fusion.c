/* LayerNormFusion: the layer norm that exporters write out op by op (torch.onnx at opset < 17) becomes one
 * nn.layer_norm node, whose compute (src/topi/norm.c) walks each row in vectors for the mean and the variance
 * and applies scale and bias in the same kernel; decomposed, it is two reduce kernels and an elementwise one
 * with the row statistics going through memory in between.
 *
 * The pattern, over a float32/float64 x whose last axis is normalised:
 *   m = mean(x, axis=[last], keepdims=1); d = subtract(x, m); q = multiply(d, d) or power(d, 2);
 *   v = mean(q, axis=[last], keepdims=1); e = add(v, eps) (either order, eps a constant scalar);
 *   s = sqrt(e); n = divide(d, s); then optionally multiply by a scale and add a bias (either order of the
 *   operands), where neither changes n's type (the scale and bias broadcast onto x's shape).
 * It becomes nn.layer_norm(x, scale or ones, bias) with axis = last, epsilon = eps: the same formula (the
 * two-pass variance around the mean, population count), so only the order of the float additions changes.
 * Scale and bias are taken only when the value before them has no other reader (otherwise the unscaled value
 * would still be computed for that reader); the matched nodes are left to DeadCodeElim. */
#include <string.h>
#include "passes/graph/passes.h"

static bool is_op(const Node *n, const char *name) { return n && !strcmp(n->op->name, name); }

static Node *producer(const Value *v) { return v ? v->producer : NULL; }

/* the value of a constant float scalar */
static bool const_scalar(const Value *v, double *out) {
  if (!v || !v->data || tt_numel(&v->type) != 1) return false;
  if (v->type.dtype == MLC_F32) *out = *(const float *)v->data;
  else if (v->type.dtype == MLC_F64) *out = *(const double *)v->data;
  else return false;
  return true;
}

/* mean over the last axis of x with keepdims */
static bool is_row_mean(const Node *n, const Value *x) {
  if (!is_op(n, "mean") || n->ninputs != 1 || n->inputs[0] != x) return false;
  int64_t ax[MLC_MAX_DIMS + 1];
  int na = ir_attr_ints(n, "axis", ax, MLC_MAX_DIMS + 1);
  return na == 1 && ax[0] == x->type.ndim - 1 && ir_attr_int(n, "keepdims", 1) != 0;
}

static int count_uses(const Graph *g, const Value *v) {
  int u = 0;
  for (int i = 0; i < g->nodes.n; i++)
    for (int k = 0; k < g->nodes.v[i]->ninputs; k++) u += g->nodes.v[i]->inputs[k] == v;
  return u + (pass_is_graph_output(g, v) ? 1 : 0);
}

/* the only node reading v, or NULL when v has several readers or is a graph output */
static Node *sole_reader(const Graph *g, const Value *v) {
  if (count_uses(g, v) != 1) return NULL;
  for (int i = 0; i < g->nodes.n; i++)
    for (int k = 0; k < g->nodes.v[i]->ninputs; k++)
      if (g->nodes.v[i]->inputs[k] == v) return g->nodes.v[i];
  return NULL;
}

/* n = op(v, other) or op(other, v) with a result of v's type: returns other */
static Value *other_operand(const Node *n, const char *op, const Value *v) {
  if (!is_op(n, op) || n->ninputs != 2 || !tt_equal(&n->outputs[0]->type, &v->type)) return NULL;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return NULL;
}

typedef struct LayerNormMatch {
  Value *x, *scale, *bias;
  Node *last; /* the node whose output the layer norm replaces */
  double eps;
} LayerNormMatch;

/* matches the pattern ending in the divide node n (the normalised value) */
static bool match(const Graph *g, Node *div, LayerNormMatch *m) {
  if (!is_op(div, "divide") || div->ninputs != 2) return false;
  Value *dv = div->inputs[0];
  Node *sub = producer(dv), *sq = producer(div->inputs[1]);
  if (!is_op(sub, "subtract") || sub->ninputs != 2 || !is_op(sq, "sqrt")) return false;
  Value *x = sub->inputs[0];
  if (!x || (x->type.dtype != MLC_F32 && x->type.dtype != MLC_F64) || x->type.ndim < 1) return false;
  if (!tt_equal(&dv->type, &x->type) || !tt_equal(&div->outputs[0]->type, &x->type)) return false;
  if (!is_row_mean(producer(sub->inputs[1]), x)) return false;
  Node *add = producer(sq->inputs[0]);
  if (!is_op(add, "add") || add->ninputs != 2) return false;
  double eps;
  Value *var;
  if (const_scalar(add->inputs[1], &eps)) var = add->inputs[0];
  else if (const_scalar(add->inputs[0], &eps)) var = add->inputs[1];
  else return false;
  Node *vm = producer(var);
  if (!vm || !is_row_mean(vm, vm->inputs[0])) return false;
  Node *q = producer(vm->inputs[0]);
  double two;
  bool square = (is_op(q, "multiply") && q->ninputs == 2 && q->inputs[0] == dv && q->inputs[1] == dv) ||
                (is_op(q, "power") && q->ninputs == 2 && q->inputs[0] == dv && const_scalar(q->inputs[1], &two) &&
                 two == 2.0);
  if (!square || !tt_equal(&q->outputs[0]->type, &x->type)) return false;
  memset(m, 0, sizeof *m);
  m->x = x;
  m->eps = eps;
  m->last = div;
  Node *r = sole_reader(g, div->outputs[0]);
  Value *p = r ? other_operand(r, "multiply", div->outputs[0]) : NULL;
  if (p && p->type.dtype == x->type.dtype) {
    m->scale = p;
    m->last = r;
    r = sole_reader(g, r->outputs[0]);
  }
  p = r ? other_operand(r, "add", m->last->outputs[0]) : NULL;
  if (p && p->type.dtype == x->type.dtype) {
    m->bias = p;
    m->last = r;
  }
  return true;
}

/* a constant of ones of x's last dim, for a layer norm without a scale */
static Value *ones(Graph *g, const Value *x) {
  int64_t h = x->type.dims[x->type.ndim - 1];
  TensorType t = {.dtype = x->type.dtype, .ndim = 1, .dims = {h}};
  size_t es = (size_t)mlc_dtype_size(t.dtype);
  char *data = arena_alloc(g->arena, es * (size_t)(h > 0 ? h : 1));
  for (int64_t i = 0; i < h; i++) {
    if (t.dtype == MLC_F32) ((float *)data)[i] = 1.0f;
    else ((double *)data)[i] = 1.0;
  }
  return ir_const_new(g, "layer_norm_ones", t, data);
}

mlc_status pass_layer_norm_fusion(Graph *g, const PassOptions *opt, Diag *d) {
  const OpDef *ln = ir_op_find("nn.layer_norm");
  if (!ln) return MLC_OK;
  bool changed = false;
  for (int i = 0; i < g->nodes.n; i++) {
    LayerNormMatch m;
    if (!match(g, g->nodes.v[i], &m)) continue;
    Value *in[3] = {m.x, m.scale ? m.scale : ones(g, m.x), m.bias};
    Node *last = m.last;
    Node *n = ir_node_new(g, ln, arena_printf(g->arena, "%s_layer_norm", last->name ? last->name : "ln"),
                          last->op_type, last->opset, in, m.bias ? 3 : 2, 1);
    ir_set_int(g, n, "axis", m.x->type.ndim - 1);
    ir_set_float(g, n, "epsilon", m.eps);
    if (ir_infer_node(g, n, d) != MLC_OK) return d->status;
    /* ir_node_new appended n: move it to just after the last matched node, before every reader */
    int pos = 0;
    while (g->nodes.v[pos] != last) pos++;
    g->nodes.n--;
    memmove(&g->nodes.v[pos + 2], &g->nodes.v[pos + 1], sizeof(Node *) * (size_t)(g->nodes.n - pos - 1));
    g->nodes.v[pos + 1] = n;
    g->nodes.n++;
    Value *old = last->outputs[0];
    n->outputs[0]->name = old->name; /* a graph output keeps its name */
    pass_replace_uses(g, old, n->outputs[0]);
    for (int k = 0; k < g->outputs.n; k++)
      if (g->outputs.v[k] == old) g->outputs.v[k] = n->outputs[0];
    changed = true;
  }
  return changed ? pass_dead_code_elim(g, opt, d) : MLC_OK;
}
