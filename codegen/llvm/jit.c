/* codegen/llvm/jit.c: in-process machine code through ORC LLJIT, for tests, constant folding and tuning.
 *
 * The CgModule is optimised with the same pipeline as for objects, then handed to LLJIT as a ThreadSafeModule
 * (the module's LLVMContext belongs to its ThreadSafeContext, so the JIT can own it). LLJIT is built from a
 * target machine made from the module's Target, so the JIT compiles for the same cpu and features. Symbols the
 * kernels call (libm's expf/tanhf/..., aligned_alloc/free) resolve against the host process, with libm.so.6
 * added explicitly in case the executable does not link it. Every LLVMErrorRef becomes a Diag message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/LLJIT.h>
#include "codegen/llvm/cg_internal.h"

struct CgJit {
  LLVMOrcLLJITRef jit;
  char err[1024]; /* the last lookup failure */
};

static bool same_arch_as_host(const Target *t) {
#if defined(__x86_64__)
  return t->arch == ARCH_X86_64;
#elif defined(__aarch64__)
  return t->arch == ARCH_AARCH64;
#else
  return false;
#endif
}

mlc_status cg_jit_create(CgModule *m, CgJit **out, Diag *d) {
  *out = NULL;
  mlc_status st;
  if (m->target.kind != TARGET_CPU || !same_arch_as_host(&m->target)) {
    st = diag_set(d, MLC_ERR_UNSUPPORTED, "cannot JIT code for target '%s' (%s) on this host: JIT runs host CPU code only",
                  m->target.str, m->target.triple);
    cg_module_free(m);
    return st;
  }
  if ((st = cg_optimize(m, d))) {
    cg_module_free(m);
    return st;
  }
  LLVMTargetMachineRef tm = cg_create_tm(&m->target, true, d);
  if (!tm) {
    cg_module_free(m);
    return d->status;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  LLVMOrcLLJITRef jit;
  LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, builder);
  if (err) {
    cg_module_free(m);
    return cg_error_to_diag(err, d, MLC_ERR_INTERNAL, "cannot create the LLVM JIT");
  }
  LLVMOrcJITDylibRef main_jd = LLVMOrcLLJITGetMainJITDylib(jit);
  char prefix = LLVMOrcLLJITGetGlobalPrefix(jit);
  LLVMOrcDefinitionGeneratorRef gen;
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, prefix, NULL, NULL);
  if (err) {
    LLVMOrcDisposeLLJIT(jit);
    cg_module_free(m);
    return cg_error_to_diag(err, d, MLC_ERR_INTERNAL, "cannot make process symbols visible to the JIT");
  }
  LLVMOrcJITDylibAddGenerator(main_jd, gen);
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForPath(&gen, "libm.so.6", prefix, NULL, NULL);
  if (err) LLVMConsumeError(err); /* the process generator may still find libm */
  else LLVMOrcJITDylibAddGenerator(main_jd, gen);

  LLVMContextSetDiagnosticHandler(m->ctx, cg_diag_handler, NULL); /* the context outlives m */
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m->mod, m->tsc);
  m->mod = NULL; /* owned by tsm now */
  err = LLVMOrcLLJITAddLLVMIRModule(jit, main_jd, tsm);
  cg_module_free(m);
  if (err) {
    LLVMErrorRef e2 = LLVMOrcDisposeLLJIT(jit);
    if (e2) LLVMConsumeError(e2);
    return cg_error_to_diag(err, d, MLC_ERR_INTERNAL, "cannot add the module to the JIT");
  }
  CgJit *j = calloc(1, sizeof *j);
  if (!j) {
    LLVMErrorRef e2 = LLVMOrcDisposeLLJIT(jit);
    if (e2) LLVMConsumeError(e2);
    return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  }
  j->jit = jit;
  *out = j;
  return MLC_OK;
}

void *cg_jit_lookup(CgJit *j, const char *sym) {
  LLVMOrcJITTargetAddress addr = 0;
  LLVMErrorRef err = LLVMOrcLLJITLookup(j->jit, &addr, sym);
  if (err) {
    char *msg = LLVMGetErrorMessage(err);
    snprintf(j->err, sizeof j->err, "JIT lookup of '%s' failed: %s", sym, msg ? msg : "");
    LLVMDisposeErrorMessage(msg);
    return NULL;
  }
  return (void *)(uintptr_t)addr;
}

const char *cg_jit_error(const CgJit *j) { return j->err; }

void cg_jit_free(CgJit *j) {
  if (!j) return;
  LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->jit);
  if (err) LLVMConsumeError(err);
  free(j);
}
