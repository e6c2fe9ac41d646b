/* topi image family: image.resize (ONNX Resize / Upsample).
 *
 * Attributes (normalised by the importer, one entry per input dim): "size" (output dims), "scale" (floats:
 * the scale each coordinate transform divides by), "roi" (floats: starts then ends, tf_crop_and_resize only),
 * "method" (nearest | linear | cubic), "coord" (half_pixel, half_pixel_symmetric, pytorch_half_pixel,
 * align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize), "nearest_mode" (round_prefer_floor,
 * round_prefer_ceil, floor, ceil), "cubic_a", "exclude_outside", "extrapolation".
 * Algorithm: separable interpolation, as the ONNX reference. Per resized dim the output index maps to a
 * source coordinate (the coordinate transform, in float64); nearest rounds it, linear takes the 2 and cubic
 * the 4 neighbours around floor(coordinate) with their weights (cubic: Keys' kernel with parameter a;
 * exclude_outside zeroes the weights of neighbours outside the input and renormalises); neighbour indices are
 * clamped to the edge. The output is one compute: the sum over the neighbour grid of the product of the per-
 * dim weights times the input, in float64 for floats. Dims with scale 1 and the same extent are copied
 * (every transform but tf_crop_and_resize is the identity there). tf_crop_and_resize writes extrapolation
 * where the coordinate falls outside [0, in - 1]. */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

typedef enum Method { M_NEAREST, M_LINEAR, M_CUBIC } Method;
typedef enum Coord { C_HALF, C_HALF_SYM, C_PYTORCH, C_ALIGN, C_ASYM, C_TF_NN, C_TF_CROP } Coord;
typedef enum NearestMode { N_PREFER_FLOOR, N_PREFER_CEIL, N_FLOOR, N_CEIL } NearestMode;

static const char *const coord_names[] = {"half_pixel",   "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                          "asymmetric",   "tf_half_pixel_for_nn", "tf_crop_and_resize"};
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
static const char *const method_names[] = {"nearest", "linear", "cubic"};

static int find_name(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

typedef struct ResizeCtx {
  TeTensor *x;
  int ndim;
  int64_t out[MLC_MAX_DIMS];
  double scale[MLC_MAX_DIMS];
  double roi[2 * MLC_MAX_DIMS];
  bool resized[MLC_MAX_DIMS];
  Method method;
  Coord coord;
  NearestMode nearest;
  double cubic_a;
  bool exclude_outside;
  double extrapolation;
  mlc_dtype acc;
} ResizeCtx;

static mlc_status resize_parse(const Node *n, const TensorType *x, ResizeCtx *k, Diag *d) {
  memset(k, 0, sizeof *k);
  k->ndim = x->ndim;
  int ns = ir_attr_ints(n, "size", k->out, MLC_MAX_DIMS);
  const Attr *sc = ir_attr(n, "scale");
  const Attr *roi = ir_attr(n, "roi");
  if (ns != x->ndim || !sc || sc->kind != ATTR_FLOATS || sc->n != x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "image.resize: size and scale must have one entry per input dim");
  int m = find_name(ir_attr_string(n, "method", "nearest"), method_names, 3);
  int c = find_name(ir_attr_string(n, "coord", "half_pixel"), coord_names, 7);
  int nm = find_name(ir_attr_string(n, "nearest_mode", "round_prefer_floor"), nearest_names, 4);
  if (m < 0) return diag_set(d, MLC_ERR_UNSUPPORTED, "image.resize: mode '%s' is not supported", ir_attr_string(n, "method", ""));
  if (c < 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "image.resize: coordinate_transformation_mode '%s' is not supported",
                    ir_attr_string(n, "coord", ""));
  if (nm < 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "image.resize: nearest_mode '%s' is not supported",
                    ir_attr_string(n, "nearest_mode", ""));
  k->method = (Method)m;
  k->coord = (Coord)c;
  k->nearest = (NearestMode)nm;
  k->cubic_a = ir_attr_float(n, "cubic_a", -0.75);
  k->exclude_outside = ir_attr_int(n, "exclude_outside", 0) != 0;
  k->extrapolation = ir_attr_float(n, "extrapolation", 0.0);
  for (int i = 0; i < x->ndim; i++) {
    k->scale[i] = sc->floats[i];
    k->roi[i] = 0;
    k->roi[x->ndim + i] = 1;
    if (k->out[i] < 0 || !(k->scale[i] > 0))
      return diag_set(d, MLC_ERR_INVALID, "image.resize: bad size %lld / scale %g for dim %d", (long long)k->out[i],
                      k->scale[i], i);
  }
  if (roi && roi->kind == ATTR_FLOATS && roi->n == 2 * x->ndim)
    for (int i = 0; i < 2 * x->ndim; i++) k->roi[i] = roi->floats[i];
  for (int i = 0; i < x->ndim; i++)
    k->resized[i] = k->coord == C_TF_CROP ? (k->roi[i] != 0 || k->roi[x->ndim + i] != 1 || k->out[i] != x->dims[i])
                                          : (k->scale[i] != 1.0 || k->out[i] != x->dims[i]);
  return MLC_OK;
}

static mlc_status resize_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (!dtype_is_float(x->dtype) && !dtype_is_int(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "image.resize of %s is not supported", mlc_dtype_name(x->dtype));
  ResizeCtx k;
  mlc_status st = resize_parse(n, x, &k, d);
  if (st != MLC_OK) return st;
  TensorType o = *x;
  for (int i = 0; i < x->ndim; i++) o.dims[i] = k.out[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* the source coordinate of output index i along dim d (float64) */
static Expr *src_coord(TeCtx *c, const ResizeCtx *k, int d, Expr *i) {
  Arena *A = c->arena;
  mlc_dtype F = MLC_F64;
  Expr *x = tir_cast(A, F, i);
  double s = k->scale[d];
  int64_t in = k->x->shape[d], out = k->out[d];
  /* the output length as the reference uses it: scale * in, not rounded (sizes give scale = out / in) */
  double ow = s * (double)in;
  if (k->coord == C_TF_CROP) ow = out;
  Expr *half = tir_const(A, F, 0.5);
  switch (k->coord) {
    case C_HALF:
      return tir_sub(A, tir_bin(A, E_DIV, tir_add(A, x, half), tir_const(A, F, s)), half);
    case C_HALF_SYM: {
      double adj = (double)out / (s * (double)in);
      double off = (double)in / 2.0 * (1.0 - adj);
      return tir_add(A, tir_const(A, F, off), tir_sub(A, tir_bin(A, E_DIV, tir_add(A, x, half), tir_const(A, F, s)), half));
    }
    case C_PYTORCH:
      if (ow <= 1) return tir_const(A, F, 0);
      return tir_sub(A, tir_bin(A, E_DIV, tir_add(A, x, half), tir_const(A, F, s)), half);
    case C_ALIGN:
      if (ow == 1) return tir_const(A, F, 0);
      return tir_mul(A, x, tir_const(A, F, (double)(in - 1) / (ow - 1)));
    case C_ASYM:
      return tir_bin(A, E_DIV, x, tir_const(A, F, s));
    case C_TF_NN:
      return tir_bin(A, E_DIV, tir_add(A, x, half), tir_const(A, F, s));
    case C_TF_CROP: {
      double r0 = k->roi[d], r1 = k->roi[k->ndim + d];
      if (ow == 1) return tir_const(A, F, 0.5 * (r0 + r1) * (double)(in - 1));
      return tir_add(A, tir_const(A, F, r0 * (double)(in - 1)),
                     tir_mul(A, x, tir_const(A, F, (r1 - r0) * (double)(in - 1) / (ow - 1))));
    }
  }
  return x;
}

static Expr *call1(Arena *A, Intrin in, Expr *x) { return tir_call(A, in, x->dtype, 1, &x); }

static Expr *clampi(Arena *A, Expr *i, int64_t n) {
  return tir_bin(A, E_MIN, tir_bin(A, E_MAX, i, tir_idx(A, 0)), tir_idx(A, n - 1));
}

/* cubic kernel weight for distance t (|t| in [0, 2]) with parameter a */
static Expr *cubic_w(Arena *A, Expr *t, double a) {
  mlc_dtype F = MLC_F64;
  Expr *at = call1(A, INTRIN_FABS, t);
  Expr *A_ = tir_const(A, F, a);
  /* |t| <= 1: (a+2)|t|^3 - (a+3)|t|^2 + 1 ; 1 < |t| < 2: a|t|^3 - 5a|t|^2 + 8a|t| - 4a */
  Expr *t2 = tir_mul(A, at, at), *t3 = tir_mul(A, t2, at);
  Expr *w1 = tir_add(A, tir_sub(A, tir_mul(A, tir_const(A, F, a + 2), t3), tir_mul(A, tir_const(A, F, a + 3), t2)),
                     tir_const(A, F, 1));
  Expr *w2 = tir_sub(A, tir_add(A, tir_sub(A, tir_mul(A, A_, t3), tir_mul(A, tir_const(A, F, 5 * a), t2)),
                                tir_mul(A, tir_const(A, F, 8 * a), at)),
                     tir_const(A, F, 4 * a));
  Expr *in1 = tir_bin(A, E_LE, at, tir_const(A, F, 1));
  Expr *in2 = tir_bin(A, E_LT, at, tir_const(A, F, 2));
  return tir_select(A, in1, w1, tir_select(A, in2, w2, tir_const(A, F, 0)));
}

typedef struct Tap {
  int n;              /* taps along this dim */
  Expr *idx[4];       /* clamped source indices */
  Expr *w[4];         /* weights (NULL: 1) */
} Tap;

static void dim_taps(TeCtx *c, const ResizeCtx *k, int d, Expr *i, Tap *t) {
  Arena *A = c->arena;
  mlc_dtype F = MLC_F64;
  int64_t in = k->x->shape[d];
  if (!k->resized[d]) {
    t->n = 1;
    t->idx[0] = i;
    t->w[0] = NULL;
    return;
  }
  Expr *x = src_coord(c, k, d, i);
  if (k->method == M_NEAREST) {
    Expr *r;
    switch (k->nearest) {
      case N_FLOOR: r = call1(A, INTRIN_FLOOR, x); break;
      case N_CEIL: r = call1(A, INTRIN_CEIL, x); break;
      case N_PREFER_CEIL: r = call1(A, INTRIN_FLOOR, tir_add(A, x, tir_const(A, F, 0.5))); break;
      default: r = call1(A, INTRIN_CEIL, tir_sub(A, x, tir_const(A, F, 0.5))); break;
    }
    t->n = 1;
    t->idx[0] = clampi(A, tir_cast(A, MLC_I64, r), in);
    t->w[0] = NULL;
    return;
  }
  Expr *fl = call1(A, INTRIN_FLOOR, x);
  Expr *ratio = tir_sub(A, x, fl);
  Expr *base = tir_cast(A, MLC_I64, fl);
  if (k->method == M_LINEAR) {
    t->n = 2;
    t->idx[0] = clampi(A, base, in);
    t->idx[1] = clampi(A, tir_add(A, base, tir_idx(A, 1)), in);
    t->w[0] = tir_sub(A, tir_const(A, F, 1), ratio);
    t->w[1] = ratio;
    return;
  }
  t->n = 4;
  Expr *sum = NULL;
  for (int j = 0; j < 4; j++) {
    Expr *pos = tir_add(A, base, tir_idx(A, j - 1));
    t->idx[j] = clampi(A, pos, in);
    Expr *w = cubic_w(A, tir_sub(A, ratio, tir_const(A, F, j - 1)), k->cubic_a);
    if (k->exclude_outside) {
      Expr *inside = tir_bin(A, E_AND, tir_bin(A, E_GE, pos, tir_idx(A, 0)), tir_bin(A, E_LT, pos, tir_idx(A, in)));
      w = tir_select(A, inside, w, tir_const(A, F, 0));
    }
    t->w[j] = w;
    sum = sum ? tir_add(A, sum, w) : w;
  }
  if (k->exclude_outside)
    for (int j = 0; j < 4; j++) t->w[j] = tir_bin(A, E_DIV, t->w[j], sum);
}

static Expr *resize_body(TeCtx *c, Expr **idx, void *user) {
  ResizeCtx *k = user;
  Arena *A = c->arena;
  Tap taps[MLC_MAX_DIMS];
  int64_t total = 1;
  for (int d = 0; d < k->ndim; d++) {
    dim_taps(c, k, d, idx[d], &taps[d]);
    total *= taps[d].n;
  }
  Expr *acc = NULL;
  for (int64_t t = 0; t < total; t++) {
    int64_t r = t;
    Expr *xi[MLC_MAX_DIMS];
    Expr *w = NULL;
    for (int d = k->ndim - 1; d >= 0; d--) {
      int j = (int)(r % taps[d].n);
      r /= taps[d].n;
      xi[d] = taps[d].idx[j];
      if (taps[d].w[j]) w = w ? tir_mul(A, w, taps[d].w[j]) : taps[d].w[j];
    }
    Expr *v = te_read(c, k->x, k->ndim, xi);
    if (v->dtype != k->acc) v = tir_cast(A, k->acc, v);
    if (w) v = tir_mul(A, v, k->acc == MLC_F64 ? w : tir_cast(A, k->acc, w));
    acc = acc ? tir_add(A, acc, v) : v;
  }
  mlc_dtype ot = k->x->dtype;
  if (k->acc != ot) {
    if (dtype_is_int(ot)) acc = call1(A, INTRIN_ROUND, acc);
    acc = tir_cast(A, ot, acc);
  }
  if (k->coord == C_TF_CROP) {
    Expr *out = NULL;
    for (int d = 0; d < k->ndim; d++) {
      if (!k->resized[d]) continue;
      Expr *x = src_coord(c, k, d, idx[d]);
      Expr *o = tir_bin(A, E_OR, tir_bin(A, E_LT, x, tir_const(A, MLC_F64, 0)),
                        tir_bin(A, E_GT, x, tir_const(A, MLC_F64, (double)(k->x->shape[d] - 1))));
      out = out ? tir_bin(A, E_OR, out, o) : o;
    }
    if (out) acc = tir_select(A, out, tir_const(A, ot, k->extrapolation), acc);
  }
  return acc;
}

static mlc_status resize_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ResizeCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = resize_parse(n, &n->inputs[0]->type, k, d);
  if (st != MLC_OK) return st;
  k->x = ins[0];
  mlc_dtype t = ins[0]->dtype;
  k->acc = k->method == M_NEAREST ? t : MLC_F64;
  outs[0] = te_compute(c, "resize", "injective", t, k->ndim, k->out, resize_body, k);
  return MLC_OK;
}

const OpDef topi_ops_image[] = {
    /* name          pattern        min max nout infer         compute */
    {"image.resize", PAT_INJECTIVE, 1, 1, 1, resize_infer, resize_compute},
    {0},
};
