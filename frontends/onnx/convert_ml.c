/* ONNX converters of the ml family (see families.def): the ai.onnx.ml operators that are plain tensor
 * arithmetic (scikit-learn pipelines converted by skl2onnx end in them):
 *   Binarizer(X; threshold) = X > threshold ? 1 : 0, in X's type;
 *   ArrayFeatureExtractor(X, Y) = X's elements at the int64 indices Y along the last axis (a 1-D X gives
 *     [1, len(Y)], as ONNX Runtime does).
 * The string ops (LabelEncoder's string keys, ...) and the tree ensembles are not supported. */
#include <string.h>
#include "frontends/onnx/onnx.h"

static mlc_status binarizer(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  mlc_dtype t = x->type.dtype;
  Value *th = onnx_scalar(cx, n, "threshold", t, onnx_attr_float(n, "threshold", 0));
  Value *above = th ? onnx_binary(cx, n, "greater", x, th, d) : NULL;
  if (!above) return d->status ? d->status : MLC_ERR_INTERNAL;
  Node *nd = onnx_emit(cx, n, "cast", 1, &above, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "dtype", t);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status array_feature_extractor(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *y = n->inputs[1];
  if (y->type.dtype != MLC_I64)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the indices must be int64", n->op_type);
  Value *ins[2] = {x, y};
  if (x->type.ndim == 1) { /* [1, K] */
    Node *r = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
    int64_t shape[2] = {1, x->type.dims[0]};
    if (r) ir_set_ints(onnx_graph(cx), r, "newshape", shape, 2);
    if ((st = onnx_finish_one(cx, n, r, &ins[0], d))) return st;
  }
  if (y->type.ndim != 1) { /* the indices flattened, as ONNX Runtime reads them */
    Node *r = onnx_emit(cx, n, "reshape", 1, &y, 1, d);
    int64_t len = tt_numel(&y->type);
    if (r) ir_set_ints(onnx_graph(cx), r, "newshape", &len, 1);
    if ((st = onnx_finish_one(cx, n, r, &ins[1], d))) return st;
  }
  Node *nd = onnx_emit(cx, n, "take", 2, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", ins[0]->type.ndim - 1);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

const OnnxConverter onnx_ops_ml[] = {
    /* op_type                 domain        converter */
    {"Binarizer", "ai.onnx.ml", binarizer},
    {"ArrayFeatureExtractor", "ai.onnx.ml", array_feature_extractor},
    {NULL, NULL, NULL},
};
