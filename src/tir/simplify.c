/* The arithmetic simplifier (a small version of TVM's arith::Analyzer: canonical simplify + const-int bounds).
 *
 * Algorithm: bottom-up rewriting. Children are simplified first; then the node is rewritten by these rules:
 *   - integer +, -, *: the expression is flattened into a linear form  k + sum(c_i * t_i)  (t_i are the
 *     non-linear atoms, compared structurally) and rebuilt, which folds constants and cancels terms;
 *   - floordiv/floormod (and truncating div/mod when the numerator is provably >= 0) by a constant c > 0:
 *     x = c*Q + r where Q collects the terms whose coefficient c divides; floordiv(x, c) = Q + floordiv(r, c)
 *     and floormod(x, c) = floormod(r, c), and the remaining div/mod disappears when the bounds of r fall in
 *     one interval [m*c, (m+1)*c); when r = m*B + s with m | c and s provably in [0, m), floordiv(r, c) =
 *     floordiv(B, c/m) and floormod(r, c) = floormod(B, c/m)*m + s; nested div/div and mod/mod by constants
 *     are merged;
 *   - min/max and comparisons are decided from the bounds of (a - b);
 *   - selects, logic and lets of constants or variables are folded or inlined.
 * Bounds are constant intervals: tir_simplify_stmt records each For's range (and each Let of bounded value)
 * in a scope stack and uses it inside the body. Loops of extent 1 are replaced by their min, loops of extent
 * <= 0 and ifs with a provably false condition vanish (an empty S_SEQ), provably true conditions are dropped.
 * The mutator rule holds: a result structurally equal to the input is returned as the input pointer. */
#include <math.h>
#include <string.h>
#include "tir/mutate.h"

typedef struct Bound {
  Var *v;
  int64_t lo, hi;
} Bound;

typedef struct Simp {
  Arena *a;
  VEC(Bound) bounds;
  ExprMemo memo; /* valid while the bounds stay the same: cleared per top-level expression */
} Simp;

/* ---- constant interval bounds ---- */

static bool lookup(Simp *s, const Var *v, int64_t *lo, int64_t *hi) {
  for (int i = s->bounds.n - 1; i >= 0; i--)
    if (s->bounds.v[i].v == v) {
      *lo = s->bounds.v[i].lo;
      *hi = s->bounds.v[i].hi;
      return true;
    }
  return false;
}

static int64_t floordiv_i64(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}

static int64_t fmod64(int64_t x, int64_t y) { return x - floordiv_i64(x, y) * y; }

static bool range_of(Simp *s, const Expr *e, int64_t *lo, int64_t *hi);

static bool mul_range(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int64_t *lo, int64_t *hi) {
  int64_t p[4];
  if (__builtin_mul_overflow(alo, blo, &p[0]) || __builtin_mul_overflow(alo, bhi, &p[1]) ||
      __builtin_mul_overflow(ahi, blo, &p[2]) || __builtin_mul_overflow(ahi, bhi, &p[3]))
    return false;
  *lo = *hi = p[0];
  for (int i = 1; i < 4; i++) {
    if (p[i] < *lo) *lo = p[i];
    if (p[i] > *hi) *hi = p[i];
  }
  return true;
}

static bool range_of(Simp *s, const Expr *e, int64_t *lo, int64_t *hi) {
  if (e->lanes != 1) return false;
  if (e->dtype == MLC_BOOL) {
    if (e->kind == E_INT) { *lo = *hi = e->ival; return true; }
    *lo = 0;
    *hi = 1;
    return true;
  }
  if (!dtype_is_int(e->dtype)) return false;
  int64_t alo, ahi, blo, bhi, c;
  switch (e->kind) {
  case E_INT: *lo = *hi = e->ival; return true;
  case E_VAR: return lookup(s, e->var, lo, hi);
  case E_ADD:
    if (!range_of(s, e->op.a, &alo, &ahi) || !range_of(s, e->op.b, &blo, &bhi)) return false;
    return !__builtin_add_overflow(alo, blo, lo) && !__builtin_add_overflow(ahi, bhi, hi);
  case E_SUB:
    if (!range_of(s, e->op.a, &alo, &ahi) || !range_of(s, e->op.b, &blo, &bhi)) return false;
    return !__builtin_sub_overflow(alo, bhi, lo) && !__builtin_sub_overflow(ahi, blo, hi);
  case E_MUL:
    if (!range_of(s, e->op.a, &alo, &ahi) || !range_of(s, e->op.b, &blo, &bhi)) return false;
    return mul_range(alo, ahi, blo, bhi, lo, hi);
  case E_FLOORDIV: case E_DIV:
    if (!tir_is_const_int(e->op.b, &c) || c <= 0 || !range_of(s, e->op.a, &alo, &ahi)) return false;
    if (e->kind == E_FLOORDIV) { *lo = floordiv_i64(alo, c); *hi = floordiv_i64(ahi, c); }
    else { *lo = alo / c; *hi = ahi / c; }
    return true;
  case E_FLOORMOD: case E_MOD:
    if (!tir_is_const_int(e->op.b, &c) || c <= 0) return false;
    if (range_of(s, e->op.a, &alo, &ahi) && (e->kind == E_FLOORMOD || alo >= 0) && floordiv_i64(alo, c) == floordiv_i64(ahi, c)) {
      *lo = alo - floordiv_i64(alo, c) * c;
      *hi = ahi - floordiv_i64(alo, c) * c;
      return true;
    }
    if (e->kind == E_FLOORMOD || (range_of(s, e->op.a, &alo, &ahi) && alo >= 0)) { *lo = 0; *hi = c - 1; }
    else { *lo = -(c - 1); *hi = c - 1; }
    return true;
  case E_MIN: case E_MAX:
    if (!range_of(s, e->op.a, &alo, &ahi) || !range_of(s, e->op.b, &blo, &bhi)) return false;
    if (e->kind == E_MIN) { *lo = alo < blo ? alo : blo; *hi = ahi < bhi ? ahi : bhi; }
    else { *lo = alo > blo ? alo : blo; *hi = ahi > bhi ? ahi : bhi; }
    return true;
  case E_SELECT:
    if (!range_of(s, e->op.a, &alo, &ahi) || !range_of(s, e->op.b, &blo, &bhi)) return false;
    *lo = alo < blo ? alo : blo;
    *hi = ahi > bhi ? ahi : bhi;
    return true;
  case E_CAST:
    if (e->dtype != MLC_I64 || !(dtype_is_int(e->op.a->dtype) || e->op.a->dtype == MLC_BOOL) ||
        e->op.a->dtype == MLC_U64)
      return false;
    return range_of(s, e->op.a, lo, hi);
  default: return false;
  }
}

/* ---- linear forms ---- */

#define LIN_MAX 24
typedef struct Lin {
  int n;
  Expr *t[LIN_MAX];
  int64_t c[LIN_MAX];
  int64_t k;
  bool ok;
} Lin;

static void lin_term(Lin *l, Expr *e, int64_t scale) {
  for (int i = 0; i < l->n; i++)
    if (tir_expr_equal(l->t[i], e)) {
      if (__builtin_add_overflow(l->c[i], scale, &l->c[i])) l->ok = false;
      return;
    }
  if (l->n == LIN_MAX) { l->ok = false; return; }
  l->t[l->n] = e;
  l->c[l->n++] = scale;
}

static void linearize(Lin *l, Expr *e, int64_t scale) {
  if (!l->ok) return;
  int64_t v, m;
  switch (e->kind) {
  case E_INT:
    if (__builtin_mul_overflow(e->ival, scale, &m) || __builtin_add_overflow(l->k, m, &l->k)) l->ok = false;
    return;
  case E_ADD: linearize(l, e->op.a, scale); linearize(l, e->op.b, scale); return;
  case E_SUB:
    if (scale == INT64_MIN) { l->ok = false; return; }
    linearize(l, e->op.a, scale);
    linearize(l, e->op.b, -scale);
    return;
  case E_MUL:
    if (tir_is_const_int(e->op.b, &v) || tir_is_const_int(e->op.a, &v)) {
      if (__builtin_mul_overflow(scale, v, &m)) { l->ok = false; return; }
      linearize(l, tir_is_const_int(e->op.b, NULL) ? e->op.a : e->op.b, m);
      return;
    }
    lin_term(l, e, scale);
    return;
  default: lin_term(l, e, scale); return;
  }
}

static bool lin_of(Expr *e, Lin *l) {
  memset(l, 0, sizeof(*l));
  l->ok = true;
  linearize(l, e, 1);
  return l->ok;
}

/* m*c*floordiv(x, c) + m*floormod(x, c) = m*x: a fused loop index split back into its axes (h = f / W,
 * w = f % W) and flattened again (h*W + w) becomes the fused index, so a vector along it stays contiguous */
static void lin_merge_divmod(Lin *l) {
  for (int i = 0; i < l->n && l->ok; i++) {
    Expr *d = l->t[i];
    int64_t c, c2, m;
    if (l->c[i] == 0 || d->kind != E_FLOORDIV || !tir_is_const_int(d->op.b, &c) || c <= 0) continue;
    for (int j = 0; j < l->n; j++) {
      Expr *r = l->t[j];
      if (j == i || l->c[j] == 0 || r->kind != E_FLOORMOD || !tir_is_const_int(r->op.b, &c2) || c2 != c) continue;
      if (__builtin_mul_overflow(l->c[j], c, &m) || m != l->c[i] || !tir_expr_equal(d->op.a, r->op.a)) continue;
      int64_t scale = l->c[j];
      l->c[i] = l->c[j] = 0;
      linearize(l, d->op.a, scale);
      break;
    }
  }
}

static Expr *lin_build(Arena *a, mlc_dtype t, const Lin *l) {
  Expr *acc = NULL;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < l->n; i++) {
      int64_t c = l->c[i];
      if (c == 0 || (pass == 0) != (c > 0)) continue;
      if (!acc) acc = c == 1 ? l->t[i] : tir_mul(a, l->t[i], tir_int(a, t, c));
      else if (c > 0) acc = tir_add(a, acc, c == 1 ? l->t[i] : tir_mul(a, l->t[i], tir_int(a, t, c)));
      else if (c == -1) acc = tir_sub(a, acc, l->t[i]);
      else if (c == INT64_MIN) acc = tir_add(a, acc, tir_mul(a, l->t[i], tir_int(a, t, c)));
      else acc = tir_sub(a, acc, tir_mul(a, l->t[i], tir_int(a, t, -c)));
    }
  if (!acc) return tir_int(a, t, l->k);
  if (l->k > 0) return tir_add(a, acc, tir_int(a, t, l->k));
  if (l->k < 0 && l->k != INT64_MIN) return tir_sub(a, acc, tir_int(a, t, -l->k));
  if (l->k < 0) return tir_add(a, acc, tir_int(a, t, l->k));
  return acc;
}

static bool lin_range(Simp *s, const Lin *l, int64_t *lo, int64_t *hi) {
  *lo = *hi = l->k;
  for (int i = 0; i < l->n; i++) {
    if (l->c[i] == 0) continue;
    int64_t tlo, thi, plo, phi;
    if (!range_of(s, l->t[i], &tlo, &thi) || !mul_range(tlo, thi, l->c[i], l->c[i], &plo, &phi)) return false;
    if (__builtin_add_overflow(*lo, plo, lo) || __builtin_add_overflow(*hi, phi, hi)) return false;
  }
  return true;
}

/* bounds of a - b through its linear form (cancels common terms) */
static bool diff_range(Simp *s, Expr *a, Expr *b, int64_t *lo, int64_t *hi) {
  Lin l;
  memset(&l, 0, sizeof(l));
  l.ok = true;
  linearize(&l, a, 1);
  linearize(&l, b, -1);
  return l.ok && lin_range(s, &l, lo, hi);
}

/* ---- div / mod by a positive constant ---- */

/* Splits numerator x = c*Q + R. Returns false if x is not linear. */
static bool split_div(Simp *s, Expr *x, int64_t c, Lin *q, Lin *r) {
  Lin l;
  if (!lin_of(x, &l)) return false;
  memset(q, 0, sizeof(*q));
  memset(r, 0, sizeof(*r));
  q->ok = r->ok = true;
  for (int i = 0; i < l.n; i++) {
    if (l.c[i] == 0) continue;
    if (l.c[i] % c == 0) lin_term(q, l.t[i], l.c[i] / c);
    else lin_term(r, l.t[i], l.c[i]);
  }
  q->k = floordiv_i64(l.k, c);
  r->k = fmod64(l.k, c);
  return true;
}

/* r = m*B + s with m > 1 dividing c, B the terms whose coefficient m divides (each divided by m) and s the
 * others plus the constant, proven in [0, m): the largest such m (0: none). */
static int64_t scaled_split(Simp *s, const Lin *r, int64_t c, Lin *big, Lin *small) {
  int64_t best = 0;
  for (int i = 0; i < r->n; i++) {
    int64_t m = r->c[i] < 0 ? -r->c[i] : r->c[i];
    if (m <= 1 || m <= best || c % m) continue;
    Lin b, sm;
    memset(&b, 0, sizeof b);
    memset(&sm, 0, sizeof sm);
    b.ok = sm.ok = true;
    sm.k = r->k;
    for (int j = 0; j < r->n; j++) {
      if (r->c[j] == 0) continue;
      if (r->c[j] % m == 0) lin_term(&b, r->t[j], r->c[j] / m);
      else lin_term(&sm, r->t[j], r->c[j]);
    }
    int64_t lo, hi;
    if (!b.ok || !sm.ok || !lin_range(s, &sm, &lo, &hi) || lo < 0 || hi >= m) continue;
    best = m;
    *big = b;
    *small = sm;
  }
  return best;
}

static Expr *simp_divmod(Simp *s, Expr *e) {
  Arena *a = s->a;
  mlc_dtype t = e->dtype;
  int64_t c, lo, hi;
  if (!tir_is_const_int(e->op.b, &c) || c <= 0) return e;
  Expr *x = e->op.a;
  bool is_div = e->kind == E_DIV || e->kind == E_FLOORDIV;
  bool trunc = e->kind == E_DIV || e->kind == E_MOD;
  bool nonneg = range_of(s, x, &lo, &hi) && lo >= 0;
  Lin q, r;
  if (!split_div(s, x, c, &q, &r)) return e;
  bool r_zero = r.n == 0 && r.k == 0;
  for (int i = 0; i < r.n && r_zero; i++) r_zero = r.c[i] == 0;
  if (trunc && !nonneg && !r_zero) return e; /* truncating division of a possibly negative value: leave it */
  if (r_zero) return is_div ? lin_build(a, t, &q) : tir_int(a, t, 0);
  int64_t rlo, rhi;
  bool rknown = lin_range(s, &r, &rlo, &rhi);
  Expr *rexpr = lin_build(a, t, &r);
  /* r = m*B + s, s in [0, m), m | c: floordiv(r, c) = floordiv(B, c/m), floormod(r, c) = floormod(B, c/m)*m + s
   * (a channel shuffle's (f*784 + h*28 + w) / 1568 with h*28 + w < 784 is f / 2: a scalar per row again) */
  Lin big, small;
  int64_t m = rknown && floordiv_i64(rlo, c) == floordiv_i64(rhi, c) ? 0 : scaled_split(s, &r, c, &big, &small);
  if (m) {
    Expr *inner = simp_divmod(s, tir_bin(a, is_div ? E_FLOORDIV : E_FLOORMOD, lin_build(a, t, &big),
                                         tir_int(a, t, c / m)));
    Lin *out = is_div ? &q : &small;
    lin_term(out, inner, is_div ? 1 : m);
    return out->ok ? lin_build(a, t, out) : e;
  }
  if (is_div) {
    if (rknown && floordiv_i64(rlo, c) == floordiv_i64(rhi, c)) {
      q.k += floordiv_i64(rlo, c);
      return lin_build(a, t, &q);
    }
    /* merge floordiv(floordiv(y, c1), c) -> floordiv(y, c1*c) */
    int64_t c1, cc;
    Expr *inner = tir_bin(a, E_FLOORDIV, rexpr, e->op.b);
    if (rexpr->kind == E_FLOORDIV && tir_is_const_int(rexpr->op.b, &c1) && c1 > 0 &&
        !__builtin_mul_overflow(c1, c, &cc))
      inner = tir_bin(a, E_FLOORDIV, rexpr->op.a, tir_int(a, t, cc));
    lin_term(&q, inner, 1);
    return q.ok ? lin_build(a, t, &q) : e;
  }
  if (rknown && floordiv_i64(rlo, c) == floordiv_i64(rhi, c)) {
    r.k -= floordiv_i64(rlo, c) * c;
    return lin_build(a, t, &r);
  }
  int64_t c1;
  if (rexpr->kind == E_FLOORMOD && tir_is_const_int(rexpr->op.b, &c1) && c1 > 0 && c1 % c == 0)
    return tir_bin(a, E_FLOORMOD, rexpr->op.a, e->op.b);
  return tir_bin(a, E_FLOORMOD, rexpr, e->op.b);
}

/* ---- expressions ---- */

/* ---- integer-valued floats ---- */

/* every value of the float e that is finite is an integer (round, floor, an int converted, sums of those) */
static bool float_integral(const Expr *e) {
  switch (e->kind) {
  case E_FLOAT: return e->fval != e->fval || e->fval == floor(e->fval);
  case E_CAST: return !dtype_is_float(e->op.a->dtype) || float_integral(e->op.a);
  case E_CALL: {
    Intrin k = e->call.intrin;
    return k == INTRIN_ROUND || k == INTRIN_FLOOR || k == INTRIN_CEIL || k == INTRIN_TRUNC;
  }
  case E_ADD: case E_SUB: case E_MUL: case E_MIN: case E_MAX: return float_integral(e->op.a) && float_integral(e->op.b);
  case E_SELECT: return float_integral(e->op.a) && float_integral(e->op.b);
  default: return false;
  }
}

/* the float e is never NaN and lies in [lo, hi]: a clamp written as ordered compares, x > c ? x : c (NaN ->
 * c) or x < c ? x : c, of a constant c */
static bool float_clamped(const Expr *e, double *lo, double *hi) {
  if (e->kind == E_FLOAT) {
    *lo = *hi = e->fval;
    return e->fval == e->fval;
  }
  const Expr *cond = e->kind == E_SELECT ? e->op.c : NULL;
  if (!cond || !(cond->kind == E_GT || cond->kind == E_GE || cond->kind == E_LT || cond->kind == E_LE) ||
      cond->op.b->kind != E_FLOAT || !tir_expr_equal(cond->op.a, e->op.a) || !tir_expr_equal(cond->op.b, e->op.b) ||
      cond->op.b->fval != cond->op.b->fval)
    return false;
  double c = cond->op.b->fval, xlo, xhi;
  if (!float_clamped(e->op.a, &xlo, &xhi)) { xlo = -HUGE_VAL; xhi = HUGE_VAL; }
  bool above = cond->kind == E_GT || cond->kind == E_GE;
  *lo = above ? (xlo > c ? xlo : c) : (xlo < c ? xlo : c);
  *hi = above ? (xhi > c ? xhi : c) : (xhi < c ? xhi : c);
  return true;
}

/* the range of an integer dtype (false for others) */
static bool int_dtype_range(mlc_dtype t, double *lo, double *hi) {
  switch (t) {
  case MLC_I8: *lo = -128; *hi = 127; return true;
  case MLC_U8: *lo = 0; *hi = 255; return true;
  case MLC_I16: *lo = -32768; *hi = 32767; return true;
  case MLC_U16: *lo = 0; *hi = 65535; return true;
  case MLC_I32: *lo = -0x1p31; *hi = 0x1p31 - 1; return true;
  case MLC_U32: *lo = 0; *hi = 0x1p32 - 1; return true;
  case MLC_I64: *lo = -0x1p63; *hi = 0x1p63 - 1024; return true;
  case MLC_U64: *lo = 0; *hi = 0x1p64 - 2048; return true;
  default: return false;
  }
}

/* float(int(..(x))) for an x of that float type that is integer-valued, never NaN and inside the range of
 * each integer type on the way (a requantized 8-bit value dequantized in the same kernel): x. NULL otherwise */
static Expr *float_int_round_trip(Expr *e) {
  if (e->kind != E_CAST || !dtype_is_float(e->dtype)) return NULL;
  Expr *x = e->op.a;
  double lo = -HUGE_VAL, hi = HUGE_VAL, tlo, thi;
  int casts = 0;
  for (; x->kind == E_CAST && int_dtype_range(x->dtype, &tlo, &thi); x = x->op.a, casts++) {
    if (tlo > lo) lo = tlo;
    if (thi < hi) hi = thi;
  }
  double xlo, xhi;
  if (!casts || x->dtype != e->dtype || x->lanes != e->lanes || !float_integral(x) || !float_clamped(x, &xlo, &xhi) ||
      xlo < lo || xhi > hi)
    return NULL;
  return x;
}

static Expr *simp_expr(void *ctx, Expr *e);

static Expr *rewrite(Simp *s, Expr *e) {
  Arena *a = s->a;
  if (e->lanes != 1) return e;
  int64_t lo, hi;
  switch (e->kind) {
  case E_CAST: {
    Expr *x = float_int_round_trip(e);
    return x ? x : e;
  }
  case E_ADD: case E_SUB: case E_MUL: {
    if (!dtype_is_int(e->dtype)) return e;
    Lin l;
    if (!lin_of(e, &l)) return e;
    lin_merge_divmod(&l);
    if (!l.ok) return e;
    return lin_build(a, e->dtype, &l);
  }
  case E_DIV: case E_MOD: case E_FLOORDIV: case E_FLOORMOD:
    if (!dtype_is_int(e->dtype)) return e;
    return simp_divmod(s, e);
  case E_MIN: case E_MAX:
    if (tir_expr_equal(e->op.a, e->op.b)) return e->op.a;
    if (dtype_is_int(e->dtype) && diff_range(s, e->op.a, e->op.b, &lo, &hi)) {
      if (hi <= 0) return e->kind == E_MIN ? e->op.a : e->op.b; /* a <= b */
      if (lo >= 0) return e->kind == E_MIN ? e->op.b : e->op.a; /* a >= b */
    }
    return e;
  case E_EQ: case E_NE: case E_LT: case E_LE: case E_GT: case E_GE: {
    Expr *x = e->op.a, *y = e->op.b;
    if (!dtype_is_int(x->dtype) || x->lanes != 1) return e;
    if (!diff_range(s, x, y, &lo, &hi)) return e;
    int r = -1; /* -1: unknown */
    switch (e->kind) {
    case E_EQ: r = lo == 0 && hi == 0 ? 1 : (lo > 0 || hi < 0) ? 0 : -1; break;
    case E_NE: r = lo == 0 && hi == 0 ? 0 : (lo > 0 || hi < 0) ? 1 : -1; break;
    case E_LT: r = hi < 0 ? 1 : lo >= 0 ? 0 : -1; break;
    case E_LE: r = hi <= 0 ? 1 : lo > 0 ? 0 : -1; break;
    case E_GT: r = lo > 0 ? 1 : hi <= 0 ? 0 : -1; break;
    case E_GE: r = lo >= 0 ? 1 : hi < 0 ? 0 : -1; break;
    default: break;
    }
    return r < 0 ? e : tir_int(a, MLC_BOOL, r);
  }
  case E_LET:
    if (e->op.a->kind == E_INT || e->op.a->kind == E_FLOAT || e->op.a->kind == E_VAR) {
      Var *v = e->let_var;
      Expr *val = e->op.a;
      return simp_expr(s, tir_substitute(a, e->op.b, 1, &v, &val));
    }
    return e;
  default: return e;
  }
}

static Expr *simp_expr(void *ctx, Expr *e) {
  Simp *s = ctx;
  if (!e) return e;
  if (e->kind == E_INT || e->kind == E_FLOAT) return e;
  Expr *r = memo_get(&s->memo, e);
  if (r) return r;
  Expr *e1 = tir_expr_map_children(s->a, e, simp_expr, ctx);
  r = rewrite(s, e1);
  if (r != e1 && tir_expr_equal(r, e1)) r = e1;
  if (r != e && tir_expr_equal(r, e)) r = e;
  memo_put(&s->memo, e, r);
  return r;
}

/* an expression of a statement: the bounds may have changed since the last one */
static Expr *simp_top(void *ctx, Expr *e) {
  Simp *s = ctx;
  memo_clear(&s->memo);
  return simp_expr(ctx, e);
}

/* ---- statements ---- */

static void push_bound(Simp *s, Var *v, int64_t lo, int64_t hi) {
  Bound b = {v, lo, hi};
  vec_push(s->a, &s->bounds, b);
}

static bool is_empty(const Stmt *st) { return !st || (st->kind == S_SEQ && st->seq.n == 0); }

/* The loop end a guard `lin(v) < rhs` puts on v, when the guard only bounds v from above: v + k < c with
 * constants k, c gives v < c - k. The last tile of a split that does not divide its axis, once peeled,
 * is `for (v, 0, 16) if (v + 48 < 49) ...`: as a 1-lane loop it is one scalar operation, not a masked
 * or scalarized vector of 16 (a Swin attention's 49-column QK^T ran at 12 GFLOP/s). */
static bool guard_end(Expr *cond, const Var *v, int64_t *end) {
  if (!cond || cond->kind != E_LT) return false;
  Lin l;
  if (!lin_of(cond->op.a, &l) || l.n != 1 || l.c[0] != 1 || l.t[0]->kind != E_VAR || l.t[0]->var != v) return false;
  int64_t c;
  if (!tir_is_const_int(cond->op.b, &c) || __builtin_sub_overflow(c, l.k, end)) return false;
  return true;
}

static Stmt *simp_stmt(void *ctx, Stmt *st) {
  Simp *s = ctx;
  Arena *a = s->a;
  if (!st) return st;
  switch (st->kind) {
  case S_FOR: {
    Expr *mn = simp_top(s, st->loop.min), *ext = simp_top(s, st->loop.extent);
    int64_t n, mlo, mhi, elo, ehi;
    if (tir_is_const_int(ext, &n) && n <= 0) return tir_seq(a, 0, NULL);
    if (tir_is_const_int(ext, &n) && n == 1) {
      Var *v = st->loop.var;
      return simp_stmt(s, tir_substitute_stmt(a, st->loop.body, 1, &v, &mn));
    }
    int saved = s->bounds.n;
    if (range_of(s, mn, &mlo, &mhi) && range_of(s, ext, &elo, &ehi) && ehi >= 1 &&
        !__builtin_add_overflow(mhi, ehi - 1, &mhi))
      push_bound(s, st->loop.var, mlo, mhi);
    Stmt *b = simp_stmt(s, st->loop.body);
    s->bounds.n = saved;
    if (is_empty(b)) return tir_seq(a, 0, NULL);
    int64_t m0, end;
    if (b->kind == S_IF && !b->ifs.else_s && tir_is_const_int(mn, &m0) && tir_is_const_int(ext, &n) &&
        guard_end(b->ifs.cond, st->loop.var, &end)) { /* for (v, m0, n) if (v < end) S */
      int64_t keep = end - m0 < n ? end - m0 : n;
      if (keep <= 0) return tir_seq(a, 0, NULL);
      return simp_stmt(s, tir_for(a, st->loop.var, mn, tir_idx(a, keep), st->loop.for_kind, b->ifs.then_s));
    }
    if (mn == st->loop.min && ext == st->loop.extent && b == st->loop.body) return st;
    return tir_for(a, st->loop.var, mn, ext, st->loop.for_kind, b);
  }
  case S_IF: {
    Expr *c = simp_top(s, st->ifs.cond);
    int64_t v;
    if (tir_is_const_int(c, &v)) {
      Stmt *pick = v ? st->ifs.then_s : st->ifs.else_s;
      return pick ? simp_stmt(s, pick) : tir_seq(a, 0, NULL);
    }
    Stmt *t = simp_stmt(s, st->ifs.then_s), *e = st->ifs.else_s ? simp_stmt(s, st->ifs.else_s) : NULL;
    if (e && is_empty(e)) e = NULL;
    if (is_empty(t) && !e) return tir_seq(a, 0, NULL);
    if (c == st->ifs.cond && t == st->ifs.then_s && e == st->ifs.else_s) return st;
    return tir_if(a, c, t, e);
  }
  case S_LET: {
    Expr *val = simp_top(s, st->let.value);
    if (val->kind == E_INT || val->kind == E_FLOAT || val->kind == E_VAR) {
      Var *v = st->let.var;
      return simp_stmt(s, tir_substitute_stmt(a, st->let.body, 1, &v, &val));
    }
    int saved = s->bounds.n;
    int64_t lo, hi;
    if (range_of(s, val, &lo, &hi)) push_bound(s, st->let.var, lo, hi);
    Stmt *b = simp_stmt(s, st->let.body);
    s->bounds.n = saved;
    if (val == st->let.value && b == st->let.body) return st;
    return tir_let_stmt(a, st->let.var, val, b);
  }
  default: return tir_stmt_map_children(a, st, simp_top, simp_stmt, ctx);
  }
}

Expr *tir_simplify(Arena *a, Expr *e) {
  Simp s = {.a = a};
  memo_init(&s.memo, a);
  return simp_expr(&s, e);
}

Expr *tir_simplify_bounded(Arena *a, Expr *e, int n, Var *const *vars, const int64_t *lo, const int64_t *hi) {
  Simp s = {.a = a};
  memo_init(&s.memo, a);
  for (int i = 0; i < n; i++) push_bound(&s, vars[i], lo[i], hi[i]);
  return simp_expr(&s, e);
}

Stmt *tir_simplify_stmt(Arena *a, Stmt *st) {
  Simp s = {.a = a};
  memo_init(&s.memo, a);
  return simp_stmt(&s, st);
}
