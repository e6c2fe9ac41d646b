/* spatial family: ops that move values between positions of an image through windows or sampled coordinates
 * (ONNX MaxUnpool, Col2Im, RoiAlign, MaxRoiPool, DeformConv), and the dilation phases of LowerConv.
 *
 * nn.max_unpool(data[N, C, in...], indices[N, C, in...] int64/int32) -> [N, C, out...]; attributes
 * unpooled (the default unpooled shape [N, C, (in-1)*s + k - pads...]) and shape (the output shape: ONNX's
 * output_shape, or unpooled; at least as large in every dim). As the ONNX reference: the indices are flat
 * positions in the unpooled shape, u.flat[indices[p]] = data[p] for every input position p in order (the last
 * of repeated indices wins) in a zero tensor u, and the output is u in its leading corner, zeros elsewhere;
 * indices outside [0, numel(unpooled)) are skipped. An extern op, a scatter: O(1) work per input element,
 * parallel over the (n, c) planes when a run-time check finds every index inside its own plane (as MaxPool's
 * are), serial otherwise (see unpool_body). Indices may name any position of any plane, and a gather over the
 * pooling windows that cover an output position is exact only for indices inside those windows.
 *
 * nn.col2im(data[N, C*prod(block), L]) -> [N, C, image...]; attributes image_shape, block_shape, dilation,
 * strides, padding ([begin..., end...]). Column l (row-major over the block positions, L_i = (image_i + pads
 * - (block_i-1)*d_i - 1) / s_i + 1 of them per dim) holds block offset b (row-major, in the channel) at image
 * position q*s - pb + b*d. A TE gather: each pixel x sums over the block offsets b the entry of the column q
 * = (x + pb - b*d) / s where that division is exact and q in [0, L) (a reduction under that condition).
 *
 * vision.roi_pool(X[N, C, H, W], rois[R, 5] (batch index, x1, y1, x2, y2)) -> [R, C, ph, pw]; attributes
 * pooled_shape and spatial_scale. ONNX MaxRoiPool as Caffe's ROIPooling (which ONNX Runtime and torchvision's
 * roi_pool follow): the corners scaled and rounded half away from zero (C's round), the roi at least 1 x 1
 * (end - start + 1 per dim), bin i of b covers [floor(i * size / b), ceil((i+1) * size / b)) shifted by the
 * start and clipped to the image; the max over it, 0 for an empty bin (ONNX Runtime starts its max at FLT_MIN,
 * which turns negative maxima into 1e-38: this takes the true max). The batch index is truncated and clamped
 * to [0, N). A loop nest (an extern), parallel over rois, channels innermost.
 *
 * vision.roi_align(X[N, C, H, W], rois[R, 4] (x1, y1, x2, y2), batch_indices[R][, count]) -> [R, C, oh, ow];
 * count (int64 [1], given where the rois have a data-dependent number: their extent) skips the rois past it,
 * whose outputs are zeros; data_block b: X is NCHWc [N, C/b, H, W, b] (ConvertLayoutNCHWc), read b contiguous
 * channels at a time;
 * attributes mode (avg | max), output_height, output_width, sampling_ratio, spatial_scale, half_pixel (0/1)
 * and grid_max (the bound of the adaptive sample grid when sampling_ratio is 0: set by the importer from
 * constant rois, else 0). As the ONNX reference (Detectron's RoIAlign): the roi, scaled and shifted by -0.5
 * when half_pixel (else at least 1x1), is split into oh x ow bins, each sampled on a g_h x g_w grid
 * (sampling_ratio, or ceil(roi size / bins), per roi); a sample outside [-1, H] x [-1, W] counts 0, else is
 * clamped to the image and read bilinearly. avg: the mean of the samples; max: the max over samples of the max
 * of the 4 weighted corner values (w_i * v_i, the reference's definition, not the max of the interpolated
 * values), 0 for an empty grid. Coordinates, weights and sums in float64. Each dim's corners and weights are
 * computed per sample row / column (roi_axis; a sample outside in one dim gets zero weights there). Two forms:
 * on CPU targets (and for an adaptive grid without a bound) a loop nest (an extern: parallel over rois, the
 * roi's geometry once, the y corners per sample row, the x corners per sample, the channels innermost; the grid
 * loops run to each roi's grid size); on GPU targets with a bounded grid (sampling_ratio > 0, or grid_max) a
 * TE reduction over the grid (masked to the roi's own grid when adaptive), one thread per output element, and
 * an elementwise epilogue.
 *
 * nn.deform_im2col(X[N, C, H, W], offset[N, og*kh*kw*2, oh, ow][, mask[N, og*kh*kw, oh, ow]]) -> cols[N, G,
 * oh*ow, (C/G)*kh*kw]; attributes kernel_shape, strides, dilation, padding, groups (G), offset_group (og): the
 * deformable im2col of ONNX DeformConv, whose importer multiplies the columns with the weight (a batch matmul,
 * so the GEMM templates and weight packing apply). As the ONNX reference: tap (a, b) of output (i, j) reads
 * channel c of X bilinearly (align_corners, zero outside) at (i*s - pb + a*d + offset_h, j*s - pb + b*d +
 * offset_w), the offsets of c's offset group, times the mask; cols[n, g, i*ow + j, (a*kw + b)*C/G + c_g]
 * holds it for channel c = g*C/G + c_g (the importer permutes the weight to match). An opaque op: its own kernel, so each sample is computed once.
 * float16/bfloat16 accumulate in float32 (col2im, deform_im2col) or float64 (roi_align). */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

#define ROI_GRID_CAP (1 << 20) /* roi_align's adaptive grid never exceeds this per dim (only absurd rois reach it) */

static mlc_dtype acc_dtype(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16 ? MLC_F32 : t; }

static Expr *ivref(TeCtx *c, IterVar *iv) { return tir_varref(c->arena, iv->var); }

static Expr *read_as(TeCtx *c, TeTensor *t, Expr **idx, mlc_dtype to) {
  Expr *e = te_read(c, t, t->ndim, idx);
  return t->dtype == to ? e : tir_cast(c->arena, to, e);
}

static Expr *clamp_idx(Arena *A, Expr *x, int64_t hi) {
  return tir_bin(A, E_MIN, tir_bin(A, E_MAX, x, tir_idx(A, 0)), tir_idx(A, hi > 0 ? hi - 1 : 0));
}

static Expr *and2(Arena *A, Expr *a, Expr *b) { return a ? (b ? tir_bin(A, E_AND, a, b) : a) : b; }

static Expr *call1(Arena *A, Intrin in, Expr *x) { return tir_call(A, in, x->dtype, 1, &x); }

static mlc_status check_float(const Node *n, mlc_dtype t, Diag *d) {
  if (!dtype_is_float(t))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported (float types only)", n->op->name,
                    mlc_dtype_name(t));
  return MLC_OK;
}

/* loop vars v[0..n) named prefix%d, their refs in e */
static void loop_vars(Arena *A, const char *prefix, int n, Var **v, Expr **e) {
  for (int i = 0; i < n; i++) {
    v[i] = tir_var(A, arena_printf(A, "%s%d", prefix, i), MLC_I64);
    e[i] = tir_varref(A, v[i]);
  }
}

/* the loop nest over dims [from, to) of shape around body, all serial */
static Stmt *nest(Arena *A, Var **v, const int64_t *shape, int from, int to, Stmt *body) {
  for (int i = to - 1; i >= from; i--) body = tir_for(A, v[i], tir_idx(A, 0), tir_idx(A, shape[i]), FOR_SERIAL, body);
  return body;
}

/* position f (row-major in dims[from..to)) unravelled into out[from..to) */
static void unravel(Arena *A, Expr *f, const int64_t *dims, int from, int to, Expr **out) {
  int64_t stride = 1;
  for (int i = to - 1; i >= from; i--) {
    out[i] = tir_bin(A, E_FLOORMOD, tir_bin(A, E_FLOORDIV, f, tir_idx(A, stride)), tir_idx(A, dims[i]));
    stride *= dims[i];
  }
}

/* ---------------------------------------------------------------- max_unpool */

static mlc_status unpool_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *ix = &n->inputs[1]->type;
  if (x->dtype == MLC_STRING || mlc_dtype_size(x->dtype) <= 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(x->dtype));
  if (ix->dtype != MLC_I64 && ix->dtype != MLC_I32)
    return diag_set(d, MLC_ERR_INVALID, "%s: indices must be int64, got %s", n->op->name, mlc_dtype_name(ix->dtype));
  bool same = x->ndim == ix->ndim;
  for (int i = 0; same && i < x->ndim; i++) same = x->dims[i] == ix->dims[i];
  if (!same) return diag_set(d, MLC_ERR_INVALID, "%s: indices must have the shape of the data", n->op->name);
  TensorType o = {.dtype = x->dtype};
  o.ndim = ir_attr_ints(n, "shape", o.dims, MLC_MAX_DIMS);
  if (o.ndim != x->ndim || x->ndim < 3 || o.dims[0] != x->dims[0] || o.dims[1] != x->dims[1])
    return diag_set(d, MLC_ERR_INVALID, "%s: output shape must be [N, C, spatial...] of the data's rank", n->op->name);
  int64_t un[MLC_MAX_DIMS];
  if (ir_attr_ints(n, "unpooled", un, MLC_MAX_DIMS) != o.ndim)
    return diag_set(d, MLC_ERR_INVALID, "%s: attribute 'unpooled' must have one entry per dim", n->op->name);
  for (int i = 2; i < o.ndim; i++)
    if (un[i] < 1 || o.dims[i] < un[i])
      return diag_set(d, MLC_ERR_INVALID, "%s: output dim %d (%lld) must be >= the unpooled size %lld >= 1", n->op->name,
                      i, (long long)o.dims[i], (long long)un[i]);
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* Two paths, chosen at run time by a check over the indices: when every index lies in its own (n, c) plane
 * (MaxPool's indices always do) the planes are independent, and each is zeroed and scattered by one parallel
 * iteration; otherwise a parallel zero fill and one serial scatter over the whole input. Both apply the
 * updates of a plane in input order, so repeated indices resolve as in the reference. */
static Stmt *unpool_body(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  const int64_t *un = user; /* the unpooled shape */
  Arena *A = c->arena;
  Buffer *x = ins[0], *ind = ins[1], *out = outs[0];
  int r = x->ndim;
  int64_t C = x->shape[1], total = 1, plane = 1, one = 1;
  for (int i = 0; i < r; i++) total *= un[i];
  for (int i = 2; i < r; i++) plane *= un[i];
  Var *zv[MLC_MAX_DIMS], *uv[MLC_MAX_DIMS];
  Expr *zi[MLC_MAX_DIMS], *u[MLC_MAX_DIMS], *ti[MLC_MAX_DIMS];
  loop_vars(A, "z", r, zv, zi);
  loop_vars(A, "u", r, uv, u);
  Var *fv = tir_var(A, "flat", MLC_I64), *ncv = tir_var(A, "nc", MLC_I64);
  Expr *f = tir_varref(A, fv), *nc = tir_varref(A, ncv);
  Expr *raw = tir_cast(A, MLC_I64, tir_load(A, ind, r, u));
  Expr *u_plane = tir_add(A, tir_mul(A, u[0], tir_idx(A, C)), u[1]);

  /* the check: in_plane[0] = every index in its own plane */
  Buffer *flag = tir_buffer(A, "in_plane", MLC_I32, 1, &one);
  Expr *f0[1] = {tir_idx(A, 0)};
  Stmt *clear = tir_store(A, flag, 1, f0, tir_int(A, MLC_I32, 0));
  Stmt *check = nest(A, uv, x->shape, 0, r,
                     tir_if(A, tir_bin(A, E_NE, tir_bin(A, E_FLOORDIV, raw, tir_idx(A, plane)), u_plane), clear, NULL));
  check = tir_seq2(A, tir_store(A, flag, 1, f0, tir_int(A, MLC_I32, 1)), check);

  /* the plane-parallel path: plane nc = n*C + c zeroed, then its updates in order */
  Expr *n = tir_bin(A, E_FLOORDIV, nc, tir_idx(A, C)), *ch = tir_bin(A, E_FLOORMOD, nc, tir_idx(A, C));
  zi[0] = u[0] = ti[0] = n;
  zi[1] = u[1] = ti[1] = ch;
  Stmt *pzero = nest(A, zv, out->shape, 2, r, tir_store(A, out, r, zi, tir_const(A, out->dtype, 0)));
  unravel(A, tir_sub(A, f, tir_mul(A, nc, tir_idx(A, plane))), un, 2, r, ti);
  Stmt *pscatter = tir_store(A, out, r, ti, tir_load(A, x, r, u));
  pscatter = tir_let_stmt(A, fv, tir_cast(A, MLC_I64, tir_load(A, ind, r, u)), pscatter);
  pscatter = nest(A, uv, x->shape, 2, r, pscatter);
  Stmt *fast = tir_for(A, ncv, tir_idx(A, 0), tir_idx(A, x->shape[0] * C), FOR_PARALLEL, tir_seq2(A, pzero, pscatter));

  /* the general path */
  loop_vars(A, "z", r, zv, zi);
  loop_vars(A, "u", r, uv, u);
  Stmt *zero = tir_store(A, out, r, zi, tir_const(A, out->dtype, 0));
  for (int i = r - 1; i >= 0; i--)
    zero = tir_for(A, zv[i], tir_idx(A, 0), tir_idx(A, out->shape[i]), i == 0 ? FOR_PARALLEL : FOR_SERIAL, zero);
  unravel(A, f, un, 0, r, ti);
  Expr *ok = tir_bin(A, E_AND, tir_bin(A, E_GE, f, tir_idx(A, 0)), tir_bin(A, E_LT, f, tir_idx(A, total)));
  Stmt *s = tir_if(A, ok, tir_store(A, out, r, ti, tir_load(A, x, r, u)), NULL);
  s = nest(A, uv, x->shape, 0, r, tir_let_stmt(A, fv, tir_cast(A, MLC_I64, tir_load(A, ind, r, u)), s));
  Stmt *slow = tir_seq2(A, zero, s);

  Expr *is_plane = tir_bin(A, E_EQ, tir_load(A, flag, 1, f0), tir_int(A, MLC_I32, 1));
  return tir_allocate(A, flag, tir_seq2(A, check, tir_if(A, is_plane, fast, slow)));
}

static mlc_status unpool_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  const TensorType *o = &n->outputs[0]->type;
  int64_t *un = arena_alloc(c->arena, sizeof(int64_t) * MLC_MAX_DIMS);
  ir_attr_ints(n, "unpooled", un, MLC_MAX_DIMS);
  TeTensor ot = {.dtype = o->dtype, .ndim = o->ndim};
  memcpy(ot.shape, o->dims, sizeof(int64_t) * (size_t)o->ndim);
  te_extern(c, "max_unpool", "scatter", 2, ins, 1, &ot, unpool_body, un, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- col2im */

typedef struct Col2ImCtx {
  int nsp;
  int64_t image[MLC_MAX_DIMS], block[MLC_MAX_DIMS], dil[MLC_MAX_DIMS], strides[MLC_MAX_DIMS];
  int64_t pb[MLC_MAX_DIMS], pe[MLC_MAX_DIMS], cols[MLC_MAX_DIMS];
  int64_t nblock; /* prod(block) */
  TeTensor *data;
  mlc_dtype acc;
} Col2ImCtx;

static mlc_status col2im_parse(const Node *n, Col2ImCtx *k, Diag *d) {
  memset(k, 0, sizeof *k);
  const TensorType *x = &n->inputs[0]->type;
  int nsp = ir_attr_ints(n, "image_shape", k->image, MLC_MAX_DIMS);
  if (nsp < 1 || ir_attr_ints(n, "block_shape", k->block, MLC_MAX_DIMS) != nsp || nsp + 2 > MLC_MAX_DIMS)
    return diag_set(d, MLC_ERR_INVALID, "nn.col2im: image_shape and block_shape must have one entry per spatial dim");
  k->nsp = nsp;
  int64_t pads[2 * MLC_MAX_DIMS];
  int np = ir_attr_ints(n, "padding", pads, 2 * MLC_MAX_DIMS);
  if (ir_attr_ints(n, "dilation", k->dil, MLC_MAX_DIMS) != nsp || ir_attr_ints(n, "strides", k->strides, MLC_MAX_DIMS) != nsp ||
      np != 2 * nsp)
    return diag_set(d, MLC_ERR_INVALID, "nn.col2im: dilation, strides and padding must have one entry per spatial dim");
  if (x->ndim != 3) return diag_set(d, MLC_ERR_INVALID, "nn.col2im: input must be [N, C*prod(block_shape), L], got rank %d", x->ndim);
  k->nblock = 1;
  int64_t ncols = 1;
  for (int i = 0; i < nsp; i++) {
    k->pb[i] = pads[i];
    k->pe[i] = pads[nsp + i];
    if (k->block[i] < 1 || k->image[i] < 1 || k->dil[i] < 1 || k->strides[i] < 1 || k->pb[i] < 0 || k->pe[i] < 0)
      return diag_set(d, MLC_ERR_INVALID, "nn.col2im: shapes, dilations and strides must be >= 1 and pads >= 0");
    int64_t span = (k->block[i] - 1) * k->dil[i] + 1, avail = k->image[i] + k->pb[i] + k->pe[i] - span;
    if (avail < 0) return diag_set(d, MLC_ERR_INVALID, "nn.col2im: the block is larger than the padded image");
    k->cols[i] = avail / k->strides[i] + 1;
    k->nblock *= k->block[i];
    ncols *= k->cols[i];
  }
  if (x->dims[1] % k->nblock || x->dims[2] != ncols)
    return diag_set(d, MLC_ERR_INVALID, "nn.col2im: input [%lld, %lld, %lld] does not match %lld block offsets and %lld blocks",
                    (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2], (long long)k->nblock, (long long)ncols);
  return MLC_OK;
}

static mlc_status col2im_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (x->dtype == MLC_BOOL || x->dtype == MLC_STRING || mlc_dtype_size(x->dtype) <= 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(x->dtype));
  Col2ImCtx k;
  mlc_status st = col2im_parse(n, &k, d);
  if (st) return st;
  TensorType o = {.dtype = x->dtype, .ndim = 2 + k.nsp};
  o.dims[0] = x->dims[0];
  o.dims[1] = x->dims[1] / k.nblock;
  for (int i = 0; i < k.nsp; i++) o.dims[2 + i] = k.image[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

static Expr *col2im_body(TeCtx *c, Expr **idx, void *user) {
  Col2ImCtx *k = user;
  Arena *A = c->arena;
  IterVar *rax[MLC_MAX_DIMS];
  Expr *chan = idx[1], *col = tir_idx(A, 0), *cond = NULL;
  for (int i = 0; i < k->nsp; i++) {
    rax[i] = te_reduce_axis(c, arena_printf(A, "rb%d", i), k->block[i]);
    Expr *b = ivref(c, rax[i]);
    chan = tir_add(A, tir_mul(A, chan, tir_idx(A, k->block[i])), b);
    Expr *t = tir_sub(A, tir_add(A, idx[2 + i], tir_idx(A, k->pb[i])), tir_mul(A, b, tir_idx(A, k->dil[i])));
    Expr *q = t;
    cond = and2(A, cond, tir_bin(A, E_GE, t, tir_idx(A, 0)));
    if (k->strides[i] > 1) {
      Expr *s = tir_idx(A, k->strides[i]);
      cond = and2(A, cond, tir_bin(A, E_EQ, tir_bin(A, E_FLOORMOD, t, s), tir_idx(A, 0)));
      q = tir_bin(A, E_FLOORDIV, t, s);
    }
    cond = and2(A, cond, tir_bin(A, E_LT, q, tir_idx(A, k->cols[i])));
    col = tir_add(A, tir_mul(A, col, tir_idx(A, k->cols[i])), clamp_idx(A, q, k->cols[i]));
  }
  Expr *di[3] = {idx[0], chan, col};
  Expr *v = tir_select(A, cond, read_as(c, k->data, di, k->acc), tir_const(A, k->acc, 0));
  return te_reduce(c, RED_SUM, v, k->nsp, rax, NULL, NULL);
}

static mlc_status col2im_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  Col2ImCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = col2im_parse(n, k, d);
  if (st) return st;
  k->data = ins[0];
  k->acc = acc_dtype(ins[0]->dtype);
  const TensorType *o = &n->outputs[0]->type;
  TeTensor *t = te_compute(c, "col2im", "reduce", k->acc, o->ndim, o->dims, col2im_body, k);
  outs[0] = topi_cast_stage(c, t, o->dtype);
  return MLC_OK;
}

/* ---------------------------------------------------------------- roi_align */

typedef struct RoiAlignCtx {
  TeTensor *x, *rois, *bidx, *acc_t;
  Buffer *xb, *roisb, *bidxb; /* the extern form reads buffers instead of tensors */
  TeCtx *c;
  int64_t oh, ow, sampling, grid_max;
  int64_t block; /* data_block: X is NCHWc [N, C/block, H, W, block] (ConvertLayoutNCHWc), the extern form only */
  double scale;
  bool half_pixel, is_max, counted; /* counted: input 3 gives the number of rois */
  mlc_dtype out;
} RoiAlignCtx;

static mlc_status roi_align_parse(const Node *n, RoiAlignCtx *k, Diag *d) {
  memset(k, 0, sizeof *k);
  const char *mode = ir_attr_string(n, "mode", "avg");
  if (strcmp(mode, "avg") && strcmp(mode, "max"))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "vision.roi_align: mode '%s' is not supported (avg, max)", mode);
  k->is_max = !strcmp(mode, "max");
  k->oh = ir_attr_int(n, "output_height", 1);
  k->ow = ir_attr_int(n, "output_width", 1);
  k->sampling = ir_attr_int(n, "sampling_ratio", 0);
  k->grid_max = ir_attr_int(n, "grid_max", 0);
  k->scale = ir_attr_float(n, "spatial_scale", 1.0);
  k->half_pixel = ir_attr_int(n, "half_pixel", 0) != 0;
  k->block = ir_attr_int(n, "data_block", 0);
  if (k->oh < 1 || k->ow < 1 || k->sampling < 0 || k->grid_max < 0 || k->block < 0)
    return diag_set(d, MLC_ERR_INVALID, "vision.roi_align: output sizes must be >= 1 and sampling_ratio, grid_max >= 0");
  return MLC_OK;
}

static mlc_status roi_align_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *r = &n->inputs[1]->type, *b = &n->inputs[2]->type;
  mlc_status st = check_float(n, x->dtype, d);
  if (st) return st;
  RoiAlignCtx k;
  if ((st = roi_align_parse(n, &k, d))) return st;
  if (x->ndim != (k.block ? 5 : 4) || (k.block && x->dims[4] != k.block))
    return diag_set(d, MLC_ERR_INVALID, "vision.roi_align: X must be [N, C, H, W] (data_block b: [N, C/b, H, W, b])");
  if (r->ndim != 2 || r->dims[1] != 4 || r->dtype != x->dtype)
    return diag_set(d, MLC_ERR_INVALID, "vision.roi_align: rois must be [num_rois, 4] of X's dtype");
  if (b->ndim != 1 || b->dims[0] != r->dims[0] || (b->dtype != MLC_I64 && b->dtype != MLC_I32))
    return diag_set(d, MLC_ERR_INVALID, "vision.roi_align: batch_indices must be an int64 [num_rois] vector");
  if (n->ninputs > 3 && n->inputs[3] && (n->inputs[3]->type.dtype != MLC_I64 || tt_numel(&n->inputs[3]->type) != 1))
    return diag_set(d, MLC_ERR_INVALID, "vision.roi_align: the number of rois must be one int64");
  TensorType o = {.dtype = x->dtype, .ndim = 4, .dims = {r->dims[0], x->dims[1] * (k.block ? k.block : 1), k.oh, k.ow}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* a read of X / rois / batch_indices, from the tensor (compute form) or the buffer (extern form) */
static Expr *roi_read(RoiAlignCtx *k, TeTensor *t, Buffer *b, Expr **idx, mlc_dtype to) {
  Expr *e = t ? te_read(k->c, t, t->ndim, idx) : tir_load(k->c->arena, b, b->ndim, idx);
  return e->dtype == to ? e : tir_cast(k->c->arena, to, e);
}

typedef struct RoiGeom {
  Expr *start[2], *bin[2], *grid[2]; /* per dim (0: y, 1: x): roi start, bin size (float64), grid (int64) */
} RoiGeom;

static void roi_geom(RoiAlignCtx *k, Expr *r, RoiGeom *g) {
  Arena *A = k->c->arena;
  const mlc_dtype F = MLC_F64;
  for (int dim = 0; dim < 2; dim++) {
    Expr *i0[2] = {r, tir_idx(A, 1 - dim)}, *i1[2] = {r, tir_idx(A, 3 - dim)};
    Expr *off = tir_const(A, F, k->half_pixel ? 0.5 : 0.0), *sc = tir_const(A, F, k->scale);
    Expr *s = tir_sub(A, tir_mul(A, roi_read(k, k->rois, k->roisb, i0, F), sc), off);
    Expr *e = tir_sub(A, tir_mul(A, roi_read(k, k->rois, k->roisb, i1, F), sc), off);
    Expr *size = tir_sub(A, e, s);
    if (!k->half_pixel) size = tir_bin(A, E_MAX, size, tir_const(A, F, 1.0));
    int64_t bins = dim == 0 ? k->oh : k->ow;
    g->start[dim] = s;
    g->bin[dim] = tir_bin(A, E_DIV, size, tir_const(A, F, (double)bins));
    if (k->sampling > 0) {
      g->grid[dim] = tir_idx(A, k->sampling);
    } else {
      /* ceil(bin), as an int64 only where that is defined: NaN, infinite (where the reference fails) and
       * negative sizes give an empty grid, finite absurd ones a capped one, so a bad roi never makes the loop
       * bound undefined */
      Expr *gc = call1(A, INTRIN_CEIL, g->bin[dim]), *cap = tir_const(A, F, (double)ROI_GRID_CAP);
      Expr *ok = tir_bin(A, E_AND, tir_bin(A, E_GT, gc, tir_const(A, F, 0.0)), tir_bin(A, E_LT, gc, tir_const(A, F, INFINITY)));
      gc = tir_select(A, ok, tir_select(A, tir_bin(A, E_GT, gc, cap), cap, gc), tir_const(A, F, 0.0));
      g->grid[dim] = tir_cast(A, MLC_I64, gc);
    }
  }
}

/* One dim of a sample: position start + o*bin + (it + 0.5) * bin / grid, its corners lo, hi (int64, clamped
 * to the image as the reference clamps them) and their weights (float64), both 0 when the position is outside
 * [-1, size]: a sample is 0 when outside in either dim, and the weights multiply. */
typedef struct RoiAxis {
  Expr *lo, *hi, *wlo, *whi;
} RoiAxis;

static RoiAxis roi_axis(RoiAlignCtx *k, const RoiGeom *g, int dim, Expr *o, Expr *it) {
  Arena *A = k->c->arena;
  const mlc_dtype F = MLC_F64;
  int64_t size = (k->x ? k->x->shape : k->xb->shape)[2 + dim];
  Expr *gf = tir_cast(A, F, tir_bin(A, E_MAX, g->grid[dim], tir_idx(A, 1)));
  Expr *p = tir_add(A, tir_add(A, g->start[dim], tir_mul(A, tir_cast(A, F, o), g->bin[dim])),
                    tir_bin(A, E_DIV, tir_mul(A, tir_add(A, tir_cast(A, F, it), tir_const(A, F, 0.5)), g->bin[dim]), gf));
  Expr *out = tir_bin(A, E_OR, tir_bin(A, E_LT, p, tir_const(A, F, -1.0)), tir_bin(A, E_GT, p, tir_const(A, F, (double)size)));
  /* clamped by selects, which send NaN to 0 (min/max propagate it), before the conversion to an index */
  Expr *sz = tir_const(A, F, (double)size);
  p = tir_select(A, tir_bin(A, E_GT, p, tir_const(A, F, 0.0)), p, tir_const(A, F, 0.0));
  Expr *fl = tir_cast(A, MLC_I64, tir_select(A, tir_bin(A, E_LT, p, sz), p, sz)); /* p >= 0: floor */
  Expr *edge = tir_bin(A, E_GE, fl, tir_idx(A, size - 1));
  Expr *l = tir_select(A, edge, tir_const(A, F, 0.0), tir_sub(A, p, tir_cast(A, F, fl)));
  Expr *zero = tir_const(A, F, 0.0);
  RoiAxis r = {
      .lo = tir_select(A, edge, tir_idx(A, size - 1), fl),
      .hi = tir_select(A, edge, tir_idx(A, size - 1), tir_add(A, fl, tir_idx(A, 1))),
      .wlo = tir_select(A, out, zero, tir_sub(A, tir_const(A, F, 1.0), l)),
      .whi = tir_select(A, out, zero, l),
  };
  return r;
}

/* the sample's value at channel ch of image b: the 4 weighted corners summed (avg) or their max (max) */
static Expr *roi_corners(RoiAlignCtx *k, Expr *b, Expr *ch, const RoiAxis *y, const RoiAxis *x) {
  Arena *A = k->c->arena;
  Expr *ys[2] = {y->lo, y->hi}, *xs[2] = {x->lo, x->hi}, *wy[2] = {y->wlo, y->whi}, *wx[2] = {x->wlo, x->whi};
  Expr *v = NULL;
  Expr *blk = k->block ? tir_idx(A, k->block) : NULL;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      Expr *xi[5] = {b, blk ? tir_bin(A, E_DIV, ch, blk) : ch, ys[i], xs[j], blk ? tir_bin(A, E_MOD, ch, blk) : NULL};
      Expr *t = tir_mul(A, tir_mul(A, wy[i], wx[j]), roi_read(k, k->x, k->xb, xi, MLC_F64));
      v = !v ? t : k->is_max ? tir_bin(A, E_MAX, v, t) : tir_add(A, v, t);
    }
  return v;
}

static Expr *roi_batch(RoiAlignCtx *k, Expr *r) {
  Expr *ri[1] = {r};
  int64_t nb = (k->x ? k->x->shape : k->xb->shape)[0];
  return clamp_idx(k->c->arena, roi_read(k, k->bidx, k->bidxb, ri, MLC_I64), nb);
}

/* the result from the reduction acc over the grid: the mean (avg) or acc, 0 for an empty grid (max) */
static Expr *roi_finish(RoiAlignCtx *k, const RoiGeom *g, Expr *acc) {
  Arena *A = k->c->arena;
  const mlc_dtype F = MLC_F64;
  Expr *v;
  if (k->is_max) {
    Expr *empty = tir_bin(A, E_OR, tir_bin(A, E_LE, g->grid[0], tir_idx(A, 0)), tir_bin(A, E_LE, g->grid[1], tir_idx(A, 0)));
    v = tir_select(A, empty, tir_const(A, F, 0.0), acc);
  } else {
    Expr *count = tir_mul(A, g->grid[0], g->grid[1]);
    v = tir_bin(A, E_DIV, acc, tir_cast(A, F, tir_bin(A, E_MAX, count, tir_idx(A, 1))));
  }
  return tir_cast(A, k->out, v);
}

static Expr *roi_align_body(TeCtx *c, Expr **idx, void *user) {
  RoiAlignCtx *k = user;
  Arena *A = c->arena;
  int64_t gm = k->sampling > 0 ? k->sampling : k->grid_max;
  IterVar *rax[2] = {te_reduce_axis(c, "riy", gm), te_reduce_axis(c, "rix", gm)};
  RoiGeom g;
  roi_geom(k, idx[0], &g);
  Expr *it[2] = {ivref(c, rax[0]), ivref(c, rax[1])}, *cond = NULL;
  if (k->sampling == 0)
    for (int dim = 0; dim < 2; dim++) cond = and2(A, cond, tir_bin(A, E_LT, it[dim], g.grid[dim]));
  RoiAxis y = roi_axis(k, &g, 0, idx[2], it[0]), x = roi_axis(k, &g, 1, idx[3], it[1]);
  Expr *v = roi_corners(k, roi_batch(k, idx[0]), idx[1], &y, &x);
  return te_reduce(c, k->is_max ? RED_MAX : RED_SUM, v, 2, rax, NULL, cond);
}

static Expr *roi_align_out_body(TeCtx *c, Expr **idx, void *user) {
  RoiAlignCtx *k = user;
  RoiGeom g;
  roi_geom(k, idx[0], &g);
  return roi_finish(k, &g, te_read(c, k->acc_t, 4, idx));
}

/* Binds e to a new variable for the statement built later: appends the binding to lets, returns the ref. */
typedef struct LetList {
  int n;
  Var *vars[32];
  Expr *vals[32];
} LetList;

static Expr *bind(Arena *A, LetList *l, const char *name, Expr *e) {
  Var *v = tir_var(A, name, e->dtype);
  l->vars[l->n] = v;
  l->vals[l->n++] = e;
  return tir_varref(A, v);
}

static Stmt *wrap_lets(Arena *A, LetList *l, Stmt *s) {
  for (int i = l->n - 1; i >= 0; i--) s = tir_let_stmt(A, l->vars[i], l->vals[i], s);
  return s;
}

/* The loop form (an extern): per roi (parallel) its geometry once; per bin, per sample row its y corners, per
 * sample its x corners, then the channels innermost, accumulating into a float64 slot per (roi, channel).
 * The grid loops run to the roi's own grid size, so the adaptive grid needs no bound. */
static Stmt *roi_align_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  RoiAlignCtx *k = user;
  Arena *A = c->arena;
  const mlc_dtype F = MLC_F64;
  k->xb = ins[0];
  k->roisb = ins[1];
  k->bidxb = ins[2];
  Buffer *out = outs[0];
  int64_t ashape[2] = {out->shape[0], out->shape[1]};
  Buffer *acc = tir_buffer(A, "roi_acc", F, 2, ashape);
  Var *rv = tir_var(A, "r", MLC_I64), *phv = tir_var(A, "ph", MLC_I64), *pwv = tir_var(A, "pw", MLC_I64);
  Var *iyv = tir_var(A, "iy", MLC_I64), *ixv = tir_var(A, "ix", MLC_I64), *cv[3], *cov[3];
  Expr *r = tir_varref(A, rv), *ph = tir_varref(A, phv), *pw = tir_varref(A, pwv);
  Expr *iy = tir_varref(A, iyv), *ix = tir_varref(A, ixv), *ce[3], *coe[3];
  loop_vars(A, "c", 3, cv, ce);
  loop_vars(A, "co", 3, cov, coe);
  /* with NCHWc data the channel c = co * block + ci, ci innermost: contiguous channels LLVM vectorizes */
  int64_t blk = k->block ? k->block : 1, nco = out->shape[1] / blk;
  Expr *ch[3];
  for (int i = 0; i < 3; i++) ch[i] = k->block ? tir_add(A, tir_mul(A, coe[i], tir_idx(A, blk)), ce[i]) : ce[i];
  LetList roi = {0}, ys = {0}, xs = {0};
  RoiGeom g0, g;
  roi_geom(k, r, &g0);
  for (int dim = 0; dim < 2; dim++) {
    g.start[dim] = bind(A, &roi, dim ? "start_x" : "start_y", g0.start[dim]);
    g.bin[dim] = bind(A, &roi, dim ? "bin_x" : "bin_y", g0.bin[dim]);
    g.grid[dim] = bind(A, &roi, dim ? "grid_x" : "grid_y", g0.grid[dim]);
  }
  Expr *b = bind(A, &roi, "image", roi_batch(k, r));
  RoiAxis y0 = roi_axis(k, &g, 0, ph, iy), x0 = roi_axis(k, &g, 1, pw, ix), y, x;
  y.lo = bind(A, &ys, "y_lo", y0.lo), y.hi = bind(A, &ys, "y_hi", y0.hi);
  y.wlo = bind(A, &ys, "wy_lo", y0.wlo), y.whi = bind(A, &ys, "wy_hi", y0.whi);
  x.lo = bind(A, &xs, "x_lo", x0.lo), x.hi = bind(A, &xs, "x_hi", x0.hi);
  x.wlo = bind(A, &xs, "wx_lo", x0.wlo), x.whi = bind(A, &xs, "wx_hi", x0.whi);
  Expr *nc = tir_idx(A, k->block ? blk : out->shape[1]), *zero = tir_idx(A, 0);
  Expr *a0[2] = {r, ch[0]}, *a1[2] = {r, ch[1]}, *a2[2] = {r, ch[2]};
  Stmt *init = tir_for(A, cv[0], zero, nc, FOR_SERIAL,
                       tir_store(A, acc, 2, a0, k->is_max ? tir_min_value(A, F) : tir_const(A, F, 0)));
  Expr *v = roi_corners(k, b, ch[1], &y, &x), *old = tir_load(A, acc, 2, a1);
  Stmt *upd = tir_for(A, cv[1], zero, nc, FOR_SERIAL,
                      tir_store(A, acc, 2, a1, k->is_max ? tir_bin(A, E_MAX, old, v) : tir_add(A, old, v)));
  if (k->block) {
    init = tir_for(A, cov[0], zero, tir_idx(A, nco), FOR_SERIAL, init);
    upd = tir_for(A, cov[1], zero, tir_idx(A, nco), FOR_SERIAL, upd);
  }
  upd = tir_for(A, ixv, zero, tir_bin(A, E_MAX, g.grid[1], zero), FOR_SERIAL, wrap_lets(A, &xs, upd));
  upd = tir_for(A, iyv, zero, tir_bin(A, E_MAX, g.grid[0], zero), FOR_SERIAL, wrap_lets(A, &ys, upd));
  Expr *oi[4] = {r, ch[2], ph, pw};
  Stmt *fin = tir_for(A, cv[2], zero, nc, FOR_SERIAL, tir_store(A, out, 4, oi, roi_finish(k, &g, tir_load(A, acc, 2, a2))));
  if (k->block) fin = tir_for(A, cov[2], zero, tir_idx(A, nco), FOR_SERIAL, fin);
  Stmt *bin = tir_seq(A, 3, (Stmt *[]){init, upd, fin});
  bin = tir_for(A, pwv, zero, tir_idx(A, out->shape[3]), FOR_SERIAL, bin);
  bin = tir_for(A, phv, zero, tir_idx(A, out->shape[2]), FOR_SERIAL, bin);
  Stmt *per_roi = wrap_lets(A, &roi, bin);
  if (k->counted) { /* a run-time number of rois (their data-dependent extent): the rest of the bound is zeros */
    Var *zv[3];
    Expr *ze[3], *e0[1] = {zero};
    loop_vars(A, "z", 3, zv, ze);
    Expr *zi[4] = {r, ze[0], ze[1], ze[2]};
    Stmt *zs = tir_store(A, out, 4, zi, tir_const(A, out->dtype, 0));
    for (int i = 2; i >= 0; i--) zs = tir_for(A, zv[i], zero, tir_idx(A, out->shape[1 + i]), FOR_SERIAL, zs);
    per_roi = tir_if(A, tir_bin(A, E_LT, r, tir_load(A, ins[3], 1, e0)), per_roi, zs);
  }
  Stmt *body = tir_for(A, rv, zero, tir_idx(A, out->shape[0]), FOR_PARALLEL, per_roi);
  return tir_allocate(A, acc, body);
}

static mlc_status roi_align_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  RoiAlignCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = roi_align_parse(n, k, d);
  if (st) return st;
  k->c = c;
  const TensorType *o = &n->outputs[0]->type;
  k->out = o->dtype;
  /* CPU: the loop form always (geometry hoisted out of the channel loop); GPU: the TE reduction, one thread
   * per output element, unless the grid has no bound */
  bool cpu = c->target && c->target->kind == TARGET_CPU;
  if (cpu || k->block || (k->sampling == 0 && k->grid_max == 0)) {
    TeTensor ot = {.dtype = o->dtype, .ndim = 4};
    memcpy(ot.shape, o->dims, sizeof ot.shape[0] * 4);
    k->counted = n->ninputs > 3 && n->inputs[3];
    te_extern(c, "roi_align", "roi_align", k->counted ? 4 : 3, ins, 1, &ot, roi_align_extern, k, outs);
    return MLC_OK;
  }
  k->x = ins[0];
  k->rois = ins[1];
  k->bidx = ins[2];
  k->acc_t = te_compute(c, "roi_align_acc", "reduce", MLC_F64, 4, o->dims, roi_align_body, k);
  outs[0] = te_compute(c, "roi_align", "elemwise", o->dtype, 4, o->dims, roi_align_out_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- roi_pool */

typedef struct RoiPoolCtx {
  int64_t ph, pw;
  double scale;
} RoiPoolCtx;

static mlc_status roi_pool_parse(const Node *n, RoiPoolCtx *k, Diag *d) {
  int64_t shape[2];
  if (ir_attr_ints(n, "pooled_shape", shape, 2) != 2 || shape[0] < 1 || shape[1] < 1)
    return diag_set(d, MLC_ERR_INVALID, "vision.roi_pool: pooled_shape must be 2 sizes >= 1");
  k->ph = shape[0];
  k->pw = shape[1];
  k->scale = ir_attr_float(n, "spatial_scale", 1.0);
  return MLC_OK;
}

static mlc_status roi_pool_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *r = &n->inputs[1]->type;
  mlc_status st = check_float(n, x->dtype, d);
  if (st) return st;
  RoiPoolCtx k = {0};
  if ((st = roi_pool_parse(n, &k, d))) return st;
  if (x->ndim != 4) return diag_set(d, MLC_ERR_INVALID, "vision.roi_pool: X must be [N, C, H, W]");
  if (r->ndim != 2 || r->dims[1] != 5 || r->dtype != x->dtype)
    return diag_set(d, MLC_ERR_INVALID, "vision.roi_pool: rois must be [num_rois, 5] of X's dtype");
  TensorType o = {.dtype = x->dtype, .ndim = 4, .dims = {r->dims[0], x->dims[1], k.ph, k.pw}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* x (float) as an int64 index, saturated to +-2^40 (NaN to the low end) so the conversion is always defined */
static Expr *float_to_index(Arena *A, Expr *x) {
  Expr *lo = tir_const(A, x->dtype, -1099511627776.0), *hi = tir_const(A, x->dtype, 1099511627776.0);
  x = tir_select(A, tir_bin(A, E_GT, x, lo), x, lo);
  return tir_cast(A, MLC_I64, tir_select(A, tir_bin(A, E_LT, x, hi), x, hi));
}

/* C's round (half away from zero) of a float32/float64 value, computed in float64 where x + 0.5 is exact */
static Expr *round_away(Arena *A, Expr *x) {
  Expr *v = tir_cast(A, MLC_F64, x), *half = tir_const(A, MLC_F64, 0.5);
  Expr *up = call1(A, INTRIN_FLOOR, tir_add(A, call1(A, INTRIN_FABS, v), half));
  return tir_select(A, tir_bin(A, E_LT, v, tir_const(A, MLC_F64, 0.0)), tir_sub(A, tir_const(A, MLC_F64, 0.0), up), up);
}

/* The loop form: per roi (parallel) its image and rounded corners, per bin its window, then the channels
 * innermost, taking the max into a slot per (roi, channel) as roi_align's loop form does. The bin bounds are
 * computed in float32 for float32 (and narrower) data, as the producers of MaxRoiPool models do. */
static Stmt *roi_pool_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  RoiPoolCtx *k = user;
  Arena *A = c->arena;
  Buffer *xb = ins[0], *rb = ins[1], *out = outs[0];
  mlc_dtype acc_t = acc_dtype(xb->dtype), T = acc_t == MLC_F64 ? MLC_F64 : MLC_F32;
  int64_t ashape[2] = {out->shape[0], out->shape[1]}, H = xb->shape[2], W = xb->shape[3];
  Buffer *acc = tir_buffer(A, "roi_max", acc_t, 2, ashape);
  Var *rv = tir_var(A, "r", MLC_I64), *phv = tir_var(A, "ph", MLC_I64), *pwv = tir_var(A, "pw", MLC_I64);
  Var *hv = tir_var(A, "h", MLC_I64), *wv = tir_var(A, "w", MLC_I64), *cv[3];
  Expr *r = tir_varref(A, rv), *ph = tir_varref(A, phv), *pw = tir_varref(A, pwv), *h = tir_varref(A, hv);
  Expr *w = tir_varref(A, wv), *ce[3], *zero = tir_idx(A, 0), *one = tir_idx(A, 1);
  loop_vars(A, "c", 3, cv, ce);
  LetList roi = {0}, bh = {0}, bw = {0};
  Expr *corner[5];
  for (int i = 0; i < 5; i++) {
    Expr *ri[2] = {r, tir_idx(A, i)};
    Expr *v = tir_load(A, rb, 2, ri);
    v = v->dtype == T ? v : tir_cast(A, T, v);
    if (i == 0) {
      corner[0] = bind(A, &roi, "image", clamp_idx(A, float_to_index(A, v), xb->shape[0]));
    } else {
      v = float_to_index(A, round_away(A, tir_mul(A, v, tir_const(A, T, k->scale))));
      corner[i] = bind(A, &roi, (const char *[]){"", "x1", "y1", "x2", "y2"}[i], v);
    }
  }
  Expr *lo[2], *hi[2], *o[2] = {ph, pw};
  int64_t lim[2] = {H, W}, bins[2] = {k->ph, k->pw};
  for (int dim = 0; dim < 2; dim++) {
    /* dim 0: y (corners 2, 4), 1: x (corners 1, 3); a malformed roi counts as 1 x 1 */
    Expr *s = corner[2 - dim], *e = corner[4 - dim];
    Expr *size = tir_bin(A, E_MAX, tir_add(A, tir_sub(A, e, s), one), one);
    Expr *bin = bind(A, &roi, dim ? "bin_w" : "bin_h",
                     tir_bin(A, E_DIV, tir_cast(A, T, size), tir_const(A, T, (double)bins[dim])));
    LetList *l = dim ? &bw : &bh;
    Expr *a = float_to_index(A, call1(A, INTRIN_FLOOR, tir_mul(A, tir_cast(A, T, o[dim]), bin)));
    Expr *b = float_to_index(A, call1(A, INTRIN_CEIL, tir_mul(A, tir_cast(A, T, tir_add(A, o[dim], one)), bin)));
    Expr *top = tir_idx(A, lim[dim]);
    lo[dim] = bind(A, l, dim ? "w0" : "h0", tir_bin(A, E_MIN, tir_bin(A, E_MAX, tir_add(A, a, s), zero), top));
    hi[dim] = bind(A, l, dim ? "w1" : "h1", tir_bin(A, E_MIN, tir_bin(A, E_MAX, tir_add(A, b, s), zero), top));
  }
  Expr *a0[2] = {r, ce[0]}, *a1[2] = {r, ce[1]}, *a2[2] = {r, ce[2]}, *nc = tir_idx(A, out->shape[1]);
  Stmt *init = tir_for(A, cv[0], zero, nc, FOR_SERIAL, tir_store(A, acc, 2, a0, tir_min_value(A, acc_t)));
  Expr *xi[4] = {corner[0], ce[1], h, w}, *v = tir_load(A, xb, 4, xi);
  v = v->dtype == acc_t ? v : tir_cast(A, acc_t, v);
  Stmt *upd = tir_for(A, cv[1], zero, nc, FOR_SERIAL, tir_store(A, acc, 2, a1, tir_bin(A, E_MAX, tir_load(A, acc, 2, a1), v)));
  upd = tir_for(A, wv, lo[1], tir_bin(A, E_MAX, tir_sub(A, hi[1], lo[1]), zero), FOR_SERIAL, upd);
  upd = tir_for(A, hv, lo[0], tir_bin(A, E_MAX, tir_sub(A, hi[0], lo[0]), zero), FOR_SERIAL, upd);
  Expr *empty = tir_bin(A, E_OR, tir_bin(A, E_LE, hi[0], lo[0]), tir_bin(A, E_LE, hi[1], lo[1]));
  Expr *res = tir_select(A, empty, tir_const(A, acc_t, 0.0), tir_load(A, acc, 2, a2));
  Expr *oi[4] = {r, ce[2], ph, pw};
  Stmt *fin = tir_for(A, cv[2], zero, nc, FOR_SERIAL,
                      tir_store(A, out, 4, oi, res->dtype == out->dtype ? res : tir_cast(A, out->dtype, res)));
  Stmt *bin = wrap_lets(A, &bw, tir_seq(A, 3, (Stmt *[]){init, upd, fin}));
  bin = tir_for(A, pwv, zero, tir_idx(A, out->shape[3]), FOR_SERIAL, bin);
  bin = tir_for(A, phv, zero, tir_idx(A, out->shape[2]), FOR_SERIAL, wrap_lets(A, &bh, bin));
  Stmt *body = tir_for(A, rv, zero, tir_idx(A, out->shape[0]), FOR_PARALLEL, wrap_lets(A, &roi, bin));
  return tir_allocate(A, acc, body);
}

static mlc_status roi_pool_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  RoiPoolCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = roi_pool_parse(n, k, d);
  if (st) return st;
  const TensorType *o = &n->outputs[0]->type;
  TeTensor ot = {.dtype = o->dtype, .ndim = 4};
  memcpy(ot.shape, o->dims, sizeof ot.shape[0] * 4);
  te_extern(c, "roi_pool", "roi_pool", 2, ins, 1, &ot, roi_pool_extern, k, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- deform_im2col */

typedef struct DeformCtx {
  TeTensor *x, *offset, *mask;
  int64_t strides[2], dil[2], pb[2], pe[2], kernel[2], in[2], out[2];
  int64_t groups, offset_groups, icpg, icpog;
  mlc_dtype acc;
} DeformCtx;

static mlc_status deform_parse(const Node *n, DeformCtx *k, Diag *d) {
  memset(k, 0, sizeof *k);
  const TensorType *x = &n->inputs[0]->type, *off = &n->inputs[1]->type;
  if (x->ndim != 4 || off->ndim != 4)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.deform_im2col: X and offset must be 4-D (2-D convolution only)");
  int64_t pads[4];
  if (ir_attr_ints(n, "kernel_shape", k->kernel, 2) != 2 || ir_attr_ints(n, "strides", k->strides, 2) != 2 ||
      ir_attr_ints(n, "dilation", k->dil, 2) != 2 || ir_attr_ints(n, "padding", pads, 4) != 4)
    return diag_set(d, MLC_ERR_INVALID, "nn.deform_im2col: kernel_shape, strides, dilation and padding must be given per spatial dim");
  k->groups = ir_attr_int(n, "groups", 1);
  k->offset_groups = ir_attr_int(n, "offset_group", 1);
  for (int i = 0; i < 2; i++) {
    k->pb[i] = pads[i];
    k->pe[i] = pads[2 + i];
    k->in[i] = x->dims[2 + i];
    if (k->kernel[i] < 1 || k->strides[i] < 1 || k->dil[i] < 1 || k->pb[i] < 0 || k->pe[i] < 0)
      return diag_set(d, MLC_ERR_INVALID, "nn.deform_im2col: kernel, strides and dilations must be >= 1 and pads >= 0");
    int64_t avail = k->in[i] + k->pb[i] + k->pe[i] - ((k->kernel[i] - 1) * k->dil[i] + 1);
    if (avail < 0) return diag_set(d, MLC_ERR_INVALID, "nn.deform_im2col: the kernel is larger than the padded input");
    k->out[i] = avail / k->strides[i] + 1;
  }
  if (k->groups < 1 || k->offset_groups < 1 || x->dims[1] % k->groups || x->dims[1] % k->offset_groups)
    return diag_set(d, MLC_ERR_INVALID, "nn.deform_im2col: %lld channels do not split into group %lld / offset_group %lld",
                    (long long)x->dims[1], (long long)k->groups, (long long)k->offset_groups);
  k->icpg = x->dims[1] / k->groups;
  k->icpog = x->dims[1] / k->offset_groups;
  int64_t taps = k->kernel[0] * k->kernel[1];
  if (off->dims[0] != x->dims[0] || off->dims[1] != k->offset_groups * taps * 2 || off->dims[2] != k->out[0] ||
      off->dims[3] != k->out[1])
    return diag_set(d, MLC_ERR_INVALID, "nn.deform_im2col: offset must be [%lld, %lld, %lld, %lld]", (long long)x->dims[0],
                    (long long)(k->offset_groups * taps * 2), (long long)k->out[0], (long long)k->out[1]);
  if (n->ninputs > 2) {
    const TensorType *m = &n->inputs[2]->type;
    if (m->ndim != 4 || m->dims[0] != x->dims[0] || m->dims[1] != k->offset_groups * taps || m->dims[2] != k->out[0] ||
        m->dims[3] != k->out[1])
      return diag_set(d, MLC_ERR_INVALID, "nn.deform_im2col: mask must be [N, offset_group*kh*kw, oh, ow]");
  }
  return MLC_OK;
}

static mlc_status deform_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_float(n, x->dtype, d);
  if (st) return st;
  for (int i = 1; i < n->ninputs; i++)
    if (n->inputs[i]->type.dtype != x->dtype)
      return diag_set(d, MLC_ERR_INVALID, "nn.deform_im2col: input %d's dtype differs from X's", i);
  DeformCtx k;
  if ((st = deform_parse(n, &k, d))) return st;
  TensorType o = {.dtype = x->dtype, .ndim = 4,
                  .dims = {x->dims[0], k.groups, k.out[0] * k.out[1], k.icpg * k.kernel[0] * k.kernel[1]}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* cols[n, g, i*ow + j, (a*kw + b)*icpg + icl]: channel g*icpg + icl of X sampled bilinearly at tap (a, b)
 * of output (i, j), times the mask. The channel innermost: the vectorized axis of the generic schedule, where
 * the position and offsets are the same for every lane (for offset groups of a multiple of the lanes). */
static Expr *deform_cols_body(TeCtx *c, Expr **idx, void *user) {
  DeformCtx *k = user;
  Arena *A = c->arena;
  mlc_dtype F = k->acc;
  int64_t taps = k->kernel[0] * k->kernel[1];
  Expr *oi = tir_bin(A, E_FLOORDIV, idx[2], tir_idx(A, k->out[1])), *oj = tir_bin(A, E_FLOORMOD, idx[2], tir_idx(A, k->out[1]));
  Expr *icl = tir_bin(A, E_FLOORMOD, idx[3], tir_idx(A, k->icpg)), *t = tir_bin(A, E_FLOORDIV, idx[3], tir_idx(A, k->icpg));
  Expr *ka = tir_bin(A, E_FLOORDIV, t, tir_idx(A, k->kernel[1])), *kb = tir_bin(A, E_FLOORMOD, t, tir_idx(A, k->kernel[1]));
  Expr *ch = tir_add(A, tir_mul(A, idx[1], tir_idx(A, k->icpg)), icl);
  Expr *og = tir_bin(A, E_FLOORDIV, ch, tir_idx(A, k->icpog));
  Expr *tap = tir_add(A, tir_mul(A, og, tir_idx(A, taps)), t);
  Expr *o[2] = {oi, oj}, *kk[2] = {ka, kb}, *fl[2], *fr[2];
  for (int dim = 0; dim < 2; dim++) {
    Expr *offi[4] = {idx[0], tir_add(A, tir_mul(A, tap, tir_idx(A, 2)), tir_idx(A, dim)), oi, oj};
    Expr *base = tir_sub(A, tir_add(A, tir_mul(A, o[dim], tir_idx(A, k->strides[dim])), tir_mul(A, kk[dim], tir_idx(A, k->dil[dim]))),
                         tir_idx(A, k->pb[dim]));
    Expr *pos = tir_add(A, tir_cast(A, F, base), read_as(c, k->offset, offi, F));
    Expr *f = call1(A, INTRIN_FLOOR, pos);
    /* clamped before the conversion (by selects, which also send NaN out of range), so a wild offset stays a
     * defined, out of range, zero-weight index */
    Expr *lo = tir_const(A, F, -2.0), *hi = tir_const(A, F, (double)k->in[dim] + 1);
    f = tir_select(A, tir_bin(A, E_GT, f, lo), tir_select(A, tir_bin(A, E_LT, f, hi), f, hi), lo);
    fl[dim] = tir_cast(A, MLC_I64, f);
    fr[dim] = tir_sub(A, pos, f);
  }
  Expr *one = tir_const(A, F, 1.0), *v = NULL, *m = NULL;
  if (k->mask) {
    Expr *mi[4] = {idx[0], tap, oi, oj};
    m = read_as(c, k->mask, mi, F);
  }
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      Expr *y = a ? tir_add(A, fl[0], tir_idx(A, 1)) : fl[0], *x = b ? tir_add(A, fl[1], tir_idx(A, 1)) : fl[1];
      Expr *wgt = tir_mul(A, a ? fr[0] : tir_sub(A, one, fr[0]), b ? fr[1] : tir_sub(A, one, fr[1]));
      Expr *in = tir_bin(A, E_AND, tir_bin(A, E_AND, tir_bin(A, E_GE, y, tir_idx(A, 0)), tir_bin(A, E_LT, y, tir_idx(A, k->in[0]))),
                         tir_bin(A, E_AND, tir_bin(A, E_GE, x, tir_idx(A, 0)), tir_bin(A, E_LT, x, tir_idx(A, k->in[1]))));
      Expr *xi[4] = {idx[0], ch, clamp_idx(A, y, k->in[0]), clamp_idx(A, x, k->in[1])};
      Expr *t = tir_select(A, in, tir_mul(A, wgt, read_as(c, k->x, xi, F)), tir_const(A, F, 0.0));
      v = v ? tir_add(A, v, t) : t;
    }
  return m ? tir_mul(A, v, m) : v;
}

static mlc_status deform_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  DeformCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = deform_parse(n, k, d);
  if (st) return st;
  k->x = ins[0];
  k->offset = ins[1];
  k->mask = n->ninputs > 2 ? ins[2] : NULL;
  k->acc = acc_dtype(ins[0]->dtype);
  const TensorType *o = &n->outputs[0]->type;
  /* its own kernel (an opaque op), so the columns are computed once and the GEMM reads them */
  TeTensor *t = te_compute(c, "deform_im2col", "injective", k->acc, 4, o->dims, deform_cols_body, k);
  outs[0] = topi_cast_stage(c, t, o->dtype);
  return MLC_OK;
}

/* ---------------------------------------------------------------- dilation phases
 * nn.dilation_phases(x[N, C, H, W]) -> [dh*dw*N, C, Hq, Wq] and nn.dilation_merge(y[dh*dw*N, K, Ah, Aw]) ->
 * [N, K, OH, OW]: the space-to-batch form of a dilated conv that LowerConv makes (passes/graph/lower_conv.c):
 * the phases of the zero-padded input become the batch of one undilated conv, and the merge interleaves its
 * outputs back. Attributes dilation [dh, dw]; phases: padding [pt, pl] (the conv's leading pads) and
 * phase_shape [Hq, Wq]; merge: out_shape [OH, OW] (at most [Ah*dh, Aw*dw]); both data_block b: NCHWc data
 * and result ([.., C/b, .., .., b], set by ConvertLayoutNCHWc, which passes a region's layout through them).
 *   phases: y[(p*dw + q)*N + n, c, i, j] = x[n, c, i*dh + p - pt, j*dw + q - pl], 0 outside x
 *   merge:  y[n, k, o, r] = x[((o % dh)*dw + r % dw)*N + n, k, o / dh, r / dw] */

typedef struct Phases {
  int64_t dil[2], pad[2], shape[2], block;
  bool merge;
  TeTensor *x;
} Phases;

static mlc_status phases_of(const Node *n, bool merge, Phases *p, Diag *d) {
  memset(p, 0, sizeof *p);
  p->merge = merge;
  const TensorType *x = &n->inputs[0]->type;
  p->block = ir_attr_int(n, "data_block", 0);
  const char *shape = merge ? "out_shape" : "phase_shape";
  if (ir_attr_ints(n, "dilation", p->dil, 2) != 2 || ir_attr_ints(n, shape, p->shape, 2) != 2 ||
      (!merge && ir_attr_ints(n, "padding", p->pad, 2) != 2))
    return diag_set(d, MLC_ERR_INVALID, "%s needs dilation, %s%s (2 values each)", n->op->name, shape,
                    merge ? "" : " and padding");
  if (x->ndim != (p->block ? 5 : 4) || (p->block && x->dims[4] != p->block) || p->block < 0)
    return diag_set(d, MLC_ERR_INVALID, "%s: data of rank %d with data_block %lld", n->op->name, x->ndim,
                    (long long)p->block);
  for (int i = 0; i < 2; i++)
    if (p->dil[i] < 1 || p->pad[i] < 0 || p->shape[i] < 1 ||
        (merge && p->shape[i] > x->dims[2 + i] * p->dil[i]))
      return diag_set(d, MLC_ERR_INVALID, "%s: dilation %lld, padding %lld, shape %lld on an axis of %lld",
                      n->op->name, (long long)p->dil[i], (long long)p->pad[i], (long long)p->shape[i],
                      (long long)x->dims[2 + i]);
  if (merge && x->dims[0] % (p->dil[0] * p->dil[1]))
    return diag_set(d, MLC_ERR_INVALID, "nn.dilation_merge: batch %lld is not a multiple of %lld phases",
                    (long long)x->dims[0], (long long)(p->dil[0] * p->dil[1]));
  return MLC_OK;
}

static mlc_status phases_type(Node *n, bool merge, Diag *d) {
  Phases p;
  mlc_status st = phases_of(n, merge, &p, d);
  if (st) return st;
  TensorType o = n->inputs[0]->type;
  int64_t np = p.dil[0] * p.dil[1];
  o.dims[0] = merge ? o.dims[0] / np : o.dims[0] * np;
  o.dims[2] = p.shape[0];
  o.dims[3] = p.shape[1];
  n->outputs[0]->type = o;
  return MLC_OK;
}

static mlc_status dilation_phases_infer(Node *n, Diag *d) { return phases_type(n, false, d); }
static mlc_status dilation_merge_infer(Node *n, Diag *d) { return phases_type(n, true, d); }

static Expr *phases_body(TeCtx *c, Expr **idx, void *user) {
  Phases *p = user;
  Arena *A = c->arena;
  int nd = p->x->ndim;
  Expr *xi[5] = {NULL, idx[1], NULL, NULL, nd == 5 ? idx[4] : NULL};
  if (p->merge) { /* x[((o % dh)*dw + r % dw)*N + n, k, o / dh, r / dw] */
    int64_t N = p->x->shape[0] / (p->dil[0] * p->dil[1]);
    Expr *ph = tir_bin(A, E_MOD, idx[2], tir_idx(A, p->dil[0])), *pw = tir_bin(A, E_MOD, idx[3], tir_idx(A, p->dil[1]));
    xi[0] = tir_add(A, tir_mul(A, tir_add(A, tir_mul(A, ph, tir_idx(A, p->dil[1])), pw), tir_idx(A, N)), idx[0]);
    xi[2] = tir_bin(A, E_DIV, idx[2], tir_idx(A, p->dil[0]));
    xi[3] = tir_bin(A, E_DIV, idx[3], tir_idx(A, p->dil[1]));
    return te_read(c, p->x, nd, xi);
  }
  /* batch b = (ph*dw + pw)*N + n: x[n, c, i*dh + ph - pt, j*dw + pw - pl], zero outside */
  int64_t N = p->x->shape[0];
  Expr *pq = tir_bin(A, E_DIV, idx[0], tir_idx(A, N));
  Expr *ph = tir_bin(A, E_DIV, pq, tir_idx(A, p->dil[1])), *pw = tir_bin(A, E_MOD, pq, tir_idx(A, p->dil[1]));
  Expr *ih = tir_sub(A, tir_add(A, tir_mul(A, idx[2], tir_idx(A, p->dil[0])), ph), tir_idx(A, p->pad[0]));
  Expr *iw = tir_sub(A, tir_add(A, tir_mul(A, idx[3], tir_idx(A, p->dil[1])), pw), tir_idx(A, p->pad[1]));
  int64_t H = p->x->shape[2], W = p->x->shape[3];
  Expr *ok = tir_bin(A, E_AND, tir_bin(A, E_GE, ih, tir_idx(A, 0)), tir_bin(A, E_LT, ih, tir_idx(A, H)));
  ok = tir_bin(A, E_AND, ok, tir_bin(A, E_GE, iw, tir_idx(A, 0)));
  ok = tir_bin(A, E_AND, ok, tir_bin(A, E_LT, iw, tir_idx(A, W)));
  xi[0] = tir_bin(A, E_MOD, idx[0], tir_idx(A, N));
  /* clamped indices keep the read in bounds; the select picks zero outside */
  xi[2] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, ih, tir_idx(A, 0)), tir_idx(A, H - 1));
  xi[3] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, iw, tir_idx(A, 0)), tir_idx(A, W - 1));
  return tir_select(A, ok, te_read(c, p->x, nd, xi), tir_float(A, p->x->dtype, 0));
}

static mlc_status phases_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, bool merge, Diag *d) {
  Phases *p = arena_alloc(c->arena, sizeof *p);
  mlc_status st = phases_of(n, merge, p, d);
  if (st) return st;
  p->x = ins[0];
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, n->op->name, "injective", o->dtype, o->ndim, o->dims, phases_body, p);
  return MLC_OK;
}

static mlc_status dilation_phases_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  return phases_compute(c, n, ins, outs, false, d);
}

static mlc_status dilation_merge_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  return phases_compute(c, n, ins, outs, true, d);
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_spatial[] = {
    /* name             pattern      min max nout infer           compute */
    {"nn.max_unpool", PAT_OPAQUE, 2, 2, 1, unpool_infer, unpool_compute},
    {"nn.col2im", PAT_OPAQUE, 1, 1, 1, col2im_infer, col2im_compute},
    {"vision.roi_align", PAT_OPAQUE, 3, 4, 1, roi_align_infer, roi_align_compute, DYN_ROIS},
    {"vision.roi_pool", PAT_OPAQUE, 2, 2, 1, roi_pool_infer, roi_pool_compute, DYN_ROIS},
    {"nn.deform_im2col", PAT_OPAQUE, 2, 3, 1, deform_infer, deform_compute},
    {"nn.dilation_phases", PAT_INJECTIVE, 1, 1, 1, dilation_phases_infer, dilation_phases_compute},
    {"nn.dilation_merge", PAT_INJECTIVE, 1, 1, 1, dilation_merge_infer, dilation_merge_compute},
    {0},
};
