/* Unit tests of the CUDA runtime path (runtime/cuda.c) without a GPU: the launch-table parser on good and bad
 * tables, the "no NVIDIA driver" error, and a hand-written GPU package run through a fake driver
 * (tests/cuda/fake_libcuda.c, built here with the system C compiler and loaded through MLC_CUDA_DRIVER) that
 * records every launch and computes a few known entries on the CPU: argument packing (buffers in the plan's
 * order, then scratch), params copied once, inputs in and outputs back, the launch order and sizes, profiling,
 * and the errors for no device, bad PTX, a missing entry, a failing launch or synchronisation, a table that
 * disagrees with the plan, and a package run on the other device. The fake-driver part is skipped with a
 * message when no C compiler 'cc' is available. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mlc/runtime.h"
#include "runtime/rt.h"

static int failures;
#define CHECK_MSG(cond, msg)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s (message: %s)\n", __FILE__, __LINE__, #cond, msg); \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)
#define CHECK(cond) CHECK_MSG(cond, "-")

static char tmpdir[256];

/* ---------------------------------------------------------------- the launch table */

static int parse(const char *json, char *err) {
  rt_cuda_table t;
  int rc = rt_cuda_table_parse(json, strlen(json), &t, err);
  rt_cuda_table_free(&t);
  return rc;
}

static void test_table(void) {
  const char *good = "{\"kernels\":[\n"
                     "{\"name\":\"k_a\",\"nparams\":3,\"scratch\":[65536,40],\"launches\":["
                     "{\"entry\":\"k_a__k0\",\"grid\":64,\"block\":256},{\"entry\":\"k_a__k1\",\"grid\":1,\"block\":1}]},\n"
                     "{\"name\":\"k_b\",\"nparams\":2,\"scratch\":[],\"launches\":[{\"entry\":\"k_b__k0\",\"grid\":8,"
                     "\"block\":1024}]}]}\n";
  rt_cuda_table t;
  char err[RT_ERRLEN] = "";
  int rc = rt_cuda_table_parse(good, strlen(good), &t, err);
  CHECK_MSG(rc == MLC_OK && t.nkernels == 2, err);
  if (rc == MLC_OK) {
    const rt_cuda_kernel *a = rt_cuda_table_find(&t, "k_a"), *b = rt_cuda_table_find(&t, "k_b");
    CHECK(a && a->nparams == 3 && a->nscratch == 2 && a->scratch[0] == 65536 && a->scratch[1] == 40);
    CHECK(a && a->nlaunches == 2 && !strcmp(a->launches[1].entry, "k_a__k1") && a->launches[0].grid == 64 &&
          a->launches[0].block == 256);
    CHECK(b && b->nscratch == 0 && b->nlaunches == 1 && b->launches[0].block == 1024);
    CHECK(!rt_cuda_table_find(&t, "k_c"));
  }
  rt_cuda_table_free(&t);
  CHECK(parse("{\"kernels\":[]}", err) == MLC_OK);
  static const struct {
    const char *json, *msg;
  } bad[] = {
      {"{\"kernels\":[", "mod.cuda.json"},
      {"[]", "\"kernels\" array"},
      {"{\"kernels\":[{\"nparams\":1,\"scratch\":[],\"launches\":[{\"entry\":\"e\",\"grid\":1,\"block\":1}]}]}",
       "no \"name\""},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":1,\"scratch\":[],\"launches\":[]}]}", "non-empty \"launches\""},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":-1,\"scratch\":[],\"launches\":[{\"entry\":\"e\",\"grid\":1,"
       "\"block\":1}]}]}", "\"nparams\""},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":1,\"scratch\":[0],\"launches\":[{\"entry\":\"e\",\"grid\":1,"
       "\"block\":1}]}]}", "scratch buffer 0"},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":1,\"scratch\":[],\"launches\":[{\"entry\":\"e\",\"grid\":1,"
       "\"block\":2048}]}]}", "launch 0"},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":1,\"scratch\":[],\"launches\":[{\"entry\":\"e\",\"grid\":0,"
       "\"block\":1}]}]}", "launch 0"},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":1,\"scratch\":[],\"launches\":[{\"grid\":1,\"block\":1}]}]}",
       "launch 0"},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":1,\"scratch\":[],\"launches\":[{\"entry\":\"e\",\"grid\":1.5,"
       "\"block\":1}]}]}", "launch 0"},
      {"{\"kernels\":[{\"name\":\"k\",\"nparams\":1,\"scratch\":[],\"launches\":[{\"entry\":\"e\",\"grid\":1,"
       "\"block\":1}]},{\"name\":\"k\",\"nparams\":1,\"scratch\":[],\"launches\":[{\"entry\":\"e\",\"grid\":1,"
       "\"block\":1}]}]}", "listed twice"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = 0;
    rc = parse(bad[i].json, err);
    CHECK_MSG(rc == MLC_ERR_INVALID && strstr(err, bad[i].msg), err);
  }
}

/* ---------------------------------------------------------------- a hand-written GPU package */

/* x (input f32[N]) + w (param) -> y; twice(y) -> z = 2y + 1 through a scratch buffer. Outputs z, y. */
#define N 300
static const char *fake_ptx = "// fake PTX for tests/cuda/fake_libcuda.c\n.version 8.0\n.target sm_90\n"
                              ".visible .entry fake_add__k0(\n .param .u64 a,\n .param .u64 b,\n .param .u64 c\n)\n{ }\n"
                              ".visible .entry fake_twice__k0(\n .param .u64 x,\n .param .u64 y,\n .param .u64 s\n)\n{ }\n"
                              ".visible .entry fake_twice__k1(\n .param .u64 x,\n .param .u64 y,\n .param .u64 s\n)\n{ }\n";
static const char *fake_table = "{\"kernels\":[\n"
                                "{\"name\":\"fake_add\",\"nparams\":3,\"scratch\":[],\"launches\":["
                                "{\"entry\":\"fake_add__k0\",\"grid\":3,\"block\":100}]},\n"
                                "{\"name\":\"fake_twice\",\"nparams\":2,\"scratch\":[1200],\"launches\":["
                                "{\"entry\":\"fake_twice__k0\",\"grid\":2,\"block\":150},"
                                "{\"entry\":\"fake_twice__k1\",\"grid\":1,\"block\":300}]}]}\n";

static void make_plan(rt_plan *p) {
  memset(p, 0, sizeof *p);
  p->ntensors = 4;
  p->tensors = calloc(4, sizeof *p->tensors);
  p->param_data = calloc(4, sizeof *p->param_data);
  const char *names[4] = {"x", "w", "y", "z"};
  rt_tensor_kind kinds[4] = {RT_INPUT, RT_PARAM, RT_ACTIVATION, RT_ACTIVATION};
  for (int i = 0; i < 4; i++) {
    p->tensors[i] = (rt_tensor){strdup(names[i]), MLC_F32, 1, {N}, kinds[i], -1, 0};
  }
  p->tensors[2].storage_id = 0, p->tensors[3].storage_id = 0, p->tensors[3].offset = 4 * N + 16;
  float *w = malloc(4 * N);
  for (int i = 0; i < N; i++) w[i] = (float)i * 0.5f;
  p->param_data[1] = w;
  p->nstorage = 1;
  p->storage_size = calloc(1, sizeof(int64_t));
  p->storage_size[0] = 8 * N + 16;
  p->ncalls = 2;
  p->calls = calloc(2, sizeof *p->calls);
  p->calls[0] = (rt_call){strdup("fake_add"), 3, calloc(3, sizeof(int))};
  p->calls[0].args[0] = 0, p->calls[0].args[1] = 1, p->calls[0].args[2] = 2;
  p->calls[1] = (rt_call){strdup("fake_twice"), 2, calloc(2, sizeof(int))};
  p->calls[1].args[0] = 2, p->calls[1].args[1] = 3;
  p->ninputs = 1;
  p->inputs = calloc(1, sizeof(int));
  p->noutputs = 2;
  p->outputs = calloc(2, sizeof(int));
  p->outputs[0] = 3, p->outputs[1] = 2;
}

/* writes the package; ptx/table NULL: the good ones; arch "nvptx" for a GPU package */
static void write_package(const char *path, const char *ptx, const char *table, const char *arch) {
  rt_plan p;
  make_plan(&p);
  char *json = rt_plan_to_json(&p), *meta = rt_meta_to_json(&p, "cuda", arch, 0, NULL);
  void *params = NULL;
  size_t psize = 0;
  char err[RT_ERRLEN] = "";
  CHECK(json && meta && rt_params_serialize(&p, &params, &psize) == 0);
  ptx = ptx ? ptx : fake_ptx;
  table = table ? table : fake_table;
  rt_file files[] = {{"mod.ptx", ptx, strlen(ptx)},
                     {"mod.cuda.json", table, strlen(table)},
                     {"mod.json", json, json ? strlen(json) : 0},
                     {"mod.params", params, psize},
                     {"meta.json", meta, meta ? strlen(meta) : 0}};
  CHECK_MSG(rt_tar_write(path, 5, files, err) == 0, err);
  free(json);
  free(meta);
  free(params);
  rt_plan_free(&p);
}

typedef struct fake_api {
  void (*reset)(void);
  int (*nlaunches)(void);
  int (*live_allocs)(void);
  int (*retained)(void);
  int (*syncs)(void);
  const char *(*launch)(int i, unsigned *grid, unsigned *block, int *nargs, const unsigned long long **args);
} fake_api;

static bool fake_bind(const char *so, fake_api *f) {
  void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return false;
  void *syms[6] = {dlsym(dl, "fake_cuda_reset"),       dlsym(dl, "fake_cuda_nlaunches"), dlsym(dl, "fake_cuda_live_allocs"),
                   dlsym(dl, "fake_cuda_retained"),    dlsym(dl, "fake_cuda_syncs"),     dlsym(dl, "fake_cuda_launch")};
  for (int i = 0; i < 6; i++)
    if (!syms[i]) return false;
  memcpy(&f->reset, &syms[0], sizeof(void *));
  memcpy(&f->nlaunches, &syms[1], sizeof(void *));
  memcpy(&f->live_allocs, &syms[2], sizeof(void *));
  memcpy(&f->retained, &syms[3], sizeof(void *));
  memcpy(&f->syncs, &syms[4], sizeof(void *));
  memcpy(&f->launch, &syms[5], sizeof(void *));
  return true;
}

/* loads pkg on cuda and runs it once; returns the status of the first failing step, message in msg */
static int load_run(const char *pkg, char *msg, size_t n) {
  mlc_module *m = NULL;
  int rc = mlc_module_load_device(pkg, "cuda", 0, &m);
  if (rc == MLC_OK) {
    float x[N];
    for (int i = 0; i < N; i++) x[i] = 1.0f;
    rc = mlc_module_set_input(m, 0, x, sizeof x);
    if (rc == MLC_OK) rc = mlc_module_run(m);
  }
  snprintf(msg, n, "%s", rc ? mlc_rt_last_error() : "");
  mlc_module_free(m);
  return rc;
}

static void test_fake_driver(void) {
  char src[1024], so[512], pkg[512], cmd[2048], msg[RT_ERRLEN + 256];
  /* the fake driver's source: beside this file's folder, or under the working directory (tests/) */
  snprintf(src, sizeof src, "%s", __FILE__);
  char *slash = strrchr(src, '/');
  if (slash) snprintf(slash, sizeof src - (size_t)(slash - src), "/../cuda/fake_libcuda.c");
  if (access(src, R_OK) != 0) snprintf(src, sizeof src, "cuda/fake_libcuda.c");
  snprintf(so, sizeof so, "%s/libfakecuda.so", tmpdir);
  snprintf(pkg, sizeof pkg, "%s/gpu.tar", tmpdir);
  snprintf(cmd, sizeof cmd, "cc -std=c17 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC -O1 -o '%s' '%s'", so, src);
  if (access(src, R_OK) != 0 || system(cmd) != 0) {
    printf("test_cuda: skipping the fake-driver checks (cannot build %s with 'cc')\n", src);
    return;
  }
  fake_api f;
  setenv("MLC_CUDA_DRIVER", so, 1);
  if (!fake_bind(so, &f)) {
    CHECK_MSG(false, dlerror());
    return;
  }
  write_package(pkg, NULL, NULL, "nvptx");

  /* on the CPU: refused with the hint */
  mlc_module *m = NULL;
  CHECK(mlc_module_load(pkg, 1, &m) == MLC_ERR_UNSUPPORTED &&
        strstr(mlc_rt_last_error(), "this package was compiled for cuda: run it with --device cuda"));

  /* a run: results, launches, arguments */
  f.reset();
  int rc = mlc_module_load_device(pkg, "cuda", 0, &m);
  CHECK_MSG(rc == MLC_OK, mlc_rt_last_error());
  if (rc != MLC_OK) return;
  CHECK(f.live_allocs() == 1 && f.retained() == 1);
  CHECK(mlc_module_num_inputs(m) == 1 && mlc_module_num_outputs(m) == 2 && !strcmp(mlc_module_output(m, 0)->name, "z"));
  float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i % 7) - 3.0f;
  CHECK(mlc_module_set_input(m, 0, x, sizeof x) == MLC_OK);
  CHECK(mlc_module_set_input(m, 0, x, sizeof x - 4) == MLC_ERR_INVALID);
  for (int round = 0; round < 2; round++) {
    rc = mlc_module_run(m);
    CHECK_MSG(rc == MLC_OK, mlc_rt_last_error());
    const float *z = mlc_module_output_data(m, 0), *y = mlc_module_output_data(m, 1);
    int bad = 0;
    for (int i = 0; i < N && z && y; i++) {
      float want_y = x[i] + (float)i * 0.5f;
      if (y[i] != want_y || z[i] != 2 * want_y + 1) bad++;
    }
    CHECK(z && y && bad == 0);
    for (int i = 0; i < N; i++) x[i] += 1.0f; /* the second round sees new inputs */
    CHECK(mlc_module_set_input(m, 0, x, sizeof x) == MLC_OK);
  }
  CHECK(f.nlaunches() == 6);
  unsigned grid, block;
  int nargs;
  const unsigned long long *a0, *a1, *a2;
  const char *e0 = f.launch(0, &grid, &block, &nargs, &a0);
  CHECK(e0 && !strcmp(e0, "fake_add__k0") && grid == 3 && block == 100 && nargs == 3);
  const char *e1 = f.launch(1, &grid, &block, &nargs, &a1);
  CHECK(e1 && !strcmp(e1, "fake_twice__k0") && grid == 2 && block == 150 && nargs == 3);
  const char *e2 = f.launch(2, &grid, &block, &nargs, &a2);
  CHECK(e2 && !strcmp(e2, "fake_twice__k1") && grid == 1 && block == 300 && nargs == 3);
  if (e0 && e1 && e2) {
    CHECK(a1[0] == a0[2]);                                 /* y written by call 0 is read by call 1 */
    CHECK(a1[1] == a0[2] + 4 * N + 16);                    /* z at its storage offset */
    CHECK(a1[2] == a2[2] && a1[2] % 256 == 0);             /* the same aligned scratch in both launches */
    CHECK(a0[0] % 256 == 0 && a0[1] % 256 == 0 && a0[0] != a0[1] && a1[2] != a0[0] && a1[2] != a0[1]);
  }
  /* profiling synchronises after every call and times it */
  rt_executor *ex = rt_module_executor(m);
  rt_executor_set_profile(ex, true);
  int syncs = f.syncs();
  char err[RT_ERRLEN] = "";
  CHECK_MSG(rt_executor_run(ex, err) == MLC_OK, err);
  CHECK(f.syncs() == syncs + 3 && rt_executor_profile(ex) && rt_executor_profile(ex)[1] >= 0);
  rt_executor_set_profile(ex, false);
  mlc_module_free(m);
  CHECK(f.live_allocs() == 0 && f.retained() == 0);

  /* errors */
  setenv("FAKE_CUDA_DEVICES", "0", 1);
  CHECK(load_run(pkg, msg, sizeof msg) == MLC_ERR_UNSUPPORTED && strstr(msg, "no CUDA device"));
  unsetenv("FAKE_CUDA_DEVICES");
  setenv("FAKE_CUDA_FAIL_LAUNCH", "fake_twice__k1", 1);
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_INTERNAL && strstr(msg, "kernel 'fake_twice' (call 1): launch of 'fake_twice__k1'") &&
                strstr(msg, "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"),
            msg);
  unsetenv("FAKE_CUDA_FAIL_LAUNCH");
  setenv("FAKE_CUDA_FAIL_SYNC", "1", 1);
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_INTERNAL && strstr(msg, "CUDA_ERROR_ILLEGAL_ADDRESS") && strstr(msg, "MLC_CUDA_SYNC"), msg);
  setenv("MLC_CUDA_SYNC", "1", 1);
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_INTERNAL && strstr(msg, "kernel 'fake_add' (call 0) failed on the GPU"), msg);
  unsetenv("MLC_CUDA_SYNC");
  unsetenv("FAKE_CUDA_FAIL_SYNC");
  write_package(pkg, "// FAKE_BAD_PTX\n", NULL, "nvptx");
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_INVALID && strstr(msg, "cannot load mod.ptx") && strstr(msg, "fake syntax error"), msg);
  char ptx_missing[1024];
  snprintf(ptx_missing, sizeof ptx_missing, "%s", fake_ptx);
  *strstr(ptx_missing, "fake_twice__k1") = 'X';
  write_package(pkg, ptx_missing, NULL, "nvptx");
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_INVALID && strstr(msg, "entry 'fake_twice__k1' not found in mod.ptx"), msg);
  write_package(pkg, NULL, "{\"kernels\":[{\"name\":\"fake_add\",\"nparams\":3,\"scratch\":[],\"launches\":["
                           "{\"entry\":\"fake_add__k0\",\"grid\":3,\"block\":100}]}]}", "nvptx");
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_INVALID && strstr(msg, "kernel 'fake_twice' (call 1) is not in mod.cuda.json"), msg);
  write_package(pkg, NULL, "{\"kernels\":[{\"name\":\"fake_add\",\"nparams\":4,\"scratch\":[],\"launches\":["
                           "{\"entry\":\"fake_add__k0\",\"grid\":3,\"block\":100}]}]}", "nvptx");
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_INVALID && strstr(msg, "mod.json passes 3 buffers, mod.cuda.json expects 4"), msg);
  write_package(pkg, NULL, NULL, rt_host_arch());
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_UNSUPPORTED && strstr(msg, "not cuda: run it without --device cuda"), msg);
  CHECK(f.live_allocs() == 0 && f.retained() == 0); /* every failure released what it took */

  /* a data-dependent output: the extent is copied back with the outputs, the host copy trimmed to [2, 3] */
  rt_plan p = {0};
  p.ntensors = 2;
  p.tensors = calloc(2, sizeof *p.tensors);
  p.param_data = calloc(2, sizeof *p.param_data);
  p.tensors[0] = (rt_tensor){strdup("y"), MLC_I64, 2, {2, 4}, RT_ACTIVATION, 0, 0};
  p.tensors[1] = (rt_tensor){strdup("y.extent"), MLC_I64, 1, {1}, RT_ACTIVATION, 0, 64};
  p.nstorage = 1;
  p.storage_size = calloc(1, sizeof(int64_t));
  p.storage_size[0] = 128;
  p.ncalls = 1;
  p.calls = calloc(1, sizeof *p.calls);
  p.calls[0] = (rt_call){strdup("fake_dyn"), 2, calloc(2, sizeof(int))};
  p.calls[0].args[1] = 1;
  p.noutputs = 1;
  p.outputs = calloc(1, sizeof(int));
  p.ndynamic = 1;
  p.dynamic = calloc(1, sizeof *p.dynamic);
  p.dynamic[0] = (rt_dyn_output){.output = 0, .axis = 1, .extent = 1};
  const char *dyn_ptx = "// fake\n.visible .entry fake_dyn__k0(\n .param .u64 y,\n .param .u64 n\n)\n{ }\n";
  const char *dyn_table = "{\"kernels\":[{\"name\":\"fake_dyn\",\"nparams\":2,\"scratch\":[],\"launches\":["
                          "{\"entry\":\"fake_dyn__k0\",\"grid\":1,\"block\":1}]}]}";
  char *json = rt_plan_to_json(&p), *meta = rt_meta_to_json(&p, "cuda", "nvptx", 0, NULL);
  void *params = NULL;
  size_t psize = 0;
  CHECK(json && meta && rt_params_serialize(&p, &params, &psize) == 0);
  rt_file files[] = {{"mod.ptx", dyn_ptx, strlen(dyn_ptx)},
                     {"mod.cuda.json", dyn_table, strlen(dyn_table)},
                     {"mod.json", json, json ? strlen(json) : 0},
                     {"mod.params", params, psize},
                     {"meta.json", meta, meta ? strlen(meta) : 0}};
  CHECK_MSG(rt_tar_write(pkg, 5, files, err) == 0, err);
  free(json);
  free(meta);
  free(params);
  rt_plan_free(&p);
  rc = mlc_module_load_device(pkg, "cuda", 0, &m);
  CHECK_MSG(rc == MLC_OK, mlc_rt_last_error());
  if (rc == MLC_OK) {
    int64_t shape[MLC_MAX_DIMS];
    CHECK(mlc_module_output_dynamic_axis(m, 0) == 1 && mlc_module_output(m, 0)->shape[1] == 4);
    CHECK(mlc_module_run(m) == MLC_OK);
    CHECK(mlc_module_output_shape(m, 0, shape) == 2 && shape[0] == 2 && shape[1] == 3);
    const int64_t *y = mlc_module_output_data(m, 0);
    CHECK(y && y[0] == 0 && y[1] == 1 && y[2] == 2 && y[3] == 10 && y[4] == 11 && y[5] == 12);
    mlc_module_free(m);
  }
  unsetenv("MLC_CUDA_DRIVER");
}

/* ---------------------------------------------------------------- no driver */

static void test_no_driver(void) {
  char pkg[512], msg[RT_ERRLEN + 256];
  snprintf(pkg, sizeof pkg, "%s/nodriver.tar", tmpdir);
  write_package(pkg, NULL, NULL, "nvptx");
  setenv("MLC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  int rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_UNSUPPORTED && strstr(msg, "no NVIDIA driver") && strstr(msg, "MLC_CUDA_DRIVER"), msg);
  unsetenv("MLC_CUDA_DRIVER");
  void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (real) {
    printf("test_cuda: libcuda.so.1 is present: not checking the missing-driver message\n");
    return;
  }
  rc = load_run(pkg, msg, sizeof msg);
  CHECK_MSG(rc == MLC_ERR_UNSUPPORTED && strstr(msg, "no NVIDIA driver: libcuda.so.1 not found"), msg);
  mlc_module *m = NULL;
  CHECK(mlc_module_load_device(pkg, "tpu", 0, &m) == MLC_ERR_USAGE && strstr(mlc_rt_last_error(), "unknown device"));
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/mlc_test_cuda_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "test_cuda: cannot create a temporary directory\n");
    return 1;
  }
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {{"table", test_table}, {"no_driver", test_no_driver}, {"fake_driver", test_fake_driver}};
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    int before = failures;
    tests[i].fn();
    printf("test_cuda: %-12s %s\n", tests[i].name, failures == before ? "ok" : "FAILED");
  }
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (failures == 0 && system(cmd) != 0) fprintf(stderr, "test_cuda: could not remove %s\n", tmpdir);
  if (failures) {
    fprintf(stderr, "test_cuda: %d check(s) failed (files kept in %s)\n", failures, tmpdir);
    return 1;
  }
  printf("test_cuda: all checks passed\n");
  return 0;
}
