/* ONNX converters of the quant family (see src/topi/quant.c for the graph ops).
 *
 *   QuantizeLinear / DequantizeLinear (opsets 10, 13, 19, 21, 23, 24, 25): axis (13+) made non-negative,
 *     block_size (21+), output_dtype (QuantizeLinear 21+, DequantizeLinear 23+), precision (25) -> qnn.quantize /
 *     qnn.dequantize. The quantized type is the zero point's dtype, else output_dtype, else uint8: any integer
 *     type up to 32 bits (int4/uint4/int2/uint2 included), float8 or float4; float8e8m0 is reported as
 *     unsupported. saturate (19+, default 1) only concerns float8 types.
 *   DynamicQuantizeLinear -> qnn.dynamic_quantize (three outputs).
 *   MatMulInteger -> qnn.subtract_zero_point on both operands (per-row zero points of A along its dim -2,
 *     per-column ones of B along dim -1) + nn.matmul / nn.batch_matmul on int32.
 *   ConvInteger -> qnn.subtract_zero_point (x per-tensor, w per output channel) + nn.conv{1,2,3}d on int32;
 *     auto_pad resolved into explicit pads as for Conv.
 *   QLinearMatMul / QLinearConv -> the same integer op + qnn.requantize (scales, output zero point, conv bias).
 *   com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinear(Global)AveragePool,
 *     QLinearConcat, QGemm, QuantizeLinear, DequantizeLinear: see below. */
#include <string.h>
#include "frontends/onnx/onnx.h"
#include "runtime/rt.h"

static Value *opt_input(const OnnxNode *n, int i) { return i < n->ninputs ? n->inputs[i] : NULL; }

/* an element type attribute (output_dtype, precision) mlc has a dtype for (float8e8m0 it has not) */
static mlc_status check_qtype(OnnxCtx *cx, const OnnxNode *n, int64_t t, Diag *d) {
  if (t == MLC_F8E8M0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: quantized type float8e8m0 is not supported", n->op_type);
  if (t <= 0 || t >= MLC_DTYPE_COUNT || !mlc_dtype_size((mlc_dtype)t))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: element type %lld is not supported", n->op_type,
                      (long long)t);
  return MLC_OK;
}

/* ---------------------------------------------------------------- QuantizeLinear / DequantizeLinear */

static mlc_status conv_qdq(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d, bool quant) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *s = n->inputs[1], *zp = opt_input(n, 2);
  int r = x->type.ndim;
  int64_t axis = n->opset >= 13 ? onnx_attr_int(n, "axis", 1) : 1;
  int64_t block = n->opset >= 21 ? onnx_attr_int(n, "block_size", 0) : 0;
  bool per_tensor = tt_numel(&s->type) == 1 && s->type.ndim <= 1 && block <= 0;
  if (n->opset < 13 && !per_tensor)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s before opset 13 takes a scalar scale", n->op_type);
  if (!per_tensor) {
    if (axis < -r || axis >= r)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
    if (axis < 0) axis += r;
  }
  if (block < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "block_size must be >= 0");
  int64_t odt = 0;
  if ((quant && n->opset >= 21) || (!quant && n->opset >= 23)) odt = onnx_attr_int(n, "output_dtype", 0);
  if (odt && (st = check_qtype(cx, n, odt, d))) return st;
  if (quant) {
    mlc_dtype q = zp ? zp->type.dtype : odt ? (mlc_dtype)odt : MLC_U8;
    if (zp && odt && odt != zp->type.dtype)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "output_dtype differs from the zero point's type");
    odt = q;
  } else if (!odt) {
    odt = s->type.dtype;
  }
  int64_t prec = n->opset >= 25 ? onnx_attr_int(n, "precision", 0) : 0;
  if (prec && (st = check_qtype(cx, n, prec, d))) return st;
  if (prec && prec != MLC_F32 && prec != MLC_F64 && prec != MLC_F16 && prec != MLC_BF16)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "precision must be a float type");
  Value *ins[3] = {x, s, zp};
  Node *nd = onnx_emit(cx, n, quant ? "qnn.quantize" : "qnn.dequantize", zp ? 3 : 2, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "axis", per_tensor ? 0 : axis);
    if (block) ir_set_int(g, nd, "block_size", block);
    ir_set_int(g, nd, "out_dtype", odt);
    if (prec) ir_set_int(g, nd, "div_dtype", prec);
    if (quant) ir_set_int(g, nd, "saturate", n->opset >= 19 ? onnx_attr_int(n, "saturate", 1) != 0 : 1);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status conv_quantize(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return conv_qdq(cx, n, outs, d, true);
}

static mlc_status conv_dequantize(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return conv_qdq(cx, n, outs, d, false);
}

static mlc_status conv_dynq(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Node *nd = onnx_emit(cx, n, "qnn.dynamic_quantize", 1, n->inputs, 3, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  if ((st = onnx_finish(cx, n, nd, d))) return st;
  for (int i = 0; i < n->noutputs && i < 3; i++) outs[i] = nd->outputs[i];
  return MLC_OK;
}

/* ---------------------------------------------------------------- integer matmul and conv */

/* int32(x) - zp, zp per-tensor or 1-D along axis (when it has more than one element) */
static mlc_status sub_zp(OnnxCtx *cx, const OnnxNode *n, Value *x, Value *zp, int64_t axis, Value **out, Diag *d) {
  Value *ins[2] = {x, zp};
  if (zp && !(tt_numel(&zp->type) == 1 && zp->type.ndim <= 1) && (axis < 0 || axis >= x->type.ndim))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: a per-axis zero point needs a rank-%lld input", n->op_type,
                      (long long)(axis + 1));
  Node *nd = onnx_emit(cx, n, "qnn.subtract_zero_point", zp ? 2 : 1, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", axis < 0 ? 0 : axis);
  return onnx_finish_one(cx, n, nd, out, d);
}

static mlc_status int_matmul(OnnxCtx *cx, const OnnxNode *n, Value *a, Value *azp, Value *b, Value *bzp, Value **out,
                             Diag *d) {
  Value *ai = NULL, *bi = NULL;
  mlc_status st;
  if ((st = sub_zp(cx, n, a, azp, a->type.ndim - 2, &ai, d))) return st;
  if ((st = sub_zp(cx, n, b, bzp, b->type.ndim - 1, &bi, d))) return st;
  Value *ins[2] = {ai, bi};
  const char *op = a->type.ndim == 2 && b->type.ndim == 2 ? "nn.matmul" : "nn.batch_matmul";
  return onnx_finish_one(cx, n, onnx_emit(cx, n, op, 2, ins, 1, d), out, d);
}

static mlc_status conv_matmul_integer(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  return int_matmul(cx, n, n->inputs[0], opt_input(n, 2), n->inputs[1], opt_input(n, 3), &outs[0], d);
}

static mlc_status conv_qlinear_matmul(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 7, d);
  if (st) return st;
  Value **in = n->inputs;
  Value *acc = NULL;
  if ((st = int_matmul(cx, n, in[0], in[2], in[3], in[5], &acc, d))) return st;
  Value *ins[5] = {acc, in[1], in[4], in[6], opt_input(n, 7)};
  Node *nd = onnx_emit(cx, n, "qnn.requantize", ins[4] ? 5 : 4, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    int ro = acc->type.ndim;
    ir_set_int(g, nd, "axis1", in[0]->type.ndim > 1 ? ro - 2 : -1);
    ir_set_int(g, nd, "axis2", in[3]->type.ndim > 1 ? ro - 1 : -1);
    ir_set_int(g, nd, "out_dtype", ins[4] ? ins[4]->type.dtype : in[0]->type.dtype);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* nn.conv{1,2,3}d on int32 operands, attributes as the Conv converter writes them. */
static mlc_status int_conv(OnnxCtx *cx, const OnnxNode *n, Value *x, Value *xzp, Value *w, Value *wzp, Value **out,
                           Diag *d) {
  const TensorType *xt = &x->type, *wt = &w->type;
  int nsp = xt->ndim - 2;
  if (nsp < 1 || nsp > 3 || wt->ndim != xt->ndim)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s on rank-%d input with rank-%d weight is not supported",
                      n->op_type, xt->ndim, wt->ndim);
  int64_t kernel[3], strides[3], dil[3], pads[6], v[8];
  for (int i = 0; i < nsp; i++) {
    kernel[i] = wt->dims[2 + i];
    strides[i] = dil[i] = 1;
    pads[i] = pads[nsp + i] = 0;
  }
  int c;
  if ((c = onnx_attr_ints(n, "kernel_shape", v, 8)) >= 0) {
    if (c != nsp) return onnx_error(cx, n, d, MLC_ERR_INVALID, "kernel_shape has %d values, expected %d", c, nsp);
    for (int i = 0; i < nsp; i++)
      if (v[i] != kernel[i]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "kernel_shape does not match the weight");
  }
  if ((c = onnx_attr_ints(n, "strides", v, 8)) >= 0) {
    if (c != nsp) return onnx_error(cx, n, d, MLC_ERR_INVALID, "strides has %d values, expected %d", c, nsp);
    memcpy(strides, v, sizeof(int64_t) * (size_t)nsp);
  }
  if ((c = onnx_attr_ints(n, "dilations", v, 8)) >= 0) {
    if (c != nsp) return onnx_error(cx, n, d, MLC_ERR_INVALID, "dilations has %d values, expected %d", c, nsp);
    memcpy(dil, v, sizeof(int64_t) * (size_t)nsp);
  }
  if ((c = onnx_attr_ints(n, "pads", v, 8)) >= 0) {
    if (c != 2 * nsp) return onnx_error(cx, n, d, MLC_ERR_INVALID, "pads has %d values, expected %d", c, 2 * nsp);
    memcpy(pads, v, sizeof(int64_t) * (size_t)(2 * nsp));
  }
  for (int i = 0; i < nsp; i++)
    if (strides[i] < 1 || dil[i] < 1)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "strides and dilations must be >= 1");
  const char *ap = onnx_attr_string(n, "auto_pad", "NOTSET");
  if (!strcmp(ap, "VALID")) {
    memset(pads, 0, sizeof pads);
  } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    for (int i = 0; i < nsp; i++) {
      int64_t in = xt->dims[2 + i], o = (in + strides[i] - 1) / strides[i];
      int64_t total = (o - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in;
      if (total < 0) total = 0;
      int64_t small = total / 2;
      pads[i] = ap[5] == 'U' ? small : total - small;
      pads[nsp + i] = total - pads[i];
    }
  } else if (strcmp(ap, "NOTSET") && *ap) {
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "unknown auto_pad '%s'", ap);
  }
  int64_t group = onnx_attr_int(n, "group", 1);
  Value *xi = NULL, *wi = NULL;
  mlc_status st;
  if ((st = sub_zp(cx, n, x, xzp, 1, &xi, d))) return st;
  if ((st = sub_zp(cx, n, w, wzp, 0, &wi, d))) return st;
  static const char *ops[4] = {"", "nn.conv1d", "nn.conv2d", "nn.conv3d"};
  Value *ins[2] = {xi, wi};
  Node *nd = onnx_emit(cx, n, ops[nsp], 2, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, nd, "strides", strides, nsp);
    ir_set_ints(g, nd, "dilation", dil, nsp);
    ir_set_ints(g, nd, "padding", pads, 2 * nsp);
    ir_set_int(g, nd, "groups", group);
  }
  return onnx_finish_one(cx, n, nd, out, d);
}

static mlc_status conv_conv_integer(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  return int_conv(cx, n, n->inputs[0], opt_input(n, 2), n->inputs[1], opt_input(n, 3), &outs[0], d);
}

static mlc_status conv_qlinear_conv(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 7, d);
  if (st) return st;
  Value **in = n->inputs;
  Value *acc = NULL;
  if ((st = int_conv(cx, n, in[0], in[2], in[3], in[5], &acc, d))) return st;
  Value *ins[6] = {acc, in[1], in[4], in[6], opt_input(n, 7), opt_input(n, 8)};
  Node *nd = onnx_emit(cx, n, "qnn.requantize", ins[5] ? 6 : ins[4] ? 5 : 4, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "axis1", -1);
    ir_set_int(g, nd, "axis2", 1);
    ir_set_int(g, nd, "bias_axis", 1);
    ir_set_int(g, nd, "out_dtype", ins[4] ? ins[4]->type.dtype : in[0]->type.dtype);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- com.microsoft QOperator ops
 *
 * Besides QLinearConv / QLinearMatMul, ONNX Runtime's quantizer writes contrib ops of the com.microsoft domain
 * (the ONNX Model Zoo's int8 models use them). Each is its float op between a DequantizeLinear of each input
 * and a QuantizeLinear of the output, as ONNX Runtime defines them:
 *   QLinearAdd / QLinearMul (A, As, Azp, B, Bs, Bzp, Cs, Czp), numpy broadcasting;
 *   QLinearSigmoid, QLinearLeakyRelu (alpha) (X, Xs, Xzp, Ys, Yzp);
 *   QLinearGlobalAveragePool (channels_last: the mean over the axes between batch and channel);
 *   QLinearAveragePool (AveragePool's attributes; channels_last 1 is unsupported);
 *   QLinearConcat (Ys, Yzp, then X, Xs, Xzp for each input; axis);
 *   QGemm (A, As, Azp, B, Bs, Bzp per column of op(B), C int32 bias at scale alpha * As * Bs, Ys, Yzp; alpha, transA,
 *     transB; without Ys the output is float);
 *   QLinearSoftmax (X, Xs, Xzp, Ys, Yzp; axis, opset: Softmax's semantics of that opset), QLinearReduceMean
 *     (axes, keepdims);
 *   QuantizeLinear / DequantizeLinear (axis): the default domain's at opset 13;
 *   MatMulIntegerToFloat (A, B, As, Bs, Azp, Bzp, bias): float (A - Azp) . (B - Bzp) * As * Bs + bias, the
 *     integer product as MatMulInteger's (As and Azp per tensor, Bs and Bzp per tensor or per column of B);
 *   DynamicQuantizeMatMul (A float, B, Bs, Bzp, bias): A by DynamicQuantizeLinear, then the same (the forms
 *     ONNX Runtime's optimizer saves of a dynamically quantized transformer's MatMuls).
 * A zero point left out is 0 of the quantized input's type; the output takes the first quantized input's. */

/* qnn.dequantize of x (scale s, zero point zp or none), per tensor or along axis */
static Value *dequant(OnnxCtx *cx, const OnnxNode *n, Value *x, Value *s, Value *zp, int64_t axis, Diag *d) {
  if (!x || !s) return NULL;
  Value *ins[3] = {x, s, zp};
  bool per_tensor = tt_numel(&s->type) == 1 && s->type.ndim <= 1;
  Node *nd = onnx_emit(cx, n, "qnn.dequantize", zp ? 3 : 2, ins, 1, d);
  if (!nd) return NULL;
  ir_set_int(onnx_graph(cx), nd, "axis", per_tensor ? 0 : axis);
  ir_set_int(onnx_graph(cx), nd, "out_dtype", s->type.dtype);
  Value *out = NULL;
  return onnx_finish_one(cx, n, nd, &out, d) ? NULL : out;
}

/* qnn.quantize of float x to scale s and zero point zp (none: 0 of dtype t), per tensor */
static mlc_status requant_out(OnnxCtx *cx, const OnnxNode *n, Value *x, Value *s, Value *zp, mlc_dtype t, Value **out,
                              Diag *d) {
  if (!x) return d->status ? d->status : MLC_ERR_INTERNAL;
  if (tt_numel(&s->type) != 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the output scale must be a scalar", n->op_type);
  if (!zp && !(zp = onnx_scalar(cx, n, "zero_point", t, 0))) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: bad type", n->op_type);
  Value *ins[3] = {x, s, zp};
  Node *nd = onnx_emit(cx, n, "qnn.quantize", 3, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "axis", 0);
    ir_set_int(g, nd, "out_dtype", zp->type.dtype);
    ir_set_int(g, nd, "saturate", 1);
  }
  return onnx_finish_one(cx, n, nd, out, d);
}

static mlc_status ms_binary(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d, const char *op) {
  mlc_status st = onnx_need_inputs(cx, n, 7, d);
  if (st) return st;
  Value **in = n->inputs, *f = NULL;
  Value *ab[2] = {dequant(cx, n, in[0], in[1], in[2], 0, d), dequant(cx, n, in[3], in[4], in[5], 0, d)};
  if (!ab[0] || !ab[1]) return d->status;
  if ((st = onnx_convert_as(cx, n, op, 14, false, 2, ab, &f, d))) return st;
  return requant_out(cx, n, f, in[6], opt_input(n, 7), in[0]->type.dtype, &outs[0], d);
}

static mlc_status ms_qlinear_add(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return ms_binary(cx, n, outs, d, "Add");
}

static mlc_status ms_qlinear_mul(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return ms_binary(cx, n, outs, d, "Mul");
}

/* X, Xs, Xzp, Ys, Yzp around a float op (with the node's attributes) */
static mlc_status ms_unary(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d, const char *op, int opset) {
  mlc_status st = onnx_need_inputs(cx, n, 4, d);
  if (st) return st;
  Value **in = n->inputs, *f = NULL;
  Value *x = dequant(cx, n, in[0], in[1], in[2], 0, d);
  if (!x) return d->status;
  if (!strcmp(op, "GlobalAveragePool") && onnx_attr_int(n, "channels_last", 0)) {
    int r = x->type.ndim;
    if (r < 3) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: rank-%d input", n->op_type, r);
    int64_t axes[MLC_MAX_DIMS];
    for (int i = 1; i < r - 1; i++) axes[i - 1] = i;
    TensorType at = {.dtype = MLC_I64, .ndim = 1, .dims = {r - 2}};
    Value *ra[2] = {x, onnx_const(cx, NULL, at, axes)};
    st = onnx_convert_as(cx, n, "ReduceMean", 18, false, 2, ra, &f, d);
  } else {
    if (!strcmp(op, "AveragePool") && onnx_attr_int(n, "channels_last", 0))
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with channels_last=1 is not supported", n->op_type);
    st = onnx_convert_as(cx, n, op, opset, true, 1, &x, &f, d);
  }
  if (st) return st;
  return requant_out(cx, n, f, in[3], opt_input(n, 4), in[0]->type.dtype, &outs[0], d);
}

static mlc_status ms_qlinear_sigmoid(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return ms_unary(cx, n, outs, d, "Sigmoid", 13);
}

static mlc_status ms_qlinear_leaky_relu(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return ms_unary(cx, n, outs, d, "LeakyRelu", 16);
}

static mlc_status ms_qlinear_global_avgpool(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return ms_unary(cx, n, outs, d, "GlobalAveragePool", 1);
}

static mlc_status ms_qlinear_avgpool(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return ms_unary(cx, n, outs, d, "AveragePool", 19);
}

static mlc_status ms_qlinear_concat(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  if (n->ninputs < 5 || (n->ninputs - 2) % 3)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s takes Y_scale, Y_zero_point and triples of X, scale, zero point",
                      n->op_type);
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  int k = (n->ninputs - 2) / 3;
  Value **xs = arena_alloc(onnx_graph(cx)->arena, sizeof(Value *) * (size_t)k), *f = NULL;
  for (int i = 0; i < k; i++) {
    Value **t = n->inputs + 2 + 3 * i;
    if (!t[0] || !t[1]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input %d has no tensor or scale", n->op_type, i);
    if (!(xs[i] = dequant(cx, n, t[0], t[1], t[2], 0, d))) return d->status;
  }
  if ((st = onnx_convert_as(cx, n, "Concat", 13, true, k, xs, &f, d))) return st;
  return requant_out(cx, n, f, n->inputs[0], opt_input(n, 1), n->inputs[2]->type.dtype, &outs[0], d);
}

static mlc_status ms_qgemm(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 5, d);
  if (st) return st;
  Value **in = n->inputs, *c = opt_input(n, 6), *f = NULL;
  int64_t bcol = onnx_attr_int(n, "transB", 0) ? 0 : 1; /* the axis of op(B)'s columns in B */
  Value *ab[3] = {dequant(cx, n, in[0], in[1], in[2], 0, d), dequant(cx, n, in[3], in[4], opt_input(n, 5), bcol, d), NULL};
  if (!ab[0] || !ab[1]) return d->status;
  if (c) { /* int32 at scale alpha * As * Bs */
    Node *cn = onnx_emit(cx, n, "cast", 1, &c, 1, d);
    if (cn) ir_set_int(onnx_graph(cx), cn, "dtype", in[1]->type.dtype);
    Value *cf = NULL;
    if ((st = onnx_finish_one(cx, n, cn, &cf, d))) return st;
    Value *sc = onnx_binary(cx, n, "multiply", in[1], in[4], d);
    double alpha = onnx_attr_float(n, "alpha", 1.0);
    if (alpha != 1.0) sc = onnx_binary(cx, n, "multiply", sc, onnx_scalar(cx, n, "alpha", in[1]->type.dtype, alpha), d);
    if (!(ab[2] = onnx_binary(cx, n, "multiply", cf, sc, d))) return d->status;
  }
  if ((st = onnx_convert_as(cx, n, "Gemm", 13, true, c ? 3 : 2, ab, &f, d))) return st;
  Value *ys = opt_input(n, 7);
  if (!ys) {
    outs[0] = f;
    return MLC_OK;
  }
  return requant_out(cx, n, f, ys, opt_input(n, 8), in[0]->type.dtype, &outs[0], d);
}

static mlc_status ms_qlinear_softmax(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  int64_t opset = onnx_attr_int(n, "opset", 13); /* the Softmax whose semantics apply (axis default, 2-D view) */
  if (opset < 1 || opset > 1000)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: opset %lld", n->op_type, (long long)opset);
  return ms_unary(cx, n, outs, d, "Softmax", (int)opset);
}

static mlc_status ms_qlinear_reduce_mean(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return ms_unary(cx, n, outs, d, "ReduceMean", 13); /* axes as an attribute */
}

static bool float_type(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16 || t == MLC_F32 || t == MLC_F64; }

/* float (a - azp) . (b - bzp) * as * bs (+ bias): the int32 product as MatMulInteger's, scaled in the scales'
 * dtype */
static mlc_status int_matmul_to_float(OnnxCtx *cx, const OnnxNode *n, Value *a, Value *b, Value *as, Value *bs,
                                      Value *azp, Value *bzp, Value *bias, Value **out, Diag *d) {
  if (tt_numel(&as->type) != 1 || (azp && tt_numel(&azp->type) != 1))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: A's scale and zero point must be per tensor", n->op_type);
  if (!float_type(as->type.dtype) || bs->type.dtype != as->type.dtype)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the scales must be float tensors of one type", n->op_type);
  int64_t ncol = b->type.ndim ? b->type.dims[b->type.ndim - 1] : 0;
  if (!ncol || (tt_numel(&bs->type) != 1 && (bs->type.ndim != 1 || bs->type.dims[0] != ncol)))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: B's scale must be a scalar or one per column of B", n->op_type);
  Value *acc = NULL;
  mlc_status st = int_matmul(cx, n, a, azp, b, bzp, &acc, d);
  if (st) return st;
  Node *cn = onnx_emit(cx, n, "cast", 1, &acc, 1, d);
  if (cn) ir_set_int(onnx_graph(cx), cn, "dtype", as->type.dtype);
  Value *f = NULL;
  if ((st = onnx_finish_one(cx, n, cn, &f, d))) return st;
  Value *scale = onnx_binary(cx, n, "multiply", as, bs, d);
  Value *y = scale ? onnx_binary(cx, n, "multiply", f, scale, d) : NULL;
  if (y && bias) y = onnx_binary(cx, n, "add", y, bias, d);
  if (!y) return d->status ? d->status : MLC_ERR_INTERNAL;
  *out = y;
  return MLC_OK;
}

static mlc_status ms_matmul_integer_to_float(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 4, d);
  if (st) return st;
  Value **in = n->inputs;
  return int_matmul_to_float(cx, n, in[0], in[1], in[2], in[3], opt_input(n, 4), opt_input(n, 5), opt_input(n, 6),
                             &outs[0], d);
}

static mlc_status ms_dynamic_quantize_matmul(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  Value **in = n->inputs;
  if (!float_type(in[0]->type.dtype))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: A must be float", n->op_type);
  Node *q = onnx_emit(cx, n, "qnn.dynamic_quantize", 1, &in[0], 3, d); /* -> uint8 A, scale, zero point */
  if (!q) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  if ((st = onnx_finish(cx, n, q, d))) return st;
  Value *as = q->outputs[1];
  if (as->type.dtype != in[2]->type.dtype) { /* the scales' product in B's scale type */
    Node *cn = onnx_emit(cx, n, "cast", 1, &as, 1, d);
    if (cn) ir_set_int(onnx_graph(cx), cn, "dtype", in[2]->type.dtype);
    if ((st = onnx_finish_one(cx, n, cn, &as, d))) return st;
  }
  return int_matmul_to_float(cx, n, q->outputs[0], in[1], as, in[2], q->outputs[2], opt_input(n, 3), opt_input(n, 4),
                             &outs[0], d);
}

/* element i of a float32 or float16 constant */
static float float_at(const Value *v, int64_t i) {
  return v->type.dtype == MLC_F32 ? ((const float *)v->data)[i] : rt_f16_to_f32(((const uint16_t *)v->data)[i]);
}

/* com.microsoft MatMulNBits (A [.., K], B uint8 [N, K/block, block*bits/8], scales [N * K/block], zero_points?,
 * g_idx?, bias?; K, N, bits 2/4/8, block_size): A . W^T (+ bias) with the weight-only quantized W, element
 * (n, k) the bits-wide field k % block of B's block row (low bits first), minus its zero point (packed like B,
 * or float; 2^(bits-1) when absent), times its block's scale; the block of k is k / block_size, or g_idx[k].
 * W^T is computed here, once, as a float constant of A's type (ONNX Runtime's 4-bit LLM and encoder exports). */
static mlc_status ms_matmul_nbits(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 3, d);
  if (st) return st;
  Value *a = n->inputs[0], *b = n->inputs[1], *sc = n->inputs[2], *zp = opt_input(n, 3), *gidx = opt_input(n, 4);
  Value *bias = opt_input(n, 5);
  int64_t K = onnx_attr_int(n, "K", 0), N = onnx_attr_int(n, "N", 0), bits = onnx_attr_int(n, "bits", 4);
  int64_t block = onnx_attr_int(n, "block_size", 0);
  if (K < 1 || N < 1 || (bits != 2 && bits != 4 && bits != 8) || block < 1 || (block * bits) % 8)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: K %lld, N %lld, bits %lld, block_size %lld are not "
                      "supported (bits 2, 4 or 8)", n->op_type, (long long)K, (long long)N, (long long)bits,
                      (long long)block);
  mlc_dtype at = a->type.dtype;
  if ((at != MLC_F32 && at != MLC_F16) || a->type.ndim < 1 || a->type.dims[a->type.ndim - 1] != K)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: A must be float or float16 [.., %lld]", n->op_type, (long long)K);
  int64_t nblk = (K + block - 1) / block, blob = block * bits / 8, zrow = (nblk * bits + 7) / 8;
  bool zfloat = zp && zp->type.dtype != MLC_U8;
  if (!b->data || b->type.dtype != MLC_U8 || tt_numel(&b->type) != N * nblk * blob || !sc->data ||
      (sc->type.dtype != MLC_F32 && sc->type.dtype != MLC_F16) || tt_numel(&sc->type) != N * nblk ||
      (zp && (!zp->data || tt_numel(&zp->type) != (zfloat ? N * nblk : N * zrow) ||
              (zfloat && zp->type.dtype != sc->type.dtype))) ||
      (gidx && (!gidx->data || gidx->type.dtype != MLC_I32 || tt_numel(&gidx->type) != K)))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s needs constant B (uint8 [%lld, %lld, %lld]), scales (%lld), "
                      "zero points and g_idx of the sizes K, N, bits and block_size give", n->op_type, (long long)N,
                      (long long)nblk, (long long)blob, (long long)(N * nblk));
  const uint8_t *bq = b->data, *zq = zp && !zfloat ? zp->data : NULL;
  const int32_t *gi = gidx ? gidx->data : NULL;
  unsigned mask = (1u << bits) - 1;
  TensorType wt = {.dtype = at, .ndim = 2, .dims = {K, N}};
  void *wd = arena_alloc(onnx_graph(cx)->arena, (size_t)tt_nbytes(&wt));
  for (int64_t o = 0; o < N; o++)
    for (int64_t k = 0; k < K; k++) {
      int64_t blk = gi ? gi[k] : k / block, e = k % block;
      if (blk < 0 || blk >= nblk)
        return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: g_idx[%lld] = %lld out of range", n->op_type, (long long)k,
                          (long long)blk);
      int64_t bit = e * bits;
      unsigned q = (bq[(o * nblk + k / block) * blob + bit / 8] >> (bit % 8)) & mask;
      int64_t si = o * nblk + blk;
      float s = float_at(sc, si), z = (float)(1u << (bits - 1));
      if (zfloat) z = float_at(zp, si);
      else if (zq) z = (float)((zq[o * zrow + blk * bits / 8] >> ((blk * bits) % 8)) & mask);
      float w = ((float)q - z) * s;
      if (at == MLC_F32) ((float *)wd)[k * N + o] = w;
      else ((uint16_t *)wd)[k * N + o] = rt_f32_to_f16(w);
    }
  Value *ab[2] = {a, onnx_const(cx, arena_printf(onnx_graph(cx)->arena, "%s_weight", n->name), wt, wd)}, *y = NULL;
  if ((st = onnx_convert_as(cx, n, "MatMul", 13, false, 2, ab, &y, d))) return st;
  if (bias && !(y = onnx_binary(cx, n, "add", y, bias, d))) return d->status;
  outs[0] = y;
  return MLC_OK;
}

/* com.microsoft QuantizeLinear / DequantizeLinear: the default domain's at opset 13 (axis) */
static mlc_status ms_quantize(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  OnnxNode m = *n;
  m.opset = 13;
  return conv_qdq(cx, &m, outs, d, true);
}

static mlc_status ms_dequantize(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  OnnxNode m = *n;
  m.opset = 13;
  return conv_qdq(cx, &m, outs, d, false);
}

const OnnxConverter onnx_ops_quant[] = {
    /* op_type               domain converter */
    {"QuantizeLinear", "", conv_quantize},
    {"DequantizeLinear", "", conv_dequantize},
    {"DynamicQuantizeLinear", "", conv_dynq},
    {"MatMulInteger", "", conv_matmul_integer},
    {"ConvInteger", "", conv_conv_integer},
    {"QLinearMatMul", "", conv_qlinear_matmul},
    {"QLinearConv", "", conv_qlinear_conv},
    {"QLinearAdd", "com.microsoft", ms_qlinear_add},
    {"QLinearMul", "com.microsoft", ms_qlinear_mul},
    {"QLinearSigmoid", "com.microsoft", ms_qlinear_sigmoid},
    {"QLinearLeakyRelu", "com.microsoft", ms_qlinear_leaky_relu},
    {"QLinearGlobalAveragePool", "com.microsoft", ms_qlinear_global_avgpool},
    {"QLinearAveragePool", "com.microsoft", ms_qlinear_avgpool},
    {"QLinearConcat", "com.microsoft", ms_qlinear_concat},
    {"QGemm", "com.microsoft", ms_qgemm},
    {"QLinearSoftmax", "com.microsoft", ms_qlinear_softmax},
    {"QLinearReduceMean", "com.microsoft", ms_qlinear_reduce_mean},
    {"MatMulIntegerToFloat", "com.microsoft", ms_matmul_integer_to_float},
    {"DynamicQuantizeMatMul", "com.microsoft", ms_dynamic_quantize_matmul},
    {"MatMulNBits", "com.microsoft", ms_matmul_nbits},
    {"QuantizeLinear", "com.microsoft", ms_quantize},
    {"DequantizeLinear", "com.microsoft", ms_dequantize},
    {0},
};
