/* conv2d_x86: the x86 direct 2-D convolution with pre-packed weights and a register-blocked accumulator
 * (after TVM's topi/x86/conv2d_avx_common.py and conv2d_avx_1x1.py, NCHW[x]c).
 *
 * Op nn.conv2d_packed(data, weight) with attributes as nn.conv2d (strides, dilation, padding [top, left,
 * bottom, right], groups: a grouped conv reads NCHW data, each output channel block within one group, whose
 * input channels its reduction walks) plus the activation layouts:
 *   data_block 0:  data [N, C, H, W],           weight [OC/ocb, C, KH, KW, ocb]
 *   data_block ib: data [N, C/ib, H, W, ib],    weight [OC/ocb, C/ib, KH, KW, ib, ocb]
 *   out_block 0:   output [N, OC, OH, OW]
 *   out_block ocb: output [N, OC/ocb, OH, OW, ocb] (NCHWc, the block of the weight)
 *   channels OC:   the output's channels when the weight's last block is zero-padded (OC not a multiple of
 *                  ocb; NCHW output, groups 1): the conv computes whole blocks and stores the first OC
 * A 1x1 stride-1 unpadded conv from NCHW to NCHW with H*W a multiple of the float lanes takes the rows form
 * instead (see rows_form below): a matrix product with vectors along the fused H x W.
 *
 * The 8-bit form (LowerConv step 5 makes it where the target has u8 x s8 dot products, x86 VNNI):
 *   data [N, C, H, W] uint8 or int8, weight int32 [OC/ocb, C4 = ceil(C/4), KH, KW, ocb] whose word j holds
 *   the int8 weights of input channels 4j .. 4j+3 (byte k: channel 4j+k), optional offset int32 [OC];
 *   output int32 [N, OC, OH, OW] = sum_{c, kh, kw} byte(x[n, c, ih, iw]) * w[oc, c, kh, kw] + offset[oc], where
 *   byte(x) is x for uint8 and x + 128 for int8, and a position in the padding or a channel >= C reads the
 *   attribute pad_byte. NCHW data and output, groups 1. The padding stage packs the data into words of four
 *   channels, [N, C4, H + pads, W'], so the conv's reduction runs over C4 words with one dot_u8s8 (vpdpbusd:
 *   16 lanes x 4 products) where the float conv has one FMA; the schedule is the float conv's.
 * AlterOpLayout (passes/graph/alter_op_layout.c) rewrites nn.conv2d into it, packing the constant weight with
 * a reshape and a transpose that FoldConstant evaluates at compile time; the NCHWc layout pass (passes/graph/
 * layout_nchwc.c) then sets data_block / out_block where activations flow in NCHWc between convs.
 *
 * Compute: data_pad (a separate stage when there is padding, in the data's layout, so the inner loop has no
 * bounds test) -> conv2d_packed[n, occ, oh, ow, ocb] = sum_{ic, kh, kw} pad[n, ic, oh*s + kh*d, ow*s + kw*d] *
 * weight[occ, ic, kh, kw, ocb] (one block of ocb output channels is one vector; with a blocked input the
 * channel sum is split into ic.o over C/ib and ic.i over ib, and both the data and the weight are read
 * pad[n, ic.o, ih, iw, ic.i], weight[occ, ic.o, kh, kw, ic.i, ocb], so the innermost reduction walks both
 * contiguously) -> the result, an injective copy in the output's layout that is inlined into the fused
 * epilogue (bias, relu, residual add): a scatter of each ocb vector into NCHW, or with out_block the same
 * NCHWc block (contiguous vector stores).
 *
 * Schedule "conv2d_packed.x86" (knobs tile_ow = reg_n, tile_ic, order (see order_by_traffic: oc.o or oh
 * outermost, and topi_row_groups); tile_oc, the block ocb, is applied by AlterOpLayout from the tuning records):
 * with order 0 the group output is tiled n, oh.o (two halves where OH is even), oc.o, oh.i,
 * ow.o | ow.i (unrolled), oc.i (vectorized) with n x oh.o x oc.o x oh.i fused into the parallel loop (NCHWc
 * output: its occ and ocb axes are oc.o and oc.i); the packed conv is attached at ow.o (compute_at), so per tile it
 * computes a reg_n x ocb block whose loops are ic.o, kh, kw, ic.i | ocb (vectorized), ow.i (unrolled): reg_n
 * vector accumulators in registers, one weight vector load and reg_n broadcast FMAs per step; the epilogue is
 * applied once per tile at the store.
 * The fallback takes reg_n = the largest divisor of OW that fits the register file (AVX-512: 32 registers,
 * AVX2: 16; reg_n * ocb/lanes accumulators plus the weight vectors and a broadcast) and the whole input
 * channel range per reduction (ic, kh, kw walk the packed weight contiguously). When that tile would not
 * divide OW or would hold too few accumulators to hide the FMA latency (squeezenet's 27, 13, 111), the packed
 * conv is computed over a width padded up to a multiple of a better tile (padded_width), reading a padding
 * stage widened with zeros; only the store of the last tile is guarded.
 * Knob tile_ocn widens the register tile to ocn output channel blocks (occ split, occ.i unrolled between ic.i
 * and ocb): each broadcast of an input column feeds ocn FMAs, so a step costs ocn weight vector loads and reg_n
 * broadcasts for ocn x reg_n FMAs. With two 512-bit FMA pipes (Zen 5) a one-block tile is bound by its
 * broadcast loads, and a narrow one by its FMA latency too (ResNet-50's 512 -> 2048 1x1 conv at 7x7: 132 -> 182
 * GFLOP/s on one core with 2 x 7). The AVX-512 fallback takes ocn = 2 x the largest divisor of the one-block
 * tile up to 10 columns, when that is at least 4 (OW 28 -> 2 x 7, 14 -> 2 x 7, 56 -> 2 x 7): whole-space tuning
 * of ResNet-18 found 2 x 7 within 1% of the best on every packed conv (1x28 was 4-45% slower on its stride-2
 * convs); resnet50 and densenet121 ran 2-3% faster than with 2 blocks on narrow maps only. */
#include <string.h>
#include "topi/topi.h"

/* ---------------------------------------------------------------- attributes and type relation */

typedef struct PackedConv {
  int64_t n, c, h, w, occ, ocb, kh, kw, oh, ow;
  int64_t oc;        /* output channels: occ * ocb, or fewer (attribute channels: the last block zero-padded) */
  int64_t ib;        /* data_block: 0 for NCHW data, else the data's channel block (C = cc * ib) */
  int64_t groups;    /* G: output channel block occ reads input channels [g * c, (g + 1) * c), g = occ / (occ / G) */
  int64_t cin;       /* the data's channels (G * c) */
  int64_t out_block; /* 0: NCHW output; ocb: NCHWc output */
  int64_t owp; /* the packed conv's width: ow rounded up to a multiple of the register tile (packed_compute) */
  int64_t strides[2], dil[2], pad[4]; /* pad: top, left, bottom, right */
  bool int8;         /* the 8-bit form: c counts words of 4 channels, cin the data's channels */
  int64_t pad_byte;  /* the 8-bit form: the byte padding and missing channels read */
} PackedConv;

static mlc_status packed_conv_of(const Node *n, PackedConv *p, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *k = &n->inputs[1]->type;
  memset(p, 0, sizeof *p);
  p->ib = ir_attr_int(n, "data_block", 0);
  p->out_block = ir_attr_int(n, "out_block", 0);
  if (p->ib < 0 || p->out_block < 0) return diag_set(d, MLC_ERR_INVALID, "data_block and out_block must be >= 0");
  int xr = p->ib ? 5 : 4, kr = p->ib ? 6 : 5;
  if (x->ndim != xr || k->ndim != kr)
    return diag_set(d, MLC_ERR_INVALID,
                    "nn.conv2d_packed with data_block %lld expects rank-%d data and rank-%d weight, got %d and %d",
                    (long long)p->ib, xr, kr, x->ndim, k->ndim);
  p->int8 = x->dtype == MLC_U8 || x->dtype == MLC_I8;
  if (p->int8 ? k->dtype != MLC_I32 : x->dtype != MLC_F32 || k->dtype != MLC_F32)
    return diag_set(d, MLC_ERR_UNSUPPORTED,
                    "nn.conv2d_packed supports float32, or 8-bit data with an int32 weight of packed int8, got %s and %s",
                    mlc_dtype_name(x->dtype), mlc_dtype_name(k->dtype));
  p->groups = ir_attr_int(n, "groups", 1);
  if (p->int8 && (p->ib || p->out_block || p->groups != 1))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.conv2d_packed on 8-bit data: NCHW in and out, groups 1 only");
  if (!p->int8 && n->ninputs > 2) return diag_set(d, MLC_ERR_INVALID, "nn.conv2d_packed: an offset needs 8-bit data");
  p->pad_byte = ir_attr_int(n, "pad_byte", 0);
  if (p->pad_byte < 0 || p->pad_byte > 255)
    return diag_set(d, MLC_ERR_INVALID, "nn.conv2d_packed: pad_byte %lld", (long long)p->pad_byte);
  if (p->groups < 1) return diag_set(d, MLC_ERR_INVALID, "nn.conv2d_packed: groups %lld", (long long)p->groups);
  mlc_status st = topi_conv2d_window(n, p->strides, p->dil, p->pad, d);
  if (st) return st;
  p->n = x->dims[0];
  p->cin = x->dims[1]; /* with data_block: the channel blocks */
  p->c = p->int8 ? (p->cin + 3) / 4 : p->cin / p->groups;
  p->h = x->dims[2];
  p->w = x->dims[3];
  p->occ = k->dims[0];
  p->kh = k->dims[2];
  p->kw = k->dims[3];
  p->ocb = k->dims[kr - 1];
  if (k->dims[1] != p->c || p->cin % p->groups)
    return diag_set(d, MLC_ERR_INVALID, "weight has %lld input channel (blocks), data %lld in %lld groups",
                    (long long)k->dims[1], (long long)p->cin, (long long)p->groups);
  if (p->occ % p->groups)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.conv2d_packed: %lld output channel blocks of %lld in %lld groups",
                    (long long)p->occ, (long long)p->ocb, (long long)p->groups);
  if (p->ib && (x->dims[4] != p->ib || k->dims[4] != p->ib))
    return diag_set(d, MLC_ERR_INVALID, "data_block %lld: the data's and the weight's channel block are %lld, %lld",
                    (long long)p->ib, (long long)x->dims[4], (long long)k->dims[4]);
  if (p->out_block && p->out_block != p->ocb)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.conv2d_packed: out_block %lld differs from the weight's block %lld",
                    (long long)p->out_block, (long long)p->ocb);
  int64_t sh = (p->kh - 1) * p->dil[0] + 1, sw = (p->kw - 1) * p->dil[1] + 1;
  int64_t ah = p->h + p->pad[0] + p->pad[2] - sh, aw = p->w + p->pad[1] + p->pad[3] - sw;
  if (p->kh < 1 || p->kw < 1 || p->ocb < 1 || ah < 0 || aw < 0)
    return diag_set(d, MLC_ERR_INVALID, "kernel larger than the padded input");
  p->oh = ah / p->strides[0] + 1;
  p->ow = aw / p->strides[1] + 1;
  p->oc = ir_attr_int(n, "channels", p->occ * p->ocb);
  if (p->oc <= (p->occ - 1) * p->ocb || p->oc > p->occ * p->ocb)
    return diag_set(d, MLC_ERR_INVALID, "nn.conv2d_packed: %lld channels in %lld blocks of %lld", (long long)p->oc,
                    (long long)p->occ, (long long)p->ocb);
  if (p->oc != p->occ * p->ocb && (p->out_block || p->groups != 1))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.conv2d_packed: a padded last block needs NCHW output and groups 1");
  if (n->ninputs > 2) {
    const TensorType *o = &n->inputs[2]->type;
    if (o->dtype != MLC_I32 || o->ndim != 1 || o->dims[0] != p->oc)
      return diag_set(d, MLC_ERR_INVALID, "nn.conv2d_packed: the offset must be int32 [%lld]", (long long)p->oc);
  }
  return MLC_OK;
}

static mlc_status packed_infer(Node *n, Diag *d) {
  PackedConv p;
  mlc_status st = packed_conv_of(n, &p, d);
  if (st) return st;
  TensorType o = {.dtype = p.int8 ? MLC_I32 : MLC_F32, .ndim = 4, .dims = {p.n, p.oc, p.oh, p.ow}};
  if (p.out_block) o = (TensorType){.dtype = MLC_F32, .ndim = 5, .dims = {p.n, p.occ, p.oh, p.ow, p.ocb}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* ---------------------------------------------------------------- compute */

static int64_t reg_n_max(const Target *t, int64_t ocb, bool int8);
static int64_t default_reg_n(int64_t ow, int64_t max, int64_t vecs);
static int64_t block_vecs(const Target *t, int64_t ocb);
static int64_t largest_divisor_upto(int64_t n, int64_t max);

/* The fallback register tile and the packed conv's width. When the default tile divides OW and holds enough
 * accumulators to cover the FMA latency (8 vectors in flight: 2 FMA pipes x 4 cycles), that tile over OW
 * itself; else the tile r in [8/vecs, max] with the most useful accumulators, r * OW / (OW rounded up to a
 * multiple of r) (ties: the narrower width), over OW rounded up. The extra columns read the zero-extended
 * padding stage and are never stored: the NCHW output's last tile is guarded at the store, outside the
 * reduction, instead of a narrow tile (27 -> 3 columns) or a guard in the hot loop (13; 55 with a tile of 28).
 * The schedule's default tile_ow is this tile, so the packed width always is a multiple of it. */
static int64_t fallback_tile(const Target *t, int64_t ow, int64_t ocb, bool int8, int64_t *owp) {
  int64_t vecs = block_vecs(t, ocb);
  int64_t mx = reg_n_max(t, ocb, int8), r0 = default_reg_n(ow, mx, vecs), rmin = (8 + vecs - 1) / vecs;
  if (rmin > mx) rmin = mx;
  *owp = ow;
  if (ow % r0 == 0 && (r0 >= rmin || r0 == ow)) return r0;
  int64_t best_w = ow, best_r = 0;
  double best = -1;
  for (int64_t r = rmin; r <= mx; r++) {
    int64_t w = (ow + r - 1) / r * r;
    double score = (double)r * (double)ow / (double)w;
    if (score > best + 1e-9 || (score > best - 1e-9 && w < best_w)) best = score, best_w = w, best_r = r;
  }
  if (!best_r) return r0;
  *owp = best_w;
  return best_r;
}

int64_t topi_conv_packed_tile(const Target *t, int64_t ow, int64_t ocb, int64_t *owp) {
  return fallback_tile(t, ow, ocb, false, owp);
}

int64_t topi_conv_packed_reg_max(const Target *t, int64_t ocb) { return reg_n_max(t, ocb, false); }

/* The fallback register tile of the packed conv a: *reg_n columns x the returned number of channel blocks (see
 * tile_ocn above). Two blocks halve the parallel loop (n x occ x oh); where that would leave fewer than 32
 * iterations (DenseNet's 7x7 convs: 7 and 28) the threads wait on each other more than the tile saves
 * (DenseNet-121 on 2 threads: 8% slower with 16 as the bound). */
static int64_t fallback_ocn(const Target *t, const TeOp *a, int64_t *reg_n) {
  int64_t owp, n = a->axes[0]->extent, occ = a->axes[1]->extent, oh = a->axes[2]->extent, ocb = a->axes[4]->extent;
  bool int8 = a->outputs[0]->dtype == MLC_I32;
  *reg_n = fallback_tile(t, a->axes[3]->extent, ocb, int8, &owp);
  int vb = t && t->vector_bytes > 0 ? t->vector_bytes : 16;
  if (int8 || vb < 64 || ocb != vb / 4 || occ % 2 || n * (occ / 2) * oh < 32) return 1;
  int64_t r = largest_divisor_upto(*reg_n, TOPI_BLOCKS_DEFAULT_ACC / 2); /* 28 -> 7: 2 x 14 would spill */
  if (r < 4) return 1;
  *reg_n = r;
  return 2;
}

static int64_t padded_width(const Target *t, int64_t ow, int64_t ocb, bool int8) {
  int64_t owp;
  fallback_tile(t, ow, ocb, int8, &owp);
  return owp;
}

typedef struct PackedCtx {
  PackedConv p;
  TeTensor *data, *pad, *weight, *conv, *offset;
} PackedCtx;

static Expr *pad_body(TeCtx *c, Expr **idx, void *user) {
  PackedCtx *k = user;
  Arena *a = c->arena;
  Expr *ch, *cw, *ok = topi_pad_window(a, idx[2], idx[3], k->p.pad[0], k->p.pad[1], k->p.h, k->p.w, &ch, &cw);
  Expr *ri[5] = {idx[0], idx[1], ch, cw, k->p.ib ? idx[4] : NULL};
  return tir_select(a, ok, te_read(c, k->data, k->p.ib ? 5 : 4, ri), tir_float(a, MLC_F32, 0));
}

/* the 8-bit form's padding stage [N, C4, H', W']: word = the bytes of channels 4j .. 4j+3 (x, or x + 128 for
 * int8), pad_byte outside the image and for channels >= C */
static Expr *pad_word_body(TeCtx *c, Expr **idx, void *user) {
  PackedCtx *k = user;
  const PackedConv *p = &k->p;
  Arena *a = c->arena;
  Expr *ch, *cw, *ok = topi_pad_window(a, idx[2], idx[3], p->pad[0], p->pad[1], p->h, p->w, &ch, &cw);
  bool is_i8 = k->data->dtype == MLC_I8;
  Expr *word = NULL;
  for (int t = 0; t < 4; t++) {
    Expr *ci = tir_add(a, tir_mul(a, idx[1], tir_idx(a, 4)), tir_idx(a, t));
    Expr *ri[4] = {idx[0], tir_bin(a, E_MIN, ci, tir_idx(a, p->cin - 1)), ch, cw};
    Expr *b = tir_cast(a, MLC_I32, te_read(c, k->data, 4, ri));
    if (is_i8) b = tir_add(a, b, tir_int(a, MLC_I32, 128));
    if (p->cin % 4) b = tir_select(a, tir_bin(a, E_LT, ci, tir_idx(a, p->cin)), b, tir_int(a, MLC_I32, p->pad_byte));
    if (t) b = tir_bin(a, E_SHL, b, tir_int(a, MLC_I32, 8 * t));
    word = word ? tir_bin(a, E_BITOR, word, b) : b;
  }
  uint32_t pw = (uint32_t)p->pad_byte * 0x01010101u;
  return tir_select(a, ok, word, tir_int(a, MLC_I32, (int32_t)pw));
}

static Expr *conv_body(TeCtx *c, Expr **idx, void *user) {
  PackedCtx *k = user;
  Arena *a = c->arena;
  IterVar *rc = te_reduce_axis(c, "rc", k->p.c), *ry = te_reduce_axis(c, "ry", k->p.kh),
          *rx = te_reduce_axis(c, "rx", k->p.kw);
  Expr *ic = tir_varref(a, rc->var), *kh = tir_varref(a, ry->var), *kw = tir_varref(a, rx->var);
  Expr *ih = tir_add(a, tir_mul(a, idx[2], tir_idx(a, k->p.strides[0])), tir_mul(a, kh, tir_idx(a, k->p.dil[0])));
  Expr *iw = tir_add(a, tir_mul(a, idx[3], tir_idx(a, k->p.strides[1])), tir_mul(a, kw, tir_idx(a, k->p.dil[1])));
  Expr *dc = ic; /* grouped: the group's channels (blocks) of the data */
  if (k->p.groups > 1)
    dc = tir_add(a, tir_mul(a, tir_bin(a, E_FLOORDIV, idx[1], tir_idx(a, k->p.occ / k->p.groups)),
                            tir_idx(a, k->p.c)), ic);
  if (k->p.int8) { /* words of four input channels: one dot_u8s8 per word */
    Expr *di[4] = {idx[0], ic, ih, iw}, *wi[5] = {idx[1], ic, kh, kw, idx[4]};
    Expr *args[2] = {te_read(c, k->pad, 4, di), te_read(c, k->weight, 5, wi)};
    IterVar *ax[3] = {rc, ry, rx};
    return te_reduce(c, RED_SUM, tir_call(a, INTRIN_DOT_U8S8, MLC_I32, 2, args), 3, ax, NULL, NULL);
  }
  if (k->p.ib) { /* ic.o = rc over the channel blocks, ic.i over the block */
    IterVar *rb = te_reduce_axis(c, "rb", k->p.ib);
    Expr *icb = tir_varref(a, rb->var);
    Expr *di[5] = {idx[0], dc, ih, iw, icb}, *wi[6] = {idx[1], ic, kh, kw, icb, idx[4]};
    Expr *prod = tir_mul(a, te_read(c, k->pad, 5, di), te_read(c, k->weight, 6, wi));
    IterVar *ax[4] = {rc, ry, rx, rb};
    return te_reduce(c, RED_SUM, prod, 4, ax, NULL, NULL);
  }
  Expr *di[4] = {idx[0], dc, ih, iw}, *wi[5] = {idx[1], ic, kh, kw, idx[4]};
  Expr *prod = tir_mul(a, te_read(c, k->pad, 4, di), te_read(c, k->weight, 5, wi));
  IterVar *ax[3] = {rc, ry, rx};
  return te_reduce(c, RED_SUM, prod, 3, ax, NULL, NULL);
}

static Expr *unpack_body(TeCtx *c, Expr **idx, void *user) {
  PackedCtx *k = user;
  Arena *a = c->arena;
  Expr *b = tir_idx(a, k->p.ocb);
  Expr *ri[5] = {idx[0], tir_bin(a, E_FLOORDIV, idx[1], b), idx[2], idx[3], tir_bin(a, E_FLOORMOD, idx[1], b)};
  Expr *v = te_read(c, k->conv, 5, ri);
  return k->offset ? tir_add(a, v, te_read(c, k->offset, 1, &idx[1])) : v;
}

/* the NCHWc result: the packed conv's block itself, without the columns padded_width added */
static Expr *copy_block_body(TeCtx *c, Expr **idx, void *user) {
  PackedCtx *k = user;
  return te_read(c, k->conv, 5, idx);
}

/* ---- the pointwise NCHW form: a 1x1 stride-1 unpadded conv from NCHW to NCHW is the matrix product
 * Y[n][OC][HW] = W[OC][IC] . X[n][IC][HW]. Its compute conv2d_packed[n, oc, hw] = sum_ic
 * data[n, ic, hw / W, hw % W] * weight[oc / ocb, ic, 0, 0, oc % ocb] puts the vectors along hw (contiguous loads of X
 * and contiguous stores of Y: the simplifier folds (hw / W) * W + hw % W back into hw) and broadcasts one
 * weight per output channel row; the register tile is rows x vectors (see rows_tile). It needs whole vectors:
 * H*W a multiple of the float lanes (else the blocked form, whose vectors run along the channel block). The
 * 8-bit form takes it too, reading its data words [N, C4, H, W] (a vector of columns of four channels, the
 * unsigned operand of vpdpbusd) by one broadcast weight word (the signed operand, an embedded broadcast): its
 * epilogue (requantize, the residual add of the next QLinearAdd) then runs on contiguous columns. */
static int64_t target_lanes(const Target *t) {
  int vb = t && t->vector_bytes > 0 ? t->vector_bytes : 16;
  return vb / 4 < 1 ? 1 : vb / 4;
}

/* the float vectors a channel block of ocb spans (16 channels: one zmm, two ymm, four NEON q) */
static int64_t block_vecs(const Target *t, int64_t ocb) {
  int64_t lanes = target_lanes(t);
  return (ocb + lanes - 1) / lanes;
}

static bool rows_form(const Target *t, const PackedConv *p) {
  /* (8-bit: also with a partial last channel block, whose direct form scatters its output) */
  return p->ib == 0 && p->out_block == 0 && p->groups == 1 && (p->oc == p->occ * p->ocb || p->int8) && p->kh == 1 &&
         p->kw == 1 && p->strides[0] == 1 &&
         p->strides[1] == 1 && !p->pad[0] && !p->pad[1] && !p->pad[2] && !p->pad[3] &&
         (p->oh * p->ow) % target_lanes(t) == 0;
}

static Expr *rows_body(TeCtx *c, Expr **idx, void *user) {
  PackedCtx *k = user;
  Arena *a = c->arena;
  IterVar *rc = te_reduce_axis(c, "rc", k->p.c);
  Expr *ic = tir_varref(a, rc->var), *w = tir_idx(a, k->p.w), *b = tir_idx(a, k->p.ocb);
  Expr *di[4] = {idx[0], ic, tir_bin(a, E_FLOORDIV, idx[2], w), tir_bin(a, E_FLOORMOD, idx[2], w)};
  Expr *wi[5] = {tir_bin(a, E_FLOORDIV, idx[1], b), ic, tir_idx(a, 0), tir_idx(a, 0), tir_bin(a, E_FLOORMOD, idx[1], b)};
  if (k->p.int8) { /* the data words of four channels (a vector of columns) by one weight word (broadcast) */
    Expr *args[2] = {te_read(c, k->pad, 4, di), te_read(c, k->weight, 5, wi)};
    return te_reduce(c, RED_SUM, tir_call(a, INTRIN_DOT_U8S8, MLC_I32, 2, args), 1, &rc, NULL, NULL);
  }
  Expr *prod = tir_mul(a, te_read(c, k->data, 4, di), te_read(c, k->weight, 5, wi));
  return te_reduce(c, RED_SUM, prod, 1, &rc, NULL, NULL);
}

static Expr *rows_unpack_body(TeCtx *c, Expr **idx, void *user) {
  PackedCtx *k = user;
  Arena *a = c->arena;
  Expr *ri[3] = {idx[0], idx[1], tir_add(a, tir_mul(a, idx[2], tir_idx(a, k->p.ow)), idx[3])};
  Expr *v = te_read(c, k->conv, 3, ri);
  return k->offset ? tir_add(a, v, te_read(c, k->offset, 1, &idx[1])) : v;
}

static mlc_status packed_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  PackedCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = packed_conv_of(n, &k->p, d);
  if (st) return st;
  PackedConv *p = &k->p;
  k->data = ins[0];
  k->weight = ins[1];
  k->offset = n->ninputs > 2 ? ins[2] : NULL;
  mlc_dtype acc = p->int8 ? MLC_I32 : MLC_F32;
  if (rows_form(c->target, p)) {
    int64_t cs[3] = {p->n, p->oc, p->oh * p->ow}, os[4] = {p->n, p->oc, p->oh, p->ow}; /* (oc: a partial last block) */
    if (p->int8) {
      int64_t ps[4] = {p->n, p->c, p->h, p->w};
      k->pad = te_compute(c, "data_words", "conv2d_packed_pad", MLC_I32, 4, ps, pad_word_body, k);
    }
    k->conv = te_compute(c, "conv2d_packed", "conv2d_packed", acc, 3, cs, rows_body, k);
    outs[0] = te_compute(c, "conv2d_nchw", "conv2d_packed_unpack", acc, 4, os, rows_unpack_body, k);
    return MLC_OK;
  }
  k->pad = ins[0];
  p->owp = padded_width(c->target, p->ow, p->ocb, p->int8);
  /* the padded input must cover the extra columns: (owp - 1) * stride + the dilated kernel width */
  int64_t wneed = (p->owp - 1) * p->strides[1] + (p->kw - 1) * p->dil[1] + 1, wpad = p->w + p->pad[1] + p->pad[3];
  if (wneed > wpad) wpad = wneed;
  if (p->int8) {
    int64_t ps[4] = {p->n, p->c, p->h + p->pad[0] + p->pad[2], wpad};
    k->pad = te_compute(c, "data_words", "conv2d_packed_pad", MLC_I32, 4, ps, pad_word_body, k);
  } else if (p->pad[0] || p->pad[1] || p->pad[2] || p->pad[3] || wpad > p->w) {
    int64_t ps[5] = {p->n, p->cin, p->h + p->pad[0] + p->pad[2], wpad, p->ib};
    k->pad = te_compute(c, "data_pad", "conv2d_packed_pad", MLC_F32, p->ib ? 5 : 4, ps, pad_body, k);
  }
  int64_t cs[5] = {p->n, p->occ, p->oh, p->owp, p->ocb};
  k->conv = te_compute(c, "conv2d_packed", "conv2d_packed", acc, 5, cs, conv_body, k);
  if (p->out_block) {
    int64_t os[5] = {p->n, p->occ, p->oh, p->ow, p->ocb};
    outs[0] = te_compute(c, "conv2d_nchwc", "conv2d_packed_output", acc, 5, os, copy_block_body, k);
  } else {
    int64_t os[4] = {p->n, p->oc, p->oh, p->ow};
    outs[0] = te_compute(c, "conv2d_nchw", "conv2d_packed_unpack", acc, 4, os, unpack_body, k);
  }
  return MLC_OK;
}

const OpDef topi_ops_conv2d_x86[] = {
    /* name               pattern                 in min/max  outs  relation       compute */
    {"nn.conv2d_packed", PAT_OUT_ELEMWISE_FUSABLE, 2, 3, 1, packed_infer, packed_compute, DYN_BATCH},
    {NULL},
};

/* ---------------------------------------------------------------- template */

static int64_t largest_divisor_upto(int64_t n, int64_t max) {
  for (int64_t f = max < n ? max : n; f > 1; f--)
    if (n % f == 0) return f;
  return 1;
}

/* most output columns per tile: the accumulators, ocb/lanes vectors each, must leave room for the weight
 * vectors and a broadcast. The 8-bit form gets half the register file: its data word broadcast is a
 * register operand of vpdpbusd (only the int8 operand may come from memory), one per column, which LLVM
 * hoists: 28 columns spilled the accumulators (QLinearConv 64->64 3x3 at 56x56: 1.2 ms, 14 columns 0.64). */
static int64_t reg_n_max(const Target *t, int64_t ocb, bool int8) {
  int64_t regs = topi_vector_regs(t), vecs = block_vecs(t, ocb);
  if (int8) regs /= 2;
  int64_t m = (regs - vecs - 1) / vecs;
  if (m > 28) m = 28;
  return m < 1 ? 1 : m;
}

/* reg_n: OW itself when it fits; else a divisor of OW in [max/2, max] (no guard), else, with a one-vector
 * block, one register more than the budget (a divisor max + 1: its broadcast can be an FMA's memory operand),
 * else max with a guarded last tile. A block of several vectors (16 channels with AVX2) gets no extra column:
 * 7 x 2 accumulators, two weight vectors and a broadcast spilled in the hot loop (ResNet-18's 7x7 stride-2
 * conv: 2.2 ms on one thread, 4.1 on two, instead of ~1.1 with a 4-column tile over OW padded to 8) */
static int64_t default_reg_n(int64_t ow, int64_t max, int64_t vecs) {
  if (ow <= max) return ow;
  int64_t r = largest_divisor_upto(ow, max);
  if (r >= (max + 1) / 2) return r;
  if (vecs == 1 && ow % (max + 1) == 0) return max + 1;
  return max;
}

/* anchor: the packed conv (5-D; reduce axes ic, kh, kw, and ic.i with a blocked input) */
static bool anchor_ok(const TeOp *a) {
  return a->kind == TE_COMPUTE && a->naxes == 5 && (a->nreduce == 3 || a->nreduce == 4);
}

/* anchor of the pointwise NCHW form: [n, oc, hw], reduce axis ic */
static bool rows_anchor_ok(const TeOp *a) { return a->kind == TE_COMPUTE && a->naxes == 3 && a->nreduce == 1; }

/* The rows form's register tile: tile_rows output channels (a power of two dividing OC, at most 16, so the
 * rows' broadcasts come from one or two cache lines of the packed weight per ic) x tile_vecs vectors along hw (a divisor of HW/lanes, so no
 * tile is partial). Per ic step: tile_vecs vector loads, tile_rows broadcasts, rows x vecs FMAs. The
 * fallback takes the tile with the most FMAs per load whose accumulators fit the register file (AVX-512:
 * 24 of 32 zmm, AVX2: 12 of 16 ymm, leaving room for the data vectors and a broadcast); ties: more
 * accumulators (hide the 4-cycle FMA latency of two pipes). */
static int64_t rows_max_acc(const Target *t) { return target_lanes(t) >= 16 ? 24 : 12; }

bool topi_conv_rows_ok(int64_t oc, int64_t r) { return r >= 1 && r <= 16 && (r & (r - 1)) == 0 && oc % r == 0; }

void topi_conv_rows_tile(const Target *t, int64_t oc, int64_t nvec, int64_t *rows, int64_t *vecs) {
  int64_t mx = rows_max_acc(t), br = 1, bv = 1;
  double best = 0;
  for (int64_t v = 1; v <= 4; v++) {
    if (nvec % v) continue;
    for (int64_t r = 1; r * v <= mx; r *= 2) {
      if (!topi_conv_rows_ok(oc, r)) continue;
      double score = (double)(r * v) / (double)(r + v);
      if (score > best + 1e-9 || (score > best - 1e-9 && r * v > br * bv)) best = score, br = r, bv = v;
    }
  }
  *rows = br;
  *vecs = bv;
}

/* Loop order of the tiles (knob "order"): 0 walks the output channel blocks outermost (in the direct form:
 * within each half of the rows, see topi_row_groups), so a block's weights stay in cache while the input streams
 * past once per block; 1 walks the output rows (or, in the rows form, the hw tiles) outermost, so a row's input
 * stays in cache while every block's weights stream past once per row. The fallback counts the bytes each order fetches from beyond a core's L2 (an operand larger than
 * 3/4 of L2 is refetched on every pass over it) and takes order 1 only when that is clearly less: ResNet-50's
 * 256 -> 512 1x1 stride-2 conv at 56x56 reads its 3.2 MB input 32 times in order 0, once in order 1. */
static int64_t l2_budget(const Target *t) {
  int64_t l2 = t && t->l2_bytes > 0 ? t->l2_bytes : 256 * 1024;
  return l2 * 3 / 4;
}

static int order_by_traffic(const Target *t, double in_bytes, double w_bytes, double in_passes,
                            double w_passes) {
  double budget = (double)l2_budget(t);
  double t0 = w_bytes + (in_bytes > budget ? in_passes : 1) * in_bytes;
  double t1 = in_bytes + (w_bytes > budget ? w_passes : 1) * w_bytes;
  return t1 < 0.8 * t0 ? 1 : 0;
}

static double tensor_bytes(const TeTensor *x) {
  double v = mlc_dtype_size(x->dtype);
  for (int i = 0; i < x->ndim; i++) v *= (double)x->shape[i];
  return v;
}

/* The bytes of the data input (inputs[0]) that the direct form touches: every output row reads KH input rows,
 * so a strided conv whose kernel is shorter than its stride (1x1 stride 2) skips rows, and with a blocked
 * input of at least a cache line per pixel it skips columns the same way. ResNet-50's 1024 -> 2048 1x1 stride-2
 * conv reads 200 KB of its 800 KB input: it fits L2, so order 0 reads everything once (1.17x faster on one
 * thread than order 1, which refetched the 8 MB weight for each of the 7 rows; 1.8x on two). */
static double data_bytes_touched(const TeOp *a) {
  const TeTensor *x = a->inputs[0];
  double b = tensor_bytes(x);
  if (x->ndim < 4 || a->nreduce < 3) return b;
  int64_t ih = x->shape[2], iw = x->shape[3];
  int64_t rows = a->axes[2]->extent * a->reduce_axes[1]->extent, cols = a->axes[3]->extent * a->reduce_axes[2]->extent;
  if (rows < ih) b = b * (double)rows / (double)ih;
  if (x->ndim == 5 && (double)x->shape[4] * mlc_dtype_size(x->dtype) >= 64 && cols < iw)
    b = b * (double)cols / (double)iw;
  return b;
}

/* direct form: input passes = output channel blocks, weight passes = output rows */
static int direct_order(const Target *t, const TeOp *a) {
  double w = 4.0 * (double)(a->axes[1]->extent * a->axes[4]->extent);
  for (int i = 0; i < a->nreduce; i++) w *= (double)a->reduce_axes[i]->extent;
  double all = data_bytes_touched(a);
  for (int i = 1; i < a->ninputs; i++) all += tensor_bytes(a->inputs[i]);
  double in = all > w ? all - w : all;
  /* A block's weight larger than L2 (ASPP's 2048-channel 3x3 convs: 1.2 MB) is refetched for every tile in
   * either order, so order 0 keeps nothing in cache; rows outermost at least reads each row's input window
   * once for all blocks while the weights come from L3 (measured 1.2x faster on DeepLabv3's 2048 -> 256
   * dilated conv at 65x65). */
  int64_t l3 = t && t->l3_bytes > 0 ? t->l3_bytes : 0;
  if (w / (double)a->axes[1]->extent > (double)l2_budget(t) && w <= (double)l3) return 1;
  int order = order_by_traffic(t, in, w, (double)a->axes[1]->extent, (double)(a->axes[0]->extent * a->axes[2]->extent));
  /* On several cores with an odd number of rows (no row groups, see the schedule), order 0 gives each thread
   * some of the blocks and all of the input, order 1 some of the rows and all of the weights: per thread
   * in + w / T against in / T + w. Inception-v3's 288 -> 64 1x1 convs at 35x35 (1.4 MB of input, 74 KB of
   * weights) ran 0.54 -> 0.30 ms on two threads in order 1 (one thread: 0.62 -> 0.63). */
  double cores = (double)topi_num_cores(t), budget = (double)l2_budget(t);
  if (order == 0 && cores > 1 && topi_row_groups(a->axes[2]->extent) == 1 && in <= budget && w <= budget &&
      in / cores + w < 0.8 * (in + w / cores))
    order = 1;
  return order;
}

/* rows form: input passes = row blocks, weight passes = hw tiles */
static int rows_order(const Target *t, const TeOp *a, int64_t rows, int64_t vecs) {
  int64_t oc = a->axes[1]->extent, hw = a->axes[2]->extent, ic = a->reduce_axes[0]->extent;
  double in = 4.0 * (double)(a->axes[0]->extent * ic * hw), w = 4.0 * (double)(oc * ic);
  return order_by_traffic(t, in, w, (double)(oc / rows), (double)(hw / (vecs * target_lanes(t))));
}

static void add_order_knob(TopiConfigSpace *s, bool chunks_outer) {
  TopiKnob *k = &s->knobs[s->nknobs++];
  k->name = "order";
  k->choices[k->nchoices++] = 0;
  k->choices[k->nchoices++] = 1;
  if (chunks_outer) k->choices[k->nchoices++] = 2;
}

/* Order 2 (the direct form's float convs with an NCHWc output; elsewhere it is order 0): the input channel
 * chunks of tile_ic blocks outermost within each output channel block: the epilogue's loop over the blocks
 * (n x oc.o, parallel) computes a block's conv, ic.o, oh, ow.o, kh, kw, ic.i, ... into a block-sized buffer,
 * then the block's epilogue. A register tile reuses each weight vector for its few columns only, so where a
 * block's weights outgrow L1 every tile streams them from L2 again; a chunk's weights stay in L1 for all the
 * block's tiles, which load and store their accumulators once per chunk instead. The fallback takes it, with
 * one input block per chunk, where a block's weights exceed twice L1 and the map has at most 64 pixels, and the
 * block spans several vectors (AVX2, NEON: their tiles have 4-6 columns; measured on Zen 3 AVX2). There, in a
 * two-conv model on one thread, 2048 -> 512 and 2048 -> 1024 1x1 convs at 7x7 ran 1.89 -> 1.43 and
 * 3.66 -> 2.81 ms; with 512 or 1024 input channels the gain was small or none, so those are left to tuning.
 * (Materialising the whole conv instead made it scratch over 128 KiB, which glibc maps and unmaps per call:
 * every other kernel of ResNet-50 ran 5-10% slower.) */
static bool chunks_outer_fallback(const Target *t, const TeOp *a) {
  int64_t ocb = a->axes[4]->extent, l1 = t && t->l1_bytes > 0 ? t->l1_bytes : 32 * 1024;
  double w = 4.0 * (double)ocb;
  for (int i = 0; i < a->nreduce; i++) w *= (double)a->reduce_axes[i]->extent;
  return a->outputs[0]->dtype == MLC_F32 && block_vecs(t, ocb) > 1 && w > 2.0 * (double)l1 &&
         a->axes[2]->extent * a->axes[3]->extent <= 64 && a->reduce_axes[0]->extent > 1;
}

/* Knob prefetch (the direct form in order 0; 0 or 1): the iterations of the parallel loop take the output
 * channel blocks one after the other, and each streams in the next block's weights while it computes its own
 * rows (tir/prefetch.c), instead of the first row of every block waiting on memory for its weights. The
 * fallback takes it where the weights outgrow L1, so a block's weights come from beyond it in every run:
 * ResNet-50 on a Sapphire Rapids core (AVX-512, 48 KiB L1, 2 MiB L2), min of 5 alternating per-kernel
 * profiles: the 7x7 convs 16-23% faster, the 14x14 ones 6-14%, the 28x28 and 56x56 ones unchanged (within
 * 3%); the kernels' sum 56.3 -> 52.1 ms on one thread, 30.6 -> 28.4 on two. */
static bool prefetch_fallback(const Target *t, const TeOp *a) {
  int64_t l1 = t && t->l1_bytes > 0 ? t->l1_bytes : 32 * 1024;
  const TeTensor *w = topi_product_operand(a, 1);
  return w && tensor_bytes(w) > (double)l1;
}

void topi_conv2d_packed_space(const Target *t, const TeOp *a, TopiConfigSpace *s) {
  memset(s, 0, sizeof *s);
  if (rows_anchor_ok(a)) {
    int64_t oc = a->axes[1]->extent, nvec = a->axes[2]->extent / target_lanes(t);
    TopiKnob *k = &s->knobs[s->nknobs++];
    k->name = "tile_rows";
    for (int64_t r = 1; r <= 16; r *= 2)
      if (topi_conv_rows_ok(oc, r)) k->choices[k->nchoices++] = r;
    k = &s->knobs[s->nknobs++];
    k->name = "tile_vecs";
    for (int64_t v = 1; v <= 4 && v <= nvec; v++)
      if (nvec % v == 0) k->choices[k->nchoices++] = v;
    add_order_knob(s, false);
    return;
  }
  if (!anchor_ok(a)) return;
  bool int8 = a->outputs[0]->dtype == MLC_I32;
  int64_t ow = a->axes[3]->extent, ic = a->reduce_axes[0]->extent, mx = reg_n_max(t, a->axes[4]->extent, int8);
  int64_t vecs = block_vecs(t, a->axes[4]->extent);
  TopiKnob *k = &s->knobs[s->nknobs++];
  k->name = "tile_ow";
  for (int64_t f = 1; f <= ow && f <= mx + 1 && k->nchoices < TOPI_MAX_CHOICES; f++)
    if ((ow % f == 0 && f <= mx) || f == default_reg_n(ow, mx, vecs)) k->choices[k->nchoices++] = f;
  k = &s->knobs[s->nknobs++];
  k->name = "tile_ic";
  for (int64_t f = 1; f <= ic && k->nchoices < TOPI_MAX_CHOICES; f++)
    if (ic % f == 0) k->choices[k->nchoices++] = f;
  /* the output channel block: a graph layout (the packed weight, an NCHWc output), so AlterOpLayout applies it
   * when the next compile reads the record (src/autotvm/conv_block.c); this kernel is built with the block
   * its graph already has, which is the fallback value */
  int64_t ocb = a->axes[4]->extent, oc = a->axes[1]->extent * ocb;
  k = &s->knobs[s->nknobs++];
  k->name = "tile_oc";
  for (int64_t b = 8; b <= 32; b *= 2)
    if (oc % b == 0 || b == ocb) k->choices[k->nchoices++] = b;
  if (ocb < 8 || ocb > 32 || (ocb & (ocb - 1))) k->choices[k->nchoices++] = ocb;
  k = &s->knobs[s->nknobs++];
  k->name = "tile_ocn";
  for (int64_t b = 1; b <= 4; b *= 2)
    if (a->axes[1]->extent % b == 0 && (b == 1 || !int8)) k->choices[k->nchoices++] = b;
  add_order_knob(s, !int8);
  if (prefetch_fallback(t, a)) {
    k = topi_knob_add(s, "prefetch");
    topi_knob_choice(k, 0);
    topi_knob_choice(k, 1);
  }
}

void topi_conv2d_packed_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) {
  memset(cfg, 0, sizeof *cfg);
  if (rows_anchor_ok(a)) {
    int64_t r, v;
    topi_conv_rows_tile(t, a->axes[1]->extent, a->axes[2]->extent / target_lanes(t), &r, &v);
    cfg->names[0] = "tile_rows";
    cfg->values[0] = r;
    cfg->names[1] = "tile_vecs";
    cfg->values[1] = v;
    cfg->names[2] = "order";
    cfg->values[2] = rows_order(t, a, r, v);
    cfg->nknobs = 3;
    return;
  }
  if (!anchor_ok(a)) return;
  int64_t reg_n, ocn = fallback_ocn(t, a, &reg_n);
  cfg->names[0] = "tile_ow";
  cfg->values[0] = reg_n;
  bool chunks = chunks_outer_fallback(t, a);
  cfg->names[1] = "tile_ic";
  cfg->values[1] = chunks ? 1 : a->reduce_axes[0]->extent;
  cfg->names[2] = "tile_oc";
  cfg->values[2] = a->axes[4]->extent;
  cfg->names[3] = "tile_ocn";
  cfg->values[3] = ocn;
  cfg->names[4] = "order";
  cfg->values[4] = chunks ? 2 : direct_order(t, a);
  cfg->nknobs = 5;
  if (prefetch_fallback(t, a)) topi_cfg_set(cfg, "prefetch", 1);
}

/* the padding stage: n x rows x channels (blocks) in parallel, rows outside the channels so each thread pads
 * the rows its part of the conv reads (topi_row_groups), the width innermost (then the channel block, one
 * vector) */
static void schedule_pad(TeStage *st) {
  TeOp *op = st->op;
  st->attach = ATTACH_ROOT; /* the group schedule inlined it: the conv must read plain memory */
  IterVar *order[5] = {op->axes[0], op->axes[2], op->axes[1], op->axes[3], op->naxes == 5 ? op->axes[4] : NULL};
  te_reorder(st, op->naxes == 5 ? 5 : 4, order);
  IterVar *f = te_fuse(st, op->axes[0], op->axes[2]);
  f = te_fuse(st, f, op->axes[1]);
  int64_t inner = op->axes[3]->extent * (op->naxes == 5 ? op->axes[4]->extent : 1);
  if (f->extent * inner >= 16384) te_parallel(st, f);
  if (op->naxes == 5) te_vectorize(st, op->axes[4]);
}

/* The rows form: the output [n, OC, OH, OW] (unpack + epilogue) is tiled n, oc.o, hw.o | oc.i (unrolled
 * rows), hw.v (unrolled vectors), hw.l (lanes) with hw = OH x OW fused and n x oc.o the parallel loop; the
 * conv is computed at hw.o: ic, then the rows x vectors accumulator tile, so the tile's
 * data loads are contiguous and its weight broadcasts walk the packed block; the epilogue is applied at the
 * tile and stored as whole vectors. */
static void schedule_rows(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *cs = te_stage(s, a->outputs[0]);
  int64_t lanes = target_lanes(c->target), oc = a->axes[1]->extent, hw = a->axes[2]->extent, r0, v0;
  topi_conv_rows_tile(c->target, oc, hw / lanes, &r0, &v0);
  int64_t rows = topi_config_get(cfg, "tile_rows", r0), vecs = topi_config_get(cfg, "tile_vecs", v0);
  if (!topi_conv_rows_ok(oc, rows)) rows = r0;
  if (vecs < 1 || (hw / lanes) % vecs) vecs = v0;
  IterVar *cro, *cri, *cho, *chi, *chv, *chl;
  topi_split(cs, a->axes[1], rows, &cro, &cri);
  topi_split(cs, a->axes[2], vecs * lanes, &cho, &chi);
  topi_split(cs, chi, lanes, &chv, &chl);
  IterVar *order[7] = {a->axes[0], cro, cho, a->reduce_axes[0], cri, chv, chl};
  te_reorder(cs, 7, order);
  te_unroll(cs, cri);
  te_unroll(cs, chv);
  te_vectorize(cs, chl);
  TeStage *os = out ? te_stage(s, out) : NULL;
  bool tiled_out = os && os->op != a && os->op->kind == TE_COMPUTE && os->op->nreduce == 0 && out->ndim == 4 &&
                   os->nleaf == 4 && os->attach == ATTACH_ROOT && out->shape[0] == a->axes[0]->extent &&
                   out->shape[1] == oc && out->shape[2] * out->shape[3] == hw;
  if (!tiled_out) { /* the conv is materialised whole: parallel over its channel row blocks */
    IterVar *f = te_fuse(cs, a->axes[0], cro);
    if (f->extent > 1) te_parallel(cs, f);
    return;
  }
  TeOp *o = os->op;
  IterVar *oro, *ori, *ohw, *hwo, *hwi, *hwv, *hwl;
  ohw = te_fuse(os, o->axes[2], o->axes[3]);
  topi_split(os, o->axes[1], rows, &oro, &ori);
  topi_split(os, ohw, vecs * lanes, &hwo, &hwi);
  topi_split(os, hwi, lanes, &hwv, &hwl);
  bool hw_outer = topi_config_get(cfg, "order", rows_order(c->target, a, rows, vecs)) == 1;
  IterVar *oorder[6] = {o->axes[0], hw_outer ? hwo : oro, hw_outer ? oro : hwo, ori, hwv, hwl};
  te_reorder(os, 6, oorder);
  IterVar *f = te_fuse(os, o->axes[0], oorder[1]);
  if (f->extent > 1) te_parallel(os, f);
  te_unroll(os, ori);
  te_unroll(os, hwv);
  te_vectorize(os, hwl);
  te_compute_at(cs, os, oorder[2]);
}

void topi_conv2d_packed_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  TeStage *cs = te_stage(s, a->outputs[0]);
  if (!cs || (!anchor_ok(a) && !rows_anchor_ok(a))) return;
  for (int i = 0; i < s->nstages; i++)
    if (s->stages[i]->op->tag && !strcmp(s->stages[i]->op->tag, "conv2d_packed_pad")) schedule_pad(s->stages[i]);
  if (rows_anchor_ok(a)) {
    schedule_rows(c, s, a, out, cfg);
    return;
  }
  int64_t ocb = a->axes[4]->extent;
  TeStage *os = out ? te_stage(s, out) : NULL;
  /* the group output tiles the conv: NCHW [N, OC, OH, OW] or NCHWc [N, OC/ocb, OH, OW, ocb] */
  bool tiled_out = os && os->op != a && os->op->kind == TE_COMPUTE && os->op->nreduce == 0 &&
                   os->nleaf == out->ndim && os->attach == ATTACH_ROOT && out->shape[0] == a->axes[0]->extent &&
                   out->shape[2] == a->axes[2]->extent && out->shape[3] <= a->axes[3]->extent;
  bool nchwc_out = out && out->ndim == 5;
  if (nchwc_out)
    tiled_out = tiled_out && out->shape[1] == a->axes[1]->extent && out->shape[4] == ocb;
  else
    tiled_out = tiled_out && out && out->ndim == 4 && out->shape[1] > (a->axes[1]->extent - 1) * ocb &&
                out->shape[1] <= a->axes[1]->extent * ocb; /* a padded last block: its channels < OC stored */
  bool int8 = a->outputs[0]->dtype == MLC_I32;
  int64_t occ = a->axes[1]->extent, dflt_reg_n, dflt_ocn = fallback_ocn(c->target, a, &dflt_reg_n);
  int64_t reg_n = topi_config_get(cfg, "tile_ow", dflt_reg_n);
  int64_t ocn = int8 ? 1 : topi_fit_blocks(occ, topi_config_get(cfg, "tile_ocn", dflt_ocn), reg_n);
  int64_t tic = topi_config_get(cfg, "tile_ic", a->reduce_axes[0]->extent);
  /* the packed conv: n, occ.o, oh, ow.o, ic.o, kh, kw, ic.i, occ.i (unrolled), ocb (vector), ow.i (unrolled);
   * with the whole channel range in one block: ic, kh, kw, which walks the packed weight contiguously; order
   * 2 (chunks_outer_fallback): n, occ.o, ic.o, oh, ow.o, kh, kw, ic.i, ..., computed per output block */
  int64_t order_v = topi_config_get(cfg, "order", direct_order(c->target, a));
  /* (order 2's per-block buffer stays within the stack scratch: heap scratch costs every other kernel, above) */
  int64_t chunk_rows = a->axes[2]->extent / topi_row_groups(a->axes[2]->extent);
  bool chunks_outer = order_v == 2 && !int8 && nchwc_out && tiled_out && tic < a->reduce_axes[0]->extent &&
                      4 * chunk_rows * a->axes[3]->extent * ocb * ocn <= MLC_STACK_SCRATCH_MAX;
  IterVar *owo, *owi, *ico = NULL, *ici = NULL, *occo = a->axes[1], *occi = NULL;
  if (ocn > 1) topi_split(cs, a->axes[1], ocn, &occo, &occi);
  topi_split(cs, a->axes[3], reg_n, &owo, &owi);
  if (tic < a->reduce_axes[0]->extent) topi_split(cs, a->reduce_axes[0], tic, &ico, &ici);
  IterVar *order[12] = {a->axes[0], occo};
  int k = 2;
  if (chunks_outer) order[k++] = ico;
  order[k++] = a->axes[2];
  order[k++] = owo;
  if (!chunks_outer) order[k++] = ico ? ico : a->reduce_axes[0];
  order[k++] = a->reduce_axes[1];
  order[k++] = a->reduce_axes[2];
  if (ici) order[k++] = ici;
  if (a->nreduce == 4) order[k++] = a->reduce_axes[3]; /* ic.i: the input channel block */
  /* the 8-bit form (int32 sums) puts the vector innermost: TIR's vectorizer takes only straight-line bodies,
   * and its dot_u8s8 must become vpdpbusd, which LLVM's loop vectorizer would not make of the scalar call. So
   * does a tile of several channel blocks (occ.i, ow.i, ocb): left to LLVM's loop vectorizer, the second
   * block's weight vector became a gather where the input is blocked (ResNet-50's layer3: 3x slower). And so
   * does a block of several vectors (16 channels with AVX2): LLVM made the block a loop of two 8-lane steps
   * whose ow.i accumulators stayed in memory, a load, FMA and store each (ResNet-18's convs at 30-41 GFLOP/s,
   * its Winograd GEMMs at 79) */
  bool vec_inner = int8 || occi || block_vecs(c->target, ocb) > 1;
  if (occi) order[k++] = occi;
  order[k++] = vec_inner ? owi : a->axes[4];
  order[k++] = vec_inner ? a->axes[4] : owi;
  te_reorder(cs, k, order);
  te_vectorize(cs, a->axes[4]);
  te_unroll(cs, owi);
  if (occi) te_unroll(cs, occi);
  if (!tiled_out) { /* the packed conv is materialised whole: parallel over its rows */
    IterVar *f = te_fuse(cs, a->axes[0], occo);
    f = te_fuse(cs, f, a->axes[2]);
    if (f->extent > 1) te_parallel(cs, f);
    return;
  }
  /* the output (unpack + epilogue): n, oc.o, oh, ow.o | ow.i (unrolled), oc.i (vector); the conv at ow.o */
  TeOp *o = os->op;
  IterVar *oco, *oci, *wo, *wi;
  if (nchwc_out) {
    oco = o->axes[1];
    oci = o->axes[4];
  } else {
    topi_split(os, o->axes[1], ocb, &oco, &oci);
  }
  IterVar *ocni = NULL; /* the tile's channel blocks */
  if (ocn > 1) topi_split(os, oco, ocn, &oco, &ocni);
  if (chunks_outer) { /* n, row group, oc.o (parallel) | the tile's blocks, oh.i, ow, oc.i (vector); the conv
                        * at oc.o: per block and row group (see topi_row_groups below) */
    IterVar *gho = NULL, *ghi = o->axes[2];
    if (chunk_rows < o->axes[2]->extent) topi_split(os, o->axes[2], chunk_rows, &gho, &ghi);
    IterVar *corder[7];
    int nc = 0;
    corder[nc++] = o->axes[0];
    if (gho) corder[nc++] = gho;
    corder[nc++] = oco;
    int nfused = nc;
    if (ocni) corder[nc++] = ocni;
    corder[nc++] = ghi;
    corder[nc++] = o->axes[3];
    corder[nc++] = oci;
    te_reorder(os, nc, corder);
    IterVar *f = corder[0];
    for (int i = 1; i < nfused; i++) f = te_fuse(os, f, corder[i]);
    if (f->extent > 1) te_parallel(os, f);
    te_vectorize(os, oci);
    te_compute_at(cs, os, f);
    return;
  }
  topi_split(os, o->axes[3], reg_n, &wo, &wi);
  bool rows_outer = order_v == 1;
  /* order 0's row groups (topi_row_groups): the rows cut into two halves outside the channel blocks, so on
   * two threads each reads the rows it wrote itself. ResNet-50's 1024 -> 256 1x1 convs at 14x14 on 2
   * threads: 0.51 -> 0.34 ms (2.1x over one thread instead of 1.0x), the 28x28 layers 10-15% faster; one
   * thread unchanged. Not a knob: a kernel tuned alone reads an input that one thread wrote, so tuning could
   * not see what the halves buy in the model. */
  int64_t oh = o->axes[2]->extent, groups = rows_outer ? 1 : topi_row_groups(oh);
  /* prefetch (order 0): the parallel loop is n, row group, oc block; the rows of a block run in one iteration,
   * which streams in the next iteration's weight block while it computes (tir/prefetch.c). Kept only where
   * the parallel loop still has two iterations per core. */
  TeTensor *wt = topi_product_operand(a, 1);
  int64_t pf = rows_outer || !wt ? 0 : topi_config_get(cfg, "prefetch", 0);
  if (a->axes[0]->extent * groups * (occ / ocn) < 2 * topi_num_cores(c->target)) pf = 0;
  IterVar *gho = NULL, *ghi = o->axes[2];
  if (groups > 1) topi_split(os, o->axes[2], oh / groups, &gho, &ghi);
  /* NCHW output: a tile's ocb x reg_n results stored channel by channel, as reg_n contiguous columns (LLVM
   * transposes the accumulators in registers), instead of each column's ocb channels scattered H*W apart;
   * MobileNetV3's 3 -> 16 stem at 160x160 ran 2.4x faster. Narrow tiles keep the scatter. */
  bool rows_store = !nchwc_out && reg_n >= 8 && !int8;
  IterVar *oorder[8] = {o->axes[0]};
  int no = 1;
  if (gho) oorder[no++] = gho;
  oorder[no++] = rows_outer ? o->axes[2] : oco;
  oorder[no++] = rows_outer ? oco : ghi;
  int nfused = pf ? no - 1 : no;
  oorder[no++] = wo;
  if (ocni) oorder[no++] = ocni;
  oorder[no++] = rows_store ? oci : wi;
  oorder[no++] = rows_store ? wi : oci;
  te_reorder(os, no, oorder);
  IterVar *f = oorder[0];
  for (int i = 1; i < nfused; i++) f = te_fuse(os, f, oorder[i]);
  if (f->extent > 1) te_parallel(os, f);
  if (pf) te_prefetch(os, wt, f, pf);
  te_unroll(os, oorder[no - 2]);
  te_vectorize(os, oorder[no - 1]);
  te_compute_at(cs, os, wo);
}
