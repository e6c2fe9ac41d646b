/* topi image family: image.resize (ONNX Resize / Upsample), image.grid_sample (GridSample) and
 * image.affine_grid (AffineGrid).
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
 * where the coordinate falls outside [0, in - 1].
 * antialias (linear and cubic only) widens the filter of every downscaled dim (scale s < 1) as the ONNX
 * reference does: the kernel is evaluated at s * (j - ratio) for the taps j in [f, 2 - f) around
 * floor(coordinate), f = floor(-w / s) + 1 (w = 1 linear, 2 cubic), and the weights are normalised to sum 1 (after zeroing the
 * taps outside the input with exclude_outside). Those dims are resized one after another, each as a
 * reduction over its taps with the weights precomputed per output index (tensors [out, taps]), after one
 * ordinary resize of the other dims; the intermediate results are float64. Dims that are not downscaled get
 * the ordinary filter, which is what the reference's antialias filter is at s >= 1.
 *
 * image.grid_sample(X (N, C, D1..Dr), grid (N, H1..Hr, r)): attributes method (nearest | linear | cubic),
 * padding_mode (zeros | border | reflection), align_corners. As the ONNX reference (after PyTorch): the grid's
 * (x, y, z) are the reversed spatial dims; each is denormalised ((n+1)/2 (L-1) with align_corners, else
 * ((n+1) L - 1)/2, kept in float32), rounded half to even for nearest (the conformance data uses that in 3-D too),
 * then if outside [lo, hi] (0..L-1 or -0.5..L-0.5) clamped (border) or reflected (reflection). Linear takes 2
 * and cubic (Keys, a = -0.75) 4 taps per dim around floor(x), nearest 1; a tap's index is padded per dim
 * (zeros: value 0 outside, border: clamped, reflection: reflected and truncated). The result is the sum over
 * the tap grid of the product of per-dim weights times the pixel, in float64.
 * image.affine_grid(theta (N, r, r+1)): attributes size (N, C, spatial..), align_corners; grid[n, s.., :] =
 * theta[n] @ (x, y[, z], 1) with the normalised base coordinates of the output position. */
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
  bool antialias;
  mlc_dtype acc, out_dtype;
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
  k->antialias = ir_attr_int(n, "antialias", 0) != 0 && k->method != M_NEAREST;
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

/* The float result v in an integer output type as ONNX's reference (astype) and ONNX Runtime give it:
 * truncated toward zero; cubic's overshoot past the type's range saturates (a cast of it would be undefined) */
static Expr *to_int_out(Arena *A, const ResizeCtx *k, Expr *v, mlc_dtype ot) {
  v = call1(A, INTRIN_TRUNC, v);
  if (k->method == M_CUBIC && topi_int_hi(ot) > 0) {
    v = tir_bin(A, E_MAX, v, tir_const(A, v->dtype, topi_int_lo(ot)));
    v = tir_bin(A, E_MIN, v, tir_const(A, v->dtype, topi_int_hi(ot)));
  }
  return tir_cast(A, ot, v);
}

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
  mlc_dtype ot = k->out_dtype;
  if (k->acc != ot) acc = dtype_is_int(ot) ? to_int_out(A, k, acc, ot) : tir_cast(A, ot, acc);
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

/* antialias: the filter of one downscaled dim d. Its weights for output index i and tap j are w[i, j]
 * (normalised), at source index clamp(base[i] + first + j). */
typedef struct AaDim {
  const ResizeCtx *k;
  TeTensor *src, *base, *raw, *sum, *w;
  TeTensor *result; /* the pass's float64 result, for its epilogues */
  int d;
  int64_t first, taps;
  double s;
} AaDim;

static Expr *aa_coord(TeCtx *c, const AaDim *a, Expr *i) {
  ResizeCtx k = *a->k;
  k.x = a->src;
  return src_coord(c, &k, a->d, i);
}

static Expr *aa_base_body(TeCtx *c, Expr **idx, void *user) {
  return tir_cast(c->arena, MLC_I64, call1(c->arena, INTRIN_FLOOR, aa_coord(c, user, idx[0])));
}

static Expr *aa_raw_body(TeCtx *c, Expr **idx, void *user) {
  AaDim *a = user;
  Arena *A = c->arena;
  mlc_dtype F = MLC_F64;
  Expr *x = aa_coord(c, a, idx[0]);
  Expr *ratio = tir_sub(A, x, call1(A, INTRIN_FLOOR, x));
  Expr *j = tir_add(A, idx[1], tir_idx(A, a->first));
  Expr *arg = tir_mul(A, tir_sub(A, tir_cast(A, F, j), ratio), tir_const(A, F, a->s));
  Expr *w = a->k->method == M_LINEAR
                ? tir_bin(A, E_MAX, tir_sub(A, tir_const(A, F, 1), call1(A, INTRIN_FABS, arg)), tir_const(A, F, 0))
                : cubic_w(A, arg, a->k->cubic_a);
  if (a->k->exclude_outside) {
    Expr *pos = tir_add(A, te_read(c, a->base, 1, idx), j);
    Expr *inside = tir_bin(A, E_AND, tir_bin(A, E_GE, pos, tir_idx(A, 0)),
                           tir_bin(A, E_LT, pos, tir_idx(A, a->src->shape[a->d])));
    w = tir_select(A, inside, w, tir_const(A, F, 0));
  }
  return w;
}

static Expr *aa_sum_body(TeCtx *c, Expr **idx, void *user) {
  AaDim *a = user;
  IterVar *r = te_reduce_axis(c, "j", a->taps);
  Expr *ri[2] = {idx[0], tir_varref(c->arena, r->var)};
  return te_reduce(c, RED_SUM, te_read(c, a->raw, 2, ri), 1, &r, NULL, NULL);
}

static Expr *aa_w_body(TeCtx *c, Expr **idx, void *user) {
  AaDim *a = user;
  return tir_bin(c->arena, E_DIV, te_read(c, a->raw, 2, idx), te_read(c, a->sum, 1, idx));
}

static Expr *aa_pass_body(TeCtx *c, Expr **idx, void *user) {
  AaDim *a = user;
  Arena *A = c->arena;
  int d = a->d, nd = a->src->ndim;
  IterVar *r = te_reduce_axis(c, "j", a->taps);
  Expr *j = tir_varref(A, r->var);
  Expr *wi[2] = {idx[d], j};
  Expr *xi[MLC_MAX_DIMS];
  for (int e = 0; e < nd; e++) xi[e] = idx[e];
  xi[d] = clampi(A, tir_add(A, tir_add(A, te_read(c, a->base, 1, &idx[d]), tir_idx(A, a->first)), j),
                 a->src->shape[d]);
  Expr *v = te_read(c, a->src, nd, xi);
  if (v->dtype != MLC_F64) v = tir_cast(A, MLC_F64, v);
  return te_reduce(c, RED_SUM, tir_mul(A, te_read(c, a->w, 2, wi), v), 1, &r, NULL, NULL);
}

/* the epilogues of a pass: tf_crop_and_resize's extrapolation, and the output dtype after the last pass */
static Expr *aa_extrapolate_body(TeCtx *c, Expr **idx, void *user) {
  AaDim *a = user;
  Arena *A = c->arena;
  Expr *x = aa_coord(c, a, idx[a->d]);
  Expr *o = tir_bin(A, E_OR, tir_bin(A, E_LT, x, tir_const(A, MLC_F64, 0)),
                    tir_bin(A, E_GT, x, tir_const(A, MLC_F64, (double)(a->src->shape[a->d] - 1))));
  return tir_select(A, o, tir_const(A, MLC_F64, a->k->extrapolation), te_read(c, a->result, a->result->ndim, idx));
}

static Expr *aa_cast_body(TeCtx *c, Expr **idx, void *user) {
  AaDim *a = user;
  mlc_dtype ot = a->k->out_dtype;
  Expr *v = te_read(c, a->result, a->result->ndim, idx);
  return dtype_is_int(ot) ? to_int_out(c->arena, a->k, v, ot) : tir_cast(c->arena, ot, v);
}

/* one antialias pass over dim d of src (float64 unless last): returns the resized tensor */
static TeTensor *aa_pass(TeCtx *c, const ResizeCtx *k, TeTensor *src, int d, bool last) {
  Arena *A = c->arena;
  AaDim *a = arena_alloc(A, sizeof *a);
  memset(a, 0, sizeof *a);
  a->k = k;
  a->src = src;
  a->d = d;
  a->s = k->scale[d];
  double w = k->method == M_LINEAR ? 1.0 : 2.0;
  a->first = (int64_t)floor(-w / a->s) + 1;
  a->taps = 2 - 2 * a->first;
  int64_t od = k->out[d], wt[2] = {od, a->taps};
  a->base = te_compute(c, "resize_aa_base", "injective", MLC_I64, 1, &od, aa_base_body, a);
  a->raw = te_compute(c, "resize_aa_weight", "injective", MLC_F64, 2, wt, aa_raw_body, a);
  a->sum = te_compute(c, "resize_aa_weight_sum", "reduce", MLC_F64, 1, &od, aa_sum_body, a);
  a->w = te_compute(c, "resize_aa_weight_norm", "injective", MLC_F64, 2, wt, aa_w_body, a);
  int64_t shape[MLC_MAX_DIMS];
  for (int e = 0; e < src->ndim; e++) shape[e] = src->shape[e];
  shape[d] = od;
  a->result = te_compute(c, "resize_aa", "reduce", MLC_F64, src->ndim, shape, aa_pass_body, a);
  if (k->coord == C_TF_CROP)
    a->result = te_compute(c, "resize_aa_extrapolate", "injective", MLC_F64, src->ndim, shape, aa_extrapolate_body, a);
  if (last && k->out_dtype != MLC_F64)
    a->result = te_compute(c, "resize_aa_cast", "injective", k->out_dtype, src->ndim, shape, aa_cast_body, a);
  return a->result;
}

/* The template of a separable resize (tag "resize", no knobs): its last-axis pass "resize_last" gets memory
 * (the group schedule inlined it, which would gather every tap of every output again), both stages the
 * generic injective schedule. */
void topi_resize_space(const Target *t, const TeOp *a, TopiConfigSpace *s) { memset(s, 0, sizeof *s); }
void topi_resize_fallback(const Target *t, const TeOp *a, TopiConfig *cfg) { memset(cfg, 0, sizeof *cfg); }
void topi_resize_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg) {
  for (int i = 0; i < s->nstages; i++) {
    TeStage *st = s->stages[i];
    if (st->op->tag && !strcmp(st->op->tag, "resize_last")) {
      st->attach = ATTACH_ROOT;
      topi_schedule_stage_generic(c, st);
    }
  }
  TeStage *as = te_stage(s, a->outputs[0]), *os = out ? te_stage(s, out) : NULL;
  if (os && os != as) {
    te_compute_inline(as);
    topi_schedule_stage_generic(c, os);
  } else if (as) {
    topi_schedule_stage_generic(c, as);
  }
}

static mlc_status resize_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ResizeCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = resize_parse(n, &n->inputs[0]->type, k, d);
  if (st != MLC_OK) return st;
  k->x = ins[0];
  mlc_dtype t = ins[0]->dtype;
  k->acc = k->method == M_NEAREST ? t : MLC_F64;
  k->out_dtype = t;
  bool wide[MLC_MAX_DIMS] = {0};
  int nwide = 0, nplain = 0;
  for (int i = 0; i < k->ndim; i++) {
    wide[i] = k->antialias && k->resized[i] && k->scale[i] < 1.0;
    nwide += wide[i];
    nplain += k->resized[i] && !wide[i];
  }
  int last = k->ndim - 1, nresized = 0;
  for (int i = 0; i < k->ndim; i++) nresized += k->resized[i];
  if (!nwide && nresized >= 2 && k->resized[last] && k->coord != C_TF_CROP &&
      (k->method == M_NEAREST || t == MLC_F32 || t == MLC_F64)) {
    /* separable: the last axis first (gathers along it), then the others reading whole rows of that */
    ResizeCtx *p = arena_alloc(c->arena, sizeof *p), *q = arena_alloc(c->arena, sizeof *q);
    *p = *k, *q = *k;
    for (int i = 0; i < last; i++) {
      p->resized[i] = false;
      p->out[i] = k->x->shape[i];
    }
    q->x = te_compute(c, "resize_last", "resize_last", t, p->ndim, p->out, resize_body, p);
    q->resized[last] = false;
    outs[0] = te_compute(c, "resize", "resize", t, q->ndim, q->out, resize_body, q);
    return MLC_OK;
  }
  if (!nwide) {
    outs[0] = te_compute(c, "resize", "injective", t, k->ndim, k->out, resize_body, k);
    return MLC_OK;
  }
  /* antialias: the other resized dims first (in float64), then one pass per downscaled dim */
  TeTensor *x = ins[0];
  if (nplain) {
    ResizeCtx *p = arena_alloc(c->arena, sizeof *p);
    *p = *k;
    p->out_dtype = MLC_F64;
    for (int i = 0; i < k->ndim; i++)
      if (wide[i]) {
        p->resized[i] = false;
        p->out[i] = x->shape[i];
      }
    x = te_compute(c, "resize", "injective", MLC_F64, p->ndim, p->out, resize_body, p);
  }
  for (int i = 0, done = 0; i < k->ndim; i++)
    if (wide[i]) x = aa_pass(c, k, x, i, ++done == nwide);
  outs[0] = x;
  return MLC_OK;
}

/* ---------------------------------------------------------------- grid_sample and affine_grid */

typedef enum GsPad { GP_ZEROS, GP_BORDER, GP_REFLECTION } GsPad;
static const char *const pad_names[] = {"zeros", "border", "reflection"};

typedef struct GridCtx {
  TeTensor *x, *grid;
  int r;           /* spatial rank */
  Method method;
  GsPad pad;
  bool align;
  mlc_dtype acc;
} GridCtx;

static mlc_status grid_parse(const Node *n, GridCtx *k, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *g = &n->inputs[1]->type;
  memset(k, 0, sizeof *k);
  if (!dtype_is_float(x->dtype) || !dtype_is_float(g->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "image.grid_sample of %s with a %s grid is not supported",
                    mlc_dtype_name(x->dtype), mlc_dtype_name(g->dtype));
  k->r = x->ndim - 2;
  if (k->r < 1 || g->ndim != x->ndim || g->dims[0] != x->dims[0] || g->dims[g->ndim - 1] != k->r)
    return diag_set(d, MLC_ERR_INVALID, "image.grid_sample: X must be (N, C, D1..Dr) and grid (N, H1..Hr, %d)", k->r);
  int m = find_name(ir_attr_string(n, "method", "linear"), method_names, 3);
  int p = find_name(ir_attr_string(n, "padding_mode", "zeros"), pad_names, 3);
  if (m < 0) return diag_set(d, MLC_ERR_UNSUPPORTED, "image.grid_sample: mode '%s' is not supported", ir_attr_string(n, "method", ""));
  if (p < 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "image.grid_sample: padding_mode '%s' is not supported",
                    ir_attr_string(n, "padding_mode", ""));
  if (m == M_CUBIC && k->r != 2)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "image.grid_sample: cubic mode needs 2 spatial dims, not %d", k->r);
  k->method = (Method)m;
  k->pad = (GsPad)p;
  k->align = ir_attr_int(n, "align_corners", 0) != 0;
  k->acc = MLC_F64;
  return MLC_OK;
}

static mlc_status grid_infer(Node *n, Diag *d) {
  GridCtx k;
  mlc_status st = grid_parse(n, &k, d);
  if (st != MLC_OK) return st;
  const TensorType *x = &n->inputs[0]->type, *g = &n->inputs[1]->type;
  TensorType o = *x;
  for (int i = 0; i < k.r; i++) o.dims[2 + i] = g->dims[1 + i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

static Expr *fconst(Arena *A, double v) { return tir_const(A, MLC_F64, v); }

/* the reference's reflection of x into [lo, hi] (float) */
static Expr *gs_reflect(Arena *A, Expr *x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return fconst(A, lo);
  Expr *two = fconst(A, 2);
  /* below */
  Expr *dxl = tir_sub(A, fconst(A, lo), x);
  Expr *nl = call1(A, INTRIN_FLOOR, tir_bin(A, E_DIV, dxl, fconst(A, rng)));
  Expr *rl = tir_sub(A, dxl, tir_mul(A, nl, fconst(A, rng)));
  Expr *evl = tir_bin(A, E_EQ, tir_sub(A, nl, tir_mul(A, two, call1(A, INTRIN_FLOOR, tir_bin(A, E_DIV, nl, two)))), fconst(A, 0));
  Expr *below = tir_select(A, evl, tir_add(A, fconst(A, lo), rl), tir_sub(A, fconst(A, hi), rl));
  /* above */
  Expr *dxh = tir_sub(A, x, fconst(A, hi));
  Expr *nh = call1(A, INTRIN_FLOOR, tir_bin(A, E_DIV, dxh, fconst(A, rng)));
  Expr *rh = tir_sub(A, dxh, tir_mul(A, nh, fconst(A, rng)));
  Expr *evh = tir_bin(A, E_EQ, tir_sub(A, nh, tir_mul(A, two, call1(A, INTRIN_FLOOR, tir_bin(A, E_DIV, nh, two)))), fconst(A, 0));
  Expr *above = tir_select(A, evh, tir_sub(A, fconst(A, hi), rh), tir_add(A, fconst(A, lo), rh));
  return tir_select(A, tir_bin(A, E_LT, x, fconst(A, lo)), below, tir_select(A, tir_bin(A, E_GT, x, fconst(A, hi)), above, x));
}

/* an integer tap index after padding: *idx in range for reading, *valid false where zeros padding applies */
static void gs_tap(Arena *A, const GridCtx *k, Expr *i, int64_t len, double lo, double hi, Expr **idx, Expr **valid) {
  *valid = NULL;
  if (k->pad == GP_ZEROS) {
    *valid = tir_bin(A, E_AND, tir_bin(A, E_GE, i, tir_idx(A, 0)), tir_bin(A, E_LT, i, tir_idx(A, len)));
  } else if (k->pad == GP_REFLECTION) {
    i = tir_cast(A, MLC_I64, gs_reflect(A, tir_cast(A, MLC_F64, i), lo, hi));
  }
  *idx = clampi(A, i, len);
}

static Expr *grid_body(TeCtx *c, Expr **idx, void *user) {
  GridCtx *k = user;
  Arena *A = c->arena;
  int r = k->r;
  Expr *coord[MLC_MAX_DIMS];
  double lo[MLC_MAX_DIMS], hi[MLC_MAX_DIMS];
  for (int i = 0; i < r; i++) {
    int64_t len = k->x->shape[2 + i];
    lo[i] = k->align ? 0.0 : -0.5;
    hi[i] = k->align ? (double)len - 1.0 : (double)len - 0.5;
    Expr *gi[MLC_MAX_DIMS];
    gi[0] = idx[0];
    for (int j = 0; j < r; j++) gi[1 + j] = idx[2 + j];
    gi[r + 1] = tir_idx(A, r - 1 - i); /* grid holds (x, y, z): the reverse of the dims */
    Expr *nv = tir_cast(A, MLC_F64, te_read(c, k->grid, r + 2, gi));
    Expr *x = k->align ? tir_mul(A, tir_mul(A, tir_add(A, nv, fconst(A, 1)), fconst(A, 0.5)), fconst(A, (double)(len - 1)))
                       : tir_mul(A, tir_sub(A, tir_mul(A, tir_add(A, nv, fconst(A, 1)), fconst(A, (double)len)), fconst(A, 1)),
                                 fconst(A, 0.5));
    x = tir_cast(A, MLC_F64, tir_cast(A, MLC_F32, x)); /* the reference keeps coordinates in float32 */
    if (k->method == M_NEAREST) {
      x = call1(A, INTRIN_ROUND, x);
    }
    if (k->pad == GP_BORDER) {
      Expr *out = tir_bin(A, E_OR, tir_bin(A, E_LT, x, fconst(A, lo[i])), tir_bin(A, E_GT, x, fconst(A, hi[i])));
      Expr *cl = tir_bin(A, E_MIN, tir_bin(A, E_MAX, x, fconst(A, 0)), fconst(A, (double)(len - 1)));
      x = tir_select(A, out, cl, x);
    } else if (k->pad == GP_REFLECTION) {
      x = gs_reflect(A, x, lo[i], hi[i]);
    }
    coord[i] = tir_cast(A, MLC_F64, tir_cast(A, MLC_F32, x));
  }
  /* taps per spatial dim */
  int ntap = k->method == M_NEAREST ? 1 : k->method == M_LINEAR ? 2 : 4;
  Expr *tidx[MLC_MAX_DIMS][4], *tval[MLC_MAX_DIMS][4], *tw[MLC_MAX_DIMS][4];
  for (int i = 0; i < r; i++) {
    int64_t len = k->x->shape[2 + i];
    if (k->method == M_NEAREST) {
      gs_tap(A, k, tir_cast(A, MLC_I64, coord[i]), len, lo[i], hi[i], &tidx[i][0], &tval[i][0]);
      tw[i][0] = NULL;
      continue;
    }
    Expr *fl = call1(A, INTRIN_FLOOR, coord[i]);
    Expr *t = tir_sub(A, coord[i], fl);
    Expr *base = tir_cast(A, MLC_I64, fl);
    int first = k->method == M_LINEAR ? 0 : -1;
    for (int j = 0; j < ntap; j++)
      gs_tap(A, k, tir_add(A, base, tir_idx(A, first + j)), len, lo[i], hi[i], &tidx[i][j], &tval[i][j]);
    if (k->method == M_LINEAR) {
      tw[i][0] = tir_sub(A, fconst(A, 1), t);
      tw[i][1] = t;
    } else {
      double a = -0.75;
      Expr *t1 = tir_add(A, t, fconst(A, 1)), *u = tir_sub(A, fconst(A, 1), t), *u1 = tir_sub(A, fconst(A, 2), t);
      /* Keys' kernel at distances t + 1, t, 1 - t, 2 - t */
      tw[i][0] = tir_sub(A, tir_mul(A, tir_add(A, tir_mul(A, tir_sub(A, tir_mul(A, fconst(A, a), t1), fconst(A, 5 * a)), t1),
                                                fconst(A, 8 * a)), t1), fconst(A, 4 * a));
      tw[i][1] = tir_add(A, tir_mul(A, tir_mul(A, tir_sub(A, tir_mul(A, fconst(A, a + 2), t), fconst(A, a + 3)), t), t), fconst(A, 1));
      tw[i][2] = tir_add(A, tir_mul(A, tir_mul(A, tir_sub(A, tir_mul(A, fconst(A, a + 2), u), fconst(A, a + 3)), u), u), fconst(A, 1));
      tw[i][3] = tir_sub(A, tir_mul(A, tir_add(A, tir_mul(A, tir_sub(A, tir_mul(A, fconst(A, a), u1), fconst(A, 5 * a)), u1),
                                                fconst(A, 8 * a)), u1), fconst(A, 4 * a));
    }
  }
  int64_t total = 1;
  for (int i = 0; i < r; i++) total *= ntap;
  Expr *acc = NULL;
  for (int64_t t = 0; t < total; t++) {
    int64_t rem = t;
    Expr *xi[MLC_MAX_DIMS], *w = NULL, *valid = NULL;
    xi[0] = idx[0];
    xi[1] = idx[1];
    for (int i = r - 1; i >= 0; i--) {
      int j = (int)(rem % ntap);
      rem /= ntap;
      xi[2 + i] = tidx[i][j];
      if (tw[i][j]) w = w ? tir_mul(A, w, tw[i][j]) : tw[i][j];
      if (tval[i][j]) valid = valid ? tir_bin(A, E_AND, valid, tval[i][j]) : tval[i][j];
    }
    Expr *v = tir_cast(A, MLC_F64, te_read(c, k->x, r + 2, xi));
    if (valid) v = tir_select(A, valid, v, fconst(A, 0));
    if (w) v = tir_mul(A, v, w);
    acc = acc ? tir_add(A, acc, v) : v;
  }
  return tir_cast(A, k->x->dtype, acc);
}

static mlc_status grid_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  GridCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = grid_parse(n, k, d);
  if (st != MLC_OK) return st;
  k->x = ins[0];
  k->grid = ins[1];
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "grid_sample", "injective", o->dtype, o->ndim, o->dims, grid_body, k);
  return MLC_OK;
}

typedef struct AffineCtx {
  TeTensor *theta;
  int r;
  int64_t size[MLC_MAX_DIMS]; /* N, C, spatial.. */
  bool align;
} AffineCtx;

static mlc_status affine_parse(const Node *n, AffineCtx *k, Diag *d) {
  const TensorType *t = &n->inputs[0]->type;
  memset(k, 0, sizeof *k);
  int ns = ir_attr_ints(n, "size", k->size, MLC_MAX_DIMS);
  if (!dtype_is_float(t->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "image.affine_grid of %s is not supported", mlc_dtype_name(t->dtype));
  if (ns != 4 && ns != 5) return diag_set(d, MLC_ERR_INVALID, "image.affine_grid: size must be (N, C, H, W) or (N, C, D, H, W)");
  k->r = ns - 2;
  if (t->ndim != 3 || t->dims[0] != k->size[0] || t->dims[1] != k->r || t->dims[2] != k->r + 1)
    return diag_set(d, MLC_ERR_INVALID, "image.affine_grid: theta must be (N, %d, %d)", k->r, k->r + 1);
  for (int i = 0; i < ns; i++)
    if (k->size[i] < 0) return diag_set(d, MLC_ERR_INVALID, "image.affine_grid: negative size");
  k->align = ir_attr_int(n, "align_corners", 0) != 0;
  return MLC_OK;
}

static mlc_status affine_infer(Node *n, Diag *d) {
  AffineCtx k;
  mlc_status st = affine_parse(n, &k, d);
  if (st != MLC_OK) return st;
  TensorType o = {n->inputs[0]->type.dtype, k.r + 2, {0}};
  o.dims[0] = k.size[0];
  for (int i = 0; i < k.r; i++) o.dims[1 + i] = k.size[2 + i];
  o.dims[k.r + 1] = k.r;
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* grid[n, s.., j] = sum_i theta[n, j, i] * base_i + theta[n, j, r]; base_i is the normalised coordinate of
 * the spatial dim r-1-i (x is the last dim): align_corners -1 + 2s/(L-1), else (2s+1)/L - 1 */
static Expr *affine_body(TeCtx *c, Expr **idx, void *user) {
  AffineCtx *k = user;
  Arena *A = c->arena;
  mlc_dtype t = k->theta->dtype, F = t == MLC_F64 ? MLC_F64 : MLC_F32;
  Expr *ti[3] = {idx[0], idx[k->r + 1], tir_idx(A, k->r)};
  Expr *acc = tir_cast(A, F, te_read(c, k->theta, 3, ti));
  for (int i = 0; i < k->r; i++) {
    int dim = k->r - 1 - i;
    int64_t len = k->size[2 + dim];
    Expr *s = tir_cast(A, F, idx[1 + dim]);
    Expr *b;
    if (k->align) b = len > 1 ? tir_add(A, tir_const(A, F, -1), tir_mul(A, s, tir_const(A, F, 2.0 / (double)(len - 1)))) : tir_const(A, F, -1);
    else b = tir_sub(A, tir_bin(A, E_DIV, tir_add(A, tir_mul(A, s, tir_const(A, F, 2)), tir_const(A, F, 1)), tir_const(A, F, (double)len)), tir_const(A, F, 1));
    Expr *tj[3] = {idx[0], idx[k->r + 1], tir_idx(A, i)};
    acc = tir_add(A, acc, tir_mul(A, tir_cast(A, F, te_read(c, k->theta, 3, tj)), b));
  }
  return tir_cast(A, t, acc);
}

static mlc_status affine_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  AffineCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = affine_parse(n, k, d);
  if (st != MLC_OK) return st;
  k->theta = ins[0];
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "affine_grid", "injective", o->dtype, o->ndim, o->dims, affine_body, k);
  return MLC_OK;
}

const OpDef topi_ops_image[] = {
    /* name          pattern        min max nout infer         compute */
    {"image.resize", PAT_INJECTIVE, 1, 1, 1, resize_infer, resize_compute, DYN_BATCH},
    {"image.grid_sample", PAT_INJECTIVE, 2, 2, 1, grid_infer, grid_compute},
    {"image.affine_grid", PAT_INJECTIVE, 1, 1, 1, affine_infer, affine_compute},
    {0},
};
