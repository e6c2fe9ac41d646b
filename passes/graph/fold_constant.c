/* FoldConstant: evaluate every node whose inputs are all constants, by compiling those nodes with mlc's own
 * pipeline (opt level 1, so this pass does not recurse) and running them on the JIT, then turning the values
 * they feed to the rest of the graph into constants. One compilation for the whole constant part of the
 * graph. Outputs larger than a limit (64 MiB) are left to run at inference time: folding them would grow the
 * package more than it saves. */
#include <stdlib.h>
#include <string.h>
#include "driver/driver.h"

#define FOLD_MAX_BYTES (64ll << 20)

mlc_status pass_fold_constant(Graph *g, const PassOptions *opt, Diag *d) {
  Arena *a = g->arena;
  int nv = g->values.n;
  bool *is_const = arena_alloc(a, (size_t)nv + 1);
  bool *foldable = arena_alloc(a, (size_t)g->nodes.n + 1);
  bool *frontier = arena_alloc(a, (size_t)nv + 1);
  for (int i = 0; i < nv; i++) is_const[i] = g->values.v[i]->data != NULL;
  int nfold = 0;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    bool ok = n->op->compute != NULL && n->noutputs > 0;
    for (int k = 0; k < n->ninputs && ok; k++) ok = !n->inputs[k] || is_const[n->inputs[k]->id];
    for (int k = 0; k < n->noutputs && ok; k++) ok = !n->outputs[k] || tt_nbytes(&n->outputs[k]->type) <= FOLD_MAX_BYTES;
    if (!ok) continue;
    foldable[i] = true;
    nfold++;
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k]) is_const[n->outputs[k]->id] = true;
  }
  if (!nfold) return MLC_OK;
  /* the folded values the rest of the graph needs */
  int nfront = 0;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (foldable[i]) continue;
    for (int k = 0; k < n->ninputs; k++) {
      Value *v = n->inputs[k];
      if (v && v->producer && is_const[v->id] && !frontier[v->id]) frontier[v->id] = true, nfront++;
    }
  }
  for (int i = 0; i < g->outputs.n; i++) {
    Value *v = g->outputs.v[i];
    if (v->producer && is_const[v->id] && !frontier[v->id]) frontier[v->id] = true, nfront++;
  }
  if (nfront) {
    /* the constant part as a graph of its own; constants share the data of the outer graph */
    Arena *sa = arena_new();
    Graph *sub = ir_graph_new(sa, g->file);
    Value **map = arena_alloc(sa, sizeof(Value *) * (size_t)(nv + 1));
    for (int i = 0; i < g->nodes.n; i++) {
      if (!foldable[i]) continue;
      Node *n = g->nodes.v[i];
      Value **ins = arena_alloc(sa, sizeof(Value *) * (size_t)(n->ninputs + 1));
      for (int k = 0; k < n->ninputs; k++) {
        Value *v = n->inputs[k];
        if (!v) continue;
        if (!map[v->id]) {
          map[v->id] = ir_value_new(sub, v->name, v->type);
          map[v->id]->data = v->data;
        }
        ins[k] = map[v->id];
      }
      Node *m = ir_node_new(sub, n->op, n->name, n->op_type, n->opset, ins, n->ninputs, n->noutputs);
      m->attrs = n->attrs;
      m->nattrs = n->nattrs;
      for (int k = 0; k < n->noutputs; k++) {
        if (!n->outputs[k]) continue;
        m->outputs[k]->type = n->outputs[k]->type;
        m->outputs[k]->name = n->outputs[k]->name;
        map[n->outputs[k]->id] = m->outputs[k];
        if (frontier[n->outputs[k]->id]) vec_push(sa, &sub->outputs, m->outputs[k]);
      }
    }
    CompileOptions co = {.target = opt->target, .opt_level = 1};
    Compiled *c = NULL;
    mlc_pool *pool = mlc_pool_create(1);
    rt_executor *ex = NULL;
    CgJit *jit = NULL;
    char err[RT_ERRLEN] = "";
    mlc_status st = mlc_compile_graph(sa, sub, &co, &c, d);
    if (!st) st = mlc_jit_executor(c, pool, &ex, &jit, d);
    if (!st && rt_executor_run(ex, err)) st = diag_set(d, MLC_ERR_INTERNAL, "%s: constant folding: %s", g->file, err);
    if (!st) {
      for (int i = 0; i < sub->outputs.n; i++) {
        Value *sv = sub->outputs.v[i];
        /* find the outer value this output stands for */
        for (int vi = 0; vi < nv; vi++) {
          if (map[vi] != sv) continue;
          Value *v = g->values.v[vi];
          size_t nb = (size_t)tt_nbytes(&v->type);
          v->data = arena_memdup(a, rt_executor_output(ex, i), nb);
          v->producer = NULL;
          break;
        }
      }
    }
    if (ex) rt_executor_free(ex);
    if (jit) cg_jit_free(jit);
    mlc_pool_destroy(pool);
    mlc_compiled_free(c);
    arena_free(sa);
    if (st) return st;
  }
  int kept = 0;
  for (int i = 0; i < g->nodes.n; i++)
    if (!foldable[i]) g->nodes.v[kept++] = g->nodes.v[i];
  g->nodes.n = kept;
  return MLC_OK;
}
