/* nn family: convolution (1-D/2-D/3-D, groups, dilations, strides, explicit pads), dense / matmul / batch
 * matmul (numpy semantics), pooling (max / average / Lp, with ceil mode, dilations and padding), global
 * pooling, softmax / log-softmax. For each op: the type relation (infer), the TE compute and the pattern
 * kind; the schedule templates for the heavy ops ("conv2d_nchw", "dense", "pool", "softmax") live in
 * schedule.c and key on the TeOp tag set here.
 *
 * Convolutions do not materialise padding: an out-of-range tap reads the input at a clamped index (so the
 * load is always in bounds, TIR selects evaluate both sides) and a select replaces the value by the pad
 * value (0 for sums, -inf for max). Guards are emitted only on dimensions where a tap can actually fall
 * outside. Pools read a padded copy of their input instead (pool_pad_stage; the "pool.x86" template
 * computes it per channel plane, next to the window loop), so the window loop has no test per tap and the
 * output row vectorizes.
 * float16/bfloat16 accumulate in float32: the reduction stage is float32 and a cast stage follows.
 *
 * Graph attributes (as the ONNX importer writes them, Relay names):
 *   nn.conv{1,2,3}d: strides, dilation, padding ([begin..., end...]), groups
 *   nn.conv{1,2,3}d_transpose: the same plus output_padding; weight [C, OC/groups, k...]
 *   nn.{max,avg,lp}_pool{1,2,3}d: pool_size, strides, dilation, padding, ceil_mode, count_include_pad, p
 *   nn.max_pool_indices(data, pooled) (MaxPool's Indices output): the max pool's attributes plus storage_order
 *   nn.dense(data[..., K], weight[N, K]); nn.matmul / nn.batch_matmul: transpose_a, transpose_b (numpy rank
 *   rules: 1-D operands promoted and the promoted dim dropped, batch dims broadcast)
 *   nn.softmax / nn.log_softmax: axis
 *   nn.causal_conv_with_state(x[B, C, L], weight[C, 1, K], bias[C]?, past_state[B, C, K-1]?) -> y, present_state:
 *   activation (0 none, 1 silu/swish). The stateful causal depthwise 1-D conv of Mamba / Gated DeltaNet
 *   (ONNX CausalConvWithState): with p = concat(past_state or zeros, x) along the length,
 *     y[b, c, l] = act(bias[c] + sum_j weight[c, 0, j] * p[b, c, l + j]),   present_state = p[b, c, L:]
 *   (its last K-1 positions). p is never materialised: a tap reads past_state or x by position. */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

/* ---------------------------------------------------------------- helpers */

static mlc_dtype acc_dtype(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16 ? MLC_F32 : t; }

static Expr *ivref(TeCtx *c, IterVar *iv) { return tir_varref(c->arena, iv->var); }

static Expr *read_as(TeCtx *c, TeTensor *t, Expr **idx, mlc_dtype to) {
  Expr *e = te_read(c, t, t->ndim, idx);
  return t->dtype == to ? e : tir_cast(c->arena, to, e);
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Spatial attribute of nsp ints with a default; fails if present with the wrong length. */
static mlc_status spatial_attr(const Node *n, const char *name, int nsp, int64_t dflt, int64_t *out, Diag *d) {
  int64_t v[2 * MLC_MAX_DIMS];
  int cnt = ir_attr_ints(n, name, v, 2 * MLC_MAX_DIMS);
  for (int i = 0; i < nsp; i++) out[i] = dflt;
  if (cnt == 0) return MLC_OK;
  if (cnt != nsp) return diag_set(d, MLC_ERR_INVALID, "attribute '%s' has %d values, expected %d", name, cnt, nsp);
  for (int i = 0; i < nsp; i++) out[i] = v[i];
  return MLC_OK;
}

typedef struct Window {
  int nsp;
  int64_t kernel[3], strides[3], dil[3], pb[3], pe[3];
  int64_t in[3], out[3];
  int64_t groups;
  bool ceil_mode;
} Window;

/* Reads strides / dilation / padding (and pool_size when pool) for nsp spatial dims and checks them. */
static mlc_status window_attrs(const Node *n, int nsp, bool pool, Window *w, Diag *d) {
  mlc_status st;
  memset(w, 0, sizeof *w);
  w->nsp = nsp;
  if ((st = spatial_attr(n, "strides", nsp, 1, w->strides, d))) return st;
  if ((st = spatial_attr(n, "dilation", nsp, 1, w->dil, d))) return st;
  if (pool && (st = spatial_attr(n, "pool_size", nsp, 0, w->kernel, d))) return st;
  int64_t pads[2 * MLC_MAX_DIMS] = {0};
  int cnt = ir_attr_ints(n, "padding", pads, 2 * MLC_MAX_DIMS);
  if (cnt != 0 && cnt != 2 * nsp)
    return diag_set(d, MLC_ERR_INVALID, "attribute 'padding' has %d values, expected %d", cnt, 2 * nsp);
  for (int i = 0; i < nsp; i++) {
    w->pb[i] = pads[i];
    w->pe[i] = pads[nsp + i];
    if (w->strides[i] < 1 || w->dil[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0)
      return diag_set(d, MLC_ERR_INVALID, "strides and dilations must be >= 1 and pads >= 0");
  }
  w->groups = ir_attr_int(n, "groups", 1);
  w->ceil_mode = ir_attr_int(n, "ceil_mode", 0) != 0;
  return MLC_OK;
}

/* Output extents from in/kernel (filled by the caller). */
static mlc_status window_out(Window *w, Diag *d) {
  for (int i = 0; i < w->nsp; i++) {
    if (w->kernel[i] < 1) return diag_set(d, MLC_ERR_INVALID, "kernel size must be >= 1");
    int64_t span = (w->kernel[i] - 1) * w->dil[i] + 1;
    int64_t avail = w->in[i] + w->pb[i] + w->pe[i] - span;
    if (avail < 0)
      return diag_set(d, MLC_ERR_INVALID, "kernel extent %lld is larger than the padded input %lld",
                      (long long)span, (long long)(w->in[i] + w->pb[i] + w->pe[i]));
    int64_t o = w->ceil_mode ? ceil_div(avail, w->strides[i]) + 1 : avail / w->strides[i] + 1;
    /* the last window must start inside the input or its leading pad (PyTorch / ONNX Runtime rule) */
    if (w->ceil_mode && (o - 1) * w->strides[i] >= w->in[i] + w->pb[i]) o--;
    w->out[i] = o;
  }
  return MLC_OK;
}

/* Index of a window tap along spatial dim i: o*s + k*d - pb; *valid gets "tap inside [0, in)" when a tap can
 * fall outside (NULL otherwise), and the returned index is clamped into range. */
static Expr *tap_index(TeCtx *c, const Window *w, int i, Expr *o, Expr *k, Expr **valid) {
  Arena *A = c->arena;
  Expr *x = tir_add(A, tir_mul(A, o, tir_idx(A, w->strides[i])), tir_mul(A, k, tir_idx(A, w->dil[i])));
  if (w->pb[i]) x = tir_sub(A, x, tir_idx(A, w->pb[i]));
  bool lo = w->pb[i] > 0;
  bool hi = (w->out[i] - 1) * w->strides[i] + (w->kernel[i] - 1) * w->dil[i] - w->pb[i] > w->in[i] - 1;
  Expr *cond = NULL;
  if (lo) cond = tir_bin(A, E_GE, x, tir_idx(A, 0));
  if (hi) {
    Expr *h = tir_bin(A, E_LT, x, tir_idx(A, w->in[i]));
    cond = cond ? tir_bin(A, E_AND, cond, h) : h;
  }
  if (lo) x = tir_bin(A, E_MAX, x, tir_idx(A, 0));
  if (hi) x = tir_bin(A, E_MIN, x, tir_idx(A, w->in[i] - 1));
  if (cond) *valid = *valid ? tir_bin(A, E_AND, *valid, cond) : cond;
  return x;
}

static bool is_float(mlc_dtype t) { return dtype_is_float(t); }

/* ---------------------------------------------------------------- convolution */

static int conv_nsp(const Node *n) {
  const char *name = n->op->name;
  return name[strlen(name) - 2] - '0'; /* nn.conv1d / nn.conv2d / nn.conv3d */
}

static mlc_status conv_window(const Node *n, Window *w, Diag *d) {
  int nsp = conv_nsp(n);
  const TensorType *x = &n->inputs[0]->type, *k = &n->inputs[1]->type;
  if (x->ndim != nsp + 2 || k->ndim != nsp + 2)
    return diag_set(d, MLC_ERR_INVALID, "%s expects rank-%d data and weight, got ranks %d and %d", n->op->name,
                    nsp + 2, x->ndim, k->ndim);
  mlc_status st = window_attrs(n, nsp, false, w, d);
  if (st) return st;
  for (int i = 0; i < nsp; i++) {
    w->in[i] = x->dims[2 + i];
    w->kernel[i] = k->dims[2 + i];
  }
  return window_out(w, d);
}

static mlc_status conv_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *k = &n->inputs[1]->type;
  if (!is_float(x->dtype) && x->dtype != MLC_I32) /* int32: the integer convolutions of the quant family */
    return diag_set(d, MLC_ERR_UNSUPPORTED, "convolution of %s is not supported (float types and int32 only)",
                    mlc_dtype_name(x->dtype));
  if (k->dtype != x->dtype)
    return diag_set(d, MLC_ERR_INVALID, "weight dtype %s differs from data dtype %s", mlc_dtype_name(k->dtype),
                    mlc_dtype_name(x->dtype));
  Window w;
  mlc_status st = conv_window(n, &w, d);
  if (st) return st;
  if (w.groups < 1 || x->dims[1] != k->dims[1] * w.groups || k->dims[0] % w.groups)
    return diag_set(d, MLC_ERR_INVALID,
                    "channels do not match: data has %lld channels, weight %lld x %lld groups, %lld filters",
                    (long long)x->dims[1], (long long)k->dims[1], (long long)w.groups, (long long)k->dims[0]);
  TensorType o = {.dtype = x->dtype, .ndim = x->ndim};
  o.dims[0] = x->dims[0];
  o.dims[1] = k->dims[0];
  for (int i = 0; i < w.nsp; i++) o.dims[2 + i] = w.out[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct ConvCtx {
  Window w;
  TeTensor *data, *weight;
  TeTensor *pad; /* the zero-padded data (conv_pad_stage), or NULL: the taps read data behind bounds tests */
  int64_t ocpg, icpg;
  mlc_dtype acc;
} ConvCtx;

static Expr *conv_pad_body(TeCtx *c, Expr **idx, void *user) {
  ConvCtx *k = user;
  Arena *A = c->arena;
  Expr *src[MLC_MAX_DIMS] = {idx[0], idx[1]}, *valid = NULL;
  for (int i = 0; i < k->w.nsp; i++) {
    Expr *x = idx[2 + i];
    if (k->w.pb[i]) x = tir_sub(A, x, tir_idx(A, k->w.pb[i]));
    Expr *cond = tir_bin(A, E_AND, tir_bin(A, E_GE, x, tir_idx(A, 0)), tir_bin(A, E_LT, x, tir_idx(A, k->w.in[i])));
    valid = valid ? tir_bin(A, E_AND, valid, cond) : cond;
    src[2 + i] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, x, tir_idx(A, 0)), tir_idx(A, k->w.in[i] - 1));
  }
  return tir_select(A, valid, te_read(c, k->data, k->data->ndim, src), tir_const(A, k->data->dtype, 0));
}

/* On CPU targets a convolution with padding reads a zero-padded copy of its data (tag "conv_pad", computed at
 * the kernel's top level by the conv template): taps then need no bounds test, so the ow loop vectorizes into
 * plain vector loads (a 3x3x3 conv3d with padding 1 ran 30x slower than without). The copy spans the positions
 * the taps read, (out-1)*s + (k-1)*d + 1 per spatial dim. */
static void conv_pad_stage(TeCtx *c, ConvCtx *k) {
  bool padded = false;
  for (int i = 0; i < k->w.nsp; i++) padded |= k->w.pb[i] > 0 || k->w.pe[i] > 0;
  if (!padded || !c->target || c->target->kind != TARGET_CPU) return;
  int64_t shape[MLC_MAX_DIMS] = {k->data->shape[0], k->data->shape[1]};
  for (int i = 0; i < k->w.nsp; i++)
    shape[2 + i] = (k->w.out[i] - 1) * k->w.strides[i] + (k->w.kernel[i] - 1) * k->w.dil[i] + 1;
  k->pad = te_compute(c, "conv_pad", "conv_pad", k->data->dtype, k->data->ndim, shape, conv_pad_body, k);
}

static Expr *conv_body(TeCtx *c, Expr **idx, void *user) {
  ConvCtx *k = user;
  Arena *A = c->arena;
  int nsp = k->w.nsp;
  IterVar *rax[4];
  rax[0] = te_reduce_axis(c, "rc", k->icpg);
  static const char *knames[3] = {"rx", "ry", "rz"};
  for (int i = 0; i < nsp; i++) rax[1 + i] = te_reduce_axis(c, knames[nsp == 1 ? 0 : i], k->w.kernel[i]);
  Expr *ic = ivref(c, rax[0]);
  Expr *chan = ic;
  if (k->w.groups > 1)
    chan = tir_add(A, tir_mul(A, tir_bin(A, E_FLOORDIV, idx[1], tir_idx(A, k->ocpg)), tir_idx(A, k->icpg)), ic);
  Expr *din[MLC_MAX_DIMS] = {idx[0], chan}, *win[MLC_MAX_DIMS] = {idx[1], ic};
  Expr *valid = NULL;
  Window w = k->w; /* reading the padded copy: no pads, and every tap in range */
  if (k->pad)
    for (int i = 0; i < nsp; i++) w.pb[i] = w.pe[i] = 0, w.in[i] = k->pad->shape[2 + i];
  for (int i = 0; i < nsp; i++) {
    Expr *kk = ivref(c, rax[1 + i]);
    win[2 + i] = kk;
    din[2 + i] = tap_index(c, &w, i, idx[2 + i], kk, &valid);
  }
  Expr *v = read_as(c, k->pad ? k->pad : k->data, din, k->acc);
  if (valid) v = tir_select(A, valid, v, tir_const(A, k->acc, 0));
  Expr *prod = tir_mul(A, v, read_as(c, k->weight, win, k->acc));
  return te_reduce(c, RED_SUM, prod, nsp + 1, rax, NULL, NULL);
}

static mlc_status conv_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ConvCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = conv_window(n, &k->w, d);
  if (st) return st;
  k->data = ins[0];
  k->weight = ins[1];
  k->ocpg = ins[1]->shape[0] / k->w.groups;
  k->icpg = ins[1]->shape[1];
  k->acc = acc_dtype(ins[0]->dtype);
  conv_pad_stage(c, k);
  const TensorType *o = &n->outputs[0]->type;
  static const char *tags[4] = {"", "conv1d_ncw", "conv2d_nchw", "conv3d_ncdhw"};
  TeTensor *t = te_compute(c, n->op->name + 3, tags[k->w.nsp], k->acc, o->ndim, o->dims, conv_body, k);
  outs[0] = topi_cast_stage(c, t, o->dtype);
  return MLC_OK;
}

/* ---------------------------------------------------------------- transposed convolution */

/* nn.conv{1,2,3}d_transpose(data[N, C, in...], weight[C, OC/groups, k...]) -> [N, OC, out...] with
 * out = s*(in-1) + output_padding + (k-1)*d + 1 - pb - pe. Each output element gathers the taps whose
 * input position (o + pb - k*d) / s is integral and in range (a gather form, so no scatter is needed). With
 * stride s > 1 and dilation 1 the reduction runs over the output's phase only (polyphase: taps (o + pb) mod s
 * + m*s, m < ceil(k / s)) instead of every tap with a divisibility test, s times less work per dim. */
static mlc_status convt_window(const Node *n, Window *w, int64_t *opad, Diag *d) {
  const char *name = n->op->name;
  int nsp = name[strlen("nn.conv")] - '0';
  const TensorType *x = &n->inputs[0]->type, *k = &n->inputs[1]->type;
  if (x->ndim != nsp + 2 || k->ndim != nsp + 2)
    return diag_set(d, MLC_ERR_INVALID, "%s expects rank-%d data and weight, got ranks %d and %d", name, nsp + 2,
                    x->ndim, k->ndim);
  mlc_status st = window_attrs(n, nsp, false, w, d);
  if (st) return st;
  if ((st = spatial_attr(n, "output_padding", nsp, 0, opad, d))) return st;
  for (int i = 0; i < nsp; i++) {
    w->in[i] = x->dims[2 + i];
    w->kernel[i] = k->dims[2 + i];
    w->out[i] = w->strides[i] * (w->in[i] - 1) + opad[i] + (w->kernel[i] - 1) * w->dil[i] + 1 - w->pb[i] - w->pe[i];
    if (w->out[i] < 1) return diag_set(d, MLC_ERR_INVALID, "%s: output size %lld < 1", name, (long long)w->out[i]);
  }
  return MLC_OK;
}

static mlc_status convt_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *k = &n->inputs[1]->type;
  if (!is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "transposed convolution of %s is not supported (float types only)",
                    mlc_dtype_name(x->dtype));
  if (k->dtype != x->dtype) return diag_set(d, MLC_ERR_INVALID, "weight dtype differs from data dtype");
  Window w;
  int64_t opad[3];
  mlc_status st = convt_window(n, &w, opad, d);
  if (st) return st;
  if (w.groups < 1 || x->dims[1] != k->dims[0] || x->dims[1] % w.groups)
    return diag_set(d, MLC_ERR_INVALID, "channels do not match: data has %lld channels, weight %lld, groups %lld",
                    (long long)x->dims[1], (long long)k->dims[0], (long long)w.groups);
  TensorType o = {.dtype = x->dtype, .ndim = x->ndim};
  o.dims[0] = x->dims[0];
  o.dims[1] = k->dims[1] * w.groups;
  for (int i = 0; i < w.nsp; i++) o.dims[2 + i] = w.out[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

static Expr *convt_body(TeCtx *c, Expr **idx, void *user) {
  ConvCtx *k = user;
  Arena *A = c->arena;
  int nsp = k->w.nsp;
  IterVar *rax[4];
  rax[0] = te_reduce_axis(c, "rc", k->icpg);
  static const char *knames[3] = {"rx", "ry", "rz"};
  bool phased[3];
  for (int i = 0; i < nsp; i++) {
    phased[i] = k->w.strides[i] > 1 && k->w.dil[i] == 1;
    int64_t taps = phased[i] ? (k->w.kernel[i] + k->w.strides[i] - 1) / k->w.strides[i] : k->w.kernel[i];
    rax[1 + i] = te_reduce_axis(c, knames[i], taps);
  }
  Expr *ic = ivref(c, rax[0]);
  Expr *grp = k->w.groups > 1 ? tir_bin(A, E_FLOORDIV, idx[1], tir_idx(A, k->ocpg)) : NULL;
  Expr *chan = grp ? tir_add(A, tir_mul(A, grp, tir_idx(A, k->icpg)), ic) : ic;
  Expr *ocl = grp ? tir_bin(A, E_FLOORMOD, idx[1], tir_idx(A, k->ocpg)) : idx[1];
  Expr *din[MLC_MAX_DIMS] = {idx[0], chan}, *win[MLC_MAX_DIMS] = {chan, ocl};
  Expr *valid = NULL;
  for (int i = 0; i < nsp; i++) {
    if (phased[i]) {
      /* tap kk = phase + m*s, phase = (o + pb) mod s, reads input (o + pb) / s - m: the taps of the output's
       * phase only (t >= 0 always, since pads are >= 0) */
      Expr *s = tir_idx(A, k->w.strides[i]), *m = ivref(c, rax[1 + i]);
      Expr *t = tir_add(A, idx[2 + i], tir_idx(A, k->w.pb[i]));
      Expr *kk = tir_add(A, tir_bin(A, E_FLOORMOD, t, s), tir_mul(A, m, s));
      Expr *q = tir_sub(A, tir_bin(A, E_FLOORDIV, t, s), m);
      Expr *cond = tir_bin(A, E_AND, tir_bin(A, E_LT, kk, tir_idx(A, k->w.kernel[i])),
                           tir_bin(A, E_AND, tir_bin(A, E_GE, q, tir_idx(A, 0)), tir_bin(A, E_LT, q, tir_idx(A, k->w.in[i]))));
      win[2 + i] = tir_bin(A, E_MIN, kk, tir_idx(A, k->w.kernel[i] - 1));
      din[2 + i] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, q, tir_idx(A, 0)), tir_idx(A, k->w.in[i] - 1));
      valid = valid ? tir_bin(A, E_AND, valid, cond) : cond;
      continue;
    }
    Expr *kk = ivref(c, rax[1 + i]);
    win[2 + i] = kk;
    Expr *t = tir_sub(A, tir_add(A, idx[2 + i], tir_idx(A, k->w.pb[i])), tir_mul(A, kk, tir_idx(A, k->w.dil[i])));
    Expr *q = t, *cond = tir_bin(A, E_GE, t, tir_idx(A, 0));
    if (k->w.strides[i] > 1) {
      Expr *s = tir_idx(A, k->w.strides[i]);
      cond = tir_bin(A, E_AND, cond, tir_bin(A, E_EQ, tir_bin(A, E_FLOORMOD, t, s), tir_idx(A, 0)));
      q = tir_bin(A, E_FLOORDIV, t, s);
    }
    cond = tir_bin(A, E_AND, cond, tir_bin(A, E_LT, q, tir_idx(A, k->w.in[i])));
    din[2 + i] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, q, tir_idx(A, 0)), tir_idx(A, k->w.in[i] - 1));
    valid = valid ? tir_bin(A, E_AND, valid, cond) : cond;
  }
  Expr *v = tir_select(A, valid, read_as(c, k->data, din, k->acc), tir_const(A, k->acc, 0));
  Expr *prod = tir_mul(A, v, read_as(c, k->weight, win, k->acc));
  return te_reduce(c, RED_SUM, prod, nsp + 1, rax, NULL, NULL);
}

static mlc_status convt_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ConvCtx *k = arena_alloc(c->arena, sizeof *k);
  int64_t opad[3];
  mlc_status st = convt_window(n, &k->w, opad, d);
  if (st) return st;
  k->data = ins[0];
  k->weight = ins[1];
  k->icpg = ins[0]->shape[1] / k->w.groups;
  k->ocpg = ins[1]->shape[1];
  k->acc = acc_dtype(ins[0]->dtype);
  const TensorType *o = &n->outputs[0]->type;
  TeTensor *t = te_compute(c, n->op->name + 3, "conv_transpose", k->acc, o->ndim, o->dims, convt_body, k);
  outs[0] = topi_cast_stage(c, t, o->dtype);
  return MLC_OK;
}

/* ---------------------------------------------------------------- pooling */

typedef enum PoolKind { POOL_MAX, POOL_AVG, POOL_LP } PoolKind;

static PoolKind pool_kind(const Node *n) {
  const char *s = n->op->name + 3;
  return s[0] == 'm' ? POOL_MAX : s[0] == 'a' ? POOL_AVG : POOL_LP;
}

/* data_block b (set by ConvertLayoutNCHWc on a 2-D max/avg pool of float32 between packed convs): the data is
 * NCHWc [N, C/b, H, W, b] and so is the output; the block is one more trailing axis the window ignores */
static int64_t pool_block(const Node *n) { return ir_attr_int(n, "data_block", 0); }

static mlc_status pool_window(const Node *n, Window *w, Diag *d) {
  const char *name = n->op->name;
  int nsp = name[strlen(name) - 2] - '0';
  const TensorType *x = &n->inputs[0]->type;
  int64_t b = pool_block(n);
  if (b && (nsp != 2 || x->dtype != MLC_F32 || pool_kind(n) == POOL_LP || x->ndim != 5 || x->dims[4] != b))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: data_block %lld needs float32 [N, C/b, H, W, b] data of a 2-D "
                    "max or average pool", name, (long long)b);
  if (x->ndim != nsp + 2 + (b ? 1 : 0))
    return diag_set(d, MLC_ERR_INVALID, "%s expects rank-%d data, got rank %d", name, nsp + 2, x->ndim);
  mlc_status st = window_attrs(n, nsp, true, w, d);
  if (st) return st;
  for (int i = 0; i < nsp; i++) w->in[i] = x->dims[2 + i];
  return window_out(w, d);
}

static mlc_status pool_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  PoolKind pk = pool_kind(n);
  if (x->dtype == MLC_BOOL || (pk != POOL_MAX && !is_float(x->dtype)) || !mlc_dtype_size(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(x->dtype));
  Window w;
  mlc_status st = pool_window(n, &w, d);
  if (st) return st;
  TensorType o = *x;
  for (int i = 0; i < w.nsp; i++) o.dims[2 + i] = w.out[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct PoolCtx {
  Window w;
  PoolKind kind;
  TeTensor *data;
  TeTensor *pad;   /* the padded input (pool_pad_stage), or NULL: the taps read data in range */
  int64_t pshape[MLC_MAX_DIMS];
  bool phase_split; /* pad's last spatial dim is [stride, width / stride]: see pool_pad_stage */
  bool blocked;     /* NCHWc data (pool_block): one trailing channel-lane axis after the spatial dims */
  mlc_dtype acc;
  bool count_include_pad;
  double p;
} PoolCtx;

/* Number of taps of the window at output index o along dim i that lie in [lo, hi): closed form
 * max(0, min(K, ceil((hi - start) / d)) - max(0, ceil((lo - start) / d))) with start = o*s - pb. */
static Expr *tap_count(TeCtx *c, const Window *w, int i, Expr *o, int64_t lo, int64_t hi) {
  Arena *A = c->arena;
  int64_t dl = w->dil[i];
  Expr *start = tir_sub(A, tir_mul(A, o, tir_idx(A, w->strides[i])), tir_idx(A, w->pb[i]));
  Expr *khi = tir_bin(A, E_FLOORDIV, tir_sub(A, tir_idx(A, hi + dl - 1), start), tir_idx(A, dl));
  khi = tir_bin(A, E_MIN, khi, tir_idx(A, w->kernel[i]));
  Expr *klo = tir_bin(A, E_FLOORDIV, tir_sub(A, tir_idx(A, lo + dl - 1), start), tir_idx(A, dl));
  klo = tir_bin(A, E_MAX, klo, tir_idx(A, 0));
  return tir_bin(A, E_MAX, tir_sub(A, khi, klo), tir_idx(A, 0));
}

/* The pad value of a pool: what an out-of-range tap contributes (the identity of its reduction). */
static Expr *pool_pad_value(TeCtx *c, const PoolCtx *k, mlc_dtype t) {
  return k->kind == POOL_MAX ? tir_min_value(c->arena, t) : tir_const(c->arena, t, 0);
}

static Expr *pool_pad_body(TeCtx *c, Expr **idx, void *user) {
  PoolCtx *k = user;
  Arena *A = c->arena;
  int nsp = k->w.nsp;
  Expr *din[MLC_MAX_DIMS + 1] = {idx[0], idx[1]}, *valid = NULL;
  if (k->blocked) din[2 + nsp] = idx[2 + nsp];
  for (int i = 0; i < nsp; i++) {
    Expr *x = idx[2 + i];
    int64_t ext = k->pshape[2 + i];
    if (k->phase_split && i == nsp - 1) { /* [.., phase, j]: column j * stride + phase */
      x = tir_add(A, tir_mul(A, idx[3 + i], tir_idx(A, k->w.strides[i])), idx[2 + i]);
      ext = k->pshape[3 + i] * k->w.strides[i];
    }
    if (k->w.pb[i]) x = tir_sub(A, x, tir_idx(A, k->w.pb[i]));
    bool lo = k->w.pb[i] > 0, hi = ext - k->w.pb[i] > k->w.in[i];
    Expr *cond = lo ? tir_bin(A, E_GE, x, tir_idx(A, 0)) : NULL;
    if (hi) {
      Expr *h = tir_bin(A, E_LT, x, tir_idx(A, k->w.in[i]));
      cond = cond ? tir_bin(A, E_AND, cond, h) : h;
    }
    if (cond) valid = valid ? tir_bin(A, E_AND, valid, cond) : cond;
    if (lo) x = tir_bin(A, E_MAX, x, tir_idx(A, 0));
    if (hi) x = tir_bin(A, E_MIN, x, tir_idx(A, k->w.in[i] - 1));
    din[2 + i] = x;
  }
  Expr *v = te_read(c, k->data, k->data->ndim, din);
  return valid ? tir_select(A, valid, v, pool_pad_value(c, k, k->data->dtype)) : v;
}

/* The padded input of a pool, so that the window loop reads every tap unconditionally: the input
 * surrounded by the pad value (the leading pads, and at the end whatever the last window reaches: the
 * trailing pads, ceil_mode's extra window). When the last spatial stride s is > 1 that dim is stored phase
 * split, [s, ceil(width / s)] with column x at [x % s, x / s], so that the taps of consecutive outputs are
 * consecutive elements and the output row vectorizes with plain vector loads. NULL when no tap can fall
 * outside the input and the last stride is 1 (the taps read the input directly). */
static TeTensor *pool_pad_stage(TeCtx *c, PoolCtx *k) {
  const Window *w = &k->w;
  int nsp = w->nsp;
  bool need = w->strides[nsp - 1] > 1;
  k->pshape[0] = k->data->shape[0];
  k->pshape[1] = k->data->shape[1];
  for (int i = 0; i < nsp; i++) {
    int64_t reach = (w->out[i] - 1) * w->strides[i] + (w->kernel[i] - 1) * w->dil[i] + 1;
    need |= w->pb[i] > 0 || reach > w->pb[i] + w->in[i];
    k->pshape[2 + i] = reach;
  }
  if (!need) return NULL;
  int nd = 2 + nsp;
  int64_t s = w->strides[nsp - 1];
  if (k->blocked) { /* taps are whole vectors of the channel block: no phase split, padding only */
    if (!w->pb[0] && !w->pb[1] && k->pshape[2] <= w->pb[0] + w->in[0] && k->pshape[3] <= w->pb[1] + w->in[1])
      return NULL;
    k->pshape[2 + nsp] = k->data->shape[2 + nsp];
    return te_compute(c, "pool_pad", "pool_pad", k->data->dtype, nd + 1, k->pshape, pool_pad_body, k);
  }
  k->phase_split = s > 1;
  if (k->phase_split) {
    int64_t reach = k->pshape[1 + nsp];
    k->pshape[1 + nsp] = s;
    k->pshape[2 + nsp] = (reach + s - 1) / s;
    nd++;
  }
  return te_compute(c, "pool_pad", "pool_pad", k->data->dtype, nd, k->pshape, pool_pad_body, k);
}

static Expr *pool_body(TeCtx *c, Expr **idx, void *user) {
  PoolCtx *k = user;
  Arena *A = c->arena;
  int nsp = k->w.nsp;
  IterVar *rax[3];
  static const char *knames[3] = {"rx", "ry", "rz"};
  for (int i = 0; i < nsp; i++) rax[i] = te_reduce_axis(c, knames[i], k->w.kernel[i]);
  Expr *din[MLC_MAX_DIMS + 1] = {idx[0], idx[1]};
  Expr *valid = NULL, *v;
  if (k->blocked) din[2 + nsp] = idx[2 + nsp];
  if (k->pad) {
    for (int i = 0; i < nsp; i++) {
      Expr *tap = tir_mul(A, ivref(c, rax[i]), tir_idx(A, k->w.dil[i])), *s = tir_idx(A, k->w.strides[i]);
      if (k->phase_split && i == nsp - 1) { /* column o*s + tap: phase tap % s, o + tap / s */
        din[2 + i] = tir_bin(A, E_FLOORMOD, tap, s);
        din[3 + i] = tir_add(A, idx[2 + i], tir_bin(A, E_FLOORDIV, tap, s));
      } else {
        din[2 + i] = tir_add(A, tir_mul(A, idx[2 + i], s), tap);
      }
    }
    v = read_as(c, k->pad, din, k->acc);
  } else {
    for (int i = 0; i < nsp; i++) din[2 + i] = tap_index(c, &k->w, i, idx[2 + i], ivref(c, rax[i]), &valid);
    v = read_as(c, k->data, din, k->acc);
  }
  if (k->kind == POOL_MAX) {
    if (valid) v = tir_select(A, valid, v, tir_min_value(A, k->acc));
    return te_reduce(c, RED_MAX, v, nsp, rax, NULL, NULL);
  }
  if (k->kind == POOL_LP) {
    if (k->p == 2) {
      v = tir_mul(A, v, v);
    } else {
      Expr *args[2] = {tir_call(A, INTRIN_FABS, k->acc, 1, &v), tir_const(A, k->acc, k->p)};
      v = tir_call(A, INTRIN_POW, k->acc, 2, args);
    }
    if (valid) v = tir_select(A, valid, v, tir_const(A, k->acc, 0));
    return te_reduce(c, RED_SUM, v, nsp, rax, NULL, NULL);
  }
  /* average: each tap scaled by 1 / (number of counted taps), a function of the output index only */
  Expr *count = NULL;
  for (int i = 0; i < nsp; i++) {
    int64_t lo = k->count_include_pad ? -k->w.pb[i] : 0;
    int64_t hi = k->count_include_pad ? k->w.in[i] + k->w.pe[i] : k->w.in[i];
    Expr *ci = tap_count(c, &k->w, i, idx[2 + i], lo, hi);
    count = count ? tir_mul(A, count, ci) : ci;
  }
  Expr *inv = tir_bin(A, E_DIV, tir_const(A, k->acc, 1),
                      tir_cast(A, k->acc, tir_bin(A, E_MAX, count, tir_idx(A, 1))));
  if (valid) v = tir_select(A, valid, v, tir_const(A, k->acc, 0));
  return te_reduce(c, RED_SUM, tir_mul(A, v, inv), nsp, rax, NULL, NULL);
}

typedef struct RootCtx {
  TeTensor *src;
  double p;
  mlc_dtype to;
} RootCtx;

static Expr *lp_root_body(TeCtx *c, Expr **idx, void *user) {
  RootCtx *k = user;
  Arena *A = c->arena;
  Expr *v = te_read(c, k->src, k->src->ndim, idx);
  if (k->p == 2) {
    v = tir_call(A, INTRIN_SQRT, v->dtype, 1, &v);
  } else {
    Expr *args[2] = {v, tir_const(A, v->dtype, 1.0 / k->p)};
    v = tir_call(A, INTRIN_POW, v->dtype, 2, args);
  }
  return v->dtype == k->to ? v : tir_cast(A, k->to, v);
}

static TeTensor *lp_root(TeCtx *c, TeTensor *t, double p, mlc_dtype to) {
  RootCtx *k = arena_alloc(c->arena, sizeof *k);
  k->src = t;
  k->p = p;
  k->to = to;
  return te_compute(c, "lp_root", "elemwise", to, t->ndim, t->shape, lp_root_body, k);
}

static mlc_status pool_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  PoolCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = pool_window(n, &k->w, d);
  if (st) return st;
  k->kind = pool_kind(n);
  k->data = ins[0];
  k->blocked = pool_block(n) != 0;
  k->acc = acc_dtype(ins[0]->dtype);
  k->count_include_pad = ir_attr_int(n, "count_include_pad", 0) != 0;
  k->p = (double)ir_attr_int(n, "p", 2);
  k->pad = pool_pad_stage(c, k);
  const TensorType *o = &n->outputs[0]->type;
  TeTensor *t = te_compute(c, n->op->name + 3, "pool", k->acc, o->ndim, o->dims, pool_body, k);
  outs[0] = k->kind == POOL_LP ? lp_root(c, t, k->p, o->dtype) : topi_cast_stage(c, t, o->dtype);
  return MLC_OK;
}

/* nn.max_pool_indices(data[N, C, in...], pooled[N, C, out...]) -> int64 [N, C, out...]: MaxPool's Indices
 * output, the flat index into data of the element each window's max (pooled: the max pool's own output) came
 * from: the first such tap in window order, as the ONNX reference scans it; taps in the padding never count.
 * Attributes as nn.max_pool{1,2,3}d plus storage_order (0: the spatial part of the index row-major, 1:
 * column-major; the (n, c) part is (n*C + c) * prod(in) either way). Two stages: the smallest tap number
 * t = k0*K1*K2 + k1*K2 + k2 whose tap equals the max (a min reduction under a condition: window order is
 * row-major order, so it is the first), and an elementwise decode of t into the index. A separate op reading
 * the pool's result, so a MaxPool without the Indices output keeps its single-output kernel. */
static mlc_status pool_indices_window(const Node *n, Window *w, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  int nsp = x->ndim - 2;
  if (nsp < 1 || nsp > 3)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s on rank-%d data is not supported (1-D to 3-D)", n->op->name, x->ndim);
  mlc_status st = window_attrs(n, nsp, true, w, d);
  if (st) return st;
  for (int i = 0; i < nsp; i++) w->in[i] = x->dims[2 + i];
  return window_out(w, d);
}

static mlc_status pool_indices_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (x->dtype == MLC_BOOL || x->dtype == MLC_STRING || !mlc_dtype_size(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(x->dtype));
  int64_t so = ir_attr_int(n, "storage_order", 0);
  if (so != 0 && so != 1) return diag_set(d, MLC_ERR_INVALID, "storage_order must be 0 or 1, got %lld", (long long)so);
  Window w;
  mlc_status st = pool_indices_window(n, &w, d);
  if (st) return st;
  TensorType o = *x;
  for (int i = 0; i < w.nsp; i++) o.dims[2 + i] = w.out[i];
  if (!tt_equal(&o, &n->inputs[1]->type))
    return diag_set(d, MLC_ERR_INVALID, "%s: the pooled input must be the max pool of the data", n->op->name);
  o.dtype = MLC_I64;
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct PoolIndicesCtx {
  Window w;
  TeTensor *data, *pooled, *tap;
  mlc_dtype acc;
  bool column_major;
} PoolIndicesCtx;

/* the taps of output idx: reduce axes, data indices (clamped) and the "inside the input" condition */
static Expr *pool_indices_taps(TeCtx *c, PoolIndicesCtx *k, Expr **idx, IterVar **rax, Expr **valid) {
  static const char *knames[3] = {"rx", "ry", "rz"};
  Expr *din[MLC_MAX_DIMS] = {idx[0], idx[1]};
  *valid = NULL;
  for (int i = 0; i < k->w.nsp; i++) {
    rax[i] = te_reduce_axis(c, knames[i], k->w.kernel[i]);
    din[2 + i] = tap_index(c, &k->w, i, idx[2 + i], ivref(c, rax[i]), valid);
  }
  return read_as(c, k->data, din, k->acc);
}

static Expr *pool_indices_tap_body(TeCtx *c, Expr **idx, void *user) {
  PoolIndicesCtx *k = user;
  Arena *A = c->arena;
  IterVar *rax[3];
  Expr *valid, *v = pool_indices_taps(c, k, idx, rax, &valid);
  Expr *t = NULL;
  for (int i = 0; i < k->w.nsp; i++) {
    Expr *ki = ivref(c, rax[i]);
    t = t ? tir_add(A, tir_mul(A, t, tir_idx(A, k->w.kernel[i])), ki) : ki;
  }
  Expr *cond = tir_bin(A, E_EQ, v, read_as(c, k->pooled, idx, k->acc));
  if (valid) cond = tir_bin(A, E_AND, valid, cond);
  return te_reduce(c, RED_MIN, t, k->w.nsp, rax, NULL, cond);
}

static Expr *pool_indices_body(TeCtx *c, Expr **idx, void *user) {
  PoolIndicesCtx *k = user;
  Arena *A = c->arena;
  int nsp = k->w.nsp;
  int64_t ntaps = 1, plane = 1;
  for (int i = 0; i < nsp; i++) ntaps *= k->w.kernel[i], plane *= k->w.in[i];
  /* a window where no tap matched (its max is NaN): its first tap, clamped into the input */
  Expr *t = te_read(c, k->tap, k->tap->ndim, idx);
  t = tir_select(A, tir_bin(A, E_LT, t, tir_idx(A, ntaps)), t, tir_idx(A, 0));
  Expr *pos[3];
  int64_t rest = ntaps;
  for (int i = 0; i < nsp; i++) {
    rest /= k->w.kernel[i];
    Expr *ki = tir_bin(A, E_FLOORMOD, tir_bin(A, E_FLOORDIV, t, tir_idx(A, rest)), tir_idx(A, k->w.kernel[i]));
    Expr *p = tir_sub(A, tir_add(A, tir_mul(A, idx[2 + i], tir_idx(A, k->w.strides[i])),
                                 tir_mul(A, ki, tir_idx(A, k->w.dil[i]))), tir_idx(A, k->w.pb[i]));
    pos[i] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, p, tir_idx(A, 0)), tir_idx(A, k->w.in[i] - 1));
  }
  Expr *flat = tir_idx(A, 0);
  if (k->column_major) {
    for (int i = nsp - 1; i >= 0; i--) flat = tir_add(A, tir_mul(A, flat, tir_idx(A, k->w.in[i])), pos[i]);
  } else {
    for (int i = 0; i < nsp; i++) flat = tir_add(A, tir_mul(A, flat, tir_idx(A, k->w.in[i])), pos[i]);
  }
  Expr *nc = tir_add(A, tir_mul(A, idx[0], tir_idx(A, k->data->shape[1])), idx[1]);
  return tir_add(A, tir_mul(A, nc, tir_idx(A, plane)), flat);
}

static mlc_status pool_indices_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  PoolIndicesCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = pool_indices_window(n, &k->w, d);
  if (st) return st;
  k->data = ins[0];
  k->pooled = ins[1];
  k->acc = acc_dtype(ins[0]->dtype);
  k->column_major = ir_attr_int(n, "storage_order", 0) == 1;
  const TensorType *o = &n->outputs[0]->type;
  k->tap = te_compute(c, "max_pool_indices_tap", "reduce", MLC_I64, o->ndim, o->dims, pool_indices_tap_body, k);
  outs[0] = te_compute(c, "max_pool_indices", "elemwise", MLC_I64, o->ndim, o->dims, pool_indices_body, k);
  return MLC_OK;
}

/* Global pools reduce every dim after the channel dim; output keeps them as 1. */
/* data_block b (set by ConvertLayoutNCHWc on a global pool of float32 NCHWc data): the data is [N, C/b, H, W, b]
 * and the result the NCHW [N, C, 1, 1] of the same channels, so the blocked region ends at the pool */
static mlc_status gpool_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  bool is_max = strstr(n->op->name, "max") != NULL;
  int64_t b = pool_block(n);
  if (x->ndim < 3) return diag_set(d, MLC_ERR_INVALID, "%s expects rank >= 3, got %d", n->op->name, x->ndim);
  if (x->dtype == MLC_BOOL || (!is_max && !is_float(x->dtype)) || !mlc_dtype_size(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(x->dtype));
  if (b && (b < 0 || x->ndim != 5 || x->dims[4] != b || x->dtype != MLC_F32))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: data_block %lld needs float32 [N, C/b, H, W, b] data",
                    n->op->name, (long long)b);
  TensorType o = *x;
  if (b) o.ndim = 4, o.dims[1] = x->dims[1] * b;
  for (int i = 2; i < o.ndim; i++) o.dims[i] = 1;
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct GPoolCtx {
  TeTensor *data;
  PoolKind kind;
  mlc_dtype acc;
  double p;
  int64_t block; /* data_block */
  /* the row form of NCHW data on a CPU (gpool_rows): the spatial dims read as one flat row of `count`
   * elements, `lanes` partials over its first `kmain`, the rest summed by `tail` */
  int64_t lanes, kmain, count;
  TeTensor *part, *tail, *sum;
} GPoolCtx;

/* one element of a global pool's input, transformed for the reduction (|x|^p of an Lp pool) */
static Expr *gpool_elem(TeCtx *c, GPoolCtx *k, Expr **din) {
  Arena *A = c->arena;
  Expr *v = read_as(c, k->data, din, k->acc);
  if (k->kind != POOL_LP) return v;
  if (k->p == 2) return tir_mul(A, v, v);
  Expr *args[2] = {tir_call(A, INTRIN_FABS, k->acc, 1, &v), tir_const(A, k->acc, k->p)};
  return tir_call(A, INTRIN_POW, k->acc, 2, args);
}

/* [n, c, spatial(f)] for the flat spatial index f of NCHW data (1-D or 2-D) */
static void gpool_flat_index(TeCtx *c, GPoolCtx *k, Expr *n, Expr *ch, Expr *f, Expr **din) {
  Arena *A = c->arena;
  din[0] = n;
  din[1] = ch;
  if (k->data->ndim == 3) {
    din[2] = f;
    return;
  }
  Expr *w = tir_idx(A, k->data->shape[3]);
  din[2] = tir_bin(A, E_FLOORDIV, f, w);
  din[3] = tir_bin(A, E_FLOORMOD, f, w);
}

/* part[n, c, l]: the pool of elements j * lanes + l of the row, j < kmain / lanes */
static Expr *gpool_part_body(TeCtx *c, Expr **idx, void *user) {
  GPoolCtx *k = user;
  Arena *A = c->arena;
  IterVar *j = te_reduce_axis(c, "rj", k->kmain / k->lanes);
  Expr *din[4], *f = tir_add(A, tir_mul(A, ivref(c, j), tir_idx(A, k->lanes)), idx[2]);
  gpool_flat_index(c, k, idx[0], idx[1], f, din);
  return te_reduce(c, k->kind == POOL_MAX ? RED_MAX : RED_SUM, gpool_elem(c, k, din), 1, &j, NULL, NULL);
}

/* tail[n, c]: the pool of the row's elements from kmain on */
static Expr *gpool_tail_body(TeCtx *c, Expr **idx, void *user) {
  GPoolCtx *k = user;
  Arena *A = c->arena;
  IterVar *t = te_reduce_axis(c, "rt", k->count - k->kmain);
  Expr *din[4];
  gpool_flat_index(c, k, idx[0], idx[1], tir_add(A, ivref(c, t), tir_idx(A, k->kmain)), din);
  return te_reduce(c, k->kind == POOL_MAX ? RED_MAX : RED_SUM, gpool_elem(c, k, din), 1, &t, NULL, NULL);
}

/* the output's [n, c, 1..]: the partials combined (starting from the tail) */
static Expr *gpool_combine_body(TeCtx *c, Expr **idx, void *user) {
  GPoolCtx *k = user;
  IterVar *l = te_reduce_axis(c, "rl", k->lanes);
  Expr *pi[3] = {idx[0], idx[1], ivref(c, l)};
  Expr *init = k->tail ? te_read(c, k->tail, 2, idx) : NULL;
  return te_reduce(c, k->kind == POOL_MAX ? RED_MAX : RED_SUM, te_read(c, k->part, 3, pi), 1, &l, init, NULL);
}

static Expr *gpool_mean_body(TeCtx *c, Expr **idx, void *user) {
  GPoolCtx *k = user;
  return tir_mul(c->arena, te_read(c, k->sum, k->sum->ndim, idx), tir_const(c->arena, k->acc, 1.0 / (double)k->count));
}

/* The row form of a global pool of NCHW data (1-D or 2-D) on a CPU, when a row holds at least a vector: each
 * (n, c) row is walked in contiguous vectors into a vector of partials (tag "reduce_partial", which the generic
 * schedule vectorizes), instead of one scalar chain per row. NULL when it does not apply. */
static TeTensor *gpool_rows(TeCtx *c, GPoolCtx *k, const TensorType *o) {
  const TeTensor *x = k->data;
  if (!c->target || c->target->kind != TARGET_CPU || k->block || (x->ndim != 3 && x->ndim != 4) ||
      k->acc != x->dtype || (k->acc != MLC_F32 && k->acc != MLC_F64))
    return NULL;
  k->count = x->shape[2] * (x->ndim == 4 ? x->shape[3] : 1);
  k->lanes = topi_vector_lanes(c->target, k->acc);
  if (k->lanes < 2 || k->count < k->lanes) return NULL;
  k->kmain = k->count / k->lanes * k->lanes;
  int64_t pshape[3] = {x->shape[0], x->shape[1], k->lanes};
  k->part = te_compute(c, "gpool_part", "reduce_partial", k->acc, 3, pshape, gpool_part_body, k);
  k->tail = k->kmain < k->count ? te_compute(c, "gpool_tail", "reduce", k->acc, 2, pshape, gpool_tail_body, k) : NULL;
  TeTensor *t = te_compute(c, "gpool_sum", "reduce", k->acc, o->ndim, o->dims, gpool_combine_body, k);
  if (k->kind != POOL_AVG) return t;
  k->sum = t;
  return te_compute(c, "global_avg_pool2d", "elemwise", k->acc, o->ndim, o->dims, gpool_mean_body, k);
}

static Expr *gpool_body(TeCtx *c, Expr **idx, void *user) {
  GPoolCtx *k = user;
  Arena *A = c->arena;
  int nd = k->data->ndim - (k->block ? 1 : 0); /* spatial dims end here */
  IterVar *rax[MLC_MAX_DIMS];
  Expr *din[MLC_MAX_DIMS] = {idx[0], idx[1]};
  if (k->block) {
    din[1] = tir_bin(A, E_FLOORDIV, idx[1], tir_idx(A, k->block));
    din[nd] = tir_bin(A, E_FLOORMOD, idx[1], tir_idx(A, k->block));
  }
  int64_t count = 1;
  for (int i = 2; i < nd; i++) {
    rax[i - 2] = te_reduce_axis(c, arena_printf(A, "r%d", i - 2), k->data->shape[i]);
    din[i] = ivref(c, rax[i - 2]);
    count *= k->data->shape[i];
  }
  Expr *v = read_as(c, k->data, din, k->acc);
  if (k->kind == POOL_MAX) return te_reduce(c, RED_MAX, v, nd - 2, rax, NULL, NULL);
  if (k->kind == POOL_LP) {
    if (k->p == 2) {
      v = tir_mul(A, v, v);
    } else {
      Expr *args[2] = {tir_call(A, INTRIN_FABS, k->acc, 1, &v), tir_const(A, k->acc, k->p)};
      v = tir_call(A, INTRIN_POW, k->acc, 2, args);
    }
    return te_reduce(c, RED_SUM, v, nd - 2, rax, NULL, NULL);
  }
  return te_reduce(c, RED_SUM, tir_mul(A, v, tir_const(A, k->acc, 1.0 / (double)(count ? count : 1))), nd - 2,
                   rax, NULL, NULL);
}

static mlc_status gpool_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  GPoolCtx *k = arena_alloc(c->arena, sizeof *k);
  k->data = ins[0];
  k->kind = strstr(n->op->name, "max") ? POOL_MAX : strstr(n->op->name, "lp") ? POOL_LP : POOL_AVG;
  k->acc = acc_dtype(ins[0]->dtype);
  k->p = (double)ir_attr_int(n, "p", 2);
  k->block = pool_block(n);
  const TensorType *o = &n->outputs[0]->type;
  TeTensor *t = gpool_rows(c, k, o);
  if (!t) t = te_compute(c, n->op->name + 3, "pool", k->acc, o->ndim, o->dims, gpool_body, k);
  outs[0] = k->kind == POOL_LP ? lp_root(c, t, k->p, o->dtype) : topi_cast_stage(c, t, o->dtype);
  return MLC_OK;
}

/* ---------------------------------------------------------------- dense and matmul */

static bool matmul_dtype_ok(mlc_dtype t) { return t != MLC_BOOL && t != MLC_STRING && mlc_dtype_size(t) > 0; }

/* nn.dense(data[..., K], weight[N, K]) -> [..., N] */
static mlc_status dense_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *w = &n->inputs[1]->type;
  if (!matmul_dtype_ok(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.dense of %s is not supported", mlc_dtype_name(x->dtype));
  if (x->ndim < 1 || w->ndim != 2 || x->dims[x->ndim - 1] != w->dims[1] || w->dtype != x->dtype)
    return diag_set(d, MLC_ERR_INVALID, "nn.dense: data and weight do not match (weight must be [N, K])");
  TensorType o = *x;
  o.dims[o.ndim - 1] = w->dims[0];
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct MatmulCtx {
  TeTensor *a, *b;
  bool ta, tb;
  bool dense;
  int64_t k;
  int out_ndim;
  mlc_dtype acc;
} MatmulCtx;

static Expr *matmul_body(TeCtx *c, Expr **idx, void *user) {
  MatmulCtx *m = user;
  IterVar *rk = te_reduce_axis(c, "rk", m->k);
  Expr *k = ivref(c, rk);
  Expr *ai[MLC_MAX_DIMS], *bi[MLC_MAX_DIMS];
  int ra = m->a->ndim, rb = m->b->ndim, ro = m->out_ndim;
  if (m->dense) {
    for (int i = 0; i < ra - 1; i++) ai[i] = idx[i];
    ai[ra - 1] = k;
    bi[0] = idx[ro - 1];
    bi[1] = k;
  } else {
    /* output: batch..., [m if ra > 1], [n if rb > 1] */
    int has_m = ra > 1, has_n = rb > 1;
    int nb = ro - has_m - has_n;
    Expr *mi = has_m ? idx[nb] : NULL, *ni = has_n ? idx[nb + has_m] : NULL;
    if (ra == 1) {
      ai[0] = k;
    } else {
      for (int i = 0; i < ra - 2; i++) {
        int o = nb - (ra - 2) + i;
        ai[i] = m->a->shape[i] == 1 ? tir_idx(c->arena, 0) : idx[o];
      }
      ai[ra - 2] = m->ta ? k : mi;
      ai[ra - 1] = m->ta ? mi : k;
    }
    if (rb == 1) {
      bi[0] = k;
    } else {
      for (int i = 0; i < rb - 2; i++) {
        int o = nb - (rb - 2) + i;
        bi[i] = m->b->shape[i] == 1 ? tir_idx(c->arena, 0) : idx[o];
      }
      bi[rb - 2] = m->tb ? ni : k;
      bi[rb - 1] = m->tb ? k : ni;
    }
  }
  Expr *prod = tir_mul(c->arena, read_as(c, m->a, ai, m->acc), read_as(c, m->b, bi, m->acc));
  return te_reduce(c, RED_SUM, prod, 1, &rk, NULL, NULL);
}

/* numpy matmul shape rule with optional transposes of the last two dims */
static mlc_status matmul_shape(const Node *n, TensorType *out, int64_t *kdim, Diag *d) {
  const TensorType *a = &n->inputs[0]->type, *b = &n->inputs[1]->type;
  bool ta = ir_attr_int(n, "transpose_a", 0), tb = ir_attr_int(n, "transpose_b", 0);
  if (a->ndim < 1 || b->ndim < 1) return diag_set(d, MLC_ERR_INVALID, "matmul operands must have rank >= 1");
  int64_t ka = a->ndim == 1 ? a->dims[0] : a->dims[a->ndim - (ta ? 2 : 1)];
  int64_t kb = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - (tb ? 1 : 2)];
  if (ka != kb)
    return diag_set(d, MLC_ERR_INVALID, "matmul: inner dimensions differ (%lld vs %lld)", (long long)ka,
                    (long long)kb);
  TensorType ba = {.ndim = a->ndim > 2 ? a->ndim - 2 : 0}, bb = {.ndim = b->ndim > 2 ? b->ndim - 2 : 0}, bo;
  memcpy(ba.dims, a->dims, sizeof(int64_t) * (size_t)ba.ndim);
  memcpy(bb.dims, b->dims, sizeof(int64_t) * (size_t)bb.ndim);
  if (topi_broadcast_shape(&ba, &bb, &bo)) return diag_set(d, MLC_ERR_INVALID, "matmul: batch dims do not broadcast");
  TensorType o = {.dtype = a->dtype, .ndim = bo.ndim};
  memcpy(o.dims, bo.dims, sizeof(int64_t) * (size_t)bo.ndim);
  if (a->ndim > 1) o.dims[o.ndim++] = a->dims[a->ndim - (ta ? 1 : 2)];
  if (b->ndim > 1) o.dims[o.ndim++] = b->dims[b->ndim - (tb ? 2 : 1)];
  *out = o;
  *kdim = ka;
  return MLC_OK;
}

static mlc_status matmul_infer(Node *n, Diag *d) {
  const TensorType *a = &n->inputs[0]->type, *b = &n->inputs[1]->type;
  if (!matmul_dtype_ok(a->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(a->dtype));
  if (a->dtype != b->dtype)
    return diag_set(d, MLC_ERR_INVALID, "%s: operand dtypes differ (%s, %s)", n->op->name, mlc_dtype_name(a->dtype),
                    mlc_dtype_name(b->dtype));
  int64_t k;
  return matmul_shape(n, &n->outputs[0]->type, &k, d);
}

static mlc_status matmul_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  MatmulCtx *m = arena_alloc(c->arena, sizeof *m);
  m->a = ins[0];
  m->b = ins[1];
  m->dense = strcmp(n->op->name, "nn.dense") == 0;
  m->ta = !m->dense && ir_attr_int(n, "transpose_a", 0);
  m->tb = !m->dense && ir_attr_int(n, "transpose_b", 0);
  m->k = m->dense ? ins[1]->shape[1] : 0;
  if (!m->dense) {
    TensorType o;
    mlc_status st = matmul_shape(n, &o, &m->k, d);
    if (st) return st;
  }
  m->acc = acc_dtype(ins[0]->dtype);
  const TensorType *o = &n->outputs[0]->type;
  m->out_ndim = o->ndim;
  const char *tag = strcmp(n->op->name, "nn.batch_matmul") == 0 ? "batch_matmul" : "dense";
  TeTensor *t = te_compute(c, n->op->name + 3, tag, m->acc, o->ndim, o->dims, matmul_body, m);
  outs[0] = topi_cast_stage(c, t, o->dtype);
  return MLC_OK;
}

/* ---------------------------------------------------------------- softmax */

static mlc_status softmax_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  int64_t axis = ir_attr_int(n, "axis", x->ndim - 1);
  if (!is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(x->dtype));
  if (x->ndim < 1 || axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "%s: axis %lld out of range for rank %d", n->op->name, (long long)axis,
                    x->ndim);
  n->outputs[0]->type = *x;
  return MLC_OK;
}

/* Two forms of the compute. The row form, for a float32 softmax over the last axis whose length C is at
 * least the vector lanes L (attention scores, 49 in a Swin window, 197 in a ViT): the reductions run over
 * whole vectors, then the C % L elements after them (j < C / L, t < C % L),
 *     max_part[r, l] = max_j x[r, j*L + l]     max[r] = max(max_l max_part[r, l], max_t x[r, C - C%L + t])
 *     e[r, c]        = exp(x[r, c] - max[r])   (softmax only: computed once, read by the sum and the output)
 *     sum_part[r, l] = sum_j e[r, j*L + l]     sum[r] = sum_l sum_part[r, l] + sum_t e[r, C - C%L + t]
 *     out[r, c]      = e[r, c] / sum[r]        (log_softmax: x[r, c] - max[r] - log(sum[r]))
 * so that the "softmax.x86" template can compute all of it per row (compute_at the output's row loop), with
 * the partial reductions vectorized over l and exp evaluated once per element; a reduction straight along c
 * is a serial chain of scalar adds. Otherwise the generic form: max and sum (exp recomputed in the output)
 * over the axis. */
typedef struct SoftmaxCtx {
  TeTensor *x, *max, *sum, *max_part, *sum_part, *e;
  TeTensor *max_one, *sum_one; /* row form: the partials halved down to one lane */
  int axis;
  int64_t lanes; /* the row form: vector lanes L (0: the generic form) */
  mlc_dtype acc, out;
  bool log;
} SoftmaxCtx;

/* x index from a reduced index (axis removed) plus the axis position */
static void softmax_xidx(const SoftmaxCtx *k, Expr **ridx, Expr *a, Expr **xi) {
  for (int i = 0, j = 0; i < k->x->ndim; i++) xi[i] = i == k->axis ? a : ridx[j++];
}

static void softmax_ridx(const SoftmaxCtx *k, Expr **idx, Expr **ri) {
  for (int i = 0, j = 0; i < k->x->ndim; i++)
    if (i != k->axis) ri[j++] = idx[i];
}

static Expr *softmax_exp(TeCtx *c, SoftmaxCtx *k, Expr **xi, Expr **ri) {
  Expr *e = tir_sub(c->arena, read_as(c, k->x, xi, k->acc), te_read(c, k->max, k->max->ndim, ri));
  return tir_call(c->arena, INTRIN_EXP, k->acc, 1, &e);
}

static Expr *softmax_max_body(TeCtx *c, Expr **idx, void *user) {
  SoftmaxCtx *k = user;
  IterVar *r = te_reduce_axis(c, "rk", k->x->shape[k->axis]);
  Expr *xi[MLC_MAX_DIMS];
  softmax_xidx(k, idx, ivref(c, r), xi);
  return te_reduce(c, RED_MAX, read_as(c, k->x, xi, k->acc), 1, &r, NULL, NULL);
}

static Expr *softmax_sum_body(TeCtx *c, Expr **idx, void *user) {
  SoftmaxCtx *k = user;
  IterVar *r = te_reduce_axis(c, "rk", k->x->shape[k->axis]);
  Expr *xi[MLC_MAX_DIMS];
  softmax_xidx(k, idx, ivref(c, r), xi);
  return te_reduce(c, RED_SUM, softmax_exp(c, k, xi, idx), 1, &r, NULL, NULL);
}

/* row form: the partial reductions [rows.., L] over j, element j*L + l of the row */
static Expr *softmax_part_body(TeCtx *c, Expr **idx, void *user, bool is_max) {
  SoftmaxCtx *k = user;
  Arena *A = c->arena;
  int nd = k->x->ndim;
  IterVar *r = te_reduce_axis(c, "rj", k->x->shape[nd - 1] / k->lanes);
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0; i < nd - 1; i++) xi[i] = idx[i];
  xi[nd - 1] = tir_add(A, tir_mul(A, ivref(c, r), tir_idx(A, k->lanes)), idx[nd - 1]);
  if (is_max) return te_reduce(c, RED_MAX, read_as(c, k->x, xi, k->acc), 1, &r, NULL, NULL);
  Expr *v = k->e ? te_read(c, k->e, nd, xi) : softmax_exp(c, k, xi, idx);
  return te_reduce(c, RED_SUM, v, 1, &r, NULL, NULL);
}

static Expr *softmax_max_part_body(TeCtx *c, Expr **idx, void *user) { return softmax_part_body(c, idx, user, true); }
static Expr *softmax_sum_part_body(TeCtx *c, Expr **idx, void *user) { return softmax_part_body(c, idx, user, false); }

/* row form: the L partials halved in log2(L) vector steps, h[r, l] = op(p[r, l], p[r, l + w]) for width w
 * = L/2 .. 1, instead of one chain of L dependent scalar ops */
typedef struct SoftmaxHalf {
  TeTensor *prev;
  ReduceKind kind;
  int64_t w;
} SoftmaxHalf;

static Expr *softmax_half_body(TeCtx *c, Expr **idx, void *user) {
  SoftmaxHalf *h = user;
  Arena *A = c->arena;
  int nd = h->prev->ndim;
  Expr *hi[MLC_MAX_DIMS];
  memcpy(hi, idx, sizeof(Expr *) * (size_t)nd);
  hi[nd - 1] = tir_add(A, idx[nd - 1], tir_idx(A, h->w));
  Expr *a = te_read(c, h->prev, nd, idx), *b = te_read(c, h->prev, nd, hi);
  return h->kind == RED_MAX ? tir_bin(A, E_MAX, a, b) : tir_add(A, a, b);
}

static TeTensor *softmax_halve(TeCtx *c, SoftmaxCtx *k, TeTensor *part, ReduceKind kind) {
  int nd = part->ndim;
  int64_t shape[MLC_MAX_DIMS];
  memcpy(shape, part->shape, sizeof(int64_t) * (size_t)nd);
  for (int64_t w = k->lanes / 2; w >= 1; w /= 2) {
    SoftmaxHalf *h = arena_alloc(c->arena, sizeof *h);
    *h = (SoftmaxHalf){part, kind, w};
    shape[nd - 1] = w;
    part = te_compute(c, kind == RED_MAX ? "softmax_max_half" : "softmax_sum_half", "softmax_half", k->acc, nd, shape,
                      softmax_half_body, h);
  }
  return part;
}

/* row form: the row total, the halved partial (one lane) and then the C % L elements after the last whole
 * vector: t in [1, 1 + C % L) reads element C - C % L + t - 1 of the row (x for the max, e for the sum).
 * Either arm of the select may be evaluated, so both indices stay in range. */
static Expr *softmax_row_body(TeCtx *c, Expr **idx, void *user, TeTensor *one, ReduceKind kind) {
  SoftmaxCtx *k = user;
  Arena *A = c->arena;
  int nd = k->x->ndim;
  int64_t C = k->x->shape[nd - 1], rest = C % k->lanes;
  IterVar *r = te_reduce_axis(c, "rl", 1 + rest);
  Expr *pi[MLC_MAX_DIMS], *ti[MLC_MAX_DIMS];
  for (int i = 0; i < nd - 1; i++) pi[i] = ti[i] = idx[i];
  pi[nd - 1] = tir_idx(A, 0);
  Expr *v = te_read(c, one, nd, pi);
  if (rest) {
    ti[nd - 1] = tir_add(A, ivref(c, r), tir_idx(A, C - rest - 1));
    Expr *in_part = tir_bin(A, E_LT, ivref(c, r), tir_idx(A, 1));
    Expr *t = kind == RED_MAX ? read_as(c, k->x, ti, k->acc)
              : k->e          ? te_read(c, k->e, nd, ti)
                              : softmax_exp(c, k, ti, idx);
    v = tir_select(A, in_part, v, t);
  }
  return te_reduce(c, kind, v, 1, &r, NULL, NULL);
}

static Expr *softmax_row_max_body(TeCtx *c, Expr **idx, void *user) {
  SoftmaxCtx *k = user;
  return softmax_row_body(c, idx, user, k->max_one, RED_MAX);
}
static Expr *softmax_row_sum_body(TeCtx *c, Expr **idx, void *user) {
  SoftmaxCtx *k = user;
  return softmax_row_body(c, idx, user, k->sum_one, RED_SUM);
}

static Expr *softmax_e_body(TeCtx *c, Expr **idx, void *user) {
  SoftmaxCtx *k = user;
  Expr *ri[MLC_MAX_DIMS];
  softmax_ridx(k, idx, ri);
  return softmax_exp(c, k, idx, ri);
}

static Expr *softmax_out_body(TeCtx *c, Expr **idx, void *user) {
  SoftmaxCtx *k = user;
  Arena *A = c->arena;
  Expr *ri[MLC_MAX_DIMS];
  softmax_ridx(k, idx, ri);
  Expr *s = te_read(c, k->sum, k->sum->ndim, ri);
  Expr *v;
  if (k->log) {
    Expr *e = tir_sub(A, read_as(c, k->x, idx, k->acc), te_read(c, k->max, k->max->ndim, ri));
    v = tir_sub(A, e, tir_call(A, INTRIN_LOG, k->acc, 1, &s));
  } else {
    Expr *e = k->e ? te_read(c, k->e, k->e->ndim, idx) : softmax_exp(c, k, idx, ri);
    /* times the reciprocal, which LLVM hoists out of the row: one divide per row, not per element (within
     * one more rounding of e / sum) */
    v = tir_mul(A, e, tir_bin(A, E_DIV, tir_float(A, k->acc, 1.0), s));
  }
  return k->acc == k->out ? v : tir_cast(A, k->out, v);
}

static mlc_status softmax_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  SoftmaxCtx *k = arena_alloc(c->arena, sizeof *k);
  TeTensor *x = ins[0];
  int nd = x->ndim;
  k->x = x;
  k->axis = (int)ir_attr_int(n, "axis", nd - 1);
  k->acc = acc_dtype(x->dtype);
  k->out = x->dtype;
  k->log = strcmp(n->op->name, "nn.log_softmax") == 0;
  int64_t rshape[MLC_MAX_DIMS];
  int rn = 0;
  for (int i = 0; i < nd; i++)
    if (i != k->axis) rshape[rn++] = x->shape[i];
  int64_t lanes = c->target && c->target->kind == TARGET_CPU ? topi_vector_lanes(c->target, k->acc) : 0;
  if (nd >= 2 && k->axis == nd - 1 && x->dtype == MLC_F32 && lanes > 1 && x->shape[nd - 1] >= lanes) {
    k->lanes = lanes;
    int64_t pshape[MLC_MAX_DIMS];
    memcpy(pshape, x->shape, sizeof(int64_t) * (size_t)nd);
    pshape[nd - 1] = lanes;
    k->max_part = te_compute(c, "softmax_max_part", "softmax_row", k->acc, nd, pshape, softmax_max_part_body, k);
    k->max_one = softmax_halve(c, k, k->max_part, RED_MAX);
    k->max = te_compute(c, "softmax_max", "softmax_row", k->acc, rn, rshape, softmax_row_max_body, k);
    if (!k->log) k->e = te_compute(c, "softmax_exp", "softmax_exp", k->acc, nd, x->shape, softmax_e_body, k);
    k->sum_part = te_compute(c, "softmax_sum_part", "softmax_row", k->acc, nd, pshape, softmax_sum_part_body, k);
    k->sum_one = softmax_halve(c, k, k->sum_part, RED_SUM);
    k->sum = te_compute(c, "softmax_sum", "softmax_row", k->acc, rn, rshape, softmax_row_sum_body, k);
  } else {
    k->max = te_compute(c, "softmax_max", "reduce", k->acc, rn, rshape, softmax_max_body, k);
    k->sum = te_compute(c, "softmax_sum", "reduce", k->acc, rn, rshape, softmax_sum_body, k);
  }
  outs[0] = te_compute(c, n->op->name + 3, "softmax", k->out, nd, x->shape, softmax_out_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

/* ---------------------------------------------------------------- causal depthwise conv with state */

typedef struct CausalConvCtx {
  TeTensor *x, *w, *bias, *past, *conv;
  int64_t B, C, L, K;
  bool silu;
  mlc_dtype acc, out;
} CausalConvCtx;

static mlc_status causal_conv_parse(const Node *n, CausalConvCtx *k, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *w = &n->inputs[1]->type;
  const TensorType *b = n->ninputs > 2 && n->inputs[2] ? &n->inputs[2]->type : NULL;
  const TensorType *p = n->ninputs > 3 && n->inputs[3] ? &n->inputs[3]->type : NULL;
  memset(k, 0, sizeof *k);
  if (!is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.causal_conv_with_state of %s is not supported",
                    mlc_dtype_name(x->dtype));
  if (x->ndim != 3)
    return diag_set(d, MLC_ERR_INVALID, "nn.causal_conv_with_state: input must be (batch, channels, length)");
  k->B = x->dims[0];
  k->C = x->dims[1];
  k->L = x->dims[2];
  if (w->ndim != 3 || w->dims[0] != k->C || w->dims[1] != 1 || w->dims[2] < 1 || w->dtype != x->dtype)
    return diag_set(d, MLC_ERR_INVALID,
                    "nn.causal_conv_with_state: weight must be (%lld, 1, k >= 1) of the input's dtype",
                    (long long)k->C);
  k->K = w->dims[2];
  if (b && (b->ndim != 1 || b->dims[0] != k->C || b->dtype != x->dtype))
    return diag_set(d, MLC_ERR_INVALID, "nn.causal_conv_with_state: bias must be (%lld) of the input's dtype",
                    (long long)k->C);
  if (p && (p->ndim != 3 || p->dims[0] != k->B || p->dims[1] != k->C || p->dims[2] != k->K - 1 ||
            p->dtype != x->dtype))
    return diag_set(d, MLC_ERR_INVALID,
                    "nn.causal_conv_with_state: past_state must be (%lld, %lld, %lld) of the input's dtype",
                    (long long)k->B, (long long)k->C, (long long)(k->K - 1));
  int64_t act = ir_attr_int(n, "activation", 0);
  if (act != 0 && act != 1)
    return diag_set(d, MLC_ERR_INVALID, "nn.causal_conv_with_state: activation %lld is not 0 (none) or 1 (silu)",
                    (long long)act);
  k->silu = act == 1;
  k->acc = acc_dtype(x->dtype);
  k->out = x->dtype;
  return MLC_OK;
}

static mlc_status causal_conv_infer(Node *n, Diag *d) {
  CausalConvCtx k;
  mlc_status st = causal_conv_parse(n, &k, d);
  if (st != MLC_OK) return st;
  n->outputs[0]->type = n->inputs[0]->type;
  n->outputs[1]->type = (TensorType){k.out, 3, {k.B, k.C, k.K - 1}};
  return MLC_OK;
}

/* p[b, c, pos] of the padded sequence concat(past_state or zeros, x), in the accumulation dtype; pos may fall
 * on either side, so both loads use clamped (in-bounds) indices and a select picks one. */
static Expr *causal_conv_padded(TeCtx *c, CausalConvCtx *k, Expr *b, Expr *ch, Expr *pos) {
  Arena *A = c->arena;
  int64_t P = k->K - 1;
  Expr *from_x = NULL, *from_past = NULL;
  if (k->L > 0) {
    Expr *xi[3] = {b, ch, tir_bin(A, E_MIN, tir_bin(A, E_MAX, tir_sub(A, pos, tir_idx(A, P)), tir_idx(A, 0)),
                                  tir_idx(A, k->L - 1))};
    from_x = read_as(c, k->x, xi, k->acc);
  }
  if (P > 0) {
    if (k->past) {
      Expr *pi[3] = {b, ch, tir_bin(A, E_MIN, tir_bin(A, E_MAX, pos, tir_idx(A, 0)), tir_idx(A, P - 1))};
      from_past = read_as(c, k->past, pi, k->acc);
    } else {
      from_past = tir_const(A, k->acc, 0);
    }
  }
  if (!from_past) return from_x;
  if (!from_x) return from_past;
  return tir_select(A, tir_bin(A, E_LT, pos, tir_idx(A, P)), from_past, from_x);
}

static Expr *causal_conv_body(TeCtx *c, Expr **idx, void *user) {
  CausalConvCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "k", k->K);
  Expr *j = ivref(c, r);
  Expr *wi[3] = {idx[1], tir_idx(A, 0), j};
  Expr *tap =
      tir_mul(A, read_as(c, k->w, wi, k->acc), causal_conv_padded(c, k, idx[0], idx[1], tir_add(A, idx[2], j)));
  return te_reduce(c, RED_SUM, tap, 1, &r, NULL, NULL);
}

static Expr *causal_conv_out_body(TeCtx *c, Expr **idx, void *user) {
  CausalConvCtx *k = user;
  Arena *A = c->arena;
  Expr *y = te_read(c, k->conv, 3, idx);
  if (k->bias) y = tir_add(A, y, read_as(c, k->bias, &idx[1], k->acc));
  if (k->silu) y = tir_mul(A, y, tir_call(A, INTRIN_SIGMOID, k->acc, 1, &y));
  return y->dtype == k->out ? y : tir_cast(A, k->out, y);
}

static Expr *causal_conv_state_body(TeCtx *c, Expr **idx, void *user) {
  CausalConvCtx *k = user;
  Expr *v = causal_conv_padded(c, k, idx[0], idx[1], tir_add(c->arena, idx[2], tir_idx(c->arena, k->L)));
  return v->dtype == k->out ? v : tir_cast(c->arena, k->out, v);
}

static mlc_status causal_conv_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  CausalConvCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = causal_conv_parse(n, k, d);
  if (st != MLC_OK) return st;
  k->x = ins[0];
  k->w = ins[1];
  k->bias = n->ninputs > 2 && n->inputs[2] ? ins[2] : NULL;
  k->past = n->ninputs > 3 && n->inputs[3] ? ins[3] : NULL;
  int64_t yshape[3] = {k->B, k->C, k->L}, sshape[3] = {k->B, k->C, k->K - 1};
  k->conv = te_compute(c, "causal_conv", "reduce", k->acc, 3, yshape, causal_conv_body, k);
  outs[0] = k->conv;
  if (k->bias || k->silu || k->acc != k->out)
    outs[0] = te_compute(c, "causal_conv_out", "injective", k->out, 3, yshape, causal_conv_out_body, k);
  outs[1] = te_compute(c, "causal_conv_state", "injective", k->out, 3, sshape, causal_conv_state_body, k);
  return MLC_OK;
}

const OpDef topi_ops_nn[] = {
    /* name                      pattern                   min max nout infer          compute  dyn */
    {"nn.conv1d", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, conv_infer, conv_compute, DYN_BATCH},
    {"nn.conv2d", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, conv_infer, conv_compute, DYN_BATCH},
    {"nn.conv3d", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, conv_infer, conv_compute, DYN_BATCH},
    {"nn.conv1d_transpose", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, convt_infer, convt_compute, DYN_BATCH},
    {"nn.conv2d_transpose", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, convt_infer, convt_compute, DYN_BATCH},
    {"nn.conv3d_transpose", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, convt_infer, convt_compute, DYN_BATCH},
    {"nn.max_pool1d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.max_pool2d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.max_pool3d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.avg_pool1d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.avg_pool2d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.avg_pool3d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.lp_pool1d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.lp_pool2d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.lp_pool3d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, pool_infer, pool_compute, DYN_BATCH},
    {"nn.max_pool_indices", PAT_OPAQUE, 2, 2, 1, pool_indices_infer, pool_indices_compute},
    {"nn.global_avg_pool2d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, gpool_infer, gpool_compute, DYN_BATCH},
    {"nn.global_max_pool2d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, gpool_infer, gpool_compute, DYN_BATCH},
    {"nn.global_lp_pool2d", PAT_OUT_ELEMWISE_FUSABLE, 1, 1, 1, gpool_infer, gpool_compute, DYN_BATCH},
    {"nn.dense", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, dense_infer, matmul_compute, DYN_DENSE},
    {"nn.matmul", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, matmul_infer, matmul_compute, DYN_MATMUL},
    {"nn.batch_matmul", PAT_OUT_ELEMWISE_FUSABLE, 2, 2, 1, matmul_infer, matmul_compute, DYN_MATMUL},
    {"nn.softmax", PAT_OPAQUE, 1, 1, 1, softmax_infer, softmax_compute, DYN_ALONG_AXIS},
    {"nn.log_softmax", PAT_OPAQUE, 1, 1, 1, softmax_infer, softmax_compute, DYN_ALONG_AXIS},
    {"nn.causal_conv_with_state", PAT_OPAQUE, 2, 4, 2, causal_conv_infer, causal_conv_compute},
    {0},
};
