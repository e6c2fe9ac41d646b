/* codegen/llvm/bundle.c: the bundle object of the linkable outputs (`mlc compile --output-format so|obj`).
 *
 * A fresh LLVM module (its own context, the target's triple and data layout) receives
 *   - exported blobs: `const unsigned char SYM[]` plus `const uint64_t SYM_size` (the plan, params and meta
 *     that `--output-format so` embeds for mlc_module_load);
 *   - private constant globals, 64-byte aligned, one per weight (`obj`);
 *   - ENTRY_run_ctx(inputs, outputs, workspace, ctx): the plan's calls in order, each building its argument
 *     array from the caller's inputs, the weights and the workspace at the memory plan's offsets, calling the
 *     kernel through the common kernel ABI and returning its code on failure, then copying each graph output
 *     into the caller's buffer (Glow bundles / TVM AOT's tvmgen_default_run);
 *   - ENTRY_run(in.., out.., workspace): the same on a serial mlc_kernel_ctx built on the stack, so a C
 *     program needs no thread pool (and no runtime library) to run the model.
 * The object is emitted straight from memory at -O2 (the code is a flat call sequence). Linking several
 * objects into one relocatable object runs `cc -r`, then `objcopy --keep-global-symbol` makes every other
 * defined symbol local so kernels of two models never clash. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "codegen/llvm/cg_internal.h"

extern char **environ;

typedef struct Bx {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef i8, i32, i64, ptr, kernel, body, launch;
  LLVMValueRef *params; /* [nparams] globals */
} Bx;

static LLVMValueRef data_global(Bx *x, const char *name, const void *data, size_t size, bool exported) {
  LLVMValueRef init = LLVMConstStringInContext2(x->ctx, size ? data : "", size, true);
  LLVMValueRef g = LLVMAddGlobal(x->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, true);
  LLVMSetAlignment(g, 64);
  LLVMSetLinkage(g, exported ? LLVMExternalLinkage : LLVMPrivateLinkage);
  if (!exported) LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  return g;
}

static void add_blob(Bx *x, const CgBlob *blob) {
  data_global(x, blob->symbol, blob->data, blob->size, true);
  size_t n = strlen(blob->symbol) + 8;
  char *sym = malloc(n);
  if (!sym) return;
  snprintf(sym, n, "%s_size", blob->symbol);
  LLVMValueRef g = LLVMAddGlobal(x->mod, x->i64, sym);
  LLVMSetInitializer(g, LLVMConstInt(x->i64, (unsigned long long)blob->size, 0));
  LLVMSetGlobalConstant(g, true);
  free(sym);
}

static LLVMValueRef gep8(Bx *x, LLVMValueRef base, int64_t off) {
  if (off == 0) return base;
  LLVMValueRef idx = LLVMConstInt(x->i64, (unsigned long long)off, 0);
  return LLVMBuildInBoundsGEP2(x->b, x->i8, base, &idx, 1, "");
}

static LLVMValueRef load_slot(Bx *x, LLVMValueRef array, int i) {
  LLVMValueRef idx = LLVMConstInt(x->i64, (unsigned long long)i, 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(x->b, x->ptr, array, &idx, 1, "");
  return LLVMBuildLoad2(x->b, x->ptr, p, "");
}

static void store_slot(Bx *x, LLVMValueRef array, int i, LLVMValueRef v) {
  LLVMValueRef idx = LLVMConstInt(x->i64, (unsigned long long)i, 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(x->b, x->ptr, array, &idx, 1, "");
  LLVMBuildStore(x->b, v, p);
}

static LLVMValueRef arg_ptr(Bx *x, const CgArg *a, LLVMValueRef inputs, LLVMValueRef ws) {
  switch (a->kind) {
  case CG_ARG_INPUT: return load_slot(x, inputs, a->index);
  case CG_ARG_PARAM: return x->params[a->index];
  case CG_ARG_WORKSPACE: return gep8(x, ws, a->offset);
  }
  return LLVMConstNull(x->ptr);
}

static mlc_status check_bundle(const CgBundle *b, Diag *d) {
  for (int c = 0; c < b->ncalls; c++)
    for (int i = 0; i < b->calls[c].nargs; i++) {
      const CgArg *a = &b->calls[c].args[i];
      if ((a->kind == CG_ARG_INPUT && (a->index < 0 || a->index >= b->ninputs)) ||
          (a->kind == CG_ARG_PARAM && (a->index < 0 || a->index >= b->nparams)) ||
          (a->kind == CG_ARG_WORKSPACE && a->offset < 0))
        return diag_set(d, MLC_ERR_INTERNAL, "internal error: bundle call %d (%s): argument %d out of range", c,
                        b->calls[c].kernel, i);
    }
  return MLC_OK;
}

/* i32 run_ctx(ptr inputs, ptr outputs, ptr workspace, ptr ctx) */
static LLVMValueRef build_run_ctx(Bx *x, const CgBundle *bd, const char *name) {
  LLVMTypeRef ps[4] = {x->ptr, x->ptr, x->ptr, x->ptr};
  LLVMValueRef fn = LLVMAddFunction(x->mod, name, LLVMFunctionType(x->i32, ps, 4, 0));
  LLVMValueRef inputs = LLVMGetParam(fn, 0), outputs = LLVMGetParam(fn, 1), ws = LLVMGetParam(fn, 2),
               kctx = LLVMGetParam(fn, 3);
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(x->ctx, fn, "entry");
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(x->ctx, fn, "fail");
  LLVMPositionBuilderAtEnd(x->b, fail);
  LLVMValueRef phi = LLVMBuildPhi(x->b, x->i32, "rc");
  LLVMBuildRet(x->b, phi);
  LLVMPositionBuilderAtEnd(x->b, bb);
  int maxargs = 1;
  for (int c = 0; c < bd->ncalls; c++)
    if (bd->calls[c].nargs > maxargs) maxargs = bd->calls[c].nargs;
  LLVMValueRef argv = LLVMBuildArrayAlloca(x->b, x->ptr, LLVMConstInt(x->i64, (unsigned long long)maxargs, 0), "args");
  LLVMValueRef zero = LLVMConstInt(x->i32, 0, 0);
  for (int c = 0; c < bd->ncalls; c++) {
    const CgBundleCall *call = &bd->calls[c];
    for (int i = 0; i < call->nargs; i++) store_slot(x, argv, i, arg_ptr(x, &call->args[i], inputs, ws));
    LLVMValueRef k = LLVMGetNamedFunction(x->mod, call->kernel);
    if (!k) k = LLVMAddFunction(x->mod, call->kernel, x->kernel);
    LLVMValueRef cargs[3] = {argv, LLVMConstNull(x->ptr), kctx};
    LLVMValueRef rc = LLVMBuildCall2(x->b, x->kernel, k, cargs, 3, "");
    LLVMValueRef bad = LLVMBuildICmp(x->b, LLVMIntNE, rc, zero, "");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(x->ctx, fn, "next");
    LLVMBasicBlockRef here = LLVMGetInsertBlock(x->b);
    LLVMBuildCondBr(x->b, bad, fail, next);
    LLVMAddIncoming(phi, &rc, &here, 1);
    LLVMPositionBuilderAtEnd(x->b, next);
  }
  for (int o = 0; o < bd->noutputs; o++) {
    if (bd->output_nbytes[o] <= 0) continue;
    LLVMValueRef dst = load_slot(x, outputs, o);
    LLVMValueRef src = arg_ptr(x, &bd->output_src[o], inputs, ws);
    LLVMBuildMemCpy(x->b, dst, 1, src, 1, LLVMConstInt(x->i64, (unsigned long long)bd->output_nbytes[o], 0));
  }
  LLVMBuildRet(x->b, zero);
  if (!LLVMGetFirstUse(phi)) {
    /* no calls: the fail block is unreachable and its phi has no incoming values */
    LLVMDeleteBasicBlock(fail);
  }
  return fn;
}

/* i32 serial_launch(ptr ctx, ptr body, ptr closure, i64 extent) { return extent > 0 ? body(0, extent, closure) : 0; } */
static LLVMValueRef build_serial_launch(Bx *x, const char *name) {
  LLVMValueRef fn = LLVMAddFunction(x->mod, name, x->launch);
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(x->ctx, fn, "entry");
  LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(x->ctx, fn, "call");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(x->ctx, fn, "done");
  LLVMPositionBuilderAtEnd(x->b, bb);
  LLVMValueRef ext = LLVMGetParam(fn, 3);
  LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntSGT, ext, LLVMConstInt(x->i64, 0, 0), ""), call, done);
  LLVMPositionBuilderAtEnd(x->b, call);
  LLVMValueRef args[3] = {LLVMConstInt(x->i64, 0, 0), ext, LLVMGetParam(fn, 2)};
  LLVMBuildRet(x->b, LLVMBuildCall2(x->b, x->body, LLVMGetParam(fn, 1), args, 3, ""));
  LLVMPositionBuilderAtEnd(x->b, done);
  LLVMBuildRet(x->b, LLVMConstInt(x->i32, 0, 0));
  return fn;
}

/* i32 run(in.., out.., ws): arrays and a serial mlc_kernel_ctx {launch, pool, num_threads, reserved} on the stack */
static void build_run(Bx *x, const CgBundle *bd, const char *name, LLVMValueRef run_ctx, LLVMValueRef launch) {
  int np = bd->ninputs + bd->noutputs + 1;
  LLVMTypeRef *ps = calloc((size_t)np, sizeof *ps);
  if (!ps) return;
  for (int i = 0; i < np; i++) ps[i] = x->ptr;
  LLVMTypeRef ft = LLVMFunctionType(x->i32, ps, (unsigned)np, 0);
  free(ps);
  LLVMValueRef fn = LLVMAddFunction(x->mod, name, ft);
  LLVMPositionBuilderAtEnd(x->b, LLVMAppendBasicBlockInContext(x->ctx, fn, "entry"));
  LLVMValueRef ins = LLVMBuildArrayAlloca(x->b, x->ptr, LLVMConstInt(x->i64, (unsigned long long)bd->ninputs + 1, 0), "in");
  LLVMValueRef outs = LLVMBuildArrayAlloca(x->b, x->ptr, LLVMConstInt(x->i64, (unsigned long long)bd->noutputs + 1, 0), "out");
  LLVMTypeRef ctx_fields[4] = {x->ptr, x->ptr, x->i32, x->i32};
  LLVMTypeRef ctx_t = LLVMStructTypeInContext(x->ctx, ctx_fields, 4, 0);
  LLVMValueRef kctx = LLVMBuildAlloca(x->b, ctx_t, "ctx");
  for (int i = 0; i < bd->ninputs; i++) store_slot(x, ins, i, LLVMGetParam(fn, (unsigned)i));
  for (int o = 0; o < bd->noutputs; o++) store_slot(x, outs, o, LLVMGetParam(fn, (unsigned)(bd->ninputs + o)));
  LLVMValueRef fields[4] = {launch, LLVMConstNull(x->ptr), LLVMConstInt(x->i32, 1, 0), LLVMConstInt(x->i32, 0, 0)};
  for (unsigned f = 0; f < 4; f++) LLVMBuildStore(x->b, fields[f], LLVMBuildStructGEP2(x->b, ctx_t, kctx, f, ""));
  LLVMValueRef args[4] = {ins, outs, LLVMGetParam(fn, (unsigned)np - 1), kctx};
  LLVMTypeRef rps[4] = {x->ptr, x->ptr, x->ptr, x->ptr};
  LLVMBuildRet(x->b, LLVMBuildCall2(x->b, LLVMFunctionType(x->i32, rps, 4, 0), run_ctx, args, 4, ""));
}

mlc_status cg_emit_bundle(const Target *t, const CgBundle *bd, const char *path, Diag *d) {
  if (t->arch == ARCH_NVPTX)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "linkable outputs (so, obj) for GPU target '%s' are unsupported", t->str);
  if (check_bundle(bd, d) != MLC_OK) return d->status;
  cg_init_llvm();
  LLVMTargetMachineRef tm = cg_create_tm(t, false, d);
  if (!tm) return d->status;
  Bx x = {0};
  x.ctx = LLVMContextCreate();
  x.mod = LLVMModuleCreateWithNameInContext("mlc_bundle", x.ctx);
  LLVMSetTarget(x.mod, t->triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(x.mod, td);
  x.b = LLVMCreateBuilderInContext(x.ctx);
  x.i8 = LLVMInt8TypeInContext(x.ctx);
  x.i32 = LLVMInt32TypeInContext(x.ctx);
  x.i64 = LLVMInt64TypeInContext(x.ctx);
  x.ptr = LLVMPointerTypeInContext(x.ctx, 0);
  LLVMTypeRef kp[3] = {x.ptr, x.ptr, x.ptr};
  x.kernel = LLVMFunctionType(x.i32, kp, 3, 0);
  LLVMTypeRef bp[3] = {x.i64, x.i64, x.ptr};
  x.body = LLVMFunctionType(x.i32, bp, 3, 0);
  LLVMTypeRef lp[4] = {x.ptr, x.ptr, x.ptr, x.i64};
  x.launch = LLVMFunctionType(x.i32, lp, 4, 0);
  mlc_status st = MLC_OK;
  for (int i = 0; i < bd->nblobs; i++) add_blob(&x, &bd->blobs[i]);
  if (bd->entry) {
    x.params = calloc((size_t)bd->nparams + 1, sizeof *x.params);
    if (!x.params) st = diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    for (int i = 0; !st && i < bd->nparams; i++) {
      char name[64];
      snprintf(name, sizeof name, "mlc_param_%d", i);
      x.params[i] = data_global(&x, name, bd->param_data[i], bd->param_size[i], false);
    }
    if (!st) {
      size_t n = strlen(bd->entry) + 32;
      char *name = malloc(n);
      if (!name) st = diag_set(d, MLC_ERR_INTERNAL, "out of memory");
      else {
        snprintf(name, n, "%s_run_ctx", bd->entry);
        LLVMValueRef rc = build_run_ctx(&x, bd, name);
        snprintf(name, n, "%s_serial_launch", bd->entry);
        LLVMValueRef launch = build_serial_launch(&x, name);
        snprintf(name, n, "%s_run", bd->entry);
        build_run(&x, bd, name, rc, launch);
        free(name);
      }
    }
  }
  char *msg = NULL;
  if (!st && LLVMVerifyModule(x.mod, LLVMReturnStatusAction, &msg))
    st = diag_set(d, MLC_ERR_INTERNAL, "internal error: bundle LLVM IR does not verify: %s", msg ? msg : "");
  LLVMDisposeMessage(msg);
  msg = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (!st && LLVMTargetMachineEmitToMemoryBuffer(tm, x.mod, LLVMObjectFile, &msg, &buf)) {
    st = diag_set(d, MLC_ERR_INTERNAL, "emitting the bundle object: %s", msg ? msg : "unknown LLVM error");
    buf = NULL;
  }
  LLVMDisposeMessage(msg);
  if (!st) st = file_write_atomic(path, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), d);
  if (buf) LLVMDisposeMemoryBuffer(buf);
  free(x.params);
  LLVMDisposeBuilder(x.b);
  LLVMDisposeModule(x.mod);
  LLVMDisposeTargetData(td);
  LLVMContextDispose(x.ctx);
  LLVMDisposeTargetMachine(tm);
  return st;
}

/* Runs argv[0] (searched in PATH) with its output captured for the diagnostic. */
static mlc_status run_tool(char **argv, const char *what, Diag *d) {
  int out_fd = memfd_create("mlc-tool-output", MFD_CLOEXEC);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out_fd, STDERR_FILENO);
  }
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  mlc_status st = MLC_OK;
  if (rc != 0) {
    st = diag_set(d, MLC_ERR_USAGE, "cannot run '%s' to %s: %s%s", argv[0], what, strerror(rc),
                  rc == ENOENT ? " (install gcc and binutils)" : "");
  } else {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      char out[1200] = "";
      if (out_fd >= 0) {
        ssize_t n = pread(out_fd, out, sizeof out - 1, 0);
        out[n > 0 ? n : 0] = 0;
        size_t l = strlen(out);
        while (l && (out[l - 1] == '\n' || out[l - 1] == ' ')) out[--l] = 0;
      }
      st = diag_set(d, MLC_ERR_INTERNAL, "'%s' failed to %s (%s %d)%s%s", argv[0], what,
                    WIFEXITED(status) ? "exit status" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), out[0] ? ": " : "", out);
    }
  }
  if (out_fd >= 0) close(out_fd);
  return st;
}

mlc_status cg_link_relocatable(const Target *t, int nobjs, const char **objs, int nkeep, const char **keep,
                               const char *out_path, Diag *d) {
  if (t->arch == ARCH_NVPTX)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "linking an object for GPU target '%s' is unsupported", t->str);
  if (nobjs < 1) return diag_set(d, MLC_ERR_USAGE, "cg_link_relocatable: no object files to link into %s", out_path);
  size_t plen = strlen(out_path) + 32;
  char *tmp = malloc(plen);
  char **argv = calloc((size_t)(nobjs + 2 * nkeep) + 12, sizeof *argv);
  char **keepargs = calloc((size_t)nkeep + 1, sizeof *keepargs);
  mlc_status st = MLC_OK;
  if (!tmp || !argv || !keepargs) st = diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  if (!st) {
    snprintf(tmp, plen, "%s.tmp.%ld", out_path, (long)getpid());
    int a = 0;
    argv[a++] = (char *)cg_cc_driver(t);
    argv[a++] = "-r";
    argv[a++] = "-nostdlib";
    argv[a++] = "-o";
    argv[a++] = tmp;
    for (int i = 0; i < nobjs; i++) argv[a++] = (char *)objs[i];
    argv[a] = NULL;
    st = run_tool(argv, "link the object", d);
  }
  if (!st && nkeep > 0) {
    int a = 0;
    argv[a++] = t->arch == ARCH_AARCH64 && strcmp(cg_cc_driver(t), "cc") ? "aarch64-linux-gnu-objcopy" : "objcopy";
    for (int i = 0; i < nkeep && !st; i++) {
      size_t n = strlen(keep[i]) + 32;
      if (!(keepargs[i] = malloc(n))) st = diag_set(d, MLC_ERR_INTERNAL, "out of memory");
      else snprintf(keepargs[i], n, "--keep-global-symbol=%s", keep[i]);
      argv[a++] = keepargs[i];
    }
    argv[a++] = tmp;
    argv[a] = NULL;
    if (!st) st = run_tool(argv, "localise the kernels' symbols", d);
  }
  if (!st && rename(tmp, out_path) != 0) st = diag_set(d, MLC_ERR_USAGE, "cannot write %s: %s", out_path, strerror(errno));
  if (st && tmp) unlink(tmp);
  for (int i = 0; keepargs && i < nkeep; i++) free(keepargs[i]);
  free(keepargs);
  free(tmp);
  free(argv);
  return st;
}
