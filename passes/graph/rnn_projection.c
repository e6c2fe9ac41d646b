/* HoistRnnProjection: the input projection of a recurrent layer as one GEMM over all time steps (as cuDNN,
 * ONNX Runtime and PyTorch compute it).
 *
 * nn.rnn / nn.gru / nn.lstm (src/topi/rnn.c) multiply X[t, b, :] by every direction's W inside the time loop,
 * but that product does not depend on the recurrence. This pass computes it up front,
 *     P = nn.dense(X, reshape(W, [D * G * H, I])) + reshape(Wb, [D * G * H])     (Wb: the first half of B's rows)
 * [T, B, D * G * H] (layout 0) or [B, T, D * G * H] (layout 1): one product with a constant weight, which
 * AlterOpLayout packs into nn.dense_packed and whose bias add fuses into it. The recurrent op then reads its
 * gates' input part from P: its input 0 becomes P, input 1 (W) becomes absent and attribute `projected` is set
 * (rnn.c checks P's shape against R). Everything else stays in the loop: R and Rb (GRU's Rbn sits inside the
 * reset gate product with linear_before_reset), peepholes, clip (applied to the sum, as before),
 * sequence_lens (the padded steps are projected too; their values are never used). float16/bfloat16 layers
 * project in float32 (X and W cast first), as the loop computes them; P is float32 for them, float64 for
 * float64. R is packed too, [D, G * H / bn, H, bn] = transpose(reshape(R, [D, G * H / bn, bn, H]), 0 1 3 2)
 * with bn = topi_rnn_gate_block (attribute r_block), so that the loop reads each block of bn gates
 * contiguously along k without repacking R at every call. The new nodes go right before the recurrent node;
 * the reshapes, slice, transpose and casts of the constant W, R and B are evaluated by the FoldConstant that
 * follows. */
#include <string.h>
#include "passes/graph/passes.h"
#include "topi/topi.h"

typedef struct Hoist {
  Graph *g;
  Node *n;    /* the recurrent node */
  int nadded; /* how many nodes it made */
  Diag *d;
} Hoist;

/* a new node op(ins) named after the recurrent node, attributes set by the caller before infer() */
static Node *node(Hoist *h, const char *op, const char *suffix, Value **ins, int nin) {
  Graph *g = h->g;
  Node *n = ir_node_new(g, ir_op_find(op), arena_printf(g->arena, "%s_%s", h->n->name, suffix), h->n->op_type,
                        h->n->opset, ins, nin, 1);
  h->nadded++;
  return n;
}

static Value *infer(Hoist *h, Node *n) { return ir_infer_node(h->g, n, h->d) ? NULL : n->outputs[0]; }

static Value *cast_to(Hoist *h, Value *v, mlc_dtype t, const char *suffix) {
  if (!v || v->type.dtype == t) return v;
  Node *n = node(h, "cast", suffix, &v, 1);
  ir_set_int(h->g, n, "dtype", t);
  return infer(h, n);
}

static Value *reshape(Hoist *h, Value *v, int ndim, const int64_t *shape, const char *suffix) {
  if (!v) return NULL;
  Node *n = node(h, "reshape", suffix, &v, 1);
  ir_set_ints(h->g, n, "newshape", shape, ndim);
  return infer(h, n);
}

static bool is_recurrent(const Node *n) {
  const char *s = n->op->name;
  return !strcmp(s, "nn.rnn") || !strcmp(s, "nn.gru") || !strcmp(s, "nn.lstm");
}

/* Rewrites one recurrent node (see the file comment); false when it does not apply. */
static bool hoist(Hoist *h) {
  Node *n = h->n;
  if (n->ninputs < 3 || !n->inputs[0] || !n->inputs[1] || ir_attr_int(n, "projected", 0)) return false;
  Value *x = n->inputs[0], *w = n->inputs[1], *b = n->ninputs > 3 ? n->inputs[3] : NULL;
  mlc_dtype dt = x->type.dtype;
  bool flt = dt == MLC_F32 || dt == MLC_F64 || dt == MLC_F16 || dt == MLC_BF16;
  if (!flt || w->type.dtype != dt || x->type.ndim != 3 || w->type.ndim != 3) return false;
  int64_t D = w->type.dims[0], GH = w->type.dims[1], I = w->type.dims[2];
  if (x->type.dims[2] != I || (b && (b->type.ndim != 2 || b->type.dims[0] != D || b->type.dims[1] != 2 * GH)))
    return false;
  mlc_dtype acc = dt == MLC_F64 ? MLC_F64 : MLC_F32;
  Value *xa = cast_to(h, x, acc, "x_cast");
  Value *wa = cast_to(h, w, acc, "w_cast");
  int64_t wshape[2] = {D * GH, I};
  Value *w2 = reshape(h, wa, 2, wshape, "w_flat");
  if (!xa || !w2) return false;
  Value *dense_in[2] = {xa, w2};
  Value *p = infer(h, node(h, "nn.dense", "input_projection", dense_in, 2));
  if (p && b) {
    Node *sl = node(h, "strided_slice", "wb", &b, 1);
    int64_t begin[2] = {0, 0}, end[2] = {D, GH}, strides[2] = {1, 1};
    ir_set_ints(h->g, sl, "begin", begin, 2);
    ir_set_ints(h->g, sl, "end", end, 2);
    ir_set_ints(h->g, sl, "strides", strides, 2);
    int64_t bshape[1] = {D * GH};
    Value *wb = cast_to(h, reshape(h, infer(h, sl), 1, bshape, "wb_flat"), acc, "wb_cast");
    Value *add_in[2] = {p, wb};
    p = wb ? infer(h, node(h, "add", "input_bias", add_in, 2)) : NULL;
  }
  if (!p) return false;
  /* R packed [D, GH / bn, H, bn] (rnn.c reads a block of bn gates contiguously per k) */
  Value *rv = n->inputs[2];
  int64_t H = rv && rv->type.ndim == 3 ? rv->type.dims[2] : 0; /* R [D, GH, H] */
  int64_t bn = H > 0 ? topi_rnn_gate_block(n->op->name, H) : 1;
  bool pack_r = H > 0 && rv->type.dims[0] == D && rv->type.dims[1] == GH && GH % bn == 0;
  if (pack_r) {
    int64_t rshape[4] = {D, GH / bn, bn, H}, perm[4] = {0, 1, 3, 2};
    Value *r4 = reshape(h, rv, 4, rshape, "r_block");
    if (!r4) return false;
    Node *t = node(h, "transpose", "r_pack", &r4, 1);
    ir_set_ints(h->g, t, "axes", perm, 4);
    if (!(rv = infer(h, t))) return false;
  }
  TensorType before[3];
  for (int i = 0; i < n->noutputs && i < 3; i++) before[i] = n->outputs[i]->type;
  n->inputs[0] = p;
  n->inputs[1] = NULL;
  ir_set_int(h->g, n, "projected", 1);
  if (pack_r) {
    n->inputs[2] = rv;
    ir_set_int(h->g, n, "r_block", bn);
  }
  if (ir_infer_node(h->g, n, h->d)) return false;
  for (int i = 0; i < n->noutputs && i < 3; i++)
    if (!tt_equal(&before[i], &n->outputs[i]->type)) {
      diag_set(h->d, MLC_ERR_INTERNAL, "HoistRnnProjection: node '%s' changed its output type", n->name);
      return false;
    }
  return true;
}

mlc_status pass_hoist_rnn_projection(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  int n0 = g->nodes.n;
  int *mark = arena_alloc(g->arena, sizeof(int) * (size_t)(n0 + 1));
  for (int i = 0; i < n0; i++) {
    mark[i] = g->nodes.n;
    Node *n = g->nodes.v[i];
    if (!is_recurrent(n)) continue;
    Hoist h = {.g = g, .n = n, .d = d};
    if (!hoist(&h) && h.nadded) /* a new node failed its type relation: a bug here, d says which */
      return d->status ? d->status : diag_set(d, MLC_ERR_INTERNAL, "HoistRnnProjection: '%s' failed", n->name);
  }
  mark[n0] = g->nodes.n;
  if (g->nodes.n > n0) pass_place_new_nodes(g, n0, mark); /* each node's new nodes right before it */
  return MLC_OK;
}
