/* test_lower_intrinsics: passes/tir/lower_intrinsics.c. Rule: every float32 exp / log / tanh / sigmoid / erf
 * call becomes arithmetic (no call left but floor / fabs / fma / reinterpret) whose JIT-compiled result is
 * within a few float32 ulp (or 2e-7 absolute near zero crossings) of libm in double precision, over a dense
 * sweep and the special values (0, +-inf, NaN, huge, tiny, denormals); pow with exponent 2 becomes x * x;
 * a * b + c becomes fma on targets that have it; f64 calls are left alone; the vector loop of the
 * expansion really is vectorised (ymm/zmm instructions, no expf call in the assembly). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/llvm/codegen.h"
#include "passes/tir/tir_passes.h"

static int failures;
#define CHECK(c, ...)                                              \
  do {                                                             \
    if (!(c)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                \
      fprintf(stderr, "\n");                                       \
      failures++;                                                  \
    }                                                              \
  } while (0)

static Arena *A;
static Target host;

static bool has_call(const Expr *e, Intrin in) {
  if (!e) return false;
  switch (e->kind) {
  case E_INT: case E_FLOAT: case E_VAR: return false;
  case E_CALL:
    if (e->call.intrin == in) return true;
    for (int i = 0; i < e->call.nargs; i++)
      if (has_call(e->call.args[i], in)) return true;
    return false;
  case E_LOAD:
    for (int i = 0; i < e->load.n; i++)
      if (has_call(e->load.idx[i], in)) return true;
    return false;
  case E_LET: return has_call(e->op.a, in) || has_call(e->op.b, in);
  default: return has_call(e->op.a, in) || has_call(e->op.b, in) || has_call(e->op.c, in);
  }
}

/* out[i] = f(in[i]) for i < n, vectorized */
static TirFunc *unary_func(const char *name, Intrin in, mlc_dtype t, int64_t n, Buffer **bin, Buffer **bout) {
  *bin = tir_buffer(A, "x", t, 1, &n);
  *bout = tir_buffer(A, "y", t, 1, &n);
  Var *i = tir_var(A, "i", MLC_I64);
  Expr *ix = tir_varref(A, i);
  Expr *x = tir_load(A, *bin, 1, &ix);
  Expr *args[2] = {x, tir_float(A, t, 2.0)};
  Expr *v = tir_call(A, in, t, in == INTRIN_POW ? 2 : 1, args);
  Stmt *body = tir_for(A, i, tir_idx(A, 0), tir_idx(A, n), FOR_VECTORIZED, tir_store(A, *bout, 1, &ix, v));
  TirFunc *f = arena_alloc(A, sizeof *f);
  f->name = name;
  f->nparams = 2;
  f->params = arena_alloc(A, 2 * sizeof(Buffer *));
  f->params[0] = *bin;
  f->params[1] = *bout;
  f->body = body;
  return f;
}

/* The kernel, its JIT in *jit_out (the caller frees it after the last call). */
static mlc_kernel_fn jit(TirFunc *f, char **asm_out, CgJit **jit_out) {
  Diag d = {0};
  *jit_out = NULL;
  CgModule *m = cg_module_new(&host, f->name, &d);
  if (!m) return NULL;
  if (cg_add_func(m, f, &d) != MLC_OK) {
    CHECK(0, "cg_add_func: %s", d.msg);
    cg_module_free(m);
    return NULL;
  }
  if (asm_out) *asm_out = cg_print_asm(m, &d);
  if (cg_jit_create(m, jit_out, &d) != MLC_OK) {
    CHECK(0, "jit: %s", d.msg);
    return NULL;
  }
  return (mlc_kernel_fn)cg_jit_lookup(*jit_out, f->name);
}

static double ref(Intrin in, double x) {
  switch (in) {
  case INTRIN_EXP: return exp(x);
  case INTRIN_LOG: return log(x);
  case INTRIN_TANH: return tanh(x);
  case INTRIN_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case INTRIN_ERF: return erf(x);
  case INTRIN_POW: return x * x;
  default: return NAN;
  }
}

/* error in float32 ulps of the reference (absolute error near zero counts against 2^-23 * 2^-3) */
static double ulps(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e9;
  if (isinf(want) || fabs(want) > 3.4028234663852886e38) return (isinf(got) && (got > 0) == (want > 0)) ? 0 : 1e9;
  if (isnan(got) || isinf(got)) return 1e9;
  double aw = fabs(want);
  if (aw < 1.1754943508222875e-38) aw = 1.1754943508222875e-38;
  int e;
  frexp(aw, &e);
  double ulp = ldexp(1.0, e - 24);
  if (ulp < ldexp(1.0, -149)) ulp = ldexp(1.0, -149);
  return fabs((double)got - want) / ulp;
}

static void check_intrin(const char *name, Intrin in, double lo, double hi, double max_ulps, double abs_tol) {
  enum { N = 4096, NS = 16 };
  Buffer *bi, *bo;
  TirFunc *f = unary_func(name, in, MLC_F32, N + NS, &bi, &bo);
  Stmt *before = f->body;
  tir_lower_intrinsics_func(A, f, &host);
  CHECK(f->body != before, "%s: nothing lowered", name);
  CHECK(!has_call(f->body->loop.body->store.value, in), "%s: the call is still there", name);
  char *as = NULL;
  CgJit *j;
  mlc_kernel_fn k = jit(f, &as, &j);
  CHECK(k != NULL, "%s: no kernel", name);
  if (as && host.vector_bytes >= 32) {
    CHECK(strstr(as, "ymm") || strstr(as, "zmm"), "%s: not vectorised", name);
    CHECK(!strstr(as, "expf") && !strstr(as, "erff") && !strstr(as, "tanhf") && !strstr(as, "logf"),
          "%s: libm call left in the assembly", name);
  }
  free(as);
  if (!k) {
    cg_jit_free(j);
    return;
  }
  float *x = malloc(sizeof(float) * (N + NS)), *y = malloc(sizeof(float) * (N + NS));
  for (int i = 0; i < N; i++) x[i] = (float)(lo + (hi - lo) * i / (N - 1));
  const float specials[NS] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 1e-30f, -1e-30f, 1e-40f,
                              88.5f, -87.0f, -103.0f, 0.625f, -0.6249f, 3.9f};
  memcpy(x + N, specials, sizeof specials);
  void *bufs[2] = {x, y};
  int64_t dims[2] = {0, 0};
  CHECK(k(bufs, dims, NULL) == 0, "%s: kernel failed", name);
  double worst = 0;
  int wi = 0;
  for (int i = 0; i < N + NS; i++) {
    double w = ref(in, (double)x[i]);
    double u = ulps(y[i], w);
    if (fabs((double)y[i] - w) <= abs_tol) u = 0;
    if (u > worst) {
      worst = u;
      wi = i;
    }
  }
  CHECK(worst <= max_ulps, "%s: %.1f ulp at x=%.9g: got %.9g, want %.9g", name, worst, (double)x[wi],
        (double)y[wi], ref(in, (double)x[wi]));
  printf("%-8s max error %.2f ulp over [%g, %g] and specials\n", name, worst, lo, hi);
  free(x);
  free(y);
  cg_jit_free(j);
}

static void check_fma_and_f64(void) {
  /* y[i] = x[i] * 2 + x[i]: fma where the target has it */
  int64_t n = 8;
  Buffer *b = tir_buffer(A, "b", MLC_F32, 1, &n);
  Var *i = tir_var(A, "i", MLC_I64);
  Expr *ix = tir_varref(A, i);
  Expr *x = tir_load(A, b, 1, &ix);
  Stmt *s = tir_store(A, b, 1, &ix, tir_add(A, tir_mul(A, x, tir_float(A, MLC_F32, 2.0)), x));
  Stmt *r = tir_lower_intrinsics(A, s, &host);
  bool want_fma = strstr(host.features, "+fma") != NULL;
  CHECK((r->store.value->kind == E_CALL && r->store.value->call.intrin == INTRIN_FMA) == want_fma,
        "fma contraction (target has fma: %d)", want_fma);
  /* f64 keeps its libm call */
  Buffer *bd = tir_buffer(A, "d", MLC_F64, 1, &n);
  Expr *xd = tir_load(A, bd, 1, &ix);
  Stmt *sd = tir_store(A, bd, 1, &ix, tir_call(A, INTRIN_EXP, MLC_F64, 1, &xd));
  CHECK(tir_lower_intrinsics(A, sd, &host) == sd, "f64 exp must stay a call (and the same pointer)");
  /* nothing to do: the same pointer back */
  Stmt *plain = tir_store(A, b, 1, &ix, x);
  CHECK(tir_lower_intrinsics(A, plain, &host) == plain, "mutator rule");
}

int main(void) {
  A = arena_new();
  Diag d = {0};
  if (cg_target_parse("llvm", &host, &d) != MLC_OK) {
    fprintf(stderr, "target: %s\n", d.msg);
    return 1;
  }
  check_intrin("exp", INTRIN_EXP, -110.0, 90.0, 2.0, 0);
  check_intrin("exp_s", INTRIN_EXP, -4.0, 4.0, 2.0, 0);
  check_intrin("log", INTRIN_LOG, 1e-6, 100.0, 2.0, 0);
  check_intrin("log_s", INTRIN_LOG, 0.5, 2.0, 2.0, 1e-7);
  check_intrin("tanh", INTRIN_TANH, -12.0, 12.0, 4.0, 1e-7);
  check_intrin("sigmoid", INTRIN_SIGMOID, -30.0, 30.0, 4.0, 1e-7);
  check_intrin("erf", INTRIN_ERF, -6.0, 6.0, 4.0, 3e-7); /* the rational form: ~2.5e-7 absolute */
  check_intrin("pow2", INTRIN_POW, -1e3, 1e3, 0.5, 0);
  check_fma_and_f64();
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
