/* Loop peeling of guarded vector loops (TVM's LoopPartition, for the one case that matters here).
 *
 * A split whose factor does not divide its axis leaves a guard `outer * f + inner < extent` (te/lower.c).
 * Inside a vectorized loop such a guard turns every vector operation of the loop into a masked or scalar
 * one, for all iterations, although it can only fail in the last iteration of the outer loop: a batch_matmul
 * with N = 197 (a ViT's tokens) ran at 3 GFLOP/s. tir_peel_guarded_loops rewrites a serial loop
 *     for (v, min, n) body      as      for (v, min, n - 1) body ; body[v := min + n - 1]
 * when that removes guards on v from vectorized loops in the first part (checked by simplifying it: the
 * simplifier knows the loop ranges), so the first n - 1 iterations run unguarded vector code. The input is
 * simplified TIR; the result needs another tir_simplify_stmt (the peeled iteration's guards become constant
 * in v). Loops are peeled outermost first, then their bodies (both copies) are visited again. */
#include "tir/mutate.h"

typedef struct UsesVar {
  Arena *a;
  const Var *v;
  bool found;
} UsesVar;

static Expr *uses_visit(void *ctx, Expr *e) {
  UsesVar *u = ctx;
  if (!e || u->found) return e;
  if (e->kind == E_VAR && e->var == u->v) u->found = true;
  else tir_expr_map_children(u->a, e, uses_visit, u);
  return e;
}

static bool uses_var(Arena *a, Expr *e, const Var *v) {
  UsesVar u = {a, v, false};
  uses_visit(&u, e);
  return u.found;
}

/* the number of conditions on v inside vectorized loops of s */
static int vector_guards(Arena *a, const Stmt *s, const Var *v, bool in_vector) {
  if (!s) return 0;
  switch (s->kind) {
  case S_FOR: return vector_guards(a, s->loop.body, v, in_vector || s->loop.for_kind == FOR_VECTORIZED);
  case S_SEQ: {
    int n = 0;
    for (int i = 0; i < s->seq.n; i++) n += vector_guards(a, s->seq.stmts[i], v, in_vector);
    return n;
  }
  case S_IF:
    return (in_vector && uses_var(a, s->ifs.cond, v)) + vector_guards(a, s->ifs.then_s, v, in_vector) +
           vector_guards(a, s->ifs.else_s, v, in_vector);
  case S_LET: return vector_guards(a, s->let.body, v, in_vector);
  case S_ALLOCATE: return vector_guards(a, s->alloc.body, v, in_vector);
  default: return 0;
  }
}

typedef struct Peel {
  Arena *a;
  bool changed;
} Peel;

static Expr *keep_expr(void *ctx, Expr *e) {
  (void)ctx;
  return e;
}

static Stmt *peel_stmt(void *ctx, Stmt *s) {
  Peel *p = ctx;
  Arena *a = p->a;
  if (!s) return s;
  if (s->kind == S_FOR && s->loop.for_kind == FOR_SERIAL && s->loop.min->kind == E_INT &&
      s->loop.extent->kind == E_INT && s->loop.extent->ival >= 2) {
    Var *v = s->loop.var;
    int before = vector_guards(a, s->loop.body, v, false);
    if (before > 0) {
      int64_t lo = s->loop.min->ival, n = s->loop.extent->ival;
      Stmt *head = tir_for(a, v, s->loop.min, tir_idx(a, n - 1), FOR_SERIAL, s->loop.body);
      if (vector_guards(a, tir_simplify_stmt(a, head), v, false) < before) {
        Expr *last_v = tir_idx(a, lo + n - 1);
        Stmt *last = tir_substitute_stmt(a, s->loop.body, 1, &v, &last_v);
        p->changed = true;
        head = tir_for(a, v, s->loop.min, tir_idx(a, n - 1), FOR_SERIAL, peel_stmt(p, s->loop.body));
        return tir_seq2(a, head, peel_stmt(p, last));
      }
    }
  }
  return tir_stmt_map_children(a, s, keep_expr, peel_stmt, p);
}

Stmt *tir_peel_guarded_loops(Arena *a, Stmt *s, bool *changed) {
  Peel p = {a, false};
  Stmt *r = peel_stmt(&p, s);
  *changed = p.changed;
  return r;
}
