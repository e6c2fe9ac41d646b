/* ONNX converters of the reduce family (see families.def): each maps an ONNX node onto graph ops of src/topi.
 *
 * Reduce*: `axes` is an attribute up to opset 12 (ReduceSum) / 17 (the others) and an optional input after,
 * which must then be a compile-time constant; with the input form comes noop_with_empty_axes. The graph op
 * always gets explicit axes: negative ones made non-negative, sorted, unique, and "every axis" where none
 * were given; an empty list with noop_with_empty_axes=1 becomes an identity (cast to the same dtype).
 * ArgMax/ArgMin: `axis` (default 0) normalised into a one-element "axis" list, keepdims and
 * select_last_index (opset 12) copied with their defaults. */
#include <string.h>
#include "frontends/onnx/onnx.h"

static const struct {
  const char *onnx;     /* ONNX op type */
  const char *op;       /* graph op (src/topi/reduce.c) */
  int axes_input_opset; /* first opset where axes is an input */
} REDUCES[] = {
    {"ReduceSum", "sum", 13},
    {"ReduceMean", "mean", 18},
    {"ReduceMax", "max", 18},
    {"ReduceMin", "min", 18},
    {"ReduceProd", "prod", 18},
    {"ReduceL1", "reduce_l1", 18},
    {"ReduceL2", "reduce_l2", 18},
    {"ReduceLogSum", "reduce_log_sum", 18},
    {"ReduceLogSumExp", "logsumexp", 18},
    {"ReduceSumSquare", "reduce_sum_square", 18},
};

#define MAX_AXES 64

/* negative axes made non-negative, range-checked, sorted, duplicates rejected */
static mlc_status normalize_axes(OnnxCtx *cx, const OnnxNode *n, int ndim, int64_t *axes, int na, Diag *d) {
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i];
    if (a < -ndim || a >= ndim)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld is out of range for a rank-%d input", (long long)a, ndim);
    axes[i] = a < 0 ? a + ndim : a;
  }
  for (int i = 1; i < na; i++)
    for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
      int64_t t = axes[j];
      axes[j] = axes[j - 1];
      axes[j - 1] = t;
    }
  for (int i = 1; i < na; i++)
    if (axes[i] == axes[i - 1])
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld is given twice", (long long)axes[i]);
  return MLC_OK;
}

static mlc_status conv_reduce(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  size_t k = 0;
  while (k < countof(REDUCES) && strcmp(REDUCES[k].onnx, n->op_type) != 0) k++;
  if (k == countof(REDUCES)) return onnx_error(cx, n, d, MLC_ERR_INTERNAL, "no reduce mapping for %s", n->op_type);
  if (n->ninputs < 1 || !n->inputs[0]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs an input", n->op_type);
  Value *x = n->inputs[0];
  int ndim = x->type.ndim;
  int64_t axes[MAX_AXES];
  int na = -1; /* -1: not given */
  bool noop = false;
  if (n->opset >= REDUCES[k].axes_input_opset) {
    if (n->ninputs > 1 && n->inputs[1]) {
      const Value *av = n->inputs[1];
      if (av->type.ndim > 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "axes must be a 1-D tensor");
      if (tt_numel(&av->type) > MAX_AXES) return onnx_error(cx, n, d, MLC_ERR_INVALID, "too many axes");
      na = onnx_const_ints(av, axes, MAX_AXES);
      if (na < 0)
        return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                          "input 'axes' of %s must be known at compile time (a constant or initializer)", n->op_type);
    }
    noop = onnx_attr_int(n, "noop_with_empty_axes", 0) != 0;
  } else {
    na = onnx_attr_ints(n, "axes", axes, MAX_AXES);
    if (na > MAX_AXES) return onnx_error(cx, n, d, MLC_ERR_INVALID, "too many axes");
  }
  if (na > ndim) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%d axes for a rank-%d input", na, ndim);
  Graph *g = onnx_graph(cx);
  if (na <= 0) {
    if (noop) { /* the identity */
      Node *nd = onnx_emit(cx, n, "cast", 1, &x, 1, d);
      if (nd) ir_set_int(g, nd, "dtype", x->type.dtype);
      return onnx_finish_one(cx, n, nd, &outs[0], d);
    }
    na = ndim;
    for (int i = 0; i < ndim; i++) axes[i] = i;
  }
  mlc_status st = normalize_axes(cx, n, ndim, axes, na, d);
  if (st != MLC_OK) return st;
  const char *op = REDUCES[k].op;
  Value *count = NULL; /* a mean over the data-dependent axis: the sum, divided by the run-time count */
  bool over_dyn = false;
  for (int i = 0; i < na; i++) over_dyn |= x->dyn_extent && axes[i] == x->dyn_axis;
  if (over_dyn) {
    /* the padding past the extent becomes the reduction's identity, so the result is the reduction over the
     * valid part; an empty one gives the identity (0 for sums, 1 for the product, -inf / the dtype's minimum
     * for max and logsumexp, +inf / the maximum for min; ONNX's rule for empty reductions), a mean 0 / 0 */
    const char *fill = !strcmp(op, "prod") ? "one"
                       : !strcmp(op, "max") || !strcmp(op, "logsumexp") ? "lowest"
                       : !strcmp(op, "min") ? "highest" : "zero";
    if (!strcmp(op, "mean")) {
      int64_t rest = 1;
      for (int i = 0; i < na; i++)
        if (axes[i] != x->dyn_axis) rest *= x->type.dims[axes[i]];
      count = onnx_binary(cx, n, "multiply", x->dyn_extent, onnx_extent_const(cx, rest), d);
      Node *c = count ? onnx_emit(cx, n, "cast", 1, &count, 1, d) : NULL;
      if (c) ir_set_int(g, c, "dtype", x->type.dtype);
      if (!c || onnx_finish(cx, n, c, d) != MLC_OK) return d->status;
      count = c->outputs[0];
      op = "sum";
    }
    if (!(x = onnx_dyn_mask(cx, n, x, fill, d))) return d->status;
  }
  Node *nd = onnx_emit(cx, n, op, 1, &x, 1, d);
  if (nd) {
    ir_set_ints(g, nd, "axis", axes, na);
    ir_set_int(g, nd, "keepdims", onnx_attr_int(n, "keepdims", 1) != 0);
  }
  if (!count) return onnx_finish_one(cx, n, nd, &outs[0], d);
  if (!nd || onnx_finish(cx, n, nd, d) != MLC_OK) return d->status;
  Value *r = nd->outputs[0];
  if (r->type.ndim == 0) { /* the count [1] broadcast would give a [1] result: make it a scalar */
    int64_t none[1] = {0};
    Node *rs = onnx_emit(cx, n, "reshape", 1, &count, 1, d);
    if (rs) ir_set_ints(g, rs, "newshape", none, 0);
    if (!rs || onnx_finish(cx, n, rs, d) != MLC_OK) return d->status;
    count = rs->outputs[0];
  }
  Value *ins[2] = {r, count};
  return onnx_finish_one(cx, n, onnx_emit(cx, n, "divide", 2, ins, 1, d), &outs[0], d);
}

static mlc_status conv_arg(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 1 || !n->inputs[0]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs an input", n->op_type);
  Value *x = n->inputs[0];
  int64_t axis = onnx_attr_int(n, "axis", 0);
  mlc_status st = normalize_axes(cx, n, x->type.ndim, &axis, 1, d);
  if (st != MLC_OK) return st;
  bool is_max = strcmp(n->op_type, "ArgMax") == 0, last = onnx_attr_int(n, "select_last_index", 0) != 0;
  /* over the data-dependent axis: the padding masked to lose every comparison (it comes after the valid
   * elements, so the first extreme is a valid one); the last extreme is clamped below the extent, since
   * padding equal to it (all valid elements -inf for a max) would come later. An empty extent gives 0. */
  Value *ext = x->dyn_extent && x->dyn_axis == axis ? x->dyn_extent : NULL;
  if (ext && !(x = onnx_dyn_mask(cx, n, x, is_max ? "lowest" : "highest", d))) return d->status;
  Graph *g = onnx_graph(cx);
  Node *nd = onnx_emit(cx, n, is_max ? "argmax" : "argmin", 1, &x, 1, d);
  if (nd) {
    ir_set_ints(g, nd, "axis", &axis, 1);
    ir_set_int(g, nd, "keepdims", onnx_attr_int(n, "keepdims", 1) != 0);
    ir_set_int(g, nd, "select_last_index", last);
  }
  if (!ext || !last) return onnx_finish_one(cx, n, nd, &outs[0], d);
  if (!nd || onnx_finish(cx, n, nd, d) != MLC_OK) return d->status;
  Value *top = onnx_binary(cx, n, "maximum", onnx_binary(cx, n, "subtract", ext, onnx_extent_const(cx, 1), d),
                           onnx_extent_const(cx, 0), d);
  int64_t none[1] = {0};
  Node *r = top ? onnx_emit(cx, n, "reshape", 1, &top, 1, d) : NULL;
  if (r) ir_set_ints(g, r, "newshape", none, 0);
  if (!r || onnx_finish(cx, n, r, d) != MLC_OK) return d->status;
  Value *ins[2] = {nd->outputs[0], r->outputs[0]};
  return onnx_finish_one(cx, n, onnx_emit(cx, n, "minimum", 2, ins, 1, d), &outs[0], d);
}

const OnnxConverter onnx_ops_reduce[] = {
    {"ReduceSum", "", conv_reduce},  {"ReduceMean", "", conv_reduce},      {"ReduceMax", "", conv_reduce},
    {"ReduceMin", "", conv_reduce},  {"ReduceProd", "", conv_reduce},      {"ReduceL1", "", conv_reduce},
    {"ReduceL2", "", conv_reduce},   {"ReduceLogSum", "", conv_reduce},    {"ReduceLogSumExp", "", conv_reduce},
    {"ReduceSumSquare", "", conv_reduce}, {"ArgMax", "", conv_arg},        {"ArgMin", "", conv_arg},
    {0},
};
