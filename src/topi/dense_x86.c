/* dense_x86.c: the x86 schedule templates of nn.dense, nn.matmul and nn.batch_matmul (after TVM's
 * topi/x86/dense.py dense_pack and batch_matmul.py), dispatched from the template table of schedule.c, and
 * the op nn.dense_packed with its template (below: products with a constant weight, packed at compile time).
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
  if (g.n % lanes && g.n > 2 * lanes) topi_knob_choice(kn, lanes); /* a guarded last tile (see the fallback) */
  TopiKnob *km = topi_knob_add(s, "tile_m");
  for (int64_t f = 1; f <= 12 && f <= g.m; f++)
    if (g.m % f == 0 || (g.m >= 12 && (f == 4 || f == 6 || f == 8))) topi_knob_choice(km, f);
  TopiKnob *kk = topi_knob_add(s, "tile_k");
  static const int64_t kc[] = {64, 128, 256, 512, 1024};
  topi_knob_choice(kk, g.k);
  for (int i = 0; i < 5; i++)
    if (kc[i] < g.k && g.k % kc[i] == 0) topi_knob_choice(kk, kc[i]);
  TopiKnob *kp = topi_knob_add(s, "par_n");
  topi_knob_choice(kp, 0);
  topi_knob_choice(kp, 1);
}

/* the accumulator budget in vector registers: AVX-512 has 32 (24 accumulators), AVX2 16 (12): the rest hold
 * the weight vectors and a broadcast */
static int64_t max_accumulators(const Target *t) { return topi_vector_regs(t) * 3 / 4; }

void topi_dense_x86_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  Gemm g;
  if (!gemm_view(a, &g)) return;
  int lanes = topi_vector_lanes(t, a->outputs[0]->dtype);
  /* the register tile tm x tn (tn a multiple of the lanes): the most FMAs per load, tm * tn/lanes
   * accumulators within the vector registers (16 with AVX2: 12 accumulators, the B vectors and a broadcast;
   * 32 with AVX-512: 24), tm dividing M and tn dividing N so the tile needs no guard (but see below) */
  int64_t maxacc = max_accumulators(t);
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
  if (tn == 0 && g.n > 2 * lanes) {
    /* N not a multiple of the lanes (a ViT's 197 tokens): whole vectors anyway; the last column tile is
     * guarded, and te/lower.c's loop peeling keeps that guard out of the other tiles' vector code. Rows: a
     * divisor of M when M has one of 4 or more, else 6 (the last row tile guarded, outside the vector loop) */
    tn = lanes;
    tm = 1;
    for (int64_t m = 4; m <= 12 && m <= g.m; m++)
      if (g.m % m == 0) tm = m;
    if (tm == 1 && g.m >= 12) tm = 6;
  } else if (tn == 0) { /* N not a multiple of the lanes: one partial vector, rows from M */
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

/* ================================================================ nn.dense_packed
 *
 * Op nn.dense_packed(data[..., K], weight[NB, K, bn]) -> [..., N], attribute units = N (NB * bn >= N, the
 * columns past N are zero padding). AlterOpLayout (passes/graph/alter_op_layout.c, pack_dense_weights)
 * rewrites nn.dense, and nn.matmul / nn.batch_matmul with a constant float32 2-D B, into it; the packing
 * (nn.pad up to NB * bn, reshape, transpose) is folded at compile time. One (k, block) step of the weight is
 * one contiguous run of bn floats (bn a multiple of the vector lanes), so the inner loop loads the weight as
 * whole vectors where nn.dense's [N, K] weight would be a strided gather along N.
 *
 * Compute: the leading data axes are fused into one row axis M (the data index is decomposed from m), then
 *     dense_packed[m, nb, b] = sum_k data[m.., k] * weight[nb, k, b]     (shape [Mp, NB, bn], NB * bn >= N,
 *                                                                         Mp >= M: see padded_rows)
 *     dense_unpack[r.., n]   = dense_packed[fused(r..), n / bn, n % bn] (shape [..., N], inlined into the
 *                                                                         epilogue: bias, relu, residual add)
 *
 * Schedule "dense_packed.x86" (knobs tile_m, tile_n, tile_k, n_outer): the group output is tiled
 *     rows.., [m.o, n.o] (fused, parallel; n.o first when n_outer) | m.i (unrolled), nb.i (unrolled), b (vector)
 * and dense_packed is computed at the fused tile loop: a tile_m x tile_n block of accumulators (tile_n =
 * blocks x bn) over k.o, k.i, m.i, nb.i, b, which LLVM keeps in vector registers: each k step is tile_m
 * broadcasts of the data and tile_n/lanes contiguous weight vector loads feeding tile_m * tile_n/lanes
 * independent FMAs. With one row (M = 1, a matrix-vector product, memory-bound on the weight) the tile takes
 * several blocks so that enough independent FMA chains cover the FMA latency, and the weight is streamed
 * once, in order, split between the threads by column tiles. The store of the last column tile is guarded
 * when N is not a multiple of bn; the accumulator tile itself always covers whole blocks. */

typedef struct DensePacked {
  int64_t m, n, k, nb, bn;
  int64_t mp;                    /* rows of the accumulator: m, or m padded (see padded_rows) */
  int rank;                      /* rank of data and of the output */
  int64_t rows[MLC_MAX_DIMS];    /* the leading data axes (rank - 1 of them) */
  TeTensor *data, *weight, *acc;
} DensePacked;

/* The accumulator's rows. The register tile's row count must divide them; a row count with no divisor of 4
 * or 6 (a ViT's 197 tokens is prime) would leave one-row tiles, one broadcast feeding a few FMAs per weight
 * load (9-20 GFLOP/s), so it is rounded up to a multiple of 4: the extra rows read the last data row and are
 * never stored (the output's row tiles are guarded). Short products keep their rows: the padding would be a
 * large share of them. */
static int64_t padded_rows(int64_t m) {
  if (m < 32 || m % 4 == 0 || m % 6 == 0) return m;
  return (m + 3) / 4 * 4;
}

static mlc_status dense_packed_of(const Node *n, DensePacked *p, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *w = &n->inputs[1]->type;
  memset(p, 0, sizeof *p);
  if (x->dtype != MLC_F32 || w->dtype != MLC_F32)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.dense_packed supports float32 only");
  if (x->ndim < 1 || w->ndim != 3)
    return diag_set(d, MLC_ERR_INVALID, "nn.dense_packed expects data of rank >= 1 and a rank-3 weight, got %d and %d",
                    x->ndim, w->ndim);
  p->rank = x->ndim;
  p->k = x->dims[x->ndim - 1];
  p->nb = w->dims[0];
  p->bn = w->dims[2];
  p->n = ir_attr_int(n, "units", p->nb * p->bn);
  if (w->dims[1] != p->k)
    return diag_set(d, MLC_ERR_INVALID, "nn.dense_packed: weight has K = %lld, data %lld", (long long)w->dims[1],
                    (long long)p->k);
  if (p->bn < 1 || p->n < 1 || p->n > p->nb * p->bn || p->n <= (p->nb - 1) * p->bn)
    return diag_set(d, MLC_ERR_INVALID, "nn.dense_packed: units %lld does not fit %lld blocks of %lld",
                    (long long)p->n, (long long)p->nb, (long long)p->bn);
  p->m = 1;
  for (int i = 0; i < x->ndim - 1; i++) {
    p->rows[i] = x->dims[i];
    p->m *= x->dims[i];
  }
  p->mp = padded_rows(p->m);
  return MLC_OK;
}

static mlc_status dense_packed_infer(Node *n, Diag *d) {
  DensePacked p;
  mlc_status st = dense_packed_of(n, &p, d);
  if (st) return st;
  TensorType o = n->inputs[0]->type;
  o.dims[o.ndim - 1] = p.n;
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* data index of fused row m: row axis i is (m / stride_i) % extent_i, unit axes 0 */
static void data_index(TeCtx *c, const DensePacked *p, Expr *m, Expr *k, Expr **di) {
  Arena *a = c->arena;
  int nr = p->rank - 1;
  int64_t stride = 1;
  for (int i = nr - 1; i >= 0; i--) {
    if (p->rows[i] == 1) {
      di[i] = tir_idx(a, 0);
      continue;
    }
    Expr *e = stride == 1 ? m : tir_bin(a, E_FLOORDIV, m, tir_idx(a, stride));
    if (stride * p->rows[i] < p->m) e = tir_bin(a, E_FLOORMOD, e, tir_idx(a, p->rows[i]));
    di[i] = e;
    stride *= p->rows[i];
  }
  di[nr] = k;
}

static Expr *dense_packed_body(TeCtx *c, Expr **idx, void *user) {
  DensePacked *p = user;
  Arena *a = c->arena;
  IterVar *rk = te_reduce_axis(c, "rk", p->k);
  Expr *k = tir_varref(a, rk->var);
  Expr *di[MLC_MAX_DIMS], *wi[3] = {idx[1], k, idx[2]};
  Expr *m = p->mp > p->m ? tir_bin(a, E_MIN, idx[0], tir_idx(a, p->m - 1)) : idx[0];
  data_index(c, p, m, k, di);
  Expr *prod = tir_mul(a, te_read(c, p->data, p->rank, di), te_read(c, p->weight, 3, wi));
  return te_reduce(c, RED_SUM, prod, 1, &rk, NULL, NULL);
}

static Expr *dense_unpack_body(TeCtx *c, Expr **idx, void *user) {
  DensePacked *p = user;
  Arena *a = c->arena;
  Expr *m = NULL;
  for (int i = 0; i < p->rank - 1; i++) {
    if (p->rows[i] == 1) continue;
    m = m ? tir_add(a, tir_mul(a, m, tir_idx(a, p->rows[i])), idx[i]) : idx[i];
  }
  Expr *n = idx[p->rank - 1], *b = tir_idx(a, p->bn);
  Expr *ri[3] = {m ? m : tir_idx(a, 0), tir_bin(a, E_FLOORDIV, n, b), tir_bin(a, E_FLOORMOD, n, b)};
  return te_read(c, p->acc, 3, ri);
}

static mlc_status dense_packed_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  DensePacked *p = arena_alloc(c->arena, sizeof *p);
  mlc_status st = dense_packed_of(n, p, d);
  if (st) return st;
  p->data = ins[0];
  p->weight = ins[1];
  int64_t as[3] = {p->mp, p->nb, p->bn};
  p->acc = te_compute(c, "dense_packed", "dense_packed", MLC_F32, 3, as, dense_packed_body, p);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "dense_unpack", "dense_packed_unpack", MLC_F32, o->ndim, o->dims, dense_unpack_body, p);
  return MLC_OK;
}

const OpDef topi_ops_dense_x86[] = {
    /* name              pattern                   in min/max  outs  relation            compute */
    {"nn.dense_packed", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, dense_packed_infer, dense_packed_compute, DYN_DENSE},
    {NULL},
};

/* ---------------------------------------------------------------- dense_packed template */

static bool packed_anchor_ok(const TeOp *a) {
  return a->kind == TE_COMPUTE && a->naxes == 3 && a->nreduce == 1;
}

void topi_dense_packed_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  if (!packed_anchor_ok(a)) return;
  int64_t m = a->axes[0]->extent, nb = a->axes[1]->extent, bn = a->axes[2]->extent, k = a->reduce_axes[0]->extent;
  int lanes = topi_vector_lanes(t, MLC_F32);
  int64_t vb = (bn + lanes - 1) / lanes, maxacc = max_accumulators(t);
  TopiKnob *km = topi_knob_add(s, "tile_m");
  for (int64_t f = 1; f <= 16 && f <= m; f++)
    if (m % f == 0) topi_knob_choice(km, f);
  TopiKnob *kn = topi_knob_add(s, "tile_n"); /* columns: a whole number of blocks dividing NB */
  for (int64_t f = 1; f <= nb && f * vb <= 2 * maxacc; f++)
    if (nb % f == 0) topi_knob_choice(kn, f * bn);
  TopiKnob *kk = topi_knob_add(s, "tile_k");
  static const int64_t kc[] = {64, 128, 256, 512};
  topi_knob_choice(kk, k);
  for (int i = 0; i < 4; i++)
    if (kc[i] < k && k % kc[i] == 0) topi_knob_choice(kk, kc[i]);
  TopiKnob *ko = topi_knob_add(s, "n_outer");
  topi_knob_choice(ko, 0);
  topi_knob_choice(ko, 1);
}

static int64_t panel_blocks(const Target *t, int64_t k, int64_t bn, int64_t vb);

/* The register tile tm x (blocks * bn): the most FMAs per load (tm broadcasts + blocks * vb weight vectors
 * feed tm * blocks * vb FMAs) within the accumulator budget; ties go to more accumulators (independent FMA
 * chains: 2 pipes x 4 cycles of latency want 8). tm divides m, blocks divides NB: no partial tiles.
 * A weight vector counts twice where the tile's weight panel (K x blocks x bn floats) outgrows half of L1:
 * every row tile then streams it from L2, so more rows and fewer blocks halve that traffic. ViT-B/16's
 * 197-row layers on Sapphire Rapids (AVX-512, one thread): 768 -> 3072 at 4 x 6 vectors 6.62 ms, 8 x 3
 * 6.10; 3072 -> 768 6.69 -> 6.02 (2 threads 3.58 -> 3.01). */
static void best_tile(const Target *t, int64_t m, int64_t nb, int64_t k, int64_t bn, int64_t *tm,
                      int64_t *blocks) {
  int lanes = topi_vector_lanes(t, MLC_F32);
  int64_t vb = (bn + lanes - 1) / lanes, maxacc = max_accumulators(t), maxbl = panel_blocks(t, k, bn, vb);
  int64_t l1 = t && t->l1_bytes > 0 ? t->l1_bytes : 32 * 1024;
  double best = -1;
  *tm = *blocks = 1;
  for (int64_t bl = 1; bl <= nb && bl <= maxbl; bl++) {
    if (nb % bl || bl * vb > maxacc) continue;
    double wcost = k * bl * bn * (int64_t)sizeof(float) > l1 / 2 ? 2.0 : 1.0;
    for (int64_t r = 1; r <= m && r * bl * vb <= maxacc; r++) {
      if (m % r) continue;
      double acc = (double)(r * bl * vb), score = acc / ((double)r + wcost * (double)(bl * vb));
      if (score > best + 1e-9 || (score > best - 1e-9 && acc > (double)(*tm * *blocks * vb))) {
        best = score;
        *tm = r;
        *blocks = bl;
      }
    }
  }
}

/* The most column blocks whose weight panel (K x blocks x bn floats, which every row tile of the column tile
 * reads whole) fits half of L1, where a block spans several vectors (AVX2, NEON: a tile's weight loads per FMA
 * are 2-3x AVX-512's): a panel streamed from L2 for each row tile bounds the tile by L2 bandwidth. BERT's
 * 256 -> 768 projections (128 rows) took 2 rows x 3 blocks, a 48 KiB panel: 1.38 ms, 36 GFLOP/s on Zen 3;
 * with 4 rows x 1 block (16 KiB) 0.61 ms; its 1024 -> 256 layers 1.2 -> 0.85 ms, the model's kernels 16.7 ->
 * 12.3 ms (one thread, min of 4 alternating profiles). Unlimited with one vector per block (AVX-512). */
static int64_t panel_blocks(const Target *t, int64_t k, int64_t bn, int64_t vb) {
  if (vb < 2) return INT64_MAX;
  int64_t l1 = t && t->l1_bytes > 0 ? t->l1_bytes : 32 * 1024, per = k * bn * (int64_t)sizeof(float);
  return per > 0 && l1 / 2 / per > 1 ? l1 / 2 / per : 1;
}

void topi_dense_packed_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (!packed_anchor_ok(a)) return;
  int64_t m = a->axes[0]->extent, nb = a->axes[1]->extent, bn = a->axes[2]->extent, k = a->reduce_axes[0]->extent;
  int lanes = topi_vector_lanes(t, MLC_F32);
  int64_t vb = (bn + lanes - 1) / lanes, tm = 1, blocks = 1;
  best_tile(t, m, nb, k, bn, &tm, &blocks);
  /* a matrix-vector product is bound by the weight stream, not by the FMAs: each block of the tile is a
   * separate sequential stream through memory (K * bn floats apart), and many concurrent streams defeat
   * the hardware prefetcher (resnet18's fc with 21 blocks: 2 GFLOP/s). About 4 accumulators cover enough of
   * the FMA latency at that rate; more tiles also share out better between threads. */
  if (m == 1) {
    blocks = 1;
    for (int64_t bl = 1; bl <= nb && bl * vb <= 4; bl++)
      if (nb % bl == 0) blocks = bl;
  }
  topi_cfg_set(cfg, "tile_m", tm);
  topi_cfg_set(cfg, "tile_n", blocks * bn);
  topi_cfg_set(cfg, "tile_k", k);
  /* column tiles outermost when the weight is the larger operand: one K x tile_n weight panel stays in cache
   * while the rows stream past it (the data, M x K, is re-read from L2 instead of the weight from memory) */
  topi_cfg_set(cfg, "n_outer", nb * bn >= m);
}

/* the accumulator stage computed whole at the root (an epilogue that does not tile like the output) */
static void schedule_packed_root(TeCtx *c, TeStage *st, TeOp *a, int64_t tk) {
  IterVar *ko = NULL, *ki = a->reduce_axes[0];
  if (tk < a->reduce_axes[0]->extent) topi_split(st, a->reduce_axes[0], tk, &ko, &ki);
  IterVar *order[5];
  int k = 0;
  order[k++] = a->axes[0];
  order[k++] = a->axes[1];
  if (ko) order[k++] = ko;
  order[k++] = ki;
  order[k++] = a->axes[2];
  te_reorder(st, k, order);
  IterVar *f = te_fuse(st, a->axes[0], a->axes[1]);
  int64_t work = a->axes[0]->extent * a->axes[1]->extent * a->axes[2]->extent * a->reduce_axes[0]->extent;
  if (work >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(st, f);
  te_vectorize(st, a->axes[2]);
}

void topi_dense_packed_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *as = te_stage(s, a->outputs[0]);
  if (!as || !packed_anchor_ok(a)) return;
  int64_t m = a->axes[0]->extent, nb = a->axes[1]->extent, bn = a->axes[2]->extent, k = a->reduce_axes[0]->extent;
  int64_t tm = topi_config_get(cfg, "tile_m", 1), tn = topi_config_get(cfg, "tile_n", bn);
  int64_t tk = topi_config_get(cfg, "tile_k", k);
  bool n_outer = topi_config_get(cfg, "n_outer", 0);
  int64_t blocks = tn / bn;
  if (tm < 1 || m % tm) tm = 1;
  if (blocks < 1 || tn % bn || nb % blocks) blocks = 1;
  if (tk < 1 || tk > k) tk = k;
  TeStage *os = out ? te_stage(s, out) : NULL;
  /* the output tiles the accumulator when it has the unpacked shape: rows.., N with N <= NB * bn */
  int rank = out ? out->ndim : 0;
  bool tiled = os && os->op != a && os->op->kind == TE_COMPUTE && os->op->nreduce == 0 &&
               os->attach == ATTACH_ROOT && os->nleaf == rank && rank >= 1;
  int64_t orows = 1;
  for (int i = 0; tiled && i < rank - 1; i++) orows *= out->shape[i];
  /* the accumulator may have a few padding rows past the output's (padded_rows) */
  tiled = tiled && orows <= m && padded_rows(orows) == m && out->shape[rank - 1] <= nb * bn &&
          out->shape[rank - 1] > (nb - 1) * bn;
  if (!tiled) {
    schedule_packed_root(c, as, a, tk);
    if (os && os->op != a) topi_schedule_stage_generic(c, os);
    return;
  }
  /* the output: rows.., m.o, m.i | n.o, nb.i, b. The register tile spans the last row axis, fused with the one
   * before when both are longer than 1 (a [1, H, W, C] NHWC activation tiles its H x W rows as one: the last
   * axis alone, 7 or 14, would leave 1- or 2-row tiles). The accumulator row the unpack reads, h * W + w, is
   * then the fused var itself, so its region per tile is tight; the row axes before are outer loops. */
  TeOp *o = os->op;
  IterVar *no, *b, *noo, *noi, *mo = NULL, *mi = NULL, *rowv = NULL;
  IterVar *order[MLC_MAX_DIMS + 8];
  int q = 0, last = rank - 2; /* the last row axis longer than 1; the tile's rows start at first */
  while (last >= 0 && out->shape[last] == 1) last--;
  int first = last < 0 ? rank - 1 : last >= 1 && out->shape[last - 1] > 1 ? last - 1 : last;
  for (int i = 0; i < first; i++) order[q++] = o->axes[i];
  if (last >= 0) {
    rowv = o->axes[first];
    for (int i = first + 1; i < rank - 1; i++) rowv = te_fuse(os, rowv, o->axes[i]);
  }
  /* rows outside the tile: its row count must divide the tiled rows */
  if (rowv && rowv->extent < orows && rowv->extent % tm) best_tile(c->target, rowv->extent, nb, k, bn, &tm, &blocks);
  topi_split(os, o->axes[rank - 1], bn, &no, &b);
  topi_split(os, no, blocks, &noo, &noi);
  if (rowv) topi_split(os, rowv, tm, &mo, &mi);
  if (mo && n_outer) order[q++] = noo;
  if (mo) order[q++] = mo;
  if (!mo || !n_outer) order[q++] = noo;
  int nouter = q;
  if (mi) order[q++] = mi;
  order[q++] = noi;
  order[q++] = b;
  te_reorder(os, q, order);
  IterVar *f = topi_fuse_range(os, order, nouter);
  int64_t work = m * nb * bn * k;
  if (work >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(os, f);
  if (mi && mi->extent > 1) te_unroll(os, mi);
  if (noi->extent > 1) te_unroll(os, noi);
  te_vectorize(os, b);
  /* the accumulator tile at the fused tile loop: k.o, k.i, m, nb, b */
  IterVar *ko = NULL, *ki = a->reduce_axes[0];
  if (tk < k) topi_split(as, a->reduce_axes[0], tk, &ko, &ki);
  IterVar *aorder[6];
  int r = 0;
  if (ko) aorder[r++] = ko;
  aorder[r++] = ki;
  aorder[r++] = a->axes[0];
  aorder[r++] = a->axes[1];
  aorder[r++] = a->axes[2];
  te_reorder(as, r, aorder);
  if (tm > 1) te_unroll(as, a->axes[0]);
  if (blocks > 1) te_unroll(as, a->axes[1]);
  te_vectorize(as, a->axes[2]);
  te_compute_at(as, os, f);
}
