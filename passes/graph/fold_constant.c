/* FoldConstant: evaluate every node whose inputs are all constants, by compiling those nodes with mlc's own
 * pipeline (opt level 1, so this pass does not recurse) and running them on the JIT, then turning the values
 * they feed to the rest of the graph into constants. One compilation for the whole constant part of the
 * graph. Outputs larger than a limit (64 MiB) and larger than the node's inputs are left to run at inference
 * time: folding them would grow the package more than it saves. A larger result that is no larger than its
 * inputs (the reshape / transpose packing a big dense weight: AlexNet's 151 MB, VGG's 411 MB) is folded.
 * A node with a data-dependent output shape (Value.dyn_extent) is never folded, and pass_evaluate refuses a
 * value computed from one: its type is only an upper bound. */
#include <stdlib.h>
#include <string.h>
#include "driver/driver.h"


/* Compiles the nodes marked in `use` (in graph order; their inputs are constants or outputs of other marked
 * nodes) as a graph of their own, runs it, and returns the data of values[0..n) in g's arena. */
static mlc_status evaluate(Graph *g, const bool *use, int n, Value **values, void **data, const char *target,
                           Diag *d) {
  int nv = g->values.n;
  Arena *sa = arena_new();
  Graph *sub = ir_graph_new(sa, g->file);
  Value **map = arena_alloc(sa, sizeof(Value *) * (size_t)(nv + 1));
  for (int i = 0; i < g->nodes.n; i++) {
    if (!use[i]) continue;
    Node *nd = g->nodes.v[i];
    Value **ins = arena_alloc(sa, sizeof(Value *) * (size_t)(nd->ninputs + 1));
    for (int k = 0; k < nd->ninputs; k++) {
      Value *v = nd->inputs[k];
      if (!v) continue;
      if (!map[v->id]) { /* a constant: shares the outer graph's data */
        map[v->id] = ir_value_new(sub, v->name, v->type);
        map[v->id]->data = v->data;
      }
      ins[k] = map[v->id];
    }
    Node *m = ir_node_new(sub, nd->op, nd->name, nd->op_type, nd->opset, ins, nd->ninputs, nd->noutputs);
    m->attrs = nd->attrs;
    m->nattrs = nd->nattrs;
    for (int k = 0; k < nd->noutputs; k++) {
      if (!nd->outputs[k]) continue;
      m->outputs[k]->type = nd->outputs[k]->type;
      m->outputs[k]->name = nd->outputs[k]->name;
      map[nd->outputs[k]->id] = m->outputs[k];
    }
  }
  for (int i = 0; i < n; i++) vec_push(sa, &sub->outputs, map[values[i]->id]);
  CompileOptions co = {.target = target, .opt_level = 1};
  Compiled *c = NULL;
  mlc_pool *pool = mlc_pool_create(1);
  rt_executor *ex = NULL;
  CgJit *jit = NULL;
  char err[RT_ERRLEN] = "";
  mlc_status st = mlc_compile_graph(sa, sub, &co, &c, d);
  if (!st) st = mlc_jit_executor(c, pool, &ex, &jit, d);
  if (!st && rt_executor_run(ex, err)) st = diag_set(d, MLC_ERR_INTERNAL, "%s: constant folding: %s", g->file, err);
  for (int i = 0; !st && i < n; i++)
    data[i] = arena_memdup(g->arena, rt_executor_output(ex, i), (size_t)tt_nbytes(&values[i]->type));
  if (ex) rt_executor_free(ex);
  if (jit) cg_jit_free(jit);
  mlc_pool_destroy(pool);
  mlc_compiled_free(c);
  arena_free(sa);
  return st;
}

mlc_status pass_evaluate(Graph *g, Value *v, void **data, Diag *d) {
  if (v->data) {
    *data = v->data;
    return MLC_OK;
  }
  /* mark the producers v depends on; any graph input among its leaves means it is not constant */
  bool *need = arena_alloc(g->arena, (size_t)g->values.n + 1);
  bool *use = arena_alloc(g->arena, (size_t)g->nodes.n + 1);
  need[v->id] = true;
  for (int i = g->nodes.n - 1; i >= 0; i--) {
    Node *n = g->nodes.v[i];
    bool wanted = false;
    for (int k = 0; k < n->noutputs; k++) wanted |= n->outputs[k] && need[n->outputs[k]->id];
    if (!wanted) continue;
    if (!n->op->compute) return MLC_ERR_UNSUPPORTED;
    /* a data-dependent shape is no constant (its type is only an upper bound) */
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k] && n->outputs[k]->dyn_extent) return MLC_ERR_UNSUPPORTED;
    use[i] = true;
    for (int k = 0; k < n->ninputs; k++) {
      Value *in = n->inputs[k];
      if (!in || in->data) continue;
      if (!in->producer) return MLC_ERR_UNSUPPORTED;
      need[in->id] = true;
    }
  }
  /* A small computation, once: LLVM at -O0 for the host, and for integer results (the importer's shape
   * arithmetic) its generic CPU, whose short feature list is much cheaper to set up than the host's. */
  bool integer = v->type.dtype != MLC_F32 && v->type.dtype != MLC_F64 && v->type.dtype != MLC_F16 &&
                 v->type.dtype != MLC_BF16;
  return evaluate(g, use, 1, &v, data, integer ? "llvm -mcpu=generic -opt-level=0" : "llvm -opt-level=0", d);
}

mlc_status pass_fold_constant(Graph *g, const PassOptions *opt, Diag *d) {
  Arena *a = g->arena;
  int nv = g->values.n;
  int64_t max_bytes = pass_config_int(opt, "FoldConstant.max_bytes");
  bool *is_const = arena_alloc(a, (size_t)nv + 1);
  bool *foldable = arena_alloc(a, (size_t)g->nodes.n + 1);
  bool *frontier = arena_alloc(a, (size_t)nv + 1);
  for (int i = 0; i < nv; i++) is_const[i] = g->values.v[i]->data != NULL;
  int nfold = 0;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    bool ok = n->op->compute != NULL && n->noutputs > 0;
    /* a data-dependent shape is never folded: its value is only its static upper bound */
    for (int k = 0; k < n->noutputs && ok; k++) ok = !n->outputs[k] || !n->outputs[k]->dyn_extent;
    for (int k = 0; k < n->ninputs && ok; k++) ok = !n->inputs[k] || is_const[n->inputs[k]->id];
    /* a result over the limit is still folded when it is no larger than the node's inputs (a weight's layout
     * transform: the package does not grow, and the transform does not run on every inference) */
    int64_t in_bytes = 0;
    for (int k = 0; k < n->ninputs && ok; k++)
      if (n->inputs[k]) in_bytes += tt_nbytes(&n->inputs[k]->type);
    for (int k = 0; k < n->noutputs && ok; k++) {
      int64_t ob = n->outputs[k] ? tt_nbytes(&n->outputs[k]->type) : 0;
      ok = ob <= max_bytes || ob <= in_bytes;
    }
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
    Value **vals = arena_alloc(a, sizeof(Value *) * (size_t)nfront);
    void **data = arena_alloc(a, sizeof(void *) * (size_t)nfront);
    int k = 0;
    for (int i = 0; i < nv; i++)
      if (frontier[i]) vals[k++] = g->values.v[i];
    const char *jit_target = opt->fold_target ? opt->fold_target : opt->target;
    if (evaluate(g, foldable, nfront, vals, data, jit_target, d) != MLC_OK) return d->status;
    for (int i = 0; i < nfront; i++) {
      vals[i]->data = data[i];
      vals[i]->producer = NULL;
    }
  }
  int kept = 0;
  for (int i = 0; i < g->nodes.n; i++)
    if (!foldable[i]) g->nodes.v[kept++] = g->nodes.v[i];
  g->nodes.n = kept;
  return MLC_OK;
}
