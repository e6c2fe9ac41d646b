/* Graph summary for `mlc load`: input/output/node counts, per-op counts, parameters (constants) and MACs.
 * MACs follow the usual convention (one multiply-accumulate per weight use):
 *   conv (OIHW weight [Cout, Cin/groups, k...]):  numel(out) * (Cin/groups) * prod(kernel) = numel(out) * prod(w[1:])
 *   the packed and depthwise forms the same count from their weight layouts (nn.conv2d_packed: the weight
 *   without its output-channel block, times 4 for its 8-bit form's words; nn.winograd_gemm: its batched GEMM, numel(out) * C)
 *   conv{1,2,3}d_transpose (weight [Cin, Cout/groups, k...]): numel(in) * prod(w[1:]) (each input element meets
 *   Cout/groups * prod(kernel) weights; padding makes the output-side count inexact)
 *   dense / matmul / batch_matmul / dense_packed: numel(out) * K, K the reduced axis of the first input. */
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

static int64_t sat_mul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static int64_t prod_from(const TensorType *t, int first) {
  int64_t p = 1;
  for (int i = first; i < t->ndim; i++) p = sat_mul(p, t->dims[i]);
  return p;
}

static int64_t node_macs(const Node *n) {
  const char *op = n->op ? n->op->name : "";
  if (n->noutputs < 1 || !n->outputs[0] || n->ninputs < 2 || !n->inputs[0] || !n->inputs[1]) return 0;
  const TensorType *out = &n->outputs[0]->type, *x = &n->inputs[0]->type, *w = &n->inputs[1]->type;
  if (!strcmp(op, "nn.conv1d") || !strcmp(op, "nn.conv2d") || !strcmp(op, "nn.conv3d"))
    return w->ndim >= 2 ? sat_mul(tt_numel(out), prod_from(w, 1)) : 0;
  if (!strcmp(op, "nn.depthwise_conv2d")) /* weight [C*M, 1, KH, KW] (nn.conv2d, groups = C) or [C/b, 1, KH, KW, b] */
    return w->ndim == 4 || w->ndim == 5 ? sat_mul(tt_numel(out), w->dims[2] * w->dims[3]) : 0;
  /* weight [OC/ocb, IC, KH, KW, ocb] or [OC/ocb, IC/ib, KH, KW, ib, ocb]; 3-D: [OC/ocb, IC, KD, KH, KW, ocb] */
  if (!strcmp(op, "nn.conv2d_packed") || !strcmp(op, "nn.conv3d_packed")) {
    if (w->ndim < 5 || w->dims[w->ndim - 1] <= 0) return 0;
    int64_t m = sat_mul(tt_numel(out), prod_from(w, 1) / w->dims[w->ndim - 1]);
    return x->dtype == MLC_U8 || x->dtype == MLC_I8 ? sat_mul(m, 4) : m; /* 8-bit: a weight word holds 4 */
  }
  if (!strcmp(op, "nn.winograd_gemm")) /* V[a, a, PP, C] x U[a*a, K/kb, C, kb] -> [a*a, K/kb, PP, kb] */
    return x->ndim == 4 ? sat_mul(tt_numel(out), x->dims[3]) : 0;
  if (!strcmp(op, "nn.conv1d_transpose") || !strcmp(op, "nn.conv2d_transpose") || !strcmp(op, "nn.conv3d_transpose"))
    return w->ndim >= 2 ? sat_mul(tt_numel(x), prod_from(w, 1)) : 0;
  if (!strcmp(op, "nn.dense_packed")) /* weight [N/bn, K, bn]: K is the data's last axis */
    return x->ndim >= 1 ? sat_mul(tt_numel(out), x->dims[x->ndim - 1]) : 0;
  if (!strcmp(op, "nn.dense") || !strcmp(op, "nn.matmul") || !strcmp(op, "nn.batch_matmul")) {
    if (x->ndim < 1) return 0;
    int64_t k = x->dims[x->ndim - 1];
    if (x->ndim >= 2 && ir_attr_int(n, "transpose_a", 0)) k = x->dims[x->ndim - 2];
    return sat_mul(tt_numel(out), k);
  }
  return 0;
}

int64_t ir_node_macs(const Node *n) { return n ? node_macs(n) : 0; }

static int count_cmp(const void *a, const void *b) {
  const GraphOpCount *x = a, *y = b;
  if (x->count != y->count) return y->count - x->count;
  return strcmp(x->op, y->op);
}

void ir_graph_stats(const Graph *g, GraphStats *s) {
  memset(s, 0, sizeof *s);
  s->ninputs = g->inputs.n;
  s->noutputs = g->outputs.n;
  s->nnodes = g->nodes.n;
  s->ops = arena_alloc(g->arena, sizeof(GraphOpCount) * (size_t)(g->nodes.n + 1));
  for (int k = 0; k < g->nodes.n; k++) {
    const Node *n = g->nodes.v[k];
    const char *name = n->op ? n->op->name : "?";
    int j = 0;
    while (j < s->nops && strcmp(s->ops[j].op, name) != 0) j++;
    if (j == s->nops) s->ops[s->nops++] = (GraphOpCount){name, 0};
    s->ops[j].count++;
    s->macs = sat_add(s->macs, node_macs(n));
  }
  qsort(s->ops, (size_t)s->nops, sizeof *s->ops, count_cmp);
  for (int i = 0; i < g->values.n; i++) {
    const Value *v = g->values.v[i];
    if (!v->data) continue;
    s->nconsts++;
    int64_t ne = tt_numel(&v->type), nb = tt_nbytes(&v->type);
    s->params = sat_add(s->params, ne > 0 ? ne : 0);
    s->param_bytes = sat_add(s->param_bytes, nb > 0 ? nb : 0);
  }
}
