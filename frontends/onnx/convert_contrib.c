/* ONNX converters of the contrib family (see families.def): the float32 com.microsoft ops that ONNX Runtime's
 * transformer optimizer writes into the models it saves (BERT, GPT-2 and ViT exports optimized by
 * onnxruntime.transformers or Hugging Face Optimum), as ONNX Runtime's contrib op schemas define them, onto
 * the graph ops the default domain's converters use:
 *   Gelu(X), BiasGelu(A, B) = Gelu(A + B), FastGelu(X, bias?) = tanh-Gelu(X + bias), QuickGelu(X; alpha 1.702)
 *     = X * sigmoid(alpha X);
 *   BiasAdd(X, bias, skip) = X + bias + skip;
 *   FusedMatMul(A, B; alpha, transA, transB) = alpha * op(A) . op(B), op transposing the last two axes
 *     (transBatchA / transBatchB are not supported);
 *   SimplifiedLayerNormalization (axis, epsilon, stash_type; com.microsoft, or the default domain where ONNX
 *     Runtime registers it) as RMSNormalization (its LayerNormalization before opset 17 is the default
 *     domain's converter, which takes any opset);
 *   SkipLayerNormalization(input, skip, gamma, beta?, bias?; epsilon) and SkipSimplifiedLayerNormalization(input,
 *     skip, gamma, bias?; epsilon): s = input + skip (+ bias) normalized over the last axis; output 3 is s.
 * The optional mean / inverse-deviation outputs of the normalizations (training) are not supported. */
#include <string.h>
#include "frontends/onnx/onnx.h"

static Value *opt_in(const OnnxNode *n, int i) { return i < n->ninputs ? n->inputs[i] : NULL; }

static bool named(const OnnxNode *n, int i) { return i < n->noutputs && n->output_names[i] && *n->output_names[i]; }

static Value *gelu(OnnxCtx *cx, const OnnxNode *n, Value *x, const char *approximate, Diag *d) {
  if (!x) return NULL;
  Node *nd = onnx_emit(cx, n, "nn.gelu", 1, &x, 1, d);
  if (nd) ir_set_string(onnx_graph(cx), nd, "approximate", approximate);
  Value *out = NULL;
  return onnx_finish_one(cx, n, nd, &out, d) ? NULL : out;
}

static mlc_status done(Value *v, Value **out, Diag *d) {
  if (!v) return d->status ? d->status : MLC_ERR_INTERNAL;
  *out = v;
  return MLC_OK;
}

static mlc_status ms_gelu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  return st ? st : done(gelu(cx, n, n->inputs[0], "none", d), &outs[0], d);
}

static mlc_status ms_bias_gelu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  return done(gelu(cx, n, onnx_binary(cx, n, "add", n->inputs[0], n->inputs[1], d), "none", d), &outs[0], d);
}

static mlc_status ms_fast_gelu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0], *bias = opt_in(n, 1);
  if (bias) x = onnx_binary(cx, n, "add", x, bias, d);
  return done(gelu(cx, n, x, "tanh", d), &outs[0], d);
}

static mlc_status ms_quick_gelu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Node *nd = onnx_emit(cx, n, "nn.swish", 1, n->inputs, 1, d);
  if (nd) ir_set_float(onnx_graph(cx), nd, "alpha", onnx_attr_float(n, "alpha", 1.702));
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status ms_bias_add(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  Value *s = onnx_binary(cx, n, "add", n->inputs[0], n->inputs[1], d);
  return done(s ? onnx_binary(cx, n, "add", s, n->inputs[2], d) : NULL, &outs[0], d);
}

/* x with its last two axes swapped */
static Value *swap_last(OnnxCtx *cx, const OnnxNode *n, Value *x, Diag *d) {
  int r = x->type.ndim;
  if (r < 2) {
    onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: a transposed operand of rank %d", n->op_type, r);
    return NULL;
  }
  int64_t perm[MLC_MAX_DIMS];
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  Node *nd = onnx_emit(cx, n, "transpose", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "axes", perm, r);
  Value *out = NULL;
  return onnx_finish_one(cx, n, nd, &out, d) ? NULL : out;
}

static mlc_status ms_fused_matmul(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  if (onnx_attr_int(n, "transBatchA", 0) || onnx_attr_int(n, "transBatchB", 0))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with transBatchA / transBatchB is not supported", n->op_type);
  Value *ab[2] = {n->inputs[0], n->inputs[1]}, *y = NULL;
  if (onnx_attr_int(n, "transA", 0) && !(ab[0] = swap_last(cx, n, ab[0], d))) return d->status;
  if (onnx_attr_int(n, "transB", 0) && !(ab[1] = swap_last(cx, n, ab[1], d))) return d->status;
  if ((st = onnx_convert_as(cx, n, "MatMul", 13, false, 2, ab, &y, d))) return st;
  double alpha = onnx_attr_float(n, "alpha", 1.0);
  if (alpha != 1.0) y = onnx_binary(cx, n, "multiply", y, onnx_scalar(cx, n, "alpha", y->type.dtype, alpha), d);
  return done(y, &outs[0], d);
}

/* the normalizations' optional mean and inverse standard deviation outputs (1 and 2) */
static mlc_status no_stats(OnnxCtx *cx, const OnnxNode *n, Diag *d) {
  if (named(n, 1) || named(n, 2))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: the mean / inverse standard deviation outputs are not "
                      "supported", n->op_type);
  return MLC_OK;
}

static mlc_status ms_simplified_layer_norm(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st || (st = no_stats(cx, n, d))) return st;
  return onnx_convert_as(cx, n, "RMSNormalization", 23, true, 2, n->inputs, &outs[0], d);
}

static mlc_status ms_skip_layer_norm(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st || (st = no_stats(cx, n, d))) return st;
  bool rms = !strcmp(n->op_type, "SkipSimplifiedLayerNormalization");
  Value *beta = rms ? NULL : opt_in(n, 3), *bias = opt_in(n, rms ? 3 : 4);
  Value *s = onnx_binary(cx, n, "add", n->inputs[0], n->inputs[1], d);
  if (s && bias) s = onnx_binary(cx, n, "add", s, bias, d);
  if (!s) return d->status ? d->status : MLC_ERR_INTERNAL;
  Value *ins[3] = {s, n->inputs[2], beta};
  if ((st = onnx_convert_as(cx, n, rms ? "RMSNormalization" : "LayerNormalization", rms ? 23 : 17, true,
                            beta ? 3 : 2, ins, &outs[0], d)))
    return st;
  if (named(n, 3)) outs[3] = s;
  return MLC_OK;
}

const OnnxConverter onnx_ops_contrib[] = {
    /* op_type                          domain           converter */
    {"Gelu", "com.microsoft", ms_gelu},
    {"BiasGelu", "com.microsoft", ms_bias_gelu},
    {"FastGelu", "com.microsoft", ms_fast_gelu},
    {"QuickGelu", "com.microsoft", ms_quick_gelu},
    {"BiasAdd", "com.microsoft", ms_bias_add},
    {"FusedMatMul", "com.microsoft", ms_fused_matmul},
    {"SimplifiedLayerNormalization", "com.microsoft", ms_simplified_layer_norm},
    {"SimplifiedLayerNormalization", "", ms_simplified_layer_norm}, /* (ONNX Runtime: the default domain) */
    {"SkipLayerNormalization", "com.microsoft", ms_skip_layer_norm},
    {"SkipSimplifiedLayerNormalization", "com.microsoft", ms_skip_layer_norm},
    {NULL, NULL, NULL},
};
