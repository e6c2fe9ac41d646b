/* conv3d_x86: the x86 direct 3-D convolution with pre-packed weights and a register-blocked accumulator, the
 * 3-D form of conv2d_x86.c's NCHW-in / NCHW-out packed conv (video models: R3D, MC3, R(2+1)D, S3D, whose
 * 3x7x7, 3x3x3, 1x3x3 and 3x1x1 convs ran at 3-50 GFLOP/s on the generic NCDHW schedule).
 *
 * Op nn.conv3d_packed(data[N, C, D, H, W], weight[OC/ocb, C, KD, KH, KW, ocb]) -> [N, OC, OD, OH, OW], with
 * nn.conv3d's attributes strides, dilation (3 each) and padding [front, top, left, back, bottom, right]
 * (groups 1), plus channels = OC when the weight's last block is zero-padded (OC not a multiple of ocb).
 * AlterOpLayout (passes/graph/alter_op_layout.c) rewrites a float32 nn.conv3d with a constant weight into it,
 * packing the weight with a reshape and a transpose that FoldConstant evaluates at compile time. Activations
 * stay NCDHW, so nothing else in the graph changes.
 *
 * Compute: data_pad (when there is padding, or the register tile needs a wider row: see
 * topi_conv_packed_tile) -> conv3d_packed[n, occ, od, oh, ow, ocb] = sum_{ic, kd, kh, kw}
 * pad[n, ic, od*sd + kd*dd, oh*sh + kh*dh, ow*sw + kw*dw] * weight[occ, ic, kd, kh, kw, ocb] (one vector of ocb
 * output channels per tap) -> the NCDHW result, an injective scatter of each ocb vector that is inlined into
 * the fused epilogue (bias, relu, residual add).
 *
 * A (KD, 1, 1) conv takes the temporal form instead (see temporal_form below): per frame a matrix product with
 * vectors along the fused H x W.
 *
 * Schedule "conv3d_packed.x86" (knobs tile_ow = reg_n, tile_ic, order; temporal form: tile_rows,
 * tile_vecs): the group output is tiled n, oc.o, od, oh, ow.o | ow.i (unrolled), oc.i (vectorized), or with
 * order 1 n, od, oh, oc.o, ow.o | .. (see direct_order), with its first three loops (and the fourth while that
 * is too little to share out) fused into the parallel loop; the packed conv is attached at ow.o, so per tile it computes a
 * reg_n x ocb block whose loops are ic.o, kd, kh, kw, ic.i | ocb (vectorized), ow.i (unrolled): reg_n vector
 * accumulators in registers, one weight vector load and reg_n broadcast FMAs per step, as in 2-D. */
#include <string.h>
#include "topi/topi.h"

typedef struct Conv3 {
  int64_t n, c, d, h, w, occ, ocb, oc, k[3], in[3], out[3], s[3], dil[3], pb[3], pe[3];
  int64_t owp; /* the packed conv's width: OW rounded up to a multiple of the register tile */
} Conv3;

static mlc_status conv3_of(const Node *n, Conv3 *p, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *k = &n->inputs[1]->type;
  memset(p, 0, sizeof *p);
  if (x->ndim != 5 || k->ndim != 6)
    return diag_set(d, MLC_ERR_INVALID, "nn.conv3d_packed expects rank-5 data and a rank-6 weight, got %d and %d",
                    x->ndim, k->ndim);
  if (x->dtype != MLC_F32 || k->dtype != MLC_F32)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.conv3d_packed supports float32 only");
  if (ir_attr_int(n, "groups", 1) != 1) return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.conv3d_packed: groups must be 1");
  int64_t s[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pad[6] = {0};
  int ns = ir_attr_ints(n, "strides", s, 3), nd = ir_attr_ints(n, "dilation", dl, 3),
      np = ir_attr_ints(n, "padding", pad, 6);
  if ((ns && ns != 3) || (nd && nd != 3) || (np && np != 6))
    return diag_set(d, MLC_ERR_INVALID, "nn.conv3d_packed: strides, dilation and padding need 3, 3 and 6 values");
  p->n = x->dims[0], p->c = x->dims[1], p->occ = k->dims[0], p->ocb = k->dims[5];
  if (k->dims[1] != p->c)
    return diag_set(d, MLC_ERR_INVALID, "weight has %lld input channels, data %lld", (long long)k->dims[1],
                    (long long)p->c);
  for (int i = 0; i < 3; i++) {
    p->in[i] = x->dims[2 + i], p->k[i] = k->dims[2 + i], p->s[i] = s[i], p->dil[i] = dl[i];
    p->pb[i] = pad[i], p->pe[i] = pad[3 + i];
    if (s[i] < 1 || dl[i] < 1 || pad[i] < 0 || pad[3 + i] < 0 || p->k[i] < 1)
      return diag_set(d, MLC_ERR_INVALID, "strides and dilations must be >= 1 and pads >= 0");
    int64_t avail = p->in[i] + p->pb[i] + p->pe[i] - ((p->k[i] - 1) * p->dil[i] + 1);
    if (avail < 0) return diag_set(d, MLC_ERR_INVALID, "kernel larger than the padded input");
    p->out[i] = avail / p->s[i] + 1;
  }
  p->d = p->in[0], p->h = p->in[1], p->w = p->in[2];
  p->oc = ir_attr_int(n, "channels", p->occ * p->ocb);
  if (p->ocb < 1 || p->oc <= (p->occ - 1) * p->ocb || p->oc > p->occ * p->ocb)
    return diag_set(d, MLC_ERR_INVALID, "nn.conv3d_packed: %lld channels in %lld blocks of %lld", (long long)p->oc,
                    (long long)p->occ, (long long)p->ocb);
  return MLC_OK;
}

static mlc_status conv3_infer(Node *n, Diag *d) {
  Conv3 p;
  mlc_status st = conv3_of(n, &p, d);
  if (st) return st;
  n->outputs[0]->type = (TensorType){.dtype = MLC_F32, .ndim = 5, .dims = {p.n, p.oc, p.out[0], p.out[1], p.out[2]}};
  return MLC_OK;
}

/* ---------------------------------------------------------------- compute */

typedef struct Conv3Ctx {
  Conv3 p;
  TeTensor *data, *pad, *weight, *conv;
} Conv3Ctx;

static Expr *pad_body(TeCtx *c, Expr **idx, void *user) {
  Conv3Ctx *k = user;
  Arena *a = c->arena;
  Expr *ok = NULL, *ri[5] = {idx[0], idx[1]};
  for (int i = 0; i < 3; i++) {
    Expr *x = tir_sub(a, idx[2 + i], tir_idx(a, k->p.pb[i]));
    Expr *in = tir_bin(a, E_AND, tir_bin(a, E_GE, x, tir_idx(a, 0)), tir_bin(a, E_LT, x, tir_idx(a, k->p.in[i])));
    ok = ok ? tir_bin(a, E_AND, ok, in) : in;
    /* clamped indices keep the read in bounds; the select picks zero outside */
    ri[2 + i] = tir_bin(a, E_MIN, tir_bin(a, E_MAX, x, tir_idx(a, 0)), tir_idx(a, k->p.in[i] - 1));
  }
  return tir_select(a, ok, te_read(c, k->data, 5, ri), tir_float(a, MLC_F32, 0));
}

static Expr *conv_body(TeCtx *c, Expr **idx, void *user) {
  Conv3Ctx *k = user;
  Arena *a = c->arena;
  IterVar *ax[4] = {te_reduce_axis(c, "rc", k->p.c), te_reduce_axis(c, "rz", k->p.k[0]),
                    te_reduce_axis(c, "ry", k->p.k[1]), te_reduce_axis(c, "rx", k->p.k[2])};
  Expr *ic = tir_varref(a, ax[0]->var), *di[5] = {idx[0], ic}, *wi[6] = {idx[1], ic, NULL, NULL, NULL, idx[5]};
  for (int i = 0; i < 3; i++) {
    Expr *t = tir_varref(a, ax[1 + i]->var);
    di[2 + i] = tir_add(a, tir_mul(a, idx[2 + i], tir_idx(a, k->p.s[i])), tir_mul(a, t, tir_idx(a, k->p.dil[i])));
    wi[2 + i] = t;
  }
  Expr *prod = tir_mul(a, te_read(c, k->pad, 5, di), te_read(c, k->weight, 6, wi));
  return te_reduce(c, RED_SUM, prod, 4, ax, NULL, NULL);
}

static Expr *unpack_body(TeCtx *c, Expr **idx, void *user) {
  Conv3Ctx *k = user;
  Arena *a = c->arena;
  Expr *b = tir_idx(a, k->p.ocb);
  Expr *ri[6] = {idx[0], tir_bin(a, E_FLOORDIV, idx[1], b), idx[2], idx[3], idx[4], tir_bin(a, E_FLOORMOD, idx[1], b)};
  return te_read(c, k->conv, 6, ri);
}

/* ---- the temporal form: a (KD, 1, 1) conv with spatial strides 1 and no spatial padding (S3D's and R(2+1)D's
 * temporal convs) is, per output frame, the matrix product Y[n, :, od, hw] = W[OC][C x KD] . X[n, :, frames of
 * od, hw]. Its compute conv3d_packed[n, oc, od, hw] = sum_{ic, kd} data[n, ic, od*sd + kd*dd - pd, hw]
 * * weight[oc / ocb, ic, kd, 0, 0, oc % ocb] puts the vectors along hw (contiguous loads and stores) and
 * broadcasts one weight per output channel row, as conv2d_x86.c's rows form. A frame in the depth padding
 * reads a clamped frame and selects zero (the condition is the same for the whole vector), so no padded copy
 * of the often huge input is made. It needs whole vectors: OH*OW a multiple of the float lanes. */

static bool temporal_form(const Target *t, const Conv3 *p) {
  return p->k[1] == 1 && p->k[2] == 1 && p->s[1] == 1 && p->s[2] == 1 && !p->pb[1] && !p->pb[2] && !p->pe[1] &&
         !p->pe[2] && p->oc == p->occ * p->ocb && (p->out[1] * p->out[2]) % topi_vector_lanes(t, MLC_F32) == 0;
}

static Expr *temporal_body(TeCtx *c, Expr **idx, void *user) {
  Conv3Ctx *k = user;
  Arena *a = c->arena;
  IterVar *ax[2] = {te_reduce_axis(c, "rc", k->p.c), te_reduce_axis(c, "rz", k->p.k[0])};
  Expr *ic = tir_varref(a, ax[0]->var), *kd = tir_varref(a, ax[1]->var), *w = tir_idx(a, k->p.w),
       *b = tir_idx(a, k->p.ocb);
  Expr *id = tir_sub(a, tir_add(a, tir_mul(a, idx[2], tir_idx(a, k->p.s[0])), tir_mul(a, kd, tir_idx(a, k->p.dil[0]))),
                     tir_idx(a, k->p.pb[0]));
  Expr *ok = tir_bin(a, E_AND, tir_bin(a, E_GE, id, tir_idx(a, 0)), tir_bin(a, E_LT, id, tir_idx(a, k->p.d)));
  Expr *cd = tir_bin(a, E_MIN, tir_bin(a, E_MAX, id, tir_idx(a, 0)), tir_idx(a, k->p.d - 1));
  Expr *di[5] = {idx[0], ic, k->p.pb[0] || k->p.pe[0] ? cd : id, tir_bin(a, E_FLOORDIV, idx[3], w),
                 tir_bin(a, E_FLOORMOD, idx[3], w)};
  Expr *wi[6] = {tir_bin(a, E_FLOORDIV, idx[1], b), ic, kd, tir_idx(a, 0), tir_idx(a, 0), tir_bin(a, E_FLOORMOD, idx[1], b)};
  Expr *x = te_read(c, k->data, 5, di);
  if (k->p.pb[0] || k->p.pe[0]) x = tir_select(a, ok, x, tir_float(a, MLC_F32, 0));
  Expr *prod = tir_mul(a, x, te_read(c, k->weight, 6, wi));
  return te_reduce(c, RED_SUM, prod, 2, ax, NULL, NULL);
}

static Expr *temporal_unpack_body(TeCtx *c, Expr **idx, void *user) {
  Conv3Ctx *k = user;
  Arena *a = c->arena;
  Expr *ri[4] = {idx[0], idx[1], idx[2], tir_add(a, tir_mul(a, idx[3], tir_idx(a, k->p.out[2])), idx[4])};
  return te_read(c, k->conv, 4, ri);
}

static mlc_status conv3_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  Conv3Ctx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = conv3_of(n, &k->p, d);
  if (st) return st;
  Conv3 *p = &k->p;
  k->data = k->pad = ins[0];
  k->weight = ins[1];
  if (temporal_form(c->target, p)) {
    int64_t cs[4] = {p->n, p->oc, p->out[0], p->out[1] * p->out[2]}, os[5] = {p->n, p->oc, p->out[0], p->out[1], p->out[2]};
    k->conv = te_compute(c, "conv3d_packed", "conv3d_packed", MLC_F32, 4, cs, temporal_body, k);
    outs[0] = te_compute(c, "conv3d_ncdhw", "conv3d_packed_unpack", MLC_F32, 5, os, temporal_unpack_body, k);
    return MLC_OK;
  }
  topi_conv_packed_tile(c->target, p->out[2], p->ocb, &p->owp);
  /* the padded input covers the extra columns: (owp - 1) * stride + the dilated kernel width */
  int64_t wneed = (p->owp - 1) * p->s[2] + (p->k[2] - 1) * p->dil[2] + 1, wpad = p->w + p->pb[2] + p->pe[2];
  if (wneed > wpad) wpad = wneed;
  bool padded = wpad > p->w;
  for (int i = 0; i < 3; i++) padded |= p->pb[i] || p->pe[i];
  if (padded) {
    int64_t ps[5] = {p->n, p->c, p->d + p->pb[0] + p->pe[0], p->h + p->pb[1] + p->pe[1], wpad};
    k->pad = te_compute(c, "data_pad", "conv3d_packed_pad", MLC_F32, 5, ps, pad_body, k);
  }
  int64_t cs[6] = {p->n, p->occ, p->out[0], p->out[1], p->owp, p->ocb};
  k->conv = te_compute(c, "conv3d_packed", "conv3d_packed", MLC_F32, 6, cs, conv_body, k);
  int64_t os[5] = {p->n, p->oc, p->out[0], p->out[1], p->out[2]};
  outs[0] = te_compute(c, "conv3d_ncdhw", "conv3d_packed_unpack", MLC_F32, 5, os, unpack_body, k);
  return MLC_OK;
}

const OpDef topi_ops_conv3d_x86[] = {
    /* name               pattern                 in min/max  outs  relation      compute */
    {"nn.conv3d_packed", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, conv3_infer, conv3_compute, DYN_BATCH},
    {NULL},
};

/* ---------------------------------------------------------------- template */

/* anchor: the packed conv [n, occ, od, oh, ow, ocb], reduce axes ic, kd, kh, kw */
static bool anchor_ok(const TeOp *a) { return a->kind == TE_COMPUTE && a->naxes == 6 && a->nreduce == 4; }

/* anchor of the temporal form: [n, oc, od, hw], reduce axes ic, kd */
static bool temporal_anchor_ok(const TeOp *a) { return a->kind == TE_COMPUTE && a->naxes == 4 && a->nreduce == 2; }

/* The temporal form's schedule: the output [n, OC, OD, OH, OW] (unpack + epilogue) is tiled
 * n, od, hw.o, oc.o | oc.i (unrolled rows), hw.v (unrolled vectors), hw.l (lanes) with hw = OH x OW fused and
 * n x od x hw.o the parallel loop; the conv is computed at oc.o: ic, kd, then the rows x vectors tile. The
 * hw tile's input frames (C x KD vectors) are read from memory once and stay in L2 while every output
 * channel row block reuses them, instead of the whole input streaming past once per block. */
static void schedule_temporal(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *cs = te_stage(s, a->outputs[0]);
  int64_t lanes = topi_vector_lanes(c->target, MLC_F32), oc = a->axes[1]->extent, hw = a->axes[3]->extent, r0, v0;
  topi_conv_rows_tile(c->target, oc, hw / lanes, &r0, &v0);
  int64_t rows = topi_config_get(cfg, "tile_rows", r0), vecs = topi_config_get(cfg, "tile_vecs", v0);
  if (!topi_conv_rows_ok(oc, rows)) rows = r0;
  if (vecs < 1 || (hw / lanes) % vecs) vecs = v0;
  IterVar *cro, *cri, *cho, *chi, *chv, *chl;
  topi_split(cs, a->axes[1], rows, &cro, &cri);
  topi_split(cs, a->axes[3], vecs * lanes, &cho, &chi);
  topi_split(cs, chi, lanes, &chv, &chl);
  IterVar *order[9] = {a->axes[0], a->axes[2], cho, cro, a->reduce_axes[0], a->reduce_axes[1], cri, chv, chl};
  te_reorder(cs, 9, order);
  te_unroll(cs, cri);
  te_unroll(cs, chv);
  te_vectorize(cs, chl);
  TeStage *os = out ? te_stage(s, out) : NULL;
  bool tiled = os && os->op != a && os->op->kind == TE_COMPUTE && os->op->nreduce == 0 && out->ndim == 5 &&
               os->nleaf == 5 && os->attach == ATTACH_ROOT && out->shape[0] == a->axes[0]->extent &&
               out->shape[1] == oc && out->shape[2] == a->axes[2]->extent && out->shape[3] * out->shape[4] == hw;
  if (!tiled) { /* the conv is materialised whole: parallel over n x od x hw.o */
    IterVar *f = te_fuse(cs, a->axes[0], a->axes[2]);
    f = te_fuse(cs, f, cho);
    if (f->extent > 1) te_parallel(cs, f);
    return;
  }
  TeOp *o = os->op;
  IterVar *oro, *ori, *hwo, *hwi, *hwv, *hwl;
  IterVar *ohw = te_fuse(os, o->axes[3], o->axes[4]);
  topi_split(os, o->axes[1], rows, &oro, &ori);
  topi_split(os, ohw, vecs * lanes, &hwo, &hwi);
  topi_split(os, hwi, lanes, &hwv, &hwl);
  IterVar *oorder[7] = {o->axes[0], o->axes[2], hwo, oro, ori, hwv, hwl};
  te_reorder(os, 7, oorder);
  IterVar *f = te_fuse(os, o->axes[0], o->axes[2]);
  f = te_fuse(os, f, hwo);
  if (f->extent > 1) te_parallel(os, f);
  te_unroll(os, ori);
  te_unroll(os, hwv);
  te_vectorize(os, hwl);
  te_compute_at(cs, os, oro);
}

/* Loop order of the direct form's tiles (knob "order", as conv2d_x86.c's): 0 walks the output channel blocks
 * outermost, so a block's weights stay in cache while the whole input streams past once per block; 1 walks
 * the output rows (n, od, oh) outermost, so a row's input stays in cache while every block's weights stream
 * past once per row. The fallback takes 1 when the input is larger than 3/4 of L2 and re-reading it once per
 * block would fetch clearly more than re-reading the weights once per row (a 64 -> 144 (1, 3, 3) conv over
 * 16 frames of 56 x 56 streams its 13.8 MB input 9 times in order 0). */
static int direct_order(const Target *t, const TeOp *a) {
  double w = 4.0 * (double)(a->axes[1]->extent * a->axes[5]->extent), in = 4.0;
  for (int i = 0; i < a->nreduce; i++) w *= (double)a->reduce_axes[i]->extent;
  for (int i = 0; i < a->inputs[0]->ndim; i++) in *= (double)a->inputs[0]->shape[i];
  double budget = (double)(t && t->l2_bytes > 0 ? t->l2_bytes : 256 * 1024) * 0.75;
  double rows = (double)(a->axes[0]->extent * a->axes[2]->extent * a->axes[3]->extent);
  double t0 = w + (in > budget ? (double)a->axes[1]->extent : 1) * in, t1 = in + (w > budget ? rows : 1) * w;
  return t1 < 0.8 * t0 ? 1 : 0;
}

void topi_conv3d_packed_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  if (temporal_anchor_ok(a)) {
    int64_t oc = a->axes[1]->extent, nvec = a->axes[3]->extent / topi_vector_lanes(t, MLC_F32);
    TopiKnob *k = topi_knob_add(s, "tile_rows");
    for (int64_t r = 1; r <= 16; r *= 2)
      if (topi_conv_rows_ok(oc, r)) topi_knob_choice(k, r);
    k = topi_knob_add(s, "tile_vecs");
    for (int64_t v = 1; v <= 4 && v <= nvec; v++)
      if (nvec % v == 0) topi_knob_choice(k, v);
    return;
  }
  if (!anchor_ok(a)) return;
  int64_t ow = a->axes[4]->extent, ic = a->reduce_axes[0]->extent, owp;
  int64_t mx = topi_conv_packed_reg_max(t, a->axes[5]->extent), dflt = topi_conv_packed_tile(t, ow, a->axes[5]->extent, &owp);
  TopiKnob *k = topi_knob_add(s, "tile_ow");
  for (int64_t f = 1; f <= ow && f <= mx && k->nchoices < TOPI_MAX_CHOICES; f++)
    if (ow % f == 0 || f == dflt) topi_knob_choice(k, f);
  k = topi_knob_add(s, "tile_ic");
  for (int64_t f = 1; f <= ic && k->nchoices < TOPI_MAX_CHOICES; f++)
    if (ic % f == 0) topi_knob_choice(k, f);
  k = topi_knob_add(s, "order");
  topi_knob_choice(k, 0);
  topi_knob_choice(k, 1);
}

/* The fallback register tile: conv2d's (topi_conv_packed_tile), narrowed where the channel block is one vector
 * and the kernel 2-4 wide. The reduction's innermost loop is kw over an unblocked input, which LLVM unrolls
 * whole, keeping each broadcast for the later taps that read it again (column c + 1 at kw is column c at
 * kw + 1): tile + kw - 1 broadcasts live beside the tile's accumulators. With 28 columns on AVX-512 they
 * spilled in the hot loop (R3D-18's 64-channel 3x3x3 convs at 56x56 on Sapphire Rapids, one thread: 66-68 ms
 * each, 39-41 with 14 columns; its 28x28 ones 31-32 -> 20; the model's kernels 457 -> 315 ms). The tile is then
 * the largest divisor of the width within (registers - kw) / 2 columns, if it is at least half of that; the
 * 7-wide stem is not unrolled and keeps its tile. */
static int64_t fallback_tile(const Target *t, const TeOp *a) {
  int64_t owp, ow = a->axes[4]->extent, ocb = a->axes[5]->extent, kw = a->reduce_axes[3]->extent;
  int64_t tile = topi_conv_packed_tile(t, ow, ocb, &owp);
  if (ocb != topi_vector_lanes(t, MLC_F32) || kw < 2 || kw > 4) return tile;
  int64_t cap = (topi_vector_regs(t) - kw) / 2;
  if (tile <= cap) return tile;
  int64_t d = topi_largest_divisor(ow, cap);
  return 2 * d >= cap ? d : tile;
}

void topi_conv3d_packed_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (temporal_anchor_ok(a)) {
    int64_t r, v;
    topi_conv_rows_tile(t, a->axes[1]->extent, a->axes[3]->extent / topi_vector_lanes(t, MLC_F32), &r, &v);
    topi_cfg_set(cfg, "tile_rows", r);
    topi_cfg_set(cfg, "tile_vecs", v);
    return;
  }
  if (!anchor_ok(a)) return;
  topi_cfg_set(cfg, "tile_ow", fallback_tile(t, a));
  topi_cfg_set(cfg, "tile_ic", a->reduce_axes[0]->extent);
  topi_cfg_set(cfg, "order", direct_order(t, a));
}

void topi_conv3d_packed_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *cs = te_stage(s, a->outputs[0]);
  if (cs && temporal_anchor_ok(a)) {
    schedule_temporal(c, s, a, out, cfg);
    return;
  }
  if (!cs || !anchor_ok(a)) return;
  for (int i = 0; i < s->nstages; i++) { /* the padding stage: its own parallel nest, rows innermost */
    TeStage *ps = s->stages[i];
    if (!ps->op->tag || strcmp(ps->op->tag, "conv3d_packed_pad")) continue;
    ps->attach = ATTACH_ROOT;
    TeOp *po = ps->op;
    IterVar *f = te_fuse(ps, po->axes[0], po->axes[1]);
    f = te_fuse(ps, f, po->axes[2]);
    f = te_fuse(ps, f, po->axes[3]);
    if (f->extent * po->axes[4]->extent >= 16384) te_parallel(ps, f);
  }
  int64_t ocb = a->axes[5]->extent, owp, ic = a->reduce_axes[0]->extent;
  int64_t reg_n = topi_config_get(cfg, "tile_ow", fallback_tile(c->target, a));
  int64_t tic = topi_config_get(cfg, "tile_ic", ic);
  if (reg_n < 1 || a->axes[4]->extent % reg_n) reg_n = topi_conv_packed_tile(c->target, a->axes[4]->extent, ocb, &owp);
  if (tic < 1 || ic % tic) tic = ic;
  /* the packed conv: n, occ, od, oh, ow.o, ic.o, kd, kh, kw, ic.i, ocb (vector), ow.i (unrolled) */
  IterVar *owo, *owi, *ico = NULL, *ici = NULL;
  topi_split(cs, a->axes[4], reg_n, &owo, &owi);
  if (tic < ic) topi_split(cs, a->reduce_axes[0], tic, &ico, &ici);
  IterVar *order[12] = {a->axes[0], a->axes[1], a->axes[2], a->axes[3], owo, ico ? ico : a->reduce_axes[0],
                        a->reduce_axes[1], a->reduce_axes[2], a->reduce_axes[3]};
  int k = 9;
  if (ici) order[k++] = ici;
  order[k++] = owi;        /* unrolled outside the vector: each column's accumulator is a register (the vector */
  order[k++] = a->axes[5]; /* loop outside, split into AVX2 halves, kept them on the stack: 26 GFLOP/s) */
  te_reorder(cs, k, order);
  te_vectorize(cs, a->axes[5]);
  te_unroll(cs, owi);
  TeStage *os = out ? te_stage(s, out) : NULL;
  bool tiled = os && os->op != a && os->op->kind == TE_COMPUTE && os->op->nreduce == 0 && out->ndim == 5 &&
               os->nleaf == 5 && os->attach == ATTACH_ROOT && out->shape[0] == a->axes[0]->extent &&
               out->shape[1] > (a->axes[1]->extent - 1) * ocb && out->shape[1] <= a->axes[1]->extent * ocb &&
               out->shape[2] == a->axes[2]->extent && out->shape[3] == a->axes[3]->extent &&
               out->shape[4] <= a->axes[4]->extent;
  int64_t cores = topi_num_cores(c->target);
  if (!tiled) { /* the packed conv is materialised whole: parallel over its rows */
    IterVar *f = te_fuse(cs, a->axes[0], a->axes[1]);
    f = te_fuse(cs, f, a->axes[2]);
    f = te_fuse(cs, f, a->axes[3]);
    if (f->extent > 1) te_parallel(cs, f);
    return;
  }
  /* the output (unpack + epilogue): n, oc.o, od, oh, ow.o | ow.i (unrolled), oc.i (vector); the conv at ow.o */
  TeOp *o = os->op;
  IterVar *oco, *oci, *wo, *wi;
  topi_split(os, o->axes[1], ocb, &oco, &oci);
  topi_split(os, o->axes[4], reg_n, &wo, &wi);
  bool rows_outer = topi_config_get(cfg, "order", direct_order(c->target, a)) == 1;
  /* a tile's ocb x reg_n results stored channel by channel as reg_n contiguous columns (as conv2d_x86.c does)
   * instead of each column's channels scattered D*H*W apart; narrow tiles keep the scatter */
  bool rows_store = reg_n >= 8;
  IterVar *oorder[7] = {o->axes[0], oco, o->axes[2], o->axes[3], wo, rows_store ? oci : wi, rows_store ? wi : oci};
  if (rows_outer) oorder[1] = o->axes[2], oorder[2] = o->axes[3], oorder[3] = oco;
  te_reorder(os, 7, oorder);
  IterVar *f = te_fuse(os, o->axes[0], oorder[1]);
  f = te_fuse(os, f, oorder[2]);
  if (f->extent < 2 * cores) f = te_fuse(os, f, oorder[3]);
  if (f->extent > 1) te_parallel(os, f);
  te_unroll(os, oorder[5]);
  te_vectorize(os, oorder[6]);
  te_compute_at(cs, os, wo);
}
