/* Measurement of configs (TVM's LocalBuilder + LocalRunner, in one isolated child process per config).
 *
 * The inputs of the task's group are filled once (constants keep their data, other inputs get seeded random
 * values) before the children are forked, and the default schedule's output is computed in a first child: the
 * reference.
 * For each config a child is forked: it lowers the group with the config (mlc_group_kernel), JIT-compiles it
 * (codegen/llvm ORC), runs it once into output buffers pre-filled with NaN bytes and compares with the
 * reference (WRONG_ANSWER when it differs), then takes the timing lock (a process-shared semaphore: up to
 * `parallel` children build at once, one at a time is timed) and times it: `number` runs per repeat, number
 * grown until a repeat lasts min_repeat_ms, `repeat` costs; with cache_flush (the default of `mlc tune`)
 * every buffer but the first input is flushed from the caches before each run, untimed (timed_runs). Its
 * result is written to a shared slot. The parent
 * polls the children: a build, or one repeat of runs, that exceeds the timeout is killed (BUILD_TIMEOUT /
 * RUN_TIMEOUT), a
 * child that dies is a RUNTIME_DEVICE error (or COMPILE_HOST when it died building); the timing lock of a
 * child that died holding it is released. Tuning goes on in every case.
 *
 * The default schedule failing does not stop tuning either: it is tried twice (a timeout under load may pass
 * the second time); when it wrote its output before failing (a timeout while timed) that output is still the
 * reference, else the first config that runs provides the reference instead, and the default's cost is
 * unknown. A result's cost is its fastest repeat: other processes on the machine only ever slow a repeat down,
 * so the minimum is the most stable estimate on a shared machine (the mean follows the neighbours' load). */
#include <errno.h>
#include <math.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "autotvm/autotvm.h"

enum { PH_IDLE, PH_BUILD, PH_WAIT, PH_RUN, PH_DONE };

typedef struct Slot {
  volatile int phase;
  volatile int ref_ready; /* a reference child has written the reference outputs */
  volatile double phase_start; /* CLOCK_MONOTONIC seconds */
  MeasureResult res;
} Slot;

typedef struct Shared {
  sem_t lock; /* the timing lock */
  Slot slots[];
} Shared;

struct Measurer {
  const TuneTasks *ts;
  const TuneTask *task;
  MeasureOptions o;
  int nin, nout;
  void **in;            /* shared: group inputs */
  void **ref;           /* shared: reference outputs */
  int64_t *in_bytes, *out_bytes;
  mlc_dtype *out_dtype;
  void *inbuf, *refmap; /* the inputs (private, inherited by the children), the shared reference */
  size_t inbuf_size, refmap_size;
  Shared *sh;
  size_t sh_size;
  bool have_ref;       /* the reference outputs are written */
  MeasureResult dflt;  /* the default schedule's first measurement */
};

const MeasureResult *tune_measurer_default(const Measurer *m) { return &m->dflt; }

double tune_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static double mono(void) { return tune_clock(); }

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

double tune_result_cost(const MeasureResult *r) {
  if (r->error_no != TUNE_NO_ERROR || r->ncosts <= 0) return 1e9;
  double best = 1e9;
  for (int i = 0; i < r->ncosts; i++)
    if (r->costs[i] > 0 && r->costs[i] < best) best = r->costs[i];
  return best;
}

static void fill_random(void *p, mlc_dtype dt, int64_t n, uint64_t *rng) {
  switch (dt) {
  case MLC_F32:
    for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)(2 * tune_rand_unit(rng) - 1);
    break;
  case MLC_F64:
    for (int64_t i = 0; i < n; i++) ((double *)p)[i] = 2 * tune_rand_unit(rng) - 1;
    break;
  default: { /* small non-negative integers (valid as indices of small axes), 0/1 for bool */
    int es = mlc_dtype_size(dt);
    memset(p, 0, (size_t)(n * es));
    for (int64_t i = 0; i < n; i++) ((unsigned char *)p)[i * es] = (unsigned char)tune_rand_below(rng, dt == MLC_BOOL ? 2 : 3);
    break;
  }
  }
}

static bool close_enough(double a, double b, double tol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  return fabs(a - b) <= tol + tol * fabs(b);
}

/* true when got matches ref (floats within a tolerance for reassociated reductions, others exactly) */
static bool outputs_match(const void *got, const void *ref, mlc_dtype dt, int64_t nbytes, char *msg, size_t cap) {
  int es = mlc_dtype_size(dt);
  int64_t n = es > 0 ? nbytes / es : 0;
  for (int64_t i = 0; i < n; i++) {
    double a, b, tol;
    switch (dt) {
    case MLC_F32: a = ((const float *)got)[i]; b = ((const float *)ref)[i]; tol = 1e-3; break;
    case MLC_F64: a = ((const double *)got)[i]; b = ((const double *)ref)[i]; tol = 1e-6; break;
    case MLC_F16:
      a = rt_f16_to_f32(((const uint16_t *)got)[i]);
      b = rt_f16_to_f32(((const uint16_t *)ref)[i]);
      tol = 2e-2;
      break;
    case MLC_BF16: {
      uint32_t x = (uint32_t)((const uint16_t *)got)[i] << 16, y = (uint32_t)((const uint16_t *)ref)[i] << 16;
      float fx, fy;
      memcpy(&fx, &x, 4);
      memcpy(&fy, &y, 4);
      a = fx, b = fy, tol = 5e-2;
      break;
    }
    default:
      if (memcmp((const char *)got + i * es, (const char *)ref + i * es, (size_t)es)) {
        snprintf(msg, cap, "wrong answer at element %lld", (long long)i);
        return false;
      }
      continue;
    }
    if (!close_enough(a, b, tol)) {
      snprintf(msg, cap, "wrong answer at element %lld: %g, expected %g", (long long)i, a, b);
      return false;
    }
  }
  return true;
}

/* ---------------------------------------------------------------- the child */

static void set_phase(Slot *s, int ph) {
  s->phase_start = mono();
  __atomic_store_n(&s->phase, ph, __ATOMIC_SEQ_CST);
}

static void child_fail(Slot *s, int err, const char *msg, double t0) {
  s->res.error_no = err;
  snprintf(s->res.msg, sizeof s->res.msg, "%s", msg);
  s->res.all_cost = mono() - t0;
  set_phase(s, PH_DONE);
  _exit(0);
}

/* builds config index (-1: the default) and runs it; with reference set, stores the output as the reference */
/* Evicts [p, p + n) from every cache level (TVM's cache_flush_cpu_non_first_arg): clflush on x86-64,
 * dc civac on AArch64; elsewhere nothing is flushed. */
static void flush_range(const void *p, size_t n) {
#if defined(__x86_64__)
  for (const char *c = p, *end = c + n; c < end; c += 64) __asm__ volatile("clflush (%0)" ::"r"(c) : "memory");
  __asm__ volatile("mfence" ::: "memory");
#elif defined(__aarch64__)
  for (const char *c = p, *end = c + n; c < end; c += 64) __asm__ volatile("dc civac, %0" ::"r"(c) : "memory");
  __asm__ volatile("dsb sy" ::: "memory");
#else
  (void)p, (void)n;
#endif
}

/* Seconds that `number` runs of fn take. With cache_flush every buffer but the first input (in a model the
 * previous kernel's output, likely still cached) is flushed before each run, outside the timed span: in a
 * model a conv's weights come from memory, not from the cache its own previous run left warm, and a
 * schedule that rereads them (a loop order, a channel split) must pay for that here too. */
static double timed_runs(const Measurer *m, mlc_kernel_fn fn, void **bufs, mlc_kernel_ctx *ctx, int number,
                         int *rc) {
  if (!m->o.cache_flush) {
    double t1 = mono();
    for (int k = 0; k < number; k++) *rc |= fn(bufs, NULL, ctx);
    return mono() - t1;
  }
  double el = 0;
  for (int k = 0; k < number; k++) {
    for (int i = 1; i < m->nin; i++) flush_range(bufs[i], (size_t)m->in_bytes[i]);
    for (int i = 0; i < m->nout; i++) flush_range(bufs[m->nin + i], (size_t)m->out_bytes[i]);
    double t1 = mono();
    *rc |= fn(bufs, NULL, ctx);
    el += mono() - t1;
  }
  return el;
}

static void child_main(Measurer *m, int64_t index, Slot *s, bool reference) {
  double t0 = mono();
  set_phase(s, PH_BUILD);
  Arena *a = arena_new();
  TeCtx tc = {.arena = a, .target = &m->ts->target};
  TopiConfig cfg;
  if (index >= 0) tune_config_from_index(&m->task->space, index, &cfg);
  Diag d = {0};
  TirFunc *f = mlc_group_kernel(&tc, m->ts->graph, m->task->group, index >= 0 ? &cfg : NULL, &d);
  if (!f) child_fail(s, TUNE_ERR_INSTANTIATION, d.msg, t0);
  CgModule *cm = cg_module_new(&m->ts->target, "mlc_tune", &d);
  CgJit *jit = NULL;
  if (!cm || cg_add_func(cm, f, &d) != MLC_OK || cg_jit_create(cm, &jit, &d) != MLC_OK)
    child_fail(s, TUNE_ERR_COMPILE_HOST, d.msg, t0);
  mlc_kernel_fn fn = (mlc_kernel_fn)cg_jit_lookup(jit, f->name);
  if (!fn) child_fail(s, TUNE_ERR_COMPILE_HOST, cg_jit_error(jit), t0);
  void **bufs = calloc((size_t)(m->nin + m->nout + 1), sizeof(void *));
  for (int i = 0; i < m->nin; i++) bufs[i] = m->in[i];
  for (int i = 0; i < m->nout; i++) {
    if (posix_memalign(&bufs[m->nin + i], 64, round64((size_t)m->out_bytes[i]) + 64))
      child_fail(s, TUNE_ERR_RUNTIME, "out of memory", t0);
    memset(bufs[m->nin + i], 0xff, (size_t)m->out_bytes[i]); /* NaN: unwritten elements are caught */
  }
  mlc_pool *pool = mlc_pool_create(m->o.threads);
  mlc_kernel_ctx ctx;
  mlc_pool_kernel_ctx(pool, &ctx);

  set_phase(s, PH_WAIT);
  while (sem_wait(&m->sh->lock) != 0 && errno == EINTR) {
  }
  set_phase(s, PH_RUN);
  char msg[200];
  int rc = fn(bufs, NULL, &ctx);
  if (rc != 0) {
    snprintf(msg, sizeof msg, "kernel returned %d", rc);
    sem_post(&m->sh->lock);
    child_fail(s, TUNE_ERR_RUNTIME, msg, t0);
  }
  if (reference) {
    for (int i = 0; i < m->nout; i++) memcpy(m->ref[i], bufs[m->nin + i], (size_t)m->out_bytes[i]);
    __atomic_store_n(&s->ref_ready, 1, __ATOMIC_SEQ_CST);
  } else {
    for (int i = 0; i < m->nout; i++)
      if (!outputs_match(bufs[m->nin + i], m->ref[i], m->out_dtype[i], m->out_bytes[i], msg, sizeof msg)) {
        sem_post(&m->sh->lock);
        child_fail(s, TUNE_ERR_WRONG_ANSWER, msg, t0);
      }
  }
  /* number grows until one repeat lasts min_repeat_ms, its cache flushes included: a tiny kernel's runs are
   * outlasted by their flushes (clflush of every buffer), and growing until the kernel's own time alone reached
   * it made one measurement take seconds (a 3 s budget over 12 s on a Sapphire Rapids host) */
  int number = m->o.number > 0 ? m->o.number : 1;
  double min_s = m->o.min_repeat_ms / 1000.0;
  for (int tries = 0; tries < 8; tries++) {
    s->phase_start = mono(); /* the timeout bounds each batch of runs, not the whole timing */
    double el = timed_runs(m, fn, bufs, &ctx, number, &rc);
    el = fmax(el, mono() - s->phase_start);
    if (el >= min_s || rc) break;
    double grow = el > 0 ? min_s / el * 1.2 : 10;
    number = (int)(number * (grow > 10 ? 10 : grow < 1.5 ? 1.5 : grow)) + 1;
  }
  int repeat = m->o.repeat < 1 ? 1 : m->o.repeat > TUNE_MAX_REPEAT ? TUNE_MAX_REPEAT : m->o.repeat;
  for (int r = 0; r < repeat; r++) {
    s->phase_start = mono();
    s->res.costs[r] = timed_runs(m, fn, bufs, &ctx, number, &rc) / number;
  }
  s->res.ncosts = repeat;
  sem_post(&m->sh->lock);
  if (rc) child_fail(s, TUNE_ERR_RUNTIME, "kernel returned an error while timed", t0);
  s->res.error_no = TUNE_NO_ERROR;
  s->res.all_cost = mono() - t0;
  set_phase(s, PH_DONE);
  _exit(0);
}

/* ---------------------------------------------------------------- the parent */

typedef struct Running {
  pid_t pid;
  int item; /* index into the batch */
  double start;
} Running;

static void finish(Measurer *m, Slot *s, int status, bool killed, int killed_phase, double start, MeasureResult *out) {
  if (killed) {
    memset(out, 0, sizeof *out);
    out->error_no = killed_phase == PH_RUN ? TUNE_ERR_RUN_TIMEOUT : TUNE_ERR_BUILD_TIMEOUT;
    snprintf(out->msg, sizeof out->msg, "%s took longer than %.1f s", killed_phase == PH_RUN ? "run" : "build",
             m->o.timeout);
  } else if (s->phase == PH_DONE) {
    *out = s->res;
  } else {
    memset(out, 0, sizeof *out);
    int ph = s->phase;
    out->error_no = ph == PH_BUILD ? TUNE_ERR_COMPILE_HOST : TUNE_ERR_RUNTIME;
    if (WIFSIGNALED(status))
      snprintf(out->msg, sizeof out->msg, "%s crashed (signal %d)", ph == PH_BUILD ? "build" : "run",
               WTERMSIG(status));
    else
      snprintf(out->msg, sizeof out->msg, "child exited with status %d", WEXITSTATUS(status));
  }
  /* a child that died holding the timing lock */
  if ((killed && killed_phase == PH_RUN) || (!killed && s->phase == PH_RUN)) sem_post(&m->sh->lock);
  out->all_cost = mono() - start;
  out->timestamp = wall();
}

/* measures n configs (index -1: the default schedule as reference) with up to o.parallel children at once */
static void run_batch(Measurer *m, int n, const int64_t *indices, bool reference, MeasureResult *res) {
  int par = m->o.parallel < 1 ? 1 : m->o.parallel;
  Running *run = calloc((size_t)par, sizeof *run);
  for (int i = 0; i < par; i++) run[i].pid = 0;
  int next = 0, active = 0;
  fflush(NULL); /* nothing buffered is written twice by a child */
  while (next < n || active > 0) {
    for (int sl = 0; sl < par && next < n; sl++) {
      if (run[sl].pid) continue;
      Slot *s = &m->sh->slots[sl];
      memset(s, 0, sizeof *s);
      s->phase = PH_IDLE;
      pid_t pid = fork();
      if (pid == 0) child_main(m, indices[next], s, reference);
      if (pid < 0) {
        memset(&res[next], 0, sizeof res[next]);
        res[next].error_no = TUNE_ERR_UNKNOWN;
        snprintf(res[next].msg, sizeof res[next].msg, "fork: %s", strerror(errno));
        res[next].timestamp = wall();
        next++;
        continue;
      }
      run[sl] = (Running){pid, next++, mono()};
      active++;
    }
    bool any = false;
    for (int sl = 0; sl < par; sl++) {
      if (!run[sl].pid) continue;
      Slot *s = &m->sh->slots[sl];
      int status = 0;
      pid_t r = waitpid(run[sl].pid, &status, WNOHANG);
      bool killed = false;
      int kph = s->phase;
      if (r == 0 && (kph == PH_BUILD || kph == PH_RUN) && mono() - s->phase_start > m->o.timeout) {
        kill(run[sl].pid, SIGKILL);
        waitpid(run[sl].pid, &status, 0);
        killed = true;
        r = run[sl].pid;
      }
      if (r == run[sl].pid || (r < 0 && errno == ECHILD)) {
        finish(m, s, status, killed, kph, run[sl].start, &res[run[sl].item]);
        run[sl].pid = 0;
        active--;
        any = true;
      }
    }
    if (!any && active > 0) usleep(2000);
  }
  free(run);
}

/* one child in reference mode; true when it wrote the reference (even if it failed while timed) */
static bool run_reference(Measurer *m, int64_t index, MeasureResult *res) {
  run_batch(m, 1, &index, true, res);
  if (__atomic_load_n(&m->sh->slots[0].ref_ready, __ATOMIC_SEQ_CST)) m->have_ref = true;
  return m->have_ref;
}

void tune_measure_batch(Measurer *m, int n, const int64_t *indices, MeasureResult *res) {
  int i = 0;
  /* no reference yet (the default schedule failed): configs one at a time until one writes it */
  while (!m->have_ref && i < n) {
    run_reference(m, indices[i], &res[i]);
    i++;
  }
  if (i < n) run_batch(m, n - i, indices + i, false, res + i);
}

void tune_measure_default(Measurer *m, MeasureResult *res) {
  if (m->have_ref) run_batch(m, 1, &(int64_t){-1}, false, res);
  else run_reference(m, -1, res);
}

static void *shared_map(size_t n) {
  void *p = mmap(NULL, n ? n : 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void tune_measurer_free(Measurer *m) {
  if (!m) return;
  if (m->sh) {
    sem_destroy(&m->sh->lock);
    munmap(m->sh, m->sh_size);
  }
  free(m->inbuf);
  if (m->refmap) munmap(m->refmap, m->refmap_size);
  free(m->in);
  free(m->ref);
  free(m->in_bytes);
  free(m->out_bytes);
  free(m->out_dtype);
  free(m);
}

mlc_status tune_measurer_new(const TuneTasks *ts, const TuneTask *task, const MeasureOptions *o, Measurer **out,
                             Diag *d) {
  Measurer *m = calloc(1, sizeof *m);
  if (!m) return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  m->ts = ts;
  m->task = task;
  m->o = *o;
  if (m->o.timeout <= 0) m->o.timeout = 10;
  const FusedGroup *g = task->group;
  m->nin = g->inputs.n;
  m->nout = g->outputs.n;
  m->in = calloc((size_t)m->nin + 1, sizeof(void *));
  m->ref = calloc((size_t)m->nout + 1, sizeof(void *));
  m->in_bytes = calloc((size_t)m->nin + 1, sizeof(int64_t));
  m->out_bytes = calloc((size_t)m->nout + 1, sizeof(int64_t));
  m->out_dtype = calloc((size_t)m->nout + 1, sizeof(mlc_dtype));
  for (int i = 0; i < m->nin; i++) m->inbuf_size += round64((size_t)tt_nbytes(&g->inputs.v[i]->type)) + 64;
  for (int i = 0; i < m->nout; i++) m->refmap_size += round64((size_t)tt_nbytes(&g->outputs.v[i]->type)) + 64;
  int par = o->parallel < 1 ? 1 : o->parallel;
  m->sh_size = sizeof(Shared) + sizeof(Slot) * (size_t)par;
  /* written before the children are forked and only read by them, so private memory (each child sees the
   * parent's pages) allocated as the runtime allocates weights (on huge pages): a kernel that streams its
   * weights is timed with the TLB behaviour it has in the model */
  m->inbuf = rt_alloc_buffer(m->inbuf_size);
  m->refmap = shared_map(m->refmap_size);
  m->sh = shared_map(m->sh_size);
  if (!m->in || !m->ref || !m->in_bytes || !m->out_bytes || !m->out_dtype || !m->inbuf || !m->refmap || !m->sh) {
    tune_measurer_free(m);
    return diag_set(d, MLC_ERR_INTERNAL, "tuning: cannot map %zu bytes of shared memory",
                    m->inbuf_size + m->refmap_size);
  }
  if (sem_init(&m->sh->lock, 1, 1) != 0) {
    m->sh_size = 0;
    munmap(m->sh, sizeof(Shared) + sizeof(Slot) * (size_t)par);
    m->sh = NULL;
    tune_measurer_free(m);
    return diag_set(d, MLC_ERR_INTERNAL, "tuning: sem_init: %s", strerror(errno));
  }
  uint64_t rng = o->seed ^ 0x5eedULL;
  char *p = m->inbuf;
  for (int i = 0; i < m->nin; i++) {
    const Value *v = g->inputs.v[i];
    int64_t nb = tt_nbytes(&v->type);
    m->in[i] = p;
    m->in_bytes[i] = nb;
    if (v->data)
      memcpy(p, v->data, (size_t)nb);
    else
      fill_random(p, v->type.dtype, tt_numel(&v->type), &rng);
    p += round64((size_t)nb) + 64;
  }
  p = m->refmap;
  for (int i = 0; i < m->nout; i++) {
    m->out_bytes[i] = tt_nbytes(&g->outputs.v[i]->type);
    m->out_dtype[i] = g->outputs.v[i]->type.dtype;
    m->ref[i] = p;
    p += round64((size_t)m->out_bytes[i]) + 64;
  }
  run_reference(m, -1, &m->dflt);
  if (m->dflt.error_no != TUNE_NO_ERROR) { /* once more: a timeout under load may pass now */
    MeasureResult again;
    if (m->have_ref) run_batch(m, 1, &(int64_t){-1}, false, &again);
    else run_reference(m, -1, &again);
    if (again.error_no == TUNE_NO_ERROR) m->dflt = again;
  }
  *out = m;
  return MLC_OK;
}
