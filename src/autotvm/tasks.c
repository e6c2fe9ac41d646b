/* Task extraction and apply-history-best (TVM's autotvm.task.extract_from_program and ApplyHistoryBest).
 *
 * A task is a tunable op instance: the schedule template of a fused group's anchor plus its workload. The
 * graph is prepared exactly as `mlc compile` prepares it (graph passes, FuseOps), each group's TE is built,
 * and its anchor found by topi's rule (the stage closest to the outputs whose tag has a template). The
 * workload is the anchor node's input and output tensor types (args) and attributes (kwargs); groups with
 * equal (template, args, kwargs) share one task, measured on the first such group. Templates whose space has
 * a single config are not tasks. At compile time the same workload key finds the best record. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"

/* the anchor of the group's TE and its template (topi_schedule_group's rule) */
static TeOp *find_anchor(TeCtx *tc, int nout, TeTensor **outs, const TopiTemplate **tmpl) {
  TeSchedule *s = te_create_schedule(tc, nout, outs);
  TeOp *anchor = NULL;
  for (int i = 0; i < s->nstages; i++) {
    TeOp *op = s->stages[i]->op;
    const TopiTemplate *t = op->kind == TE_COMPUTE ? topi_template_find(op->tag) : NULL;
    if (t) {
      anchor = op;
      *tmpl = t;
    }
  }
  return anchor;
}

static cJSON *tensor_json(const TensorType *t) {
  cJSON *a = cJSON_CreateArray();
  cJSON_AddItemToArray(a, cJSON_CreateString("TENSOR"));
  cJSON *dims = cJSON_CreateArray();
  for (int i = 0; i < t->ndim; i++) cJSON_AddItemToArray(dims, cJSON_CreateNumber((double)t->dims[i]));
  cJSON_AddItemToArray(a, dims);
  cJSON_AddItemToArray(a, cJSON_CreateString(mlc_dtype_name(t->dtype)));
  return a;
}

static char *print_json(Arena *a, cJSON *j) {
  char *s = cJSON_PrintUnformatted(j);
  char *r = arena_strdup(a, s ? s : "null");
  free(s);
  return r;
}

/* reduces knob name of space to the one choice cfg gives it (when both have it) */
static void pin_knob(TopiConfigSpace *space, const TopiConfig *cfg, const char *name) {
  for (int k = 0; k < space->nknobs; k++) {
    if (strcmp(space->knobs[k].name, name)) continue;
    for (int i = 0; i < cfg->nknobs; i++)
      if (cfg->names[i] && !strcmp(cfg->names[i], name)) {
        space->knobs[k].choices[0] = cfg->values[i];
        space->knobs[k].nchoices = 1;
      }
  }
}

bool tune_group_workload(Arena *a, const Target *t, const Graph *g, const FusedGroup *grp, TeCtx *tc, int nout,
                         TeTensor **outs, TuneTask *task) {
  const TopiTemplate *tmpl = NULL;
  TeOp *anchor = find_anchor(tc, nout, outs, &tmpl);
  const Node *n = grp->anchor;
  if (!anchor || !n) return false;
  memset(task, 0, sizeof *task);
  tmpl->space(t, anchor, &task->space);
  TopiConfig fallback;
  tmpl->fallback(t, anchor, &fallback);
  /* conv2d_packed.x86's tile_oc is a graph layout (the packed weight's block), applied by AlterOpLayout at
   * the next compile (conv_block.c); the group measured here has the graph's block whatever the config says,
   * so other choices would time this same kernel under another name and could move the conv to a block that
   * was never measured (whose kernel then has no record): the knob keeps the fallback's value only */
  if (!strcmp(tmpl->name, "conv2d_packed.x86")) pin_knob(&task->space, &fallback, "tile_oc");
  task->space_size = tune_space_size(&task->space);
  if (task->space_size <= 1) return false;
  task->default_index = tune_index_from_config(&task->space, &fallback);
  task->name = tmpl->name;
  double flops = 2.0;
  for (int i = 0; i < anchor->naxes; i++) flops *= (double)anchor->axes[i]->extent;
  for (int i = 0; i < anchor->nreduce; i++) flops *= (double)anchor->reduce_axes[i]->extent;
  if (anchor->outputs[0]->dtype == MLC_I32 && anchor->tag && !strcmp(anchor->tag, "conv2d_packed"))
    flops *= 4; /* the 8-bit conv's terms are dot_u8s8: four multiply-adds each */
  task->flops = flops;

  cJSON *args = cJSON_CreateArray();
  for (int i = 0; i < n->ninputs; i++)
    if (n->inputs[i]) cJSON_AddItemToArray(args, tensor_json(&n->inputs[i]->type));
  for (int i = 0; i < n->noutputs; i++)
    if (n->outputs[i]) cJSON_AddItemToArray(args, tensor_json(&n->outputs[i]->type));
  cJSON *kw = cJSON_CreateObject();
  cJSON_AddStringToObject(kw, "op", n->op->name);
  for (int i = 0; i < n->nattrs; i++) {
    const Attr *at = &n->attrs[i];
    cJSON *v = NULL;
    switch (at->kind) {
    case ATTR_INT: v = cJSON_CreateNumber((double)at->i); break;
    case ATTR_FLOAT: v = cJSON_CreateNumber(at->f); break;
    case ATTR_STRING: v = cJSON_CreateString(at->s ? at->s : ""); break;
    case ATTR_INTS:
      v = cJSON_CreateArray();
      for (int k = 0; k < at->n; k++) cJSON_AddItemToArray(v, cJSON_CreateNumber((double)at->ints[k]));
      break;
    case ATTR_FLOATS:
      v = cJSON_CreateArray();
      for (int k = 0; k < at->n; k++) cJSON_AddItemToArray(v, cJSON_CreateNumber(at->floats[k]));
      break;
    case ATTR_STRINGS:
      v = cJSON_CreateArray();
      for (int k = 0; k < at->n; k++) cJSON_AddItemToArray(v, cJSON_CreateString(at->strs[k] ? at->strs[k] : ""));
      break;
    default: break; /* tensors and subgraphs are not part of a workload */
    }
    if (v) cJSON_AddItemToObject(kw, at->name, v);
  }
  task->args = print_json(a, args);
  task->kwargs = print_json(a, kw);
  task->key = arena_printf(a, "%s %s %s", task->name, task->args, task->kwargs);
  cJSON_Delete(args);
  cJSON_Delete(kw);
  return true;
}

mlc_status tune_extract_tasks(Arena *a, Graph *g, const CompileOptions *opt, TuneTasks *out, Diag *d) {
  topi_register_ops();
  memset(out, 0, sizeof *out);
  out->arena = a;
  out->graph = g;
  if (cg_target_parse(opt->target ? opt->target : "llvm", &out->target, d) != MLC_OK) return d->status;
  if (out->target.kind == TARGET_GPU)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "tuning: target '%s': only CPU targets can be tuned", out->target.str);
  const char *pass_target, *fold_target;
  mlc_pass_targets(&out->target, opt->target, &pass_target, &fold_target);
  PassOptions po = {.opt_level = opt->opt_level, .ndisabled = opt->ndisabled, .disabled = opt->disabled,
                    .target = pass_target, .fold_target = fold_target, .nconfig = opt->npass_config,
                    .config = opt->pass_config};
  if (pass_run_all(g, &po, NULL, NULL, d) != MLC_OK) return d->status;
  if (pass_fuse_ops(g, &po, &out->groups, d) != MLC_OK) return d->status;
  for (int gi = 0; gi < out->groups.groups.n; gi++) {
    const FusedGroup *grp = out->groups.groups.v[gi];
    Arena *scratch = arena_new();
    TeCtx tc = {.arena = scratch, .target = &out->target};
    TeTensor **args = NULL;
    TuneTask t;
    Diag inner = {0};
    bool ok = mlc_group_te(scratch, g, &tc, grp, &args, &inner) == MLC_OK &&
              tune_group_workload(a, &out->target, g, grp, &tc, grp->outputs.n, args + grp->inputs.n, &t);
    arena_free(scratch);
    if (inner.status != MLC_OK) {
      diag_set(d, inner.status, "%s", inner.msg);
      return d->status;
    }
    if (!ok) continue;
    int found = -1;
    for (int i = 0; i < out->tasks.n && found < 0; i++)
      if (!strcmp(out->tasks.v[i].key, t.key)) found = i;
    if (found >= 0) {
      out->tasks.v[found].ngroups++;
      continue;
    }
    t.index = out->tasks.n;
    t.group = grp;
    t.ngroups = 1;
    vec_push(a, &out->tasks, t);
  }
  return MLC_OK;
}

/* ---------------------------------------------------------------- apply-history-best */

const TopiConfig *tune_apply_pick(void *user, TeCtx *tc, const Graph *g, const FusedGroup *grp, int nout,
                                  TeTensor **outs) {
  TuneApply *ap = user;
  TuneTask t;
  if (!tune_group_workload(ap->arena, tc->target, g, grp, tc, nout, outs, &t)) return NULL;
  bool seen = false;
  for (int i = 0; i < ap->seen_keys.n && !seen; i++) seen = !strcmp(ap->seen_keys.v[i], t.key);
  const TuneRecord *r = tune_records_best(ap->records, ap->target, t.key);
  int64_t index = r ? tune_index_from_config(&t.space, &r->config) : -1;
  if (!seen) {
    vec_push(ap->arena, &ap->seen_keys, t.key);
    char *line;
    if (r && index >= 0)
      line = arena_printf(ap->arena, "%s %s: tuned config #%lld (%.4f ms, %.2f GFLOP/s)", t.name, t.args,
                          (long long)index, r->cost * 1e3, t.flops / r->cost * 1e-9);
    else if (r)
      line = arena_printf(ap->arena, "%s %s: record #%lld ignored (not in the template's config space any more); "
                          "default config", t.name, t.args, (long long)r->index);
    else
      line = arena_printf(ap->arena, "%s %s: no record, default config", t.name, t.args);
    vec_push(ap->arena, &ap->report, line);
  }
  if (!r || index < 0) return NULL;
  tune_config_from_index(&t.space, index, &ap->cfg);
  return &ap->cfg;
}
