/* FuseOps: partition the graph into fused groups, each of which becomes one kernel.
 *
 * The rules are TVM's (src/relay/transforms/fuse_ops.cc), decided only from pattern kinds:
 *   - an elementwise/broadcast op fuses into the group of the producer of one of its inputs when that producer's
 *     value has exactly one consumer (this op), is not a graph output, and the group's anchor is elementwise,
 *     broadcast, injective, a reduction or out-elemwise-fusable (conv2d + bias + relu; dense + add);
 *   - an injective op fuses into a group whose ops are all injective or simpler (reshape/transpose chains);
 *   - a reduction fuses into a group of injective ops (they become its inlined reads), and elementwise ops
 *     after a reduction join it;
 *   - opaque ops stay alone; nothing fuses into an opaque op;
 *   - one prologue: an elementwise op whose other operand is a lone elementwise conversion (the dequantize of an
 *     int8 residual add's shortcut) takes that conversion into the group it joins (join_with_prologue).
 *   - a diamond: a value v with several readers joins them into its group when they and the nodes after them,
 *     contiguous in node order, are elementwise and meet again in one node (x * sigmoid(x), GELU's
 *     x * (erf(x / sqrt 2) + 1), hard-swish, x * x): every read of v is then inside the group, which still
 *     ends in one value (diamond_end).
 * This is the greedy form of TVM's post-dominator algorithm: a value with several consumers ends a group unless
 * they meet again within a few elementwise nodes, so the only computation duplicated is v's own elementwise
 * ops, inlined into each read (the anchor, a conv or a dense, is computed once). */
#include <string.h>
#include "passes/graph/passes.h"

static int group_pattern(const FusedGroup *g) { return g->anchor->op->pattern; }

static bool can_join(const FusedGroup *grp, const Node *n) {
  int np = n->op->pattern, gp = group_pattern(grp);
  /* elementwise epilogues join anything but opaque ops (conv + bias + relu, sum + divide) */
  if (np <= PAT_BROADCAST) return gp <= PAT_OUT_ELEMWISE_FUSABLE;
  if (np == PAT_INJECTIVE) return gp <= PAT_INJECTIVE;
  /* a reduction takes its injective producers (transpose + sum), inlined into its reads */
  if (np == PAT_COMM_REDUCE) return gp <= PAT_INJECTIVE;
  return false;
}

static void add_unique(Arena *a, void *vec_, Value *v) {
  VEC(Value *) *vec = vec_;
  for (int i = 0; i < vec->n; i++)
    if (vec->v[i] == v) return;
  vec_push(a, vec, v);
}

/* The group before the last one, when n can join it with the last one as its prologue: the last group is one
 * elementwise node X whose only reader is n (a conversion of n's other operand: the DequantizeLinear of a
 * QLinearAdd's shortcut), and another input of n, read by n only, comes from the group before (the conv whose
 * epilogue n is). X moves into that group (it reads only values computed before it), so the residual add of an
 * int8 ResNet stays in its conv's kernel as the float one does. NULL otherwise. */
static FusedGroup *join_with_prologue(Graph *g, FusedGraph *out, Node *n, const int *uses, const bool *is_out,
                                      FusedGroup **group_of, int64_t max_depth) {
  if (out->groups.n < 2 || n->op->pattern > PAT_BROADCAST) return NULL;
  FusedGroup *last = out->groups.v[out->groups.n - 1], *prev = out->groups.v[out->groups.n - 2];
  if (last->nodes.n != 1) return NULL;
  Node *x = last->nodes.v[0];
  if (x->op->pattern > PAT_BROADCAST || x->noutputs != 1 || !x->outputs[0] || uses[x->outputs[0]->id] != 1 ||
      is_out[x->outputs[0]->id] || prev->nodes.n + 2 > max_depth || !can_join(prev, n))
    return NULL;
  bool reads_x = false, reads_prev = false;
  for (int k = 0; k < n->ninputs; k++) {
    Value *in = n->inputs[k];
    if (!in || !in->producer) continue;
    if (in == x->outputs[0]) reads_x = true;
    else if (group_of[in->id] == prev && uses[in->id] == 1 && !is_out[in->id] && in->producer->noutputs == 1)
      reads_prev = true;
  }
  if (!reads_x || !reads_prev) return NULL;
  out->groups.n--;
  vec_push(g->arena, &prev->nodes, x);
  group_of[x->outputs[0]->id] = prev;
  return prev;
}

/* n, at index i, reads v, the value of the last group, which has several readers. When the nodes from n on,
 * each reading v or a value of the ones before it, are elementwise with one output and all of v's reads are
 * consumed by the node at the returned index (where the paths meet: the multiply of x * sigmoid(x)), that
 * index; else -1. room: how many nodes the group may still take. */
static int diamond_end(const Graph *g, int i, const Value *v, const int *uses, const bool *is_out, int64_t room) {
  enum { MAX_DIAMOND = 16 };
  const Value *mine[MAX_DIAMOND + 1];
  int nmine = 0, pending = uses[v->id];
  mine[nmine++] = v;
  for (int j = i; j < g->nodes.n && j - i < room && nmine <= MAX_DIAMOND; j++) {
    const Node *m = g->nodes.v[j];
    int reads = 0;
    for (int k = 0; k < m->ninputs; k++)
      for (int q = 0; q < nmine; q++)
        if (m->inputs[k] == mine[q]) reads++;
    if (!reads || m->op->pattern > PAT_BROADCAST || m->noutputs != 1 || !m->outputs[0]) return -1;
    pending -= reads;
    if (pending == 0) return j;
    if (is_out[m->outputs[0]->id]) return -1;
    pending += uses[m->outputs[0]->id];
    mine[nmine++] = m->outputs[0];
  }
  return -1;
}

mlc_status pass_fuse_ops(Graph *g, const PassOptions *opt, FusedGraph *out, Diag *d) {
  int opt_level = opt->opt_level;
  int64_t max_depth = pass_config_int(opt, "FuseOps.max_depth");
  Arena *a = g->arena;
  int nv = g->values.n;
  int *uses = arena_alloc(a, sizeof(int) * (size_t)(nv + 1));
  bool *is_out = arena_alloc(a, (size_t)nv + 1);
  FusedGroup **group_of = arena_alloc(a, sizeof(FusedGroup *) * (size_t)(nv + 1)); /* by producing value */
  FusedGroup **node_group = arena_alloc(a, sizeof(FusedGroup *) * (size_t)(g->nodes.n + 1));
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    for (int k = 0; k < n->ninputs; k++)
      if (n->inputs[k]) uses[n->inputs[k]->id]++;
  }
  for (int i = 0; i < g->outputs.n; i++) is_out[g->outputs.v[i]->id] = true;

  memset(out, 0, sizeof *out);
  FusedGroup *diamond = NULL; /* the group the nodes up to index meet join, see diamond_end */
  int meet = -1;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    FusedGroup *target = NULL;
    if (opt_level >= 1 && i <= meet) target = diamond;
    else if (opt_level >= 1) {
      if ((target = join_with_prologue(g, out, n, uses, is_out, group_of, max_depth)))
        node_group[i - 1] = target; /* the last group's one node is the one just before n */
      for (int k = 0; k < n->ninputs && !target; k++) {
        Value *in = n->inputs[k];
        if (!in || !in->producer || is_out[in->id]) continue;
        if (in->producer->noutputs != 1) continue;
        FusedGroup *pg = group_of[in->id];
        if (!pg || pg != out->groups.v[out->groups.n - 1] || pg->nodes.n >= max_depth || !can_join(pg, n)) continue;
        if (uses[in->id] == 1) target = pg;
        else if ((meet = diamond_end(g, i, in, uses, is_out, max_depth - pg->nodes.n)) >= 0) target = diamond = pg;
      }
    }
    if (!target) {
      target = arena_alloc(a, sizeof *target);
      target->id = out->groups.n;
      target->anchor = n;
      vec_push(a, &out->groups, target);
    }
    vec_push(a, &target->nodes, n);
    node_group[i] = target;
    if (n->op->pattern > target->anchor->op->pattern) target->anchor = n;
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k]) group_of[n->outputs[k]->id] = target;
  }

  /* inputs and outputs of each group, and its kernel name */
  for (int gi = 0; gi < out->groups.n; gi++) {
    FusedGroup *grp = out->groups.v[gi];
    StrBuf name = {0};
    sb_printf(&name, "fused");
    for (int j = 0; j < grp->nodes.n; j++) {
      Node *n = grp->nodes.v[j];
      if (j < 4) {
        sb_putc(&name, '_');
        for (const char *p = n->op->name; *p; p++) sb_putc(&name, (*p == '.') ? '_' : *p);
      }
      for (int k = 0; k < n->ninputs; k++) {
        Value *in = n->inputs[k];
        if (in && (!in->producer || group_of[in->id] != grp)) add_unique(a, &grp->inputs, in);
      }
    }
    sb_printf(&name, "_%d", gi);
    grp->name = arena_strdup(a, name.s);
    sb_free(&name);
  }
  /* a value escapes its group if it is a graph output or read by another group */
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    for (int k = 0; k < n->ninputs; k++) {
      Value *in = n->inputs[k];
      if (in && in->producer && group_of[in->id] != node_group[i])
        add_unique(a, &group_of[in->id]->outputs, in);
    }
  }
  for (int i = 0; i < g->outputs.n; i++) {
    Value *v = g->outputs.v[i];
    if (v->producer) add_unique(a, &group_of[v->id]->outputs, v);
    /* a data-dependent output's extent is written by the same kernel and read by the executor */
    if (v->producer && v->dyn_extent) add_unique(a, &group_of[v->dyn_extent->id]->outputs, v->dyn_extent);
  }
  /* multi-output nodes: every named output must be produced, even if unused, so the kernel writes it */
  for (int gi = 0; gi < out->groups.n; gi++) {
    FusedGroup *grp = out->groups.v[gi];
    if (grp->outputs.n == 0) {
      Node *last = grp->nodes.v[grp->nodes.n - 1];
      for (int k = 0; k < last->noutputs; k++)
        if (last->outputs[k]) add_unique(a, &grp->outputs, last->outputs[k]);
    }
  }
  (void)d;
  return MLC_OK;
}

void pass_print_groups(const FusedGraph *fg, StrBuf *b) {
  for (int gi = 0; gi < fg->groups.n; gi++) {
    const FusedGroup *grp = fg->groups.v[gi];
    sb_printf(b, "%s(", grp->name);
    for (int i = 0; i < grp->inputs.n; i++) sb_printf(b, "%s%%%s", i ? ", " : "", grp->inputs.v[i]->name);
    sb_printf(b, ") -> (");
    for (int i = 0; i < grp->outputs.n; i++) sb_printf(b, "%s%%%s", i ? ", " : "", grp->outputs.v[i]->name);
    sb_printf(b, ") {\n");
    for (int j = 0; j < grp->nodes.n; j++) {
      const Node *n = grp->nodes.v[j];
      sb_printf(b, "  %s%s /* %s '%s' */\n", n->op->name, n == grp->anchor ? " (anchor)" : "", n->op_type,
                n->name);
    }
    sb_printf(b, "}\n");
  }
}
