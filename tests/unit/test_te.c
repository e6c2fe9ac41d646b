/* Tests of TE lowering and the TIR simplifier/printer.
 *
 * Each case builds a compute, schedules it (splits that divide and that do not, fuse, reorder, vectorize,
 * parallel, unroll, compute_inline, extern), lowers it, and EXECUTES the TIR with the small interpreter below
 * on random data, comparing against a plain C reference. The interpreter bounds-checks every load and store
 * and poisons scratch allocations with NaN, so a wrong index, a missing guard or a missing init shows up.
 * Printed TIR is checked for the expected loop names and kinds; simplifier rules are checked one by one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "te/te.h"

static int failures;
#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      failures++;                                                     \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
    }                                                                 \
  } while (0)

/* ---- a TIR interpreter (tests only) ---- */

typedef struct Val {
  int64_t i;
  double f;
} Val;

typedef struct Interp {
  int nvars;
  Var *vars[256];
  Val vals[256];
  int nbufs;
  const Buffer *bufs[64];
  double *data[64];
  bool owned[64];
  const char *error;
} Interp;

static void bind_buf(Interp *it, const Buffer *b, double *data, bool owned) {
  it->bufs[it->nbufs] = b;
  it->owned[it->nbufs] = owned;
  it->data[it->nbufs++] = data;
}

static double *buf_data(Interp *it, const Buffer *b) {
  for (int i = it->nbufs - 1; i >= 0; i--)
    if (it->bufs[i] == b) return it->data[i];
  it->error = "unbound buffer";
  return NULL;
}

static Val eval(Interp *it, const Expr *e);

/* prefetches seen by the interpreter: per 16-element line of pf_buf */
static const Buffer *pf_buf;
static int *pf_seen;
static int64_t pf_nlines;

static int64_t flat_index(Interp *it, const Buffer *b, int n, Expr *const *idx) {
  if (n == 1 && b->ndim > 1) { /* a flat element offset (prefetch addresses, flattened accesses) */
    int64_t x = eval(it, idx[0]).i, total = 1;
    for (int i = 0; i < b->ndim; i++) total *= b->shape[i];
    if (x < 0 || x >= total) {
      it->error = "flat index out of bounds";
      return -1;
    }
    return x;
  }
  if (n != b->ndim) {
    it->error = "index count differs from buffer ndim";
    return -1;
  }
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    int64_t x = eval(it, idx[i]).i;
    if (x < 0 || x >= b->shape[i]) {
      it->error = "index out of bounds";
      fprintf(stderr, "  out of bounds: %s dim %d index %ld extent %ld\n", b->name, i, (long)x, (long)b->shape[i]);
      return -1;
    }
    off = off * b->shape[i] + x;
  }
  return off;
}

static int64_t floordiv_i64(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}

static Val mk(const Expr *e, double v) {
  Val r = {0, 0};
  if (dtype_is_float(e->dtype)) r.f = e->dtype == MLC_F32 ? (double)(float)v : v;
  else r.i = (int64_t)v;
  return r;
}

static Val eval(Interp *it, const Expr *e) {
  Val r = {0, 0};
  if (it->error) return r;
  bool fl = dtype_is_float(e->dtype);
  switch (e->kind) {
  case E_INT: r.i = e->ival; return r;
  case E_FLOAT: r.f = e->fval; return r;
  case E_VAR:
    for (int i = it->nvars - 1; i >= 0; i--)
      if (it->vars[i] == e->var) return it->vals[i];
    it->error = "unbound variable";
    fprintf(stderr, "  unbound var %s\n", e->var->name);
    return r;
  case E_ADD: case E_SUB: case E_MUL: case E_DIV: case E_MOD: case E_FLOORDIV: case E_FLOORMOD: case E_MIN:
  case E_MAX: {
    Val a = eval(it, e->op.a), b = eval(it, e->op.b);
    if (fl) {
      double x = a.f, y = b.f, v = 0;
      switch (e->kind) {
      case E_ADD: v = x + y; break;
      case E_SUB: v = x - y; break;
      case E_MUL: v = x * y; break;
      case E_DIV: v = x / y; break;
      case E_MOD: v = fmod(x, y); break;
      case E_MIN: v = x < y ? x : y; break;
      case E_MAX: v = x > y ? x : y; break;
      default: it->error = "floordiv on floats"; break;
      }
      return mk(e, v);
    }
    int64_t x = a.i, y = b.i;
    if ((e->kind == E_DIV || e->kind == E_MOD || e->kind == E_FLOORDIV || e->kind == E_FLOORMOD) && y == 0) {
      it->error = "division by zero";
      return r;
    }
    switch (e->kind) {
    case E_ADD: r.i = x + y; break;
    case E_SUB: r.i = x - y; break;
    case E_MUL: r.i = x * y; break;
    case E_DIV: r.i = x / y; break;
    case E_MOD: r.i = x % y; break;
    case E_FLOORDIV: r.i = floordiv_i64(x, y); break;
    case E_FLOORMOD: r.i = x - floordiv_i64(x, y) * y; break;
    case E_MIN: r.i = x < y ? x : y; break;
    default: r.i = x > y ? x : y; break;
    }
    return r;
  }
  case E_EQ: case E_NE: case E_LT: case E_LE: case E_GT: case E_GE: {
    Val a = eval(it, e->op.a), b = eval(it, e->op.b);
    bool f2 = dtype_is_float(e->op.a->dtype);
    double x = f2 ? a.f : (double)a.i, y = f2 ? b.f : (double)b.i;
    switch (e->kind) {
    case E_EQ: r.i = x == y; break;
    case E_NE: r.i = x != y; break;
    case E_LT: r.i = x < y; break;
    case E_LE: r.i = x <= y; break;
    case E_GT: r.i = x > y; break;
    default: r.i = x >= y; break;
    }
    return r;
  }
  case E_AND: r.i = eval(it, e->op.a).i && eval(it, e->op.b).i; return r;
  case E_OR: r.i = eval(it, e->op.a).i || eval(it, e->op.b).i; return r;
  case E_NOT: r.i = !eval(it, e->op.a).i; return r;
  case E_SELECT: return eval(it, e->op.c).i ? eval(it, e->op.a) : eval(it, e->op.b);
  case E_CAST: {
    Val a = eval(it, e->op.a);
    double v = dtype_is_float(e->op.a->dtype) ? a.f : (double)a.i;
    if (e->dtype == MLC_BOOL) { r.i = v != 0; return r; }
    return mk(e, fl ? v : trunc(v));
  }
  case E_CALL: {
    if (e->call.intrin == INTRIN_PREFETCH) { /* the address must lie in the buffer; the line is recorded */
      const Expr *ld = e->call.nargs == 1 ? e->call.args[0] : NULL;
      if (!ld || ld->kind != E_LOAD) {
        it->error = "prefetch of something that is not a buffer read";
        return r;
      }
      int64_t off = flat_index(it, ld->load.buf, ld->load.n, ld->load.idx);
      if (off >= 0 && ld->load.buf == pf_buf && off / 16 < pf_nlines) pf_seen[off / 16]++;
      return r;
    }
    double x = e->call.nargs ? eval(it, e->call.args[0]).f : 0;
    switch (e->call.intrin) {
    case INTRIN_EXP: return mk(e, exp(x));
    case INTRIN_SQRT: return mk(e, sqrt(x));
    case INTRIN_FABS: return mk(e, fabs(x));
    case INTRIN_FMA:
      if (e->call.nargs != 3) break;
      return mk(e, fma(x, eval(it, e->call.args[1]).f, eval(it, e->call.args[2]).f));
    default: break;
    }
    switch (e->call.intrin) {
    default: it->error = "intrinsic not in the test interpreter"; return r;
    }
  }
  case E_LOAD: {
    double *d = buf_data(it, e->load.buf);
    int64_t off = flat_index(it, e->load.buf, e->load.n, e->load.idx);
    if (!d || off < 0) return r;
    return mk(e, d[off]);
  }
  case E_LET: {
    it->vars[it->nvars] = e->let_var;
    it->vals[it->nvars++] = eval(it, e->op.a);
    r = eval(it, e->op.b);
    it->nvars--;
    return r;
  }
  case E_TENSOR: it->error = "E_TENSOR after lowering"; return r;
  case E_REDUCE: it->error = "E_REDUCE after lowering"; return r;
  default: it->error = "expression kind not in the test interpreter"; return r;
  }
}

static void exec(Interp *it, const Stmt *s) {
  if (!s || it->error) return;
  switch (s->kind) {
  case S_FOR: {
    int64_t mn = eval(it, s->loop.min).i, ext = eval(it, s->loop.extent).i;
    int slot = it->nvars++;
    it->vars[slot] = s->loop.var;
    for (int64_t v = mn; v < mn + ext && !it->error; v++) {
      it->vals[slot].i = v;
      exec(it, s->loop.body);
    }
    it->nvars--;
    break;
  }
  case S_STORE: {
    double *d = buf_data(it, s->store.buf);
    int64_t off = flat_index(it, s->store.buf, s->store.n, s->store.idx);
    Val v = eval(it, s->store.value);
    if (!d || off < 0) return;
    d[off] = dtype_is_float(s->store.buf->dtype) ? v.f : (double)v.i;
    break;
  }
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) exec(it, s->seq.stmts[i]);
    break;
  case S_IF:
    if (eval(it, s->ifs.cond).i) exec(it, s->ifs.then_s);
    else exec(it, s->ifs.else_s);
    break;
  case S_LET:
    it->vars[it->nvars] = s->let.var;
    it->vals[it->nvars++] = eval(it, s->let.value);
    exec(it, s->let.body);
    it->nvars--;
    break;
  case S_ALLOCATE: {
    int64_t n = 1;
    for (int i = 0; i < s->alloc.buf->ndim; i++) n *= s->alloc.buf->shape[i];
    double *d = malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++) d[i] = NAN; /* poison: reading before writing shows */
    bind_buf(it, s->alloc.buf, d, true);
    exec(it, s->alloc.body);
    it->nbufs--;
    free(d);
    break;
  }
  case S_EVAL: eval(it, s->eval.e); break;
  }
}

/* runs f with data[i] bound to f->params[i] */
static bool run_func(const TirFunc *f, double **data) {
  Interp it = {0};
  for (int i = 0; i < f->nparams; i++) bind_buf(&it, f->params[i], data[i], false);
  exec(&it, f->body);
  if (it.error) fprintf(stderr, "  interpreter error in %s: %s\n", f->name, it.error);
  return !it.error;
}

/* ---- helpers ---- */

static uint64_t rng = 88172645463325252ull;
static double frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(float)((double)(rng % 20000) / 10000.0 - 1.0);
}

static double *rand_buf(int64_t n) {
  double *d = malloc((size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; i++) d[i] = frand();
  return d;
}

static double *nan_buf(int64_t n) {
  double *d = malloc((size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; i++) d[i] = NAN;
  return d;
}

static bool close_all(const double *x, const double *ref, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(x[i] - ref[i]) <= 1e-4 * (1 + fabs(ref[i])))) {
      fprintf(stderr, "  %s: element %ld: got %g want %g\n", what, (long)i, x[i], ref[i]);
      return false;
    }
  return true;
}

static char *print_func(const TirFunc *f) {
  StrBuf b = {0};
  tir_print_func(&b, f);
  return b.s;
}

static char *dump(const TirFunc *f, const char *title) {
  char *txt = print_func(f);
  if (getenv("TEST_TE_VERBOSE")) printf("---- %s\n%s", title, txt);
  return txt;
}

/* ---- case 1: elementwise add with broadcasting, fuse + non-divisible split + vectorize + parallel ---- */

typedef struct Two {
  TeTensor *a, *b;
} Two;

static Expr *bcast_add(TeCtx *c, Expr **idx, void *user) {
  Two *t = user;
  Expr *ia[3], *ib[2];
  ia[0] = idx[0];
  ia[1] = tir_idx(c->arena, 0);
  ia[2] = idx[2];
  ib[0] = idx[1];
  ib[1] = tir_idx(c->arena, 0);
  return tir_add(c->arena, te_read(c, t->a, 3, ia), te_read(c, t->b, 2, ib));
}

static void test_broadcast_add(void) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  int64_t sa[3] = {4, 1, 5}, sb[2] = {3, 1}, so[3] = {4, 3, 5};
  Two t = {te_placeholder(&c, "A", MLC_F32, 3, sa), te_placeholder(&c, "B", MLC_F32, 2, sb)};
  TeTensor *C = te_compute(&c, "C", "broadcast", MLC_F32, 3, so, bcast_add, &t);
  TeSchedule *s = te_create_schedule(&c, 1, &C);
  TeStage *st = te_stage(s, C);
  IterVar *fused = te_fuse(st, C->op->axes[0], C->op->axes[1]);
  IterVar *o, *in;
  te_split(st, C->op->axes[2], 2, &o, &in);
  te_parallel(st, fused);
  te_vectorize(st, in);
  Diag d = {0};
  TeTensor *args[3] = {t.a, t.b, C};
  TirFunc *f = te_lower(&c, s, "bcast_add", 3, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char *txt = dump(f, "broadcast add");
    CHECK(strstr(txt, "parallel (i0.i1.fused, 0, 12)"), "%s", txt);
    CHECK(strstr(txt, "vectorized (i2.inner, 0, 2)"), "%s", txt);
    /* the split of 5 by 2 needs a guard inside the vector loop: loop peeling runs the first two outer
     * iterations unguarded and the third alone, where the guard (i2.inner + 4 < 5) shortens the vector loop
     * to its one valid lane: a scalar statement */
    CHECK(strstr(txt, "for (i2.outer, 0, 2)"), "%s", txt);
    CHECK(!strstr(txt, "if (i2.inner"), "the peeled iteration's guard became its loop's end: %s", txt);
    CHECK(strstr(txt, "C[floordiv(i0.i1.fused, 3), floormod(i0.i1.fused, 3), 4] = "), "the last column alone: %s", txt);
    CHECK(!strstr(txt, "if (i2.outer"), "the peeled loop has no guard: %s", txt);
    CHECK(strstr(txt, "func bcast_add(%A: float32[4, 1, 5], %B: float32[3, 1], %C: float32[4, 3, 5])"), "%s", txt);
    free(txt);
    double *A = rand_buf(20), *B = rand_buf(3), *out = nan_buf(60), ref[60];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 5; k++) ref[(i * 3 + j) * 5 + k] = (float)(A[i * 5 + k] + B[j]);
    double *data[3] = {A, B, out};
    CHECK(run_func(f, data), "run");
    CHECK(close_all(out, ref, 60, "broadcast add"), "values");
    free(A);
    free(B);
    free(out);
  }
  arena_free(a);
}

/* ---- case 1b: padded copies are partitioned (tir_partition_pad_loops) ---- */

typedef struct PadIn {
  TeTensor *x;
  bool phases; /* out[i, ph, k] reads column 2 k + ph - 1 (a stride-2 depthwise conv's pad) */
} PadIn;

static Expr *in_range(Arena *a, Expr *p, int64_t n) {
  return tir_bin(a, E_AND, tir_bin(a, E_GE, p, tir_idx(a, 0)), tir_bin(a, E_LT, p, tir_idx(a, n)));
}

static Expr *clamp_idx(Arena *a, Expr *p, int64_t n) {
  return tir_bin(a, E_MIN, tir_bin(a, E_MAX, p, tir_idx(a, 0)), tir_idx(a, n - 1));
}

static Expr *pad_fn(TeCtx *c, Expr **idx, void *user) {
  PadIn *t = user;
  Arena *a = c->arena;
  Expr *r = tir_sub(a, idx[0], tir_idx(a, 1));
  Expr *col = t->phases ? tir_sub(a, tir_add(a, tir_mul(a, idx[2], tir_idx(a, 2)), idx[1]), tir_idx(a, 1))
                        : tir_sub(a, idx[1], tir_idx(a, 1));
  Expr *xi[2] = {clamp_idx(a, r, t->x->shape[0]), clamp_idx(a, col, t->x->shape[1])};
  Expr *ok = tir_bin(a, E_AND, in_range(a, r, t->x->shape[0]), in_range(a, col, t->x->shape[1]));
  return tir_select(a, ok, te_read(c, t->x, 2, xi), tir_const(a, MLC_F32, 0));
}

static void test_pad_partition(bool phases) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  int64_t sx[2] = {6, 10}, sp[2] = {8, 12}, sq[3] = {8, 2, 6};
  PadIn t = {te_placeholder(&c, "X", MLC_F32, 2, sx), phases};
  TeTensor *P = te_compute(&c, "P", "injective", MLC_F32, phases ? 3 : 2, phases ? sq : sp, pad_fn, &t);
  TeSchedule *s = te_create_schedule(&c, 1, &P);
  te_vectorize(te_stage(s, P), P->op->axes[P->op->naxes - 1]);
  Diag d = {0};
  TeTensor *args[2] = {t.x, P};
  TirFunc *f = te_lower(&c, s, "pad", 2, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char *txt = dump(f, phases ? "padded phases" : "padded copy");
    /* the rows and columns inside the input are copied without tests or clamps */
    CHECK(!strstr(txt, "select("), "no bounds tests remain: %s", txt);
    CHECK(!strstr(txt, "min("), "no clamps remain: %s", txt);
    CHECK(strstr(txt, phases ? "X[i0 - 1, i2 * 2]" : "X[i0 - 1, i1 - 1]"), "a plain copy: %s", txt);
    free(txt);
    int64_t n = phases ? 8 * 2 * 6 : 8 * 12;
    double *X = rand_buf(60), *out = nan_buf(n), ref[96];
    for (int64_t i = 0; i < n; i++) {
      int64_t r = phases ? i / 12 : i / 12, col = phases ? (i % 6) * 2 + (i / 6) % 2 - 1 : i % 12 - 1;
      ref[i] = r >= 1 && r <= 6 && col >= 0 && col < 10 ? X[(r - 1) * 10 + col] : 0;
    }
    double *data[2] = {X, out};
    CHECK(run_func(f, data), "run");
    CHECK(close_all(out, ref, n, phases ? "padded phases" : "padded copy"), "values");
    free(X);
    free(out);
  }
  arena_free(a);
}

/* ---- case 2: matmul with a reduce axis, three schedules ---- */

typedef struct Mm {
  TeTensor *a, *b;
  int64_t k;
} Mm;

static Expr *matmul_fn(TeCtx *c, Expr **idx, void *user) {
  Mm *m = user;
  IterVar *k = te_reduce_axis(c, "k", m->k);
  Expr *kv = tir_varref(c->arena, k->var);
  Expr *ia[2] = {idx[0], kv}, *ib[2] = {kv, idx[1]};
  return te_reduce(c, RED_SUM, tir_mul(c->arena, te_read(c, m->a, 2, ia), te_read(c, m->b, 2, ib)), 1, &k, NULL,
                   NULL);
}

static void test_matmul(int variant) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  const int64_t M = 13, K = 7, N = 9;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, so[2] = {M, N};
  Mm m = {te_placeholder(&c, "A", MLC_F32, 2, sa), te_placeholder(&c, "B", MLC_F32, 2, sb), K};
  TeTensor *C = te_compute(&c, "C", "dense", MLC_F32, 2, so, matmul_fn, &m);
  CHECK(C->op->nreduce == 1, "reduce axes recorded");
  TeSchedule *s = te_create_schedule(&c, 1, &C);
  TeStage *st = te_stage(s, C);
  IterVar *i = C->op->axes[0], *j = C->op->axes[1], *k = C->op->reduce_axes[0];
  IterVar *io, *ii, *jo, *ji, *ko, *ki;
  if (variant == 1) { /* reduce not innermost: separate init nest */
    te_split(st, i, 4, &io, &ii);
    te_split(st, j, 4, &jo, &ji);
    te_split(st, k, 3, &ko, &ki);
    IterVar *order[6] = {io, jo, ko, ii, ki, ji};
    te_reorder(st, 6, order);
    te_vectorize(st, ji);
    te_unroll(st, ki);
  } else if (variant == 2) { /* reduce innermost: init before the k loops */
    te_split(st, i, 5, &io, &ii);
    te_split(st, k, 3, &ko, &ki);
    te_parallel(st, io);
    (void)jo;
    (void)ji;
  }
  Diag d = {0};
  TeTensor *args[3] = {m.a, m.b, C};
  TirFunc *f = te_lower(&c, s, "matmul", 3, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char title[32];
    snprintf(title, sizeof title, "matmul %d", variant);
    char *txt = dump(f, title);
    if (variant == 1) {
      CHECK(strstr(txt, "i0.outer.init"), "separate init nest: %s", txt);
      CHECK(strstr(txt, "unrolled (k.inner, 0, 3)"), "%s", txt);
      CHECK(strstr(txt, "vectorized (i1.inner, 0, 4)"), "%s", txt);
    } else if (variant == 2) {
      CHECK(!strstr(txt, ".init"), "init in the main nest: %s", txt);
      CHECK(strstr(txt, "parallel (i0.outer, 0, 3)"), "%s", txt);
    } else {
      CHECK(strstr(txt, "for (k, 0, 7)"), "%s", txt);
    }
    free(txt);
    double *A = rand_buf(M * K), *B = rand_buf(K * N), *out = nan_buf(M * N), ref[13 * 9];
    for (int64_t x = 0; x < M; x++)
      for (int64_t y = 0; y < N; y++) {
        double acc = 0;
        for (int64_t z = 0; z < K; z++) acc += A[x * K + z] * B[z * N + y];
        ref[x * N + y] = acc;
      }
    double *data[3] = {A, B, out};
    CHECK(run_func(f, data), "run");
    CHECK(close_all(out, ref, M * N, "matmul"), "variant %d values", variant);
    free(A);
    free(B);
    free(out);
  }
  arena_free(a);
}

/* ---- case 3: two-stage pipeline with an inlined (or materialised) relu ---- */

typedef struct One {
  TeTensor *t;
} One;

static Expr *relu_fn(TeCtx *c, Expr **idx, void *user) {
  One *o = user;
  Expr *x = tir_sub(c->arena, te_read(c, o->t, 2, idx), tir_float(c->arena, MLC_F32, 0.25));
  return tir_bin(c->arena, E_MAX, x, tir_float(c->arena, MLC_F32, 0));
}

static Expr *scale_fn(TeCtx *c, Expr **idx, void *user) {
  One *o = user;
  Arena *a = c->arena;
  Expr *x = te_read(c, o->t, 2, idx);
  return tir_add(a, tir_mul(a, x, tir_float(a, MLC_F32, 2)), tir_float(a, MLC_F32, 1));
}

static void test_pipeline(bool inline_relu) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  int64_t sh[2] = {6, 7};
  One in = {te_placeholder(&c, "X", MLC_F32, 2, sh)};
  TeTensor *R = te_compute(&c, "relu", "elemwise", MLC_F32, 2, sh, relu_fn, &in);
  One mid = {R};
  TeTensor *Y = te_compute(&c, "Y", "elemwise", MLC_F32, 2, sh, scale_fn, &mid);
  TeSchedule *s = te_create_schedule(&c, 1, &Y);
  CHECK(s->nstages == 3 && s->stages[0]->op == in.t->op && s->stages[2]->op == Y->op, "producers first");
  if (inline_relu) te_compute_inline(te_stage(s, R));
  TeStage *st = te_stage(s, Y);
  IterVar *fused = te_fuse(st, Y->op->axes[0], Y->op->axes[1]);
  IterVar *o, *i;
  te_split(st, fused, 8, &o, &i);
  te_parallel(st, o);
  te_vectorize(st, i);
  StrBuf sb = {0};
  te_print_schedule(&sb, s);
  CHECK(strstr(sb.s, "split i0.i1.fused[42] by 8 -> i0.i1.fused.outer, i0.i1.fused.inner"), "%s", sb.s);
  CHECK(strstr(sb.s, inline_relu ? "stage relu: compute \"elemwise\" float32[6, 7] inline" : "relu: compute"),
        "%s", sb.s);
  if (getenv("TEST_TE_VERBOSE")) printf("%s", sb.s);
  sb_free(&sb);
  Diag d = {0};
  TeTensor *args[2] = {in.t, Y};
  TirFunc *f = te_lower(&c, s, "pipeline", 2, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char *txt = dump(f, inline_relu ? "pipeline inlined" : "pipeline materialised");
    CHECK(inline_relu ? !strstr(txt, "allocate") : strstr(txt, "allocate relu: float32[6, 7]") != NULL, "%s", txt);
    CHECK(strstr(txt, "parallel (i0.i1.fused.outer, 0, 6)"), "%s", txt);
    free(txt);
    double *X = rand_buf(42), *out = nan_buf(42), ref[42];
    for (int k = 0; k < 42; k++) {
      double r = (float)(X[k] - 0.25);
      r = r > 0 ? r : 0;
      ref[k] = (float)(r * 2 + 1);
    }
    double *data[2] = {X, out};
    CHECK(run_func(f, data), "run");
    CHECK(close_all(out, ref, 42, "pipeline"), "values");
    free(X);
    free(out);
  }
  arena_free(a);
}

/* ---- case 4: an extern op that copies, read by a compute ---- */

static Stmt *copy_fn(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  Arena *a = c->arena;
  Var *i = tir_var(a, "ci", MLC_I64), *j = tir_var(a, "cj", MLC_I64);
  Expr *idx[2] = {tir_varref(a, i), tir_varref(a, j)};
  Stmt *st = tir_store(a, outs[0], 2, idx, tir_load(a, ins[0], 2, idx));
  st = tir_for(a, j, tir_idx(a, 0), tir_idx(a, ins[0]->shape[1]), FOR_SERIAL, st);
  return tir_for(a, i, tir_idx(a, 0), tir_idx(a, ins[0]->shape[0]), FOR_SERIAL, st);
}

static Expr *plus_one(TeCtx *c, Expr **idx, void *user) {
  One *o = user;
  return tir_add(c->arena, te_read(c, o->t, 2, idx), tir_float(c->arena, MLC_F32, 1));
}

static void test_extern(bool extern_is_output) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  int64_t sh[2] = {3, 5};
  TeTensor *X = te_placeholder(&c, "X", MLC_F32, 2, sh);
  TeTensor ty = {.dtype = MLC_F32, .ndim = 2, .shape = {3, 5}};
  TeTensor *E;
  te_extern(&c, "copy", "extern", 1, &X, 1, &ty, copy_fn, NULL, &E);
  One o = {E};
  TeTensor *Y = extern_is_output ? E : te_compute(&c, "Y", "elemwise", MLC_F32, 2, sh, plus_one, &o);
  TeSchedule *s = te_create_schedule(&c, 1, &Y);
  Diag d = {0};
  TeTensor *args[2] = {X, Y};
  TirFunc *f = te_lower(&c, s, "extern_copy", 2, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char *txt = dump(f, "extern");
    CHECK(extern_is_output ? !strstr(txt, "allocate") : strstr(txt, "allocate copy") != NULL, "%s", txt);
    CHECK(strstr(txt, "copy[ci, cj] = X[ci, cj]"), "extern buffers rebound: %s", txt);
    free(txt);
    double *in = rand_buf(15), *out = nan_buf(15), ref[15];
    for (int k = 0; k < 15; k++) ref[k] = extern_is_output ? in[k] : (float)(in[k] + 1);
    double *data[2] = {in, out};
    CHECK(run_func(f, data), "run");
    CHECK(close_all(out, ref, 15, "extern"), "values");
    free(in);
    free(out);
  }
  arena_free(a);
}

/* ---- case 5: conditional max-reduction to a 0-d tensor (n = 0 stores) ---- */

static Expr *cond_max(TeCtx *c, Expr **idx, void *user) {
  One *o = user;
  Arena *a = c->arena;
  IterVar *r0 = te_reduce_axis(c, "r0", 4), *r1 = te_reduce_axis(c, "r1", 6);
  IterVar *axes[2] = {r0, r1};
  Expr *ix[2] = {tir_varref(a, r0->var), tir_varref(a, r1->var)};
  Expr *cond = tir_bin(a, E_EQ, tir_bin(a, E_FLOORMOD, ix[1], tir_idx(a, 2)), tir_idx(a, 0));
  return te_reduce(c, RED_MAX, te_read(c, o->t, 2, ix), 2, axes, NULL, cond);
}

static void test_reduce_scalar(void) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  int64_t sh[2] = {4, 6};
  One in = {te_placeholder(&c, "X", MLC_F32, 2, sh)};
  TeTensor *R = te_compute(&c, "rmax", "reduce", MLC_F32, 0, NULL, cond_max, &in);
  TeSchedule *s = te_create_schedule(&c, 1, &R);
  TeStage *st = te_stage(s, R);
  IterVar *o, *i;
  te_split(st, R->op->reduce_axes[1], 4, &o, &i); /* 6 by 4: guarded */
  Diag d = {0};
  TeTensor *args[2] = {in.t, R};
  TirFunc *f = te_lower(&c, s, "rmax", 2, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char *txt = dump(f, "conditional max");
    CHECK(strstr(txt, "rmax[] = -inff"), "%s", txt);
    free(txt);
    double *X = rand_buf(24), out = NAN, ref = -INFINITY;
    for (int r = 0; r < 4; r++)
      for (int q = 0; q < 6; q += 2) ref = X[r * 6 + q] > ref ? X[r * 6 + q] : ref;
    double *data[2] = {X, &out};
    CHECK(run_func(f, data), "run");
    CHECK(close_all(&out, &ref, 1, "cond max"), "values");
    free(X);
  }
  arena_free(a);
}

/* ---- errors are values ---- */

static void test_errors(void) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  int64_t sh[2] = {3, 5};
  One in = {te_placeholder(&c, "X", MLC_F32, 2, sh)};
  TeTensor *Y = te_compute(&c, "Y", "elemwise", MLC_F32, 2, sh, plus_one, &in);
  TeSchedule *s = te_create_schedule(&c, 1, &Y);
  TeStage *st = te_stage(s, Y);
  IterVar *o, *i;
  te_split(st, Y->op->axes[0], 2, &o, &i);
  te_split(st, Y->op->axes[0], 2, &o, &i); /* no longer a leaf */
  Diag d = {0};
  TeTensor *args[2] = {in.t, Y};
  CHECK(!te_lower(&c, s, "bad", 2, args, &d) && d.status == MLC_ERR_INTERNAL && strstr(d.msg, "not a leaf"), "%s",
        d.msg);
  /* placeholder not passed */
  TeSchedule *s2 = te_create_schedule(&c, 1, &Y);
  Diag d2 = {0};
  CHECK(!te_lower(&c, s2, "bad2", 1, &Y, &d2) && strstr(d2.msg, "not a kernel argument"), "%s", d2.msg);
  /* inlining a reduction is refused */
  Mm m = {in.t, in.t, 3};
  int64_t sq[2] = {3, 3};
  (void)m;
  int64_t s5[2] = {5, 5};
  TeTensor *B = te_placeholder(&c, "B", MLC_F32, 2, s5);
  Mm mm = {in.t, B, 5};
  TeTensor *M = te_compute(&c, "M", "dense", MLC_F32, 2, sq, matmul_fn, &mm);
  TeSchedule *s3 = te_create_schedule(&c, 1, &M);
  te_compute_inline(te_stage(s3, M));
  TeTensor *args3[3] = {in.t, B, M};
  Diag d3 = {0};
  CHECK(!te_lower(&c, s3, "bad3", 3, args3, &d3) && strstr(d3.msg, "compute_inline"), "%s", d3.msg);
  /* vectorizing a reduce axis is refused */
  TeSchedule *s4 = te_create_schedule(&c, 1, &M);
  te_vectorize(te_stage(s4, M), M->op->reduce_axes[0]);
  Diag d4 = {0};
  CHECK(!te_lower(&c, s4, "bad4", 3, args3, &d4) && strstr(d4.msg, "vectorize of a reduce"), "%s", d4.msg);
  arena_free(a);
}

/* ---- the simplifier, rule by rule ---- */

static char *expr_str(const Expr *e) {
  StrBuf b = {0};
  tir_print_expr(&b, e);
  return b.s;
}

static char *stmt_str(const Stmt *s) {
  StrBuf b = {0};
  tir_print_stmt(&b, s, 0);
  return b.s ? b.s : strdup("");
}

static void expect_expr(const Expr *e, const char *want, int line) {
  char *got = expr_str(e);
  if (strcmp(got, want) != 0) {
    failures++;
    fprintf(stderr, "FAIL %s:%d: expr: got '%s' want '%s'\n", __FILE__, line, got, want);
  }
  free(got);
}

static void test_simplify(void) {
  Arena *a = arena_new();
  Var *i = tir_var(a, "i", MLC_I64), *j = tir_var(a, "j", MLC_I64), *x = tir_var(a, "x", MLC_I64);
  Expr *ei = tir_varref(a, i), *ej = tir_varref(a, j), *ex = tir_varref(a, x);
  /* constructors fold constants and identities */
  expect_expr(tir_add(a, tir_idx(a, 3), tir_idx(a, 4)), "7", __LINE__);
  expect_expr(tir_add(a, ex, tir_idx(a, 0)), "x", __LINE__);
  expect_expr(tir_mul(a, tir_idx(a, 1), ex), "x", __LINE__);
  expect_expr(tir_mul(a, ex, tir_idx(a, 0)), "0", __LINE__);
  expect_expr(tir_bin(a, E_FLOORDIV, tir_idx(a, -7), tir_idx(a, 2)), "-4", __LINE__);
  expect_expr(tir_bin(a, E_LT, tir_idx(a, 1), tir_idx(a, 2)), "True", __LINE__);
  expect_expr(tir_add(a, tir_float(a, MLC_F32, 1.5), tir_float(a, MLC_F32, 2)), "3.5f", __LINE__);
  CHECK(tir_bin(a, E_LT, ex, ej)->dtype == MLC_BOOL, "compare gives bool");
  expect_expr(tir_float(a, MLC_F32, 0.1), "0.1f", __LINE__);
  expect_expr(tir_float(a, MLC_F64, 0.1), "0.1", __LINE__);
  Expr *vsum = tir_add(a, tir_ramp(a, ex, tir_idx(a, 1), 4), ej);
  CHECK(vsum->lanes == 4 && vsum->op.b->kind == E_BROADCAST, "scalar broadcast to vector lanes");
  expect_expr(vsum, "ramp(x, 1, 4) + broadcast(j, 4)", __LINE__);
  Expr *cv = tir_cast(a, MLC_I32, ej);
  expect_expr(tir_add(a, cv, tir_idx(a, 3)), "int32(j) + int32(3)", __LINE__);
  CHECK(tir_int(a, MLC_I32, 0x100000001ll)->ival == 1, "int32 wraps");
  /* canonical linear forms */
  Expr *e = tir_sub(a, tir_add(a, tir_mul(a, ex, tir_idx(a, 3)), tir_add(a, ej, tir_idx(a, 2))),
                    tir_add(a, tir_mul(a, ex, tir_idx(a, 2)), tir_idx(a, 2)));
  expect_expr(tir_simplify(a, e), "x + j", __LINE__);
  expect_expr(tir_simplify(a, tir_sub(a, ex, ex)), "0", __LINE__);
  /* (x*c)/c and (x*c1 + y)/c2 without bounds */
  expect_expr(tir_simplify(a, tir_bin(a, E_FLOORDIV, tir_mul(a, ex, tir_idx(a, 4)), tir_idx(a, 4))), "x", __LINE__);
  expect_expr(tir_simplify(a, tir_bin(a, E_DIV, tir_mul(a, ex, tir_idx(a, 8)), tir_idx(a, 4))), "x * 2", __LINE__);
  expect_expr(tir_simplify(a, tir_bin(a, E_FLOORMOD, tir_mul(a, ex, tir_idx(a, 8)), tir_idx(a, 4))), "0", __LINE__);
  /* a fused index split and joined again: floordiv(x + j, 7) * 7 + floormod(x + j, 7) -> x + j, also scaled
   * (times 3) and inside a larger sum; a pair with a different divisor stays */
  Expr *xj = tir_add(a, ex, ej), *d7 = tir_bin(a, E_FLOORDIV, xj, tir_idx(a, 7)), *m7 = tir_bin(a, E_FLOORMOD, xj, tir_idx(a, 7));
  expect_expr(tir_simplify(a, tir_add(a, tir_mul(a, d7, tir_idx(a, 7)), m7)), "x + j", __LINE__);
  expect_expr(tir_simplify(a, tir_add(a, tir_mul(a, tir_add(a, tir_mul(a, d7, tir_idx(a, 7)), m7), tir_idx(a, 3)),
                                      tir_idx(a, 5))), "x * 3 + j * 3 + 5", __LINE__);
  Expr *m5 = tir_bin(a, E_FLOORMOD, xj, tir_idx(a, 5));
  Expr *kept = tir_simplify(a, tir_add(a, tir_mul(a, d7, tir_idx(a, 7)), m5));
  CHECK(kept->kind == E_ADD && (kept->op.a->kind == E_FLOORMOD || kept->op.b->kind == E_FLOORMOD),
        "floordiv by 7 and floormod by 5 do not merge");
  /* mutator rule: an already simple expression keeps its pointer */
  Expr *simple = tir_add(a, tir_mul(a, ex, tir_idx(a, 16)), ej);
  CHECK(tir_simplify(a, simple) == simple, "same pointer when unchanged");
  Expr *fd = tir_bin(a, E_FLOORDIV, ex, tir_idx(a, 4));
  CHECK(tir_simplify(a, fd) == fd, "floordiv with unknown bounds stays");

  /* with loop bounds: i in [0, 4), j in [0, 16) */
  Buffer *buf = tir_buffer(a, "buf", MLC_F32, 2, (int64_t[]){4, 16});
  Expr *flat = tir_add(a, tir_mul(a, ei, tir_idx(a, 16)), ej);
  Expr *idx[2] = {tir_bin(a, E_FLOORDIV, flat, tir_idx(a, 16)), tir_bin(a, E_FLOORMOD, flat, tir_idx(a, 16))};
  Stmt *body = tir_store(a, buf, 2, idx, tir_float(a, MLC_F32, 0));
  /* guards: i < 10 always true; j >= 16 always false; floordiv(j, 16) == 0 */
  Expr *zero_div = tir_bin(a, E_FLOORDIV, ej, tir_idx(a, 16));
  body = tir_if(a, tir_bin(a, E_LT, ei, tir_idx(a, 10)), body, NULL);
  Expr *idx2[2] = {zero_div, tir_bin(a, E_MIN, ej, tir_idx(a, 20))};
  Stmt *dead = tir_if(a, tir_bin(a, E_GE, ej, tir_idx(a, 16)), tir_store(a, buf, 2, idx, tir_float(a, MLC_F32, 1)),
                      NULL);
  Stmt *live = tir_store(a, buf, 2, idx2, tir_float(a, MLC_F32, 2));
  Stmt *parts[3] = {body, dead, live};
  Stmt *nest = tir_for(a, j, tir_idx(a, 0), tir_idx(a, 16), FOR_SERIAL, tir_seq(a, 3, parts));
  Var *u = tir_var(a, "u", MLC_I64);
  nest = tir_for(a, u, tir_idx(a, 0), tir_idx(a, 1), FOR_SERIAL, nest); /* extent 1: removed */
  nest = tir_for(a, i, tir_idx(a, 0), tir_idx(a, 4), FOR_SERIAL, nest);
  char *got = stmt_str(tir_simplify_stmt(a, nest));
  const char *want = "for (i, 0, 4) {\n"
                     "  for (j, 0, 16) {\n"
                     "    buf[i, j] = 0.0f\n"
                     "    buf[0, j] = 2.0f\n"
                     "  }\n"
                     "}\n";
  CHECK(strcmp(got, want) == 0, "simplified nest:\n%s", got);
  free(got);
  /* (x*c1 + y) / c2 with c1 % c2 == 0 and y in [0, c2): x*(c1/c2); trivial let inlined */
  Var *lv = tir_var(a, "t", MLC_I64);
  Expr *q = tir_bin(a, E_FLOORDIV, tir_add(a, tir_mul(a, ex, tir_idx(a, 32)), tir_varref(a, lv)), tir_idx(a, 16));
  Stmt *ls = tir_let_stmt(a, lv, ej, tir_store(a, buf, 2, (Expr *[]){q, tir_idx(a, 0)}, tir_float(a, MLC_F32, 3)));
  ls = tir_for(a, j, tir_idx(a, 0), tir_idx(a, 16), FOR_SERIAL, ls);
  got = stmt_str(tir_simplify_stmt(a, ls));
  CHECK(strstr(got, "buf[x * 2, 0] = 3.0f") && !strstr(got, "let"), "%s", got);
  free(got);
  /* a channel shuffle's index: (x*16 + j) / 32 with j in [0, 16) is x / 2, (x*16 + j) % 32 is (x % 2)*16 + j */
  Expr *sh = tir_add(a, tir_mul(a, ex, tir_idx(a, 16)), ej);
  Expr *sidx[2] = {tir_bin(a, E_FLOORDIV, sh, tir_idx(a, 32)), tir_bin(a, E_FLOORMOD, sh, tir_idx(a, 32))};
  Stmt *ss = tir_for(a, j, tir_idx(a, 0), tir_idx(a, 16), FOR_SERIAL,
                     tir_store(a, buf, 2, sidx, tir_float(a, MLC_F32, 4)));
  got = stmt_str(tir_simplify_stmt(a, ss));
  CHECK(strstr(got, "buf[floordiv(x, 2), j + floormod(x, 2) * 16] = 4.0f"), "%s", got);
  free(got);
  /* a guard that only bounds the loop variable ends the loop there: for (j, 0, 16) if (j + 11 < 16) -> 5
   * lanes; one with an else, or on another variable, stays; one that no iteration passes removes the loop */
  Stmt *st5 = tir_store(a, buf, 2, (Expr *[]){tir_idx(a, 0), ej}, tir_float(a, MLC_F32, 5));
  Expr *g5 = tir_bin(a, E_LT, tir_add(a, ej, tir_idx(a, 11)), tir_idx(a, 16));
  got = stmt_str(tir_simplify_stmt(a, tir_for(a, j, tir_idx(a, 0), tir_idx(a, 16), FOR_VECTORIZED, tir_if(a, g5, st5, NULL))));
  CHECK(!strcmp(got, "vectorized (j, 0, 5) {\n  buf[0, j] = 5.0f\n}\n"), "%s", got);
  free(got);
  got = stmt_str(tir_simplify_stmt(a, tir_for(a, j, tir_idx(a, 0), tir_idx(a, 16), FOR_VECTORIZED, tir_if(a, g5, st5, st5))));
  CHECK(strstr(got, "if (j + 11 < 16)") && strstr(got, "(j, 0, 16)"), "with an else: %s", got);
  free(got);
  Expr *gx = tir_bin(a, E_LT, tir_add(a, ex, tir_idx(a, 11)), tir_idx(a, 16));
  got = stmt_str(tir_simplify_stmt(a, tir_for(a, j, tir_idx(a, 0), tir_idx(a, 16), FOR_VECTORIZED, tir_if(a, gx, st5, NULL))));
  CHECK(strstr(got, "if (x + 11 < 16)") && strstr(got, "(j, 0, 16)"), "a guard on x: %s", got);
  free(got);
  Expr *g0 = tir_bin(a, E_LT, tir_add(a, ej, tir_idx(a, 16)), tir_idx(a, 16));
  got = stmt_str(tir_simplify_stmt(a, tir_for(a, j, tir_idx(a, 0), tir_idx(a, 16), FOR_VECTORIZED, tir_if(a, g0, st5, NULL))));
  CHECK(!strstr(got, "buf"), "no iteration passes: %s", got);
  free(got);
  arena_free(a);
}

/* float(int(uint8(v))) of a float v that is integer-valued and clamped into the integers' range by ordered
 * compares is v (a requantized value dequantized in the same kernel); not when v may be fractional, NaN, or
 * outside a range on the way */
static Expr *clamp_sel(Arena *a, Expr *v, double lo, double hi) {
  Expr *l = tir_float(a, MLC_F32, lo), *h = tir_float(a, MLC_F32, hi);
  v = tir_select(a, tir_bin(a, E_GT, v, l), v, l);
  return tir_select(a, tir_bin(a, E_LT, v, h), v, h);
}

static void test_simplify_float_round_trip(void) {
  Arena *a = arena_new();
  Var *x = tir_var(a, "x", MLC_F32);
  Expr *ex = tir_varref(a, x), *r = tir_call(a, INTRIN_ROUND, MLC_F32, 1, &ex);
  Expr *q = clamp_sel(a, tir_add(a, r, tir_float(a, MLC_F32, 3)), 0, 255);
  Expr *trip = tir_cast(a, MLC_F32, tir_cast(a, MLC_I32, tir_cast(a, MLC_U8, q)));
  CHECK(tir_simplify(a, trip) == q, "round-clamp-u8-i32-f32 folds");
  CHECK(tir_simplify(a, tir_cast(a, MLC_F32, tir_cast(a, MLC_I8, q))) != q, "255 is outside int8");
  Expr *frac = clamp_sel(a, ex, 0, 255);
  CHECK(tir_simplify(a, tir_cast(a, MLC_F32, tir_cast(a, MLC_U8, frac))) != frac, "x may be fractional");
  Expr *h = tir_float(a, MLC_F32, 255), *upper_only = tir_select(a, tir_bin(a, E_LT, r, h), r, h);
  CHECK(tir_simplify(a, tir_cast(a, MLC_F32, tir_cast(a, MLC_U8, upper_only))) != upper_only,
        "no lower clamp: may be negative");
  Expr *f64 = tir_cast(a, MLC_F64, tir_cast(a, MLC_U8, q));
  CHECK(tir_simplify(a, f64) != tir_cast(a, MLC_F64, q) && tir_simplify(a, f64)->kind == E_CAST,
        "another float type is not folded");
  arena_free(a);
}


/* ---- randomized: simplified index expressions evaluate like the originals over the loop ranges ---- */

static uint64_t rnd(uint64_t n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng % n;
}

static Expr *rand_index(Arena *a, Expr **vars, int nv, int depth) {
  if (depth == 0 || rnd(4) == 0) return rnd(3) ? vars[rnd((uint64_t)nv)] : tir_idx(a, (int64_t)rnd(9) - 2);
  Expr *x = rand_index(a, vars, nv, depth - 1);
  int64_t c = (int64_t)rnd(7) + 1;
  switch (rnd(10)) {
  case 0: return tir_add(a, x, rand_index(a, vars, nv, depth - 1));
  case 1: return tir_sub(a, x, rand_index(a, vars, nv, depth - 1));
  case 2: return tir_mul(a, x, tir_idx(a, c * (rnd(2) ? 1 : -1)));
  case 3: return tir_bin(a, E_FLOORDIV, x, tir_idx(a, c));
  case 4: return tir_bin(a, E_FLOORMOD, x, tir_idx(a, c));
  case 5: return tir_bin(a, E_DIV, x, tir_idx(a, c));
  case 6: return tir_bin(a, E_MOD, x, tir_idx(a, c));
  case 7: return tir_bin(a, rnd(2) ? E_MIN : E_MAX, x, rand_index(a, vars, nv, depth - 1));
  case 8: return tir_select(a, tir_bin(a, (ExprKind)(E_EQ + rnd(6)), x, rand_index(a, vars, nv, depth - 1)), x,
                            rand_index(a, vars, nv, depth - 1));
  default: return tir_add(a, tir_mul(a, x, tir_idx(a, c)), rand_index(a, vars, nv, depth - 1));
  }
}

static void test_simplify_random(void) {
  Arena *a = arena_new();
  int bad = 0;
  for (int trial = 0; trial < 400 && bad < 3; trial++) {
    int64_t ext[3] = {(int64_t)rnd(6) + 1, (int64_t)rnd(9) + 1, (int64_t)rnd(4) + 2};
    int64_t mins[3] = {0, (int64_t)rnd(3), 0};
    Var *v[3];
    Expr *ev[3];
    for (int k = 0; k < 3; k++) {
      v[k] = tir_var(a, k == 0 ? "i" : k == 1 ? "j" : "k", MLC_I64);
      ev[k] = tir_varref(a, v[k]);
    }
    Expr *e = rand_index(a, ev, 3, 4);
    Expr *cond = tir_bin(a, E_LT, rand_index(a, ev, 3, 2), rand_index(a, ev, 3, 2));
    Buffer *out = tir_buffer(a, "out", MLC_I64, 3, ext);
    Expr *idx[3] = {ev[0], tir_sub(a, ev[1], tir_idx(a, mins[1])), ev[2]};
    Stmt *body = tir_if(a, cond, tir_store(a, out, 3, idx, e), tir_store(a, out, 3, idx, tir_idx(a, -999)));
    for (int k = 2; k >= 0; k--) body = tir_for(a, v[k], tir_idx(a, mins[k]), tir_idx(a, ext[k]), FOR_SERIAL, body);
    Stmt *simp = tir_simplify_stmt(a, body);
    CHECK(tir_simplify_stmt(a, simp) == simp, "simplify is idempotent on its output (pointer kept)");
    int64_t n = ext[0] * ext[1] * ext[2];
    double *r0 = nan_buf(n), *r1 = nan_buf(n);
    Buffer *params[1] = {out};
    TirFunc f0 = {"orig", 1, params, body}, f1 = {"simp", 1, params, simp};
    bool ok = run_func(&f0, &r0) && run_func(&f1, &r1);
    for (int64_t q = 0; ok && q < n; q++) ok = r0[q] == r1[q];
    if (!ok) {
      bad++;
      char *x = stmt_str(body), *y = stmt_str(simp);
      CHECK(ok, "simplifier changed the value:\n%s---- simplified:\n%s", x, y);
      free(x);
      free(y);
    }
    free(r0);
    free(r1);
  }
  arena_free(a);
}

/* ---- randomized schedules of a 3-d reduction: out[b, i, j] = sum_k X[b, i, k] * W[k, j] ---- */

typedef struct Bmm {
  TeTensor *x, *w;
  int64_t k;
} Bmm;

static Expr *bmm_fn(TeCtx *c, Expr **idx, void *user) {
  Bmm *m = user;
  IterVar *k = te_reduce_axis(c, "k", m->k);
  Expr *kv = tir_varref(c->arena, k->var);
  Expr *ix[3] = {idx[0], idx[1], kv}, *iw[2] = {kv, idx[2]};
  Expr *prod = tir_mul(c->arena, te_read(c, m->x, 3, ix), te_read(c, m->w, 2, iw));
  return te_reduce(c, RED_SUM, prod, 1, &k, tir_float(c->arena, MLC_F32, 0.5), NULL); /* init 0.5 */
}

typedef struct Epi {
  TeTensor *t;
} Epi;

static Expr *epi_fn(TeCtx *c, Expr **idx, void *user) {
  Epi *e = user;
  Arena *a = c->arena;
  return tir_bin(a, E_MAX, te_read(c, e->t, 3, idx), tir_float(a, MLC_F32, 0));
}

static void test_random_schedules(void) {
  for (int trial = 0; trial < 60; trial++) {
    Arena *a = arena_new();
    TeCtx c = {.arena = a};
    int64_t B = (int64_t)rnd(3) + 1, M = (int64_t)rnd(7) + 1, K = (int64_t)rnd(6) + 1, N = (int64_t)rnd(9) + 1;
    int64_t sx[3] = {B, M, K}, sw[2] = {K, N}, so[3] = {B, M, N};
    Bmm m = {te_placeholder(&c, "X", MLC_F32, 3, sx), te_placeholder(&c, "W", MLC_F32, 2, sw), K};
    TeTensor *Y = te_compute(&c, "Y", "bmm", MLC_F32, 3, so, bmm_fn, &m);
    Epi ep = {Y};
    TeTensor *Z = te_compute(&c, "Z", "relu", MLC_F32, 3, so, epi_fn, &ep);
    TeSchedule *s = te_create_schedule(&c, 1, &Z);
    TeStage *st = te_stage(s, Y), *sz = te_stage(s, Z);
    /* random primitives on Y: splits, a fuse of adjacent same-kind leaves, a reorder, annotations */
    for (int step = 0; step < 6; step++) {
      int p = (int)rnd((uint64_t)st->nleaf);
      IterVar *iv = st->leaf[p];
      switch (rnd(4)) {
      case 0: case 1: {
        IterVar *o, *in;
        te_split(st, iv, (int64_t)rnd(5) + 1, &o, &in);
        break;
      }
      case 2:
        if (p + 1 < st->nleaf && st->leaf[p + 1]->kind == iv->kind) te_fuse(st, iv, st->leaf[p + 1]);
        break;
      default: {
        int q = (int)rnd((uint64_t)st->nleaf);
        if (q != p) {
          IterVar *order[2] = {st->leaf[q], st->leaf[p]};
          te_reorder(st, 2, order);
        }
      }
      }
    }
    if (st->leaf[0]->kind == ITER_SPATIAL) te_parallel(st, st->leaf[0]);
    if (st->leaf[st->nleaf - 1]->kind == ITER_SPATIAL) te_vectorize(st, st->leaf[st->nleaf - 1]);
    if (rnd(2)) {
      IterVar *o, *in;
      IterVar *f = te_fuse(sz, Z->op->axes[0], Z->op->axes[1]);
      te_split(sz, f, (int64_t)rnd(4) + 2, &o, &in);
      te_unroll(sz, in);
    }
    Diag d = {0};
    TeTensor *args[3] = {m.x, m.w, Z};
    TirFunc *f = te_lower(&c, s, "bmm_relu", 3, args, &d);
    CHECK(f, "trial %d: lower failed: %s", trial, d.msg);
    if (f) {
      int64_t nx = B * M * K, nw = K * N, no = B * M * N;
      double *X = rand_buf(nx), *W = rand_buf(nw), *out = nan_buf(no), *ref = malloc((size_t)no * sizeof(double));
      for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < M; i++)
          for (int64_t j = 0; j < N; j++) {
            double acc = 0.5;
            for (int64_t k = 0; k < K; k++) acc += X[(b * M + i) * K + k] * W[k * N + j];
            ref[(b * M + i) * N + j] = acc > 0 ? acc : 0;
          }
      double *data[3] = {X, W, out};
      bool ok = run_func(f, data) && close_all(out, ref, no, "random schedule");
      if (!ok) {
        StrBuf sb = {0};
        te_print_schedule(&sb, s);
        char *txt = print_func(f);
        CHECK(ok, "trial %d:\n%s%s", trial, sb.s, txt);
        sb_free(&sb);
        free(txt);
      }
      free(X);
      free(W);
      free(out);
      free(ref);
    }
    arena_free(a);
  }
}

/* ---- a long chain of inlined stages that each read their input twice stays small (shared reads) ---- */

static Expr *twice_fn(TeCtx *c, Expr **idx, void *user) {
  One *o = user;
  Arena *a = c->arena;
  Expr *x = te_read(c, o->t, 1, idx), *y = te_read(c, o->t, 1, idx);
  return tir_bin(a, E_MAX, tir_mul(a, x, tir_float(a, MLC_F32, 0.5)), tir_sub(a, y, tir_float(a, MLC_F32, 0.125)));
}

static void test_inline_chain(int depth, bool run) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  int64_t sh[1] = {10};
  TeTensor *X = te_placeholder(&c, "X", MLC_F32, 1, sh), *t = X;
  TeTensor *stages[64];
  for (int k = 0; k < depth; k++) {
    One o = {t};
    char nm[16];
    snprintf(nm, sizeof nm, "s%d", k);
    t = stages[k] = te_compute(&c, nm, "elemwise", MLC_F32, 1, sh, twice_fn, &o);
  }
  TeSchedule *s = te_create_schedule(&c, 1, &t);
  for (int k = 0; k < depth - 1; k++) te_compute_inline(te_stage(s, stages[k]));
  Diag d = {0};
  TeTensor *args[2] = {X, t};
  size_t before = arena_bytes(a);
  TirFunc *f = te_lower(&c, s, "chain", 2, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  CHECK(arena_bytes(a) - before < (size_t)8 << 20, "lowering used %zu bytes", arena_bytes(a) - before);
  if (f && run) { /* the interpreter walks the DAG as a tree (2^depth), so only short chains are run */
    double *in = rand_buf(10), *out = nan_buf(10), ref[10];
    for (int i = 0; i < 10; i++) {
      double v = in[i];
      for (int k = 0; k < depth; k++) {
        double p = (float)(v * 0.5), q = (float)(v - 0.125);
        v = p > q ? p : q;
      }
      ref[i] = v;
    }
    double *data[2] = {in, out};
    CHECK(run_func(f, data), "run");
    CHECK(close_all(out, ref, 10, "inline chain"), "values");
    free(in);
    free(out);
  }
  arena_free(a);
}

/* ---- case: cache_write + compute_at (a register-block matmul with a fused epilogue) ---- */

typedef struct CwEpi {
  TeTensor *c, *bias;
} CwEpi;

static Expr *bias_relu_fn(TeCtx *c, Expr **idx, void *user) {
  CwEpi *e = user;
  Arena *a = c->arena;
  Expr *x = tir_add(a, te_read(c, e->c, 2, idx), te_read(c, e->bias, 1, &idx[1]));
  return tir_bin(a, E_MAX, x, tir_float(a, MLC_F32, 0));
}

/* variant 0: factors divide (exact regions, the accumulator is 4 x 8); 1: they do not (guards);
 * 2: no epilogue, the copy stage itself is the output; 3: attached at an outer loop (a row block) */
static void test_cache_write(int variant) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  const int64_t M = variant == 1 ? 10 : 12, K = 5, N = variant == 1 ? 13 : 16;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, so[2] = {M, N}, sbias[1] = {N};
  Mm m = {te_placeholder(&c, "A", MLC_F32, 2, sa), te_placeholder(&c, "B", MLC_F32, 2, sb), K};
  TeTensor *C = te_compute(&c, "C", "dense", MLC_F32, 2, so, matmul_fn, &m);
  TeTensor *bias = te_placeholder(&c, "bias", MLC_F32, 1, sbias);
  CwEpi e = {C, bias};
  TeTensor *D = variant == 2 ? C : te_compute(&c, "D", "elemwise", MLC_F32, 2, so, bias_relu_fn, &e);
  TeSchedule *s = te_create_schedule(&c, 1, &D);
  TeTensor *L = te_cache_write(s, C);
  CHECK(L != C && L->op->nreduce == 1 && C->op->nreduce == 0, "cache_write moved the reduction");
  int ci = -1;
  for (int q = 0; q < s->nstages; q++)
    if (s->stages[q]->op == C->op) ci = q;
  CHECK(ci > 0 && s->stages[ci - 1]->op == L->op, "local stage just before C");
  if (variant != 2) te_compute_inline(te_stage(s, C));
  TeStage *ds = te_stage(s, D), *ls = te_stage(s, L);
  IterVar *io, *ii, *jo, *ji;
  te_split(ds, D->op->axes[0], 4, &io, &ii);
  te_split(ds, D->op->axes[1], 8, &jo, &ji);
  IterVar *dorder[4] = {io, jo, ii, ji};
  te_reorder(ds, 4, dorder);
  te_parallel(ds, io);
  te_vectorize(ds, ji);
  IterVar *lio, *lii, *ljo, *lji;
  te_split(ls, L->op->axes[0], 4, &lio, &lii);
  te_split(ls, L->op->axes[1], 8, &ljo, &lji);
  IterVar *lorder[5] = {lio, ljo, L->op->reduce_axes[0], lii, lji};
  te_reorder(ls, 5, lorder);
  te_unroll(ls, lii);
  te_vectorize(ls, lji);
  te_compute_at(ls, ds, variant == 3 ? io : jo);
  StrBuf pb = {0};
  te_print_schedule(&pb, s);
  CHECK(strstr(pb.s, variant == 3 ? "at D.i0.outer" : variant == 2 ? "at C.i1.outer" : "at D.i1.outer"), "%s",
        pb.s);
  sb_free(&pb);
  Diag d = {0};
  TeTensor *args[4] = {m.a, m.b, bias, D};
  TirFunc *f = variant == 2 ? te_lower(&c, s, "cw", 3, (TeTensor *[]){m.a, m.b, D}, &d)
                            : te_lower(&c, s, "cw", 4, args, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char title[32];
    snprintf(title, sizeof title, "cache_write %d", variant);
    char *txt = dump(f, title);
    const char *want = variant == 1 ? "allocate C.local: float32[4, 8]"
                       : variant == 3 ? "allocate C.local: float32[4, 16]"
                                      : "allocate C.local: float32[4, 8]";
    CHECK(strstr(txt, want), "variant %d: local region: %s", variant, txt);
    free(txt);
    double *A = rand_buf(M * K), *B = rand_buf(K * N), *bv = rand_buf(N), *out = nan_buf(M * N);
    double *ref = malloc((size_t)(M * N) * sizeof(double));
    for (int64_t x = 0; x < M; x++)
      for (int64_t y = 0; y < N; y++) {
        double acc = 0;
        for (int64_t z = 0; z < K; z++) acc += A[x * K + z] * B[z * N + y];
        if (variant != 2) acc = acc + bv[y] > 0 ? acc + bv[y] : 0;
        ref[x * N + y] = acc;
      }
    double *data4[4] = {A, B, bv, out}, *data3[3] = {A, B, out};
    CHECK(run_func(f, variant == 2 ? data3 : data4), "run");
    CHECK(close_all(out, ref, M * N, "cache_write"), "variant %d values", variant);
    free(A);
    free(B);
    free(bv);
    free(out);
    free(ref);
  }
  arena_free(a);
}

/* ---- case: te_prefetch on a Winograd-like GEMM, M[b, p, kb] = sum_k V[p, k] * U[b, k, kb] ---- */

typedef struct PfGemm {
  TeTensor *v, *u;
  int64_t k;
} PfGemm;

static Expr *pf_gemm_fn(TeCtx *c, Expr **idx, void *user) {
  PfGemm *g = user;
  IterVar *k = te_reduce_axis(c, "k", g->k);
  Expr *kv = tir_varref(c->arena, k->var);
  Expr *iv[2] = {idx[1], kv}, *iu[3] = {idx[0], kv, idx[2]};
  return te_reduce(c, RED_SUM, tir_mul(c->arena, te_read(c, g->v, 2, iv), te_read(c, g->u, 3, iu)), 1, &k, NULL,
                   NULL);
}

/* variant 1: ahead 1 with K = 20 (a 20-line block over 3 x 20 iterations: a line per iteration, i * 20 / 60);
 * 2: ahead 2 with K = 24 (24 lines, 72 iterations: every third k prefetches the next line); 3: ahead 1 with
 * K = 8 (8 lines: 3 per iteration of the 3 row tiles, the (3i + j)-th of 9 evenly spaced lines) */
static void test_prefetch(int variant) {
  Arena *a = arena_new();
  TeCtx c = {.arena = a};
  const int ahead = variant == 2 ? 2 : 1;
  const int64_t NB = 5, P = 12, K = variant == 1 ? 20 : variant == 2 ? 24 : 8, KB = 16;
  int64_t sv[2] = {P, K}, su[3] = {NB, K, KB}, so[3] = {NB, P, KB};
  PfGemm g = {te_placeholder(&c, "V", MLC_F32, 2, sv), te_placeholder(&c, "U", MLC_F32, 3, su), K};
  TeTensor *M = te_compute(&c, "M", "gemm", MLC_F32, 3, so, pf_gemm_fn, &g);
  TeSchedule *s = te_create_schedule(&c, 1, &M);
  TeTensor *L = te_cache_write(s, M);
  TeStage *gs = te_stage(s, M), *ls = te_stage(s, L);
  IterVar *po, *pi;
  te_split(gs, M->op->axes[1], 4, &po, &pi);
  te_parallel(gs, M->op->axes[0]);
  te_unroll(gs, pi);
  te_vectorize(gs, M->op->axes[2]);
  TeOp *lo = L->op;
  IterVar *lorder[4] = {lo->axes[0], lo->reduce_axes[0], lo->axes[1], lo->axes[2]};
  te_reorder(ls, 4, lorder);
  te_unroll(ls, lo->axes[1]);
  te_vectorize(ls, lo->axes[2]);
  te_compute_at(ls, gs, po);
  te_prefetch(gs, g.u, M->op->axes[0], ahead);
  StrBuf pb = {0};
  te_print_schedule(&pb, s);
  CHECK(strstr(pb.s, ahead == 1 ? "prefetch U at i0 ahead 1" : "prefetch U at i0 ahead 2"), "%s", pb.s);
  sb_free(&pb);
  Diag d = {0};
  TirFunc *f = te_lower(&c, s, "pf", 3, (TeTensor *[]){g.v, g.u, M}, &d);
  CHECK(f, "lower failed: %s", d.msg);
  if (f) {
    char title[32];
    snprintf(title, sizeof title, "prefetch %d", variant);
    char *txt = dump(f, title);
    CHECK(strstr(txt, "eval prefetch(U["), "a prefetch of U: %s", txt);
    CHECK(variant != 2 || strstr(txt, "if (floormod(k, 3) == 0)"), "every third k: %s", txt);
    const char *pf = strstr(txt, "eval prefetch("), *kl = strstr(txt, "for (k, 0, 8)");
    CHECK(variant != 3 || (pf && kl && pf < kl), "prefetches at the row tiles' loop, outside k: %s", txt);
    free(txt);
    double *V = rand_buf(P * K), *U = rand_buf(NB * K * KB), *out = nan_buf(NB * P * KB);
    double *ref = malloc((size_t)(NB * P * KB) * sizeof(double));
    for (int64_t b = 0; b < NB; b++)
      for (int64_t p = 0; p < P; p++)
        for (int64_t x = 0; x < KB; x++) {
          double acc = 0;
          for (int64_t k = 0; k < K; k++) acc += V[p * K + k] * U[(b * K + k) * KB + x];
          ref[(b * P + p) * KB + x] = acc;
        }
    pf_buf = f->params[1];
    pf_nlines = NB * K * KB / 16;
    pf_seen = calloc((size_t)pf_nlines, sizeof(int));
    double *data[3] = {V, U, out};
    CHECK(run_func(f, data), "run (every prefetch address inside U)");
    CHECK(close_all(out, ref, NB * P * KB, "prefetch gemm"), "variant %d values", variant);
    /* iteration b streamed in all of block b + ahead's lines, the first blocks only by the hardware */
    int64_t per_block = K * KB / 16, missing = 0, early = 0;
    for (int64_t l = 0; l < pf_nlines; l++) {
      if (l >= ahead * per_block && !pf_seen[l]) missing++;
      if (l < ahead * per_block && pf_seen[l]) early++;
    }
    CHECK(!missing && !early, "variant %d: %ld lines of later blocks never prefetched, %ld of the first ones were",
          variant, (long)missing, (long)early);
    free(pf_seen);
    pf_seen = NULL;
    pf_buf = NULL;
    free(V);
    free(U);
    free(out);
    free(ref);
  }
  arena_free(a);
}

int main(void) {
  if (getenv("TEST_TE_SEED")) rng = strtoull(getenv("TEST_TE_SEED"), NULL, 10) | 1;
  test_simplify();
  test_simplify_float_round_trip();
  test_simplify_random();
  test_random_schedules();
  test_broadcast_add();
  test_pad_partition(false);
  test_pad_partition(true);
  for (int v = 0; v < 3; v++) test_matmul(v);
  test_pipeline(true);
  test_pipeline(false);
  test_extern(false);
  test_extern(true);
  test_reduce_scalar();
  test_errors();
  test_inline_chain(10, true);
  test_inline_chain(60, false);
  for (int v = 0; v < 4; v++) test_cache_write(v);
  for (int v = 1; v <= 3; v++) test_prefetch(v);
  if (failures) {
    fprintf(stderr, "test_te: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_te: ok\n");
  return 0;
}
