/* ConvertLayoutNCHWc: activations flow between the packed convs in NCHW[x]c, with layout transforms only at
 * the graph's edges and around ops that need NCHW (after TVM's relay AlterOpLayout / ConvertLayout, which
 * carry a layout per value through the ops that can take any layout).
 *
 * It runs right after AlterOpLayout, which turned the float32 convs into nn.conv2d_packed with the output
 * channel block ocb chosen for the target (src/topi/conv2d_x86.c).
 * First it decides which conv outputs are worth blocking. The values joined by elementwise/broadcast ops
 * (a full-shape activation operand and the result; constants and broadcast operands do not join) form
 * regions, found with union-find. A region goes NCHWc when every value entering it is written by a packed
 * conv or a Winograd output transform in one block and every use leaving it is a packed conv, a Winograd
 * pad or a global pool reading it as data: then it costs no transform at all. Any other region stays NCHW, and
 * its convs store NCHW themselves (their epilogue's store is the transform): a transform kernel would cost a
 * full extra pass over the tensor that most consumers (pools, Winograd / depthwise convs, graph outputs) cannot
 * fuse. A region's layout does not constrain the regions its convs read: a conv reading NCHWc and writing NCHW
 * stores each channel's tile as contiguous columns (conv2d_x86.c), so a backbone stays NCHWc up to a head
 * that needs NCHW (LR-ASPP's resizes, a feature extractor's output).
 * Then one walk in topological order keeps the layout of each value: NCHW, or NCHWc with block b (the value's
 * type is then [N, C/b, H, W, b]).
 *   - nn.conv2d_packed in a blocked region writes NCHWc with its own block (out_block = ocb); it reads an
 *     NCHWc input directly (data_block = b, its weight re-blocked to [OC/ocb][IC/b][KH][KW][b][ocb] by graph
 *     ops on the constant). A grouped one (its block inside one group) reads NCHWc only where b divides a
 *     group's input channels; else its data's region stays NCHW.
 *   - An elementwise or broadcast op (pattern kind) on float32 whose output is 4-D and that has an NCHWc input
 *     of its full output shape keeps NCHWc: its other inputs are converted to the same block, scalars left
 *     alone, per-channel or other broadcast shapes ([C,1,1], [1,C,1,1], [1,1,H,W]) reshaped and transposed
 *     to [d0, C/b, d2, d3, b] or [d0, 1, d2, d3, 1]. For constants those nodes are folded by the
 *     FoldConstant that follows; for activations they are injective ops placed right after their producer,
 *     so the consumer can still join the conv's fused group as its epilogue.
 *   - The Winograd conv's ends are a packed conv's: in a blocked region nn.winograd_output writes NCHWc in
 *     its GEMM's block (out_block), and nn.winograd_pad reads NCHWc data (data_block) into its NHWC copy.
 *   - A concatenate along the channels joins its inputs' and its output's regions; in NCHWc it concatenates
 *     the channel blocks, so the region must have one block that divides every input's channels.
 *   - A global max or average pool reads NCHWc data (data_block) and writes NCHW [N, C, 1, 1]: a classifier
 *     head does not keep the last convs' region NCHW. So does RoiAlign (its [rois, C, oh, ow] output).
 *   - nn.depthwise_conv2d with one output channel per input channel joins the regions of its data and its
 *     output (it keeps the channel block); on an NCHWc input it runs in that block (data_block, weight re-blocked
 *     to [C/b, 1, KH, KW, b] by graph ops on the constant) and writes NCHWc; so do a 2-D max or average pool
 *     of float32, the dilation phases of LowerConv (data_block) and a strided_slice that keeps every channel
 *     (its ranges extended by the block axis).
 *   - A concatenate along H or W joins its inputs' and its output's regions as one along the channels does.
 *   - Every other op, and every graph output, reads the NCHW form: a transpose (0, 1, 4, 2, 3) and a reshape
 *     to [N, C, H, W], made once per value right before its first such consumer (the regions above make this
 *     a fallback that a blocked region should not need). So a model's outputs and every op that is not
 *     layout-aware see exactly the NCHW values they saw before.
 * Different blocks on adjacent convs need no transform: data_block follows the producer, out_block the
 * consumer's own weight. */
#include <string.h>
#include "passes/graph/passes.h"

typedef struct Slot {
  Node *node;
  VEC(Node *) after; /* transforms placed right after this node */
} Slot;

typedef struct LayoutCtx {
  Graph *g;
  Diag *d;
  const OpDef *reshape, *transpose;
  int cap;            /* entries of the per-value arrays */
  int64_t *block;     /* by value id: 0 NCHW, b NCHWc */
  Value **nchw;       /* by value id: the NCHW form of an NCHWc value, once made */
  Value **blocked;    /* by value id: the NCHWc form of an NCHW value, once made */
  int *slot_of;       /* by value id: the slot of its producer, -1 for graph inputs and constants */
  VEC(Slot *) slots;  /* the new node order */
  VEC(Node *) front;  /* transforms of graph inputs and constants, placed first */
  int *region;        /* by value id (of the original graph): union-find parent */
  bool *region_ok;    /* by region root: blocked (see the opening note) */
  int64_t *region_b;  /* by region root: the block of the convs writing into it, -1 when they differ */
} LayoutCtx;

static void grow(LayoutCtx *c) {
  int need = c->g->values.n + 1;
  if (need <= c->cap) return;
  int cap = need * 2;
  int64_t *block = arena_alloc(c->g->arena, sizeof(int64_t) * (size_t)cap);
  Value **nchw = arena_alloc(c->g->arena, sizeof(Value *) * (size_t)cap);
  Value **blocked = arena_alloc(c->g->arena, sizeof(Value *) * (size_t)cap);
  int *slot_of = arena_alloc(c->g->arena, sizeof(int) * (size_t)cap);
  memset(block, 0, sizeof(int64_t) * (size_t)cap);
  memset(nchw, 0, sizeof(Value *) * (size_t)cap);
  memset(blocked, 0, sizeof(Value *) * (size_t)cap);
  for (int i = 0; i < cap; i++) slot_of[i] = -1;
  if (c->cap) {
    memcpy(block, c->block, sizeof(int64_t) * (size_t)c->cap);
    memcpy(nchw, c->nchw, sizeof(Value *) * (size_t)c->cap);
    memcpy(blocked, c->blocked, sizeof(Value *) * (size_t)c->cap);
    memcpy(slot_of, c->slot_of, sizeof(int) * (size_t)c->cap);
  }
  c->block = block, c->nchw = nchw, c->blocked = blocked, c->slot_of = slot_of, c->cap = cap;
}

static int64_t block_of(const LayoutCtx *c, const Value *v) { return v && v->id < c->cap ? c->block[v->id] : 0; }

static int add_slot(LayoutCtx *c, Node *n) {
  Slot *s = arena_alloc(c->g->arena, sizeof *s);
  memset(s, 0, sizeof *s);
  s->node = n;
  vec_push(c->g->arena, &c->slots, s);
  return c->slots.n - 1;
}

/* a reshape or transpose node of `like` (its ONNX name and op type, for messages) */
static Node *shape_op(LayoutCtx *c, const OpDef *op, const char *attr, const int64_t *v, int nv, Value *in,
                      const Node *like, const char *base, const char *suffix) {
  Node *n = ir_node_new(c->g, op, arena_printf(c->g->arena, "%s_%s", base, suffix), like->op_type, like->opset,
                        &in, 1, 1);
  ir_set_ints(c->g, n, attr, v, nv);
  if (ir_infer_node(c->g, n, c->d)) return NULL;
  return n;
}

/* the NCHW form of an NCHWc value: transpose to [N, C/b, b, H, W], reshape to [N, C, H, W]; placed in `into` */
static Value *to_nchw(LayoutCtx *c, Value *v, const Node *like, void *into) {
  VEC(Node *) *list = into;
  grow(c);
  if (c->nchw[v->id]) return c->nchw[v->id];
  const int64_t *d = v->type.dims;
  int64_t perm[5] = {0, 1, 4, 2, 3}, shape[4] = {d[0], d[1] * d[4], d[2], d[3]};
  Node *t = shape_op(c, c->transpose, "axes", perm, 5, v, like, v->name, "to_nchw_t");
  if (!t) return NULL;
  Node *r = shape_op(c, c->reshape, "newshape", shape, 4, t->outputs[0], like, v->name, "to_nchw");
  if (!r) return NULL;
  vec_push(c->g->arena, list, t);
  vec_push(c->g->arena, list, r);
  grow(c);
  c->nchw[v->id] = r->outputs[0];
  return r->outputs[0];
}

/* v (NCHW, rank <= 4, broadcasting to an [N, C, H, W] output) in block b: [d0, C/b, d2, d3, b], or
 * [d0, 1, d2, d3, 1] when it does not vary along C; a value of all ones is left alone (it broadcasts
 * as it is). Placed after v's producer, or first for graph inputs and constants. */
static Value *to_blocked(LayoutCtx *c, Value *v, int64_t b, int64_t C, const Node *like) {
  const TensorType *t = &v->type;
  bool ones = true;
  for (int i = 0; i < t->ndim; i++) ones &= t->dims[i] == 1;
  if (ones) return v;
  grow(c);
  if (c->blocked[v->id] && c->block[c->blocked[v->id]->id] == b) return c->blocked[v->id];
  int64_t d[4] = {1, 1, 1, 1};
  for (int i = 0; i < t->ndim; i++) d[4 - t->ndim + i] = t->dims[i];
  int slot = v->producer && v->id < c->cap ? c->slot_of[v->id] : -1;
  void *list = slot >= 0 ? (void *)&c->slots.v[slot]->after : (void *)&c->front;
  Node *last;
  if (d[1] == 1) {
    int64_t shape[5] = {d[0], 1, d[2], d[3], 1};
    last = shape_op(c, c->reshape, "newshape", shape, 5, v, like, v->name, "to_nchwc");
    if (!last) return NULL;
    vec_push(c->g->arena, (VEC(Node *) *)list, last);
  } else {
    if (d[1] != C || C % b) return NULL;
    int64_t shape[5] = {d[0], C / b, b, d[2], d[3]}, perm[5] = {0, 1, 3, 4, 2};
    Node *r = shape_op(c, c->reshape, "newshape", shape, 5, v, like, v->name, "to_nchwc_r");
    if (!r) return NULL;
    last = shape_op(c, c->transpose, "axes", perm, 5, r->outputs[0], like, v->name, "to_nchwc");
    if (!last) return NULL;
    vec_push(c->g->arena, (VEC(Node *) *)list, r);
    vec_push(c->g->arena, (VEC(Node *) *)list, last);
  }
  grow(c);
  c->block[last->outputs[0]->id] = b;
  c->blocked[v->id] = last->outputs[0];
  return last->outputs[0];
}

static bool is_packed_conv(const Node *n) {
  return !strcmp(n->op->name, "nn.conv2d_packed") && n->ninputs == 2 && n->inputs[0]->type.dtype == MLC_F32 &&
         n->inputs[1]->type.ndim == 5 &&
         !ir_attr(n, "data_block") && !ir_attr(n, "out_block");
}

/* a packed conv whose last channel block is zero-padded (attribute channels) writes NCHW only */
static bool padded_block(const Node *n) { return ir_attr(n, "channels") != NULL; }

/* nn.depthwise_conv2d with one output channel per input channel (weight [C, 1, KH, KW]): in NCHWc it reads
 * and writes the same channel block (src/topi/depthwise_x86.c, data_block), so it passes a region's layout on
 * like an elementwise op */
static bool is_blockable_depthwise(const Node *n) {
  if (strcmp(n->op->name, "nn.depthwise_conv2d") || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1] ||
      ir_attr(n, "data_block"))
    return false;
  const TensorType *w = &n->inputs[1]->type; /* [C * M, 1, KH, KW]: M = 1 when C * M = groups */
  return w->ndim == 4 && w->dtype == MLC_F32 && n->inputs[0]->type.dtype == MLC_F32 && /* (not 8-bit data) */
         w->dims[0] == ir_attr_int(n, "groups", 0);
}

/* a 2-D max or average pool of float32 (src/topi/nn.c, data_block): in NCHWc it pools each channel lane alike */
static bool is_blockable_pool(const Node *n) {
  return (!strcmp(n->op->name, "nn.max_pool2d") || !strcmp(n->op->name, "nn.avg_pool2d")) && n->ninputs == 1 &&
         n->noutputs == 1 && n->inputs[0] && n->inputs[0]->type.dtype == MLC_F32 && !ir_attr(n, "data_block");
}

/* the Winograd conv's ends (src/topi/winograd_x86.c): nn.winograd_pad reads NCHWc data (data_block) as a packed
 * conv does; nn.winograd_output writes NCHWc in its GEMM's channel block kb (out_block), as a packed conv
 * writes its own */
static bool is_winograd_pad(const Node *n) {
  return !strcmp(n->op->name, "nn.winograd_pad") && n->ninputs == 1 && n->inputs[0] && !ir_attr(n, "data_block");
}

static int64_t winograd_output_block(const Node *n) {
  if (strcmp(n->op->name, "nn.winograd_output") || n->ninputs != 1 || !n->inputs[0] ||
      n->inputs[0]->type.ndim != 4 || ir_attr(n, "out_block"))
    return 0;
  return n->inputs[0]->type.dims[3];
}

/* the block of the NCHWc output an op can write (packed convs, Winograd output transforms), else 0 */
static int64_t writes_block(const Node *n) {
  return is_packed_conv(n) ? (padded_block(n) ? 0 : n->inputs[1]->type.dims[4]) : winograd_output_block(n);
}

/* a global pool of float32 NCHW data (src/topi/nn.c, data_block): it reads NCHWc and writes NCHW [N, C, 1, 1],
 * so a blocked region can end in it (a network's classifier head) */
static bool is_blockable_global_pool(const Node *n) {
  return (!strcmp(n->op->name, "nn.global_avg_pool2d") || !strcmp(n->op->name, "nn.global_max_pool2d")) &&
         n->ninputs == 1 && n->noutputs == 1 && n->inputs[0] && n->inputs[0]->type.dtype == MLC_F32 &&
         n->outputs[0]->type.ndim == 4 && !ir_attr(n, "data_block"); /* 2-D: the output is [N, C, 1, 1] */
}

/* RoiAlign of float32 features (src/topi/spatial.c, data_block): it reads a pixel's channels contiguously in
 * NCHWc and writes [rois, C, oh, ow], so a detector's FPN levels stay NCHWc up to it */
static bool is_blockable_roi_align(const Node *n) {
  return !strcmp(n->op->name, "vision.roi_align") && n->inputs[0] && n->inputs[0]->type.dtype == MLC_F32 &&
         !ir_attr(n, "data_block"); /* (4-D, or already NCHWc when the walk reaches it) */
}

/* an op that reads its data (input 0) in NCHWc without passing the layout on */
static bool reads_blocked(const Node *n) {
  return is_packed_conv(n) || is_winograd_pad(n) || is_blockable_global_pool(n) || is_blockable_roi_align(n);
}

/* a concatenate of float32 4-D activations along the channels (in NCHWc it concatenates the channel blocks:
 * every input's channel count a multiple of the block) or along H or W (the same axis of the NCHWc form), so
 * all its inputs and its output share a region */
static bool is_blockable_concat(const Node *n) {
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (strcmp(n->op->name, "concatenate") || n->noutputs != 1 || axis < 1 || axis > 3 ||
      n->outputs[0]->type.ndim != 4 || n->outputs[0]->type.dtype != MLC_F32)
    return false;
  for (int k = 0; k < n->ninputs; k++) /* (the inputs are as 4-D as the output until the pass blocks them) */
    if (!n->inputs[k] || n->inputs[k]->data) return false;
  return n->ninputs > 0;
}

/* a strided_slice of float32 4-D data that keeps every channel (LowerConv's live regions of a dilated conv,
 * crops): in NCHWc it slices the same N, H, W ranges of [N, C/b, H, W, b] */
static bool is_blockable_slice(const Node *n) {
  if (strcmp(n->op->name, "strided_slice") || n->ninputs != 1 || n->noutputs != 1 || !n->inputs[0]) return false;
  const TensorType *x = &n->inputs[0]->type;
  int64_t b[4], e[4], s[4];
  if (x->dtype != MLC_F32 || ir_attr_ints(n, "begin", b, 4) != 4 || ir_attr_ints(n, "end", e, 4) != 4 ||
      ir_attr_ints(n, "strides", s, 4) != 4)
    return false;
  /* (the walk sees its data already blocked: [N, C/b, H, W, b]) */
  int64_t channels = x->ndim == 4 ? x->dims[1] : x->ndim == 5 ? x->dims[1] * x->dims[4] : -1;
  return b[1] == 0 && e[1] == channels && s[1] == 1;
}

/* LowerConv's space-to-batch of a dilated conv (src/topi/spatial.c, data_block): it moves whole pixels */
static bool is_blockable_phases(const Node *n) {
  return (!strcmp(n->op->name, "nn.dilation_phases") || !strcmp(n->op->name, "nn.dilation_merge")) &&
         n->ninputs == 1 && n->inputs[0] && n->inputs[0]->type.dtype == MLC_F32 && !ir_attr(n, "data_block");
}

/* an op whose data and output share a region (it keeps the channel block) */
static bool passes_block(const Node *n) {
  return is_blockable_depthwise(n) || is_blockable_pool(n) || is_blockable_slice(n) || is_blockable_phases(n);
}

/* an elementwise/broadcast op that could keep NCHWc (float32, one 4-D output, no shape attribute, NCHW
 * inputs of rank <= 4) */
static bool layout_agnostic(const LayoutCtx *c, const Node *n) {
  if (n->op->pattern > PAT_BROADCAST || n->noutputs != 1 || ir_attr(n, "shape")) return false;
  const TensorType *o = &n->outputs[0]->type;
  if (o->dtype != MLC_F32 || o->ndim != 4) return false;
  for (int k = 0; k < n->ninputs; k++)
    if (!n->inputs[k] || n->inputs[k]->type.dtype != MLC_F32 || (n->inputs[k]->type.ndim > 4 && !block_of(c, n->inputs[k])))
      return false;
  return true;
}

/* an activation operand of the op's full output shape: it joins the op's region */
static bool joins(const Node *n, const Value *v) {
  return !v->data && tt_equal(&v->type, &n->outputs[0]->type);
}

static int find(int *parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

static void unite(int *parent, int a, int b) {
  a = find(parent, a), b = find(parent, b);
  if (a != b) parent[a] = b;
}

/* the regions of the opening note: which conv outputs to block */
static void find_regions(LayoutCtx *c) {
  Graph *g = c->g;
  int nv = g->values.n;
  Arena *a = g->arena;
  c->region = arena_alloc(a, sizeof(int) * (size_t)(nv + 1));
  c->region_ok = arena_alloc(a, (size_t)nv + 1);
  c->region_b = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1));
  bool *member = arena_alloc(a, (size_t)g->nodes.n + 1); /* by position: a layout-agnostic op */
  for (int i = 0; i < nv; i++) c->region[i] = i, c->region_ok[i] = true, c->region_b[i] = 0;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (is_blockable_concat(n)) { /* all its inputs and its output */
      member[i] = true;
      for (int k = 0; k < n->ninputs; k++) unite(c->region, n->inputs[k]->id, n->outputs[0]->id);
      continue;
    }
    if (passes_block(n)) { /* its data and output join one region */
      member[i] = true;
      unite(c->region, n->inputs[0]->id, n->outputs[0]->id);
      continue;
    }
    if (!(member[i] = layout_agnostic(c, n))) continue;
    for (int k = 0; k < n->ninputs; k++)
      if (joins(n, n->inputs[k])) unite(c->region, n->inputs[k]->id, n->outputs[0]->id);
  }
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    /* what enters a region: a packed conv's output (its block), or anything else (not blocked) */
    for (int k = 0; k < n->noutputs; k++) {
      Value *v = n->outputs[k];
      if (!v || (member[i] && k == 0)) continue;
      int r = find(c->region, v->id);
      int64_t b = writes_block(n);
      if (!b) c->region_ok[r] = false;
      c->region_b[r] = c->region_b[r] == 0 || c->region_b[r] == b ? b : -1;
    }
    /* what leaves it: a packed conv's data, or a member's joining operand; a member with no joining
     * operand (a broadcast of smaller values) has nothing blocked to start from */
    bool any_join = false;
    for (int k = 0; k < n->ninputs; k++) {
      Value *v = n->inputs[k];
      if (!v || v->data) continue;
      bool inside = member[i] && (is_blockable_concat(n) || (passes_block(n) ? k == 0 : joins(n, v)));
      any_join |= inside;
      if (!inside && !(reads_blocked(n) && k == 0))
        c->region_ok[find(c->region, v->id)] = false;
    }
    if (member[i] && !any_join) c->region_ok[find(c->region, n->outputs[0]->id)] = false;
  }
  for (int i = 0; i < g->inputs.n; i++) c->region_ok[find(c->region, g->inputs.v[i]->id)] = false;
  /* a concatenate needs whole blocks from every input */
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (!is_blockable_concat(n)) continue;
    int r = find(c->region, n->outputs[0]->id);
    for (int k = 0; k < n->ninputs; k++)
      if (c->region_b[r] <= 0 || n->inputs[k]->type.dims[1] % c->region_b[r]) c->region_ok[r] = false;
  }
  /* a grouped conv reads NCHWc only in a block that divides its group's input channels (weight [.., C/G, ..]) */
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (!is_packed_conv(n) || ir_attr_int(n, "groups", 1) == 1) continue;
    int r = find(c->region, n->inputs[0]->id);
    if (c->region_b[r] <= 0 || n->inputs[1]->type.dims[1] % c->region_b[r]) c->region_ok[r] = false;
  }
  for (int i = 0; i < g->outputs.n; i++) c->region_ok[find(c->region, g->outputs.v[i]->id)] = false;
}

/* the block a packed conv writes: its own, when its output's region is blocked */
static int64_t out_block_of(const LayoutCtx *c, const Node *n) {
  int r = find(c->region, n->outputs[0]->id);
  return c->region_ok[r] && c->region_b[r] > 0 ? c->region_b[r] : 0;
}

/* The block an elementwise/broadcast node can keep, or 0: float32 throughout, a 4-D output, one NCHWc input
 * of the full output shape, every NCHWc input in the same block, every other input of rank <= 4. Ops that
 * take their output shape from an attribute (broadcast_to, full) are not layout-agnostic. */
static int64_t elementwise_block(const LayoutCtx *c, const Node *n) {
  if (!layout_agnostic(c, n)) return 0;
  const TensorType *o = &n->outputs[0]->type;
  int64_t b = 0;
  bool full = false;
  for (int k = 0; k < n->ninputs; k++) {
    const Value *v = n->inputs[k];
    if (!v || v->type.dtype != MLC_F32) return 0;
    int64_t vb = block_of(c, v);
    if (!vb) {
      if (v->type.ndim > 4) return 0;
      continue;
    }
    if (b && vb != b) return 0;
    b = vb;
    full |= v->type.dims[0] == o->dims[0] && v->type.dims[1] * vb == o->dims[1] && v->type.dims[2] == o->dims[2] &&
            v->type.dims[3] == o->dims[3];
  }
  return full && o->dims[1] % b == 0 ? b : 0;
}

/* nn.conv2d_packed reading v in block b: its weight [OC/ocb, C, KH, KW, ocb] re-blocked to
 * [OC/ocb, C/b, KH, KW, b, ocb] (reshape + transpose of the constant) */
static mlc_status read_blocked(LayoutCtx *c, Node *n, int64_t b) {
  Value *w = n->inputs[1];
  const int64_t *d = w->type.dims;
  if (w->type.ndim != 5 || d[1] % b)
    return diag_set(c->d, MLC_ERR_INTERNAL, "ConvertLayoutNCHWc: weight of '%s' is not [OC/ocb, C, KH, KW, ocb]",
                    n->name);
  int64_t shape[6] = {d[0], d[1] / b, b, d[2], d[3], d[4]}, perm[6] = {0, 1, 3, 4, 2, 5};
  Node *r = shape_op(c, c->reshape, "newshape", shape, 6, w, n, n->name, "weight_block_ic");
  if (!r) return c->d->status;
  Node *t = shape_op(c, c->transpose, "axes", perm, 6, r->outputs[0], n, n->name, "weight_pack_ic");
  if (!t) return c->d->status;
  add_slot(c, r);
  add_slot(c, t);
  n->inputs[1] = t->outputs[0];
  ir_set_int(c->g, n, "data_block", b);
  return MLC_OK;
}

/* nn.depthwise_conv2d reading v in block b: its weight [C, 1, KH, KW] re-blocked to [C/b, 1, KH, KW, b], its
 * output NCHWc in the same block */
static mlc_status depthwise_blocked(LayoutCtx *c, Node *n, int64_t b) {
  Value *w = n->inputs[1];
  const int64_t *d = w->type.dims;
  int64_t shape[5] = {d[0] / b, b, 1, d[2], d[3]}, perm[5] = {0, 2, 3, 4, 1};
  Node *r = shape_op(c, c->reshape, "newshape", shape, 5, w, n, n->name, "weight_block_c");
  if (!r) return c->d->status;
  Node *t = shape_op(c, c->transpose, "axes", perm, 5, r->outputs[0], n, n->name, "weight_pack_c");
  if (!t) return c->d->status;
  add_slot(c, r);
  add_slot(c, t);
  n->inputs[1] = t->outputs[0];
  ir_set_int(c->g, n, "data_block", b);
  if (ir_infer_node(c->g, n, c->d)) return c->d->status;
  grow(c);
  c->block[n->outputs[0]->id] = b;
  return MLC_OK;
}

static mlc_status convert_node(LayoutCtx *c, Node *n) {
  Diag *d = c->d;
  if (is_blockable_depthwise(n)) {
    int64_t b = block_of(c, n->inputs[0]);
    if (b && n->inputs[1]->type.dims[0] % b == 0) return depthwise_blocked(c, n, b);
  }
  if ((is_blockable_pool(n) || is_blockable_phases(n)) && block_of(c, n->inputs[0])) {
    int64_t b = block_of(c, n->inputs[0]);
    ir_set_int(c->g, n, "data_block", b);
    if (ir_infer_node(c->g, n, d)) return d->status;
    grow(c);
    c->block[n->outputs[0]->id] = b;
    return MLC_OK;
  }
  if (is_blockable_slice(n) && block_of(c, n->inputs[0])) { /* the same ranges, every channel block and lane */
    int64_t b = block_of(c, n->inputs[0]), b4[4], e4[4], s4[4];
    ir_attr_ints(n, "begin", b4, 4);
    ir_attr_ints(n, "end", e4, 4);
    ir_attr_ints(n, "strides", s4, 4);
    int64_t b5[5] = {b4[0], 0, b4[2], b4[3], 0}, e5[5] = {e4[0], e4[1] / b, e4[2], e4[3], b},
            s5[5] = {s4[0], 1, s4[2], s4[3], 1};
    ir_set_ints(c->g, n, "begin", b5, 5);
    ir_set_ints(c->g, n, "end", e5, 5);
    ir_set_ints(c->g, n, "strides", s5, 5);
    if (ir_infer_node(c->g, n, d)) return d->status;
    grow(c);
    c->block[n->outputs[0]->id] = b;
    return MLC_OK;
  }
  if ((is_winograd_pad(n) || is_blockable_global_pool(n) || is_blockable_roi_align(n)) && block_of(c, n->inputs[0])) {
    ir_set_int(c->g, n, "data_block", block_of(c, n->inputs[0]));
    return ir_infer_node(c->g, n, d) ? d->status : MLC_OK;
  }
  if (winograd_output_block(n) && out_block_of(c, n)) {
    int64_t ob = winograd_output_block(n);
    ir_set_int(c->g, n, "out_block", ob);
    if (ir_infer_node(c->g, n, d)) return d->status;
    grow(c);
    c->block[n->outputs[0]->id] = ob;
    return MLC_OK;
  }
  if (is_blockable_concat(n)) {
    int64_t b = block_of(c, n->inputs[0]);
    for (int k = 1; k < n->ninputs && b; k++)
      if (block_of(c, n->inputs[k]) != b) b = 0;
    if (b) { /* [N, C_k/b, H, W, b] along axis 1 (the blocks in order), 2 or 3 */
      if (ir_infer_node(c->g, n, d)) return d->status;
      grow(c);
      c->block[n->outputs[0]->id] = b;
      return MLC_OK;
    }
  }
  if (is_packed_conv(n)) {
    int64_t b = block_of(c, n->inputs[0]), ob = out_block_of(c, n);
    if (!b && !ob) return MLC_OK;
    if (b && read_blocked(c, n, b)) return d->status;
    if (ob) ir_set_int(c->g, n, "out_block", ob);
    if (ir_infer_node(c->g, n, d)) return d->status;
    grow(c);
    c->block[n->outputs[0]->id] = ob;
    return MLC_OK;
  }
  int64_t b = elementwise_block(c, n);
  if (b) {
    int64_t C = n->outputs[0]->type.dims[1];
    Value **ins = arena_alloc(c->g->arena, sizeof(Value *) * (size_t)n->ninputs);
    for (int k = 0; k < n->ninputs; k++) {
      ins[k] = n->inputs[k];
      if (!block_of(c, ins[k]) && !(ins[k] = to_blocked(c, n->inputs[k], b, C, n))) {
        if (d->status) return d->status;
        b = 0; /* a shape that does not broadcast along C in blocks: keep the node NCHW */
        break;
      }
    }
    if (b) {
      TensorType before = n->outputs[0]->type;
      memcpy(n->inputs, ins, sizeof(Value *) * (size_t)n->ninputs);
      if (ir_infer_node(c->g, n, d)) return d->status;
      const TensorType *o = &n->outputs[0]->type;
      if (o->ndim != 5 || o->dims[0] != before.dims[0] || o->dims[1] * b != before.dims[1] || o->dims[4] != b)
        return diag_set(d, MLC_ERR_INTERNAL, "ConvertLayoutNCHWc: node '%s' did not keep the NCHWc layout", n->name);
      grow(c);
      c->block[n->outputs[0]->id] = b;
      return MLC_OK;
    }
  }
  /* needs NCHW: the NCHW form of every NCHWc input, right before the node */
  for (int k = 0; k < n->ninputs; k++) {
    Value *v = n->inputs[k];
    if (!block_of(c, v)) continue;
    VEC(Node *) pre = {0};
    Value *x = to_nchw(c, v, n, &pre);
    if (!x) return d->status;
    for (int i = 0; i < pre.n; i++) add_slot(c, pre.v[i]);
    n->inputs[k] = x;
  }
  return MLC_OK;
}

mlc_status pass_convert_layout_nchwc(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  bool any = false;
  for (int i = 0; i < g->nodes.n && !any; i++) any = !strcmp(g->nodes.v[i]->op->name, "nn.conv2d_packed");
  if (!any) return MLC_OK;
  LayoutCtx c = {.g = g, .d = d, .reshape = ir_op_find("reshape"), .transpose = ir_op_find("transpose")};
  if (!c.reshape || !c.transpose) return MLC_OK;
  find_regions(&c);
  grow(&c);
  int n0 = g->nodes.n;
  Node **nodes = arena_alloc(g->arena, sizeof(Node *) * (size_t)(n0 + 1));
  memcpy(nodes, g->nodes.v, sizeof(Node *) * (size_t)n0);
  for (int i = 0; i < n0; i++) {
    Node *n = nodes[i];
    if (convert_node(&c, n)) return d->status;
    int s = add_slot(&c, n);
    grow(&c);
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k]) c.slot_of[n->outputs[k]->id] = s;
  }
  /* graph outputs in NCHW, under their own names */
  for (int i = 0; i < g->outputs.n; i++) {
    Value *v = g->outputs.v[i];
    if (!block_of(&c, v)) continue;
    VEC(Node *) post = {0};
    Value *x = to_nchw(&c, v, v->producer, &post);
    if (!x) return d->status;
    for (int k = 0; k < post.n; k++) add_slot(&c, post.v[k]);
    const char *name = v->name;
    v->name = arena_printf(g->arena, "%s_nchwc", name);
    x->name = name;
    for (int k = 0; k < g->outputs.n; k++)
      if (g->outputs.v[k] == v) g->outputs.v[k] = x;
  }
  /* the new order: transforms of inputs and constants, then each node followed by its placed transforms */
  int total = c.front.n;
  for (int i = 0; i < c.slots.n; i++) total += 1 + c.slots.v[i]->after.n;
  if (total != g->nodes.n)
    return diag_set(d, MLC_ERR_INTERNAL, "ConvertLayoutNCHWc: placed %d of %d nodes", total, g->nodes.n);
  int k = 0;
  for (int i = 0; i < c.front.n; i++) g->nodes.v[k++] = c.front.v[i];
  for (int i = 0; i < c.slots.n; i++) {
    Slot *s = c.slots.v[i];
    g->nodes.v[k++] = s->node;
    for (int j = 0; j < s->after.n; j++) g->nodes.v[k++] = s->after.v[j];
  }
  return MLC_OK;
}
