/* The default GPU schedule (TVM's topi.cuda.schedule_injective / schedule_reduce fallbacks), used by
 * topi_schedule_group for every fused group when the target is a GPU.
 *
 * (1) Every compute stage without reduction that is not a group output is inlined into its consumers, as on
 * the CPU. (2) Every remaining compute stage (outputs, reductions, conv / dense anchors) is a root stage of
 * its own, which the NVPTX code generator turns into one kernel launch: its spatial axes are fused into one
 * axis, split by GPU_THREADS, and bound to blockIdx.x (outer) and threadIdx.x (inner). Reduce axes stay
 * serial loops inside the thread, so a reduction, a convolution or a matrix product runs one thread per
 * output element; correct for every op, fast for injective ops, and the baseline that block-tiled templates
 * with shared-memory staging improve on. (3) Extern stages (sorts, scans, RNNs) keep their statement and
 * run as one thread. Stages with no spatial axis (a full reduction to a scalar) run as one thread too. */
#include "topi/topi.h"

#define GPU_THREADS 256 /* threads per block */

static bool is_output(const TeOp *op, int nout, TeTensor **outs) {
  for (int i = 0; i < nout; i++)
    if (outs[i]->op == op) return true;
  return false;
}

static void schedule_root(TeStage *st) {
  TeOp *op = st->op;
  if (op->naxes == 0) return;
  IterVar *fused = op->axes[0];
  /* the spatial leaves come first and in order in a fresh stage */
  for (int i = 1; i < op->naxes; i++) fused = te_fuse(st, fused, op->axes[i]);
  int64_t ext = fused->extent;
  if (ext <= 0) return;
  IterVar *bx, *tx;
  te_split(st, fused, ext < GPU_THREADS ? ext : GPU_THREADS, &bx, &tx);
  te_bind(st, bx, "blockIdx.x");
  te_bind(st, tx, "threadIdx.x");
}

TeSchedule *topi_schedule_gpu(TeCtx *c, int nout, TeTensor **outs, Diag *d) {
  MLC_CHECK(d, nout > 0 && outs, NULL);
  TeSchedule *s = te_create_schedule(c, nout, outs);
  for (int i = 0; i < s->nstages; i++) {
    TeStage *st = s->stages[i];
    TeOp *op = st->op;
    if (op->kind != TE_COMPUTE) continue;
    if (op->nreduce == 0 && !(op->body && op->body->kind == E_REDUCE) && !is_output(op, nout, outs))
      te_compute_inline(st);
    else
      schedule_root(st);
  }
  return s;
}
