/* mlc-conformance: runs ONNX backend node tests through the whole compiled path.
 *
 * For each test directory (model.onnx + test_data_set_N/{input,output}_K.pb): import the model with the
 * input shapes of the test data, compile every kernel with LLVM (JIT), run the plan on the runtime's executor,
 * and compare every output with the expected tensor (|got - want| <= atol + rtol * |want|, rtol 1e-3,
 * atol 1e-7 as the ONNX backend runner, looser for the few tests in atol_overrides; integers and bools exactly;
 * NaN matches NaN). The tests run in worker processes (-j of them), each test with a timeout, so a crash or hang
 * is one FAIL line, not a dead runner.
 *
 *   mlc-conformance [--root DIR] [--tier FILE]... [--suite DIR]... [--expected FILE] [-j N] [--timeout S] [TEST...]
 *
 * A TEST is a node test's name (root/node/NAME) or a path under root (simple/test_shrink); --suite DIR adds every
 * test directory of root/DIR (the ONNX backend's simple/ and pytorch-operator/ model tests).
 *
 * Prints one line per test (PASS / FAIL max error / UNSUPPORTED reason) and a last line
 * "N passed, N failed, N skipped". With --expected, exits non-zero if any test listed there does not pass. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "driver/driver.h"
#include "frontends/onnx/onnx.h"
#include "frontends/onnx/onnx.pb-c.h"
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#ifndef MLC_ONNX_TESTS_DIR
#define MLC_ONNX_TESTS_DIR "../shared/onnx-tests"
#endif

typedef enum { R_PASS, R_FAIL, R_UNSUPPORTED } Result;

static double to_double(const void *p, mlc_dtype t, int64_t i) {
  switch (t) {
  case MLC_F32: return ((const float *)p)[i];
  case MLC_F64: return ((const double *)p)[i];
  case MLC_I8: return ((const int8_t *)p)[i];
  case MLC_U8: return ((const uint8_t *)p)[i];
  case MLC_BOOL: return ((const uint8_t *)p)[i];
  case MLC_I16: return ((const int16_t *)p)[i];
  case MLC_U16: return ((const uint16_t *)p)[i];
  case MLC_I32: return ((const int32_t *)p)[i];
  case MLC_U32: return ((const uint32_t *)p)[i];
  case MLC_I64: return (double)((const int64_t *)p)[i];
  case MLC_U64: return (double)((const uint64_t *)p)[i];
  case MLC_F16: {
    uint16_t h = ((const uint16_t *)p)[i];
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return s ? -v : v;
  }
  case MLC_BF16: {
    uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_F4E2M1: case MLC_F8E8M0:
    return rt_lowfloat_to_f32(t, ((const uint8_t *)p)[i]); /* one byte per element (the bits) */
  case MLC_I4: case MLC_I2: return ((const int8_t *)p)[i];
  case MLC_U4: case MLC_U2: return ((const uint8_t *)p)[i];
  default: return NAN;
  }
}

/* Tests whose expected data is less precise than the default atol (as ONNX Runtime keeps per-test
 * tolerances for them): the absolute tolerance they are compared with instead. */
static const struct { const char *test; double atol; } atol_overrides[] = {
    /* numpy.fft.ifft of complex64 data (a float32 FFT): its Nyquist bins, exactly 0, hold 2^-19 / 10 = 1.9e-7 */
    {"test_dft_inverse", 1e-6},
    {"test_dft_inverse_opset19", 1e-6},
};

static double atol_of(const char *test) {
  for (size_t i = 0; i < sizeof atol_overrides / sizeof atol_overrides[0]; i++)
    if (!strcmp(atol_overrides[i].test, test)) return atol_overrides[i].atol;
  return 1e-7;
}

/* Returns the max error, or -1 when the shapes or dtypes differ; *ok says whether within tolerance. */
static double compare(const TensorType *want_t, const void *want, const rt_tensor *got_t, const void *got, double atol,
                      bool *ok, char *why, size_t nwhy) {
  *ok = false;
  if (want_t->dtype != got_t->dtype) {
    snprintf(why, nwhy, "dtype %s, expected %s", mlc_dtype_name(got_t->dtype), mlc_dtype_name(want_t->dtype));
    return -1;
  }
  bool same = want_t->ndim == got_t->ndim;
  for (int i = 0; same && i < want_t->ndim; i++) same = want_t->dims[i] == got_t->shape[i];
  if (!same) {
    snprintf(why, nwhy, "shape mismatch");
    return -1;
  }
  int64_t n = tt_numel(want_t);
  bool exact = !(want_t->dtype == MLC_F32 || want_t->dtype == MLC_F64 || want_t->dtype == MLC_F16 ||
                 want_t->dtype == MLC_BF16);
  double rtol = 1e-3, maxerr = 0;
  if (want_t->dtype == MLC_F16 || want_t->dtype == MLC_BF16) atol = 1e-3;
  *ok = true;
  for (int64_t i = 0; i < n; i++) {
    double w = to_double(want, want_t->dtype, i), g = to_double(got, got_t->dtype, i);
    if (isnan(w) && isnan(g)) continue;
    if (isinf(w) || isinf(g)) {
      if (w != g) {
        *ok = false;
        maxerr = INFINITY;
      }
      continue;
    }
    double err = fabs(w - g);
    if (isnan(err)) err = INFINITY;
    if (err > maxerr) maxerr = err;
    if (exact ? err != 0 : err > atol + rtol * fabs(w)) *ok = false;
  }
  if (want_t->dtype == MLC_I64 || want_t->dtype == MLC_U64) { /* doubles lose low bits: compare bytes too */
    if (memcmp(want, got, (size_t)n * 8) != 0) *ok = false;
  }
  snprintf(why, nwhy, "max error %.3g", maxerr);
  return maxerr;
}

#define MAX_IO 64

/* The model's graph inputs (without initializers) or outputs, in order: each one's name and kind. The test data
 * of a sequence is a SequenceProto, its items the compiled graph's NAME.0, NAME.1, ...; that of an optional an
 * OptionalProto: empty (no input / output), a tensor NAME or a sequence NAME.0, ... */
enum { IO_TENSOR, IO_SEQUENCE, IO_OPTIONAL };
typedef struct IoList {
  int n;
  char names[MAX_IO][256];
  int kind[MAX_IO];
} IoList;

static void io_add(IoList *l, const Onnx__ValueInfoProto *vi) {
  if (l->n == MAX_IO) return;
  snprintf(l->names[l->n], 256, "%s", vi->name ? vi->name : "");
  int c = vi->type ? (int)vi->type->value_case : 0;
  l->kind[l->n++] = c == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE   ? IO_SEQUENCE
                    : c == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? IO_OPTIONAL
                                                                 : IO_TENSOR;
}

/* Reads the test data of an input or output of kind: its items (one for a tensor), whether they are a sequence's
 * (named NAME.k) and whether it is an empty optional. */
static mlc_status read_io(Arena *a, const char *path, int kind, int *n, TensorType **types, void ***data, bool *seq,
                          bool *none, Diag *d) {
  *seq = kind == IO_SEQUENCE, *none = false, *n = 1;
  if (kind == IO_SEQUENCE) return onnx_read_sequence_file(a, path, n, types, data, d);
  if (kind == IO_OPTIONAL) {
    OnnxOptionalKind k;
    mlc_status st = onnx_read_optional_file(a, path, &k, n, types, data, d);
    *seq = k == ONNX_OPTIONAL_SEQUENCE, *none = k == ONNX_OPTIONAL_EMPTY;
    return st;
  }
  *types = arena_alloc(a, sizeof **types);
  *data = arena_alloc(a, sizeof **data);
  return onnx_read_tensor_file(a, path, NULL, *types, *data, d);
}

static bool model_io(const char *path, IoList *in, IoList *out) {
  void *buf;
  size_t size;
  Diag d = {0};
  if (file_read(path, &buf, &size, &d) != MLC_OK) return false;
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, buf);
  free(buf);
  if (!m || !m->graph) return false;
  in->n = out->n = 0;
  for (size_t i = 0; i < m->graph->n_input; i++) {
    const char *name = m->graph->input[i]->name;
    bool init = false;
    for (size_t k = 0; k < m->graph->n_initializer; k++)
      if (!strcmp(m->graph->initializer[k]->name, name)) init = true;
    if (!init) io_add(in, m->graph->input[i]);
  }
  for (size_t i = 0; i < m->graph->n_output; i++) io_add(out, m->graph->output[i]);
  onnx__model_proto__free_unpacked(m, NULL);
  return true;
}


/* Runs one test in this process; prints its line to out. */
/* whether msg contains 'name' (quoted): an importer message naming a graph input it needs at compile time */
static bool quoted_in(const char *msg, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strchr(msg, '\''); p; p = strchr(p + 1, '\''))
    if (!strncmp(p + 1, name, n) && p[1 + n] == '\'') return true;
  return false;
}

static Result run_test(const char *root, const char *name, FILE *out) {
  char dir[4096], path[4600];
  /* a node test by its name; a test of another suite (simple/, pytorch-operator/) by its path under root */
  snprintf(dir, sizeof dir, strchr(name, '/') ? "%s/%s" : "%s/node/%s", root, name);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  Arena *a = arena_new();
  Diag d = {0};
  Result r = R_FAIL;
  IoList ins, outs;
  if (!model_io(path, &ins, &outs)) {
    fprintf(out, "FAIL %s: cannot read %s\n", name, path);
    arena_free(a);
    return R_FAIL;
  }
  /* inputs of data set 0 fix the shapes: one entry per tensor input and per item of a sequence input */
  enum { MAX_ITEMS = 4 * MAX_IO };
  char names[MAX_ITEMS][256];
  TensorType in_t[MAX_ITEMS];
  void *in_data[MAX_ITEMS];
  OnnxInputShape shapes[MAX_ITEMS];
  memset(shapes, 0, sizeof shapes);
  int nfound = 0;
  for (int i = 0; i < ins.n; i++) {
    char p[4700];
    snprintf(p, sizeof p, "%s/test_data_set_0/input_%d.pb", dir, i);
    if (access(p, R_OK) != 0) break;
    int nitems = 1;
    TensorType *types = NULL;
    void **data = NULL;
    bool seq, none;
    mlc_status st = read_io(a, p, ins.kind[i], &nitems, &types, &data, &seq, &none, &d);
    if (st == MLC_OK && nfound + nitems + 1 > MAX_ITEMS) st = diag_set(&d, MLC_ERR_UNSUPPORTED, "too many inputs");
    if (st != MLC_OK) {
      fprintf(out, "UNSUPPORTED %s: %s\n", name, d.msg);
      arena_free(a);
      return R_UNSUPPORTED;
    }
    if (none || (seq && nitems == 0)) { /* an empty optional (NAME:none) or sequence (NAME:[]) */
      snprintf(names[nfound], 256, "%s", ins.names[i]);
      shapes[nfound].name = names[nfound];
      shapes[nfound].ndim = none ? -1 : 0;
      in_t[nfound] = (TensorType){.dtype = MLC_F32};
      in_data[nfound++] = NULL;
      continue;
    }
    for (int k = 0; k < nitems; k++, nfound++) {
      snprintf(names[nfound], 256, seq ? "%s.%d" : "%s", ins.names[i], k);
      in_t[nfound] = types[k];
      in_data[nfound] = data[k];
      shapes[nfound].name = names[nfound];
      shapes[nfound].ndim = in_t[nfound].ndim;
      memcpy(shapes[nfound].dims, in_t[nfound].dims, sizeof shapes[nfound].dims);
    }
  }
  OnnxImportOptions io = {.ninput_shapes = nfound, .input_shapes = shapes};
  Graph *g = NULL;
  Compiled *c = NULL;
  mlc_pool *pool = NULL;
  rt_executor *ex = NULL;
  CgJit *jit = NULL;
  CompileOptions opt = {.target = getenv("MLC_TARGET") ? getenv("MLC_TARGET") : "llvm", .opt_level = 3};
  for (;;) {
    if (!onnx_import_file(a, path, &io, &g, &d) && !mlc_compile_graph(a, g, &opt, &c, &d)) break;
    /* An op needs an input's value at compile time (Reshape's shape, Reduce's axes, a Loop's trip count): freeze
     * the integer inputs and the inputs the message names as 'name' (e.g. Resize's float scales, the inputs a
     * trip count depends on) to the test's values, as a user freezes such inputs, and try again, as long as
     * each try freezes at least one more input. */
    int newly = 0;
    if (d.status == MLC_ERR_UNSUPPORTED && strstr(d.msg, "compile time"))
      for (int i = 0; i < nfound; i++)
        if (!shapes[i].data && in_data[i] && (in_t[i].dtype == MLC_I64 || in_t[i].dtype == MLC_I32 ||
                                in_t[i].dtype == MLC_BOOL || quoted_in(d.msg, names[i]))) {
          shapes[i].dtype = in_t[i].dtype;
          shapes[i].data = in_data[i];
          newly++;
        }
    if (newly > 0) {
      memset(&d, 0, sizeof d);
      mlc_compiled_free(c);
      c = NULL;
      continue;
    }
    fprintf(out, "%s %s: %s\n", d.status == MLC_ERR_UNSUPPORTED ? "UNSUPPORTED" : "FAIL", name, d.msg);
    r = d.status == MLC_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
    goto done;
  }
  pool = mlc_pool_create(1);
  if (mlc_jit_executor(c, pool, &ex, &jit, &d)) {
    fprintf(out, "FAIL %s: %s\n", name, d.msg);
    goto done;
  }
  char err[RT_ERRLEN] = "";
  for (int j = 0; j < g->inputs.n; j++) {
    int i = 0;
    while (i < nfound && strcmp(names[i], g->inputs.v[j]->name)) i++;
    if (i == nfound) {
      fprintf(out, "FAIL %s: no test data for input '%s'\n", name, g->inputs.v[j]->name);
      goto done;
    }
    if (rt_executor_set_input(ex, j, in_data[i], (size_t)tt_nbytes(&in_t[i]), err)) {
      fprintf(out, "FAIL %s: input '%s': %s\n", name, names[i], err);
      goto done;
    }
  }
  if (rt_executor_run(ex, err)) {
    fprintf(out, "FAIL %s: run: %s\n", name, err);
    goto done;
  }
  const rt_plan *plan = rt_executor_plan(ex);
  double worst = 0;
  bool all_ok = true;
  char why[256] = "";
  int po = 0; /* the plan's outputs: the model's tensor outputs and the items of its sequence outputs, in order */
  for (int i = 0; i < outs.n; i++) {
    char p[4700];
    snprintf(p, sizeof p, "%s/test_data_set_0/output_%d.pb", dir, i);
    int nitems = 1;
    TensorType *want_t = NULL;
    void **want = NULL;
    bool seq, none;
    if (read_io(a, p, outs.kind[i], &nitems, &want_t, &want, &seq, &none, &d) != MLC_OK) {
      fprintf(out, "FAIL %s: %s\n", name, d.msg);
      goto done;
    }
    for (int k = 0; k < nitems; k++, po++) {
      char item[300];
      snprintf(item, sizeof item, seq ? "%s.%d" : "%s", outs.names[i], k);
      if (po >= plan->noutputs || (outs.kind[i] != IO_TENSOR && strcmp(plan->tensors[plan->outputs[po]].name, item))) {
        fprintf(out, "FAIL %s: output '%s' has %d items, not %d\n", name, outs.names[i], k, nitems);
        goto done;
      }
      bool ok;
      rt_tensor got_t = plan->tensors[plan->outputs[po]]; /* a data-dependent output: its shape from the run */
      rt_executor_output_shape(ex, po, got_t.shape);
      double e = compare(&want_t[k], want[k], &got_t, rt_executor_output(ex, po), atol_of(name), &ok, why, sizeof why);
      if (!ok) {
        all_ok = false;
        if (e < 0) {
          fprintf(out, "FAIL %s: output %d: %s\n", name, i, why);
          goto done;
        }
      }
      if (e > worst) worst = e;
    }
  }
  if (po != plan->noutputs) {
    fprintf(out, "FAIL %s: %d outputs, %d expected\n", name, plan->noutputs, po);
    goto done;
  }
  if (all_ok) {
    fprintf(out, "PASS %s\n", name);
    r = R_PASS;
  } else {
    fprintf(out, "FAIL %s: max error %.3g\n", name, worst);
  }
done:
  if (ex) rt_executor_free(ex);
  if (jit) cg_jit_free(jit);
  if (pool) mlc_pool_destroy(pool);
  mlc_compiled_free(c);
  arena_free(a);
  return r;
}

/* A worker: a forked process that runs the tests the parent sends it (a test's index, an int on its command pipe)
 * one after another and answers each with the test's output lines and a record "\036<result>\n". Forking once
 * per worker rather than once per test makes the suite 3-4 times faster (a fresh process pays for its page
 * faults and LLVM's first use again), and a crash or hang still costs only the test that caused it: the parent
 * reports it and starts another worker for the tests left. */
typedef struct Worker {
  pid_t pid; /* 0: none running */
  int cmd;   /* the parent writes test indices here */
  int fd;    /* and reads the results here */
  int index; /* the test it runs now, -1 when idle */
  double start;
  char buf[8192];
  size_t len;
  bool passed_on; /* part of this test's output went out already (longer than buf) */
} Worker;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void add_name(char ***names, int *n, int *cap, const char *s) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 256;
    *names = realloc(*names, sizeof(char *) * (size_t)*cap);
  }
  (*names)[(*n)++] = strdup(s);
}

/* every test directory of root/suite, as "suite/test_x", in name order */
static int read_suite(const char *root, const char *suite, char ***names, int *n, int *cap) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", root, suite);
  struct dirent **ents;
  int k = scandir(dir, &ents, NULL, alphasort);
  if (k < 0) {
    fprintf(stderr, "mlc-conformance: cannot list %s: %s\n", dir, strerror(errno));
    return -1;
  }
  for (int i = 0; i < k; i++) {
    if (!strncmp(ents[i]->d_name, "test_", 5)) {
      char name[1024];
      snprintf(name, sizeof name, "%s/%s", suite, ents[i]->d_name);
      add_name(names, n, cap, name);
    }
    free(ents[i]);
  }
  free(ents);
  return 0;
}

static int read_list(const char *path, char ***names, int *n, int *cap) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "mlc-conformance: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    s[strcspn(s, " \t\r\n#")] = 0;
    if (!*s) continue;
    add_name(names, n, cap, s);
  }
  fclose(f);
  return 0;
}

/* the parent's tables, held here so that a worker's leak check sees them reachable */
static Worker *workers;
static Result *results;

/* The worker's loop: until the command pipe closes. Under AddressSanitizer each test ends with a leak check of
 * what its import, compile and run did not free; after a leak the worker stops (a later check would report the
 * same blocks again under another test's name). */
static void worker_loop(const char *root, char **names, int cmd, FILE *out) {
  int index;
  while (read(cmd, &index, sizeof index) == (ssize_t)sizeof index) {
    Result r = run_test(root, names[index], out);
    bool stop = false;
#ifdef __SANITIZE_ADDRESS__
    if (__lsan_do_recoverable_leak_check()) {
      fprintf(out, "FAIL %s: memory leaked (LeakSanitizer's report is on stderr)\n", names[index]);
      r = R_FAIL;
      stop = true;
    }
#endif
    fprintf(out, "\036%d\n", (int)r + (stop ? 8 : 0)); /* 8: the worker ends after this test */
    fflush(out);
    if (stop) break;
  }
}

static bool worker_start(int nworkers, Worker *w, const char *root, char **names) {
  int cmd[2], res[2];
  if (pipe(cmd)) return false;
  if (pipe(res)) {
    close(cmd[0]);
    close(cmd[1]);
    return false;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    close(cmd[0]), close(cmd[1]), close(res[0]), close(res[1]);
    return false;
  }
  if (pid == 0) {
    close(cmd[1]);
    close(res[0]);
    for (int k = 0; k < nworkers; k++) /* the other workers' pipes: their command pipe must close with the parent's */
      if (workers[k].pid) close(workers[k].cmd), close(workers[k].fd);
    FILE *out = fdopen(res[1], "w");
    setvbuf(out, NULL, _IOFBF, 1 << 14);
    worker_loop(root, names, cmd[0], out);
    fclose(out);
    _exit(0); /* _exit: no exit-time leak check of the parent's own allocations, inherited */
  }
  close(cmd[0]);
  close(res[1]);
  *w = (Worker){.pid = pid, .cmd = cmd[1], .fd = res[0], .index = -1};
  return true;
}

/* Ends a worker (killed when it still runs a test) and waits for it; returns how it ended. */
static int worker_stop(Worker *w, bool kill_it) {
  if (kill_it) kill(w->pid, SIGKILL);
  if (w->cmd >= 0) close(w->cmd);
  if (w->fd >= 0) close(w->fd);
  int status = 0;
  pid_t got;
  do got = waitpid(w->pid, &status, 0);
  while (got == -1 && errno == EINTR);
  *w = (Worker){.cmd = -1, .fd = -1, .index = -1};
  return got == -1 ? -1 : status;
}

int main(int argc, char **argv) {
  const char *root = getenv("MLC_ONNX_TESTS") ? getenv("MLC_ONNX_TESTS") : MLC_ONNX_TESTS_DIR;
  const char *expected = NULL;
  int jobs = 1;
  double timeout = 60;
  char **names = NULL;
  int n = 0, cap = 0, nsuites = 0;
  const char *suites[8];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--root") && i + 1 < argc) root = argv[++i];
    else if (!strcmp(argv[i], "--tier") && i + 1 < argc) {
      if (read_list(argv[++i], &names, &n, &cap)) return 2;
    } else if (!strcmp(argv[i], "--suite") && i + 1 < argc) {
      if (nsuites < 8) suites[nsuites++] = argv[++i];
    } else if (!strcmp(argv[i], "--expected") && i + 1 < argc) expected = argv[++i];
    else if (!strcmp(argv[i], "-j") && i + 1 < argc) jobs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout = atof(argv[++i]);
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: mlc-conformance [--root DIR] [--tier FILE]... [--suite DIR]... [--expected FILE] [-j N] "
                      "[--timeout S] [TEST...]\n");
      return 1;
    } else add_name(&names, &n, &cap, argv[i]);
  }
  for (int k = 0; k < nsuites; k++) /* after the options: --root may follow --suite */
    if (read_suite(root, suites[k], &names, &n, &cap)) return 2;
  char **exp_names = NULL;
  int nexp = 0, capexp = 0;
  if (expected && read_list(expected, &exp_names, &nexp, &capexp)) return 2;
  if (n == 0 && nexp) { /* just the expected list */
    names = exp_names;
    n = nexp;
  }
  if (jobs < 1) jobs = 1;
  fflush(stdout);
  results = calloc((size_t)n + 1, sizeof(Result));
  workers = calloc((size_t)jobs, sizeof(Worker));
  signal(SIGPIPE, SIG_IGN); /* a worker that died is seen on its result pipe, not by a signal here */
  int next = 0, running = 0, passed = 0, failed = 0, skipped = 0;
  while (next < n || running) {
    for (int k = 0; k < jobs && next < n; k++) {
      Worker *w = &workers[k];
      if (w->pid && w->index >= 0) continue;
      if (!w->pid && !worker_start(jobs, w, root, names)) {
        fprintf(stderr, "mlc-conformance: cannot start a worker process: %s\n", strerror(errno));
        return 4;
      }
      int index = next++;
      if (write(w->cmd, &index, sizeof index) != (ssize_t)sizeof index) { /* it died idle: the next one runs it */
        worker_stop(w, true);
        next--;
        continue;
      }
      w->index = index;
      w->start = now();
      w->len = 0;
      w->passed_on = false;
      running++;
    }
    struct pollfd pf[64];
    int map[64], np = 0;
    for (int k = 0; k < jobs && np < 64; k++)
      if (workers[k].pid && workers[k].index >= 0) {
        pf[np] = (struct pollfd){.fd = workers[k].fd, .events = POLLIN};
        map[np++] = k;
      }
    if (poll(pf, (nfds_t)np, 100) < 0 && errno != EINTR) return 4;
    for (int q = 0; q < np; q++) {
      Worker *w = &workers[map[q]];
      int index = w->index; /* worker_stop forgets it */
      const char *name = names[index];
      Result r = R_FAIL;
      bool done = false;
      if (pf[q].revents) {
        ssize_t got = read(w->fd, w->buf + w->len, sizeof w->buf - 1 - w->len);
        if (got > 0) {
          w->len += (size_t)got;
          w->buf[w->len] = 0;
          char *end = memchr(w->buf, '\036', w->len);
          if (end && strchr(end, '\n')) { /* the test's record: its lines, then the result */
            *end = 0;
            fputs(w->buf, stdout);
            if (end == w->buf && !w->passed_on) printf("FAIL %s: no result\n", name);
            int code = atoi(end + 1);
            r = (code & 7) > R_UNSUPPORTED ? R_FAIL : (Result)(code & 7);
            if (code & 8) worker_stop(w, false);
            done = true;
            w->len = 0; /* one test at a time: nothing follows the record */
          } else if (!end && w->len == sizeof w->buf - 1) { /* long output: pass it on as it comes */
            fputs(w->buf, stdout);
            w->len = 0;
            w->passed_on = true;
          }
        } else { /* EOF: the worker died in the middle of the test */
          w->buf[w->len] = 0;
          fputs(w->buf, stdout);
          int status = worker_stop(w, false);
          if (status != -1 && WIFSIGNALED(status)) printf("FAIL %s: crashed (signal %d)\n", name, WTERMSIG(status));
          else printf("FAIL %s: its process ended without a result\n", name);
          done = true;
        }
      }
      if (!done && now() - w->start > timeout) {
        worker_stop(w, true);
        printf("FAIL %s: timed out after %.0f s\n", name, timeout);
        done = true;
      }
      if (!done) continue;
      fflush(stdout);
      results[index] = r;
      if (r == R_PASS) passed++;
      else if (r == R_FAIL) failed++;
      else skipped++;
      w->index = -1;
      running--;
    }
  }
  for (int k = 0; k < jobs; k++)
    if (workers[k].pid) worker_stop(&workers[k], false);
  int regressions = 0;
  for (int e = 0; e < nexp; e++) {
    bool ok = false;
    for (int i = 0; i < n; i++)
      if (!strcmp(names[i], exp_names[e])) ok = results[i] == R_PASS;
    if (!ok) {
      fprintf(stderr, "regression: %s is in %s but did not pass\n", exp_names[e], expected);
      regressions++;
    }
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  for (int i = 0; i < n; i++) free(names[i]);
  if (names != exp_names) {
    for (int e = 0; e < nexp; e++) free(exp_names[e]);
    free(exp_names);
  }
  free(names);
  free(results);
  free(workers);
  return regressions ? 1 : 0;
}
