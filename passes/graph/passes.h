/* passes/graph: graph-to-graph passes and the partition of a graph into fused groups (kernels).
 *
 * FuseOps (fuse.c) decides only from the pattern kinds of src/ir (TVM's lattice): an elementwise or broadcast
 * op joins the group of its producer when that producer's value has no other consumer and the group's anchor
 * is injective or out-elemwise-fusable (conv2d/dense take their epilogue); injective ops chain with each other;
 * opaque ops stay alone. PlanMemory (plan_memory.c) assigns every activation a storage block by liveness. */
#ifndef MLC_PASSES_H
#define MLC_PASSES_H
#include "ir/ir.h"

/* ---- pass_manager.c ---- */
typedef struct PassOptions {
  int opt_level; /* 0..3 */
  int ndisabled;
  const char *const *disabled; /* pass names from --disable-pass */
  const char *target;          /* the compile target (layout and lowering choices) */
  const char *fold_target;     /* what FoldConstant builds its JIT code for: the host (NULL: target) */
  int nconfig;
  const char *const *config; /* "Pass.key=value" from --pass-config */
  /* AlterOpLayout: the output channel block of nn.conv2d node conv from the tuning records (knob tile_oc of
   * conv2d_packed.x86), 0 when they have none for its workload (then the block rule decides) */
  int64_t (*conv_block)(void *user, const Node *conv);
  void *conv_block_user;
} PassOptions;

/* The pass-config keys, with their defaults: the CLI checks --pass-config against this list. */
#define PASS_CONFIG_KEYS(X)                                                                                 \
  X("FuseOps.max_depth", 256)             /* most ops in one fused group */                                 \
  X("FoldConstant.max_bytes", 64ll << 20) /* larger results are computed at run time, not stored */          \
  X("AlterOpLayout.winograd", 1)          /* Winograd 3x3 convs: 0 off, 1 where faster, 2 all eligible */      \
  X("AlterOpLayout.winograd_tile", 0)     /* Winograd output tile: 0 by the rule, 4 or 2 (F(4x4)/F(2x2)) */    \
  X("AlterOpLayout.merge_groups", 4)      /* most groups merged into one block-diagonal group (1: none) */    \
  X("LowerConv.requantize_float32", 0)    /* 1: qnn.requantize rounds float32(acc) * scale, as ONNX Runtime */
bool pass_config_known(const char *key);
int64_t pass_config_int(const PassOptions *opt, const char *key);

typedef struct GraphPass {
  const char *name;
  int min_opt_level;
  mlc_status (*run)(Graph *g, const PassOptions *opt, Diag *d);
} GraphPass;

int pass_count(void);
const GraphPass *pass_at(int i);
const GraphPass *pass_find(const char *name);
/* Runs every enabled pass in order, verifying the graph after each; after(user, name, g) sees each result. */
mlc_status pass_run_all(Graph *g, const PassOptions *opt, void (*after)(void *, const char *, Graph *), void *user,
                        Diag *d);
void pass_replace_uses(Graph *g, Value *old, Value *new_value);
/* Passes that rewrite node by node append their new nodes to g->nodes. pass_place_new_nodes moves the nodes
 * made while node i was rewritten (g->nodes [mark[i], mark[i + 1]), mark[n0] = where the rewrites' nodes end)
 * right before node i, so the order stays topological. pass_rewrite_outputs runs rewrite on each node; a value
 * it returns replaces the node's first output (a graph output keeps its name), NULL with d set stops the pass;
 * then the new nodes are placed and the dead ones removed (LowerEinsum, LowerConv). */
void pass_place_new_nodes(Graph *g, int n0, const int *mark);
mlc_status pass_rewrite_outputs(Graph *g, const PassOptions *opt,
                                Value *(*rewrite)(Graph *g, Node *n, const PassOptions *opt, Diag *d), Diag *d);
/* whether pass `name` runs under opt (its opt level reached, not disabled) */
bool pass_enabled(const PassOptions *opt, const char *name);
/* whether AlterOpLayout turns a float32 3x3 stride-1 undilated conv with a constant weight and groups 1, C input
 * and K output channels, output [n, K, oh, ow], into Winograd (LowerConv asks before it makes a dilated conv
 * one) */
bool pass_winograd_applies(const PassOptions *opt, int64_t c, int64_t k, int64_t n, int64_t oh, int64_t ow);
bool pass_is_graph_output(const Graph *g, const Value *v);

/* The passes, one file each. */
mlc_status pass_simplify_inference(Graph *g, const PassOptions *opt, Diag *d);       /* simplify_inference.c */
mlc_status pass_eliminate_common_subexpr(Graph *g, const PassOptions *opt, Diag *d); /* cse.c */
mlc_status pass_fold_constant(Graph *g, const PassOptions *opt, Diag *d);            /* fold_constant.c */
mlc_status pass_fold_scale_axis(Graph *g, const PassOptions *opt, Diag *d);          /* fold_scale_axis.c */
/* The data of v when it is computed from constants only (by compiling and running its producers);
 * MLC_ERR_UNSUPPORTED, without touching d, when it depends on a graph input. */
mlc_status pass_evaluate(Graph *g, Value *v, void **data, Diag *d);
mlc_status pass_dead_code_elim(Graph *g, const PassOptions *opt, Diag *d);           /* dce.c */
mlc_status pass_simplify_expr(Graph *g, const PassOptions *opt, Diag *d);            /* simplify_expr.c */
mlc_status pass_layer_norm_fusion(Graph *g, const PassOptions *opt, Diag *d);        /* layer_norm_fusion.c */
mlc_status pass_hoist_rnn_projection(Graph *g, const PassOptions *opt, Diag *d);     /* rnn_projection.c */
mlc_status pass_lower_einsum(Graph *g, const PassOptions *opt, Diag *d);            /* lower_einsum.c */
mlc_status pass_lower_qdq(Graph *g, const PassOptions *opt, Diag *d);               /* lower_conv.c */
mlc_status pass_lower_conv(Graph *g, const PassOptions *opt, Diag *d);              /* lower_conv.c */
mlc_status pass_alter_op_layout(Graph *g, const PassOptions *opt, Diag *d);          /* alter_op_layout.c */
mlc_status pass_convert_layout_nchwc(Graph *g, const PassOptions *opt, Diag *d);     /* layout_nchwc.c */

typedef struct FusedGroup {
  int id;
  VEC(Node *) nodes;  /* topological order */
  VEC(Value *) inputs;  /* values read from outside the group (activations, graph inputs, constants) */
  VEC(Value *) outputs; /* values used outside the group or graph outputs */
  Node *anchor;         /* the node with the highest pattern kind */
  const char *name;     /* kernel symbol: "fused_nn_conv2d_add_nn_relu_3" */
} FusedGroup;

typedef struct FusedGraph {
  VEC(FusedGroup *) groups; /* in execution order */
} FusedGraph;

/* fuse.c: opt_level 0 puts every node in its own group. */
mlc_status pass_fuse_ops(Graph *g, const PassOptions *opt, FusedGraph *out, Diag *d);
void pass_print_groups(const FusedGraph *fg, StrBuf *b);

/* plan_memory.c: storage ids by liveness over the groups' order. storage_id[value->id] for every group output
 * (-1 for others); storage_size[k] the bytes of block k. Graph outputs are never reused. */
typedef struct MemoryPlan {
  int nvalues;
  int *storage_id;
  int64_t *offset;     /* per value: its bytes' start within its storage (an input of an in-place concatenate) */
  bool *in_place;      /* per group: a concatenate whose inputs are written in place, so no kernel */
  int nstorage;
  int64_t *storage_size;
  int64_t total_bytes;
} MemoryPlan;
mlc_status pass_plan_memory(Arena *a, const Graph *g, const FusedGraph *fg, MemoryPlan *out, Diag *d);

#endif
