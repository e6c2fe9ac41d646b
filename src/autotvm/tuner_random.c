/* The simple tuners and the tuner factory (TVM's RandomTuner and GridSearchTuner).
 *   random: uniformly drawn configs never proposed before (rejection sampling; once most of the space is
 *           visited, the next unvisited index after a random start);
 *   grid:   indices in order 0, 1, 2, ...
 * Both ignore results. */
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"

int tune_random_batch(Tuner *t, int n, int64_t *out) {
  int64_t size = t->task->space_size;
  int k = 0;
  while (k < n && t->visited.n < size) {
    int64_t idx = -1;
    for (int tries = 0; tries < 64 && idx < 0; tries++) {
      int64_t c = tune_rand_below(&t->rng, size);
      if (!tune_set_has(&t->visited, c)) idx = c;
    }
    if (idx < 0) { /* crowded: scan on from a random start */
      int64_t start = tune_rand_below(&t->rng, size);
      for (int64_t j = 0; j < size && idx < 0; j++)
        if (!tune_set_has(&t->visited, (start + j) % size)) idx = (start + j) % size;
    }
    if (idx < 0) break;
    tune_set_add(&t->visited, idx);
    out[k++] = idx;
  }
  return k;
}

static void ignore_update(Tuner *t, int n, const int64_t *idx, const MeasureResult *res) {}

static int grid_batch(Tuner *t, int n, int64_t *out) {
  int64_t *next = t->state;
  int k = 0;
  while (k < n && *next < t->task->space_size) {
    int64_t i = (*next)++;
    if (tune_set_add(&t->visited, i)) out[k++] = i;
  }
  return k;
}

static void free_state(Tuner *t) { free(t->state); }

Tuner *tune_tuner_xgb_init(Tuner *t, Diag *d); /* tuner_xgb.c */
Tuner *tune_tuner_ga_init(Tuner *t, Diag *d);  /* tuner_ga.c */

Tuner *tune_tuner_new(const char *kind, const TuneTasks *ts, const TuneTask *task, uint64_t seed, Diag *d) {
  Tuner *t = calloc(1, sizeof *t);
  if (!t) {
    diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  t->kind = kind;
  t->tasks = ts;
  t->task = task;
  t->rng = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)task->index + 1;
  t->update = ignore_update;
  t->free = NULL;
  if (!strcmp(kind, "random")) {
    t->next_batch = tune_random_batch;
    return t;
  }
  if (!strcmp(kind, "grid")) {
    t->state = calloc(1, sizeof(int64_t));
    t->next_batch = grid_batch;
    t->free = free_state;
    return t;
  }
  if (!strcmp(kind, "ga")) return tune_tuner_ga_init(t, d);
  if (!strcmp(kind, "xgb")) return tune_tuner_xgb_init(t, d);
  free(t);
  diag_set(d, MLC_ERR_USAGE, "unknown tuner '%s': expected random, grid, ga or xgb", kind);
  return NULL;
}

void tune_tuner_free(Tuner *t) {
  if (!t) return;
  if (t->free) t->free(t);
  tune_set_free(&t->visited);
  free(t);
}
