/* ONNX converters of ops whose output shape depends on data (see families.def), onto the ops of
 * src/topi/dynamic.c: NonMaxSuppression -> vision.non_max_suppression, Unique -> unique, NonZero -> nonzero,
 * Compress -> compress. Each graph op has a static upper-bound shape and a hidden int64 [1] output with the
 * actual extent. Readers carry the extent by their graph ops' rules (src/ir/dynamic.c) or are refused; the
 * importer also refuses an ONNX node whose result lost it (Shape and Size would fold the upper bound).
 *
 * When the value that decides the shape is a compile-time constant the result stays static, as before:
 * Compress's condition becomes a constant index list for take (after a reshape to 1-D when there is no
 * axis), NonZero of a constant input becomes the constant index matrix. NonMaxSuppression's
 * max_output_boxes_per_class bounds the output, so it must be known at compile time (absent or <= 0: no
 * boxes); the thresholds may be run-time inputs. Unique without an axis is unique of the flattened input. */
#include <string.h>
#include "frontends/onnx/onnx.h"

static mlc_status get_axis(OnnxCtx *cx, const OnnxNode *n, int r, int64_t *axis, Diag *d) {
  int64_t a = onnx_attr_int(n, "axis", 0);
  if (a < -r || a >= r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)a, r);
  *axis = a < 0 ? a + r : a;
  return MLC_OK;
}

/* x reshaped to 1-D (x itself when it already is) */
static mlc_status flatten(OnnxCtx *cx, const OnnxNode *n, Value **x, Diag *d) {
  if ((*x)->type.ndim == 1) return MLC_OK;
  Node *r = onnx_emit(cx, n, "reshape", 1, x, 1, d);
  int64_t total = tt_numel(&(*x)->type);
  if (r) ir_set_ints(onnx_graph(cx), r, "newshape", &total, 1);
  return onnx_finish_one(cx, n, r, x, d);
}

/* the name of a dynamic op's hidden extent output */
static void name_count(OnnxCtx *cx, const OnnxNode *n, Node *nd) {
  nd->outputs[nd->noutputs - 1]->name = arena_printf(onnx_graph(cx)->arena, "%s.extent", n->name);
}

/* output k's ONNX name, for a result that is a constant (NULL: a generated name) */
static const char *out_name(const OnnxNode *n, int k) {
  return k < n->noutputs && n->output_names[k] && *n->output_names[k] ? n->output_names[k] : NULL;
}

/* an empty constant of type t named as output k (a dynamic op's result when its bound is 0) */
static Value *empty(OnnxCtx *cx, const OnnxNode *n, int k, TensorType t) { return onnx_const(cx, out_name(n, k), t, NULL); }

/* ---------------------------------------------------------------- NonMaxSuppression (opset 10, 11) */

static mlc_status nms_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *boxes = n->inputs[0], *scores = n->inputs[1];
  int64_t center = onnx_attr_int(n, "center_point_box", 0);
  if (center != 0 && center != 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "center_point_box must be 0 or 1, got %lld", (long long)center);
  if (boxes->type.ndim != 3 || scores->type.ndim != 3)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "boxes must be [B, N, 4] and scores [B, C, N]");
  int64_t max_out = 0;
  Value *mv = n->ninputs > 2 ? n->inputs[2] : NULL;
  if (mv) {
    int64_t vals[2];
    if (mv->type.dtype != MLC_I64 || tt_numel(&mv->type) != 1)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "max_output_boxes_per_class must be one int64");
    if (onnx_const_ints(mv, vals, 2) != 1) {
      const char *deps = onnx_input_deps(cx, 1, &mv);
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "input 'max_output_boxes_per_class' bounds the output shape, so it must be known at compile "
                        "time%s%s",
                        *deps ? "; it depends on the graph inputs " : "", deps);
    }
    max_out = vals[0];
  }
  int64_t nb = boxes->type.dims[1];
  int64_t per = max_out < nb ? max_out : nb;
  if (per < 0) per = 0;
  int64_t B = scores->type.dims[0], C = scores->type.dims[1];
  if (B > 0 && C > 0 && per > 0 && (B > ((int64_t)1 << 36) / C || B * C > ((int64_t)1 << 36) / per))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "output bound %lld x %lld x %lld boxes is too large",
                      (long long)B, (long long)C, (long long)per);
  if (B * C * per == 0) {
    /* absent or non-positive max_output_boxes_per_class, or no boxes: nothing is selected */
    outs[0] = empty(cx, n, 0, (TensorType){.dtype = MLC_I64, .ndim = 2, .dims = {0, 3}});
    return MLC_OK;
  }
  Value *ins[4] = {boxes, scores, n->ninputs > 3 ? n->inputs[3] : NULL, n->ninputs > 4 ? n->inputs[4] : NULL};
  bool has_score = ins[3] != NULL;
  if (!ins[2]) ins[2] = onnx_scalar(cx, n, "iou_threshold", MLC_F32, 0.0);
  if (!ins[3]) ins[3] = onnx_scalar(cx, n, "score_threshold", MLC_F32, 0.0);
  /* boxes and scores with a data-dependent number of boxes (one extent, along boxes' axis 1 and scores' 2):
   * the kernel reads the count */
  Value *count = boxes->dyn_extent ? boxes->dyn_extent : scores->dyn_extent;
  if (count) {
    const char *why = !boxes->dyn_extent || boxes->dyn_axis != 1 ? "the boxes are not data-dependent along axis 1"
                      : !scores->dyn_extent || scores->dyn_axis != 2 ? "the scores are not data-dependent along axis 2"
                      : scores->dyn_extent != boxes->dyn_extent ? "its boxes and scores have different extents"
                                                                 : NULL;
    if (why) return ir_dynamic_use_error(onnx_graph(cx), boxes->dyn_extent ? boxes : scores, n->name, n->op_type, why, d);
    for (int i = 2; i < 4; i++)
      if (ins[i]->dyn_extent)
        return ir_dynamic_use_error(onnx_graph(cx), ins[i], n->name, n->op_type, "a threshold is data-dependent", d);
  }
  Value *nins[5] = {ins[0], ins[1], ins[2], ins[3], count};
  Node *nd = onnx_emit(cx, n, "vision.non_max_suppression", count ? 5 : 4, nins, 2, d);
  if (!nd) return d->status;
  Graph *g = onnx_graph(cx);
  ir_set_int(g, nd, "center_point_box", center);
  ir_set_int(g, nd, "max_output", max_out);
  ir_set_int(g, nd, "has_score_threshold", has_score);
  name_count(cx, n, nd);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- Unique (opset 11) */

static mlc_status unique_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t sorted = onnx_attr_int(n, "sorted", 1), axis = 0;
  if (onnx_has_attr(n, "axis")) {
    if (x->type.ndim < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis given for a scalar input");
    if ((st = get_axis(cx, n, x->type.ndim, &axis, d))) return st;
  } else if ((st = flatten(cx, n, &x, d))) {
    return st;
  }
  if (x->type.dims[axis] == 0) {
    TensorType none = {.dtype = MLC_I64, .ndim = 1, .dims = {0}};
    outs[0] = empty(cx, n, 0, x->type);
    for (int i = 1; i < 4 && i < n->noutputs; i++) outs[i] = empty(cx, n, i, none);
    return MLC_OK;
  }
  Node *nd = onnx_emit(cx, n, "unique", 1, &x, 5, d);
  if (!nd) return d->status;
  ir_set_int(onnx_graph(cx), nd, "axis", axis);
  ir_set_int(onnx_graph(cx), nd, "sorted", sorted != 0);
  name_count(cx, n, nd);
  if ((st = onnx_finish(cx, n, nd, d))) return st;
  for (int i = 0; i < 4 && i < n->noutputs; i++) outs[i] = nd->outputs[i];
  return MLC_OK;
}

/* whether element i of a constant is non-zero (any dtype; -0.0 counts as zero) */
static bool elem_nonzero(const Value *v, int64_t i) {
  const char *p = (const char *)v->data;
  switch (v->type.dtype) {
  case MLC_F32: return ((const float *)p)[i] != 0;
  case MLC_F64: return ((const double *)p)[i] != 0;
  case MLC_F16: case MLC_BF16: return (((const uint16_t *)p)[i] & 0x7fff) != 0;
  default: {
    int sz = mlc_dtype_size(v->type.dtype);
    for (int k = 0; k < sz; k++)
      if (p[i * sz + k]) return true;
    return false;
  }
  }
}

static mlc_status compress_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *cond = n->inputs[1];
  if (cond->type.ndim != 1 || cond->type.dtype == MLC_STRING)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Compress: condition must be a 1-D tensor");
  Graph *g = onnx_graph(cx);
  int64_t axis = 0;
  if (onnx_has_attr(n, "axis")) {
    if ((st = get_axis(cx, n, x->type.ndim, &axis, d))) return st;
  } else if ((st = flatten(cx, n, &x, d))) { /* no axis: the flattened input */
    return st;
  }
  int64_t dim = x->type.dims[axis], len = cond->type.dims[0];
  if (len > dim)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Compress: condition has %lld entries for an axis of %lld",
                      (long long)len, (long long)dim);
  if (x->dyn_extent || cond->dyn_extent) {
    /* a data-dependent condition (and input, along the compressed axis with the same extent): the condition's
     * padding set to false selects only valid entries (and the input's padding, set to zero, is never read) */
    const char *why = !x->dyn_extent               ? NULL
                      : x->dyn_axis != axis          ? "its input is data-dependent along another axis than the compressed one"
                      : x->dyn_extent != cond->dyn_extent ? "its condition does not have the input's data-dependent extent"
                                                          : NULL;
    if (why) return ir_dynamic_use_error(g, x->dyn_extent ? x : cond, n->name, n->op_type, why, d);
    if (!(x = onnx_dyn_mask(cx, n, x, "zero", d)) || !(cond = onnx_dyn_mask(cx, n, cond, "zero", d))) return d->status;
  }
  if (!cond->data && len > 0) {
    /* a run-time condition: the output's extent along axis is its number of true entries */
    Value *ins[2] = {x, cond};
    Node *nd = onnx_emit(cx, n, "compress", 2, ins, 2, d);
    if (!nd) return d->status;
    ir_set_int(g, nd, "axis", axis);
    name_count(cx, n, nd);
    return onnx_finish_one(cx, n, nd, &outs[0], d);
  }
  int64_t *idx = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(len + 1));
  int64_t k = 0;
  for (int64_t i = 0; i < len; i++)
    if (elem_nonzero(cond, i)) idx[k++] = i;
  Value *iv = onnx_const(cx, NULL, (TensorType){.dtype = MLC_I64, .ndim = 1, .dims = {k}}, idx);
  Value *ins[2] = {x, iv};
  Node *nd = onnx_emit(cx, n, "take", 2, ins, 1, d);
  if (nd) ir_set_int(g, nd, "axis", axis);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status nonzero_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  if (x->type.dtype == MLC_STRING || mlc_dtype_size(x->type.dtype) <= 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "NonZero of %s", mlc_dtype_name(x->type.dtype));
  /* a data-dependent input: its padding set to zero is never selected, so the indices point into the valid
   * part only (and count along the data-dependent axis as in the run's shape) */
  if (x->dyn_extent && !(x = onnx_dyn_mask(cx, n, x, "zero", d))) return d->status;
  int r = x->type.ndim;
  int64_t total = tt_numel(&x->type), nnz = 0;
  if (!x->data && total > 0) {
    /* a run-time input: [rank, numel] bounds the output, the kernel counts the non-zeros */
    Node *nd = onnx_emit(cx, n, "nonzero", 1, &x, 2, d);
    if (nd) name_count(cx, n, nd);
    return onnx_finish_one(cx, n, nd, &outs[0], d);
  }
  for (int64_t i = 0; i < total; i++) nnz += elem_nonzero(x, i);
  int rr = r ? r : 1; /* a scalar gives shape (1, nnz) in the reference (numpy treats it as 1-D) */
  int64_t *out = arena_alloc(onnx_graph(cx)->arena, sizeof(int64_t) * (size_t)(rr * nnz + 1));
  int64_t k = 0;
  for (int64_t i = 0; i < total; i++) {
    if (!elem_nonzero(x, i)) continue;
    int64_t rem = i;
    for (int a = r - 1; a >= 0; a--) {
      out[a * nnz + k] = rem % x->type.dims[a];
      rem /= x->type.dims[a];
    }
    if (!r) out[k] = 0;
    k++;
  }
  outs[0] = onnx_const(cx, out_name(n, 0), (TensorType){.dtype = MLC_I64, .ndim = 2, .dims = {rr, nnz}}, out);
  return MLC_OK;
}

const OnnxConverter onnx_ops_dynamic[] = {
    /* op_type              domain  converter */
    {"NonMaxSuppression", "", nms_convert},
    {"Unique", "", unique_convert},
    {"Compress", "", compress_convert},
    {"NonZero", "", nonzero_convert},
    {0},
};
