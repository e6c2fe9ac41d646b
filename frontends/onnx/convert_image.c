/* ONNX converters of the image family (see families.def), onto image.resize (src/topi/image.c).
 *
 *   Upsample (7: scales attribute; 9: scales input) and Resize (10: X, scales) use the asymmetric transform
 *   and, for nearest, floor, as those opsets define.
 *   Resize (11, 13: X, roi, scales, sizes; 18, 19: + axes, keep_aspect_ratio_policy, antialias) reads
 *   coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value.
 * roi, scales and sizes must be compile-time constants. Everything is expanded to one entry per input dim:
 * output size = floor(in * scale) with scales, or sizes (keep_aspect_ratio_policy not_larger / not_smaller:
 * one scale, the min / max of sizes / in over the axes, and size = round(scale * in)), and the scale the
 * coordinate transform divides by (sizes / in with sizes). antialias (18, 19) widens the linear / cubic filter of
 * every downscaled dim (see image.resize).
 *
 *   GridSample (16: bilinear | nearest | bicubic, 4-D only; 20, 22: linear | nearest | cubic, N-d)
 *   -> image.grid_sample with method, padding_mode, align_corners.
 *   AffineGrid (20) -> image.affine_grid: the size input must be a compile-time constant (4 or 5 entries). */
#include <math.h>
#include <string.h>
#include "frontends/onnx/onnx.h"

/* float values of a constant float tensor; -1 if not constant */
static int const_floats(const Value *v, double *out, int max) {
  if (!v || !v->data) return -1;
  int64_t n = tt_numel(&v->type);
  if (n > max) return -1;
  for (int64_t i = 0; i < n; i++) {
    switch (v->type.dtype) {
      case MLC_F32: out[i] = ((const float *)v->data)[i]; break;
      case MLC_F64: out[i] = ((const double *)v->data)[i]; break;
      default: return -1;
    }
  }
  return (int)n;
}

static bool present(const OnnxNode *n, int i) {
  return n->ninputs > i && n->inputs[i] && tt_numel(&n->inputs[i]->type) > 0;
}

static mlc_status resize_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 1 || !n->inputs[0]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs an input", n->op_type);
  Value *x = n->inputs[0];
  int r = x->type.ndim;
  bool upsample = strcmp(n->op_type, "Upsample") == 0;
  bool old = upsample || n->opset < 11; /* Upsample and Resize-10 */
  const char *mode = onnx_attr_string(n, "mode", "nearest");
  if (!strcmp(mode, "bilinear") || !strcmp(mode, "trilinear")) mode = "linear";
  if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic"))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "mode '%s' is not supported", mode);
  /* axes (opset 18) */
  int64_t axes[MLC_MAX_DIMS];
  int na = onnx_attr_ints(n, "axes", axes, MLC_MAX_DIMS);
  if (na > r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%d axes for a rank-%d input", na, r);
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  for (int i = 0; i < na; i++) {
    if (axes[i] < -r || axes[i] >= r)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld is out of range", (long long)axes[i]);
    if (axes[i] < 0) axes[i] += r;
  }
  double scales[MLC_MAX_DIMS], roi[2 * MLC_MAX_DIMS], given[2 * MLC_MAX_DIMS];
  int64_t size[MLC_MAX_DIMS], sizes_in[MLC_MAX_DIMS];
  for (int i = 0; i < r; i++) {
    scales[i] = 1.0;
    size[i] = x->type.dims[i];
    roi[i] = 0;
    roi[r + i] = 1;
  }
  int scales_at = old ? 1 : 2;
  const char *coord = old ? "asymmetric" : onnx_attr_string(n, "coordinate_transformation_mode", "half_pixel");
  {
    /* every shape-like input must be constant: name all that are not in one message */
    StrBuf miss = {0};
    int nmiss = 0;
    int want[3] = {scales_at, old ? -1 : 3, !old && !strcmp(coord, "tf_crop_and_resize") ? 1 : -1};
    for (int j = 0; j < 3; j++)
      if (want[j] >= 0 && present(n, want[j]) && !n->inputs[want[j]]->data) {
        sb_printf(&miss, "%s'%s'", nmiss++ ? ", " : "", n->inputs[want[j]]->name);
      }
    if (nmiss) {
      mlc_status st = onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                                 "inputs %s of %s (roi, scales, sizes) must be known at compile time", miss.s,
                                 n->op_type);
      sb_free(&miss);
      return st;
    }
  }
  bool have_scales = false, have_sizes = false;
  if (upsample && n->opset < 9) {
    int k = onnx_attr_floats(n, "scales", given, MLC_MAX_DIMS);
    if (k != r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "scales must have %d entries", r);
    have_scales = true;
  } else if (present(n, scales_at)) {
    int k = const_floats(n->inputs[scales_at], given, 2 * MLC_MAX_DIMS);
    if (k < 0)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "input 'scales' of %s (value '%s') must be a float constant known at compile time",
                        n->op_type, n->inputs[scales_at]->name);
    if (k != na) return onnx_error(cx, n, d, MLC_ERR_INVALID, "scales has %d entries, expected %d", k, na);
    have_scales = true;
  }
  if (have_scales) {
    for (int i = 0; i < na; i++) {
      if (!(given[i] > 0)) return onnx_error(cx, n, d, MLC_ERR_INVALID, "scales must be positive");
      scales[axes[i]] = given[i];
    }
  }
  if (!old && present(n, 3)) {
    int k = onnx_const_ints(n->inputs[3], sizes_in, MLC_MAX_DIMS);
    if (k < 0)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "input 'sizes' of Resize (value '%s') must be known at compile time", n->inputs[3]->name);
    if (k != na) return onnx_error(cx, n, d, MLC_ERR_INVALID, "sizes has %d entries, expected %d", k, na);
    if (have_scales) return onnx_error(cx, n, d, MLC_ERR_INVALID, "only one of scales and sizes may be given");
    have_sizes = true;
  }
  if (!have_scales && !have_sizes)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "one of scales and sizes must be given");
  if (!old && !strcmp(coord, "tf_crop_and_resize") && present(n, 1)) {
    int k = const_floats(n->inputs[1], given, 2 * MLC_MAX_DIMS);
    if (k < 0)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "input 'roi' of Resize (value '%s') must be known at compile time",
                        n->inputs[1]->name);
    if (k != 2 * na) return onnx_error(cx, n, d, MLC_ERR_INVALID, "roi has %d entries, expected %d", k, 2 * na);
    for (int i = 0; i < na; i++) {
      roi[axes[i]] = given[i];
      roi[r + axes[i]] = given[na + i];
    }
  }
  if (have_scales) {
    for (int i = 0; i < r; i++) size[i] = (int64_t)floor((double)x->type.dims[i] * (roi[r + i] - roi[i]) * scales[i]);
  } else {
    const char *policy = onnx_attr_string(n, "keep_aspect_ratio_policy", "stretch");
    if (!strcmp(policy, "stretch")) {
      for (int i = 0; i < na; i++) {
        size[axes[i]] = sizes_in[i];
        scales[axes[i]] = (double)sizes_in[i] / (double)x->type.dims[axes[i]];
      }
    } else if (!strcmp(policy, "not_larger") || !strcmp(policy, "not_smaller")) {
      bool larger = !strcmp(policy, "not_smaller");
      double s = larger ? 0 : INFINITY;
      for (int i = 0; i < na; i++) {
        double v = (double)sizes_in[i] / (double)x->type.dims[axes[i]];
        s = larger ? fmax(s, v) : fmin(s, v);
      }
      for (int i = 0; i < na; i++) {
        scales[axes[i]] = s;
        size[axes[i]] = (int64_t)floor(s * (double)x->type.dims[axes[i]] + 0.5);
      }
    } else {
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "keep_aspect_ratio_policy '%s' is not known", policy);
    }
  }
  Node *nd = onnx_emit(cx, n, "image.resize", 1, &x, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, nd, "size", size, r);
    ir_set_floats(g, nd, "scale", scales, r);
    ir_set_floats(g, nd, "roi", roi, 2 * r);
    ir_set_string(g, nd, "method", mode);
    ir_set_string(g, nd, "coord", coord);
    ir_set_string(g, nd, "nearest_mode", old ? "floor" : onnx_attr_string(n, "nearest_mode", "round_prefer_floor"));
    ir_set_float(g, nd, "cubic_a", onnx_attr_float(n, "cubic_coeff_a", -0.75));
    ir_set_int(g, nd, "exclude_outside", onnx_attr_int(n, "exclude_outside", 0));
    ir_set_float(g, nd, "extrapolation", onnx_attr_float(n, "extrapolation_value", 0.0));
    ir_set_int(g, nd, "antialias", !old && onnx_attr_int(n, "antialias", 0) != 0);
  }
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  outs[0] = nd->outputs[0];
  return MLC_OK;
}

static mlc_status grid_sample_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 2 || !n->inputs[0] || !n->inputs[1])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "GridSample needs X and grid");
  const char *mode = onnx_attr_string(n, "mode", n->opset < 20 ? "bilinear" : "linear");
  if (!strcmp(mode, "bilinear")) mode = "linear";
  else if (!strcmp(mode, "bicubic")) mode = "cubic";
  if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic"))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "GridSample mode '%s' is not known", mode);
  if (n->opset < 20 && n->inputs[0]->type.ndim != 4)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "GridSample-%d takes a 4-D input", n->opset);
  Node *nd = onnx_emit(cx, n, "image.grid_sample", 2, n->inputs, 1, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  Graph *g = onnx_graph(cx);
  ir_set_string(g, nd, "method", mode);
  ir_set_string(g, nd, "padding_mode", onnx_attr_string(n, "padding_mode", "zeros"));
  ir_set_int(g, nd, "align_corners", onnx_attr_int(n, "align_corners", 0) != 0);
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  outs[0] = nd->outputs[0];
  return MLC_OK;
}

static mlc_status affine_grid_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 2 || !n->inputs[0] || !n->inputs[1])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "AffineGrid needs theta and size");
  int64_t size[MLC_MAX_DIMS];
  int ns = onnx_const_ints(n->inputs[1], size, MLC_MAX_DIMS);
  if (ns < 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "input 'size' of AffineGrid (value '%s') must be known at compile time",
                      n->inputs[1]->name);
  Node *nd = onnx_emit(cx, n, "image.affine_grid", 1, n->inputs, 1, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  Graph *g = onnx_graph(cx);
  ir_set_ints(g, nd, "size", size, ns);
  ir_set_int(g, nd, "align_corners", onnx_attr_int(n, "align_corners", 0) != 0);
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  outs[0] = nd->outputs[0];
  return MLC_OK;
}

const OnnxConverter onnx_ops_image[] = {
    {"GridSample", "", grid_sample_convert},
    {"AffineGrid", "", affine_grid_convert},
    {"Resize", "", resize_convert},
    {"Upsample", "", resize_convert},
    {0},
};
