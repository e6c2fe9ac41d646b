/* EliminateCommonSubexpr: two nodes applying the same op to the same inputs with equal attributes compute the
 * same values; uses of the later one's outputs are redirected to the earlier one's (unless an output is a
 * graph output, whose name must stay). Quadratic in the worst case over nodes with the same first input,
 * which is small in practice. */
#include <string.h>
#include "passes/graph/passes.h"

static bool attr_equal(const Attr *a, const Attr *b) {
  if (strcmp(a->name, b->name) || a->kind != b->kind) return false;
  switch (a->kind) {
  case ATTR_INT: return a->i == b->i;
  case ATTR_FLOAT: return a->f == b->f || (a->f != a->f && b->f != b->f);
  case ATTR_STRING: return !strcmp(a->s ? a->s : "", b->s ? b->s : "");
  case ATTR_INTS: return a->n == b->n && (!a->n || !memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n));
  case ATTR_FLOATS: return a->n == b->n && (!a->n || !memcmp(a->floats, b->floats, sizeof(double) * (size_t)a->n));
  case ATTR_STRINGS:
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
      if (strcmp(a->strs[i], b->strs[i])) return false;
    return true;
  case ATTR_TENSOR: return a->tensor == b->tensor;
  case ATTR_GRAPH: return false;
  }
  return false;
}

static bool same_node(const Node *a, const Node *b) {
  if (a->op != b->op || a->ninputs != b->ninputs || a->noutputs != b->noutputs || a->nattrs != b->nattrs) return false;
  for (int k = 0; k < a->ninputs; k++)
    if (a->inputs[k] != b->inputs[k]) return false;
  for (int i = 0; i < a->nattrs; i++) {
    const Attr *m = ir_attr(b, a->attrs[i].name);
    if (!m || !attr_equal(&a->attrs[i], m)) return false;
  }
  return true;
}

mlc_status pass_eliminate_common_subexpr(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  (void)d;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (n->op->pattern == PAT_OPAQUE && n->noutputs != 1) continue;
    bool pinned = false;
    for (int k = 0; k < n->noutputs; k++) pinned |= n->outputs[k] && pass_is_graph_output(g, n->outputs[k]);
    if (pinned) continue;
    for (int j = 0; j < i; j++) {
      Node *m = g->nodes.v[j];
      if (!same_node(m, n)) continue;
      for (int k = 0; k < n->noutputs; k++)
        if (n->outputs[k] && m->outputs[k]) pass_replace_uses(g, n->outputs[k], m->outputs[k]);
      break;
    }
  }
  return MLC_OK;
}
