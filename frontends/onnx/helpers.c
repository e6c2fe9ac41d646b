/* The converter helpers of onnx.h: attribute getters on the ONNX node, node emission with type inference on
 * the spot (errors name the ONNX node), constants, and node-scoped error messages. Converters call these and
 * nothing else of the importer. */
#include <string.h>
#include "frontends/onnx/internal.h"
#include "runtime/rt.h"

static const Onnx__NodeProto *proto_of(const OnnxNode *n) {
  return n && n->proto ? ((const OnnxNodeRef *)n->proto)->np : NULL;
}

static const Onnx__AttributeProto *find_attr(const OnnxNode *n, const char *name) {
  const Onnx__NodeProto *np = proto_of(n);
  if (!np) return NULL;
  for (size_t i = 0; i < np->n_attribute; i++)
    if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, name)) return np->attribute[i];
  return NULL;
}

bool onnx_has_attr(const OnnxNode *n, const char *name) { return find_attr(n, name) != NULL; }

int64_t onnx_attr_int(const OnnxNode *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at) return dflt;
  if (at->has_i || (at->has_type && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)) return at->i;
  if (at->has_f) return (int64_t)at->f;
  if (at->n_ints == 1) return at->ints[0];
  return dflt;
}

double onnx_attr_float(const OnnxNode *n, const char *name, double dflt) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at) return dflt;
  if (at->has_f || (at->has_type && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)) return at->f;
  if (at->has_i) return (double)at->i;
  if (at->n_floats == 1) return at->floats[0];
  return dflt;
}

static char *bytes_str(Arena *a, const ProtobufCBinaryData *b) {
  char *s = arena_alloc(a, b->len + 1);
  if (b->len) memcpy(s, b->data, b->len);
  return s;
}

const char *onnx_attr_string(const OnnxNode *n, const char *name, const char *dflt) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at || !at->has_s) return dflt;
  return bytes_str(((const OnnxNodeRef *)n->proto)->cx->arena, &at->s);
}

int onnx_attr_strings(const OnnxNode *n, const char *name, const char **out, int max) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at) return -1;
  Arena *a = ((const OnnxNodeRef *)n->proto)->cx->arena;
  for (size_t i = 0; i < at->n_strings && (int)i < max && out; i++) out[i] = bytes_str(a, &at->strings[i]);
  return (int)at->n_strings;
}

int onnx_attr_ints(const OnnxNode *n, const char *name, int64_t *out, int max) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at) return -1;
  if (at->n_ints == 0 && at->has_i) {
    if (max > 0 && out) out[0] = at->i;
    return 1;
  }
  for (size_t i = 0; i < at->n_ints && (int)i < max && out; i++) out[i] = at->ints[i];
  return (int)at->n_ints;
}

int onnx_attr_floats(const OnnxNode *n, const char *name, double *out, int max) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at) return -1;
  if (at->n_floats == 0 && at->has_f) {
    if (max > 0 && out) out[0] = at->f;
    return 1;
  }
  for (size_t i = 0; i < at->n_floats && (int)i < max && out; i++) out[i] = at->floats[i];
  return (int)at->n_floats;
}

Value *onnx_attr_tensor(OnnxCtx *cx, const OnnxNode *n, const char *name, Diag *d) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at || !at->t) return NULL;
  return onnx_tensor_const(cx, at->t, arena_printf(cx->arena, "%s.%s", n->name, name), d);
}

Graph *onnx_attr_graph(OnnxCtx *cx, const OnnxNode *n, const char *name, Diag *d) {
  const Onnx__AttributeProto *at = find_attr(n, name);
  if (!at || !at->g) return NULL;
  onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
             "subgraph attribute '%s' is not supported (control flow: If/Loop/Scan bodies are not imported yet)", name);
  return NULL;
}

mlc_status onnx_error(OnnxCtx *cx, const OnnxNode *n, Diag *d, mlc_status st, const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* a value needed at compile time may come from a graph input: say how to bind one (not for a data-dependent
   * length, which binding an input would not make known) */
  const char *hint = st == MLC_ERR_UNSUPPORTED && strstr(msg, "compile time") && !strstr(msg, "--freeze-inputs") &&
                             !strstr(msg, "data-dependent")
                         ? "; a graph input can be bound to a fixed value with --freeze-inputs FILE.npz"
                         : "";
  return diag_set(d, st, "%s: node '%s' (%s, opset %d): error: %s%s", cx->path, n->name, n->op_type, n->opset, msg,
                  hint);
}

Node *onnx_emit(OnnxCtx *cx, const OnnxNode *n, const char *op, int nin, Value **ins, int nout, Diag *d) {
  const OpDef *def = ir_op_find(op);
  if (!def) {
    onnx_error(cx, n, d, MLC_ERR_INTERNAL, "graph op '%s' is not registered", op);
    return NULL;
  }
  if (nout < 1) nout = def->num_outputs > 0 ? def->num_outputs : 1;
  return ir_node_new(cx->g, def, n->name, n->op_type, n->opset, ins, nin, nout);
}

mlc_status onnx_finish(OnnxCtx *cx, const OnnxNode *n, Node *node, Diag *d) {
  if (!node) return diag_ok(d) ? onnx_error(cx, n, d, MLC_ERR_INTERNAL, "no node to finish") : d->status;
  return ir_infer_node(cx->g, node, d);
}

Value *onnx_const(OnnxCtx *cx, const char *name, TensorType t, const void *data) {
  const char *nm = name ? name : arena_printf(cx->arena, "const_%d", cx->nconst);
  cx->nconst++;
  return ir_const_new(cx->g, nm, t, data);
}

Graph *onnx_graph(OnnxCtx *cx) { return cx->g; }

Value *onnx_seq_new(OnnxCtx *cx, const char *name, mlc_dtype elem, int n, Value *const *items) {
  OnnxSeq *s = arena_alloc(cx->arena, sizeof *s);
  s->v.id = -1;
  s->v.name = name ? arena_strdup(cx->arena, name) : "sequence";
  s->v.type.dtype = MLC_UNDEF;
  s->elem = elem;
  s->n = n;
  s->items = arena_alloc(cx->arena, sizeof(Value *) * (size_t)(n + 1));
  if (n) memcpy(s->items, items, sizeof(Value *) * (size_t)n);
  return &s->v;
}

const OnnxSeq *onnx_seq(const Value *v) {
  return v && v->id == -1 && v->type.dtype == MLC_UNDEF && !((const OnnxSeq *)v)->none ? (const OnnxSeq *)v : NULL;
}

Value *onnx_lookup(OnnxCtx *cx, const char *name) { return name ? onnx_scope_get(&cx->scope, name) : NULL; }

Value *onnx_none_new(OnnxCtx *cx, const char *name) {
  Value *v = onnx_seq_new(cx, name ? name : "none", MLC_UNDEF, 0, NULL);
  ((OnnxSeq *)v)->none = true;
  return v;
}

bool onnx_is_none(const Value *v) {
  return v && v->id == -1 && v->type.dtype == MLC_UNDEF && ((const OnnxSeq *)v)->none;
}

int onnx_const_ints(const Value *v, int64_t *out, int max) {
  if (!v || !v->data) return -1;
  int64_t n = tt_numel(&v->type);
  if (n < 0 || n > INT32_MAX) return -1;
  for (int64_t i = 0; i < n && i < max && out; i++) {
    switch (v->type.dtype) {
    case MLC_I64: out[i] = ((const int64_t *)v->data)[i]; break;
    case MLC_I32: out[i] = ((const int32_t *)v->data)[i]; break;
    case MLC_I16: out[i] = ((const int16_t *)v->data)[i]; break;
    case MLC_I8: out[i] = ((const int8_t *)v->data)[i]; break;
    case MLC_U8: case MLC_BOOL: out[i] = ((const uint8_t *)v->data)[i]; break;
    case MLC_U16: out[i] = ((const uint16_t *)v->data)[i]; break;
    case MLC_U32: out[i] = ((const uint32_t *)v->data)[i]; break;
    case MLC_U64: out[i] = (int64_t)((const uint64_t *)v->data)[i]; break;
    default: return -1;
    }
  }
  switch (v->type.dtype) {
  case MLC_I64: case MLC_I32: case MLC_I16: case MLC_I8: case MLC_U8: case MLC_BOOL: case MLC_U16: case MLC_U32:
  case MLC_U64:
    return (int)n;
  default:
    return -1;
  }
}

/* ---- scalar constants ---- */

Value *onnx_scalar(OnnxCtx *cx, const OnnxNode *n, const char *what, mlc_dtype t, double v) {
  union { float f; double d; int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint8_t u8; uint16_t u16;
          uint32_t u32; uint64_t u64; } u;
  memset(&u, 0, sizeof u);
  switch (t) {
    case MLC_F32: u.f = (float)v; break;
    case MLC_F64: u.d = v; break;
    case MLC_F16: u.u16 = rt_f32_to_f16((float)v); break;
    case MLC_BF16: u.u16 = rt_f32_to_bf16((float)v); break;
    case MLC_I8: u.i8 = (int8_t)v; break;
    case MLC_I16: u.i16 = (int16_t)v; break;
    case MLC_I32: u.i32 = (int32_t)v; break;
    case MLC_I64: u.i64 = (int64_t)v; break;
    case MLC_U8: case MLC_BOOL: u.u8 = (uint8_t)v; break;
    case MLC_U16: u.u16 = (uint16_t)v; break;
    case MLC_U32: u.u32 = (uint32_t)v; break;
    case MLC_U64: u.u64 = (uint64_t)v; break;
    default: return NULL;
  }
  TensorType tt = {.dtype = t, .ndim = 0};
  Arena *A = onnx_graph(cx)->arena;
  return onnx_const(cx, arena_printf(A, "%s_%s", n->name && *n->name ? n->name : n->op_type, what), tt, &u);
}


void onnx_slice_clamp(int64_t *b, int64_t *e, int64_t step, int64_t dim) {
  if (*b < 0) *b += dim;
  if (*e < 0) *e += dim;
  if (step > 0) {
    *b = *b < 0 ? 0 : *b > dim ? dim : *b;
    *e = *e < 0 ? 0 : *e > dim ? dim : *e;
  } else {
    *b = *b < 0 ? -1 : *b > dim - 1 ? dim - 1 : *b;
    *e = *e < -1 ? -1 : *e > dim - 1 ? dim - 1 : *e;
  }
}

/* ---- what a value depends on ---- */

/* Walks the producers of vs back to the graph inputs and constants (an explicit stack; each node once),
 * calling leaf(x, u) for each value without a producer and dyn(x, u) for each value with a data-dependent
 * extent, or whose extent is the value reached (its producers are not walked). */
static void walk_producers(OnnxCtx *cx, int nv, Value *const *vs, void (*leaf)(const Value *, void *),
                           void (*dyn)(const Value *, void *), void *u) {
  Graph *g = onnx_graph(cx);
  Arena *A = g->arena;
  int maxid = 0, cap = nv + 1; /* each node's inputs are pushed once at most */
  for (int i = 0; i < g->nodes.n; i++) {
    if (g->nodes.v[i]->id > maxid) maxid = g->nodes.v[i]->id;
    cap += g->nodes.v[i]->ninputs;
  }
  bool *seen = arena_alloc(A, (size_t)maxid + 1);
  memset(seen, 0, (size_t)maxid + 1);
  const Value **stack = arena_alloc(A, sizeof(Value *) * (size_t)cap);
  int sp = 0;
  for (int i = 0; i < nv; i++)
    if (vs[i]) stack[sp++] = vs[i];
  while (sp > 0) {
    const Value *x = stack[--sp];
    if (x->data) continue;
    if (x->dyn_extent && dyn) {
      dyn(x, u);
      continue;
    }
    if (!x->producer) {
      if (leaf) leaf(x, u);
      continue;
    }
    Node *p = x->producer;
    const Value *of = NULL; /* x is the hidden extent output of a data-dependent op: its data-dependent output */
    for (int k = 0; k < p->noutputs && !of; k++)
      if (p->outputs[k] && p->outputs[k]->dyn_extent == x) of = p->outputs[k];
    if (of && dyn) {
      dyn(of, u);
      continue;
    }
    if (p->id < 0 || p->id > maxid || seen[p->id]) continue;
    seen[p->id] = true;
    for (int i = 0; i < p->ninputs; i++)
      if (p->inputs[i] && sp < cap) stack[sp++] = p->inputs[i];
  }
}

typedef struct InputSet {
  const Value **v;
  int n, cap;
} InputSet;

static void add_input(const Value *x, void *u) {
  InputSet *s = u;
  bool dup = false;
  for (int i = 0; i < s->n && !dup; i++) dup = s->v[i] == x;
  if (x->is_input && !dup && s->n < s->cap) s->v[s->n++] = x;
}

static void first_dyn(const Value *x, void *u) {
  if (!*(const Value **)u) *(const Value **)u = x;
}

const Value *onnx_dyn_source(OnnxCtx *cx, const Value *v) {
  const Value *found = NULL;
  Value *vs[1] = {(Value *)v};
  walk_producers(cx, 1, vs, NULL, first_dyn, &found);
  return found;
}

const char *onnx_input_deps(OnnxCtx *cx, int nv, Value *const *vs) {
  Graph *g = onnx_graph(cx);
  Arena *A = g->arena;
  InputSet set = {.v = arena_alloc(A, sizeof(Value *) * (size_t)(g->inputs.n + 1)), .cap = g->inputs.n};
  walk_producers(cx, nv, vs, add_input, NULL, &set);
  const Value **inputs = set.v;
  int ninputs = set.n;
  StrBuf b = {0}; /* in the graph's input order */
  for (int k = 0, first = 1; k < g->inputs.n; k++)
    for (int i = 0; i < ninputs; i++)
      if (inputs[i] == g->inputs.v[k]) {
        sb_printf(&b, "%s'%s'", first ? "" : ", ", inputs[i]->name);
        first = 0;
      }
  char *s = arena_strdup(A, b.s ? b.s : "");
  sb_free(&b);
  return s;
}

mlc_status onnx_need_inputs(OnnxCtx *cx, const OnnxNode *n, int k, Diag *d) {
  if (n->ninputs < k)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs %d inputs, got %d", n->op_type, k, n->ninputs);
  for (int i = 0; i < k; i++)
    if (!n->inputs[i]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: input %d is missing", n->op_type, i);
  return MLC_OK;
}

mlc_status onnx_finish_all(OnnxCtx *cx, const OnnxNode *n, Node *nd, Value **outs, Diag *d) {
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  for (int i = 0; i < nd->noutputs && i < n->noutputs; i++) outs[i] = nd->outputs[i];
  return MLC_OK;
}

mlc_status onnx_norm_axis(OnnxCtx *cx, const OnnxNode *n, int64_t *axis, int ndim, Diag *d) {
  if (*axis < -ndim || *axis >= ndim)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld is out of range for a rank-%d input", (long long)*axis,
                      ndim);
  if (*axis < 0) *axis += ndim;
  return MLC_OK;
}

mlc_status onnx_finish_one(OnnxCtx *cx, const OnnxNode *n, Node *nd, Value **out, Diag *d) {
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st != MLC_OK) return st;
  if (out) *out = nd->outputs[0];
  return MLC_OK;
}

/* ---- data-dependent extents read at run time (src/ir/dynamic.c: DYN_MASK, DYN_PACK) ---- */

void onnx_extent_free(OnnxCtx *cx) { cx->extent_free = true; }

/* one graph op on ins, finished, its first output (NULL with d set) */
static Value *emit1(OnnxCtx *cx, const OnnxNode *n, const char *op, int nin, Value **ins, Diag *d) {
  Node *nd = onnx_emit(cx, n, op, nin, ins, 1, d);
  return nd && onnx_finish(cx, n, nd, d) == MLC_OK ? nd->outputs[0] : NULL;
}

Value *onnx_extent_const(OnnxCtx *cx, int64_t v) {
  TensorType t = {.dtype = MLC_I64, .ndim = 1, .dims = {1}};
  return onnx_const(cx, NULL, t, &v);
}

Value *onnx_apply(OnnxCtx *cx, const OnnxNode *n, const char *op, int nin, Value **ins, const char *attr, int64_t v,
                  Diag *d) {
  for (int i = 0; i < nin; i++)
    if (!ins[i]) return NULL;
  Node *nd = onnx_emit(cx, n, op, nin, ins, 1, d);
  if (nd && attr) ir_set_int(onnx_graph(cx), nd, attr, v);
  return nd && onnx_finish(cx, n, nd, d) == MLC_OK ? nd->outputs[0] : NULL;
}

Value *onnx_binary(OnnxCtx *cx, const OnnxNode *n, const char *op, Value *a, Value *b, Diag *d) {
  Value *ins[2] = {a, b};
  return a && b ? emit1(cx, n, op, 2, ins, d) : NULL;
}

Value *onnx_dyn_mask(OnnxCtx *cx, const OnnxNode *n, Value *x, const char *fill, Diag *d) {
  if (!x || !x->dyn_extent) return x;
  Value *ins[2] = {x, x->dyn_extent};
  Node *nd = onnx_emit(cx, n, "dyn_mask", 2, ins, 1, d);
  if (!nd) return NULL;
  Graph *g = onnx_graph(cx);
  ir_set_int(g, nd, "axis", x->dyn_axis);
  ir_set_string(g, nd, "fill", fill);
  return onnx_finish(cx, n, nd, d) == MLC_OK ? nd->outputs[0] : NULL;
}

/* a + b of two extents, the value made before for the same operands if there is one: the concatenations of
 * the same pieces (boxes and their labels in detection post-processing) then carry one extent */
static Value *extent_sum(OnnxCtx *cx, const OnnxNode *n, Value *a, Value *b, Diag *d) {
  const OpDef *add = ir_op_find("add");
  for (int k = cx->g->nodes.n - 1; k >= 0; k--) {
    const Node *nd = cx->g->nodes.v[k];
    if (nd->op == add && nd->ninputs == 2 && nd->inputs[0] == a && nd->inputs[1] == b) return nd->outputs[0];
  }
  return onnx_binary(cx, n, "add", a, b, d);
}

Value *onnx_dyn_pack(OnnxCtx *cx, const OnnxNode *n, int axis, int np, Value **pieces, Value **extents, Diag *d) {
  Value **ins = arena_alloc(cx->arena, sizeof(Value *) * (size_t)(2 * np + 1));
  Value *total = NULL;
  for (int i = 0; i < np; i++) {
    Value *x = pieces[i];
    ins[i] = x;
    ins[np + i] = extents && extents[i] ? extents[i]
                  : x->dyn_extent && x->dyn_axis == axis ? x->dyn_extent
                                                          : onnx_extent_const(cx, x->type.dims[axis]);
    total = i == 0 ? ins[np] : extent_sum(cx, n, total, ins[np + i], d);
    if (!total) return NULL;
  }
  ins[2 * np] = total;
  Node *nd = onnx_emit(cx, n, "dyn_pack", 2 * np + 1, ins, 1, d);
  if (!nd) return NULL;
  ir_set_int(onnx_graph(cx), nd, "axis", axis);
  return onnx_finish(cx, n, nd, d) == MLC_OK ? nd->outputs[0] : NULL;
}

