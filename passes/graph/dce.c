/* DeadCodeElim: drop every node none of whose outputs reaches a graph output (mark backwards from the
 * outputs, keep marked nodes in their order). */
#include "passes/graph/passes.h"

mlc_status pass_dead_code_elim(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  (void)d;
  bool *live = arena_alloc(g->arena, (size_t)g->values.n + 1);
  for (int i = 0; i < g->outputs.n; i++) {
    live[g->outputs.v[i]->id] = true;
    if (g->outputs.v[i]->dyn_extent) live[g->outputs.v[i]->dyn_extent->id] = true;
  }
  int kept = 0;
  bool *keep = arena_alloc(g->arena, (size_t)g->nodes.n + 1);
  for (int i = g->nodes.n - 1; i >= 0; i--) {
    Node *n = g->nodes.v[i];
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k] && live[n->outputs[k]->id]) keep[i] = true;
    if (!keep[i]) continue;
    for (int k = 0; k < n->ninputs; k++)
      if (n->inputs[k]) live[n->inputs[k]->id] = true;
  }
  for (int i = 0; i < g->nodes.n; i++)
    if (keep[i]) g->nodes.v[kept++] = g->nodes.v[i];
  g->nodes.n = kept;
  return MLC_OK;
}
