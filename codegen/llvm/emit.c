/* codegen/llvm/emit.c: optimisation, object and assembly emission, IR printing, and linking objects into a
 * shared library.
 *
 * The module is verified (LLVMVerifyModule; a failure is a compiler bug, MLC_ERR_INTERNAL) and optimised once
 * with the new pass manager's "default<On>" pipeline for the module's target machine. Emission works on a
 * clone, because the codegen pipeline rewrites the IR it is given, so a module can be printed, emitted and
 * jitted in any order. Objects are written atomically (file_write_atomic). Linking runs the system C compiler
 * driver (`cc -shared -o OUT OBJS -lm`, or aarch64-linux-gnu-gcc for a cross AArch64 target) with
 * posix_spawnp, its output captured in a memory file for the diagnostic, into a temporary file that is renamed
 * over OUT only on success. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <time.h>
#include "codegen/llvm/cg_internal.h"

extern char **environ;

static double tnow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

mlc_status cg_error_to_diag(LLVMErrorRef err, Diag *d, mlc_status st, const char *what) {
  char *msg = LLVMGetErrorMessage(err);
  diag_set(d, st, "%s: %s", what, msg ? msg : "unknown LLVM error");
  LLVMDisposeErrorMessage(msg);
  return st;
}

void cg_diag_handler(LLVMDiagnosticInfoRef di, void *cgmodule) {
  CgModule *m = cgmodule;
  if (!m || LLVMGetDiagInfoSeverity(di) != LLVMDSError || m->llvm_error[0]) return;
  char *msg = LLVMGetDiagInfoDescription(di);
  snprintf(m->llvm_error, sizeof m->llvm_error, "%s", msg ? msg : "unknown LLVM error");
  LLVMDisposeMessage(msg);
}

/* ---- the optimisation pipeline, over kernel partitions in parallel ----
 *
 * Kernels never call each other, so the module is split into CG_PARTS partitions of whole kernels (each
 * exported kernel with its internal .impl/.parN functions), balanced greedily by instruction count in module
 * order. Every worker thread parses the module's bitcode into its own LLVMContext, deletes the kernels of other
 * partitions, runs "globaldce" and the default<On> pipeline with its own target machine, and writes bitcode
 * back; the main thread links the optimised partitions, in partition order, into a fresh module of the
 * CgModule's context (the IR linker renames clashing internal symbols deterministically). The partitions are
 * the same whatever the number of threads, one included (the partitions then run one after another), so the
 * result does not depend on the machine's core count. MLC_COMPILE_THREADS=1 asks for the whole module in one
 * pass instead: no bitcode round trips (the quickest on one core), deterministic too, but other bytes.
 * The optimised partitions' bitcode stays with the CgModule: cg_emit_objects runs the backend on each in
 * parallel the same way (the backend was a third of ResNet-50's compile on one thread), one object each. */

#define CG_PARTS CG_MAX_OBJECTS /* cg_emit_objects writes one object per partition */

/* The schedule decides unrolling and vectorization, not LLVM: with these options off, the pipeline's loop
 * vectorizer and full unroller act only on loops whose metadata forces them (FOR_VECTORIZED loops that
 * VectorizeLoop left, FOR_UNROLLED loops too long to unroll in codegen), and there is no SLP vectorizer or
 * partial/runtime unrolling. LLVM's own unrolling of the already register-blocked kernels made them 4x
 * larger and ResNet-50's compile 7x slower (49 s -> 7 s for 57 kernels) for a few percent of speed, which
 * codegen wins back by unrolling small constant loops itself (emit_for). */
static void pipeline_options(LLVMPassBuilderOptionsRef opts, int lv) {
  (void)lv;
  LLVMPassBuilderOptionsSetLoopVectorization(opts, false);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, false);
  LLVMPassBuilderOptionsSetLoopUnrolling(opts, false);
  LLVMPassBuilderOptionsSetLoopInterleaving(opts, false);
}

typedef struct OptPart {
  const char *bc;
  size_t bclen;
  int nkeep;
  const char **keep; /* kernel names of this partition */
  int nall;
  const char **all;  /* every kernel name */
  LLVMTargetMachineRef tm;
  int lv;
  LLVMMemoryBufferRef out; /* optimised bitcode */
  char err[512];
} OptPart;

static void part_diag_handler(LLVMDiagnosticInfoRef di, void *user) {
  OptPart *p = user;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || p->err[0]) return;
  char *msg = LLVMGetDiagInfoDescription(di);
  snprintf(p->err, sizeof p->err, "%s", msg ? msg : "unknown LLVM error");
  LLVMDisposeMessage(msg);
}

static void *opt_part_main(void *arg) {
  OptPart *p = arg;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(ctx, part_diag_handler, p);
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(p->bc, p->bclen, "mlc-part", 0);
  LLVMModuleRef mod = NULL;
  if (LLVMParseBitcodeInContext2(ctx, mb, &mod)) {
    if (!p->err[0]) snprintf(p->err, sizeof p->err, "cannot read back the module's bitcode");
  } else {
    for (int i = 0; i < p->nall; i++) {
      bool mine = false;
      for (int j = 0; j < p->nkeep && !mine; j++) mine = p->keep[j] == p->all[i];
      LLVMValueRef fn = mine ? NULL : LLVMGetNamedFunction(mod, p->all[i]);
      if (fn) LLVMDeleteFunction(fn);
    }
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    pipeline_options(opts, p->lv);
    char pipeline[64];
    snprintf(pipeline, sizeof pipeline, "globaldce,default<O%d>", p->lv);
    LLVMErrorRef err = LLVMRunPasses(mod, pipeline, p->tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (err) {
      char *msg = LLVMGetErrorMessage(err);
      if (!p->err[0]) snprintf(p->err, sizeof p->err, "%s", msg ? msg : "unknown LLVM error");
      LLVMDisposeErrorMessage(msg);
    }
    if (!p->err[0]) p->out = LLVMWriteBitcodeToMemoryBuffer(mod);
    LLVMDisposeModule(mod);
  }
  LLVMDisposeMemoryBuffer(mb);
  LLVMContextDispose(ctx);
  return NULL;
}

static int fn_size(LLVMValueRef fn) {
  int n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) n++;
  return n;
}

/* The worker threads: MLC_COMPILE_THREADS, else the CPUs this process may run on (its affinity mask: a
 * container's or taskset's share, not the machine's count), at most CG_PARTS. 0: MLC_COMPILE_THREADS=1, one
 * unpartitioned pass. */
static int compile_threads(void) {
  const char *e = getenv("MLC_COMPILE_THREADS");
  if (e && *e) {
    long n = strtol(e, NULL, 10);
    return n <= 1 ? 0 : n > CG_PARTS ? CG_PARTS : (int)n;
  }
  cpu_set_t set;
  int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > CG_PARTS ? CG_PARTS : n;
}

/* Runs fn on the n partitions' items (size bytes each) on nthreads workers: partitions i, i + nthreads, ... in
 * turn on worker i % nthreads (on one thread: here, in order). */
static void run_parts(void *(*fn)(void *), void *items, size_t size, int n, int nthreads) {
  pthread_t tid[CG_PARTS];
  bool started[CG_PARTS] = {0};
  for (int base = 0; base < n; base += nthreads) {
    for (int i = base; i < n && i < base + nthreads; i++)
      started[i] = nthreads > 1 && pthread_create(&tid[i], NULL, fn, (char *)items + (size_t)i * size) == 0;
    for (int i = base; i < n && i < base + nthreads; i++) {
      if (started[i]) pthread_join(tid[i], NULL);
      else fn((char *)items + (size_t)i * size);
    }
  }
}

/* MLC_OK with *done false when the module is not split (one kernel, or MLC_COMPILE_THREADS=1). */
static mlc_status optimize_partitioned(CgModule *m, int lv, bool *done, Diag *d) {
  *done = false;
  int nthreads = compile_threads();
  if (nthreads == 0) return MLC_OK;
  /* kernels: defined functions with external linkage, in module order; weight = their call tree's size */
  VEC(const char *) names = {0};
  VEC(int) weight = {0};
  for (LLVMValueRef fn = LLVMGetFirstFunction(m->mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn) || LLVMGetLinkage(fn) != LLVMExternalLinkage) continue;
    size_t len;
    vec_push(m->arena, &names, arena_strdup(m->arena, LLVMGetValueName2(fn, &len)));
    vec_push(m->arena, &weight, 0);
  }
  if (names.n < 2) return MLC_OK;
  for (LLVMValueRef fn = LLVMGetFirstFunction(m->mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn)) continue;
    size_t len;
    const char *fname = LLVMGetValueName2(fn, &len);
    for (int k = 0; k < names.n; k++) {
      size_t kl = strlen(names.v[k]);
      if (!strncmp(fname, names.v[k], kl) && (fname[kl] == 0 || fname[kl] == '.')) {
        weight.v[k] += fn_size(fn);
        break;
      }
    }
  }
  int nparts = names.n < CG_PARTS ? names.n : CG_PARTS;
  OptPart parts[CG_PARTS];
  memset(parts, 0, sizeof parts);
  int64_t load[CG_PARTS] = {0};
  LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(m->mod);
  for (int i = 0; i < nparts; i++) {
    parts[i].bc = LLVMGetBufferStart(bc);
    parts[i].bclen = LLVMGetBufferSize(bc);
    parts[i].keep = arena_alloc(m->arena, sizeof(const char *) * (size_t)names.n);
    parts[i].nall = names.n;
    parts[i].all = names.v;
    parts[i].lv = lv;
  }
  /* greedy: heaviest kernel first (ties: module order) onto the lightest partition (ties: lowest index) */
  bool *placed = arena_alloc(m->arena, (size_t)names.n);
  for (int r = 0; r < names.n; r++) {
    int best = -1;
    for (int k = 0; k < names.n; k++)
      if (!placed[k] && (best < 0 || weight.v[k] > weight.v[best])) best = k;
    placed[best] = true;
    int p = 0;
    for (int i = 1; i < nparts; i++)
      if (load[i] < load[p]) p = i;
    parts[p].keep[parts[p].nkeep++] = names.v[best];
    load[p] += weight.v[best] + 1;
  }
  mlc_status st = MLC_OK;
  for (int i = 0; i < nparts && !st; i++)
    if (!(parts[i].tm = cg_create_tm(&m->target, false, d))) st = d->status;
  if (!st) run_parts(opt_part_main, parts, sizeof parts[0], nparts, nthreads);
  for (int i = 0; i < nparts && !st; i++)
    if (parts[i].err[0] || !parts[i].out)
      st = diag_set(d, MLC_ERR_INTERNAL, "internal error: LLVM optimisation failed: %s",
                    parts[i].err[0] ? parts[i].err : "no output");
  LLVMModuleRef merged = NULL;
  for (int i = 0; i < nparts && !st; i++) {
    LLVMModuleRef pm = NULL;
    if (LLVMParseBitcodeInContext2(m->ctx, parts[i].out, &pm)) {
      st = diag_set(d, MLC_ERR_INTERNAL, "internal error: cannot read back an optimised partition");
      break;
    }
    if (!merged) merged = pm;
    else if (LLVMLinkModules2(merged, pm))
      st = diag_set(d, MLC_ERR_INTERNAL, "internal error: linking optimised partitions failed: %s",
                    m->llvm_error[0] ? m->llvm_error : "unknown");
  }
  for (int i = 0; i < nparts; i++) {
    if (parts[i].out && st) LLVMDisposeMemoryBuffer(parts[i].out);
    if (parts[i].tm) LLVMDisposeTargetMachine(parts[i].tm);
  }
  LLVMDisposeMemoryBuffer(bc);
  if (st) {
    if (merged) LLVMDisposeModule(merged);
    return st;
  }
  for (int i = 0; i < nparts; i++) m->part_bc[i] = parts[i].out;
  m->nparts = nparts;
  LLVMDisposeModule(m->mod);
  m->mod = merged;
  *done = true;
  return MLC_OK;
}

mlc_status cg_optimize(CgModule *m, Diag *d) {
  if (m->optimized) return MLC_OK;
  if (!m->mod) return diag_set(d, MLC_ERR_INTERNAL, "codegen: module already handed to the JIT");
  char *msg = NULL;
  if (LLVMVerifyModule(m->mod, LLVMReturnStatusAction, &msg)) {
    diag_set(d, MLC_ERR_INTERNAL, "internal error: generated LLVM IR does not verify: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    return MLC_ERR_INTERNAL;
  }
  LLVMDisposeMessage(msg);
  int lv = m->target.opt_level;
  if (lv < 0) lv = 0;
  if (lv > 3) lv = 3;
  double t0 = tnow();
  bool done = false;
  mlc_status st = optimize_partitioned(m, lv, &done, d);
  if (st) return st;
  if (!done) {
    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", lv);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    pipeline_options(opts, lv);
    LLVMErrorRef err = LLVMRunPasses(m->mod, pipeline, m->tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (!err && m->llvm_error[0])
      return diag_set(d, MLC_ERR_INTERNAL, "internal error: LLVM optimisation failed: %s", m->llvm_error);
    if (err) return cg_error_to_diag(err, d, MLC_ERR_INTERNAL, "internal error: LLVM optimisation failed");
  }
  if (getenv("MLC_TIME_PHASES")) fprintf(stderr, "[time] llvm opt %.3f s%s\n", tnow() - t0, done ? " (partitioned)" : "");
  m->optimized = true;
  return MLC_OK;
}

char *cg_print_ir(CgModule *m) {
  if (!m->mod) return strdup("; module handed to the JIT\n");
  char *s = LLVMPrintModuleToString(m->mod);
  char *r = strdup(s ? s : "");
  LLVMDisposeMessage(s);
  return r;
}

/* Runs the backend on a clone of the module; *buf is the object or assembly text. */
static mlc_status emit_to_buffer(CgModule *m, LLVMCodeGenFileType kind, LLVMMemoryBufferRef *buf, Diag *d) {
  mlc_status st = cg_optimize(m, d);
  if (st) return st;
  LLVMModuleRef clone = LLVMCloneModule(m->mod);
  char *err = NULL;
  double t0 = tnow();
  LLVMBool bad = LLVMTargetMachineEmitToMemoryBuffer(m->tm, clone, kind, &err, buf);
  if (getenv("MLC_TIME_PHASES")) fprintf(stderr, "[time] llvm emit %.3f s\n", tnow() - t0);
  LLVMDisposeModule(clone);
  if (!bad && m->llvm_error[0]) {
    LLVMDisposeMemoryBuffer(*buf);
    return diag_set(d, MLC_ERR_INTERNAL, "internal error: LLVM code generation for %s failed: %s", m->target.triple,
                    m->llvm_error);
  }
  if (bad) {
    diag_set(d, MLC_ERR_INTERNAL, "internal error: LLVM could not emit %s for %s: %s",
             kind == LLVMObjectFile ? "an object file" : "assembly", m->target.triple, err ? err : "");
    LLVMDisposeMessage(err);
    return MLC_ERR_INTERNAL;
  }
  LLVMDisposeMessage(err);
  return MLC_OK;
}

char *cg_print_asm(CgModule *m, Diag *d) {
  LLVMMemoryBufferRef buf;
  if (emit_to_buffer(m, LLVMAssemblyFile, &buf, d)) return NULL;
  size_t n = LLVMGetBufferSize(buf);
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, LLVMGetBufferStart(buf), n);
    s[n] = 0;
  } else
    diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  LLVMDisposeMemoryBuffer(buf);
  return s;
}

mlc_status cg_emit_object(CgModule *m, const char *path, Diag *d) {
  LLVMMemoryBufferRef buf;
  mlc_status st = emit_to_buffer(m, LLVMObjectFile, &buf, d);
  if (st) return st;
  st = file_write_atomic(path, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), d);
  LLVMDisposeMemoryBuffer(buf);
  return st;
}

/* one partition's object: its optimised bitcode read into a context of its own, the backend, the file */
typedef struct EmitPart {
  LLVMMemoryBufferRef bc;
  LLVMTargetMachineRef tm;
  const char *path;
  Diag d;
} EmitPart;

static void *emit_part_main(void *arg) {
  EmitPart *p = arg;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  LLVMMemoryBufferRef obj = NULL;
  char *err = NULL;
  if (LLVMParseBitcodeInContext2(ctx, p->bc, &mod))
    diag_set(&p->d, MLC_ERR_INTERNAL, "internal error: cannot read back an optimised partition");
  else if (LLVMTargetMachineEmitToMemoryBuffer(p->tm, mod, LLVMObjectFile, &err, &obj))
    diag_set(&p->d, MLC_ERR_INTERNAL, "internal error: LLVM could not emit an object file: %s", err ? err : "");
  else
    file_write_atomic(p->path, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj), &p->d);
  LLVMDisposeMessage(err);
  if (obj) LLVMDisposeMemoryBuffer(obj);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return NULL;
}

mlc_status cg_emit_objects(CgModule *m, const char *stem, int *nobjs, char *objs[CG_MAX_OBJECTS], Diag *d) {
  *nobjs = 0;
  mlc_status st = cg_optimize(m, d);
  if (st) return st;
  int n = m->nparts ? m->nparts : 1;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(stem) + 16;
    if (!(objs[i] = malloc(len))) {
      for (int j = 0; j < i; j++) free(objs[j]);
      return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    }
    if (m->nparts) snprintf(objs[i], len, "%s.%d.o", stem, i);
    else snprintf(objs[i], len, "%s.o", stem);
  }
  *nobjs = n;
  if (!m->nparts) return cg_emit_object(m, objs[0], d);
  double t0 = tnow();
  int nthreads = compile_threads();
  if (nthreads < 1) nthreads = 1;
  EmitPart parts[CG_MAX_OBJECTS];
  memset(parts, 0, sizeof parts);
  for (int i = 0; i < n && !st; i++) {
    parts[i] = (EmitPart){.bc = m->part_bc[i], .path = objs[i]};
    if (!(parts[i].tm = cg_create_tm(&m->target, false, d))) st = d->status;
  }
  if (!st) run_parts(emit_part_main, parts, sizeof parts[0], n, nthreads);
  for (int i = 0; i < n; i++) {
    if (!st && parts[i].d.status) st = diag_set(d, parts[i].d.status, "%s", parts[i].d.msg);
    if (parts[i].tm) LLVMDisposeTargetMachine(parts[i].tm);
  }
  if (getenv("MLC_TIME_PHASES")) fprintf(stderr, "[time] llvm emit %.3f s (%d objects)\n", tnow() - t0, n);
  if (st) {
    for (int i = 0; i < n; i++) unlink(objs[i]), free(objs[i]);
    *nobjs = 0;
  }
  return st;
}

mlc_status cg_link_shared(const Target *t, int nobjs, const char **objs, const char *out_path, Diag *d) {
  if (t->arch == ARCH_NVPTX)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "linking a shared library for GPU target '%s' is unsupported", t->str);
  if (nobjs < 1) return diag_set(d, MLC_ERR_USAGE, "cg_link_shared: no object files to link into %s", out_path);
  const char *driver = cg_cc_driver(t);
  size_t plen = strlen(out_path) + 32;
  char *tmp = malloc(plen);
  char **argv = calloc((size_t)nobjs + 8, sizeof *argv);
  if (!tmp || !argv) {
    free(tmp);
    free(argv);
    return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  }
  snprintf(tmp, plen, "%s.tmp.%ld", out_path, (long)getpid());
  int a = 0;
  argv[a++] = (char *)driver;
  argv[a++] = "-shared";
  argv[a++] = "-o";
  argv[a++] = tmp;
  for (int i = 0; i < nobjs; i++) argv[a++] = (char *)objs[i];
  argv[a++] = "-lm";
  argv[a] = NULL;

  int out_fd = memfd_create("mlc-link-output", 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out_fd, STDERR_FILENO);
  }
  pid_t pid;
  int rc = posix_spawnp(&pid, driver, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  mlc_status st = MLC_OK;
  if (rc != 0) {
    st = diag_set(d, MLC_ERR_USAGE, "cannot run the C compiler driver '%s' to link %s: %s%s", driver, out_path,
                  strerror(rc),
                  rc == ENOENT ? (t->arch == ARCH_AARCH64 ? " (install gcc-aarch64-linux-gnu)" : " (install gcc)") : "");
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
      st = diag_set(d, MLC_ERR_INTERNAL, "linking %s with '%s' failed (%s %d)%s%s", out_path, driver,
                    WIFEXITED(status) ? "exit status" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), out[0] ? ": " : "", out);
    } else if (rename(tmp, out_path) != 0) {
      st = diag_set(d, MLC_ERR_USAGE, "cannot write %s: %s", out_path, strerror(errno));
    }
  }
  if (st) unlink(tmp);
  if (out_fd >= 0) close(out_fd);
  free(tmp);
  free(argv);
  return st;
}
