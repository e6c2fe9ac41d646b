/* dense_x86.c: the x86 schedule templates of nn.dense, nn.matmul and nn.batch_matmul (after TVM's
 * topi/x86/dense.py dense_pack and batch_matmul.py), dispatched from the template table of schedule.c.
 *
 * Algorithm: a register-blocked GEMM loop nest. The output's leading axes are fused into one row axis M
 * whenever the B operand does not depend on them (dense, and matmuls whose B has no batch dims), so that a
 * [seq, 1, d] x [d, n] product is one 128-row GEMM instead of 128 one-row ones. M is split by tile_m (rows of
 * the register tile, a divisor of M so the tile needs no guard), N by tile_n (one to four vectors), K by
 * tile_k (a cache block). Loop order
 *     batch.., k.o, m.o, n.o, k.i, m.i (unrolled), n.i (vectorized)
 * keeps the tile_m x tile_n accumulator tile at loop-invariant addresses inside the k.i loop, so LLVM's
 * LICM promotes it to vector registers (the output is a noalias scratch or kernel buffer): each k step is
 * tile_m broadcasts of A, tile_n/lanes vector loads of B and tile_m * tile_n/lanes FMAs. Parallelism goes to
 * the fused batch x m.o (x n.o while that is too little to share out) when the work is large enough.
 * The epilogue (bias add, activation) is the group's output stage and gets the generic injective schedule. */
#include <string.h>
#include "topi/topi.h"

#define PARALLEL_MIN_WORK 65536 /* multiply-adds below which a parallel launch costs more than it saves */

/* ---------------------------------------------------------------- workload */

/* The GEMM view of a matmul anchor: nb leading axes that stay batch axes, then the row axes (fused into
 * M), the column axis N and the reduce axis K. */
typedef struct Gemm {
  int nb;        /* leading output axes kept as batch axes */
  int nrow;      /* output axes fused into M (those after the batch axes, before N) */
  int64_t m, n, k;
  int64_t batch; /* product of the batch extents */
} Gemm;

/* Whether the B operand's index depends on output axis i: B is the second E_TENSOR read in the product. */
static bool expr_uses_var(const Expr *e, const Var *v) {
  if (!e) return false;
  switch (e->kind) {
  case E_VAR: return e->var == v;
  case E_INT: case E_FLOAT: return false;
  case E_TENSOR:
    for (int i = 0; i < e->tensor.n; i++)
      if (expr_uses_var(e->tensor.idx[i], v)) return true;
    return false;
  case E_LOAD:
    for (int i = 0; i < e->load.n; i++)
      if (expr_uses_var(e->load.idx[i], v)) return true;
    return false;
  case E_CALL:
    for (int i = 0; i < e->call.nargs; i++)
      if (expr_uses_var(e->call.args[i], v)) return true;
    return false;
  case E_REDUCE: return expr_uses_var(e->reduce.source, v) || expr_uses_var(e->reduce.cond, v);
  default: return expr_uses_var(e->op.a, v) || expr_uses_var(e->op.b, v) || expr_uses_var(e->op.c, v);
  }
}

/* the read of the B operand: the right operand of the product under the reduction (through casts) */
static const Expr *b_operand(const TeOp *a) {
  const Expr *e = a->body;
  if (!e || e->kind != E_REDUCE) return NULL;
  e = e->reduce.source;
  if (!e || e->kind != E_MUL) return NULL;
  e = e->op.b;
  while (e && e->kind == E_CAST) e = e->op.a;
  return e && e->kind == E_TENSOR ? e : NULL;
}

static bool gemm_view(const TeOp *a, Gemm *g) {
  memset(g, 0, sizeof *g);
  if (a->kind != TE_COMPUTE || a->naxes == 0 || a->nreduce != 1) return false;
  const Expr *b = b_operand(a);
  int nd = a->naxes;
  g->n = a->axes[nd - 1]->extent;
  g->k = a->reduce_axes[0]->extent;
  /* row axes: walk back from the axis before N while B does not depend on it */
  int first = nd - 1;
  while (first > 0 && b && !expr_uses_var(b, a->axes[first - 1]->var)) first--;
  if (!b && nd >= 2) first = nd - 2; /* unknown B: the m axis only */
  g->nb = first;
  g->nrow = nd - 1 - first;
  g->m = 1;
  for (int i = first; i < nd - 1; i++) g->m *= a->axes[i]->extent;
  g->batch = 1;
  for (int i = 0; i < first; i++) g->batch *= a->axes[i]->extent;
  return true;
}

/* ---------------------------------------------------------------- config space and fallback */

void topi_dense_x86_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  Gemm g;
  if (!gemm_view(a, &g)) return;
  int lanes = topi_vector_lanes(t, a->outputs[0]->dtype);
  TopiKnob *kn = topi_knob_add(s, "tile_n");
  for (int v = 1; v <= 4; v++)
    if (g.n % (v * lanes) == 0) topi_knob_choice(kn, v * lanes);
  for (int64_t f = 1; f <= lanes && f <= g.n; f++)
    if (g.n % f == 0) topi_knob_choice(kn, f);
  TopiKnob *km = topi_knob_add(s, "tile_m");
  for (int64_t f = 1; f <= 12 && f <= g.m; f++)
    if (g.m % f == 0) topi_knob_choice(km, f);
  TopiKnob *kk = topi_knob_add(s, "tile_k");
  static const int64_t kc[] = {64, 128, 256, 512, 1024};
  topi_knob_choice(kk, g.k);
  for (int i = 0; i < 5; i++)
    if (kc[i] < g.k && g.k % kc[i] == 0) topi_knob_choice(kk, kc[i]);
  TopiKnob *kp = topi_knob_add(s, "par_n");
  topi_knob_choice(kp, 0);
  topi_knob_choice(kp, 1);
}

void topi_dense_x86_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  Gemm g;
  if (!gemm_view(a, &g)) return;
  int lanes = topi_vector_lanes(t, a->outputs[0]->dtype);
  /* the register tile tm x tn (tn a multiple of the lanes): the most FMAs per load, tm * tn/lanes
   * accumulators within the vector registers (16 with AVX2: 12 accumulators, the B vectors and a broadcast;
   * 32 with AVX-512: 24), tm dividing M and tn dividing N so the tile needs no guard */
  int maxacc = t && t->vector_bytes >= 64 ? 24 : 12;
  int64_t tn = 0, tm = 1;
  double best = -1;
  for (int nv = 1; nv <= 4; nv *= 2) { /* whole power-of-two vector groups: <3 x vector> code is poor */
    if (g.n % (nv * lanes) != 0) continue;
    for (int64_t m = 1; m <= 12 && m <= g.m; m++) {
      if (g.m % m != 0 || m * nv > maxacc) continue;
      double score = (double)(m * nv) / (double)(m + nv);
      if (score > best + 1e-9) {
        best = score;
        tn = nv * lanes;
        tm = m;
      }
    }
  }
  if (tn == 0) { /* N not a multiple of the lanes: one partial vector, rows from M */
    tn = topi_largest_divisor(g.n, lanes);
    static const int64_t m_cands[] = {8, 6, 4, 7, 5, 3, 2};
    for (int i = 0; i < 7; i++)
      if (g.m % m_cands[i] == 0) {
        tm = m_cands[i];
        break;
      }
  }
  /* tile_k: a block of A rows (tm x tile_k) and of the B panel (tile_k x tn) that stays in L1 */
  int64_t tk = g.k;
  if (g.k > 512) tk = topi_largest_divisor(g.k, 512);
  topi_cfg_set(cfg, "tile_n", tn);
  topi_cfg_set(cfg, "tile_m", tm);
  topi_cfg_set(cfg, "tile_k", tk);
  topi_cfg_set(cfg, "par_n", 0);
}

/* Whether the cache_write form applies: at most one row axis longer than 1 (so the accumulator tile maps to
 * a box of the local stage), an epilogue of the same shape without reductions, the anchor's tensor read
 * only by that epilogue (not a group output itself). */
static bool local_form_ok(TeSchedule *s, const TeOp *a, const TeTensor *out, const Gemm *g, int *mrow) {
  *mrow = -1;
  for (int i = g->nb; i < g->nb + g->nrow; i++)
    if (a->axes[i]->extent > 1) {
      if (*mrow >= 0) return false;
      *mrow = i;
    }
  if (out && out->op != a) {
    const TeOp *o = out->op;
    if (o->kind != TE_COMPUTE || o->nreduce != 0 || o->naxes != a->naxes) return false;
    for (int i = 0; i < a->naxes; i++)
      if (o->axes[i]->extent != a->axes[i]->extent) return false;
    for (int i = 0; i < s->noutputs; i++)
      if (s->outputs[i]->op == a) return false;
  }
  return true;
}

/* Tiles one stage over the anchor's axis layout: batch.., unit rows.., m.o, n.o, [k.o, k.i], m.i, n.i.
 * Returns n.o; *mo_out the m.o leaf (NULL without a row axis). */
static IterVar *tile_gemm_stage(TeStage *st, IterVar **axes, int naxes, IterVar *kv, const Gemm *g, int mrow,
                                int64_t tm, int64_t tn, int64_t tk, IterVar **mo_out, IterVar **mi_out,
                                IterVar **ni_out) {
  IterVar *no, *ni, *mo = NULL, *mi = NULL, *ko = NULL, *ki = NULL;
  topi_split(st, axes[naxes - 1], tn, &no, &ni);
  if (mrow >= 0) topi_split(st, axes[mrow], tm, &mo, &mi);
  if (kv) topi_split(st, kv, tk, &ko, &ki);
  IterVar *order[MLC_MAX_DIMS + 8];
  int k = 0;
  for (int i = 0; i < naxes - 1; i++)
    if (i != mrow) order[k++] = axes[i];
  if (mo) order[k++] = mo;
  order[k++] = no;
  if (ko) order[k++] = ko;
  if (ki) order[k++] = ki;
  if (mi) order[k++] = mi;
  order[k++] = ni;
  te_reorder(st, k, order);
  *mo_out = mo;
  *mi_out = mi;
  *ni_out = ni;
  return no;
}

void topi_dense_x86_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *st = te_stage(s, a->outputs[0]);
  Gemm g;
  int mrow = -1;
  if (!st || !gemm_view(a, &g) || st->nleaf != a->naxes + 1) {
    if (st) topi_schedule_stage_generic(c, st);
    goto epilogue;
  }
  int64_t tn = topi_config_get(cfg, "tile_n", 1), tm = topi_config_get(cfg, "tile_m", 1);
  int64_t tk = topi_config_get(cfg, "tile_k", g.k);
  int64_t work = g.batch * g.m * g.n * g.k;
  if (local_form_ok(s, a, out, &g, &mrow)) {
    /* TVM's dense_pack: the accumulator tile in a local stage computed at the output's n.o loop, the
     * epilogue applied while the tile is stored */
    TeTensor *C = a->outputs[0];
    IterVar *kv = a->reduce_axes[0];
    TeTensor *L = te_cache_write(s, C);
    if (L == C) goto epilogue;
    bool epi = out && out->op != a;
    if (epi) te_compute_inline(te_stage(s, C));
    TeStage *os = te_stage(s, epi ? out : C), *ls = te_stage(s, L);
    TeOp *oo = os->op, *lo = ls->op;
    IterVar *omo, *omi, *oni, *lmo, *lmi, *lni;
    IterVar *ono = tile_gemm_stage(os, oo->axes, oo->naxes, NULL, &g, mrow, tm, tn, tk, &omo, &omi, &oni);
    tile_gemm_stage(ls, lo->axes, lo->naxes, kv, &g, mrow, tm, tn, tk, &lmo, &lmi, &lni);
    /* parallel over the outer tiles of the output stage */
    IterVar *par[MLC_MAX_DIMS + 2];
    int np = 0;
    int64_t ext = 1;
    for (int i = 0; i < oo->naxes - 1; i++)
      if (i != mrow) {
        par[np++] = oo->axes[i];
        ext *= oo->axes[i]->extent;
      }
    if (omo) {
      par[np++] = omo;
      ext *= omo->extent;
    }
    bool with_n = topi_config_get(cfg, "par_n", 0) || ext < 2 * topi_num_cores(c->target) || np == 0;
    if (with_n) par[np++] = ono;
    IterVar *f = topi_fuse_range(os, par, np);
    if (work >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(os, f);
    if (omi && omi->extent > 1) te_unroll(os, omi);
    if (oni->extent > 1) te_vectorize(os, oni);
    if (lmi && lmi->extent > 1) te_unroll(ls, lmi);
    if (lni->extent > 1) te_vectorize(ls, lni);
    te_compute_at(ls, os, with_n ? f : ono);
    return;
  }
  int nd = a->naxes;
  IterVar *nv = a->axes[nd - 1], *kv = a->reduce_axes[0];
  IterVar *mv = NULL;
  if (g.nrow > 0) {
    IterVar *rows[MLC_MAX_DIMS];
    for (int i = 0; i < g.nrow; i++) rows[i] = a->axes[g.nb + i];
    mv = topi_fuse_range(st, rows, g.nrow);
  }
  IterVar *no, *ni, *mo = NULL, *mi = NULL, *ko, *ki;
  topi_split(st, nv, tn, &no, &ni);
  if (mv) topi_split(st, mv, tm, &mo, &mi);
  topi_split(st, kv, tk, &ko, &ki);
  IterVar *order[MLC_MAX_DIMS + 8];
  int k = 0;
  for (int i = 0; i < g.nb; i++) order[k++] = a->axes[i];
  if (mo) order[k++] = mo;
  order[k++] = no;
  order[k++] = ko;
  order[k++] = ki;
  if (mi) order[k++] = mi;
  order[k++] = ni;
  te_reorder(st, k, order);
  /* parallel: batch x m.o, and n.o too when that is too little to share out (or when asked) */
  IterVar *par[MLC_MAX_DIMS + 2];
  int np = 0;
  int64_t ext = 1;
  for (int i = 0; i < g.nb; i++) {
    par[np++] = a->axes[i];
    ext *= a->axes[i]->extent;
  }
  if (mo) {
    par[np++] = mo;
    ext *= mo->extent;
  }
  if (topi_config_get(cfg, "par_n", 0) || ext < 2 * topi_num_cores(c->target) || np == 0) par[np++] = no;
  IterVar *f = topi_fuse_range(st, par, np);
  if (work >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(st, f);
  if (mi && mi->extent > 1) te_unroll(st, mi);
  if (ni->extent > 1) te_vectorize(st, ni);
epilogue:
  if (out && out->op != a) {
    TeStage *os = te_stage(s, out);
    if (os) topi_schedule_stage_generic(c, os);
  }
}
