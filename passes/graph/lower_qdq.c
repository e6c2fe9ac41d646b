/* LowerQDQ: the QDQ form of quantized models (ONNX Runtime's default quantization format: every Conv / MatMul
 * reads DequantizeLinear outputs) as integer convs and matmuls, as ONNX Runtime fuses them:
 *
 *     nn.conv2d(qnn.dequantize(x8, xs, xz), qnn.dequantize(w8, ws, wz))                  (w8 a constant)
 *  -> multiply(cast<float32>(nn.conv2d(qnn.subtract_zero_point(x8, xz), qnn.subtract_zero_point(w8, wz))),
 *              reshape(xs * ws, [OC, 1, 1]))
 *
 * and likewise nn.matmul / nn.batch_matmul of a dequantized 8-bit tensor by a dequantized constant [K, N] matrix
 * (scale per tensor or per column). The integer sum is exact, so this is the float conv of the dequantized
 * values without its rounding; LowerConv then makes the integer op an 8-bit packed conv (vpdpbusd) on VNNI
 * CPUs, else an exact float32 one. The data's scale and zero point must be per tensor; the weight's per tensor
 * or per output channel (axis 0 of the conv weight, 1 of the matrix), not blocked. It runs before FoldConstant,
 * which would otherwise fold the weight's dequantize into a float constant. */
#include <string.h>
#include "passes/graph/passes.h"

typedef struct Qdq {
  Graph *g;
  Node *n;
  Diag *d;
} Qdq;

static Node *emit(Qdq *q, const char *op, const char *suffix, Value **ins, int nin) {
  Node *n = ir_node_new(q->g, ir_op_find(op), arena_printf(q->g->arena, "%s_%s", q->n->name, suffix), q->n->op_type,
                        q->n->opset, ins, nin, 1);
  return n;
}

static Value *done(Qdq *q, Node *n) { return ir_infer_node(q->g, n, q->d) ? NULL : n->outputs[0]; }

/* the dequantize producing v when it reads 8-bit data with a float32 scale, per tensor (or along axis), or NULL */
static const Node *dequant_of(const Value *v, bool need_const, int64_t axis) {
  const Node *p = v ? v->producer : NULL;
  if (!p || strcmp(p->op->name, "qnn.dequantize") || p->ninputs < 2 || !p->inputs[0] || !p->inputs[1]) return NULL;
  mlc_dtype t = p->inputs[0]->type.dtype;
  if ((t != MLC_U8 && t != MLC_I8) || p->inputs[1]->type.dtype != MLC_F32 || ir_attr_int(p, "block_size", 0) > 0 ||
      v->type.dtype != MLC_F32 || (need_const && !p->inputs[0]->data))
    return NULL;
  int64_t ns = tt_numel(&p->inputs[1]->type);
  if (ns != 1 && (axis < 0 || ir_attr_int(p, "axis", 0) != axis || p->inputs[1]->type.ndim != 1 ||
                  ns != p->inputs[0]->type.dims[axis]))
    return NULL;
  const Value *zp = p->ninputs > 2 ? p->inputs[2] : NULL;
  if (zp && (zp->type.dtype != t || tt_numel(&zp->type) != ns)) return NULL;
  return p;
}

static Value *sub_zp(Qdq *q, const Node *dq, int64_t axis, const char *suffix) {
  Value *ins[2] = {dq->inputs[0], dq->ninputs > 2 ? dq->inputs[2] : NULL};
  Node *s = emit(q, "qnn.subtract_zero_point", suffix, ins, ins[1] ? 2 : 1);
  ir_set_int(q->g, s, "axis", tt_numel(&dq->inputs[1]->type) > 1 ? axis : 0);
  return done(q, s);
}

static Value *rewrite(Graph *g, Node *n, const PassOptions *opt, Diag *d) {
  (void)opt;
  Qdq q = {g, n, d};
  const char *op = n->op->name;
  bool conv = !strcmp(op, "nn.conv2d");
  if ((!conv && strcmp(op, "nn.matmul") && strcmp(op, "nn.batch_matmul")) || n->ninputs != 2 || !n->inputs[0] ||
      !n->inputs[1] || n->inputs[0]->dyn_extent || n->outputs[0]->type.dtype != MLC_F32)
    return NULL;
  if (!conv && (n->inputs[1]->type.ndim != 2 || ir_attr_int(n, "transpose_a", 0) || ir_attr_int(n, "transpose_b", 0)))
    return NULL;
  int64_t waxis = conv ? 0 : 1;
  const Node *dx = dequant_of(n->inputs[0], false, -1), *dw = dequant_of(n->inputs[1], true, waxis);
  if (!dx || !dw) return NULL;
  Value *ins[2] = {sub_zp(&q, dx, 0, "int_data"), sub_zp(&q, dw, waxis, "int_weight")};
  if (!ins[0] || !ins[1]) return NULL;
  Node *in = emit(&q, op, "int", ins, 2);
  in->attrs = n->nattrs ? arena_memdup(g->arena, n->attrs, sizeof(Attr) * (size_t)n->nattrs) : NULL;
  in->nattrs = n->nattrs; /* the window, groups (conv) or transposes (matmul) */
  Value *acc = done(&q, in);
  if (!acc) return NULL;
  Node *c = emit(&q, "cast", "float", &acc, 1);
  ir_set_int(g, c, "dtype", MLC_F32);
  Value *sc[2] = {dx->inputs[1], dw->inputs[1]};
  Value *two[2] = {done(&q, c), done(&q, emit(&q, "multiply", "scale", sc, 2))};
  if (!two[0] || !two[1]) return NULL;
  int64_t ns = tt_numel(&two[1]->type);
  if (conv && ns > 1) { /* per output channel: along axis 1 of the NCHW result */
    Node *r = emit(&q, "reshape", "scale_axis", &two[1], 1);
    int64_t shape[3] = {ns, 1, 1};
    ir_set_ints(g, r, "newshape", shape, 3);
    if (!(two[1] = done(&q, r))) return NULL;
  }
  return done(&q, emit(&q, "multiply", "dequantized", two, 2));
}

mlc_status pass_lower_qdq(Graph *g, const PassOptions *opt, Diag *d) { return pass_rewrite_outputs(g, opt, rewrite, d); }
