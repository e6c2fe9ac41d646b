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
  return tir_stmt_map_children(a, s, tir_keep_expr, peel_stmt, p);
}

Stmt *tir_peel_guarded_loops(Arena *a, Stmt *s, bool *changed) {
  Peel p = {a, false};
  Stmt *r = peel_stmt(&p, s);
  *changed = p.changed;
  return r;
}

/* ---- partitioning padded copies (TVM's LoopPartition, for constant-bound guards) ----
 *
 * A padded copy (conv / depthwise / pool pads, nn.pad) is a loop nest ending in one store of
 *     select(0 <= v + k && v + k < n && ..., x[.., min(max(v + k, 0), n - 1)], pad)
 * Run as one loop, every iteration tests the bounds and reads through the clamp, which LLVM vectorizes as a
 * gather (a depthwise conv's NCHW pad ran at a fifth of the speed of its NCHWc one). tir_partition_pad_loops
 * splits a serial or vectorized loop of constant range at the points where a comparison of its select's
 * condition of the form v + k against a constant changes value: for (v, 0, n + 2) becomes [0, 1), [1, n + 1),
 * [n + 1, n + 2). The next tir_simplify_stmt then decides those comparisons and the clamps from each piece's
 * range, so the middle piece is a plain contiguous copy. Comparisons of c * v + k (the column phases of a
 * strided depthwise conv's pad: 2 * v + k) split likewise, after a short loop over the phases is unrolled
 * into one copy of the body per phase. Only nests of at most three loops around the store
 * are split, at most 4 points each. */

#define PART_MAX_POINTS 4

typedef struct Points {
  int64_t p[PART_MAX_POINTS];
  int n;
  bool overflow;
} Points;

/* c and k when e is c * v + k (c != 0) */
static bool linear_in(const Expr *e, const Var *v, int64_t *c, int64_t *k) {
  if (e->kind == E_VAR && e->var == v) {
    *c = 1, *k = 0;
    return true;
  }
  if (e->kind == E_MUL) {
    const Expr *x = e->op.a, *y = e->op.b;
    if (x->kind == E_INT) x = e->op.b, y = e->op.a;
    if (x->kind == E_VAR && x->var == v && y->kind == E_INT && y->ival != 0) {
      *c = y->ival, *k = 0;
      return true;
    }
    return false;
  }
  if (e->kind == E_ADD || e->kind == E_SUB) {
    const Expr *x = e->op.a, *y = e->op.b;
    bool swapped = e->kind == E_ADD && x->kind == E_INT;
    if (swapped) x = e->op.b, y = e->op.a;
    if (y->kind != E_INT || !linear_in(x, v, c, k)) return false;
    *k += e->kind == E_SUB ? -y->ival : y->ival;
    return true;
  }
  return false;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

static void add_point(Points *ps, int64_t x, int64_t lo, int64_t hi) {
  if (x <= lo || x >= hi) return;
  for (int i = 0; i < ps->n; i++)
    if (ps->p[i] == x) return;
  if (ps->n == PART_MAX_POINTS) {
    ps->overflow = true;
    return;
  }
  int i = ps->n++;
  for (; i > 0 && ps->p[i - 1] > x; i--) ps->p[i] = ps->p[i - 1];
  ps->p[i] = x;
}

/* the points in (lo, hi) where a conjunct `v + k  cmp  0` of cond changes value */
static void cond_points(Arena *a, const Expr *cond, const Var *v, int64_t lo, int64_t hi, Points *ps) {
  if (!cond || cond->lanes != 1) return;
  if (cond->kind == E_AND) {
    cond_points(a, cond->op.a, v, lo, hi, ps);
    cond_points(a, cond->op.b, v, lo, hi, ps);
    return;
  }
  if (cond->kind != E_LT && cond->kind != E_LE && cond->kind != E_GT && cond->kind != E_GE) return;
  if (!dtype_is_int(cond->op.a->dtype) || cond->op.a->lanes != 1 || cond->op.b->lanes != 1) return;
  int64_t c, k;
  if (!linear_in(tir_simplify(a, tir_sub(a, cond->op.a, cond->op.b)), v, &c, &k)) return;
  ExprKind kind = cond->kind;
  if (c < 0) { /* c v + k cmp 0  <=>  -c v - k cmp' 0 */
    c = -c, k = -k;
    kind = kind == E_LT ? E_GT : kind == E_GT ? E_LT : kind == E_LE ? E_GE : E_LE;
  }
  /* c v + k >= 0 (and < 0) changes at v = ceil(-k / c); c v + k <= 0 (and > 0) at floor(-k / c) + 1 */
  add_point(ps, kind == E_LT || kind == E_GE ? -floor_div(k, c) : floor_div(-k, c) + 1, lo, hi);
}

/* the store a nest of at most `depth` loops ends in, else NULL */
static const Stmt *nest_store(const Stmt *s, int depth) {
  while (s && s->kind == S_FOR && depth-- > 0) s = s->loop.body;
  return s && s->kind == S_STORE ? s : NULL;
}

static Stmt *part_stmt(void *ctx, Stmt *s) {
  Peel *p = ctx;
  Arena *a = p->a;
  if (!s) return s;
  if (s->kind == S_FOR && (s->loop.for_kind == FOR_SERIAL || s->loop.for_kind == FOR_VECTORIZED) &&
      s->loop.min->kind == E_INT && s->loop.extent->kind == E_INT && s->loop.extent->ival >= 2) {
    const Stmt *st = nest_store(s->loop.body, 2);
    if (st && st->store.value->kind == E_SELECT) {
      int64_t lo = s->loop.min->ival, hi = lo + s->loop.extent->ival;
      Points ps = {.n = 0};
      cond_points(a, st->store.value->op.c, s->loop.var, lo, hi, &ps);
      if (ps.n > 0 && !ps.overflow) {
        Stmt *pieces[PART_MAX_POINTS + 1];
        int64_t from = lo;
        for (int i = 0; i <= ps.n; i++) {
          int64_t to = i < ps.n ? ps.p[i] : hi;
          pieces[i] = tir_for(a, s->loop.var, tir_idx(a, from), tir_idx(a, to - from), s->loop.for_kind,
                              part_stmt(p, s->loop.body));
          from = to;
        }
        p->changed = true;
        return tir_seq(a, ps.n + 1, pieces);
      }
      /* a short serial loop whose value the tests combine with an inner loop's (the phase of a strided pad:
       * 2 * v + phase - 1 >= 0): one copy of the body per value, so the inner loop's tests become c * v + k */
      if (ps.n == 0 && s->loop.for_kind == FOR_SERIAL && hi - lo <= 4 &&
          uses_var(a, st->store.value->op.c, s->loop.var) && s->loop.body->kind == S_FOR) {
        Stmt *pieces[4];
        for (int64_t i = lo; i < hi; i++) {
          Expr *val = tir_idx(a, i);
          Stmt *b = tir_simplify_stmt(a, tir_substitute_stmt(a, s->loop.body, 1, &s->loop.var, &val));
          pieces[i - lo] = part_stmt(p, b);
        }
        p->changed = true;
        return tir_seq(a, (int)(hi - lo), pieces);
      }
    }
  }
  return tir_stmt_map_children(a, s, tir_keep_expr, part_stmt, p);
}

Stmt *tir_partition_pad_loops(Arena *a, Stmt *s, bool *changed) {
  Peel p = {a, false};
  Stmt *r = part_stmt(&p, s);
  *changed = p.changed;
  return r;
}
