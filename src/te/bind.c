/* te_bind: the GPU schedule primitive (TVM's s[t].bind(axis, te.thread_axis("blockIdx.x"))).
 *
 * A bound leaf keeps its place in the loop nest and only changes its ForKind; te_lower emits it as an
 * ordinary For of that kind, and the NVPTX code generator turns the outermost bound loops of each top-level
 * nest into the launch grid (blockIdx.x) and block (threadIdx.x), the loop variable becoming the special
 * register. So the rules checked here are what the code generator relies on: only spatial leaves (a reduce
 * axis bound to threads would race on its output), each tag at most once per stage, and blockIdx.x outside
 * threadIdx.x with nothing in between. Misuse is recorded in the stage and reported by te_lower. */
#include <stdio.h>
#include <string.h>
#include "te/stage.h"

static void bind_error(TeStage *st, const char *fmt, const char *arg) {
  StageImpl *si = stage_impl(st);
  if (si->error) return;
  char buf[160];
  snprintf(buf, sizeof buf, fmt, arg);
  si->error = arena_printf(si->arena, "stage '%s': %s", st->op->name, buf);
}

void te_bind(TeStage *st, IterVar *iv, const char *thread_tag) {
  ForKind k;
  if (thread_tag && !strcmp(thread_tag, "blockIdx.x")) k = FOR_GPU_BLOCK_X;
  else if (thread_tag && !strcmp(thread_tag, "threadIdx.x")) k = FOR_GPU_THREAD_X;
  else {
    bind_error(st, "bind to unknown thread tag '%s' (blockIdx.x or threadIdx.x)", thread_tag ? thread_tag : "(null)");
    return;
  }
  int pos = -1;
  for (int i = 0; i < st->nleaf; i++)
    if (st->leaf[i] == iv) pos = i;
  if (pos < 0) {
    bind_error(st, "bind (%s) of an iter var that is not a leaf", thread_tag);
    return;
  }
  if (iv->kind == ITER_REDUCE) {
    bind_error(st, "bind of a reduce iter var '%s'", iv->var->name);
    return;
  }
  for (int i = 0; i < st->nleaf; i++) {
    if (i == pos) continue;
    if (st->leaf[i]->for_kind == k) {
      bind_error(st, "%s bound twice", thread_tag);
      return;
    }
    if (k == FOR_GPU_THREAD_X && st->leaf[i]->for_kind == FOR_GPU_BLOCK_X && i != pos - 1) {
      bind_error(st, "threadIdx.x must be the leaf right inside blockIdx.x ('%s')", iv->var->name);
      return;
    }
    if (k == FOR_GPU_BLOCK_X && st->leaf[i]->for_kind == FOR_GPU_THREAD_X && i != pos + 1) {
      bind_error(st, "blockIdx.x must be the leaf right outside threadIdx.x ('%s')", iv->var->name);
      return;
    }
  }
  iv->for_kind = k;
}
