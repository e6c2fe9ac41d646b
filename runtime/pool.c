/* Thread pool: persistent workers that run the parallel loops of generated kernels.
 *
 * Algorithm: a launch splits [0, extent) into npieces = min(extent, threads x POOL_PIECES) contiguous pieces and
 * gives each thread (the caller is thread 0) a contiguous run of them, as one 64-bit range word per thread:
 * (sequence << 40) | (lo << 20) | hi. A thread takes its own pieces from the front (CAS lo + 1); when it has none
 * left it steals from the back of the others' runs (CAS hi - 1). While the cores run at the same speed every thread
 * works through its own run in order, as a static split would (the same locality); when one core is slower (an SMT
 * sibling or a neighbour busy on a shared host, a worker that wakes late because there are more threads than free
 * cores) the others take over the tail of its run, so a launch takes about total / (sum of the speeds), not
 * the slowest thread's share. The job is published as: body/closure/extent fields and the range words, then the
 * job sequence word (release). A successful CAS proves the job is still current: the launcher cannot start the
 * next job before `remaining` (pieces not yet finished) reaches 0, and the sequence in the range word rules out ABA
 * (a thread would have to stall between its load and its CAS across 2^24 launches). Workers spin on the sequence
 * word for a short while (POOL_SPIN_NS), then sleep on a condition variable. Lost wake-ups are excluded
 * Dekker-style: a sleeper increments `sleepers` and re-checks the sequence under the mutex (seq_cst); the launcher
 * stores the sequence, then reads `sleepers` (seq_cst) and broadcasts under the mutex only when someone sleeps.
 * The caller, out of pieces, spins on `remaining`, then blocks on done_cv with the same handshake
 * (launcher_waiting vs. the last decrement). A launch from inside a pool thread (nested parallelism) runs serially
 * on that thread. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/rt.h"

#define POOL_MAX_THREADS 1024
#define POOL_PIECES 16  /* pieces per thread: the tail a faster thread can take over is 1/16 of a thread's share */
#define RANGE_BITS 20   /* lo and hi of a range word; POOL_MAX_THREADS x POOL_PIECES < 2^20 */
#define RANGE_MASK ((1u << RANGE_BITS) - 1)
#define SEQ_MASK 0xffffffu /* the sequence bits of a range word (the top 24) */
#define POOL_SPIN_NS 300000 /* a waiting thread spins this long (ns) before it blocks: covers the gap between
                              * back-to-back kernel launches without burning a core when the model is idle */

struct mlc_pool {
  int nthreads; /* including the calling thread */
  pthread_t *threads;
  bool *started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_mutex_t launch_mu; /* serialises launches from different outside threads */
  pthread_mutex_t done_mu;   /* the launcher blocks on done_cv when the workers are slow (oversubscription) */
  pthread_cond_t done_cv;
  atomic_int launcher_waiting;
  _Atomic uint64_t job;      /* the sequence number of the latest job */
  struct pool_range { _Alignas(64) _Atomic uint64_t word; } *ranges; /* per thread: (seq << 40) | lo << 20 | hi */
  atomic_int sleepers;
  atomic_int remaining;
  atomic_int err;
  atomic_bool stop;
  /* the current job; written before the job word is published */
  mlc_parallel_body body;
  void *closure;
  int64_t extent;
  int npieces;
};

typedef struct pool_worker_arg {
  mlc_pool *pool;
  int index;
} pool_worker_arg;

static _Thread_local bool in_pool_thread; /* set in workers and in a launching caller */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static inline int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* spins until *word != old or the spin time is up; returns the last value read */
static uint64_t spin_while_equal(_Atomic uint64_t *word, uint64_t old) {
  int64_t deadline = 0;
  for (unsigned i = 1;; i++) {
    uint64_t v = atomic_load_explicit(word, memory_order_acquire);
    if (v != old) return v;
    if ((i & 63) == 0) {
      int64_t t = now_ns();
      if (!deadline) deadline = t + POOL_SPIN_NS;
      else if (t > deadline) return v;
    }
    cpu_relax();
  }
}

static void spin_until_zero(atomic_int *v) {
  int64_t deadline = 0;
  for (unsigned i = 1; atomic_load_explicit(v, memory_order_acquire) > 0; i++) {
    if ((i & 63) == 0) {
      int64_t t = now_ns();
      if (!deadline) deadline = t + POOL_SPIN_NS;
      else if (t > deadline) return;
    }
    cpu_relax();
  }
}

static inline void chunk_range(int64_t extent, int nchunks, int i, int64_t *b, int64_t *e) {
  int64_t base = extent / nchunks, rem = extent % nchunks;
  *b = (int64_t)i * base + (i < rem ? i : rem);
  *e = *b + base + (i < rem ? 1 : 0);
}

static void record_error(mlc_pool *p, int32_t rc) {
  int expected = 0;
  if (rc != 0) atomic_compare_exchange_strong(&p->err, &expected, rc);
}

static inline uint64_t range_word(uint64_t seq, unsigned lo, unsigned hi) {
  return ((seq & SEQ_MASK) << 40) | ((uint64_t)lo << RANGE_BITS) | hi;
}

/* Takes one piece of job `seq` from thread t's run: the first (its owner) or the last (a thief). */
static bool take_piece(mlc_pool *p, int t, bool front, uint64_t seq, unsigned *piece) {
  _Atomic uint64_t *w = &p->ranges[t].word;
  uint64_t c = atomic_load_explicit(w, memory_order_acquire);
  for (;;) {
    unsigned lo = (unsigned)(c >> RANGE_BITS) & RANGE_MASK, hi = (unsigned)c & RANGE_MASK;
    if ((c >> 40) != (seq & SEQ_MASK) || lo >= hi) return false;
    uint64_t next = front ? range_word(seq, lo + 1, hi) : range_word(seq, lo, hi - 1);
    if (atomic_compare_exchange_weak_explicit(w, &c, next, memory_order_acq_rel, memory_order_acquire)) {
      *piece = front ? lo : hi - 1;
      return true;
    }
  }
}

static void run_piece(mlc_pool *p, unsigned piece) {
  int64_t b, e;
  chunk_range(p->extent, p->npieces, (int)piece, &b, &e);
  record_error(p, p->body(b, e, p->closure));
  if (atomic_fetch_sub(&p->remaining, 1) == 1 && atomic_load(&p->launcher_waiting)) {
    pthread_mutex_lock(&p->done_mu);
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->done_mu);
  }
}

/* Thread self runs its own pieces of job seq, then steals the others' until none is left. */
static void run_pieces(mlc_pool *p, int self, uint64_t seq) {
  unsigned piece;
  while (take_piece(p, self, true, seq, &piece)) run_piece(p, piece);
  for (bool found = true; found;) {
    found = false;
    for (int k = 1; k < p->nthreads; k++) {
      int victim = (self + k) % p->nthreads;
      while (take_piece(p, victim, false, seq, &piece)) {
        run_piece(p, piece);
        found = true;
      }
    }
  }
}

static void *worker_main(void *argp) {
  pool_worker_arg *arg = argp;
  mlc_pool *p = arg->pool;
  int arg_index = arg->index;
  free(arg);
  in_pool_thread = true;
  uint64_t seen = 0; /* the sequence before any launch: a worker that starts late must still see job 1 */
  for (;;) {
    uint64_t job = spin_while_equal(&p->job, seen);
    if (job == seen) {
      pthread_mutex_lock(&p->mu);
      atomic_fetch_add(&p->sleepers, 1);
      while ((job = atomic_load(&p->job)) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
      atomic_fetch_sub(&p->sleepers, 1);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) return NULL;
    seen = job;
    run_pieces(p, arg_index, job);
  }
}

static int default_threads(void) {
  const char *env = getenv("MLC_NUM_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v > 0) return v > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)v;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}

mlc_pool *mlc_pool_create(int num_threads) {
  int n = num_threads > 0 ? (num_threads > POOL_MAX_THREADS ? POOL_MAX_THREADS : num_threads) : default_threads();
  mlc_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nthreads = n;
  p->threads = calloc((size_t)n, sizeof *p->threads);
  p->started = calloc((size_t)n, sizeof *p->started);
  p->ranges = aligned_alloc(64, (size_t)n * sizeof *p->ranges);
  if (!p->threads || !p->started || !p->ranges) {
    free(p->threads);
    free(p->started);
    free(p->ranges);
    free(p);
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  pthread_mutex_init(&p->launch_mu, NULL);
  pthread_mutex_init(&p->done_mu, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  atomic_init(&p->job, 0);
  for (int i = 0; i < n; i++) atomic_init(&p->ranges[i].word, 0);
  for (int i = 1; i < n; i++) {
    pool_worker_arg *arg = malloc(sizeof *arg);
    if (!arg) break;
    arg->pool = p;
    arg->index = i;
    if (pthread_create(&p->threads[i], NULL, worker_main, arg) != 0) {
      free(arg);
      break;
    }
    p->started[i] = true;
  }
  /* if thread creation failed part-way, run with the threads that did start */
  int started = 1;
  while (started < n && p->started[started]) started++;
  p->nthreads = started;
  return p;
}

void mlc_pool_destroy(mlc_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, true);
  atomic_fetch_add(&p->job, 1);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->nthreads; i++)
    if (p->started[i]) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->launch_mu);
  pthread_mutex_destroy(&p->done_mu);
  pthread_cond_destroy(&p->done_cv);
  free(p->threads);
  free(p->started);
  free(p->ranges);
  free(p);
}

int mlc_pool_threads(const mlc_pool *p) { return p ? p->nthreads : 1; }

static int32_t serial_launch(mlc_kernel_ctx *ctx, mlc_parallel_body body, void *closure, int64_t extent) {
  return extent > 0 ? body(0, extent, closure) : 0;
}

static int32_t pool_launch(mlc_kernel_ctx *ctx, mlc_parallel_body body, void *closure, int64_t extent) {
  if (extent <= 0) return 0;
  mlc_pool *p = ctx ? ctx->pool : NULL;
  if (!p || p->nthreads <= 1 || extent == 1 || in_pool_thread) return body(0, extent, closure);
  int64_t most = (int64_t)p->nthreads * POOL_PIECES;
  int npieces = extent < most ? (int)extent : (int)most;
  pthread_mutex_lock(&p->launch_mu);
  in_pool_thread = true;
  p->body = body;
  p->closure = closure;
  p->extent = extent;
  p->npieces = npieces;
  atomic_store_explicit(&p->err, 0, memory_order_relaxed);
  atomic_store_explicit(&p->remaining, npieces, memory_order_relaxed);
  uint64_t seq = atomic_load_explicit(&p->job, memory_order_relaxed) + 1;
  for (int t = 0; t < p->nthreads; t++) {
    int64_t lo, hi;
    chunk_range(npieces, p->nthreads, t, &lo, &hi);
    atomic_store_explicit(&p->ranges[t].word, range_word(seq, (unsigned)lo, (unsigned)hi), memory_order_relaxed);
  }
  atomic_store(&p->job, seq); /* seq_cst (a release of the fields above): pairs with the sleepers check */
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
  run_pieces(p, 0, seq);
  spin_until_zero(&p->remaining);
  if (atomic_load(&p->remaining) > 0) {
    pthread_mutex_lock(&p->done_mu);
    atomic_store(&p->launcher_waiting, 1);
    while (atomic_load(&p->remaining) > 0) pthread_cond_wait(&p->done_cv, &p->done_mu);
    atomic_store(&p->launcher_waiting, 0);
    pthread_mutex_unlock(&p->done_mu);
  }
  int32_t rc = atomic_load_explicit(&p->err, memory_order_relaxed);
  in_pool_thread = false;
  pthread_mutex_unlock(&p->launch_mu);
  return rc;
}

void mlc_pool_kernel_ctx(mlc_pool *pool, mlc_kernel_ctx *ctx) {
  memset(ctx, 0, sizeof *ctx);
  ctx->parallel_launch = pool ? pool_launch : serial_launch;
  ctx->pool = pool;
  ctx->num_threads = pool ? pool->nthreads : 1;
}
