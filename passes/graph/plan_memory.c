/* PlanMemory: give every activation (a value a group writes) a storage block, reusing blocks by liveness.
 *
 * Walk the groups in execution order. A group's outputs are allocated before its inputs are released, so a
 * kernel never writes the storage it reads. A value's block is released after the last group that reads it;
 * graph outputs (and the extents of data-dependent ones) are never released. Allocation is best-fit among free blocks (a block smaller than needed
 * grows to fit), as TVM's graph memory planner does.
 *
 * A concatenate along an axis with only 1s before it (the channels of NCHW or NCHWc at batch 1), alone in its
 * group, is done in place where each of its inputs is written by another group, read by nothing else and no
 * graph output, and each starts 64-byte aligned (kernels take their buffers so aligned): the inputs are placed
 * side by side in the concatenation's storage, allocated when the first of them is written, and the group is
 * no kernel (in_place); SqueezeNet's fire modules and Inception's blocks copied every branch's output once more.
 * The inputs are not released by the concatenate: their bytes are the concatenation's, released with it. */
#include <string.h>
#include "passes/graph/passes.h"

/* is grp such a concatenate? readers[v]: how many groups read value v; in_place: the decision for the groups
 * before it (an input written by an in-place concatenate is not placed again) */
static bool concat_in_place(const FusedGroup *grp, const int *readers, const bool *pinned, const int *group_of,
                            const bool *in_place) {
  if (grp->nodes.n != 1 || grp->outputs.n != 1) return false;
  const Node *n = grp->nodes.v[0];
  const Value *o = n->outputs[0];
  if (strcmp(n->op->name, "concatenate") || n->ninputs < 1 || o != grp->outputs.v[0] || o->dyn_extent) return false;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (axis < 0) axis += o->type.ndim;
  if (axis < 0 || axis >= o->type.ndim) return false;
  for (int d = 0; d < axis; d++)
    if (o->type.dims[d] != 1) return false;
  int64_t total = 0;
  for (int i = 0; i < n->ninputs; i++) {
    const Value *v = n->inputs[i];
    if (!v || !v->producer || v->data || v->is_input || v->dyn_extent || pinned[v->id] || readers[v->id] != 1 ||
        v->type.dtype != o->type.dtype || group_of[v->id] < 0 || in_place[group_of[v->id]])
      return false;
    for (int j = 0; j < i; j++)
      if (n->inputs[j] == v) return false;
    int64_t nb = tt_nbytes(&v->type);
    if (nb < 0 || total % 64) return false; /* each input starts 64-byte aligned, as kernels assume (align 64) */
    total += nb;
  }
  return total == tt_nbytes(&o->type); /* whole bytes: no sub-byte packing across the seams */
}

mlc_status pass_plan_memory(Arena *a, const Graph *g, const FusedGraph *fg, MemoryPlan *out, Diag *d) {
  int nv = g->values.n;
  int *last_use = arena_alloc(a, sizeof(int) * (size_t)(nv + 1));
  bool *pinned = arena_alloc(a, (size_t)nv + 1);
  for (int i = 0; i < nv; i++) last_use[i] = -1;
  for (int gi = 0; gi < fg->groups.n; gi++) {
    const FusedGroup *grp = fg->groups.v[gi];
    for (int k = 0; k < grp->inputs.n; k++) last_use[grp->inputs.v[k]->id] = gi;
  }
  for (int i = 0; i < g->outputs.n; i++) {
    pinned[g->outputs.v[i]->id] = true;
    if (g->outputs.v[i]->dyn_extent) pinned[g->outputs.v[i]->dyn_extent->id] = true; /* read after the run */
  }

  memset(out, 0, sizeof *out);
  out->nvalues = nv;
  out->storage_id = arena_alloc(a, sizeof(int) * (size_t)(nv + 1));
  for (int i = 0; i < nv; i++) out->storage_id[i] = -1;
  out->offset = arena_alloc(a, sizeof(int64_t) * (size_t)(nv + 1));
  memset(out->offset, 0, sizeof(int64_t) * (size_t)(nv + 1));
  int ng = fg->groups.n;
  out->in_place = arena_alloc(a, (size_t)ng + 1);
  memset(out->in_place, 0, (size_t)ng + 1);
  /* the in-place concatenates: owner[v] is the concatenation whose storage input v lives in */
  int *readers = arena_alloc(a, sizeof(int) * (size_t)(nv + 1));
  int *group_of = arena_alloc(a, sizeof(int) * (size_t)(nv + 1));
  const Value **owner = arena_alloc(a, sizeof(Value *) * (size_t)(nv + 1));
  for (int i = 0; i < nv; i++) readers[i] = 0, group_of[i] = -1, owner[i] = NULL;
  for (int gi = 0; gi < ng; gi++) {
    const FusedGroup *grp = fg->groups.v[gi];
    for (int k = 0; k < grp->inputs.n; k++) readers[grp->inputs.v[k]->id]++;
    for (int k = 0; k < grp->outputs.n; k++) group_of[grp->outputs.v[k]->id] = gi;
  }
  for (int gi = 0; gi < ng; gi++) {
    const FusedGroup *grp = fg->groups.v[gi];
    if (!concat_in_place(grp, readers, pinned, group_of, out->in_place)) continue;
    out->in_place[gi] = true;
    const Node *n = grp->nodes.v[0];
    int64_t off = 0;
    for (int i = 0; i < n->ninputs; i++) {
      owner[n->inputs[i]->id] = n->outputs[0];
      out->offset[n->inputs[i]->id] = off;
      off += tt_nbytes(&n->inputs[i]->type);
    }
  }
  int cap = 16;
  out->storage_size = arena_alloc(a, sizeof(int64_t) * (size_t)cap);
  bool *busy = arena_alloc(a, (size_t)cap);

  for (int gi = 0; gi < fg->groups.n; gi++) {
    const FusedGroup *grp = fg->groups.v[gi];
    for (int k = 0; k < grp->outputs.n; k++) {
      const Value *v = grp->outputs.v[k];
      if (out->storage_id[v->id] >= 0) continue; /* an in-place concatenation, placed with its first input */
      if (owner[v->id]) v = owner[v->id];          /* an input of one: its storage is the concatenation's */
      if (out->storage_id[v->id] >= 0) {
        out->storage_id[grp->outputs.v[k]->id] = out->storage_id[v->id];
        continue;
      }
      int64_t need = tt_nbytes(&v->type);
      if (need < 0) return diag_set(d, MLC_ERR_INVALID, "%s: tensor '%s' is too large", g->file, v->name);
      need = (need + 63) & ~(int64_t)63;
      int best = -1;
      for (int s = 0; s < out->nstorage; s++) {
        if (busy[s]) continue;
        int64_t sz = out->storage_size[s];
        if (best < 0) {
          best = s;
          continue;
        }
        int64_t bsz = out->storage_size[best];
        bool fits = sz >= need, bfits = bsz >= need;
        /* prefer the smallest block that fits, else the largest one (it grows least) */
        if ((fits && (!bfits || sz < bsz)) || (!fits && !bfits && sz > bsz)) best = s;
      }
      if (best < 0) {
        if (out->nstorage == cap) {
          int ncap = cap * 2;
          int64_t *ns = arena_alloc(a, sizeof(int64_t) * (size_t)ncap);
          bool *nb = arena_alloc(a, (size_t)ncap);
          memcpy(ns, out->storage_size, sizeof(int64_t) * (size_t)cap);
          memcpy(nb, busy, (size_t)cap);
          out->storage_size = ns;
          busy = nb;
          cap = ncap;
        }
        best = out->nstorage++;
        out->storage_size[best] = 0;
      }
      if (out->storage_size[best] < need) out->storage_size[best] = need;
      busy[best] = true;
      out->storage_id[v->id] = best;
      out->storage_id[grp->outputs.v[k]->id] = best;
    }
    /* release what this group read for the last time, and outputs nobody reads */
    for (int k = 0; k < grp->inputs.n; k++) {
      const Value *v = grp->inputs.v[k];
      if (v->producer && last_use[v->id] == gi && !pinned[v->id] && !owner[v->id] && out->storage_id[v->id] >= 0)
        busy[out->storage_id[v->id]] = false;
    }
    for (int k = 0; k < grp->outputs.n; k++) {
      const Value *v = grp->outputs.v[k];
      if (last_use[v->id] < 0 && !pinned[v->id] && !owner[v->id]) busy[out->storage_id[v->id]] = false;
    }
  }
  for (int s = 0; s < out->nstorage; s++) out->total_bytes += out->storage_size[s];
  return MLC_OK;
}
