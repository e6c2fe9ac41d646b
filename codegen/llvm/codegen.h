/* codegen/llvm: TIR -> LLVM IR through the LLVM 19 C API, target parsing, object emission and the ORC JIT.
 *
 * Nothing outside this folder includes an LLVM header. One CgModule collects the kernels of a compilation;
 * it becomes either an object file (packages; linked into mod.so with the system C compiler driver) or
 * machine code in-process through ORC LLJIT (tests, constant folding, tuning). Both paths share the module
 * construction and the optimisation pipeline. Every kernel has the ABI of include/mlc/runtime.h:
 *   int32_t name(void **buffers, const int64_t *dims, void *ctx)
 * FOR_PARALLEL loops are outlined into `int32_t body(int64_t begin, int64_t end, void *closure)` functions
 * and launched through ctx->parallel_launch; FOR_VECTORIZED loops become vector code; FOR_UNROLLED loops are
 * unrolled. */
#ifndef MLC_CODEGEN_H
#define MLC_CODEGEN_H
#include "tir/tir.h"

/* Parses a tvmc-style target string: "llvm", "llvm -mcpu=znver4", "llvm -mtriple=aarch64-linux-gnu
 * -mattr=+neon", "cuda", "nvptx -mcpu=sm_90". Fills every field of t (host values where unspecified). */
mlc_status cg_target_parse(const char *str, Target *t, Diag *d);
/* Whether code built for t runs on this host: a CPU target of the host's arch and CPU that enables no feature the
 * host lacks (disabling some is fine). FoldConstant runs its JIT code for t only then (mlc_pass_targets). */
bool cg_target_runs_on_host(const Target *t);

/* The text of `mlc compile --target help`: the kinds, options and known CPUs cg_target_parse accepts. */
const char *cg_target_help(void);

typedef struct CgModule CgModule;
CgModule *cg_module_new(const Target *t, const char *name, Diag *d);
void cg_module_free(CgModule *m);
/* Adds one kernel. */
mlc_status cg_add_func(CgModule *m, const TirFunc *f, Diag *d);
/* Runs the optimisation pipeline (once; emit and jit call it if not done). */
mlc_status cg_optimize(CgModule *m, Diag *d);
/* Textual LLVM IR / assembly of the module (malloc'd), for --dump-ir. */
char *cg_print_ir(CgModule *m);
char *cg_print_asm(CgModule *m, Diag *d);
/* Writes an object file. */
mlc_status cg_emit_object(CgModule *m, const char *path, Diag *d);
/* Writes the kernels' object code as STEM.o, or where the module was optimised in partitions (emit.c) as one
 * object per partition, STEM.0.o, STEM.1.o, ..., emitted in parallel; *nobjs and objs (malloc'd paths, the
 * caller frees them) say which. */
#define CG_MAX_OBJECTS 4
mlc_status cg_emit_objects(CgModule *m, const char *stem, int *nobjs, char *objs[CG_MAX_OBJECTS], Diag *d);
/* Links object files into a shared library with the system compiler driver (cc -shared). */
mlc_status cg_link_shared(const Target *t, int nobjs, const char **objs, const char *out_path, Diag *d);

/* NVPTX modules: the launch table of every kernel added (malloc'd JSON, see nvptx.c); the PTX itself is
 * cg_print_asm's text. */
char *cg_gpu_launches_json(CgModule *m);

/* In-process JIT: takes the module (m is consumed). */
typedef struct CgJit CgJit;
mlc_status cg_jit_create(CgModule *m, CgJit **out, Diag *d);
void *cg_jit_lookup(CgJit *j, const char *sym); /* NULL if absent */
const char *cg_jit_error(const CgJit *j);       /* why the last lookup failed ("" if none) */
void cg_jit_free(CgJit *j);

/* ---- bundle.c: linkable outputs (--output-format so|obj) ----
 * A bundle object holds what a package keeps beside mod.so: constant data (weights, the plan) and, for `obj`,
 * a typed entry point that runs the kernels in plan order with buffers carved from one caller's workspace. */
typedef enum CgArgKind {
  CG_ARG_INPUT,     /* index: the entry point's input number */
  CG_ARG_PARAM,     /* index: CgBundle.params entry (constant data in the object) */
  CG_ARG_WORKSPACE, /* offset: bytes into the workspace */
} CgArgKind;
typedef struct CgArg {
  CgArgKind kind;
  int index;
  int64_t offset;
} CgArg;
typedef struct CgBundleCall {
  const char *kernel; /* kernel symbol (defined in the kernels' object) */
  int nargs;
  const CgArg *args;
} CgBundleCall;
typedef struct CgBlob {
  const char *symbol; /* exported: `const unsigned char symbol[]` and `const uint64_t symbol_size` */
  const void *data;
  size_t size;
} CgBlob;
typedef struct CgBundle {
  int nblobs; /* exported data symbols */
  const CgBlob *blobs;
  const char *entry; /* NULL: no entry point; else defines ENTRY_run and ENTRY_run_ctx */
  int nparams;       /* internal constant data, 64-byte aligned */
  const void *const *param_data;
  const size_t *param_size;
  int ninputs, noutputs;
  int ncalls;
  const CgBundleCall *calls;
  const CgArg *output_src;      /* [noutputs] where each output is when the calls are done */
  const int64_t *output_nbytes; /* [noutputs] bytes copied to the caller's output buffer */
} CgBundle;
/* Writes the bundle object for target t. The entry points are
 *   int32_t ENTRY_run_ctx(const void *const *inputs, void *const *outputs, void *workspace, mlc_kernel_ctx *ctx)
 *   int32_t ENTRY_run(in0, .., inN, out0, .., outM, void *workspace)   (serial; all pointers)
 * returning 0 or the first failing kernel's code. */
mlc_status cg_emit_bundle(const Target *t, const CgBundle *b, const char *path, Diag *d);
/* Links objects into one relocatable object (cc -r); with nkeep > 0 every defined symbol except those listed
 * becomes local (objcopy), so two models linked into one program never clash. */
mlc_status cg_link_relocatable(const Target *t, int nobjs, const char **objs, int nkeep, const char **keep,
                               const char *out_path, Diag *d);

#endif
