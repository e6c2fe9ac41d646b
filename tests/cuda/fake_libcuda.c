/* tests/cuda/fake_libcuda.c: a stand-in for libcuda.so.1, so the CUDA runtime path (runtime/cuda.c) can be
 * tested on machines without a GPU. Build it as a shared library and point MLC_CUDA_DRIVER at it.
 *
 * It implements the driver entry points runtime/cuda.c resolves, on the CPU: device memory is host memory
 * (a CUdeviceptr is the host address), copies are memcpy, the "PTX" is kept as text and cuModuleGetFunction
 * finds ".entry NAME(" in it and counts its .param lines. cuLaunchKernel records every launch (entry, grid,
 * block, argument values) and, for a few entries the tests define, computes on the CPU so that argument
 * packing is checked end to end:
 *   fake_add__k0(a, b, c):        c[i] = a[i] + b[i]        for i < grid*block (float32)
 *   fake_twice__k0(x, y, s):      s[i] = 2 * x[i]           (s: a scratch buffer)
 *   fake_twice__k1(x, y, s):      y[i] = s[i] + 1
 *   fake_dyn__k0(y, n):           y[r][c] = 10 r + c over int64 [2, 4], n[0] = 3 (a data-dependent output)
 * Any other entry is only recorded. Environment knobs, read at each call: FAKE_CUDA_DEVICES=0 (cuInit says
 * no device), FAKE_CUDA_FAIL_LAUNCH=ENTRY (that launch fails), FAKE_CUDA_FAIL_SYNC=1 (synchronise fails).
 * A PTX text containing "FAKE_BAD_PTX" fails to load with a JIT log. The tests read the records through
 * fake_cuda_* functions (dlsym on the same library). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define FAKE_MAX_LAUNCHES 4096
#define FAKE_MAX_ARGS 64

typedef struct fake_fn {
  char name[256];
  int nparams;
} fake_fn;

typedef struct fake_launch {
  char entry[256];
  unsigned grid, block;
  int nargs;
  CUdeviceptr args[FAKE_MAX_ARGS];
} fake_launch;

#define FAKE_MAX_FNS 4096
static char *g_ptx;
static fake_fn *g_fns[FAKE_MAX_FNS];
static int g_nfns;
static int g_ctx_marker, g_retained, g_live_allocs, g_syncs;
static fake_launch g_launches[FAKE_MAX_LAUNCHES];
static int g_nlaunches;

static int env_is(const char *k, const char *v) {
  const char *e = getenv(k);
  return e && strcmp(e, v) == 0;
}

/* ---- what the tests read ---- */
void fake_cuda_reset(void) { g_nlaunches = 0, g_syncs = 0; }
int fake_cuda_nlaunches(void) { return g_nlaunches; }
int fake_cuda_live_allocs(void) { return g_live_allocs; }
int fake_cuda_retained(void) { return g_retained; }
int fake_cuda_syncs(void) { return g_syncs; }
const char *fake_cuda_launch(int i, unsigned *grid, unsigned *block, int *nargs, const CUdeviceptr **args) {
  if (i < 0 || i >= g_nlaunches) return NULL;
  *grid = g_launches[i].grid;
  *block = g_launches[i].block;
  *nargs = g_launches[i].nargs;
  *args = g_launches[i].args;
  return g_launches[i].entry;
}

/* ---- the driver API ---- */
CUresult cuInit(unsigned flags) { return env_is("FAKE_CUDA_DEVICES", "0") ? 100 : 0; }
CUresult cuDriverGetVersion(int *v) { return *v = 12040, 0; }
CUresult cuDeviceGetCount(int *n) { return *n = env_is("FAKE_CUDA_DEVICES", "0") ? 0 : 1, 0; }
CUresult cuDeviceGet(int *d, int ordinal) { return ordinal == 0 ? (*d = 0, 0) : 101; }
CUresult cuDeviceGetName(char *name, int len, int d) {
  snprintf(name, (size_t)len, "Fake GPU (tests/cuda/fake_libcuda.c)");
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { return *ctx = &g_ctx_marker, g_retained++, 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return g_retained > 0 ? (g_retained--, 0) : 201; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &g_ctx_marker ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return g_syncs++, env_is("FAKE_CUDA_FAIL_SYNC", "1") ? 700 : 0; }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned nopt, int *opts, void **vals) {
  const char *text = image;
  if (strstr(text, "FAKE_BAD_PTX")) {
    for (unsigned i = 0; i < nopt; i++)
      if (opts[i] == 5) { /* CU_JIT_ERROR_LOG_BUFFER */
        size_t cap = 0;
        for (unsigned j = 0; j < nopt; j++)
          if (opts[j] == 6) cap = (size_t)(uintptr_t)vals[j];
        if (cap) snprintf(vals[i], cap, "ptxas fatal : fake syntax error");
      }
    return 218; /* CUDA_ERROR_INVALID_PTX */
  }
  free(g_ptx);
  g_ptx = strdup(text);
  *mod = g_ptx;
  return g_ptx ? 0 : 2;
}
CUresult cuModuleUnload(void *mod) {
  if (mod != g_ptx) return 400;
  free(g_ptx);
  g_ptx = NULL;
  for (int i = 0; i < g_nfns; i++) free(g_fns[i]);
  g_nfns = 0;
  return 0;
}
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  if (mod != g_ptx || !g_ptx) return 400;
  char pat[300];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  const char *at = strstr(g_ptx, pat);
  if (!at) return 500; /* CUDA_ERROR_NOT_FOUND */
  fake_fn *f = g_nfns < FAKE_MAX_FNS ? calloc(1, sizeof *f) : NULL; /* freed with the module */
  if (!f) return 2;
  g_fns[g_nfns++] = f;
  snprintf(f->name, sizeof f->name, "%s", name);
  const char *end = strchr(at, ')');
  for (const char *p = strstr(at, ".param"); p && end && p < end; p = strstr(p + 1, ".param")) f->nparams++;
  *fn = f;
  return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m = NULL; /* the driver aligns allocations to at least 256 bytes */
  if (posix_memalign(&m, 256, n ? n : 1) != 0) return 2;
  memset(m, 0, n ? n : 1);
  g_live_allocs++;
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  g_live_allocs--;
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return 0;
}

static float *F(CUdeviceptr p) { return (float *)(uintptr_t)p; }
static int64_t *I64(CUdeviceptr p) { return (int64_t *)(uintptr_t)p; }

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
  const fake_fn *f = fn;
  if (!f || gy != 1 || gz != 1 || by != 1 || bz != 1 || f->nparams > FAKE_MAX_ARGS) return 1;
  const char *fail = getenv("FAKE_CUDA_FAIL_LAUNCH");
  if (fail && strcmp(fail, f->name) == 0) return 719; /* CUDA_ERROR_LAUNCH_FAILED */
  if (g_nlaunches == FAKE_MAX_LAUNCHES) return 2;
  fake_launch *l = &g_launches[g_nlaunches++];
  snprintf(l->entry, sizeof l->entry, "%s", f->name);
  l->grid = gx, l->block = bx, l->nargs = f->nparams;
  for (int i = 0; i < f->nparams; i++) memcpy(&l->args[i], params[i], sizeof(CUdeviceptr));
  size_t n = (size_t)gx * bx;
  if (!strcmp(f->name, "fake_add__k0") && f->nparams == 3)
    for (size_t i = 0; i < n; i++) F(l->args[2])[i] = F(l->args[0])[i] + F(l->args[1])[i];
  if (!strcmp(f->name, "fake_twice__k0") && f->nparams == 3)
    for (size_t i = 0; i < n; i++) F(l->args[2])[i] = 2 * F(l->args[0])[i];
  if (!strcmp(f->name, "fake_twice__k1") && f->nparams == 3)
    for (size_t i = 0; i < n; i++) F(l->args[1])[i] = F(l->args[2])[i] + 1;
  if (!strcmp(f->name, "fake_dyn__k0") && f->nparams == 2) {
    for (int i = 0; i < 8; i++) I64(l->args[0])[i] = 10 * (i / 4) + i % 4;
    I64(l->args[1])[0] = 3;
  }
  return 0;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case 0: *s = "CUDA_SUCCESS"; return 0;
  case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
  case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
  case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
  case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
  case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
  default: *s = NULL; return 1;
  }
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case 0: *s = "no error"; return 0;
  case 100: *s = "no CUDA-capable device is detected"; return 0;
  case 218: *s = "a PTX JIT compilation failed"; return 0;
  case 500: *s = "named symbol not found"; return 0;
  case 700: *s = "an illegal memory access was encountered"; return 0;
  case 719: *s = "unspecified launch failure"; return 0;
  default: *s = NULL; return 1;
  }
}
