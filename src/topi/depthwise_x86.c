/* depthwise_x86: the x86 depthwise 2-D convolution, vectorized along the output row (after TVM's
 * topi/x86/depthwise_conv2d.py, with the data kept NCHW instead of NCHWc so that no layout transform is
 * needed around it).
 *
 * Op nn.depthwise_conv2d(data[N, C, H, W], weight[C*M, 1, KH, KW]) -> [N, C*M, OH, OW]: output channel oc
 * convolves input channel oc / M (channel multiplier M >= 1) with its own KH x KW filter. Attributes as
 * nn.conv2d (strides, dilation, padding [top, left, bottom, right], groups = C). AlterOpLayout
 * (passes/graph/alter_op_layout.c, rewrite_depthwise) turns every float32 nn.conv2d with groups = C into it.
 *
 * Compute: dw_pad, the input surrounded by zeros (a separate stage, so that no tap tests its bounds), with
 * the width phase split by the stride s when s > 1: [N, C, HP, s, ceil(WP / s)] holding column x at
 * [x % s, x / s], so that tap (kh, kw) of the consecutive outputs ow.. reads consecutive elements
 * [.., (kw*d) % s, ow + (kw*d) / s] -> dw[n, oc, oh, ow] = sum_{kh, kw} pad[n, oc/M, oh*s + kh*d, ..] *
 * weight[oc, 0, kh, kw]. The result is NCHW, so the fused epilogue (bias, clip, residual add) is applied
 * right where the tile is stored.
 *
 * Schedule "depthwise_conv2d.x86" (knobs tile_ow, tile_oh, unroll_taps): the output (epilogue) is tiled
 * n, oc, oh.o, ow.o | oh.i, ow.i (vectorized) with n x oc (x oh.o while that is too little to share out)
 * fused into the parallel loop; dw_pad is computed inside that loop (one channel plane or row band at a
 * time: it stays in cache and each thread pads its own part); the convolution is a local accumulator of
 * tile_oh x tile_ow outputs computed at ow.o, loops kh, kw (unrolled) | oh (unrolled), ow (vectorized):
 * per tap one broadcast weight and tile_oh vector loads and FMAs, the accumulators in registers. The
 * fallback picks tile_ow among the divisors of OW that fill the vectors best (whole vectors first, then the
 * wider) and tile_oh so the accumulators take half of the vector registers.
 *
 * 8-bit data (uint8 / int8, NCHW only; attribute zero_point z, a float32 weight): the padding stage reads the
 * bytes and holds float(x) - z (0 in the padding), so a quantized model's depthwise conv (LowerConv, step 5)
 * reads its data as the bytes the conv before it wrote instead of a float32 copy four times their size; the
 * sums are the integer ones while every output's 255 * sum |w| stays below 2^24, which LowerConv checks.
 *
 * NCHWc form (attribute data_block b, set by ConvertLayoutNCHWc when the data comes from packed convs in
 * NCHWc; multiplier 1): data [N, C/b, H, W, b], weight [C/b, 1, KH, KW, b] -> [N, C/b, OH, OW, b]. Vectors
 * run along the channel block, so every tap is one contiguous vector load whatever the stride or width (7x7
 * and 14x14 layers fill the vectors too), and dw_pad [N, C/b, PH, PW, b] tests rows and columns only, as
 * scalars. Schedule: n x C/b x oh.o (tile_oh rows) fused into the parallel loop with dw_pad's rows for that
 * step computed there; a tile of tile_ow accumulators (ow unrolled, as many as the registers hold beside
 * the weight and the loads) per tap: one weight vector, tile_ow FMAs. */
#include <string.h>
#include "topi/topi.h"

#define PARALLEL_MIN_WORK 16384 /* multiply-adds below which a parallel launch costs more than it saves */

/* ---------------------------------------------------------------- attributes and type relation */

typedef struct Depthwise {
  int64_t n, c, h, w, m, kh, kw, oh, ow;
  int64_t strides[2], dil[2], pad[4]; /* pad: top, left, bottom, right */
  int64_t ph, pw;                     /* rows and columns of the input the windows reach, pads included */
  int64_t b;                          /* data_block: 0 NCHW, else the channel block (c counts blocks) */
  bool bytes;                         /* 8-bit data: the padding stage converts it, minus zero_point */
  int64_t zp;
} Depthwise;

static mlc_status depthwise_of(const Node *n, Depthwise *p, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *k = &n->inputs[1]->type;
  memset(p, 0, sizeof *p);
  p->b = ir_attr_int(n, "data_block", 0);
  int rank = p->b ? 5 : 4;
  if (p->b < 0) return diag_set(d, MLC_ERR_INVALID, "nn.depthwise_conv2d: data_block must be >= 0");
  if (x->ndim != rank || k->ndim != rank)
    return diag_set(d, MLC_ERR_INVALID, "nn.depthwise_conv2d expects rank-%d data and weight, got %d and %d", rank,
                    x->ndim, k->ndim);
  if (p->b && (x->dims[4] != p->b || k->dims[4] != p->b || k->dims[0] != x->dims[1]))
    return diag_set(d, MLC_ERR_INVALID,
                    "nn.depthwise_conv2d with data_block %lld expects data [N, C/%lld, H, W, %lld] and weight "
                    "[C/%lld, 1, KH, KW, %lld]",
                    (long long)p->b, (long long)p->b, (long long)p->b, (long long)p->b, (long long)p->b);
  p->bytes = x->dtype == MLC_U8 || x->dtype == MLC_I8;
  if ((x->dtype != MLC_F32 && !p->bytes) || k->dtype != MLC_F32 || (p->bytes && p->b))
    return diag_set(d, MLC_ERR_UNSUPPORTED,
                    "nn.depthwise_conv2d supports float32, or NCHW uint8 / int8 data, by a float32 weight; got %s "
                    "by %s",
                    mlc_dtype_name(x->dtype), mlc_dtype_name(k->dtype));
  p->zp = ir_attr_int(n, "zero_point", 0);
  if (p->bytes ? p->zp < (x->dtype == MLC_U8 ? 0 : -128) || p->zp > (x->dtype == MLC_U8 ? 255 : 127) : p->zp != 0)
    return diag_set(d, MLC_ERR_INVALID, "nn.depthwise_conv2d: zero_point %lld does not fit %s data", (long long)p->zp,
                    mlc_dtype_name(x->dtype));
  mlc_status st = topi_conv2d_window(n, p->strides, p->dil, p->pad, d);
  if (st) return st;
  p->n = x->dims[0];
  p->c = x->dims[1];
  p->h = x->dims[2];
  p->w = x->dims[3];
  p->kh = k->dims[2];
  p->kw = k->dims[3];
  int64_t chans = p->b ? p->c * p->b : p->c;
  int64_t groups = ir_attr_int(n, "groups", chans);
  if (groups != chans || p->c < 1 || k->dims[1] != 1 || k->dims[0] % p->c)
    return diag_set(d, MLC_ERR_INVALID,
                    "nn.depthwise_conv2d: weight [%lld, %lld, ..] and groups %lld do not fit %lld channels",
                    (long long)k->dims[0], (long long)k->dims[1], (long long)groups, (long long)chans);
  p->m = k->dims[0] / p->c;
  int64_t sh = (p->kh - 1) * p->dil[0] + 1, sw = (p->kw - 1) * p->dil[1] + 1;
  int64_t ah = p->h + p->pad[0] + p->pad[2] - sh, aw = p->w + p->pad[1] + p->pad[3] - sw;
  if (p->kh < 1 || p->kw < 1 || p->m < 1 || ah < 0 || aw < 0)
    return diag_set(d, MLC_ERR_INVALID, "nn.depthwise_conv2d: kernel larger than the padded input");
  p->oh = ah / p->strides[0] + 1;
  p->ow = aw / p->strides[1] + 1;
  p->ph = (p->oh - 1) * p->strides[0] + sh;
  p->pw = (p->ow - 1) * p->strides[1] + sw;
  return MLC_OK;
}

static mlc_status depthwise_infer(Node *n, Diag *d) {
  Depthwise p;
  mlc_status st = depthwise_of(n, &p, d);
  if (st) return st;
  TensorType o = {.dtype = MLC_F32, .ndim = 4, .dims = {p.n, p.c * p.m, p.oh, p.ow}};
  if (p.b) {
    if (p.m != 1)
      return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.depthwise_conv2d: data_block needs a channel multiplier of 1");
    o = (TensorType){.dtype = MLC_F32, .ndim = 5, .dims = {p.n, p.c, p.oh, p.ow, p.b}};
  }
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* ---------------------------------------------------------------- compute */

typedef struct DwCtx {
  Depthwise p;
  TeTensor *data, *pad, *weight;
  bool phase_split; /* pad is [N, C, PH, s, ceil(PW / s)] */
  int64_t pad_cols;  /* columns the padding stage holds: PW, or s * ceil(PW / s) when phase split */
} DwCtx;

static Expr *pad_body(TeCtx *c, Expr **idx, void *user) {
  DwCtx *k = user;
  Arena *a = c->arena;
  const Depthwise *p = &k->p;
  Expr *x = idx[3];
  int64_t wext = k->pad_cols;
  if (k->phase_split) /* [.., phase, j]: column j * s + phase */
    x = tir_add(a, tir_mul(a, idx[4], tir_idx(a, p->strides[1])), idx[3]);
  Expr *ih = tir_sub(a, idx[2], tir_idx(a, p->pad[0])), *iw = tir_sub(a, x, tir_idx(a, p->pad[1]));
  Expr *ok = NULL;
  Expr *conds[4] = {p->pad[0] ? tir_bin(a, E_GE, ih, tir_idx(a, 0)) : NULL,
                    p->ph - p->pad[0] > p->h ? tir_bin(a, E_LT, ih, tir_idx(a, p->h)) : NULL,
                    p->pad[1] ? tir_bin(a, E_GE, iw, tir_idx(a, 0)) : NULL,
                    wext - p->pad[1] > p->w ? tir_bin(a, E_LT, iw, tir_idx(a, p->w)) : NULL};
  for (int i = 0; i < 4; i++)
    if (conds[i]) ok = ok ? tir_bin(a, E_AND, ok, conds[i]) : conds[i];
  /* clamped indices keep the read in bounds; the select picks zero outside */
  Expr *ch = tir_bin(a, E_MIN, tir_bin(a, E_MAX, ih, tir_idx(a, 0)), tir_idx(a, p->h - 1));
  Expr *cw = tir_bin(a, E_MIN, tir_bin(a, E_MAX, iw, tir_idx(a, 0)), tir_idx(a, p->w - 1));
  Expr *ri[4] = {idx[0], idx[1], ch, cw};
  Expr *v = te_read(c, k->data, 4, ri);
  if (p->bytes) v = tir_sub(a, tir_cast(a, MLC_F32, v), tir_float(a, MLC_F32, (double)p->zp));
  return ok ? tir_select(a, ok, v, tir_float(a, MLC_F32, 0)) : v;
}

/* blocked: [N, C/b, PH, PW, b], the conditions on rows and columns only, so a vector of the b channels is
 * one contiguous load (or zeros) */
static Expr *pad_blocked_body(TeCtx *c, Expr **idx, void *user) {
  DwCtx *k = user;
  Arena *a = c->arena;
  const Depthwise *p = &k->p;
  Expr *ih = tir_sub(a, idx[2], tir_idx(a, p->pad[0])), *iw = tir_sub(a, idx[3], tir_idx(a, p->pad[1]));
  Expr *ok = NULL;
  Expr *conds[4] = {p->pad[0] ? tir_bin(a, E_GE, ih, tir_idx(a, 0)) : NULL,
                    p->ph - p->pad[0] > p->h ? tir_bin(a, E_LT, ih, tir_idx(a, p->h)) : NULL,
                    p->pad[1] ? tir_bin(a, E_GE, iw, tir_idx(a, 0)) : NULL,
                    p->pw - p->pad[1] > p->w ? tir_bin(a, E_LT, iw, tir_idx(a, p->w)) : NULL};
  for (int i = 0; i < 4; i++)
    if (conds[i]) ok = ok ? tir_bin(a, E_AND, ok, conds[i]) : conds[i];
  Expr *ch = tir_bin(a, E_MIN, tir_bin(a, E_MAX, ih, tir_idx(a, 0)), tir_idx(a, p->h - 1));
  Expr *cw = tir_bin(a, E_MIN, tir_bin(a, E_MAX, iw, tir_idx(a, 0)), tir_idx(a, p->w - 1));
  Expr *ri[5] = {idx[0], idx[1], ch, cw, idx[4]};
  Expr *v = te_read(c, k->data, 5, ri);
  return ok ? tir_select(a, ok, v, tir_float(a, MLC_F32, 0)) : v;
}

/* blocked: out[n, cb, oh, ow, ci] = sum_{kh, kw} pad[n, cb, oh*s + kh*d, ow*s + kw*d, ci] * w[cb, 0, kh, kw, ci] */
static Expr *conv_blocked_body(TeCtx *c, Expr **idx, void *user) {
  DwCtx *k = user;
  Arena *a = c->arena;
  const Depthwise *p = &k->p;
  IterVar *ry = te_reduce_axis(c, "ry", p->kh), *rx = te_reduce_axis(c, "rx", p->kw);
  Expr *kh = tir_varref(a, ry->var), *kw = tir_varref(a, rx->var);
  Expr *ih = tir_add(a, tir_mul(a, idx[2], tir_idx(a, p->strides[0])), tir_mul(a, kh, tir_idx(a, p->dil[0])));
  Expr *iw = tir_add(a, tir_mul(a, idx[3], tir_idx(a, p->strides[1])), tir_mul(a, kw, tir_idx(a, p->dil[1])));
  Expr *di[5] = {idx[0], idx[1], ih, iw, idx[4]};
  Expr *wi[5] = {idx[1], tir_idx(a, 0), kh, kw, idx[4]};
  Expr *prod = tir_mul(a, te_read(c, k->pad, 5, di), te_read(c, k->weight, 5, wi));
  IterVar *ax[2] = {ry, rx};
  return te_reduce(c, RED_SUM, prod, 2, ax, NULL, NULL);
}

static Expr *conv_body(TeCtx *c, Expr **idx, void *user) {
  DwCtx *k = user;
  Arena *a = c->arena;
  const Depthwise *p = &k->p;
  IterVar *ry = te_reduce_axis(c, "ry", p->kh), *rx = te_reduce_axis(c, "rx", p->kw);
  Expr *kh = tir_varref(a, ry->var), *kw = tir_varref(a, rx->var);
  Expr *ic = p->m > 1 ? tir_bin(a, E_FLOORDIV, idx[1], tir_idx(a, p->m)) : idx[1];
  Expr *ih = tir_add(a, tir_mul(a, idx[2], tir_idx(a, p->strides[0])), tir_mul(a, kh, tir_idx(a, p->dil[0])));
  Expr *tap = tir_mul(a, kw, tir_idx(a, p->dil[1]));
  Expr *di[5] = {idx[0], ic, ih};
  int nd = 4;
  if (k->phase_split) { /* column ow*s + tap: phase tap % s, ow + tap / s */
    Expr *s = tir_idx(a, p->strides[1]);
    di[3] = tir_bin(a, E_FLOORMOD, tap, s);
    di[4] = tir_add(a, idx[3], tir_bin(a, E_FLOORDIV, tap, s));
    nd = 5;
  } else {
    di[3] = tir_add(a, tir_mul(a, idx[3], tir_idx(a, p->strides[1])), tap);
  }
  Expr *wi[4] = {idx[1], tir_idx(a, 0), kh, kw};
  Expr *prod = tir_mul(a, te_read(c, k->pad, nd, di), te_read(c, k->weight, 4, wi));
  IterVar *ax[2] = {ry, rx};
  return te_reduce(c, RED_SUM, prod, 2, ax, NULL, NULL);
}

static mlc_status depthwise_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  DwCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = depthwise_of(n, &k->p, d);
  if (st) return st;
  Depthwise *p = &k->p;
  k->data = ins[0];
  k->weight = ins[1];
  k->pad = ins[0];
  bool padded = p->pad[0] || p->pad[1] || p->ph > p->h || p->pw > p->w;
  if (p->b) {
    if (padded) {
      int64_t ps[5] = {p->n, p->c, p->ph, p->pw, p->b};
      k->pad = te_compute(c, "dw_pad", "depthwise_conv2d_pad", MLC_F32, 5, ps, pad_blocked_body, k);
    }
    int64_t os[5] = {p->n, p->c, p->oh, p->ow, p->b};
    outs[0] = te_compute(c, "depthwise_conv2d", "depthwise_conv2d", MLC_F32, 5, os, conv_blocked_body, k);
    return MLC_OK;
  }
  k->phase_split = p->strides[1] > 1;
  if (padded || k->phase_split || p->bytes) {
    int64_t s = p->strides[1];
    int64_t ps[5] = {p->n, p->c, p->ph, p->pw, 0};
    if (k->phase_split) {
      ps[3] = s;
      ps[4] = (p->pw + s - 1) / s;
    }
    k->pad_cols = k->phase_split ? s * ps[4] : p->pw;
    k->pad = te_compute(c, "dw_pad", "depthwise_conv2d_pad", MLC_F32, k->phase_split ? 5 : 4, ps, pad_body, k);
  }
  int64_t os[4] = {p->n, p->c * p->m, p->oh, p->ow};
  outs[0] = te_compute(c, "depthwise_conv2d", "depthwise_conv2d", MLC_F32, 4, os, conv_body, k);
  return MLC_OK;
}

const OpDef topi_ops_depthwise_x86[] = {
    /* name                 pattern                 in min/max  outs  relation          compute */
    {"nn.depthwise_conv2d", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, depthwise_infer, depthwise_compute, DYN_BATCH},
    {NULL},
};

/* ---------------------------------------------------------------- template */

/* anchor: the convolution (4-D NCHW or 5-D NCHWc, 2 reduce axes) */
static bool anchor_ok(const TeOp *a) {
  return a->kind == TE_COMPUTE && (a->naxes == 4 || a->naxes == 5) && a->nreduce == 2;
}


/* NCHWc: output columns per tile, one accumulator of the b channels each (b / lanes registers: a block of 16
 * is two AVX2 vectors); the rest of the registers hold the weight and the loads */
static int64_t blocked_tile_ow(const Target *t, int64_t ow, int64_t b) {
  int64_t lanes = topi_vector_lanes(t, MLC_F32), vecs = (b + lanes - 1) / lanes;
  int64_t most = (topi_vector_regs(t) - 2 * vecs - 2) / vecs;
  return topi_largest_divisor(ow, most < 1 ? 1 : most);
}

/* NCHWc: output rows per parallel step; the padded rows of a step are computed at it, (rows - 1) * s + the
 * kernel's reach, so a few rows keep that recomputation small */
static int64_t blocked_tile_oh(int64_t oh) { return topi_largest_divisor(oh, 8); }

/* the divisor of ow up to 4 vectors whose vectors are fullest (lanes used / lanes loaded), the wider on a
 * tie; when none fills half a vector (a prime width), one vector with a guarded last tile */
static int64_t default_tile_ow(int64_t ow, int lanes) {
  int64_t best = 0;
  double best_fill = 0;
  for (int64_t t = 1; t <= ow && t <= 4 * lanes; t++) {
    if (ow % t) continue;
    double fill = (double)t / (double)(((t + lanes - 1) / lanes) * lanes);
    if (fill > best_fill + 1e-9 || (fill > best_fill - 1e-9 && t > best)) best = t, best_fill = fill;
  }
  return best_fill >= 0.5 || ow < lanes ? best : lanes;
}

/* rows per tile: the accumulators (tile_oh x the vectors of a row) take up to half the vector registers */
static int64_t default_tile_oh(const Target *t, int64_t oh, int64_t tile_ow, int lanes) {
  int64_t vecs = (tile_ow + lanes - 1) / lanes, budget = topi_vector_regs(t) / 2 / (vecs ? vecs : 1);
  return topi_largest_divisor(oh, budget < 1 ? 1 : budget);
}

void topi_depthwise_x86_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  if (!anchor_ok(a)) return;
  int lanes = topi_vector_lanes(t, MLC_F32);
  int64_t oh = a->axes[2]->extent, ow = a->axes[3]->extent;
  if (a->naxes == 5) {
    TopiKnob *k = topi_knob_add(s, "tile_ow");
    for (int64_t f = 1; f <= ow && f <= topi_vector_regs(t) - 2; f++)
      if (ow % f == 0) topi_knob_choice(k, f);
    k = topi_knob_add(s, "tile_oh");
    for (int64_t f = 1; f <= oh && f <= 16; f++)
      if (oh % f == 0) topi_knob_choice(k, f);
    return;
  }
  TopiKnob *k = topi_knob_add(s, "tile_ow");
  for (int64_t f = 1; f <= ow && f <= 4 * lanes; f++)
    if (ow % f == 0) topi_knob_choice(k, f);
  topi_knob_choice(k, default_tile_ow(ow, lanes));
  k = topi_knob_add(s, "tile_oh");
  for (int64_t f = 1; f <= oh && f <= 8; f++)
    if (oh % f == 0) topi_knob_choice(k, f);
  k = topi_knob_add(s, "unroll_taps");
  topi_knob_choice(k, 0);
  topi_knob_choice(k, 1);
}

void topi_depthwise_x86_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (!anchor_ok(a)) return;
  if (a->naxes == 5) {
    topi_cfg_set(cfg, "tile_ow", blocked_tile_ow(t, a->axes[3]->extent, a->axes[4]->extent));
    topi_cfg_set(cfg, "tile_oh", blocked_tile_oh(a->axes[2]->extent));
    return;
  }
  int lanes = topi_vector_lanes(t, MLC_F32);
  int64_t tow = default_tile_ow(a->axes[3]->extent, lanes);
  topi_cfg_set(cfg, "tile_ow", tow);
  topi_cfg_set(cfg, "tile_oh", default_tile_oh(t, a->axes[2]->extent, tow, lanes));
  topi_cfg_set(cfg, "unroll_taps", a->reduce_axes[0]->extent * a->reduce_axes[1]->extent <= 49);
}

/* Whether the convolution can be a local tile computed inside the output's loops: the output (epilogue)
 * has its shape and no reduction, and the convolution itself is not a group output. */
static bool local_ok(TeSchedule *s, const TeOp *a, const TeTensor *out) {
  bool epi = out && out->op != a;
  for (int i = 0; i < s->noutputs; i++)
    if (s->outputs[i]->op == a && epi) return false;
  if (!epi) return true;
  const TeOp *o = out->op;
  if (o->kind != TE_COMPUTE || o->nreduce != 0 || o->naxes != a->naxes) return false;
  for (int i = 0; i < a->naxes; i++)
    if (o->axes[i]->extent != a->axes[i]->extent) return false;
  return true;
}

/* NCHWc: the output (epilogue) tiled n, cb, oh.o | oh.i, ow.o, ow.i (unrolled), ci (vectorized) with n x cb x
 * oh.o fused into the parallel loop and dw_pad's rows for that step computed there; the accumulator tile of
 * tile_ow x b outputs computed at ow.o: kh, kw (unrolled) | ow (unrolled), ci (vectorized), so each tap is one
 * weight vector and tile_ow FMAs with a contiguous vector load each. */
static void schedule_blocked(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, TeStage *ps, const TopiConfig *cfg) {
  int64_t tow = topi_config_get(cfg, "tile_ow", blocked_tile_ow(c->target, a->axes[3]->extent, a->axes[4]->extent));
  int64_t toh = topi_config_get(cfg, "tile_oh", blocked_tile_oh(a->axes[2]->extent));
  int64_t work = 1;
  for (int i = 0; i < 5; i++) work *= a->axes[i]->extent;
  work *= a->reduce_axes[0]->extent * a->reduce_axes[1]->extent;
  bool epi = out && out->op != a;
  TeTensor *C = a->outputs[0], *L = te_cache_write(s, C);
  if (L == C) return;
  if (epi) te_compute_inline(te_stage(s, C));
  TeStage *os = te_stage(s, epi ? out : C), *ls = te_stage(s, L);
  TeOp *o = os->op;
  IterVar *hoo, *hoi, *woo, *woi;
  topi_split(os, o->axes[2], toh, &hoo, &hoi);
  topi_split(os, o->axes[3], tow, &woo, &woi);
  IterVar *order[7] = {o->axes[0], o->axes[1], hoo, hoi, woo, woi, o->axes[4]};
  te_reorder(os, 7, order);
  IterVar *par[3] = {o->axes[0], o->axes[1], hoo};
  IterVar *f = topi_fuse_range(os, par, 3);
  if (work >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(os, f);
  if (woi->extent > 1) te_unroll(os, woi);
  if (o->axes[4]->extent > 1) te_vectorize(os, o->axes[4]);
  TeOp *lo = ls->op;
  IterVar *lorder[7] = {lo->axes[0], lo->axes[1], lo->axes[2], lo->reduce_axes[0], lo->reduce_axes[1],
                        lo->axes[3], lo->axes[4]};
  te_reorder(ls, 7, lorder);
  if (lo->reduce_axes[0]->extent > 1) te_unroll(ls, lo->reduce_axes[0]);
  if (lo->reduce_axes[1]->extent > 1) te_unroll(ls, lo->reduce_axes[1]);
  if (tow > 1) te_unroll(ls, lo->axes[3]);
  if (lo->axes[4]->extent > 1) te_vectorize(ls, lo->axes[4]);
  te_compute_at(ls, os, woo);
  if (ps) {
    TeOp *po = ps->op;
    ps->attach = ATTACH_ROOT;
    if (po->axes[4]->extent > 1) te_vectorize(ps, po->axes[4]);
    te_compute_at(ps, os, f);
  }
}

void topi_depthwise_x86_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *st = te_stage(s, a->outputs[0]), *ps = NULL;
  if (!st) return;
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->op->tag && !strcmp(s->stages[i]->op->tag, "depthwise_conv2d_pad")) ps = s->stages[i];
  bool epi = out && out->op != a;
  if (anchor_ok(a) && a->naxes == 5 && st->nleaf == 7 && local_ok(s, a, out)) {
    schedule_blocked(c, s, a, out, ps, cfg);
    return;
  }
  if (!anchor_ok(a) || st->nleaf != a->naxes + 2 || !local_ok(s, a, out)) {
    /* a group that also outputs the convolution itself: the generic schedules, dw_pad at the root */
    topi_schedule_stage_generic(c, st);
    if (ps) {
      ps->attach = ATTACH_ROOT;
      topi_schedule_stage_generic(c, ps);
    }
    if (epi) {
      TeStage *os = te_stage(s, out);
      if (os) topi_schedule_stage_generic(c, os);
    }
    return;
  }
  int lanes = topi_vector_lanes(c->target, MLC_F32);
  int64_t tow = topi_config_get(cfg, "tile_ow", default_tile_ow(a->axes[3]->extent, lanes));
  int64_t toh = topi_config_get(cfg, "tile_oh", 1);
  bool unroll = topi_config_get(cfg, "unroll_taps", 1) != 0;
  int64_t work = a->axes[0]->extent * a->axes[1]->extent * a->axes[2]->extent * a->axes[3]->extent *
                 a->reduce_axes[0]->extent * a->reduce_axes[1]->extent;
  TeTensor *C = a->outputs[0], *L = te_cache_write(s, C);
  if (L == C) return;
  if (epi) te_compute_inline(te_stage(s, C));
  TeStage *os = te_stage(s, epi ? out : C), *ls = te_stage(s, L);
  /* the output: n, oc, oh.o, ow.o | oh.i, ow.i */
  TeOp *o = os->op;
  IterVar *hoo, *hoi, *woo, *woi;
  topi_split(os, o->axes[2], toh, &hoo, &hoi);
  topi_split(os, o->axes[3], tow, &woo, &woi);
  IterVar *order[6] = {o->axes[0], o->axes[1], hoo, woo, hoi, woi};
  te_reorder(os, 6, order);
  IterVar *par[3] = {o->axes[0], o->axes[1], hoo};
  int np = o->axes[0]->extent * o->axes[1]->extent < 2 * topi_num_cores(c->target) ? 3 : 2;
  IterVar *f = topi_fuse_range(os, par, np);
  if (work >= PARALLEL_MIN_WORK && f->extent > 1) te_parallel(os, f);
  if (hoi->extent > 1) te_unroll(os, hoi);
  if (woi->extent > 1) te_vectorize(os, woi);
  /* the accumulator tile: kh, kw | oh (unrolled), ow (vectorized); bound inference gives it the tile's
   * extents */
  TeOp *lo = ls->op;
  IterVar *lorder[6] = {lo->axes[0], lo->axes[1], lo->reduce_axes[0], lo->reduce_axes[1], lo->axes[2], lo->axes[3]};
  te_reorder(ls, 6, lorder);
  if (unroll) {
    if (lo->reduce_axes[0]->extent > 1) te_unroll(ls, lo->reduce_axes[0]);
    if (lo->reduce_axes[1]->extent > 1) te_unroll(ls, lo->reduce_axes[1]);
  }
  if (toh > 1) te_unroll(ls, lo->axes[2]);
  if (tow > 1) te_vectorize(ls, lo->axes[3]);
  te_compute_at(ls, os, woo);
  if (ps) { /* the group schedule inlined it: give it memory, computed per parallel step */
    TeOp *po = ps->op;
    ps->attach = ATTACH_ROOT;
    if (po->axes[po->naxes - 1]->extent > 1) te_vectorize(ps, po->axes[po->naxes - 1]);
    te_compute_at(ps, os, f);
  }
}
