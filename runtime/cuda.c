/* runtime/cuda.c: running GPU packages (mod.ptx + mod.cuda.json) through the CUDA driver API.
 *
 * The driver is loaded at run time with dlopen("libcuda.so.1") (MLC_CUDA_DRIVER names another library, for
 * tests with a fake driver), so the runtime keeps linking only libc, pthreads and libdl; the few driver types
 * and entry points are declared here from the public driver API documentation (CUresult is an int, handles
 * are opaque pointers, CUdeviceptr a 64-bit integer; the 64-bit-size entry points carry their _v2 names).
 *
 * Setup, once (rt_cuda_create): cuInit, device MLC_CUDA_DEVICE (default 0), its primary context, the PTX
 * JIT-compiled with cuModuleLoadDataEx (the JIT error log goes into the message), then ONE device allocation
 * carved into 256-byte aligned regions, a bump layout like the CPU storage plan: the plan's storage blocks,
 * a buffer per graph input, the params (copied once) and a scratch region sized for the largest kernel's
 * scratch buffers (calls run in order on one stream, so every call can reuse it). Each call's launches and
 * their argument arrays are prebuilt: a launch NAME__kI takes the kernel's buffers in the plan's argument
 * order and then its scratch buffers, every one a device pointer (codegen/llvm/nvptx.c), so kernelParams[i]
 * points at the i-th CUdeviceptr. A run is then a loop of cuLaunchKernel on the default stream.
 *
 * Launch table (mod.cuda.json): {"kernels":[{"name","nparams","scratch":[bytes..],
 * "launches":[{"entry","grid","block"}]}]}; rt_cuda_table_parse checks every field and range.
 * Errors name the kernel, the launch entry and the driver's error name and string. A missing driver or no
 * device is MLC_ERR_UNSUPPORTED. libcuda is never dlclosed: the driver keeps threads and exit handlers. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/json.h"
#include "runtime/rt.h"

/* ---- the driver API, as documented (cuda.h is not needed to build) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define RT_CUDA_ALIGN 256
#define RT_CUDA_MAX_GRID 0x7fffffffLL
#define RT_CUDA_MAX_BLOCK 1024

typedef struct rt_cuda_api {
  CUresult (*Init)(unsigned flags);
  CUresult (*DriverGetVersion)(int *v);
  CUresult (*DeviceGetCount)(int *n);
  CUresult (*DeviceGet)(CUdevice *d, int ordinal);
  CUresult (*DeviceGetName)(char *name, int len, CUdevice d);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice d);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice d);
  CUresult (*CtxSetCurrent)(CUcontext ctx);
  CUresult (*CtxSynchronize)(void);
  CUresult (*ModuleLoadDataEx)(CUmodule *m, const void *image, unsigned nopt, int *opts, void **vals);
  CUresult (*ModuleUnload)(CUmodule m);
  CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
  CUresult (*MemAlloc)(CUdeviceptr *p, size_t n);
  CUresult (*MemFree)(CUdeviceptr p);
  CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t n);
  CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t n);
  CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned shared_bytes, CUstream stream, void **params, void **extra);
  CUresult (*GetErrorName)(CUresult r, const char **s);
  CUresult (*GetErrorString)(CUresult r, const char **s);
} rt_cuda_api;

typedef struct rt_cuda_call {
  const rt_cuda_kernel *k; /* in the table */
  CUfunction *fns;         /* [k->nlaunches] */
  CUdeviceptr *vals;       /* [nparams + nscratch] */
  void **params;           /* [nparams + nscratch]: &vals[i] */
} rt_cuda_call;

struct rt_cuda {
  rt_cuda_api api;
  const rt_plan *plan;
  rt_cuda_table table;
  CUdevice dev;
  CUcontext ctx;
  bool ctx_retained;
  CUmodule mod;
  CUdeviceptr base; /* the one allocation */
  size_t total;
  CUdeviceptr *tensor; /* [ntensors] device address of each tensor */
  rt_cuda_call *calls; /* [ncalls] */
  char device_name[128];
};

/* "CUDA_ERROR_X (what the driver says)" into buf */
static const char *cu_error(const rt_cuda_api *api, CUresult r, char *buf, size_t n) {
  const char *name = NULL, *str = NULL;
  if (api->GetErrorName) api->GetErrorName(r, &name);
  if (api->GetErrorString) api->GetErrorString(r, &str);
  if (name && str) snprintf(buf, n, "%s: %s", name, str);
  else snprintf(buf, n, "CUDA error %d", r);
  return buf;
}

/* ---- the launch table ---- */

void rt_cuda_table_free(rt_cuda_table *t) {
  for (int k = 0; k < t->nkernels && t->kernels; k++) {
    rt_cuda_kernel *kr = &t->kernels[k];
    free(kr->name);
    free(kr->scratch);
    for (int l = 0; l < kr->nlaunches && kr->launches; l++) free(kr->launches[l].entry);
    free(kr->launches);
  }
  free(t->kernels);
  memset(t, 0, sizeof *t);
}

const rt_cuda_kernel *rt_cuda_table_find(const rt_cuda_table *t, const char *name) {
  for (int k = 0; k < t->nkernels; k++)
    if (strcmp(t->kernels[k].name, name) == 0) return &t->kernels[k];
  return NULL;
}

static bool get_int(const rj_value *o, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  const rj_value *v = rj_get(o, key);
  if (!v || v->kind != RJ_NUM || !v->is_int || v->i < lo || v->i > hi) return false;
  *out = v->i;
  return true;
}

static char *dup_str(const rj_value *v) {
  return v && v->kind == RJ_STR && v->str[0] ? strdup(v->str) : NULL;
}

int rt_cuda_table_parse(const char *text, size_t len, rt_cuda_table *t, char *err) {
  memset(t, 0, sizeof *t);
  char jerr[RT_ERRLEN];
  rj_value *root = rj_parse(text, len, jerr);
  if (!root) {
    snprintf(err, RT_ERRLEN, "mod.cuda.json: %.900s", jerr);
    return MLC_ERR_INVALID;
  }
  int rc = MLC_ERR_INVALID;
  const rj_value *ks = rj_get(root, "kernels");
  if (!ks || ks->kind != RJ_ARR) {
    snprintf(err, RT_ERRLEN, "mod.cuda.json: expected an object with a \"kernels\" array");
    goto done;
  }
  t->kernels = calloc((size_t)ks->n + 1, sizeof *t->kernels);
  if (!t->kernels) {
    snprintf(err, RT_ERRLEN, "out of memory");
    rc = MLC_ERR_INTERNAL;
    goto done;
  }
  for (int k = 0; k < ks->n; k++) {
    const rj_value *o = &ks->items[k];
    rt_cuda_kernel *kr = &t->kernels[k];
    t->nkernels = k + 1;
    int64_t np = 0;
    const rj_value *scr = rj_get(o, "scratch"), *ls = rj_get(o, "launches");
    if (o->kind != RJ_OBJ || !(kr->name = dup_str(rj_get(o, "name")))) {
      snprintf(err, RT_ERRLEN, "mod.cuda.json: kernel %d has no \"name\"", k);
      goto done;
    }
    if (rt_cuda_table_find(t, kr->name) != kr) {
      snprintf(err, RT_ERRLEN, "mod.cuda.json: kernel '%.200s' is listed twice", kr->name);
      goto done;
    }
    if (!get_int(o, "nparams", 0, 4096, &np) || !scr || scr->kind != RJ_ARR || !ls || ls->kind != RJ_ARR ||
        ls->n < 1) {
      snprintf(err, RT_ERRLEN, "mod.cuda.json: kernel '%.200s' needs \"nparams\" (0..4096), a \"scratch\" array "
               "and a non-empty \"launches\" array", kr->name);
      goto done;
    }
    kr->nparams = (int)np;
    kr->scratch = calloc((size_t)scr->n + 1, sizeof *kr->scratch);
    kr->launches = calloc((size_t)ls->n + 1, sizeof *kr->launches);
    if (!kr->scratch || !kr->launches) {
      snprintf(err, RT_ERRLEN, "out of memory");
      rc = MLC_ERR_INTERNAL;
      goto done;
    }
    for (int s = 0; s < scr->n; s++) {
      const rj_value *v = &scr->items[s];
      if (v->kind != RJ_NUM || !v->is_int || v->i < 1 || v->i > ((int64_t)1 << 40)) {
        snprintf(err, RT_ERRLEN, "mod.cuda.json: kernel '%.200s': scratch buffer %d has an invalid size", kr->name, s);
        goto done;
      }
      kr->scratch[kr->nscratch++] = v->i;
    }
    for (int l = 0; l < ls->n; l++) {
      const rj_value *lo = &ls->items[l];
      rt_cuda_launch *la = &kr->launches[l];
      kr->nlaunches = l + 1;
      if (lo->kind != RJ_OBJ || !(la->entry = dup_str(rj_get(lo, "entry"))) ||
          !get_int(lo, "grid", 1, RT_CUDA_MAX_GRID, &la->grid) ||
          !get_int(lo, "block", 1, RT_CUDA_MAX_BLOCK, &la->block)) {
        snprintf(err, RT_ERRLEN, "mod.cuda.json: kernel '%.200s': launch %d needs \"entry\", \"grid\" (1..%lld) "
                 "and \"block\" (1..%d)", kr->name, l, RT_CUDA_MAX_GRID, RT_CUDA_MAX_BLOCK);
        goto done;
      }
    }
  }
  rc = MLC_OK;
done:
  rj_free(root);
  if (rc != MLC_OK) rt_cuda_table_free(t);
  return rc;
}

/* ---- the driver ---- */

static int load_driver(rt_cuda_api *api, char *err) {
  const char *env = getenv("MLC_CUDA_DRIVER");
  const char *lib = env && *env ? env : "libcuda.so.1";
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    if (env && *env) snprintf(err, RT_ERRLEN, "no NVIDIA driver: %.300s (MLC_CUDA_DRIVER) cannot be loaded: %.500s", lib, dlerror());
    else snprintf(err, RT_ERRLEN, "no NVIDIA driver: libcuda.so.1 not found");
    return MLC_ERR_UNSUPPORTED;
  }
  static const struct {
    const char *name;
    size_t off;
  } syms[] = {
#define SYM(field, name) {name, offsetof(rt_cuda_api, field)}
      SYM(Init, "cuInit"),
      SYM(DriverGetVersion, "cuDriverGetVersion"),
      SYM(DeviceGetCount, "cuDeviceGetCount"),
      SYM(DeviceGet, "cuDeviceGet"),
      SYM(DeviceGetName, "cuDeviceGetName"),
      SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
      SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
      SYM(CtxSetCurrent, "cuCtxSetCurrent"),
      SYM(CtxSynchronize, "cuCtxSynchronize"),
      SYM(ModuleLoadDataEx, "cuModuleLoadDataEx"),
      SYM(ModuleUnload, "cuModuleUnload"),
      SYM(ModuleGetFunction, "cuModuleGetFunction"),
      SYM(MemAlloc, "cuMemAlloc_v2"),
      SYM(MemFree, "cuMemFree_v2"),
      SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
      SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
      SYM(LaunchKernel, "cuLaunchKernel"),
      SYM(GetErrorName, "cuGetErrorName"),
      SYM(GetErrorString, "cuGetErrorString"),
#undef SYM
  };
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    void *p = dlsym(dl, syms[i].name);
    if (!p) {
      snprintf(err, RT_ERRLEN, "the NVIDIA driver %.300s has no %s (driver too old?)", lib, syms[i].name);
      memset(api, 0, sizeof *api);
      return MLC_ERR_UNSUPPORTED;
    }
    /* POSIX: a dlsym result converts to a function pointer */
    memcpy((char *)api + syms[i].off, &p, sizeof p);
  }
  return MLC_OK;
}

static int64_t align_up(int64_t n) { return (n + RT_CUDA_ALIGN - 1) / RT_CUDA_ALIGN * RT_CUDA_ALIGN; }

void rt_cuda_free(rt_cuda *c) {
  if (!c) return;
  if (c->ctx) c->api.CtxSetCurrent(c->ctx);
  if (c->base) c->api.MemFree(c->base);
  if (c->mod) c->api.ModuleUnload(c->mod);
  if (c->ctx_retained) c->api.DevicePrimaryCtxRelease(c->dev);
  for (int i = 0; c->calls && c->plan && i < c->plan->ncalls; i++) {
    free(c->calls[i].fns);
    free(c->calls[i].vals);
    free(c->calls[i].params);
  }
  free(c->calls);
  free(c->tensor);
  rt_cuda_table_free(&c->table);
  free(c);
}

const char *rt_cuda_device_name(const rt_cuda *c) { return c->device_name; }

/* context, device and module */
static int open_device(rt_cuda *c, const char *ptx, size_t ptx_size, char *err) {
  rt_cuda_api *a = &c->api;
  char eb[512];
  CUresult r = a->Init(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    snprintf(err, RT_ERRLEN, "no CUDA device: the NVIDIA driver found no GPU (%s)", cu_error(a, r, eb, sizeof eb));
    return MLC_ERR_UNSUPPORTED;
  }
  if (r != CUDA_SUCCESS) {
    snprintf(err, RT_ERRLEN, "the NVIDIA driver does not start (cuInit): %s", cu_error(a, r, eb, sizeof eb));
    return MLC_ERR_UNSUPPORTED;
  }
  int count = 0;
  if ((r = a->DeviceGetCount(&count)) != CUDA_SUCCESS || count < 1) {
    snprintf(err, RT_ERRLEN, "no CUDA device: the NVIDIA driver found no GPU%s%s", r ? " (" : "",
             r ? cu_error(a, r, eb, sizeof eb) : "");
    if (r) strncat(err, ")", RT_ERRLEN - strlen(err) - 1);
    return MLC_ERR_UNSUPPORTED;
  }
  const char *ord_env = getenv("MLC_CUDA_DEVICE");
  int ord = 0;
  if (ord_env && *ord_env) {
    char *end;
    long v = strtol(ord_env, &end, 10);
    if (*end || v < 0 || v >= count) {
      snprintf(err, RT_ERRLEN, "MLC_CUDA_DEVICE=%.40s: not a device number (this machine has %d CUDA device%s)",
               ord_env, count, count == 1 ? "" : "s");
      return MLC_ERR_USAGE;
    }
    ord = (int)v;
  }
  if ((r = a->DeviceGet(&c->dev, ord)) != CUDA_SUCCESS ||
      (r = a->DevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS) {
    snprintf(err, RT_ERRLEN, "cannot open CUDA device %d: %s", ord, cu_error(a, r, eb, sizeof eb));
    return MLC_ERR_UNSUPPORTED;
  }
  c->ctx_retained = true;
  if ((r = a->CtxSetCurrent(c->ctx)) != CUDA_SUCCESS) {
    snprintf(err, RT_ERRLEN, "cannot use CUDA device %d: %s", ord, cu_error(a, r, eb, sizeof eb));
    return MLC_ERR_UNSUPPORTED;
  }
  if (a->DeviceGetName(c->device_name, (int)sizeof c->device_name, c->dev) != CUDA_SUCCESS)
    snprintf(c->device_name, sizeof c->device_name, "CUDA device %d", ord);
  c->device_name[sizeof c->device_name - 1] = 0;
  /* the PTX JIT wants a NUL-terminated image */
  char *image = malloc(ptx_size + 1);
  char *log = calloc(1, 8192);
  if (!image || !log) {
    free(image);
    free(log);
    snprintf(err, RT_ERRLEN, "out of memory");
    return MLC_ERR_INTERNAL;
  }
  memcpy(image, ptx, ptx_size);
  image[ptx_size] = 0;
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)8192};
  r = a->ModuleLoadDataEx(&c->mod, image, 2, opts, vals);
  free(image);
  if (r != CUDA_SUCCESS) {
    c->mod = NULL;
    log[8191] = 0;
    snprintf(err, RT_ERRLEN, "cannot load mod.ptx on %.100s: %.200s%s%.600s", c->device_name, cu_error(a, r, eb, sizeof eb),
             log[0] ? ": " : "", log);
    free(log);
    return MLC_ERR_INVALID;
  }
  free(log);
  return MLC_OK;
}

int rt_cuda_create(const rt_plan *plan, const char *ptx, size_t ptx_size, const char *table_json, size_t table_size,
                   rt_cuda **out, char *err) {
  *out = NULL;
  rt_cuda *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, RT_ERRLEN, "out of memory");
    return MLC_ERR_INTERNAL;
  }
  c->plan = plan;
  int rc = rt_cuda_table_parse(table_json, table_size, &c->table, err);
  if (rc != MLC_OK) goto fail;
  /* the plan against the table, before touching the driver */
  int64_t scratch_max = 0;
  for (int i = 0; i < plan->ncalls; i++) {
    const rt_call *call = &plan->calls[i];
    const rt_cuda_kernel *k = rt_cuda_table_find(&c->table, call->kernel);
    rc = MLC_ERR_INVALID;
    if (!k) {
      snprintf(err, RT_ERRLEN, "kernel '%.200s' (call %d) is not in mod.cuda.json", call->kernel, i);
      goto fail;
    }
    if (k->nparams != call->nargs) {
      snprintf(err, RT_ERRLEN, "kernel '%.200s' (call %d): mod.json passes %d buffers, mod.cuda.json expects %d",
               call->kernel, i, call->nargs, k->nparams);
      goto fail;
    }
    int64_t s = 0;
    for (int j = 0; j < k->nscratch; j++) s += align_up(k->scratch[j]);
    if (s > scratch_max) scratch_max = s;
  }
  /* the device layout: storage blocks, inputs, params, scratch */
  int nt = plan->ntensors, ns = plan->nstorage;
  int64_t *storage_off = calloc((size_t)ns + 1, sizeof *storage_off);
  int64_t *tensor_off = calloc((size_t)nt + 1, sizeof *tensor_off);
  c->tensor = calloc((size_t)nt + 1, sizeof *c->tensor);
  c->calls = calloc((size_t)plan->ncalls + 1, sizeof *c->calls);
  rc = MLC_ERR_INTERNAL;
  if (!storage_off || !tensor_off || !c->tensor || !c->calls) {
    free(storage_off);
    free(tensor_off);
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  int64_t total = 0;
  for (int s = 0; s < ns; s++) storage_off[s] = total, total += align_up(plan->storage_size[s] > 0 ? plan->storage_size[s] : 1);
  for (int t = 0; t < nt; t++) {
    const rt_tensor *ten = &plan->tensors[t];
    if (ten->kind == RT_ACTIVATION) tensor_off[t] = storage_off[ten->storage_id] + ten->offset;
    else {
      int64_t nb = rt_tensor_nbytes(ten);
      tensor_off[t] = total;
      total += align_up(nb > 0 ? nb : 1);
    }
  }
  int64_t scratch_off = total;
  total += scratch_max > 0 ? scratch_max : RT_CUDA_ALIGN;
  free(storage_off);
  if ((rc = load_driver(&c->api, err)) != MLC_OK || (rc = open_device(c, ptx, ptx_size, err)) != MLC_OK) {
    free(tensor_off);
    goto fail;
  }
  char eb[512];
  CUresult r = c->api.MemAlloc(&c->base, (size_t)total);
  if (r != CUDA_SUCCESS) {
    c->base = 0;
    free(tensor_off);
    snprintf(err, RT_ERRLEN, "cannot allocate %lld bytes on %.100s: %s", (long long)total, c->device_name,
             cu_error(&c->api, r, eb, sizeof eb));
    rc = MLC_ERR_INTERNAL;
    goto fail;
  }
  c->total = (size_t)total;
  for (int t = 0; t < nt; t++) c->tensor[t] = c->base + (CUdeviceptr)tensor_off[t];
  free(tensor_off);
  for (int t = 0; t < nt; t++) {
    const rt_tensor *ten = &plan->tensors[t];
    if (ten->kind != RT_PARAM) continue;
    int64_t nb = rt_tensor_nbytes(ten);
    if (!plan->param_data || !plan->param_data[t]) {
      snprintf(err, RT_ERRLEN, "parameter '%.200s' has no data", ten->name);
      rc = MLC_ERR_INVALID;
      goto fail;
    }
    if (nb > 0 && (r = c->api.MemcpyHtoD(c->tensor[t], plan->param_data[t], (size_t)nb)) != CUDA_SUCCESS) {
      snprintf(err, RT_ERRLEN, "cannot copy parameter '%.200s' to the GPU: %s", ten->name,
               cu_error(&c->api, r, eb, sizeof eb));
      rc = MLC_ERR_INTERNAL;
      goto fail;
    }
  }
  /* every call's launches and argument array */
  for (int i = 0; i < plan->ncalls; i++) {
    const rt_call *call = &plan->calls[i];
    rt_cuda_call *cc = &c->calls[i];
    const rt_cuda_kernel *k = cc->k = rt_cuda_table_find(&c->table, call->kernel);
    int na = k->nparams + k->nscratch;
    cc->fns = calloc((size_t)k->nlaunches + 1, sizeof *cc->fns);
    cc->vals = calloc((size_t)na + 1, sizeof *cc->vals);
    cc->params = calloc((size_t)na + 1, sizeof *cc->params);
    if (!cc->fns || !cc->vals || !cc->params) {
      snprintf(err, RT_ERRLEN, "out of memory");
      rc = MLC_ERR_INTERNAL;
      goto fail;
    }
    for (int a = 0; a < k->nparams; a++) cc->vals[a] = c->tensor[call->args[a]];
    int64_t off = scratch_off;
    for (int s = 0; s < k->nscratch; s++) {
      cc->vals[k->nparams + s] = c->base + (CUdeviceptr)off;
      off += align_up(k->scratch[s]);
    }
    for (int a = 0; a < na; a++) cc->params[a] = &cc->vals[a];
    for (int l = 0; l < k->nlaunches; l++)
      if ((r = c->api.ModuleGetFunction(&cc->fns[l], c->mod, k->launches[l].entry)) != CUDA_SUCCESS) {
        snprintf(err, RT_ERRLEN, "kernel '%.200s': entry '%.200s' not found in mod.ptx: %s", k->name,
                 k->launches[l].entry, cu_error(&c->api, r, eb, sizeof eb));
        rc = MLC_ERR_INVALID;
        goto fail;
      }
  }
  *out = c;
  return MLC_OK;
fail:
  rt_cuda_free(c);
  return rc;
}

static int bad_tensor(const rt_cuda *c, int tensor, size_t nbytes, char *err) {
  if (tensor < 0 || tensor >= c->plan->ntensors) {
    snprintf(err, RT_ERRLEN, "tensor %d out of range", tensor);
    return MLC_ERR_USAGE;
  }
  int64_t want = rt_tensor_nbytes(&c->plan->tensors[tensor]);
  if ((int64_t)nbytes != want) {
    snprintf(err, RT_ERRLEN, "tensor '%.200s': %zu bytes, expected %lld", c->plan->tensors[tensor].name, nbytes,
             (long long)want);
    return MLC_ERR_INVALID;
  }
  return MLC_OK;
}

int rt_cuda_set_input(rt_cuda *c, int tensor, const void *data, size_t nbytes, char *err) {
  int rc = bad_tensor(c, tensor, nbytes, err);
  if (rc != MLC_OK || !nbytes) return rc;
  char eb[512];
  CUresult r = c->api.CtxSetCurrent(c->ctx);
  if (r == CUDA_SUCCESS) r = c->api.MemcpyHtoD(c->tensor[tensor], data, nbytes);
  if (r != CUDA_SUCCESS) {
    snprintf(err, RT_ERRLEN, "cannot copy input '%.200s' to the GPU: %s", c->plan->tensors[tensor].name,
             cu_error(&c->api, r, eb, sizeof eb));
    return MLC_ERR_INTERNAL;
  }
  return MLC_OK;
}

int rt_cuda_get(rt_cuda *c, int tensor, void *dst, size_t nbytes, char *err) {
  int rc = bad_tensor(c, tensor, nbytes, err);
  if (rc != MLC_OK || !nbytes) return rc;
  char eb[512];
  CUresult r = c->api.CtxSetCurrent(c->ctx);
  if (r == CUDA_SUCCESS) r = c->api.MemcpyDtoH(dst, c->tensor[tensor], nbytes);
  if (r != CUDA_SUCCESS) {
    snprintf(err, RT_ERRLEN, "cannot copy '%.200s' back from the GPU: %s", c->plan->tensors[tensor].name,
             cu_error(&c->api, r, eb, sizeof eb));
    return MLC_ERR_INTERNAL;
  }
  return MLC_OK;
}

int rt_cuda_launch_call(rt_cuda *c, int call, char *err) {
  if (call < 0 || call >= c->plan->ncalls) {
    snprintf(err, RT_ERRLEN, "call %d out of range", call);
    return MLC_ERR_USAGE;
  }
  const rt_cuda_call *cc = &c->calls[call];
  char eb[512];
  CUresult r = call == 0 ? c->api.CtxSetCurrent(c->ctx) : CUDA_SUCCESS;
  for (int l = 0; l < cc->k->nlaunches && r == CUDA_SUCCESS; l++) {
    const rt_cuda_launch *la = &cc->k->launches[l];
    r = c->api.LaunchKernel(cc->fns[l], (unsigned)la->grid, 1, 1, (unsigned)la->block, 1, 1, 0, NULL, cc->params, NULL);
    if (r != CUDA_SUCCESS) {
      snprintf(err, RT_ERRLEN, "kernel '%.200s' (call %d): launch of '%.200s' (grid %lld, block %lld) failed: %s",
               cc->k->name, call, la->entry, (long long)la->grid, (long long)la->block,
               cu_error(&c->api, r, eb, sizeof eb));
      return MLC_ERR_INTERNAL;
    }
  }
  if (r != CUDA_SUCCESS) {
    snprintf(err, RT_ERRLEN, "cannot use the CUDA context: %s", cu_error(&c->api, r, eb, sizeof eb));
    return MLC_ERR_INTERNAL;
  }
  return MLC_OK;
}

int rt_cuda_sync(rt_cuda *c, int call, char *err) {
  char eb[512];
  CUresult r = c->api.CtxSynchronize();
  if (r == CUDA_SUCCESS) return MLC_OK;
  if (call >= 0 && call < c->plan->ncalls)
    snprintf(err, RT_ERRLEN, "kernel '%.200s' (call %d) failed on the GPU: %s", c->calls[call].k->name, call,
             cu_error(&c->api, r, eb, sizeof eb));
  else
    snprintf(err, RT_ERRLEN, "a kernel failed on the GPU: %s (set MLC_CUDA_SYNC=1 to synchronise after every "
             "kernel and name the one that fails)", cu_error(&c->api, r, eb, sizeof eb));
  return MLC_ERR_INTERNAL;
}
