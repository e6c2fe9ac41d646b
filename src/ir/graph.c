/* Graph construction: values, constants, nodes and their attributes, all allocated in the graph's arena.
 * Attributes are a small array per node searched linearly (nodes have a handful); setting an attribute that
 * exists replaces it in place, so the printed order stays the order of first setting. */
#include <string.h>
#include "ir/ir.h"

Graph *ir_graph_new(Arena *a, const char *file) {
  Graph *g = arena_alloc(a, sizeof *g);
  g->arena = a;
  g->file = arena_strdup(a, file ? file : "<graph>");
  g->name = "main";
  return g;
}

Value *ir_value_new(Graph *g, const char *name, TensorType type) {
  Value *v = arena_alloc(g->arena, sizeof *v);
  v->id = g->values.n;
  v->name = name ? arena_strdup(g->arena, name) : NULL;
  v->type = type;
  vec_push(g->arena, &g->values, v);
  return v;
}

Value *ir_const_new(Graph *g, const char *name, TensorType type, const void *data) {
  Value *v = ir_value_new(g, name, type);
  int64_t nb = tt_nbytes(&type);
  if (nb < 0) nb = 0;
  /* always non-NULL, even for an empty tensor, since data != NULL is what marks a constant */
  v->data = arena_alloc(g->arena, nb > 0 ? (size_t)nb : 1);
  if (data && nb > 0) memcpy(v->data, data, (size_t)nb);
  return v;
}

Node *ir_node_new(Graph *g, const OpDef *op, const char *name, const char *op_type, int opset, Value **inputs,
                  int ninputs, int nout) {
  Arena *a = g->arena;
  Node *n = arena_alloc(a, sizeof *n);
  n->id = g->nodes.n;
  n->op = op;
  n->name = arena_strdup(a, name ? name : (op ? op->name : "node"));
  n->op_type = arena_strdup(a, op_type ? op_type : (op ? op->name : ""));
  n->opset = opset;
  n->ninputs = ninputs;
  if (ninputs > 0) {
    n->inputs = arena_alloc(a, (size_t)ninputs * sizeof(Value *));
    if (inputs) memcpy(n->inputs, inputs, (size_t)ninputs * sizeof(Value *));
  }
  n->noutputs = nout > 0 ? nout : 0;
  if (n->noutputs) n->outputs = arena_alloc(a, (size_t)n->noutputs * sizeof(Value *));
  for (int i = 0; i < n->noutputs; i++) {
    const char *vn = n->noutputs == 1 ? n->name : arena_printf(a, "%s:%d", n->name, i);
    Value *v = ir_value_new(g, vn, (TensorType){0});
    v->producer = n;
    v->producer_out = i;
    n->outputs[i] = v;
  }
  vec_push(a, &g->nodes, n);
  return n;
}

/* ---- attributes ---- */

static Attr *attr_slot(Graph *g, Node *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) {
      memset(&n->attrs[i], 0, sizeof n->attrs[i]);
      n->attrs[i].name = arena_strdup(g->arena, name);
      return &n->attrs[i];
    }
  Attr *na = arena_alloc(g->arena, (size_t)(n->nattrs + 1) * sizeof(Attr));
  if (n->nattrs) memcpy(na, n->attrs, (size_t)n->nattrs * sizeof(Attr));
  n->attrs = na;
  Attr *at = &n->attrs[n->nattrs++];
  at->name = arena_strdup(g->arena, name);
  return at;
}

void ir_set_int(Graph *g, Node *n, const char *name, int64_t v) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_INT;
  at->i = v;
}

void ir_set_float(Graph *g, Node *n, const char *name, double v) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_FLOAT;
  at->f = v;
}

void ir_set_string(Graph *g, Node *n, const char *name, const char *v) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_STRING;
  at->s = arena_strdup(g->arena, v ? v : "");
}

void ir_set_ints(Graph *g, Node *n, const char *name, const int64_t *v, int count) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_INTS;
  at->n = count > 0 ? count : 0;
  at->ints = arena_alloc(g->arena, (size_t)(at->n + 1) * sizeof(int64_t));
  if (at->n && v) memcpy(at->ints, v, (size_t)at->n * sizeof(int64_t));
}

void ir_set_floats(Graph *g, Node *n, const char *name, const double *v, int count) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_FLOATS;
  at->n = count > 0 ? count : 0;
  at->floats = arena_alloc(g->arena, (size_t)(at->n + 1) * sizeof(double));
  if (at->n && v) memcpy(at->floats, v, (size_t)at->n * sizeof(double));
}

void ir_set_strings(Graph *g, Node *n, const char *name, const char *const *v, int count) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_STRINGS;
  at->n = count > 0 ? count : 0;
  at->strs = arena_alloc(g->arena, (size_t)(at->n + 1) * sizeof(char *));
  for (int i = 0; i < at->n; i++) at->strs[i] = arena_strdup(g->arena, v[i] ? v[i] : "");
}

void ir_set_tensor(Graph *g, Node *n, const char *name, Value *v) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_TENSOR;
  at->tensor = v;
}

void ir_set_graph(Graph *g, Node *n, const char *name, Graph *sub) {
  Attr *at = attr_slot(g, n, name);
  at->kind = ATTR_GRAPH;
  at->graph = sub;
}

const Attr *ir_attr(const Node *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

int64_t ir_attr_int(const Node *n, const char *name, int64_t dflt) {
  const Attr *at = ir_attr(n, name);
  if (!at) return dflt;
  if (at->kind == ATTR_INT) return at->i;
  if (at->kind == ATTR_FLOAT) return (int64_t)at->f;
  if (at->kind == ATTR_INTS && at->n == 1) return at->ints[0];
  return dflt;
}

double ir_attr_float(const Node *n, const char *name, double dflt) {
  const Attr *at = ir_attr(n, name);
  if (!at) return dflt;
  if (at->kind == ATTR_FLOAT) return at->f;
  if (at->kind == ATTR_INT) return (double)at->i;
  if (at->kind == ATTR_FLOATS && at->n == 1) return at->floats[0];
  return dflt;
}

const char *ir_attr_string(const Node *n, const char *name, const char *dflt) {
  const Attr *at = ir_attr(n, name);
  return at && at->kind == ATTR_STRING ? at->s : dflt;
}

int ir_attr_ints(const Node *n, const char *name, int64_t *out, int max) {
  const Attr *at = ir_attr(n, name);
  if (!at) return 0;
  if (at->kind == ATTR_INT) {
    if (max > 0 && out) out[0] = at->i;
    return 1;
  }
  if (at->kind != ATTR_INTS) return 0;
  for (int i = 0; i < at->n && i < max && out; i++) out[i] = at->ints[i];
  return at->n;
}
