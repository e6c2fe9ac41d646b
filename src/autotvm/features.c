/* Loop features of a lowered kernel for the cost model (after TVM's autotvm/feature.py "itervar" features,
 * simplified to one loop nest).
 *
 * The kernel's TIR is walked with the stack of enclosing loops; every store is weighed by the iterations of
 * its loops. The heaviest store (the anchor's accumulation) gives the per-loop features, innermost loop first
 * (so equal positions mean equal roles across configs): log2(extent + 1); a one-hot of the loop kind
 * (serial, parallel, vectorized, unrolled); log2 of the iterations at and below the loop; and for the store
 * and the first three loads of its body, log2(|stride| + 1) of the loop variable in the flattened access (the
 * coefficient of the variable in sum(idx[d] * row-major stride[d]), through let bindings). Global features:
 * arithmetic ops, loads and stores in the heaviest body, their totals over the kernel (log2), loop count and
 * depth, parallel loops, allocations and their bytes, and the software prefetches executed (log2). */
#include <math.h>
#include <string.h>
#include "autotvm/autotvm.h"

#define MAX_DEPTH 32
#define MAX_LETS 64

typedef struct Loop {
  Var *var;
  int64_t extent;
  ForKind kind;
} Loop;

typedef struct Access {
  const Buffer *buf;
  int n;
  Expr **idx;
} Access;

typedef struct Walk {
  Loop loops[MAX_DEPTH];
  int depth;
  Var *let_var[MAX_LETS];
  Expr *let_val[MAX_LETS];
  int nlets;
  /* the heaviest store so far */
  double best_iters;
  Loop best_loops[MAX_DEPTH];
  int best_depth;
  Access best_acc[TUNE_FEATURE_BUFS];
  int best_nacc;
  Expr *let_snap_val[MAX_LETS];
  Var *let_snap_var[MAX_LETS];
  int let_snap_n;
  double best_arith, best_loads;
  /* totals */
  double arith, loads, stores, nloops, nparallel, nalloc, alloc_bytes, max_depth, prefetches;
} Walk;

static void count_expr(const Expr *e, double *arith, double *loads, Access *acc, int *nacc) {
  if (!e) return;
  switch (e->kind) {
  case E_INT: case E_FLOAT: case E_VAR: return;
  case E_LOAD:
    *loads += e->lanes;
    if (acc && *nacc < TUNE_FEATURE_BUFS) acc[(*nacc)++] = (Access){e->load.buf, e->load.n, e->load.idx};
    for (int i = 0; i < e->load.n; i++) count_expr(e->load.idx[i], arith, loads, NULL, NULL);
    return;
  case E_CALL:
    *arith += e->lanes * (e->call.intrin == INTRIN_FMA ? 2 : 1);
    for (int i = 0; i < e->call.nargs; i++) count_expr(e->call.args[i], arith, loads, acc, nacc);
    return;
  case E_RAMP: case E_BROADCAST: case E_CAST: case E_NOT:
    count_expr(e->op.a, arith, loads, acc, nacc);
    if (e->kind == E_RAMP) count_expr(e->op.b, arith, loads, acc, nacc);
    return;
  case E_LET:
    count_expr(e->op.a, arith, loads, acc, nacc);
    count_expr(e->op.b, arith, loads, acc, nacc);
    return;
  case E_SELECT:
    *arith += e->lanes;
    count_expr(e->op.a, arith, loads, acc, nacc);
    count_expr(e->op.b, arith, loads, acc, nacc);
    count_expr(e->op.c, arith, loads, acc, nacc);
    return;
  default:
    if (e->kind >= E_ADD && e->kind <= E_OR) {
      if (dtype_is_float(e->dtype)) *arith += e->lanes;
      count_expr(e->op.a, arith, loads, acc, nacc);
      count_expr(e->op.b, arith, loads, acc, nacc);
    }
    return;
  }
}

/* the coefficient of v in e (linear parts exactly; a nonlinear use of v counts 1) */
static double coef(const Expr *e, const Var *v, Var **lv, Expr **lval, int nl, int depth) {
  if (!e || depth > 64) return 0;
  double k;
  int64_t c;
  switch (e->kind) {
  case E_VAR:
    if (e->var == v) return 1;
    for (int i = nl - 1; i >= 0; i--)
      if (lv[i] == e->var) return coef(lval[i], v, lv, lval, i, depth + 1);
    return 0;
  case E_ADD: return coef(e->op.a, v, lv, lval, nl, depth + 1) + coef(e->op.b, v, lv, lval, nl, depth + 1);
  case E_SUB: return coef(e->op.a, v, lv, lval, nl, depth + 1) - coef(e->op.b, v, lv, lval, nl, depth + 1);
  case E_MUL:
    if (tir_is_const_int(e->op.b, &c)) return (double)c * coef(e->op.a, v, lv, lval, nl, depth + 1);
    if (tir_is_const_int(e->op.a, &c)) return (double)c * coef(e->op.b, v, lv, lval, nl, depth + 1);
    k = coef(e->op.a, v, lv, lval, nl, depth + 1) + coef(e->op.b, v, lv, lval, nl, depth + 1);
    return k != 0 ? 1 : 0;
  case E_DIV: case E_FLOORDIV:
    k = coef(e->op.a, v, lv, lval, nl, depth + 1);
    if (tir_is_const_int(e->op.b, &c) && c != 0) return k / (double)c;
    return k != 0 ? 1 : 0;
  case E_MOD: case E_FLOORMOD: return coef(e->op.a, v, lv, lval, nl, depth + 1);
  case E_RAMP: case E_BROADCAST: case E_CAST: return coef(e->op.a, v, lv, lval, nl, depth + 1);
  case E_MIN: case E_MAX: case E_SELECT:
    k = coef(e->op.a, v, lv, lval, nl, depth + 1);
    return k != 0 ? k : coef(e->op.b, v, lv, lval, nl, depth + 1);
  default: return 0;
  }
}

static double access_stride(const Access *a, const Var *v, Var **lv, Expr **lval, int nl) {
  double s = 0, row = 1;
  for (int d = a->n - 1; d >= 0; d--) {
    s += coef(a->idx[d], v, lv, lval, nl, 0) * row;
    if (d < a->buf->ndim) row *= (double)a->buf->shape[d];
  }
  return s;
}

static void walk(Walk *w, const Stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case S_FOR: {
    int64_t ext = 1;
    if (!tir_is_const_int(s->loop.extent, &ext)) ext = 16;
    w->nloops++;
    if (s->loop.for_kind == FOR_PARALLEL) w->nparallel++;
    if (w->depth < MAX_DEPTH) {
      w->loops[w->depth++] = (Loop){s->loop.var, ext, s->loop.for_kind};
      if (w->depth > w->max_depth) w->max_depth = w->depth;
      walk(w, s->loop.body);
      w->depth--;
    } else {
      walk(w, s->loop.body);
    }
    return;
  }
  case S_STORE: {
    double iters = 1, arith = 0, loads = 0;
    for (int i = 0; i < w->depth; i++) iters *= (double)w->loops[i].extent;
    Access acc[TUNE_FEATURE_BUFS];
    int nacc = 1;
    acc[0] = (Access){s->store.buf, s->store.n, s->store.idx};
    count_expr(s->store.value, &arith, &loads, acc, &nacc);
    w->arith += iters * arith;
    w->loads += iters * loads;
    w->stores += iters;
    if (iters * (arith + 1) > w->best_iters) {
      w->best_iters = iters * (arith + 1);
      memcpy(w->best_loops, w->loops, sizeof(Loop) * (size_t)w->depth);
      w->best_depth = w->depth;
      memcpy(w->best_acc, acc, sizeof(Access) * (size_t)nacc);
      w->best_nacc = nacc;
      memcpy(w->let_snap_var, w->let_var, sizeof(Var *) * (size_t)w->nlets);
      memcpy(w->let_snap_val, w->let_val, sizeof(Expr *) * (size_t)w->nlets);
      w->let_snap_n = w->nlets;
      w->best_arith = arith;
      w->best_loads = loads;
    }
    return;
  }
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) walk(w, s->seq.stmts[i]);
    return;
  case S_IF:
    walk(w, s->ifs.then_s);
    walk(w, s->ifs.else_s);
    return;
  case S_LET:
    if (w->nlets < MAX_LETS) {
      w->let_var[w->nlets] = s->let.var;
      w->let_val[w->nlets++] = s->let.value;
      walk(w, s->let.body);
      w->nlets--;
    } else {
      walk(w, s->let.body);
    }
    return;
  case S_ALLOCATE: {
    double bytes = mlc_dtype_size(s->alloc.buf->dtype);
    for (int i = 0; i < s->alloc.buf->ndim; i++) bytes *= (double)s->alloc.buf->shape[i];
    w->nalloc++;
    w->alloc_bytes += bytes;
    walk(w, s->alloc.body);
    return;
  }
  case S_EVAL:
    if (s->eval.e->kind == E_CALL && s->eval.e->call.intrin == INTRIN_PREFETCH) {
      double iters = 1;
      for (int i = 0; i < w->depth; i++) iters *= (double)w->loops[i].extent;
      w->prefetches += iters;
    }
    return;
  }
}

static float lg(double x) { return (float)log2(fabs(x) + 1.0); }

void tune_features(const TirFunc *f, float *out) {
  memset(out, 0, sizeof(float) * TUNE_NFEATURES);
  static Walk w; /* large; features are computed by one thread */
  memset(&w, 0, sizeof w);
  walk(&w, f->body);
  int per = 6 + TUNE_FEATURE_BUFS;
  double below = 1;
  for (int j = 0; j < TUNE_FEATURE_LOOPS && j < w.best_depth; j++) {
    const Loop *l = &w.best_loops[w.best_depth - 1 - j]; /* innermost first */
    float *o = out + j * per;
    below *= (double)l->extent;
    o[0] = lg((double)l->extent);
    o[1] = l->kind == FOR_SERIAL;
    o[2] = l->kind == FOR_PARALLEL;
    o[3] = l->kind == FOR_VECTORIZED;
    o[4] = l->kind == FOR_UNROLLED;
    o[5] = lg(below);
    for (int b = 0; b < w.best_nacc; b++)
      o[6 + b] = lg(access_stride(&w.best_acc[b], l->var, w.let_snap_var, w.let_snap_val, w.let_snap_n));
  }
  float *g = out + TUNE_FEATURE_LOOPS * per;
  g[0] = lg(w.best_iters);
  g[1] = (float)w.best_arith;
  g[2] = (float)w.best_loads;
  g[3] = lg(w.arith);
  g[4] = lg(w.loads);
  g[5] = lg(w.stores);
  g[6] = (float)w.nloops;
  g[7] = (float)w.max_depth;
  g[8] = (float)w.nparallel;
  g[9] = (float)w.nalloc;
  g[10] = lg(w.alloc_bytes);
  g[11] = (float)w.best_depth;
  g[12] = lg(w.prefetches);
}

/* the kernel of config index of task, lowered in arena a; NULL when it does not lower */
static TirFunc *lower_config(Arena *a, const TuneTasks *ts, const TuneTask *task, int64_t index) {
  TeCtx tc = {.arena = a, .target = &ts->target};
  TopiConfig cfg;
  tune_config_from_index(&task->space, index, &cfg);
  Diag d = {0};
  return mlc_group_kernel(&tc, ts->graph, task->group, &cfg, &d);
}

uint64_t tune_config_kernel_hash(const TuneTasks *ts, const TuneTask *task, int64_t index) {
  Arena *a = arena_new();
  TirFunc *f = lower_config(a, ts, task, index);
  uint64_t h = 0;
  if (f) {
    StrBuf b = {0};
    tir_print_func(&b, f);
    h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; b.s && b.s[i]; i++) h = (h ^ (unsigned char)b.s[i]) * 1099511628211ULL;
    if (!h) h = 1;
    sb_free(&b);
  }
  arena_free(a);
  return h;
}

bool tune_config_features(const TuneTasks *ts, const TuneTask *task, int64_t index, float *out) {
  Arena *a = arena_new();
  TirFunc *f = lower_config(a, ts, task, index);
  if (f) tune_features(f, out);
  arena_free(a);
  return f != NULL;
}
