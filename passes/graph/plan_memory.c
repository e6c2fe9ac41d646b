/* PlanMemory: give every activation (a value a group writes) a storage block, reusing blocks by liveness.
 *
 * Walk the groups in execution order. A group's outputs are allocated before its inputs are released, so a
 * kernel never writes the storage it reads. A value's block is released after the last group that reads it;
 * graph outputs (and the extents of data-dependent ones) are never released. Allocation is best-fit among free blocks (a block smaller than needed
 * grows to fit), as TVM's graph memory planner does. */
#include <string.h>
#include "passes/graph/passes.h"

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
  int cap = 16;
  out->storage_size = arena_alloc(a, sizeof(int64_t) * (size_t)cap);
  bool *busy = arena_alloc(a, (size_t)cap);

  for (int gi = 0; gi < fg->groups.n; gi++) {
    const FusedGroup *grp = fg->groups.v[gi];
    for (int k = 0; k < grp->outputs.n; k++) {
      const Value *v = grp->outputs.v[k];
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
    }
    /* release what this group read for the last time, and outputs nobody reads */
    for (int k = 0; k < grp->inputs.n; k++) {
      const Value *v = grp->inputs.v[k];
      if (v->producer && last_use[v->id] == gi && !pinned[v->id] && out->storage_id[v->id] >= 0)
        busy[out->storage_id[v->id]] = false;
    }
    for (int k = 0; k < grp->outputs.n; k++) {
      const Value *v = grp->outputs.v[k];
      if (last_use[v->id] < 0 && !pinned[v->id]) busy[out->storage_id[v->id]] = false;
    }
  }
  for (int s = 0; s < out->nstorage; s++) out->total_bytes += out->storage_size[s];
  return MLC_OK;
}
