/* Software prefetch of a stream (TVM's schedule.prefetch, narrowed to the case a CPU kernel needs).
 *
 * A kernel whose loop `for v` reads a new block of a buffer per iteration (a GEMM's weight panel: Winograd's
 * U[e, k/kb] over all channels) takes that block from memory at the start of each iteration, and a register
 * tile reuses it only a few times from L1 before the next block: when the weights do not stay in cache
 * between runs the loads wait on memory while the FMA units idle, since the hardware prefetcher only starts
 * after the first misses of each block. tir_inject_prefetch spreads, evenly over the iterations of a serial
 * loop enclosing the reads, cache-line prefetches of the block that iteration v + ahead will read, so memory
 * streams under the arithmetic of the current block instead of before it:
 *
 *     for v:                           for v:
 *       for i0 (serial):                 for i0:
 *         for i1 (serial):                 for i1:
 *           ... buf[f(v, i0, i1, ..)]        eval prefetch(buf[min(lo(v + ahead) + line(i) * L, size - 1)])
 *                                            ... buf[f(v, i0, i1, ..)]
 *
 * where lo(v) = f with every loop var inside v at 0 (the block's first element; the reads must grow with the
 * inner loop vars), i the linear iteration count of the loops down to the chosen one (serial or unrolled,
 * constant extents), line(i) = i * lines / I over its I iterations for a block of `lines` cache lines of L
 * elements. The chosen loop is the deepest whose iterations do not outnumber the lines, with up to
 * PF_MAX_PER_ITER lines each, so that no line is fetched twice; else the outermost with more iterations than
 * lines, where every r-th iteration fetches one when r divides its extent. A prefetch is a hint: the address
 * is clamped into the buffer, the last iterations' prefetches past the stream land on its last line, and a
 * loop this form does not fit (reads not growing, no serial loop, a block that is not a forward stream) is
 * left as it is. Vector loops and the unrolled loops inside the chosen loop are unaffected: the prefetches are
 * scalar statements at the top of its body. */
#include "tir/mutate.h"

#define PF_MAX_LOADS 16
#define PF_MAX_DEPTH 48
#define PF_LINE_BYTES 64
#define PF_MAX_PER_ITER 4 /* more lines per inner iteration than this: not a stream, a burst */

typedef struct PfLoad {
  const Expr *load;
  int depth;
  const Stmt *loops[PF_MAX_DEPTH]; /* loops between v and the read, outermost first */
} PfLoad;

typedef struct PfScan {
  Arena *a;
  const Buffer *buf;
  int depth;
  const Stmt *stack[PF_MAX_DEPTH];
  int nloads;
  PfLoad loads[PF_MAX_LOADS];
  bool bad;              /* too deep, too many reads, or a read under a let */
  int nlets;             /* lets enclosing the current statement inside v */
  ExprMemo seen;
} PfScan;

static Expr *scan_expr(void *ctx, Expr *e) {
  PfScan *p = ctx;
  if (!e || p->bad || memo_get(&p->seen, e)) return e;
  memo_put(&p->seen, e, e);
  if (e->kind == E_LOAD && e->load.buf == p->buf) {
    if (p->nloads == PF_MAX_LOADS || p->nlets) {
      p->bad = true;
      return e;
    }
    PfLoad *l = &p->loads[p->nloads++];
    l->load = e;
    l->depth = p->depth;
    for (int i = 0; i < p->depth; i++) l->loops[i] = p->stack[i];
  }
  if (e->kind == E_LET && e->op.a) p->nlets++;
  tir_expr_map_children(p->a, e, scan_expr, p);
  if (e->kind == E_LET && e->op.a) p->nlets--;
  return e;
}

static void scan_stmt(PfScan *p, const Stmt *s) {
  if (!s || p->bad) return;
  switch (s->kind) {
  case S_FOR:
    scan_expr(p, s->loop.min);
    scan_expr(p, s->loop.extent);
    if (p->depth == PF_MAX_DEPTH) {
      p->bad = true;
      return;
    }
    p->stack[p->depth++] = s;
    scan_stmt(p, s->loop.body);
    p->depth--;
    return;
  case S_STORE:
    for (int i = 0; i < s->store.n; i++) scan_expr(p, s->store.idx[i]);
    scan_expr(p, s->store.value);
    return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) scan_stmt(p, s->seq.stmts[i]);
    return;
  case S_IF:
    scan_expr(p, s->ifs.cond);
    scan_stmt(p, s->ifs.then_s);
    scan_stmt(p, s->ifs.else_s);
    return;
  case S_LET:
    scan_expr(p, s->let.value);
    p->nlets++;
    scan_stmt(p, s->let.body);
    p->nlets--;
    return;
  case S_ALLOCATE: scan_stmt(p, s->alloc.body); return;
  case S_EVAL: scan_expr(p, s->eval.e); return;
  }
}

/* the row-major element offset of a read */
static Expr *flat_of(Arena *a, const Expr *load) {
  const Buffer *b = load->load.buf;
  if (load->load.n == 1) return load->load.idx[0];
  Expr *f = NULL;
  for (int i = 0; i < load->load.n; i++)
    f = f ? tir_add(a, tir_mul(a, f, tir_idx(a, b->shape[i])), load->load.idx[i]) : load->load.idx[i];
  return f ? f : tir_idx(a, 0);
}

/* e with each inner loop var of l at its first (last: at_end) value */
static Expr *at_corner(Arena *a, const PfLoad *l, Expr *e, bool at_end) {
  Var *vars[PF_MAX_DEPTH];
  Expr *vals[PF_MAX_DEPTH];
  for (int i = 0; i < l->depth; i++) {
    const Stmt *f = l->loops[i];
    vars[i] = f->loop.var;
    vals[i] = at_end ? tir_sub(a, tir_add(a, f->loop.min, f->loop.extent), tir_idx(a, 1)) : f->loop.min;
  }
  return tir_simplify(a, tir_substitute(a, e, l->depth, vars, vals));
}

/* free variables of e (at most cap; *n = cap + 1 on overflow) */
typedef struct FreeVars {
  Arena *a;
  int n, cap;
  Var **v;
} FreeVars;

static Expr *free_visit(void *ctx, Expr *e) {
  FreeVars *f = ctx;
  if (!e) return e;
  if (e->kind == E_VAR) {
    for (int i = 0; i < f->n && i < f->cap; i++)
      if (f->v[i] == e->var) return e;
    if (f->n < f->cap) f->v[f->n] = e->var;
    f->n++;
    return e;
  }
  return tir_expr_map_children(f->a, e, free_visit, f);
}

/* e evaluated with v = at and every other free var at 0 (the stream's shape does not depend on them: checked
 * by the caller through two values of v) */
static bool eval_at(Arena *a, Expr *e, const Var *v, int64_t at, int64_t *out) {
  Var *vars[32];
  FreeVars fv = {a, 0, 32, vars};
  free_visit(&fv, e);
  if (fv.n > fv.cap) return false;
  Expr *vals[32];
  for (int i = 0; i < fv.n; i++) vals[i] = tir_idx(a, vars[i] == v ? at : 0);
  return tir_is_const_int(tir_simplify(a, tir_substitute(a, e, fv.n, vars, vals)), out);
}

typedef struct PfInject {
  Arena *a;
  const Stmt *at; /* the loop whose body gets the prefetches */
  Stmt *pre;
} PfInject;

static Stmt *inject_stmt(void *ctx, Stmt *s) {
  PfInject *p = ctx;
  if (!s) return s;
  if (s == p->at) return tir_for(p->a, s->loop.var, s->loop.min, s->loop.extent, s->loop.for_kind,
                                 tir_seq2(p->a, p->pre, s->loop.body));
  return tir_stmt_map_children(p->a, s, tir_keep_expr, inject_stmt, p);
}

/* the prefetches for one loop `for v` (loop), or loop unchanged */
static Stmt *prefetch_loop(Arena *a, Stmt *loop, const Buffer *buf, int64_t ahead) {
  PfScan p = {.a = a, .buf = buf};
  memo_init(&p.seen, a);
  scan_stmt(&p, loop->loop.body);
  if (p.bad || !p.nloads) return loop;
  /* the loops enclosing every read: the common prefix of their paths; the prefetches go in one of its serial
   * loops (chosen below), with only serial or unrolled loops of constant extent from v down to it */
  int common = p.loads[0].depth;
  for (int k = 1; k < p.nloads; k++) {
    int j = 0;
    while (j < common && j < p.loads[k].depth && p.loads[k].loops[j] == p.loads[0].loops[j]) j++;
    common = j;
  }
  int nserial = 0, serial[PF_MAX_DEPTH];
  int64_t below[PF_MAX_DEPTH], iters = 1;
  for (int j = 0; j < common; j++) {
    const Stmt *f = p.loads[0].loops[j];
    int64_t mn, ext;
    if (f->loop.for_kind != FOR_SERIAL && f->loop.for_kind != FOR_UNROLLED) break;
    if (!tir_is_const_int(f->loop.min, &mn) || !tir_is_const_int(f->loop.extent, &ext) || ext < 1) break;
    if (iters > INT64_MAX / 2 / ext) break;
    iters *= ext;
    if (f->loop.for_kind == FOR_SERIAL) below[nserial] = iters, serial[nserial++] = j;
  }
  if (!nserial) return loop;

  /* the block of one iteration of v: from the least first element over the reads to the largest last one
   * (numerically, v = 0 and the vars outside v at 0); its start moves by stride per iteration of v */
  const Var *v = loop->loop.var;
  int base = -1;
  int64_t lo = 0, hi = 0;
  Expr *firsts[PF_MAX_LOADS];
  for (int k = 0; k < p.nloads; k++) {
    Expr *flat = flat_of(a, p.loads[k].load);
    int64_t l0, h0, l1;
    firsts[k] = at_corner(a, &p.loads[k], flat, false);
    Expr *last = at_corner(a, &p.loads[k], flat, true);
    if (!eval_at(a, firsts[k], v, 0, &l0) || !eval_at(a, last, v, 0, &h0) || !eval_at(a, firsts[k], v, 1, &l1))
      return loop;
    if (h0 < l0 || l1 < l0) return loop; /* reads that do not grow with the loops */
    if (base < 0 || l0 < lo) base = k, lo = l0;
    if (k == 0 || h0 > hi) hi = h0;
  }
  int64_t stride0, stride1, first1;
  if (!eval_at(a, firsts[base], v, 1, &first1)) return loop;
  stride0 = first1 - lo;
  int64_t vext;
  if (tir_is_const_int(loop->loop.extent, &vext) && vext > 2) { /* a forward stream, not a reuse of one block */
    int64_t f2;
    if (!eval_at(a, firsts[base], v, 2, &f2)) return loop;
    stride1 = f2 - first1;
    if (stride1 != stride0) return loop;
  }
  int esize = mlc_dtype_size(buf->dtype);
  if (stride0 <= 0 || esize <= 0 || esize > PF_LINE_BYTES) return loop;
  int64_t per_line = PF_LINE_BYTES / esize, span = hi - lo + 1;
  int64_t lines = (span + per_line - 1) / per_line;
  /* the loop that issues them: the deepest serial loop with at most as many iterations as lines and at most
   * PF_MAX_PER_ITER lines each (no prefetch issued twice, the fewest instructions in the innermost loops),
   * else the outermost with more iterations than lines (every r-th of them prefetches, or each its line) */
  int at = -1;
  for (int q = 0; q < nserial; q++)
    if (below[q] <= lines && (lines + below[q] - 1) / below[q] <= PF_MAX_PER_ITER) at = q;
  for (int q = 0; q < nserial && at < 0; q++)
    if (below[q] > lines) at = q;
  if (at < 0) return loop;
  iters = below[at];
  at = serial[at];
  int64_t per_iter = (lines + iters - 1) / iters;

  int64_t total = 1; /* the clamp: a buffer of unknown or empty extent gets no prefetch */
  for (int i = 0; i < buf->ndim; i++) {
    if (buf->shape[i] < 1 || total > INT64_MAX / buf->shape[i]) return loop;
    total *= buf->shape[i];
  }
  /* i: the linear count of the loops from v down to the chosen one */
  Expr *i = NULL;
  for (int j = 0; j <= at; j++) {
    const Stmt *f = p.loads[0].loops[j];
    Expr *x = tir_sub(a, tir_varref(a, f->loop.var), f->loop.min);
    i = i ? tir_add(a, tir_mul(a, i, f->loop.extent), x) : x;
  }
  Expr *next = tir_substitute(a, firsts[base], 1, (Var *[]){(Var *)v},
                              (Expr *[]){tir_add(a, tir_varref(a, (Var *)v), tir_idx(a, ahead))});
  /* fewer lines than iterations: every r-th iteration prefetches the next line where r divides the inner
   * loop's extent (the test is then on that loop's var alone), else each iteration its line i * lines / I */
  const Stmt *inner = p.loads[0].loops[at];
  int64_t r = lines < iters && iters % lines == 0 ? iters / lines : 1;
  Expr *cond = NULL;
  if (r > 1 && inner->loop.extent->ival % r == 0) {
    cond = tir_simplify(a, tir_bin(a, E_EQ, tir_bin(a, E_FLOORMOD, i, tir_idx(a, r)), tir_idx(a, 0)));
    i = tir_bin(a, E_FLOORDIV, i, tir_idx(a, r));
  }
  Stmt *pre = NULL;
  for (int64_t j = 0; j < per_iter; j++) {
    /* the (i * per_iter + j)-th of iters * per_iter evenly spaced lines */
    Expr *k = tir_add(a, tir_mul(a, i, tir_idx(a, per_iter)), tir_idx(a, j));
    Expr *line = cond || lines == iters * per_iter
                     ? (cond ? i : k)
                     : tir_bin(a, E_FLOORDIV, tir_mul(a, k, tir_idx(a, lines)), tir_idx(a, iters * per_iter));
    Expr *elem = tir_add(a, next, tir_mul(a, line, tir_idx(a, per_line)));
    elem = tir_simplify(a, tir_bin(a, E_MIN, elem, tir_idx(a, total - 1)));
    Expr *addr = tir_load(a, (Buffer *)buf, 1, &elem);
    pre = tir_seq2(a, pre, tir_eval(a, tir_call(a, INTRIN_PREFETCH, MLC_I32, 1, &addr)));
  }
  if (cond) pre = tir_if(a, cond, pre, NULL);
  PfInject inj = {a, inner, pre};
  return tir_for(a, loop->loop.var, loop->loop.min, loop->loop.extent, loop->loop.for_kind,
                 inject_stmt(&inj, loop->loop.body));
}

typedef struct PfCtx {
  Arena *a;
  const Var *v;
  const Buffer *buf;
  int64_t ahead;
  bool done;
} PfCtx;

static Stmt *find_loop(void *ctx, Stmt *s) {
  PfCtx *c = ctx;
  if (!s) return s;
  if (s->kind == S_FOR && s->loop.var == c->v) {
    Stmt *r = prefetch_loop(c->a, s, c->buf, c->ahead);
    if (r != s) c->done = true;
    return r;
  }
  return tir_stmt_map_children(c->a, s, tir_keep_expr, find_loop, c);
}

Stmt *tir_inject_prefetch(Arena *a, Stmt *s, const Var *v, const Buffer *buf, int64_t ahead, bool *done) {
  PfCtx c = {a, v, buf, ahead, false};
  Stmt *r = find_loop(&c, s);
  if (done) *done = c.done;
  return r;
}
