/* Schedules: one stage per TE operation and the loop-transforming primitives (after TVM's te.Schedule).
 *
 * te_create_schedule walks the DAG from the outputs depth-first and lists the ops in post order, so
 * producers come before their consumers. A stage starts with the op's spatial axes followed by its reduce
 * axes as leaves. Primitives only edit the leaf list and append relations:
 *   split(iv, f): iv -> iv.outer [ceil(ext/f)], iv.inner [f]   (f clamped to ext; the last outer iteration
 *                 is guarded at lowering when f does not divide ext)
 *   fuse(o, i):   adjacent leaves o, i -> o.i.fused [ext(o)*ext(i)]
 *   reorder:      the named leaves take the positions they occupy, in the given order
 *   vectorize / parallel / unroll: annotate a leaf's ForKind
 *   compute_inline: the stage is substituted into its readers (computes without reduction only).
 *   cache_write(t): t's compute moves to a new stage t.local (fresh spatial axes, the same reduce axes)
 *                 inserted before t's stage; t's op becomes the copy t[i] = t.local[i] (no reduction).
 *   compute_at(st, parent, iv): records the attachment; te_lower infers the region and emits the nest.
 * Primitives return void; a misuse (not a leaf, bad factor, non-adjacent fuse, mixing spatial and reduce,
 * vectorizing or parallelizing a reduce axis) is recorded in the stage and te_lower reports it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "te/stage.h"

static void stage_error(TeStage *st, const char *msg) {
  StageImpl *si = stage_impl(st);
  if (!si->error) si->error = arena_printf(si->arena, "stage '%s': %s", st->op->name, msg);
}

static int leaf_pos(const TeStage *st, const IterVar *iv) {
  for (int i = 0; i < st->nleaf; i++)
    if (st->leaf[i] == iv) return i;
  return -1;
}

static void grow_leaf(TeStage *st, int need) {
  if (need <= st->cap_leaf) return;
  int cap = st->cap_leaf ? st->cap_leaf * 2 : 8;
  while (cap < need) cap *= 2;
  IterVar **nv = arena_alloc(stage_impl(st)->arena, (size_t)cap * sizeof(IterVar *));
  if (st->nleaf) memcpy(nv, st->leaf, (size_t)st->nleaf * sizeof(IterVar *));
  st->leaf = nv;
  st->cap_leaf = cap;
}

static void push_rel(TeStage *st, TeRelation r) {
  if (st->nrels == st->cap_rels) {
    int cap = st->cap_rels ? st->cap_rels * 2 : 8;
    TeRelation *nv = arena_alloc(stage_impl(st)->arena, (size_t)cap * sizeof(TeRelation));
    if (st->nrels) memcpy(nv, st->rels, (size_t)st->nrels * sizeof(TeRelation));
    st->rels = nv;
    st->cap_rels = cap;
  }
  st->rels[st->nrels++] = r;
}

static IterVar *new_iv(TeStage *st, const char *name, int64_t extent, IterKind k) {
  Arena *a = stage_impl(st)->arena;
  IterVar *iv = arena_alloc(a, sizeof(IterVar));
  iv->var = tir_var(a, name, MLC_I64);
  iv->extent = extent;
  iv->kind = k;
  iv->for_kind = FOR_SERIAL;
  return iv;
}

/* ---- building ---- */

typedef struct Walk {
  Arena *a;
  VEC(TeOp *) ops;
} Walk;

static void visit(Walk *w, TeOp *op) {
  for (int i = 0; i < w->ops.n; i++)
    if (w->ops.v[i] == op) return;
  for (int i = 0; i < op->ninputs; i++) visit(w, op->inputs[i]->op);
  vec_push(w->a, &w->ops, op);
}

TeSchedule *te_create_schedule(TeCtx *c, int nout, TeTensor **outs) {
  Arena *a = c->arena;
  Walk w = {.a = a};
  for (int i = 0; i < nout; i++) visit(&w, outs[i]->op);
  TeSchedule *s = arena_alloc(a, sizeof(TeSchedule));
  s->arena = a;
  s->nstages = w.ops.n;
  s->stages = arena_alloc(a, (size_t)(w.ops.n ? w.ops.n : 1) * sizeof(TeStage *));
  for (int i = 0; i < w.ops.n; i++) {
    TeOp *op = w.ops.v[i];
    StageImpl *si = arena_alloc(a, sizeof(StageImpl));
    si->arena = a;
    TeStage *st = &si->pub;
    st->op = op;
    st->attach = ATTACH_ROOT;
    if (op->kind == TE_COMPUTE) {
      grow_leaf(st, op->naxes + op->nreduce);
      for (int j = 0; j < op->naxes; j++) st->leaf[st->nleaf++] = op->axes[j];
      for (int j = 0; j < op->nreduce; j++) st->leaf[st->nleaf++] = op->reduce_axes[j];
      /* annotations belong to a schedule: a fresh schedule starts from serial roots */
      for (int j = 0; j < st->nleaf; j++) st->leaf[j]->for_kind = FOR_SERIAL;
    }
    s->stages[i] = st;
  }
  s->noutputs = nout;
  s->outputs = arena_memdup(a, outs, (size_t)(nout ? nout : 1) * sizeof(TeTensor *));
  return s;
}

TeStage *te_stage(TeSchedule *s, const TeTensor *t) {
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->op == t->op) return s->stages[i];
  return NULL;
}

/* ---- primitives ---- */

void te_split(TeStage *st, IterVar *iv, int64_t factor, IterVar **outer, IterVar **inner) {
  int p = leaf_pos(st, iv);
  const char *nm = iv && iv->var ? iv->var->name : "?";
  if (p < 0 || factor <= 0) {
    stage_error(st, p < 0 ? "split of an iter var that is not a leaf" : "split factor must be positive");
    /* hand back detached iter vars so the caller's following primitives fail softly too */
    if (outer) *outer = new_iv(st, "invalid.outer", 1, ITER_SPATIAL);
    if (inner) *inner = new_iv(st, "invalid.inner", 1, ITER_SPATIAL);
    return;
  }
  int64_t ext = iv->extent < 1 ? 1 : iv->extent;
  int64_t f = factor < ext ? factor : ext;
  char buf[256];
  snprintf(buf, sizeof buf, "%s.outer", nm);
  IterVar *o = new_iv(st, buf, (ext + f - 1) / f, iv->kind);
  snprintf(buf, sizeof buf, "%s.inner", nm);
  IterVar *in = new_iv(st, buf, f, iv->kind);
  grow_leaf(st, st->nleaf + 1);
  memmove(&st->leaf[p + 2], &st->leaf[p + 1], (size_t)(st->nleaf - p - 1) * sizeof(IterVar *));
  st->leaf[p] = o;
  st->leaf[p + 1] = in;
  st->nleaf++;
  push_rel(st, (TeRelation){.kind = REL_SPLIT, .parent = iv, .outer = o, .inner = in, .factor = f});
  if (outer) *outer = o;
  if (inner) *inner = in;
}

IterVar *te_fuse(TeStage *st, IterVar *outer, IterVar *inner) {
  int po = leaf_pos(st, outer), pi = leaf_pos(st, inner);
  if (po < 0 || pi < 0 || pi != po + 1 || outer->kind != inner->kind) {
    stage_error(st, po < 0 || pi < 0 ? "fuse of an iter var that is not a leaf"
                    : pi != po + 1  ? "fuse needs adjacent leaves, outer first"
                                    : "fuse of a spatial and a reduce iter var");
    return new_iv(st, "invalid.fused", 1, ITER_SPATIAL);
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s.%s.fused", outer->var->name, inner->var->name);
  IterVar *f = new_iv(st, buf, outer->extent * inner->extent, outer->kind);
  st->leaf[po] = f;
  memmove(&st->leaf[pi], &st->leaf[pi + 1], (size_t)(st->nleaf - pi - 1) * sizeof(IterVar *));
  st->nleaf--;
  push_rel(st, (TeRelation){.kind = REL_FUSE, .outer = outer, .inner = inner, .fused = f});
  return f;
}

void te_reorder(TeStage *st, int n, IterVar **order) {
  if (n <= 0) return;
  Arena *a = stage_impl(st)->arena;
  int *pos = arena_alloc(a, (size_t)n * sizeof(int));
  for (int i = 0; i < n; i++) {
    pos[i] = leaf_pos(st, order[i]);
    if (pos[i] < 0) { stage_error(st, "reorder of an iter var that is not a leaf"); return; }
    for (int j = 0; j < i; j++)
      if (pos[j] == pos[i]) { stage_error(st, "reorder names an iter var twice"); return; }
  }
  /* sort the positions; the given leaves fill them in order */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && pos[j - 1] > pos[j]; j--) {
      int t = pos[j];
      pos[j] = pos[j - 1];
      pos[j - 1] = t;
    }
  for (int i = 0; i < n; i++) st->leaf[pos[i]] = order[i];
}

static void annotate(TeStage *st, IterVar *iv, ForKind k, const char *what) {
  if (leaf_pos(st, iv) < 0) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s of an iter var that is not a leaf", what);
    stage_error(st, buf);
    return;
  }
  if (iv->kind == ITER_REDUCE && (k == FOR_VECTORIZED || k == FOR_PARALLEL)) {
    /* every iteration updates the same output element: a race, or a wrong vector store */
    char buf[96];
    snprintf(buf, sizeof buf, "%s of a reduce iter var '%s'", what, iv->var->name);
    stage_error(st, buf);
    return;
  }
  iv->for_kind = k;
}

void te_vectorize(TeStage *st, IterVar *iv) { annotate(st, iv, FOR_VECTORIZED, "vectorize"); }
void te_parallel(TeStage *st, IterVar *iv) { annotate(st, iv, FOR_PARALLEL, "parallel"); }
void te_unroll(TeStage *st, IterVar *iv) { annotate(st, iv, FOR_UNROLLED, "unroll"); }

void te_compute_inline(TeStage *st) {
  if (st->op->kind != TE_COMPUTE || st->op->nreduce > 0 || (st->op->body && st->op->body->kind == E_REDUCE)) {
    stage_error(st, "compute_inline needs a compute without reduction");
    return;
  }
  st->attach = ATTACH_INLINE;
}

TeTensor *te_cache_write(TeSchedule *s, TeTensor *t) {
  TeStage *st = t ? te_stage(s, t) : NULL;
  if (!st) return t;
  TeOp *op = st->op;
  Arena *a = s->arena;
  if (op->kind != TE_COMPUTE || op->noutputs != 1 || !op->body) {
    stage_error(st, "cache_write needs a single-output compute");
    return t;
  }
  if (st->nrels || st->nleaf != op->naxes + op->nreduce || st->attach != ATTACH_ROOT) {
    stage_error(st, "cache_write must come before any other primitive on the stage");
    return t;
  }
  /* the local op: fresh spatial axes, the body rewritten over them, the reduce axes moved over */
  TeOp *lo = arena_alloc(a, sizeof(TeOp));
  *lo = *op;
  lo->name = arena_printf(a, "%s.local", op->name);
  lo->id = op->id + 1000000; /* distinct from the ids of te_compute (printing only) */
  lo->axes = arena_alloc(a, (size_t)(op->naxes ? op->naxes : 1) * sizeof(IterVar *));
  Var **from = arena_alloc(a, (size_t)(op->naxes ? op->naxes : 1) * sizeof(Var *));
  Expr **to = arena_alloc(a, (size_t)(op->naxes ? op->naxes : 1) * sizeof(Expr *));
  for (int i = 0; i < op->naxes; i++) {
    IterVar *iv = arena_alloc(a, sizeof(IterVar));
    *iv = *op->axes[i];
    iv->var = tir_var(a, op->axes[i]->var->name, MLC_I64);
    iv->for_kind = FOR_SERIAL;
    lo->axes[i] = iv;
    from[i] = op->axes[i]->var;
    to[i] = tir_varref(a, iv->var);
  }
  lo->body = tir_substitute(a, op->body, op->naxes, from, to);
  TeTensor *lt = arena_alloc(a, sizeof(TeTensor));
  *lt = *t;
  lt->op = lo;
  lt->value_index = 0;
  lo->outputs = arena_alloc(a, sizeof(TeTensor *));
  lo->outputs[0] = lt;
  /* t becomes the copy */
  TeCtx c = {.arena = a};
  Expr **idx = arena_alloc(a, (size_t)(op->naxes ? op->naxes : 1) * sizeof(Expr *));
  for (int i = 0; i < op->naxes; i++) idx[i] = tir_varref(a, op->axes[i]->var);
  op->body = te_read(&c, lt, op->naxes, idx);
  op->nreduce = 0;
  op->reduce_axes = NULL;
  op->ninputs = 1;
  op->inputs = arena_alloc(a, sizeof(TeTensor *));
  op->inputs[0] = lt;
  st->nleaf = op->naxes;
  /* the local stage, just before t's */
  StageImpl *si = arena_alloc(a, sizeof(StageImpl));
  si->arena = a;
  TeStage *ls = &si->pub;
  ls->op = lo;
  ls->attach = ATTACH_ROOT;
  grow_leaf(ls, lo->naxes + lo->nreduce);
  for (int j = 0; j < lo->naxes; j++) ls->leaf[ls->nleaf++] = lo->axes[j];
  for (int j = 0; j < lo->nreduce; j++) ls->leaf[ls->nleaf++] = lo->reduce_axes[j];
  TeStage **ns = arena_alloc(a, (size_t)(s->nstages + 1) * sizeof(TeStage *));
  int k = 0;
  for (int i = 0; i < s->nstages; i++) {
    if (s->stages[i] == st) ns[k++] = ls;
    ns[k++] = s->stages[i];
  }
  s->stages = ns;
  s->nstages = k;
  return lt;
}

void te_compute_at(TeStage *st, TeStage *parent, IterVar *iv) {
  if (!parent || parent == st || leaf_pos(parent, iv) < 0) {
    stage_error(st, "compute_at needs a leaf of another stage");
    return;
  }
  if (st->op->kind != TE_COMPUTE) {
    stage_error(st, "compute_at of a stage that is not a compute");
    return;
  }
  st->attach = ATTACH_AT;
  st->attach_parent = parent;
  st->attach_iv = iv;
}

/* ---- printing ---- */

static const char *kind_word(ForKind k) {
  switch (k) {
  case FOR_PARALLEL: return " parallel";
  case FOR_VECTORIZED: return " vectorized";
  case FOR_UNROLLED: return " unrolled";
  default: return "";
  }
}

static void print_iv(StrBuf *b, const IterVar *iv) {
  sb_printf(b, "%s[%" PRId64 "]%s%s", iv->var->name, iv->extent, iv->kind == ITER_REDUCE ? " reduce" : "",
            kind_word(iv->for_kind));
}

void te_prefetch(TeStage *st, TeTensor *t, IterVar *iv, int64_t ahead) {
  if (!t || leaf_pos(st, iv) < 0 || ahead < 1) {
    stage_error(st, "prefetch needs a tensor, a leaf of the stage and a positive distance");
    return;
  }
  st->prefetch = t;
  st->prefetch_iv = iv;
  st->prefetch_ahead = ahead;
}

void te_print_schedule(StrBuf *b, const TeSchedule *s) {
  sb_printf(b, "schedule outputs(");
  for (int i = 0; i < s->noutputs; i++) sb_printf(b, "%s%s", i ? ", " : "", s->outputs[i]->op->name);
  sb_printf(b, ")\n");
  for (int i = 0; i < s->nstages; i++) {
    const TeStage *st = s->stages[i];
    const TeOp *op = st->op;
    static const char *kinds[] = {"placeholder", "compute", "extern"};
    sb_printf(b, "stage %s: %s", op->name, kinds[op->kind]);
    if (op->tag && *op->tag && op->kind != TE_PLACEHOLDER) sb_printf(b, " \"%s\"", op->tag);
    for (int j = 0; j < op->noutputs; j++) {
      const TeTensor *t = op->outputs[j];
      sb_printf(b, "%s%s[", j ? ", " : " ", mlc_dtype_name(t->dtype));
      for (int d = 0; d < t->ndim; d++) sb_printf(b, "%s%" PRId64, d ? ", " : "", t->shape[d]);
      sb_putc(b, ']');
    }
    if (op->kind != TE_PLACEHOLDER) {
      if (st->attach == ATTACH_AT)
        sb_printf(b, " at %s.%s", st->attach_parent->op->name, st->attach_iv->var->name);
      else
        sb_printf(b, " %s", st->attach == ATTACH_INLINE ? "inline" : "root");
    }
    sb_putc(b, '\n');
    if (op->kind == TE_COMPUTE && op->body) {
      sb_printf(b, "  body: ");
      tir_print_expr(b, op->body);
      sb_putc(b, '\n');
    }
    if (st->nleaf) {
      sb_printf(b, "  leaves:");
      for (int j = 0; j < st->nleaf; j++) {
        sb_printf(b, j ? ", " : " ");
        print_iv(b, st->leaf[j]);
      }
      sb_putc(b, '\n');
    }
    for (int j = 0; j < st->nrels; j++) {
      const TeRelation *r = &st->rels[j];
      if (r->kind == REL_SPLIT)
        sb_printf(b, "  split %s[%" PRId64 "] by %" PRId64 " -> %s, %s\n", r->parent->var->name, r->parent->extent,
                  r->factor, r->outer->var->name, r->inner->var->name);
      else
        sb_printf(b, "  fuse %s, %s -> %s\n", r->outer->var->name, r->inner->var->name, r->fused->var->name);
    }
    if (st->prefetch)
      sb_printf(b, "  prefetch %s at %s ahead %" PRId64 "\n", st->prefetch->op->name, st->prefetch_iv->var->name,
                st->prefetch_ahead);
    const StageImpl *si = (const StageImpl *)st;
    if (si->error) sb_printf(b, "  error: %s\n", si->error);
  }
}
