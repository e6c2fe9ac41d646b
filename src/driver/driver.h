/* driver: the whole compile pipeline as one flat list of calls (mlc_compile_graph), and its two outputs:
 * a package on disk (mlc_write_package) or an executor over JIT-compiled kernels (mlc_jit_executor).
 *
 *   import (frontends/onnx) -> graph passes -> FuseOps -> per group: TE compute (src/topi) -> schedule
 *   (topi templates) -> lower (src/te) -> TIR passes -> LLVM (codegen/llvm) ; PlanMemory -> rt_plan */
#ifndef MLC_DRIVER_H
#define MLC_DRIVER_H
#include "codegen/llvm/codegen.h"
#include "ir/ir.h"
#include "passes/graph/passes.h"
#include "runtime/rt.h"
#include "topi/topi.h"

typedef struct CompileOptions {
  const char *target;   /* target string; NULL: "llvm" */
  int opt_level;        /* 0..3 */
  const char *dump_dir; /* write every stage's text here when set */
  int ndisabled;        /* --disable-pass NAME */
  const char *const *disabled;
  int npass_config; /* --pass-config Pass.key=value */
  const char *const *pass_config;
  /* --tuning-records (src/autotvm apply-history-best): the schedule config of a group's template, given the
   * group's TE outputs; NULL (or no callback) means the template's fallback config */
  const TopiConfig *(*pick_config)(void *user, TeCtx *tc, const Graph *g, const FusedGroup *grp, int nout,
                                   TeTensor **outs);
  void *pick_user;
  /* --tuning-records: the NCHWc block of a conv (PassOptions.conv_block); NULL: the block rule */
  int64_t (*conv_block)(void *user, const Node *conv);
  void *conv_block_user;
} CompileOptions;

typedef struct Kernel {
  const FusedGroup *group;
  TirFunc *func;
  int nargs;
  Value **args; /* the group's inputs then outputs: the kernel's parameter order */
} Kernel;

typedef struct Compiled {
  Arena *arena;
  Graph *graph;
  Target target;
  FusedGraph groups;
  VEC(Kernel) kernels;
  MemoryPlan memory;
  CgModule *cg; /* owned until written or handed to the JIT */
  double seconds;
} Compiled;

mlc_status mlc_compile_graph(Arena *a, Graph *g, const CompileOptions *opt, Compiled **out, Diag *d);
/* The targets of the graph passes for target t (string target): the passes decide layouts for target, except
 * for a cross or GPU target, which gets the host's graph ("llvm"); FoldConstant builds the constant part for
 * the host ("llvm") unless code for t runs here (NULL): the same CPU and no feature the host lacks
 * (-mcpu=znver4 on a Zen 3 died of SIGILL folding constants). */
void mlc_pass_targets(const Target *t, const char *target, const char **pass_target, const char **fold_target);
/* The TE of one fused group: (*args)[0..inputs+outputs) are its inputs (placeholders) then its outputs, the
 * kernel's parameter order (in a). */
mlc_status mlc_group_te(Arena *a, const Graph *g, TeCtx *tc, const FusedGroup *grp, TeTensor ***args, Diag *d);
/* The kernel of one fused group scheduled with cfg (NULL: the template's fallback), lowered to TIR exactly as
 * mlc_compile_graph does it; the tuner builds each config it measures with this. */
TirFunc *mlc_group_kernel(TeCtx *tc, const Graph *g, const FusedGroup *grp, const TopiConfig *cfg, Diag *d);
/* Builds the execution plan (tensors, storage, calls, params) of a compiled graph. */
mlc_status mlc_build_plan(const Compiled *c, rt_plan *plan, Diag *d);
/* meta.json of a compiled graph and its plan (malloc'd; NULL when out of memory), with its frozen inputs. */
char *mlc_meta_json(const Compiled *c, const rt_plan *plan);
/* Writes the tar package: mod.so, mod.json, mod.params, meta.json. Consumes c->cg. */
mlc_status mlc_write_package(Compiled *c, const char *path, Diag *d);
/* JIT-compiles c->cg (consumed) and returns an executor running the plan; *jit must outlive the executor. */
mlc_status mlc_jit_executor(Compiled *c, mlc_pool *pool, rt_executor **ex, CgJit **jit, Diag *d);
/* bundle.c: the linkable outputs. --output-format so: one shared library with the kernels and the package's
 * plan, params and meta as data symbols (mlc_module_load opens it). Consumes c->cg. */
mlc_status mlc_write_shared(Compiled *c, const char *path, Diag *d);
/* --output-format obj: one relocatable object with the kernels, the weights and the entry points NAME_run and
 * NAME_run_ctx, and a C header at header_path (NULL: none) declaring them. Consumes c->cg. */
mlc_status mlc_write_object(Compiled *c, const char *path, const char *header_path, const char *name, Diag *d);
/* kernels_info.c: kernels.json (name, fused ops, flops of each kernel; malloc'd), for `mlc run --profile` */
char *mlc_kernels_json(const Compiled *c);
/* a C identifier of at most 64 characters */
bool mlc_c_identifier_ok(const char *s);
void mlc_compiled_free(Compiled *c);
/* package.c helpers shared with bundle.c: the arch name in meta.json; removing a temporary directory */
const char *mlc_arch_name(TargetArch a);
void mlc_remove_dir(const char *dir);

#endif
