/* ONNX converters of the spatial family (see families.def), onto the graph ops of src/topi/spatial.c.
 *
 *   MaxUnpool (9, 11, 22: X, I[, output_shape]) -> nn.max_unpool with the unpooled shape (in-1)*stride +
 *     kernel - pads per spatial dim, which the indices address, and the output shape: output_shape (a
 *     compile-time constant) or the unpooled shape.
 *   Col2Im (18: input, image_shape, block_shape; dilations, pads, strides) -> nn.col2im; image_shape and
 *     block_shape must be compile-time constants.
 *   RoiAlign (10; 16 and 22: coordinate_transformation_mode, default half_pixel; opset 10 is
 *     output_half_pixel) -> vision.roi_align. sampling_ratio 0 (adaptive: ceil(roi size / output size)
 *     samples per bin, a per-roi value): constant rois bound the sample grid (grid_max, for the TE form GPU
 *     targets use); otherwise roi_align loops to each roi's grid (its loop form).
 *   MaxRoiPool (1: X, rois[R, 5]; pooled_shape, spatial_scale) -> vision.roi_pool.
 *   DeformConv (19, 22: X, W, offset[, B[, mask]]) -> nn.deform_im2col (2-D only), a batch matmul with the
 *     weight, a transpose + reshape to NCHW and the bias as a broadcast add (see deformconv_convert). */
#include <math.h>
#include <string.h>
#include "frontends/onnx/onnx.h"

static bool present(const OnnxNode *n, int i) { return n->ninputs > i && n->inputs[i]; }

/* An attribute of cnt ints (dflt when absent); error when its length is wrong. */
static mlc_status attr_ints(OnnxCtx *cx, const OnnxNode *n, const char *name, int cnt, int64_t dflt, int64_t *out,
                            Diag *d) {
  int64_t v[2 * MLC_MAX_DIMS];
  int k = onnx_attr_ints(n, name, v, 2 * MLC_MAX_DIMS);
  for (int i = 0; i < cnt; i++) out[i] = k < 0 ? dflt : v[i < k ? i : 0];
  if (k >= 0 && k != cnt)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "attribute '%s' has %d values, expected %d", name, k, cnt);
  return MLC_OK;
}

/* An integer input that must be a compile-time constant of cnt values (cnt < 0: any count, returned). */
static mlc_status const_input(OnnxCtx *cx, const OnnxNode *n, int i, const char *what, int64_t *out, int *cnt,
                              Diag *d) {
  int k = onnx_const_ints(n->inputs[i], out, MLC_MAX_DIMS);
  if (k < 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "input '%s' of %s (value '%s') must be known at compile time",
                      what, n->op_type, n->inputs[i]->name);
  if (*cnt >= 0 && k != *cnt)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "input '%s' has %d values, expected %d", what, k, *cnt);
  *cnt = k;
  return MLC_OK;
}

/* ---------------------------------------------------------------- MaxUnpool */

static mlc_status maxunpool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim, nsp = r - 2;
  if (nsp < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "MaxUnpool needs an input of rank >= 3, got %d", r);
  int64_t kernel[MLC_MAX_DIMS], strides[MLC_MAX_DIMS], pads[2 * MLC_MAX_DIMS], shape[MLC_MAX_DIMS];
  if (!onnx_has_attr(n, "kernel_shape")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "MaxUnpool needs kernel_shape");
  if ((st = attr_ints(cx, n, "kernel_shape", nsp, 1, kernel, d)) || (st = attr_ints(cx, n, "strides", nsp, 1, strides, d)) ||
      (st = attr_ints(cx, n, "pads", 2 * nsp, 0, pads, d)))
    return st;
  int64_t unpooled[MLC_MAX_DIMS] = {x->type.dims[0], x->type.dims[1]};
  for (int i = 0; i < nsp; i++)
    unpooled[2 + i] = (x->type.dims[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[nsp + i];
  memcpy(shape, unpooled, sizeof(int64_t) * (size_t)r);
  if (present(n, 2)) {
    int cnt = r;
    if ((st = const_input(cx, n, 2, "output_shape", shape, &cnt, d))) return st;
  }
  Value *ins[2] = {x, n->inputs[1]};
  Node *nd = onnx_emit(cx, n, "nn.max_unpool", 2, ins, 1, d);
  if (nd) {
    ir_set_ints(onnx_graph(cx), nd, "shape", shape, r);
    ir_set_ints(onnx_graph(cx), nd, "unpooled", unpooled, r);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- Col2Im */

static mlc_status col2im_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  int64_t image[MLC_MAX_DIMS], block[MLC_MAX_DIMS], dil[MLC_MAX_DIMS], strides[MLC_MAX_DIMS], pads[2 * MLC_MAX_DIMS];
  int nsp = -1;
  if ((st = const_input(cx, n, 1, "image_shape", image, &nsp, d))) return st;
  if ((st = const_input(cx, n, 2, "block_shape", block, &nsp, d))) return st;
  if (nsp < 1 || nsp + 2 > MLC_MAX_DIMS)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Col2Im with %d spatial dims is not supported", nsp);
  if ((st = attr_ints(cx, n, "dilations", nsp, 1, dil, d)) || (st = attr_ints(cx, n, "strides", nsp, 1, strides, d)) ||
      (st = attr_ints(cx, n, "pads", 2 * nsp, 0, pads, d)))
    return st;
  Node *nd = onnx_emit(cx, n, "nn.col2im", 1, &n->inputs[0], 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, nd, "image_shape", image, nsp);
    ir_set_ints(g, nd, "block_shape", block, nsp);
    ir_set_ints(g, nd, "dilation", dil, nsp);
    ir_set_ints(g, nd, "strides", strides, nsp);
    ir_set_ints(g, nd, "padding", pads, 2 * nsp);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- RoiAlign */

/* The largest adaptive sample grid over the rois, in either dim, computed as roi_align does; 0 when the rois are
 * not constant (roi_align then loops to each roi's grid). */
static void roi_grid_max(const Value *rois, double scale, bool half_pixel, int64_t oh, int64_t ow, int64_t *out) {
  *out = 0;
  if (!rois->data || (rois->type.dtype != MLC_F32 && rois->type.dtype != MLC_F64)) return;
  int64_t nr = rois->type.dims[0], g = 1;
  for (int64_t i = 0; i < nr; i++)
    for (int dim = 0; dim < 2; dim++) {
      double v[2];
      for (int j = 0; j < 2; j++) {
        int64_t at = i * 4 + (dim ? 0 : 1) + 2 * j;
        v[j] = rois->type.dtype == MLC_F32 ? ((const float *)rois->data)[at] : ((const double *)rois->data)[at];
        v[j] = v[j] * scale - (half_pixel ? 0.5 : 0.0);
      }
      double size = v[1] - v[0];
      if (!half_pixel && size < 1.0) size = 1.0;
      double grid = ceil(size / (double)(dim ? ow : oh));
      if (!(grid < 4096)) return; /* the extern form's loops instead of a huge reduction */
      if ((int64_t)grid > g) g = (int64_t)grid;
    }
  *out = g;
}

static mlc_status roialign_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  const char *ctm = n->opset >= 16 ? onnx_attr_string(n, "coordinate_transformation_mode", "half_pixel")
                                   : "output_half_pixel";
  bool half_pixel = !strcmp(ctm, "half_pixel");
  if (!half_pixel && strcmp(ctm, "output_half_pixel"))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "unknown coordinate_transformation_mode '%s'", ctm);
  const char *mode = onnx_attr_string(n, "mode", "avg");
  int64_t oh = onnx_attr_int(n, "output_height", 1), ow = onnx_attr_int(n, "output_width", 1);
  int64_t sampling = onnx_attr_int(n, "sampling_ratio", 0);
  double scale = onnx_attr_float(n, "spatial_scale", 1.0);
  if (oh < 1 || ow < 1 || sampling < 0)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "output_height/width must be >= 1 and sampling_ratio >= 0");
  int64_t grid_max = 0;
  if (sampling == 0 && n->inputs[1]->type.ndim == 2 && n->inputs[1]->type.dims[1] == 4)
    roi_grid_max(n->inputs[1], scale, half_pixel, oh, ow, &grid_max);
  /* a data-dependent number of rois: its extent too, so the kernel skips the padding rois */
  Value *rois = n->inputs[1], *ins[4] = {n->inputs[0], rois, n->inputs[2], rois->dyn_extent};
  Node *nd = onnx_emit(cx, n, "vision.roi_align", rois->dyn_extent && rois->dyn_axis == 0 ? 4 : 3, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_string(g, nd, "mode", mode);
    ir_set_int(g, nd, "output_height", oh);
    ir_set_int(g, nd, "output_width", ow);
    ir_set_int(g, nd, "sampling_ratio", sampling);
    ir_set_float(g, nd, "spatial_scale", scale);
    ir_set_int(g, nd, "half_pixel", half_pixel);
    if (grid_max) ir_set_int(g, nd, "grid_max", grid_max);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- MaxRoiPool */

static mlc_status maxroipool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  int64_t shape[2];
  if (onnx_attr_ints(n, "pooled_shape", shape, 2) != 2 || shape[0] < 1 || shape[1] < 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "attribute 'pooled_shape' must be 2 sizes >= 1");
  Node *nd = onnx_emit(cx, n, "vision.roi_pool", 2, n->inputs, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, nd, "pooled_shape", shape, 2);
    ir_set_float(g, nd, "spatial_scale", onnx_attr_float(n, "spatial_scale", 1.0));
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- DeformConv */

static mlc_status emit_shaped(OnnxCtx *cx, const OnnxNode *n, const char *op, const char *attr, Value *x, int cnt,
                              const int64_t *v, Value **out, Diag *d) {
  Node *nd = onnx_emit(cx, n, op, 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, attr, v, cnt);
  return onnx_finish_one(cx, n, nd, out, d);
}

/* DeformConv = nn.deform_im2col (cols [N, G, oh*ow, Kg], Kg = kh*kw*C/G) times the weight as [G, OC/G, Kg]
 * (batch matmul with transpose_b: [N, G, oh*ow, OC/G]; with one group the weight is the 2-D [OC, K] that
 * AlterOpLayout packs), then transpose + reshape to [N, OC, oh, ow] and the bias. */
static mlc_status deformconv_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  Value *x = n->inputs[0], *w = n->inputs[1];
  if (x->type.ndim != 4 || w->type.ndim != 4)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "DeformConv on rank-%d input is not supported (2-D only)",
                      x->type.ndim);
  int64_t kernel[2], strides[2], dil[2], pads[4];
  if ((st = attr_ints(cx, n, "kernel_shape", 2, 0, kernel, d)) || (st = attr_ints(cx, n, "strides", 2, 1, strides, d)) ||
      (st = attr_ints(cx, n, "dilations", 2, 1, dil, d)) || (st = attr_ints(cx, n, "pads", 4, 0, pads, d)))
    return st;
  if (onnx_has_attr(n, "kernel_shape") && (kernel[0] != w->type.dims[2] || kernel[1] != w->type.dims[3]))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "kernel_shape does not match the weight's shape");
  int64_t groups = onnx_attr_int(n, "group", 1), oc = w->type.dims[0], nb = x->type.dims[0];
  if (groups < 1 || x->type.dims[1] != w->type.dims[1] * groups || oc % groups)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "channels do not match: X has %lld, W [%lld, %lld, ...], group %lld",
                      (long long)x->type.dims[1], (long long)oc, (long long)w->type.dims[1], (long long)groups);
  if (w->type.dtype != x->type.dtype) return onnx_error(cx, n, d, MLC_ERR_INVALID, "W's dtype differs from X's");
  Value *ins[3] = {x, n->inputs[2], present(n, 4) ? n->inputs[4] : NULL};
  Node *nd = onnx_emit(cx, n, "nn.deform_im2col", ins[2] ? 3 : 2, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, nd, "kernel_shape", w->type.dims + 2, 2);
    ir_set_ints(g, nd, "strides", strides, 2);
    ir_set_ints(g, nd, "dilation", dil, 2);
    ir_set_ints(g, nd, "padding", pads, 4);
    ir_set_int(g, nd, "groups", groups);
    ir_set_int(g, nd, "offset_group", onnx_attr_int(n, "offset_group", 1));
  }
  Value *cols, *wm, *y;
  if ((st = onnx_finish_one(cx, n, nd, &cols, d))) return st;
  int64_t kg = w->type.dims[1] * w->type.dims[2] * w->type.dims[3], p = cols->type.dims[2];
  int64_t wshape[3] = {groups, oc / groups, kg}, oshape[4] = {nb, oc, 0, 0}, perm[4] = {0, 1, 3, 2};
  int64_t wperm[4] = {0, 2, 3, 1}; /* [OC, C/G, kh, kw] -> [OC, kh, kw, C/G], the columns' order */
  if ((st = emit_shaped(cx, n, "transpose", "axes", w, 4, wperm, &wm, d))) return st;
  if (groups == 1) {
    if ((st = emit_shaped(cx, n, "reshape", "newshape", wm, 2, wshape + 1, &wm, d))) return st;
  } else if ((st = emit_shaped(cx, n, "reshape", "newshape", wm, 3, wshape, &wm, d))) {
    return st;
  }
  Value *mm[2] = {cols, wm};
  Node *bm = onnx_emit(cx, n, "nn.batch_matmul", 2, mm, 1, d);
  if (bm) {
    ir_set_int(onnx_graph(cx), bm, "transpose_a", 0);
    ir_set_int(onnx_graph(cx), bm, "transpose_b", 1);
  }
  if ((st = onnx_finish_one(cx, n, bm, &y, d))) return st;
  if ((st = emit_shaped(cx, n, "transpose", "axes", y, 4, perm, &y, d))) return st;
  oshape[2] = n->inputs[2]->type.dims[2];
  oshape[3] = n->inputs[2]->type.dims[3];
  if (oshape[2] * oshape[3] != p) return onnx_error(cx, n, d, MLC_ERR_INTERNAL, "DeformConv: column count mismatch");
  if ((st = emit_shaped(cx, n, "reshape", "newshape", y, 4, oshape, &y, d))) return st;
  if (present(n, 3)) {
    Value *b = n->inputs[3];
    if (b->type.ndim != 1 || b->type.dims[0] != oc)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "bias must be a vector of %lld values", (long long)oc);
    int64_t shape[3] = {oc, 1, 1};
    Value *rb;
    if ((st = emit_shaped(cx, n, "reshape", "newshape", b, 3, shape, &rb, d))) return st;
    Value *add[2] = {y, rb};
    if ((st = onnx_finish_one(cx, n, onnx_emit(cx, n, "add", 2, add, 1, d), &y, d))) return st;
  }
  outs[0] = y;
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OnnxConverter onnx_ops_spatial[] = {
    /* op_type      domain  converter */
    {"MaxUnpool", "", maxunpool_convert},
    {"Col2Im", "", col2im_convert},
    {"RoiAlign", "", roialign_convert},
    {"MaxRoiPool", "", maxroipool_convert},
    {"DeformConv", "", deformconv_convert},
    {0},
};
