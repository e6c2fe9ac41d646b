/* ONNX converters of the tensor family (see families.def): each maps an ONNX node onto graph ops of src/topi.
 *
 * Shape-like inputs (Reshape's shape, Slice's starts/ends, Split's split, ...) must be compile-time constants:
 * they become int attributes of the graph op; a non-constant one is an unsupported error naming the input.
 * Negative axes are made non-negative; 0 / -1 in Reshape's shape are resolved against the input shape, so
 * graph ops see fully known shapes. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "frontends/onnx/onnx.h"
#include "runtime/rt.h"
#include "passes/graph/passes.h"

/* ---------------------------------------------------------------- helpers */

/* the number of output axes that x's data-dependent axis could stay whole as (src/ir/dynamic.c: RESHAPE) */
static int whole_axes(const Value *x, int ndim, const int64_t *shape) {
  int64_t before = 1, p = 1;
  int found = 0;
  for (int i = 0; i < x->dyn_axis; i++) before *= x->type.dims[i];
  for (int j = 0; j < ndim; j++) {
    found += p == before && shape[j] == x->type.dims[x->dyn_axis];
    p *= shape[j];
  }
  return found;
}

/* A reshape merging x's data-dependent axis with the axes after it, or splitting it, when only 1s are before
 * it: the valid elements are the first E * inner of x in row-major order (E the extent, inner the size of the
 * axes after it), so the output's first axis of size > 1 (only 1s before it) holds them as its first
 * E * inner / trailing slices when its trailing size divides inner. Masked, reshaped, packed with that count. */
static mlc_status reshape_prefix(OnnxCtx *cx, const OnnxNode *n, Value *x, int ndim, const int64_t *shape,
                                 Value **out, Diag *d) {
  int64_t before = 1, inner = 1, trailing = 1;
  int a = x->dyn_axis, j = 0;
  for (int i = 0; i < a; i++) before *= x->type.dims[i];
  for (int i = a + 1; i < x->type.ndim; i++) inner *= x->type.dims[i];
  while (j < ndim - 1 && shape[j] == 1) j++;
  for (int i = j + 1; i < ndim; i++) trailing *= shape[i];
  if (before != 1 || ndim == 0 || trailing == 0 || inner % trailing)
    return ir_dynamic_use_error(onnx_graph(cx), x, n->name, n->op_type,
                                "it merges or splits the data-dependent axis other than as a row-major prefix", d);
  Value *xm = onnx_dyn_mask(cx, n, x, "zero", d), *r = NULL;
  if (!xm) return d->status;
  Node *nd = onnx_emit(cx, n, "reshape", 1, &xm, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "newshape", shape, ndim);
  mlc_status st = onnx_finish_one(cx, n, nd, &r, d);
  if (st) return st;
  Value *len = inner / trailing == 1 ? x->dyn_extent
                                     : onnx_binary(cx, n, "multiply", x->dyn_extent, onnx_extent_const(cx, inner / trailing), d);
  if (!len || !(*out = onnx_dyn_pack(cx, n, j, 1, &r, &len, d))) return d->status;
  return MLC_OK;
}

static mlc_status emit_reshape(OnnxCtx *cx, const OnnxNode *n, Value *x, int ndim, const int64_t *shape,
                               Value **out, Diag *d) {
  if (x->dyn_extent && whole_axes(x, ndim, shape) == 0) return reshape_prefix(cx, n, x, ndim, shape, out, d);
  Node *nd = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "newshape", shape, ndim);
  return onnx_finish_one(cx, n, nd, out, d);
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
  const Value *dyn = c < 0 ? onnx_dyn_source(cx, v) : NULL;
  if (dyn) {
    char why[256];
    snprintf(why, sizeof why,
             "its input '%s' must be known at compile time, and is computed from the run-time length by ops mlc "
             "does not follow (Shape, Gather, Slice, Concat, Squeeze, Unsqueeze, Reshape and Cast of it are)",
             what);
    return ir_dynamic_use_error(onnx_graph(cx), dyn, n->name, n->op_type, why, d);
  }
  if (c < 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: input '%s' must be known at compile time", n->op_type,
                      what);
  *count = c;
  return MLC_OK;
}

/* ---------------------------------------------------------------- Reshape / Flatten / Transpose / Identity */

static mlc_status reshape_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t shape[MLC_MAX_DIMS + 1];
  int cnt = 0, at = -1; /* the element of a run-time shape that is x's data-dependent extent */
  OnnxSymShape sym;
  if (n->opset < 5) {
    cnt = onnx_attr_ints(n, "shape", shape, MLC_MAX_DIMS + 1);
    if (cnt < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Reshape needs the attribute 'shape'");
  } else if (n->ninputs > 1 && onnx_sym_shape(cx, n->inputs[1], &sym) && sym.at >= 0 && !sym.bounded) {
    if (sym.extent != x->dyn_extent)
      return ir_dynamic_use_error(onnx_graph(cx), sym.of, n->name, n->op_type,
                                  x->dyn_extent ? "it reshapes a data-dependent value by the shape of another"
                                                : "it reshapes a static value to a data-dependent shape",
                                  d);
    cnt = sym.n, at = sym.at;
    memcpy(shape, sym.dims, sizeof(int64_t) * (size_t)cnt);
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
  if ((st = emit_reshape(cx, n, x, cnt, shape, &outs[0], d)) || at < 0) return st;
  /* the run-time extent must land on the shape's element that is that extent */
  if (outs[0]->dyn_axis != at)
    return ir_dynamic_use_error(onnx_graph(cx), x, n->name, n->op_type,
                                "the data-dependent axis does not become the output axis its shape names", d);
  return MLC_OK;
}

static mlc_status flatten_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
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
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
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
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status identity_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  if (onnx_seq(n->inputs[0])) { /* opset 14: a sequence passes through */
    outs[0] = n->inputs[0];
    return MLC_OK;
  }
  return onnx_finish_one(cx, n, onnx_emit(cx, n, "copy", 1, &n->inputs[0], 1, d), &outs[0], d);
}

static mlc_status concat_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  int r = n->inputs[0]->type.ndim;
  int64_t axis = onnx_attr_int(n, "axis", 1); /* required from opset 4; opset 1 defaulted to 1 */
  if (axis < -r || axis >= r)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  Value *ins[256];
  int k = 0;
  bool packed = false; /* along a data-dependent axis: the valid parts packed at run-time offsets */
  for (int i = 0; i < n->ninputs && k < 256; i++)
    if (n->inputs[i]) {
      ins[k] = n->inputs[i];
      packed |= ins[k]->dyn_extent && ins[k]->dyn_axis == axis;
      k++;
    }
  if (packed) {
    outs[0] = onnx_dyn_pack(cx, n, (int)axis, k, ins, NULL, d);
    return outs[0] ? MLC_OK : d->status;
  }
  Node *nd = onnx_emit(cx, n, "concatenate", k, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", axis);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
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
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
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
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
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

/* ---------------------------------------------------------------- more helpers */

static int64_t norm_axis(int64_t a, int r) { return a < 0 ? a + r : a; }

static mlc_status axis_attr(OnnxCtx *cx, const OnnxNode *n, const char *name, int64_t dflt, int r, int64_t *out,
                            Diag *d) {
  int64_t a = onnx_attr_int(n, name, dflt);
  if (a < -r || a >= r)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s %lld out of range for rank %d", name, (long long)a, r);
  *out = norm_axis(a, r);
  return MLC_OK;
}

/* Element i of a constant numeric value as a double; false if v is not a constant of a supported dtype. */
static bool const_double(const Value *v, int64_t i, double *out) {
  if (!v || !v->data || i >= tt_numel(&v->type)) return false;
  const void *p = v->data;
  switch (v->type.dtype) {
  case MLC_F32: *out = ((const float *)p)[i]; return true;
  case MLC_F64: *out = ((const double *)p)[i]; return true;
  case MLC_I64: *out = (double)((const int64_t *)p)[i]; return true;
  case MLC_I32: *out = ((const int32_t *)p)[i]; return true;
  case MLC_I16: *out = ((const int16_t *)p)[i]; return true;
  case MLC_I8: *out = ((const int8_t *)p)[i]; return true;
  case MLC_U8: case MLC_BOOL: *out = ((const uint8_t *)p)[i]; return true;
  case MLC_U16: *out = ((const uint16_t *)p)[i]; return true;
  case MLC_U32: *out = ((const uint32_t *)p)[i]; return true;
  case MLC_U64: *out = (double)((const uint64_t *)p)[i]; return true;
  case MLC_F16: *out = rt_f16_to_f32(((const uint16_t *)p)[i]); return true;
  case MLC_BF16: {
    uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &b, 4);
    *out = f;
    return true;
  }
  default: return false;
  }
}

/* A one-element value as a double: a constant, or a value computed from constants only (the importer folds
 * only integer values; window functions compute Range's float limit with Cast/Sub/Mul from constants). */
static mlc_status scalar_value(OnnxCtx *cx, const OnnxNode *n, int i, const char *what, double *out, Diag *d) {
  Value *v = n->ninputs > i ? n->inputs[i] : NULL;
  if (!v) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input '%s' is missing", n->op_type, what);
  if (tt_numel(&v->type) != 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input '%s' must have one element", n->op_type, what);
  if (const_double(v, 0, out)) return MLC_OK;
  if (!v->data && v->producer) {
    void *data = NULL;
    mlc_status st = pass_evaluate(onnx_graph(cx), v, &data, d);
    if (st != MLC_OK && !(st == MLC_ERR_UNSUPPORTED && diag_ok(d))) return st;
    if (st == MLC_OK) {
      Value tmp = *v;
      tmp.data = data;
      if (const_double(&tmp, 0, out)) return MLC_OK;
    }
  }
  return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: input '%s' must be known at compile time", n->op_type, what);
}

/* ---------------------------------------------------------------- Shape / Size: constants (static shapes) */

static mlc_status shape_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  const TensorType *x = &n->inputs[0]->type;
  int r = x->ndim;
  int64_t b = onnx_attr_int(n, "start", 0), e = onnx_attr_int(n, "end", r);
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = b < 0 ? 0 : b > r ? r : b;
  e = e < 0 ? 0 : e > r ? r : e;
  int64_t dims[MLC_MAX_DIMS];
  int k = 0;
  for (int64_t i = b; i < e; i++) dims[k++] = x->dims[i];
  TensorType t = {.dtype = MLC_I64, .ndim = 1, .dims = {k}};
  Value *xv = n->inputs[0];
  int a = xv->dyn_extent ? xv->dyn_axis : -1;
  if (a < b || a >= e) { /* the shape is static */
    onnx_extent_free(cx);
    outs[0] = onnx_const(cx, NULL, t, dims);
    return MLC_OK;
  }
  /* a data-dependent extent: the static dims as constants around the run-time extent */
  Value *parts[3];
  int np = 0;
  if (a > b) parts[np++] = onnx_const(cx, NULL, (TensorType){.dtype = MLC_I64, .ndim = 1, .dims = {a - b}}, dims);
  parts[np++] = xv->dyn_extent;
  if (e > a + 1)
    parts[np++] = onnx_const(cx, NULL, (TensorType){.dtype = MLC_I64, .ndim = 1, .dims = {e - a - 1}}, dims + (a - b) + 1);
  if (np == 1) { /* a copy, so the value takes the node's output name */
    Node *nd = onnx_emit(cx, n, "copy", 1, parts, 1, d);
    return onnx_finish_one(cx, n, nd, &outs[0], d);
  }
  Node *nd = onnx_emit(cx, n, "concatenate", np, parts, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", 0);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status size_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t v = tt_numel(&x->type);
  TensorType t = {.dtype = MLC_I64, .ndim = 0};
  if (!x->dyn_extent) {
    outs[0] = onnx_const(cx, NULL, t, &v);
    return MLC_OK;
  }
  /* the run-time extent times the static dims */
  int64_t rest = 1;
  for (int i = 0; i < x->type.ndim; i++)
    if (i != x->dyn_axis) rest *= x->type.dims[i];
  Value *size = onnx_binary(cx, n, "multiply", x->dyn_extent, onnx_extent_const(cx, rest), d);
  if (!size) return d->status;
  Node *nd = onnx_emit(cx, n, "reshape", 1, &size, 1, d);
  int64_t scalar[1] = {0};
  if (nd) ir_set_ints(onnx_graph(cx), nd, "newshape", scalar, 0);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- Slice / Split -> strided_slice */

static mlc_status emit_slice(OnnxCtx *cx, const OnnxNode *n, Value *x, const int64_t *b, const int64_t *e,
                             const int64_t *s, Value **out, Diag *d) {
  Node *nd = onnx_emit(cx, n, "strided_slice", 1, &x, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, nd, "begin", b, x->type.ndim);
    ir_set_ints(g, nd, "end", e, x->type.ndim);
    ir_set_ints(g, nd, "strides", s, x->type.ndim);
  }
  return onnx_finish_one(cx, n, nd, out, d);
}

static mlc_status slice_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim;
  int64_t starts[MLC_MAX_DIMS + 1], ends[MLC_MAX_DIMS + 1], axes[MLC_MAX_DIMS + 1], steps[MLC_MAX_DIMS + 1];
  int ns, ne, na = -1, nst = -1, end_at = -1;
  if (n->opset < 10) {
    ns = onnx_attr_ints(n, "starts", starts, MLC_MAX_DIMS + 1);
    ne = onnx_attr_ints(n, "ends", ends, MLC_MAX_DIMS + 1);
    na = onnx_attr_ints(n, "axes", axes, MLC_MAX_DIMS + 1);
    if (ns < 0 || ne < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Slice needs 'starts' and 'ends'");
  } else {
    if ((st = onnx_need_inputs(cx, n, 3, d))) return st;
    OnnxSymShape es;
    if (x->dyn_extent && onnx_sym_shape(cx, n->inputs[2], &es) && es.at >= 0 && !es.bounded &&
        es.extent == x->dyn_extent) {
      /* an end that is x's own run-time length (torch splits a batch by its box counts): to the end */
      ne = es.n;
      memcpy(ends, es.dims, sizeof(int64_t) * (size_t)es.n);
      ends[es.at] = INT64_MAX;
      end_at = es.at;
    } else if ((st = const_input(cx, n, 2, "ends", ends, MLC_MAX_DIMS + 1, &ne, d))) {
      return st;
    }
    if ((st = const_input(cx, n, 1, "starts", starts, MLC_MAX_DIMS + 1, &ns, d))) return st;
    if (n->ninputs > 3 && n->inputs[3] && (st = const_input(cx, n, 3, "axes", axes, MLC_MAX_DIMS + 1, &na, d)))
      return st;
    if (n->ninputs > 4 && n->inputs[4] && (st = const_input(cx, n, 4, "steps", steps, MLC_MAX_DIMS + 1, &nst, d)))
      return st;
  }
  if (ns != ne || ns > r || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Slice: starts/ends/axes/steps lengths differ or exceed rank %d", r);
  int64_t b[MLC_MAX_DIMS], e[MLC_MAX_DIMS], s[MLC_MAX_DIMS];
  bool seen[MLC_MAX_DIMS] = {0}, dyn_neg = false; /* a negative start on the data-dependent axis */
  int64_t dyn_end = 0; /* a negative end there: counted from the run-time extent */
  for (int i = 0; i < r; i++) b[i] = 0, e[i] = x->type.dims[i], s[i] = 1;
  for (int i = 0; i < ns; i++) {
    int64_t a = na >= 0 ? axes[i] : i;
    if (a < -r || a >= r || seen[norm_axis(a, r)])
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Slice: axis %lld out of range or repeated", (long long)a);
    a = norm_axis(a, r);
    seen[a] = true;
    int64_t dim = x->type.dims[a], sp = nst >= 0 ? steps[i] : 1, st0 = starts[i], en = ends[i];
    if (i == end_at && (a != x->dyn_axis || sp < 0))
      return ir_dynamic_use_error(onnx_graph(cx), x, n->name, n->op_type,
                                  "its end is the run-time length of the data-dependent axis, given for another axis "
                                  "or with a negative step",
                                  d);
    if (x->dyn_extent && a == x->dyn_axis) {
      dyn_neg = st0 < 0;
      dyn_end = en < 0 && sp > 0 ? en : 0;
      if (dyn_end) en = INT64_MAX; /* the static slice runs to the bound; the extent cuts it */
    }
    if (sp == 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Slice: step 0 on axis %lld", (long long)a);
    onnx_slice_clamp(&st0, &en, sp, dim);
    b[a] = st0, e[a] = en, s[a] = sp;
  }
  int a = x->dyn_extent ? x->dyn_axis : -1;
  if (a < 0 || (b[a] == 0 && e[a] == x->type.dims[a] && s[a] == 1)) return emit_slice(cx, n, x, b, e, s, &outs[0], d);
  /* a part of the data-dependent axis: [start, end) of the run-time extent n, whose length is
   * min(max(n - start, 0), end - start), or max(n + end - start, 0) for an end counted from n's end; a start
   * counted from the end would move the slice by a run-time offset, which is not supported */
  if (dyn_neg || s[a] != 1)
    return ir_dynamic_use_error(onnx_graph(cx), x, n->name, n->op_type,
                                "it slices the data-dependent axis with a step other than 1 or a start counted from "
                                "its end",
                                d);
  if (e[a] < b[a]) e[a] = b[a];
  Value *xm = onnx_dyn_mask(cx, n, x, "zero", d), *sl = NULL;
  Value *len = onnx_binary(cx, n, "subtract", x->dyn_extent, onnx_extent_const(cx, b[a] - dyn_end), d);
  len = onnx_binary(cx, n, "maximum", len, onnx_extent_const(cx, 0), d);
  len = onnx_binary(cx, n, "minimum", len, onnx_extent_const(cx, e[a] - b[a]), d);
  if (!xm || !len || (st = emit_slice(cx, n, xm, b, e, s, &sl, d))) return d->status;
  outs[0] = onnx_dyn_pack(cx, n, a, 1, &sl, &len, d);
  return outs[0] ? MLC_OK : d->status;
}

static mlc_status split_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim, nout = n->noutputs;
  int64_t axis = 0;
  if ((st = axis_attr(cx, n, "axis", 0, r, &axis, d))) return st;
  int64_t dim = x->type.dims[axis];
  int64_t sizes[256];
  int cnt = -1;
  if (nout < 1 || nout > 256) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Split into %d outputs", nout);
  if (n->opset < 13) {
    cnt = onnx_attr_ints(n, "split", sizes, 256);
    if (cnt < 0 && n->ninputs > 1 && n->inputs[1] && (st = const_input(cx, n, 1, "split", sizes, 256, &cnt, d)))
      return st; /* opset 1: split could be a second input */
  } else if (n->ninputs > 1 && n->inputs[1]) {
    if ((st = const_input(cx, n, 1, "split", sizes, 256, &cnt, d))) return st;
  }
  if (cnt >= 0) {
    if (cnt != nout) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Split: %d sizes for %d outputs", cnt, nout);
    int64_t tot = 0;
    for (int i = 0; i < cnt; i++) {
      if (sizes[i] < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Split: negative size");
      tot += sizes[i];
    }
    if (tot != dim)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Split: sizes sum to %lld, axis has %lld", (long long)tot,
                        (long long)dim);
  } else {
    int64_t parts = onnx_attr_int(n, "num_outputs", nout);
    if (parts != nout)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Split: num_outputs %lld but %d outputs", (long long)parts, nout);
    int64_t chunk = (dim + parts - 1) / parts;
    if (n->opset < 18 && dim % parts)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Split: axis of %lld does not split into %d equal parts",
                        (long long)dim, nout);
    for (int i = 0; i < nout; i++) {
      int64_t left = dim - chunk * i;
      sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
    }
  }
  int64_t b[MLC_MAX_DIMS], e[MLC_MAX_DIMS], s[MLC_MAX_DIMS];
  for (int i = 0; i < r; i++) b[i] = 0, e[i] = x->type.dims[i], s[i] = 1;
  int64_t off = 0;
  for (int i = 0; i < nout; i++) {
    b[axis] = off;
    e[axis] = off + sizes[i];
    off += sizes[i];
    outs[i] = NULL;
    if (!n->output_names[i] || !n->output_names[i][0]) continue;
    if ((st = emit_slice(cx, n, x, b, e, s, &outs[i], d))) return st;
  }
  return MLC_OK;
}

/* ---------------------------------------------------------------- Expand / Tile / ConstantOfShape / Range */

static mlc_status expand_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0];
  TensorType sh = {.dtype = x->type.dtype}, o;
  int cnt = 0;
  OnnxSymShape like; /* a run-time shape with a data-dependent extent */
  if (onnx_sym_shape(cx, n->inputs[1], &like) && like.at >= 0 && !like.bounded &&
      (!x->dyn_extent || x->dyn_extent == like.extent)) {
    sh.ndim = like.n;
    memcpy(sh.dims, like.dims, sizeof(int64_t) * (size_t)sh.ndim);
  } else {
    like.at = -1;
    if ((st = const_input(cx, n, 1, "shape", sh.dims, MLC_MAX_DIMS, &cnt, d))) return st;
    sh.ndim = cnt;
  }
  if (x->dyn_extent && like.at < 0) {
    /* a static shape must not give x's data-dependent axis a length: a run whose extent is 1 would broadcast */
    int ib = x->dyn_axis + sh.ndim - x->type.ndim;
    if (ib >= 0 && ib < sh.ndim && sh.dims[ib] != 1)
      return ir_dynamic_use_error(onnx_graph(cx), x, n->name, n->op_type,
                                  "its static shape gives the data-dependent axis a length of its own", d);
  }
  /* numpy broadcasting of the input shape with the given one (a 1 in shape keeps the input's dim) */
  o.dtype = x->type.dtype;
  o.ndim = x->type.ndim > sh.ndim ? x->type.ndim : sh.ndim;
  for (int i = 0; i < o.ndim; i++) {
    int ia = i - (o.ndim - x->type.ndim), ib = i - (o.ndim - sh.ndim);
    int64_t da = ia >= 0 ? x->type.dims[ia] : 1, db = ib >= 0 ? sh.dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Expand: dim %lld does not broadcast to %lld", (long long)da,
                        (long long)db);
    o.dims[i] = da == 1 ? db : da;
  }
  Node *nd = onnx_emit(cx, n, "broadcast_to", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "shape", o.dims, o.ndim);
  if (like.at < 0) return onnx_finish_one(cx, n, nd, &outs[0], d);
  /* broadcast to the bound; x's own dim along the data-dependent axis is 1 (else it is the bound itself, which
   * the extent then cuts: a shape mismatch ONNX rejects, given as the valid part) */
  int a = like.at + (o.ndim - sh.ndim);
  if (!nd || onnx_finish(cx, n, nd, d) != MLC_OK) return d->status;
  if (x->dyn_extent) {
    /* x carries the same extent (torch's expand_as of a data-dependent value): broadcast along the other axes */
    if (nd->outputs[0]->dyn_axis != a)
      return ir_dynamic_use_error(onnx_graph(cx), x, n->name, n->op_type,
                                  "its shape has the data-dependent length on another axis than its input", d);
    outs[0] = nd->outputs[0];
    return MLC_OK;
  }
  outs[0] = onnx_dyn_pack(cx, n, a, 1, &nd->outputs[0], &like.extent, d);
  return outs[0] ? MLC_OK : d->status;
}

static mlc_status tile_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t reps[MLC_MAX_DIMS];
  int cnt = 0;
  if (n->opset < 6) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Tile before opset 6 (tiles/axis inputs)");
  if ((st = const_input(cx, n, 1, "repeats", reps, MLC_MAX_DIMS, &cnt, d))) return st;
  if (cnt != x->type.ndim)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Tile: %d repeats for rank %d", cnt, x->type.ndim);
  Node *nd = onnx_emit(cx, n, "tile", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "reps", reps, cnt);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status constant_of_shape_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  TensorType o = {0};
  int cnt = 0;
  OnnxSymShape like; /* a run-time shape with a data-dependent extent */
  if (onnx_sym_shape(cx, n->inputs[0], &like) && like.at >= 0 && !like.bounded) {
    o.ndim = like.n;
    memcpy(o.dims, like.dims, sizeof(int64_t) * (size_t)like.n);
  } else {
    like.at = -1;
    if ((st = const_input(cx, n, 0, "shape", o.dims, MLC_MAX_DIMS, &cnt, d))) return st;
    o.ndim = cnt;
  }
  Value *v = onnx_attr_tensor(cx, n, "value", d);
  if (!v) {
    if (d->status != MLC_OK) return d->status;
    float zero = 0;
    v = onnx_const(cx, NULL, (TensorType){.dtype = MLC_F32, .ndim = 1, .dims = {1}}, &zero);
  }
  if (tt_numel(&v->type) != 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "ConstantOfShape: value must have one element");
  Node *nd = onnx_emit(cx, n, "full", 1, &v, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "shape", o.dims, o.ndim);
  if (like.at < 0) return onnx_finish_one(cx, n, nd, &outs[0], d);
  /* filled up to the bound; the result carries the extent at the shape's element that is one */
  if (!nd || onnx_finish(cx, n, nd, d) != MLC_OK) return d->status;
  outs[0] = onnx_dyn_pack(cx, n, like.at, 1, &nd->outputs[0], &like.extent, d);
  return outs[0] ? MLC_OK : d->status;
}

/* Range: the element count ceil((limit - start) / delta) is the output shape, so all three inputs must be known
 * at compile time; out[i] = start + i * delta is computed by arange from the start and delta values. */
/* Range(start, n, delta) with n the run-time length of a data-dependent axis (Gather of its Shape), start
 * and delta integer constants, delta > 0: arange over the static bound, carrying the run-time count
 * ceil(max(n - start, 0) / delta) */
static mlc_status range_dynamic(OnnxCtx *cx, const OnnxNode *n, const OnnxSymShape *like, Value **outs, Diag *d) {
  double v0, v2;
  mlc_status st;
  mlc_dtype t = n->inputs[0]->type.dtype;
  if ((st = scalar_value(cx, n, 0, "start", &v0, d)) || (st = scalar_value(cx, n, 2, "delta", &v2, d))) return st;
  if (t == MLC_F32 || t == MLC_F64 || t == MLC_F16 || t == MLC_BF16 || v2 <= 0)
    return ir_dynamic_use_error(onnx_graph(cx), like->of, n->name, n->op_type,
                                "its limit is a data-dependent length, supported for integer ranges with a positive "
                                "delta only",
                                d);
  int64_t start = (int64_t)v0, delta = (int64_t)v2, bound = like->dims[like->at];
  int64_t num = bound > start ? (bound - start + delta - 1) / delta : 0;
  Value *ins[2] = {n->inputs[0], n->inputs[2]};
  Node *nd = onnx_emit(cx, n, "arange", 2, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "num", num);
  if (!nd || onnx_finish(cx, n, nd, d) != MLC_OK) return d->status;
  /* range(0, n) has n's very extent, so it meets what n came from in elementwise ops (torch's x[arange(n), idx]) */
  Value *len = like->extent;
  if (start != 0 || delta != 1) {
    len = onnx_binary(cx, n, "subtract", like->extent, onnx_extent_const(cx, start), d);
    len = onnx_binary(cx, n, "maximum", len, onnx_extent_const(cx, 0), d);
    len = onnx_binary(cx, n, "add", len, onnx_extent_const(cx, delta - 1), d);
    len = onnx_binary(cx, n, "divide", len, onnx_extent_const(cx, delta), d);
  }
  if (!len) return d->status;
  outs[0] = onnx_dyn_pack(cx, n, 0, 1, &nd->outputs[0], &len, d);
  return outs[0] ? MLC_OK : d->status;
}

static mlc_status range_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  OnnxSymShape like; /* the limit: one run-time extent */
  if (onnx_sym_shape(cx, n->inputs[1], &like) && like.n == 1 && like.at == 0) return range_dynamic(cx, n, &like, outs, d);
  double v[3];
  static const char *what[3] = {"start", "limit", "delta"};
  StrBuf missing = {0};
  Value *unknown[3];
  int nunknown = 0;
  for (int i = 0; i < 3; i++) {
    if ((st = scalar_value(cx, n, i, what[i], &v[i], d)) == MLC_OK) continue;
    if (st != MLC_ERR_UNSUPPORTED || !strstr(d->msg, "compile time")) {
      sb_free(&missing);
      return st;
    }
    *d = (Diag){0};
    sb_printf(&missing, "%s'%s'", missing.s ? ", " : "", what[i]);
    unknown[nunknown++] = n->inputs[i];
  }
  if (missing.s) {
    const char *deps = onnx_input_deps(cx, nunknown, unknown);
    st = onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Range: inputs %s must be known at compile time%s%s", missing.s,
                    *deps ? "; they depend on the graph inputs " : "", deps);
    sb_free(&missing);
    return st;
  }
  if (v[2] == 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Range: delta is 0");
  double cntf = ceil((v[1] - v[0]) / v[2]);
  int64_t num = cntf > 0 ? (int64_t)cntf : 0;
  Value *ins[2] = {n->inputs[0], n->inputs[2]};
  Node *nd = onnx_emit(cx, n, "arange", 2, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "num", num);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- Pad / CenterCropPad -> nn.pad */

static mlc_status pad_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim;
  int64_t raw[2 * MLC_MAX_DIMS + 1], axes[MLC_MAX_DIMS + 1], pads[2 * MLC_MAX_DIMS] = {0};
  int np, na = -1;
  double value = 0;
  Value *vin = NULL;
  const char *mode = onnx_attr_string(n, "mode", "constant");
  if (n->opset < 11) {
    np = onnx_attr_ints(n, n->opset < 2 ? "paddings" : "pads", raw, 2 * MLC_MAX_DIMS + 1);
    if (np < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Pad needs the attribute 'pads'");
    value = onnx_attr_float(n, "value", 0);
  } else {
    if ((st = const_input(cx, n, 1, "pads", raw, 2 * MLC_MAX_DIMS + 1, &np, d))) return st;
    if (n->ninputs > 2 && n->inputs[2]) {
      vin = n->inputs[2];
      if (tt_numel(&vin->type) == 0) vin = NULL;
    }
    if (n->ninputs > 3 && n->inputs[3] && (st = const_input(cx, n, 3, "axes", axes, MLC_MAX_DIMS + 1, &na, d)))
      return st;
  }
  int k = na >= 0 ? na : r;
  if (np != 2 * k) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Pad: %d pads for %d axes", np, k);
  for (int i = 0; i < k; i++) {
    int64_t a = na >= 0 ? axes[i] : i;
    if (a < -r || a >= r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Pad: axis %lld out of range", (long long)a);
    a = norm_axis(a, r);
    pads[a] = raw[i];
    pads[a + r] = raw[i + k];
  }
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") && strcmp(mode, "wrap"))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Pad: mode '%s' is not supported", mode);
  if (vin && vin->type.dtype != x->type.dtype)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Pad: constant_value dtype differs from the data's");
  Value *ins[2] = {x, vin};
  Node *nd = onnx_emit(cx, n, "nn.pad", vin ? 2 : 1, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, nd, "pad_width", pads, 2 * r);
    ir_set_string(g, nd, "pad_mode", mode);
    ir_set_float(g, nd, "pad_value", value);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status center_crop_pad_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim, cnt;
  int64_t shape[MLC_MAX_DIMS + 1], axes[MLC_MAX_DIMS + 1], pads[2 * MLC_MAX_DIMS] = {0};
  if ((st = const_input(cx, n, 1, "shape", shape, MLC_MAX_DIMS + 1, &cnt, d))) return st;
  int na = onnx_attr_ints(n, "axes", axes, MLC_MAX_DIMS + 1);
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  if (cnt != na) return onnx_error(cx, n, d, MLC_ERR_INVALID, "CenterCropPad: %d sizes for %d axes", cnt, na);
  for (int i = 0; i < na; i++) {
    if (axes[i] < -r || axes[i] >= r)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "CenterCropPad: axis %lld out of range", (long long)axes[i]);
    int64_t a = norm_axis(axes[i], r), diff = shape[i] - x->type.dims[a];
    if (shape[i] < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "CenterCropPad: negative size");
    if (diff >= 0) {
      pads[a] = diff / 2;
      pads[a + r] = diff - diff / 2;
    } else {
      pads[a] = -((-diff) / 2);
      pads[a + r] = -((-diff) - (-diff) / 2);
    }
  }
  Node *nd = onnx_emit(cx, n, "nn.pad", 1, &x, 1, d);
  if (nd) {
    ir_set_ints(onnx_graph(cx), nd, "pad_width", pads, 2 * r);
    ir_set_string(onnx_graph(cx), nd, "pad_mode", "constant");
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- Trilu, DepthToSpace, SpaceToDepth, EyeLike,
 * OneHot, ReverseSequence */

static mlc_status trilu_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  /* k: an attribute when it is a constant, else a run-time int64 scalar input of trilu */
  int64_t k = 0;
  Value *kv = n->ninputs > 1 ? n->inputs[1] : NULL;
  if (kv && (kv->type.dtype != MLC_I64 || tt_numel(&kv->type) != 1))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Trilu: k must be an int64 scalar, got %s with %lld elements",
                      mlc_dtype_name(kv->type.dtype), (long long)tt_numel(&kv->type));
  if (kv && onnx_const_ints(kv, &k, 1) == 1) kv = NULL;
  Value *ins[2] = {n->inputs[0], kv};
  Node *nd = onnx_emit(cx, n, "trilu", kv ? 2 : 1, ins, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "upper", onnx_attr_int(n, "upper", 1) != 0);
    ir_set_int(onnx_graph(cx), nd, "k", k);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status depth_space_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  bool d2s = !strcmp(n->op_type, "DepthToSpace");
  if (!onnx_has_attr(n, "blocksize")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs 'blocksize'", n->op_type);
  Node *nd = onnx_emit(cx, n, d2s ? "nn.depth_to_space" : "nn.space_to_depth", 1, &n->inputs[0], 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "block_size", onnx_attr_int(n, "blocksize", 1));
    if (d2s) ir_set_string(onnx_graph(cx), nd, "mode", onnx_attr_string(n, "mode", "DCR"));
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status eye_like_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  int64_t dt = onnx_attr_int(n, "dtype", n->inputs[0]->type.dtype);
  if (dt <= 0 || dt >= MLC_DTYPE_COUNT || mlc_dtype_size((mlc_dtype)dt) <= 0 || dt == MLC_STRING)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "EyeLike: dtype %lld is not supported", (long long)dt);
  Node *nd = onnx_emit(cx, n, "eye_like", 1, &n->inputs[0], 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "k", onnx_attr_int(n, "k", 0));
    ir_set_int(onnx_graph(cx), nd, "dtype", dt);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status one_hot_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  double depth;
  if ((st = scalar_value(cx, n, 1, "depth", &depth, d))) return st;
  int r = n->inputs[0]->type.ndim + 1;
  int64_t axis = onnx_attr_int(n, "axis", -1);
  if (axis < -r || axis >= r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "OneHot: axis %lld out of range", (long long)axis);
  Value *ins[2] = {n->inputs[0], n->inputs[2]};
  Node *nd = onnx_emit(cx, n, "one_hot", 2, ins, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "depth", (int64_t)depth);
    ir_set_int(onnx_graph(cx), nd, "axis", norm_axis(axis, r));
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status reverse_sequence_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  int r = n->inputs[0]->type.ndim;
  int64_t b = 0, t = 0;
  if ((st = axis_attr(cx, n, "batch_axis", 1, r, &b, d)) || (st = axis_attr(cx, n, "time_axis", 0, r, &t, d))) return st;
  Node *nd = onnx_emit(cx, n, "reverse_sequence", 2, n->inputs, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "batch_axis", b);
    ir_set_int(onnx_graph(cx), nd, "time_axis", t);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
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
    {"Shape", "", shape_convert},
    {"Size", "", size_convert},
    {"Slice", "", slice_convert},
    {"Split", "", split_convert},
    {"Expand", "", expand_convert},
    {"Tile", "", tile_convert},
    {"ConstantOfShape", "", constant_of_shape_convert},
    {"Range", "", range_convert},
    {"Pad", "", pad_convert},
    {"CenterCropPad", "", center_crop_pad_convert},
    {"Trilu", "", trilu_convert},
    {"DepthToSpace", "", depth_space_convert},
    {"SpaceToDepth", "", depth_space_convert},
    {"EyeLike", "", eye_like_convert},
    {"OneHot", "", one_hot_convert},
    {"ReverseSequence", "", reverse_sequence_convert},
    {0},
};
