/* ONNX converters of the norm family (see families.def), onto the ops of src/topi/norm.c.
 *
 *   LayerNormalization (17)      -> nn.layer_norm: axis (default -1) made non-negative, epsilon (1e-5),
 *                                   stash_type (1); the optional Mean / InvStdDev outputs become outputs 2, 3.
 *   RMSNormalization (23)        -> nn.rms_norm: axis, epsilon.
 *   GroupNormalization (18, 21)  -> nn.group_norm: num_groups, epsilon; scale/bias have shape (G) in opset 18
 *                                   (param "group") and (C) from opset 21 (param "channel").
 *   InstanceNormalization (1, 6) -> nn.group_norm with num_groups = C, per-channel scale/bias.
 *   MeanVarianceNormalization    -> nn.mvn: axes (default [0, 2, 3]) made non-negative.
 *   LpNormalization              -> nn.lp_norm: axis (default -1), p (1 or 2).
 *   LRN                          -> nn.lrn: size (required), alpha, beta, bias. */
#include <string.h>
#include "frontends/onnx/onnx.h"

/* number of outputs up to the last one the model names */
static int used_outputs(const OnnxNode *n, int max) {
  int k = 1;
  for (int i = 1; i < n->noutputs && i < max; i++)
    if (n->output_names[i] && *n->output_names[i]) k = i + 1;
  return k;
}

static mlc_status layernorm_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t axis = onnx_attr_int(n, "axis", -1);
  if ((st = onnx_norm_axis(cx, n, &axis, x->type.ndim, d))) return st;
  bool rms = strcmp(n->op_type, "RMSNormalization") == 0;
  Value *ins[3] = {x, n->inputs[1], n->ninputs > 2 ? n->inputs[2] : NULL};
  int nin = !rms && ins[2] ? 3 : 2;
  int nout = rms ? 1 : used_outputs(n, 3);
  Node *nd = onnx_emit(cx, n, rms ? "nn.rms_norm" : "nn.layer_norm", nin, ins, nout, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "axis", axis);
    ir_set_float(g, nd, "epsilon", onnx_attr_float(n, "epsilon", 1e-5));
    ir_set_int(g, nd, "stash_type", onnx_attr_int(n, "stash_type", 1));
  }
  return onnx_finish_all(cx, n, nd, outs, d);
}

static mlc_status groupnorm_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  Value *x = n->inputs[0];
  if (x->type.ndim < 2) return onnx_error(cx, n, d, MLC_ERR_INVALID, "input must have rank >= 2");
  bool inst = strcmp(n->op_type, "InstanceNormalization") == 0;
  int64_t groups;
  if (inst) {
    groups = x->type.dims[1];
  } else {
    if (!onnx_has_attr(n, "num_groups")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "num_groups is required");
    groups = onnx_attr_int(n, "num_groups", 1);
  }
  Node *nd = onnx_emit(cx, n, "nn.group_norm", 3, n->inputs, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "num_groups", groups);
    ir_set_float(g, nd, "epsilon", onnx_attr_float(n, "epsilon", 1e-5));
    ir_set_string(g, nd, "param", !inst && n->opset < 21 ? "group" : "channel");
  }
  return onnx_finish_all(cx, n, nd, outs, d);
}

static mlc_status mvn_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t axes[MLC_MAX_DIMS + 1] = {0, 2, 3};
  int na = onnx_attr_ints(n, "axes", axes, MLC_MAX_DIMS + 1);
  if (na < 0) na = 3;
  if (na > x->type.ndim) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%d axes for a rank-%d input", na, x->type.ndim);
  for (int i = 0; i < na; i++)
    if ((st = onnx_norm_axis(cx, n, &axes[i], x->type.ndim, d))) return st;
  Node *nd = onnx_emit(cx, n, "nn.mvn", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "axis", axes, na);
  return onnx_finish_all(cx, n, nd, outs, d);
}

static mlc_status lpnorm_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t axis = onnx_attr_int(n, "axis", -1), p = onnx_attr_int(n, "p", 2);
  if ((st = onnx_norm_axis(cx, n, &axis, x->type.ndim, d))) return st;
  if (p != 1 && p != 2) return onnx_error(cx, n, d, MLC_ERR_INVALID, "p must be 1 or 2, got %lld", (long long)p);
  Node *nd = onnx_emit(cx, n, "nn.lp_norm", 1, &x, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "axis", axis);
    ir_set_int(onnx_graph(cx), nd, "p", p);
  }
  return onnx_finish_all(cx, n, nd, outs, d);
}

static mlc_status lrn_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  if (!onnx_has_attr(n, "size")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "LRN needs the size attribute");
  Node *nd = onnx_emit(cx, n, "nn.lrn", 1, n->inputs, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "size", onnx_attr_int(n, "size", 1));
    ir_set_float(g, nd, "alpha", onnx_attr_float(n, "alpha", 1e-4));
    ir_set_float(g, nd, "beta", onnx_attr_float(n, "beta", 0.75));
    ir_set_float(g, nd, "bias", onnx_attr_float(n, "bias", 1.0));
  }
  return onnx_finish_all(cx, n, nd, outs, d);
}

const OnnxConverter onnx_ops_norm[] = {
    {"LayerNormalization", "", layernorm_convert},
    {"RMSNormalization", "", layernorm_convert},
    {"GroupNormalization", "", groupnorm_convert},
    {"InstanceNormalization", "", groupnorm_convert},
    {"MeanVarianceNormalization", "", mvn_convert},
    {"LpNormalization", "", lpnorm_convert},
    {"LRN", "", lrn_convert},
    {0},
};
