/* ONNX converters of the nn family (see families.def): each maps an ONNX node onto graph ops of src/topi.
 *
 * Normalisation done here, so the graph ops see one form:
 *   - Conv / pooling: auto_pad (SAME_UPPER, SAME_LOWER, VALID, NOTSET) resolved into explicit pads from the
 *     input shape; kernel_shape taken from the weight when absent; defaults filled in. Conv's bias becomes a
 *     reshape to [C, 1, ...] plus a broadcast add (an epilogue the fusion pass can take into the conv kernel).
 *   - Gemm: nn.dense when B is transposed (Relay's weight layout [N, K]), nn.matmul with transpose flags
 *     otherwise; alpha and beta as multiplications by scalar constants, C added with broadcasting.
 *   - MatMul: nn.matmul for 2-D x 2-D, nn.batch_matmul (numpy rank rules) for the rest.
 *   - Softmax / LogSoftmax before opset 13 coerce the input to 2-D at axis: reshape, softmax on axis 1,
 *     reshape back; from opset 13 along one axis.
 *   - ConvTranspose: pads resolved from output_shape / auto_pad as the spec defines them (output_padding
 *     absorbs an output larger than the kernel covers); bias as for Conv.
 *   - BatchNormalization: per-channel scale and shift at inference; in training mode normalised with the
 *     batch's statistics, which also update the running mean and variance (see batchnorm_convert).
 *   - MaxPool's Indices output: a second op beside the pool (see maxpool_convert).
 *   - Dropout at inference is an identity; its mask output is a constant all-true tensor.
 *   - CausalConvWithState (27) -> nn.causal_conv_with_state: activation 'none' / 'silu' / 'swish' (the same
 *     x * sigmoid(x)) as 0 / 1; bias and past_state optional (absent slots stay empty). */
#include <math.h>
#include <string.h>
#include "frontends/onnx/onnx.h"
#include "runtime/rt.h"

/* ---------------------------------------------------------------- helpers */

static mlc_status emit2(OnnxCtx *cx, const OnnxNode *n, const char *op, Value *a, Value *b, Value **out, Diag *d) {
  Value *ins[2] = {a, b};
  return onnx_finish_one(cx, n, onnx_emit(cx, n, op, b ? 2 : 1, ins, 1, d), out, d);
}

static mlc_status emit_reshape(OnnxCtx *cx, const OnnxNode *n, Value *x, int ndim, const int64_t *shape,
                               Value **out, Diag *d) {
  Node *nd = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "newshape", shape, ndim);
  return onnx_finish_one(cx, n, nd, out, d);
}

/* An attribute of nsp ints (default dflt when absent); error when its length is wrong. */
static mlc_status spatial_ints(OnnxCtx *cx, const OnnxNode *n, const char *name, int nsp, int64_t dflt,
                               int64_t *out, Diag *d) {
  int64_t v[2 * MLC_MAX_DIMS];
  int cnt = onnx_attr_ints(n, name, v, 2 * MLC_MAX_DIMS);
  for (int i = 0; i < nsp; i++) out[i] = dflt;
  if (cnt < 0) return MLC_OK;
  if (cnt != nsp)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "attribute '%s' has %d values, expected %d", name, cnt, nsp);
  memcpy(out, v, sizeof(int64_t) * (size_t)nsp);
  return MLC_OK;
}

typedef struct WinAttrs {
  int nsp;
  int64_t kernel[3], strides[3], dil[3], pads[6];
} WinAttrs;

/* kernel_shape, strides, dilations and pads of a Conv/Pool node; auto_pad resolved from the input shape. */
static mlc_status window_attrs(OnnxCtx *cx, const OnnxNode *n, const TensorType *x, const int64_t *wkernel,
                               WinAttrs *w, Diag *d) {
  int nsp = x->ndim - 2;
  if (nsp < 1 || nsp > 3)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s on rank-%d input is not supported (1-D to 3-D only)",
                      n->op_type, x->ndim);
  w->nsp = nsp;
  mlc_status st;
  if ((st = spatial_ints(cx, n, "kernel_shape", nsp, 0, w->kernel, d))) return st;
  if (!onnx_has_attr(n, "kernel_shape")) {
    if (!wkernel) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs kernel_shape", n->op_type);
    memcpy(w->kernel, wkernel, sizeof(int64_t) * (size_t)nsp);
  } else if (wkernel) {
    for (int i = 0; i < nsp; i++)
      if (w->kernel[i] != wkernel[i])
        return onnx_error(cx, n, d, MLC_ERR_INVALID, "kernel_shape does not match the weight's shape");
  }
  if ((st = spatial_ints(cx, n, "strides", nsp, 1, w->strides, d))) return st;
  if ((st = spatial_ints(cx, n, "dilations", nsp, 1, w->dil, d))) return st;
  if ((st = spatial_ints(cx, n, "pads", 2 * nsp, 0, w->pads, d))) return st;
  /* checked here, before auto_pad divides by the strides (the ops check them again) */
  for (int i = 0; i < nsp; i++)
    if (w->strides[i] < 1 || w->dil[i] < 1 || w->kernel[i] < 0)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "strides and dilations must be >= 1 and kernel_shape >= 0");
  const char *ap = onnx_attr_string(n, "auto_pad", "NOTSET");
  if (!strcmp(ap, "NOTSET") || !*ap) return MLC_OK;
  if (!strcmp(ap, "VALID")) {
    memset(w->pads, 0, sizeof w->pads);
    return MLC_OK;
  }
  bool upper = !strcmp(ap, "SAME_UPPER");
  if (!upper && strcmp(ap, "SAME_LOWER"))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "unknown auto_pad '%s'", ap);
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->dims[2 + i], s = w->strides[i];
    int64_t out = (in + s - 1) / s;
    int64_t total = (out - 1) * s + (w->kernel[i] - 1) * w->dil[i] + 1 - in;
    if (total < 0) total = 0;
    w->pads[i] = upper ? total / 2 : total - total / 2;
    w->pads[nsp + i] = total - w->pads[i];
  }
  return MLC_OK;
}

static void set_window(OnnxCtx *cx, Node *nd, const WinAttrs *w, bool pool) {
  Graph *g = onnx_graph(cx);
  if (pool) ir_set_ints(g, nd, "pool_size", w->kernel, w->nsp);
  ir_set_ints(g, nd, "strides", w->strides, w->nsp);
  ir_set_ints(g, nd, "dilation", w->dil, w->nsp);
  ir_set_ints(g, nd, "padding", w->pads, 2 * w->nsp);
}

/* ---------------------------------------------------------------- Conv */

static mlc_status conv_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *w = n->inputs[1], *b = n->ninputs > 2 ? n->inputs[2] : NULL;
  WinAttrs wa;
  if (w->type.ndim != x->type.ndim)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "weight rank %d differs from input rank %d", w->type.ndim,
                      x->type.ndim);
  if ((st = window_attrs(cx, n, &x->type, w->type.dims + 2, &wa, d))) return st;
  static const char *ops[4] = {"", "nn.conv1d", "nn.conv2d", "nn.conv3d"};
  Value *ins[2] = {x, w};
  Node *nd = onnx_emit(cx, n, ops[wa.nsp], 2, ins, 1, d);
  if (nd) {
    set_window(cx, nd, &wa, false);
    ir_set_int(onnx_graph(cx), nd, "groups", onnx_attr_int(n, "group", 1));
  }
  Value *y;
  if ((st = onnx_finish_one(cx, n, nd, &y, d))) return st;
  if (b) {
    if (b->type.ndim != 1 || b->type.dims[0] != w->type.dims[0])
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "bias must be a vector of %lld values",
                        (long long)w->type.dims[0]);
    int64_t shape[4] = {b->type.dims[0], 1, 1, 1};
    Value *rb;
    if ((st = emit_reshape(cx, n, b, wa.nsp + 1, shape, &rb, d))) return st;
    if ((st = emit2(cx, n, "add", y, rb, &y, d))) return st;
  }
  outs[0] = y;
  return MLC_OK;
}

/* ConvTranspose: pads from output_shape or auto_pad as the ONNX spec defines them:
 * total = s*(in-1) + output_padding + (k-1)*d + 1 - out; SAME_UPPER puts the odd unit at the end,
 * otherwise at the start. */
static mlc_status convtranspose_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *w = n->inputs[1], *b = n->ninputs > 2 ? n->inputs[2] : NULL;
  if (w->type.ndim != x->type.ndim)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "weight rank %d differs from input rank %d", w->type.ndim,
                      x->type.ndim);
  int nsp = x->type.ndim - 2;
  if (nsp < 1 || nsp > 3)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "ConvTranspose on rank-%d input is not supported",
                      x->type.ndim);
  WinAttrs wa = {.nsp = nsp};
  if ((st = spatial_ints(cx, n, "kernel_shape", nsp, 0, wa.kernel, d))) return st;
  if (!onnx_has_attr(n, "kernel_shape")) memcpy(wa.kernel, w->type.dims + 2, sizeof(int64_t) * (size_t)nsp);
  if ((st = spatial_ints(cx, n, "strides", nsp, 1, wa.strides, d))) return st;
  if ((st = spatial_ints(cx, n, "dilations", nsp, 1, wa.dil, d))) return st;
  if ((st = spatial_ints(cx, n, "pads", 2 * nsp, 0, wa.pads, d))) return st;
  int64_t opad[3], oshape[8];
  if ((st = spatial_ints(cx, n, "output_padding", nsp, 0, opad, d))) return st;
  const char *ap = onnx_attr_string(n, "auto_pad", "NOTSET");
  int nos = onnx_attr_ints(n, "output_shape", oshape, 8);
  bool upper = !strcmp(ap, "SAME_UPPER");
  if (nos > 0 || upper || !strcmp(ap, "SAME_LOWER")) {
    /* output_shape may list the spatial dims only or the whole shape */
    if (nos > 0 && nos != nsp && nos != nsp + 2)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "output_shape has %d values for %d spatial dims", nos, nsp);
    for (int i = 0; i < nsp; i++) {
      int64_t in = x->type.dims[2 + i];
      int64_t out = nos > 0 ? oshape[nos == nsp ? i : 2 + i] : in * wa.strides[i];
      int64_t total = wa.strides[i] * (in - 1) + opad[i] + (wa.kernel[i] - 1) * wa.dil[i] + 1 - out;
      if (total < 0) {
        /* a larger output than the kernel covers: the extra goes into output_padding */
        opad[i] -= total;
        total = 0;
      }
      wa.pads[i] = upper ? total / 2 : total - total / 2;
      wa.pads[nsp + i] = total - wa.pads[i];
    }
  } else if (!strcmp(ap, "VALID")) {
    memset(wa.pads, 0, sizeof wa.pads);
  } else if (strcmp(ap, "NOTSET") && *ap) {
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "unknown auto_pad '%s'", ap);
  }
  static const char *ops[4] = {"", "nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose"};
  Value *ins[2] = {x, w};
  Node *nd = onnx_emit(cx, n, ops[nsp], 2, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    set_window(cx, nd, &wa, false);
    ir_set_ints(g, nd, "output_padding", opad, nsp);
    ir_set_int(g, nd, "groups", onnx_attr_int(n, "group", 1));
  }
  Value *y;
  if ((st = onnx_finish_one(cx, n, nd, &y, d))) return st;
  if (b) {
    int64_t oc = y->type.dims[1];
    if (b->type.ndim != 1 || b->type.dims[0] != oc)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "bias must be a vector of %lld values", (long long)oc);
    int64_t shape[4] = {oc, 1, 1, 1};
    Value *rb;
    if ((st = emit_reshape(cx, n, b, nsp + 1, shape, &rb, d))) return st;
    if ((st = emit2(cx, n, "add", y, rb, &y, d))) return st;
  }
  outs[0] = y;
  return MLC_OK;
}

/* ---------------------------------------------------------------- Gemm / MatMul */

static mlc_status gemm_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *a = n->inputs[0], *b = n->inputs[1], *c = n->ninputs > 2 ? n->inputs[2] : NULL;
  if (a->type.ndim != 2 || b->type.ndim != 2)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "Gemm needs 2-D A and B, got ranks %d and %d", a->type.ndim,
                      b->type.ndim);
  bool ta = onnx_attr_int(n, "transA", 0), tb = onnx_attr_int(n, "transB", 0);
  double alpha = onnx_attr_float(n, "alpha", 1.0), beta = onnx_attr_float(n, "beta", 1.0);
  Value *ins[2] = {a, b}, *y;
  Node *nd;
  if (!ta && tb) {
    nd = onnx_emit(cx, n, "nn.dense", 2, ins, 1, d);
  } else {
    nd = onnx_emit(cx, n, "nn.matmul", 2, ins, 1, d);
    if (nd) {
      ir_set_int(onnx_graph(cx), nd, "transpose_a", ta);
      ir_set_int(onnx_graph(cx), nd, "transpose_b", tb);
    }
  }
  if ((st = onnx_finish_one(cx, n, nd, &y, d))) return st;
  mlc_dtype t = a->type.dtype;
  if (alpha != 1.0 && (st = emit2(cx, n, "multiply", y, onnx_scalar(cx, n, "alpha", t, alpha), &y, d))) return st;
  if (c && beta != 0.0) {
    if (beta != 1.0 && (st = emit2(cx, n, "multiply", c, onnx_scalar(cx, n, "beta", t, beta), &c, d))) return st;
    if ((st = emit2(cx, n, "add", y, c, &y, d))) return st;
  }
  outs[0] = y;
  return MLC_OK;
}

static mlc_status matmul_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *ins[2] = {n->inputs[0], n->inputs[1]};
  bool two = ins[0]->type.ndim == 2 && ins[1]->type.ndim == 2;
  Node *nd = onnx_emit(cx, n, two ? "nn.matmul" : "nn.batch_matmul", 2, ins, 1, d);
  if (nd) {
    ir_set_int(onnx_graph(cx), nd, "transpose_a", 0);
    ir_set_int(onnx_graph(cx), nd, "transpose_b", 0);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- pooling */

static mlc_status pool_common(OnnxCtx *cx, const OnnxNode *n, const char *kind, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  WinAttrs wa;
  if ((st = window_attrs(cx, n, &x->type, NULL, &wa, d))) return st;
  char op[32];
  snprintf(op, sizeof op, "nn.%s_pool%dd", kind, wa.nsp);
  Node *nd = onnx_emit(cx, n, op, 1, &x, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    set_window(cx, nd, &wa, true);
    ir_set_int(g, nd, "ceil_mode", onnx_attr_int(n, "ceil_mode", 0));
    if (!strcmp(kind, "avg")) ir_set_int(g, nd, "count_include_pad", onnx_attr_int(n, "count_include_pad", 0));
    if (!strcmp(kind, "lp")) {
      /* LpPool's p is a float before opset 2 and an int after */
      double p = n->opset < 2 ? onnx_attr_float(n, "p", 2.0) : (double)onnx_attr_int(n, "p", 2);
      if (p != floor(p) || p < 1)
        return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "LpPool with p=%g is not supported (positive integers)", p);
      ir_set_int(g, nd, "p", (int64_t)p);
    }
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* MaxPool: the pool; its optional Indices output (opset 8+) is a second op, nn.max_pool_indices of the data
 * and the pool's result, with the same window and storage_order, so the pool stays the single-output kernel. */
static mlc_status maxpool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = pool_common(cx, n, "max", outs, d);
  if (st || n->noutputs < 2 || !n->output_names[1] || !*n->output_names[1]) return st;
  Value *x = n->inputs[0];
  WinAttrs wa;
  if ((st = window_attrs(cx, n, &x->type, NULL, &wa, d))) return st;
  Value *ins[2] = {x, outs[0]};
  Node *nd = onnx_emit(cx, n, "nn.max_pool_indices", 2, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    set_window(cx, nd, &wa, true);
    ir_set_int(g, nd, "ceil_mode", onnx_attr_int(n, "ceil_mode", 0));
    ir_set_int(g, nd, "storage_order", onnx_attr_int(n, "storage_order", 0));
  }
  return onnx_finish_one(cx, n, nd, &outs[1], d);
}

static mlc_status avgpool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return pool_common(cx, n, "avg", outs, d);
}

static mlc_status lppool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return pool_common(cx, n, "lp", outs, d);
}

static mlc_status global_pool(OnnxCtx *cx, const OnnxNode *n, const char *op, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Node *nd = onnx_emit(cx, n, op, 1, &n->inputs[0], 1, d);
  if (nd && strstr(op, "lp")) {
    double p = n->opset < 2 ? onnx_attr_float(n, "p", 2.0) : (double)onnx_attr_int(n, "p", 2);
    if (p != floor(p) || p < 1)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "GlobalLpPool with p=%g is not supported", p);
    ir_set_int(onnx_graph(cx), nd, "p", (int64_t)p);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status gavgpool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return global_pool(cx, n, "nn.global_avg_pool2d", outs, d);
}
static mlc_status gmaxpool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return global_pool(cx, n, "nn.global_max_pool2d", outs, d);
}
static mlc_status glppool_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return global_pool(cx, n, "nn.global_lp_pool2d", outs, d);
}

/* ---------------------------------------------------------------- Softmax / LogSoftmax */

static mlc_status softmax_common(OnnxCtx *cx, const OnnxNode *n, const char *op, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim;
  int64_t axis = onnx_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
  if (axis < -r || axis >= (r ? r : 1))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  if (r == 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s of a scalar", n->op_type);
  bool coerce = n->opset < 13 && axis != r - 1;
  Value *in = x;
  if (coerce) {
    int64_t shape[2] = {1, 1};
    for (int i = 0; i < r; i++) shape[i < axis ? 0 : 1] *= x->type.dims[i];
    if ((st = emit_reshape(cx, n, x, 2, shape, &in, d))) return st;
  }
  Node *nd = onnx_emit(cx, n, op, 1, &in, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", coerce ? 1 : axis);
  Value *y;
  if ((st = onnx_finish_one(cx, n, nd, &y, d))) return st;
  if (coerce && (st = emit_reshape(cx, n, y, r, x->type.dims, &y, d))) return st;
  outs[0] = y;
  return MLC_OK;
}

static mlc_status softmax_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return softmax_common(cx, n, "nn.softmax", outs, d);
}
static mlc_status logsoftmax_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return softmax_common(cx, n, "nn.log_softmax", outs, d);
}

/* ---------------------------------------------------------------- Dropout */

/* A scalar constant's value as a double; false if v is not a constant scalar. */
static bool const_scalar(const Value *v, double *out) {
  if (!v || !v->data || tt_numel(&v->type) != 1) return false;
  switch (v->type.dtype) {
    case MLC_F32: *out = *(const float *)v->data; return true;
    case MLC_F64: *out = *(const double *)v->data; return true;
    case MLC_BOOL: case MLC_U8: *out = *(const uint8_t *)v->data; return true;
    case MLC_I32: *out = *(const int32_t *)v->data; return true;
    case MLC_I64: *out = (double)*(const int64_t *)v->data; return true;
    case MLC_F16: *out = rt_f16_to_f32(*(const uint16_t *)v->data); return true;
    default: return false;
  }
}

static mlc_status dropout_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  bool training = false;
  double ratio = 0.5;
  if (n->opset < 12) {
    ratio = onnx_attr_float(n, "ratio", 0.5);
  } else if (n->ninputs > 2 && n->inputs[2]) {
    /* the ratio only matters in training mode */
    double t;
    if (!const_scalar(n->inputs[2], &t))
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "input 'training_mode' of Dropout (value '%s') must be known "
                        "at compile time", n->inputs[2]->name);
    training = t != 0;
    if (training && n->ninputs > 1 && n->inputs[1] && !const_scalar(n->inputs[1], &ratio))
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "Dropout in training mode needs its input 'ratio' (value '%s') known at compile time",
                        n->inputs[1]->name);
  }
  if (training && ratio != 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                      "Dropout in training mode with ratio %g is random and is not supported", ratio);
  if ((st = emit2(cx, n, "copy", x, NULL, &outs[0], d))) return st;
  if (n->noutputs > 1 && n->output_names[1] && *n->output_names[1]) {
    /* the mask: bool from opset 10, the input's dtype before */
    TensorType mt = x->type;
    mt.dtype = n->opset >= 10 ? MLC_BOOL : x->type.dtype;
    int64_t cnt = tt_numel(&mt);
    size_t es = (size_t)mlc_dtype_size(mt.dtype);
    Arena *A = onnx_graph(cx)->arena;
    unsigned char *buf = arena_alloc(A, (size_t)cnt * es + 1);
    Value *one = onnx_scalar(cx, n, "one", mt.dtype, 1.0);
    for (int64_t i = 0; i < cnt; i++) memcpy(buf + (size_t)i * es, one->data, es);
    outs[1] = onnx_const(cx, arena_printf(A, "%s_mask", n->name && *n->name ? n->name : "dropout"), mt, buf);
  }
  return MLC_OK;
}

/* ---------------------------------------------------------------- BatchNormalization */

static mlc_status emit_cast_to(OnnxCtx *cx, const OnnxNode *n, Value *x, mlc_dtype t, Value **out, Diag *d) {
  if (x->type.dtype == t) {
    *out = x;
    return MLC_OK;
  }
  Node *cn = onnx_emit(cx, n, "cast", 1, &x, 1, d);
  if (cn) ir_set_int(onnx_graph(cx), cn, "dtype", t);
  return onnx_finish_one(cx, n, cn, out, d);
}

/* the mean of x over every axis but the channel axis 1, kept as [1, C, 1, ...] */
static mlc_status channel_mean(OnnxCtx *cx, const OnnxNode *n, Value *x, Value **out, Diag *d) {
  int64_t axes[MLC_MAX_DIMS];
  int na = 0;
  for (int i = 0; i < x->type.ndim; i++)
    if (i != 1) axes[na++] = i;
  Node *nd = onnx_emit(cx, n, "mean", 1, &x, 1, d);
  if (nd) {
    ir_set_ints(onnx_graph(cx), nd, "axis", axes, na);
    ir_set_int(onnx_graph(cx), nd, "keepdims", 1);
  }
  return onnx_finish_one(cx, n, nd, out, d);
}

/* running = input * momentum + current * (1 - momentum), current [1, C, 1, ...] reshaped to [C], in dtype t */
static mlc_status running_stat(OnnxCtx *cx, const OnnxNode *n, Value *input, Value *current, double momentum,
                               mlc_dtype t, Value **out, Diag *d) {
  mlc_dtype ct = current->type.dtype;
  int64_t c = current->type.dims[1];
  Value *cur, *a, *b;
  mlc_status st;
  if ((st = emit_reshape(cx, n, current, 1, &c, &cur, d)) ||
      (st = emit2(cx, n, "multiply", input, onnx_scalar(cx, n, "momentum", ct, momentum), &a, d)) ||
      (st = emit2(cx, n, "multiply", cur, onnx_scalar(cx, n, "one_minus_momentum", ct, 1.0 - momentum), &b, d)) ||
      (st = emit2(cx, n, "add", a, b, &a, d)))
    return st;
  return emit_cast_to(cx, n, a, t, out, d);
}

/* Inference batch norm as y = x * scale' + shift' with scale' = scale / sqrt(var + eps) and
 * shift' = B - mean * scale', both reshaped to [C, 1, ...]: per-channel math on constants that FoldConstant
 * folds, so conv + batch norm becomes conv + multiply + add in one fused kernel.
 * Training mode (opset 14+: training_mode=1; before: the running statistics outputs are asked for) normalises
 * with the batch's own statistics over every axis but the channel: current_mean, and current_var the
 * population (biased) variance mean((x - current_mean)^2), as the spec and the ONNX reference define them:
 *   y = (x - current_mean) * scale / sqrt(current_var + eps) + B
 *   running_mean = input_mean * momentum + current_mean * (1 - momentum)   (running_var likewise)
 * Opset 7..13 name them mean and var and add saved_mean / saved_var, the batch mean and variance. */
static mlc_status batchnorm_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 5, d);
  if (st) return st;
  Value *x = n->inputs[0];
  bool extra = false;
  for (int i = 1; i < n->noutputs; i++) extra |= n->output_names[i] && *n->output_names[i];
  bool training = n->opset >= 14 ? onnx_attr_int(n, "training_mode", 0) != 0 : extra;
  if (n->opset >= 14 && !training && extra)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "BatchNormalization's running mean/var outputs need training_mode=1");
  if (n->opset < 7 && training && onnx_attr_int(n, "is_test", 0))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "BatchNormalization with is_test=1 has no training outputs");
  if (n->opset < 9 && onnx_has_attr(n, "spatial") && onnx_attr_int(n, "spatial", 1) == 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "BatchNormalization with spatial=0 is not supported");
  if (x->type.ndim < 2) return onnx_error(cx, n, d, MLC_ERR_INVALID, "BatchNormalization input must have rank >= 2");
  int64_t c = x->type.dims[1];
  mlc_dtype t = x->type.dtype;
  Value *p[4];
  for (int i = 0; i < 4; i++) {
    p[i] = n->inputs[1 + i];
    if (p[i]->type.ndim != 1 || p[i]->type.dims[0] != c)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "BatchNormalization input %d must be a vector of %lld values",
                        1 + i, (long long)c);
    if ((st = emit_cast_to(cx, n, p[i], t, &p[i], d))) return st;
  }
  double eps = onnx_attr_float(n, "epsilon", 1e-5);
  int64_t shape[MLC_MAX_DIMS];
  shape[0] = c;
  for (int i = 1; i < x->type.ndim - 1; i++) shape[i] = 1;
  Value *v, *scale, *shift, *m;
  if (training) {
    /* float16/bfloat16: the statistics and the normalisation in float32, y rounded once */
    mlc_dtype wt = t == MLC_F16 || t == MLC_BF16 ? MLC_F32 : t;
    for (int i = 0; i < 4 && wt != t; i++)
      if ((st = emit_cast_to(cx, n, n->inputs[1 + i], wt, &p[i], d))) return st;
    if ((st = emit_cast_to(cx, n, x, wt, &x, d))) return st;
    Value *mean, *dx, *var, *y;
    double momentum = onnx_attr_float(n, "momentum", 0.9);
    if ((st = channel_mean(cx, n, x, &mean, d)) || (st = emit2(cx, n, "subtract", x, mean, &dx, d)) ||
        (st = emit2(cx, n, "multiply", dx, dx, &var, d)) || (st = channel_mean(cx, n, var, &var, d)) ||
        (st = emit2(cx, n, "add", var, onnx_scalar(cx, n, "epsilon", wt, eps), &v, d)) ||
        (st = emit2(cx, n, "sqrt", v, NULL, &v, d)) ||
        (st = emit_reshape(cx, n, p[0], x->type.ndim - 1, shape, &scale, d)) ||
        (st = emit_reshape(cx, n, p[1], x->type.ndim - 1, shape, &shift, d)) ||
        (st = emit2(cx, n, "divide", scale, v, &scale, d)) || (st = emit2(cx, n, "multiply", dx, scale, &y, d)) ||
        (st = emit2(cx, n, "add", y, shift, &y, d)) || (st = emit_cast_to(cx, n, y, t, &outs[0], d)))
      return st;
    Value *current[4] = {mean, var, mean, var};
    for (int i = 1; i < n->noutputs && i < 5; i++) {
      if (!n->output_names[i] || !*n->output_names[i]) continue;
      if (i <= 2)
        st = running_stat(cx, n, p[1 + i], current[i - 1], momentum, n->inputs[2 + i]->type.dtype, &outs[i], d);
      else if (!(st = emit_reshape(cx, n, current[i - 1], 1, &c, &outs[i], d))) /* saved_mean, saved_var (< 14) */
        st = emit_cast_to(cx, n, outs[i], t, &outs[i], d);
      if (st) return st;
    }
    return MLC_OK;
  }
  if ((st = emit2(cx, n, "add", p[3], onnx_scalar(cx, n, "epsilon", t, eps), &v, d))) return st;
  if ((st = emit2(cx, n, "sqrt", v, NULL, &v, d))) return st;
  if ((st = emit2(cx, n, "divide", p[0], v, &scale, d))) return st;
  if ((st = emit2(cx, n, "multiply", p[2], scale, &m, d))) return st;
  if ((st = emit2(cx, n, "subtract", p[1], m, &shift, d))) return st;
  if ((st = emit_reshape(cx, n, scale, x->type.ndim - 1, shape, &scale, d))) return st;
  if ((st = emit_reshape(cx, n, shift, x->type.ndim - 1, shape, &shift, d))) return st;
  Value *y;
  if ((st = emit2(cx, n, "multiply", x, scale, &y, d))) return st;
  return emit2(cx, n, "add", y, shift, &outs[0], d);
}

/* ---------------------------------------------------------------- the table */

static mlc_status causal_conv_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st != MLC_OK) return st;
  const char *act = onnx_attr_string(n, "activation", "none");
  int silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none"))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "activation '%s' is not 'none', 'silu' or 'swish'", act);
  Value *ins[4] = {0};
  int nin = 2;
  for (int i = 0; i < n->ninputs && i < 4; i++) {
    ins[i] = n->inputs[i];
    if (ins[i]) nin = i + 1;
  }
  Node *nd = onnx_emit(cx, n, "nn.causal_conv_with_state", nin, ins, 2, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  ir_set_int(onnx_graph(cx), nd, "activation", silu);
  st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  for (int i = 0; i < n->noutputs && i < 2; i++)
    outs[i] = n->output_names && n->output_names[i] && *n->output_names[i] ? nd->outputs[i] : NULL;
  return MLC_OK;
}

const OnnxConverter onnx_ops_nn[] = {
    /* op_type               domain  converter */
    {"Conv", "", conv_convert},
    {"ConvTranspose", "", convtranspose_convert},
    {"Gemm", "", gemm_convert},
    {"MatMul", "", matmul_convert},
    {"MaxPool", "", maxpool_convert},
    {"AveragePool", "", avgpool_convert},
    {"LpPool", "", lppool_convert},
    {"GlobalAveragePool", "", gavgpool_convert},
    {"GlobalMaxPool", "", gmaxpool_convert},
    {"GlobalLpPool", "", glppool_convert},
    {"Softmax", "", softmax_convert},
    {"LogSoftmax", "", logsoftmax_convert},
    {"Dropout", "", dropout_convert},
    {"BatchNormalization", "", batchnorm_convert},
    {"CausalConvWithState", "", causal_conv_convert},
    {0},
};
