/* ONNX model import: ModelProto (protobuf-c) -> graph IR.
 *
 * Steps, in order: parse the file; check ir_version and find the default domain's opset; initializers become
 * constants (an input that is also an initializer is a constant, not an input); the remaining graph inputs
 * become typed inputs, their dynamic dims fixed by --input-shapes; nodes are put in topological order (file
 * order when it already is one, else repeated passes that emit every node whose inputs are available, which
 * is Kahn's algorithm without a queue; a leftover node means a cycle or a missing tensor, told apart by
 * following the chain of unavailable inputs); every node's converter is looked up in the family tables of
 * families.def and all unsupported ops are reported in one diagnostic; Constant nodes become constants
 * directly; the others run their converter, whose outputs are bound to the ONNX output names; graph outputs
 * are looked up by name; finally ir_verify checks the result. Every message starts with the model path. */
#include <stdlib.h>
#include <string.h>
#include "frontends/onnx/internal.h"
#include "runtime/rt.h"
#include "passes/graph/passes.h"
#include "topi/topi.h"

#define FAMILY(x) extern const OnnxConverter onnx_ops_##x[];
#include "frontends/onnx/families.def"
#undef FAMILY

static const OnnxConverter *const onnx_families[] = {
#define FAMILY(x) onnx_ops_##x,
#include "frontends/onnx/families.def"
#undef FAMILY
};

static const char *S(const char *s) { return s ? s : ""; }
static bool default_domain(const char *dom) { return !dom || !*dom || !strcmp(dom, "ai.onnx"); }

/* ---- name map ---- */

static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

void *onnx_scope_get(const OnnxScope *s, const char *name) {
  if (!s->cap || !name) return NULL;
  for (uint32_t i = hash_str(name) & (uint32_t)(s->cap - 1);; i = (i + 1) & (uint32_t)(s->cap - 1)) {
    if (!s->keys[i]) return NULL;
    if (!strcmp(s->keys[i], name)) return s->vals[i];
  }
}

static void scope_insert(OnnxScope *s, const char *key, void *v) {
  uint32_t i = hash_str(key) & (uint32_t)(s->cap - 1);
  while (s->keys[i] && strcmp(s->keys[i], key)) i = (i + 1) & (uint32_t)(s->cap - 1);
  if (!s->keys[i]) s->n++;
  s->keys[i] = key;
  s->vals[i] = v;
}

void onnx_scope_put(Arena *a, OnnxScope *s, const char *name, void *v) {
  if ((s->n + 1) * 2 > s->cap) {
    OnnxScope ns = {.cap = s->cap ? s->cap * 2 : 64};
    ns.keys = arena_alloc(a, sizeof(char *) * (size_t)ns.cap);
    ns.vals = arena_alloc(a, sizeof(void *) * (size_t)ns.cap);
    for (int i = 0; i < s->cap; i++)
      if (s->keys[i]) scope_insert(&ns, s->keys[i], s->vals[i]);
    *s = ns;
  }
  if (onnx_scope_get(s, name)) scope_insert(s, name, v); /* key already stored */
  else scope_insert(s, arena_strdup(a, name), v);
}

/* ---- opsets and converters ---- */

static int domain_opset(const Onnx__ModelProto *m, const char *domain) {
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    bool match = default_domain(domain) ? default_domain(o->domain) : !strcmp(S(o->domain), domain);
    if (match) return o->has_version ? (int)o->version : 1;
  }
  return 1; /* a domain the model does not import: be tolerant, as ONNX Runtime is */
}

static OnnxConvertFn find_converter(const char *domain, const char *op_type) {
  for (size_t f = 0; f < countof(onnx_families); f++)
    for (const OnnxConverter *c = onnx_families[f]; c->op_type; c++) {
      if (strcmp(c->op_type, op_type)) continue;
      if (default_domain(domain) ? default_domain(c->domain) : !strcmp(S(c->domain), domain)) return c->fn;
    }
  return NULL;
}

mlc_status onnx_convert_as(OnnxCtx *cx, const OnnxNode *n, const char *op_type, int opset, bool attrs, int nin,
                           Value **ins, Value **out, Diag *d) {
  OnnxConvertFn fn = find_converter("", op_type);
  if (!fn) return onnx_error(cx, n, d, MLC_ERR_INTERNAL, "no converter for %s", op_type);
  const char *names[1] = {n->noutputs > 0 ? n->output_names[0] : ""};
  OnnxNode sub = {.name = n->name, .op_type = op_type, .domain = "", .opset = opset, .ninputs = nin, .inputs = ins,
                  .noutputs = 1, .output_names = names, .proto = attrs ? n->proto : NULL};
  Value *outs[1] = {NULL};
  mlc_status st = fn(cx, &sub, outs, d);
  if (st) return st;
  if (!outs[0]) return onnx_error(cx, n, d, MLC_ERR_INTERNAL, "%s gave no output", op_type);
  *out = outs[0];
  return MLC_OK;
}

/* "FILE: node 'n' (Op, opset N): error: " for an ONNX node before any graph node exists */
static mlc_status node_error(OnnxCtx *cx, const char *name, const char *op_type, int opset, Diag *d, mlc_status st,
                             const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static mlc_status node_error(OnnxCtx *cx, const char *name, const char *op_type, int opset, Diag *d, mlc_status st,
                             const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return diag_set(d, st, "%s: node '%s' (%s, opset %d): error: %s", cx->path, name, op_type, opset, msg);
}

/* ---- input shapes ---- */

mlc_status onnx_parse_input_shapes(Arena *a, const char *spec, OnnxImportOptions *opt, Diag *d) {
  if (!spec) return MLC_OK;
  VEC(OnnxInputShape) v = {0};
  for (int i = 0; i < opt->ninput_shapes; i++) vec_push(a, &v, opt->input_shapes[i]);
  const char *p = spec;
  while (*p) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    const char *none = strstr(p, ":none");
    if (none && none > p && (none[5] == ',' || !none[5]) && !memchr(p, '[', (size_t)(none - p))) {
      OnnxInputShape s = {.ndim = -1}; /* an empty optional */
      char *name = arena_alloc(a, (size_t)(none - p) + 1);
      memcpy(name, p, (size_t)(none - p));
      s.name = name;
      for (int i = 0; i < v.n; i++)
        if (!strcmp(v.v[i].name, name)) return diag_set(d, MLC_ERR_USAGE, "--input-shapes: '%s' is given twice", name);
      vec_push(a, &v, s);
      p = none + 5;
      continue;
    }
    const char *close = strchr(p, ']');
    if (!close)
      return diag_set(d, MLC_ERR_USAGE, "--input-shapes '%s': expected name:[d0,d1,...] at '%s'", spec, p);
    const char *open = NULL;
    for (const char *q = p; q + 1 < close; q++)
      if (q[0] == ':' && q[1] == '[') open = q;
    if (!open || open == p)
      return diag_set(d, MLC_ERR_USAGE, "--input-shapes '%s': expected name:[d0,d1,...] at '%s'", spec, p);
    OnnxInputShape s = {0};
    char *name = arena_alloc(a, (size_t)(open - p) + 1);
    memcpy(name, p, (size_t)(open - p));
    s.name = name;
    const char *q = open + 2;
    while (*q == ' ') q++;
    while (q < close) {
      if (s.ndim == MLC_MAX_DIMS)
        return diag_set(d, MLC_ERR_USAGE, "--input-shapes: '%s' has more than %d dimensions", name, MLC_MAX_DIMS);
      char *end;
      long long dim = strtoll(q, &end, 10);
      if (end == q || dim < 0)
        return diag_set(d, MLC_ERR_USAGE, "--input-shapes: '%s': bad dimension at '%.*s' (need integers >= 0)",
                        name, (int)(close - q), q);
      s.dims[s.ndim++] = dim;
      q = end;
      while (*q == ' ') q++;
      if (*q == ',') {
        q++;
        while (*q == ' ') q++;
        if (q == close) return diag_set(d, MLC_ERR_USAGE, "--input-shapes: '%s': missing dimension", name);
      } else if (q != close) {
        return diag_set(d, MLC_ERR_USAGE, "--input-shapes: '%s': bad dimension list at '%.*s'", name,
                        (int)(close - q), q);
      }
    }
    for (int i = 0; i < v.n; i++)
      if (!strcmp(v.v[i].name, name))
        return diag_set(d, MLC_ERR_USAGE, "--input-shapes: '%s' is given twice", name);
    vec_push(a, &v, s);
    p = close + 1;
    while (*p == ' ') p++;
    if (*p && *p != ',')
      return diag_set(d, MLC_ERR_USAGE, "--input-shapes '%s': expected ',' after '%s:[...]'", spec, name);
  }
  opt->ninput_shapes = v.n;
  opt->input_shapes = v.v;
  return MLC_OK;
}

static const OnnxInputShape *find_shape(const OnnxImportOptions *opt, const char *name) {
  for (int i = 0; opt && i < opt->ninput_shapes; i++)
    if (!strcmp(opt->input_shapes[i].name, name)) return &opt->input_shapes[i];
  return NULL;
}

static void print_dims(char *buf, size_t size, const int64_t *dims, int ndim) {
  size_t k = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && k < size; i++) k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "," : "", (long long)dims[i]);
  if (k < size) snprintf(buf + k, size - k, "]");
}

/* A value bound to an input (--freeze-inputs) must have the input's declared element type and static dims.
 * numpy has no bfloat16: a float32 value for a bfloat16 input is rounded to it (*data, *dtype). */
static mlc_status check_frozen(OnnxCtx *cx, const Onnx__ValueInfoProto *vi, const OnnxInputShape *fz,
                               mlc_dtype *dtype, const void **data, Diag *d) {
  const char *name = S(vi->name);
  const Onnx__TypeProto *tp = vi->type;
  *dtype = fz->dtype;
  *data = fz->data;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) return MLC_OK;
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  mlc_dtype want = tt->has_elem_type ? onnx_dtype(tt->elem_type) : MLC_UNDEF;
  if (want == MLC_BF16 && fz->dtype == MLC_F32) {
    int64_t n = 1;
    for (int i = 0; i < fz->ndim; i++) n *= fz->dims[i];
    uint16_t *h = arena_alloc(cx->arena, (size_t)n * 2 + 2);
    for (int64_t i = 0; i < n; i++) h[i] = rt_f32_to_bf16(((const float *)fz->data)[i]);
    *dtype = MLC_BF16;
    *data = h;
  } else if (rt_dtype_is_lowbit(want)) { /* nor float8 / int4 / ...: see rt_lowbit_from_npz */
    int64_t n = 1;
    for (int i = 0; i < fz->ndim; i++) n *= fz->dims[i];
    uint8_t *b = arena_alloc(cx->arena, (size_t)n + 1);
    char err[RT_ERRLEN];
    if (!rt_lowbit_from_npz(want, fz->dtype, fz->data, n, b, err))
      return diag_set(d, MLC_ERR_USAGE, "%s: --freeze-inputs: input '%s': %s", cx->path, name, err);
    *dtype = want;
    *data = b;
  } else if (want != MLC_UNDEF && want != fz->dtype)
    return diag_set(d, MLC_ERR_USAGE, "%s: --freeze-inputs: input '%s' is %s in the model, the value given is %s",
                    cx->path, name, mlc_dtype_name(want), mlc_dtype_name(fz->dtype));
  const Onnx__TensorShapeProto *sh = tt->shape;
  if (!sh) return MLC_OK;
  bool same = (int)sh->n_dim == fz->ndim;
  for (int i = 0; same && i < fz->ndim; i++)
    same = sh->dim[i]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
           sh->dim[i]->dim_value == fz->dims[i];
  if (!same) {
    char gb[256];
    print_dims(gb, sizeof gb, fz->dims, fz->ndim);
    return diag_set(d, MLC_ERR_USAGE, "%s: --freeze-inputs: the value given for input '%s' has shape %s, which "
                    "the model's rank-%zu shape of '%s' does not allow", cx->path, name, gb, sh->n_dim, name);
  }
  return MLC_OK;
}

static mlc_status import_input(OnnxCtx *cx, const Onnx__ValueInfoProto *vi, const OnnxImportOptions *opt, Diag *d) {
  const char *name = S(vi->name);
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: input '%s' is not a tensor, a sequence or an optional (map and sparse inputs are not supported)", cx->path, name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  int32_t et = tt->has_elem_type ? tt->elem_type : 0;
  TensorType t = {onnx_dtype(et), 0, {0}};
  if (t.dtype == MLC_UNDEF)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: input '%s' has data type %s, which mlc does not support", cx->path,
                    name, onnx_dtype_name(et));
  const OnnxInputShape *given = find_shape(opt, name);
  if (!tt->shape) {
    if (!given)
      return diag_set(d, MLC_ERR_INVALID, "%s: input '%s' has no shape (unknown rank): fix it with --input-shapes %s:[...]",
                      cx->path, name, name);
    t.ndim = given->ndim;
    memcpy(t.dims, given->dims, sizeof t.dims);
  } else {
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (sh->n_dim > MLC_MAX_DIMS)
      return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: input '%s' has rank %zu; mlc supports at most %d dimensions",
                      cx->path, name, sh->n_dim, MLC_MAX_DIMS);
    t.ndim = (int)sh->n_dim;
    if (given && given->ndim != t.ndim) {
      char gb[256];
      print_dims(gb, sizeof gb, given->dims, given->ndim);
      return diag_set(d, MLC_ERR_USAGE, "%s: --input-shapes %s:%s has rank %d, but input '%s' has rank %d", cx->path,
                      name, gb, given->ndim, name, t.ndim);
    }
    for (int i = 0; i < t.ndim; i++) {
      const Onnx__TensorShapeProto__Dimension *dim = sh->dim[i];
      bool is_static = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      if (is_static && dim->dim_value < 0)
        return diag_set(d, MLC_ERR_INVALID, "%s: input '%s' has a negative dimension (%lld) at dim %d", cx->path,
                        name, (long long)dim->dim_value, i);
      if (given) {
        if (is_static && given->dims[i] != dim->dim_value) {
          char gb[256];
          print_dims(gb, sizeof gb, given->dims, given->ndim);
          return diag_set(d, MLC_ERR_USAGE,
                          "%s: --input-shapes %s:%s disagrees with the model: dim %d of input '%s' is %lld", cx->path,
                          name, gb, i, name, (long long)dim->dim_value);
        }
        t.dims[i] = given->dims[i];
      } else if (is_static) {
        t.dims[i] = dim->dim_value;
      } else {
        const char *param = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param &&
                                    *dim->dim_param
                                ? dim->dim_param
                                : "?";
        return diag_set(d, MLC_ERR_INVALID,
                        "%s: input '%s' has dynamic dimension '%s' (dim %d): fix it with --input-shapes %s:[...]",
                        cx->path, name, param, i, name);
      }
    }
  }
  if (tt_nbytes(&t) > ((int64_t)1 << 40))
    return diag_set(d, MLC_ERR_INVALID, "%s: input '%s' is too large", cx->path, name);
  Value *v = ir_value_new(cx->g, name, t);
  v->is_input = true;
  vec_push(cx->arena, &cx->g->inputs, v);
  onnx_scope_put(cx->arena, &cx->scope, name, v);
  return MLC_OK;
}

/* A graph input: a tensor input, or a constant where --freeze-inputs binds it. */
static mlc_status import_tensor_input(OnnxCtx *cx, const Onnx__ValueInfoProto *vi, const OnnxImportOptions *opt,
                                      Diag *d) {
  const char *nm = S(vi->name);
  const OnnxInputShape *frozen = find_shape(opt, nm);
  if (frozen && frozen->ndim < 0)
    return diag_set(d, MLC_ERR_USAGE, "%s: --input-shapes %s:none: input '%s' is not optional", cx->path, nm, nm);
  if (!frozen || !frozen->data) return import_input(cx, vi, opt, d);
  mlc_dtype dt;
  const void *data;
  if (check_frozen(cx, vi, frozen, &dt, &data, d) != MLC_OK) return d->status;
  TensorType t = {dt, frozen->ndim, {0}};
  memcpy(t.dims, frozen->dims, sizeof t.dims);
  Value *c = ir_const_new(cx->g, nm, t, data);
  onnx_scope_put(cx->arena, &cx->scope, nm, c);
  vec_push(cx->arena, &cx->g->frozen, c);
  return MLC_OK;
}

/* whether name is "<input>.<k>", an item of the sequence-typed graph input vi */
static bool sequence_item_of(const Onnx__ValueInfoProto *vi, const char *name) {
  const char *in = S(vi->name);
  size_t n = strlen(in);
  const Onnx__TypeProto *tp = vi->type;
  if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type)
    tp = tp->optional_type->elem_type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE || strncmp(name, in, n) || name[n] != '.' ||
      !name[n + 1])
    return false;
  for (const char *p = name + n + 1; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return true;
}

/* A sequence-typed graph input X: mlc compiles sequences of a fixed length, so its items are the tensor inputs
 * X.0, X.1, ... that --input-shapes (or --freeze-inputs) names, as many as are named from X.0 on; each item has
 * the sequence's element type (and its declared shape, where the model gives one). X:[] makes it empty. */
static mlc_status import_sequence_input(OnnxCtx *cx, const Onnx__ValueInfoProto *vi, const OnnxImportOptions *opt,
                                        Diag *d) {
  const char *nm = S(vi->name);
  const Onnx__TypeProto *et = vi->type->sequence_type ? vi->type->sequence_type->elem_type : NULL;
  if (!et || et->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !et->tensor_type)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: input '%s' is a sequence of non-tensors, which mlc does not support",
                    cx->path, nm);
  VEC(Value *) items = {0};
  for (int k = 0;; k++) {
    const char *item = arena_printf(cx->arena, "%s.%d", nm, k);
    if (!find_shape(opt, item)) break;
    Onnx__ValueInfoProto ivi = *vi;
    ivi.name = (char *)item;
    ivi.type = (Onnx__TypeProto *)et;
    if (import_tensor_input(cx, &ivi, opt, d) != MLC_OK) return d->status;
    vec_push(cx->arena, &items, onnx_scope_get(&cx->scope, item));
  }
  const OnnxInputShape *whole = find_shape(opt, nm); /* NAME:[] : an empty sequence */
  if (whole && (items.n || whole->ndim || whole->data))
    return diag_set(d, MLC_ERR_USAGE, "%s: input '%s' is a sequence: --input-shapes %s:[] makes it empty; its items' "
                    "shapes are given as %s.0:[...],%s.1:[...]", cx->path, nm, nm, nm, nm);
  if (!items.n && !whole)
    return diag_set(d, MLC_ERR_INVALID, "%s: input '%s' is a sequence: give the shape of each of its items with "
                    "--input-shapes %s.0:[...],%s.1:[...] (the sequence has that many items; %s:[] for none)",
                    cx->path, nm, nm, nm, nm);
  int32_t t = et->tensor_type->has_elem_type ? et->tensor_type->elem_type : 0;
  onnx_scope_put(cx->arena, &cx->scope, nm, onnx_seq_new(cx, nm, onnx_dtype(t), items.n, items.v));
  return MLC_OK;
}

/* An optional-typed graph input X: empty where --input-shapes gives X:none, else the tensor or sequence it holds,
 * imported as such an input is. */
static mlc_status import_optional_input(OnnxCtx *cx, const Onnx__ValueInfoProto *vi, const OnnxImportOptions *opt,
                                        Diag *d) {
  const char *nm = S(vi->name);
  const OnnxInputShape *given = find_shape(opt, nm);
  if (given && given->ndim < 0) {
    onnx_scope_put(cx->arena, &cx->scope, nm, onnx_none_new(cx, nm));
    return MLC_OK;
  }
  const Onnx__TypeProto *et = vi->type->optional_type ? vi->type->optional_type->elem_type : NULL;
  Onnx__ValueInfoProto evi = *vi;
  evi.type = (Onnx__TypeProto *)et;
  if (et && et->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) return import_sequence_input(cx, &evi, opt, d);
  if (et && et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) return import_tensor_input(cx, &evi, opt, d);
  return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: input '%s' is an optional of neither a tensor nor a sequence, which "
                  "mlc does not support", cx->path, nm);
}

/* Appends v to the graph's outputs under name. The package names its outputs after the ONNX graph outputs: a
 * value named otherwise (made inside an inlined If / Loop body, a constant such as inference Dropout's mask, a
 * sequence's item) takes the output's name, unless it is an input or already another output, which get a copy
 * of that name. */
static mlc_status add_output(OnnxCtx *cx, Value *v, const char *name, Diag *d) {
  Graph *g = cx->g;
  if (strcmp(v->name, name)) {
    bool taken = v->is_input;
    for (int k = 0; k < g->outputs.n && !taken; k++) taken = g->outputs.v[k] == v;
    if (taken) {
      Node *c = ir_node_new(g, ir_op_find("copy"), name, "Identity", 0, &v, 1, 1);
      if (ir_infer_node(g, c, d) != MLC_OK) return d->status;
      v = c->outputs[0];
    }
    v->name = arena_strdup(cx->arena, name);
  }
  vec_push(cx->arena, &g->outputs, v);
  return MLC_OK;
}

/* ---- node order ---- */

static Value present; /* a sentinel: "this name is available" */

static const char *node_name(OnnxCtx *cx, const Onnx__NodeProto *np, int index) {
  if (np->name && *np->name) return np->name;
  return arena_printf(cx->arena, "%s_%d", S(np->op_type), index);
}

static bool node_ready(const OnnxCtx *cx, const OnnxScope *avail, const Onnx__NodeProto *np, const char **missing) {
  for (size_t j = 0; j < np->n_input; j++) {
    const char *in = S(np->input[j]);
    if (!*in || onnx_scope_get(&cx->scope, in) || onnx_scope_get(avail, in)) continue;
    if (missing) *missing = in;
    return false;
  }
  return true;
}

static void mark_outputs(Arena *a, OnnxScope *avail, const Onnx__NodeProto *np) {
  for (size_t j = 0; j < np->n_output; j++)
    if (np->output[j] && *np->output[j]) onnx_scope_put(a, avail, np->output[j], &present);
}

static mlc_status order_nodes(OnnxCtx *cx, const Onnx__GraphProto *gp, int *order, Diag *d) {
  int n = (int)gp->n_node;
  OnnxScope avail = {0};
  bool in_order = true;
  for (int i = 0; i < n && in_order; i++) {
    if (!node_ready(cx, &avail, gp->node[i], NULL)) in_order = false;
    mark_outputs(cx->arena, &avail, gp->node[i]);
    order[i] = i;
  }
  if (in_order) return MLC_OK;

  /* Not in topological order: emit ready nodes in repeated passes. */
  OnnxScope producer = {0}; /* output name -> 1 + node index */
  for (int i = 0; i < n; i++)
    for (size_t j = 0; j < gp->node[i]->n_output; j++)
      if (gp->node[i]->output[j] && *gp->node[i]->output[j])
        onnx_scope_put(cx->arena, &producer, gp->node[i]->output[j], (void *)(intptr_t)(i + 1));
  avail = (OnnxScope){0};
  char *done = arena_alloc(cx->arena, (size_t)n + 1);
  int count = 0;
  for (bool progress = true; count < n && progress;) {
    progress = false;
    for (int i = 0; i < n; i++) {
      if (done[i] || !node_ready(cx, &avail, gp->node[i], NULL)) continue;
      order[count++] = i;
      done[i] = 1;
      mark_outputs(cx->arena, &avail, gp->node[i]);
      progress = true;
    }
  }
  if (count == n) return MLC_OK;
  /* Follow unavailable inputs from the first stuck node: we reach either a missing tensor or a node seen
   * before (a cycle). */
  int i = 0;
  while (done[i]) i++;
  char *seen = arena_alloc(cx->arena, (size_t)n + 1);
  for (;;) {
    const Onnx__NodeProto *np = gp->node[i];
    const char *missing = "";
    node_ready(cx, &avail, np, &missing);
    int p = (int)(intptr_t)onnx_scope_get(&producer, missing) - 1;
    const char *nm = node_name(cx, np, i);
    int opset = domain_opset(cx->model, np->domain);
    if (p < 0)
      return node_error(cx, nm, S(np->op_type), opset, d, MLC_ERR_INVALID,
                        "input '%s' is not produced by any node and is not an initializer or a graph input", missing);
    if (seen[i])
      return node_error(cx, nm, S(np->op_type), opset, d, MLC_ERR_INVALID,
                        "the graph has a cycle: input '%s' depends on this node's own output", missing);
    seen[i] = 1;
    i = p;
  }
}

/* ---- Constant nodes ---- */

static mlc_status convert_constant(OnnxCtx *cx, const Onnx__NodeProto *np, const char *name, int opset, Diag *d) {
  const char *out = np->n_output ? S(np->output[0]) : "";
  if (np->n_attribute != 1)
    return node_error(cx, name, "Constant", opset, d, MLC_ERR_INVALID, "a Constant needs exactly one attribute, got %zu",
                      np->n_attribute);
  const Onnx__AttributeProto *at = np->attribute[0];
  const char *an = S(at->name);
  Value *v = NULL;
  if (!strcmp(an, "value")) {
    if (!at->t) return node_error(cx, name, "Constant", opset, d, MLC_ERR_INVALID, "attribute 'value' has no tensor");
    v = onnx_tensor_const(cx, at->t, out, d);
    if (!v) return d->status;
  } else if (!strcmp(an, "value_float")) {
    float f = at->f;
    v = ir_const_new(cx->g, out, (TensorType){MLC_F32, 0, {0}}, &f);
  } else if (!strcmp(an, "value_int")) {
    int64_t i = at->i;
    v = ir_const_new(cx->g, out, (TensorType){MLC_I64, 0, {0}}, &i);
  } else if (!strcmp(an, "value_floats")) {
    v = ir_const_new(cx->g, out, (TensorType){MLC_F32, 1, {(int64_t)at->n_floats}}, at->floats);
  } else if (!strcmp(an, "value_ints")) {
    v = ir_const_new(cx->g, out, (TensorType){MLC_I64, 1, {(int64_t)at->n_ints}}, at->ints);
  } else if (!strcmp(an, "value_string") || !strcmp(an, "value_strings") || !strcmp(an, "sparse_value")) {
    return node_error(cx, name, "Constant", opset, d, MLC_ERR_UNSUPPORTED,
                      "Constant with attribute '%s' is not supported (string and sparse tensors)", an);
  } else {
    return node_error(cx, name, "Constant", opset, d, MLC_ERR_INVALID, "unknown Constant attribute '%s'", an);
  }
  if (*out) onnx_scope_put(cx->arena, &cx->scope, out, v);
  return MLC_OK;
}

/* ---- converting one node ---- */

/* Small integer values computed from constants only (exported models' shape arithmetic: Shape -> Gather ->
 * Concat -> Reshape) are folded before a converter sees them, so attributes that must be known at compile
 * time can be read from them. The folded constant replaces the value in the scope for later nodes too. */
static mlc_status fold_shape_value(OnnxCtx *cx, const char *name, Value **slot, Diag *d) {
  Value *v = *slot;
  mlc_dtype t = v->type.dtype;
  if (v->data || !v->producer || (t != MLC_I64 && t != MLC_I32 && t != MLC_BOOL) || tt_numel(&v->type) > 4096)
    return MLC_OK;
  void *data;
  OnnxSymShape s;
  if (onnx_sym_shape(cx, v, &s) && s.at < 0 && !s.bounded && s.n == tt_numel(&v->type)) {
    /* computed at run time from a data-dependent value's shape, but only from what is static about it */
    int64_t i64[MLC_MAX_DIMS];
    int32_t *i32 = (int32_t *)i64;
    uint8_t *u8 = (uint8_t *)i64;
    for (int i = 0; i < s.n; i++)
      if (t == MLC_I64) i64[i] = s.dims[i];
      else if (t == MLC_I32) i32[i] = (int32_t)s.dims[i];
      else u8[i] = s.dims[i] != 0;
    Value *c = ir_const_new(cx->g, name, v->type, i64);
    onnx_scope_put(cx->arena, &cx->scope, name, c);
    *slot = c;
    return MLC_OK;
  }
  mlc_status st = pass_evaluate(cx->g, v, &data, d);
  if (st == MLC_ERR_UNSUPPORTED && diag_ok(d)) return MLC_OK; /* depends on an input: not constant */
  if (st != MLC_OK) return st;
  Value *c = ir_const_new(cx->g, name, v->type, data);
  onnx_scope_put(cx->arena, &cx->scope, name, c);
  *slot = c;
  return MLC_OK;
}

/* The ops that may see a sequence or an empty optional (convert_sequence.c) as an input: the sequence and
 * optional ops, Identity, and Loop / If, whose bodies are inlined with it in scope. */
static bool takes_sequences(const OnnxNode *n) {
  static const char *const ops[] = {"SequenceConstruct", "SequenceLength", "SequenceAt", "SequenceInsert",
                                    "SequenceErase", "ConcatFromSequence", "SequenceMap", "Identity", "Loop", "If",
                                    "Optional", "OptionalHasElement", "OptionalGetElement"};
  if (*n->domain) return false;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(n->op_type, ops[i])) return true;
  return false;
}

/* whether the graph ops emitted for node n read the run-time extent of one of its inputs */
static bool reads_extent(const OnnxCtx *cx, const OnnxNode *n) {
  for (int k = cx->first_new_node; k < cx->g->nodes.n; k++) {
    const Node *nd = cx->g->nodes.v[k];
    for (int i = 0; i < nd->ninputs; i++)
      for (int j = 0; j < n->ninputs; j++)
        if (nd->inputs[i] && n->inputs[j] && n->inputs[j]->dyn_extent == nd->inputs[i]) return true;
  }
  return false;
}

static mlc_status convert_node(OnnxCtx *cx, const Onnx__NodeProto *np, const char *name, int opset, OnnxConvertFn fn,
                               Diag *d) {
  Arena *a = cx->arena;
  const char *op_type = S(np->op_type);
  OnnxNodeRef *ref = arena_alloc(a, sizeof *ref);
  ref->np = np;
  ref->cx = cx;
  mlc_status st;
  OnnxNode on = {.name = name, .op_type = op_type, .domain = default_domain(np->domain) ? "" : np->domain,
                 .opset = opset, .ninputs = (int)np->n_input, .noutputs = (int)np->n_output, .proto = ref};
  on.inputs = arena_alloc(a, sizeof(Value *) * (np->n_input + 1));
  const Value *dyn_in = NULL; /* the first input with a data-dependent extent */
  for (size_t j = 0; j < np->n_input; j++) {
    const char *in = S(np->input[j]);
    if (!*in) continue;
    on.inputs[j] = onnx_scope_get(&cx->scope, in);
    if (!on.inputs[j])
      return node_error(cx, name, op_type, opset, d, MLC_ERR_INVALID, "input '%s' is not defined", in);
    /* a data-dependent shape is not a constant: its static type is only an upper bound */
    if (on.inputs[j]->dyn_extent) {
      if (!dyn_in) dyn_in = on.inputs[j];
    } else if ((st = fold_shape_value(cx, in, &on.inputs[j], d)) != MLC_OK) {
      return st;
    }
    if (onnx_is_none(on.inputs[j]) && !takes_sequences(&on))
      return node_error(cx, name, op_type, opset, d, MLC_ERR_INVALID, "input '%s' is an empty optional; %s takes "
                        "values", in, op_type);
    if (onnx_seq(on.inputs[j]) && !takes_sequences(&on))
      return node_error(cx, name, op_type, opset, d, MLC_ERR_UNSUPPORTED, "input '%s' is a sequence; %s takes tensors", in,
                        op_type);
  }
  on.output_names = arena_alloc(a, sizeof(char *) * (np->n_output + 1));
  for (size_t j = 0; j < np->n_output; j++) {
    on.output_names[j] = S(np->output[j]);
    if (*on.output_names[j] && onnx_scope_get(&cx->scope, on.output_names[j]))
      return node_error(cx, name, op_type, opset, d, MLC_ERR_INVALID, "output '%s' is already defined",
                        on.output_names[j]);
  }
  Value **outs = arena_alloc(a, sizeof(Value *) * (np->n_output + 1));
  cx->first_new_node = cx->g->nodes.n;
  cx->extent_free = false;
  st = fn(cx, &on, outs, d);
  if (st == MLC_OK && !diag_ok(d)) st = d->status;
  if (st != MLC_OK) {
    if (diag_ok(d)) node_error(cx, name, op_type, opset, d, st, "conversion failed");
    return d->status;
  }
  for (int j = 0; j < on.noutputs; j++) {
    const char *on_name = on.output_names[j];
    if (!*on_name) continue;
    Value *v = outs[j];
    if (!v)
      return node_error(cx, name, op_type, opset, d, MLC_ERR_INTERNAL, "the converter did not produce output %d ('%s')",
                        j, on_name);
    /* The graph ops a converter emits carry a data-dependent extent by their rules (src/ir/dynamic.c) or
     * refuse it. An output without one, of a node that read one, was computed from the static upper bound
     * (a constant from the bound) unless the converter read the run-time extent itself (Shape, Size,
     * reductions and TopK over the dynamic axis) or checked that the output does not depend on it. */
    if (dyn_in && !v->dyn_extent && !cx->extent_free && !reads_extent(cx, &on))
      return ir_dynamic_use_error(cx->g, dyn_in, name, op_type,
                                  "its result would be computed from the static upper bound, not the run's shape", d);
    bool fresh = false; /* made by this conversion: takes the ONNX tensor name */
    for (int k = cx->first_new_node; k < cx->g->nodes.n && !fresh; k++) fresh = v->producer == cx->g->nodes.v[k];
    if (fresh) v->name = arena_strdup(a, on_name);
    onnx_scope_put(a, &cx->scope, on_name, v);
  }
  onnx_sym_propagate(cx, &on, outs);
  return MLC_OK;
}

/* ---- subgraphs (If / Loop / Scan bodies) ---- */

/* the GRAPH attribute attr of n, or NULL */
static const Onnx__GraphProto *body_of(const OnnxNode *n, const char *attr) {
  const Onnx__NodeProto *np = ((const OnnxNodeRef *)n->proto)->np;
  for (size_t i = 0; i < np->n_attribute; i++)
    if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, attr)) return np->attribute[i]->g;
  return NULL;
}

int onnx_body_ninputs(const OnnxNode *n, const char *attr) {
  const Onnx__GraphProto *gp = body_of(n, attr);
  return gp ? (int)gp->n_input : -1;
}

mlc_dtype onnx_body_output_dtype(const OnnxNode *n, const char *attr, int k) {
  const Onnx__GraphProto *gp = body_of(n, attr);
  if (!gp || k < 0 || (size_t)k >= gp->n_output || !gp->output[k]->type) return MLC_UNDEF;
  const Onnx__TypeProto *tp = gp->output[k]->type;
  if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && tp->sequence_type) tp = tp->sequence_type->elem_type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
      !tp->tensor_type->has_elem_type)
    return MLC_UNDEF;
  return onnx_dtype(tp->tensor_type->elem_type);
}

/* Inlines a GRAPH attribute into the graph being built (see onnx.h). The body sees the outer scope plus its
 * own initializers and formal inputs; its names are dropped again afterwards (the scope is restored), so the
 * same body can be inlined once per unrolled iteration. Node names get "<node>/<tag>/" in front. */
mlc_status onnx_inline_graph(OnnxCtx *cx, const OnnxNode *n, const char *attr, const char *tag, int nbind,
                             Value **bind, int *nout, Value ***outs, Diag *d) {
  Arena *a = cx->arena;
  const Onnx__GraphProto *gp = body_of(n, attr);
  if (!gp) return onnx_error(cx, n, d, MLC_ERR_INVALID, "graph attribute '%s' is missing", attr);
  if ((int)gp->n_input != nbind)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "body '%s' has %zu inputs, expected %d", attr, gp->n_input, nbind);
  OnnxScope saved = cx->scope;
  int saved_first = cx->first_new_node;
  OnnxScope copy = saved;
  if (saved.cap) {
    copy.keys = arena_memdup(a, saved.keys, sizeof(char *) * (size_t)saved.cap);
    copy.vals = arena_memdup(a, saved.vals, sizeof(void *) * (size_t)saved.cap);
  }
  cx->scope = copy;
  mlc_status st = MLC_OK;
  for (size_t i = 0; i < gp->n_initializer && !st; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    Value *v = t->name ? onnx_tensor_const(cx, t, t->name, d) : NULL;
    if (!v) st = d->status ? d->status : onnx_error(cx, n, d, MLC_ERR_INVALID, "body initializer without a name");
    else onnx_scope_put(a, &cx->scope, t->name, v);
  }
  for (int i = 0; i < nbind && !st; i++) {
    if (!bind[i]) continue; /* an absent optional input */
    onnx_scope_put(a, &cx->scope, S(gp->input[i]->name), bind[i]);
  }
  int nn = (int)gp->n_node;
  int *order = arena_alloc(a, sizeof(int) * (size_t)(nn + 1));
  if (!st) st = order_nodes(cx, gp, order, d);
  for (int k = 0; k < nn && !st; k++) {
    const Onnx__NodeProto *bp = gp->node[order[k]];
    const char *name = arena_printf(a, "%s/%s/%s", n->name, tag, node_name(cx, bp, order[k]));
    int opset = domain_opset(cx->model, bp->domain);
    if (default_domain(bp->domain) && !strcmp(S(bp->op_type), "Constant")) {
      st = convert_constant(cx, bp, name, opset, d);
      continue;
    }
    OnnxConvertFn fn = find_converter(S(bp->domain), S(bp->op_type));
    if (!fn)
      st = node_error(cx, name, S(bp->op_type), opset, d, MLC_ERR_UNSUPPORTED, "unsupported op '%s' in body '%s'",
                      S(bp->op_type), attr);
    else
      st = convert_node(cx, bp, name, opset, fn, d);
  }
  Value **res = arena_alloc(a, sizeof(Value *) * (gp->n_output + 1));
  for (size_t i = 0; i < gp->n_output && !st; i++) {
    const char *nm = S(gp->output[i]->name);
    res[i] = onnx_scope_get(&cx->scope, nm);
    if (!res[i]) st = onnx_error(cx, n, d, MLC_ERR_INVALID, "body output '%s' is not defined", nm);
    else st = fold_shape_value(cx, nm, &res[i], d); /* a loop condition computed from constants */
  }
  cx->scope = saved;
  cx->first_new_node = saved_first;
  if (st) return st;
  *nout = (int)gp->n_output;
  *outs = res;
  return MLC_OK;
}

/* ---- the model ---- */

typedef struct Unsupported {
  const char *op; /* "Abs" or "com.microsoft.Foo" */
  const char *node;
  int opset, count;
} Unsupported;

static mlc_status import_graph(OnnxCtx *cx, const Onnx__GraphProto *gp, const OnnxImportOptions *opt, Diag *d) {
  Arena *a = cx->arena;
  Graph *g = cx->g;
  /* initializers: constants */
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!t->name || !*t->name) return diag_set(d, MLC_ERR_INVALID, "%s: initializer %zu has no name", cx->path, i);
    if (onnx_scope_get(&cx->scope, t->name))
      return diag_set(d, MLC_ERR_INVALID, "%s: initializer '%s' is defined twice", cx->path, t->name);
    Value *v = onnx_tensor_const(cx, t, t->name, d);
    if (!v) return d->status;
    onnx_scope_put(a, &cx->scope, t->name, v);
  }
  if (gp->n_sparse_initializer)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: sparse initializers are not supported", cx->path);
  /* --input-shapes must name real inputs */
  for (int k = 0; opt && k < opt->ninput_shapes; k++) {
    const char *nm = opt->input_shapes[k].name;
    bool found = false;
    for (size_t i = 0; i < gp->n_input && !found; i++)
      found = !strcmp(S(gp->input[i]->name), nm) || sequence_item_of(gp->input[i], nm);
    if (found && onnx_scope_get(&cx->scope, nm))
      return diag_set(d, MLC_ERR_USAGE, "%s: %s names '%s', which is an initializer (a constant), not an input",
                      cx->path, opt->input_shapes[k].data ? "--freeze-inputs" : "--input-shapes", nm);
    if (!found) {
      char list[1024] = "";
      size_t len = 0;
      for (size_t i = 0; i < gp->n_input && len < sizeof list; i++)
        if (!onnx_scope_get(&cx->scope, S(gp->input[i]->name)))
          len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", len ? ", " : "", S(gp->input[i]->name));
      return diag_set(d, MLC_ERR_USAGE, "%s: %s names '%s', which is not an input of the model (inputs: %s)",
                      cx->path, opt->input_shapes[k].data ? "--freeze-inputs" : "--input-shapes", nm, len ? list : "none");
    }
  }
  /* inputs */
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    const char *nm = S(vi->name);
    if (!*nm) return diag_set(d, MLC_ERR_INVALID, "%s: graph input %zu has no name", cx->path, i);
    Value *prev = onnx_scope_get(&cx->scope, nm);
    if (prev && prev->data) continue; /* an initializer: a constant */
    if (prev) return diag_set(d, MLC_ERR_INVALID, "%s: graph input '%s' is listed twice", cx->path, nm);
    if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
      if (import_sequence_input(cx, vi, opt, d) != MLC_OK) return d->status;
      continue;
    }
    if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
      if (import_optional_input(cx, vi, opt, d) != MLC_OK) return d->status;
      continue;
    }
    if (import_tensor_input(cx, vi, opt, d) != MLC_OK) return d->status;
  }
  /* node order, converters and unsupported ops */
  int n = (int)gp->n_node;
  int *order = arena_alloc(a, sizeof(int) * (size_t)(n + 1));
  if (order_nodes(cx, gp, order, d) != MLC_OK) return d->status;
  OnnxConvertFn *fns = arena_alloc(a, sizeof(OnnxConvertFn) * (size_t)(n + 1));
  VEC(Unsupported) unsup = {0};
  for (int i = 0; i < n; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    const char *op_type = S(np->op_type);
    if (!*op_type)
      return diag_set(d, MLC_ERR_INVALID, "%s: node '%s' has no op_type", cx->path, node_name(cx, np, i));
    if (default_domain(np->domain) && !strcmp(op_type, "Constant")) continue;
    fns[i] = find_converter(S(np->domain), op_type);
    if (fns[i]) continue;
    const char *key = default_domain(np->domain) ? op_type : arena_printf(a, "%s.%s", np->domain, op_type);
    int k = 0;
    while (k < unsup.n && strcmp(unsup.v[k].op, key)) k++;
    if (k < unsup.n) unsup.v[k].count++;
    else vec_push(a, &unsup, ((Unsupported){key, node_name(cx, np, i), domain_opset(cx->model, np->domain), 1}));
  }
  for (int k = 0; k < unsup.n; k++) {
    const Unsupported *u = &unsup.v[k];
    char more[64] = "";
    if (u->count > 1) snprintf(more, sizeof more, " (and %d more node%s)", u->count - 1, u->count > 2 ? "s" : "");
    if (k == 0)
      diag_set(d, MLC_ERR_UNSUPPORTED, "%s: unsupported op '%s' (opset %d) at node '%s'%s", cx->path, u->op, u->opset,
               u->node, more);
    else
      diag_append(d, "; unsupported op '%s' (opset %d) at node '%s'%s", u->op, u->opset, u->node, more);
  }
  if (unsup.n) return MLC_ERR_UNSUPPORTED;
  /* convert */
  for (int k = 0; k < n; k++) {
    int i = order[k];
    const Onnx__NodeProto *np = gp->node[i];
    const char *name = node_name(cx, np, i);
    int opset = domain_opset(cx->model, np->domain);
    mlc_status st = fns[i] ? convert_node(cx, np, name, opset, fns[i], d) : convert_constant(cx, np, name, opset, d);
    if (st != MLC_OK) return st;
  }
  /* outputs */
  if (gp->n_output == 0) return diag_set(d, MLC_ERR_INVALID, "%s: the graph has no outputs", cx->path);
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    const char *nm = S(vi->name);
    Value *v = onnx_scope_get(&cx->scope, nm);
    if (!v)
      return diag_set(d, MLC_ERR_INVALID, "%s: graph output '%s' is not produced by any node, initializer or input",
                      cx->path, nm);
    if (onnx_is_none(v)) continue; /* an empty optional: no output */
    const OnnxSeq *seq = onnx_seq(v);
    if (seq) { /* a sequence of a fixed length: its items are the outputs NAME.0, NAME.1, ... */
      for (int k = 0; k < seq->n; k++)
        if (add_output(cx, seq->items[k], arena_printf(a, "%s.%d", nm, k), d) != MLC_OK) return d->status;
      continue;
    }
    const Onnx__TypeProto *tp = vi->type;
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
        tp->tensor_type->has_elem_type && tp->tensor_type->elem_type &&
        onnx_dtype(tp->tensor_type->elem_type) != v->type.dtype)
      return diag_set(d, MLC_ERR_INTERNAL, "%s: graph output '%s' has type %s after import, but the model declares %s",
                      cx->path, nm, mlc_dtype_name(v->type.dtype), onnx_dtype_name(tp->tensor_type->elem_type));
    if (add_output(cx, v, nm, d) != MLC_OK) return d->status;
  }
  if (g->outputs.n == 0) return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: the graph's outputs are empty sequences or "
                                         "optionals", cx->path);
  return ir_verify(g, d);
}

static mlc_status import_model(Arena *a, const char *path, const Onnx__ModelProto *m, const OnnxImportOptions *opt,
                               Graph **out, Diag *d) {
  if (!m->has_ir_version || m->ir_version <= 0)
    return diag_set(d, MLC_ERR_INVALID, "%s: not a valid ONNX model (no ir_version)", path);
  if (m->ir_version < 3)
    return diag_set(d, MLC_ERR_UNSUPPORTED,
                    "%s: ONNX IR version %lld predates opset imports (IR version 3); re-export the model", path,
                    (long long)m->ir_version);
  if (!m->graph) return diag_set(d, MLC_ERR_INVALID, "%s: the model has no graph", path);
  /* The default domain's opset is required, except in a model whose nodes all come from other domains
   * (ai.onnx.ml, ai.onnx.preview.training, ...). */
  bool has_default = false, uses_default = m->n_opset_import == 0;
  for (size_t i = 0; i < m->n_opset_import; i++) has_default |= default_domain(m->opset_import[i]->domain);
  for (size_t i = 0; i < m->graph->n_node; i++) uses_default |= default_domain(m->graph->node[i]->domain);
  if (!has_default && uses_default)
    return diag_set(d, MLC_ERR_INVALID, "%s: the model imports no opset of the default ONNX domain", path);
  OnnxCtx *cx = arena_alloc(a, sizeof *cx);
  cx->arena = a;
  cx->path = arena_strdup(a, path);
  cx->dir = onnx_dir_of(a, path);
  cx->model = m;
  cx->opset = domain_opset(m, "");
  cx->g = ir_graph_new(a, path);
  mlc_status st = import_graph(cx, m->graph, opt, d);
  cx->model = NULL; /* freed by the caller */
  if (st == MLC_OK) *out = cx->g;
  return st;
}

mlc_status onnx_import_file(Arena *a, const char *path, const OnnxImportOptions *opt, Graph **out, Diag *d) {
  *out = NULL;
  topi_register_ops(); /* converters emit registered graph ops */
  void *buf = NULL;
  size_t size = 0;
  if (file_read(path, &buf, &size, d) != MLC_OK) return d->status;
  if (onnx_check_nesting(buf, size, &onnx__model_proto__descriptor, ONNX_MAX_NESTING, path, d) != MLC_OK) {
    free(buf);
    return d->status;
  }
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, buf);
  free(buf);
  if (!m) return diag_set(d, MLC_ERR_INVALID, "%s: not a valid ONNX model (protobuf parse failed)", path);
  mlc_status st = import_model(a, path, m, opt, out, d);
  onnx__model_proto__free_unpacked(m, NULL);
  return st;
}
