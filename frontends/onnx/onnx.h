/* frontends/onnx: reads an ONNX ModelProto (protobuf-c, schema in onnx.proto) into the graph IR.
 *
 * import.c reads and checks the model (also external data files beside it, never outside the model's
 * folder), turns initializers and Constant nodes into constant Values, then converts nodes in order: each
 * ONNX op type has a converter (one table per op family, convert_*.c, listed in families.def) that maps the
 * node onto registered graph ops, normalising every opset's attributes and inputs (Split's `split` as
 * attribute before opset 13 and as input after, and so on). Converters never compute tensor data; they emit
 * graph nodes whose types are inferred on the spot. Unknown ops are collected and reported all at once:
 *   model.onnx: unsupported op 'Foo' (opset 13) at node 'n1'; unsupported op 'Bar' (opset 13) at node 'n7' */
#ifndef MLC_ONNX_H
#define MLC_ONNX_H
#include "ir/ir.h"

typedef struct OnnxInputShape {
  const char *name;
  int ndim;
  int64_t dims[MLC_MAX_DIMS];
  /* Optional: bind the input to this value (dtype and dims as given), making it a constant ("freezing" it,
   * as tools do for shape-like inputs such as Reshape's shape or Reduce's axes). */
  mlc_dtype dtype;
  const void *data;
} OnnxInputShape;

typedef struct OnnxImportOptions {
  int ninput_shapes; /* --input-shapes name:[1,3,224,224] fixes dynamic dims */
  const OnnxInputShape *input_shapes;
} OnnxImportOptions;

mlc_status onnx_import_file(Arena *a, const char *path, const OnnxImportOptions *opt, Graph **out, Diag *d);
/* Parses "data:[1,3,224,224],mask:[1,128]" into shapes allocated in a. */
mlc_status onnx_parse_input_shapes(Arena *a, const char *spec, OnnxImportOptions *opt, Diag *d);
/* Reads a serialized TensorProto (the conformance tests' input_N.pb / output_N.pb). */
mlc_status onnx_read_tensor_file(Arena *a, const char *path, const char **name, TensorType *type, void **data,
                                 Diag *d);
/* Reads a serialized SequenceProto of tensors: its *n items' types and data, in a. */
mlc_status onnx_read_sequence_file(Arena *a, const char *path, int *n, TensorType **types, void ***data, Diag *d);
/* Reads a serialized OptionalProto: empty, a tensor (*n 1) or a sequence of tensors (*n items). */
typedef enum { ONNX_OPTIONAL_EMPTY, ONNX_OPTIONAL_TENSOR, ONNX_OPTIONAL_SEQUENCE } OnnxOptionalKind;
mlc_status onnx_read_optional_file(Arena *a, const char *path, OnnxOptionalKind *kind, int *n, TensorType **types,
                                   void ***data, Diag *d);

/* ---- the converter interface, used by convert_*.c ---- */
typedef struct OnnxCtx OnnxCtx; /* the graph being built, the model's opsets, the current node */

typedef struct OnnxNode {
  const char *name;
  const char *op_type;
  const char *domain; /* "" for the default domain */
  int opset;          /* opset version of the node's domain */
  int ninputs;
  Value **inputs;     /* NULL where an optional input is absent ("") */
  int noutputs;       /* outputs named by the node (a trailing optional output may be absent: name "") */
  const char **output_names;
  const void *proto;  /* the NodeProto, for the attribute getters below */
} OnnxNode;

/* Fill outs[0..n->noutputs) with the values of the node's outputs (NULL for outputs not named). */
typedef mlc_status (*OnnxConvertFn)(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d);

typedef struct OnnxConverter {
  const char *op_type;
  const char *domain; /* "" default, "com.microsoft", ... */
  OnnxConvertFn fn;
} OnnxConverter;

/* Attribute getters on the ONNX node. */
bool onnx_has_attr(const OnnxNode *n, const char *name);
int64_t onnx_attr_int(const OnnxNode *n, const char *name, int64_t dflt);
double onnx_attr_float(const OnnxNode *n, const char *name, double dflt);
const char *onnx_attr_string(const OnnxNode *n, const char *name, const char *dflt);
/* Number of ints (-1 if the attribute is absent); copies at most max into out. */
int onnx_attr_ints(const OnnxNode *n, const char *name, int64_t *out, int max);
int onnx_attr_floats(const OnnxNode *n, const char *name, double *out, int max);
/* Number of strings (-1 if absent); copies at most max (NUL-terminated, in the graph's arena) into out. */
int onnx_attr_strings(const OnnxNode *n, const char *name, const char **out, int max);
/* A TENSOR attribute as a constant value (NULL if absent). */
Value *onnx_attr_tensor(OnnxCtx *cx, const OnnxNode *n, const char *name, Diag *d);
/* A GRAPH attribute imported as a subgraph sharing the outer scope (NULL if absent). */
Graph *onnx_attr_graph(OnnxCtx *cx, const OnnxNode *n, const char *name, Diag *d);

/* Inlines the GRAPH attribute attr of n (an If branch, a Loop or Scan body) into the graph being built: its
 * formal inputs are bound to bind[0..nbind) (NULL: absent), outer-scope names stay visible, its nodes are
 * converted as usual (node names prefixed "<node>/<tag>/"), and *outs receives its *nout outputs (small
 * integer/bool outputs computed from constants are folded). Call it once per unrolled iteration. */
mlc_status onnx_inline_graph(OnnxCtx *cx, const OnnxNode *n, const char *attr, const char *tag, int nbind,
                             Value **bind, int *nout, Value ***outs, Diag *d);
/* The element type the GRAPH attribute attr of n declares for its output k (a tensor's, or a sequence's
 * items'), MLC_UNDEF where it declares none. */
mlc_dtype onnx_body_output_dtype(const OnnxNode *n, const char *attr, int k);
/* The number of inputs of the GRAPH attribute attr of n, -1 when n has no such attribute. */
int onnx_body_ninputs(const OnnxNode *n, const char *attr);

/* Emits a graph node applying graph op `op` (looked up in the registry) to ins, named after the ONNX node.
 * Set attributes with ir_set_* on the returned node BEFORE calling
 * onnx_finish; onnx_finish infers types and returns the status (errors name the ONNX node). */
Node *onnx_emit(OnnxCtx *cx, const OnnxNode *n, const char *op, int nin, Value **ins, int nout, Diag *d);
mlc_status onnx_finish(OnnxCtx *cx, const OnnxNode *n, Node *node, Diag *d);
/* onnx_finish of a one-output node (NULL: the failed emit's status), its output in *out (unless out is NULL) */
mlc_status onnx_finish_one(OnnxCtx *cx, const OnnxNode *n, Node *node, Value **out, Diag *d);
/* onnx_finish of a node whose outputs all map onto the ONNX node's, in order (outs[i] for each output named) */
mlc_status onnx_finish_all(OnnxCtx *cx, const OnnxNode *n, Node *node, Value **outs, Diag *d);
/* axis in [-ndim, ndim) made non-negative; else an error naming the node */
mlc_status onnx_norm_axis(OnnxCtx *cx, const OnnxNode *n, int64_t *axis, int ndim, Diag *d);
/* The default-domain op op_type at opset on ins (with n's attributes, or none), as its converter makes it: its
 * first output in *out. For ops defined as others around a float op (com.microsoft's QLinearAdd, ...). */
mlc_status onnx_convert_as(OnnxCtx *cx, const OnnxNode *n, const char *op_type, int opset, bool attrs, int nin,
                           Value **ins, Value **out, Diag *d);
/* the first k inputs must be present */
mlc_status onnx_need_inputs(OnnxCtx *cx, const OnnxNode *n, int k, Diag *d);
/* A rank-0 constant of dtype t holding v, named "<node>_<what>" (NULL for a non-numeric dtype). */
Value *onnx_scalar(OnnxCtx *cx, const OnnxNode *n, const char *what, mlc_dtype t, double v);
/* A new constant (for converters that need one, e.g. Gemm's alpha as a scalar). */
Value *onnx_const(OnnxCtx *cx, const char *name, TensorType t, const void *data);
Graph *onnx_graph(OnnxCtx *cx);

/* Data-dependent extents read at run time (src/ir/dynamic.c). onnx_dyn_mask: x with the padding past its
 * extent set to fill ("zero", "one", "lowest", "highest"), a static value (x itself when it has no extent).
 * onnx_dyn_pack: pieces concatenated along axis, each piece's first extents[i] slices packed at the running
 * offset (extents NULL or extents[i] NULL: the piece's own extent along axis, or its whole static length); the
 * result carries the sum of the extents. onnx_extent_const: an int64 [1] constant. onnx_binary: one
 * broadcasting binary graph op. onnx_extent_free: the converter checked that its static outputs do not
 * depend on its inputs' extents (the importer otherwise refuses a static output computed from a
 * data-dependent input without reading the extent). */
Value *onnx_dyn_mask(OnnxCtx *cx, const OnnxNode *n, Value *x, const char *fill, Diag *d);
Value *onnx_dyn_pack(OnnxCtx *cx, const OnnxNode *n, int axis, int np, Value **pieces, Value **extents, Diag *d);
Value *onnx_extent_const(OnnxCtx *cx, int64_t v);
Value *onnx_binary(OnnxCtx *cx, const OnnxNode *n, const char *op, Value *a, Value *b, Diag *d);
/* One graph op on ins (NULL when an input is: the failure of the step that made it), with the integer attribute
 * attr = v unless attr is NULL: its first output, or NULL with d set. */
Value *onnx_apply(OnnxCtx *cx, const OnnxNode *n, const char *op, int nin, Value **ins, const char *attr, int64_t v,
                  Diag *d);
void onnx_extent_free(OnnxCtx *cx);
/* Shape of a value x with a data-dependent extent is a run-time value, followed through the shape arithmetic
 * of exported models (sym_shape.c). onnx_sym_shape gives such a value's elements: n of them, dims[at] is the
 * one that is the run-time extent (its static bound in dims; at -1 when no element is), extent the int64 [1]
 * extent value and of the data-dependent value whose shape it is. An element with its bit set in `bounded`
 * was computed from the extent (min(1000, n) for a TopK's K): dims holds only an upper bound of it. With
 * at -1 and no bounded element the value is known at compile time. False when v is not such a value. */
typedef struct OnnxSymShape {
  int n, at;
  unsigned bounded;
  int64_t dims[MLC_MAX_DIMS];
  Value *extent, *of;
} OnnxSymShape;
bool onnx_sym_shape(OnnxCtx *cx, const Value *v, OnnxSymShape *s);
/* Slice's start / end of one axis of length dim (negative ones count from its end) clamped as the ONNX spec
 * does for a step > 0 ([0, dim]) or < 0 ([-1, dim - 1]). */
void onnx_slice_clamp(int64_t *b, int64_t *e, int64_t step, int64_t dim);
/* Values of a constant integer tensor (int32/int64) as int64; -1 if v is not a compile-time constant. */
int onnx_const_ints(const Value *v, int64_t *out, int max);
/* The graph inputs that vs[0..nv) are computed from, as "'a', 'b'" ("" when none): errors asking for values at
 * compile time name them, so the user (or the conformance runner) knows which inputs to freeze. */
const char *onnx_input_deps(OnnxCtx *cx, int nv, Value *const *vs);
/* The first value with a data-dependent extent that v is computed from (v itself if it has one), or NULL: an
 * input that must be known at compile time but depends on a run-time length is refused naming it. */
const Value *onnx_dyn_source(OnnxCtx *cx, const Value *v);
/* Sequences exist only during import (convert_sequence.c): a sequence value is a Value outside the graph (id -1,
 * dtype MLC_UNDEF) whose items are tensors of the graph; onnx_seq gives its list, NULL for a tensor. */
typedef struct OnnxSeq {
  Value v;     /* what the scope holds; must stay first */
  mlc_dtype elem;
  int n;
  Value **items;
  bool none;   /* an empty optional (onnx_none_new), not a sequence */
} OnnxSeq;
Value *onnx_seq_new(OnnxCtx *cx, const char *name, mlc_dtype elem, int n, Value *const *items);
const OnnxSeq *onnx_seq(const Value *v);
/* Optionals exist only during import too: an optional holding a value is that value (a tensor or a sequence);
 * an empty one is the none value, which onnx_is_none tells. */
Value *onnx_none_new(OnnxCtx *cx, const char *name);
/* The value the name stands for where the node being converted is (NULL: none). */
Value *onnx_lookup(OnnxCtx *cx, const char *name);
bool onnx_is_none(const Value *v);
/* The error for a node: "model.onnx: node 'x' (Conv, opset 11): error: <fmt>" with status. */
mlc_status onnx_error(OnnxCtx *cx, const OnnxNode *n, Diag *d, mlc_status st, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
