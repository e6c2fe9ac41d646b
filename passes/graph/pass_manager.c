/* The pass manager: the graph passes in the order they run, each with the lowest opt level that enables it.
 * `--disable-pass NAME` turns one off; `--dump-ir DIR` writes the graph after each pass that ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "passes/graph/passes.h"

static const GraphPass passes[] = {
    /* name                     min opt level  function */
    {"SimplifyInference",       0, pass_simplify_inference},
    {"HoistRnnProjection",      1, pass_hoist_rnn_projection}, /* RNN input products: one GEMM over all steps */
    {"LowerEinsum",             1, pass_lower_einsum}, /* einsum products -> nn.batch_matmul */
    {"EliminateCommonSubexpr",  2, pass_eliminate_common_subexpr},
    {"LowerQDQ",                2, pass_lower_qdq}, /* dequantize -> conv/matmul: integer ops (before FoldConstant) */
    {"FoldConstant",            2, pass_fold_constant},
    {"SimplifyExpr",            1, pass_simplify_expr}, /* pow(x, 2) -> x * x */
    {"LayerNormFusion",         1, pass_layer_norm_fusion}, /* decomposed layer norm -> nn.layer_norm */
    {"FoldScaleAxis",           3, pass_fold_scale_axis},
    {"FoldConstant",            3, pass_fold_constant}, /* the weights FoldScaleAxis scaled */
    {"LowerConv",               2, pass_lower_conv}, /* conv1d, transposed convs -> nn.conv2d */
    {"AlterOpLayout",           2, pass_alter_op_layout},
    {"ConvertLayoutNCHWc",      2, pass_convert_layout_nchwc}, /* activations NCHWc between packed convs */
    {"FoldConstant",            2, pass_fold_constant}, /* packs the weights AlterOpLayout blocked */
    {"DeadCodeElim",            0, pass_dead_code_elim},
};

int pass_count(void) { return (int)countof(passes); }
const GraphPass *pass_at(int i) { return i >= 0 && i < (int)countof(passes) ? &passes[i] : NULL; }

const GraphPass *pass_find(const char *name) {
  for (size_t i = 0; i < countof(passes); i++)
    if (!strcmp(passes[i].name, name)) return &passes[i];
  return NULL;
}

bool pass_enabled(const PassOptions *opt, const char *name) {
  const GraphPass *p = pass_find(name);
  if (!p || opt->opt_level < p->min_opt_level) return false;
  for (int k = 0; k < opt->ndisabled; k++)
    if (!strcmp(opt->disabled[k], name)) return false;
  return true;
}

mlc_status pass_run_all(Graph *g, const PassOptions *opt, void (*after)(void *, const char *, Graph *), void *user,
                        Diag *d) {
  for (size_t i = 0; i < countof(passes); i++) {
    const GraphPass *p = &passes[i];
    if (!pass_enabled(opt, p->name)) continue;
    if (p->run(g, opt, d) != MLC_OK) return d->status;
    if (ir_verify(g, d) != MLC_OK) return d->status;
    if (after) after(user, p->name, g);
  }
  return MLC_OK;
}

/* ---- --pass-config ---- */

bool pass_config_known(const char *key) {
#define X(k, v) if (!strcmp(key, k)) return true;
  PASS_CONFIG_KEYS(X)
#undef X
  return false;
}

int64_t pass_config_int(const PassOptions *opt, const char *key) {
  size_t n = strlen(key);
  for (int i = opt->nconfig - 1; i >= 0; i--) /* the last setting wins */
    if (!strncmp(opt->config[i], key, n) && opt->config[i][n] == '=') return strtoll(opt->config[i] + n + 1, NULL, 0);
#define X(k, v) if (!strcmp(key, k)) return (v);
  PASS_CONFIG_KEYS(X)
#undef X
  return 0;
}

/* ---- rewriting helpers shared by the passes ---- */

void pass_place_new_nodes(Graph *g, int n0, const int *mark) {
  int total = g->nodes.n, k = 0;
  Node **order = arena_alloc(g->arena, (size_t)(total ? total : 1) * sizeof(Node *));
  for (int i = 0; i < n0; i++) {
    for (int j = mark[i]; j < mark[i + 1]; j++) order[k++] = g->nodes.v[j];
    order[k++] = g->nodes.v[i];
  }
  for (int j = mark[n0]; j < total; j++) order[k++] = g->nodes.v[j];
  memcpy(g->nodes.v, order, (size_t)total * sizeof(Node *));
}

mlc_status pass_rewrite_outputs(Graph *g, const PassOptions *opt,
                                Value *(*rewrite)(Graph *g, Node *n, const PassOptions *opt, Diag *d), Diag *d) {
  int n0 = g->nodes.n;
  int *mark = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  for (int i = 0; i < n0; i++) {
    mark[i] = g->nodes.n;
    Node *n = g->nodes.v[i];
    Value *old = n->outputs[0], *y = rewrite(g, n, opt, d);
    if (!y) {
      if (d->status) return d->status; /* a new node failed its type relation: a bug there, d says which */
      continue;
    }
    y->name = old->name; /* a graph output keeps its name */
    pass_replace_uses(g, old, y);
    for (int k = 0; k < g->outputs.n; k++)
      if (g->outputs.v[k] == old) g->outputs.v[k] = y;
  }
  mark[n0] = g->nodes.n;
  if (g->nodes.n == n0) return MLC_OK;
  pass_place_new_nodes(g, n0, mark);
  return pass_dead_code_elim(g, opt, d); /* the rewritten nodes, and any new node left unused */
}

void pass_replace_uses(Graph *g, Value *old, Value *new_value) {
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    for (int k = 0; k < n->ninputs; k++)
      if (n->inputs[k] == old) n->inputs[k] = new_value;
  }
}

bool pass_is_graph_output(const Graph *g, const Value *v) {
  for (int i = 0; i < g->outputs.n; i++)
    if (g->outputs.v[i] == v) return true;
  return false;
}
