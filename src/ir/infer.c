/* Type inference and the structural verifier.
 *
 * ir_infer_node runs the op's type relation (OpDef.infer) and turns its message into a user error that names
 * the node: "model.onnx: node 'conv1' (Conv, opset 11): error: <relation's message>"; then it carries any
 * data-dependent extent of the inputs to the outputs by the op's DynRule (dynamic.c), or refuses the node.
 * ir_verify checks, in one pass over the node list in order, that every input is a graph input, a constant
 * or an output of an earlier node; that input counts fit the OpDef; that every output has a type and belongs
 * to its node; and that the graph outputs are defined. When an input comes from a later node, a DFS over
 * producers (white/grey/black colouring) tells a cycle apart from a mere ordering error. Values and nodes are
 * looked up through pointer-sorted tables, so the check does not trust ids that passes may have reused. */
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

const char *ir_where(const Graph *g, const Node *n, char *buf, size_t size) {
  if (!n) snprintf(buf, size, "%s: ", g && g->file ? g->file : "<graph>");
  else
    snprintf(buf, size, "%s: node '%s' (%s, opset %d): ", g && g->file ? g->file : "<graph>",
             n->name ? n->name : "?", n->op_type ? n->op_type : (n->op ? n->op->name : "?"), n->opset);
  return buf;
}

/* The low-precision storage types (float8, float4, int4, uint4, int2, uint2: see mlc_dtype) reach only the ops
 * that convert them or move their bytes unchanged; an op computing on them would compute on bit patterns (or
 * on wrapped 4-bit values), so any other op meeting one is refused here, whatever its own type relation says.
 * A list of names rather than an OpDef column keeps the op tables as they are: ONNX allows these types in
 * Cast/CastLike, QuantizeLinear/DequantizeLinear and the shape ops (Reshape, Transpose, Squeeze, Unsqueeze,
 * Flatten, Identity, Expand, ConstantOfShape, Pad, Concat, Slice, Gather, Tile, ...), which map onto these. */
static bool lowbit_ok(const char *op) {
  static const char *const ok[] = {
      "cast",        "bitcast", "qnn.quantize",      "qnn.dequantize",    "reshape",          "copy",
      "transpose",   "concatenate", "strided_slice", "nn.pad",            "tile",             "broadcast_to",
      "full",        "take",    "gather",            "gather_nd",         "nn.depth_to_space", "nn.space_to_depth",
      "reverse_sequence", "trilu",
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (!strcmp(op, ok[i])) return true;
  return false;
}

static mlc_status check_lowbit(Node *n, const char *where, Diag *d) {
  if (lowbit_ok(n->op->name)) return MLC_OK;
  for (int k = 0; k < 2; k++) {
    int cnt = k ? n->noutputs : n->ninputs;
    for (int i = 0; i < cnt; i++) {
      Value *v = k ? n->outputs[i] : n->inputs[i];
      mlc_dtype t = v ? v->type.dtype : MLC_UNDEF;
      if (t >= MLC_F8E4M3FN && t <= MLC_I2)
        return diag_set(d, MLC_ERR_UNSUPPORTED,
                        "%serror: %s of %s is not supported (the low-precision types take part in casts, "
                        "QuantizeLinear/DequantizeLinear and data movement only)",
                        where, n->op->name, mlc_dtype_name(v->type.dtype));
    }
  }
  return MLC_OK;
}

mlc_status ir_infer_node(Graph *g, Node *n, Diag *d) {
  char where[600];
  ir_where(g, n, where, sizeof where);
  if (!n->op) return diag_set(d, MLC_ERR_INTERNAL, "%serror: node has no op", where);
  if (!n->op->infer)
    return diag_set(d, MLC_ERR_INTERNAL, "%serror: op '%s' has no type relation", where, n->op->name);
  Diag local = {0};
  mlc_status st = n->op->infer(n, &local);
  if (st == MLC_OK && local.status != MLC_OK) st = local.status;
  if (st != MLC_OK) {
    const char *msg = local.msg[0] ? local.msg : "type inference failed";
    if (strncmp(msg, where, strlen(where)) == 0) return diag_set(d, st, "%s", msg); /* already names it */
    if (strncmp(msg, "error: ", 7) == 0) msg += 7;
    return diag_set(d, st, "%serror: %s", where, msg);
  }
  for (int i = 0; i < n->noutputs; i++) {
    Value *o = n->outputs[i];
    if (o && o->type.dtype == MLC_UNDEF)
      return diag_set(d, MLC_ERR_INTERNAL, "%serror: op '%s' left the type of output %d undefined", where,
                      n->op->name, i);
  }
  if ((st = check_lowbit(n, where, d)) != MLC_OK) return st;
  return ir_dynamic_propagate(g, n, d); /* data-dependent extents: dynamic.c */
}

mlc_status ir_infer_types(Graph *g, Diag *d) {
  for (int i = 0; i < g->nodes.n; i++) {
    mlc_status st = ir_infer_node(g, g->nodes.v[i], d);
    if (st != MLC_OK) return st;
  }
  return MLC_OK;
}

/* ---- pointer tables ---- */

typedef struct PtrIdx {
  const void *p;
  int idx;
} PtrIdx;

static int ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const PtrIdx *)a)->p, y = (uintptr_t)((const PtrIdx *)b)->p;
  return x < y ? -1 : x > y;
}

static int ptr_find(const PtrIdx *t, int n, const void *p) {
  PtrIdx key = {p, 0};
  const PtrIdx *r = bsearch(&key, t, (size_t)n, sizeof *t, ptr_cmp);
  return r ? r->idx : -1;
}

static const char *vname(const Value *v) { return v->name ? v->name : "?"; }

/* DFS from node idx over producers; returns true if a cycle is reachable. colour: 0 white, 1 grey, 2 black. */
static bool has_cycle(const Graph *g, const PtrIdx *nodes, int idx, char *colour, int depth) {
  if (colour[idx] == 1) return true;
  if (colour[idx] == 2 || depth > 20000) return false;
  colour[idx] = 1;
  const Node *n = g->nodes.v[idx];
  for (int i = 0; i < n->ninputs; i++) {
    const Value *v = n->inputs[i];
    if (!v || !v->producer) continue;
    int p = ptr_find(nodes, g->nodes.n, v->producer);
    if (p >= 0 && has_cycle(g, nodes, p, colour, depth + 1)) return true;
  }
  colour[idx] = 2;
  return false;
}

mlc_status ir_verify(const Graph *g, Diag *d) {
  int nn = g->nodes.n, nv = g->values.n;
  PtrIdx *nodes = malloc(sizeof(PtrIdx) * (size_t)(nn + 1));
  PtrIdx *vals = malloc(sizeof(PtrIdx) * (size_t)(nv + 1));
  char *defined = calloc((size_t)nv + 1, 1);
  char *colour = calloc((size_t)nn + 1, 1);
  mlc_status st = MLC_OK;
  char where[600];
  if (!nodes || !vals || !defined || !colour) {
    st = diag_set(d, MLC_ERR_INTERNAL, "%s: out of memory in verifier", g->file);
    goto done;
  }
  for (int i = 0; i < nn; i++) nodes[i] = (PtrIdx){g->nodes.v[i], i};
  for (int i = 0; i < nv; i++) vals[i] = (PtrIdx){g->values.v[i], i};
  qsort(nodes, (size_t)nn, sizeof *nodes, ptr_cmp);
  qsort(vals, (size_t)nv, sizeof *vals, ptr_cmp);
  for (int i = 1; i < nn; i++)
    if (nodes[i].p == nodes[i - 1].p) {
      st = diag_set(d, MLC_ERR_INTERNAL, "%serror: node appears twice in the node list",
                    ir_where(g, nodes[i].p, where, sizeof where));
      goto done;
    }
  for (int i = 0; i < nv; i++) {
    const Value *v = g->values.v[i];
    if (v->data || (v->is_input && !v->producer)) defined[i] = 1;
  }
  for (int i = 0; i < g->inputs.n; i++) {
    int vi = ptr_find(vals, nv, g->inputs.v[i]);
    if (vi < 0) {
      st = diag_set(d, MLC_ERR_INTERNAL, "%s: graph input '%s' is not a value of this graph", g->file,
                    vname(g->inputs.v[i]));
      goto done;
    }
    defined[vi] = 1;
  }
  for (int k = 0; k < nn; k++) {
    const Node *n = g->nodes.v[k];
    ir_where(g, n, where, sizeof where);
    if (!n->op) {
      st = diag_set(d, MLC_ERR_INTERNAL, "%serror: node has no op", where);
      goto done;
    }
    if (n->ninputs < n->op->min_inputs || (n->op->max_inputs >= 0 && n->ninputs > n->op->max_inputs)) {
      if (n->op->max_inputs < 0)
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: %s takes at least %d inputs, got %d", where, n->op->name,
                      n->op->min_inputs, n->ninputs);
      else
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: %s takes %d to %d inputs, got %d", where, n->op->name,
                      n->op->min_inputs, n->op->max_inputs, n->ninputs);
      goto done;
    }
    for (int i = 0; i < n->ninputs; i++) {
      const Value *v = n->inputs[i];
      if (!v) continue; /* an absent optional input */
      int vi = ptr_find(vals, nv, v);
      if (vi < 0) {
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: input %d ('%s') is not a value of this graph", where, i,
                      vname(v));
        goto done;
      }
      if (defined[vi]) continue;
      int p = v->producer ? ptr_find(nodes, nn, v->producer) : -1;
      if (p >= 0 && has_cycle(g, nodes, k, colour, 0))
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: the graph has a cycle through input %d ('%s')", where, i,
                      vname(v));
      else if (p >= 0)
        st = diag_set(d, MLC_ERR_INTERNAL,
                      "%serror: input %d ('%s') is used before its definition by node '%s' (not in topological "
                      "order)",
                      where, i, vname(v), v->producer->name);
      else
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: input %d ('%s') is never defined", where, i, vname(v));
      goto done;
    }
    for (int i = 0; i < n->noutputs; i++) {
      const Value *o = n->outputs[i];
      int vi = o ? ptr_find(vals, nv, o) : -1;
      if (vi < 0 || o->producer != n || o->producer_out != i) {
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: output %d does not belong to this node", where, i);
        goto done;
      }
      if (defined[vi]) {
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: output %d ('%s') is defined twice", where, i, vname(o));
        goto done;
      }
      if (o->type.dtype == MLC_UNDEF || o->type.ndim < 0 || o->type.ndim > MLC_MAX_DIMS) {
        st = diag_set(d, MLC_ERR_INTERNAL, "%serror: output %d ('%s') has no type", where, i, vname(o));
        goto done;
      }
      defined[vi] = 1;
    }
  }
  if (g->outputs.n == 0) {
    st = diag_set(d, MLC_ERR_INVALID, "%s: the graph has no outputs", g->file);
    goto done;
  }
  for (int i = 0; i < g->outputs.n; i++) {
    const Value *v = g->outputs.v[i];
    int vi = v ? ptr_find(vals, nv, v) : -1;
    if (vi < 0 || !defined[vi]) {
      st = diag_set(d, MLC_ERR_INTERNAL, "%s: graph output %d ('%s') is not defined", g->file, i,
                    v ? vname(v) : "?");
      goto done;
    }
  }
done:
  free(nodes);
  free(vals);
  free(defined);
  free(colour);
  return st;
}
