/* passes/tir/vectorize.c: VectorizeLoop, the TIR pass that turns FOR_VECTORIZED loops into vector code
 * (TVM's VectorizeLoop, reduced to straight-line bodies).
 *
 * Algorithm: for a loop `vectorized (v, min, W)` with a constant W in [2, 64], the body is rebuilt bottom-up
 * with v replaced by Ramp(min, 1, W). Integer + - * of a ramp and a loop-invariant scalar (or of two ramps)
 * stay ramps, so an index like `o * 8 + v` becomes Ramp(o * 8, 1, W), which codegen loads and stores as one
 * contiguous vector; everything else that depends on v is widened with the constructors (a scalar meeting a
 * vector is broadcast). Every access that depends on v must be such a contiguous vector: a gather or scatter
 * (codegen would emit it lane by lane) is slower than LLVM's loop vectorizer on the original loop. A let
 * whose value becomes a vector makes its variable a vector variable (a W-lane reference to the same Var).
 *
 * The body is rewritten only when the result has the serial loop's meaning:
 *  - no nested loop or allocation, and every if condition stays loop-invariant (scalar);
 *  - a store whose indices do not depend on v must store a loop-invariant value (else it is a reduction
 *    across iterations: left to LLVM's loop vectorizer, which knows how to reorder it);
 *  - a buffer both stored and loaded in the body is stored at one index tuple only, every load of it uses
 *    that same tuple, and that tuple is lane-injective (one unit-or-constant-stride ramp, other indices
 *    scalar), so each lane reads only what the same lane wrote: no cross-lane dependence.
 * A loop that fails any check keeps its FOR_VECTORIZED kind (codegen then asks LLVM to vectorize it). */
#include <string.h>
#include "passes/tir/vectorize.h"
#include "tir/mutate.h"

#define VEC_MAX_LANES 64

typedef struct Access {
  Buffer *buf;
  int n;
  Expr **idx;
} Access;

typedef struct VecBind {
  Var *var;
  Expr *vref; /* W-lane E_VAR of the same Var */
} VecBind;

typedef struct Vectorizer {
  Arena *a;
  Var *var;
  Expr *ramp; /* Ramp(min, 1, W) */
  int lanes;
  bool fail;
  VEC(VecBind) binds;
  VEC(Access) loads;
  VEC(Access) stores;
} Vectorizer;

static bool is_int_dtype(mlc_dtype t) { return dtype_is_int(t); }

static Expr *vexpr(Vectorizer *v, Expr *e);

static Expr *vec_ref(Vectorizer *v, Var *var) {
  for (int i = v->binds.n - 1; i >= 0; i--)
    if (v->binds.v[i].var == var) return v->binds.v[i].vref;
  return NULL;
}

static Expr *make_vec_var(Vectorizer *v, Var *var) {
  Expr *r = tir_varref(v->a, var);
  Expr *c = arena_alloc(v->a, sizeof *c);
  *c = *r;
  c->lanes = v->lanes;
  return c;
}

/* a (+|-) b where at least one side is a ramp and the other a ramp or a scalar; NULL otherwise */
static Expr *ramp_addsub(Vectorizer *v, ExprKind k, Expr *x, Expr *y) {
  Arena *a = v->a;
  bool xr = x->kind == E_RAMP, yr = y->kind == E_RAMP;
  if (!(xr || yr) || (!xr && x->lanes != 1) || (!yr && y->lanes != 1)) return NULL;
  if (x->dtype != y->dtype || !is_int_dtype(x->dtype)) return NULL;
  Expr *xb = xr ? x->op.a : x, *xs = xr ? x->op.b : tir_int(a, x->dtype, 0);
  Expr *yb = yr ? y->op.a : y, *ys = yr ? y->op.b : tir_int(a, y->dtype, 0);
  return tir_ramp(a, tir_bin(a, k, xb, yb), tir_bin(a, k, xs, ys), v->lanes);
}

static Expr *vbinary(Vectorizer *v, Expr *e) {
  Expr *x = vexpr(v, e->op.a), *y = vexpr(v, e->op.b);
  if (x == e->op.a && y == e->op.b) return e;
  Arena *a = v->a;
  ExprKind k = e->kind;
  if (k == E_ADD || k == E_SUB) {
    Expr *r = ramp_addsub(v, k, x, y);
    if (r) return r;
  }
  if (k == E_MUL && x->dtype == y->dtype && is_int_dtype(x->dtype)) {
    if (x->kind == E_RAMP && y->lanes == 1) return tir_ramp(a, tir_mul(a, x->op.a, y), tir_mul(a, x->op.b, y), v->lanes);
    if (y->kind == E_RAMP && x->lanes == 1) return tir_ramp(a, tir_mul(a, x, y->op.a), tir_mul(a, x, y->op.b), v->lanes);
  }
  return tir_bin(a, k, x, y);
}

/* The access is one contiguous vector: the last index is a unit-stride ramp, the others are scalars. Anything
 * else would be a lane-by-lane gather or scatter, which is slower than what LLVM's loop vectorizer makes of
 * the original loop (interleaved accesses, or scalar code): such loops are left to it. */
static bool contiguous(int n, Expr **idx) {
  for (int i = 0; i < n - 1; i++)
    if (idx[i]->lanes > 1) return false;
  int64_t st;
  Expr *last = n ? idx[n - 1] : NULL;
  return last && (last->lanes == 1 || (last->kind == E_RAMP && tir_is_const_int(last->op.b, &st) && st == 1));
}

static Expr **vexprs(Vectorizer *v, int n, Expr **es, bool *changed) {
  Expr **out = arena_alloc(v->a, sizeof(Expr *) * (size_t)(n + 1));
  *changed = false;
  for (int i = 0; i < n; i++) {
    out[i] = vexpr(v, es[i]);
    *changed |= out[i] != es[i];
  }
  return out;
}

static Expr *vexpr(Vectorizer *v, Expr *e) {
  if (v->fail || !e) return e;
  Arena *a = v->a;
  switch (e->kind) {
  case E_INT: case E_FLOAT: return e;
  case E_VAR: {
    if (e->var == v->var) return v->ramp;
    Expr *r = vec_ref(v, e->var);
    return r ? r : e;
  }
  case E_ADD: case E_SUB: case E_MUL: case E_DIV: case E_MOD: case E_FLOORDIV: case E_FLOORMOD:
  case E_MIN: case E_MAX: case E_BITAND: case E_BITOR: case E_BITXOR: case E_SHL: case E_SHR:
  case E_EQ: case E_NE: case E_LT: case E_LE: case E_GT: case E_GE: case E_AND: case E_OR:
    return vbinary(v, e);
  case E_NOT: {
    Expr *x = vexpr(v, e->op.a);
    return x == e->op.a ? e : tir_not(a, x);
  }
  case E_SELECT: {
    Expr *c = vexpr(v, e->op.c), *t = vexpr(v, e->op.a), *f = vexpr(v, e->op.b);
    if (c == e->op.c && t == e->op.a && f == e->op.b) return e;
    return tir_select(a, c, t, f);
  }
  case E_CAST: {
    Expr *x = vexpr(v, e->op.a);
    if (x == e->op.a) return e;
    if (x->dtype == e->dtype) { /* keep the node: a same-dtype cast folds away in the constructor */
      Expr *c = arena_alloc(a, sizeof *c);
      *c = *e;
      c->op.a = x;
      c->lanes = x->lanes;
      return c;
    }
    return tir_cast(a, e->dtype, x);
  }
  case E_CALL: {
    bool ch;
    Expr **args = vexprs(v, e->call.nargs, e->call.args, &ch);
    return ch ? tir_call(a, e->call.intrin, e->dtype, e->call.nargs, args) : e;
  }
  case E_LOAD: {
    bool ch;
    Expr **idx = vexprs(v, e->load.n, e->load.idx, &ch);
    if (ch && !contiguous(e->load.n, idx)) v->fail = true;
    Access acc = {e->load.buf, e->load.n, ch ? idx : e->load.idx};
    vec_push(a, &v->loads, acc);
    return ch ? tir_load(a, e->load.buf, e->load.n, idx) : e;
  }
  case E_LET: {
    Expr *val = vexpr(v, e->op.a);
    bool vec = val->lanes > 1;
    if (vec) vec_push(a, &v->binds, ((VecBind){e->let_var, make_vec_var(v, e->let_var)}));
    Expr *body = vexpr(v, e->op.b);
    if (vec) v->binds.n--;
    if (val == e->op.a && body == e->op.b) return e;
    return tir_let(a, e->let_var, val, body);
  }
  default: /* ramps/broadcasts (nested vectorization), TE-only nodes */
    v->fail = true;
    return e;
  }
}

static Stmt *vstmt(Vectorizer *v, Stmt *s) {
  if (v->fail || !s) return s;
  Arena *a = v->a;
  switch (s->kind) {
  case S_STORE: {
    bool ch;
    Expr **idx = vexprs(v, s->store.n, s->store.idx, &ch);
    if (ch && !contiguous(s->store.n, idx)) v->fail = true;
    Expr *val = vexpr(v, s->store.value);
    bool vidx = false;
    for (int i = 0; i < s->store.n; i++) vidx |= idx[i]->lanes > 1;
    if (!vidx && val->lanes > 1) { /* a reduction into one location */
      v->fail = true;
      return s;
    }
    if (vidx && val->lanes == 1) val = tir_broadcast(a, val, v->lanes);
    Access acc = {s->store.buf, s->store.n, idx};
    vec_push(a, &v->stores, acc);
    if (!ch && val == s->store.value) return s;
    return tir_store(a, s->store.buf, s->store.n, idx, val);
  }
  case S_SEQ: {
    Stmt **out = arena_alloc(a, sizeof(Stmt *) * (size_t)(s->seq.n + 1));
    bool ch = false;
    for (int i = 0; i < s->seq.n; i++) {
      out[i] = vstmt(v, s->seq.stmts[i]);
      ch |= out[i] != s->seq.stmts[i];
    }
    return ch ? tir_seq(a, s->seq.n, out) : s;
  }
  case S_IF: {
    Expr *c = vexpr(v, s->ifs.cond);
    if (c->lanes > 1) {
      v->fail = true;
      return s;
    }
    Stmt *t = vstmt(v, s->ifs.then_s), *f = vstmt(v, s->ifs.else_s);
    if (c == s->ifs.cond && t == s->ifs.then_s && f == s->ifs.else_s) return s;
    return tir_if(a, c, t, f);
  }
  case S_LET: {
    Expr *val = vexpr(v, s->let.value);
    bool vec = val->lanes > 1;
    if (vec) vec_push(a, &v->binds, ((VecBind){s->let.var, make_vec_var(v, s->let.var)}));
    Stmt *body = vstmt(v, s->let.body);
    if (vec) v->binds.n--;
    if (val == s->let.value && body == s->let.body) return s;
    return tir_let_stmt(a, s->let.var, val, body);
  }
  case S_EVAL: {
    Expr *x = vexpr(v, s->eval.e);
    return x == s->eval.e ? s : tir_eval(a, x);
  }
  default: /* S_FOR, S_ALLOCATE */
    v->fail = true;
    return s;
  }
}

static bool same_access(const Access *x, const Access *y) {
  if (x->buf != y->buf || x->n != y->n) return false;
  for (int i = 0; i < x->n; i++)
    if (!tir_expr_equal(x->idx[i], y->idx[i])) return false;
  return true;
}

/* Distinct lanes address distinct elements: one index is a ramp with a non-zero constant stride, the others
 * are scalars. */
static bool lane_injective(const Access *x) {
  int nvec = 0;
  for (int i = 0; i < x->n; i++) {
    if (x->idx[i]->lanes == 1) continue;
    int64_t st;
    if (x->idx[i]->kind != E_RAMP || !tir_is_const_int(x->idx[i]->op.b, &st) || st == 0) return false;
    nvec++;
  }
  return nvec == 1;
}

static bool dependences_ok(const Vectorizer *v) {
  for (int i = 0; i < v->stores.n; i++) {
    const Access *st = &v->stores.v[i];
    bool loaded = false;
    for (int j = 0; j < v->loads.n; j++) {
      if (v->loads.v[j].buf != st->buf) continue;
      loaded = true;
      if (!same_access(&v->loads.v[j], st)) return false;
    }
    if (!loaded) continue;
    if (!lane_injective(st)) return false;
    for (int j = 0; j < v->stores.n; j++)
      if (v->stores.v[j].buf == st->buf && !same_access(&v->stores.v[j], st)) return false;
  }
  return true;
}

static Stmt *vectorize_loop(Arena *a, Stmt *s) {
  int64_t w;
  if (!tir_is_const_int(s->loop.extent, &w) || w < 2 || w > VEC_MAX_LANES) return s;
  mlc_dtype t = s->loop.var->dtype;
  if (!is_int_dtype(t) || s->loop.min->lanes != 1) return s;
  Vectorizer v = {.a = a, .var = s->loop.var, .lanes = (int)w};
  v.ramp = tir_ramp(a, s->loop.min, tir_int(a, t, 1), (int)w);
  Stmt *body = vstmt(&v, s->loop.body);
  if (v.fail || !dependences_ok(&v)) return s;
  return body;
}

static Stmt *walk(Arena *a, Stmt *s) {
  if (!s) return s;
  switch (s->kind) {
  case S_FOR: {
    Stmt *body = walk(a, s->loop.body);
    Stmt *r = body == s->loop.body ? s : tir_for(a, s->loop.var, s->loop.min, s->loop.extent, s->loop.for_kind, body);
    return r->loop.for_kind == FOR_VECTORIZED ? vectorize_loop(a, r) : r;
  }
  case S_SEQ: {
    Stmt **out = arena_alloc(a, sizeof(Stmt *) * (size_t)(s->seq.n + 1));
    bool ch = false;
    for (int i = 0; i < s->seq.n; i++) {
      out[i] = walk(a, s->seq.stmts[i]);
      ch |= out[i] != s->seq.stmts[i];
    }
    return ch ? tir_seq(a, s->seq.n, out) : s;
  }
  case S_IF: {
    Stmt *t = walk(a, s->ifs.then_s), *f = walk(a, s->ifs.else_s);
    return t == s->ifs.then_s && f == s->ifs.else_s ? s : tir_if(a, s->ifs.cond, t, f);
  }
  case S_LET: {
    Stmt *b = walk(a, s->let.body);
    return b == s->let.body ? s : tir_let_stmt(a, s->let.var, s->let.value, b);
  }
  case S_ALLOCATE: {
    Stmt *b = walk(a, s->alloc.body);
    return b == s->alloc.body ? s : tir_allocate(a, s->alloc.buf, b);
  }
  default: return s;
  }
}

Stmt *tir_vectorize_loops(Arena *a, Stmt *s) { return walk(a, s); }
