/* ONNX converters of the index family (see families.def), onto the graph ops of src/topi/index.c:
 * Gather -> take, GatherElements -> gather, GatherND -> gather_nd, ScatterElements / Scatter ->
 * scatter_elements, ScatterND -> scatter_nd, TensorScatter -> tensor_scatter. Axes are made non-negative;
 * the reduction attribute (opset 16+, max/min from 18) is passed through. (Compress and NonZero, whose output
 * shapes depend on data, are in convert_dynamic.c.) */
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

/* one graph op of n on ins, finished, its output (NULL with d set) */
static Value *emit1(OnnxCtx *cx, const OnnxNode *n, Node *nd, Diag *d) {
  return nd && onnx_finish(cx, n, nd, d) == MLC_OK ? nd->outputs[0] : NULL;
}

/* indices with negative ones counting from len, a run-time int64 [1] length (a data-dependent extent) */
static Value *wrap_indices(OnnxCtx *cx, const OnnxNode *n, Value *ix, Value *len, Diag *d) {
  Graph *g = onnx_graph(cx);
  Node *c = onnx_emit(cx, n, "cast", 1, &len, 1, d);
  if (c) ir_set_int(g, c, "dtype", ix->type.dtype);
  Value *cv = emit1(cx, n, c, d);
  if (!cv) return NULL;
  int64_t none[1] = {0};
  Node *r = onnx_emit(cx, n, "reshape", 1, &cv, 1, d);
  if (r) ir_set_ints(g, r, "newshape", none, 0);
  Value *rv = emit1(cx, n, r, d);
  Value *neg = onnx_binary(cx, n, "less", ix, onnx_scalar(cx, n, "zero", ix->type.dtype, 0), d);
  Value *wrapped = onnx_binary(cx, n, "add", ix, rv, d);
  if (!neg || !wrapped) return NULL;
  Value *sel[3] = {neg, wrapped, ix};
  return emit1(cx, n, onnx_emit(cx, n, "where", 3, sel, 1, d), d);
}

/* Gather / GatherElements: data, indices; attr axis */
static mlc_status gather_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 2, d);
  if (st) return st;
  int64_t axis = 0;
  if ((st = get_axis(cx, n, n->inputs[0]->type.ndim, &axis, d))) return st;
  const char *op = !strcmp(n->op_type, "Gather") ? "take" : "gather";
  Value *x = n->inputs[0], *ix = n->inputs[1];
  if (!strcmp(op, "take") && x->dyn_extent && x->dyn_axis == axis) {
    /* Gather along a data-dependent axis: negative indices count from the run-time extent, and the data
     * becomes a static value (zero padding) that the indices, valid ones below the extent, select from */
    Graph *g = onnx_graph(cx);
    Value *ins[2] = {onnx_dyn_mask(cx, n, x, "zero", d), wrap_indices(cx, n, ix, x->dyn_extent, d)};
    if (!ins[0] || !ins[1]) return d->status;
    Node *nd = onnx_emit(cx, n, op, 2, ins, 1, d);
    if (nd) ir_set_int(g, nd, "axis", axis);
    return done(cx, n, nd, &outs[0], d);
  }
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

/* ScatterElements of data-dependent values. The indices count from the run's length of the scatter axis
 * (the data's extent when it is data-dependent along it). Data-dependent indices (and updates, with the same
 * extent along the same axis) scatter their padding into a sink: the data gets one more zero slice along the
 * scatter axis, the padding indices point at it, and it is sliced off again. The data's padding is zero; the
 * result carries the data's extent. */
static mlc_status scatter_elements_dynamic(OnnxCtx *cx, const OnnxNode *n, int64_t axis, Value **outs, Diag *d) {
  Graph *g = onnx_graph(cx);
  Value *x = n->inputs[0], *ix = n->inputs[1], *up = n->inputs[2];
  if (ix->dyn_extent != up->dyn_extent || (ix->dyn_extent && ix->dyn_axis != up->dyn_axis))
    return ir_dynamic_use_error(g, ix->dyn_extent ? ix : up, n->name, n->op_type,
                                "its indices and updates do not have one data-dependent extent along one axis", d);
  if (ix->type.dtype != MLC_I64 && ix->type.dtype != MLC_I32)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "indices must be int32 or int64");
  int r = x->type.ndim;
  int64_t dim = x->type.dims[axis];
  Value *len = x->dyn_extent && x->dyn_axis == axis ? x->dyn_extent : onnx_extent_const(cx, dim);
  Value *xi = onnx_dyn_mask(cx, n, x, "zero", d), *ii = wrap_indices(cx, n, ix, len, d);
  Value *ui = onnx_dyn_mask(cx, n, up, "zero", d);
  if (!xi || !ii || !ui) return d->status;
  if (ix->dyn_extent) {
    TensorType st = xi->type;
    st.dims[axis] = 1;
    Value *zero = onnx_scalar(cx, n, "sink", x->type.dtype, 0);
    if (!zero) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "data-dependent indices into %s data",
                                 mlc_dtype_name(x->type.dtype));
    Node *f = onnx_emit(cx, n, "full", 1, &zero, 1, d);
    if (f) ir_set_ints(g, f, "shape", st.dims, r);
    Value *parts[2] = {xi, emit1(cx, n, f, d)};
    if (!parts[1]) return d->status;
    Node *c = onnx_emit(cx, n, "concatenate", 2, parts, 1, d);
    if (c) ir_set_int(g, c, "axis", axis);
    xi = emit1(cx, n, c, d);
    ii = onnx_binary(cx, n, "minimum", onnx_dyn_mask(cx, n, ii, "highest", d),
                     onnx_scalar(cx, n, "sink_index", ix->type.dtype, (double)dim), d);
    if (!xi || !ii) return d->status;
  }
  Value *ins[3] = {xi, ii, ui};
  Node *nd = onnx_emit(cx, n, "scatter_elements", 3, ins, 1, d);
  if (nd) {
    ir_set_int(g, nd, "axis", axis);
    ir_set_string(g, nd, "reduction", onnx_attr_string(n, "reduction", "none"));
  }
  Value *o = emit1(cx, n, nd, d);
  if (o && ix->dyn_extent) {
    int64_t b[MLC_MAX_DIMS] = {0}, e[MLC_MAX_DIMS], s[MLC_MAX_DIMS];
    for (int i = 0; i < r; i++) e[i] = x->type.dims[i], s[i] = 1;
    Node *sl = onnx_emit(cx, n, "strided_slice", 1, &o, 1, d);
    if (sl) {
      ir_set_ints(g, sl, "begin", b, r);
      ir_set_ints(g, sl, "end", e, r);
      ir_set_ints(g, sl, "strides", s, r);
    }
    o = emit1(cx, n, sl, d);
  }
  if (o && x->dyn_extent) o = onnx_dyn_pack(cx, n, x->dyn_axis, 1, &o, &x->dyn_extent, d);
  if (!o) return d->status;
  outs[0] = o;
  return MLC_OK;
}

/* ScatterElements (and the deprecated Scatter): data, indices, updates; attrs axis, reduction */
static mlc_status scatter_elements_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = need(cx, n, 3, d);
  if (st) return st;
  int64_t axis = 0;
  if ((st = get_axis(cx, n, n->inputs[0]->type.ndim, &axis, d))) return st;
  if (n->inputs[0]->dyn_extent || n->inputs[1]->dyn_extent || n->inputs[2]->dyn_extent)
    return scatter_elements_dynamic(cx, n, axis, outs, d);
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

const OnnxConverter onnx_ops_index[] = {
    /* op_type            domain  converter */
    {"Gather", "", gather_convert},
    {"GatherElements", "", gather_convert},
    {"GatherND", "", gather_nd_convert},
    {"ScatterElements", "", scatter_elements_convert},
    {"Scatter", "", scatter_elements_convert},
    {"ScatterND", "", scatter_nd_convert},
    {"TensorScatter", "", tensor_scatter_convert},
    {0},
};
