/* TE operations: placeholders, computes (with reduce axes) and extern ops, after TVM's te.placeholder /
 * te.compute / te.extern.
 *
 * A compute gets one spatial IterVar per output dimension (named i0, i1, ...), calls the user's fcompute
 * with their vars as index expressions and keeps the returned body; when the body is an E_REDUCE its axes
 * become the op's reduce axes. The tensors a compute reads (E_TENSOR nodes in its body) are recorded in
 * op->inputs too, so the schedule can walk the DAG the same way for computes and externs. An extern op gets
 * fresh Buffers shaped like its inputs and outputs; te_lower binds them to the real buffers. */
#include <stdio.h>
#include <string.h>
#include "te/te.h"
#include "tir/mutate.h"

static TeOp *new_op(TeCtx *c, TeOpKind k, const char *name, const char *tag) {
  TeOp *op = arena_alloc(c->arena, sizeof(TeOp));
  op->kind = k;
  op->id = c->next_id++;
  op->name = name ? arena_strdup(c->arena, name) : arena_printf(c->arena, "T%d", op->id);
  op->tag = arena_strdup(c->arena, tag ? tag : "");
  return op;
}

static TeTensor *new_tensor(TeCtx *c, TeOp *op, int index, mlc_dtype t, int ndim, const int64_t *shape) {
  TeTensor *x = arena_alloc(c->arena, sizeof(TeTensor));
  x->op = op;
  x->value_index = index;
  x->dtype = t;
  x->ndim = ndim < 0 ? 0 : ndim > MLC_MAX_DIMS ? MLC_MAX_DIMS : ndim;
  for (int i = 0; i < x->ndim; i++) x->shape[i] = shape[i];
  return x;
}

TeTensor *te_placeholder(TeCtx *c, const char *name, mlc_dtype t, int ndim, const int64_t *shape) {
  TeOp *op = new_op(c, TE_PLACEHOLDER, name, "placeholder");
  op->noutputs = 1;
  op->outputs = arena_alloc(c->arena, sizeof(TeTensor *));
  op->outputs[0] = new_tensor(c, op, 0, t, ndim, shape);
  return op->outputs[0];
}

static IterVar *new_itervar(TeCtx *c, const char *name, int64_t extent, IterKind k) {
  IterVar *iv = arena_alloc(c->arena, sizeof(IterVar));
  iv->var = tir_var(c->arena, name, MLC_I64);
  iv->extent = extent;
  iv->kind = k;
  iv->for_kind = FOR_SERIAL;
  return iv;
}

IterVar *te_reduce_axis(TeCtx *c, const char *name, int64_t extent) {
  return new_itervar(c, name ? name : "k", extent, ITER_REDUCE);
}

Expr *te_reduce(TeCtx *c, ReduceKind k, Expr *source, int naxes, IterVar **axes, Expr *init, Expr *cond) {
  Expr *e = arena_alloc(c->arena, sizeof(Expr));
  e->kind = E_REDUCE;
  e->dtype = source->dtype;
  e->lanes = 1;
  e->reduce.combiner = k;
  e->reduce.source = source;
  e->reduce.init = init && init->dtype != source->dtype ? tir_cast(c->arena, source->dtype, init) : init;
  e->reduce.naxes = naxes;
  e->reduce.axes = naxes ? arena_memdup(c->arena, axes, (size_t)naxes * sizeof(IterVar *)) : NULL;
  e->reduce.cond = cond;
  return e;
}

Expr *te_read(TeCtx *c, TeTensor *t, int n, Expr **idx) {
  Expr *body = t->op->kind == TE_COMPUTE ? t->op->body : NULL;
  if (body && body->kind == E_INT) return tir_int(c->arena, body->dtype, body->ival); /* a constant stage */
  if (body && body->kind == E_FLOAT) return tir_float(c->arena, body->dtype, body->fval);
  Expr *e = arena_alloc(c->arena, sizeof(Expr));
  e->kind = E_TENSOR;
  e->dtype = t->dtype;
  e->lanes = 1;
  e->tensor.tensor = t;
  e->tensor.n = n;
  e->tensor.idx = n ? arena_alloc(c->arena, (size_t)n * sizeof(Expr *)) : NULL;
  for (int i = 0; i < n; i++) /* index math is int64 */
    e->tensor.idx[i] = idx[i]->dtype == MLC_I64 ? idx[i] : tir_cast(c->arena, MLC_I64, idx[i]);
  return e;
}

/* ---- collecting the tensors a body reads (a visitor through the mutator: it returns e unchanged) ---- */

typedef struct Collect {
  Arena *a;
  VEC(TeTensor *) ts;
  ExprMemo seen; /* visited nodes: a DAG is walked once per node */
} Collect;

static Expr *collect(void *ctx, Expr *e) {
  Collect *c = ctx;
  if (memo_get(&c->seen, e)) return e;
  memo_put(&c->seen, e, e);
  if (e->kind == E_TENSOR) {
    bool seen = false;
    for (int i = 0; i < c->ts.n; i++) seen |= c->ts.v[i] == e->tensor.tensor;
    if (!seen) vec_push(c->a, &c->ts, e->tensor.tensor);
  }
  tir_expr_map_children(c->a, e, collect, ctx);
  return e;
}

TeTensor *te_compute(TeCtx *c, const char *name, const char *tag, mlc_dtype t, int ndim, const int64_t *shape,
                     TeComputeFn fn, void *user) {
  TeOp *op = new_op(c, TE_COMPUTE, name, tag);
  if (ndim < 0) ndim = 0;
  if (ndim > MLC_MAX_DIMS) ndim = MLC_MAX_DIMS;
  op->naxes = ndim;
  op->axes = arena_alloc(c->arena, (size_t)(ndim ? ndim : 1) * sizeof(IterVar *));
  Expr **idx = arena_alloc(c->arena, (size_t)(ndim ? ndim : 1) * sizeof(Expr *));
  for (int i = 0; i < ndim; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "i%d", i);
    op->axes[i] = new_itervar(c, nm, shape[i], ITER_SPATIAL);
    idx[i] = tir_varref(c->arena, op->axes[i]->var);
  }
  Expr *body = fn(c, idx, user);
  if (body && body->kind == E_REDUCE) {
    op->nreduce = body->reduce.naxes;
    op->reduce_axes = body->reduce.axes;
  } else if (body && body->dtype != t) {
    body = tir_cast(c->arena, t, body);
  }
  op->body = body;
  op->noutputs = 1;
  op->outputs = arena_alloc(c->arena, sizeof(TeTensor *));
  op->outputs[0] = new_tensor(c, op, 0, t, ndim, shape);
  if (body) {
    Collect col = {.a = c->arena};
    memo_init(&col.seen, c->arena);
    collect(&col, body);
    op->ninputs = col.ts.n;
    op->inputs = col.ts.v;
  }
  return op->outputs[0];
}

void te_extern(TeCtx *c, const char *name, const char *tag, int nin, TeTensor **ins, int nout,
               const TeTensor *out_types, TeExternFn fn, void *user, TeTensor **outs) {
  TeOp *op = new_op(c, TE_EXTERN, name, tag);
  op->ninputs = nin;
  op->inputs = arena_alloc(c->arena, (size_t)(nin ? nin : 1) * sizeof(TeTensor *));
  op->in_bufs = arena_alloc(c->arena, (size_t)(nin ? nin : 1) * sizeof(Buffer *));
  for (int i = 0; i < nin; i++) {
    op->inputs[i] = ins[i];
    op->in_bufs[i] = tir_buffer(c->arena, ins[i]->op->name, ins[i]->dtype, ins[i]->ndim, ins[i]->shape);
  }
  op->noutputs = nout;
  op->outputs = arena_alloc(c->arena, (size_t)(nout ? nout : 1) * sizeof(TeTensor *));
  op->out_bufs = arena_alloc(c->arena, (size_t)(nout ? nout : 1) * sizeof(Buffer *));
  for (int i = 0; i < nout; i++) {
    op->outputs[i] = new_tensor(c, op, i, out_types[i].dtype, out_types[i].ndim, out_types[i].shape);
    const char *bn = nout == 1 ? op->name : arena_printf(c->arena, "%s_%d", op->name, i);
    op->out_bufs[i] = tir_buffer(c->arena, bn, out_types[i].dtype, out_types[i].ndim, out_types[i].shape);
    if (outs) outs[i] = op->outputs[i];
  }
  op->body_stmt = fn(c, op->in_bufs, op->out_bufs, user);
}
