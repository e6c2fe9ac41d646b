/* TIR constructors and dtype helpers.
 *
 * Every expression and statement is built here, in the caller's Arena. tir_bin folds the trivial forms at
 * construction time (both operands constant; x+0, x-0, x*1, integer x*0, x/1) so that index arithmetic built
 * by TE lowering stays small before the simplifier runs. Operands of different dtypes are made consistent
 * (a constant is re-typed, otherwise the right side is cast to the left side's dtype) and a scalar meeting a
 * vector is broadcast; comparisons and logic produce bool. Integer constants are wrapped to the width of their dtype, as the machine would. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include "tir/tir.h"

/* ids are unique per process; atomic so that compilations on several threads stay distinct */
static atomic_int next_var_id = 1, next_buf_id = 1;

bool dtype_is_float(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16 || t == MLC_F32 || t == MLC_F64; }

bool dtype_is_int(mlc_dtype t) {
  switch (t) {
  case MLC_U8: case MLC_I8: case MLC_U16: case MLC_I16: case MLC_I32: case MLC_I64: case MLC_U32: case MLC_U64:
    return true;
  default:
    return false;
  }
}

bool dtype_is_lowbit(mlc_dtype t) { return t >= MLC_F8E4M3FN && t <= MLC_I2; }

bool dtype_is_lowfloat(mlc_dtype t) {
  return (t >= MLC_F8E4M3FN && t <= MLC_F8E5M2FNUZ) || t == MLC_F4E2M1 || t == MLC_F8E8M0;
}

bool dtype_is_signed(mlc_dtype t) {
  return t == MLC_I8 || t == MLC_I16 || t == MLC_I32 || t == MLC_I64 || dtype_is_float(t);
}

/* Wraps v to the value range of integer dtype t (two's complement). */
static int64_t wrap_int(mlc_dtype t, int64_t v) {
  switch (t) {
  case MLC_BOOL: return v != 0;
  case MLC_I8: return (int8_t)v;
  case MLC_U8: return (uint8_t)v;
  case MLC_I16: return (int16_t)v;
  case MLC_U16: return (uint16_t)v;
  case MLC_I32: return (int32_t)v;
  case MLC_U32: return (uint32_t)v;
  case MLC_I4: return (int64_t)((uint64_t)v << 60) >> 60; /* sub-byte integers: sign-extended from 4 / 2 bits */
  case MLC_U4: return v & 15;
  case MLC_I2: return (int64_t)((uint64_t)v << 62) >> 62;
  case MLC_U2: return v & 3;
  case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_F8E8M0:
    return v & 0xff; /* bits */
  case MLC_F4E2M1: return v & 15;
  default: return v;
  }
}

static Expr *new_expr(Arena *a, ExprKind k, mlc_dtype t) {
  Expr *e = arena_alloc(a, sizeof(Expr));
  e->kind = k;
  e->dtype = t;
  e->lanes = 1;
  return e;
}

static Stmt *new_stmt(Arena *a, StmtKind k) {
  Stmt *s = arena_alloc(a, sizeof(Stmt));
  s->kind = k;
  return s;
}

Var *tir_var(Arena *a, const char *name, mlc_dtype t) {
  Var *v = arena_alloc(a, sizeof(Var));
  v->name = arena_strdup(a, name ? name : "v");
  v->dtype = t;
  v->id = atomic_fetch_add(&next_var_id, 1);
  return v;
}

Buffer *tir_buffer(Arena *a, const char *name, mlc_dtype t, int ndim, const int64_t *shape) {
  Buffer *b = arena_alloc(a, sizeof(Buffer));
  b->name = arena_strdup(a, name ? name : "buf");
  b->dtype = t;
  b->ndim = ndim < 0 ? 0 : ndim > MLC_MAX_DIMS ? MLC_MAX_DIMS : ndim;
  for (int i = 0; i < b->ndim; i++) b->shape[i] = shape[i];
  b->id = atomic_fetch_add(&next_buf_id, 1);
  return b;
}

Expr *tir_int(Arena *a, mlc_dtype t, int64_t v) {
  Expr *e = new_expr(a, E_INT, t);
  e->ival = wrap_int(t, v);
  return e;
}

Expr *tir_idx(Arena *a, int64_t v) { return tir_int(a, MLC_I64, v); }

static double round_float(mlc_dtype t, double v) { return t == MLC_F64 ? v : (double)(float)v; }

Expr *tir_float(Arena *a, mlc_dtype t, double v) {
  Expr *e = new_expr(a, E_FLOAT, t);
  e->fval = round_float(t, v);
  return e;
}

Expr *tir_const(Arena *a, mlc_dtype t, double v) {
  if (dtype_is_float(t)) return tir_float(a, t, v);
  /* float8 / float4 hold bit patterns: the value is a float32 constant converted by the generated code */
  if (dtype_is_lowfloat(t)) return tir_cast(a, t, tir_float(a, MLC_F32, v));
  if (isnan(v)) v = 0;
  if (v >= 9.2233720368547758e18) return tir_int(a, t, INT64_MAX);
  if (v <= -9.2233720368547758e18) return tir_int(a, t, INT64_MIN);
  return tir_int(a, t, (int64_t)v);
}

Expr *tir_varref(Arena *a, Var *v) {
  Expr *e = new_expr(a, E_VAR, v->dtype);
  e->var = v;
  return e;
}

bool tir_is_const_int(const Expr *e, int64_t *v) {
  if (!e || e->kind != E_INT || e->lanes != 1) return false;
  if (v) *v = e->ival;
  return true;
}

static bool is_const_float(const Expr *e, double *v) {
  if (!e || e->kind != E_FLOAT || e->lanes != 1) return false;
  *v = e->fval;
  return true;
}

static bool is_compare(ExprKind k) { return k >= E_EQ && k <= E_GE; }
static bool is_logic(ExprKind k) { return k == E_AND || k == E_OR; }

/* Re-types x to t: constants are rebuilt, everything else is cast. */
static Expr *coerce(Arena *a, Expr *x, mlc_dtype t) {
  if (x->dtype == t) return x;
  if (x->kind == E_INT && x->lanes == 1) return tir_const(a, t, (double)x->ival);
  if (x->kind == E_FLOAT && x->lanes == 1) return tir_const(a, t, x->fval);
  return tir_cast(a, t, x);
}

static int64_t floordiv64(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}

static int64_t floormod64(int64_t x, int64_t y) { return x - floordiv64(x, y) * y; }

/* Folds an integer binary op; returns false when it must not be folded (division by zero, bad shift). */
static bool fold_int(ExprKind k, mlc_dtype t, int64_t x, int64_t y, int64_t *r) {
  bool uns = !dtype_is_signed(t) && t != MLC_I64;
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  switch (k) {
  case E_ADD: *r = (int64_t)(ux + uy); return true;
  case E_SUB: *r = (int64_t)(ux - uy); return true;
  case E_MUL: *r = (int64_t)(ux * uy); return true;
  case E_DIV:
    if (y == 0 || (x == INT64_MIN && y == -1)) return false;
    *r = uns && t == MLC_U64 ? (int64_t)(ux / uy) : x / y;
    return true;
  case E_MOD:
    if (y == 0 || (x == INT64_MIN && y == -1)) return false;
    *r = uns && t == MLC_U64 ? (int64_t)(ux % uy) : x % y;
    return true;
  case E_FLOORDIV:
    if (y == 0 || (x == INT64_MIN && y == -1)) return false;
    *r = floordiv64(x, y);
    return true;
  case E_FLOORMOD:
    if (y == 0 || (x == INT64_MIN && y == -1)) return false;
    *r = floormod64(x, y);
    return true;
  case E_MIN: *r = (uns && t == MLC_U64) ? (int64_t)(ux < uy ? ux : uy) : (x < y ? x : y); return true;
  case E_MAX: *r = (uns && t == MLC_U64) ? (int64_t)(ux > uy ? ux : uy) : (x > y ? x : y); return true;
  case E_BITAND: *r = x & y; return true;
  case E_BITOR: *r = x | y; return true;
  case E_BITXOR: *r = x ^ y; return true;
  case E_SHL:
    if (y < 0 || y >= 64) return false;
    *r = (int64_t)(ux << y);
    return true;
  case E_SHR:
    if (y < 0 || y >= 64) return false;
    *r = uns || t == MLC_U64 ? (int64_t)(ux >> y) : x >> y;
    return true;
  case E_EQ: *r = x == y; return true;
  case E_NE: *r = x != y; return true;
  case E_LT: *r = (t == MLC_U64) ? ux < uy : x < y; return true;
  case E_LE: *r = (t == MLC_U64) ? ux <= uy : x <= y; return true;
  case E_GT: *r = (t == MLC_U64) ? ux > uy : x > y; return true;
  case E_GE: *r = (t == MLC_U64) ? ux >= uy : x >= y; return true;
  case E_AND: *r = x && y; return true;
  case E_OR: *r = x || y; return true;
  default: return false;
  }
}

static bool fold_float(ExprKind k, double x, double y, double *r, bool *is_bool) {
  *is_bool = false;
  switch (k) {
  case E_ADD: *r = x + y; return true;
  case E_SUB: *r = x - y; return true;
  case E_MUL: *r = x * y; return true;
  case E_DIV: *r = x / y; return true;
  case E_MOD: *r = fmod(x, y); return true;
  case E_MIN: *r = x < y ? x : y; return true;
  case E_MAX: *r = x > y ? x : y; return true;
  case E_EQ: *r = x == y; *is_bool = true; return true;
  case E_NE: *r = x != y; *is_bool = true; return true;
  case E_LT: *r = x < y; *is_bool = true; return true;
  case E_LE: *r = x <= y; *is_bool = true; return true;
  case E_GT: *r = x > y; *is_bool = true; return true;
  case E_GE: *r = x >= y; *is_bool = true; return true;
  default: return false;
  }
}

Expr *tir_bin(Arena *a, ExprKind k, Expr *x, Expr *y) {
  if (is_logic(k)) {
    x = coerce(a, x, MLC_BOOL);
    y = coerce(a, y, MLC_BOOL);
  } else if (x->dtype != y->dtype) {
    if ((y->kind == E_INT || y->kind == E_FLOAT) && y->lanes == 1) y = coerce(a, y, x->dtype);
    else if ((x->kind == E_INT || x->kind == E_FLOAT) && x->lanes == 1) x = coerce(a, x, y->dtype);
    else y = coerce(a, y, x->dtype);
  }
  /* a scalar meeting a vector is broadcast to its lanes */
  if (x->lanes != y->lanes && x->lanes == 1) x = tir_broadcast(a, x, y->lanes);
  else if (x->lanes != y->lanes && y->lanes == 1) y = tir_broadcast(a, y, x->lanes);
  mlc_dtype t = x->dtype;
  mlc_dtype rt = (is_compare(k) || is_logic(k)) ? MLC_BOOL : t;
  int64_t xi = 0, yi = 0;
  double xf = 0, yf = 0;
  bool xc = tir_is_const_int(x, &xi), yc = tir_is_const_int(y, &yi);
  if (xc && yc) {
    int64_t r;
    if (fold_int(k, t, xi, yi, &r)) return tir_int(a, rt, r);
  }
  if (is_const_float(x, &xf) && is_const_float(y, &yf)) {
    double r;
    bool ib;
    if (fold_float(k, xf, yf, &r, &ib)) return ib ? tir_int(a, MLC_BOOL, (int64_t)r) : tir_float(a, t, r);
  }
  bool isint = dtype_is_int(t);
  if (isint) {
    switch (k) {
    case E_ADD:
      if (yc && yi == 0) return x;
      if (xc && xi == 0) return y;
      break;
    case E_SUB:
      if (yc && yi == 0) return x;
      break;
    case E_MUL:
      if (yc && yi == 1) return x;
      if (xc && xi == 1) return y;
      if ((yc && yi == 0) || (xc && xi == 0)) return tir_int(a, t, 0);
      break;
    case E_DIV: case E_FLOORDIV:
      if (yc && yi == 1) return x;
      break;
    case E_MOD: case E_FLOORMOD:
      if (yc && yi == 1) return tir_int(a, t, 0);
      break;
    default: break;
    }
  } else if (dtype_is_float(t)) {
    /* only the identities that hold for every float, -0.0 and NaN included */
    if (k == E_MUL && is_const_float(y, &yf) && yf == 1.0) return x;
    if (k == E_MUL && is_const_float(x, &xf) && xf == 1.0) return y;
    if (k == E_DIV && is_const_float(y, &yf) && yf == 1.0) return x;
    if (k == E_SUB && is_const_float(y, &yf) && yf == 0.0 && !signbit(yf)) return x;
  } else if (t == MLC_BOOL) {
    if (k == E_AND) {
      if (xc) return xi ? y : x;
      if (yc) return yi ? x : y;
    }
    if (k == E_OR) {
      if (xc) return xi ? x : y;
      if (yc) return yi ? y : x;
    }
  }
  Expr *e = new_expr(a, k, rt);
  e->lanes = x->lanes > y->lanes ? x->lanes : y->lanes;
  e->op.a = x;
  e->op.b = y;
  return e;
}

Expr *tir_not(Arena *a, Expr *x) {
  x = coerce(a, x, MLC_BOOL);
  int64_t v;
  if (tir_is_const_int(x, &v)) return tir_int(a, MLC_BOOL, !v);
  if (x->kind == E_NOT) return x->op.a;
  Expr *e = new_expr(a, E_NOT, MLC_BOOL);
  e->lanes = x->lanes;
  e->op.a = x;
  return e;
}

Expr *tir_select(Arena *a, Expr *cond, Expr *t, Expr *f) {
  cond = coerce(a, cond, MLC_BOOL);
  if (t->dtype != f->dtype) f = coerce(a, f, t->dtype);
  int64_t v;
  if (tir_is_const_int(cond, &v)) return v ? t : f;
  if (t == f) return t;
  Expr *e = new_expr(a, E_SELECT, t->dtype);
  e->lanes = t->lanes > f->lanes ? t->lanes : f->lanes;
  e->op.a = t;
  e->op.b = f;
  e->op.c = cond;
  return e;
}

Expr *tir_cast(Arena *a, mlc_dtype t, Expr *x) {
  if (x->dtype == t) return x;
  /* casts from or to the low-precision types are never folded here: codegen owns their conversions */
  bool low = dtype_is_lowbit(t) || dtype_is_lowbit(x->dtype);
  if (!low && x->lanes == 1 && (x->kind == E_INT || x->kind == E_FLOAT)) {
    double v = x->kind == E_INT ? (double)x->ival : x->fval;
    if (t == MLC_BOOL) return tir_int(a, t, v != 0);
    if (dtype_is_float(t)) {
      if (x->kind == E_INT && x->dtype == MLC_U64) v = (double)(uint64_t)x->ival;
      return tir_float(a, t, v);
    }
    if (x->kind == E_INT) return tir_int(a, t, x->ival);
    if (isfinite(v)) return tir_const(a, t, trunc(v));
  }
  Expr *e = new_expr(a, E_CAST, t);
  e->lanes = x->lanes;
  e->op.a = x;
  return e;
}

Expr *tir_call(Arena *a, Intrin in, mlc_dtype t, int nargs, Expr **args) {
  Expr *e = new_expr(a, E_CALL, t);
  e->call.intrin = in;
  e->call.nargs = nargs;
  e->call.args = nargs ? arena_memdup(a, args, (size_t)nargs * sizeof(Expr *)) : NULL;
  for (int i = 0; i < nargs; i++)
    if (args[i]->lanes > e->lanes) e->lanes = args[i]->lanes;
  return e;
}

Expr *tir_load(Arena *a, Buffer *b, int n, Expr **idx) {
  Expr *e = new_expr(a, E_LOAD, b->dtype);
  e->load.buf = b;
  e->load.n = n;
  e->load.idx = n ? arena_memdup(a, idx, (size_t)n * sizeof(Expr *)) : NULL;
  for (int i = 0; i < n; i++)
    if (idx[i]->lanes > e->lanes) e->lanes = idx[i]->lanes;
  return e;
}

Expr *tir_let(Arena *a, Var *v, Expr *value, Expr *body) {
  Expr *e = new_expr(a, E_LET, body->dtype);
  e->lanes = body->lanes;
  e->let_var = v;
  e->op.a = value;
  e->op.b = body;
  return e;
}

Expr *tir_ramp(Arena *a, Expr *base, Expr *stride, int lanes) {
  Expr *e = new_expr(a, E_RAMP, base->dtype);
  e->lanes = lanes;
  e->op.a = base;
  e->op.b = coerce(a, stride, base->dtype);
  return e;
}

Expr *tir_broadcast(Arena *a, Expr *x, int lanes) {
  if (lanes == 1) return x;
  Expr *e = new_expr(a, E_BROADCAST, x->dtype);
  e->lanes = lanes;
  e->op.a = x;
  return e;
}

Expr *tir_min_value(Arena *a, mlc_dtype t) {
  switch (t) {
  case MLC_F32: case MLC_F64: case MLC_F16: case MLC_BF16: return tir_float(a, t, -INFINITY);
  case MLC_I8: return tir_int(a, t, INT8_MIN);
  case MLC_I16: return tir_int(a, t, INT16_MIN);
  case MLC_I32: return tir_int(a, t, INT32_MIN);
  case MLC_I64: return tir_int(a, t, INT64_MIN);
  default: return tir_int(a, t, 0); /* unsigned and bool */
  }
}

Expr *tir_max_value(Arena *a, mlc_dtype t) {
  switch (t) {
  case MLC_F32: case MLC_F64: case MLC_F16: case MLC_BF16: return tir_float(a, t, INFINITY);
  case MLC_I8: return tir_int(a, t, INT8_MAX);
  case MLC_U8: return tir_int(a, t, UINT8_MAX);
  case MLC_I16: return tir_int(a, t, INT16_MAX);
  case MLC_U16: return tir_int(a, t, UINT16_MAX);
  case MLC_I32: return tir_int(a, t, INT32_MAX);
  case MLC_U32: return tir_int(a, t, UINT32_MAX);
  case MLC_U64: return tir_int(a, t, -1); /* all ones */
  case MLC_BOOL: return tir_int(a, t, 1);
  default: return tir_int(a, t, INT64_MAX);
  }
}

/* ---- statements ---- */

Stmt *tir_for(Arena *a, Var *v, Expr *min, Expr *extent, ForKind k, Stmt *body) {
  Stmt *s = new_stmt(a, S_FOR);
  s->loop.var = v;
  s->loop.min = min;
  s->loop.extent = extent;
  s->loop.for_kind = k;
  s->loop.body = body;
  return s;
}

Stmt *tir_store(Arena *a, Buffer *b, int n, Expr **idx, Expr *value) {
  Stmt *s = new_stmt(a, S_STORE);
  s->store.buf = b;
  s->store.n = n;
  s->store.idx = n ? arena_memdup(a, idx, (size_t)n * sizeof(Expr *)) : NULL;
  s->store.value = value->dtype == b->dtype ? value : tir_cast(a, b->dtype, value);
  return s;
}

Stmt *tir_seq(Arena *a, int n, Stmt **stmts) {
  int total = 0;
  for (int i = 0; i < n; i++)
    if (stmts[i]) total += stmts[i]->kind == S_SEQ ? stmts[i]->seq.n : 1;
  Stmt *s = new_stmt(a, S_SEQ);
  s->seq.stmts = total ? arena_alloc(a, (size_t)total * sizeof(Stmt *)) : NULL;
  for (int i = 0; i < n; i++) {
    if (!stmts[i]) continue;
    if (stmts[i]->kind == S_SEQ)
      for (int j = 0; j < stmts[i]->seq.n; j++) s->seq.stmts[s->seq.n++] = stmts[i]->seq.stmts[j];
    else
      s->seq.stmts[s->seq.n++] = stmts[i];
  }
  if (s->seq.n == 1) return s->seq.stmts[0];
  return s;
}

Stmt *tir_seq2(Arena *a, Stmt *x, Stmt *y) {
  Stmt *v[2] = {x, y};
  return tir_seq(a, 2, v);
}

Stmt *tir_if(Arena *a, Expr *cond, Stmt *then_s, Stmt *else_s) {
  Stmt *s = new_stmt(a, S_IF);
  s->ifs.cond = coerce(a, cond, MLC_BOOL);
  s->ifs.then_s = then_s;
  s->ifs.else_s = else_s;
  return s;
}

Stmt *tir_let_stmt(Arena *a, Var *v, Expr *value, Stmt *body) {
  Stmt *s = new_stmt(a, S_LET);
  s->let.var = v;
  s->let.value = value;
  s->let.body = body;
  return s;
}

Stmt *tir_allocate(Arena *a, Buffer *b, Stmt *body) {
  Stmt *s = new_stmt(a, S_ALLOCATE);
  s->alloc.buf = b;
  s->alloc.body = body;
  return s;
}

Stmt *tir_eval(Arena *a, Expr *e) {
  Stmt *s = new_stmt(a, S_EVAL);
  s->eval.e = e;
  return s;
}
