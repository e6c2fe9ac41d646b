/* codegen/llvm/nvptx.c: TIR kernels -> NVPTX (CUDA) kernels, and the launch table the runtime needs.
 *
 * A GPU kernel cannot loop over its whole output on one thread, nor synchronise the grid between the stages
 * of a fused group, so one TirFunc becomes a sequence of launches:
 *   1. its top-level S_ALLOCATE buffers (intermediate stages) are hoisted out and become "scratch": global
 *      device buffers the runtime allocates and passes after the kernel's own buffers;
 *   2. each remaining top-level statement (one stage's loop nest) is one __global__ entry `NAME__kI`;
 *      when the nest starts with For(FOR_GPU_BLOCK_X) [For(FOR_GPU_THREAD_X)] (te_bind), those extents are
 *      the grid and block size and the loop variables become %ctaid.x / %tid.x; a nest without bound loops
 *      runs as one thread (grid 1, block 1): correct, if slow, for sorts, scans and other extern stages.
 * Entries take every buffer as a generic pointer (global memory is identity-mapped in the generic space),
 * use the ptx_kernel calling convention and are listed in nvvm.annotations. The body is emitted by the
 * shared statement code (codegen.c) into an always-inline `.impl` function, with no runtime context: parallel
 * loops there run serially. Scratch inside a nest stays in local memory (up to 64 KiB; more is unsupported).
 * Math: NVPTX has no libm, so a small device math library (IR text below, linked in once per module) defines
 * expf, logf, powf, sinf, cosf and the other float functions codegen_expr.c calls, from the PTX approximate
 * instructions ex2/lg2/sin/cos (with range reduction) and short polynomials (tanh, erf, atan as in Cephes,
 * sinh/asinh/atanh near 0); llvm.exp/log/pow/sin/cos intrinsic calls are redirected to them (vectors lane by
 * lane). Float64 transcendental functions and any other external call are rejected as unsupported.
 * The launch table (cg_gpu_launches_json) is JSON: {"kernels":[{"name","nparams","scratch":[bytes..],
 * "launches":[{"entry","grid","block"}]}]}; every launch takes the params then the scratch buffers. */
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/llvm/cg_internal.h"

#define NV_LOCAL_SCRATCH_MAX (64 * 1024)
#define NV_MAX_BLOCK 1024

static const char nv_libm_ir[] =
  "declare float @llvm.nvvm.ex2.approx.f(float)\n"
  "declare float @llvm.nvvm.lg2.approx.f(float)\n"
  "declare float @llvm.nvvm.sin.approx.f(float)\n"
  "declare float @llvm.nvvm.cos.approx.f(float)\n"
  "declare float @llvm.fabs.f32(float)\n"
  "declare float @llvm.sqrt.f32(float)\n"
  "declare float @llvm.copysign.f32(float, float)\n"
  "declare float @llvm.rint.f32(float)\n"
  "declare float @llvm.trunc.f32(float)\n"
  "define float @expf(float %x) {\n"
  "  %t = fmul float %x, 0x3FF7154760000000\n"
  "  %r = call float @llvm.nvvm.ex2.approx.f(float %t)\n"
  "  ret float %r\n"
  "}\n"
  "define float @logf(float %x) {\n"
  "  %l = call float @llvm.nvvm.lg2.approx.f(float %x)\n"
  "  %r = fmul float %l, 0x3FE62E4300000000\n"
  "  ret float %r\n"
  "}\n"
  "define float @mlc_nv_reduce2pi(float %x) {\n"
  "  %q = fmul float %x, 0x3FC45F3060000000\n"
  "  %k = call float @llvm.rint.f32(float %q)\n"
  "  %a = fmul float %k, 0x401921FB60000000\n"
  "  %r1 = fsub float %x, %a\n"
  "  %b = fmul float %k, 0xBE8777A5C0000000\n"
  "  %r = fsub float %r1, %b\n"
  "  ret float %r\n"
  "}\n"
  "define float @sinf(float %x) {\n"
  "  %r = call float @mlc_nv_reduce2pi(float %x)\n"
  "  %s = call float @llvm.nvvm.sin.approx.f(float %r)\n"
  "  ret float %s\n"
  "}\n"
  "define float @cosf(float %x) {\n"
  "  %r = call float @mlc_nv_reduce2pi(float %x)\n"
  "  %s = call float @llvm.nvvm.cos.approx.f(float %r)\n"
  "  ret float %s\n"
  "}\n"
  "define float @tanf(float %x) {\n"
  "  %s = call float @sinf(float %x)\n"
  "  %c = call float @cosf(float %x)\n"
  "  %r = fdiv float %s, %c\n"
  "  ret float %r\n"
  "}\n"
  "define float @powf(float %x, float %y) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %l = call float @llvm.nvvm.lg2.approx.f(float %ax)\n"
  "  %yl = fmul float %y, %l\n"
  "  %r = call float @llvm.nvvm.ex2.approx.f(float %yl)\n"
  "  %nr = fneg float %r\n"
  "  %ty = call float @llvm.trunc.f32(float %y)\n"
  "  %yint = fcmp oeq float %ty, %y\n"
  "  %h = fmul float %y, 0x3FE0000000000000\n"
  "  %th = call float @llvm.trunc.f32(float %h)\n"
  "  %hnot = fcmp one float %th, %h\n"
  "  %odd = and i1 %yint, %hnot\n"
  "  %sr = select i1 %odd, float %nr, float %r\n"
  "  %neg = select i1 %yint, float %sr, float 0x7FF8000000000000\n"
  "  %xneg = fcmp olt float %x, 0.0\n"
  "  %r2 = select i1 %xneg, float %neg, float %r\n"
  "  %y0 = fcmp oeq float %y, 0.0\n"
  "  %r3 = select i1 %y0, float 1.0, float %r2\n"
  "  ret float %r3\n"
  "}\n"
  "define float @tanhf(float %x) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %e = fmul float %ax, 0xC007154760000000\n"
  "  %t = call float @llvm.nvvm.ex2.approx.f(float %e)\n"
  "  %n = fsub float 1.0, %t\n"
  "  %d = fadd float 1.0, %t\n"
  "  %big = fdiv float %n, %d\n"
  "  %x2 = fmul float %ax, %ax\n"
  "  %p1 = fmul float %x2, 0x3F9664F480000000\n"
  "  %p2 = fadd float %p1, 0xBFABA1BA20000000\n"
  "  %p3 = fmul float %p2, %x2\n"
  "  %p4 = fadd float %p3, 0x3FC1111120000000\n"
  "  %p5 = fmul float %p4, %x2\n"
  "  %p6 = fadd float %p5, 0xBFD5555560000000\n"
  "  %p7 = fmul float %p6, %x2\n"
  "  %p8 = fmul float %p7, %ax\n"
  "  %small = fadd float %p8, %ax\n"
  "  %issmall = fcmp olt float %ax, 0x3FB99999A0000000\n"
  "  %r = select i1 %issmall, float %small, float %big\n"
  "  %s = call float @llvm.copysign.f32(float %r, float %x)\n"
  "  ret float %s\n"
  "}\n"
  "define float @erff(float %x) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %x2 = fmul float %ax, %ax\n"
  "  %q1 = fmul float %x2, 0xBEE71DE3A0000000\n"
  "  %q2 = fadd float %q1, 0x3F1C01C020000000\n"
  "  %q3 = fmul float %q2, %x2\n"
  "  %q4 = fadd float %q3, 0xBF48D30180000000\n"
  "  %q5 = fmul float %q4, %x2\n"
  "  %q6 = fadd float %q5, 0x3F72F684C0000000\n"
  "  %q7 = fmul float %q6, %x2\n"
  "  %q8 = fadd float %q7, 0xBF98618620000000\n"
  "  %q9 = fmul float %q8, %x2\n"
  "  %q10 = fadd float %q9, 0x3FB99999A0000000\n"
  "  %q11 = fmul float %q10, %x2\n"
  "  %q12 = fadd float %q11, 0xBFD5555560000000\n"
  "  %q13 = fmul float %q12, %x2\n"
  "  %q14 = fadd float %q13, 1.0\n"
  "  %q15 = fmul float %q14, %ax\n"
  "  %small = fmul float %q15, 0x3FF20DD760000000\n"
  "  %px = fmul float %ax, 0x3FD4F740A0000000\n"
  "  %pd = fadd float %px, 1.0\n"
  "  %t = fdiv float 1.0, %pd\n"
  "  %a1 = fmul float %t, 0x3FF0FB8440000000\n"
  "  %a2 = fadd float %a1, 0xBFF7401C60000000\n"
  "  %a3 = fmul float %a2, %t\n"
  "  %a4 = fadd float %a3, 0x3FF6BE1C60000000\n"
  "  %a5 = fmul float %a4, %t\n"
  "  %a6 = fadd float %a5, 0xBFD23531C0000000\n"
  "  %a7 = fmul float %a6, %t\n"
  "  %a8 = fadd float %a7, 0x3FD04F20C0000000\n"
  "  %a9 = fmul float %a8, %t\n"
  "  %nx2 = fneg float %x2\n"
  "  %e = call float @expf(float %nx2)\n"
  "  %a10 = fmul float %a9, %e\n"
  "  %big = fsub float 1.0, %a10\n"
  "  %issmall = fcmp olt float %ax, 0x3FE0000000000000\n"
  "  %r = select i1 %issmall, float %small, float %big\n"
  "  %s = call float @llvm.copysign.f32(float %r, float %x)\n"
  "  ret float %s\n"
  "}\n"
  "define float @atanf(float %x) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %gt1 = fcmp ogt float %ax, 0x4003504F40000000\n"
  "  %gt2 = fcmp ogt float %ax, 0x3FDA8279A0000000\n"
  "  %inv = fdiv float -1.0, %ax\n"
  "  %m1 = fsub float %ax, 1.0\n"
  "  %p1 = fadd float %ax, 1.0\n"
  "  %mid = fdiv float %m1, %p1\n"
  "  %xr0 = select i1 %gt2, float %mid, float %ax\n"
  "  %xr = select i1 %gt1, float %inv, float %xr0\n"
  "  %y00 = select i1 %gt2, float 0x3FE921FB60000000, float 0.0\n"
  "  %y0 = select i1 %gt1, float 0x3FF921FB60000000, float %y00\n"
  "  %z = fmul float %xr, %xr\n"
  "  %c1 = fmul float %z, 0x3FB49E1A20000000\n"
  "  %c2 = fadd float %c1, 0xBFC1C370A0000000\n"
  "  %c3 = fmul float %c2, %z\n"
  "  %c4 = fadd float %c3, 0x3FC9924BE0000000\n"
  "  %c5 = fmul float %c4, %z\n"
  "  %c6 = fadd float %c5, 0xBFD5554540000000\n"
  "  %c7 = fmul float %c6, %z\n"
  "  %c8 = fmul float %c7, %xr\n"
  "  %c9 = fadd float %c8, %xr\n"
  "  %r = fadd float %y0, %c9\n"
  "  %s = call float @llvm.copysign.f32(float %r, float %x)\n"
  "  ret float %s\n"
  "}\n"
  "define float @atan2f(float %y, float %x) {\n"
  "  %q = fdiv float %y, %x\n"
  "  %a = call float @atanf(float %q)\n"
  "  %pi = call float @llvm.copysign.f32(float 0x400921FB60000000, float %y)\n"
  "  %ap = fadd float %a, %pi\n"
  "  %xneg = fcmp olt float %x, 0.0\n"
  "  %r1 = select i1 %xneg, float %ap, float %a\n"
  "  %hp = call float @llvm.copysign.f32(float 0x3FF921FB60000000, float %y)\n"
  "  %x0 = fcmp oeq float %x, 0.0\n"
  "  %y0 = fcmp oeq float %y, 0.0\n"
  "  %z = select i1 %y0, float %y, float %hp\n"
  "  %r = select i1 %x0, float %z, float %r1\n"
  "  ret float %r\n"
  "}\n"
  "define float @asinf(float %x) {\n"
  "  %a = fsub float 1.0, %x\n"
  "  %b = fadd float 1.0, %x\n"
  "  %c = fmul float %a, %b\n"
  "  %s = call float @llvm.sqrt.f32(float %c)\n"
  "  %r = call float @atan2f(float %x, float %s)\n"
  "  ret float %r\n"
  "}\n"
  "define float @acosf(float %x) {\n"
  "  %a = fsub float 1.0, %x\n"
  "  %b = fadd float 1.0, %x\n"
  "  %c = fmul float %a, %b\n"
  "  %s = call float @llvm.sqrt.f32(float %c)\n"
  "  %r = call float @atan2f(float %s, float %x)\n"
  "  ret float %r\n"
  "}\n"
  "define float @sinhf(float %x) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %e = call float @expf(float %ax)\n"
  "  %ie = fdiv float 1.0, %e\n"
  "  %d = fsub float %e, %ie\n"
  "  %big = fmul float %d, 0x3FE0000000000000\n"
  "  %x2 = fmul float %ax, %ax\n"
  "  %p1 = fmul float %x2, 0x3F2A01A020000000\n"
  "  %p2 = fadd float %p1, 0x3F81111120000000\n"
  "  %p3 = fmul float %p2, %x2\n"
  "  %p4 = fadd float %p3, 0x3FC5555560000000\n"
  "  %p5 = fmul float %p4, %x2\n"
  "  %p6 = fmul float %p5, %ax\n"
  "  %small = fadd float %p6, %ax\n"
  "  %issmall = fcmp olt float %ax, 0x3FB99999A0000000\n"
  "  %r = select i1 %issmall, float %small, float %big\n"
  "  %s = call float @llvm.copysign.f32(float %r, float %x)\n"
  "  ret float %s\n"
  "}\n"
  "define float @coshf(float %x) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %e = call float @expf(float %ax)\n"
  "  %ie = fdiv float 1.0, %e\n"
  "  %d = fadd float %e, %ie\n"
  "  %r = fmul float %d, 0x3FE0000000000000\n"
  "  ret float %r\n"
  "}\n"
  "define float @asinhf(float %x) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %x2 = fmul float %ax, %ax\n"
  "  %x21 = fadd float %x2, 1.0\n"
  "  %sq = call float @llvm.sqrt.f32(float %x21)\n"
  "  %sum = fadd float %ax, %sq\n"
  "  %big0 = call float @logf(float %sum)\n"
  "  %lx = call float @logf(float %ax)\n"
  "  %huge = fadd float %lx, 0x3FE62E4300000000\n"
  "  %ishuge = fcmp ogt float %ax, 0x43ABC16D60000000\n"
  "  %big = select i1 %ishuge, float %huge, float %big0\n"
  "  %p1 = fmul float %x2, 0xBFA6DB6DC0000000\n"
  "  %p2 = fadd float %p1, 0x3FB3333340000000\n"
  "  %p3 = fmul float %p2, %x2\n"
  "  %p4 = fadd float %p3, 0xBFC5555560000000\n"
  "  %p5 = fmul float %p4, %x2\n"
  "  %p6 = fmul float %p5, %ax\n"
  "  %small = fadd float %p6, %ax\n"
  "  %issmall = fcmp olt float %ax, 0x3FB99999A0000000\n"
  "  %r = select i1 %issmall, float %small, float %big\n"
  "  %s = call float @llvm.copysign.f32(float %r, float %x)\n"
  "  ret float %s\n"
  "}\n"
  "define float @acoshf(float %x) {\n"
  "  %a = fsub float %x, 1.0\n"
  "  %b = fadd float %x, 1.0\n"
  "  %c = fmul float %a, %b\n"
  "  %sq = call float @llvm.sqrt.f32(float %c)\n"
  "  %sum = fadd float %x, %sq\n"
  "  %r = call float @logf(float %sum)\n"
  "  ret float %r\n"
  "}\n"
  "define float @atanhf(float %x) {\n"
  "  %ax = call float @llvm.fabs.f32(float %x)\n"
  "  %n = fadd float 1.0, %ax\n"
  "  %d = fsub float 1.0, %ax\n"
  "  %q = fdiv float %n, %d\n"
  "  %l = call float @logf(float %q)\n"
  "  %big = fmul float %l, 0x3FE0000000000000\n"
  "  %x2 = fmul float %ax, %ax\n"
  "  %p1 = fmul float %x2, 0x3FBC71C720000000\n"
  "  %p2 = fadd float %p1, 0x3FC24924A0000000\n"
  "  %p3 = fmul float %p2, %x2\n"
  "  %p4 = fadd float %p3, 0x3FC99999A0000000\n"
  "  %p5 = fmul float %p4, %x2\n"
  "  %p6 = fadd float %p5, 0x3FD5555560000000\n"
  "  %p7 = fmul float %p6, %x2\n"
  "  %p8 = fmul float %p7, %ax\n"
  "  %small = fadd float %p8, %ax\n"
  "  %issmall = fcmp olt float %ax, 0x3FB99999A0000000\n"
  "  %r = select i1 %issmall, float %small, float %big\n"
  "  %s = call float @llvm.copysign.f32(float %r, float %x)\n"
  "  ret float %s\n"
  "}\n";

/* Links the device math library into m's module once. */
static mlc_status link_libm(CgModule *m, Diag *d) {
  if (LLVMGetNamedFunction(m->mod, "mlc_nv_reduce2pi")) return MLC_OK;
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(nv_libm_ir, sizeof nv_libm_ir - 1, "nv_libm");
  LLVMModuleRef lib = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(m->ctx, buf, &lib, &msg)) { /* consumes buf */
    diag_set(d, MLC_ERR_INTERNAL, "internal error: NVPTX math library does not parse: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return MLC_ERR_INTERNAL;
  }
  LLVMSetTarget(lib, m->target.triple);
  LLVMSetModuleDataLayout(lib, m->td);
  if (LLVMLinkModules2(m->mod, lib)) /* consumes lib */
    return diag_set(d, MLC_ERR_INTERNAL, "internal error: cannot link the NVPTX math library");
  for (LLVMValueRef f = LLVMGetFirstFunction(m->mod); f; f = LLVMGetNextFunction(f)) {
    size_t n;
    const char *name = LLVMGetValueName2(f, &n);
    if (LLVMCountBasicBlocks(f) && strncmp(name, "llvm.", 5)) LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  return MLC_OK;
}

/* ---- redirecting math intrinsics to the library ---- */

static const struct {
  const char *prefix, *fn;
} nv_redirect[] = {
    {"llvm.exp.", "expf"}, {"llvm.log.", "logf"}, {"llvm.pow.", "powf"}, {"llvm.sin.", "sinf"}, {"llvm.cos.", "cosf"},
};

static LLVMValueRef scalar_call(CgModule *m, LLVMValueRef fn, int nargs, LLVMValueRef *args) {
  LLVMTypeRef ps[2] = {m->t_f32, m->t_f32};
  LLVMTypeRef ft = LLVMFunctionType(m->t_f32, ps, (unsigned)nargs, 0);
  int lanes = LLVMGetTypeKind(LLVMTypeOf(args[0])) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(LLVMTypeOf(args[0])) : 1;
  if (lanes == 1) return LLVMBuildCall2(m->b, ft, fn, args, (unsigned)nargs, "");
  LLVMValueRef out = LLVMGetPoison(LLVMTypeOf(args[0]));
  for (int i = 0; i < lanes; i++) {
    LLVMValueRef li = LLVMConstInt(m->t_i32, (unsigned)i, 0), sa[2];
    for (int j = 0; j < nargs; j++) sa[j] = LLVMBuildExtractElement(m->b, args[j], li, "");
    out = LLVMBuildInsertElement(m->b, out, LLVMBuildCall2(m->b, ft, fn, sa, (unsigned)nargs, ""), li, "");
  }
  return out;
}

static LLVMTypeRef scalar_of(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

/* Rewrites the math calls of fn and rejects calls the GPU cannot make. */
static mlc_status fix_calls(CgModule *m, LLVMValueRef fn, const char *kname, Diag *d) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef next;
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = next) {
      next = LLVMGetNextInstruction(in);
      if (LLVMGetInstructionOpcode(in) != LLVMCall) continue;
      LLVMValueRef callee = LLVMGetCalledValue(in);
      if (!callee || LLVMGetValueKind(callee) != LLVMFunctionValueKind) continue;
      size_t n;
      const char *name = LLVMGetValueName2(callee, &n);
      if (LLVMCountBasicBlocks(callee)) continue;
      int r = -1;
      for (size_t i = 0; i < countof(nv_redirect); i++)
        if (!strncmp(name, nv_redirect[i].prefix, strlen(nv_redirect[i].prefix))) r = (int)i;
      if (r < 0) {
        if (!strncmp(name, "llvm.", 5)) continue; /* other intrinsics: the NVPTX backend lowers them */
        return diag_set(d, MLC_ERR_UNSUPPORTED,
                        "kernel '%s': calls '%s', which has no implementation on %s (float64 math and heap scratch "
                        "are not supported on GPU targets)", kname, name, m->target.triple);
      }
      int nargs = LLVMGetNumArgOperands(in);
      LLVMValueRef args[2];
      for (int i = 0; i < nargs && i < 2; i++) args[i] = LLVMGetOperand(in, (unsigned)i);
      if (scalar_of(LLVMTypeOf(args[0])) != m->t_f32)
        return diag_set(d, MLC_ERR_UNSUPPORTED, "kernel '%s': '%s' is supported for float32 only on %s", kname, name,
                        m->target.triple);
      LLVMValueRef lib = LLVMGetNamedFunction(m->mod, nv_redirect[r].fn);
      if (!lib) return diag_set(d, MLC_ERR_INTERNAL, "internal error: NVPTX math library lacks %s", nv_redirect[r].fn);
      LLVMPositionBuilderBefore(m->b, in);
      LLVMValueRef nv = scalar_call(m, lib, nargs, args);
      LLVMReplaceAllUsesWith(in, nv);
      LLVMInstructionEraseFromParent(in);
    }
  }
  return MLC_OK;
}

/* ---- launches ---- */

typedef VEC(const Stmt *) StmtVec;
typedef VEC(Buffer *) BufVec;

static void flatten(Arena *a, const Stmt *s, BufVec *scratch, StmtVec *nests) {
  if (!s) return;
  if (s->kind == S_ALLOCATE) {
    vec_push(a, scratch, s->alloc.buf);
    flatten(a, s->alloc.body, scratch, nests);
  } else if (s->kind == S_SEQ) {
    for (int i = 0; i < s->seq.n; i++) flatten(a, s->seq.stmts[i], scratch, nests);
  } else
    vec_push(a, nests, s);
}

static int64_t buf_bytes(const Buffer *b) {
  int64_t n = mlc_dtype_size(b->dtype);
  for (int i = 0; i < b->ndim; i++) n *= b->shape[i];
  return n;
}

/* Largest S_ALLOCATE inside s (bytes). */
static int64_t max_inner_alloc(const Stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case S_ALLOCATE: {
    int64_t a = buf_bytes(s->alloc.buf), b = max_inner_alloc(s->alloc.body);
    return a > b ? a : b;
  }
  case S_FOR: return max_inner_alloc(s->loop.body);
  case S_SEQ: {
    int64_t mx = 0;
    for (int i = 0; i < s->seq.n; i++) {
      int64_t v = max_inner_alloc(s->seq.stmts[i]);
      if (v > mx) mx = v;
    }
    return mx;
  }
  case S_IF: {
    int64_t a = max_inner_alloc(s->ifs.then_s), b = max_inner_alloc(s->ifs.else_s);
    return a > b ? a : b;
  }
  case S_LET: return max_inner_alloc(s->let.body);
  default: return 0;
  }
}

static bool bound_loop(const Stmt *s, ForKind k, int64_t *extent) {
  if (!s || s->kind != S_FOR || s->loop.for_kind != k) return false;
  if (s->loop.min->kind != E_INT || s->loop.min->ival != 0 || s->loop.extent->kind != E_INT) return false;
  *extent = s->loop.extent->ival;
  return true;
}

static void add_attr(CgModule *m, LLVMValueRef fn, unsigned idx, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(m->ctx, kind, 0));
}

static LLVMValueRef sreg(CgModule *m, const char *name) {
  LLVMTypeRef ft = LLVMFunctionType(m->t_i32, NULL, 0, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(m->mod, name);
  if (!fn) fn = LLVMAddFunction(m->mod, name, ft);
  return LLVMBuildCall2(m->b, ft, fn, NULL, 0, "");
}

static void annotate(CgModule *m, LLVMValueRef fn, const char *key, int val) {
  LLVMMetadataRef ops[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(m->ctx, key, strlen(key)),
                            LLVMValueAsMetadata(LLVMConstInt(m->t_i32, (unsigned)val, 0))};
  LLVMAddNamedMetadataOperand(m->mod, "nvvm.annotations",
                              LLVMMetadataAsValue(m->ctx, LLVMMDNodeInContext2(m->ctx, ops, 3)));
}

typedef VEC(LLVMValueRef) FnVec;

/* One launch: NAME__kI(params..., scratch...) over nest. */
static mlc_status emit_launch(CgModule *m, const TirFunc *f, int li, const Stmt *nest, BufVec *scratch, FnVec *made,
                              StrBuf *json, Diag *d) {
  int64_t grid = 1, block = 1;
  const Var *bvar = NULL, *tvar = NULL;
  const Stmt *body = nest;
  if (bound_loop(body, FOR_GPU_BLOCK_X, &grid)) bvar = body->loop.var, body = body->loop.body;
  if (bound_loop(body, FOR_GPU_THREAD_X, &block)) tvar = body->loop.var, body = body->loop.body;
  if (grid < 1 || grid > 0x7fffffff || block < 1 || block > NV_MAX_BLOCK)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "kernel '%s': launch of %lld blocks of %lld threads is out of range",
                    f->name, (long long)grid, (long long)block);
  if (max_inner_alloc(body) > NV_LOCAL_SCRATCH_MAX)
    return diag_set(d, MLC_ERR_UNSUPPORTED,
                    "kernel '%s': a stage needs %lld bytes of per-thread scratch; at most %d on GPU targets", f->name,
                    (long long)max_inner_alloc(body), NV_LOCAL_SCRATCH_MAX);
  int np = f->nparams + scratch->n;
  const char *entry = arena_printf(m->arena, "%s__k%d", f->name, li);
  LLVMTypeRef *pt = arena_alloc(m->arena, sizeof(LLVMTypeRef) * (size_t)(np + 1));
  for (int i = 0; i <= np; i++) pt[i] = m->t_ptr;
  LLVMTypeRef ift = LLVMFunctionType(m->t_i32, pt, (unsigned)(np + 1), 0);
  LLVMValueRef impl = LLVMAddFunction(m->mod, arena_printf(m->arena, "%s.impl", entry), ift);
  vec_push(m->arena, made, impl);
  LLVMSetLinkage(impl, LLVMInternalLinkage);
  add_attr(m, impl, LLVMAttributeFunctionIndex, "nounwind");
  add_attr(m, impl, LLVMAttributeFunctionIndex, "alwaysinline");
  for (int i = 0; i < np; i++) add_attr(m, impl, (unsigned)i + 1, "noalias");
  CgFn F;
  memset(&F, 0, sizeof F);
  F.fn = impl;
  F.kname = entry;
  F.par_depth = 1; /* no runtime context on the device: parallel loops run serially */
  F.entry = LLVMAppendBasicBlockInContext(m->ctx, impl, "entry");
  LLVMPositionBuilderAtEnd(m->b, LLVMAppendBasicBlockInContext(m->ctx, impl, "body"));
  m->fn = &F;
  for (int i = 0; i < f->nparams; i++) cg_bind(m, true, f->params[i], LLVMGetParam(impl, (unsigned)i));
  for (int i = 0; i < scratch->n; i++) cg_bind(m, true, scratch->v[i], LLVMGetParam(impl, (unsigned)(f->nparams + i)));
  mlc_status st = MLC_OK;
  const Var *vars[2] = {bvar, tvar};
  const char *regs[2] = {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.tid.x"};
  for (int k = 0; k < 2 && !st; k++) {
    if (!vars[k]) continue;
    LLVMTypeRef vt = cg_reg_type(m, vars[k]->dtype, 1);
    if (!vt || LLVMGetTypeKind(vt) != LLVMIntegerTypeKind)
      st = diag_set(d, MLC_ERR_INTERNAL, "codegen: bound loop variable '%s' is not an integer", vars[k]->name);
    else
      cg_bind(m, false, vars[k], LLVMBuildZExt(m->b, sreg(m, regs[k]), vt, ""));
  }
  if (!st) st = cg_stmt(m, body);
  m->fn = NULL;
  if (st) return diag_ok(d) ? diag_set(d, st, "codegen failed for kernel '%s'", entry) : st;
  LLVMBuildRet(m->b, LLVMConstInt(m->t_i32, 0, 0));
  LLVMPositionBuilderAtEnd(m->b, F.entry);
  LLVMBuildBr(m->b, LLVMGetNextBasicBlock(F.entry));
  if ((st = fix_calls(m, impl, entry, d))) return st;

  LLVMValueRef k = LLVMAddFunction(m->mod, entry, LLVMFunctionType(m->t_void, pt, (unsigned)np, 0));
  vec_push(m->arena, made, k);
  LLVMSetFunctionCallConv(k, LLVMPTXKernelCallConv);
  add_attr(m, k, LLVMAttributeFunctionIndex, "nounwind");
  annotate(m, k, "kernel", 1);
  annotate(m, k, "maxntidx", (int)block);
  LLVMPositionBuilderAtEnd(m->b, LLVMAppendBasicBlockInContext(m->ctx, k, "entry"));
  LLVMValueRef *args = arena_alloc(m->arena, sizeof(LLVMValueRef) * (size_t)(np + 1));
  for (int i = 0; i < np; i++) args[i] = LLVMGetParam(k, (unsigned)i);
  args[np] = LLVMConstNull(m->t_ptr);
  LLVMBuildCall2(m->b, ift, impl, args, (unsigned)(np + 1), "");
  LLVMBuildRetVoid(m->b);
  sb_printf(json, "%s{\"entry\":\"%s\",\"grid\":%lld,\"block\":%lld}", li ? "," : "", entry, (long long)grid,
            (long long)block);
  return MLC_OK;
}

mlc_status cg_nvptx_add_func(CgModule *m, const TirFunc *f, Diag *d) {
  m->d = d;
  if (m->optimized) return diag_set(d, MLC_ERR_INTERNAL, "kernel '%s' added after the module was optimised", f->name);
  for (int i = 0; i < f->nparams; i++)
    if (!cg_mem_type(m, f->params[i]->dtype))
      return diag_set(d, MLC_ERR_UNSUPPORTED, "kernel '%s': buffer '%s' has unsupported dtype %s", f->name,
                      f->params[i]->name, mlc_dtype_name(f->params[i]->dtype));
  mlc_status st = link_libm(m, d);
  if (st) return st;
  BufVec scratch = {0};
  StmtVec nests = {0};
  flatten(m->arena, f->body, &scratch, &nests);
  FnVec made = {0};
  StrBuf json = {0};
  sb_printf(&json, "{\"name\":\"%s\",\"nparams\":%d,\"scratch\":[", f->name, f->nparams);
  for (int i = 0; i < scratch.n; i++) {
    int64_t nb = buf_bytes(scratch.v[i]);
    sb_printf(&json, "%s%lld", i ? "," : "", (long long)(nb > 0 ? nb : 1));
  }
  sb_printf(&json, "],\"launches\":[");
  for (int i = 0; i < nests.n && !st; i++) st = emit_launch(m, f, i, nests.v[i], &scratch, &made, &json, d);
  if (st) {
    for (int i = 0; i < made.n; i++) LLVMReplaceAllUsesWith(made.v[i], LLVMGetPoison(LLVMTypeOf(made.v[i])));
    for (int i = 0; i < made.n; i++) LLVMDeleteFunction(made.v[i]);
    sb_free(&json);
    return st;
  }
  sb_printf(&json, "]}");
  const char *entry = arena_strdup(m->arena, json.s);
  sb_free(&json);
  vec_push(m->arena, &m->gpu_kernels, entry);
  return MLC_OK;
}

char *cg_gpu_launches_json(CgModule *m) {
  StrBuf b = {0};
  sb_printf(&b, "{\"kernels\":[");
  for (int i = 0; i < m->gpu_kernels.n; i++) sb_printf(&b, "%s\n%s", i ? "," : "", m->gpu_kernels.v[i]);
  sb_printf(&b, "]}\n");
  return b.s;
}
