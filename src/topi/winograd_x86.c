/* winograd_x86: Winograd F(m x m, 3 x 3) convolution for x86 (m = 4, alpha = 6, or m = 2, alpha = 4), after
 * Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (2016), and the ideas of TVM's
 * topi/nn/winograd_util.py and topi/x86 (the code here is written for mlc's TE).
 *
 * Each m x m output tile is Y = At [ (G g Gt) .* (Bt d Bt^T) ] A over an alpha x alpha input tile d, so the
 * 9 m^2 multiplies of a direct 3 x 3 tile become alpha^2 multiplies in the transformed domain (4x fewer for
 * m = 4, 2.25x for m = 2), shared over the input channels as a batched GEMM.
 *
 * AlterOpLayout (passes/graph/alter_op_layout.c) rewrites an eligible nn.conv2d(x, w) (float32, 3x3, stride 1,
 * dilation 1, groups 1, constant w, K a multiple of 8) into five ops, each its own kernel, so every
 * intermediate is an activation placed by the memory plan rather than per-call scratch (P = N * th * tw
 * tiles; PP = P rounded up to a multiple of the GEMM's default register tile, so that tile needs no guard:
 * the extra tiles repeat the last one and are never stored):
 *   nn.winograd_weight_transform(w[K, C, 3, 3], tile, block = kb) -> U[alpha^2, K/kb, C, kb]
 *       G g Gt per (k, c), kb output channels contiguous for the GEMM's vector loads; constant input, so
 *       FoldConstant evaluates it at compile time.
 *   nn.winograd_pad(x[N, C, H, W], padding, tile) -> D[N, m*th + 2, m*tw + 2, C]
 *       zero-padded, channels innermost (the one transposition), so the transform reads contiguous channels;
 *       data_block b: x is NCHWc [N, C/b, H, W, b] (ConvertLayoutNCHWc).
 *   nn.winograd_input(D, tile, ptiles = PP) -> V[alpha, alpha, PP, C]: Bt d B per tile and channel.
 *   nn.winograd_gemm(V, U) -> M[alpha^2, K/kb, PP, kb] = sum_c V[e, p, c] * U[e, k/kb, c, k%kb].
 *   nn.winograd_output(M, tile, out_shape = [N, OH, OW]) -> Y[N, K, OH, OW]: At M A written straight into
 *       NCHW, or NCHWc [N, K/kb, OH, OW, kb] with out_block = kb (ConvertLayoutNCHWc); out-elemwise-fusable,
 *       so the conv's elementwise epilogue (bias, relu, residual add) fuses into it.
 * The transforms multiply by constant matrices. They are written as explicit sums over the non-zero
 * coefficients (a coefficient of +-1 is an add or a subtract), separably: the row transform values are lets,
 * the column transform picks its row by a select on the tile coordinate. The schedules unroll the tile
 * coordinates, so every select condition is a constant and LLVM keeps exactly one arm: no multiply by zero,
 * no reduction over a constant matrix.
 *
 * Schedules: "conv2d_winograd.x86" (the GEMM, knob tile_p) runs parallel over the fused alpha^2 x K/kb (with
 * two groups of tiles outside them where V and M outweigh U: gemm_tile_groups); a
 * cache_write accumulator of tile_p tiles x kb channels is computed at p.o with loops c, p.i (unrolled), kb
 * (vectorized): it stays in vector registers over the channel loop (one U vector load per kb/lanes vectors,
 * tile_p broadcasts of V, tile_p * kb/lanes FMAs). The fallback tile_p fills the vector registers (AVX-512:
 * 12 x 1 zmm; AVX2: 6 x 2 ymm). "winograd_input.x86": parallel over tiles, channels split by the lanes
 * (vectorized) with the alpha x alpha coordinates unrolled inside. "winograd_output.x86": the group output
 * (epilogue included) tiled n, h/m, k/kb (fused parallel: rows outside the channel blocks, as the convs
 * around it, see topi_row_groups), w/m, h%m, w%m (unrolled), k%kb (vectorized over kb contiguous M values;
 * the NCHW store is a scatter). */
#include <string.h>
#include "topi/topi.h"

/* ---------------------------------------------------------------- transform matrices */

typedef struct WinoMatrices {
  int m, alpha;
  const double *bt; /* alpha x alpha: input transform Bt */
  const double *g;  /* alpha x 3: weight transform G */
  const double *at; /* m x alpha: output transform At */
} WinoMatrices;

/* interpolation points 0, 1, -1, 2, -2 and infinity */
static const double bt_f4[36] = {4, 0, -5, 0, 1, 0,  0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                                 0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1};
static const double g_f4[18] = {1.0 / 4,  0,         0,        -1.0 / 6, -1.0 / 6, -1.0 / 6,
                                -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24, 1.0 / 12, 1.0 / 6,
                                1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,        1};
static const double at_f4[24] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};
/* interpolation points 0, 1, -1 and infinity */
static const double bt_f2[16] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
static const double g_f2[12] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
static const double at_f2[8] = {1, 1, 1, 0, 0, 1, -1, -1};

static const WinoMatrices wino_f4 = {4, 6, bt_f4, g_f4, at_f4};
static const WinoMatrices wino_f2 = {2, 4, bt_f2, g_f2, at_f2};

static const WinoMatrices *wino_matrices(int64_t m) { return m == 4 ? &wino_f4 : m == 2 ? &wino_f2 : NULL; }

/* sum_i coef[i * stride] * terms[i] over the non-zero coefficients; +-1 become adds and subtracts */
static Expr *lin_comb(Arena *a, int n, const double *coef, int stride, Expr **terms) {
  Expr *acc = NULL;
  for (int i = 0; i < n; i++) { /* positive unit terms first, so the sum never starts with a negation */
    double c = coef[i * stride];
    if (c == 1) acc = acc ? tir_add(a, acc, terms[i]) : terms[i];
  }
  for (int i = 0; i < n; i++) {
    double c = coef[i * stride];
    if (c == 0 || c == 1) continue;
    if (c == -1 && acc) {
      acc = tir_sub(a, acc, terms[i]);
      continue;
    }
    Expr *t = tir_mul(a, tir_float(a, MLC_F32, c), terms[i]);
    acc = acc ? tir_add(a, acc, t) : t;
  }
  return acc ? acc : tir_float(a, MLC_F32, 0);
}

/* arms[idx] for idx in [0, n): a select chain, folded to one arm once idx is a constant (unrolled loop) */
static Expr *select_by(Arena *a, Expr *idx, int n, Expr **arms) {
  Expr *e = arms[n - 1];
  for (int i = n - 2; i >= 0; i--) e = tir_select(a, tir_bin(a, E_EQ, idx, tir_idx(a, i)), arms[i], e);
  return e;
}

/* ---------------------------------------------------------------- weight transform */

typedef struct WinoWeight {
  const WinoMatrices *w;
  int64_t k, c, kb;
  TeTensor *weight;
} WinoWeight;

static mlc_status weight_of(const Node *n, WinoWeight *p, Diag *d) {
  const TensorType *t = &n->inputs[0]->type;
  memset(p, 0, sizeof *p);
  if (t->ndim != 4 || t->dtype != MLC_F32 || t->dims[2] != 3 || t->dims[3] != 3)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.winograd_weight_transform needs a float32 [K, C, 3, 3] weight");
  p->w = wino_matrices(ir_attr_int(n, "tile", 4));
  p->kb = ir_attr_int(n, "block", 16);
  p->k = t->dims[0];
  p->c = t->dims[1];
  if (!p->w) return diag_set(d, MLC_ERR_UNSUPPORTED, "Winograd output tile must be 2 or 4");
  if (p->kb < 1 || p->k % p->kb)
    return diag_set(d, MLC_ERR_INVALID, "Winograd channel block %lld does not divide %lld output channels",
                    (long long)p->kb, (long long)p->k);
  return MLC_OK;
}

static mlc_status weight_infer(Node *n, Diag *d) {
  WinoWeight p;
  mlc_status st = weight_of(n, &p, d);
  if (st) return st;
  int64_t al = p.w->alpha;
  TensorType o = {.dtype = MLC_F32, .ndim = 4, .dims = {al * al, p.k / p.kb, p.c, p.kb}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* U[e, ko, c, kb] = sum_i G[eh][i] sum_j G[ew][j] g[ko*kb + kb, c, i, j] with eh, ew = e / alpha, e % alpha.
 * It runs once, at compile time, so the coefficients are select chains of constants. */
static Expr *weight_body(TeCtx *c, Expr **idx, void *user) {
  WinoWeight *p = user;
  Arena *a = c->arena;
  int al = p->w->alpha;
  Expr *eh = tir_bin(a, E_FLOORDIV, idx[0], tir_idx(a, al)), *ew = tir_bin(a, E_FLOORMOD, idx[0], tir_idx(a, al));
  Expr *k = tir_add(a, tir_mul(a, idx[1], tir_idx(a, p->kb)), idx[3]);
  Expr *arms[6] = {0}, *rows[3];
  for (int i = 0; i < 3; i++) {
    Expr *terms[3];
    for (int j = 0; j < 3; j++) {
      Expr *wi[4] = {k, idx[2], tir_idx(a, i), tir_idx(a, j)};
      terms[j] = te_read(c, p->weight, 4, wi);
    }
    for (int b = 0; b < al; b++) arms[b] = lin_comb(a, 3, p->w->g + b * 3, 1, terms);
    rows[i] = select_by(a, ew, al, arms);
  }
  for (int b = 0; b < al; b++) arms[b] = lin_comb(a, 3, p->w->g + b * 3, 1, rows);
  return select_by(a, eh, al, arms);
}

static mlc_status weight_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  WinoWeight *p = arena_alloc(c->arena, sizeof *p);
  mlc_status st = weight_of(n, p, d);
  if (st) return st;
  p->weight = ins[0];
  int64_t al = p->w->alpha;
  int64_t shape[4] = {al * al, p->k / p->kb, p->c, p->kb};
  outs[0] = te_compute(c, "winograd_weight", "injective", MLC_F32, 4, shape, weight_body, p);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the convolution's three ops */

/* The geometry of one Winograd conv, from the attributes and shapes of any of its three ops. */
typedef struct WinoConv {
  const WinoMatrices *w;
  int64_t n, c, h, wd, k, kb, oh, ow;
  int64_t pad[4]; /* top, left, bottom, right */
  int64_t th, tw; /* tiles along the output height and width */
  int64_t tiles;  /* P = n * th * tw */
  int64_t ptiles; /* PP: P rounded up to a multiple of the GEMM's register tile */
  int64_t blk;    /* the pad's data_block / the output transform's out_block: 0 for NCHW */
  TeTensor *in;   /* the op's first input */
  TeTensor *in2;  /* the GEMM's transformed weight */
} WinoConv;

static mlc_status tiles_of(WinoConv *p, Diag *d) {
  if (p->oh < 1 || p->ow < 1) return diag_set(d, MLC_ERR_INVALID, "kernel larger than the padded input");
  p->th = (p->oh + p->w->m - 1) / p->w->m;
  p->tw = (p->ow + p->w->m - 1) / p->w->m;
  p->tiles = p->n * p->th * p->tw;
  if (p->ptiles >= 0 && p->ptiles < p->tiles) /* ptiles < 0: an op without the GEMM's tile count (the pad) */
    return diag_set(d, MLC_ERR_INVALID, "Winograd tile count %lld is below the %lld tiles of the output",
                    (long long)p->ptiles, (long long)p->tiles);
  return MLC_OK;
}

/* the transform matrices of the op's tile, checking its first input is float32 of the given rank */
static mlc_status matrices_of(const Node *n, int rank, WinoConv *p, Diag *d) {
  memset(p, 0, sizeof *p);
  p->w = wino_matrices(ir_attr_int(n, "tile", 4));
  if (!p->w) return diag_set(d, MLC_ERR_UNSUPPORTED, "Winograd output tile must be 2 or 4");
  const TensorType *x = &n->inputs[0]->type;
  if (x->ndim != rank || x->dtype != MLC_F32)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s needs a float32 rank-%d input", n->op->name, rank);
  return MLC_OK;
}

/* nn.winograd_pad(data[N, C, H, W], padding, tile) -> D[N, m*th + 2, m*tw + 2, C] */
static mlc_status pad_of(const Node *n, WinoConv *p, Diag *d) {
  mlc_status st = matrices_of(n, ir_attr_int(n, "data_block", 0) ? 5 : 4, p, d);
  if (st) return st;
  const TensorType *x = &n->inputs[0]->type;
  if ((st = topi_conv2d_window(n, NULL, NULL, p->pad, d))) return st;
  p->blk = ir_attr_int(n, "data_block", 0);
  if (p->blk && (p->blk < 0 || x->dims[4] != p->blk))
    return diag_set(d, MLC_ERR_INVALID, "nn.winograd_pad: data_block %lld does not match the data's block %lld",
                    (long long)p->blk, (long long)x->dims[4]);
  p->n = x->dims[0];
  p->c = p->blk ? x->dims[1] * p->blk : x->dims[1];
  p->h = x->dims[2];
  p->wd = x->dims[3];
  p->oh = p->h + p->pad[0] + p->pad[2] - 2;
  p->ow = p->wd + p->pad[1] + p->pad[3] - 2;
  p->ptiles = -1;
  return tiles_of(p, d);
}

static mlc_status pad_infer(Node *n, Diag *d) {
  WinoConv p;
  mlc_status st = pad_of(n, &p, d);
  if (st) return st;
  int64_t m = p.w->m;
  TensorType o = {.dtype = MLC_F32, .ndim = 4, .dims = {p.n, p.th * m + 2, p.tw * m + 2, p.c}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* nn.winograd_input(D[N, m*th + 2, m*tw + 2, C], tile, ptiles) -> V[alpha, alpha, ptiles, C] */
static mlc_status input_of(const Node *n, WinoConv *p, Diag *d) {
  mlc_status st = matrices_of(n, 4, p, d);
  if (st) return st;
  const TensorType *x = &n->inputs[0]->type;
  int64_t m = p->w->m;
  if ((x->dims[1] - 2) % m || (x->dims[2] - 2) % m || x->dims[1] < m + 2 || x->dims[2] < m + 2)
    return diag_set(d, MLC_ERR_INVALID, "nn.winograd_input: padded input %lld x %lld is not whole %lld x %lld tiles",
                    (long long)x->dims[1], (long long)x->dims[2], (long long)m, (long long)m);
  p->n = x->dims[0];
  p->c = x->dims[3];
  p->oh = x->dims[1] - 2;
  p->ow = x->dims[2] - 2;
  p->ptiles = ir_attr_int(n, "ptiles", 0);
  return tiles_of(p, d);
}

static mlc_status input_infer(Node *n, Diag *d) {
  WinoConv p;
  mlc_status st = input_of(n, &p, d);
  if (st) return st;
  int64_t al = p.w->alpha;
  TensorType o = {.dtype = MLC_F32, .ndim = 4, .dims = {al, al, p.ptiles, p.c}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* D[n, y, x, c] = data[n, c, y - top, x - left], zero in the padding and past the last tile (a clamped read
 * and a select, so the load stays in bounds): the input with channels innermost, so the input transform
 * reads contiguous channels per tap. With data_block b the data is NCHWc, data[n, c / b, y, x, c % b]: the
 * copy reads b contiguous channels instead of one per plane. */
static Expr *pad_body(TeCtx *c, Expr **idx, void *user) {
  WinoConv *p = user;
  Arena *a = c->arena;
  Expr *ch, *cw, *ok = topi_pad_window(a, idx[1], idx[2], p->pad[0], p->pad[1], p->h, p->wd, &ch, &cw);
  Expr *v;
  if (p->blk) {
    Expr *b = tir_idx(a, p->blk);
    Expr *ri[5] = {idx[0], tir_bin(a, E_FLOORDIV, idx[3], b), ch, cw, tir_bin(a, E_FLOORMOD, idx[3], b)};
    v = te_read(c, p->in, 5, ri);
  } else {
    Expr *ri[4] = {idx[0], idx[3], ch, cw};
    v = te_read(c, p->in, 4, ri);
  }
  return tir_select(a, ok, v, tir_float(a, MLC_F32, 0));
}

/* V[eh, ew, p, c] = sum_i Bt[eh][i] (sum_j Bt[ew][j] d[i][j]) over the tile p (clamped to the last real one) */
static Expr *input_body(TeCtx *c, Expr **idx, void *user) {
  WinoConv *p = user;
  Arena *a = c->arena;
  int al = p->w->alpha;
  const double *bt = p->w->bt;
  Expr *t = tir_bin(a, E_MIN, idx[2], tir_idx(a, p->tiles - 1));
  Expr *per_img = tir_idx(a, p->th * p->tw);
  Expr *img = tir_bin(a, E_FLOORDIV, t, per_img), *r = tir_bin(a, E_FLOORMOD, t, per_img);
  Expr *y0 = tir_mul(a, tir_bin(a, E_FLOORDIV, r, tir_idx(a, p->tw)), tir_idx(a, p->w->m));
  Expr *x0 = tir_mul(a, tir_bin(a, E_FLOORMOD, r, tir_idx(a, p->tw)), tir_idx(a, p->w->m));
  Var *rowv[6];
  Expr *rows[6], *vals[6], *arms[6] = {0};
  for (int i = 0; i < al; i++) {
    Expr *d[6];
    for (int j = 0; j < al; j++) {
      Expr *ri[4] = {img, tir_add(a, y0, tir_idx(a, i)), tir_add(a, x0, tir_idx(a, j)), idx[3]};
      d[j] = te_read(c, p->in, 4, ri);
    }
    for (int b = 0; b < al; b++) arms[b] = lin_comb(a, al, bt + b * al, 1, d);
    vals[i] = select_by(a, idx[1], al, arms);
    rowv[i] = tir_var(a, arena_printf(a, "wino_row%d", i), MLC_F32);
    rows[i] = tir_varref(a, rowv[i]);
  }
  for (int b = 0; b < al; b++) arms[b] = lin_comb(a, al, bt + b * al, 1, rows);
  Expr *e = select_by(a, idx[0], al, arms);
  for (int i = al - 1; i >= 0; i--) e = tir_let(a, rowv[i], vals[i], e);
  return e;
}

static mlc_status input_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  WinoConv *p = arena_alloc(c->arena, sizeof *p);
  mlc_status st = input_of(n, p, d);
  if (st) return st;
  p->in = ins[0];
  int64_t al = p->w->alpha;
  int64_t vs[4] = {al, al, p->ptiles, p->c};
  outs[0] = te_compute(c, "winograd_input", "winograd_input", MLC_F32, 4, vs, input_body, p);
  return MLC_OK;
}

static mlc_status pad_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  WinoConv *p = arena_alloc(c->arena, sizeof *p);
  mlc_status st = pad_of(n, p, d);
  if (st) return st;
  p->in = ins[0];
  int64_t ds[4] = {p->n, p->th * p->w->m + 2, p->tw * p->w->m + 2, p->c};
  outs[0] = te_compute(c, "winograd_pad", "injective", MLC_F32, 4, ds, pad_body, p);
  return MLC_OK;
}

/* nn.winograd_gemm(V[alpha, alpha, PP, C], U[alpha^2, K/kb, C, kb]) -> M[alpha^2, K/kb, PP, kb] */
static mlc_status gemm_of(const Node *n, WinoConv *p, Diag *d) {
  const TensorType *v = &n->inputs[0]->type, *u = &n->inputs[1]->type;
  memset(p, 0, sizeof *p);
  if (v->ndim != 4 || u->ndim != 4 || v->dtype != MLC_F32 || u->dtype != MLC_F32 || v->dims[0] != v->dims[1] ||
      u->dims[0] != v->dims[0] * v->dims[1] || u->dims[2] != v->dims[3])
    return diag_set(d, MLC_ERR_INVALID, "nn.winograd_gemm: transformed input and weight do not match");
  p->c = v->dims[3];
  p->ptiles = v->dims[2];
  p->kb = u->dims[3];
  p->k = u->dims[1] * p->kb;
  return MLC_OK;
}

static mlc_status gemm_infer(Node *n, Diag *d) {
  WinoConv p;
  mlc_status st = gemm_of(n, &p, d);
  if (st) return st;
  const TensorType *u = &n->inputs[1]->type;
  TensorType o = {.dtype = MLC_F32, .ndim = 4, .dims = {u->dims[0], u->dims[1], p.ptiles, p.kb}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* M[e, ko, p, kb] = sum_c V[e / alpha, e % alpha, p, c] * U[e, ko, c, kb] */
static Expr *gemm_body(TeCtx *c, Expr **idx, void *user) {
  WinoConv *p = user;
  Arena *a = c->arena;
  IterVar *rc = te_reduce_axis(c, "rc", p->c);
  Expr *ic = tir_varref(a, rc->var), *al = tir_idx(a, p->in->shape[0]);
  Expr *vi[4] = {tir_bin(a, E_FLOORDIV, idx[0], al), tir_bin(a, E_FLOORMOD, idx[0], al), idx[2], ic};
  Expr *ui[4] = {idx[0], idx[1], ic, idx[3]};
  Expr *prod = tir_mul(a, te_read(c, p->in, 4, vi), te_read(c, p->in2, 4, ui));
  return te_reduce(c, RED_SUM, prod, 1, &rc, NULL, NULL);
}

static mlc_status gemm_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  WinoConv *p = arena_alloc(c->arena, sizeof *p);
  mlc_status st = gemm_of(n, p, d);
  if (st) return st;
  p->in = ins[0];
  p->in2 = ins[1];
  int64_t ms[4] = {ins[1]->shape[0], ins[1]->shape[1], p->ptiles, p->kb};
  outs[0] = te_compute(c, "winograd_gemm", "conv2d_winograd", MLC_F32, 4, ms, gemm_body, p);
  return MLC_OK;
}

/* nn.winograd_output(M[alpha^2, K/kb, PP, kb], tile, out_shape = [N, OH, OW]) -> [N, K, OH, OW] */
static mlc_status output_of(const Node *n, WinoConv *p, Diag *d) {
  mlc_status st = matrices_of(n, 4, p, d);
  if (st) return st;
  const TensorType *m = &n->inputs[0]->type;
  int64_t os[3];
  if (ir_attr_ints(n, "out_shape", os, 3) != 3)
    return diag_set(d, MLC_ERR_INVALID, "nn.winograd_output needs out_shape [N, OH, OW]");
  if (m->dims[0] != (int64_t)p->w->alpha * p->w->alpha)
    return diag_set(d, MLC_ERR_INVALID, "nn.winograd_output: %lld transformed points, expected %d",
                    (long long)m->dims[0], p->w->alpha * p->w->alpha);
  p->n = os[0];
  p->oh = os[1];
  p->ow = os[2];
  p->kb = m->dims[3];
  p->k = m->dims[1] * p->kb;
  p->ptiles = m->dims[2];
  p->blk = ir_attr_int(n, "out_block", 0);
  if (p->blk && p->blk != p->kb)
    return diag_set(d, MLC_ERR_INVALID, "nn.winograd_output: out_block %lld differs from the GEMM's block %lld",
                    (long long)p->blk, (long long)p->kb);
  return tiles_of(p, d);
}

static mlc_status output_infer(Node *n, Diag *d) {
  WinoConv p;
  mlc_status st = output_of(n, &p, d);
  if (st) return st;
  TensorType o = {.dtype = MLC_F32, .ndim = 4, .dims = {p.n, p.k, p.oh, p.ow}};
  if (p.blk) o = (TensorType){.dtype = MLC_F32, .ndim = 5, .dims = {p.n, p.k / p.kb, p.oh, p.ow, p.kb}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* Y[n, k, h, w] = sum_a At[h % m][a] (sum_b At[w % m][b] M[a * alpha + b, k / kb, tile of (n, h, w), k % kb]);
 * with out_block (= kb) the output is NCHWc, Y[n, k / kb, h, w, k % kb], indexed [n, ko, h, w, ki] */
static Expr *output_body(TeCtx *c, Expr **idx, void *user) {
  WinoConv *p = user;
  Arena *a = c->arena;
  int al = p->w->alpha, m = p->w->m;
  const double *at = p->w->at;
  Expr *em = tir_idx(a, m), *kb = tir_idx(a, p->kb);
  Expr *tile = tir_add(a, tir_mul(a, idx[0], tir_idx(a, p->th * p->tw)),
                       tir_add(a, tir_mul(a, tir_bin(a, E_FLOORDIV, idx[2], em), tir_idx(a, p->tw)),
                               tir_bin(a, E_FLOORDIV, idx[3], em)));
  Expr *hi = tir_bin(a, E_FLOORMOD, idx[2], em), *wi = tir_bin(a, E_FLOORMOD, idx[3], em);
  Expr *ko = p->blk ? idx[1] : tir_bin(a, E_FLOORDIV, idx[1], kb);
  Expr *ki = p->blk ? idx[4] : tir_bin(a, E_FLOORMOD, idx[1], kb);
  Var *rowv[6];
  Expr *rows[6], *vals[6], *arms[6] = {0};
  for (int i = 0; i < al; i++) {
    Expr *mv[6];
    for (int j = 0; j < al; j++) {
      Expr *mi[4] = {tir_idx(a, i * al + j), ko, tile, ki};
      mv[j] = te_read(c, p->in, 4, mi);
    }
    for (int b = 0; b < m; b++) arms[b] = lin_comb(a, al, at + b * al, 1, mv);
    vals[i] = select_by(a, wi, m, arms);
    rowv[i] = tir_var(a, arena_printf(a, "wino_out%d", i), MLC_F32);
    rows[i] = tir_varref(a, rowv[i]);
  }
  for (int b = 0; b < m; b++) arms[b] = lin_comb(a, al, at + b * al, 1, rows);
  Expr *e = select_by(a, hi, m, arms);
  for (int i = al - 1; i >= 0; i--) e = tir_let(a, rowv[i], vals[i], e);
  return e;
}

static mlc_status output_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  WinoConv *p = arena_alloc(c->arena, sizeof *p);
  mlc_status st = output_of(n, p, d);
  if (st) return st;
  p->in = ins[0];
  int64_t os[5] = {p->n, p->k, p->oh, p->ow, 0};
  if (p->blk) os[1] = p->k / p->kb, os[4] = p->kb;
  outs[0] = te_compute(c, "winograd_output", "winograd_output", MLC_F32, p->blk ? 5 : 4, os, output_body, p);
  return MLC_OK;
}

/* The stages are separate ops (separate kernels), so the padded input D, the transformed input V and the
 * GEMM result M are activations the memory plan places, not scratch each kernel would allocate on every call
 * (a large malloc is an mmap: fresh pages, page faults, on every call). The pad, the input transform and the
 * GEMM are opaque (nothing fuses into them: the input transform reads each element 2.25 times, an inlined
 * producer would be recomputed); the output transform is out-elemwise-fusable like the conv it ends: the
 * conv's elementwise epilogue (bias, relu, residual add) joins it and is applied as the NCHW result is
 * stored, but an injective consumer does not (a concatenate fused in became the group's output stage and the
 * transform lost its schedule: squeezenet1_1's fire modules ran 1.5 ms per output transform instead of 0.1). */
const OpDef topi_ops_winograd_x86[] = {
    /* name                          pattern        in min/max  outs  relation       compute */
    {"nn.winograd_weight_transform", PAT_INJECTIVE, 1, 1, 1, weight_infer, weight_compute},
    {"nn.winograd_pad", PAT_OPAQUE, 1, 1, 1, pad_infer, pad_compute, DYN_BATCH},
    {"nn.winograd_input", PAT_OPAQUE, 1, 1, 1, input_infer, input_compute, DYN_WINOGRAD},
    {"nn.winograd_gemm", PAT_OPAQUE, 2, 2, 1, gemm_infer, gemm_compute, DYN_WINOGRAD},
    {"nn.winograd_output", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, output_infer, output_compute, DYN_WINOGRAD},
    {NULL},
};

/* ---------------------------------------------------------------- register tile and templates */

/* the most GEMM rows (tiles) a register tile can hold: tp * kb/lanes accumulators, the U vectors and a
 * broadcast in the vector registers */
static int64_t tile_p_regs(const Target *t, int64_t kb) {
  int lanes = topi_vector_lanes(t, MLC_F32);
  int64_t vecs = (kb + lanes - 1) / lanes, m = (topi_vector_regs(t) - vecs - 1) / vecs;
  return m < 1 ? 1 : m;
}

/* the fallback's most rows per register tile (at most 12) */
static int64_t tile_p_max(const Target *t, int64_t kb) {
  int64_t m = tile_p_regs(t, kb);
  return m > 12 ? 12 : m;
}

/* The register tile along the tiles: the largest tp <= tile_p_max whose rounding of P wastes at most 1/16 of
 * the work; else the tp in [max/2, max] that wastes the least (ties: the larger). */
static int64_t default_tile_p(const Target *t, int64_t tiles, int64_t kb) {
  int64_t mx = tile_p_max(t, kb);
  if (tiles <= mx) return tiles;
  for (int64_t tp = mx; tp >= 1; tp--) {
    int64_t waste = (tiles + tp - 1) / tp * tp - tiles;
    if (waste * 16 <= tiles) return tp;
  }
  int64_t best = mx, best_w = -1;
  for (int64_t tp = mx; tp >= (mx + 1) / 2; tp--) {
    int64_t w = (tiles + tp - 1) / tp * tp;
    if (best_w < 0 || w < best_w) best = tp, best_w = w;
  }
  return best;
}

int64_t topi_winograd_padded_tiles(const Target *t, int64_t tiles, int64_t kb) {
  int64_t tp = default_tile_p(t, tiles, kb);
  return (tiles + tp - 1) / tp * tp;
}

/* the GEMM anchor: M[alpha^2, K/kb, PP, kb] with its one reduce axis (the input channels) */
static bool gemm_anchor_ok(const TeOp *a) { return a->kind == TE_COMPUTE && a->naxes == 4 && a->nreduce == 1; }

/* Knob tile_k: the accumulator tile spans tile_k channel blocks (K/kb split, k.i unrolled), so each broadcast
 * of V feeds tile_k FMAs: per channel step tile_k U vector loads and tile_p broadcasts for tile_k x tile_p
 * FMAs. With two 512-bit FMA pipes (Zen 5) one block is bound by its broadcast loads. The fallback on AVX-512
 * (what whole-space tuning of ResNet-18 picked on every Winograd task): 4 blocks x a tile_p of 4 to 6 dividing
 * the padded tiles where K/kb allows (1.07x-1.20x over 2 x 10 and 1 x 12), else 2 blocks x tile_p <= 10 (a
 * 256-channel F(2x2) GEMM at 14x14: 183 -> 210 GFLOP/s over 1 x 10; 2 x 12 was slower than 1 x 12, DenseNet's
 * 128 -> 32 GEMMs at 56x56: 154 -> 119 GFLOP/s). The accumulator budget: topi_fit_blocks. */

/* the fallback tile: returns tile_k, *tp tile_p (on entry the one-block tile) */
static int64_t default_tile_k(const Target *t, const TeOp *a, int64_t *tp) {
  int lanes = topi_vector_lanes(t, MLC_F32);
  int64_t e = a->axes[0]->extent, kblocks = a->axes[1]->extent, pp = a->axes[2]->extent;
  if (topi_vector_regs(t) < 32 || a->axes[3]->extent != lanes) return 1;
  /* as the packed conv's tile_ocn: not where it leaves the parallel loop (alpha^2 x K/kb/tk) under 16 */
  int64_t tp4 = topi_largest_divisor(pp, TOPI_BLOCKS_MAX_ACC / 4);
  if (tp4 >= 4 && e * (kblocks / 4) >= 16 && topi_fit_blocks(kblocks, 4, tp4) == 4) {
    *tp = tp4;
    return 4;
  }
  if (e * (kblocks / 2) < 16) return 1;
  return 2 * *tp <= TOPI_BLOCKS_DEFAULT_ACC && topi_fit_blocks(kblocks, 2, *tp) == 2 ? 2 : 1;
}

/* Knob prefetch: 0, or how many (e, k/kb) iterations ahead the GEMM streams in U (te_prefetch). Each block
 * of U (C x tile_k x kb values) is read by every register tile of the iteration, first from memory: ResNet's
 * weights do not stay in cache from one run to the next. The fallback prefetches one ahead where a block fills
 * L1, so the register tiles' passes are few and each costs a miss stream: ResNet-18's 512-channel F(2x2) GEMMs
 * at 7x7 (a 32 KiB block, 4 register tiles of 4 x 16) ran 2.2-2.4 -> 1.7-1.8 ms on a Zen 3 (AVX2) with U
 * streamed; with 16 KiB blocks at 14x14 (10 tiles) and 8 KiB at 28x28 they were as fast or 3-8% slower
 * (min of 4 alternating per-kernel profiles). */
static int64_t default_prefetch(const Target *t, const TeOp *a, int64_t tk) {
  int64_t l1 = t && t->l1_bytes > 0 ? t->l1_bytes : 32 * 1024;
  int64_t block = tk * a->reduce_axes[0]->extent * a->axes[3]->extent * (int64_t)sizeof(float);
  return block >= l1 ? 1 : 0;
}

void topi_conv2d_winograd_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  if (!gemm_anchor_ok(a)) return;
  int64_t pp = a->axes[2]->extent, mx = tile_p_regs(t, a->axes[3]->extent);
  TopiKnob *k = topi_knob_add(s, "tile_p");
  for (int64_t f = 1; f <= pp && f <= mx; f++)
    if (pp % f == 0) topi_knob_choice(k, f);
  k = topi_knob_add(s, "tile_k");
  for (int64_t f = 1; f <= 4; f *= 2)
    if (a->axes[1]->extent % f == 0) topi_knob_choice(k, f);
  k = topi_knob_add(s, "prefetch");
  for (int64_t f = 0; f <= 2; f++) topi_knob_choice(k, f);
}

void topi_conv2d_winograd_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (!gemm_anchor_ok(a)) return;
  /* AlterOpLayout padded the tiles to a multiple of the default register tile: the largest divisor within
   * the register budget is that tile or a larger one */
  int64_t pp = a->axes[2]->extent, tp = topi_largest_divisor(pp, tile_p_max(t, a->axes[3]->extent));
  int64_t tk = default_tile_k(t, a, &tp), prefetch = default_prefetch(t, a, tk);
  /* where U streams from memory and one register tile holds every tile, one pass over each block of U (a tile
   * of pp x 1 block): ResNet's 512-channel F(2x2) GEMMs at 7x7 (16 tiles, 16.8 MB of U) ran 1.60-1.63 ->
   * 1.45-1.46 ms on one thread and 0.77-0.80 -> 0.65-0.71 on two (Sapphire Rapids, over 4 x 4 blocks) */
  if (prefetch && pp > tp && pp <= tile_p_regs(t, a->axes[3]->extent)) tp = pp, tk = 1;
  topi_cfg_set(cfg, "tile_p", tp);
  topi_cfg_set(cfg, "tile_k", tk);
  topi_cfg_set(cfg, "prefetch", prefetch);
}

/* The GEMM's groups of tiles outside alpha^2 x K/kb in the parallel loop (topi_row_groups of the register tiles
 * po): on two threads each then multiplies the half of the tiles (the rows of the image) that its core
 * transformed, and writes the half of M its output transform reads, but reads all of U instead of half. Cut
 * where V and M (per alpha^2 point PP x (C + K) values) outweigh U (C x K): ResNet-18's 64-channel GEMMs at
 * 56x56 (V and M 1.8 MB each, U 0.6 MB) ran only 1.1-1.2x faster on two threads than on one with alpha^2 x
 * K/kb outermost; at 28x28 and 14x14 U is the larger and that split stays. */
static int64_t gemm_tile_groups(const TeOp *a, int64_t ptiles) {
  int64_t k = a->axes[1]->extent * a->axes[3]->extent, pp = a->axes[2]->extent, c = a->reduce_axes[0]->extent;
  return pp * (c + k) > c * k ? topi_row_groups(ptiles) : 1;
}

/* The GEMM (TVM's dense_pack form): an accumulator tile of tile_p tiles x kb channels in a local stage, loops
 * c, p.i (unrolled), kb (vectorized), so it lives in vector registers over the channel loop; it is computed
 * at p.o of the copy into M, which runs parallel over the fused (e, ko). */
void topi_conv2d_winograd_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *gs = te_stage(s, a->outputs[0]);
  if (!gs || !gemm_anchor_ok(a) || (out && out->op != a)) {
    if (gs) topi_schedule_stage_generic(c, gs);
    return;
  }
  int64_t pp = a->axes[2]->extent, tp = topi_config_get(cfg, "tile_p", 1), kblocks = a->axes[1]->extent;
  if (tp > pp) tp = pp;
  int64_t tk = topi_fit_blocks(kblocks, topi_config_get(cfg, "tile_k", 1), tp);
  IterVar *rc = a->reduce_axes[0];
  int64_t groups = gemm_tile_groups(a, pp / tp);
  TeTensor *L = te_cache_write(s, a->outputs[0]);
  if (L == a->outputs[0]) return;
  TeStage *ls = te_stage(s, L);
  gs = te_stage(s, a->outputs[0]);
  IterVar *po, *pi, *ko = a->axes[1], *ki = NULL, *pg = NULL;
  if (tk > 1) topi_split(gs, a->axes[1], tk, &ko, &ki);
  topi_split(gs, a->axes[2], tp, &po, &pi);
  if (groups > 1) topi_split(gs, po, pp / tp / groups, &pg, &po);
  IterVar *order[7];
  int n = 0;
  if (pg) order[n++] = pg;
  order[n++] = a->axes[0];
  order[n++] = ko;
  order[n++] = po;
  if (ki) order[n++] = ki;
  order[n++] = pi;
  order[n++] = a->axes[3];
  te_reorder(gs, n, order);
  IterVar *f = te_fuse(gs, a->axes[0], ko);
  te_parallel(gs, pg ? te_fuse(gs, pg, f) : f);
  if (ki) te_unroll(gs, ki);
  if (pi->extent > 1) te_unroll(gs, pi);
  te_vectorize(gs, a->axes[3]);
  TeOp *lo = ls->op;
  TeTensor *u = topi_product_operand(lo, 1); /* V[..] * U[..] */
  if (topi_config_get(cfg, "prefetch", 0) && !pg && u) te_prefetch(gs, u, f, topi_config_get(cfg, "prefetch", 0));
  IterVar *lorder[5] = {lo->axes[0], ki ? rc : lo->axes[1], ki ? lo->axes[1] : rc, lo->axes[2], lo->axes[3]};
  te_reorder(ls, 5, lorder);
  if (ki) te_unroll(ls, lo->axes[1]);
  te_unroll(ls, lo->axes[2]);
  te_vectorize(ls, lo->axes[3]);
  te_compute_at(ls, gs, po);
}

/* the input transform V[eh, ew, p, c]: p (parallel), c.o, eh, ew (unrolled: every select folds), c.i
 * (vectorized) */
void topi_winograd_input_space(const Target *t, const TeOp *a, TopiConfigSpace *s) { memset(s, 0, sizeof *s); }
void topi_winograd_input_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) { memset(cfg, 0, sizeof *cfg); }

void topi_winograd_input_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *st = te_stage(s, a->outputs[0]);
  if (!st || a->naxes != 4 || st->nleaf != 4 || (out && out->op != a)) {
    if (st) topi_schedule_stage_generic(c, st);
    return;
  }
  int lanes = topi_vector_lanes(c->target, MLC_F32);
  IterVar *co, *ci;
  topi_split(st, a->axes[3], topi_largest_divisor(a->axes[3]->extent, lanes), &co, &ci);
  IterVar *order[5] = {a->axes[2], co, a->axes[0], a->axes[1], ci};
  te_reorder(st, 5, order);
  if (a->axes[2]->extent > 1) te_parallel(st, a->axes[2]);
  te_unroll(st, a->axes[0]);
  te_unroll(st, a->axes[1]);
  if (ci->extent > 1) te_vectorize(st, ci);
}

/* the first tensor an expression reads */
static const TeTensor *first_read(const Expr *e) {
  if (!e) return NULL;
  switch (e->kind) {
  case E_TENSOR: return e->tensor.tensor;
  case E_INT: case E_FLOAT: case E_VAR: return NULL;
  case E_LOAD: case E_CALL: case E_REDUCE: return NULL;
  default: {
    const TeTensor *t = first_read(e->op.a);
    if (!t) t = first_read(e->op.b);
    if (!t && e->kind == E_SELECT) t = first_read(e->op.c);
    return t;
  }
  }
}

/* the output transform with its epilogue: the group output [N, K, OH, OW] tiled n, h.o, k.o (parallel), w.o,
 * h.i, w.i (unrolled: every select folds), k.i (vectorized over kb contiguous M values, stored as a scatter
 * into NCHW); an NCHWc output [N, K/kb, OH, OW, kb] (out_block) is the same loops with k.o, k.i its own axes,
 * and the store one contiguous vector. The transform is inlined into it. */
void topi_winograd_output_space(const Target *t, const TeOp *a, TopiConfigSpace *s) { memset(s, 0, sizeof *s); }
void topi_winograd_output_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) { memset(cfg, 0, sizeof *cfg); }

void topi_winograd_output_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *ys = te_stage(s, a->outputs[0]), *os = out ? te_stage(s, out) : ys;
  int nd = a->naxes; /* 4: NCHW, 5: NCHWc (out_block) */
  bool ok = ys && os && (nd == 4 || nd == 5) && os->op->kind == TE_COMPUTE && os->op->nreduce == 0 &&
            os->op->naxes == nd && os->nleaf == nd && os->attach == ATTACH_ROOT;
  for (int i = 0; ok && i < nd; i++) ok = os->op->axes[i]->extent == a->axes[i]->extent;
  const TeTensor *m = first_read(a->body); /* M[alpha^2, K/kb, PP, kb] */
  int64_t kb = m && m->ndim == 4 ? m->shape[3] : 0, tile = m && m->shape[0] == 36 ? 4 : 2;
  if (ok) ok = kb && (nd == 5 ? a->axes[4]->extent == kb : a->axes[1]->extent % kb == 0);
  if (!ok) {
    if (ys && ys != os) topi_schedule_stage_generic(c, ys);
    if (os) topi_schedule_stage_generic(c, os);
    return;
  }
  if (os != ys) te_compute_inline(ys);
  TeOp *o = os->op;
  IterVar *ko, *ki, *ho, *hi, *wo, *wi;
  if (nd == 5)
    ko = o->axes[1], ki = o->axes[4];
  else
    topi_split(os, o->axes[1], kb, &ko, &ki);
  topi_split(os, o->axes[2], tile, &ho, &hi);
  topi_split(os, o->axes[3], tile, &wo, &wi);
  IterVar *order[7] = {o->axes[0], ho, ko, wo, hi, wi, ki};
  te_reorder(os, 7, order);
  IterVar *f = te_fuse(os, o->axes[0], ho);
  f = te_fuse(os, f, ko);
  if (f->extent > 1) te_parallel(os, f);
  te_unroll(os, hi);
  te_unroll(os, wi);
  if (ki->extent > 1) te_vectorize(os, ki);
}
