/* The graph executor: runs an rt_plan's kernels in order.
 *
 * At creation it validates the plan, allocates each storage block once (64-byte aligned), gives every graph
 * input its own aligned buffer, resolves every call's kernel through the lookup function and prebuilds each
 * call's argument array, so a run is a loop of indirect calls with no allocation. Params stay in the plan's
 * aligned copies. Output pointers point at the tensor's data wherever it lives (input, param or activation).
 * With profiling on, each call is timed with CLOCK_MONOTONIC.
 * Data-dependent outputs (rt_plan.dynamic): after each run the executor reads each one's extent, checks it
 * against the upper bound, records the output's actual shape and compacts the valid part in place to the
 * front of the output's buffer (row-major in the actual shape: for an axis other than the first, each run of
 * valid rows moves down with memmove, so trimming needs no copy by the caller).
 * A CUDA executor (rt_executor_create_cuda) keeps the same plan but hands storage, inputs, params and the
 * launches to runtime/cuda.c; it holds host buffers only for the outputs, filled after every run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include "runtime/rt.h"

struct rt_executor {
  rt_plan plan; /* owned */
  mlc_kernel_ctx ctx;
  void **storage;     /* [nstorage] */
  void **input_buf;   /* [ntensors]: own buffers of RT_INPUT tensors */
  void **tensor_data; /* [ntensors] */
  mlc_kernel_fn *fns; /* [ncalls] */
  void ***call_args;  /* [ncalls][nargs] */
  bool profile;
  double *prof; /* [ncalls] seconds of the last run */
  rt_cuda *cuda;   /* GPU executor: NULL on the CPU */
  bool cuda_sync;  /* MLC_CUDA_SYNC=1: synchronise after every call */
  void **out_host; /* [noutputs] GPU executor: host copies of the outputs */
  int64_t (*out_shape)[MLC_MAX_DIMS]; /* [noutputs] each output's shape after the last run */
};

/* every output's shape starts as its static one */
static bool init_out_shapes(rt_executor *e) {
  const rt_plan *p = &e->plan;
  e->out_shape = calloc((size_t)p->noutputs + 1, sizeof *e->out_shape);
  if (!e->out_shape) return false;
  for (int o = 0; o < p->noutputs; o++)
    memcpy(e->out_shape[o], p->tensors[p->outputs[o]].shape, sizeof e->out_shape[o]);
  return true;
}

/* After a run: the actual shape of each data-dependent output, its valid part compacted to the front of data
 * (o's buffer: the executor's storage, or the GPU executor's host copy; NULL: already compacted). */
static int finish_dynamic(rt_executor *e, int k, int64_t extent, void *data, char *err) {
  const rt_plan *p = &e->plan;
  const rt_dyn_output *dy = &p->dynamic[k];
  const rt_tensor *t = &p->tensors[p->outputs[dy->output]];
  int64_t bound = t->shape[dy->axis];
  if (extent < 0 || extent > bound) {
    snprintf(err, RT_ERRLEN, "output '%s': the kernel wrote extent %lld for axis %d, outside [0, %lld]", t->name,
             (long long)extent, dy->axis, (long long)bound);
    return MLC_ERR_INTERNAL;
  }
  int64_t outer = 1, inner = mlc_dtype_size(t->dtype);
  for (int d = 0; d < dy->axis; d++) outer *= t->shape[d];
  for (int d = dy->axis + 1; d < t->ndim; d++) inner *= t->shape[d];
  /* block o moves from o * bound * inner to o * extent * inner: never up, so ascending memmoves are safe */
  if (data && extent < bound && extent > 0 && inner > 0)
    for (int64_t o = 1; o < outer; o++)
      memmove((char *)data + o * extent * inner, (char *)data + o * bound * inner, (size_t)(extent * inner));
  e->out_shape[dy->output][dy->axis] = extent;
  return MLC_OK;
}

#define HUGE_PAGE ((size_t)2 << 20)

/* Buffers of a huge page or more start on a huge page and are advised as transparent huge pages (where the
 * system leaves that to madvise, as Debian does): a model's weights do not stay in cache from one run to the
 * next, and a kernel that streams them from memory with 4 KiB pages takes a TLB miss every 4 KiB whose page
 * walk misses the cache too. ResNet-18's 512-channel Winograd GEMMs (16.8 MB of transformed weights each) ran
 * 2.1-2.2 -> 1.6-1.7 ms, the whole model 19.1 -> 17.6 ms (1 thread) and 9.9 -> 9.0 (2 threads). */
void *rt_alloc_buffer(size_t n) {
  void *p = NULL;
  if (n < HUGE_PAGE) return posix_memalign(&p, 64, n ? n : 64) != 0 ? NULL : p;
  if (posix_memalign(&p, HUGE_PAGE, n) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, n / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* the whole huge pages: a tail costs no extra memory */
#endif
  return p;
}

static void *aligned_alloc64(size_t n) {
  void *p = rt_alloc_buffer(n);
  if (p) memset(p, 0, n ? n : 64);
  return p;
}

void rt_executor_free(rt_executor *e) {
  if (!e) return;
  rt_cuda_free(e->cuda);
  for (int o = 0; o < e->plan.noutputs && e->out_host; o++) free(e->out_host[o]);
  free(e->out_host);
  for (int s = 0; s < e->plan.nstorage && e->storage; s++) free(e->storage[s]);
  for (int t = 0; t < e->plan.ntensors && e->input_buf; t++) free(e->input_buf[t]);
  for (int c = 0; c < e->plan.ncalls && e->call_args; c++) free(e->call_args[c]);
  free(e->storage);
  free(e->input_buf);
  free(e->tensor_data);
  free(e->fns);
  free(e->call_args);
  free(e->prof);
  free(e->out_shape);
  rt_plan_free(&e->plan);
  free(e);
}

int rt_executor_create(rt_plan *plan, void *(*lookup)(void *handle, const char *sym), void *handle,
                       mlc_pool *pool, rt_executor **out, char *err) {
  *out = NULL;
  rt_executor *e = calloc(1, sizeof *e);
  if (!e) {
    rt_plan_free(plan);
    snprintf(err, RT_ERRLEN, "out of memory");
    return MLC_ERR_INTERNAL;
  }
  e->plan = *plan;
  memset(plan, 0, sizeof *plan);
  rt_plan *p = &e->plan;
  int rc = rt_plan_validate(p, err);
  if (rc != MLC_OK) goto fail;
  int nt = p->ntensors, ns = p->nstorage, nc = p->ncalls;
  e->storage = calloc((size_t)ns + 1, sizeof *e->storage);
  e->input_buf = calloc((size_t)nt + 1, sizeof *e->input_buf);
  e->tensor_data = calloc((size_t)nt + 1, sizeof *e->tensor_data);
  e->fns = calloc((size_t)nc + 1, sizeof *e->fns);
  e->call_args = calloc((size_t)nc + 1, sizeof *e->call_args);
  e->prof = calloc((size_t)nc + 1, sizeof *e->prof);
  rc = MLC_ERR_INTERNAL;
  if (!e->storage || !e->input_buf || !e->tensor_data || !e->fns || !e->call_args || !e->prof) {
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  for (int s = 0; s < ns; s++)
    if (!(e->storage[s] = aligned_alloc64((size_t)p->storage_size[s]))) {
      snprintf(err, RT_ERRLEN, "out of memory allocating storage %d (%lld bytes)", s, (long long)p->storage_size[s]);
      goto fail;
    }
  for (int t = 0; t < nt; t++) {
    rt_tensor *ten = &p->tensors[t];
    switch (ten->kind) {
    case RT_INPUT:
      if (!(e->input_buf[t] = aligned_alloc64((size_t)rt_tensor_nbytes(ten)))) {
        snprintf(err, RT_ERRLEN, "out of memory for input '%s'", ten->name);
        goto fail;
      }
      e->tensor_data[t] = e->input_buf[t];
      break;
    case RT_PARAM:
      if (!p->param_data || !p->param_data[t]) {
        snprintf(err, RT_ERRLEN, "parameter '%s' has no data", ten->name);
        rc = MLC_ERR_INVALID;
        goto fail;
      }
      e->tensor_data[t] = p->param_data[t];
      break;
    case RT_ACTIVATION: e->tensor_data[t] = (char *)e->storage[ten->storage_id] + ten->offset; break;
    }
  }
  for (int c = 0; c < nc; c++) {
    rt_call *call = &p->calls[c];
    void *sym = lookup ? lookup(handle, call->kernel) : NULL;
    if (!sym) {
      snprintf(err, RT_ERRLEN, "kernel '%s' not found in the module", call->kernel);
      rc = MLC_ERR_INVALID;
      goto fail;
    }
    /* dlsym returns void *; POSIX guarantees the conversion to a function pointer */
    memcpy(&e->fns[c], &sym, sizeof sym);
    e->call_args[c] = calloc((size_t)call->nargs + 1, sizeof(void *));
    if (!e->call_args[c]) {
      snprintf(err, RT_ERRLEN, "out of memory");
      goto fail;
    }
    for (int a = 0; a < call->nargs; a++) e->call_args[c][a] = e->tensor_data[call->args[a]];
  }
  if (!init_out_shapes(e)) {
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  mlc_pool_kernel_ctx(pool, &e->ctx);
  *out = e;
  return MLC_OK;
fail:
  rt_executor_free(e);
  return rc;
}

int rt_executor_set_input(rt_executor *e, int i, const void *data, size_t nbytes, char *err) {
  if (i < 0 || i >= e->plan.ninputs) {
    snprintf(err, RT_ERRLEN, "input index %d out of range (the model has %d inputs)", i, e->plan.ninputs);
    return MLC_ERR_USAGE;
  }
  int t = e->plan.inputs[i];
  const rt_tensor *ten = &e->plan.tensors[t];
  int64_t want = rt_tensor_nbytes(ten);
  if ((int64_t)nbytes != want) {
    snprintf(err, RT_ERRLEN, "input '%s': %zu bytes given, expected %lld (%s", ten->name, nbytes, (long long)want,
             mlc_dtype_name(ten->dtype));
    size_t len = strlen(err);
    for (int d = 0; d < ten->ndim && len < RT_ERRLEN - 24; d++)
      len += (size_t)snprintf(err + len, RT_ERRLEN - len, "%s%lld", d ? "x" : " ", (long long)ten->shape[d]);
    snprintf(err + len, RT_ERRLEN - len, ")");
    return MLC_ERR_INVALID;
  }
  if (e->cuda) return rt_cuda_set_input(e->cuda, t, data, nbytes, err);
  if (nbytes) memcpy(e->input_buf[t], data, nbytes);
  return MLC_OK;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_cuda(rt_executor *e, char *err) {
  const rt_plan *p = &e->plan;
  bool each = e->profile || e->cuda_sync;
  for (int c = 0; c < p->ncalls; c++) {
    double t0 = e->profile ? now_seconds() : 0;
    int rc = rt_cuda_launch_call(e->cuda, c, err);
    if (rc == MLC_OK && each) rc = rt_cuda_sync(e->cuda, c, err);
    if (e->profile) e->prof[c] = now_seconds() - t0;
    if (rc != MLC_OK) return rc;
  }
  int rc = rt_cuda_sync(e->cuda, -1, err);
  for (int o = 0; o < p->noutputs && rc == MLC_OK; o++) {
    int t = p->outputs[o];
    rc = rt_cuda_get(e->cuda, t, e->out_host[o], (size_t)rt_tensor_nbytes(&p->tensors[t]), err);
  }
  for (int k = 0; k < p->ndynamic && rc == MLC_OK; k++) {
    int64_t extent = 0;
    rc = rt_cuda_get(e->cuda, p->dynamic[k].extent, &extent, sizeof extent, err);
    if (rc == MLC_OK) rc = finish_dynamic(e, k, extent, e->out_host[p->dynamic[k].output], err);
  }
  return rc;
}

int rt_executor_run(rt_executor *e, char *err) {
  const rt_plan *p = &e->plan;
  if (e->cuda) return run_cuda(e, err);
  for (int c = 0; c < p->ncalls; c++) {
    double t0 = e->profile ? now_seconds() : 0;
    int32_t rc = e->fns[c](e->call_args[c], NULL, &e->ctx);
    if (e->profile) e->prof[c] = now_seconds() - t0;
    if (rc != 0) {
      snprintf(err, RT_ERRLEN, "kernel '%s' (call %d) failed with code %d", p->calls[c].kernel, c, (int)rc);
      return MLC_ERR_INTERNAL;
    }
  }
  for (int k = 0; k < p->ndynamic; k++) {
    int64_t extent;
    memcpy(&extent, e->tensor_data[p->dynamic[k].extent], sizeof extent);
    /* a tensor listed as two outputs is compacted once */
    bool again = false;
    for (int j = 0; j < k; j++) again |= p->outputs[p->dynamic[j].output] == p->outputs[p->dynamic[k].output];
    int rc = finish_dynamic(e, k, extent, again ? NULL : e->tensor_data[p->outputs[p->dynamic[k].output]], err);
    if (rc != MLC_OK) return rc;
  }
  return MLC_OK;
}

void rt_executor_set_profile(rt_executor *e, bool on) {
  e->profile = on;
  if (on) memset(e->prof, 0, ((size_t)e->plan.ncalls + 1) * sizeof *e->prof);
}

const double *rt_executor_profile(const rt_executor *e) { return e->profile ? e->prof : NULL; }

const void *rt_executor_output(const rt_executor *e, int i) {
  if (i < 0 || i >= e->plan.noutputs) return NULL;
  if (e->cuda) return e->out_host[i];
  return e->tensor_data[e->plan.outputs[i]];
}

int rt_executor_output_shape(const rt_executor *e, int i, int64_t *shape) {
  if (i < 0 || i >= e->plan.noutputs) return -1;
  const rt_tensor *t = &e->plan.tensors[e->plan.outputs[i]];
  memcpy(shape, e->out_shape[i], sizeof(int64_t) * (size_t)t->ndim);
  return t->ndim;
}

const rt_plan *rt_executor_plan(const rt_executor *e) { return &e->plan; }

int rt_executor_create_cuda(rt_plan *plan, const rt_file *ptx, const rt_file *launch_table, rt_executor **out,
                            char *err) {
  *out = NULL;
  rt_executor *e = calloc(1, sizeof *e);
  if (!e) {
    rt_plan_free(plan);
    snprintf(err, RT_ERRLEN, "out of memory");
    return MLC_ERR_INTERNAL;
  }
  e->plan = *plan;
  memset(plan, 0, sizeof *plan);
  rt_plan *p = &e->plan;
  int rc = rt_plan_validate(p, err);
  if (rc != MLC_OK) goto fail;
  rc = MLC_ERR_INTERNAL;
  e->prof = calloc((size_t)p->ncalls + 1, sizeof *e->prof);
  e->out_host = calloc((size_t)p->noutputs + 1, sizeof *e->out_host);
  if (!e->prof || !e->out_host) {
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  for (int o = 0; o < p->noutputs; o++)
    if (!(e->out_host[o] = aligned_alloc64((size_t)rt_tensor_nbytes(&p->tensors[p->outputs[o]])))) {
      snprintf(err, RT_ERRLEN, "out of memory for output '%s'", p->tensors[p->outputs[o]].name);
      goto fail;
    }
  if ((rc = rt_cuda_create(p, ptx->data, ptx->size, launch_table->data, launch_table->size, &e->cuda, err)) != MLC_OK)
    goto fail;
  if (!init_out_shapes(e)) {
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  const char *sync = getenv("MLC_CUDA_SYNC");
  e->cuda_sync = sync && *sync && strcmp(sync, "0") != 0;
  mlc_pool_kernel_ctx(NULL, &e->ctx);
  *out = e;
  return MLC_OK;
fail:
  rt_executor_free(e);
  return rc;
}
