/* ONNX converters of the contrib family (see families.def): the float32 com.microsoft ops that ONNX Runtime's
 * transformer optimizer writes into the models it saves (BERT, GPT-2 and ViT exports optimized by
 * onnxruntime.transformers or Hugging Face Optimum), as ONNX Runtime's contrib op schemas define them, onto
 * the graph ops the default domain's converters use:
 *   Gelu(X), BiasGelu(A, B) = Gelu(A + B), FastGelu(X, bias?) = tanh-Gelu(X + bias), QuickGelu(X; alpha 1.702)
 *     = X * sigmoid(alpha X);
 *   BiasAdd(X, bias, skip) = X + bias + skip;
 *   FusedMatMul(A, B; alpha, transA, transB) = alpha * op(A) . op(B), op transposing the last two axes
 *     (transBatchA / transBatchB are not supported); FusedConv (Conv + Z + activation) and FusedGemm (Gemm +
 *     activation), which ONNX Runtime saves of CNNs optimized for its CPU provider;
 *   SimplifiedLayerNormalization (axis, epsilon, stash_type; com.microsoft, or the default domain where ONNX
 *     Runtime registers it) as RMSNormalization (its LayerNormalization before opset 17 is the default
 *     domain's converter, which takes any opset);
 *   SkipLayerNormalization(input, skip, gamma, beta?, bias?; epsilon) and SkipSimplifiedLayerNormalization(input,
 *     skip, gamma, bias?; epsilon): s = input + skip (+ bias) normalized over the last axis; output 3 is s;
 *   Attention (BERT's fused self-attention): the QKV projection, then nn.attention (see ms_attention);
 *   MultiHeadAttention (separate query, key and value: ViT, CLIP, Whisper, UNet exports; ms_multi_head_attention);
 *   EmbedLayerNormalization (BERT's embeddings and the mask lengths, see ms_embed_layer_norm);
 *   RotaryEmbedding (positions [B, S] or an offset) as the default domain's;
 *   GroupNorm, SkipGroupNorm (channels last) and BiasSplitGelu of diffusion UNets.
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

static Value *const_i64(OnnxCtx *cx, const OnnxNode *n, const char *what, int k, const int64_t *v) {
  TensorType t = {.dtype = MLC_I64, .ndim = 1, .dims = {k}};
  int64_t *data = arena_alloc(onnx_graph(cx)->arena, sizeof(int64_t) * (size_t)(k ? k : 1));
  memcpy(data, v, sizeof(int64_t) * (size_t)k);
  return onnx_const(cx, arena_printf(onnx_graph(cx)->arena, "%s_%s", n->name, what), t, data);
}

/* x[..., a:b] */
static Value *slice_last(OnnxCtx *cx, const OnnxNode *n, Value *x, int64_t a, int64_t b, Diag *d) {
  int64_t axis = x->type.ndim - 1;
  Value *ins[4] = {x, const_i64(cx, n, "start", 1, &a), const_i64(cx, n, "end", 1, &b),
                   const_i64(cx, n, "axis", 1, &axis)};
  Value *y = NULL;
  return onnx_convert_as(cx, n, "Slice", 13, false, 4, ins, &y, d) ? NULL : y;
}

static Value *reshape(OnnxCtx *cx, const OnnxNode *n, Value *x, int r, const int64_t *dims, Diag *d) {
  if (!x) return NULL;
  Value *ins[2] = {x, const_i64(cx, n, "shape", r, dims)}, *y = NULL;
  return onnx_convert_as(cx, n, "Reshape", 14, false, 2, ins, &y, d) ? NULL : y;
}

static Value *cast(OnnxCtx *cx, const OnnxNode *n, Value *x, mlc_dtype t, Diag *d) {
  if (!x) return NULL;
  Node *nd = onnx_emit(cx, n, "cast", 1, &x, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "dtype", t);
  Value *y = NULL;
  return onnx_finish_one(cx, n, nd, &y, d) ? NULL : y;
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

/* x with its axes permuted */
static Value *permute(OnnxCtx *cx, const OnnxNode *n, Value *x, const int64_t *perm, Diag *d) {
  if (!x) return NULL;
  Node *nd = onnx_emit(cx, n, "transpose", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "axes", perm, x->type.ndim);
  Value *y = NULL;
  return onnx_finish_one(cx, n, nd, &y, d) ? NULL : y;
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
  return permute(cx, n, x, perm, d);
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

/* com.microsoft RotaryEmbedding (input [B, S, H] or [B, N, S, h], position_ids [B, S] or [1] (an offset: the
 * positions offset .. offset + S - 1), cos_cache, sin_cache; interleaved, num_heads, rotary_embedding_dim):
 * the default domain's RotaryEmbedding (nn.rotary_embedding) with the positions made [B, S]. scale other than
 * 1 and packed batching are not supported. */
static mlc_status ms_rotary(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 4, d);
  if (st) return st;
  if (onnx_attr_float(n, "scale", 1.0) != 1.0 || onnx_attr_int(n, "is_packed_batching", 0))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with scale != 1 or packed batching is not supported",
                      n->op_type);
  Value *x = n->inputs[0], *pos = n->inputs[1];
  int r = x->type.ndim;
  if (r != 3 && r != 4)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the input must be 3-D or 4-D, got rank %d", n->op_type, r);
  int64_t B = x->type.dims[0], S = x->type.dims[r == 3 ? 1 : 2];
  if (tt_numel(&pos->type) == 1 && !(B == 1 && S == 1 && pos->type.ndim == 2)) { /* an offset */
    Graph *g = onnx_graph(cx);
    TensorType st64 = {.dtype = pos->type.dtype, .ndim = 2, .dims = {B, S}};
    int64_t *steps = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(B * S > 0 ? B * S : 1));
    if (pos->type.dtype != MLC_I64)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: position_ids must be int64", n->op_type);
    for (int64_t i = 0; i < B * S; i++) steps[i] = i % S;
    Value *base = onnx_const(cx, arena_printf(g->arena, "%s_positions", n->name), st64, steps);
    int64_t one[1] = {1};
    Node *rs = onnx_emit(cx, n, "reshape", 1, &pos, 1, d);
    if (rs) ir_set_ints(g, rs, "newshape", one, 1);
    Value *off = NULL;
    if ((st = onnx_finish_one(cx, n, rs, &off, d))) return st;
    if (!(pos = onnx_binary(cx, n, "add", base, off, d))) return d->status;
  }
  Value *ins[4] = {x, n->inputs[2], n->inputs[3], pos};
  Node *nd = onnx_emit(cx, n, "nn.rotary_embedding", 4, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "interleaved", onnx_attr_int(n, "interleaved", 0) != 0);
    ir_set_int(g, nd, "num_heads", onnx_attr_int(n, "num_heads", 0));
    ir_set_int(g, nd, "rotary_dim", onnx_attr_int(n, "rotary_embedding_dim", 0));
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- diffusion UNet ops */

/* GroupNorm / SkipGroupNorm (com.microsoft: X, gamma, beta[, skip, bias]; groups, epsilon, activation 0 / 1
 * (SiLU), channels_last 1 by default): s = X (+ skip + bias), normalized in `groups` groups of channels as
 * nn.group_norm does (NCHW: a channels-last s is transposed there and back), SiLU after; SkipGroupNorm's output
 * 1 is s */
static mlc_status ms_group_norm(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  bool skip = !strcmp(n->op_type, "SkipGroupNorm"), last = onnx_attr_int(n, "channels_last", 1) != 0;
  Value *s = n->inputs[0];
  int r = s->type.ndim;
  int64_t groups = onnx_attr_int(n, "groups", 0), act = onnx_attr_int(n, "activation", 0);
  if (r < 3 || groups < 1 || (act != 0 && act != 1))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs a rank >= 3 input, groups and activation 0 or 1",
                      n->op_type);
  if (skip) {
    if ((st = onnx_need_inputs(cx, n, 4, d))) return st;
    if (!last)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with channels_last 0 is not supported", n->op_type);
    Value *sk = n->inputs[3];
    if (sk->type.ndim == 2) { /* [N, C]: per sample and channel */
      int64_t shape[MLC_MAX_DIMS];
      shape[0] = sk->type.dims[0];
      for (int i = 1; i < r - 1; i++) shape[i] = 1;
      shape[r - 1] = sk->type.dims[1];
      Node *rs = onnx_emit(cx, n, "reshape", 1, &sk, 1, d);
      if (rs) ir_set_ints(onnx_graph(cx), rs, "newshape", shape, r);
      if ((st = onnx_finish_one(cx, n, rs, &sk, d))) return st;
    }
    s = onnx_binary(cx, n, "add", s, sk, d);
    if (s && opt_in(n, 4)) s = onnx_binary(cx, n, "add", s, n->inputs[4], d);
    if (!s) return d->status ? d->status : MLC_ERR_INTERNAL;
  }
  int64_t to_first[MLC_MAX_DIMS], to_last[MLC_MAX_DIMS];
  to_first[0] = to_last[0] = 0;
  to_first[1] = r - 1;
  to_last[r - 1] = 1;
  for (int i = 2; i < r; i++) to_first[i] = i - 1;
  for (int i = 1; i < r - 1; i++) to_last[i] = i + 1;
  Value *x = last ? permute(cx, n, s, to_first, d) : s;
  Value *ins[3] = {x, n->inputs[1], n->inputs[2]};
  Node *nd = x ? onnx_emit(cx, n, "nn.group_norm", 3, ins, 1, d) : NULL;
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "num_groups", groups);
    ir_set_float(onnx_graph(cx), nd, "epsilon", onnx_attr_float(n, "epsilon", 1e-5));
    ir_set_string(onnx_graph(cx), nd, "param", "channel");
  }
  Value *y = NULL;
  if (!nd || onnx_finish_one(cx, n, nd, &y, d)) return d->status ? d->status : MLC_ERR_INTERNAL;
  if (act) {
    Node *sw = onnx_emit(cx, n, "nn.swish", 1, &y, 1, d);
    if (sw) ir_set_float(onnx_graph(cx), sw, "alpha", 1.0);
    if ((st = onnx_finish_one(cx, n, sw, &y, d))) return st;
  }
  if (last && !(y = permute(cx, n, y, to_last, d))) return d->status;
  outs[0] = y;
  if (skip && named(n, 1)) outs[1] = s;
  return MLC_OK;
}

/* BiasSplitGelu (X [.., 2D], bias [2D]): (X + bias)[.., :D] * Gelu((X + bias)[.., D:]) */
static mlc_status ms_bias_split_gelu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *s = onnx_binary(cx, n, "add", n->inputs[0], n->inputs[1], d);
  if (!s) return d->status ? d->status : MLC_ERR_INTERNAL;
  int64_t w = s->type.dims[s->type.ndim - 1];
  if (w % 2) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: an odd last dimension %lld", n->op_type, (long long)w);
  Value *a = slice_last(cx, n, s, 0, w / 2, d), *b = gelu(cx, n, slice_last(cx, n, s, w / 2, w, d), "none", d);
  return done(a && b ? onnx_binary(cx, n, "multiply", a, b, d) : NULL, &outs[0], d);
}

/* ---------------------------------------------------------------- FusedConv, FusedGemm */

/* ONNX Runtime's fused activation of x: activation "Relu", "Tanh", "Sigmoid", "LeakyRelu" (alpha), "Clip"
 * (min, max), "HardSigmoid" (alpha, beta), its parameters in the float list `params` (FusedConv's
 * activation_params) or in the attributes activation_alpha / activation_beta (FusedGemm's) */
static Value *fused_activation(OnnxCtx *cx, const OnnxNode *n, Value *x, const char *params, Diag *d) {
  const char *act = onnx_attr_string(n, "activation", "");
  double p[2] = {0, 0};
  int np = params ? onnx_attr_floats(n, params, p, 2) : 0;
  if (!params) {
    np = onnx_has_attr(n, "activation_alpha") + onnx_has_attr(n, "activation_beta");
    p[0] = onnx_attr_float(n, "activation_alpha", 0);
    p[1] = onnx_attr_float(n, "activation_beta", 0);
  }
  Graph *g = onnx_graph(cx);
  Node *nd = NULL;
  if (!*act) return x;
  if (!strcmp(act, "Relu") || !strcmp(act, "Tanh") || !strcmp(act, "Sigmoid")) {
    nd = onnx_emit(cx, n, !strcmp(act, "Relu") ? "nn.relu" : !strcmp(act, "Tanh") ? "tanh" : "sigmoid", 1, &x, 1, d);
  } else if (!strcmp(act, "LeakyRelu")) {
    if ((nd = onnx_emit(cx, n, "nn.leaky_relu", 1, &x, 1, d))) ir_set_float(g, nd, "alpha", np > 0 ? p[0] : 0.01);
  } else if (!strcmp(act, "HardSigmoid")) {
    if ((nd = onnx_emit(cx, n, "nn.hard_sigmoid", 1, &x, 1, d))) {
      ir_set_float(g, nd, "alpha", np > 0 ? p[0] : 0.2);
      ir_set_float(g, nd, "beta", np > 1 ? p[1] : 0.5);
    }
  } else if (!strcmp(act, "Clip") && np == 2) {
    if ((nd = onnx_emit(cx, n, "clip", 1, &x, 1, d))) {
      ir_set_float(g, nd, "a_min", p[0]);
      ir_set_float(g, nd, "a_max", p[1]);
    }
  } else {
    onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: activation '%s'%s is not supported", n->op_type, act,
               !strcmp(act, "Clip") ? " without its min and max" : "");
    return NULL;
  }
  Value *y = NULL;
  return onnx_finish_one(cx, n, nd, &y, d) ? NULL : y;
}

/* FusedConv (X, W, B?, Z?): activation(Conv(X, W, B) + Z), Conv's attributes */
static mlc_status ms_fused_conv(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *ins[3] = {n->inputs[0], n->inputs[1], opt_in(n, 2)}, *y = NULL, *z = opt_in(n, 3);
  if ((st = onnx_convert_as(cx, n, "Conv", 11, true, ins[2] ? 3 : 2, ins, &y, d))) return st;
  if (z && !(y = onnx_binary(cx, n, "add", y, z, d))) return d->status;
  return done(fused_activation(cx, n, y, "activation_params", d), &outs[0], d);
}

/* FusedGemm (A, B, C?): activation(Gemm(A, B, C)), Gemm's attributes, activation_alpha / activation_beta */
static mlc_status ms_fused_gemm(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *ins[3] = {n->inputs[0], n->inputs[1], opt_in(n, 2)}, *y = NULL;
  if ((st = onnx_convert_as(cx, n, "Gemm", 13, true, ins[2] ? 3 : 2, ins, &y, d))) return st;
  return done(fused_activation(cx, n, y, NULL, d), &outs[0], d);
}

/* ---------------------------------------------------------------- Attention */

/* filter (a float of dtype t) where the bool masked is true, else 0 */
static Value *filter_where(OnnxCtx *cx, const OnnxNode *n, Value *masked, mlc_dtype t, double filter, Diag *d) {
  Value *f = cast(cx, n, masked, t, d);
  return f ? onnx_binary(cx, n, "multiply", f, onnx_scalar(cx, n, "mask_filter", t, filter), d) : NULL;
}

/* The additive float mask [B, 1, S or 1, T] of Attention's mask_index: raw 0/1 masks [B, T] and [B, S, T]
 * (0 masked), right-padding lengths [B] (positions >= the length masked) and [2B] (ends, then starts) */
static Value *attention_mask(OnnxCtx *cx, const OnnxNode *n, Value *m, int64_t B, int64_t S, int64_t T,
                             mlc_dtype t, Diag *d) {
  double filter = onnx_attr_float(n, "mask_filter_value", -10000.0);
  const TensorType *mt = &m->type;
  if (mt->dtype != MLC_I32) {
    onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: mask_index must be int32, got %s", n->op_type,
               mlc_dtype_name(mt->dtype));
    return NULL;
  }
  if ((mt->ndim == 2 && mt->dims[0] == B && mt->dims[1] == T) ||
      (mt->ndim == 3 && mt->dims[0] == B && mt->dims[1] == S && mt->dims[2] == T)) {
    Value *masked = onnx_binary(cx, n, "equal", m, onnx_scalar(cx, n, "zero", MLC_I32, 0), d);
    int64_t shape[4] = {B, 1, mt->ndim == 3 ? S : 1, T};
    return reshape(cx, n, masked ? filter_where(cx, n, masked, t, filter, d) : NULL, 4, shape, d);
  }
  if (mt->ndim == 1 && (mt->dims[0] == B || mt->dims[0] == 2 * B)) {
    TensorType pt = {.dtype = MLC_I32, .ndim = 2, .dims = {1, T}};
    int32_t *pos = arena_alloc(onnx_graph(cx)->arena, sizeof(int32_t) * (size_t)T);
    for (int64_t j = 0; j < T; j++) pos[j] = (int32_t)j;
    Value *p = onnx_const(cx, arena_printf(onnx_graph(cx)->arena, "%s_positions", n->name), pt, pos);
    int64_t col[2] = {B, 1};
    Value *end = reshape(cx, n, mt->dims[0] == B ? m : slice_last(cx, n, m, 0, B, d), 2, col, d);
    Value *masked = end ? onnx_binary(cx, n, "greater_equal", p, end, d) : NULL;
    if (masked && mt->dims[0] == 2 * B) {
      Value *start = reshape(cx, n, slice_last(cx, n, m, B, 2 * B, d), 2, col, d);
      Value *before = start ? onnx_binary(cx, n, "less", p, start, d) : NULL;
      masked = before ? onnx_binary(cx, n, "logical_or", masked, before, d) : NULL;
    }
    int64_t shape[4] = {B, 1, 1, T};
    return reshape(cx, n, masked ? filter_where(cx, n, masked, t, filter, d) : NULL, 4, shape, d);
  }
  onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: a rank-%d mask_index is not supported (int32 [B], [2B], [B, T] or "
             "[B, S, T])", n->op_type, mt->ndim);
  return NULL;
}

/* nn.attention of 3-D q [B, S, N*h], k [B, T, N*h], v [B, T, N*hv] (ins[0..2]) with Attention's mask_index (or
 * MultiHeadAttention's key_padding_mask) and attention_bias as one additive mask; unidirectional: is_causal */
static mlc_status heads_attention(OnnxCtx *cx, const OnnxNode *n, Value **ins, Value *mask, Value *ab, int64_t B,
                                  int64_t S, int64_t T, int64_t heads, Value **out, Diag *d) {
  mlc_dtype t = ins[0]->type.dtype;
  ins[3] = NULL;
  if (mask && !(ins[3] = attention_mask(cx, n, mask, B, S, T, t, d))) return d->status;
  if (ab) ins[3] = ins[3] ? onnx_binary(cx, n, "add", ins[3], ab, d) : ab;
  if (ab && !ins[3]) return d->status;
  Node *nd = onnx_emit(cx, n, "nn.attention", ins[3] ? 4 : 3, ins, 4, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  Graph *g = onnx_graph(cx);
  ir_set_int(g, nd, "q_num_heads", heads);
  ir_set_int(g, nd, "kv_num_heads", heads);
  ir_set_float(g, nd, "scale", onnx_attr_float(n, "scale", 0.0));
  ir_set_float(g, nd, "softcap", 0.0);
  ir_set_int(g, nd, "is_causal", onnx_attr_int(n, "unidirectional", 0) != 0);
  ir_set_int(g, nd, "qk_mode", 0);
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st) return st;
  *out = nd->outputs[0];
  return MLC_OK;
}

/* com.microsoft Attention (input [B, S, D], weights [D, Hq + Hk + Hv], bias, mask_index, past, attention_bias;
 * num_heads, qkv_hidden_sizes, unidirectional, scale, mask_filter_value): the projection, then nn.attention of
 * the 3-D Q, K, V with the mask and bias as one additive mask (unidirectional: is_causal). past / present,
 * do_rotary and Megatron's 4-D mask are not supported. */
static mlc_status ms_attention(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *w = n->inputs[1], *bias = opt_in(n, 2), *mask = opt_in(n, 3), *ab = opt_in(n, 5);
  if (opt_in(n, 4) || named(n, 1))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with past / present (a KV cache) is not supported",
                      n->op_type);
  if (onnx_attr_int(n, "do_rotary", 0))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with do_rotary is not supported", n->op_type);
  int64_t heads = onnx_attr_int(n, "num_heads", 0);
  if (x->type.ndim != 3 || w->type.ndim != 2 || heads < 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs input [B, S, D], weights [D, 3H] and num_heads", n->op_type);
  int64_t B = x->type.dims[0], S = x->type.dims[1], sizes[3];
  int ns = onnx_attr_ints(n, "qkv_hidden_sizes", sizes, 3);
  if (ns < 0) sizes[0] = sizes[1] = sizes[2] = w->type.dims[1] / 3;
  else if (ns != 3) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: qkv_hidden_sizes needs 3 sizes", n->op_type);
  if (sizes[0] + sizes[1] + sizes[2] != w->type.dims[1] || sizes[0] != sizes[1] || sizes[0] % heads ||
      sizes[2] % heads)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: hidden sizes %lld, %lld, %lld do not fit weights [%lld, %lld] "
                      "and %lld heads", n->op_type, (long long)sizes[0], (long long)sizes[1], (long long)sizes[2],
                      (long long)w->type.dims[0], (long long)w->type.dims[1], (long long)heads);
  Value *xw[2] = {x, w}, *qkv = NULL;
  if ((st = onnx_convert_as(cx, n, "MatMul", 13, false, 2, xw, &qkv, d))) return st;
  if (bias && !(qkv = onnx_binary(cx, n, "add", qkv, bias, d))) return d->status;
  Value *ins[4] = {slice_last(cx, n, qkv, 0, sizes[0], d), slice_last(cx, n, qkv, sizes[0], 2 * sizes[0], d),
                   slice_last(cx, n, qkv, 2 * sizes[0], w->type.dims[1], d), NULL};
  if (!ins[0] || !ins[1] || !ins[2]) return d->status;
  return heads_attention(cx, n, ins, mask, ab, B, S, S, heads, &outs[0], d);
}

/* com.microsoft MultiHeadAttention (query [B, S, D], key [B, T, D], value [B, T, Dv], bias [D + D + Dv]?,
 * key_padding_mask?, attention_bias?; num_heads, scale, mask_filter_value, unidirectional): nn.attention of the
 * three (plus their slices of the bias). The packed forms (query holding K and V, key [B, T, N, 2, h]), a
 * cross-attention cache (4-D key / value) and past / present are not supported. */
static mlc_status ms_multi_head_attention(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *ins[4] = {n->inputs[0], opt_in(n, 1), opt_in(n, 2), NULL}, *bias = opt_in(n, 3);
  int64_t heads = onnx_attr_int(n, "num_heads", 0);
  if (opt_in(n, 6) || opt_in(n, 7) || named(n, 1) || named(n, 2))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with past / present (a KV cache) is not supported",
                      n->op_type);
  if (!ins[1] || !ins[2] || ins[0]->type.ndim != 3 || ins[1]->type.ndim != 3 || ins[2]->type.ndim != 3)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s supports separate 3-D query, key and value only "
                      "(not the packed forms or a 4-D key / value cache)", n->op_type);
  int64_t B = ins[0]->type.dims[0], S = ins[0]->type.dims[1], T = ins[1]->type.dims[1];
  int64_t dq = ins[0]->type.dims[2], dk = ins[1]->type.dims[2], dv = ins[2]->type.dims[2];
  if (heads < 1 || dq != dk || dq % heads || dv % heads || ins[2]->type.dims[1] != T)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: query, key and value [%lld, %lld, %lld], [.., %lld, %lld], "
                      "[.., %lld, %lld] do not fit %lld heads", n->op_type, (long long)B, (long long)S,
                      (long long)dq, (long long)T, (long long)dk, (long long)ins[2]->type.dims[1], (long long)dv,
                      (long long)heads);
  if (bias) {
    if (bias->type.ndim != 1 || bias->type.dims[0] != dq + dk + dv)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: bias must be [%lld]", n->op_type, (long long)(dq + dk + dv));
    int64_t at[4] = {0, dq, dq + dk, dq + dk + dv};
    for (int i = 0; i < 3; i++) {
      Value *part = slice_last(cx, n, bias, at[i], at[i + 1], d);
      if (!part || !(ins[i] = onnx_binary(cx, n, "add", ins[i], part, d))) return d->status;
    }
  }
  return heads_attention(cx, n, ins, opt_in(n, 4), opt_in(n, 5), B, S, T, heads, &outs[0], d);
}

/* com.microsoft EmbedLayerNormalization (BERT's embeddings: input_ids, segment_ids?, word_embedding,
 * position_embedding, segment_embedding?, gamma, beta, mask?, position_ids?; epsilon): LayerNormalization of
 * word[input_ids] + position[position_ids, else 0..S-1] + segment[segment_ids]; output 1, mask_index, the count
 * of ones in each row of mask (zeros without a mask), as Attention reads lengths; output 2 the sum */
static mlc_status ms_embed_layer_norm(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *ids = n->inputs[0], *seg_ids = opt_in(n, 1), *word = opt_in(n, 2), *pos = opt_in(n, 3), *seg = opt_in(n, 4);
  Value *gamma = opt_in(n, 5), *beta = opt_in(n, 6), *mask = opt_in(n, 7), *pos_ids = opt_in(n, 8);
  if (!word || !pos || !gamma || !beta || ids->type.ndim != 2 || (seg_ids && !seg))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs input_ids [B, S], word and position embeddings, gamma "
                      "and beta (and the segment embedding with segment_ids)", n->op_type);
  int64_t B = ids->type.dims[0], S = ids->type.dims[1];
  if (!pos_ids) {
    TensorType pt = {.dtype = MLC_I32, .ndim = 1, .dims = {S}};
    int32_t *p = arena_alloc(onnx_graph(cx)->arena, sizeof(int32_t) * (size_t)(S ? S : 1));
    for (int64_t i = 0; i < S; i++) p[i] = (int32_t)i;
    pos_ids = onnx_const(cx, arena_printf(onnx_graph(cx)->arena, "%s_position_ids", n->name), pt, p);
  }
  Value *g[2][2] = {{word, ids}, {pos, pos_ids}}, *e[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 2; i++)
    if ((st = onnx_convert_as(cx, n, "Gather", 13, false, 2, g[i], &e[i], d))) return st;
  Value *sum = onnx_binary(cx, n, "add", e[0], e[1], d);
  if (seg_ids) {
    Value *gs[2] = {seg, seg_ids};
    if ((st = onnx_convert_as(cx, n, "Gather", 13, false, 2, gs, &e[2], d))) return st;
    sum = sum ? onnx_binary(cx, n, "add", sum, e[2], d) : NULL;
  }
  if (!sum) return d->status ? d->status : MLC_ERR_INTERNAL;
  Value *ln[3] = {sum, gamma, beta};
  if ((st = onnx_convert_as(cx, n, "LayerNormalization", 17, true, 3, ln, &outs[0], d))) return st;
  if (named(n, 2)) outs[2] = sum;
  if (!named(n, 1)) return MLC_OK;
  Value *ones;
  if (mask) {
    Value *is_one = onnx_binary(cx, n, "equal", mask, onnx_scalar(cx, n, "one", mask->type.dtype, 1), d);
    int64_t axis = 1;
    Value *rs[2] = {cast(cx, n, is_one, MLC_I32, d), const_i64(cx, n, "axes", 1, &axis)};
    if (!rs[0]) return d->status;
    if ((st = onnx_convert_as(cx, n, "ReduceSum", 13, false, 2, rs, &ones, d))) return st;
    outs[1] = reshape(cx, n, ones, 1, &B, d);
  } else {
    TensorType zt = {.dtype = MLC_I32, .ndim = 1, .dims = {B}};
    int32_t *z = arena_alloc(onnx_graph(cx)->arena, sizeof(int32_t) * (size_t)(B ? B : 1));
    memset(z, 0, sizeof(int32_t) * (size_t)(B ? B : 1));
    outs[1] = onnx_const(cx, arena_printf(onnx_graph(cx)->arena, "%s_mask_index", n->name), zt, z);
  }
  return outs[1] ? MLC_OK : d->status ? d->status : MLC_ERR_INTERNAL;
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
    {"Attention", "com.microsoft", ms_attention},
    {"EmbedLayerNormalization", "com.microsoft", ms_embed_layer_norm},
    {"MultiHeadAttention", "com.microsoft", ms_multi_head_attention},
    {"FusedConv", "com.microsoft", ms_fused_conv},
    {"RotaryEmbedding", "com.microsoft", ms_rotary},
    {"GroupNorm", "com.microsoft", ms_group_norm},
    {"SkipGroupNorm", "com.microsoft", ms_group_norm},
    {"BiasSplitGelu", "com.microsoft", ms_bias_split_gelu},
    {"FusedGemm", "com.microsoft", ms_fused_gemm},
    {NULL, NULL, NULL},
};
