/* mlc run: load a package, bind inputs (from .npz or seeded random), run, time, profile, write outputs.
 *
 * Timing follows tvmc: one warm-up run, then `repeat` measurements, each the mean of `number` back-to-back
 * runs; mean/median/min/max/std over the measurements, in ms. --profile times every kernel call in separate
 * runs (so the clock reads do not disturb --print-time) and sums per kernel name. Random inputs come from
 * splitmix64 with a fixed seed: uniform [-1, 1) for floats (float8 / float4 rounded from it), small non-negative
 * integers for integers. Low-precision inputs and outputs take the .npz forms of rt_lowbit_from_npz.
 * --device cuda runs a package compiled with --target cuda on the GPU (runtime/cuda.c): each run launches
 * every kernel and copies the outputs back, which synchronises, so the times are whole GPU runs. Outputs with a
 * data-dependent shape (NonZero, NonMaxSuppression, Unique) are written and printed in the shape of the last run.
 * Exit codes: 0 ok, 1 usage, 2 invalid package or input, 3 unsupported (another architecture, a package for
 * the other device, --device cuda without an NVIDIA driver or GPU), 4 internal (a kernel failed). */
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "mlc/runtime.h"
#include "runtime/json.h"
#include "runtime/rt.h"

#define PROG "mlc run"

/* the last error message, for the --json error object */
static char last_error[RT_ERRLEN + 256];

static void run_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run_err(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  size_t n = strlen(last_error);
  while (n && last_error[n - 1] == '\n') last_error[--n] = 0;
  fprintf(stderr, PROG ": error: %s\n", last_error);
}

static const char *run_usage =
    "usage: mlc run model.tar [--inputs in.npz] [--outputs out.npz] [--repeat N] [--number N]\n"
    "               [--print-time] [--print-top K] [--profile] [--json] [--threads N] [--device cpu|cuda]\n"
    "               [--seed S] [--profile-trace FILE.json]\n";

typedef struct RunOptions {
  const char *package, *inputs, *outputs, *device, *trace;
  long long repeat, number, top, threads, seed;
  bool print_time, profile, json;
} RunOptions;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < ndim && k < n; d++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

static int64_t numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

/* ---- random inputs ---- */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void fill_random(void *data, mlc_dtype dt, int64_t n, uint64_t *state) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = splitmix64(state);
    float f = (float)((double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0); /* uniform [-1, 1) */
    int64_t small = (int64_t)(r % 10);                          /* small ints: [0, 10) */
    switch (dt) {
    case MLC_F32: ((float *)data)[i] = f; break;
    case MLC_F64: ((double *)data)[i] = (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0; break;
    case MLC_F16: ((uint16_t *)data)[i] = rt_f32_to_f16(f); break;
    case MLC_BF16: ((uint16_t *)data)[i] = rt_f32_to_bf16(f); break;
    case MLC_BOOL: ((uint8_t *)data)[i] = (uint8_t)(r & 1); break;
    case MLC_U8: ((uint8_t *)data)[i] = (uint8_t)small; break;
    case MLC_I8: ((int8_t *)data)[i] = (int8_t)small; break;
    case MLC_U16: ((uint16_t *)data)[i] = (uint16_t)small; break;
    case MLC_I16: ((int16_t *)data)[i] = (int16_t)small; break;
    case MLC_U32: ((uint32_t *)data)[i] = (uint32_t)small; break;
    case MLC_I32: ((int32_t *)data)[i] = (int32_t)small; break;
    case MLC_U64: ((uint64_t *)data)[i] = (uint64_t)small; break;
    case MLC_I64: ((int64_t *)data)[i] = small; break;
    case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_F4E2M1: case MLC_F8E8M0:
      ((uint8_t *)data)[i] = rt_f32_to_lowfloat(dt, f, true);
      break;
    case MLC_I4: case MLC_U4: ((uint8_t *)data)[i] = (uint8_t)(r % 8); break;
    case MLC_I2: case MLC_U2: ((uint8_t *)data)[i] = (uint8_t)(r % 2); break;
    default: break;
    }
  }
}

/* ---- inputs from .npz ---- */

static int bind_inputs(mlc_module *m, const RunOptions *o) {
  int nin = mlc_module_num_inputs(m);
  char err[RT_ERRLEN];
  if (!o->inputs) {
    uint64_t state = (uint64_t)o->seed;
    for (int i = 0; i < nin; i++) {
      const mlc_tensor_info *info = mlc_module_input(m, i);
      int64_t n = numel(info->ndim, info->shape);
      size_t nbytes = (size_t)n * (size_t)mlc_dtype_size(info->dtype);
      void *buf = malloc(nbytes ? nbytes : 1);
      if (!buf) {
        run_err("out of memory for input '%s'", info->name);
        return MLC_ERR_INTERNAL;
      }
      fill_random(buf, info->dtype, n, &state);
      int rc = mlc_module_set_input(m, i, buf, nbytes);
      free(buf);
      if (rc) {
        run_err("%s", mlc_rt_last_error());
        return rc;
      }
    }
    return MLC_OK;
  }
  int narr = 0;
  rt_array *arr = NULL;
  if (rt_npz_read(o->inputs, &narr, &arr, err) != MLC_OK) {
    run_err("%s", err);
    return MLC_ERR_INVALID;
  }
  int rc = MLC_OK;
  for (int i = 0; i < nin && rc == MLC_OK; i++) {
    const mlc_tensor_info *info = mlc_module_input(m, i);
    char want[256], got[256];
    shape_str(want, sizeof want, info->ndim, info->shape);
    const rt_array *a = NULL;
    for (int j = 0; j < narr; j++)
      if (strcmp(arr[j].name, info->name) == 0) a = &arr[j];
    if (!a) {
      run_err("%s: missing input '%s' (%s %s)", o->inputs, info->name, mlc_dtype_name(info->dtype), want);
      rc = MLC_ERR_INVALID;
      break;
    }
    shape_str(got, sizeof got, a->ndim, a->shape);
    bool widened = info->dtype == MLC_BF16 && a->dtype == MLC_F32; /* numpy has no bfloat16 */
    bool low = rt_dtype_is_lowbit(info->dtype); /* nor float8 / int4 / ...: see rt_lowbit_from_npz */
    bool same = (a->dtype == info->dtype || widened || low) && a->ndim == info->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == info->shape[d];
    if (!same) {
      run_err("%s: input '%s': expected %s %s, got %s %s", o->inputs, info->name, mlc_dtype_name(info->dtype), want,
              mlc_dtype_name(a->dtype), got);
      rc = MLC_ERR_INVALID;
      break;
    }
    if (low) {
      int64_t k = numel(a->ndim, a->shape);
      uint8_t *b = malloc((size_t)k + 1);
      char lerr[RT_ERRLEN];
      if (!b) {
        run_err("out of memory for input '%s'", info->name);
        rc = MLC_ERR_INTERNAL;
        break;
      }
      if (!rt_lowbit_from_npz(info->dtype, a->dtype, a->data, k, b, lerr)) {
        run_err("%s: input '%s': %s", o->inputs, info->name, lerr);
        free(b);
        rc = MLC_ERR_INVALID;
        break;
      }
      rc = mlc_module_set_input(m, i, b, (size_t)k);
      free(b);
    } else if (widened) {
      size_t k = a->nbytes / sizeof(float);
      uint16_t *h = malloc(k * 2 + 2);
      if (!h) {
        run_err("out of memory for input '%s'", info->name);
        rc = MLC_ERR_INTERNAL;
        break;
      }
      for (size_t j = 0; j < k; j++) h[j] = rt_f32_to_bf16(((const float *)a->data)[j]);
      rc = mlc_module_set_input(m, i, h, k * 2);
      free(h);
    } else {
      rc = mlc_module_set_input(m, i, a->data, a->nbytes);
    }
    if (rc != MLC_OK) run_err("%s: %s", o->inputs, mlc_rt_last_error());
  }
  for (int j = 0; j < narr && rc == MLC_OK; j++) {
    bool known = false;
    for (int i = 0; i < nin && !known; i++) known = strcmp(arr[j].name, mlc_module_input(m, i)->name) == 0;
    /* an input bound at compile time (--freeze-inputs) may be given again, with the same value only */
    const rt_frozen *f = known ? NULL : rt_module_frozen(m, arr[j].name);
    if (f) {
      const rt_array *a = &arr[j];
      uint64_t hash = rt_fnv1a64(a->data, a->nbytes);
      if (rt_dtype_is_lowbit(f->dtype)) { /* bound from its npz form (rt_lowbit_from_npz) */
        int64_t k = numel(a->ndim, a->shape);
        uint8_t *b = malloc((size_t)k + 1);
        char lerr[RT_ERRLEN];
        hash = b && rt_lowbit_from_npz(f->dtype, a->dtype, a->data, k, b, lerr) ? rt_fnv1a64(b, (size_t)k) : 0;
        free(b);
      } else if (f->dtype == MLC_BF16 && a->dtype == MLC_F32) { /* bound from float32, as numpy has no bfloat16 */
        size_t k = a->nbytes / sizeof(float);
        uint16_t *h = malloc(k * 2 + 2);
        for (size_t i = 0; h && i < k; i++) h[i] = rt_f32_to_bf16(((const float *)a->data)[i]);
        hash = h ? rt_fnv1a64(h, k * 2) : 0;
        free(h);
      }
      bool same = (a->dtype == f->dtype || f->dtype == MLC_BF16 || rt_dtype_is_lowbit(f->dtype)) &&
                  a->ndim == f->ndim && hash == f->hash;
      for (int d = 0; same && d < f->ndim; d++) same = a->shape[d] == f->shape[d];
      if (!same) {
        run_err("%s: input '%s' was bound to another value when the model was compiled (--freeze-inputs); "
                "recompile with this value to run it", o->inputs, arr[j].name);
        rc = MLC_ERR_INVALID;
      }
      continue;
    }
    if (!known) {
      char names[512] = "";
      for (int i = 0, n = 0; i < nin && n < (int)sizeof names - 80; i++)
        n += snprintf(names + n, sizeof names - (size_t)n, " '%.60s'", mlc_module_input(m, i)->name);
      run_err("%s: unknown input '%s'; the model's inputs are:%s", o->inputs, arr[j].name, names);
      rc = MLC_ERR_INVALID;
    }
  }
  rt_arrays_free(narr, arr);
  return rc;
}

/* ---- statistics, top-k, profile ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct Stats {
  double mean, median, min, max, std;
} Stats;

static Stats stats_of(double *v, int n) {
  Stats s = {0};
  if (n <= 0) return s;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += v[i];
  s.mean = sum / n;
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v[0];
  s.max = v[n - 1];
  double var = 0;
  for (int i = 0; i < n; i++) var += (v[i] - s.mean) * (v[i] - s.mean);
  s.std = sqrt(var / n);
  return s;
}

static double f16_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
  return (h & 0x8000) ? -v : v;
}

static bool is_float(mlc_dtype t) { return t == MLC_F32 || t == MLC_F64 || t == MLC_F16 || t == MLC_BF16; }

static double value_at(const void *data, mlc_dtype t, int64_t i) {
  switch (t) {
  case MLC_F32: return ((const float *)data)[i];
  case MLC_F64: return ((const double *)data)[i];
  case MLC_F16: return f16_to_double(((const uint16_t *)data)[i]);
  case MLC_BF16: {
    uint32_t x = (uint32_t)((const uint16_t *)data)[i] << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  default: return 0;
  }
}

/* indices of the k largest values, largest first (NaN ranks lowest); returns how many */
static int top_k(const void *data, mlc_dtype t, int64_t n, int k, int64_t *idx) {
  int have = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = value_at(data, t, i);
    if (isnan(v)) continue;
    if (have == k && v <= value_at(data, t, idx[k - 1])) continue;
    int j = have < k ? have++ : k - 1;
    while (j > 0 && value_at(data, t, idx[j - 1]) < v) {
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = i;
  }
  return have;
}

typedef struct KernelTime {
  const char *name;
  const char *ops; /* "nn.conv2d+add+nn.relu" from kernels.json, or NULL */
  double flops;    /* per call, 0 if unknown */
  long long calls;
  double ms;
} KernelTime;

static int cmp_kernel_time(const void *a, const void *b) {
  const KernelTime *x = a, *y = b;
  if (x->ms != y->ms) return x->ms > y->ms ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* ---- kernels.json (src/driver/kernels_info.c): fused ops and flops per kernel, when the package has it ---- */

typedef struct KernelInfo {
  int n;
  char **name, **ops;
  double *flops;
} KernelInfo;

static void kinfo_free(KernelInfo *k) {
  for (int i = 0; i < k->n; i++) {
    free(k->name[i]);
    free(k->ops[i]);
  }
  free(k->name);
  free(k->ops);
  free(k->flops);
  memset(k, 0, sizeof *k);
}

static void kinfo_parse(const char *text, size_t len, KernelInfo *k) {
  char err[RT_ERRLEN];
  rj_value *root = rj_parse(text, len, err);
  const rj_value *ks = root ? rj_get(root, "kernels") : NULL;
  if (ks && ks->kind == RJ_ARR && ks->n > 0) {
    k->name = calloc((size_t)ks->n, sizeof *k->name);
    k->ops = calloc((size_t)ks->n, sizeof *k->ops);
    k->flops = calloc((size_t)ks->n, sizeof *k->flops);
    for (int i = 0; k->name && k->ops && k->flops && i < ks->n; i++) {
      const rj_value *e = &ks->items[i], *nm = rj_get(e, "name"), *ops = rj_get(e, "ops"), *fl = rj_get(e, "flops");
      if (!nm || nm->kind != RJ_STR) continue;
      size_t cap = 1;
      for (int j = 0; ops && ops->kind == RJ_ARR && j < ops->n; j++)
        if (ops->items[j].kind == RJ_STR) cap += strlen(ops->items[j].str) + 1;
      char *joined = calloc(cap, 1);
      for (int j = 0; joined && ops && ops->kind == RJ_ARR && j < ops->n; j++)
        if (ops->items[j].kind == RJ_STR) {
          if (joined[0]) strcat(joined, "+");
          strcat(joined, ops->items[j].str);
        }
      k->name[k->n] = strdup(nm->str);
      k->ops[k->n] = joined;
      k->flops[k->n] = fl && fl->kind == RJ_NUM ? fl->num : 0;
      k->n++;
    }
  }
  rj_free(root);
}

static void kinfo_load(const char *path, KernelInfo *k) {
  unsigned char magic[4] = {0};
  FILE *f = fopen(path, "rb");
  size_t got = f ? fread(magic, 1, 4, f) : 0;
  if (f) fclose(f);
  if (got == 4 && memcmp(magic, "\177ELF", 4) == 0) {
    char full[4096];
    void *dl = realpath(path, full) ? dlopen(full, RTLD_LOCAL | RTLD_NOW | RTLD_NOLOAD) : NULL;
    const char *data = dl ? dlsym(dl, "mlc_so_kernels") : NULL;
    const uint64_t *size = dl ? dlsym(dl, "mlc_so_kernels_size") : NULL;
    if (data && size) kinfo_parse(data, (size_t)*size, k);
    if (dl) dlclose(dl);
    return;
  }
  void *blob = NULL;
  int n = 0;
  rt_file *files = NULL;
  char err[RT_ERRLEN];
  if (rt_tar_read(path, &blob, &n, &files, err) == MLC_OK)
    for (int i = 0; i < n; i++)
      if (!strcmp(files[i].name, "kernels.json")) kinfo_parse(files[i].data, files[i].size, k);
  free(files);
  rt_tar_free(blob);
}

/* ---- --profile-trace: Chrome trace event format (chrome://tracing, Perfetto) ---- */

static int write_trace(const char *path, const rt_plan *plan, const KernelInfo *ki, int nruns, const double *run_start,
                       const double *sec) {
  rj_buf b = {0};
  rj_printf(&b, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"mlc run --profile-trace\"},\n"
                "\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,"
                "\"args\":{\"name\":\"mlc\"}}");
  for (int r = 0; r < nruns; r++) {
    double t = run_start[r] * 1e3; /* microseconds */
    double total = 0;
    for (int c = 0; c < plan->ncalls; c++) total += sec[(size_t)r * (size_t)plan->ncalls + (size_t)c];
    rj_printf(&b, ",\n{\"name\":\"run %d\",\"cat\":\"run\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,"
                  "\"dur\":%.3f}", r, t, total * 1e6);
    for (int c = 0; c < plan->ncalls; c++) {
      double dur = sec[(size_t)r * (size_t)plan->ncalls + (size_t)c] * 1e6;
      const char *kname = plan->calls[c].kernel;
      rj_printf(&b, ",\n{\"name\":");
      rj_put_string(&b, kname);
      rj_printf(&b, ",\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,"
                    "\"args\":{\"call\":%d", t, dur, c);
      for (int i = 0; i < ki->n; i++)
        if (!strcmp(ki->name[i], kname)) {
          rj_printf(&b, ",\"ops\":");
          rj_put_string(&b, ki->ops[i] ? ki->ops[i] : "");
          if (ki->flops[i] > 0) rj_printf(&b, ",\"flops\":%.0f", ki->flops[i]);
          break;
        }
      rj_printf(&b, "}}");
      t += dur;
    }
  }
  rj_printf(&b, "\n]}\n");
  char *text = rj_finish(&b);
  if (!text) {
    run_err("%s: out of memory", path);
    return MLC_ERR_INTERNAL;
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  bool ok = f && fwrite(text, 1, strlen(text), f) == strlen(text);
  if (f && fclose(f) != 0) ok = false;
  free(text);
  if (!ok || rename(tmp, path) != 0) {
    run_err("--profile-trace %s: cannot write: %s", path, strerror(errno));
    unlink(tmp);
    return MLC_ERR_USAGE;
  }
  return MLC_OK;
}

/* ---- the command ---- */

static int parse_args(int argc, char **argv, RunOptions *o) {
  *o = (RunOptions){.device = "cpu", .repeat = 1, .number = 1};
  ArgIter it;
  arg_init(&it, argc, argv);
  while (arg_more(&it)) {
    const char *v;
    if (arg_flag(&it, "--print-time")) o->print_time = true;
    else if (arg_flag(&it, "--profile")) o->profile = true;
    else if (arg_flag(&it, "--json")) o->json = true;
    else if (arg_flag(&it, "--help") || arg_flag(&it, "-h")) {
      fputs(run_usage, stdout);
      return -1;
    } else if (arg_value(&it, "--inputs", &v)) o->inputs = v;
    else if (arg_value(&it, "--outputs", &v)) o->outputs = v;
    else if (arg_value(&it, "--device", &v)) o->device = v;
    else if (arg_value(&it, "--profile-trace", &v)) o->trace = v, o->profile = true;
    else if (arg_int(&it, "--repeat", 1, 1000000, &o->repeat)) {}
    else if (arg_int(&it, "--number", 1, 1000000, &o->number)) {}
    else if (arg_int(&it, "--print-top", 1, 1000000, &o->top)) {}
    else if (arg_int(&it, "--threads", 0, 1024, &o->threads)) {}
    else if (arg_int(&it, "--seed", 0, INT64_MAX, &o->seed)) {}
    else if (arg_positional(&it, &v)) {
      if (o->package) snprintf(it.error, sizeof it.error, "more than one package given ('%s', '%s')", o->package, v);
      o->package = v;
    } else arg_unknown(&it);
  }
  if (it.error[0]) {
    run_err("%s", it.error);
    if (!o->json) fputs(run_usage, stderr);
    return MLC_ERR_USAGE;
  }
  if (!o->package) {
    run_err("no package given");
    if (!o->json) fputs(run_usage, stderr);
    return MLC_ERR_USAGE;
  }
  if (strcmp(o->device, "cpu") != 0 && strcmp(o->device, "cuda") != 0) {
    run_err("--device %s: unknown device (cpu or cuda)", o->device);
    return MLC_ERR_USAGE;
  }
  return MLC_OK;
}

/* output i as the last run produced it: a data-dependent output has its actual shape (its valid data are the
 * first elements of the output buffer, which the runtime compacted) */
static mlc_tensor_info run_output(const mlc_module *m, int i) {
  mlc_tensor_info info = *mlc_module_output(m, i);
  mlc_module_output_shape(m, i, info.shape);
  return info;
}

/* numpy has no bfloat16: such outputs are written as float32 (exact), such inputs are read from float32.
 * Nor float8 / float4 (written as float32, exact), int4 / int2 (as int8) or uint4 / uint2 (as uint8): see
 * rt_lowbit_from_npz for how such inputs are given. */
static int write_outputs(mlc_module *m, const char *path) {
  int n = mlc_module_num_outputs(m);
  rt_array *arr = calloc((size_t)n + 1, sizeof *arr);
  float **widened = calloc((size_t)n + 1, sizeof *widened);
  if (!arr || !widened) {
    free(arr);
    free(widened);
    return MLC_ERR_INTERNAL;
  }
  int rc = MLC_OK;
  for (int i = 0; i < n && rc == MLC_OK; i++) {
    mlc_tensor_info out = run_output(m, i);
    const mlc_tensor_info *info = &out;
    arr[i].name = (char *)info->name;
    arr[i].dtype = info->dtype;
    arr[i].ndim = info->ndim;
    memcpy(arr[i].shape, info->shape, sizeof arr[i].shape);
    arr[i].data = (void *)mlc_module_output_data(m, i);
    arr[i].nbytes = (size_t)numel(info->ndim, info->shape) * (size_t)mlc_dtype_size(info->dtype);
    if (rt_dtype_is_lowfloat(info->dtype)) { /* float8 / float4: float32, exact */
      int64_t k = numel(info->ndim, info->shape);
      if (!(widened[i] = malloc((size_t)k * sizeof(float) + 1))) rc = MLC_ERR_INTERNAL;
      for (int64_t j = 0; widened[i] && j < k; j++)
        widened[i][j] = rt_lowfloat_to_f32(info->dtype, ((const uint8_t *)arr[i].data)[j]);
      arr[i].dtype = MLC_F32;
      arr[i].data = widened[i];
      arr[i].nbytes = (size_t)k * sizeof(float);
    } else if (rt_dtype_is_lowbit(info->dtype)) { /* int4 / int2 as int8, uint4 / uint2 as uint8: same bytes */
      arr[i].dtype = rt_lowbit_npz_dtype(info->dtype);
    } else if (info->dtype == MLC_BF16) {
      int64_t k = numel(info->ndim, info->shape);
      if (!(widened[i] = malloc((size_t)k * sizeof(float) + 1))) rc = MLC_ERR_INTERNAL;
      for (int64_t j = 0; widened[i] && j < k; j++) widened[i][j] = rt_bf16_to_f32(((const uint16_t *)arr[i].data)[j]);
      arr[i].dtype = MLC_F32;
      arr[i].data = widened[i];
      arr[i].nbytes = (size_t)k * sizeof(float);
    }
  }
  char err[RT_ERRLEN];
  if (rc == MLC_OK && (rc = rt_npz_write(path, n, arr, err)) != MLC_OK) run_err("%s", err);
  if (rc == MLC_ERR_INTERNAL) run_err("out of memory writing %s", path);
  for (int i = 0; i < n; i++) free(widened[i]);
  free(widened);
  free(arr); /* names and other data belong to the module */
  return rc;
}

#define TRACE_MAX_RUNS 100 /* --profile-trace keeps the first runs' events */

static int run_main(RunOptions *po);

int cmd_run(int argc, char **argv) {
  RunOptions o;
  last_error[0] = 0;
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) return 0;
  if (rc == MLC_OK) rc = run_main(&o);
  if (rc != MLC_OK && o.json) cli_json_error(stdout, "run", rc, last_error[0] ? last_error : "failed");
  return rc;
}

static int run_main(RunOptions *po) {
  RunOptions o = *po;
  int rc;
  mlc_module *m = NULL;
  if ((rc = mlc_module_load_device(o.package, o.device, (int)o.threads, &m)) != MLC_OK) {
    run_err("%s", mlc_rt_last_error());
    return rc;
  }
  int nout = mlc_module_num_outputs(m);
  int nmeas = (int)o.repeat;
  double *times = calloc((size_t)nmeas, sizeof *times);
  rt_executor *ex = rt_module_executor(m);
  const rt_plan *plan = rt_executor_plan(ex);
  KernelTime *kt = calloc((size_t)plan->ncalls + 1, sizeof *kt);
  KernelInfo ki = {0};
  int nkt = 0;
  long long prof_runs = o.repeat * o.number;
  int ntrace = o.trace ? (int)(prof_runs < TRACE_MAX_RUNS ? prof_runs : TRACE_MAX_RUNS) : 0;
  double *trace_sec = ntrace ? calloc((size_t)ntrace * (size_t)plan->ncalls + 1, sizeof(double)) : NULL;
  double *trace_start = ntrace ? calloc((size_t)ntrace, sizeof(double)) : NULL;
  int64_t *idx = NULL;
  if (!times || !kt || (ntrace && (!trace_sec || !trace_start))) {
    run_err("out of memory");
    rc = MLC_ERR_INTERNAL;
    goto done;
  }
  if ((rc = bind_inputs(m, &o)) != MLC_OK) goto done;
  /* warm-up, then the measurements */
  for (int r = -1; r < nmeas; r++) {
    int runs = r < 0 ? 1 : (int)o.number;
    double t0 = now_ms();
    for (int k = 0; k < runs; k++)
      if ((rc = mlc_module_run(m)) != MLC_OK) {
        run_err("%s: %s", o.package, mlc_rt_last_error());
        rc = MLC_ERR_INTERNAL;
        goto done;
      }
    if (r >= 0) times[r] = (now_ms() - t0) / runs;
  }
  double profile_total = 0;
  if (o.profile) {
    kinfo_load(o.package, &ki);
    rt_executor_set_profile(ex, true);
    char err[RT_ERRLEN];
    double origin = now_ms();
    for (long long r = 0; r < prof_runs; r++) {
      double start = now_ms() - origin;
      if ((rc = rt_executor_run(ex, err)) != MLC_OK) {
        run_err("%s: %s", o.package, err);
        rc = MLC_ERR_INTERNAL;
        goto done;
      }
      const double *sec = rt_executor_profile(ex);
      if (r < ntrace) {
        trace_start[r] = start;
        memcpy(trace_sec + (size_t)r * (size_t)plan->ncalls, sec, sizeof(double) * (size_t)plan->ncalls);
      }
      for (int c = 0; c < plan->ncalls; c++) {
        int j = 0;
        while (j < nkt && strcmp(kt[j].name, plan->calls[c].kernel) != 0) j++;
        if (j == nkt) {
          kt[nkt++] = (KernelTime){plan->calls[c].kernel, NULL, 0, 0, 0};
          for (int i = 0; i < ki.n; i++)
            if (!strcmp(ki.name[i], plan->calls[c].kernel)) kt[j].ops = ki.ops[i], kt[j].flops = ki.flops[i];
        }
        kt[j].calls++;
        kt[j].ms += sec[c] * 1e3;
        profile_total += sec[c] * 1e3;
      }
    }
    rt_executor_set_profile(ex, false);
    qsort(kt, (size_t)nkt, sizeof *kt, cmp_kernel_time);
    if (o.trace && (rc = write_trace(o.trace, plan, &ki, ntrace, trace_start, trace_sec)) != MLC_OK) goto done;
  }
  if (o.outputs && (rc = write_outputs(m, o.outputs)) != MLC_OK) goto done;
  Stats st = stats_of(times, nmeas);
  int topk = (int)o.top;
  idx = topk ? calloc((size_t)topk, sizeof *idx) : NULL;
  if (topk && !idx) {
    run_err("out of memory");
    rc = MLC_ERR_INTERNAL;
    goto done;
  }
  if (o.json) {
    cli_json_begin(stdout, "run");
    printf(",\"package\":");
    cli_json_string(stdout, o.package);
    printf(",\"repeat\":%lld,\"number\":%lld,\"mean_ms\":%.6f,\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,"
           "\"std_ms\":%.6f,\"outputs\":[",
           o.repeat, o.number, st.mean, st.median, st.min, st.max, st.std);
    for (int i = 0; i < nout; i++) {
      mlc_tensor_info out = run_output(m, i);
      const mlc_tensor_info *info = &out;
      printf("%s{\"name\":", i ? "," : "");
      cli_json_string(stdout, info->name);
      printf(",\"dtype\":\"%s\",\"shape\":[", mlc_dtype_name(info->dtype));
      for (int d = 0; d < info->ndim; d++) printf("%s%lld", d ? "," : "", (long long)info->shape[d]);
      printf("]");
      if (topk && is_float(info->dtype)) {
        const void *data = mlc_module_output_data(m, i);
        int got = top_k(data, info->dtype, numel(info->ndim, info->shape), topk, idx);
        printf(",\"top\":[");
        for (int k = 0; k < got; k++)
          printf("%s{\"index\":%lld,\"value\":%.9g}", k ? "," : "", (long long)idx[k], value_at(data, info->dtype, idx[k]));
        printf("]");
      }
      printf("}");
    }
    printf("]");
    if (o.profile) {
      printf(",\"profile\":[");
      for (int j = 0; j < nkt; j++) {
        printf("%s{\"kernel\":", j ? "," : "");
        cli_json_string(stdout, kt[j].name);
        printf(",\"ops\":");
        cli_json_string(stdout, kt[j].ops ? kt[j].ops : "");
        printf(",\"calls\":%lld,\"total_ms\":%.6f,\"mean_ms\":%.6f,\"share\":%.4f,\"flops\":%.0f", kt[j].calls, kt[j].ms,
               kt[j].ms / (double)kt[j].calls, profile_total > 0 ? kt[j].ms / profile_total : 0.0, kt[j].flops);
        if (kt[j].flops > 0 && kt[j].ms > 0)
          printf(",\"gflops\":%.3f", kt[j].flops * (double)kt[j].calls / (kt[j].ms * 1e6));
        printf("}");
      }
      printf("]");
      if (o.trace) {
        printf(",\"profile_trace\":");
        cli_json_string(stdout, o.trace);
      }
    }
    printf("}\n");
  } else {
    if (o.print_time) {
      printf("Execution time summary (repeat %lld, number %lld):\n", o.repeat, o.number);
      printf(" %12s %12s %12s %12s %12s\n", "mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)");
      printf(" %12.4f %12.4f %12.4f %12.4f %12.4f\n", st.mean, st.median, st.max, st.min, st.std);
    }
    for (int i = 0; topk && i < nout; i++) {
      mlc_tensor_info out = run_output(m, i);
      const mlc_tensor_info *info = &out;
      char shape[256];
      shape_str(shape, sizeof shape, info->ndim, info->shape);
      if (!is_float(info->dtype)) {
        printf("output '%s' (%s %s): not a float tensor, no top-%d\n", info->name, mlc_dtype_name(info->dtype),
               shape, topk);
        continue;
      }
      const void *data = mlc_module_output_data(m, i);
      int got = top_k(data, info->dtype, numel(info->ndim, info->shape), topk, idx);
      printf("output '%s' (%s %s): top-%d\n", info->name, mlc_dtype_name(info->dtype), shape, topk);
      for (int k = 0; k < got; k++)
        printf("  #%-3d index %-10lld value %.6g\n", k + 1, (long long)idx[k], value_at(data, info->dtype, idx[k]));
    }
    if (o.profile) {
      printf("Per-kernel profile (%lld runs; time per run):\n", prof_runs);
      printf("  %-40s %-36s %6s %11s %7s %9s\n", "kernel", "ops fused", "calls", "time (ms)", "share", "GFLOP/s");
      for (int j = 0; j < nkt; j++) {
        char gf[32] = "-";
        if (kt[j].flops > 0 && kt[j].ms > 0)
          snprintf(gf, sizeof gf, "%.2f", kt[j].flops * (double)kt[j].calls / (kt[j].ms * 1e6));
        printf("  %-40s %-36s %6lld %11.4f %6.2f%% %9s\n", kt[j].name, kt[j].ops && *kt[j].ops ? kt[j].ops : "-",
               kt[j].calls / prof_runs, kt[j].ms / (double)prof_runs,
               profile_total > 0 ? 100.0 * kt[j].ms / profile_total : 0.0, gf);
      }
      printf("  %-40s %-36s %6s %11.4f %6.2f%%\n", "total", "", "", profile_total / (double)prof_runs, 100.0);
      if (o.trace) printf("Chrome trace written to %s (open in https://ui.perfetto.dev or chrome://tracing)\n", o.trace);
    }
  }
  rc = MLC_OK;
done:
  free(idx);
  free(times);
  free(kt);
  free(trace_sec);
  free(trace_start);
  kinfo_free(&ki);
  mlc_module_free(m);
  return rc;
}
