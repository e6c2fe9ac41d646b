/* The public module API (include/mlc/runtime.h): load a package, bind inputs, run, read outputs.
 *
 * A path whose file starts with the ELF magic is a shared library from `--output-format so` (load_shared);
 * anything else is read as a package (tar).
 *
 * mlc_module_load reads the tar, requires mod.so, mod.json, mod.params and meta.json, checks meta.json's "arch"
 * against this machine, parses and validates the plan, loads the params, then writes mod.so into an anonymous
 * memfd (or, where memfd_create is unavailable, a private temp file that is unlinked at once) and dlopens it
 * RTLD_LOCAL|RTLD_NOW through /proc/self/fd. Kernels are resolved with dlsym by rt_executor_create. Every
 * failure returns a status and leaves its message for mlc_rt_last_error.
 * GPU packages (meta.json arch "nvptx": mod.ptx and mod.cuda.json instead of mod.so) load only through
 * mlc_module_load_device(..., "cuda", ...), into a CUDA executor (runtime/cuda.c); each device refuses the
 * other's packages with a message saying which --device to use. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "runtime/json.h"
#include "runtime/rt.h"

struct mlc_module {
  void *dl;
  int so_fd; /* the memfd behind dl, kept open so a later load never reuses its /proc/self/fd name */
  mlc_pool *pool;
  rt_executor *exec;
  mlc_tensor_info *inputs, *outputs;
  int nfrozen; /* inputs bound at compile time (meta.json "frozen_inputs") */
  rt_frozen *frozen;
};

static const rt_file *find_member(int n, const rt_file *files, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(files[i].name, name) == 0) return &files[i];
  return NULL;
}

static void *dl_lookup(void *handle, const char *sym) { return dlsym(handle, sym); }

static bool write_all(int fd, const void *data, size_t size) {
  const char *p = data;
  while (size) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= (size_t)w;
  }
  return true;
}

/* dlopen a shared object held in memory. glibc matches already-loaded objects by path name, so the memfd
 * stays open (*keep_fd) while the library is loaded: a second module can never get the same name. */
static void *dlopen_memory(const void *data, size_t size, int *keep_fd, char *err) {
  *keep_fd = -1;
  char path[4096];
  int fd = memfd_create("mlc-mod.so", MFD_CLOEXEC);
  bool is_memfd = fd >= 0;
  if (!is_memfd) {
    const char *tmpdir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/mlc-mod-XXXXXX.so", tmpdir && *tmpdir ? tmpdir : "/tmp");
    fd = mkstemps(path, 3);
    if (fd < 0) {
      snprintf(err, RT_ERRLEN, "cannot create a temporary file for mod.so: %s", strerror(errno));
      return NULL;
    }
  }
  if (!write_all(fd, data, size)) {
    snprintf(err, RT_ERRLEN, "cannot write mod.so to a temporary file: %s", strerror(errno));
    close(fd);
    if (!is_memfd) unlink(path);
    return NULL;
  }
  if (is_memfd) snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  void *h = dlopen(path, RTLD_LOCAL | RTLD_NOW);
  if (!h) snprintf(err, RT_ERRLEN, "cannot load mod.so: %s", dlerror());
  if (h && is_memfd) {
    *keep_fd = fd;
  } else {
    close(fd);
    if (!is_memfd) unlink(path);
  }
  return h;
}

static int fail(int rc, const char *path, const char *msg) {
  rt_set_error("%s: %s", path, msg);
  return rc;
}

static mlc_tensor_info *tensor_infos(const rt_plan *p, int n, const int *ids) {
  mlc_tensor_info *info = calloc((size_t)n + 1, sizeof *info);
  if (!info) return NULL;
  for (int i = 0; i < n; i++) {
    const rt_tensor *t = &p->tensors[ids[i]];
    info[i].name = t->name; /* lives as long as the executor's plan */
    info[i].dtype = t->dtype;
    info[i].ndim = t->ndim;
    memcpy(info[i].shape, t->shape, sizeof info[i].shape);
  }
  return info;
}

/* A shared library written by `mlc compile --output-format so`: dlopen it by absolute path and read mod.json,
 * mod.params and meta.json from its data symbols mlc_so_plan, mlc_so_params, mlc_so_meta (each with
 * a uint64_t SYM_size). */
static int blob(void *dl, const char *sym, rt_file *f, char *err) {
  char size_sym[64];
  snprintf(size_sym, sizeof size_sym, "%s_size", sym);
  const void *data = dlsym(dl, sym);
  const uint64_t *size = dlsym(dl, size_sym);
  if (!data || !size) {
    snprintf(err, RT_ERRLEN, "not an mlc shared library (no symbol %s)", data ? size_sym : sym);
    return MLC_ERR_INVALID;
  }
  *f = (rt_file){sym, data, (size_t)*size};
  return MLC_OK;
}

static int load_shared(const char *path, int threads, mlc_module **out) {
  char err[RT_ERRLEN], full[4096];
  if (!realpath(path, full)) {
    rt_set_error("%s: cannot open: %s", path, strerror(errno));
    return MLC_ERR_INVALID;
  }
  int rc = MLC_ERR_INVALID;
  rt_plan plan = {0};
  rj_value *meta = NULL;
  mlc_module *m = calloc(1, sizeof *m);
  if (!m) return fail(MLC_ERR_INTERNAL, path, "out of memory");
  m->so_fd = -1;
  rt_file fplan, fparams, fmeta;
  if (!(m->dl = dlopen(full, RTLD_LOCAL | RTLD_NOW))) {
    snprintf(err, RT_ERRLEN, "cannot load: %.900s", dlerror());
    goto fail;
  }
  if ((rc = blob(m->dl, "mlc_so_plan", &fplan, err)) || (rc = blob(m->dl, "mlc_so_params", &fparams, err)) ||
      (rc = blob(m->dl, "mlc_so_meta", &fmeta, err)))
    goto fail;
  char jerr[RT_ERRLEN];
  meta = rj_parse(fmeta.data, fmeta.size, jerr);
  rc = MLC_ERR_INVALID;
  if (!meta || meta->kind != RJ_OBJ) {
    snprintf(err, RT_ERRLEN, "mlc_so_meta: %.900s", meta ? "not a JSON object" : jerr);
    goto fail;
  }
  if ((rc = rt_meta_frozen(fmeta.data, fmeta.size, &m->nfrozen, &m->frozen, err)) != MLC_OK) goto fail;
  if ((rc = rt_plan_from_json(fplan.data, fplan.size, &plan, err)) != MLC_OK) goto fail;
  if ((rc = rt_params_load(fparams.data, fparams.size, &plan, false, err)) != MLC_OK) goto fail;
  rc = MLC_ERR_INTERNAL;
  if (!(m->pool = mlc_pool_create(threads))) {
    snprintf(err, RT_ERRLEN, "cannot create the thread pool");
    goto fail;
  }
  if ((rc = rt_executor_create(&plan, dl_lookup, m->dl, m->pool, &m->exec, err)) != MLC_OK) goto fail;
  const rt_plan *p = rt_executor_plan(m->exec);
  m->inputs = tensor_infos(p, p->ninputs, p->inputs);
  m->outputs = tensor_infos(p, p->noutputs, p->outputs);
  if (!m->inputs || !m->outputs) {
    rc = MLC_ERR_INTERNAL;
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  rj_free(meta);
  *out = m;
  return MLC_OK;
fail:
  rt_set_error("%s: %s", path, err);
  rj_free(meta);
  rt_plan_free(&plan);
  mlc_module_free(m);
  return rc;
}

int mlc_module_load(const char *path, int threads, mlc_module **out) {
  return mlc_module_load_device(path, "cpu", threads, out);
}

int mlc_module_load_device(const char *path, const char *device, int threads, mlc_module **out) {
  *out = NULL;
  bool cuda = device && strcmp(device, "cuda") == 0;
  if (device && !cuda && strcmp(device, "cpu") != 0) {
    rt_set_error("unknown device '%s' (cpu or cuda)", device);
    return MLC_ERR_USAGE;
  }
  char err[RT_ERRLEN];
  void *blob = NULL;
  int nfiles = 0;
  rt_file *files = NULL;
  if (!path) return fail(MLC_ERR_USAGE, "(null)", "no package path");
  FILE *probe = fopen(path, "rb");
  if (!probe) {
    rt_set_error("%s: cannot open: %s", path, strerror(errno));
    return MLC_ERR_INVALID;
  }
  unsigned char magic[4] = {0};
  size_t got = fread(magic, 1, 4, probe);
  fclose(probe);
  if (got == 4 && memcmp(magic, "\177ELF", 4) == 0) {
    if (cuda)
      return fail(MLC_ERR_UNSUPPORTED, path, "a shared library holds CPU code: run it without --device cuda, or "
                  "compile the model with --target cuda into a package");
    return load_shared(path, threads, out);
  }
  if (rt_tar_read(path, &blob, &nfiles, &files, err) != MLC_OK) {
    if (strstr(err, "out of memory")) return fail(MLC_ERR_INTERNAL, path, "out of memory reading the package");
    rt_set_error("%s: not an mlc package (missing mod.json)", path);
    return MLC_ERR_INVALID;
  }
  int rc = MLC_ERR_INVALID;
  rt_plan plan = {0};
  mlc_module *m = NULL;
  rj_value *meta = NULL;
  static const char *required[] = {"mod.json", "meta.json", "mod.params"};
  for (size_t i = 0; i < sizeof required / sizeof *required; i++)
    if (!find_member(nfiles, files, required[i])) {
      snprintf(err, RT_ERRLEN, "not an mlc package (missing %s)", required[i]);
      goto fail;
    }
  const rt_file *fmeta = find_member(nfiles, files, "meta.json");
  char jerr[RT_ERRLEN];
  meta = rj_parse(fmeta->data, fmeta->size, jerr);
  if (!meta || meta->kind != RJ_OBJ) {
    snprintf(err, RT_ERRLEN, "meta.json: %.900s", meta ? "not a JSON object" : jerr);
    goto fail;
  }
  const rj_value *arch = rj_get(meta, "arch");
  if (!arch || arch->kind != RJ_STR) {
    snprintf(err, RT_ERRLEN, "meta.json: missing \"arch\"");
    goto fail;
  }
  bool gpu_pkg = strcmp(arch->str, "nvptx") == 0;
  if (gpu_pkg && !cuda) {
    snprintf(err, RT_ERRLEN, "this package was compiled for cuda: run it with --device cuda");
    rc = MLC_ERR_UNSUPPORTED;
    goto fail;
  }
  if (cuda && !gpu_pkg) {
    snprintf(err, RT_ERRLEN, "this package was compiled for %.64s, not cuda: run it without --device cuda, or "
             "compile the model with --target cuda", arch->str);
    rc = MLC_ERR_UNSUPPORTED;
    goto fail;
  }
  static const char *code_members[2][2] = {{"mod.so", NULL}, {"mod.ptx", "mod.cuda.json"}};
  for (int i = 0; i < 2; i++) {
    const char *name = code_members[gpu_pkg][i];
    if (name && !find_member(nfiles, files, name)) {
      snprintf(err, RT_ERRLEN, "not an mlc package (missing %s)", name);
      goto fail;
    }
  }
  if (!gpu_pkg && strcmp(arch->str, rt_host_arch()) != 0) {
    snprintf(err, RT_ERRLEN, "package was compiled for %.64s, but this machine is %s; recompile it with a target "
             "for this machine", arch->str, rt_host_arch());
    rc = MLC_ERR_UNSUPPORTED;
    goto fail;
  }
  const rt_file *fjson = find_member(nfiles, files, "mod.json");
  if ((rc = rt_plan_from_json(fjson->data, fjson->size, &plan, err)) != MLC_OK) goto fail;
  const rt_file *fparams = find_member(nfiles, files, "mod.params");
  if ((rc = rt_params_load(fparams->data, fparams->size, &plan, true, err)) != MLC_OK) goto fail;
  rc = MLC_ERR_INTERNAL;
  m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  m->so_fd = -1;
  if ((rc = rt_meta_frozen(fmeta->data, fmeta->size, &m->nfrozen, &m->frozen, err)) != MLC_OK) goto fail;
  rc = MLC_ERR_INTERNAL;
  if (gpu_pkg) {
    if ((rc = rt_executor_create_cuda(&plan, find_member(nfiles, files, "mod.ptx"),
                                      find_member(nfiles, files, "mod.cuda.json"), &m->exec, err)) != MLC_OK)
      goto fail;
    goto loaded;
  }
  const rt_file *fso = find_member(nfiles, files, "mod.so");
  if (!(m->dl = dlopen_memory(fso->data, fso->size, &m->so_fd, err))) {
    rc = MLC_ERR_INVALID;
    goto fail;
  }
  if (!(m->pool = mlc_pool_create(threads))) {
    snprintf(err, RT_ERRLEN, "cannot create the thread pool");
    goto fail;
  }
  if ((rc = rt_executor_create(&plan, dl_lookup, m->dl, m->pool, &m->exec, err)) != MLC_OK) goto fail;
loaded:;
  const rt_plan *p = rt_executor_plan(m->exec);
  m->inputs = tensor_infos(p, p->ninputs, p->inputs);
  m->outputs = tensor_infos(p, p->noutputs, p->outputs);
  if (!m->inputs || !m->outputs) {
    rc = MLC_ERR_INTERNAL;
    snprintf(err, RT_ERRLEN, "out of memory");
    goto fail;
  }
  rj_free(meta);
  free(files);
  rt_tar_free(blob);
  *out = m;
  return MLC_OK;
fail:
  rt_set_error("%s: %s", path, err);
  rj_free(meta);
  rt_plan_free(&plan);
  mlc_module_free(m);
  free(files);
  rt_tar_free(blob);
  return rc;
}

const rt_frozen *rt_module_frozen(const mlc_module *m, const char *name) {
  for (int i = 0; i < m->nfrozen; i++)
    if (!strcmp(m->frozen[i].name, name)) return &m->frozen[i];
  return NULL;
}

void mlc_module_free(mlc_module *m) {
  if (!m) return;
  rt_frozen_free(m->nfrozen, m->frozen);
  rt_executor_free(m->exec);
  mlc_pool_destroy(m->pool);
  if (m->dl) dlclose(m->dl);
  if (m->so_fd >= 0) close(m->so_fd);
  free(m->inputs);
  free(m->outputs);
  free(m);
}

int mlc_module_num_inputs(const mlc_module *m) { return rt_executor_plan(m->exec)->ninputs; }
int mlc_module_num_outputs(const mlc_module *m) { return rt_executor_plan(m->exec)->noutputs; }

const mlc_tensor_info *mlc_module_input(const mlc_module *m, int i) {
  return i >= 0 && i < mlc_module_num_inputs(m) ? &m->inputs[i] : NULL;
}

const mlc_tensor_info *mlc_module_output(const mlc_module *m, int i) {
  return i >= 0 && i < mlc_module_num_outputs(m) ? &m->outputs[i] : NULL;
}

int mlc_module_set_input(mlc_module *m, int i, const void *data, size_t nbytes) {
  char err[RT_ERRLEN];
  int rc = rt_executor_set_input(m->exec, i, data, nbytes, err);
  if (rc != MLC_OK) rt_set_error("%s", err);
  return rc;
}

int mlc_module_run(mlc_module *m) {
  char err[RT_ERRLEN];
  int rc = rt_executor_run(m->exec, err);
  if (rc != MLC_OK) rt_set_error("%s", err);
  return rc;
}

const void *mlc_module_output_data(const mlc_module *m, int i) { return rt_executor_output(m->exec, i); }

int mlc_module_output_shape(const mlc_module *m, int i, int64_t shape[MLC_MAX_DIMS]) {
  return rt_executor_output_shape(m->exec, i, shape);
}

int mlc_module_output_dynamic_axis(const mlc_module *m, int i) {
  const rt_plan *p = rt_executor_plan(m->exec);
  return i >= 0 && i < p->noutputs ? rt_plan_dynamic_axis(p, i) : -1;
}

rt_executor *rt_module_executor(mlc_module *m) { return m ? m->exec : NULL; }
