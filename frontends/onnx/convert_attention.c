/* ONNX converters of the attention family (see families.def), onto the ops of src/topi/attention.c.
 *
 *   RotaryEmbedding (23) -> nn.rotary_embedding: interleaved, num_heads, rotary_embedding_dim (0: head size);
 *                           position_ids optional (the caches are then indexed per batch and position). */
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

const OnnxConverter onnx_ops_attention[] = {
    {"RotaryEmbedding", "", rotary_convert},
    {0},
};
