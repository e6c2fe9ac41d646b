/* frontends/onnx internal interface, shared by import.c (model and graph import), tensor.c (TensorProto
 * decoding and external data) and helpers.c (the converter helpers of onnx.h). Converters see only onnx.h. */
#ifndef MLC_ONNX_INTERNAL_H
#define MLC_ONNX_INTERNAL_H
#include "frontends/onnx/onnx.h"
#include "frontends/onnx/onnx.pb-c.h"

/* name -> pointer map (open addressing, FNV-1a, in the arena): the ONNX tensor names in scope */
typedef struct OnnxScope {
  const char **keys;
  void **vals;
  int cap, n;
} OnnxScope;

struct OnnxCtx {
  Arena *arena;
  Graph *g;
  const char *path;    /* the model file, first word of every message */
  const char *dir;     /* its folder: external data is read from here and never from outside it */
  int64_t opset;       /* the default domain's opset */
  const Onnx__ModelProto *model;
  OnnxScope scope;
  int first_new_node;  /* g->nodes.n when the current ONNX node's conversion began */
  int nconst;          /* for generated constant names */
  bool extent_free;    /* set by the current converter: see onnx_extent_free */
  /* the run-time shape values followed symbolically (sym_shape.c) */
  struct { const Value *v; OnnxSymShape s; } *shapes;
  int nshapes, capshapes;
};

/* sym_shape.c: records the symbolic shapes of n's outputs after its conversion */
void onnx_sym_propagate(OnnxCtx *cx, const OnnxNode *n, Value **outs);
void onnx_note_sym(OnnxCtx *cx, const Value *v, const OnnxSymShape *s);

/* What OnnxNode.proto points to: the NodeProto and the context (the getters copy strings into its arena). */
typedef struct OnnxNodeRef {
  const Onnx__NodeProto *np;
  OnnxCtx *cx;
} OnnxNodeRef;

void *onnx_scope_get(const OnnxScope *s, const char *name);
void onnx_scope_put(Arena *a, OnnxScope *s, const char *name, void *v);

/* ONNX data type -> mlc dtype; MLC_UNDEF when mlc has no such element type. */
mlc_dtype onnx_dtype(int32_t onnx_type);
const char *onnx_dtype_name(int32_t onnx_type);
/* The type of a TensorProto (checks dims, data type and size overflow). what names it in messages. */
mlc_status onnx_tensor_type(const Onnx__TensorProto *t, const char *file, const char *what, TensorType *out,
                            Diag *d);
/* Decodes a TensorProto's data into dst (tt_nbytes(type) bytes): raw_data, typed fields or external data
 * read from dir (relative paths inside dir only). */
mlc_status onnx_tensor_data(const Onnx__TensorProto *t, const TensorType *type, const char *file, const char *dir,
                            const char *what, void *dst, Diag *d);
/* The folder of a file path ("." when it has none), in a. */
char *onnx_dir_of(Arena *a, const char *path);
/* nesting.c: refuses (MLC_ERR_INVALID) wire data whose messages nest deeper than max_depth, before
 * protobuf-c's recursive unpack can overflow the stack on it */
#define ONNX_MAX_NESTING 256
mlc_status onnx_check_nesting(const void *buf, size_t size, const ProtobufCMessageDescriptor *desc, int max_depth,
                              const char *path, Diag *d);
/* Both, into a new constant of cx's graph named name. */
Value *onnx_tensor_const(OnnxCtx *cx, const Onnx__TensorProto *t, const char *name, Diag *d);

#endif
