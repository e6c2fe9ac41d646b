/* passes/graph: graph-to-graph passes and the partition of a graph into fused groups (kernels).
 *
 * FuseOps (fuse.c) decides only from the pattern kinds of src/ir (TVM's lattice): an elementwise or broadcast
 * op joins the group of its producer when that producer's value has no other consumer and the group's anchor
 * is injective or out-elemwise-fusable (conv2d/dense take their epilogue); injective ops chain with each other;
 * opaque ops stay alone. PlanMemory (plan_memory.c) assigns every activation a storage block by liveness. */
#ifndef MLC_PASSES_H
#define MLC_PASSES_H
#include "ir/ir.h"

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
mlc_status pass_fuse_ops(Graph *g, int opt_level, FusedGraph *out, Diag *d);
void pass_print_groups(const FusedGraph *fg, StrBuf *b);

/* plan_memory.c: storage ids by liveness over the groups' order. storage_id[value->id] for every group output
 * (-1 for others); storage_size[k] the bytes of block k. Graph outputs are never reused. */
typedef struct MemoryPlan {
  int nvalues;
  int *storage_id;
  int nstorage;
  int64_t *storage_size;
  int64_t total_bytes;
} MemoryPlan;
mlc_status pass_plan_memory(Arena *a, const Graph *g, const FusedGraph *fg, MemoryPlan *out, Diag *d);

#endif
