/* mlc run: load a package, bind inputs (from .npz or seeded random), run, time, profile, write outputs.
 *
 * Timing follows tvmc: one warm-up run, then `repeat` measurements, each the mean of `number` back-to-back
 * runs; mean/median/min/max/std over the measurements, in ms. --profile times every kernel call in separate
 * runs (so the clock reads do not disturb --print-time) and sums per kernel name. Random inputs come from
 * splitmix64 with a fixed seed: uniform [-1, 1) for floats, small non-negative integers for integers.
 * Exit codes: 0 ok, 1 usage, 2 invalid package or input, 3 unsupported (another architecture, --device cuda),
 * 4 internal (a kernel failed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "mlc/runtime.h"
#include "runtime/rt.h"

#define PROG "mlc run"

static const char *run_usage =
    "usage: mlc run model.tar [--inputs in.npz] [--outputs out.npz] [--repeat N] [--number N]\n"
    "               [--print-time] [--print-top K] [--profile] [--json] [--threads N] [--device cpu]\n"
    "               [--seed S]\n";

typedef struct RunOptions {
  const char *package, *inputs, *outputs, *device;
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

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xFF, mant = x & 0x7FFFFF;
  if (exp == 0xFF) return (uint16_t)(sign | 0x7C00 | (mant ? 0x200 : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7C00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into the exponent: still correct */
  return (uint16_t)(sign | h);
}

static void fill_random(void *data, mlc_dtype dt, int64_t n, uint64_t *state) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = splitmix64(state);
    float f = (float)((double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0); /* uniform [-1, 1) */
    int64_t small = (int64_t)(r % 10);                          /* small ints: [0, 10) */
    switch (dt) {
    case MLC_F32: ((float *)data)[i] = f; break;
    case MLC_F64: ((double *)data)[i] = (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0; break;
    case MLC_F16: ((uint16_t *)data)[i] = f32_to_f16(f); break;
    case MLC_BF16: {
      uint32_t x;
      memcpy(&x, &f, 4);
      ((uint16_t *)data)[i] = (uint16_t)((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
      break;
    }
    case MLC_BOOL: ((uint8_t *)data)[i] = (uint8_t)(r & 1); break;
    case MLC_U8: ((uint8_t *)data)[i] = (uint8_t)small; break;
    case MLC_I8: ((int8_t *)data)[i] = (int8_t)small; break;
    case MLC_U16: ((uint16_t *)data)[i] = (uint16_t)small; break;
    case MLC_I16: ((int16_t *)data)[i] = (int16_t)small; break;
    case MLC_U32: ((uint32_t *)data)[i] = (uint32_t)small; break;
    case MLC_I32: ((int32_t *)data)[i] = (int32_t)small; break;
    case MLC_U64: ((uint64_t *)data)[i] = (uint64_t)small; break;
    case MLC_I64: ((int64_t *)data)[i] = small; break;
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
        fprintf(stderr, PROG ": error: out of memory for input '%s'\n", info->name);
        return MLC_ERR_INTERNAL;
      }
      fill_random(buf, info->dtype, n, &state);
      int rc = mlc_module_set_input(m, i, buf, nbytes);
      free(buf);
      if (rc) {
        fprintf(stderr, PROG ": error: %s\n", mlc_rt_last_error());
        return rc;
      }
    }
    return MLC_OK;
  }
  int narr = 0;
  rt_array *arr = NULL;
  if (rt_npz_read(o->inputs, &narr, &arr, err) != MLC_OK) {
    fprintf(stderr, PROG ": error: %s\n", err);
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
      fprintf(stderr, PROG ": error: %s: missing input '%s' (%s %s)\n", o->inputs, info->name,
              mlc_dtype_name(info->dtype), want);
      rc = MLC_ERR_INVALID;
      break;
    }
    shape_str(got, sizeof got, a->ndim, a->shape);
    bool same = a->dtype == info->dtype && a->ndim == info->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == info->shape[d];
    if (!same) {
      fprintf(stderr, PROG ": error: %s: input '%s': expected %s %s, got %s %s\n", o->inputs, info->name,
              mlc_dtype_name(info->dtype), want, mlc_dtype_name(a->dtype), got);
      rc = MLC_ERR_INVALID;
      break;
    }
    if ((rc = mlc_module_set_input(m, i, a->data, a->nbytes)) != MLC_OK)
      fprintf(stderr, PROG ": error: %s: %s\n", o->inputs, mlc_rt_last_error());
  }
  for (int j = 0; j < narr && rc == MLC_OK; j++) {
    bool known = false;
    for (int i = 0; i < nin && !known; i++) known = strcmp(arr[j].name, mlc_module_input(m, i)->name) == 0;
    if (!known) {
      fprintf(stderr, PROG ": error: %s: unknown input '%s'; the model's inputs are:", o->inputs, arr[j].name);
      for (int i = 0; i < nin; i++) fprintf(stderr, " '%s'", mlc_module_input(m, i)->name);
      fprintf(stderr, "\n");
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
  long long calls;
  double ms;
} KernelTime;

static int cmp_kernel_time(const void *a, const void *b) {
  const KernelTime *x = a, *y = b;
  if (x->ms != y->ms) return x->ms > y->ms ? -1 : 1;
  return strcmp(x->name, y->name);
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
    fprintf(stderr, PROG ": error: %s\n%s", it.error, run_usage);
    return MLC_ERR_USAGE;
  }
  if (!o->package) {
    fputs(run_usage, stderr);
    return MLC_ERR_USAGE;
  }
  if (strcmp(o->device, "cuda") == 0) {
    fprintf(stderr, PROG ": error: --device cuda: no CUDA support in this build\n");
    return MLC_ERR_UNSUPPORTED;
  }
  if (strcmp(o->device, "cpu") != 0) {
    fprintf(stderr, PROG ": error: --device %s: unknown device (cpu or cuda)\n", o->device);
    return MLC_ERR_USAGE;
  }
  return MLC_OK;
}

static int write_outputs(mlc_module *m, const char *path) {
  int n = mlc_module_num_outputs(m);
  rt_array *arr = calloc((size_t)n + 1, sizeof *arr);
  if (!arr) return MLC_ERR_INTERNAL;
  for (int i = 0; i < n; i++) {
    const mlc_tensor_info *info = mlc_module_output(m, i);
    arr[i].name = (char *)info->name;
    arr[i].dtype = info->dtype;
    arr[i].ndim = info->ndim;
    memcpy(arr[i].shape, info->shape, sizeof arr[i].shape);
    arr[i].data = (void *)mlc_module_output_data(m, i);
    arr[i].nbytes = (size_t)numel(info->ndim, info->shape) * (size_t)mlc_dtype_size(info->dtype);
  }
  char err[RT_ERRLEN];
  int rc = rt_npz_write(path, n, arr, err);
  free(arr); /* names and data belong to the module */
  if (rc != MLC_OK) fprintf(stderr, PROG ": error: %s\n", err);
  return rc;
}

int cmd_run(int argc, char **argv) {
  RunOptions o;
  int rc = parse_args(argc, argv, &o);
  if (rc != MLC_OK) return rc < 0 ? 0 : rc;
  mlc_module *m = NULL;
  if ((rc = mlc_module_load(o.package, (int)o.threads, &m)) != MLC_OK) {
    fprintf(stderr, PROG ": error: %s\n", mlc_rt_last_error());
    return rc;
  }
  int nout = mlc_module_num_outputs(m);
  int nmeas = (int)o.repeat;
  double *times = calloc((size_t)nmeas, sizeof *times);
  rt_executor *ex = rt_module_executor(m);
  const rt_plan *plan = rt_executor_plan(ex);
  KernelTime *kt = calloc((size_t)plan->ncalls + 1, sizeof *kt);
  int nkt = 0;
  if (!times || !kt) {
    fprintf(stderr, PROG ": error: out of memory\n");
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
        fprintf(stderr, PROG ": error: %s: %s\n", o.package, mlc_rt_last_error());
        rc = MLC_ERR_INTERNAL;
        goto done;
      }
    if (r >= 0) times[r] = (now_ms() - t0) / runs;
  }
  double profile_total = 0;
  if (o.profile) {
    rt_executor_set_profile(ex, true);
    long long runs = o.repeat * o.number;
    char err[RT_ERRLEN];
    for (long long r = 0; r < runs; r++) {
      if ((rc = rt_executor_run(ex, err)) != MLC_OK) {
        fprintf(stderr, PROG ": error: %s: %s\n", o.package, err);
        rc = MLC_ERR_INTERNAL;
        goto done;
      }
      const double *sec = rt_executor_profile(ex);
      for (int c = 0; c < plan->ncalls; c++) {
        int j = 0;
        while (j < nkt && strcmp(kt[j].name, plan->calls[c].kernel) != 0) j++;
        if (j == nkt) kt[nkt++] = (KernelTime){plan->calls[c].kernel, 0, 0};
        kt[j].calls++;
        kt[j].ms += sec[c] * 1e3;
        profile_total += sec[c] * 1e3;
      }
    }
    rt_executor_set_profile(ex, false);
    qsort(kt, (size_t)nkt, sizeof *kt, cmp_kernel_time);
  }
  if (o.outputs && (rc = write_outputs(m, o.outputs)) != MLC_OK) goto done;
  Stats st = stats_of(times, nmeas);
  int topk = (int)o.top;
  int64_t *idx = topk ? calloc((size_t)topk, sizeof *idx) : NULL;
  if (topk && !idx) {
    rc = MLC_ERR_INTERNAL;
    goto done;
  }
  if (o.json) {
    printf("{\"package\":");
    cli_json_string(stdout, o.package);
    printf(",\"repeat\":%lld,\"number\":%lld,\"mean_ms\":%.6f,\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,"
           "\"std_ms\":%.6f,\"outputs\":[",
           o.repeat, o.number, st.mean, st.median, st.min, st.max, st.std);
    for (int i = 0; i < nout; i++) {
      const mlc_tensor_info *info = mlc_module_output(m, i);
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
        printf(",\"calls\":%lld,\"total_ms\":%.6f,\"share\":%.4f}", kt[j].calls, kt[j].ms,
               profile_total > 0 ? kt[j].ms / profile_total : 0.0);
      }
      printf("]");
    }
    printf("}\n");
  } else {
    if (o.print_time) {
      printf("Execution time summary (repeat %lld, number %lld):\n", o.repeat, o.number);
      printf(" %12s %12s %12s %12s %12s\n", "mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)");
      printf(" %12.4f %12.4f %12.4f %12.4f %12.4f\n", st.mean, st.median, st.max, st.min, st.std);
    }
    for (int i = 0; topk && i < nout; i++) {
      const mlc_tensor_info *info = mlc_module_output(m, i);
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
      printf("Per-kernel profile (%lld runs):\n", o.repeat * o.number);
      printf("  %-40s %8s %12s %8s\n", "kernel", "calls", "total (ms)", "share");
      for (int j = 0; j < nkt; j++)
        printf("  %-40s %8lld %12.4f %7.2f%%\n", kt[j].name, kt[j].calls, kt[j].ms,
               profile_total > 0 ? 100.0 * kt[j].ms / profile_total : 0.0);
      printf("  %-40s %8s %12.4f %7.2f%%\n", "total", "", profile_total, 100.0);
    }
  }
  free(idx);
  rc = MLC_OK;
done:
  free(times);
  free(kt);
  mlc_module_free(m);
  return rc;
}
