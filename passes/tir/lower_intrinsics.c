/* LowerIntrinsics: float32 transcendental intrinsics -> vectorizable arithmetic (TVM's
 * tir/transforms/lower_intrin.cc with Cephes-style expansions; the polynomials are Cephes' single precision
 * ones and, for erf, the rational approximation Eigen and XLA use).
 *
 * LLVM turns llvm.exp / tanh / erf on float vectors into one libm call per lane, which stops the loop
 * vectorizer; written as range reduction + polynomial in plain TIR arithmetic the same loops vectorize.
 *   exp(x):   n = floor(x log2 e + 1/2), r = x - n ln2 (Cody-Waite, two constants), exp(r) by a degree-6
 *             polynomial, times 2^n built as two exponent-field floats 2^(n>>1) * 2^(n-(n>>1)) (so that
 *             denormal results and overflow to inf come out of the multiplication); x clamped to
 *             [-104, 89] first, NaN passed through; ~1 ulp.
 *   log(x):   x = m 2^e with m in [sqrt(1/2), sqrt(2)) from the bits (denormals pre-scaled by 2^23), then
 *             Cephes logf's degree-8 polynomial in m - 1; 0 -> -inf, x < 0 -> NaN, inf -> inf.
 *   tanh(x):  |x| < 0.625: odd polynomial (Cephes tanhf); else sign(x) (1 - 2 / (exp(2|x|) + 1)).
 *   sigmoid:  1 / (1 + exp(-x)).
 *   erf(x):   x clamped to [-4, 4], x P(x^2) / Q(x^2) with degree 13 / 8 polynomials, clamped to [-1, 1];
 *             NaN passed through; within 2.5e-7 absolute.
 *   pow(x, c) with c in {1, 2, 3, -1} (constant): products.
 * Values used more than once are bound by E_LET so codegen evaluates them once. Only scalar (lanes 1)
 * float32 calls are rewritten; vectors and other dtypes stay calls. Finally f32 a * b + c becomes
 * fma(a, b, c) when the target has fused multiply-add (x86 +fma, AArch64): one rounding instead of two and
 * one instruction in the inner loop of every reduction; likewise int32 acc + dot_u8s8(a, b) becomes
 * dot_u8s8(a, b, acc), one vpdpbusd on x86 VNNI. */
#include <stdio.h>
#include <string.h>
#include "passes/tir/tir_passes.h"
#include "tir/mutate.h"

typedef struct LiCtx {
  Arena *a;
  bool fma;
  ExprMemo memo;
  int nvars;
} LiCtx;

static Expr *F(LiCtx *c, double v) { return tir_float(c->a, MLC_F32, v); }
static Expr *I(LiCtx *c, int64_t v) { return tir_int(c->a, MLC_I32, v); }
static Expr *add(LiCtx *c, Expr *x, Expr *y) { return tir_bin(c->a, E_ADD, x, y); }
static Expr *sub(LiCtx *c, Expr *x, Expr *y) { return tir_bin(c->a, E_SUB, x, y); }
static Expr *mul(LiCtx *c, Expr *x, Expr *y) { return tir_bin(c->a, E_MUL, x, y); }
static Expr *dvd(LiCtx *c, Expr *x, Expr *y) { return tir_bin(c->a, E_DIV, x, y); }
static Expr *sel(LiCtx *c, Expr *cond, Expr *t, Expr *f) { return tir_select(c->a, cond, t, f); }
static Expr *cmp(LiCtx *c, ExprKind k, Expr *x, Expr *y) { return tir_bin(c->a, k, x, y); }
static Expr *bits_to_f32(LiCtx *c, Expr *i) { return tir_call(c->a, INTRIN_REINTERPRET, MLC_F32, 1, &i); }
static Expr *f32_to_bits(LiCtx *c, Expr *f) { return tir_call(c->a, INTRIN_REINTERPRET, MLC_I32, 1, &f); }

/* a fresh variable bound to value; *ref receives its reference */
static Var *bind(LiCtx *c, const char *name, mlc_dtype t, Expr **ref) {
  char nm[32];
  snprintf(nm, sizeof nm, "%s%d", name, c->nvars++);
  Var *v = tir_var(c->a, arena_strdup(c->a, nm), t);
  *ref = tir_varref(c->a, v);
  return v;
}

/* x * y + z, fused where the target has fma */
static Expr *madd(LiCtx *c, Expr *x, Expr *y, Expr *z) {
  if (c->fma) return tir_call(c->a, INTRIN_FMA, MLC_F32, 3, (Expr *[]){x, y, z});
  return add(c, mul(c, x, y), z);
}

/* Horner: coef[0] x^(n-1) + ... + coef[n-1] */
static Expr *horner(LiCtx *c, Expr *x, int n, const double *coef) {
  Expr *p = F(c, coef[0]);
  for (int i = 1; i < n; i++) p = madd(c, p, x, F(c, coef[i]));
  return p;
}

static bool is_nan_safe_const(const Expr *e, double *v) {
  if (e->kind == E_FLOAT) {
    *v = e->fval;
    return true;
  }
  if (e->kind == E_INT) {
    *v = (double)e->ival;
    return true;
  }
  return false;
}

/* 2^k for an int32 k in [-126, 127] */
static Expr *pow2i(LiCtx *c, Expr *k) {
  return bits_to_f32(c, tir_bin(c->a, E_SHL, add(c, k, I(c, 127)), I(c, 23)));
}

/* exp of a variable reference x (used several times) */
static Expr *expand_exp(LiCtx *c, Expr *x) {
  static const double P[] = {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3,
                             4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1};
  Expr *xc_ref, *n_ref, *r_ref, *ni_ref, *h_ref;
  Var *xc = bind(c, "exp_x", MLC_F32, &xc_ref);
  Var *n = bind(c, "exp_n", MLC_F32, &n_ref);
  Var *r = bind(c, "exp_r", MLC_F32, &r_ref);
  Var *ni = bind(c, "exp_ni", MLC_I32, &ni_ref);
  Var *h = bind(c, "exp_h", MLC_I32, &h_ref);
  /* clamp without min/max so that NaN takes the last select */
  Expr *lo = sel(c, cmp(c, E_LT, x, F(c, -104.0)), F(c, -104.0), x);
  Expr *clamped = sel(c, cmp(c, E_GT, lo, F(c, 89.0)), F(c, 89.0), lo);
  Expr *nval = tir_call(c->a, INTRIN_FLOOR, MLC_F32, 1,
                        (Expr *[]){add(c, mul(c, xc_ref, F(c, 1.44269504088896341)), F(c, 0.5))});
  Expr *rval = sub(c, sub(c, xc_ref, mul(c, n_ref, F(c, 0.693359375))), mul(c, n_ref, F(c, -2.12194440e-4)));
  Expr *z = mul(c, r_ref, r_ref);
  Expr *p = add(c, add(c, mul(c, horner(c, r_ref, 6, P), z), r_ref), F(c, 1.0));
  Expr *scaled = mul(c, mul(c, p, pow2i(c, h_ref)), pow2i(c, sub(c, ni_ref, h_ref)));
  Expr *res = sel(c, cmp(c, E_NE, x, x), x, scaled);
  Expr *hval = tir_bin(c->a, E_SHR, ni_ref, I(c, 1));
  res = tir_let(c->a, h, hval, res);
  res = tir_let(c->a, ni, tir_cast(c->a, MLC_I32, n_ref), res);
  res = tir_let(c->a, r, rval, res);
  res = tir_let(c->a, n, nval, res);
  return tir_let(c->a, xc, clamped, res);
}

/* binds arg to a variable and expands f on its reference */
static Expr *with_var(LiCtx *c, Expr *arg, Expr *(*f)(LiCtx *, Expr *)) {
  if (arg->kind == E_VAR) return f(c, arg);
  Expr *ref;
  Var *v = bind(c, "x", arg->dtype, &ref);
  return tir_let(c->a, v, arg, f(c, ref));
}

static Expr *exp_of(LiCtx *c, Expr *arg) { return with_var(c, arg, expand_exp); }

static Expr *expand_sigmoid(LiCtx *c, Expr *x) {
  return dvd(c, F(c, 1.0), add(c, F(c, 1.0), exp_of(c, tir_bin(c->a, E_SUB, F(c, 0.0), x))));
}

static Expr *expand_tanh(LiCtx *c, Expr *x) {
  static const double P[] = {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2, 1.33314422036E-1,
                             -3.33332819422E-1};
  Expr *z_ref, *ax_ref;
  Var *z = bind(c, "tanh_z", MLC_F32, &z_ref);
  Var *ax = bind(c, "tanh_a", MLC_F32, &ax_ref);
  Expr *small = add(c, mul(c, mul(c, horner(c, z_ref, 5, P), z_ref), x), x);
  Expr *big = sub(c, F(c, 1.0), dvd(c, F(c, 2.0), add(c, exp_of(c, add(c, ax_ref, ax_ref)), F(c, 1.0))));
  big = sel(c, cmp(c, E_LT, x, F(c, 0.0)), sub(c, F(c, 0.0), big), big);
  Expr *res = sel(c, cmp(c, E_LT, ax_ref, F(c, 0.625)), small, big);
  res = tir_let(c->a, z, mul(c, x, x), res);
  return tir_let(c->a, ax, tir_call(c->a, INTRIN_FABS, MLC_F32, 1, &x), res);
}

static Expr *expand_erf(LiCtx *c, Expr *x) {
  static const double A[] = {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                             -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                             -1.60960333262415e-02};
  static const double B[] = {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                             -7.37332916720468e-03, -1.42647390514189e-02};
  Expr *xc_ref, *z_ref;
  Var *xc = bind(c, "erf_x", MLC_F32, &xc_ref);
  Var *z = bind(c, "erf_z", MLC_F32, &z_ref);
  Expr *lo = sel(c, cmp(c, E_LT, x, F(c, -4.0)), F(c, -4.0), x);
  Expr *clamped = sel(c, cmp(c, E_GT, lo, F(c, 4.0)), F(c, 4.0), lo);
  Expr *p = mul(c, xc_ref, horner(c, z_ref, 7, A));
  Expr *q = horner(c, z_ref, 5, B);
  Expr *r_ref;
  Var *r = bind(c, "erf_r", MLC_F32, &r_ref);
  /* the rational form overshoots 1 by an ulp or two near |x| = 4 */
  Expr *lo1 = sel(c, cmp(c, E_LT, r_ref, F(c, -1.0)), F(c, -1.0), r_ref);
  Expr *res = sel(c, cmp(c, E_GT, lo1, F(c, 1.0)), F(c, 1.0), lo1);
  res = sel(c, cmp(c, E_NE, x, x), x, tir_let(c->a, r, dvd(c, p, q), res));
  res = tir_let(c->a, z, mul(c, xc_ref, xc_ref), res);
  return tir_let(c->a, xc, clamped, res);
}

static Expr *expand_log(LiCtx *c, Expr *x) {
  static const double P[] = {7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,
                             -1.2420140846E-1, 1.4249322787E-1,  -1.6668057665E-1,
                             2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1};
  Expr *den_ref, *xs_ref, *bits_ref, *e_ref, *m_ref, *small_ref, *f_ref, *z_ref, *ef_ref;
  Var *den = bind(c, "log_d", MLC_BOOL, &den_ref);
  Var *xs = bind(c, "log_x", MLC_F32, &xs_ref);
  Var *bits = bind(c, "log_b", MLC_I32, &bits_ref);
  Var *e = bind(c, "log_e", MLC_I32, &e_ref);
  Var *m = bind(c, "log_m", MLC_F32, &m_ref);
  Var *small = bind(c, "log_s", MLC_BOOL, &small_ref);
  Var *f = bind(c, "log_f", MLC_F32, &f_ref);
  Var *z = bind(c, "log_z", MLC_F32, &z_ref);
  Var *ef = bind(c, "log_ef", MLC_F32, &ef_ref);
  /* m in [0.5, 1), x = m 2^e */
  Expr *eval = sub(c, tir_bin(c->a, E_SHR, bits_ref, I(c, 23)), sel(c, den_ref, I(c, 126 + 23), I(c, 126)));
  Expr *mval =
      bits_to_f32(c, tir_bin(c->a, E_BITOR, tir_bin(c->a, E_BITAND, bits_ref, I(c, 0x007fffff)), I(c, 0x3f000000)));
  Expr *efval = sub(c, tir_cast(c->a, MLC_F32, e_ref), sel(c, small_ref, F(c, 1.0), F(c, 0.0)));
  Expr *fval = sub(c, sel(c, small_ref, add(c, m_ref, m_ref), m_ref), F(c, 1.0));
  Expr *y = mul(c, mul(c, horner(c, f_ref, 9, P), f_ref), z_ref);
  y = add(c, y, mul(c, ef_ref, F(c, -2.12194440e-4)));
  y = sub(c, y, mul(c, z_ref, F(c, 0.5)));
  Expr *r = add(c, add(c, f_ref, y), mul(c, ef_ref, F(c, 0.693359375)));
  /* specials: x < 0 or NaN -> NaN, 0 -> -inf, inf -> inf */
  r = sel(c, cmp(c, E_EQ, x, F(c, __builtin_inf())), x, r);
  r = sel(c, cmp(c, E_EQ, x, F(c, 0.0)), F(c, -__builtin_inf()), r);
  r = sel(c, cmp(c, E_GE, x, F(c, 0.0)), r, F(c, __builtin_nan("")));
  r = tir_let(c->a, z, mul(c, f_ref, f_ref), r);
  r = tir_let(c->a, f, fval, r);
  r = tir_let(c->a, ef, efval, r);
  r = tir_let(c->a, small, cmp(c, E_LT, m_ref, F(c, 0.707106781186547524)), r);
  r = tir_let(c->a, m, mval, r);
  r = tir_let(c->a, e, eval, r);
  r = tir_let(c->a, bits, f32_to_bits(c, xs_ref), r);
  r = tir_let(c->a, xs, sel(c, den_ref, mul(c, x, F(c, 8388608.0)), x), r);
  return tir_let(c->a, den, cmp(c, E_LT, tir_call(c->a, INTRIN_FABS, MLC_F32, 1, &x), F(c, 1.17549435e-38)), r);
}

static Expr *expand_square(LiCtx *c, Expr *x) { return mul(c, x, x); }
static Expr *expand_cube(LiCtx *c, Expr *x) { return mul(c, mul(c, x, x), x); }

static Expr *lower_call(LiCtx *c, Expr *e) {
  if (e->dtype != MLC_F32 || e->lanes != 1) return e;
  for (int i = 0; i < e->call.nargs; i++)
    if (e->call.args[i]->dtype != MLC_F32 || e->call.args[i]->lanes != 1) return e;
  Expr *x = e->call.nargs > 0 ? e->call.args[0] : NULL;
  switch (e->call.intrin) {
  case INTRIN_EXP: return exp_of(c, x);
  case INTRIN_SIGMOID: return with_var(c, x, expand_sigmoid);
  case INTRIN_TANH: return with_var(c, x, expand_tanh);
  case INTRIN_ERF: return with_var(c, x, expand_erf);
  case INTRIN_LOG: return with_var(c, x, expand_log);
  case INTRIN_POW: {
    double p;
    if (!is_nan_safe_const(e->call.args[1], &p)) return e;
    if (p == 1.0) return x;
    if (p == 2.0) return with_var(c, x, expand_square);
    if (p == 3.0) return with_var(c, x, expand_cube);
    if (p == -1.0) return dvd(c, F(c, 1.0), x);
    return e;
  }
  default: return e;
  }
}

static Expr *li_expr(void *ctx, Expr *e) {
  LiCtx *c = ctx;
  if (!e) return e;
  Expr *m = memo_get(&c->memo, e);
  if (m) return m;
  Expr *r = tir_expr_map_children(c->a, e, li_expr, ctx);
  if (r->kind == E_CALL) {
    r = lower_call(c, r);
  } else if (c->fma && r->kind == E_ADD && r->dtype == MLC_F32) {
    Expr *x = r->op.a, *y = r->op.b;
    if (y->kind == E_MUL && y->dtype == MLC_F32 && y->lanes == r->lanes)
      r = tir_call(c->a, INTRIN_FMA, MLC_F32, 3, (Expr *[]){y->op.a, y->op.b, x});
    else if (x->kind == E_MUL && x->dtype == MLC_F32 && x->lanes == r->lanes)
      r = tir_call(c->a, INTRIN_FMA, MLC_F32, 3, (Expr *[]){x->op.a, x->op.b, y});
  } else if (r->kind == E_ADD && r->dtype == MLC_I32) { /* acc + dot: one vpdpbusd */
    Expr *x = r->op.a, *y = r->op.b;
    if (y->kind == E_CALL && y->call.intrin == INTRIN_DOT_U8S8 && y->call.nargs == 2 && y->lanes == r->lanes)
      r = tir_call(c->a, INTRIN_DOT_U8S8, MLC_I32, 3, (Expr *[]){y->call.args[0], y->call.args[1], x});
    else if (x->kind == E_CALL && x->call.intrin == INTRIN_DOT_U8S8 && x->call.nargs == 2 && x->lanes == r->lanes)
      r = tir_call(c->a, INTRIN_DOT_U8S8, MLC_I32, 3, (Expr *[]){x->call.args[0], x->call.args[1], y});
  }
  memo_put(&c->memo, e, r);
  return r;
}

static Stmt *li_stmt(void *ctx, Stmt *s) {
  LiCtx *c = ctx;
  if (!s) return s;
  return tir_stmt_map_children(c->a, s, li_expr, li_stmt, ctx);
}

static bool target_has_fma(const Target *t) {
  if (!t || t->kind != TARGET_CPU) return false;
  if (t->arch == ARCH_AARCH64) return true;
  return t->arch == ARCH_X86_64 && strstr(t->features, "+fma") != NULL;
}

Stmt *tir_lower_intrinsics(Arena *a, Stmt *s, const Target *t) {
  if (!s || (t && t->kind != TARGET_CPU)) return s;
  LiCtx c = {.a = a, .fma = target_has_fma(t)};
  memo_init(&c.memo, a);
  return li_stmt(&c, s);
}

void tir_lower_intrinsics_func(Arena *a, TirFunc *f, const Target *t) {
  if (f) f->body = tir_lower_intrinsics(a, f->body, t);
}
