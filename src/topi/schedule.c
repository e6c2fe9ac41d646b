/* Default schedules of fused groups and the x86 schedule templates (after TVM's topi/x86: conv2d.py,
 * dense.py, injective.py, pooling.py, softmax.py with cfg.define_split / fallback configs).
 *
 * topi_schedule_group: (1) every compute stage without reduction that is not a group output and has no
 * template is inlined into its consumers; (2) the anchor is the stage closest to the outputs whose tag has a
 * template; it is scheduled by the template with the configuration given (knobs missing from it, or all of
 * them when it is NULL, come from the template's fallback, computed from the Target and the workload);
 * (3) every other root stage gets the generic schedule: injective stages fuse their outer axes into one
 * parallel loop and vectorize the innermost axis split by the vector lanes (only where the lanes divide it,
 * so vector loops never need a guard); reductions fuse their spatial axes into a parallel loop and keep
 * the reduce axes inner.
 *
 * Templates (tags set by the computes in nn.c):
 *   conv{1,2,3}d NCHW  knobs tile_oc, tile_ow, tile_ic, unroll_kw:
 *     n, oc.o, spatial.., ow.o, ic.o, k.., ic.i, oc.i (unrolled), ow.i (vectorized); parallel over the
 *     fused n x oc.o (x the next spatial axis while that has fewer iterations than twice the cores); a
 *     padded conv's zero-padded data (tag conv_pad) is computed first, at the top level, as an injective stage
 *   dense / batch_matmul: dense_x86.c (register-blocked GEMM, knobs tile_m, tile_n, tile_k, par_n)
 *   pool: a padded input computed per channel plane, a vector accumulator of tile_ow output columns per
 *     tile with the window taps unrolled around it (see the pooling section)
 *   softmax: the row form (nn.c): everything computed per row at the output's parallel row loop, the partial
 *     reductions and the output vectorized; otherwise the output as an injective stage and its max / sum as
 *     generic reductions.
 * Split factors need not divide: the lowering guards the last outer iteration. */
#include <string.h>
#include "topi/topi.h"

#define PARALLEL_MIN_WORK 16384 /* below this many (output x reduce) iterations, threads cost more than they save */

/* ---------------------------------------------------------------- config helpers */

int64_t topi_config_get(const TopiConfig *c, const char *name, int64_t dflt) {
  if (!c) return dflt;
  for (int i = 0; i < c->nknobs; i++)
    if (c->names[i] && strcmp(c->names[i], name) == 0) return c->values[i];
  return dflt;
}

int64_t topi_fit_blocks(int64_t nblocks, int64_t want, int64_t cols) {
  while (want > 1 && (nblocks % want || want * cols > TOPI_BLOCKS_MAX_ACC)) want /= 2;
  return want < 1 ? 1 : want;
}

void topi_cfg_set(TopiConfig *c, const char *name, int64_t v) {
  for (int i = 0; i < c->nknobs; i++)
    if (strcmp(c->names[i], name) == 0) {
      c->values[i] = v;
      return;
    }
  if (c->nknobs < TOPI_MAX_KNOBS) {
    c->names[c->nknobs] = name;
    c->values[c->nknobs++] = v;
  }
}

TopiKnob *topi_knob_add(TopiConfigSpace *s, const char *name) {
  if (s->nknobs >= TOPI_MAX_KNOBS) return NULL;
  TopiKnob *k = &s->knobs[s->nknobs++];
  memset(k, 0, sizeof *k);
  k->name = name;
  return k;
}

void topi_knob_choice(TopiKnob *k, int64_t v) {
  if (!k || k->nchoices >= TOPI_MAX_CHOICES) return;
  for (int i = 0; i < k->nchoices; i++)
    if (k->choices[i] == v) return;
  k->choices[k->nchoices++] = v;
}

/* a split knob: the divisors of extent up to max (always including 1), plus the extra candidates given */
static void knob_split(TopiConfigSpace *s, const char *name, int64_t extent, int64_t max, int nextra,
                       const int64_t *extra) {
  TopiKnob *k = topi_knob_add(s, name);
  if (extent < 1) extent = 1;
  for (int64_t f = 1; f <= extent && f <= max; f++)
    if (extent % f == 0) topi_knob_choice(k, f);
  for (int i = 0; i < nextra; i++)
    if (extra[i] >= 1 && extra[i] <= extent) topi_knob_choice(k, extra[i]);
}

static void knob_onoff(TopiConfigSpace *s, const char *name) {
  TopiKnob *k = topi_knob_add(s, name);
  topi_knob_choice(k, 0);
  topi_knob_choice(k, 1);
}

int topi_vector_lanes(const Target *t, mlc_dtype dt) {
  int vb = t && t->vector_bytes > 0 ? t->vector_bytes : 16;
  int es = mlc_dtype_size(dt);
  if (dt == MLC_BOOL || es <= 0) return 1;
  int l = vb / es;
  return l < 1 ? 1 : l;
}

int topi_vector_regs(const Target *t) { return t && t->vector_bytes >= 64 ? 32 : 16; }

int topi_num_cores(const Target *t) { return t && t->num_cores > 0 ? t->num_cores : 1; }

/* the largest divisor of n that is <= max */
int64_t topi_largest_divisor(int64_t n, int64_t max) {
  if (n < 1) return 1;
  for (int64_t f = max < n ? max : n; f > 1; f--)
    if (n % f == 0) return f;
  return 1;
}

TeTensor *topi_product_operand(const TeOp *a, int i) {
  const Expr *src = a && a->kind == TE_COMPUTE && a->body && a->body->kind == E_REDUCE ? a->body->reduce.source : NULL;
  if (!src || src->kind != E_MUL || (i != 0 && i != 1)) return NULL;
  const Expr *x = i ? src->op.b : src->op.a;
  return x->kind == E_TENSOR ? x->tensor.tensor : NULL;
}

int64_t topi_row_groups(int64_t rows) { return rows % 2 == 0 && rows > 2 ? 2 : 1; }

/* the preferred vector tile of an axis of extent n: 2 or 1 vectors when they divide n, else the largest
 * divisor up to one vector (so the vector loop needs no guard) */
static int64_t vector_tile(int64_t n, int lanes, bool allow_double) {
  if (allow_double && n % (2 * lanes) == 0) return 2 * lanes;
  if (n % lanes == 0) return lanes;
  return topi_largest_divisor(n, lanes);
}

static int64_t first_divisor_of(int64_t n, int cnt, const int64_t *cands) {
  for (int i = 0; i < cnt; i++)
    if (n % cands[i] == 0) return cands[i];
  return 1;
}

static int64_t op_numel(const TeOp *op) {
  int64_t n = 1;
  for (int i = 0; i < op->naxes; i++) n *= op->axes[i]->extent;
  return n;
}

static int64_t op_work(const TeOp *op) {
  int64_t n = op_numel(op);
  for (int i = 0; i < op->nreduce; i++) n *= op->reduce_axes[i]->extent;
  return n;
}

/* fuses the adjacent leaves ivs[0..n) of st into one and returns it (ivs must not alias st->leaf) */
IterVar *topi_fuse_range(TeStage *st, IterVar **ivs, int n) {
  IterVar *f = ivs[0];
  for (int i = 1; i < n; i++) f = te_fuse(st, f, ivs[i]);
  return f;
}

void topi_split(TeStage *st, IterVar *iv, int64_t factor, IterVar **o, IterVar **i) {
  if (factor < 1) factor = 1;
  if (factor > iv->extent) factor = iv->extent;
  te_split(st, iv, factor, o, i);
}

/* ---------------------------------------------------------------- generic schedules */

/* Injective: innermost axis split by the lanes and vectorized when they divide it, else vectorized whole
 * when it is at most four vectors long (odd rows of 7, 13 or 55 columns: codegen splits an odd-width vector
 * into whole and partial ones, and LLVM no longer vectorizes loops on its own), else split by its largest
 * divisor up to four vectors when that fills at least one vector; the leading other axes fused into one
 * parallel loop until it has 16 steps per core (with the innermost's outer part when there is little else to
 * share out), the rest serial inside it. */
static void schedule_injective(TeCtx *c, TeStage *st) {
  TeOp *op = st->op;
  int nd = op->naxes;
  if (op->kind != TE_COMPUTE || nd == 0 || st->nleaf != nd) return;
  int lanes = topi_vector_lanes(c->target, op->outputs[0]->dtype);
  int64_t numel = op_numel(op);
  IterVar *ivs[MLC_MAX_DIMS + 1];
  memcpy(ivs, st->leaf, sizeof(IterVar *) * (size_t)nd);
  if (nd == 5 && ivs[4]->extent >= 4 && ivs[4]->extent <= 64) {
    /* an NCHWc tensor [N, C/b, H, W, b]: rows outside the channel blocks, so each thread's contiguous chunk of
     * the parallel loop is a band of rows, which the convs before and after split the same way (see
     * topi_row_groups); DenseNet-121's concatenations (with the next layer's BN and ReLU) on two
     * threads ran 2x slower than on one, reading half their channels from the other core */
    IterVar *t = ivs[1];
    ivs[1] = ivs[2];
    ivs[2] = t;
    te_reorder(st, nd, ivs);
  }
  IterVar *last = ivs[nd - 1], *vec = NULL, *lo = NULL;
  int64_t wide = lanes > 1 && last->extent > 4 * lanes ? topi_largest_divisor(last->extent, 4 * lanes) : 0;
  if (lanes > 1 && last->extent >= lanes && last->extent % lanes == 0) {
    topi_split(st, last, lanes, &lo, &vec);
  } else if (lanes > 1 && last->extent >= 4 && last->extent <= 4 * lanes) {
    vec = last;
  } else if (wide >= lanes) {
    topi_split(st, last, wide, &lo, &vec);
  } else if (nd == 1 && numel >= PARALLEL_MIN_WORK) {
    topi_split(st, last, 256, &lo, NULL); /* a 1-D tensor: chunks of 256 to share out */
    last = NULL;
  } else {
    lo = NULL;
  }
  int nouter = nd - 1, cores = topi_num_cores(c->target);
  int64_t outer_ext = 1;
  for (int i = 0; i < nouter; i++) outer_ext *= ivs[i]->extent;
  if (lo && (nouter == 0 || outer_ext < 2 * cores)) ivs[nouter++] = lo;
  /* the parallel loop: the leading outer axes until they give 16 chunks per core; the rest stay serial
   * loops inside it, so the index math of the fused axes is done once per row, not once per vector (an
   * NCHWc [N, C/b, H, W, b] tensor: parallel over N x C/b x H, then W, then the b lanes) */
  int nfuse = 0;
  for (int64_t ext = 1; nfuse < nouter && ext < 16 * cores;) ext *= ivs[nfuse++]->extent;
  if (nfuse > 0) {
    IterVar *f = topi_fuse_range(st, ivs, nfuse);
    if (numel >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(st, f);
  }
  if (vec) te_vectorize(st, vec);
}

/* The per-lane partials of a reduction's row form (tag "reduce_partial", from reduce.c and norm.c: axes
 * rows.., l; reduce axes .., j reading element j * L + l of a row): rows.. fused into the parallel loop,
 * then the reduce axes, then l vectorized, so each row is walked in contiguous vectors into one vector
 * accumulator. */
static void schedule_reduce_partial(TeCtx *c, TeStage *st) {
  TeOp *op = st->op;
  int nd = op->naxes;
  IterVar *order[2 * MLC_MAX_DIMS + 1];
  int k = 0;
  for (int i = 0; i < nd - 1; i++) order[k++] = op->axes[i];
  for (int i = 0; i < op->nreduce; i++) order[k++] = op->reduce_axes[i];
  order[k++] = op->axes[nd - 1];
  te_reorder(st, k, order);
  if (nd > 1) {
    IterVar *f = topi_fuse_range(st, order, nd - 1);
    if (op_work(op) >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(st, f);
  }
  te_vectorize(st, op->axes[nd - 1]);
}

/* Reduction: spatial axes fused into one parallel loop, reduce axes inner and serial. */
static void schedule_reduce(TeCtx *c, TeStage *st) {
  TeOp *op = st->op;
  if (op->kind != TE_COMPUTE || op->naxes == 0 || st->nleaf != op->naxes + op->nreduce) return;
  if (op->tag && !strcmp(op->tag, "reduce_partial")) {
    schedule_reduce_partial(c, st);
    return;
  }
  IterVar *ivs[MLC_MAX_DIMS];
  memcpy(ivs, st->leaf, sizeof(IterVar *) * (size_t)op->naxes);
  IterVar *f = topi_fuse_range(st, ivs, op->naxes);
  if (op_work(op) >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(st, f);
}

static void schedule_stage(TeCtx *c, TeStage *st) { topi_schedule_stage_generic(c, st); }

void topi_schedule_stage_generic(TeCtx *c, TeStage *st) {
  if (st->op->kind != TE_COMPUTE || st->attach != ATTACH_ROOT) return;
  if (st->op->nreduce > 0)
    schedule_reduce(c, st);
  else
    schedule_injective(c, st);
}

/* ---------------------------------------------------------------- conv (NCHW, 1-D to 3-D) */

static void conv_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  int lanes = topi_vector_lanes(t, a->outputs[0]->dtype);
  int64_t oc = a->axes[1]->extent, ow = a->axes[a->naxes - 1]->extent, ic = a->reduce_axes[0]->extent;
  int64_t vx[2] = {lanes, 2 * lanes};
  knob_split(s, "tile_oc", oc, 64, 0, NULL);
  knob_split(s, "tile_ow", ow, 4 * lanes, 2, vx);
  knob_split(s, "tile_ic", ic, ic, 0, NULL);
  knob_onoff(s, "unroll_kw");
}

static void conv_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  int lanes = topi_vector_lanes(t, a->outputs[0]->dtype);
  int64_t oc = a->axes[1]->extent, ow = a->axes[a->naxes - 1]->extent, ic = a->reduce_axes[0]->extent;
  int64_t kw = a->nreduce > 1 ? a->reduce_axes[a->nreduce - 1]->extent : 1;
  static const int64_t oc_cands[] = {8, 4, 2};
  int64_t tow = vector_tile(ow, lanes, false);
  topi_cfg_set(cfg, "tile_oc", first_divisor_of(oc, 3, oc_cands));
  topi_cfg_set(cfg, "tile_ow", tow);
  /* split the input channels so that one block of input rows stays in L1 */
  int64_t tic = ic;
  if (ic > 64) tic = topi_largest_divisor(ic, 64);
  topi_cfg_set(cfg, "tile_ic", tic);
  topi_cfg_set(cfg, "unroll_kw", kw <= 7);
}

static void conv_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *st = te_stage(s, a->outputs[0]);
  if (!st || st->nleaf != a->naxes + a->nreduce || a->naxes < 3 || a->nreduce != a->naxes - 1) {
    if (st) schedule_stage(c, st);
    return;
  }
  int nsp = a->naxes - 2;
  IterVar *n = a->axes[0], *oc = a->axes[1], *ow = a->axes[a->naxes - 1], *ic = a->reduce_axes[0];
  IterVar *oco, *oci, *owo, *owi, *ico, *ici;
  topi_split(st, oc, topi_config_get(cfg, "tile_oc", 1), &oco, &oci);
  topi_split(st, ow, topi_config_get(cfg, "tile_ow", 1), &owo, &owi);
  topi_split(st, ic, topi_config_get(cfg, "tile_ic", ic->extent), &ico, &ici);
  IterVar *order[2 * MLC_MAX_DIMS + 8];
  int k = 0;
  order[k++] = n;
  order[k++] = oco;
  for (int i = 0; i < nsp - 1; i++) order[k++] = a->axes[2 + i];
  order[k++] = owo;
  order[k++] = ico;
  for (int i = 1; i < a->nreduce; i++) order[k++] = a->reduce_axes[i];
  order[k++] = ici;
  order[k++] = oci;
  order[k++] = owi;
  te_reorder(st, k, order);
  /* parallel: n x oc.o, widened by the outer spatial axes while there is too little to share out */
  IterVar *par[MLC_MAX_DIMS + 2];
  int np = 0;
  par[np++] = n;
  par[np++] = oco;
  int64_t ext = n->extent * oco->extent;
  for (int i = 0; i < nsp - 1 && ext < 2 * topi_num_cores(c->target); i++) {
    par[np++] = a->axes[2 + i];
    ext *= a->axes[2 + i]->extent;
  }
  IterVar *f = topi_fuse_range(st, par, np);
  if (op_work(a) >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(st, f);
  if (oci->extent > 1) te_unroll(st, oci);
  if (topi_config_get(cfg, "unroll_kw", 0) && a->nreduce > 1 && a->reduce_axes[a->nreduce - 1]->extent > 1)
    te_unroll(st, a->reduce_axes[a->nreduce - 1]);
  if (owi->extent > 1) te_vectorize(st, owi);
  if (out && out->op != a) {
    TeStage *os = te_stage(s, out);
    if (os) schedule_stage(c, os);
  }
  /* the zero-padded data (nn.c's conv_pad_stage): its own parallel, vectorized nest before the convolution */
  for (int i = 0; i < s->nstages; i++) {
    TeStage *ps = s->stages[i];
    if (ps->op->kind != TE_COMPUTE || !ps->op->tag || strcmp(ps->op->tag, "conv_pad")) continue;
    ps->attach = ATTACH_ROOT;
    schedule_stage(c, ps);
  }
}

/* ---------------------------------------------------------------- pooling */

/* Window pools (tag "pool" from nn.c's pool_compute, axes n, c, spatial.., ow; one reduce axis per spatial
 * dim) read the padded input pool_pad (tag "pool_pad", when there is padding or a last stride > 1), which
 * makes every tap an unconditional load contiguous along ow. Schedule: the output (the epilogue, or the
 * pool's own copy after cache_write) is tiled n, c, spatial.., ow.o | ow.i (vectorized), with n x c (x the
 * outer spatial dims while that is too little to share out) fused into the parallel loop; pool_pad is
 * computed inside that loop (one channel plane or row band at a time, so it stays in cache, and each
 * thread pads its own part); the window reduction is a local accumulator of tile_ow columns computed at
 * ow.o, loops taps.. (unrolled) | ow (vectorized), so each tap is one vector load and one max/add per
 * vector of outputs. Global pools (output spatial extents 1) keep the generic reduction schedule.
 * Knobs: tile_ow (output columns per tile), unroll_taps. */

static bool pool_anchor_ok(const TeOp *a) {
  return a->kind == TE_COMPUTE && a->naxes >= 3 && a->nreduce == a->naxes - 2 && a->axes[a->naxes - 1]->extent > 1;
}

static int64_t pool_taps(const TeOp *a) {
  int64_t t = 1;
  for (int i = 0; i < a->nreduce; i++) t *= a->reduce_axes[i]->extent;
  return t;
}

/* the whole row when it fits four vectors; else the largest divisor up to four vectors, or one vector with
 * a guarded last tile when OW has no useful divisor */
static int64_t pool_default_tile(int64_t ow, int lanes) {
  if (ow <= 4 * lanes) return ow;
  int64_t t = topi_largest_divisor(ow, 4 * lanes);
  return t >= lanes ? t : lanes;
}

static void pool_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  if (!pool_anchor_ok(a)) return;
  int lanes = topi_vector_lanes(t, a->outputs[0]->dtype);
  int64_t ow = a->axes[a->naxes - 1]->extent, extra[2] = {lanes, pool_default_tile(ow, lanes)};
  knob_split(s, "tile_ow", ow, 4 * lanes, 2, extra);
  knob_onoff(s, "unroll_taps");
}

static void pool_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (!pool_anchor_ok(a)) return;
  int lanes = topi_vector_lanes(t, a->outputs[0]->dtype);
  topi_cfg_set(cfg, "tile_ow", pool_default_tile(a->axes[a->naxes - 1]->extent, lanes));
  topi_cfg_set(cfg, "unroll_taps", pool_taps(a) <= 32);
}

/* Whether the pool's result can be a local tile computed inside the epilogue's loop: the epilogue has the
 * pool's shape and no reduction, and the pool itself is not a group output. */
static bool pool_local_ok(TeSchedule *s, const TeOp *a, const TeTensor *out) {
  for (int i = 0; i < s->noutputs; i++)
    if (s->outputs[i]->op == a && out && out->op != a) return false;
  if (!out || out->op == a) return true;
  const TeOp *o = out->op;
  if (o->kind != TE_COMPUTE || o->nreduce != 0 || o->naxes != a->naxes) return false;
  for (int i = 0; i < a->naxes; i++)
    if (o->axes[i]->extent != a->axes[i]->extent) return false;
  return true;
}

/* Tiles os (axes n, c, spatial.., ow) as n, c, spatial.., ow.o, ow.i with the outer axes fused into the
 * parallel loop; returns that loop, *owo the ow.o leaf. When taps is set (os is the pool itself), the
 * reduce axes go between ow.o and ow.i. */
static IterVar *pool_tile_output(TeCtx *c, TeStage *os, int64_t tile, bool taps, int64_t work, IterVar **owo) {
  TeOp *o = os->op;
  int nd = o->naxes;
  IterVar *wo, *wi;
  topi_split(os, o->axes[nd - 1], tile, &wo, &wi);
  IterVar *order[2 * MLC_MAX_DIMS + 2];
  int k = 0;
  for (int i = 0; i < nd - 1; i++) order[k++] = o->axes[i];
  order[k++] = wo;
  for (int i = 0; taps && i < o->nreduce; i++) order[k++] = o->reduce_axes[i];
  order[k++] = wi;
  te_reorder(os, k, order);
  IterVar *par[MLC_MAX_DIMS];
  int np = 2;
  int64_t ext = o->axes[0]->extent * o->axes[1]->extent;
  par[0] = o->axes[0];
  par[1] = o->axes[1];
  while (np < nd - 1 && ext < 2 * topi_num_cores(c->target)) {
    ext *= o->axes[np]->extent;
    par[np] = o->axes[np];
    np++;
  }
  IterVar *f = topi_fuse_range(os, par, np);
  if (work >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(os, f);
  if (wi->extent > 1) te_vectorize(os, wi);
  *owo = wo;
  return f;
}

/* An NCHWc pool (axes n, c/b, oh, ow, lane; reduce kh, kw; nn.c's data_block): the output tiled n, oh, c/b,
 * ow.o | ow.i (unrolled), lane (vectorized) with n x oh x c/b fused into the parallel loop (rows outside the
 * channel blocks, as the convs around it: topi_row_groups) and pool_pad's rows for that step computed there;
 * the accumulator of ow.i vectors computed at ow.o, taps unrolled around the unrolled columns, so each tap is
 * one contiguous vector load and one max/add per output vector. */
static bool pool_blocked_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, TeStage *ps) {
  TeStage *st = te_stage(s, a->outputs[0]);
  if (a->naxes != 5 || a->nreduce != 2 || !st || st->nleaf != 7 || !pool_local_ok(s, a, out)) return false;
  /* columns per tile: one accumulator of the block each (b / lanes registers), the rest for the loads */
  int64_t regs = topi_vector_regs(c->target), lanes = topi_vector_lanes(c->target, MLC_F32);
  int64_t vecs = (a->axes[4]->extent + lanes - 1) / lanes, most = (regs - 2 * vecs - 2) / vecs;
  int64_t tile = topi_largest_divisor(a->axes[3]->extent, most < 1 ? 1 : most);
  bool epi = out && out->op != a;
  TeTensor *P = a->outputs[0], *L = te_cache_write(s, P);
  if (L == P) return false;
  if (epi) te_compute_inline(te_stage(s, P));
  TeStage *os = te_stage(s, epi ? out : P), *ls = te_stage(s, L);
  TeOp *o = os->op;
  IterVar *wo, *wi;
  topi_split(os, o->axes[3], tile, &wo, &wi);
  IterVar *order[6] = {o->axes[0], o->axes[2], o->axes[1], wo, wi, o->axes[4]};
  te_reorder(os, 6, order);
  IterVar *f = topi_fuse_range(os, order, 3);
  if (op_work(a) >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(os, f);
  if (wi->extent > 1) te_unroll(os, wi);
  if (o->axes[4]->extent > 1) te_vectorize(os, o->axes[4]);
  TeOp *lo = ls->op;
  IterVar *lorder[7] = {lo->axes[0], lo->axes[1], lo->axes[2], lo->reduce_axes[0], lo->reduce_axes[1],
                        lo->axes[3], lo->axes[4]};
  te_reorder(ls, 7, lorder);
  for (int i = 0; i < 2; i++)
    if (lo->reduce_axes[i]->extent > 1) te_unroll(ls, lo->reduce_axes[i]);
  if (tile > 1) te_unroll(ls, lo->axes[3]);
  if (lo->axes[4]->extent > 1) te_vectorize(ls, lo->axes[4]);
  te_compute_at(ls, os, wo);
  if (ps) {
    TeOp *po = ps->op;
    ps->attach = ATTACH_ROOT;
    if (po->axes[4]->extent > 1) te_vectorize(ps, po->axes[4]);
    te_compute_at(ps, os, f);
  }
  return true;
}

/* A 2-D global pool of NCHWc data (nn.c's data_block: output [N, C, 1, 1], data [N, C/b, H, W, b]): n x c.o
 * parallel, the window, then c.i (the b lanes, vectorized): each tap is one contiguous vector load. */
static bool global_pool_blocked_schedule(TeStage *st, TeOp *a, const TeTensor *out) {
  if (a->naxes != 4 || a->nreduce != 2 || a->axes[2]->extent != 1 || a->axes[3]->extent != 1 || a->ninputs < 1 ||
      a->inputs[0]->ndim != 5 || (out && out->op != a) || st->nleaf != 6)
    return false;
  int64_t b = a->inputs[0]->shape[4];
  if (b < 2 || a->axes[1]->extent % b) return false;
  IterVar *co, *ci;
  topi_split(st, a->axes[1], b, &co, &ci);
  IterVar *order[7] = {a->axes[0], co, a->axes[2], a->axes[3], a->reduce_axes[0], a->reduce_axes[1], ci};
  te_reorder(st, 7, order);
  IterVar *f = te_fuse(st, a->axes[0], co);
  if (op_work(a) >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(st, f);
  te_vectorize(st, ci);
  return true;
}

static void pool_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *st = te_stage(s, a->outputs[0]), *ps = NULL;
  if (!st) return;
  if (global_pool_blocked_schedule(st, a, out)) return;
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->op->tag && !strcmp(s->stages[i]->op->tag, "pool_pad")) ps = s->stages[i];
  if (a->naxes == a->nreduce + 3 && pool_blocked_schedule(c, s, a, out, ps)) return;
  if (!pool_anchor_ok(a) || st->nleaf != a->naxes + a->nreduce) {
    schedule_stage(c, st); /* pool_pad stays inlined: the taps test their bounds */
    if (out && out->op != a) {
      TeStage *os = te_stage(s, out);
      if (os) schedule_stage(c, os);
    }
    return;
  }
  int64_t tile = topi_config_get(cfg, "tile_ow", a->axes[a->naxes - 1]->extent);
  bool unroll = topi_config_get(cfg, "unroll_taps", 1) != 0;
  int64_t work = op_work(a);
  bool epi = out && out->op != a;
  TeStage *os, *ls = NULL; /* the tiled output, the local accumulator (NULL: os is the pool itself) */
  IterVar *owo, *par;
  if (pool_local_ok(s, a, out)) {
    TeTensor *P = a->outputs[0], *L = te_cache_write(s, P);
    if (L == P) return;
    if (epi) te_compute_inline(te_stage(s, P));
    os = te_stage(s, epi ? out : P);
    ls = te_stage(s, L);
    par = pool_tile_output(c, os, tile, false, work, &owo);
    /* the accumulator: taps.., ow (vectorized; bound inference gives it the tile's tile_ow columns) */
    TeOp *lo = ls->op;
    IterVar *order[2 * MLC_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < lo->naxes - 1; i++) order[k++] = lo->axes[i];
    for (int i = 0; i < lo->nreduce; i++) order[k++] = lo->reduce_axes[i];
    order[k++] = lo->axes[lo->naxes - 1];
    te_reorder(ls, k, order);
    te_vectorize(ls, lo->axes[lo->naxes - 1]);
    for (int i = 0; unroll && i < lo->nreduce; i++)
      if (lo->reduce_axes[i]->extent > 1) te_unroll(ls, lo->reduce_axes[i]);
    te_compute_at(ls, os, owo);
  } else {
    os = st;
    par = pool_tile_output(c, os, tile, true, work, &owo);
    for (int i = 0; unroll && i < a->nreduce; i++)
      if (a->reduce_axes[i]->extent > 1) te_unroll(os, a->reduce_axes[i]);
    if (epi) {
      TeStage *es = te_stage(s, out);
      if (es) schedule_stage(c, es);
    }
  }
  if (ps) { /* the group schedule inlined it: give it memory, one plane (or row band) per parallel step */
    TeOp *po = ps->op;
    ps->attach = ATTACH_ROOT;
    if (po->axes[po->naxes - 1]->extent > 1) te_vectorize(ps, po->axes[po->naxes - 1]);
    te_compute_at(ps, os, par);
  }
}

/* ---------------------------------------------------------------- softmax */

static void softmax_space(const Target *t, const TeOp *a, TopiConfigSpace *s) { memset(s, 0, sizeof *s); }

static void softmax_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) { memset(cfg, 0, sizeof *cfg); }

/* The row form of nn.c's softmax (stages tagged "softmax_row" / "softmax_exp"): the output's row axes fused
 * into one parallel loop, its last axis split by the lanes and vectorized, and every other stage computed
 * per row at that loop (compute_at): the partial max/sum [1, L] vectorized over l with the row walked in
 * vectors, halved to one lane in log2(L) vector steps, the row totals, exp(x - max) once into a row buffer that the sum and the
 * output read. One row (C floats, twice) stays in L1 from the max to the store. */
static bool softmax_row_schedule(TeCtx *c, TeSchedule *s, TeOp *a) {
  TeStage *os = te_stage(s, a->outputs[0]);
  int nd = a->naxes;
  if (!os || nd < 2 || os->nleaf != nd || os->attach != ATTACH_ROOT) return false;
  int lanes = topi_vector_lanes(c->target, a->outputs[0]->dtype);
  TeStage *row[24];
  int nrow = 0;
  for (int i = 0; i < s->nstages && nrow < 24; i++) {
    const char *tag = s->stages[i]->op->tag;
    if (tag && (!strcmp(tag, "softmax_row") || !strcmp(tag, "softmax_exp") || !strcmp(tag, "softmax_half")))
      row[nrow++] = s->stages[i];
  }
  if (nrow == 0) return false;
  IterVar *rows[MLC_MAX_DIMS];
  for (int i = 0; i < nd - 1; i++) rows[i] = a->axes[i];
  IterVar *f = topi_fuse_range(os, rows, nd - 1), *co, *ci;
  topi_split(os, a->axes[nd - 1], lanes, &co, &ci);
  if (op_numel(a) >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(os, f);
  te_vectorize(os, ci);
  for (int i = 0; i < nrow; i++) {
    TeStage *st = row[i];
    TeOp *op = st->op;
    st->attach = ATTACH_ROOT; /* the group schedule inlined the exp stage: it is a per-row buffer here */
    if (op->nreduce == 1 && op->naxes == nd) { /* a partial: rows.., j, l (vector) */
      IterVar *order[MLC_MAX_DIMS + 1];
      for (int k = 0; k < nd - 1; k++) order[k] = op->axes[k];
      order[nd - 1] = op->reduce_axes[0];
      order[nd] = op->axes[nd - 1];
      te_reorder(st, nd + 1, order);
      te_vectorize(st, op->axes[nd - 1]);
    } else if (!strcmp(op->tag, "softmax_half")) { /* a halving step: one vector of w lanes */
      te_vectorize(st, op->axes[nd - 1]);
    } else if (op->nreduce == 0 && op->naxes == nd) { /* exp(x - max): the row in vectors */
      IterVar *eo, *ei;
      topi_split(st, op->axes[nd - 1], lanes, &eo, &ei);
      te_vectorize(st, ei);
    }
    te_compute_at(st, os, f);
  }
  return true;
}

static void softmax_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  if (softmax_row_schedule(c, s, a)) return;
  TeStage *st = te_stage(s, a->outputs[0]);
  if (st) schedule_stage(c, st);
  if (out && out->op != a) {
    TeStage *os = te_stage(s, out);
    if (os) schedule_stage(c, os);
  }
}

/* ---------------------------------------------------------------- the template table */

static const TopiTemplate templates[] = {
    /* name                   config space    fallback          schedule */
    {"conv1d_ncw.x86", conv_space, conv_fallback, conv_schedule},
    {"conv2d_nchw.x86", conv_space, conv_fallback, conv_schedule},
    {"conv2d_packed.x86", topi_conv2d_packed_space, topi_conv2d_packed_fallback, topi_conv2d_packed_schedule},
    {"conv2d_winograd.x86", topi_conv2d_winograd_space, topi_conv2d_winograd_fallback, topi_conv2d_winograd_schedule},
    {"winograd_input.x86", topi_winograd_input_space, topi_winograd_input_fallback, topi_winograd_input_schedule},
    {"winograd_output.x86", topi_winograd_output_space, topi_winograd_output_fallback, topi_winograd_output_schedule},
    {"conv3d_ncdhw.x86", conv_space, conv_fallback, conv_schedule},
    {"conv3d_packed.x86", topi_conv3d_packed_space, topi_conv3d_packed_fallback, topi_conv3d_packed_schedule},
    {"depthwise_conv2d.x86", topi_depthwise_x86_space, topi_depthwise_x86_fallback, topi_depthwise_x86_schedule},
    {"dense.x86", topi_dense_x86_space, topi_dense_x86_fallback, topi_dense_x86_schedule},
    {"batch_matmul.x86", topi_dense_x86_space, topi_dense_x86_fallback, topi_dense_x86_schedule},
    {"pool.x86", pool_space, pool_fallback, pool_schedule},
    {"dense_packed.x86", topi_dense_packed_space, topi_dense_packed_fallback, topi_dense_packed_schedule},
    {"softmax.x86", softmax_space, softmax_fallback, softmax_schedule},
    {"layer_norm.x86", topi_layer_norm_space, topi_layer_norm_fallback, topi_layer_norm_schedule},
    {"resize.x86", topi_resize_space, topi_resize_fallback, topi_resize_schedule},
};

/* by full name ("dense.x86") or by the TeOp tag it schedules ("dense") */
const TopiTemplate *topi_template_find(const char *tag) {
  if (!tag) return NULL;
  size_t n = strlen(tag);
  for (size_t i = 0; i < countof(templates); i++) {
    const char *nm = templates[i].name;
    if (!strcmp(nm, tag) || (!strncmp(nm, tag, n) && nm[n] == '.')) return &templates[i];
  }
  return NULL;
}

/* ---------------------------------------------------------------- group schedule */

static bool is_output(TeOp *op, int nout, TeTensor **outs) {
  for (int i = 0; i < nout; i++)
    if (outs[i]->op == op) return true;
  return false;
}

TeSchedule *topi_schedule_group(TeCtx *c, int nout, TeTensor **outs, const TopiConfig *cfg, Diag *d) {
  MLC_CHECK(d, nout > 0 && outs, NULL);
  if (c->target && c->target->kind == TARGET_GPU) return topi_schedule_gpu(c, nout, outs, d);
  TeSchedule *s = te_create_schedule(c, nout, outs);
  bool *done = arena_alloc(c->arena, (size_t)s->nstages + 1);
  TeOp *anchor = NULL;
  const TopiTemplate *tmpl = NULL;
  for (int i = 0; i < s->nstages; i++) {
    TeStage *st = s->stages[i];
    TeOp *op = st->op;
    if (op->kind != TE_COMPUTE) {
      done[i] = true;
      continue;
    }
    const TopiTemplate *t = topi_template_find(op->tag);
    if (t) {
      anchor = op;
      tmpl = t;
    } else if (op->nreduce == 0 && !is_output(op, nout, outs)) {
      te_compute_inline(st);
      done[i] = true;
    }
  }
  if (anchor) {
    TopiConfig merged;
    tmpl->fallback(c->target, anchor, &merged);
    if (cfg)
      for (int i = 0; i < cfg->nknobs; i++)
        if (cfg->names[i]) topi_cfg_set(&merged, cfg->names[i], cfg->values[i]);
    /* the epilogue the template schedules: the first output that is not the anchor itself */
    TeTensor *out = outs[0];
    int before = s->nstages;
    TeOp **old_ops = arena_alloc(c->arena, sizeof(TeOp *) * (size_t)(before + 1));
    for (int i = 0; i < before; i++) old_ops[i] = s->stages[i]->op;
    tmpl->schedule(c, s, anchor, out, &merged);
    if (s->nstages != before) { /* the template added stages (cache_write) and scheduled them itself */
      bool *d2 = arena_alloc(c->arena, (size_t)s->nstages + 1);
      for (int i = 0; i < s->nstages; i++) {
        d2[i] = true;
        for (int j = 0; j < before; j++)
          if (old_ops[j] == s->stages[i]->op) d2[i] = done[j];
      }
      done = d2;
    }
    for (int i = 0; i < s->nstages; i++)
      if (s->stages[i]->op == anchor || s->stages[i]->op == out->op) done[i] = true;
  }
  for (int i = 0; i < s->nstages; i++)
    if (!done[i]) schedule_stage(c, s->stages[i]);
  return s;
}
