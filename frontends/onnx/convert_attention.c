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
 *                           is only a tuning hint for chunked kernels and does not change the result. */
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

const OnnxConverter onnx_ops_attention[] = {
    {"Einsum", "", einsum_convert},
    {"Attention", "", attention_convert},
    {"RotaryEmbedding", "", rotary_convert},
    {"LinearAttention", "", linear_attention_convert},
    {0},
};
