/* ONNX converters of the sort family (see families.def), onto the ops of src/topi/sort.c.
 *
 *   TopK (1: k attribute; 10: k input; 11: largest, sorted) -> topk: axis (default -1) made non-negative, k
 *        from the attribute or the constant input (a 1-element tensor that must be known at compile time).
 *        sorted=0 allows any order; the sorted order is one of them.
 *   CumSum (11, 14), CumProd (26) -> cumsum / cumprod: the axis input (0-D or 1-element, compile-time
 *        constant) made non-negative; exclusive, reverse.
 *   Hardmax (1, 11: 2-D coercion at axis, default 1; 13: along axis, default -1) -> hardmax: axis, flatten. */
#include <string.h>
#include "frontends/onnx/onnx.h"

/* a scalar integer input that must be a compile-time constant */
static mlc_status const_scalar(OnnxCtx *cx, const OnnxNode *n, int i, const char *what, int64_t *v, Diag *d) {
  if (n->ninputs <= i || !n->inputs[i]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "input '%s' is missing", what);
  if (tt_numel(&n->inputs[i]->type) != 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "input '%s' must have one element", what);
  if (onnx_const_ints(n->inputs[i], v, 1) != 1)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                      "input '%s' of %s must be known at compile time (a constant or initializer)", what, n->op_type);
  return MLC_OK;
}

/* TopK with K only known at run time (computed from a data-dependent shape: k = min(300, n) in detection
 * post-processing), or along an axis with a data-dependent extent: the padding masked to lose every
 * comparison, the whole axis ranked (topk with k = the axis' static bound), and both outputs carry the
 * run-time extent min(max(K, 0), the axis' extent) (dyn_pack of one piece keeps that many and zeroes the
 * rest). ONNX makes K > the axis' length an error; here it gives the whole axis. The outputs' static bound is
 * K's upper bound where the importer knows one (onnx_sym_shape: min(1000, n) is at most 1000). */
static mlc_status topk_dynamic(OnnxCtx *cx, const OnnxNode *n, Value *x, Value *kv, int64_t k, int64_t axis,
                               Value **outs, Diag *d) {
  bool largest = onnx_attr_int(n, "largest", 1) != 0;
  if (x->dyn_extent && x->dyn_axis != axis)
    return ir_dynamic_use_error(onnx_graph(cx), x, n->name, n->op_type,
                                "its K is only known at run time and its input is data-dependent along another axis", d);
  int64_t bound = x->type.dims[axis];
  Value *ext = x->dyn_extent ? x->dyn_extent : onnx_extent_const(cx, bound);
  OnnxSymShape kb; /* K's upper bound, when it was computed from a data-dependent length */
  if (kv && onnx_sym_shape(cx, kv, &kb) && kb.n == 1 && kb.dims[0] < bound) bound = kb.dims[0] < 0 ? 0 : kb.dims[0];
  if (kv) {
    Node *c = onnx_emit(cx, n, "cast", 1, &kv, 1, d); /* K: int64 [1] */
    if (c) ir_set_int(onnx_graph(cx), c, "dtype", MLC_I64);
    if (!c || onnx_finish(cx, n, c, d) != MLC_OK) return d->status;
    Node *r = onnx_emit(cx, n, "reshape", 1, &c->outputs[0], 1, d);
    int64_t one[1] = {1};
    if (r) ir_set_ints(onnx_graph(cx), r, "newshape", one, 1);
    if (!r || onnx_finish(cx, n, r, d) != MLC_OK) return d->status;
    ext = onnx_binary(cx, n, "minimum", onnx_binary(cx, n, "maximum", r->outputs[0], onnx_extent_const(cx, 0), d),
                      ext, d);
  } else {
    if (k < bound) bound = k;
    ext = onnx_binary(cx, n, "minimum", onnx_extent_const(cx, k), ext, d);
  }
  if (!ext) return d->status;
  Value *xm = onnx_dyn_mask(cx, n, x, largest ? "lowest" : "highest", d);
  Node *nd = xm ? onnx_emit(cx, n, "topk", 1, &xm, 2, d) : NULL;
  if (!nd) return d->status;
  Graph *g = onnx_graph(cx);
  ir_set_int(g, nd, "axis", axis);
  ir_set_int(g, nd, "k", bound);
  ir_set_int(g, nd, "largest", largest);
  ir_set_int(g, nd, "sorted", 1);
  if (onnx_finish(cx, n, nd, d) != MLC_OK) return d->status;
  for (int i = 0; i < 2; i++)
    if (!(outs[i] = onnx_dyn_pack(cx, n, (int)axis, 1, &nd->outputs[i], &ext, d))) return d->status;
  return MLC_OK;
}

static mlc_status topk_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0], *kv = NULL;
  int64_t k = 0, axis = onnx_attr_int(n, "axis", -1);
  if ((st = onnx_norm_axis(cx, n, &axis, x->type.ndim, d))) return st;
  if (n->opset < 10) {
    if (!onnx_has_attr(n, "k")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "TopK needs the k attribute");
    k = onnx_attr_int(n, "k", 1);
  } else if (n->ninputs > 1 && n->inputs[1] && tt_numel(&n->inputs[1]->type) == 1 &&
             onnx_const_ints(n->inputs[1], &k, 1) != 1 && !n->inputs[1]->dyn_extent &&
             (n->inputs[1]->type.dtype == MLC_I64 || n->inputs[1]->type.dtype == MLC_I32)) {
    kv = n->inputs[1]; /* K computed at run time */
  } else if ((st = const_scalar(cx, n, 1, "K", &k, d))) {
    return st;
  }
  if (kv || (x->dyn_extent && x->dyn_axis == axis)) return topk_dynamic(cx, n, x, kv, k, axis, outs, d);
  Node *nd = onnx_emit(cx, n, "topk", 1, &x, 2, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "axis", axis);
    ir_set_int(g, nd, "k", k);
    ir_set_int(g, nd, "largest", onnx_attr_int(n, "largest", 1) != 0);
    ir_set_int(g, nd, "sorted", onnx_attr_int(n, "sorted", 1) != 0);
  }
  return onnx_finish_all(cx, n, nd, outs, d);
}

static mlc_status cum_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t axis;
  if ((st = const_scalar(cx, n, 1, "axis", &axis, d))) return st;
  if ((st = onnx_norm_axis(cx, n, &axis, x->type.ndim, d))) return st;
  Node *nd = onnx_emit(cx, n, strcmp(n->op_type, "CumProd") == 0 ? "cumprod" : "cumsum", 1, &x, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "axis", axis);
    ir_set_int(g, nd, "exclusive", onnx_attr_int(n, "exclusive", 0) != 0);
    ir_set_int(g, nd, "reverse", onnx_attr_int(n, "reverse", 0) != 0);
  }
  return onnx_finish_all(cx, n, nd, outs, d);
}

static mlc_status hardmax_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  bool flatten = n->opset < 13;
  int64_t axis = onnx_attr_int(n, "axis", flatten ? 1 : -1);
  if ((st = onnx_norm_axis(cx, n, &axis, x->type.ndim, d))) return st;
  Node *nd = onnx_emit(cx, n, "hardmax", 1, &x, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "axis", axis);
    ir_set_int(onnx_graph(cx), nd, "flatten", flatten);
  }
  return onnx_finish_all(cx, n, nd, outs, d);
}

const OnnxConverter onnx_ops_sort[] = {
    {"TopK", "", topk_convert},
    {"CumSum", "", cum_convert},
    {"CumProd", "", cum_convert},
    {"Hardmax", "", hardmax_convert},
    {0},
};
