/* ONNX converters of the tensor family (see families.def): each maps an ONNX node onto graph ops of src/topi.
 *
 * Shape-like inputs (Reshape's shape, Slice's starts/ends, Split's split, ...) must be compile-time constants:
 * they become int attributes of the graph op; a non-constant one is an unsupported error naming the input.
 * Negative axes are made non-negative; 0 / -1 in Reshape's shape are resolved against the input shape, so
 * graph ops see fully known shapes. */
#include <string.h>
#include "frontends/onnx/onnx.h"

/* ---------------------------------------------------------------- helpers */

static mlc_status need_inputs(OnnxCtx *cx, const OnnxNode *n, int k, Diag *d) {
  if (n->ninputs < k)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs %d inputs, got %d", n->op_type, k, n->ninputs);
  for (int i = 0; i < k; i++)
    if (!n->inputs[i]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input %d is missing", n->op_type, i);
  return MLC_OK;
}

static mlc_status finish(OnnxCtx *cx, const OnnxNode *n, Node *nd, Value **out, Diag *d) {
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  *out = nd->outputs[0];
  return MLC_OK;
}

static mlc_status emit_reshape(OnnxCtx *cx, const OnnxNode *n, Value *x, int ndim, const int64_t *shape,
                               Value **out, Diag *d) {
  Node *nd = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "newshape", shape, ndim);
  return finish(cx, n, nd, out, d);
}

/* A constant int input's values (count returned); error naming the input when it is not constant. */
static mlc_status const_input(OnnxCtx *cx, const OnnxNode *n, int i, const char *what, int64_t *out, int max,
                              int *count, Diag *d) {
  Value *v = n->ninputs > i ? n->inputs[i] : NULL;
  if (!v) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input '%s' is missing", n->op_type, what);
  if (tt_numel(&v->type) > max)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: input '%s' has too many values (%lld)", n->op_type, what,
                      (long long)tt_numel(&v->type));
  int c = onnx_const_ints(v, out, max);
  if (c < 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: input '%s' must be known at compile time", n->op_type,
                      what);
  *count = c;
  return MLC_OK;
}

/* ---------------------------------------------------------------- Reshape / Flatten / Transpose / Identity */

static mlc_status reshape_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t shape[MLC_MAX_DIMS + 1];
  int cnt;
  if (n->opset < 5) {
    cnt = onnx_attr_ints(n, "shape", shape, MLC_MAX_DIMS + 1);
    if (cnt < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Reshape needs the attribute 'shape'");
  } else if ((st = const_input(cx, n, 1, "shape", shape, MLC_MAX_DIMS + 1, &cnt, d))) {
    return st;
  }
  if (cnt > MLC_MAX_DIMS) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Reshape to rank %d", cnt);
  bool allowzero = onnx_attr_int(n, "allowzero", 0) != 0;
  int neg = -1;
  int64_t known = 1;
  for (int i = 0; i < cnt; i++) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= x->type.ndim)
        return onnx_error(cx, n, d, MLC_ERR_INVALID, "Reshape: 0 at index %d beyond the input rank %d", i,
                          x->type.ndim);
      shape[i] = x->type.dims[i];
    }
    if (shape[i] == -1) {
      if (neg >= 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Reshape: more than one -1 in shape");
      neg = i;
    } else if (shape[i] < 0) {
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Reshape: invalid dim %lld", (long long)shape[i]);
    } else {
      known *= shape[i];
    }
  }
  int64_t total = tt_numel(&x->type);
  if (neg >= 0) {
    if (known == 0 || total % known)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Reshape: cannot infer -1 (%lld elements into %lld)",
                        (long long)total, (long long)known);
    shape[neg] = total / known;
  }
  return emit_reshape(cx, n, x, cnt, shape, &outs[0], d);
}

static mlc_status flatten_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim;
  int64_t axis = onnx_attr_int(n, "axis", 1);
  if (axis < -r || axis > r)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  int64_t shape[2] = {1, 1};
  for (int i = 0; i < r; i++) shape[i < axis ? 0 : 1] *= x->type.dims[i];
  return emit_reshape(cx, n, x, 2, shape, &outs[0], d);
}

static mlc_status transpose_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim;
  int64_t perm[MLC_MAX_DIMS];
  int cnt = onnx_attr_ints(n, "perm", perm, MLC_MAX_DIMS);
  if (cnt < 0) {
    cnt = r;
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
  }
  if (cnt != r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "perm has %d entries for rank %d", cnt, r);
  for (int i = 0; i < r; i++)
    if (perm[i] < 0) perm[i] += r;
  Node *nd = onnx_emit(cx, n, "transpose", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "axes", perm, r);
  return finish(cx, n, nd, &outs[0], d);
}

static mlc_status identity_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need_inputs(cx, n, 1, d);
  if (st) return st;
  return finish(cx, n, onnx_emit(cx, n, "copy", 1, &n->inputs[0], 1, d), &outs[0], d);
}

static mlc_status concat_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need_inputs(cx, n, 1, d);
  if (st) return st;
  int r = n->inputs[0]->type.ndim;
  int64_t axis = onnx_attr_int(n, "axis", 1); /* required from opset 4; opset 1 defaulted to 1 */
  if (axis < -r || axis >= r)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  Value *ins[256];
  int k = 0;
  for (int i = 0; i < n->ninputs && k < 256; i++)
    if (n->inputs[i]) ins[k++] = n->inputs[i];
  Node *nd = onnx_emit(cx, n, "concatenate", k, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", axis);
  return finish(cx, n, nd, &outs[0], d);
}

/* Squeeze / Unsqueeze: reshapes; axes an attribute before opset 13, an input from 13. */
static mlc_status squeeze_axes(OnnxCtx *cx, const OnnxNode *n, int64_t *axes, int *cnt, Diag *d) {
  if (n->opset < 13) {
    *cnt = onnx_attr_ints(n, "axes", axes, MLC_MAX_DIMS + 1);
    return MLC_OK;
  }
  if (n->ninputs < 2 || !n->inputs[1]) {
    *cnt = -1;
    return MLC_OK;
  }
  return const_input(cx, n, 1, "axes", axes, MLC_MAX_DIMS + 1, cnt, d);
}

static mlc_status squeeze_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim, cnt;
  int64_t axes[MLC_MAX_DIMS + 1];
  if ((st = squeeze_axes(cx, n, axes, &cnt, d))) return st;
  bool drop[MLC_MAX_DIMS] = {0};
  if (cnt < 0) {
    for (int i = 0; i < r; i++) drop[i] = x->type.dims[i] == 1;
  } else {
    for (int i = 0; i < cnt; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 0 || a >= r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range", (long long)axes[i]);
      if (x->type.dims[a] != 1)
        return onnx_error(cx, n, d, MLC_ERR_INVALID, "cannot squeeze axis %lld of size %lld", (long long)a,
                          (long long)x->type.dims[a]);
      drop[a] = true;
    }
  }
  int64_t shape[MLC_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < r; i++)
    if (!drop[i]) shape[k++] = x->type.dims[i];
  return emit_reshape(cx, n, x, k, shape, &outs[0], d);
}

static mlc_status unsqueeze_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim, cnt;
  int64_t axes[MLC_MAX_DIMS + 1];
  if ((st = squeeze_axes(cx, n, axes, &cnt, d))) return st;
  if (cnt < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Unsqueeze needs axes");
  int ro = r + cnt;
  if (ro > MLC_MAX_DIMS) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Unsqueeze to rank %d", ro);
  bool ins[MLC_MAX_DIMS] = {0};
  for (int i = 0; i < cnt; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + ro : axes[i];
    if (a < 0 || a >= ro || ins[a])
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range or repeated", (long long)axes[i]);
    ins[a] = true;
  }
  int64_t shape[MLC_MAX_DIMS];
  for (int i = 0, j = 0; i < ro; i++) shape[i] = ins[i] ? 1 : x->type.dims[j++];
  return emit_reshape(cx, n, x, ro, shape, &outs[0], d);
}

/* ---------------------------------------------------------------- the table */

const OnnxConverter onnx_ops_tensor[] = {
    /* op_type      domain  converter */
    {"Reshape", "", reshape_convert},
    {"Flatten", "", flatten_convert},
    {"Transpose", "", transpose_convert},
    {"Identity", "", identity_convert},
    {"Concat", "", concat_convert},
    {"Squeeze", "", squeeze_convert},
    {"Unsqueeze", "", unsqueeze_convert},
    {0},
};
