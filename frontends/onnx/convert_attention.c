/* ONNX converters of the attention family (see families.def), onto the ops of src/topi/attention.c.
 *
 *   RotaryEmbedding (23) -> nn.rotary_embedding: interleaved, num_heads, rotary_embedding_dim (0: head size);
 *                           position_ids optional (the caches are then indexed per batch and position).
 *   Attention (23, 24)   -> nn.attention: Q, K, V, attn_mask, past_key, past_value (, nonpad_kv_seqlen in 24);
 *                           q_num_heads, kv_num_heads, scale, softcap, is_causal, qk_matmul_output_mode
 *                           (as qk_mode); outputs Y, present_key, present_value, qk_matmul_output.
 *                           softmax_precision is accepted: softmax is always computed in float32 or wider.
 *   Einsum (12)          -> einsum: the equation as an attribute (parsed by the op, which knows the ranks).
 *   LinearAttention (27) -> nn.linear_attention (src/topi/linear_attention.c): query, key, value, past_state,
 *                           decay, beta (and erase_gate, which the ONNX reference reads as a 7th input);
 *                           q_num_heads and kv_num_heads (required), scale (0 or absent: 1/sqrt(head size)),
 *                           update_rule ('linear', 'gated', 'delta', default 'gated_delta') as 0..3; chunk_size
 *                           is only a tuning hint for chunked kernels and does not change the result.
 *   FlexAttention (ai.onnx.preview 1) -> graph ops, its modifier bodies inlined: see flex_attention_convert. */
#include <math.h>
#include <string.h>
#include "frontends/onnx/onnx.h"

static mlc_status rotary_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 3 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "RotaryEmbedding needs input, cos_cache and sin_cache");
  int nin = n->ninputs > 3 && n->inputs[3] ? 4 : 3;
  Node *nd = onnx_emit(cx, n, "nn.rotary_embedding", nin, n->inputs, 1, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  Graph *g = onnx_graph(cx);
  ir_set_int(g, nd, "interleaved", onnx_attr_int(n, "interleaved", 0) != 0);
  ir_set_int(g, nd, "num_heads", onnx_attr_int(n, "num_heads", 0));
  ir_set_int(g, nd, "rotary_dim", onnx_attr_int(n, "rotary_embedding_dim", 0));
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  outs[0] = nd->outputs[0];
  return MLC_OK;
}

static mlc_status attention_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 3 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Attention needs Q, K and V");
  if (n->ninputs > 6 && n->inputs[6] && n->opset < 24)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "nonpad_kv_seqlen needs opset 24");
  Value *ins[7] = {0};
  int nin = 0;
  for (int i = 0; i < n->ninputs && i < 7; i++) {
    ins[i] = n->inputs[i];
    if (ins[i]) nin = i + 1;
  }
  Node *nd = onnx_emit(cx, n, "nn.attention", nin, ins, 4, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  Graph *g = onnx_graph(cx);
  ir_set_int(g, nd, "q_num_heads", onnx_attr_int(n, "q_num_heads", 0));
  ir_set_int(g, nd, "kv_num_heads", onnx_attr_int(n, "kv_num_heads", 0));
  ir_set_float(g, nd, "scale", onnx_attr_float(n, "scale", 0.0));
  ir_set_float(g, nd, "softcap", onnx_attr_float(n, "softcap", 0.0));
  ir_set_int(g, nd, "is_causal", onnx_attr_int(n, "is_causal", 0) != 0);
  ir_set_int(g, nd, "qk_mode", onnx_attr_int(n, "qk_matmul_output_mode", 0));
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  for (int i = 0; i < n->noutputs && i < 4; i++)
    outs[i] = n->output_names && n->output_names[i] && *n->output_names[i] ? nd->outputs[i] : NULL;
  return MLC_OK;
}

static mlc_status einsum_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Einsum needs an input");
  for (int i = 0; i < n->ninputs; i++)
    if (!n->inputs[i]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Einsum input %d is absent", i);
  if (!onnx_has_attr(n, "equation")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Einsum needs an equation");
  Node *nd = onnx_emit(cx, n, "einsum", n->ninputs, n->inputs, 1, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  ir_set_string(onnx_graph(cx), nd, "equation", onnx_attr_string(n, "equation", ""));
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  outs[0] = nd->outputs[0];
  return MLC_OK;
}

static mlc_status linear_attention_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 3 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "LinearAttention needs query, key and value");
  if (!onnx_has_attr(n, "q_num_heads") || !onnx_has_attr(n, "kv_num_heads"))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "LinearAttention needs q_num_heads and kv_num_heads");
  static const char *rules[] = {"linear", "gated", "delta", "gated_delta"};
  const char *rule = onnx_attr_string(n, "update_rule", "gated_delta");
  int r = 0;
  while (r < 4 && strcmp(rule, rules[r])) r++;
  if (r == 4)
    return onnx_error(cx, n, d, MLC_ERR_INVALID,
                      "update_rule '%s' is not 'linear', 'gated', 'delta' or 'gated_delta'", rule);
  if (n->ninputs > 7) return onnx_error(cx, n, d, MLC_ERR_INVALID, "LinearAttention has at most 7 inputs");
  Value *ins[7] = {0};
  int nin = 0;
  for (int i = 0; i < n->ninputs; i++) {
    ins[i] = n->inputs[i];
    if (ins[i]) nin = i + 1;
  }
  Node *nd = onnx_emit(cx, n, "nn.linear_attention", nin, ins, 2, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  Graph *g = onnx_graph(cx);
  ir_set_int(g, nd, "q_num_heads", onnx_attr_int(n, "q_num_heads", 0));
  ir_set_int(g, nd, "kv_num_heads", onnx_attr_int(n, "kv_num_heads", 0));
  ir_set_float(g, nd, "scale", onnx_attr_float(n, "scale", 0.0));
  ir_set_int(g, nd, "update_rule", r);
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  for (int i = 0; i < n->noutputs && i < 2; i++)
    outs[i] = n->output_names && n->output_names[i] && *n->output_names[i] ? nd->outputs[i] : NULL;
  return MLC_OK;
}

/* ---------------------------------------------------------------- FlexAttention (ai.onnx.preview 1) */

/* the default-domain op op_type (no attributes) at opset on ins */
static Value *fa_op(OnnxCtx *cx, const OnnxNode *n, const char *op_type, int opset, int nin, Value **ins, Diag *d) {
  for (int i = 0; i < nin; i++)
    if (!ins[i]) return NULL;
  Value *y = NULL;
  return onnx_convert_as(cx, n, op_type, opset, false, nin, ins, &y, d) ? NULL : y;
}

/* int64 0 .. len-1 laid along axis of a rank-4 [1, 1, 1, 1] shape: the index inputs of the per-element modifiers */
static Value *fa_index(OnnxCtx *cx, const OnnxNode *n, const char *what, int axis, int64_t len) {
  TensorType t = {MLC_I64, 4, {1, 1, 1, 1}};
  t.dims[axis] = len;
  int64_t *v = arena_alloc(onnx_graph(cx)->arena, sizeof(int64_t) * (size_t)(len ? len : 1));
  for (int64_t i = 0; i < len; i++) v[i] = i;
  return onnx_const(cx, arena_printf(onnx_graph(cx)->arena, "%s_%s", n->name, what), t, v);
}

/* Applies the modifier body attr to x [B, H, L, S] (NULL: none): a 1-input body takes x whole; a score / prob body
 * of 5 inputs (value, batch, head, q_idx, kv_idx) and a mask body of 4 (batch, head, q_idx, kv_idx -> bool, the
 * false positions -inf) are per element, so they are bound to x and to the index ranges along their axes, which
 * broadcast over x as the element-wise body computes. */
static Value *fa_modify(OnnxCtx *cx, const OnnxNode *n, const char *attr, bool mask, Value *x, Value **idx,
                        Diag *d) {
  int nin = onnx_body_ninputs(n, attr);
  if (nin < 0 || !x) return x;
  Value *bind[5];
  int nb = 0;
  if (nin == 1) {
    bind[nb++] = x;
  } else if (nin == (mask ? 4 : 5)) {
    if (!mask) bind[nb++] = x;
    for (int i = 0; i < 4; i++) bind[nb++] = idx[i];
  } else {
    onnx_error(cx, n, d, MLC_ERR_INVALID, "FlexAttention: body '%s' has %d inputs, expected 1 or %d", attr, nin,
               mask ? 4 : 5);
    return NULL;
  }
  int nout = 0;
  Value **res = NULL;
  if (onnx_inline_graph(cx, n, attr, attr, nb, bind, &nout, &res, d)) return NULL;
  if (nout != 1 || !res[0] || onnx_seq(res[0]) || onnx_is_none(res[0])) {
    onnx_error(cx, n, d, MLC_ERR_INVALID, "FlexAttention: body '%s' must have one tensor output", attr);
    return NULL;
  }
  if (nin == 1 || !mask) return res[0];
  if (res[0]->type.dtype != MLC_BOOL) {
    onnx_error(cx, n, d, MLC_ERR_INVALID, "FlexAttention: mask_mod must compute a bool mask");
    return NULL;
  }
  Value *w[3] = {res[0], x, onnx_scalar(cx, n, "neg_inf", x->type.dtype, -INFINITY)};
  return fa_op(cx, n, "Where", 16, 3, w, d);
}

/* FlexAttention(Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev]) -> Y [B, Hq, L, Ev]:
 * scores = Q K^T * scale (default 1/sqrt(E)), score_mod, mask_mod, softmax over S, prob_mod, Y = probs V; with
 * fewer K / V heads than Q heads (grouped queries), Q head h reads K / V head h / (Hq / Hkv). */
static mlc_status flex_attention_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  Value *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2];
  const int64_t *qd = q->type.dims, *kd = k->type.dims, *vd = v->type.dims;
  if (q->type.ndim != 4 || k->type.ndim != 4 || v->type.ndim != 4 || kd[0] != qd[0] || vd[0] != qd[0] ||
      kd[3] != qd[3] || vd[1] != kd[1] || vd[2] != kd[2] || kd[1] < 1 || qd[1] % kd[1])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "FlexAttention needs rank-4 Q [B, Hq, L, E], K [B, Hkv, S, E] and "
                      "V [B, Hkv, S, Ev] with Hq a multiple of Hkv");
  Arena *A = onnx_graph(cx)->arena;
  int64_t hq = qd[1], hkv = kd[1];
  if (hq != hkv) { /* grouped queries: K / V heads repeated */
    int64_t *heads = arena_alloc(A, sizeof(int64_t) * (size_t)hq);
    for (int64_t h = 0; h < hq; h++) heads[h] = h / (hq / hkv);
    Value *hi = onnx_const(cx, arena_printf(A, "%s_kv_heads", n->name), (TensorType){MLC_I64, 1, {hq}}, heads);
    k = onnx_apply(cx, n, "take", 2, (Value *[]){k, hi}, "axis", 1, d);
    v = onnx_apply(cx, n, "take", 2, (Value *[]){v, hi}, "axis", 1, d);
  }
  Node *tr = k ? onnx_emit(cx, n, "transpose", 1, &k, 1, d) : NULL;
  if (tr) ir_set_ints(onnx_graph(cx), tr, "axes", (int64_t[]){0, 1, 3, 2}, 4);
  Value *kt = NULL;
  if (!tr || onnx_finish_one(cx, n, tr, &kt, d)) return d->status ? d->status : MLC_ERR_INTERNAL;
  double scale = onnx_has_attr(n, "scale") ? onnx_attr_float(n, "scale", 1) : 1 / sqrt((double)qd[3]);
  Value *s = fa_op(cx, n, "MatMul", 13, 2, (Value *[]){q, kt}, d);
  s = fa_op(cx, n, "Mul", 14, 2, (Value *[]){s, onnx_scalar(cx, n, "scale", q->type.dtype, scale)}, d);
  Value *idx[4] = {fa_index(cx, n, "batch", 0, qd[0]), fa_index(cx, n, "head", 1, hq),
                   fa_index(cx, n, "q_idx", 2, qd[2]), fa_index(cx, n, "kv_idx", 3, kd[2])};
  s = fa_modify(cx, n, "score_mod", false, s, idx, d);
  s = fa_modify(cx, n, "mask_mod", true, s, idx, d);
  Value *p = fa_op(cx, n, "Softmax", 13, 1, &s, d);
  p = fa_modify(cx, n, "prob_mod", false, p, idx, d);
  outs[0] = fa_op(cx, n, "MatMul", 13, 2, (Value *[]){p, v}, d);
  return outs[0] ? MLC_OK : d->status ? d->status : MLC_ERR_INTERNAL;
}

const OnnxConverter onnx_ops_attention[] = {
    {"Einsum", "", einsum_convert},
    {"Attention", "", attention_convert},
    {"RotaryEmbedding", "", rotary_convert},
    {"LinearAttention", "", linear_attention_convert},
    {"FlexAttention", "ai.onnx.preview", flex_attention_convert},
    {0},
};
