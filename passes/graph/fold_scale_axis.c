/* FoldScaleAxis: a per-output-channel scale applied after a convolution or dense layer is folded into its
 * weights (TVM's forward FoldScaleAxis):
 *     multiply(conv(x, W), s)           ->  conv(x, W * s')
 *     multiply(add(conv(x, W), b), s)   ->  add(conv(x, W * s'), b * s)
 * where s is a constant that varies only along the output-channel axis (batch-norm's scale after
 * SimplifyInference and FoldConstant). The new weights are graph ops on constants, inserted before the
 * convolution, which the FoldConstant that runs next evaluates; the multiply disappears from the kernel. */
#include <string.h>
#include "passes/graph/passes.h"
#include "tir/tir.h"

/* The per-channel vector of a constant scale s for an output of rank ndim with channels on axis `axis`
 * (numel(s) == C), or false when s varies along another axis. */
static bool per_channel(const Value *s, int ndim, int axis, int64_t channels) {
  if (!s || !s->data || s->type.ndim > ndim) return false;
  int64_t numel = tt_numel(&s->type);
  if (numel != channels && numel != 1) return false;
  for (int i = 0; i < s->type.ndim; i++) {
    int out_axis = i + (ndim - s->type.ndim);
    if (s->type.dims[i] != 1 && out_axis != axis) return false;
  }
  return true;
}

static int count_uses(const Graph *g, const Value *v) {
  int n = 0;
  for (int i = 0; i < g->nodes.n; i++)
    for (int k = 0; k < g->nodes.v[i]->ninputs; k++) n += g->nodes.v[i]->inputs[k] == v;
  return n + pass_is_graph_output(g, v);
}

/* Appends op(ins) and moves it to position pos of the node list. */
static Value *insert_op(Graph *g, int pos, const char *op, int nin, Value **ins, const Node *origin,
                        const int64_t *newshape, int nshape, Diag *d) {
  const OpDef *def = ir_op_find(op);
  if (!def) return NULL;
  Node *n = ir_node_new(g, def, arena_printf(g->arena, "%s_fold_scale", origin->name), origin->op_type, origin->opset,
                        ins, nin, 1);
  if (newshape) ir_set_ints(g, n, "newshape", newshape, nshape);
  if (ir_infer_node(g, n, d) != MLC_OK) return NULL;
  g->nodes.n--; /* it was appended: move it to pos */
  memmove(&g->nodes.v[pos + 1], &g->nodes.v[pos], sizeof(Node *) * (size_t)(g->nodes.n - pos));
  g->nodes.v[pos] = n;
  g->nodes.n++;
  return n->outputs[0];
}

static bool is_op(const Node *n, const char *name) { return n && !strcmp(n->op->name, name); }

mlc_status pass_fold_scale_axis(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *mul = g->nodes.v[i];
    if (!is_op(mul, "multiply") || pass_is_graph_output(g, mul->outputs[0])) continue;
    for (int side = 0; side < 2; side++) {
      Value *y = mul->inputs[side], *s = mul->inputs[1 - side];
      Node *bias_add = NULL, *anchor = y ? y->producer : NULL;
      Value *b = NULL;
      if (is_op(anchor, "add") && count_uses(g, y) == 1) { /* a bias between the layer and the scale */
        for (int k = 0; k < 2 && !b; k++) {
          Node *p = anchor->inputs[k] ? anchor->inputs[k]->producer : NULL;
          if (p && (is_op(p, "nn.conv1d") || is_op(p, "nn.conv2d") || is_op(p, "nn.conv3d") || is_op(p, "nn.dense"))) {
            bias_add = anchor;
            b = anchor->inputs[1 - k];
            anchor = p;
          }
        }
        if (!bias_add) continue;
      }
      bool conv = is_op(anchor, "nn.conv1d") || is_op(anchor, "nn.conv2d") || is_op(anchor, "nn.conv3d");
      if (!conv && !is_op(anchor, "nn.dense")) continue;
      Value *out = anchor->outputs[0], *w = anchor->inputs[1];
      if (!w->data || count_uses(g, out) != 1 || !dtype_is_float(out->type.dtype) || s->type.dtype != out->type.dtype)
        continue;
      int axis = conv ? 1 : out->type.ndim - 1;
      int64_t channels = out->type.dims[axis];
      if (!per_channel(s, out->type.ndim, axis, channels)) continue;
      if (b && !(b->data && per_channel(b, out->type.ndim, axis, channels))) continue;
      int pos = 0;
      while (g->nodes.v[pos] != anchor) pos++;
      /* W' = W * reshape(s, [C, 1, ...]) : conv weights are [O, I/g, k...], dense weights [N, K] */
      int64_t shape[MLC_MAX_DIMS];
      shape[0] = channels;
      for (int k = 1; k < w->type.ndim; k++) shape[k] = 1;
      Value *sv = s;
      if (tt_numel(&s->type) == channels) {
        Value *rs[] = {s};
        if (!(sv = insert_op(g, pos++, "reshape", 1, rs, anchor, shape, w->type.ndim, d))) return d->status;
      }
      Value *ws[] = {w, sv};
      Value *nw = insert_op(g, pos++, "multiply", 2, ws, anchor, NULL, 0, d);
      if (!nw) return d->status;
      anchor->inputs[1] = nw;
      Value *result = out;
      if (bias_add) {
        Value *bs[] = {b, s};
        Value *nb = insert_op(g, pos++, "multiply", 2, bs, anchor, NULL, 0, d);
        if (!nb) return d->status;
        for (int k = 0; k < 2; k++)
          if (bias_add->inputs[k] == b) bias_add->inputs[k] = nb;
        result = bias_add->outputs[0];
      }
      pass_replace_uses(g, mul->outputs[0], result);
      break;
    }
  }
  return MLC_OK;
}
