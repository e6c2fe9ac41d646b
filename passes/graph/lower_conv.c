/* LowerConv and LowerQDQ. LowerConv: convolutions (and integer matmuls) that have no fast template become
 * nn.conv2d (float32 matmuls), which AlterOpLayout then packs (register-tiled NCHWc, Winograd, depthwise), as
 * TVM's frontends and ONNX Runtime do:
 *
 * 1. nn.conv1d(x [N, C, W], w [O, C/g, K]) is nn.conv2d over [N, C, 1, W] with a (1, K) kernel: two reshapes
 *    around it. wav2vec2's strided feature-extractor convs ran on the generic NCW loop nest at 3-5 GFLOP/s.
 *
 * 2. nn.conv{1,2,3}d_transpose with a constant weight and dilation 1 become one ordinary convolution
 *    (nn.conv2d, nn.conv3d for 3-D) followed by an interleave (the sub-pixel form of a transposed convolution). Along a spatial
 *    dim with stride s, kernel K and J = ceil(K / s) taps per phase, the uncropped output at o' = q*s + r
 *    (phase r < s) is
 *        out'[q*s + r] = sum_{j < J} x[q - j] * w[r + j*s]          (w[k] = 0 for k >= K)
 *    which is a correlation of x, padded by J - 1 in front, with the flipped phase kernel w_r[J-1-j] =
 *    w[r + j*s]. All s_h * s_w phases are the output channels of one nn.conv2d: channel (o, rh, rw) in that
 *    order (groups stay groups: a group's channels stay contiguous), weight [O*sh*sw, C/g, Jh, Jw]. Then
 *        y [N, O*sh*sw, Qh, Qw] -> reshape [N, O, sh, sw, Qh, Qw] -> transpose [N, O, Qh, sh, Qw, sw]
 *          -> reshape [N, O, Qh*sh, Qw*sw] -> strided_slice [pb, pb + out)   (the transposed conv's pads crop)
 *    (3-D: the same with three phase dims.) Q covers pb + out, padding the input at the back where the output
 *    needs more rows. The conv does the transposed conv's multiply-adds and no others when s divides K. UNet
 *    decoders' ConvTranspose2d(4, 2, 1) ran at 1.8 GFLOP/s on the generic loop nest, 3-D UNets'
 *    ConvTranspose3d(2, 2) 150x slower than after.
 *
 * 3. nn.conv2d whose kernel taps read mostly padding (a dilation close to the image size) is split into
 *    output regions that each use only their live taps, or loses the taps dead everywhere (see live_taps);
 *    their slices of the input keep every channel, so they stay in the NCHWc layout of the convs around.
 *
 * 4. Else a dilated 3x3 conv whose dilation phases make a Winograd conv becomes that (see dilated_phases).
 *
 * 5. An integer nn.conv2d (ConvInteger, QLinearConv: int32 data that is an 8-bit tensor minus its constant
 *    zero point, a constant int32 weight) becomes, on a target with u8 x s8 dot products (x86 VNNI) and a
 *    weight that fits int8, the 8-bit nn.conv2d_packed (src/topi/conv2d_x86.c): the data's bytes (int8 data
 *    plus 128) times the weight packed four input channels to a word, padded with the data's zero point, plus
 *    the offset -zero point * sum(w) per output channel; the int32 sums are exact (no overflow below 65793
 *    taps). QLinearConv 64->64 3x3 at 56x56 ran 2.3 ms as float32, 0.64 ms so (ONNX Runtime 0.73).
 *    Otherwise it becomes float32 convs on the same values, cast back to int32: exact
 *    while every partial sum stays below 2^24, which the data's range times the largest per-output-channel
 *    sum of |w| bounds. Input channels are split into chunks that each keep that bound (their int32 results
 *    added), up to 8. The float convs are marked exact (AlterOpLayout packs them but makes none Winograd,
 *    whose transforms round). The generic int32 loop nest ran 4-5x slower than ONNX Runtime's int8 kernels.
 *
 * 6. Likewise an integer nn.matmul / nn.batch_matmul (MatMulInteger, QLinearMatMul, ONNX Runtime's dynamic
 *    quantization of a transformer's linear layers) of such data by a constant int32 [K, N] matrix: with VNNI
 *    and an int8-range matrix, the 8-bit 1x1 conv of the data transposed (int_matmul_dot; the zero point may
 *    be known at run time only: DynamicQuantizeLinear's), DynamicQuantizeLinear + MatMulInteger 128x768x3072
 *    5.58 -> 1.75 ms (ONNX Runtime 2.31); else float32 products on chunks of K (each column's sum of |b| times
 *    the data's range below 2^24), which AlterOpLayout packs like any float32 matmul by a constant.
 *
 * Steps 1-4 are float32 only (the packed templates' dtype); other transposed convs (dilated, a weight
 * computed at run time) keep the generic op.
 *
 * LowerQDQ, a pass of its own in this file (it runs before FoldConstant): the QDQ form of quantized models
 * (ONNX Runtime's default format: every Conv / MatMul reads DequantizeLinear outputs) as integer convs and
 * matmuls, as ONNX Runtime fuses them:
 *
 *     nn.conv2d(qnn.dequantize(x8, xs, xz), qnn.dequantize(w8, ws, wz))                  (w8 a constant)
 *  -> multiply(cast<float32>(nn.conv2d(qnn.subtract_zero_point(x8, xz), qnn.subtract_zero_point(w8, wz))),
 *              reshape(xs * ws, [OC, 1, 1]))
 *
 * and likewise nn.matmul / nn.batch_matmul of a dequantized 8-bit tensor by a dequantized constant [K, N] matrix
 * (scale per tensor or per column), and nn.dense (Gemm, QGemm: a constant [N, K] matrix, scale per tensor or
 * per row) as the nn.matmul by its transpose. The integer sum is exact, so this is the float conv of the dequantized
 * values without its rounding; LowerConv then makes the integer op an 8-bit packed conv (vpdpbusd) on VNNI
 * CPUs, else an exact float32 one. The data's scale and zero point must be per tensor; the weight's per tensor
 * or per output channel (axis 0 of the conv weight, 1 of the matrix), not blocked. FoldConstant would otherwise
 * have folded the weight's dequantize into a float constant. With LowerConv.requantize_float32=1 the
 * QuantizeLinear after such an op (and its int32 bias of scale xs * ws) becomes a float32 qnn.requantize, as
 * ONNX Runtime fuses QDQ into QLinearConv (see qdq_requantize). */
#include <stdlib.h>
#include <string.h>
#include "codegen/llvm/codegen.h"
#include "passes/graph/passes.h"

typedef struct Lower {
  Graph *g;
  Node *n;
  const PassOptions *opt;
  Diag *d;
} Lower;

static Node *add_node(Lower *w, const char *op, const char *suffix, Value **ins, int nin) {
  Node *n = ir_node_new(w->g, ir_op_find(op), arena_printf(w->g->arena, "%s_%s", w->n->name, suffix), w->n->op_type,
                        w->n->opset, ins, nin, 1);
  return n;
}

static Value *finish(Lower *w, Node *n) { return ir_infer_node(w->g, n, w->d) ? NULL : n->outputs[0]; }

static Value *reshape(Lower *w, Value *v, int ndim, const int64_t *shape, const char *suffix) {
  if (!v) return NULL;
  Node *n = add_node(w, "reshape", suffix, &v, 1);
  ir_set_ints(w->g, n, "newshape", shape, ndim);
  return finish(w, n);
}

/* the window attributes of a new conv of D spatial dims */
static void copy_window(Lower *w, Node *conv, int D, const int64_t *strides, const int64_t *dil, const int64_t *pads,
                        int64_t groups) {
  ir_set_ints(w->g, conv, "strides", strides, D);
  ir_set_ints(w->g, conv, "dilation", dil, D);
  ir_set_ints(w->g, conv, "padding", pads, 2 * D);
  ir_set_int(w->g, conv, "groups", groups);
}

/* a window attribute of n (nsp spatial dims) as D >= nsp dims: the missing leading ones get dflt (a 1-D window
 * becomes the W dim of a 1-row image) */
static void window_attr(const Node *n, const char *name, int nsp, int D, int64_t dflt, int64_t *out) {
  int64_t v[3];
  int c = ir_attr_ints(n, name, v, 3);
  for (int i = 0; i < D; i++) out[i] = dflt;
  if (c == nsp) memcpy(out + D - nsp, v, sizeof(int64_t) * (size_t)nsp);
}

/* the padding [begins..., ends...] of n (nsp dims) as D dims */
static void window_pads(const Node *n, int nsp, int D, int64_t *out) {
  int64_t v[6] = {0};
  int c = ir_attr_ints(n, "padding", v, 6);
  memset(out, 0, 2 * (size_t)D * sizeof(int64_t));
  if (c != 2 * nsp) return;
  for (int i = 0; i < nsp; i++) out[D - nsp + i] = v[i], out[2 * D - nsp + i] = v[nsp + i];
}

/* 1. nn.conv1d -> reshape, nn.conv2d, reshape */
static Value *lower_conv1d(Lower *w) {
  Node *n = w->n;
  Value *x = n->inputs[0], *k = n->inputs[1];
  const TensorType *xt = &x->type, *kt = &k->type, *ot = &n->outputs[0]->type;
  int64_t strides[2], dil[2], pads[4];
  window_attr(n, "strides", 1, 2, 1, strides);
  window_attr(n, "dilation", 1, 2, 1, dil);
  window_pads(n, 1, 2, pads);
  int64_t xs[4] = {xt->dims[0], xt->dims[1], 1, xt->dims[2]}, ks[4] = {kt->dims[0], kt->dims[1], 1, kt->dims[2]};
  Value *ins[2] = {reshape(w, x, 4, xs, "data_2d"), NULL};
  if (k->data) { /* a constant weight stays one, for AlterOpLayout to pack */
    TensorType t = {.dtype = kt->dtype, .ndim = 4, .dims = {ks[0], ks[1], ks[2], ks[3]}};
    ins[1] = ir_const_new(w->g, arena_printf(w->g->arena, "%s_weight_2d", n->name), t, k->data);
  } else {
    ins[1] = reshape(w, k, 4, ks, "weight_2d");
  }
  if (!ins[0] || !ins[1]) return NULL;
  Node *conv = add_node(w, "nn.conv2d", "2d", ins, 2);
  copy_window(w, conv, 2, strides, dil, pads, ir_attr_int(n, "groups", 1));
  Value *y = finish(w, conv);
  return y ? reshape(w, y, 3, ot->dims, "out_1d") : NULL;
}

/* 2. nn.conv{1,2,3}d_transpose (constant weight, dilation 1) -> nn.conv2d / nn.conv3d + interleave; a 1-D one
 * as a 2-D one over a 1-row image */
static Value *lower_transpose(Lower *w, int nsp) {
  Node *n = w->n;
  Value *x = n->inputs[0], *k = n->inputs[1];
  const TensorType *xt = &x->type, *kt = &k->type, *ot = &n->outputs[0]->type;
  int D = nsp == 3 ? 3 : 2, lead = D - nsp; /* working dims; leading dims of extent 1 added */
  int64_t s[3], dil[3], pads[6], groups = ir_attr_int(n, "groups", 1);
  window_attr(n, "strides", nsp, D, 1, s);
  window_attr(n, "dilation", nsp, D, 1, dil);
  window_pads(n, nsp, D, pads);
  for (int i = 0; i < D; i++)
    if (dil[i] != 1) return NULL;
  if (groups < 1) return NULL;
  /* x [N, C, in...], weight [C, O/g, K...], output [N, O, out...] */
  int64_t N = xt->dims[0], C = xt->dims[1], opg = kt->dims[1], O = ot->dims[1], cpg = C / groups;
  int64_t in[3], K[3], out[3], J[3], Q[3], conv_pads[6], P = 1;
  for (int i = 0; i < D; i++) {
    in[i] = i < lead ? 1 : xt->dims[2 + i - lead];
    K[i] = i < lead ? 1 : kt->dims[2 + i - lead];
    out[i] = i < lead ? 1 : ot->dims[2 + i - lead];
    J[i] = (K[i] + s[i] - 1) / s[i];
    int64_t need = (pads[i] + out[i] + s[i] - 1) / s[i]; /* rows q of the interleave the crop reaches */
    int64_t back = need > in[i] ? need - in[i] : 0;
    conv_pads[i] = J[i] - 1, conv_pads[D + i] = back;
    Q[i] = in[i] + back; /* the conv's output extent: in + (J-1) + back - J + 1 */
    P *= s[i];
  }
  int64_t OC = O * P, taps = J[0] * J[1] * (D == 3 ? J[2] : 1);
  if (OC * cpg * taps > ((int64_t)1 << 28)) return NULL;
  /* the phase weights: W'[(o, r...)][c][j'...] = w[g*cpg + c][o % opg][r + (J-1-j')*s ...] (zero past K) */
  TensorType wt = {.dtype = MLC_F32, .ndim = 2 + D, .dims = {OC, cpg}};
  for (int i = 0; i < D; i++) wt.dims[2 + i] = J[i];
  float *wd = arena_alloc(w->g->arena, (size_t)tt_nbytes(&wt));
  const float *src = k->data;
  memset(wd, 0, (size_t)tt_nbytes(&wt));
  int64_t Kz = D == 3 ? K[2] : 1, Jz = D == 3 ? J[2] : 1, sz = D == 3 ? s[2] : 1;
  int64_t Ky = K[1], Jy = J[1], sy = s[1], Kx = K[0], Jx = J[0], sx = s[0];
  for (int64_t o = 0; o < O; o++)
    for (int64_t r = 0; r < P; r++) {
      int64_t r0 = r / (sy * sz), r1 = r / sz % sy, r2 = r % sz;
      for (int64_t c = 0; c < cpg; c++)
        for (int64_t j0 = 0; j0 < Jx; j0++)
          for (int64_t j1 = 0; j1 < Jy; j1++)
            for (int64_t j2 = 0; j2 < Jz; j2++) {
              int64_t k0 = r0 + (Jx - 1 - j0) * sx, k1 = r1 + (Jy - 1 - j1) * sy, k2 = r2 + (Jz - 1 - j2) * sz;
              if (k0 >= Kx || k1 >= Ky || k2 >= Kz) continue;
              int64_t ic = o / opg * cpg + c, oc = o % opg;
              wd[((((o * P + r) * cpg + c) * Jx + j0) * Jy + j1) * Jz + j2] =
                  src[(((ic * opg + oc) * Kx + k0) * Ky + k1) * Kz + k2];
            }
    }
  Value *wv = ir_const_new(w->g, arena_printf(w->g->arena, "%s_phase_weight", n->name), wt, wd);
  int64_t xs[5] = {N, C, in[0], in[1], in[2]};
  Value *ins[2] = {lead ? reshape(w, x, 2 + D, xs, "data_2d") : x, wv};
  if (!ins[0]) return NULL;
  Node *conv = add_node(w, D == 3 ? "nn.conv3d" : "nn.conv2d", "phases", ins, 2);
  int64_t one[3] = {1, 1, 1};
  copy_window(w, conv, D, one, one, conv_pads, groups);
  Value *y = finish(w, conv);
  /* [N, O, s..., Q...] -> [N, O, Q0, s0, Q1, s1, ...] -> [N, O, Q0*s0, ...] -> crop */
  int64_t split[8] = {N, O}, perm[8] = {0, 1}, merged[5] = {N, O};
  for (int i = 0; i < D; i++) {
    split[2 + i] = s[i], split[2 + D + i] = Q[i];
    perm[2 + 2 * i] = 2 + D + i, perm[3 + 2 * i] = 2 + i;
    merged[2 + i] = Q[i] * s[i];
  }
  y = reshape(w, y, 2 + 2 * D, split, "phase_split");
  if (!y) return NULL;
  Node *t = add_node(w, "transpose", "interleave", &y, 1);
  ir_set_ints(w->g, t, "axes", perm, 2 + 2 * D);
  y = reshape(w, finish(w, t), 2 + D, merged, "phase_merge");
  if (!y) return NULL;
  int64_t b[5] = {0, 0}, e[5] = {N, O}, st[5] = {1, 1, 1, 1, 1};
  bool crop = false;
  for (int i = 0; i < D; i++) {
    b[2 + i] = pads[i], e[2 + i] = pads[i] + out[i];
    crop |= pads[i] || merged[2 + i] != out[i];
  }
  if (crop) {
    Node *sl = add_node(w, "strided_slice", "crop", &y, 1);
    ir_set_ints(w->g, sl, "begin", b, 2 + D);
    ir_set_ints(w->g, sl, "end", e, 2 + D);
    ir_set_ints(w->g, sl, "strides", st, 2 + D);
    y = finish(w, sl);
  }
  return lead && y ? reshape(w, y, ot->ndim, ot->dims, "out_1d") : y;
}

/* 3. nn.conv2d with kernel taps that read only padding. Along one spatial dim (stride s, dilation d, pad pb),
 * tap t reads input o*s + t*d - pb for output o, so it is live (inside the input) for the outputs of one
 * interval [live_lo(t), live_hi(t)). Where those intervals leave most of the taps' work on padding (a dilation
 * close to the image size: DeepLabV3's ASPP convs, dilation 12-36 on 16x16 or 32x32 maps), the output is cut
 * into bands between the intervals' ends: within a band every tap is live for all its outputs or for none, so
 * each band x band region is a conv with only its live taps, over a slice of the input, unpadded; the regions
 * are concatenated back. When the regions would not save enough (or be too many), taps dead for every output
 * are still cut from the weight, with the padding moved to match (trim). */
static void live_range(int64_t t, int64_t s, int64_t d, int64_t pb, int64_t in, int64_t out, int64_t *lo,
                       int64_t *hi) {
  int64_t first = t * d - pb; /* input position of output 0's tap; output o reads first + o*s */
  *lo = first >= 0 ? 0 : (-first + s - 1) / s;
  *hi = first >= in ? 0 : (in - first + s - 1) / s;
  if (*hi > out) *hi = out;
  if (*lo > *hi) *lo = *hi;
}

/* the taps [a0, b0] x [a1, b1] of a conv2d weight, as a new constant */
static Value *weight_taps(Lower *w, const Value *k, int64_t a0, int64_t b0, int64_t a1, int64_t b1, const char *what) {
  const TensorType *kt = &k->type;
  int64_t OC = kt->dims[0] * kt->dims[1], KH = b0 - a0 + 1, KW = b1 - a1 + 1;
  TensorType wt = {.dtype = MLC_F32, .ndim = 4, .dims = {kt->dims[0], kt->dims[1], KH, KW}};
  float *wd = arena_alloc(w->g->arena, (size_t)tt_nbytes(&wt));
  const float *src = k->data;
  for (int64_t oc = 0; oc < OC; oc++)
    for (int64_t h = 0; h < KH; h++)
      for (int64_t v = 0; v < KW; v++)
        wd[(oc * KH + h) * KW + v] = src[(oc * kt->dims[2] + a0 + h) * kt->dims[3] + a1 + v];
  return ir_const_new(w->g, arena_printf(w->g->arena, "%s_%s", w->n->name, what), wt, wd);
}

enum { MAX_BANDS = 8 };

typedef struct Bands {
  int n;
  int64_t start[MAX_BANDS + 1]; /* band j: outputs [start[j], start[j + 1]) */
  int64_t a[MAX_BANDS], b[MAX_BANDS]; /* its live taps a..b (b < a: none) */
  int64_t live, all;            /* tap-outputs live, and in all */
} Bands;

static bool make_bands(int64_t K, int64_t s, int64_t d, int64_t pb, int64_t in, int64_t out, Bands *bd) {
  int64_t lo[16], hi[16], cut[34];
  int nc = 0;
  if (K > 16) return false;
  cut[nc++] = 0, cut[nc++] = out;
  for (int64_t t = 0; t < K; t++) {
    live_range(t, s, d, pb, in, out, &lo[t], &hi[t]);
    cut[nc++] = lo[t], cut[nc++] = hi[t];
  }
  /* the distinct cut points in order */
  for (int i = 1; i < nc; i++)
    for (int j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
      int64_t tmp = cut[j];
      cut[j] = cut[j - 1], cut[j - 1] = tmp;
    }
  *bd = (Bands){.all = K * out};
  for (int i = 0; i < nc; i++) {
    if (i > 0 && cut[i] == cut[i - 1]) continue;
    if (cut[i] >= out) break;
    if (bd->n == MAX_BANDS) return false;
    bd->start[bd->n++] = cut[i];
  }
  bd->start[bd->n] = out;
  for (int j = 0; j < bd->n; j++) {
    int64_t o0 = bd->start[j], o1 = bd->start[j + 1];
    bd->a[j] = K, bd->b[j] = -1;
    for (int64_t t = 0; t < K; t++)
      if (lo[t] <= o0 && o1 <= hi[t]) bd->a[j] = bd->a[j] < t ? bd->a[j] : t, bd->b[j] = t;
    if (bd->b[j] < 0) return false; /* outputs that read no input at all: not split */
    bd->live += (bd->b[j] - bd->a[j] + 1) * (o1 - o0);
  }
  return true;
}

static Value *slice4(Lower *w, Value *x, const int64_t *b, const int64_t *e, const char *what) {
  bool whole = true; /* a region that reads all of x: no copy */
  for (int i = 0; i < 4; i++) whole &= b[i] == 0 && e[i] == x->type.dims[i];
  if (whole) return x;
  Node *sl = add_node(w, "strided_slice", what, &x, 1);
  int64_t st[4] = {1, 1, 1, 1};
  ir_set_ints(w->g, sl, "begin", b, 4);
  ir_set_ints(w->g, sl, "end", e, 4);
  ir_set_ints(w->g, sl, "strides", st, 4);
  return finish(w, sl);
}

static Value *concat(Lower *w, Value **parts, int n, int axis, const char *what) {
  if (n == 1) return parts[0];
  Node *c = add_node(w, "concatenate", what, parts, n);
  ir_set_int(w->g, c, "axis", axis);
  return finish(w, c);
}

static Value *live_regions(Lower *w, const Bands *bh, const Bands *bw, const int64_t *s, const int64_t *dil,
                           const int64_t *pads) {
  Node *n = w->n;
  Value *x = n->inputs[0], *k = n->inputs[1];
  const TensorType *xt = &x->type;
  int64_t zero[4] = {0, 0, 0, 0}, one[2] = {1, 1}, groups = ir_attr_int(n, "groups", 1);
  Value *rows[MAX_BANDS];
  for (int i = 0; i < bh->n; i++) {
    Value *cols[MAX_BANDS];
    for (int j = 0; j < bw->n; j++) {
      int64_t ah = bh->a[i], bhh = bh->b[i], aw = bw->a[j], bww = bw->b[j];
      int64_t b[4] = {0, 0, bh->start[i] * s[0] + ah * dil[0] - pads[0], bw->start[j] * s[1] + aw * dil[1] - pads[1]};
      int64_t e[4] = {xt->dims[0], xt->dims[1], (bh->start[i + 1] - 1) * s[0] + bhh * dil[0] - pads[0] + 1,
                      (bw->start[j + 1] - 1) * s[1] + bww * dil[1] - pads[1] + 1};
      const char *tag = arena_printf(w->g->arena, "region_%d_%d", i, j);
      Value *ins[2] = {slice4(w, x, b, e, tag), weight_taps(w, k, ah, bhh, aw, bww, tag)};
      if (!ins[0]) return NULL;
      Node *conv = add_node(w, "nn.conv2d", arena_printf(w->g->arena, "%s_conv", tag), ins, 2);
      copy_window(w, conv, 2, s, bhh > ah || bww > aw ? dil : one, zero, groups);
      if (!(cols[j] = finish(w, conv))) return NULL;
    }
    if (!(rows[i] = concat(w, cols, bw->n, 3, arena_printf(w->g->arena, "row_%d", i)))) return NULL;
  }
  return concat(w, rows, bh->n, 2, "regions");
}

/* 4. A dilated 3x3 conv (stride 1, groups 1) with dilation (dh, dw) is dh * dw undilated convs, one per phase:
 * output row o = a*dh + p reads padded input rows (a + i)*dh + p, i < 3, so with the padded input's rows of
 * phase p as an image, the phase's outputs are its plain 3x3 conv (TensorFlow's space-to-batch form of atrous
 * convolution). The phases become the batch of one conv that AlterOpLayout makes Winograd:
 *   x -> nn.dilation_phases [dh*dw*N, C, Hq, Wq] (Hq: the padded height rounded up to a multiple of dh, / dh)
 *     -> nn.conv2d 3x3 -> [dh*dw*N, K, Hq - 2, Wq - 2] -> nn.dilation_merge [N, K, OH, OW]
 * (src/topi/spatial.c; ConvertLayoutNCHWc keeps them in the NCHWc layout of the convs around). Only where
 * Winograd takes the phase conv (DeepLabV3's dilated ResNet stages: 4x fewer multiplies; a direct conv is as
 * fast on the dilated input as on the phases, which would only add the copies), where the rounding up adds at
 * most a third to the outputs computed. */
static Value *dilated_phases(Lower *w) {
  Node *n = w->n;
  Value *x = n->inputs[0], *k = n->inputs[1];
  const TensorType *xt = &x->type, *kt = &k->type, *ot = &n->outputs[0]->type;
  int64_t s[2], dil[2], pads[4];
  window_attr(n, "strides", 2, 2, 1, s);
  window_attr(n, "dilation", 2, 2, 1, dil);
  window_pads(n, 2, 2, pads);
  if (!k->data || x->dyn_extent || xt->ndim != 4 || kt->dims[2] != 3 || kt->dims[3] != 3 || s[0] != 1 || s[1] != 1 ||
      (dil[0] == 1 && dil[1] == 1) || dil[0] < 1 || dil[1] < 1 || ir_attr_int(n, "groups", 1) != 1)
    return NULL;
  int64_t N = xt->dims[0], C = xt->dims[1], K = kt->dims[0], hq[2], a[2];
  for (int i = 0; i < 2; i++) {
    hq[i] = (xt->dims[2 + i] + pads[i] + pads[2 + i] + dil[i] - 1) / dil[i];
    a[i] = hq[i] - 2;
    if (a[i] < 1) return NULL;
  }
  double outs = (double)(a[0] * dil[0]) * (double)(a[1] * dil[1]), need = (double)ot->dims[2] * (double)ot->dims[3];
  int64_t B = dil[0] * dil[1] * N;
  if (3 * outs > 4 * need || !pass_winograd_applies(w->opt, C, K, B, a[0], a[1])) return NULL;
  Node *ph = add_node(w, "nn.dilation_phases", "phases", &x, 1);
  ir_set_ints(w->g, ph, "dilation", dil, 2);
  ir_set_ints(w->g, ph, "padding", pads, 2);
  ir_set_ints(w->g, ph, "phase_shape", hq, 2);
  Value *ins[2] = {finish(w, ph), k};
  if (!ins[0]) return NULL;
  Node *conv = add_node(w, "nn.conv2d", "phase_conv", ins, 2);
  int64_t one[2] = {1, 1}, zero[4] = {0, 0, 0, 0}, out[2] = {ot->dims[2], ot->dims[3]};
  copy_window(w, conv, 2, one, one, zero, 1);
  Value *y = finish(w, conv);
  if (!y) return NULL;
  Node *m = add_node(w, "nn.dilation_merge", "phases_merge", &y, 1);
  ir_set_ints(w->g, m, "dilation", dil, 2);
  ir_set_ints(w->g, m, "out_shape", out, 2);
  return finish(w, m);
}

static Value *live_taps(Lower *w) {
  Node *n = w->n;
  Value *x = n->inputs[0], *k = n->inputs[1];
  const TensorType *xt = &x->type, *kt = &k->type, *ot = &n->outputs[0]->type;
  if (!k->data || xt->ndim != 4) return NULL;
  int64_t s[2], dil[2], pads[4], lo[2], hi[2], np[4];
  window_attr(n, "strides", 2, 2, 1, s);
  window_attr(n, "dilation", 2, 2, 1, dil);
  window_pads(n, 2, 2, pads);
  Bands bd[2];
  bool split = true;
  for (int i = 0; i < 2; i++)
    split &= make_bands(kt->dims[2 + i], s[i], dil[i], pads[i], xt->dims[2 + i], ot->dims[2 + i], &bd[i]);
  /* regions when they leave at most 60% of the taps' work, and are few; for dilated convs only (without
   * dilation that happens on maps of 2 or 3 pixels, where the regions' kernels would cost more than they save) */
  if (split && (dil[0] > 1 || dil[1] > 1) && bd[0].n * bd[1].n <= 25 && bd[0].n * bd[1].n > 1 &&
      10 * (double)bd[0].live * (double)bd[1].live <= 6 * (double)bd[0].all * (double)bd[1].all)
    return live_regions(w, &bd[0], &bd[1], s, dil, pads);
  bool cut = false; /* else the taps dead for every output */
  for (int i = 0; i < 2; i++) {
    int64_t in = xt->dims[2 + i], K = kt->dims[2 + i], out = ot->dims[2 + i];
    lo[i] = 0, hi[i] = K - 1, np[i] = pads[i], np[2 + i] = pads[2 + i];
    int64_t a = K, b = -1;
    for (int64_t t = 0; t < K; t++) {
      int64_t l, h;
      live_range(t, s[i], dil[i], pads[i], in, out, &l, &h);
      if (l < h) a = a < t ? a : t, b = t;
    }
    if (b < 0 || (a == 0 && b == K - 1)) continue;
    int64_t pb = pads[i] - a * dil[i], pe = (out - 1) * s[i] + (b - a) * dil[i] + 1 - in - pb;
    /* no padding at the end may still give `out` positions: the stride's rounding drops the rest */
    if (pe < 0 && (in + pb - (b - a) * dil[i] - 1) / s[i] + 1 == out) pe = 0;
    if (pb < 0 || pe < 0) continue;
    lo[i] = a, hi[i] = b, np[i] = pb, np[2 + i] = pe;
    cut = true;
  }
  if (!cut) return dilated_phases(w);
  Value *ins[2] = {x, weight_taps(w, k, lo[0], hi[0], lo[1], hi[1], "live_taps")};
  Node *conv = add_node(w, "nn.conv2d", "live_taps", ins, 2);
  copy_window(w, conv, 2, s, dil, np, ir_attr_int(n, "groups", 1));
  return finish(w, conv);
}

/* step 5: the largest magnitude of an 8-bit x minus its zero point(s) (any, when they are known at run time
 * only), or 0 when x is not that */
static int64_t int8_data_bound(const Value *x) {
  const Node *p = x->producer;
  if (!p || strcmp(p->op->name, "qnn.subtract_zero_point") || p->ninputs < 1 || !p->inputs[0]) return 0;
  mlc_dtype t = p->inputs[0]->type.dtype;
  int64_t lo = t == MLC_U8 ? 0 : t == MLC_I8 ? -128 : 1, hi = t == MLC_U8 ? 255 : 127;
  if (lo > 0) return 0;
  const Value *zp = p->ninputs > 1 ? p->inputs[1] : NULL;
  int64_t nz = zp ? tt_numel(&zp->type) : 1, m = 0;
  if (zp && zp->type.dtype != t) return 0;
  if (zp && !zp->data) return hi - lo; /* a zero point known at run time only (DynamicQuantizeLinear's) */
  for (int64_t i = 0; i < nz; i++) {
    int64_t z = !zp ? 0 : t == MLC_U8 ? ((const uint8_t *)zp->data)[i] : ((const int8_t *)zp->data)[i];
    int64_t a = z - lo > hi - z ? z - lo : hi - z;
    if (a > m) m = a;
  }
  return m;
}

enum { MAX_INT_CHUNKS = 8 };

/* an integer weight: a conv's [outs][ins][taps], or a matmul's [ins][outs] (taps 1) */
typedef struct IntWeight {
  const int32_t *w;
  int64_t outs, ins, taps;
  bool ins_major;
} IntWeight;

static int64_t abs_taps(const IntWeight *iw, int64_t o, int64_t i) {
  int64_t a = 0;
  for (int64_t t = 0; t < iw->taps; t++)
    a += llabs((long long)iw->w[iw->ins_major ? i * iw->outs + o : (o * iw->ins + i) * iw->taps + t]);
  return a;
}

/* The chunks [cut[j], cut[j + 1]) of the inputs in which every output's sum of |w| stays below limit: their
 * count, or 0 when one input alone exceeds it, more than MAX_INT_CHUNKS are needed, or a split is not allowed */
static int int_chunks(Lower *w, const IntWeight *iw, int64_t limit, bool may_split, int64_t *cut) {
  int n = 0;
  int64_t *sum = arena_alloc(w->g->arena, sizeof(int64_t) * (size_t)iw->outs);
  memset(sum, 0, sizeof(int64_t) * (size_t)iw->outs);
  cut[0] = 0;
  for (int64_t i = 0; i < iw->ins; i++) {
    bool over = false;
    for (int64_t o = 0; o < iw->outs && !over; o++) {
      int64_t a = abs_taps(iw, o, i);
      if (a >= limit) return 0;
      over = sum[o] + a >= limit;
    }
    if (over) {
      if (!may_split || ++n == MAX_INT_CHUNKS) return 0;
      cut[n] = i;
      memset(sum, 0, sizeof(int64_t) * (size_t)iw->outs);
    }
    for (int64_t o = 0; o < iw->outs; o++) sum[o] += abs_taps(iw, o, i);
  }
  cut[++n] = iw->ins;
  return n;
}

/* y + part in int32 (part alone when y is NULL; NULL when part is) */
static Value *int_sum(Lower *w, Value *y, Value *part) {
  if (!y || !part) return part;
  Value *two[2] = {y, part};
  return finish(w, add_node(w, "add", "int_sum", two, 2));
}

static Value *cast_to(Lower *w, Value *v, mlc_dtype t, const char *what) {
  if (!v) return NULL;
  Node *c = add_node(w, "cast", what, &v, 1);
  ir_set_int(w->g, c, "dtype", t);
  return finish(w, c);
}

/* The 8-bit tensor *x and its per-tensor zero point *zp (NULL: 0) that xi is the int32 difference of, or false */
static bool eight_bit_data(const Value *xi, Value **x, Value **zp) {
  const Node *p = xi->producer;
  if (!p || strcmp(p->op->name, "qnn.subtract_zero_point") || p->ninputs < 1 || !p->inputs[0]) return false;
  *x = p->inputs[0];
  *zp = p->ninputs > 1 ? p->inputs[1] : NULL;
  mlc_dtype t = (*x)->type.dtype;
  return (t == MLC_U8 || t == MLC_I8) && !(*x)->dyn_extent &&
         (!*zp || ((*zp)->type.dtype == t && tt_numel(&(*zp)->type) == 1));
}

static bool cpu_target(const PassOptions *opt) {
  Target t;
  Diag td = {0};
  return cg_target_parse(opt->target ? opt->target : "llvm", &t, &td) == MLC_OK && t.kind == TARGET_CPU;
}

/* step 5, a depthwise conv (groups = C, one channel per group) on a CPU: nn.depthwise_conv2d of the 8-bit data
 * itself (its padding stage subtracts the constant zero point), with the float32 weight, cast to int32: the
 * data stays bytes in memory, not a float32 copy; exact under the caller's bound on the sums */
static Value *depthwise_bytes(Lower *w, Value *x8, const Value *zp) {
  Node *n = w->n;
  const Value *k = n->inputs[1];
  int64_t numel = tt_numel(&k->type);
  float *fw = arena_alloc(w->g->arena, sizeof(float) * (size_t)numel);
  for (int64_t i = 0; i < numel; i++) fw[i] = (float)((const int32_t *)k->data)[i];
  TensorType ft = k->type;
  ft.dtype = MLC_F32;
  int64_t z = !zp ? 0 : x8->type.dtype == MLC_U8 ? *(const uint8_t *)zp->data : *(const int8_t *)zp->data;
  int64_t s[2] = {1, 1}, dil[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  ir_attr_ints(n, "strides", s, 2);
  ir_attr_ints(n, "dilation", dil, 2);
  ir_attr_ints(n, "padding", pads, 4);
  Value *ins[2] = {x8, ir_const_new(w->g, arena_printf(w->g->arena, "%s_float_weight", n->name), ft, fw)};
  Node *conv = add_node(w, "nn.depthwise_conv2d", "bytes", ins, 2);
  copy_window(w, conv, 2, s, dil, pads, ir_attr_int(n, "groups", 1));
  ir_set_int(w->g, conv, "zero_point", z);
  return cast_to(w, finish(w, conv), MLC_I32, "int_result");
}

static Value *int_conv_as_float(Lower *w) {
  Node *n = w->n;
  Value *x = n->inputs[0], *k = n->inputs[1];
  const TensorType *kt = &k->type;
  int64_t xmax = int8_data_bound(x), groups = ir_attr_int(n, "groups", 1);
  if (!xmax || !k->data || kt->ndim != 4 || x->type.ndim != 4 || n->outputs[0]->type.dtype != MLC_I32) return NULL;
  int64_t OC = kt->dims[0], IC = kt->dims[1], taps = kt->dims[2] * kt->dims[3], limit = ((int64_t)1 << 24) / xmax;
  const int32_t *wd = k->data;
  IntWeight iw = {wd, OC, IC, taps, false};
  int64_t cut[MAX_INT_CHUNKS + 1];
  int nchunk = int_chunks(w, &iw, limit, groups == 1, cut);
  if (!nchunk) return NULL;
  int64_t s[2] = {1, 1}, dil[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  ir_attr_ints(n, "strides", s, 2);
  ir_attr_ints(n, "dilation", dil, 2);
  ir_attr_ints(n, "padding", pads, 4);
  Value *x8, *zp;
  if (groups > 1 && groups == x->type.dims[1] && IC == 1 && eight_bit_data(x, &x8, &zp) && (!zp || zp->data) &&
      cpu_target(w->opt))
    return depthwise_bytes(w, x8, zp);
  Value *xf = cast_to(w, x, MLC_F32, "float_data"), *y = NULL;
  for (int j = 0; j < nchunk && xf; j++) {
    int64_t c0 = cut[j], c1 = cut[j + 1];
    TensorType ft = {.dtype = MLC_F32, .ndim = 4, .dims = {OC, c1 - c0, kt->dims[2], kt->dims[3]}};
    float *fw = arena_alloc(w->g->arena, (size_t)tt_nbytes(&ft));
    for (int64_t o = 0; o < OC; o++)
      for (int64_t c = c0; c < c1; c++)
        for (int64_t t = 0; t < taps; t++) fw[(o * (c1 - c0) + c - c0) * taps + t] = (float)wd[(o * IC + c) * taps + t];
    int64_t b[4] = {0, c0, 0, 0}, e[4] = {x->type.dims[0], c1, x->type.dims[2], x->type.dims[3]};
    Value *ins[2] = {nchunk == 1 ? xf : slice4(w, xf, b, e, "int_chunk"), /* (a grouped conv: one chunk) */
                     ir_const_new(w->g, arena_printf(w->g->arena, "%s_float_weight%d", n->name, j), ft, fw)};
    Node *conv = add_node(w, "nn.conv2d", "float", ins, 2);
    copy_window(w, conv, 2, s, dil, pads, groups);
    ir_set_int(w->g, conv, "exact", 1);
    if (!(y = int_sum(w, y, cast_to(w, finish(w, conv), MLC_I32, "int_result")))) return NULL;
  }
  return y;
}

/* The 8-bit conv's weight words [OC/ocb, C4, KH, KW, ocb] (byte c % 4 of word c / 4: input channel c) of the
 * int32 weight wt(o, c, tap) (all in int8 range), and each output channel's sum of weights */
static Value *weight_words(Lower *w, const IntWeight *iw, int64_t KH, int64_t KW, int64_t ocb, int64_t *sums) {
  int64_t OC = iw->outs, C = iw->ins, occ = (OC + ocb - 1) / ocb, C4 = (C + 3) / 4;
  TensorType wt = {.dtype = MLC_I32, .ndim = 5, .dims = {occ, C4, KH, KW, ocb}};
  uint32_t *words = arena_alloc(w->g->arena, (size_t)tt_nbytes(&wt));
  memset(words, 0, (size_t)tt_nbytes(&wt));
  for (int64_t o = 0; o < OC; o++) {
    sums[o] = 0;
    for (int64_t c = 0; c < C; c++)
      for (int64_t t = 0; t < KH * KW; t++) {
        int32_t v = iw->w[iw->ins_major ? c * OC + o : (o * C + c) * KH * KW + t];
        sums[o] += v;
        int64_t at = ((o / ocb * C4 + c / 4) * KH * KW + t) * ocb + o % ocb;
        words[at] |= (uint32_t)(uint8_t)(int8_t)v << (8 * (c % 4));
      }
  }
  return ir_const_new(w->g, arena_printf(w->g->arena, "%s_int8_weight", w->n->name), wt, words);
}

static bool int8_range(const int32_t *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (v[i] < -128 || v[i] > 127) return false;
  return true;
}


/* step 5 on a target with u8 x s8 dot products of `lanes` int32 lanes: the 8-bit packed conv, or NULL */
static Value *int_conv_dot(Lower *w, int lanes) {
  Node *n = w->n;
  Value *k = n->inputs[1], *x, *zp;
  if (!eight_bit_data(n->inputs[0], &x, &zp) || x->type.ndim != 4 || ir_attr_int(n, "groups", 1) != 1 ||
      (zp && !zp->data))
    return NULL;
  mlc_dtype t = x->type.dtype;
  const TensorType *kt = &k->type;
  if (!k->data || kt->ndim != 4 || kt->dims[1] != x->type.dims[1]) return NULL;
  int64_t OC = kt->dims[0], C = kt->dims[1], KH = kt->dims[2], KW = kt->dims[3], taps = C * KH * KW;
  if (taps > 65000 || !int8_range(k->data, OC * taps)) return NULL; /* 255 * 128 * taps must fit int32 */
  int64_t z = !zp ? 0 : t == MLC_U8 ? *(const uint8_t *)zp->data : *(const int8_t *)zp->data;
  int64_t za = t == MLC_I8 ? z + 128 : z; /* the zero point as the byte the conv reads */
  int64_t ocb = lanes, *sums = arena_alloc(w->g->arena, sizeof(int64_t) * (size_t)OC);
  IntWeight iw = {k->data, OC, C, KH * KW, false};
  Value *words = weight_words(w, &iw, KH, KW, ocb, sums);
  TensorType ot = {.dtype = MLC_I32, .ndim = 1, .dims = {OC}};
  int32_t *off = arena_alloc(w->g->arena, (size_t)tt_nbytes(&ot));
  for (int64_t o = 0; o < OC; o++) off[o] = (int32_t)(-za * sums[o]);
  int64_t s[2] = {1, 1}, dil[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  ir_attr_ints(n, "strides", s, 2);
  ir_attr_ints(n, "dilation", dil, 2);
  ir_attr_ints(n, "padding", pads, 4);
  Value *ins[3] = {x, words, ir_const_new(w->g, arena_printf(w->g->arena, "%s_int8_offset", n->name), ot, off)};
  Node *conv = add_node(w, "nn.conv2d_packed", "int8", ins, 3);
  copy_window(w, conv, 2, s, dil, pads, 1);
  if (OC % ocb) ir_set_int(w->g, conv, "channels", OC);
  ir_set_int(w->g, conv, "pad_byte", za);
  return finish(w, conv);
}

/* the u8 x s8 dot product lanes of the compile's target (0: none, or not a CPU target) */
static int target_dot_lanes(const PassOptions *opt) {
  Target t;
  Diag td = {0};
  if (cg_target_parse(opt->target ? opt->target : "llvm", &t, &td) != MLC_OK || t.kind != TARGET_CPU) return 0;
  return t.dot_i8_lanes;
}

/* step 6: x[..., k0:k1] */
static Value *slice_last(Lower *w, Value *x, int64_t k0, int64_t k1) {
  int r = x->type.ndim;
  if (k0 == 0 && k1 == x->type.dims[r - 1]) return x;
  int64_t b[MLC_MAX_DIMS] = {0}, e[MLC_MAX_DIMS], st[MLC_MAX_DIMS];
  for (int i = 0; i < r; i++) e[i] = x->type.dims[i], st[i] = 1;
  b[r - 1] = k0, e[r - 1] = k1;
  Node *sl = add_node(w, "strided_slice", "int_chunk", &x, 1);
  ir_set_ints(w->g, sl, "begin", b, r);
  ir_set_ints(w->g, sl, "end", e, r);
  ir_set_ints(w->g, sl, "strides", st, r);
  return finish(w, sl);
}

static Value *transpose2(Lower *w, Value *v, const char *suffix) {
  if (!v) return NULL;
  Node *t = add_node(w, "transpose", suffix, &v, 1);
  int64_t perm[2] = {1, 0};
  ir_set_ints(w->g, t, "axes", perm, 2);
  return finish(w, t);
}

static Value *binary(Lower *w, const char *op, Value *a, Value *b, const char *suffix) {
  if (!a || !b) return NULL;
  Value *ins[2] = {a, b};
  return finish(w, add_node(w, op, suffix, ins, 2));
}

/* step 6 on a target with u8 x s8 dot products: x [..., M, K] (8-bit data minus a per-tensor zero point, known
 * at compile time or not) times a constant int8-range [K, N] as the 8-bit 1x1 conv of the data's transpose
 * [1, K, 1, M] (a copy of the 8-bit data, so the conv's words hold four of K; its 1x1 unpadded form reads no
 * padding), its result [N, M] transposed back; the offset -zp * sum(b[:, n]) is a constant or, for a zero
 * point computed at run time (DynamicQuantizeLinear's), computed from it. NULL when that does not apply. */
static Value *int_matmul_dot(Lower *w, int lanes) {
  Node *n = w->n;
  Value *k = n->inputs[1], *x, *zp;
  if (!eight_bit_data(n->inputs[0], &x, &zp)) return NULL;
  mlc_dtype t = x->type.dtype;
  int r = x->type.ndim;
  int64_t K = k->type.dims[0], N = k->type.dims[1], M = tt_numel(&x->type) / K;
  if (K > 65000 || M < 1 || !int8_range(k->data, K * N)) return NULL;
  int64_t *sums = arena_alloc(w->g->arena, sizeof(int64_t) * (size_t)N);
  IntWeight iw = {k->data, N, K, 1, true};
  Value *words = weight_words(w, &iw, 1, 1, lanes, sums);
  TensorType ot = {.dtype = MLC_I32, .ndim = 1, .dims = {N}};
  int32_t *off = arena_alloc(w->g->arena, (size_t)tt_nbytes(&ot));
  Value *offset;
  int64_t shift = t == MLC_I8 ? 128 : 0; /* the conv reads int8 data plus 128 */
  if (!zp || zp->data) {
    int64_t z = !zp ? 0 : t == MLC_U8 ? *(const uint8_t *)zp->data : *(const int8_t *)zp->data;
    for (int64_t o = 0; o < N; o++) off[o] = (int32_t)(-(z + shift) * sums[o]);
    offset = ir_const_new(w->g, arena_printf(w->g->arena, "%s_int8_offset", n->name), ot, off);
  } else { /* -(zp + shift) * sums, zp known at run time */
    for (int64_t o = 0; o < N; o++) off[o] = (int32_t)-sums[o];
    Value *z32 = cast_to(w, zp, MLC_I32, "zero_point");
    if (shift) {
      int32_t sh = (int32_t)shift;
      TensorType st = {.dtype = MLC_I32, .ndim = 0};
      z32 = binary(w, "add", z32, ir_const_new(w->g, arena_printf(w->g->arena, "%s_shift", n->name), st, &sh), "shifted");
    }
    offset = binary(w, "multiply", z32, ir_const_new(w->g, arena_printf(w->g->arena, "%s_neg_sums", n->name), ot, off),
                    "int8_offset");
  }
  int64_t mk[2] = {M, K}, cm[4] = {1, K, 1, M}, nm[2] = {N, M}, outs[MLC_MAX_DIMS];
  Value *xt = reshape(w, transpose2(w, reshape(w, x, 2, mk, "rows"), "transpose"), 4, cm, "image");
  if (!xt || !offset) return NULL;
  Value *ins[3] = {xt, words, offset};
  Node *conv = add_node(w, "nn.conv2d_packed", "int8", ins, 3);
  int64_t one[2] = {1, 1}, zero[4] = {0, 0, 0, 0};
  copy_window(w, conv, 2, one, one, zero, 1);
  if (N % lanes) ir_set_int(w->g, conv, "channels", N);
  Value *y = transpose2(w, reshape(w, finish(w, conv), 2, nm, "result"), "result_transpose");
  for (int i = 0; i < r - 1; i++) outs[i] = x->type.dims[i];
  outs[r - 1] = N;
  return reshape(w, y, r, outs, "result_shape");
}

static Value *int_matmul_as_float(Lower *w) {
  Node *n = w->n;
  Value *x = n->inputs[0], *k = n->inputs[1];
  int64_t xmax = int8_data_bound(x);
  if (!xmax || !k->data || k->type.ndim != 2 || x->type.ndim < 2 || ir_attr_int(n, "transpose_a", 0) ||
      ir_attr_int(n, "transpose_b", 0) || n->outputs[0]->type.dtype != MLC_I32)
    return NULL;
  int64_t K = k->type.dims[0], N = k->type.dims[1], limit = ((int64_t)1 << 24) / xmax;
  const int32_t *kd = k->data;
  IntWeight iw = {kd, N, K, 1, true};
  int64_t cut[MAX_INT_CHUNKS + 1];
  int nchunk = int_chunks(w, &iw, limit, true, cut);
  if (!nchunk) return NULL;
  Value *xf = cast_to(w, x, MLC_F32, "float_data"), *y = NULL;
  for (int j = 0; j < nchunk && xf; j++) {
    int64_t k0 = cut[j], k1 = cut[j + 1];
    TensorType ft = {.dtype = MLC_F32, .ndim = 2, .dims = {k1 - k0, N}};
    float *fw = arena_alloc(w->g->arena, (size_t)tt_nbytes(&ft));
    for (int64_t i = 0; i < (k1 - k0) * N; i++) fw[i] = (float)kd[k0 * N + i];
    Value *ins[2] = {slice_last(w, xf, k0, k1),
                     ir_const_new(w->g, arena_printf(w->g->arena, "%s_float_weight%d", n->name, j), ft, fw)};
    Value *part = cast_to(w, finish(w, add_node(w, n->op->name, "float", ins, 2)), MLC_I32, "int_result");
    if (!(y = int_sum(w, y, part))) return NULL;
  }
  return y;
}

static Value *lower(Lower *w) {
  Node *n = w->n;
  const char *op = n->op->name;
  if (!strcmp(op, "nn.conv2d") && n->ninputs == 2 && n->inputs[0] && n->inputs[1] && !n->inputs[0]->dyn_extent &&
      n->inputs[0]->type.dtype == MLC_I32 && n->inputs[1]->type.dtype == MLC_I32) {
    int lanes = target_dot_lanes(w->opt);
    Value *y = lanes ? int_conv_dot(w, lanes) : NULL;
    return y ? y : int_conv_as_float(w);
  }
  if ((!strcmp(op, "nn.matmul") || !strcmp(op, "nn.batch_matmul")) && n->ninputs == 2 && n->inputs[0] &&
      n->inputs[1] && !n->inputs[0]->dyn_extent && n->inputs[0]->type.dtype == MLC_I32 &&
      n->inputs[1]->type.dtype == MLC_I32) {
    int lanes = target_dot_lanes(w->opt);
    bool plain = n->inputs[1]->data && n->inputs[1]->type.ndim == 2 && !ir_attr_int(n, "transpose_a", 0) &&
                 !ir_attr_int(n, "transpose_b", 0) && n->outputs[0]->type.dtype == MLC_I32;
    Value *y = lanes && plain ? int_matmul_dot(w, lanes) : NULL;
    return y ? y : int_matmul_as_float(w);
  }
  if (n->ninputs != 2 || !n->inputs[0] || !n->inputs[1] || n->inputs[0]->type.dtype != MLC_F32 ||
      n->inputs[1]->type.dtype != MLC_F32 || n->inputs[1]->dyn_extent ||
      (n->inputs[0]->dyn_extent && n->inputs[0]->dyn_axis != 0)) /* (a data-dependent batch stays whole) */
    return NULL;
  if (!strcmp(op, "nn.conv1d")) return lower_conv1d(w);
  static const char *const transposed[3] = {"nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(op, transposed[i]) && n->inputs[1]->data) return lower_transpose(w, i + 1);
  if (!strcmp(op, "nn.conv2d")) return live_taps(w);
  return NULL;
}

static Value *rewrite(Graph *g, Node *n, const PassOptions *opt, Diag *d) {
  Lower w = {.g = g, .n = n, .opt = opt, .d = d};
  return lower(&w);
}

/* --pass-config LowerConv.requantize_float32=1: every qnn.requantize (QLinearConv's, QLinearMatMul's) rounds
 * float32(acc) * float32 multiplier once, as ONNX Runtime's kernels do, instead of the float64 product of ONNX's
 * reference (the outputs may differ by one step where the float32 product rounds onto a tie); about half the
 * requantize's vector instructions (src/topi/quant.c) */
mlc_status pass_lower_conv(Graph *g, const PassOptions *opt, Diag *d) {
  if (pass_config_int(opt, "LowerConv.requantize_float32"))
    for (int i = 0; i < g->nodes.n; i++)
      if (!strcmp(g->nodes.v[i]->op->name, "qnn.requantize")) ir_set_int(g, g->nodes.v[i], "float32", 1);
  return pass_rewrite_outputs(g, opt, rewrite, d);
}

/* ---------------------------------------------------------------- LowerQDQ */

/* the dequantize producing v when it reads 8-bit data with a float32 scale, per tensor (or along axis), or NULL */
static const Node *dequant_of(const Value *v, bool need_const, int64_t axis) {
  const Node *p = v ? v->producer : NULL;
  if (!p || strcmp(p->op->name, "qnn.dequantize") || p->ninputs < 2 || !p->inputs[0] || !p->inputs[1]) return NULL;
  mlc_dtype t = p->inputs[0]->type.dtype;
  if ((t != MLC_U8 && t != MLC_I8) || p->inputs[1]->type.dtype != MLC_F32 || ir_attr_int(p, "block_size", 0) > 0 ||
      v->type.dtype != MLC_F32 || (need_const && !p->inputs[0]->data))
    return NULL;
  int64_t ns = tt_numel(&p->inputs[1]->type);
  if (ns != 1 && (axis < 0 || ir_attr_int(p, "axis", 0) != axis || p->inputs[1]->type.ndim != 1 ||
                  ns != p->inputs[0]->type.dims[axis]))
    return NULL;
  const Value *zp = p->ninputs > 2 ? p->inputs[2] : NULL;
  if (zp && (zp->type.dtype != t || tt_numel(&zp->type) != ns)) return NULL;
  return p;
}

static Value *qdq_sub_zp(Lower *q, const Node *dq, int64_t axis, const char *suffix) {
  Value *ins[2] = {dq->inputs[0], dq->ninputs > 2 ? dq->inputs[2] : NULL};
  Node *s = add_node(q, "qnn.subtract_zero_point", suffix, ins, ins[1] ? 2 : 1);
  ir_set_int(q->g, s, "axis", tt_numel(&dq->inputs[1]->type) > 1 ? axis : 0);
  return finish(q, s);
}

static Value *rewrite_qdq(Graph *g, Node *n, const PassOptions *opt, Diag *d) {
  Lower q = {.g = g, .n = n, .opt = opt, .d = d};
  const char *op = n->op->name;
  bool conv = !strcmp(op, "nn.conv2d"), dense = !strcmp(op, "nn.dense");
  if ((!conv && !dense && strcmp(op, "nn.matmul") && strcmp(op, "nn.batch_matmul")) || n->ninputs != 2 ||
      !n->inputs[0] || !n->inputs[1] || n->inputs[0]->dyn_extent || n->outputs[0]->type.dtype != MLC_F32)
    return NULL;
  if (!conv && (n->inputs[1]->type.ndim != 2 || ir_attr_int(n, "transpose_a", 0) || ir_attr_int(n, "transpose_b", 0)))
    return NULL;
  int64_t waxis = conv || dense ? 0 : 1; /* the output channel (conv), unit (dense) or column (matmul) */
  const Node *dx = dequant_of(n->inputs[0], false, -1), *dw = dequant_of(n->inputs[1], true, waxis);
  if (!dx || !dw) return NULL;
  Value *ins[2] = {qdq_sub_zp(&q, dx, 0, "int_data"), qdq_sub_zp(&q, dw, waxis, "int_weight")};
  if (dense) /* x . W^T as the matmul by W^T [K, N] (FoldConstant folds the transpose) */
    ins[1] = transpose2(&q, ins[1], "int_weight_t");
  if (!ins[0] || !ins[1]) return NULL;
  Node *in = add_node(&q, dense ? "nn.matmul" : op, "int", ins, 2);
  if (!dense) {
    in->attrs = n->nattrs ? arena_memdup(g->arena, n->attrs, sizeof(Attr) * (size_t)n->nattrs) : NULL;
    in->nattrs = n->nattrs; /* the window, groups (conv) or transposes (matmul) */
  }
  Value *acc = finish(&q, in);
  if (!acc) return NULL;
  Node *c = add_node(&q, "cast", "float", &acc, 1);
  ir_set_int(g, c, "dtype", MLC_F32);
  Value *sc[2] = {dx->inputs[1], dw->inputs[1]};
  Value *two[2] = {finish(&q, c), finish(&q, add_node(&q, "multiply", "scale", sc, 2))};
  if (!two[0] || !two[1]) return NULL;
  int64_t ns = tt_numel(&two[1]->type);
  if (conv && ns > 1) { /* per output channel: along axis 1 of the NCHW result */
    Node *r = add_node(&q, "reshape", "scale_axis", &two[1], 1);
    int64_t shape[3] = {ns, 1, 1};
    ir_set_ints(g, r, "newshape", shape, 3);
    if (!(two[1] = finish(&q, r))) return NULL;
  }
  return finish(&q, add_node(&q, "multiply", "dequantized", two, 2));
}

static const Node *producer_of(const Value *v, const char *op) {
  const Node *p = v ? v->producer : NULL;
  return p && !strcmp(p->op->name, op) ? p : NULL;
}

static bool const_f32(const Value *v) { return v && v->data && v->type.dtype == MLC_F32; }

/* With LowerConv.requantize_float32=1, ONNX Runtime's QDQ fusion: the QuantizeLinear of an integer conv / matmul
 * that rewrite_qdq made (its sum times xs * ws, plus a dequantized int32 bias of scale xs * ws) becomes
 * qnn.requantize of the sum and the bias, rounded as ONNX Runtime's QLinearConv / QLinearMatMul round it, so a
 * QDQ model gives ONNX Runtime's outputs as its QOperator twin does:
 *   quantize(add(multiply(cast(acc), reshape?(multiply(xs, ws))), reshape?(dequantize(b, xs * ws))), ys, yz)
 *   -> requantize(acc, xs, ws, ys, yz, b)   (float32) */
static Value *qdq_requantize(Lower *q) {
  Node *n = q->n;
  if (n->ninputs < 2 || !n->inputs[1] || tt_numel(&n->inputs[1]->type) != 1 || ir_attr_int(n, "block_size", 0) > 0 ||
      (n->ninputs > 2 && n->inputs[2] && tt_numel(&n->inputs[2]->type) != 1))
    return NULL;
  mlc_dtype out = n->outputs[0]->type.dtype;
  if (out != MLC_U8 && out != MLC_I8) return NULL;
  const Node *add = producer_of(n->inputs[0], "add"), *mul = producer_of(n->inputs[0], "multiply");
  const Value *bias_f = NULL;
  if (add) {
    mul = producer_of(add->inputs[0], "multiply");
    bias_f = add->inputs[1];
  }
  if (!mul) return NULL;
  const Node *cast = producer_of(mul->inputs[0], "cast"), *sc = producer_of(mul->inputs[1], "reshape");
  sc = sc ? producer_of(sc->inputs[0], "multiply") : producer_of(mul->inputs[1], "multiply");
  if (!cast || !sc || !cast->inputs[0] || cast->inputs[0]->type.dtype != MLC_I32 || !const_f32(sc->inputs[0]) ||
      !const_f32(sc->inputs[1]) || tt_numel(&sc->inputs[0]->type) != 1)
    return NULL;
  Value *acc = cast->inputs[0], *xs = sc->inputs[0], *ws = sc->inputs[1];
  const Node *op = acc->producer;
  if (!op) return NULL;
  bool conv = !strcmp(op->op->name, "nn.conv2d");
  if (!conv && strcmp(op->op->name, "nn.matmul") && strcmp(op->op->name, "nn.batch_matmul")) return NULL;
  int64_t nw = tt_numel(&ws->type), axis = conv ? 1 : acc->type.ndim - 1;
  Value *b = NULL;
  if (bias_f) { /* dequantize(int32 b, bs = xs * ws, zero point 0), maybe reshaped along the channels */
    const Node *bd = producer_of(bias_f, "reshape");
    bd = bd ? producer_of(bd->inputs[0], "qnn.dequantize") : producer_of(bias_f, "qnn.dequantize");
    if (!bd || bd->ninputs < 2 || !bd->inputs[0] || !bd->inputs[0]->data || bd->inputs[0]->type.dtype != MLC_I32 ||
        !const_f32(bd->inputs[1]) || tt_numel(&bd->inputs[0]->type) != acc->type.dims[axis] ||
        bd->inputs[0]->type.ndim != 1)
      return NULL;
    const Value *bs = bd->inputs[1], *bz = bd->ninputs > 2 ? bd->inputs[2] : NULL;
    int64_t nb = tt_numel(&bs->type);
    float x = *(const float *)xs->data;
    for (int64_t i = 0; i < nb; i++) /* the bias' scale must be xs * ws, its zero point 0 */
      if (((const float *)bs->data)[i] != x * ((const float *)ws->data)[nw == 1 ? 0 : i]) return NULL;
    if (bz && (!bz->data || bz->type.dtype != MLC_I32))
      return NULL;
    for (int64_t i = 0; bz && i < tt_numel(&bz->type); i++)
      if (((const int32_t *)bz->data)[i]) return NULL;
    b = bd->inputs[0];
  }
  if (nw != 1 && nw != acc->type.dims[axis]) return NULL;
  Value *ins[6] = {acc, xs, ws, n->inputs[1], n->ninputs > 2 ? n->inputs[2] : NULL, b};
  if (!ins[4] && b) { /* the bias is input 5: a zero point of 0 before it */
    uint8_t *zero = arena_alloc(q->g->arena, 1);
    *zero = 0;
    ins[4] = ir_const_new(q->g, arena_printf(q->g->arena, "%s_zero_point", n->name),
                          (TensorType){.dtype = out, .ndim = 0}, zero);
  }
  Node *r = add_node(q, "qnn.requantize", "fused", ins, b ? 6 : ins[4] ? 5 : 4);
  ir_set_int(q->g, r, "axis1", -1);
  ir_set_int(q->g, r, "axis2", nw > 1 ? axis : -1);
  ir_set_int(q->g, r, "bias_axis", axis);
  ir_set_int(q->g, r, "out_dtype", out);
  ir_set_int(q->g, r, "float32", 1);
  return finish(q, r);
}

static Value *rewrite_qdq_any(Graph *g, Node *n, const PassOptions *opt, Diag *d) {
  if (strcmp(n->op->name, "qnn.quantize")) return rewrite_qdq(g, n, opt, d);
  if (!pass_config_int(opt, "LowerConv.requantize_float32")) return NULL;
  Lower q = {.g = g, .n = n, .opt = opt, .d = d};
  return qdq_requantize(&q);
}

mlc_status pass_lower_qdq(Graph *g, const PassOptions *opt, Diag *d) {
  return pass_rewrite_outputs(g, opt, rewrite_qdq_any, d);
}
