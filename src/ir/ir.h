/* Graph IR: typed tensors, values, nodes, graphs and the op registry (in the spirit of Relay).
 *
 * A Graph is a list of Nodes in topological order. Each Node applies one registered op (OpDef) to input
 * Values and defines output Values. A Value has a static TensorType; a constant Value carries its data
 * (initializers are folded into constants by the importer). Every node remembers the ONNX node it came from
 * (name, op type, opset) so errors at any later stage can name it. All of it lives in the graph's Arena. */
#ifndef MLC_IR_H
#define MLC_IR_H
#include <stdio.h>
#include "support/support.h"

typedef struct TensorType {
  mlc_dtype dtype;
  int ndim;
  int64_t dims[MLC_MAX_DIMS];
} TensorType;

int64_t tt_numel(const TensorType *t);
int64_t tt_nbytes(const TensorType *t);
bool tt_equal(const TensorType *a, const TensorType *b);
/* "Tensor[(1, 64, 112, 112), float32]" */
void tt_print(StrBuf *b, const TensorType *t);

typedef struct Node Node;
typedef struct Graph Graph;

typedef struct Value {
  int id;
  const char *name; /* ONNX tensor name */
  TensorType type;
  Node *producer;   /* NULL for graph inputs and constants */
  int producer_out; /* which output of producer */
  void *data;       /* constant data (row-major, tt_nbytes bytes), NULL if not constant */
  bool is_input;    /* a graph input */
  /* A data-dependent extent (the outputs of NonZero, NonMaxSuppression, Unique, Compress on run-time data,
   * and the values computed from them where OpDef.dyn allows it, src/ir/dynamic.c): the type is a static
   * upper bound, and after a run the int64 [1] value dyn_extent holds the actual length of axis dyn_axis (the
   * rest of that axis is padding). NULL for every static value. */
  struct Value *dyn_extent;
  int dyn_axis;
} Value;

typedef enum AttrKind {
  ATTR_INT,
  ATTR_FLOAT,
  ATTR_STRING,
  ATTR_INTS,
  ATTR_FLOATS,
  ATTR_STRINGS,
  ATTR_TENSOR, /* a constant Value */
  ATTR_GRAPH,  /* a subgraph (If/Loop/Scan bodies) */
} AttrKind;

typedef struct Attr {
  const char *name;
  AttrKind kind;
  int64_t i;
  double f;
  const char *s;
  int n; /* element count of ints / floats / strs */
  int64_t *ints;
  double *floats;
  const char **strs;
  Value *tensor;
  Graph *graph;
} Attr;

/* Pattern kinds, ordered as TVM's lattice: fusion decides only from these. */
typedef enum OpPattern {
  PAT_ELEMWISE = 0,        /* out[i] = f(in[i]) */
  PAT_BROADCAST = 1,       /* elementwise with broadcasting */
  PAT_INJECTIVE = 2,       /* each output element reads one input element (reshape, transpose, slice) */
  PAT_COMM_REDUCE = 3,     /* reductions */
  PAT_OUT_ELEMWISE_FUSABLE = 4, /* conv2d, dense: can take an elementwise epilogue */
  PAT_OPAQUE = 8,          /* anything else: stays alone */
} OpPattern;

/* How an op treats an input with a data-dependent extent (src/ir/dynamic.c, "bounded dynamic padding"):
 * the op computes on the whole upper-bound buffer and its output carries the same extent on the axis the
 * rule gives, or the rule refuses the node. */
typedef enum DynRule {
  DYN_REFUSE = 0, /* may not read a data-dependent value (the default) */
  DYN_SOURCE,     /* makes data-dependent outputs (its infer marks them); may not read one */
  DYN_ELEMWISE,   /* numpy-broadcast elementwise: static operands of size 1 (or absent) along the axis */
  DYN_TRANSPOSE,  /* attr axes: the axis moves */
  DYN_RESHAPE,    /* the axis must stay a whole axis of its own */
  DYN_SLICE,      /* strided_slice: other axes, or all of the axis from 0 with step 1 */
  DYN_CONCAT,     /* along another axis, every input sharing the extent */
  DYN_TAKE,       /* data dynamic off the gather axis, or indices dynamic: axis + their axis */
  DYN_GATHER_ND,  /* indices dynamic on a non-batch leading axis */
  DYN_DENSE,      /* data [..., K]: any axis but K; the weight static */
  DYN_MATMUL,     /* attrs transpose_a/b: a's row axis or b's column axis */
  DYN_REDUCE,     /* attrs axis, keepdims: reduced axes other than the dynamic one */
  DYN_ALONG_AXIS, /* attr axis (default last): works along another axis; outputs shaped like the input */
  DYN_NORM_TAIL,  /* attr axis (default last): normalizes over the axes from it on, so the dynamic one is before */
  DYN_BATCH,      /* per-sample ops (convolutions, pooling, resize): the data (input 0) dynamic along the batch axis
                     0, kept whole, the other inputs (weights) static: output axis 0 */
  DYN_ROIS,       /* per-box ops (RoI align / pool): input 0 static, the boxes (and their batch indices) dynamic
                   * along axis 0, the box axis: output axis 0 */
  DYN_WINOGRAD,   /* the Winograd conv's input transform, GEMM and output transform: the data (input 0) dynamic
                   * along its batch axis 0 (the padded data) or tile axis 2 (V, M), the weights static: output
                   * tile axis 2 (V, M) or batch axis 0 (the conv's output) */
  DYN_MASK,       /* reads the extent as its input 1 (attr axis): input 0 static or carrying that extent; output static */
  DYN_PACK,       /* pieces, their extents, the total (attr axis): each piece static or carrying its extent; the
                   * output carries the total */
} DynRule;

struct TeTensor; /* src/te/te.h */
struct TeCtx;

typedef struct OpDef {
  const char *name;  /* "nn.conv2d", "add", ... */
  OpPattern pattern;
  int min_inputs, max_inputs; /* max_inputs -1: variadic */
  int num_outputs;            /* -1: decided by the node (Split) */
  /* Type relation: fill the output types of n from its input types and attributes. */
  mlc_status (*infer)(Node *n, Diag *d);
  /* TE compute: build output tensors from input tensors (src/topi). outs has n->noutputs entries. */
  mlc_status (*compute)(struct TeCtx *ctx, Node *n, struct TeTensor **ins, struct TeTensor **outs, Diag *d);
  DynRule dyn; /* reading a data-dependent value (omitted in a table row: DYN_REFUSE) */
} OpDef;

/* The registry: ops register themselves at start-up (topi_register_ops) and are found by name. */
void ir_op_register(const OpDef *op);
const OpDef *ir_op_find(const char *name);
int ir_op_count(void);
const OpDef *ir_op_at(int i);

struct Node {
  int id;
  const OpDef *op;
  const char *name;    /* ONNX node name (or a generated one) */
  const char *op_type; /* ONNX op type it came from */
  int opset;           /* opset of its domain */
  Value **inputs;      /* an absent optional input is NULL */
  int ninputs;
  Value **outputs;
  int noutputs;
  Attr *attrs;
  int nattrs;
};

struct Graph {
  Arena *arena;
  const char *file; /* model path, for messages */
  const char *name;
  VEC(Node *) nodes; /* topological order */
  VEC(Value *) values;
  VEC(Value *) inputs;  /* graph inputs (not constants) */
  VEC(Value *) outputs;
  VEC(Value *) frozen;  /* inputs bound to values at import (--freeze-inputs): constants, listed in meta.json */
};

Graph *ir_graph_new(Arena *a, const char *file);
Value *ir_value_new(Graph *g, const char *name, TensorType type);
Value *ir_const_new(Graph *g, const char *name, TensorType type, const void *data); /* copies data */
/* Appends a node applying op to inputs; creates nout output values (types are filled later by
 * ir_infer_node, after the caller has set the attributes). */
Node *ir_node_new(Graph *g, const OpDef *op, const char *name, const char *op_type, int opset, Value **inputs,
                  int ninputs, int nout);
/* Attributes: set on a node (copied into the arena) and read with defaults. */
void ir_set_int(Graph *g, Node *n, const char *name, int64_t v);
void ir_set_float(Graph *g, Node *n, const char *name, double v);
void ir_set_string(Graph *g, Node *n, const char *name, const char *v);
void ir_set_ints(Graph *g, Node *n, const char *name, const int64_t *v, int count);
void ir_set_floats(Graph *g, Node *n, const char *name, const double *v, int count);
const Attr *ir_attr(const Node *n, const char *name);
int64_t ir_attr_int(const Node *n, const char *name, int64_t dflt);
double ir_attr_float(const Node *n, const char *name, double dflt);
const char *ir_attr_string(const Node *n, const char *name, const char *dflt);
/* Number of ints (0 if absent); copies at most max of them into out. */
int ir_attr_ints(const Node *n, const char *name, int64_t *out, int max);
/* Less common attribute kinds (strings copied; tensor and graph referenced, not copied). */
void ir_set_strings(Graph *g, Node *n, const char *name, const char *const *v, int count);
void ir_set_tensor(Graph *g, Node *n, const char *name, Value *v);
void ir_set_graph(Graph *g, Node *n, const char *name, Graph *sub);

/* Runs op->infer on one node / on every node in order; errors name the node (ir_where). */
mlc_status ir_infer_node(Graph *g, Node *n, Diag *d);
mlc_status ir_infer_types(Graph *g, Diag *d);
/* Data-dependent extents (dynamic.c). ir_dynamic_propagate sets the outputs' dyn_extent / dyn_axis of a node
 * whose types are inferred, by its op's DynRule, or refuses (MLC_ERR_UNSUPPORTED) a node that may not read its
 * data-dependent input, naming the node that made the extent and the reader; ir_infer_node calls it.
 * ir_check_dynamic holds a whole graph to the same rules (a pass that dropped or invented an extent is an
 * internal error). */
mlc_status ir_dynamic_propagate(const Graph *g, Node *n, Diag *d);
mlc_status ir_check_dynamic(const Graph *g, Diag *d);
/* the refusal for one reader; why: what the reader would do with the data-dependent axis */
mlc_status ir_dynamic_use_error(const Graph *g, const Value *v, const char *reader, const char *reader_op,
                                const char *why, Diag *d);
/* Checks structure: topological order, every input defined before use, types filled, no cycle. */
mlc_status ir_verify(const Graph *g, Diag *d);
// Relay-like text:  %3 = nn.conv2d(%data, %w, strides=[2, 2]) /* ty=Tensor[(1, 64, 112, 112), float32] */
void ir_print(const Graph *g, StrBuf *b);
/* "model.onnx: node 'conv1' (Conv, opset 11): " prefix for messages about n */
const char *ir_where(const Graph *g, const Node *n, char *buf, size_t size);

/* Summary for `mlc load` (stats.c). MACs count nn.conv1d/2d/3d, nn.conv2d_transpose, nn.dense, nn.matmul and
 * nn.batch_matmul; the totals saturate at INT64_MAX. */
typedef struct GraphOpCount {
  const char *op; /* graph op name */
  int count;
} GraphOpCount;
typedef struct GraphStats {
  int ninputs, noutputs, nnodes;
  int nops;            /* distinct ops */
  GraphOpCount *ops;   /* in the graph's arena, most frequent first, then by name */
  int nconsts;         /* constant values */
  int64_t params;      /* elements in constants */
  int64_t param_bytes; /* bytes in constants */
  int64_t macs;        /* multiply-accumulates of one inference */
} GraphStats;
void ir_graph_stats(const Graph *g, GraphStats *s);
/* multiply-accumulates of one node (the ops counted above; 0 for any other op) */
int64_t ir_node_macs(const Node *n);

#endif
