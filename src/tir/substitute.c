/* Variable substitution and the generic one-level mutators it is built on (see mutate.h).
 *
 * tir_substitute replaces each occurrence of vars[i] by values[i] in a single bottom-up pass; nodes are
 * rebuilt through the folding constructors only where a child changed, so an untouched subtree keeps its
 * pointer (the mutator rule). Vars are unique objects, so there is no capture to avoid. */
#include <string.h>
#include "tir/mutate.h"

/* ---- structural equality ---- */

bool tir_expr_equal(const Expr *x, const Expr *y) {
  if (x == y) return true;
  if (!x || !y || x->kind != y->kind || x->dtype != y->dtype || x->lanes != y->lanes) return false;
  switch (x->kind) {
  case E_INT: return x->ival == y->ival;
  case E_FLOAT: return x->fval == y->fval || (x->fval != x->fval && y->fval != y->fval);
  case E_VAR: return x->var == y->var;
  case E_CALL:
    if (x->call.intrin != y->call.intrin || x->call.nargs != y->call.nargs) return false;
    for (int i = 0; i < x->call.nargs; i++)
      if (!tir_expr_equal(x->call.args[i], y->call.args[i])) return false;
    return true;
  case E_LOAD:
    if (x->load.buf != y->load.buf || x->load.n != y->load.n) return false;
    for (int i = 0; i < x->load.n; i++)
      if (!tir_expr_equal(x->load.idx[i], y->load.idx[i])) return false;
    return true;
  case E_TENSOR:
    if (x->tensor.tensor != y->tensor.tensor || x->tensor.n != y->tensor.n) return false;
    for (int i = 0; i < x->tensor.n; i++)
      if (!tir_expr_equal(x->tensor.idx[i], y->tensor.idx[i])) return false;
    return true;
  case E_REDUCE:
    if (x->reduce.combiner != y->reduce.combiner || x->reduce.naxes != y->reduce.naxes) return false;
    for (int i = 0; i < x->reduce.naxes; i++)
      if (x->reduce.axes[i] != y->reduce.axes[i]) return false;
    return tir_expr_equal(x->reduce.source, y->reduce.source) && tir_expr_equal(x->reduce.init, y->reduce.init) &&
           tir_expr_equal(x->reduce.cond, y->reduce.cond);
  case E_LET:
    return x->let_var == y->let_var && tir_expr_equal(x->op.a, y->op.a) && tir_expr_equal(x->op.b, y->op.b);
  default: /* binary, compare, logic, select, cast, ramp, broadcast */
    return tir_expr_equal(x->op.a, y->op.a) && tir_expr_equal(x->op.b, y->op.b) && tir_expr_equal(x->op.c, y->op.c);
  }
}

/* ---- one-level mutators ---- */

/* Maps n expressions; returns NULL when none changed, else a fresh array. */
static Expr **map_array(Arena *a, int n, Expr **v, TirExprMap f, void *ctx) {
  Expr **out = NULL;
  for (int i = 0; i < n; i++) {
    Expr *m = f(ctx, v[i]);
    if (m != v[i] && !out) {
      out = arena_alloc(a, (size_t)n * sizeof(Expr *));
      memcpy(out, v, (size_t)i * sizeof(Expr *));
    }
    if (out) out[i] = m;
  }
  return out;
}

static Expr *map_opt(void *ctx, TirExprMap f, Expr *e) { return e ? f(ctx, e) : NULL; }

Expr *tir_expr_map_children(Arena *a, Expr *e, TirExprMap f, void *ctx) {
  switch (e->kind) {
  case E_INT: case E_FLOAT: case E_VAR: return e;
  case E_CALL: {
    Expr **args = map_array(a, e->call.nargs, e->call.args, f, ctx);
    return args ? tir_call(a, e->call.intrin, e->dtype, e->call.nargs, args) : e;
  }
  case E_LOAD: {
    Expr **idx = map_array(a, e->load.n, e->load.idx, f, ctx);
    return idx ? tir_load(a, e->load.buf, e->load.n, idx) : e;
  }
  case E_TENSOR: {
    Expr **idx = map_array(a, e->tensor.n, e->tensor.idx, f, ctx);
    if (!idx) return e;
    Expr *r = arena_memdup(a, e, sizeof(Expr));
    r->tensor.idx = idx;
    return r;
  }
  case E_REDUCE: {
    Expr *src = f(ctx, e->reduce.source), *init = map_opt(ctx, f, e->reduce.init),
         *cond = map_opt(ctx, f, e->reduce.cond);
    if (src == e->reduce.source && init == e->reduce.init && cond == e->reduce.cond) return e;
    Expr *r = arena_memdup(a, e, sizeof(Expr));
    r->reduce.source = src;
    r->reduce.init = init;
    r->reduce.cond = cond;
    r->dtype = src->dtype;
    return r;
  }
  case E_LET: {
    Expr *v = f(ctx, e->op.a), *b = f(ctx, e->op.b);
    return v == e->op.a && b == e->op.b ? e : tir_let(a, e->let_var, v, b);
  }
  case E_NOT: {
    Expr *x = f(ctx, e->op.a);
    return x == e->op.a ? e : tir_not(a, x);
  }
  case E_CAST: {
    Expr *x = f(ctx, e->op.a);
    return x == e->op.a ? e : tir_cast(a, e->dtype, x);
  }
  case E_BROADCAST: {
    Expr *x = f(ctx, e->op.a);
    return x == e->op.a ? e : tir_broadcast(a, x, e->lanes);
  }
  case E_RAMP: {
    Expr *x = f(ctx, e->op.a), *y = f(ctx, e->op.b);
    return x == e->op.a && y == e->op.b ? e : tir_ramp(a, x, y, e->lanes);
  }
  case E_SELECT: {
    Expr *c = f(ctx, e->op.c), *x = f(ctx, e->op.a), *y = f(ctx, e->op.b);
    return c == e->op.c && x == e->op.a && y == e->op.b ? e : tir_select(a, c, x, y);
  }
  default: {
    Expr *x = f(ctx, e->op.a), *y = f(ctx, e->op.b);
    return x == e->op.a && y == e->op.b ? e : tir_bin(a, e->kind, x, y);
  }
  }
}

Stmt *tir_stmt_map_children(Arena *a, Stmt *s, TirExprMap fe, TirStmtMap fs, void *ctx) {
  if (!s) return s;
  switch (s->kind) {
  case S_FOR: {
    Expr *mn = fe(ctx, s->loop.min), *ext = fe(ctx, s->loop.extent);
    Stmt *b = fs(ctx, s->loop.body);
    if (mn == s->loop.min && ext == s->loop.extent && b == s->loop.body) return s;
    return tir_for(a, s->loop.var, mn, ext, s->loop.for_kind, b);
  }
  case S_STORE: {
    Expr **idx = map_array(a, s->store.n, s->store.idx, fe, ctx);
    Expr *v = fe(ctx, s->store.value);
    if (!idx && v == s->store.value) return s;
    return tir_store(a, s->store.buf, s->store.n, idx ? idx : s->store.idx, v);
  }
  case S_SEQ: {
    Stmt **out = NULL;
    for (int i = 0; i < s->seq.n; i++) {
      Stmt *m = fs(ctx, s->seq.stmts[i]);
      if (m != s->seq.stmts[i] && !out) {
        out = arena_alloc(a, (size_t)s->seq.n * sizeof(Stmt *));
        memcpy(out, s->seq.stmts, (size_t)i * sizeof(Stmt *));
      }
      if (out) out[i] = m;
    }
    return out ? tir_seq(a, s->seq.n, out) : s;
  }
  case S_IF: {
    Expr *c = fe(ctx, s->ifs.cond);
    Stmt *t = fs(ctx, s->ifs.then_s), *e = s->ifs.else_s ? fs(ctx, s->ifs.else_s) : NULL;
    if (c == s->ifs.cond && t == s->ifs.then_s && e == s->ifs.else_s) return s;
    return tir_if(a, c, t, e);
  }
  case S_LET: {
    Expr *v = fe(ctx, s->let.value);
    Stmt *b = fs(ctx, s->let.body);
    return v == s->let.value && b == s->let.body ? s : tir_let_stmt(a, s->let.var, v, b);
  }
  case S_ALLOCATE: {
    Stmt *b = fs(ctx, s->alloc.body);
    return b == s->alloc.body ? s : tir_allocate(a, s->alloc.buf, b);
  }
  case S_EVAL: {
    Expr *e = fe(ctx, s->eval.e);
    return e == s->eval.e ? s : tir_eval(a, e);
  }
  }
  return s;
}

Expr *tir_keep_expr(void *ctx, Expr *e) {
  (void)ctx;
  return e;
}

/* ---- memo ---- */

void memo_init(ExprMemo *m, Arena *a) {
  memset(m, 0, sizeof(*m));
  m->a = a;
  m->gen = 1;
}

static unsigned memo_hash(const Expr *k, int cap) {
  uint64_t h = (uint64_t)(uintptr_t)k * 0x9E3779B97F4A7C15ull;
  return (unsigned)(h >> 32) & (unsigned)(cap - 1);
}

Expr *memo_get(const ExprMemo *m, const Expr *k) {
  if (!m->cap) return NULL;
  for (unsigned h = memo_hash(k, m->cap);; h = (h + 1) & (unsigned)(m->cap - 1)) {
    if (!m->keys[h] || m->gens[h] != m->gen) return NULL;
    if (m->keys[h] == k) return m->vals[h];
  }
}

void memo_put(ExprMemo *m, const Expr *k, Expr *v) {
  if (2 * (m->n + 1) > m->cap) {
    ExprMemo old = *m;
    m->cap = old.cap ? old.cap * 2 : 32;
    m->n = 0;
    m->keys = arena_alloc(m->a, (size_t)m->cap * sizeof(*m->keys));
    m->vals = arena_alloc(m->a, (size_t)m->cap * sizeof(*m->vals));
    m->gens = arena_alloc(m->a, (size_t)m->cap * sizeof(*m->gens));
    for (int i = 0; i < old.cap; i++)
      if (old.keys[i] && old.gens[i] == old.gen) memo_put(m, old.keys[i], old.vals[i]);
  }
  unsigned h = memo_hash(k, m->cap);
  while (m->keys[h] && m->gens[h] == m->gen && m->keys[h] != k) h = (h + 1) & (unsigned)(m->cap - 1);
  if (!(m->keys[h] && m->gens[h] == m->gen)) m->n++;
  m->keys[h] = k;
  m->vals[h] = v;
  m->gens[h] = m->gen;
}

void memo_clear(ExprMemo *m) {
  m->gen++;
  m->n = 0;
}

/* ---- substitution ---- */

typedef struct Subst {
  Arena *a;
  int n;
  Var **vars;
  Expr **values;
  ExprMemo memo;
} Subst;

static Expr *subst_expr(void *ctx, Expr *e) {
  Subst *s = ctx;
  if (e->kind == E_VAR) {
    for (int i = 0; i < s->n; i++)
      if (s->vars[i] == e->var) return s->values[i];
    return e;
  }
  if (e->kind == E_INT || e->kind == E_FLOAT) return e;
  Expr *r = memo_get(&s->memo, e);
  if (!r) {
    r = tir_expr_map_children(s->a, e, subst_expr, ctx);
    memo_put(&s->memo, e, r);
  }
  return r;
}

static Stmt *subst_stmt(void *ctx, Stmt *st) {
  Subst *s = ctx;
  return tir_stmt_map_children(s->a, st, subst_expr, subst_stmt, ctx);
}

Expr *tir_substitute(Arena *a, Expr *e, int n, Var **vars, Expr **values) {
  if (!e || n == 0) return e;
  Subst s = {a, n, vars, values};
  memo_init(&s.memo, a);
  return subst_expr(&s, e);
}

Stmt *tir_substitute_stmt(Arena *a, Stmt *st, int n, Var **vars, Expr **values) {
  if (!st || n == 0) return st;
  Subst s = {a, n, vars, values};
  memo_init(&s.memo, a);
  return subst_stmt(&s, st);
}
