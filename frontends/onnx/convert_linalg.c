/* ONNX converters of the linalg family (see families.def), onto the graph ops of src/topi/linalg.c:
 *
 *   Det (11, 22) -> linalg.det(X): the determinant of each [M, M] matrix in the last two axes of X
 *                   (float16, float32, float64; bfloat16 from opset 22). */
#include "frontends/onnx/onnx.h"

static mlc_status det_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 1 || !n->inputs[0]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Det needs an input");
  Node *nd = onnx_emit(cx, n, "linalg.det", 1, n->inputs, 1, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  outs[0] = nd->outputs[0];
  return MLC_OK;
}

const OnnxConverter onnx_ops_linalg[] = {
    /* op_type  domain  converter */
    {"Det", "", det_convert},
    {0},
};
