/* ONNX converters of the loss family (see families.def), onto nn.nll_loss (src/topi/loss.c).
 *
 *   NegativeLogLikelihoodLoss (12, 13, 22) -> nn.nll_loss(input, target[, weight]): reduction (default mean),
 *       ignore_index (optional); mean divides by the sum of the gathered weights.
 *   SoftmaxCrossEntropyLoss (12, 13)       -> nn.log_softmax(scores, axis=1), then nn.nll_loss on it; the
 *       optional second output log_prob is the log-softmax; mean divides by the sum of the gathered weights
 *       (1 per element without a weight input, 0 where the target is ignore_index), as for NLL. */
#include <string.h>
#include "frontends/onnx/onnx.h"

static mlc_status emit_nll(OnnxCtx *cx, const OnnxNode *n, Value *x, Value **out, Diag *d) {
  Value *ins[3] = {x, n->inputs[1], n->ninputs > 2 ? n->inputs[2] : NULL};
  int nin = ins[2] ? 3 : 2;
  Node *nd = onnx_emit(cx, n, "nn.nll_loss", nin, ins, 1, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  Graph *g = onnx_graph(cx);
  ir_set_string(g, nd, "reduction", onnx_attr_string(n, "reduction", "mean"));
  ir_set_int(g, nd, "has_ignore", onnx_has_attr(n, "ignore_index"));
  ir_set_int(g, nd, "ignore_index", onnx_attr_int(n, "ignore_index", 0));
  ir_set_int(g, nd, "mean_by_weight", 1);
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  *out = nd->outputs[0];
  return MLC_OK;
}

static mlc_status check_inputs(OnnxCtx *cx, const OnnxNode *n, Diag *d) {
  if (n->ninputs < 2 || !n->inputs[0] || !n->inputs[1])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs input and target", n->op_type);
  if (n->inputs[0]->type.ndim < 2)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input must have rank >= 2 (N, C, ...)", n->op_type);
  return MLC_OK;
}

static mlc_status nll_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = check_inputs(cx, n, d);
  if (st != MLC_OK) return st;
  return emit_nll(cx, n, n->inputs[0], &outs[0], d);
}

static mlc_status sce_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = check_inputs(cx, n, d);
  if (st != MLC_OK) return st;
  Node *ls = onnx_emit(cx, n, "nn.log_softmax", 1, &n->inputs[0], 1, d);
  if (!ls) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  ir_set_int(onnx_graph(cx), ls, "axis", 1);
  st = onnx_finish(cx, n, ls, d);
  if (st != MLC_OK) return st;
  st = emit_nll(cx, n, ls->outputs[0], &outs[0], d);
  if (st != MLC_OK) return st;
  if (n->noutputs > 1) outs[1] = n->output_names && n->output_names[1] && *n->output_names[1] ? ls->outputs[0] : NULL;
  return MLC_OK;
}

const OnnxConverter onnx_ops_loss[] = {
    {"NegativeLogLikelihoodLoss", "", nll_convert},
    {"SoftmaxCrossEntropyLoss", "", sce_convert},
    {0},
};
