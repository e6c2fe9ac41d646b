/* test_codegen: codegen/llvm end to end. Builds TIR by hand, JITs it, runs it through the kernel ABI on real
 * data and compares with C; also target parsing, object emission + linking + dlopen, AArch64 cross assembly,
 * vector instructions in the assembly of a vectorised loop, and error paths. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "codegen/llvm/codegen.h"

static int failures;
#define CHECK(c)                                                       \
  do {                                                                 \
    if (!(c)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                                      \
    }                                                                  \
  } while (0)
#define CHECK_OK(st, d)                                                                   \
  do {                                                                                    \
    if ((st) != MLC_OK) {                                                                 \
      fprintf(stderr, "%s:%d: unexpected error %d: %s\n", __FILE__, __LINE__, (int)(st), (d).msg); \
      failures++;                                                                         \
    }                                                                                     \
  } while (0)

static Arena *A;
static Target host;
static CgJit *jits[64]; /* kept alive until the end of main */
static int njits;

static Buffer *buf1(const char *name, mlc_dtype t, int64_t n) { return tir_buffer(A, name, t, 1, &n); }
static Buffer *buf2(const char *name, mlc_dtype t, int64_t r, int64_t c) {
  int64_t s[2] = {r, c};
  return tir_buffer(A, name, t, 2, s);
}
static Expr *ld1(Buffer *b, Expr *i) { return tir_load(A, b, 1, &i); }
static Expr *ld2(Buffer *b, Expr *i, Expr *j) {
  Expr *ix[2] = {i, j};
  return tir_load(A, b, 2, ix);
}
static Stmt *st1(Buffer *b, Expr *i, Expr *v) { return tir_store(A, b, 1, &i, v); }
static Stmt *st2(Buffer *b, Expr *i, Expr *j, Expr *v) {
  Expr *ix[2] = {i, j};
  return tir_store(A, b, 2, ix, v);
}
static Expr *V(Var *v) { return tir_varref(A, v); }
static Expr *call1(Intrin in, Expr *x) { return tir_call(A, in, x->dtype, 1, &x); }
static Expr *f32(double v) { return tir_float(A, MLC_F32, v); }

static TirFunc *func(const char *name, int n, Buffer **params, Stmt *body) {
  TirFunc *f = arena_alloc(A, sizeof *f);
  f->name = name;
  f->nparams = n;
  f->params = arena_memdup(A, params, sizeof(Buffer *) * (size_t)n);
  f->body = body;
  return f;
}

/* JITs one function on the host target; returns the kernel (the JIT stays alive until exit). */
static mlc_kernel_fn jit1(const Target *t, TirFunc *f) {
  Diag d = {0};
  CgModule *m = cg_module_new(t, f->name, &d);
  if (!m) {
    fprintf(stderr, "cg_module_new: %s\n", d.msg);
    failures++;
    return NULL;
  }
  mlc_status st = cg_add_func(m, f, &d);
  CHECK_OK(st, d);
  if (st) {
    cg_module_free(m);
    return NULL;
  }
  CgJit *j;
  st = cg_jit_create(m, &j, &d);
  CHECK_OK(st, d);
  if (st) return NULL;
  if (njits < 64) jits[njits++] = j;
  void *p = cg_jit_lookup(j, f->name);
  if (!p) fprintf(stderr, "%s\n", cg_jit_error(j));
  CHECK(p != NULL);
  return (mlc_kernel_fn)p;
}

/* ---- launchers for parallel loops ---- */
static int serial_launches;
static int32_t serial_launch(mlc_kernel_ctx *ctx, mlc_parallel_body body, void *closure, int64_t extent) {
  serial_launches++;
  /* three uneven chunks, to check that bodies honour [begin, end) */
  int64_t a = extent / 3, b = extent / 2;
  int32_t rc = body(0, a, closure);
  if (!rc) rc = body(a, b, closure);
  if (!rc) rc = body(b, extent, closure);
  return rc;
}

typedef struct ThreadJob {
  mlc_parallel_body body;
  void *closure;
  int64_t b, e;
  int32_t rc;
} ThreadJob;
static void *thread_main(void *p) {
  ThreadJob *j = p;
  j->rc = j->body(j->b, j->e, j->closure);
  return NULL;
}
static int32_t thread_launch(mlc_kernel_ctx *ctx, mlc_parallel_body body, void *closure, int64_t extent) {
  enum { N = 4 };
  pthread_t th[N];
  ThreadJob jobs[N];
  for (int i = 0; i < N; i++) {
    jobs[i] = (ThreadJob){body, closure, extent * i / N, extent * (i + 1) / N, 0};
    pthread_create(&th[i], NULL, thread_main, &jobs[i]);
  }
  int32_t rc = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    if (jobs[i].rc && !rc) rc = jobs[i].rc;
  }
  return rc;
}

/* ---- tests ---- */

static void test_target(void) {
  Target t;
  Diag d = {0};
  CHECK_OK(cg_target_parse("llvm", &t, &d), d);
  CHECK(t.kind == TARGET_CPU && t.arch == ARCH_X86_64 && t.vector_bytes >= 16 && t.num_cores >= 1);
  CHECK(t.opt_level == 3 && t.l1_bytes > 0 && t.l2_bytes > 0 && t.triple[0] && t.cpu[0]);
  d = (Diag){0};
  CHECK_OK(cg_target_parse("llvm -mcpu=znver4 -opt-level=2", &t, &d), d);
  CHECK(t.vector_bytes == 64 && !strcmp(t.cpu, "znver4") && t.opt_level == 2);
  d = (Diag){0};
  CHECK_OK(cg_target_parse("llvm -mcpu=haswell", &t, &d), d);
  CHECK(t.vector_bytes == 32);
  d = (Diag){0};
  CHECK_OK(cg_target_parse("llvm -mcpu=x86-64 -mattr=+avx512f", &t, &d), d);
  CHECK(t.vector_bytes == 64);
  d = (Diag){0};
  CHECK_OK(cg_target_parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon", &t, &d), d);
  CHECK(t.arch == ARCH_AARCH64 && t.vector_bytes == 16 && !strncmp(t.triple, "aarch64", 7));
  d = (Diag){0};
  CHECK_OK(cg_target_parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1 -mattr=+neon -num-cores=8", &t, &d), d);
  CHECK(t.num_cores == 8 && !strcmp(t.cpu, "neoverse-v1"));
  d = (Diag){0};
  CHECK_OK(cg_target_parse("cuda", &t, &d), d);
  CHECK(t.kind == TARGET_GPU && t.arch == ARCH_NVPTX && !strcmp(t.triple, "nvptx64-nvidia-cuda"));
  d = (Diag){0};
  CHECK_OK(cg_target_parse("nvptx -mcpu=sm_90", &t, &d), d);
  CHECK(t.kind == TARGET_GPU && !strcmp(t.cpu, "sm_90"));
  const char *bad[] = {"llvm -mcpu=notacpu", "llvm -frobnicate=1", "llvm -mtriple=nonsense-foo-bar",
                       "llvm -opt-level=7", "llvm -mattr=+notafeature", "tvm", "", "llvm -mcpu", "nvptx -mcpu=gfx90a"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    d = (Diag){0};
    mlc_status st = cg_target_parse(bad[i], &t, &d);
    if (st != MLC_ERR_USAGE) fprintf(stderr, "target '%s': status %d (%s)\n", bad[i], (int)st, d.msg);
    CHECK(st == MLC_ERR_USAGE && d.msg[0]);
  }
}

/* C[i] = A[i] + B[i] over a vectorised loop. */
static TirFunc *vadd_func(const char *name, int64_t n) {
  Buffer *a = buf1("A", MLC_F32, n), *b = buf1("B", MLC_F32, n), *c = buf1("C", MLC_F32, n);
  Var *i = tir_var(A, "i", MLC_I64);
  Stmt *body = tir_for(A, i, tir_idx(A, 0), tir_idx(A, n), FOR_VECTORIZED,
                       st1(c, V(i), tir_add(A, ld1(a, V(i)), ld1(b, V(i)))));
  Buffer *ps[3] = {a, b, c};
  return func(name, 3, ps, body);
}

static float *aligned_floats(int64_t n) {
  float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
  return p;
}

static void test_vadd(const Target *t) {
  enum { N = 1003 };
  mlc_kernel_fn k = jit1(t, vadd_func("vadd", N));
  if (!k) return;
  float *a = aligned_floats(N), *b = aligned_floats(N), *c = aligned_floats(N);
  for (int i = 0; i < N; i++) a[i] = (float)i * 0.5f, b[i] = 3.0f - (float)i;
  void *bufs[3] = {a, b, c};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += c[i] != a[i] + b[i];
  CHECK(bad == 0);
  free(a), free(b), free(c);
}

/* Explicit vector lanes: contiguous ramp loads/stores, a strided gather and a broadcast. */
static void test_lanes(void) {
  enum { N = 64, L = 8 };
  Buffer *a = buf1("A", MLC_F32, 2 * N), *o = buf1("O", MLC_F32, N), *g = buf1("G", MLC_F32, N);
  Var *i = tir_var(A, "i", MLC_I64);
  Expr *base = tir_mul(A, V(i), tir_idx(A, L));
  Expr *r1 = tir_ramp(A, base, tir_idx(A, 1), L);
  Expr *r2 = tir_ramp(A, tir_mul(A, base, tir_idx(A, 2)), tir_idx(A, 2), L);
  Stmt *s1 = st1(o, r1, tir_add(A, tir_mul(A, ld1(a, r1), tir_broadcast(A, f32(2.0), L)), tir_broadcast(A, f32(1.0), L)));
  Stmt *s2 = st1(g, r1, ld1(a, r2)); /* gather of every other element */
  Stmt *body = tir_for(A, i, tir_idx(A, 0), tir_idx(A, N / L), FOR_SERIAL, tir_seq2(A, s1, s2));
  Buffer *ps[3] = {a, o, g};
  mlc_kernel_fn k = jit1(&host, func("lanes", 3, ps, body));
  if (!k) return;
  float *x = aligned_floats(2 * N), *y = aligned_floats(N), *z = aligned_floats(N);
  for (int j = 0; j < 2 * N; j++) x[j] = (float)j;
  void *bufs[3] = {x, y, z};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int j = 0; j < N; j++) bad += y[j] != x[j] * 2 + 1 || z[j] != x[2 * j];
  CHECK(bad == 0);
  free(x), free(y), free(z);
}

/* let s = 3; parallel for i: for j: C[i,j] = A[i,j] * s + float(i); */
static void test_parallel(void) {
  enum { R = 67, C = 37 };
  Buffer *a = buf2("A", MLC_F32, R, C), *c = buf2("C", MLC_F32, R, C);
  Var *i = tir_var(A, "i", MLC_I64), *j = tir_var(A, "j", MLC_I64), *s = tir_var(A, "s", MLC_F32);
  Var *off = tir_var(A, "off", MLC_I64);
  Expr *val = tir_add(A, tir_mul(A, ld2(a, V(i), V(j)), V(s)), tir_cast(A, MLC_F32, tir_sub(A, V(i), V(off))));
  Stmt *inner = tir_for(A, j, tir_idx(A, 0), tir_idx(A, C), FOR_SERIAL, st2(c, V(i), V(j), val));
  /* nested parallel loop inside a parallel body: must run serially */
  Stmt *inner_par = tir_for(A, j, tir_idx(A, 0), tir_idx(A, C), FOR_PARALLEL, st2(c, V(i), V(j), val));
  Stmt *outer = tir_for(A, i, V(off), tir_idx(A, R - 1), FOR_PARALLEL, tir_seq2(A, inner, inner_par));
  Stmt *first = tir_for(A, j, tir_idx(A, 0), tir_idx(A, C), FOR_SERIAL, st2(c, tir_idx(A, 0), V(j), f32(-1)));
  Stmt *body = tir_let_stmt(A, s, f32(3.0), tir_let_stmt(A, off, tir_idx(A, 1), tir_seq2(A, first, outer)));
  Buffer *ps[2] = {a, c};
  mlc_kernel_fn k = jit1(&host, func("par", 2, ps, body));
  if (!k) return;
  float *x = aligned_floats(R * C), *y = aligned_floats(R * C);
  for (int q = 0; q < R * C; q++) x[q] = (float)(q % 101) * 0.25f;
  void *bufs[2] = {x, y};
  for (int mode = 0; mode < 4; mode++) {
    memset(y, 0, sizeof(float) * R * C);
    mlc_kernel_ctx ctx = {0};
    mlc_pool *pool = NULL;
    if (mode == 0) ctx.parallel_launch = serial_launch;
    if (mode == 1) ctx.parallel_launch = thread_launch;
    if (mode == 3) {
      pool = mlc_pool_create(4);
      CHECK(pool != NULL);
      if (pool) mlc_pool_kernel_ctx(pool, &ctx);
    }
    int before = serial_launches;
    CHECK(k(bufs, NULL, mode == 2 ? NULL : &ctx) == 0); /* mode 2: no ctx, runs serially */
    if (mode == 0) CHECK(serial_launches == before + 1);
    int bad = 0;
    for (int r = 0; r < R; r++)
      for (int q = 0; q < C; q++) {
        float want = r == 0 ? -1.0f : x[r * C + q] * 3.0f + (float)(r - 1);
        bad += y[r * C + q] != want;
      }
    if (bad) fprintf(stderr, "parallel mode %d: %d wrong\n", mode, bad);
    CHECK(bad == 0);
    if (pool) mlc_pool_destroy(pool);
  }
  free(x), free(y);
}

static int32_t failing_launch(mlc_kernel_ctx *ctx, mlc_parallel_body body, void *closure, int64_t extent) {
  return 7;
}

/* A failing launch inside an allocate (heap scratch) propagates its code. */
static void test_parallel_error(void) {
  Buffer *c = buf1("C", MLC_F32, 16), *tmp = buf1("big", MLC_F32, 100000);
  Var *i = tir_var(A, "i", MLC_I64);
  Stmt *par = tir_for(A, i, tir_idx(A, 0), tir_idx(A, 16), FOR_PARALLEL, st1(tmp, V(i), f32(1)));
  Stmt *body = tir_allocate(A, tmp, tir_seq2(A, par, st1(c, tir_idx(A, 0), ld1(tmp, tir_idx(A, 0)))));
  Buffer *ps[1] = {c};
  mlc_kernel_fn k = jit1(&host, func("parerr", 1, ps, body));
  if (!k) return;
  float out[16] = {0};
  void *bufs[1] = {out};
  mlc_kernel_ctx ctx = {.parallel_launch = failing_launch};
  CHECK(k(bufs, NULL, &ctx) == 7);
  ctx.parallel_launch = serial_launch;
  CHECK(k(bufs, NULL, &ctx) == 0 && out[0] == 1.0f);
}

/* Row sums with a stack scratch accumulator and an unrolled inner loop; a 2-D transpose through heap scratch. */
static void test_reduce_allocate(void) {
  enum { R = 33, C = 70, BIG = 200 * 100 };
  Buffer *a = buf2("A", MLC_F32, R, C), *o = buf1("O", MLC_F32, R), *acc = buf1("acc", MLC_F32, 1);
  Var *i = tir_var(A, "i", MLC_I64), *j = tir_var(A, "j", MLC_I64), *u = tir_var(A, "u", MLC_I64);
  Expr *z = tir_idx(A, 0);
  Stmt *upd = st1(acc, z, tir_add(A, ld1(acc, z), ld2(a, V(i), tir_add(A, tir_mul(A, V(j), tir_idx(A, 2)), V(u)))));
  Stmt *red = tir_for(A, j, z, tir_idx(A, C / 2), FOR_SERIAL, tir_for(A, u, z, tir_idx(A, 2), FOR_UNROLLED, upd));
  Stmt *row = tir_allocate(A, acc, tir_seq(A, 3, (Stmt *[]){st1(acc, z, f32(0)), red, st1(o, V(i), ld1(acc, z))}));
  Stmt *s1 = tir_for(A, i, z, tir_idx(A, R), FOR_SERIAL, row);
  /* transpose 200x100 -> 100x200 through scratch (80 KB: heap) */
  Buffer *x = buf2("X", MLC_F32, 200, 100), *y = buf2("Y", MLC_F32, 100, 200), *t = buf2("T", MLC_F32, 100, 200);
  Var *p = tir_var(A, "p", MLC_I64), *q = tir_var(A, "q", MLC_I64);
  Stmt *fill = tir_for(A, p, z, tir_idx(A, 200), FOR_SERIAL,
                       tir_for(A, q, z, tir_idx(A, 100), FOR_UNROLLED, st2(t, V(q), V(p), ld2(x, V(p), V(q)))));
  Stmt *copy = tir_for(A, q, z, tir_idx(A, 100), FOR_SERIAL,
                       tir_for(A, p, z, tir_idx(A, 200), FOR_VECTORIZED, st2(y, V(q), V(p), ld2(t, V(q), V(p)))));
  Stmt *s2 = tir_allocate(A, t, tir_seq2(A, fill, copy));
  Buffer *ps[4] = {a, x, o, y};
  mlc_kernel_fn k = jit1(&host, func("reduce_alloc", 4, ps, tir_seq2(A, s1, s2)));
  if (!k) return;
  float *av = aligned_floats(R * C), *ov = aligned_floats(R), *xv = aligned_floats(BIG), *yv = aligned_floats(BIG);
  for (int q2 = 0; q2 < R * C; q2++) av[q2] = (float)((q2 * 7) % 13) - 6.0f;
  for (int q2 = 0; q2 < BIG; q2++) xv[q2] = (float)q2;
  void *bufs[4] = {av, xv, ov, yv};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int r = 0; r < R; r++) {
    float s = 0;
    for (int c2 = 0; c2 < C; c2++) s += av[r * C + c2];
    bad += ov[r] != s;
  }
  for (int r = 0; r < 200; r++)
    for (int c2 = 0; c2 < 100; c2++) bad += yv[c2 * 200 + r] != xv[r * 100 + c2];
  CHECK(bad == 0);
  free(av), free(ov), free(xv), free(yv);
}

static float sigmoidf_ref(float x) { return 1.0f / (1.0f + expf(-x)); }

/* select / cast / intrinsic mix, per element, against libm. */
static void test_math(void) {
  enum { N = 41, NO = 12 };
  Buffer *x = buf1("X", MLC_F32, N), *o = buf2("O", MLC_F32, NO, N), *ob = buf1("OB", MLC_BOOL, N);
  Buffer *od = buf1("OD", MLC_F64, N);
  Var *i = tir_var(A, "i", MLC_I64);
  Expr *xi = ld1(x, V(i));
  Expr *outs[NO];
  outs[0] = tir_select(A, tir_bin(A, E_GT, xi, f32(0)), call1(INTRIN_EXP, xi), call1(INTRIN_TANH, xi));
  outs[1] = tir_cast(A, MLC_F32, tir_cast(A, MLC_I32, tir_mul(A, xi, f32(3.0))));
  outs[2] = call1(INTRIN_SIGMOID, xi);
  outs[3] = call1(INTRIN_ERF, xi);
  outs[4] = call1(INTRIN_SQRT, call1(INTRIN_FABS, xi));
  outs[5] = call1(INTRIN_ROUND, tir_mul(A, xi, f32(2.0)));
  outs[6] = tir_call(A, INTRIN_POW, MLC_F32, 2, (Expr *[]){call1(INTRIN_FABS, xi), f32(1.5)});
  outs[7] = tir_call(A, INTRIN_ATAN2, MLC_F32, 2, (Expr *[]){xi, f32(-0.5)});
  outs[8] = tir_bin(A, E_MAX, tir_bin(A, E_MIN, xi, f32(1.0)), f32(-1.0));
  outs[9] = tir_call(A, INTRIN_FMA, MLC_F32, 3, (Expr *[]){xi, xi, f32(0.25)});
  outs[10] = tir_bin(A, E_FLOORMOD, xi, f32(0.75));
  outs[11] = call1(INTRIN_FLOOR, tir_bin(A, E_DIV, xi, f32(0.3)));
  Stmt *ss[NO + 2];
  for (int q = 0; q < NO; q++) ss[q] = st2(o, tir_idx(A, q), V(i), outs[q]);
  ss[NO] = st1(ob, V(i), tir_bin(A, E_OR, tir_call(A, INTRIN_ISNAN, MLC_BOOL, 1, &xi), tir_call(A, INTRIN_ISINF, MLC_BOOL, 1, &xi)));
  ss[NO + 1] = st1(od, V(i), call1(INTRIN_TANH, tir_cast(A, MLC_F64, xi)));
  Stmt *body = tir_for(A, i, tir_idx(A, 0), tir_idx(A, N), FOR_VECTORIZED, tir_seq(A, NO + 2, ss));
  Buffer *ps[4] = {x, o, ob, od};
  mlc_kernel_fn k = jit1(&host, func("mathmix", 4, ps, body));
  if (!k) return;
  float xs[N], os[NO * N];
  unsigned char bs[N];
  double ds[N];
  for (int q = 0; q < N; q++) xs[q] = (float)(q - 20) * 0.37f;
  xs[3] = NAN;
  xs[4] = INFINITY;
  xs[5] = -INFINITY;
  void *bufs[4] = {xs, os, bs, ds};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int q = 0; q < N; q++) {
    float v = xs[q];
    float want[NO] = {v > 0 ? expf(v) : tanhf(v), (float)(int)(v * 3.0f), sigmoidf_ref(v), erff(v), sqrtf(fabsf(v)),
                      nearbyintf(v * 2.0f), powf(fabsf(v), 1.5f), atan2f(v, -0.5f), 0, fmaf(v, v, 0.25f),
                      v - floorf(v / 0.75f) * 0.75f, floorf(v / 0.3f)};
    want[8] = isnan(v) ? v : v < -1 ? -1 : v > 1 ? 1 : v;
    for (int r = 0; r < NO; r++) {
      float got = os[r * N + q], w = want[r];
      if (r == 1 && !isfinite(v)) continue; /* float->int of NaN/inf is undefined, as in C */
      bool same = (isnan(got) && isnan(w)) || got == w || fabsf(got - w) <= 1e-5f * fmaxf(1.0f, fabsf(w));
      if (!same) {
        if (bad < 10) fprintf(stderr, "math out %d x=%g: got %g want %g\n", r, v, got, w);
        bad++;
      }
    }
    bad += bs[q] != (isnan(v) || isinf(v));
    if (!isnan(v)) bad += fabs(ds[q] - tanh((double)v)) > 1e-15;
  }
  CHECK(bad == 0);
}

/* Integer semantics: trunc and floor division/modulo of negatives, shifts, min/max, unsigned compares. */
static void test_int(void) {
  enum { N = 8, NO = 9 };
  Buffer *a = buf1("a", MLC_I32, N), *b = buf1("b", MLC_I32, N), *o = buf2("o", MLC_I32, NO, N);
  Buffer *u = buf1("u", MLC_U32, N), *ou = buf2("ou", MLC_U32, 3, N);
  Var *i = tir_var(A, "i", MLC_I64);
  Expr *x = ld1(a, V(i)), *y = ld1(b, V(i)), *ux = ld1(u, V(i));
  Expr *outs[NO] = {tir_bin(A, E_DIV, x, y), tir_bin(A, E_MOD, x, y), tir_bin(A, E_FLOORDIV, x, y),
                    tir_bin(A, E_FLOORMOD, x, y), tir_bin(A, E_SHR, x, tir_int(A, MLC_I32, 1)),
                    tir_bin(A, E_MIN, x, y), tir_bin(A, E_MAX, x, y),
                    tir_cast(A, MLC_I32, tir_bin(A, E_LT, x, y)),
                    tir_cast(A, MLC_I32, tir_cast(A, MLC_I8, tir_mul(A, x, tir_int(A, MLC_I32, 37))))};
  Expr *uouts[3] = {tir_bin(A, E_SHR, ux, tir_int(A, MLC_U32, 1)), tir_bin(A, E_DIV, ux, tir_int(A, MLC_U32, 3)),
                    tir_cast(A, MLC_U32, tir_bin(A, E_GT, ux, tir_int(A, MLC_U32, 5)))};
  Stmt *ss[NO + 3];
  for (int q = 0; q < NO; q++) ss[q] = st2(o, tir_idx(A, q), V(i), outs[q]);
  for (int q = 0; q < 3; q++) ss[NO + q] = st2(ou, tir_idx(A, q), V(i), uouts[q]);
  Stmt *body = tir_for(A, i, tir_idx(A, 0), tir_idx(A, N), FOR_SERIAL, tir_seq(A, NO + 3, ss));
  Buffer *ps[5] = {a, b, u, o, ou};
  mlc_kernel_fn k = jit1(&host, func("intops", 5, ps, body));
  if (!k) return;
  int32_t av[N] = {7, -7, 7, -7, 0, -1, 100, -100}, bv[N] = {2, 2, -2, -2, 3, 3, -7, 7}, ov[NO * N];
  uint32_t uv[N] = {0xffffffffu, 1, 2, 6, 0x80000000u, 5, 100, 7}, ouv[3 * N];
  void *bufs[5] = {av, bv, uv, ov, ouv};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int q = 0; q < N; q++) {
    int32_t x0 = av[q], y0 = bv[q];
    int32_t fd = x0 / y0 - ((x0 % y0 != 0) && ((x0 % y0 < 0) != (y0 < 0)));
    int32_t fm = x0 - fd * y0;
    int32_t want[NO] = {x0 / y0, x0 % y0, fd, fm, x0 >> 1, x0 < y0 ? x0 : y0, x0 > y0 ? x0 : y0, x0 < y0,
                        (int8_t)(x0 * 37)};
    for (int r = 0; r < NO; r++)
      if (ov[r * N + q] != want[r]) {
        fprintf(stderr, "int out %d (%d, %d): got %d want %d\n", r, x0, y0, ov[r * N + q], want[r]);
        bad++;
      }
    uint32_t uw[3] = {uv[q] >> 1, uv[q] / 3, uv[q] > 5};
    for (int r = 0; r < 3; r++) bad += ouv[r * N + q] != uw[r];
  }
  CHECK(bad == 0);
}

static uint16_t bf16_ref(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  if (isnan(f)) return (uint16_t)(((b & 0x7f0000u) ? b : b | 0x400000u) >> 16); /* stays a NaN */
  b += 0x7fffu + ((b >> 16) & 1);
  return (uint16_t)(b >> 16);
}

/* float16 and bfloat16 storage: f32 -> f16/bf16 -> arithmetic -> f32 round trips. */
static void test_half(const Target *t) {
  enum { N = 19 };
  Buffer *x = buf1("x", MLC_F32, N), *h = buf1("h", MLC_F16, N), *bf = buf1("bf", MLC_BF16, N);
  Buffer *o = buf2("o", MLC_F32, 2, N);
  Var *i = tir_var(A, "i", MLC_I64);
  Expr *xi = ld1(x, V(i));
  Stmt *ss[4] = {
      st1(h, V(i), tir_cast(A, MLC_F16, xi)),
      st1(bf, V(i), tir_cast(A, MLC_BF16, xi)),
      st2(o, tir_idx(A, 0), V(i), tir_cast(A, MLC_F32, tir_add(A, ld1(h, V(i)), tir_float(A, MLC_F16, 1.0)))),
      st2(o, tir_idx(A, 1), V(i), tir_cast(A, MLC_F32, tir_mul(A, ld1(bf, V(i)), tir_float(A, MLC_BF16, 3.0)))),
  };
  Stmt *body = tir_for(A, i, tir_idx(A, 0), tir_idx(A, N), FOR_VECTORIZED, tir_seq(A, 4, ss));
  Buffer *ps[4] = {x, h, bf, o};
  mlc_kernel_fn k = jit1(t, func("halfs", 4, ps, body));
  if (!k) return;
  float xs[N], os[2 * N];
  _Float16 hs[N];
  uint16_t bs[N];
  for (int q = 0; q < N; q++) xs[q] = (float)(q - 9) * 1.2345f + 1e-3f * (float)q;
  xs[0] = 70000.0f; /* overflows half */
  xs[1] = NAN;
  void *bufs[4] = {xs, hs, bs, os};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int q = 0; q < N; q++) {
    _Float16 hw = (_Float16)xs[q];
    uint16_t hb, hwb;
    memcpy(&hb, &hs[q], 2);
    memcpy(&hwb, &hw, 2);
    if (!isnan(xs[q])) bad += hb != hwb;
    bad += bs[q] != bf16_ref(xs[q]);
    float h1 = (float)(_Float16)((float)hw + 1.0f);
    uint32_t bb = (uint32_t)bf16_ref(xs[q]) << 16;
    float bfv;
    memcpy(&bfv, &bb, 4);
    uint32_t pb = (uint32_t)bf16_ref(bfv * 3.0f) << 16;
    float prod;
    memcpy(&prod, &pb, 4);
    if (!isnan(xs[q])) {
      if (os[q] != h1) fprintf(stderr, "f16 %g: got %g want %g\n", xs[q], os[q], h1), bad++;
      if (os[N + q] != prod) fprintf(stderr, "bf16 %g: got %g want %g\n", xs[q], os[N + q], prod), bad++;
    } else
      bad += !isnan(os[q]) + !isnan(os[N + q]);
  }
  CHECK(bad == 0);
}

/* The reinterpret intrinsic keeps every bit, NaN payloads included, through the f32 registers of float16 and
 * bfloat16: uint16 -> f16/bf16 stored, and uint16 -> f16/bf16 -> uint16 in one expression; bool <-> uint8. */
static void test_reinterpret(const Target *t) {
  enum { N = 12 };
  static const uint16_t pats[N] = {0x0000, 0x8000, 0x3c00, 0x7c00, 0xfc00, 0x7c01, 0x7d55, 0x0001,
                                   0x7f81, 0xff80, 0xffff, 0xabcd};
  Buffer *x = buf1("x", MLC_U16, N), *h = buf1("h", MLC_F16, N), *bf = buf1("bf", MLC_BF16, N);
  Buffer *o = buf2("o", MLC_U16, 2, N), *u = buf1("u", MLC_U8, N), *bo = buf1("bo", MLC_BOOL, N);
  Buffer *ub = buf1("ub", MLC_U8, N);
  Var *i = tir_var(A, "i", MLC_I64);
  Expr *xi = ld1(x, V(i)), *ui = ld1(u, V(i));
  Expr *hx = tir_call(A, INTRIN_REINTERPRET, MLC_F16, 1, &xi), *bx = tir_call(A, INTRIN_REINTERPRET, MLC_BF16, 1, &xi);
  Expr *bu = tir_call(A, INTRIN_REINTERPRET, MLC_BOOL, 1, &ui);
  Stmt *ss[6] = {
      st1(h, V(i), hx),
      st1(bf, V(i), bx),
      st2(o, tir_idx(A, 0), V(i), tir_call(A, INTRIN_REINTERPRET, MLC_U16, 1, &hx)),
      st2(o, tir_idx(A, 1), V(i), tir_call(A, INTRIN_REINTERPRET, MLC_U16, 1, &bx)),
      st1(bo, V(i), bu),
      st1(ub, V(i), tir_call(A, INTRIN_REINTERPRET, MLC_U8, 1, &bu)),
  };
  Stmt *body = tir_for(A, i, tir_idx(A, 0), tir_idx(A, N), FOR_SERIAL, tir_seq(A, 6, ss));
  Buffer *ps[7] = {x, u, h, bf, o, bo, ub};
  mlc_kernel_fn k = jit1(t, func("reinterpret", 7, ps, body));
  if (!k) return;
  uint16_t hs[N], bs[N], os[2 * N];
  uint8_t us[N], bos[N], ubs[N];
  for (int q = 0; q < N; q++) us[q] = (uint8_t)(q % 2);
  void *bufs[7] = {(void *)pats, us, hs, bs, os, bos, ubs};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int q = 0; q < N; q++) {
    if (hs[q] != pats[q] || bs[q] != pats[q] || os[q] != pats[q] || os[N + q] != pats[q])
      fprintf(stderr, "reinterpret %04x: f16 %04x bf16 %04x back %04x %04x\n", pats[q], hs[q], bs[q], os[q], os[N + q]),
          bad++;
    bad += bos[q] != us[q] || ubs[q] != us[q];
  }
  CHECK(bad == 0);
}

/* dot_u8s8 on int32 words (four u8 x s8 products), with and without an accumulator, in a serial loop and in a
 * 16-lane vectorized one (vpdpbusd where the target has AVX512-VNNI, else the byte products), against C. */
static void test_dot_u8s8(const Target *t) {
  enum { N = 64 };
  Buffer *a = buf1("a", MLC_I32, N), *b = buf1("b", MLC_I32, N), *c = buf1("c", MLC_I32, N);
  Buffer *o = buf2("o", MLC_I32, 4, N);
  Var *i = tir_var(A, "i", MLC_I64), *j = tir_var(A, "j", MLC_I64), *q = tir_var(A, "q", MLC_I64);
  Expr *vi = tir_add(A, tir_mul(A, V(j), tir_idx(A, 16)), V(q));
  Expr *two_s[2] = {ld1(a, V(i)), ld1(b, V(i))}, *three_s[3] = {ld1(a, V(i)), ld1(b, V(i)), ld1(c, V(i))};
  Expr *two_v[2] = {ld1(a, vi), ld1(b, vi)}, *three_v[3] = {ld1(a, vi), ld1(b, vi), ld1(c, vi)};
  Stmt *serial[2] = {st2(o, tir_idx(A, 0), V(i), tir_call(A, INTRIN_DOT_U8S8, MLC_I32, 2, two_s)),
                     st2(o, tir_idx(A, 1), V(i), tir_call(A, INTRIN_DOT_U8S8, MLC_I32, 3, three_s))};
  Stmt *vec[2] = {st2(o, tir_idx(A, 2), vi, tir_call(A, INTRIN_DOT_U8S8, MLC_I32, 2, two_v)),
                  st2(o, tir_idx(A, 3), vi, tir_call(A, INTRIN_DOT_U8S8, MLC_I32, 3, three_v))};
  Stmt *body[2] = {
      tir_for(A, i, tir_idx(A, 0), tir_idx(A, N), FOR_SERIAL, tir_seq(A, 2, serial)),
      tir_for(A, j, tir_idx(A, 0), tir_idx(A, N / 16), FOR_SERIAL,
              tir_for(A, q, tir_idx(A, 0), tir_idx(A, 16), FOR_VECTORIZED, tir_seq(A, 2, vec))),
  };
  Buffer *ps[4] = {a, b, c, o};
  mlc_kernel_fn k = jit1(t, func("dot_u8s8", 4, ps, tir_seq(A, 2, body)));
  if (!k) return;
  int32_t as[N], bs[N], cs[N], os[4 * N];
  uint32_t r = 12345;
  for (int n = 0; n < N; n++) {
    r = r * 1103515245u + 12345u, as[n] = (int32_t)r;
    r = r * 1103515245u + 12345u, bs[n] = (int32_t)r;
    r = r * 1103515245u + 12345u, cs[n] = (int32_t)(r >> 4) - (1 << 27);
  }
  as[0] = -1, bs[0] = (int32_t)0x80808080u; /* 255 * -128 in every byte */
  void *bufs[4] = {as, bs, cs, os};
  CHECK(k(bufs, NULL, NULL) == 0);
  int bad = 0;
  for (int n = 0; n < N; n++) {
    int64_t want = 0;
    for (int byte = 0; byte < 4; byte++)
      want += (int64_t)(((uint32_t)as[n] >> (8 * byte)) & 255) * (int8_t)(((uint32_t)bs[n] >> (8 * byte)) & 255);
    int64_t with = want + cs[n];
    bad += os[n] != want || os[2 * N + n] != want || os[N + n] != with || os[3 * N + n] != with;
  }
  CHECK(bad == 0);
}

/* Object file -> shared library -> dlopen -> call. */
static void test_object_so(void) {
  Diag d = {0};
  CgModule *m = cg_module_new(&host, "objmod", &d);
  CHECK(m != NULL);
  if (!m) return;
  CHECK_OK(cg_add_func(m, vadd_func("vadd_so", 100), &d), d);
  char dir[] = "/tmp/mlc_cg_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char obj[128], so[128];
  snprintf(obj, sizeof obj, "%s/k.o", dir);
  snprintf(so, sizeof so, "%s/k.so", dir);
  CHECK_OK(cg_emit_object(m, obj, &d), d);
  char *ir = cg_print_ir(m);
  CHECK(ir && strstr(ir, "@vadd_so("));
  free(ir);
  cg_module_free(m);
  const char *objs[1] = {obj};
  CHECK_OK(cg_link_shared(&host, 1, objs, so, &d), d);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL);
  if (h) {
    mlc_kernel_fn k = (mlc_kernel_fn)dlsym(h, "vadd_so");
    CHECK(k != NULL);
    float a[100], b[100], c[100];
    for (int i = 0; i < 100; i++) a[i] = (float)i, b[i] = 1.5f;
    void *bufs[3] = {a, b, c};
    if (k) CHECK(k(bufs, NULL, NULL) == 0 && c[99] == 100.5f && c[0] == 1.5f);
    dlclose(h);
  }
  /* a broken object makes the driver fail with its message */
  FILE *f = fopen(obj, "w");
  if (f) fputs("not an object", f), fclose(f);
  d = (Diag){0};
  CHECK(cg_link_shared(&host, 1, objs, so, &d) != MLC_OK && d.msg[0]);
  unlink(obj);
  unlink(so);
  rmdir(dir);
}

/* Vector instructions for AVX-512 / AVX2 hosts; AArch64 NEON assembly from an x86 host. */
static void test_asm(void) {
  const char *targets[] = {"llvm -mcpu=skylake-avx512", "llvm -mcpu=haswell",
                           "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"};
  for (int q = 0; q < 3; q++) {
    Target t;
    Diag d = {0};
    CHECK_OK(cg_target_parse(targets[q], &t, &d), d);
    CgModule *m = cg_module_new(&t, "asm", &d);
    CHECK(m != NULL);
    if (!m) continue;
    CHECK_OK(cg_add_func(m, vadd_func("vadd_asm", 1024), &d), d);
    char *s = cg_print_asm(m, &d);
    CHECK(s != NULL);
    if (s) {
      bool vec = q < 2 ? (strstr(s, "zmm") || strstr(s, "ymm")) : strstr(s, ".4s") != NULL;
      if (!vec) fprintf(stderr, "no vector code for %s:\n%.2000s\n", targets[q], s);
      CHECK(vec);
      free(s);
    }
    cg_module_free(m);
  }
}

static void test_errors(void) {
  Diag d = {0};
  /* GPU codegen (codegen/llvm/nvptx.c) takes a kernel without thread bindings too: it runs on one thread */
  Target gpu;
  CHECK_OK(cg_target_parse("nvptx -mcpu=sm_90", &gpu, &d), d);
  CgModule *m = cg_module_new(&gpu, "gpu", &d);
  CHECK(m != NULL);
  if (m) {
    CHECK_OK(cg_add_func(m, vadd_func("g", 8), &d), d);
    cg_module_free(m);
  }
  d = (Diag){0};
  /* an unbound variable fails the function, and the module stays usable */
  d = (Diag){0};
  m = cg_module_new(&host, "err", &d);
  CHECK(m != NULL);
  if (!m) return;
  Buffer *c = buf1("C", MLC_F32, 4);
  Var *ghost = tir_var(A, "ghost", MLC_I64);
  Var *i = tir_var(A, "i", MLC_I64);
  Stmt *bad = tir_for(A, i, tir_idx(A, 0), tir_idx(A, 4), FOR_PARALLEL, st1(c, V(ghost), f32(1)));
  Buffer *ps[1] = {c};
  CHECK(cg_add_func(m, func("bad", 1, ps, bad), &d) == MLC_ERR_INTERNAL && strstr(d.msg, "ghost"));
  d = (Diag){0};
  CHECK_OK(cg_add_func(m, vadd_func("good", 8), &d), d);
  CgJit *j;
  CHECK_OK(cg_jit_create(m, &j, &d), d);
  if (!diag_ok(&d)) return;
  CHECK(cg_jit_lookup(j, "good") != NULL);
  CHECK(cg_jit_lookup(j, "bad") == NULL && cg_jit_error(j)[0]);
  cg_jit_free(j);
}

int main(void) {
  A = arena_new();
  Diag d = {0};
  if (cg_target_parse("llvm", &host, &d) != MLC_OK) {
    fprintf(stderr, "host target: %s\n", d.msg);
    return 1;
  }
  test_target();
  test_vadd(&host);
  Target o0, generic;
  d = (Diag){0};
  if (cg_target_parse("llvm -opt-level=0", &o0, &d) == MLC_OK) {
    test_vadd(&o0);
    test_reinterpret(&o0);
  }
  CHECK(diag_ok(&d));
  if (cg_target_parse("llvm -mcpu=x86-64", &generic, &d) == MLC_OK) { /* no F16C: libcalls */
    test_half(&generic);
    test_reinterpret(&generic);
    test_dot_u8s8(&generic);
  }
  CHECK(diag_ok(&d));
  test_lanes();
  test_parallel();
  test_parallel_error();
  test_reduce_allocate();
  test_math();
  test_int();
  test_half(&host);
  test_reinterpret(&host);
  test_dot_u8s8(&host);
  test_object_so();
  test_asm();
  test_errors();
  for (int i = 0; i < njits; i++) cg_jit_free(jits[i]);
  arena_free(A);
  if (failures) {
    fprintf(stderr, "test_codegen: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_codegen: ok\n");
  return 0;
}
