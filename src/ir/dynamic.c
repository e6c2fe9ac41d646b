/* Data-dependent extents through the graph ("bounded dynamic padding", as XLA pads dynamic dimensions).
 *
 * NonZero, NonMaxSuppression, Unique and Compress on run-time data (src/topi/dynamic.c, DYN_SOURCE ops) give
 * outputs whose type is a static upper bound: the kernel writes the actual extent of one axis (Value.dyn_axis)
 * into an int64 [1] value (Value.dyn_extent) and zeros everything past it. Zeros are valid indices, and every
 * gather clamps its indices into the data besides (src/topi/index.c), so a reader of the padding never reads
 * outside a buffer; integer division by the padding's zeros gives 0 (src/topi/math.c), never a trap.
 *
 * A reader computes on the whole upper-bound buffer. Its output carries the same extent when the valid part
 * of the output (the first `extent` positions along one output axis) is exactly what the ONNX node computes
 * from the valid part of its input: every valid output element reads only valid input elements (or static
 * data), and the dynamic axis maps onto one whole output axis. The executor then trims every graph output
 * that carries an extent along its dyn_axis after each run (runtime/executor.c; outputs may share an extent).
 * Each op says how it maps the axis in its OpDef.dyn (a DynRule, ir.h); this file has one function per rule,
 * which gives the output axis or the reason to refuse:
 *   ELEMWISE   the dynamic operands (one shared extent) meet on one output axis without being broadcast; a
 *              static operand has size 1 along it or lacks it
 *   TRANSPOSE  the axis moves with the permutation
 *   RESHAPE    the axis is a whole axis of the output (same length, same product of the dims before it)
 *   SLICE      other axes are sliced; the dynamic one is kept whole (begin 0, step 1, the full bound)
 *   CONCAT     along another axis, every input dynamic on the same axis with the same extent
 *   TAKE       indices dynamic on axis k: output axis gather-axis + k; data dynamic off the gather axis
 *   GATHER_ND  indices dynamic on a leading (non-batch, non-coordinate) axis: the same output axis
 *   DENSE      data [..., K] dynamic off K; MATMUL a's row axis or b's column axis
 *   REDUCE     over other axes (the axis shifts by the dropped ones); ALONG_AXIS softmax, topk, cumsum along
 *              another axis; NORM_TAIL layer / RMS norm over axes after the dynamic one
 *   BATCH      convolutions, pooling, Resize, Pad: the data dynamic along the batch axis 0 and kept whole
 *              (each sample computed alone, so padding samples only make padding), the weights static: output
 *              axis 0 (Mask R-CNN's mask head)
 *   WINOGRAD   the Winograd conv's stages after its padded data (DYN_BATCH): the batch axis becomes the
 *              leading part of the tile axis 2 of the transformed input and the GEMM, and axis 0 of the output
 *   ROIS       RoI align / pool: the boxes (and batch indices) dynamic along the box axis 0, the features static:
 *              output axis 0 (padding boxes are zeros, so they read batch 0 like any box)
 *   MASK       dyn_mask(x, extent): reads the extent itself and sets the padding to a fill value (the identity
 *              of a reduction, -inf for TopK, zero for a gather's data); the output is static
 *   PACK       dyn_pack(pieces..., their extents..., total): each piece's valid part packed at the running
 *              offset; the output carries the total (Concat along the dynamic axis, TopK's run-time K, the
 *              shape-taking ConstantOfShape / Expand, Slice of part of the axis, If's branch select)
 * MASK and PACK make the extent an ordinary int64 [1] value of the graph: the importer computes new extents
 * with integer ops (min(K, n) for TopK, sums for Concat, where for If) and Shape / Size of a data-dependent
 * value become run-time int64 values (frontends/onnx: the static dims as constants around the extent) that
 * ordinary ops compute on at run time instead of being folded. A source op (NonMaxSuppression) may also read
 * a data-dependent value whose extent is one of its own inputs (its kernel gates on the count).
 * Everything else that reads a data-dependent value is refused (MLC_ERR_UNSUPPORTED, naming the node that
 * made the extent and the reader): ops without a rule, convolutions and pooling of data dynamic off the batch
 * axis, softmax and scans along the dynamic axis, reshapes merging or splitting it, strided slices of it or ones starting from its end,
 * GatherElements / GatherND into it, static operands not broadcast along it, two different extents in one
 * node (but MASK and PACK), and the dynamic ops themselves reading a data-dependent value they are not
 * given the extent of. ir_infer_node applies the rules as nodes are made (importer and passes);
 * ir_check_dynamic holds a finished graph to them, so a pass that drops or invents an extent is an internal
 * error instead of an output left untrimmed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

static bool dyn(const Value *v) { return v && v->dyn_extent; }

/* the node whose kernel writes the extent, and its first output that carries it */
static const Value *origin_output(const Value *v) {
  const Node *p = v->dyn_extent->producer;
  for (int k = 0; p && k < p->noutputs; k++)
    if (p->outputs[k] && p->outputs[k]->dyn_extent == v->dyn_extent) return p->outputs[k];
  return v;
}

mlc_status ir_dynamic_use_error(const Graph *g, const Value *v, const char *reader, const char *reader_op,
                                const char *why, Diag *d) {
  const Value *o = v->dyn_extent ? origin_output(v) : v;
  const Node *p = v->dyn_extent && v->dyn_extent->producer ? v->dyn_extent->producer : v->producer;
  char where[512] = "", what[512];
  if (p) ir_where(g, p, where, sizeof where);
  const char *pop = p ? p->op_type : "?", *oname = o->name ? o->name : "?";
  if (o == v)
    snprintf(what, sizeof what, "%s's output '%s'", pop, oname);
  else
    snprintf(what, sizeof what, "'%s' (computed from %s's output '%s')", v->name ? v->name : "?", pop, oname);
  return diag_set(d, MLC_ERR_UNSUPPORTED, "%serror: %s has a data-dependent shape and feeds '%s' (%s): %s", where,
                  what, reader ? reader : "?", reader_op ? reader_op : "?", why);
}

/* ---- the rules: each sets *oa (the output axis of the extent) or returns why it refuses ---- */

typedef struct DynIn {
  const Value *v; /* the first data-dependent input */
  int axis;       /* its dyn_axis */
} DynIn;

typedef const char *(*RuleFn)(const Node *n, const DynIn *in, int *oa, char *buf, size_t size);

static const char *rule_elemwise(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  const TensorType *o = &n->outputs[0]->type;
  int axis = -1;
  for (int k = 0; k < n->ninputs; k++) {
    const Value *v = n->inputs[k];
    if (!dyn(v)) continue;
    int a = v->dyn_axis + o->ndim - v->type.ndim;
    if (v->type.dims[v->dyn_axis] != o->dims[a]) return "it broadcasts the data-dependent axis";
    if (axis >= 0 && a != axis) return "it lines the data-dependent axes of two operands up differently";
    axis = a;
  }
  for (int k = 0; k < n->ninputs; k++) {
    const Value *v = n->inputs[k];
    if (!v || dyn(v)) continue;
    int a = axis - (o->ndim - v->type.ndim);
    if (a >= 0 && v->type.dims[a] != 1) {
      snprintf(buf, size, "its operand %d has the static size %lld along the data-dependent axis", k,
               (long long)v->type.dims[a]);
      return buf;
    }
  }
  (void)in;
  *oa = axis;
  return NULL;
}

static const char *rule_transpose(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  int nd = in->v->type.ndim;
  int64_t perm[MLC_MAX_DIMS];
  int cnt = ir_attr_ints(n, "axes", perm, MLC_MAX_DIMS);
  if (cnt == 0)
    for (int i = 0; i < nd; i++) perm[i] = nd - 1 - i;
  for (int j = 0; j < nd; j++)
    if (perm[j] == in->axis) {
      *oa = j;
      return NULL;
    }
  (void)buf, (void)size;
  return "its permutation does not move the data-dependent axis anywhere";
}

static const char *rule_reshape(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  const TensorType *x = &in->v->type, *o = &n->outputs[0]->type;
  int64_t before = 1, len = x->dims[in->axis], p = 1;
  for (int i = 0; i < in->axis; i++) before *= x->dims[i];
  int found = -1, nfound = 0;
  for (int j = 0; j < o->ndim; j++) {
    if (p == before && o->dims[j] == len) found = j, nfound++;
    p *= o->dims[j];
  }
  (void)buf, (void)size;
  if (nfound == 0) return "it merges or splits the data-dependent axis";
  if (nfound > 1) return "it leaves unclear which output axis the data-dependent one becomes";
  *oa = found;
  return NULL;
}

static const char *rule_slice(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  int64_t b[MLC_MAX_DIMS], s[MLC_MAX_DIMS];
  int nb = ir_attr_ints(n, "begin", b, MLC_MAX_DIMS), ns = ir_attr_ints(n, "strides", s, MLC_MAX_DIMS);
  int a = in->axis;
  (void)buf, (void)size;
  if (nb <= a || ns <= a || b[a] != 0 || s[a] != 1 || n->outputs[0]->type.dims[a] != in->v->type.dims[a])
    return "it slices the data-dependent axis";
  *oa = a;
  return NULL;
}

static const char *rule_concat(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  int64_t axis = ir_attr_int(n, "axis", 0);
  (void)buf, (void)size;
  for (int k = 0; k < n->ninputs; k++) {
    const Value *v = n->inputs[k];
    if (!dyn(v)) return "it concatenates it with a static operand";
    if (v->dyn_axis != in->axis) return "its operands are data-dependent along different axes";
  }
  if (axis == in->axis) return "it concatenates along the data-dependent axis";
  *oa = in->axis;
  return NULL;
}

static const char *rule_take(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  int axis = (int)ir_attr_int(n, "axis", 0);
  const Value *x = n->inputs[0], *ix = n->inputs[1];
  (void)in, (void)buf, (void)size;
  if (dyn(x) && dyn(ix)) return "it takes data-dependent indices from data-dependent data";
  if (dyn(ix)) {
    *oa = axis + ix->dyn_axis;
    return NULL;
  }
  if (x->dyn_axis == axis) return "its indices select along the data-dependent axis";
  *oa = x->dyn_axis < axis ? x->dyn_axis : x->dyn_axis - 1 + ix->type.ndim;
  return NULL;
}

static const char *rule_gather_nd(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  const Value *x = n->inputs[0], *ix = n->inputs[1];
  int b = (int)ir_attr_int(n, "batch_dims", 0);
  (void)in, (void)buf, (void)size;
  if (dyn(x)) return "it gathers from data-dependent data";
  if (ix->dyn_axis < b) return "the data-dependent axis is one of its batch axes";
  if (ix->dyn_axis == ix->type.ndim - 1) return "the data-dependent axis holds its coordinates";
  *oa = ix->dyn_axis;
  return NULL;
}

static const char *rule_dense(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  const Value *x = n->inputs[0];
  (void)buf, (void)size;
  if (dyn(n->inputs[1])) return "its weight is data-dependent";
  if (x->dyn_axis == x->type.ndim - 1) return "it contracts over the data-dependent axis";
  (void)in;
  *oa = x->dyn_axis;
  return NULL;
}

static const char *rule_matmul(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  const Value *a = n->inputs[0], *b = n->inputs[1];
  bool ta = ir_attr_int(n, "transpose_a", 0) != 0, tb = ir_attr_int(n, "transpose_b", 0) != 0;
  int r = n->outputs[0]->type.ndim;
  (void)in, (void)buf, (void)size;
  if (dyn(a) && dyn(b)) return "it multiplies two data-dependent operands";
  if (dyn(a)) {
    int nd = a->type.ndim;
    if (nd >= 2 && a->dyn_axis == nd - (ta ? 1 : 2)) {
      *oa = r - (b->type.ndim > 1 ? 2 : 1);
      return NULL;
    }
    return nd < 2 || a->dyn_axis == nd - (ta ? 2 : 1) ? "it contracts over the data-dependent axis"
                                                       : "the data-dependent axis is a batch axis of the product";
  }
  int nd = b->type.ndim;
  if (nd >= 2 && b->dyn_axis == nd - (tb ? 2 : 1)) {
    *oa = r - 1;
    return NULL;
  }
  return nd < 2 || b->dyn_axis == nd - (tb ? 1 : 2) ? "it contracts over the data-dependent axis"
                                                     : "the data-dependent axis is a batch axis of the product";
}

static const char *rule_reduce(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  int64_t ax[MLC_MAX_DIMS + 1];
  int na = ir_attr_ints(n, "axis", ax, MLC_MAX_DIMS + 1), dropped = 0;
  bool keep = ir_attr_int(n, "keepdims", 1) != 0;
  (void)buf, (void)size;
  for (int i = 0; i < na && i <= MLC_MAX_DIMS; i++) {
    if (ax[i] == in->axis) return "it reduces over the data-dependent axis";
    dropped += ax[i] < in->axis;
  }
  *oa = keep ? in->axis : in->axis - dropped;
  return NULL;
}

static const char *rule_along_axis(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  int64_t axis = ir_attr_int(n, "axis", in->v->type.ndim - 1);
  if (axis < 0) axis += in->v->type.ndim;
  (void)buf, (void)size;
  if (axis == in->axis) {
    snprintf(buf, size, "%s works along the data-dependent axis", n->op->name);
    return buf;
  }
  *oa = in->axis;
  return NULL;
}

static const char *rule_norm_tail(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  int64_t axis = ir_attr_int(n, "axis", in->v->type.ndim - 1);
  if (axis < 0) axis += in->v->type.ndim;
  if (in->v != n->inputs[0]) return "its scale or bias is data-dependent";
  if (in->axis >= axis) {
    snprintf(buf, size, "%s normalizes over the data-dependent axis", n->op->name);
    return buf;
  }
  *oa = in->axis;
  return NULL;
}

static const char *rule_batch(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  (void)buf, (void)size;
  if (!dyn(n->inputs[0]) || n->inputs[0]->dyn_axis != 0 || n->outputs[0]->type.ndim < 1 ||
      n->outputs[0]->type.dims[0] != n->inputs[0]->type.dims[0])
    return "it computes across the data-dependent axis";
  int64_t pw[2 * MLC_MAX_DIMS]; /* nn.pad: none on the batch axis (a pad and a crop would keep its length) */
  int r = n->inputs[0]->type.ndim, np = ir_attr_ints(n, "pad_width", pw, 2 * MLC_MAX_DIMS);
  if (np == 2 * r && (pw[0] || pw[r])) return "it pads the data-dependent axis";
  for (int k = 1; k < n->ninputs; k++)
    if (dyn(n->inputs[k])) return "its weights are data-dependent";
  (void)in;
  *oa = 0;
  return NULL;
}

static const char *rule_rois(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  (void)buf, (void)size;
  if (dyn(n->inputs[0])) return "its feature map is data-dependent";
  for (int k = 1; k < n->ninputs && k < 3; k++) {
    if (!dyn(n->inputs[k])) return "its boxes and their batch indices do not share the data-dependent number of boxes";
    if (n->inputs[k]->dyn_axis != 0) return "its boxes are data-dependent along another axis than the box axis";
  }
  if (n->ninputs > 3 && n->inputs[3] != n->inputs[1]->dyn_extent) return "it is given another count than its boxes'";
  (void)in;
  *oa = 0;
  return NULL;
}

/* The Winograd conv (src/topi/winograd_x86.c) merges the batch into its tile axis: V[alpha, alpha, tiles, C] and
 * M[alpha^2, K/kb, tiles, kb] hold each sample's tiles one after another, so the valid samples' tiles lead the
 * axis (the extent there still counts samples: these values never leave the conv, and only its output, per
 * sample again, is trimmed or masked). */
static const char *rule_winograd(const Node *n, const DynIn *in, int *oa, char *buf, size_t size) {
  (void)buf, (void)size, (void)in;
  const char *op = n->op->name;
  bool tiles_in = !strcmp(op, "nn.winograd_gemm") || !strcmp(op, "nn.winograd_output");
  bool tiles_out = !strcmp(op, "nn.winograd_input") || !strcmp(op, "nn.winograd_gemm");
  for (int k = 1; k < n->ninputs; k++)
    if (dyn(n->inputs[k])) return "its weights are data-dependent";
  if (!dyn(n->inputs[0]) || n->inputs[0]->dyn_axis != (tiles_in ? 2 : 0))
    return "it computes across the data-dependent axis";
  *oa = tiles_out ? 2 : 0;
  return NULL;
}

static const RuleFn rules[] = {
    [DYN_ELEMWISE] = rule_elemwise, [DYN_TRANSPOSE] = rule_transpose, [DYN_RESHAPE] = rule_reshape,
    [DYN_SLICE] = rule_slice,       [DYN_CONCAT] = rule_concat,       [DYN_TAKE] = rule_take,
    [DYN_GATHER_ND] = rule_gather_nd, [DYN_DENSE] = rule_dense,       [DYN_MATMUL] = rule_matmul,
    [DYN_REDUCE] = rule_reduce,     [DYN_ALONG_AXIS] = rule_along_axis, [DYN_NORM_TAIL] = rule_norm_tail,
    [DYN_BATCH] = rule_batch,       [DYN_ROIS] = rule_rois,           [DYN_WINOGRAD] = rule_winograd,
};

/* The extent and axis each output of n should carry by its op's rule (ext[k] NULL: static). A DYN_SOURCE op
 * without data-dependent inputs keeps what its infer marked. */
/* DYN_MASK and DYN_PACK read the extents of their data-dependent inputs as inputs of their own: input i
 * (a piece) may carry an extent only along attr axis, and only the one that input extent_at(i) gives. */
static mlc_status explicit_extents(const Graph *g, const Node *n, int npieces, int first_extent, Diag *d) {
  int axis = (int)ir_attr_int(n, "axis", 0);
  for (int i = 0; i < n->ninputs; i++) {
    const Value *v = n->inputs[i];
    if (!dyn(v)) continue;
    const char *why = i >= npieces                      ? "it takes a data-dependent value as an extent"
                      : v->dyn_axis != axis              ? "its data-dependent axis is not the one it reads the extent of"
                      : v->dyn_extent != n->inputs[first_extent + i] ? "it is given another extent than the one it carries"
                                                                       : NULL;
    if (why) return ir_dynamic_use_error(g, v, n->name, n->op_type, why, d);
  }
  return MLC_OK;
}

/* every data-dependent input's extent is also an input of n */
static bool extents_are_inputs(const Node *n) {
  for (int i = 0; i < n->ninputs; i++) {
    if (!dyn(n->inputs[i])) continue;
    bool found = false;
    for (int j = 0; j < n->ninputs && !found; j++) found = n->inputs[j] == n->inputs[i]->dyn_extent;
    if (!found) return false;
  }
  return true;
}

static mlc_status expected(const Graph *g, const Node *n, Value **ext, int *axis, Diag *d) {
  DynIn in = {0};
  for (int k = 0; k < n->noutputs; k++) ext[k] = NULL, axis[k] = 0;
  if (n->op->dyn == DYN_MASK) return explicit_extents(g, n, 1, 1, d);
  if (n->op->dyn == DYN_PACK) {
    int np = (n->ninputs - 1) / 2;
    mlc_status st = explicit_extents(g, n, np, np, d);
    ext[0] = n->inputs[n->ninputs - 1];
    axis[0] = (int)ir_attr_int(n, "axis", 0);
    return st;
  }
  for (int k = 0; k < n->ninputs; k++) {
    const Value *v = n->inputs[k];
    if (!dyn(v)) continue;
    if (!in.v) {
      in.v = v;
      in.axis = v->dyn_axis;
    } else if (v->dyn_extent != in.v->dyn_extent) {
      char why[600];
      const Node *p2 = v->dyn_extent->producer;
      snprintf(why, sizeof why, "it also reads '%s', whose data-dependent extent comes from another node ('%s', %s)",
               v->name ? v->name : "?", p2 && p2->name ? p2->name : "?", p2 ? p2->op_type : "?");
      return ir_dynamic_use_error(g, in.v, n->name, n->op_type, why, d);
    }
  }
  DynRule r = n->op->dyn;
  if (in.v && r == DYN_SOURCE && extents_are_inputs(n)) in.v = NULL; /* its kernel reads them (NMS' box count) */
  if (!in.v) {
    if (r == DYN_SOURCE)
      for (int k = 0; k < n->noutputs; k++)
        if (n->outputs[k] && n->outputs[k]->dyn_extent) ext[k] = n->outputs[k]->dyn_extent, axis[k] = n->outputs[k]->dyn_axis;
    return MLC_OK;
  }
  char buf[300];
  if (r == DYN_SOURCE) return ir_dynamic_use_error(g, in.v, n->name, n->op_type, "it cannot read a data-dependent shape itself", d);
  if (r <= DYN_SOURCE || (size_t)r >= sizeof rules / sizeof rules[0] || !rules[r]) {
    snprintf(buf, sizeof buf, "mlc cannot carry a data-dependent shape through %s", n->op->name);
    return ir_dynamic_use_error(g, in.v, n->name, n->op_type, buf, d);
  }
  int oa = -1;
  const char *why = rules[r](n, &in, &oa, buf, sizeof buf);
  if (why) return ir_dynamic_use_error(g, in.v, n->name, n->op_type, why, d);
  int64_t bound = in.v->type.dims[in.axis];
  for (int k = 0; k < n->noutputs; k++) {
    const Value *o = n->outputs[k];
    if (!o) continue;
    /* the Winograd tile axis holds each sample's tiles: more positions than samples */
    bool tiles = r == DYN_WINOGRAD && oa < o->type.ndim &&
                 (oa == 2 ? o->type.dims[oa] >= bound : in.axis == 2 && o->type.dims[oa] <= bound);
    if (oa < 0 || oa >= o->type.ndim || (o->type.dims[oa] != bound && !tiles)) {
      char where[512];
      return diag_set(d, MLC_ERR_INTERNAL, "%sinternal error: %s's rule puts the data-dependent axis (bound %lld) on "
                      "axis %d of output %d, of type rank %d", ir_where(g, n, where, sizeof where), n->op->name,
                      (long long)bound, oa, k, o->type.ndim);
    }
    ext[k] = in.v->dyn_extent;
    axis[k] = oa;
  }
  return MLC_OK;
}

/* the expected extents of one node's outputs (heap: a node may have many outputs) */
typedef struct Expected {
  Value **ext;
  int *axis;
} Expected;

static mlc_status expected_alloc(const Graph *g, const Node *n, Expected *e, Diag *d) {
  e->ext = calloc((size_t)n->noutputs + 1, sizeof *e->ext);
  e->axis = calloc((size_t)n->noutputs + 1, sizeof *e->axis);
  if (!e->ext || !e->axis) return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  return expected(g, n, e->ext, e->axis, d);
}

static void expected_free(Expected *e) {
  free(e->ext);
  free(e->axis);
}

mlc_status ir_dynamic_propagate(const Graph *g, Node *n, Diag *d) {
  Expected e;
  mlc_status st = expected_alloc(g, n, &e, d);
  for (int k = 0; k < n->noutputs && st == MLC_OK; k++)
    if (n->outputs[k]) n->outputs[k]->dyn_extent = e.ext[k], n->outputs[k]->dyn_axis = e.axis[k];
  expected_free(&e);
  return st;
}

mlc_status ir_check_dynamic(const Graph *g, Diag *d) {
  char where[512];
  for (int i = 0; i < g->nodes.n; i++) {
    const Node *n = g->nodes.v[i];
    Expected e;
    mlc_status st = expected_alloc(g, n, &e, d);
    for (int k = 0; k < n->noutputs && st == MLC_OK; k++) {
      const Value *o = n->outputs[k];
      Value *ext = e.ext[k];
      if (!o || (o->dyn_extent == ext && (!ext || o->dyn_axis == e.axis[k]))) continue;
      st = diag_set(d, MLC_ERR_INTERNAL, "%sinternal error: output %d ('%s') of %s %s", ir_where(g, n, where, sizeof where),
                      k, o->name ? o->name : "?", n->op->name,
                    !o->dyn_extent ? "lost its data-dependent extent"
                    : !ext         ? "has a data-dependent extent its inputs do not give"
                                   : "carries a data-dependent extent other than its rule gives");
    }
    expected_free(&e);
    if (st != MLC_OK) return st;
  }
  for (int i = 0; i < g->outputs.n; i++) {
    const Value *v = g->outputs.v[i];
    if (v && v->dyn_extent && (v->data || !v->dyn_extent->producer))
      return diag_set(d, MLC_ERR_INTERNAL, "%s: internal error: graph output '%s' has a data-dependent extent no node "
                      "computes", g->file, v->name ? v->name : "?");
  }
  return MLC_OK;
}
