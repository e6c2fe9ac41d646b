/* ONNX converters of the index family (see families.def), onto the graph ops of src/topi/index.c:
 * Gather -> take, GatherElements -> gather, GatherND -> gather_nd, ScatterElements / Scatter ->
 * scatter_elements, ScatterND -> scatter_nd, TensorScatter -> tensor_scatter. Axes are made non-negative;
 * the reduction attribute (opset 16+, max/min from 18) is passed through.
 *
 * Compress and NonZero have data-dependent output shapes; they are supported when the value that decides the
 * shape is a compile-time constant: Compress's condition becomes a constant index list for take (after a
 * reshape to 1-D when there is no axis), NonZero of a constant input becomes the constant index matrix. */
#include <string.h>
#include "frontends/onnx/onnx.h"

static mlc_status need(OnnxCtx *cx, const OnnxNode *n, int k, Diag *d) {
  if (n->ninputs < k)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs %d inputs, got %d", n->op_type, k, n->ninputs);
  for (int i = 0; i < k; i++)
    if (!n->inputs[i]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input %d is missing", n->op_type, i);
  return MLC_OK;
}

static mlc_status done(OnnxCtx *cx, const OnnxNode *n, Node *nd, Value **out, Diag *d) {
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  *out = nd->outputs[0];
  return MLC_OK;
}

static mlc_status get_axis(OnnxCtx *cx, const OnnxNode *n, int r, int64_t *axis, Diag *d) {
  int64_t a = onnx_attr_int(n, "axis", 0);
  if (a < -r || a >= r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)a, r);
  *axis = a < 0 ? a + r : a;
  return MLC_OK;
}

/* Gather / GatherElements: data, indices; attr axis */
static mlc_status gather_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 2, d);
  if (st) return st;
  int64_t axis = 0;
  if ((st = get_axis(cx, n, n->inputs[0]->type.ndim, &axis, d))) return st;
  const char *op = !strcmp(n->op_type, "Gather") ? "take" : "gather";
  Node *nd = onnx_emit(cx, n, op, 2, n->inputs, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", axis);
  return done(cx, n, nd, &outs[0], d);
}

static mlc_status gather_nd_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 2, d);
  if (st) return st;
  Node *nd = onnx_emit(cx, n, "gather_nd", 2, n->inputs, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "batch_dims", onnx_attr_int(n, "batch_dims", 0));
  return done(cx, n, nd, &outs[0], d);
}

/* ScatterElements (and the deprecated Scatter): data, indices, updates; attrs axis, reduction */
static mlc_status scatter_elements_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 3, d);
  if (st) return st;
  int64_t axis = 0;
  if ((st = get_axis(cx, n, n->inputs[0]->type.ndim, &axis, d))) return st;
  Node *nd = onnx_emit(cx, n, "scatter_elements", 3, n->inputs, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "axis", axis);
    ir_set_string(onnx_graph(cx), nd, "reduction", onnx_attr_string(n, "reduction", "none"));
  }
  return done(cx, n, nd, &outs[0], d);
}

static mlc_status scatter_nd_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 3, d);
  if (st) return st;
  Node *nd = onnx_emit(cx, n, "scatter_nd", 3, n->inputs, 1, d);
  if (nd) ir_set_string(onnx_graph(cx), nd, "reduction", onnx_attr_string(n, "reduction", "none"));
  return done(cx, n, nd, &outs[0], d);
}

/* TensorScatter (opset 24): past_cache, update, optional write_indices; attrs mode (linear | circular), axis
 * (default -2, never the batch axis 0) */
static mlc_status tensor_scatter_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 2, d);
  if (st) return st;
  int r = n->inputs[0]->type.ndim;
  int64_t axis = onnx_attr_int(n, "axis", -2);
  if (axis < -r || axis >= r)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  if (axis == 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis must not be the batch axis 0");
  const char *mode = onnx_attr_string(n, "mode", "linear");
  if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "mode must be 'linear' or 'circular', got '%s'", mode);
  int nin = n->ninputs > 2 && n->inputs[2] ? 3 : 2;
  Node *nd = onnx_emit(cx, n, "tensor_scatter", nin, n->inputs, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "axis", axis);
    ir_set_int(onnx_graph(cx), nd, "circular", strcmp(mode, "circular") == 0);
  }
  return done(cx, n, nd, &outs[0], d);
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
  mlc_status st = need(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *cond = n->inputs[1];
  if (!cond->data)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Compress: input 'condition' must be known at compile time");
  if (cond->type.ndim != 1 || cond->type.dtype == MLC_STRING)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Compress: condition must be a 1-D tensor");
  Graph *g = onnx_graph(cx);
  int64_t axis = 0;
  if (onnx_has_attr(n, "axis")) {
    if ((st = get_axis(cx, n, x->type.ndim, &axis, d))) return st;
  } else {
    /* no axis: the flattened input */
    Node *r = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
    int64_t total = tt_numel(&x->type);
    if (r) ir_set_ints(g, r, "newshape", &total, 1);
    if ((st = done(cx, n, r, &x, d))) return st;
  }
  int64_t dim = x->type.dims[axis], len = cond->type.dims[0];
  if (len > dim)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Compress: condition has %lld entries for an axis of %lld",
                      (long long)len, (long long)dim);
  int64_t *idx = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(len + 1));
  int64_t k = 0;
  for (int64_t i = 0; i < len; i++)
    if (elem_nonzero(cond, i)) idx[k++] = i;
  Value *iv = onnx_const(cx, NULL, (TensorType){.dtype = MLC_I64, .ndim = 1, .dims = {k}}, idx);
  Value *ins[2] = {x, iv};
  Node *nd = onnx_emit(cx, n, "take", 2, ins, 1, d);
  if (nd) ir_set_int(g, nd, "axis", axis);
  return done(cx, n, nd, &outs[0], d);
}

static mlc_status nonzero_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  if (!x->data) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "NonZero: input must be known at compile time");
  if (x->type.dtype == MLC_STRING || mlc_dtype_size(x->type.dtype) <= 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "NonZero of %s", mlc_dtype_name(x->type.dtype));
  int r = x->type.ndim;
  int64_t total = tt_numel(&x->type), nnz = 0;
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
  outs[0] = onnx_const(cx, NULL, (TensorType){.dtype = MLC_I64, .ndim = 2, .dims = {rr, nnz}}, out);
  return MLC_OK;
}

const OnnxConverter onnx_ops_index[] = {
    /* op_type            domain  converter */
    {"Gather", "", gather_convert},
    {"GatherElements", "", gather_convert},
    {"GatherND", "", gather_nd_convert},
    {"ScatterElements", "", scatter_elements_convert},
    {"Scatter", "", scatter_elements_convert},
    {"ScatterND", "", scatter_nd_convert},
    {"TensorScatter", "", tensor_scatter_convert},
    {"Compress", "", compress_convert},
    {"NonZero", "", nonzero_convert},
    {0},
};
