/* The compile pipeline, read top to bottom in mlc_compile_graph:
 *   target -> FuseOps -> for each fused group: TE compute of its ops (src/topi) -> schedule (topi templates)
 *   -> lower to TIR (src/te) -> LLVM function (codegen/llvm) ; then PlanMemory.
 * With CompileOptions.dump_dir set, every stage is written there as text (Halide's "Lowering after X"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "driver/driver.h"
#include "passes/tir/tir_passes.h"
#include "te/te.h"
#include "topi/topi.h"

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void dump(const CompileOptions *opt, const char *file, const char *text) {
  if (!opt->dump_dir || !text) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", opt->dump_dir, file);
  Diag ignore = {0};
  file_write_atomic(path, text, strlen(text), &ignore);
}

typedef struct DumpState {
  const CompileOptions *opt;
  int index;
} DumpState;

static void dump_after_pass(void *user, const char *pass, Graph *g) {
  DumpState *ds = user;
  StrBuf b = {0};
  ir_print(g, &b);
  char file[256];
  snprintf(file, sizeof file, "%02d_after_%s.txt", ++ds->index, pass);
  dump(ds->opt, file, b.s);
  sb_free(&b);
}

/* Re-raise a stage's error with the location of the graph node it concerns. */
static mlc_status at_node(const Graph *g, const Node *n, const Diag *inner, Diag *d) {
  char where[512];
  ir_where(g, n, where, sizeof where);
  if (strstr(inner->msg, where) == inner->msg) return diag_set(d, inner->status, "%s", inner->msg);
  return diag_set(d, inner->status, "%s%s", where, inner->msg);
}

static const char *c_name(Arena *a, const char *s) {
  char *r = arena_strdup(a, s && *s ? s : "t");
  for (char *p = r; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) *p = '_';
  return r;
}

static Expr *copy_body(TeCtx *c, Expr **idx, void *user) {
  TeTensor *t = user;
  return te_read(c, t, t->ndim, idx);
}

/* a constant scalar of a plain numeric dtype as an immediate (NULL otherwise) */
static Expr *scalar_immediate(Arena *a, const Value *v) {
  if (!v->data || tt_numel(&v->type) != 1) return NULL;
  const void *p = v->data;
  switch (v->type.dtype) {
  case MLC_F32: return tir_float(a, MLC_F32, *(const float *)p);
  case MLC_F64: return tir_float(a, MLC_F64, *(const double *)p);
  case MLC_I8: return tir_int(a, MLC_I8, *(const int8_t *)p);
  case MLC_U8: return tir_int(a, MLC_U8, *(const uint8_t *)p);
  case MLC_I16: return tir_int(a, MLC_I16, *(const int16_t *)p);
  case MLC_U16: return tir_int(a, MLC_U16, *(const uint16_t *)p);
  case MLC_I32: return tir_int(a, MLC_I32, *(const int32_t *)p);
  case MLC_I64: return tir_int(a, MLC_I64, *(const int64_t *)p);
  default: return NULL;
  }
}

static Expr *scalar_body(TeCtx *c, Expr **idx, void *user) {
  (void)idx;
  return scalar_immediate(c->arena, user);
}

/* The TE of one group: a placeholder per input, each node's compute, the outputs. A constant scalar input
 * (a quantization scale or zero point, an epsilon) stays a kernel argument but is read as an inlined stage
 * whose body is its value, so the kernel folds it: a zero point of 0 is no subtraction, a per-channel
 * multiplier of constant scales is computed once at compile time. */
mlc_status mlc_group_te(Arena *a, const Graph *g, TeCtx *tc, const FusedGroup *grp, TeTensor ***args_out, Diag *d) {
  TeTensor **tensor_of = arena_alloc(a, sizeof(TeTensor *) * (size_t)(g->values.n + 1));
  int nargs = grp->inputs.n + grp->outputs.n;
  TeTensor **args = arena_alloc(a, sizeof(TeTensor *) * (size_t)(nargs + 1));
  for (int i = 0; i < grp->inputs.n; i++) {
    Value *v = grp->inputs.v[i];
    args[i] = te_placeholder(tc, c_name(a, v->name), v->type.dtype, v->type.ndim, v->type.dims);
    tensor_of[v->id] = args[i];
    if (scalar_immediate(a, v))
      tensor_of[v->id] = te_compute(tc, c_name(a, v->name), "broadcast", v->type.dtype, v->type.ndim, v->type.dims,
                                    scalar_body, v);
  }
  for (int j = 0; j < grp->nodes.n; j++) {
    Node *n = grp->nodes.v[j];
    TeTensor **ins = arena_alloc(a, sizeof(TeTensor *) * (size_t)(n->ninputs + 1));
    TeTensor **outs = arena_alloc(a, sizeof(TeTensor *) * (size_t)(n->noutputs + 1));
    for (int i = 0; i < n->ninputs; i++) ins[i] = n->inputs[i] ? tensor_of[n->inputs[i]->id] : NULL;
    Diag inner = {0};
    if (!n->op->compute)
      return diag_set(d, MLC_ERR_UNSUPPORTED, "%sop '%s' has no compute", ir_where(g, n, (char[512]){0}, 512),
                      n->op->name);
    if (n->op->compute(tc, n, ins, outs, &inner) != MLC_OK) return at_node(g, n, &inner, d);
    for (int i = 0; i < n->noutputs; i++)
      if (n->outputs[i]) {
        if (!outs[i]) return diag_set(d, MLC_ERR_INTERNAL, "internal error: op '%s' made no output %d", n->op->name, i);
        tensor_of[n->outputs[i]->id] = outs[i];
      }
  }
  for (int i = 0; i < grp->outputs.n; i++) {
    Value *v = grp->outputs.v[i];
    TeTensor *t = tensor_of[v->id];
    MLC_CHECK(d, t, MLC_ERR_INTERNAL);
    /* an output must be computed by this kernel, and each output once: copy an alias */
    bool alias = t->op->kind == TE_PLACEHOLDER;
    for (int j = 0; j < i; j++) alias |= args[grp->inputs.n + j] == t;
    if (alias) t = te_compute(tc, c_name(a, v->name), "injective", t->dtype, t->ndim, t->shape, copy_body, t);
    args[grp->inputs.n + i] = t;
  }
  *args_out = args;
  return MLC_OK;
}

/* Schedules the TE of one group (args: its inputs then outputs) with cfg (NULL: the template's fallback) and
 * lowers it to a TirFunc. */
static TirFunc *schedule_and_lower(TeCtx *tc, const Graph *g, const FusedGroup *grp, TeTensor **args,
                                   const TopiConfig *cfg, StrBuf *sched_dump, StrBuf *tir_dump, Diag *d) {
  int nargs = grp->inputs.n + grp->outputs.n;
  Diag inner = {0};
  TeSchedule *s = topi_schedule_group(tc, grp->outputs.n, args + grp->inputs.n, cfg, &inner);
  if (!s) {
    at_node(g, grp->anchor, &inner, d);
    return NULL;
  }
  if (sched_dump) {
    sb_printf(sched_dump, "// %s\n", grp->name);
    te_print_schedule(sched_dump, s);
    sb_printf(sched_dump, "\n");
  }
  TirFunc *f = te_lower(tc, s, grp->name, nargs, args, &inner);
  if (!f) {
    at_node(g, grp->anchor, &inner, d);
    return NULL;
  }
  tir_lower_intrinsics_func(tc->arena, f, tc->target); /* vectorizable exp/erf/tanh/..., fma */
  tir_flatten_split_index_func(tc->arena, f);           /* contiguous vectors along a fused H x W */
  if (tir_dump) {
    tir_print_func(tir_dump, f);
    sb_printf(tir_dump, "\n");
  }
  return f;
}

TirFunc *mlc_group_kernel(TeCtx *tc, const Graph *g, const FusedGroup *grp, const TopiConfig *cfg, Diag *d) {
  TeTensor **args = NULL;
  if (mlc_group_te(tc->arena, g, tc, grp, &args, d) != MLC_OK) return NULL;
  return schedule_and_lower(tc, g, grp, args, cfg, NULL, NULL, d);
}

/* Builds the TE of one group, schedules it (with the tuned config when opt->pick_config gives one) and
 * lowers it to a TirFunc. */
static mlc_status lower_group(Compiled *cc, const CompileOptions *opt, TeCtx *tc, const FusedGroup *grp,
                              StrBuf *sched_dump, StrBuf *tir_dump, Kernel *k, Diag *d) {
  Arena *a = cc->arena;
  Graph *g = cc->graph;
  int nargs = grp->inputs.n + grp->outputs.n;
  TeTensor **args = NULL;
  if (mlc_group_te(a, g, tc, grp, &args, d) != MLC_OK) return d->status;
  k->group = grp;
  k->nargs = nargs;
  k->args = arena_alloc(a, sizeof(Value *) * (size_t)(nargs + 1));
  for (int i = 0; i < grp->inputs.n; i++) k->args[i] = grp->inputs.v[i];
  for (int i = 0; i < grp->outputs.n; i++) k->args[grp->inputs.n + i] = grp->outputs.v[i];
  const TopiConfig *cfg =
      opt->pick_config ? opt->pick_config(opt->pick_user, tc, g, grp, grp->outputs.n, args + grp->inputs.n) : NULL;
  k->func = schedule_and_lower(tc, g, grp, args, cfg, sched_dump, tir_dump, d);
  return k->func ? MLC_OK : d->status;
}

void mlc_pass_targets(const Target *t, const char *target, const char **pass_target, const char **fold_target) {
  Target host;
  Diag hd = {0};
  bool host_ok = cg_target_parse("llvm", &host, &hd) == MLC_OK;
  *pass_target = t->kind == TARGET_GPU || !host_ok || host.arch != t->arch ? "llvm" : target;
  *fold_target = cg_target_runs_on_host(t) ? NULL : "llvm";
}

mlc_status mlc_compile_graph(Arena *a, Graph *g, const CompileOptions *opt, Compiled **out, Diag *d) {
  double t0 = now_seconds();
  topi_register_ops();
  Compiled *c = arena_alloc(a, sizeof *c);
  c->arena = a;
  c->graph = g;
  if (opt->dump_dir && mkdir(opt->dump_dir, 0777) != 0 && errno != EEXIST)
    return diag_set(d, MLC_ERR_USAGE, "%s: cannot create directory: %s", opt->dump_dir, strerror(errno));
  if (cg_target_parse(opt->target ? opt->target : "llvm", &c->target, d) != MLC_OK) return d->status;
  /* data-dependent extents only where their rules carry them (the importer applies them already; a graph
   * built another way is held to the same rules, and so is the graph the passes leave) */
  if (ir_check_dynamic(g, d) != MLC_OK) return d->status;

  StrBuf text = {0};
  if (opt->dump_dir) {
    ir_print(g, &text);
    dump(opt, "00_graph.txt", text.s);
    text.len = 0;
  }
  const char *pass_target, *fold_target;
  mlc_pass_targets(&c->target, opt->target, &pass_target, &fold_target);
  PassOptions po = {.opt_level = opt->opt_level, .ndisabled = opt->ndisabled, .disabled = opt->disabled,
                    .target = pass_target, .fold_target = fold_target, .nconfig = opt->npass_config,
                    .config = opt->pass_config,
                    .conv_block = opt->conv_block, .conv_block_user = opt->conv_block_user};
  DumpState ds = {opt, 0};
  double tp = now_seconds();
  bool tphase = getenv("MLC_TIME_PHASES") != NULL;
  if (pass_run_all(g, &po, opt->dump_dir ? dump_after_pass : NULL, &ds, d) != MLC_OK) return d->status;
  if (ir_check_dynamic(g, d) != MLC_OK) return d->status;
  if (pass_fuse_ops(g, &po, &c->groups, d) != MLC_OK) return d->status;
  if (opt->dump_dir) {
    pass_print_groups(&c->groups, &text);
    dump(opt, "10_fused_groups.txt", text.s);
    text.len = 0;
  }

  if (tphase) fprintf(stderr, "[time] graph passes + fuse %.3f s\n", now_seconds() - tp);
  double tl = 0, tcg = 0;
  if (pass_plan_memory(a, g, &c->groups, &c->memory, d) != MLC_OK) {
    sb_free(&text);
    return d->status;
  }
  c->cg = cg_module_new(&c->target, "mlc_module", d);
  if (!c->cg) return d->status;
  TeCtx tc = {.arena = a, .target = &c->target};
  StrBuf sched = {0}, tir = {0};
  for (int gi = 0; gi < c->groups.groups.n; gi++) {
    if (c->memory.in_place[gi]) continue; /* a concatenate its inputs' kernels write in place */
    Kernel k = {0};
    double t1 = now_seconds();
    if (lower_group(c, opt, &tc, c->groups.groups.v[gi], opt->dump_dir ? &sched : NULL, opt->dump_dir ? &tir : NULL, &k,
                    d) != MLC_OK)
      break;
    double t2 = now_seconds();
    tl += t2 - t1;
    if (cg_add_func(c->cg, k.func, d) != MLC_OK) break;
    tcg += now_seconds() - t2;
    vec_push(a, &c->kernels, k);
  }
  if (tphase) fprintf(stderr, "[time] te+lower %.3f s, llvm ir build %.3f s\n", tl, tcg);
  if (opt->dump_dir) {
    dump(opt, "20_schedules.txt", sched.s);
    dump(opt, "30_tir.txt", tir.s);
  }
  sb_free(&sched);
  sb_free(&tir);
  if (diag_ok(d) && cg_optimize(c->cg, d) == MLC_OK && opt->dump_dir) {
    char *ir = cg_print_ir(c->cg);
    dump(opt, "40_llvm.ll", ir);
    free(ir);
    char *as = cg_print_asm(c->cg, d);
    dump(opt, "50_asm.s", as);
    free(as);
  }
  sb_free(&text);
  if (!diag_ok(d)) {
    cg_module_free(c->cg);
    c->cg = NULL;
    return d->status;
  }
  c->seconds = now_seconds() - t0;
  *out = c;
  return MLC_OK;
}

void mlc_compiled_free(Compiled *c) {
  if (c && c->cg) cg_module_free(c->cg);
  if (c) c->cg = NULL;
}
