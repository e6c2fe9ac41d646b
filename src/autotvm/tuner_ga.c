/* The genetic tuner (TVM's GATuner): configs are genes (one choice position per knob). Until a population
 * has been measured it proposes random configs; then each child takes every knob from one of two parents
 * drawn from the best POP measured configs with probability proportional to their throughput (uniform
 * crossover), and each knob mutates to a random choice with probability MUTATION. Children already visited
 * are redrawn; after RETRIES a random config is proposed instead. */
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"

#define POP 16
#define MUTATION 0.1
#define RETRIES 50

typedef struct Member {
  int64_t index;
  double score; /* GFLOP/s, 0 when it failed */
} Member;

typedef struct GaState {
  Member *v;
  int n, cap;
} GaState;

static int by_score(const void *a, const void *b) {
  const Member *x = a, *y = b;
  return x->score < y->score ? 1 : x->score > y->score ? -1 : (x->index > y->index) - (x->index < y->index);
}

static const Member *pick(Tuner *t, const Member *pop, int np, double total) {
  if (total <= 0) return &pop[tune_rand_below(&t->rng, np)];
  double r = tune_rand_unit(&t->rng) * total;
  for (int i = 0; i < np; i++) {
    r -= pop[i].score;
    if (r <= 0) return &pop[i];
  }
  return &pop[np - 1];
}

static int ga_batch(Tuner *t, int n, int64_t *out) {
  GaState *s = t->state;
  if (s->n < POP) return tune_random_batch(t, n, out);
  qsort(s->v, (size_t)s->n, sizeof(Member), by_score);
  int np = s->n < POP ? s->n : POP;
  double total = 0;
  for (int i = 0; i < np; i++) total += s->v[i].score;
  const TopiConfigSpace *sp = &t->task->space;
  int k = 0;
  while (k < n && t->visited.n < t->task->space_size) {
    int64_t idx = -1;
    for (int tries = 0; tries < RETRIES && idx < 0; tries++) {
      int da[TOPI_MAX_KNOBS], db[TOPI_MAX_KNOBS], dc[TOPI_MAX_KNOBS];
      tune_index_digits(sp, pick(t, s->v, np, total)->index, da);
      tune_index_digits(sp, pick(t, s->v, np, total)->index, db);
      for (int j = 0; j < sp->nknobs; j++) {
        dc[j] = tune_rand_unit(&t->rng) < 0.5 ? da[j] : db[j];
        if (tune_rand_unit(&t->rng) < MUTATION) dc[j] = (int)tune_rand_below(&t->rng, sp->knobs[j].nchoices);
      }
      int64_t c = tune_index_from_digits(sp, dc);
      if (!tune_set_has(&t->visited, c)) idx = c;
    }
    if (idx < 0) {
      int got = tune_random_batch(t, 1, &out[k]);
      if (!got) break;
      k++;
      continue;
    }
    tune_set_add(&t->visited, idx);
    out[k++] = idx;
  }
  return k;
}

static void ga_update(Tuner *t, int n, const int64_t *idx, const MeasureResult *res) {
  GaState *s = t->state;
  for (int i = 0; i < n; i++) {
    if (s->n == s->cap) {
      int nc = s->cap ? 2 * s->cap : 64;
      Member *nv = realloc(s->v, sizeof(Member) * (size_t)nc);
      if (!nv) return;
      s->v = nv;
      s->cap = nc;
    }
    double c = tune_result_cost(&res[i]);
    s->v[s->n++] = (Member){idx[i], c < 1e9 ? t->task->flops / c * 1e-9 : 0};
  }
}

static void ga_free(Tuner *t) {
  GaState *s = t->state;
  if (s) free(s->v);
  free(s);
}

Tuner *tune_tuner_ga_init(Tuner *t, Diag *d) {
  t->state = calloc(1, sizeof(GaState));
  if (!t->state) {
    free(t);
    diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  t->next_batch = ga_batch;
  t->update = ga_update;
  t->free = ga_free;
  return t;
}
