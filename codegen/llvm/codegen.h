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
/* Links object files into a shared library with the system compiler driver (cc -shared). */
mlc_status cg_link_shared(const Target *t, int nobjs, const char **objs, const char *out_path, Diag *d);

/* In-process JIT: takes the module (m is consumed). */
typedef struct CgJit CgJit;
mlc_status cg_jit_create(CgModule *m, CgJit **out, Diag *d);
void *cg_jit_lookup(CgJit *j, const char *sym); /* NULL if absent */
const char *cg_jit_error(const CgJit *j);       /* why the last lookup failed ("" if none) */
void cg_jit_free(CgJit *j);

#endif
