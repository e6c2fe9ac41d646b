/* The outputs of a compilation: the execution plan (tensors, storage, calls, params), the tar package
 * written from it, and the in-process executor over JIT-compiled kernels. Formats live in runtime/. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver/driver.h"

static char *xstrdup(const char *s) {
  char *r = strdup(s ? s : "");
  if (!r) abort();
  return r;
}

mlc_status mlc_build_plan(const Compiled *c, rt_plan *p, Diag *d) {
  const Graph *g = c->graph;
  int nv = g->values.n;
  int *tid = calloc((size_t)nv + 1, sizeof(int));
  rt_tensor *ts = calloc((size_t)nv + 1, sizeof(rt_tensor));
  void **pdata = calloc((size_t)nv + 1, sizeof(void *));
  memset(p, 0, sizeof *p);
  p->tensors = ts;
  p->param_data = pdata;
  if (!tid || !ts || !pdata) {
    free(tid);
    return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  }
  for (int i = 0; i < nv; i++) tid[i] = -1;
  int nt = 0;
  /* tensor for a value: inputs, constants (params) and activations */
#define TENSOR_OF(v)                                                                                  \
  do {                                                                                                \
    const Value *v_ = (v);                                                                            \
    if (tid[v_->id] >= 0) break;                                                                      \
    rt_tensor *t = &ts[nt];                                                                           \
    t->name = xstrdup(v_->name);                                                                      \
    t->dtype = v_->type.dtype;                                                                        \
    t->ndim = v_->type.ndim;                                                                          \
    memcpy(t->shape, v_->type.dims, sizeof t->shape);                                                 \
    t->storage_id = -1;                                                                               \
    if (v_->is_input) t->kind = RT_INPUT;                                                             \
    else if (v_->data) {                                                                              \
      t->kind = RT_PARAM;                                                                             \
      size_t nb_ = (size_t)tt_nbytes(&v_->type);                                                      \
      pdata[nt] = malloc(nb_ ? nb_ : 1);                                                              \
      if (nb_) memcpy(pdata[nt], v_->data, nb_);                                                      \
    } else {                                                                                          \
      t->kind = RT_ACTIVATION;                                                                        \
      t->storage_id = c->memory.storage_id[v_->id];                                                   \
      t->offset = c->memory.offset[v_->id];                                                           \
    }                                                                                                 \
    tid[v_->id] = nt++;                                                                               \
  } while (0)
  for (int i = 0; i < g->inputs.n; i++) TENSOR_OF(g->inputs.v[i]);
  for (int k = 0; k < c->kernels.n; k++)
    for (int i = 0; i < c->kernels.v[k].nargs; i++) TENSOR_OF(c->kernels.v[k].args[i]);
  for (int i = 0; i < g->outputs.n; i++) TENSOR_OF(g->outputs.v[i]);
#undef TENSOR_OF
  p->ntensors = nt;
  for (int i = 0; i < nt; i++)
    if (ts[i].kind == RT_ACTIVATION && ts[i].storage_id < 0) {
      free(tid);
      return diag_set(d, MLC_ERR_INTERNAL, "internal error: tensor '%s' has no storage", ts[i].name);
    }
  p->nstorage = c->memory.nstorage;
  p->storage_size = calloc((size_t)p->nstorage + 1, sizeof(int64_t));
  memcpy(p->storage_size, c->memory.storage_size, sizeof(int64_t) * (size_t)p->nstorage);
  p->ncalls = c->kernels.n;
  p->calls = calloc((size_t)p->ncalls + 1, sizeof(rt_call));
  for (int k = 0; k < c->kernels.n; k++) {
    const Kernel *kr = &c->kernels.v[k];
    p->calls[k].kernel = xstrdup(kr->func->name);
    p->calls[k].nargs = kr->nargs;
    p->calls[k].args = calloc((size_t)kr->nargs + 1, sizeof(int));
    for (int i = 0; i < kr->nargs; i++) p->calls[k].args[i] = tid[kr->args[i]->id];
  }
  p->ninputs = g->inputs.n;
  p->inputs = calloc((size_t)p->ninputs + 1, sizeof(int));
  for (int i = 0; i < g->inputs.n; i++) p->inputs[i] = tid[g->inputs.v[i]->id];
  p->noutputs = g->outputs.n;
  p->outputs = calloc((size_t)p->noutputs + 1, sizeof(int));
  for (int i = 0; i < g->outputs.n; i++) p->outputs[i] = tid[g->outputs.v[i]->id];
  p->dynamic = calloc((size_t)g->outputs.n + 1, sizeof *p->dynamic);
  for (int i = 0; i < g->outputs.n; i++) {
    const Value *v = g->outputs.v[i];
    if (!v->dyn_extent) continue;
    int ext = tid[v->dyn_extent->id];
    if (ext < 0) {
      free(tid);
      return diag_set(d, MLC_ERR_INTERNAL, "internal error: the extent of output '%s' is not computed", v->name);
    }
    p->dynamic[p->ndynamic++] = (rt_dyn_output){.output = i, .axis = v->dyn_axis, .extent = ext};
  }
  free(tid);
  return MLC_OK;
}

const char *mlc_arch_name(TargetArch a) {
  switch (a) {
  case ARCH_X86_64: return "x86_64";
  case ARCH_AARCH64: return "aarch64";
  case ARCH_NVPTX: return "nvptx";
  }
  return "unknown";
}

void mlc_remove_dir(const char *dir) {
  DIR *dp = opendir(dir);
  if (dp) {
    struct dirent *e;
    while ((e = readdir(dp))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(dp);
  }
  rmdir(dir);
}

char *mlc_meta_json(const Compiled *c, const rt_plan *plan) {
  const Graph *g = c->graph;
  rt_frozen *fz = calloc((size_t)g->frozen.n + 1, sizeof *fz);
  if (!fz) return NULL;
  for (int i = 0; i < g->frozen.n; i++) {
    const Value *v = g->frozen.v[i];
    fz[i].name = (char *)v->name;
    fz[i].dtype = v->type.dtype;
    fz[i].ndim = v->type.ndim;
    memcpy(fz[i].shape, v->type.dims, sizeof(int64_t) * (size_t)v->type.ndim);
    fz[i].hash = rt_fnv1a64(v->data, (size_t)tt_nbytes(&v->type));
  }
  char *meta = rt_meta_to_json(plan, c->target.str, mlc_arch_name(c->target.arch), g->frozen.n, fz);
  free(fz);
  return meta;
}

/* GPU package: mod.ptx (every kernel's launches as PTX entries), mod.cuda.json (the launch table: grid,
 * block and scratch buffers per kernel, see codegen/llvm/nvptx.c), mod.json, mod.params and meta.json
 * (arch "nvptx"); no mod.so. runtime/cuda.c loads it with the CUDA driver. */
static mlc_status write_gpu_package(Compiled *c, const char *path, Diag *d) {
  rt_plan plan = {0};
  void *params = NULL;
  size_t params_size = 0;
  char *json = NULL, *meta = NULL, *launches = NULL, *ptx = NULL;
  char err[RT_ERRLEN] = "";
  if ((ptx = cg_print_asm(c->cg, d)) && mlc_build_plan(c, &plan, d) == MLC_OK) {
    launches = cg_gpu_launches_json(c->cg);
    json = rt_plan_to_json(&plan);
    meta = mlc_meta_json(c, &plan);
    if (rt_params_serialize(&plan, &params, &params_size) != 0)
      diag_set(d, MLC_ERR_INTERNAL, "cannot serialise parameters");
    else {
      rt_file files[] = {
          {"mod.ptx", ptx, strlen(ptx)},
          {"mod.cuda.json", launches, strlen(launches)},
          {"mod.json", json, strlen(json)},
          {"mod.params", params, params_size},
          {"meta.json", meta, strlen(meta)},
      };
      if (rt_tar_write(path, (int)countof(files), files, err) != 0) diag_set(d, MLC_ERR_INVALID, "%s", err);
    }
  }
  free(ptx);
  free(launches);
  free(params);
  free(json);
  free(meta);
  rt_plan_free(&plan);
  return d->status;
}

mlc_status mlc_write_package(Compiled *c, const char *path, Diag *d) {
  if (c->target.kind == TARGET_GPU) return write_gpu_package(c, path, d);
  char dir[] = "/tmp/mlc-pkg-XXXXXX";
  if (!mkdtemp(dir)) return diag_set(d, MLC_ERR_INTERNAL, "cannot create a temporary directory");
  char stem[4200], so[4200];
  snprintf(stem, sizeof stem, "%s/mod", dir);
  snprintf(so, sizeof so, "%s/mod.so", dir);
  rt_plan plan = {0};
  void *so_data = NULL, *params = NULL;
  char *json = NULL, *meta = NULL, *kinfo = NULL;
  size_t so_size = 0, params_size = 0;
  char *objs[CG_MAX_OBJECTS];
  int nobjs = 0;
  char err[RT_ERRLEN] = "";
  if (cg_emit_objects(c->cg, stem, &nobjs, objs, d) == MLC_OK &&
      cg_link_shared(&c->target, nobjs, (const char **)objs, so, d) == MLC_OK &&
      file_read(so, &so_data, &so_size, d) == MLC_OK && mlc_build_plan(c, &plan, d) == MLC_OK) {
    json = rt_plan_to_json(&plan);
    meta = mlc_meta_json(c, &plan);
    if (rt_params_serialize(&plan, &params, &params_size) != 0)
      diag_set(d, MLC_ERR_INTERNAL, "cannot serialise parameters");
    else {
      kinfo = mlc_kernels_json(c);
      rt_file files[] = {
          {"mod.so", so_data, so_size},
          {"mod.json", json, strlen(json)},
          {"mod.params", params, params_size},
          {"meta.json", meta, strlen(meta)},
          {"kernels.json", kinfo ? kinfo : "", kinfo ? strlen(kinfo) : 0},
      };
      if (rt_tar_write(path, (int)countof(files), files, err) != 0) diag_set(d, MLC_ERR_INVALID, "%s", err);
    }
  }
  for (int i = 0; i < nobjs; i++) free(objs[i]);
  free(so_data);
  free(params);
  free(json);
  free(meta);
  free(kinfo);
  rt_plan_free(&plan);
  mlc_remove_dir(dir);
  return d->status;
}

static void *jit_lookup(void *h, const char *sym) { return cg_jit_lookup(h, sym); }

mlc_status mlc_jit_executor(Compiled *c, mlc_pool *pool, rt_executor **ex, CgJit **jit, Diag *d) {
  rt_plan *plan = calloc(1, sizeof *plan);
  if (!plan) return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  if (mlc_build_plan(c, plan, d) != MLC_OK) {
    rt_plan_free(plan);
    free(plan);
    return d->status;
  }
  CgModule *m = c->cg;
  c->cg = NULL;
  if (cg_jit_create(m, jit, d) != MLC_OK) {
    rt_plan_free(plan);
    free(plan);
    return d->status;
  }
  char err[RT_ERRLEN] = "";
  int rc = rt_executor_create(plan, jit_lookup, *jit, pool, ex, err);
  free(plan); /* its contents moved into the executor, on success and failure alike */
  if (rc != 0) {
    cg_jit_free(*jit);
    *jit = NULL;
    return diag_set(d, MLC_ERR_INTERNAL, "%s", err);
  }
  return MLC_OK;
}
