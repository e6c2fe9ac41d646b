/* codegen/llvm internal header: the one codegen context shared by the files of this folder.
 *
 * Sectioned by the file that defines each part (c3c llvm_codegen_internal.h). A CgModule owns its own
 * LLVMContext (through an ORC ThreadSafeContext, so the module can be handed to LLJIT), the module, one IR
 * builder, the target machine, and cached LLVM types. While one TIR function (or one outlined parallel body)
 * is emitted, a CgFn holds its per-function state: the LLVM function, the entry block where allocas go, the
 * Var -> value and Buffer -> pointer bindings, the scratch buffers that must be freed on every exit, and the
 * parallel nesting depth.
 *
 * Value representation: bool is i1 in registers and i8 in memory; float16 and bfloat16 are *storage* types:
 * in registers they are f32 rounded to their precision after every operation (exactly the per-op rounding of
 * half/bfloat arithmetic, without relying on soft-float libcalls); in memory float16 is LLVM `half` and
 * bfloat16 is i16 (converted with integer ops, round to nearest even). */
#ifndef MLC_CG_INTERNAL_H
#define MLC_CG_INTERNAL_H
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Error.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include "codegen/llvm/codegen.h"

typedef struct CgBind {
  const void *key; /* Var * or Buffer * */
  LLVMValueRef val;
} CgBind;

typedef struct CgFn {
  LLVMValueRef fn;
  LLVMBasicBlockRef entry; /* open until the function is finished: allocas are appended here */
  LLVMValueRef ctx;        /* the kernel's mlc_kernel_ctx pointer; NULL inside parallel bodies */
  VEC(CgBind) vars;        /* innermost binding last */
  VEC(CgBind) bufs;
  VEC(LLVMValueRef) heap;  /* malloc'd scratch live at the current point, freed on early return */
  int par_depth;           /* > 0 inside an outlined parallel body: nested parallel loops run serially */
  const char *kname;       /* kernel name, for outlined functions and messages */
} CgFn;

/* functions created by the cg_add_func in progress (deleted again if it fails) */
typedef struct CgFnList {
  LLVMValueRef *v;
  int n, cap;
} CgFnList;

struct CgModule {
  Target target;
  Arena *arena; /* scratch for codegen bookkeeping; freed with the module */
  LLVMOrcThreadSafeContextRef tsc;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTargetMachineRef tm;
  LLVMTargetDataRef td;
  bool optimized;
  /* the optimised partitions' bitcode (emit.c), kept so that their objects are emitted in parallel; 0 when the
   * module was optimised whole */
  int nparts;
  LLVMMemoryBufferRef part_bc[CG_MAX_OBJECTS];
  int noutlined;
  Diag *d; /* diagnostic of the call in progress */
  char llvm_error[512]; /* the first error LLVM reported through the context's diagnostic handler */
  CgFn *fn;
  CgFnList *made;
  /* cached types */
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_half, t_f32, t_f64, t_ptr;
  LLVMTypeRef t_kernel; /* i32 (ptr, ptr, ptr) */
  LLVMTypeRef t_body;   /* i32 (i64, i64, ptr) */
  LLVMTypeRef t_launch; /* i32 (ptr, ptr, ptr, i64) */
  unsigned md_loop;     /* "llvm.loop" kind id */
  VEC(const char *) gpu_kernels; /* NVPTX: one launch-table JSON object per kernel (nvptx.c) */
};

/* ---- target.c ---- */
void cg_init_llvm(void); /* initialises the X86, AArch64 and NVPTX backends once */
/* Creates a target machine for t (reloc PIC for objects); NULL with a diagnostic on failure. */
LLVMTargetMachineRef cg_create_tm(const Target *t, bool for_jit, Diag *d);
/* "aarch64-linux-gnu-gcc" for a cross AArch64 target, else "cc". */
const char *cg_cc_driver(const Target *t);

/* ---- codegen_expr.c ---- */
LLVMTypeRef cg_reg_type(CgModule *m, mlc_dtype t, int lanes); /* NULL if the dtype is not supported */
LLVMTypeRef cg_mem_type(CgModule *m, mlc_dtype t);
LLVMValueRef cg_expr(CgModule *m, const Expr *e); /* NULL with m->d set on failure */
LLVMValueRef cg_splat(CgModule *m, LLVMValueRef v, int lanes);
/* Converts a register value of dtype t to its memory form and back. */
LLVMValueRef cg_to_mem(CgModule *m, LLVMValueRef v, mlc_dtype t);
LLVMValueRef cg_from_mem(CgModule *m, LLVMValueRef v, mlc_dtype t);
/* Address of buf[idx] (scalar indices), or a vector of addresses when an index has lanes. *contig is set when
 * the access is a contiguous vector starting at the returned scalar address. */
LLVMValueRef cg_address(CgModule *m, Buffer *buf, int n, Expr *const *idx, int lanes, bool *contig);
LLVMValueRef cg_lookup_var(CgModule *m, const Var *v);
LLVMValueRef cg_lookup_buf(CgModule *m, const Buffer *b);
void cg_bind(CgModule *m, bool is_buf, const void *key, LLVMValueRef v);
void cg_unbind(CgModule *m, bool is_buf);
LLVMValueRef cg_call_intrinsic(CgModule *m, const char *name, LLVMTypeRef overload, int nargs, LLVMValueRef *args);

/* ---- codegen.c ---- */
mlc_status cg_stmt(CgModule *m, const Stmt *s);
LLVMValueRef cg_const_i64(CgModule *m, int64_t v);

/* ---- nvptx.c ---- */
/* cg_add_func for NVPTX targets: the TirFunc becomes launches (entries NAME__kI) recorded in gpu_kernels. */
mlc_status cg_nvptx_add_func(CgModule *m, const TirFunc *f, Diag *d);

/* ---- emit.c ---- */
/* LLVM diagnostic handler: remarks and warnings (e.g. "loop not vectorized") are dropped, errors are kept in
 * the CgModule passed as context (NULL: dropped too). */
void cg_diag_handler(LLVMDiagnosticInfoRef di, void *cgmodule);
mlc_status cg_error_to_diag(LLVMErrorRef err, Diag *d, mlc_status st, const char *what);

#endif
