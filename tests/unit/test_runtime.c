/* Unit tests of the standalone runtime: thread pool, mod.json/mod.params round trips and malicious input,
 * ustar round trip and garbage, .npz against numpy (generated at test time with /usr/bin/python3 when present),
 * the executor with hand-written C kernels from a function table, and the module loader on a package whose
 * mod.so is built with the system C compiler (skipped with a message when either tool is missing). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "mlc/runtime.h"
#include "runtime/rt.h"

static int failures;
#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                            \
    }                                                                        \
  } while (0)
#define CHECK_MSG(cond, msg)                                                               \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "%s:%d: check failed: %s (message: %s)\n", __FILE__, __LINE__, #cond, msg); \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

static char tmpdir[256];

static void tmp_path(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", tmpdir, name); }

/* ---------------------------------------------------------------- pool */

typedef struct sum_closure {
  const int32_t *data;
  _Atomic int64_t total;
  mlc_kernel_ctx *ctx;
  int fail_at; /* chunk start that returns an error, or -1 */
} sum_closure;

static int32_t sum_body(int64_t b, int64_t e, void *cl) {
  sum_closure *c = cl;
  int64_t s = 0;
  for (int64_t i = b; i < e; i++) s += c->data[i];
  atomic_fetch_add(&c->total, s);
  if (c->fail_at >= 0 && b <= c->fail_at && c->fail_at < e) return 7;
  return 0;
}

static int32_t inner_body(int64_t b, int64_t e, void *cl) {
  atomic_fetch_add((_Atomic int64_t *)cl, e - b);
  return 0;
}

static int32_t nested_body(int64_t b, int64_t e, void *cl) {
  sum_closure *c = cl;
  for (int64_t i = b; i < e; i++) {
    int32_t rc = c->ctx->parallel_launch(c->ctx, inner_body, &c->total, 10);
    if (rc) return rc;
  }
  return 0;
}

/* one piece of 10 iterations stalls until every other iteration is done: only a pool whose threads take over
 * each other's pieces finishes it (with a static split the stalled thread's own share after it stays undone) */
typedef struct stall_closure {
  int64_t extent, stall_at;
  _Atomic int64_t done;
  atomic_int stalled; /* the stalled piece found work still undone when it started */
  atomic_int timed_out;
} stall_closure;

static int32_t stall_body(int64_t b, int64_t e, void *cl) {
  stall_closure *c = cl;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do /* 50 us of work per piece, so the workers are awake and at their own runs */
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 50000);
  if (b == c->stall_at) {
    if (atomic_load(&c->done) < c->extent - 10) atomic_store(&c->stalled, 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&c->done) < c->extent - 10) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec > 5) {
        atomic_store(&c->timed_out, 1);
        break;
      }
    }
  }
  atomic_fetch_add(&c->done, e - b);
  return 0;
}

static void test_pool_steal(void) {
  for (int threads = 2; threads <= 4; threads++) {
    mlc_pool *pool = mlc_pool_create(threads);
    mlc_kernel_ctx ctx;
    mlc_pool_kernel_ctx(pool, &ctx);
    int stalls = 0;
    for (int rep = 0; rep < 200 && stalls < 5 && !failures; rep++) {
      /* 16 pieces of 10 per thread: the last thread's run starts at piece 16 (threads - 1) */
      stall_closure c = {.extent = threads * 160, .stall_at = (threads - 1) * 160};
      CHECK(ctx.parallel_launch(&ctx, stall_body, &c, c.extent) == 0);
      CHECK(atomic_load(&c.done) == c.extent && !atomic_load(&c.timed_out));
      stalls += atomic_load(&c.stalled);
    }
    CHECK(stalls > 0);
    mlc_pool_destroy(pool);
  }
}

static void test_pool(void) {
  enum { N = 1000000 };
  int32_t *data = malloc(N * sizeof *data);
  int64_t expect = 0;
  for (int i = 0; i < N; i++) expect += data[i] = (i % 1000) - 300;
  for (int threads = 1; threads <= 4; threads++) {
    mlc_pool *pool = mlc_pool_create(threads);
    CHECK(pool && mlc_pool_threads(pool) == threads);
    mlc_kernel_ctx ctx;
    mlc_pool_kernel_ctx(pool, &ctx);
    CHECK(ctx.num_threads == threads && ctx.pool == pool);
    for (int rep = 0; rep < 100; rep++) {
      sum_closure c = {data, 0, &ctx, -1};
      CHECK(ctx.parallel_launch(&ctx, sum_body, &c, N) == 0);
      if (atomic_load(&c.total) != expect) {
        CHECK(atomic_load(&c.total) == expect);
        break;
      }
    }
    /* many tiny launches: extents smaller than the thread count */
    for (int rep = 0; rep < 1000; rep++) {
      sum_closure c = {data, 0, &ctx, -1};
      int64_t ext = rep % 5;
      CHECK(ctx.parallel_launch(&ctx, sum_body, &c, ext) == 0);
      int64_t want = 0;
      for (int64_t i = 0; i < ext; i++) want += data[i];
      if (atomic_load(&c.total) != want) {
        CHECK(atomic_load(&c.total) == want);
        break;
      }
    }
    sum_closure c = {data, 0, &ctx, N - 1};
    CHECK(ctx.parallel_launch(&ctx, sum_body, &c, N) == 7);
    sum_closure nested = {data, 0, &ctx, -1};
    CHECK(ctx.parallel_launch(&ctx, nested_body, &nested, 100) == 0);
    CHECK(atomic_load(&nested.total) == 1000);
    mlc_pool_destroy(pool);
  }
  /* a serial context without a pool */
  mlc_kernel_ctx serial;
  mlc_pool_kernel_ctx(NULL, &serial);
  sum_closure c = {data, 0, &serial, -1};
  CHECK(serial.parallel_launch(&serial, sum_body, &c, N) == 0 && atomic_load(&c.total) == expect);
  /* default size from MLC_NUM_THREADS */
  setenv("MLC_NUM_THREADS", "3", 1);
  mlc_pool *pool = mlc_pool_create(0);
  CHECK(mlc_pool_threads(pool) == 3);
  mlc_pool_destroy(pool);
  unsetenv("MLC_NUM_THREADS");
  free(data);
}

/* ---------------------------------------------------------------- plans */

static int *ints(int n, ...) {
  va_list ap;
  va_start(ap, n);
  int *v = calloc((size_t)n + 1, sizeof *v);
  for (int i = 0; i < n; i++) v[i] = va_arg(ap, int);
  va_end(ap);
  return v;
}

/* y = relu(x + w): x input [2,3], w param [2,3], t activation, y activation (storage 1) */
static void make_plan(rt_plan *p, int64_t n) {
  memset(p, 0, sizeof *p);
  p->ntensors = 4;
  p->tensors = calloc(4, sizeof *p->tensors);
  const char *names[] = {"x", "w", "t", "y \"quoted\""};
  rt_tensor_kind kinds[] = {RT_INPUT, RT_PARAM, RT_ACTIVATION, RT_ACTIVATION};
  for (int i = 0; i < 4; i++) {
    rt_tensor *t = &p->tensors[i];
    t->name = strdup(names[i]);
    t->dtype = MLC_F32;
    t->ndim = 2;
    t->shape[0] = 2;
    t->shape[1] = n / 2;
    t->kind = kinds[i];
    t->storage_id = kinds[i] == RT_ACTIVATION ? i - 2 : -1;
  }
  p->nstorage = 2;
  p->storage_size = calloc(2, sizeof(int64_t));
  p->storage_size[0] = p->storage_size[1] = n * 4;
  p->ncalls = 2;
  p->calls = calloc(2, sizeof *p->calls);
  p->calls[0] = (rt_call){strdup("k_add"), 3, ints(3, 0, 1, 2)};
  p->calls[1] = (rt_call){strdup("k_relu"), 2, ints(2, 2, 3)};
  p->ninputs = 1;
  p->inputs = ints(1, 0);
  p->noutputs = 2;
  p->outputs = ints(2, 3, 1);
  p->param_data = calloc(4, sizeof(void *));
  float *w = malloc((size_t)n * 4);
  for (int i = 0; i < n; i++) w[i] = (float)(i % 3) - 1.0f;
  p->param_data[1] = w;
}

static char *plan_json(void) {
  rt_plan p;
  make_plan(&p, 6);
  char *s = rt_plan_to_json(&p);
  rt_plan_free(&p);
  return s;
}

static int parse_err(const char *text, char *err) {
  rt_plan p;
  int rc = rt_plan_from_json(text, strlen(text), &p, err);
  if (rc == MLC_OK) rt_plan_free(&p);
  return rc;
}

/* replaces the first occurrence of from with to in s (malloc'd result) */
static char *replace(const char *s, const char *from, const char *to) {
  const char *at = strstr(s, from);
  if (!at) return strdup(s);
  size_t n = strlen(s) - strlen(from) + strlen(to);
  char *r = malloc(n + 1);
  size_t pre = (size_t)(at - s);
  memcpy(r, s, pre);
  strcpy(r + pre, to);
  strcat(r, at + strlen(from));
  return r;
}

static void expect_bad(const char *json, const char *from, const char *to, const char *msg_part) {
  char *bad = replace(json, from, to);
  char err[RT_ERRLEN] = "";
  CHECK_MSG(strcmp(bad, json) != 0, from);
  int rc = parse_err(bad, err);
  CHECK_MSG(rc == MLC_ERR_INVALID, to);
  CHECK_MSG(strstr(err, msg_part) != NULL, err);
  free(bad);
}

static void test_plan_json(void) {
  char err[RT_ERRLEN];
  char *json = plan_json();
  rt_plan q;
  CHECK_MSG(rt_plan_from_json(json, strlen(json), &q, err) == MLC_OK, err);
  CHECK(q.ntensors == 4 && q.nstorage == 2 && q.ncalls == 2 && q.ninputs == 1 && q.noutputs == 2);
  CHECK(strcmp(q.tensors[3].name, "y \"quoted\"") == 0);
  CHECK(q.tensors[1].kind == RT_PARAM && q.tensors[2].storage_id == 0 && q.tensors[3].shape[1] == 3);
  CHECK(strcmp(q.calls[1].kernel, "k_relu") == 0 && q.calls[1].args[1] == 3);
  char *again = rt_plan_to_json(&q);
  CHECK(strcmp(json, again) == 0);
  free(again);
  rt_plan_free(&q);

  /* every truncation is rejected without crashing */
  size_t len = strlen(json);
  for (size_t cut = 0; cut < len - 1; cut++) {
    rt_plan p;
    if (rt_plan_from_json(json, cut, &p, err) == MLC_OK) {
      CHECK(!"truncated mod.json accepted");
      rt_plan_free(&p);
      break;
    }
  }
  /* random byte mutations never crash; accepted ones are valid plans */
  srand(1);
  for (int it = 0; it < 3000; it++) {
    char *m = strdup(json);
    for (int k = 0; k < 3; k++) m[rand() % len] = "{}[]\",:0123456789-eE \\axn"[rand() % 25];
    rt_plan p;
    if (rt_plan_from_json(m, len, &p, err) == MLC_OK) {
      CHECK(rt_plan_validate(&p, err) == MLC_OK);
      rt_plan_free(&p);
    }
    free(m);
  }
  /* deep nesting */
  char deep[4096];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = '\0';
  CHECK(parse_err(deep, err) == MLC_ERR_INVALID && strstr(err, "deep"));
  char *nested = replace(json, "\"version\":1", "\"version\":1,\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
  CHECK(parse_err(nested, err) == MLC_ERR_INVALID && strstr(err, "deep"));
  free(nested);
  /* out-of-range and inconsistent values */
  expect_bad(json, "\"args\":[0,1,2]", "\"args\":[0,1,9]", "\"args\"[2] is not an integer in [0, 3]");
  expect_bad(json, "\"args\":[0,1,2]", "\"args\":[0,-1,2]", "args");
  expect_bad(json, "\"inputs\":[0]", "\"inputs\":[4]", "inputs");
  expect_bad(json, "\"inputs\":[0]", "\"inputs\":[2]", "not an input");
  expect_bad(json, "\"outputs\":[3,1]", "\"outputs\":[3,100000000000]", "outputs");
  expect_bad(json, "\"storage_id\":1", "\"storage_id\":2", "storage_id");
  expect_bad(json, "\"storage\":[24,24]", "\"storage\":[24,20]", "outside storage");
  expect_bad(json, "\"storage_id\":1,\"offset\":0", "\"storage_id\":1,\"offset\":4", "outside storage");
  expect_bad(json, "\"storage_id\":1,\"offset\":0", "\"storage_id\":1,\"offset\":-4", "offset");
  expect_bad(json, "\"shape\":[2,3]", "\"shape\":[2,3,1,1,1,1,1,1,1]", "rank");
  expect_bad(json, "\"shape\":[2,3]", "\"shape\":[2,-3]", "shape");
  expect_bad(json, "\"shape\":[2,3]", "\"shape\":[4611686018427387904,4611686018427387904]", "overflow");
  expect_bad(json, "\"shape\":[2,3]", "\"shape\":[2,3.5]", "shape");
  expect_bad(json, "\"dtype\":\"float32\"", "\"dtype\":\"complex64\"", "dtype");
  expect_bad(json, "\"kind\":\"input\"", "\"kind\":\"weird\"", "kind");
  expect_bad(json, "\"version\":1", "\"version\":3", "version");
  expect_bad(json, "\"version\":1", "\"version\":2", "missing \"dynamic\"");
  expect_bad(json, "\"outputs\":[3,1]", "\"outputs\":[3,1],\"dynamic\":[]", "needs version 2");
  expect_bad(json, "\"kernel\":\"k_add\"", "\"kernel\":\"../x\"", "kernel name");
  expect_bad(json, "\"kernel\":\"k_add\"", "\"kernel\":7", "kernel");
  expect_bad(json, "\"name\":\"x\"", "\"name\":\"x\\u0000\"", "NUL");
  expect_bad(json, "\"name\":\"x\"", "\"name\":\"\\ud800\"", "surrogate");
  expect_bad(json, "{\"version\"", "[{\"version\"", "");
  CHECK(parse_err("", err) == MLC_ERR_INVALID);
  CHECK(parse_err("{} x", err) == MLC_ERR_INVALID && strstr(err, "trailing"));
  free(json);
}

/* does the mapping of /proc/self/smaps that holds p carry the given VmFlags flag ("hg": advised huge pages)? */
static bool smaps_flag(const void *p, const char *flag) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return false;
  char line[512];
  bool in = false, found = false;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (in && strncmp(line, "VmFlags:", 8) == 0) {
      char want[8];
      snprintf(want, sizeof want, " %s", flag);
      for (char *c = strstr(line, want); c && !found; c = strstr(c + 1, want))
        found = c[strlen(want)] == ' ' || c[strlen(want)] == '\n';
    }
  }
  fclose(f);
  return found;
}

/* rt_alloc_buffer: small buffers 64-byte aligned; from 2 MiB on, huge-page aligned and advised as huge pages
 * where the kernel leaves transparent huge pages to madvise */
static void test_alloc(void) {
  char *small = rt_alloc_buffer(100);
  CHECK(small && (uintptr_t)small % 64 == 0);
  if (small) memset(small, 1, 100);
  free(small);
  free(rt_alloc_buffer(0));
  size_t n = ((size_t)3 << 20) + 5;
  char *big = rt_alloc_buffer(n);
  CHECK(big && (uintptr_t)big % ((size_t)2 << 20) == 0);
  if (!big) return;
  memset(big, 2, n);
  CHECK(big[n - 1] == 2);
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char mode[128] = "";
  if (f) {
    if (!fgets(mode, sizeof mode, f)) mode[0] = 0;
    fclose(f);
  }
  if (strstr(mode, "[madvise]"))
    CHECK(smaps_flag(big, "hg"));
  else
    printf("test_runtime: transparent huge pages are '%.*s', not left to madvise: flag not checked\n",
           (int)strcspn(mode, "\n"), mode);
  free(big);
}

static void test_params(void) {
  char err[RT_ERRLEN];
  rt_plan p;
  make_plan(&p, 6);
  void *data;
  size_t size = 0;
  CHECK(rt_params_serialize(&p, &data, &size) == MLC_OK);
  CHECK(size == 64 + 24 && memcmp(data, "MLCPARAM", 8) == 0);
  char *json = rt_plan_to_json(&p);
  rt_plan q;
  CHECK(rt_plan_from_json(json, strlen(json), &q, err) == MLC_OK);
  CHECK_MSG(rt_params_load(data, size, &q, false, err) == MLC_OK, err);
  CHECK(q.param_data[1] && ((uintptr_t)q.param_data[1] & 63) == 0);
  CHECK(memcmp(q.param_data[1], p.param_data[1], 24) == 0);
  rt_plan_free(&q);
  /* truncations, wrong id, wrong size */
  for (size_t cut = 0; cut < size; cut++) {
    CHECK(rt_plan_from_json(json, strlen(json), &q, err) == MLC_OK);
    if (rt_params_load(data, cut, &q, false, err) == MLC_OK) CHECK(!"truncated params accepted");
    rt_plan_free(&q);
  }
  unsigned char *b = data;
  b[12] = 2; /* tensor 2 is an activation */
  CHECK(rt_plan_from_json(json, strlen(json), &q, err) == MLC_OK);
  CHECK(rt_params_load(data, size, &q, false, err) == MLC_ERR_INVALID && strstr(err, "not a parameter"));
  rt_plan_free(&q);
  b[12] = 1;
  b[16] = 20; /* nbytes */
  CHECK(rt_plan_from_json(json, strlen(json), &q, err) == MLC_OK);
  CHECK(rt_params_load(data, size, &q, false, err) == MLC_ERR_INVALID && strstr(err, "expected 24"));
  rt_plan_free(&q);
  b[8] = 0; /* count 0: the parameter is missing */
  CHECK(rt_plan_from_json(json, strlen(json), &q, err) == MLC_OK);
  CHECK(rt_params_load(data, 12, &q, false, err) == MLC_ERR_INVALID && strstr(err, "no data for parameter 'w'"));
  rt_plan_free(&q);
  /* meta.json */
  char *meta = rt_meta_to_json(&p, "llvm -mcpu=znver4", "x86_64", 0, NULL);
  CHECK(strstr(meta, "\"arch\":\"x86_64\"") && strstr(meta, "\"target\":\"llvm -mcpu=znver4\""));
  CHECK(strstr(meta, "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[2,3]}]"));
  int nf = -1;
  rt_frozen *fz = NULL;
  CHECK(!strstr(meta, "frozen_inputs") && rt_meta_frozen(meta, strlen(meta), &nf, &fz, err) == MLC_OK && nf == 0);
  rt_frozen_free(nf, fz);
  free(meta);
  /* frozen inputs: written with their hash, read back; a malformed list is refused */
  const int64_t axes[2] = {1, -1};
  rt_frozen f = {"axes", MLC_I64, 1, {2}, rt_fnv1a64(axes, sizeof axes)};
  CHECK(f.hash != rt_fnv1a64(axes, sizeof axes[0]));
  meta = rt_meta_to_json(&p, "llvm", "x86_64", 1, &f);
  CHECK(rt_meta_frozen(meta, strlen(meta), &nf, &fz, err) == MLC_OK && nf == 1);
  if (nf == 1)
    CHECK(!strcmp(fz[0].name, "axes") && fz[0].dtype == MLC_I64 && fz[0].ndim == 1 && fz[0].shape[0] == 2 &&
          fz[0].hash == f.hash);
  rt_frozen_free(nf, fz);
  free(meta);
  static const char *bad_meta[] = {
      "{\"frozen_inputs\":3}",
      "{\"frozen_inputs\":[{\"name\":\"a\",\"dtype\":\"int64\",\"shape\":[2],\"fnv1a64\":\"12\"}]}",
      "{\"frozen_inputs\":[{\"name\":\"a\",\"dtype\":\"int65\",\"shape\":[2],\"fnv1a64\":\"0123456789abcdef\"}]}",
      "{\"frozen_inputs\":[{\"name\":\"a\",\"dtype\":\"int64\",\"shape\":[-2],\"fnv1a64\":\"0123456789abcdef\"}]}",
      "{\"frozen_inputs\":[{\"name\":\"a\",\"dtype\":\"int64\",\"shape\":[1,1,1,1,1,1,1,1,1],"
      "\"fnv1a64\":\"0123456789abcdef\"}]}",
      "{\"frozen_inputs\":[{\"dtype\":\"int64\",\"shape\":[2],\"fnv1a64\":\"0123456789abcdeg\"}]}",
  };
  for (size_t i = 0; i < sizeof bad_meta / sizeof *bad_meta; i++) {
    CHECK(rt_meta_frozen(bad_meta[i], strlen(bad_meta[i]), &nf, &fz, err) == MLC_ERR_INVALID &&
          strstr(err, "frozen_inputs") && !fz);
  }
  free(json);
  free(data);
  rt_plan_free(&p);
}

/* ---------------------------------------------------------------- tar */

static void fix_checksum(unsigned char *h) {
  unsigned s = 0;
  for (int i = 0; i < 512; i++) s += (i >= 148 && i < 156) ? ' ' : h[i];
  snprintf((char *)h + 148, 8, "%06o", s);
  h[155] = ' ';
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static void spit(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  fwrite(b, 1, n, f);
  fclose(f);
}

static void test_tar(void) {
  char err[RT_ERRLEN], path[512], bad[512];
  tmp_path(path, sizeof path, "t.tar");
  tmp_path(bad, sizeof bad, "bad.tar");
  char big[2000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
  rt_file files[3] = {{"a.txt", "hello", 5}, {"empty", "", 0}, {"big.bin", big, sizeof big}};
  CHECK_MSG(rt_tar_write(path, 3, files, err) == MLC_OK, err);
  void *blob;
  int n;
  rt_file *got;
  CHECK_MSG(rt_tar_read(path, &blob, &n, &got, err) == MLC_OK, err);
  CHECK(n == 3);
  for (int i = 0; i < n && i < 3; i++)
    CHECK(strcmp(got[i].name, files[i].name) == 0 && got[i].size == files[i].size &&
          memcmp(got[i].data, files[i].data, files[i].size) == 0);
  free(got);
  rt_tar_free(blob);
  rt_file evil = {"../x", "", 0};
  CHECK(rt_tar_write(path, 1, &evil, err) == MLC_ERR_INVALID);
  if (system("command -v tar >/dev/null 2>&1") == 0) { /* the system tar agrees with our format */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "tar -tf '%s' | tr '\\n' ' ' | grep -q '^a.txt empty big.bin $'", path);
    CHECK(system(cmd) == 0);
  }
  size_t size = 0;
  unsigned char *raw = slurp(path, &size);
  /* garbage and truncation */
  spit(bad, "this is not a tar file at all", 29);
  CHECK(rt_tar_read(bad, &blob, &n, &got, err) == MLC_ERR_INVALID);
  unsigned char *junk = malloc(4096);
  for (int i = 0; i < 4096; i++) junk[i] = (unsigned char)(i * 131 + 7);
  spit(bad, junk, 4096);
  CHECK(rt_tar_read(bad, &blob, &n, &got, err) == MLC_ERR_INVALID && strstr(err, "checksum"));
  free(junk);
  spit(bad, raw, 1024 + 100); /* big.bin... cut inside the second member's data */
  spit(bad, raw, 512 + 512 + 512 + 512 + 1000);
  CHECK(rt_tar_read(bad, &blob, &n, &got, err) == MLC_ERR_INVALID && strstr(err, "truncated"));
  /* unsafe names, links and bad checksums */
  unsigned char *m = malloc(size);
  const char *names[] = {"a/b", "..", "x..y"};
  for (int k = 0; k < 3; k++) {
    memcpy(m, raw, size);
    memset(m, 0, 100);
    memcpy(m, names[k], strlen(names[k]));
    fix_checksum(m);
    spit(bad, m, size);
    CHECK(rt_tar_read(bad, &blob, &n, &got, err) == MLC_ERR_INVALID && strstr(err, "unsafe"));
  }
  memcpy(m, raw, size);
  m[156] = '2'; /* symlink */
  fix_checksum(m);
  spit(bad, m, size);
  CHECK(rt_tar_read(bad, &blob, &n, &got, err) == MLC_ERR_INVALID && strstr(err, "regular file"));
  memcpy(m, raw, size);
  m[0] = 'b'; /* checksum now wrong */
  spit(bad, m, size);
  CHECK(rt_tar_read(bad, &blob, &n, &got, err) == MLC_ERR_INVALID && strstr(err, "checksum"));
  memcpy(m, raw, size);
  memcpy(m + 124, "77777777777", 11); /* size beyond the file */
  fix_checksum(m);
  spit(bad, m, size);
  CHECK(rt_tar_read(bad, &blob, &n, &got, err) == MLC_ERR_INVALID && strstr(err, "truncated"));
  free(m);
  free(raw);
}

/* ---------------------------------------------------------------- npz */

static const char *npz_script =
    "import numpy as np, sys\n"
    "d = sys.argv[1]\n"
    "rng = np.random.default_rng(5)\n"
    "arrs = {\n"
    " 'f32': rng.standard_normal((3, 4, 5)).astype('<f4'),\n"
    " 'f64': rng.standard_normal((7,)).astype('<f8'),\n"
    " 'i64': np.arange(-50, 50, dtype='<i8').reshape(10, 10),\n"
    " 'i32': (np.arange(100000, dtype='<i4') % 17),\n" /* long and repetitive: dynamic Huffman blocks */
    " 'u8': rng.integers(0, 256, (1000,), dtype=np.uint8),\n"
    " 'b': np.array([True, False, True]),\n"
    " 'f16': np.linspace(-2, 2, 9).astype('<f2'),\n"
    " 'i16': np.array([-3, 4], dtype='<i2'), 'u16': np.array([9], dtype='<u2'),\n"
    " 'u32': np.array([1, 2], dtype='<u4'), 'u64': np.array([2**40], dtype='<u8'),\n"
    " 'i8': np.array([-128, 127], dtype='|i1'),\n"
    " 'scalar': np.array(3.5, dtype='<f4'), 'empty': np.zeros((0, 3), dtype='<f4'),\n"
    " 'rand': rng.standard_normal(30000).astype('<f4'),\n" /* barely compressible */
    "}\n"
    "np.savez(d + '/stored.npz', **arrs)\n"
    "np.savez_compressed(d + '/deflated.npz', **arrs)\n"
    "for k, v in arrs.items(): open(d + '/' + k + '.bin', 'wb').write(v.tobytes())\n"
    "np.savez(d + '/fortran.npz', a=np.asfortranarray(np.ones((2, 3), dtype='<f4')))\n"
    "np.savez(d + '/big.npz', a=np.ones((2, 3), dtype='>f4'))\n"
    "np.savez(d + '/tiny.npz', a=np.ones((2, 3), dtype='<f4'))\n"
    "np.savez_compressed(d + '/small.npz', a=np.arange(3000, dtype='<i4') % 13, b=rng.standard_normal(100))\n"
    "import zipfile\n"
    "with zipfile.ZipFile(d + '/fixed.npz', 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as z:\n"
    "  import io; b = io.BytesIO(); np.save(b, np.arange(10, dtype='<f4')); z.writestr('a.npy', b.getvalue())\n";

static const char *check_script =
    "import numpy as np, sys\n"
    "d = sys.argv[1]\n"
    "z = np.load(d + '/ours.npz')\n"
    "ref = np.load(d + '/stored.npz')\n"
    "assert sorted(z.files) == sorted(ref.files), (z.files, ref.files)\n"
    "for k in ref.files:\n"
    "  assert z[k].dtype == ref[k].dtype and z[k].shape == ref[k].shape, k\n"
    "  assert np.array_equal(z[k], ref[k]), k\n";

static void test_npz(void) {
  char err[RT_ERRLEN], path[512], cmd[2048];
  if (access("/usr/bin/python3", X_OK) != 0 || system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
    printf("test_runtime: skipping the numpy .npz checks (no /usr/bin/python3 with numpy)\n");
    return;
  }
  tmp_path(path, sizeof path, "gen.py");
  spit(path, npz_script, strlen(npz_script));
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s'", path, tmpdir);
  if (system(cmd) != 0) {
    CHECK(!"the numpy generator script failed");
    return;
  }
  const char *files[] = {"stored.npz", "deflated.npz"};
  for (int f = 0; f < 2; f++) {
    int n;
    rt_array *arrays;
    tmp_path(path, sizeof path, files[f]);
    if (rt_npz_read(path, &n, &arrays, err) != MLC_OK) {
      CHECK_MSG(!"reading a numpy .npz failed", err);
      return;
    }
    CHECK(n == 15);
    for (int i = 0; i < n; i++) {
      char bin[512];
      snprintf(bin, sizeof bin, "%s/%s.bin", tmpdir, arrays[i].name);
      size_t size = 0;
      unsigned char *want = slurp(bin, &size);
      CHECK_MSG(want && size == arrays[i].nbytes && memcmp(want, arrays[i].data, size) == 0, arrays[i].name);
      free(want);
      if (strcmp(arrays[i].name, "f32") == 0)
        CHECK(arrays[i].dtype == MLC_F32 && arrays[i].ndim == 3 && arrays[i].shape[2] == 5);
      if (strcmp(arrays[i].name, "scalar") == 0) CHECK(arrays[i].ndim == 0 && *(float *)arrays[i].data == 3.5f);
      if (strcmp(arrays[i].name, "empty") == 0) CHECK(arrays[i].ndim == 2 && arrays[i].shape[0] == 0);
      if (strcmp(arrays[i].name, "b") == 0) CHECK(arrays[i].dtype == MLC_BOOL);
      if (strcmp(arrays[i].name, "f16") == 0) CHECK(arrays[i].dtype == MLC_F16);
      if (strcmp(arrays[i].name, "i8") == 0) CHECK(arrays[i].dtype == MLC_I8);
    }
    if (f == 0) { /* write them back; numpy must read identical arrays */
      char ours[512];
      tmp_path(ours, sizeof ours, "ours.npz");
      CHECK_MSG(rt_npz_write(ours, n, arrays, err) == MLC_OK, err);
      tmp_path(path, sizeof path, "check.py");
      spit(path, check_script, strlen(check_script));
      snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s'", path, tmpdir);
      CHECK(system(cmd) == 0);
      int n2;
      rt_array *again;
      CHECK_MSG(rt_npz_read(ours, &n2, &again, err) == MLC_OK, err);
      CHECK(n2 == n);
      for (int i = 0; i < n2 && i < n; i++)
        CHECK(strcmp(again[i].name, arrays[i].name) == 0 && again[i].nbytes == arrays[i].nbytes &&
              memcmp(again[i].data, arrays[i].data, arrays[i].nbytes) == 0);
      rt_arrays_free(n2, again);
    }
    rt_arrays_free(n, arrays);
  }
  int n;
  rt_array *arrays;
  tmp_path(path, sizeof path, "fixed.npz");
  CHECK_MSG(rt_npz_read(path, &n, &arrays, err) == MLC_OK, err);
  if (n == 1) CHECK(((float *)arrays[0].data)[9] == 9.0f);
  rt_arrays_free(n, arrays);
  tmp_path(path, sizeof path, "fortran.npz");
  CHECK(rt_npz_read(path, &n, &arrays, err) == MLC_ERR_INVALID && strstr(err, "fortran"));
  tmp_path(path, sizeof path, "big.npz");
  CHECK(rt_npz_read(path, &n, &arrays, err) == MLC_ERR_INVALID && strstr(err, "big-endian"));
  /* corruption: truncations and byte flips of a compressed file fail cleanly */
  tmp_path(path, sizeof path, "small.npz");
  CHECK_MSG(rt_npz_read(path, &n, &arrays, err) == MLC_OK && n == 2, err);
  if (n == 2) CHECK(((int32_t *)arrays[0].data)[2999] == 2999 % 13 && arrays[1].dtype == MLC_F64);
  rt_arrays_free(n, arrays);
  size_t size = 0;
  unsigned char *raw = slurp(path, &size), *m = malloc(size);
  char bad[512];
  tmp_path(bad, sizeof bad, "corrupt.npz");
  for (size_t cut = 0; cut < size; cut += size / 300 + 1) {
    spit(bad, raw, cut);
    if (rt_npz_read(bad, &n, &arrays, err) == MLC_OK) {
      CHECK(!"truncated npz accepted");
      rt_arrays_free(n, arrays);
    }
  }
  srand(2);
  for (int it = 0; it < 300; it++) {
    memcpy(m, raw, size);
    for (int k = 0; k < 4; k++) m[rand() % size] ^= (unsigned char)(1 + rand() % 255);
    spit(bad, m, size);
    if (rt_npz_read(bad, &n, &arrays, err) == MLC_OK) rt_arrays_free(n, arrays); /* e.g. a flip in a comment */
  }
  free(m);
  free(raw);
  /* a tiny stored file with a flipped data byte: CRC mismatch */
  tmp_path(path, sizeof path, "tiny.npz");
  raw = slurp(path, &size);
  for (size_t i = 0; i + 6 < size; i++)
    if (memcmp(raw + i, "\x93NUMPY", 6) == 0) {
      raw[i + 140] ^= 1;
      break;
    }
  spit(bad, raw, size);
  CHECK(rt_npz_read(bad, &n, &arrays, err) == MLC_ERR_INVALID && strstr(err, "CRC"));
  free(raw);
}

/* ---------------------------------------------------------------- executor */

typedef struct add_closure {
  float *a, *b, *c;
} add_closure;

static int32_t add_body(int64_t b, int64_t e, void *cl) {
  add_closure *c = cl;
  for (int64_t i = b; i < e; i++) c->c[i] = c->a[i] + c->b[i];
  return 0;
}

static int64_t kernel_n = 6;
static int32_t k_add(void **buffers, const int64_t *dims, void *ctxp) {
  mlc_kernel_ctx *ctx = ctxp;
  add_closure c = {buffers[0], buffers[1], buffers[2]};
  return ctx->parallel_launch(ctx, add_body, &c, kernel_n);
}
static int32_t k_relu(void **buffers, const int64_t *dims, void *ctx) {
  float *x = buffers[0], *y = buffers[1];
  for (int64_t i = 0; i < kernel_n; i++) y[i] = x[i] > 0 ? x[i] : 0;
  return 0;
}
static int32_t k_fail(void **buffers, const int64_t *dims, void *ctx) { return 3; }

static const struct {
  const char *name;
  mlc_kernel_fn fn;
} kernel_table[] = {{"k_add", k_add}, {"k_relu", k_relu}};

static void *table_lookup(void *handle, const char *sym) {
  for (size_t i = 0; i < sizeof kernel_table / sizeof *kernel_table; i++)
    if (strcmp(kernel_table[i].name, sym) == 0) {
      void *p;
      memcpy(&p, &kernel_table[i].fn, sizeof p);
      return p;
    }
  if (handle && strcmp(sym, "k_relu") == 0) { /* handle != NULL: swap in the failing kernel */
    void *p;
    mlc_kernel_fn f = k_fail;
    memcpy(&p, &f, sizeof p);
    return p;
  }
  return NULL;
}

static void *fail_lookup(void *handle, const char *sym) {
  if (strcmp(sym, "k_relu") == 0) return table_lookup(handle, "nonexistent");
  return table_lookup(NULL, sym);
}

static void test_executor(void) {
  char err[RT_ERRLEN];
  for (int threads = 1; threads <= 3; threads += 2) {
    kernel_n = 1000;
    rt_plan p;
    make_plan(&p, kernel_n);
    mlc_pool *pool = mlc_pool_create(threads);
    rt_executor *e;
    CHECK_MSG(rt_executor_create(&p, table_lookup, NULL, pool, &e, err) == MLC_OK, err);
    CHECK(p.tensors == NULL); /* moved */
    if (!e) return;
    float x[1000];
    for (int i = 0; i < 1000; i++) x[i] = (float)(i % 5) - 2.0f;
    CHECK(rt_executor_set_input(e, 0, x, sizeof x - 4, err) == MLC_ERR_INVALID && strstr(err, "input 'x'"));
    CHECK(rt_executor_set_input(e, 1, x, sizeof x, err) != MLC_OK);
    CHECK(rt_executor_set_input(e, 0, x, sizeof x, err) == MLC_OK);
    rt_executor_set_profile(e, true);
    CHECK_MSG(rt_executor_run(e, err) == MLC_OK, err);
    const float *y = rt_executor_output(e, 0), *w = rt_executor_output(e, 1);
    CHECK(((uintptr_t)y & 63) == 0);
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
      float v = x[i] + ((float)(i % 3) - 1.0f);
      bad += y[i] != (v > 0 ? v : 0) || w[i] != (float)(i % 3) - 1.0f;
    }
    CHECK(bad == 0);
    CHECK(rt_executor_profile(e) != NULL && rt_executor_profile(e)[0] >= 0);
    CHECK(rt_executor_output(e, 2) == NULL);
    CHECK(rt_executor_plan(e)->ncalls == 2);
    rt_executor_free(e);
    mlc_pool_destroy(pool);
  }
  kernel_n = 6;
  rt_plan p;
  rt_executor *e;
  make_plan(&p, 6);
  CHECK(rt_executor_create(&p, fail_lookup, NULL, NULL, &e, err) == MLC_ERR_INVALID && strstr(err, "'k_relu'"));
  make_plan(&p, 6);
  CHECK(rt_executor_create(&p, table_lookup, (void *)1, NULL, &e, err) == MLC_OK);
  if (e) {
    /* table_lookup with a handle still finds the real k_relu; force the failing one */
    rt_executor_free(e);
  }
  make_plan(&p, 6);
  free(p.calls[1].kernel);
  p.calls[1].kernel = strdup("k_fail_here");
  CHECK(rt_executor_create(&p, table_lookup, (void *)1, NULL, &e, err) == MLC_ERR_INVALID &&
        strstr(err, "k_fail_here"));
  /* a kernel that returns an error: name it */
  make_plan(&p, 6);
  free(p.calls[1].kernel);
  p.calls[1].kernel = strdup("k_bad");
  CHECK(rt_executor_create(&p, fail_lookup, NULL, NULL, &e, err) == MLC_ERR_INVALID);
  make_plan(&p, 6);
  p.param_data[1] = (free(p.param_data[1]), NULL);
  CHECK(rt_executor_create(&p, table_lookup, NULL, NULL, &e, err) == MLC_ERR_INVALID && strstr(err, "'w'"));
  make_plan(&p, 6);
  p.calls[0].args[2] = 77;
  CHECK(rt_executor_create(&p, table_lookup, NULL, NULL, &e, err) == MLC_ERR_INVALID && strstr(err, "out of range"));
}

static void *failing_kernel_lookup(void *handle, const char *sym) {
  if (strcmp(sym, "k_relu") == 0) {
    void *p;
    mlc_kernel_fn f = k_fail;
    memcpy(&p, &f, sizeof p);
    return p;
  }
  return table_lookup(NULL, sym);
}

/* ---------------------------------------------------------------- data-dependent outputs */

/* n input int64 [1]; y activation int64 [2, 4] (storage 0); extent activation int64 [1] (storage 1). k_dyn
 * writes y[r][c] = 10 r + c over the whole bound and extent = n: y's axis 1 is data-dependent. */
static void make_dyn_plan(rt_plan *p) {
  memset(p, 0, sizeof *p);
  p->ntensors = 3;
  p->tensors = calloc(3, sizeof *p->tensors);
  p->tensors[0] = (rt_tensor){strdup("n"), MLC_I64, 1, {1}, RT_INPUT, -1, 0};
  p->tensors[1] = (rt_tensor){strdup("y"), MLC_I64, 2, {2, 4}, RT_ACTIVATION, 0, 0};
  p->tensors[2] = (rt_tensor){strdup("y.extent"), MLC_I64, 1, {1}, RT_ACTIVATION, 1, 0};
  p->nstorage = 2;
  p->storage_size = calloc(2, sizeof(int64_t));
  p->storage_size[0] = 64;
  p->storage_size[1] = 64;
  p->ncalls = 1;
  p->calls = calloc(1, sizeof *p->calls);
  p->calls[0] = (rt_call){strdup("k_dyn"), 3, ints(3, 0, 1, 2)};
  p->ninputs = 1;
  p->inputs = ints(1, 0);
  p->noutputs = 1;
  p->outputs = ints(1, 1);
  p->param_data = calloc(3, sizeof(void *));
  p->ndynamic = 1;
  p->dynamic = calloc(1, sizeof *p->dynamic);
  p->dynamic[0] = (rt_dyn_output){.output = 0, .axis = 1, .extent = 2};
}

static int32_t k_dyn(void **buffers, const int64_t *dims, void *ctx) {
  const int64_t *n = buffers[0];
  int64_t *y = buffers[1], *extent = buffers[2];
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 4; c++) y[r * 4 + c] = 10 * r + c;
  *extent = n[0];
  return 0;
}

static void *dyn_lookup(void *handle, const char *sym) {
  void *p;
  mlc_kernel_fn f = k_dyn;
  memcpy(&p, &f, sizeof p);
  return strcmp(sym, "k_dyn") == 0 ? p : NULL;
}

static void test_dynamic(void) {
  char err[RT_ERRLEN];
  rt_plan p;
  make_dyn_plan(&p);
  char *json = rt_plan_to_json(&p);
  rt_plan_free(&p);
  CHECK(strstr(json, "\"version\":2") && strstr(json, "\"dynamic\":[{\"output\":0,\"axis\":1,\"extent\":2}]"));
  rt_plan q;
  CHECK_MSG(rt_plan_from_json(json, strlen(json), &q, err) == MLC_OK, err);
  CHECK(q.ndynamic == 1 && q.dynamic[0].axis == 1 && q.dynamic[0].extent == 2 && rt_plan_dynamic_axis(&q, 0) == 1);
  char *again = rt_plan_to_json(&q);
  CHECK(strcmp(json, again) == 0);
  free(again);
  rt_plan_free(&q);
  /* malformed records are refused by the reader and rt_plan_validate */
  const char *rec = "{\"output\":0,\"axis\":1,\"extent\":2}";
  expect_bad(json, rec, "{\"output\":1,\"axis\":1,\"extent\":2}", "\"output\" = 1 out of range");
  expect_bad(json, rec, "{\"output\":0,\"axis\":2,\"extent\":2}", "axis 2 out of range");
  expect_bad(json, rec, "{\"output\":0,\"axis\":-1,\"extent\":2}", "\"axis\"");
  expect_bad(json, rec, "{\"output\":0,\"axis\":1,\"extent\":3}", "\"extent\" = 3 out of range");
  expect_bad(json, rec, "{\"output\":0,\"axis\":1,\"extent\":0}", "not a one-element int64 activation");
  expect_bad(json, rec, "{\"output\":0,\"axis\":1,\"extent\":1}", "not a one-element int64 activation");
  expect_bad(json, rec, "{\"output\":0,\"axis\":1}", "missing \"extent\"");
  expect_bad(json, rec, "7", "is not an object");
  expect_bad(json, rec, "{\"output\":0,\"axis\":1,\"extent\":2},{\"output\":0,\"axis\":0,\"extent\":2}",
             "listed twice");
  expect_bad(json, "\"dynamic\":[{\"output\":0,\"axis\":1,\"extent\":2}]", "\"dynamic\":{\"x\":1}",
             "\"dynamic\" is not an array");
  free(json);
  /* the executor trims: shape [2, n], the valid part compacted to the front */
  for (int64_t n = 0; n <= 4; n++) {
    make_dyn_plan(&p);
    rt_executor *e;
    CHECK_MSG(rt_executor_create(&p, dyn_lookup, NULL, NULL, &e, err) == MLC_OK, err);
    if (!e) return;
    int64_t shape[MLC_MAX_DIMS];
    CHECK(rt_executor_output_shape(e, 0, shape) == 2 && shape[0] == 2 && shape[1] == 4); /* before a run */
    CHECK(rt_executor_set_input(e, 0, &n, sizeof n, err) == MLC_OK);
    CHECK_MSG(rt_executor_run(e, err) == MLC_OK, err);
    CHECK(rt_executor_output_shape(e, 0, shape) == 2 && shape[0] == 2 && shape[1] == n);
    CHECK(rt_executor_output_shape(e, 1, shape) == -1);
    const int64_t *y = rt_executor_output(e, 0);
    int bad = 0;
    for (int r = 0; r < 2; r++)
      for (int c = 0; c < n; c++) bad += y[r * n + c] != 10 * r + c;
    CHECK(bad == 0);
    rt_executor_free(e);
  }
  /* an extent outside [0, bound] is a kernel bug, reported */
  for (int k = 0; k < 2; k++) {
    int64_t n = k ? 5 : -1;
    make_dyn_plan(&p);
    rt_executor *e;
    CHECK(rt_executor_create(&p, dyn_lookup, NULL, NULL, &e, err) == MLC_OK);
    if (!e) return;
    CHECK(rt_executor_set_input(e, 0, &n, sizeof n, err) == MLC_OK);
    CHECK(rt_executor_run(e, err) == MLC_ERR_INTERNAL && strstr(err, "output 'y'") && strstr(err, "outside [0, 4]"));
    rt_executor_free(e);
  }
  /* a record on an input is refused by validation */
  make_dyn_plan(&p);
  p.outputs[0] = 0;
  rt_executor *e;
  CHECK(rt_executor_create(&p, dyn_lookup, NULL, NULL, &e, err) == MLC_ERR_INVALID && strstr(err, "not computed by a kernel"));
}

static void test_executor_kernel_error(void) {
  char err[RT_ERRLEN];
  rt_plan p;
  rt_executor *e;
  kernel_n = 6;
  make_plan(&p, 6);
  CHECK(rt_executor_create(&p, failing_kernel_lookup, NULL, NULL, &e, err) == MLC_OK);
  if (!e) return;
  CHECK(rt_executor_run(e, err) != MLC_OK && strstr(err, "kernel 'k_relu'") && strstr(err, "code 3"));
  rt_executor_free(e);
}

/* ---------------------------------------------------------------- module */

static const char *kernel_source =
    "#include <stdint.h>\n"
    "typedef int32_t (*body_fn)(int64_t, int64_t, void *);\n"
    "typedef struct ctx { int32_t (*launch)(struct ctx *, body_fn, void *, int64_t); void *pool; int32_t n, r; } ctx;\n"
    "typedef struct cl { float *a, *b, *c; } cl;\n"
    "static int32_t body(int64_t b, int64_t e, void *p) { cl *c = p; for (int64_t i = b; i < e; i++)\n"
    "  c->c[i] = c->a[i] + c->b[i]; return 0; }\n"
    "int32_t k_add(void **buf, const int64_t *dims, void *vctx) { ctx *x = vctx; cl c = {buf[0], buf[1], buf[2]};\n"
    "  return x->launch(x, body, &c, 6); }\n"
    "int32_t k_relu(void **buf, const int64_t *dims, void *vctx) { float *a = buf[0], *b = buf[1];\n"
    "  for (int i = 0; i < 6; i++) b[i] = a[i] > 0 ? a[i] : 0; return 0; }\n";

static bool make_package(const char *path, const char *so_path, const char *arch, bool with_params) {
  char err[RT_ERRLEN];
  rt_plan p;
  make_plan(&p, 6);
  char *json = rt_plan_to_json(&p), *meta = rt_meta_to_json(&p, "llvm", arch, 0, NULL);
  void *params;
  size_t psize;
  rt_params_serialize(&p, &params, &psize);
  size_t so_size = 0;
  unsigned char *so = slurp(so_path, &so_size);
  rt_file files[4] = {{"mod.so", so, so_size},
                      {"mod.json", json, strlen(json)},
                      {"meta.json", meta, strlen(meta)},
                      {"mod.params", params, psize}};
  int rc = rt_tar_write(path, with_params ? 4 : 3, files, err);
  free(so);
  free(json);
  free(meta);
  free(params);
  rt_plan_free(&p);
  return rc == MLC_OK;
}

static void test_module(void) {
  char src[512], so[512], pkg[512], cmd[2048];
  tmp_path(src, sizeof src, "k.c");
  tmp_path(so, sizeof so, "k.so");
  tmp_path(pkg, sizeof pkg, "model.tar");
  spit(src, kernel_source, strlen(kernel_source));
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o '%s' '%s' 2>/dev/null", so, src);
  mlc_module *m = NULL;
  /* not a package, missing file */
  CHECK(mlc_module_load(src, 1, &m) == MLC_ERR_INVALID && strstr(mlc_rt_last_error(), "not an mlc package (missing mod.json)"));
  CHECK(mlc_module_load("/nonexistent/model.tar", 1, &m) == MLC_ERR_INVALID && strstr(mlc_rt_last_error(), "nonexistent"));
  if (system(cmd) != 0) {
    printf("test_runtime: skipping the module-loading checks (no C compiler 'cc' to build a test mod.so)\n");
    return;
  }
  CHECK(make_package(pkg, so, rt_host_arch(), false));
  CHECK(mlc_module_load(pkg, 1, &m) == MLC_ERR_INVALID && strstr(mlc_rt_last_error(), "missing mod.params"));
  CHECK(make_package(pkg, so, strcmp(rt_host_arch(), "aarch64") ? "aarch64" : "x86_64", true));
  CHECK(mlc_module_load(pkg, 1, &m) == MLC_ERR_UNSUPPORTED && strstr(mlc_rt_last_error(), "compiled for"));
  CHECK(make_package(pkg, so, rt_host_arch(), true));
  for (int round = 0; round < 2; round++) {
    mlc_module *m2 = NULL;
    CHECK_MSG(mlc_module_load(pkg, 2, &m) == MLC_OK, mlc_rt_last_error());
    CHECK_MSG(mlc_module_load(pkg, 1, &m2) == MLC_OK, mlc_rt_last_error()); /* two loads side by side */
    if (!m || !m2) return;
    CHECK(mlc_module_num_inputs(m) == 1 && mlc_module_num_outputs(m) == 2);
    CHECK(strcmp(mlc_module_input(m, 0)->name, "x") == 0 && mlc_module_input(m, 0)->shape[1] == 3);
    CHECK(mlc_module_input(m, 1) == NULL && mlc_module_output(m, 2) == NULL);
    float x[6] = {-3, -1, 0, 1, 2, 3};
    CHECK(mlc_module_set_input(m, 0, x, 8) == MLC_ERR_INVALID && strstr(mlc_rt_last_error(), "'x'"));
    CHECK(mlc_module_set_input(m, 0, x, sizeof x) == MLC_OK);
    CHECK(mlc_module_run(m) == MLC_OK);
    const float *y = mlc_module_output_data(m, 0);
    float want[6] = {0, 0, 1, 0, 2, 4}; /* relu(x + (i%3 - 1)) */
    CHECK(y && memcmp(y, want, sizeof want) == 0);
    CHECK(rt_module_executor(m) != NULL);
    mlc_module_free(m2);
    mlc_module_free(m);
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/mlc_test_runtime_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "test_runtime: cannot create a temporary directory\n");
    return 1;
  }
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {{"pool", test_pool},
               {"pool_steal", test_pool_steal},
               {"alloc", test_alloc},
               {"plan_json", test_plan_json},
               {"params", test_params},
               {"tar", test_tar},           {"npz", test_npz},             {"executor", test_executor},
               {"executor_kernel_error", test_executor_kernel_error},      {"module", test_module},
               {"dynamic", test_dynamic}};
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    struct timespec t0, t1;
    int before = failures;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tests[i].fn();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("test_runtime: %-22s %s (%.2f s)\n", tests[i].name, failures == before ? "ok" : "FAILED",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  }
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (failures == 0 && system(cmd) != 0) fprintf(stderr, "test_runtime: could not remove %s\n", tmpdir);
  if (failures) {
    fprintf(stderr, "test_runtime: %d check(s) failed (files kept in %s)\n", failures, tmpdir);
    return 1;
  }
  printf("test_runtime: all checks passed\n");
  return 0;
}
