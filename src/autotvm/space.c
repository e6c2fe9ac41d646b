/* Config spaces of schedule templates (TVM's ConfigSpace): a config is one choice per knob, and its index is
 * the mixed-radix number whose digit k is the position of knob k's choice (knob 0 the fastest digit). Also
 * the index hash set the tuners keep of visited configs (open addressing, linear probing) and the one random
 * generator (splitmix64), so a fixed --seed reproduces a run. */
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"

#define SPACE_MAX (INT64_MAX / 2)

int64_t tune_space_size(const TopiConfigSpace *s) {
  int64_t n = 1;
  for (int k = 0; k < s->nknobs; k++) {
    int64_t c = s->knobs[k].nchoices > 0 ? s->knobs[k].nchoices : 1;
    if (n > SPACE_MAX / c) return SPACE_MAX;
    n *= c;
  }
  return n;
}

void tune_index_digits(const TopiConfigSpace *s, int64_t index, int *digits) {
  for (int k = 0; k < s->nknobs; k++) {
    int64_t c = s->knobs[k].nchoices > 0 ? s->knobs[k].nchoices : 1;
    digits[k] = (int)(index % c);
    index /= c;
  }
}

int64_t tune_index_from_digits(const TopiConfigSpace *s, const int *digits) {
  int64_t index = 0;
  for (int k = s->nknobs - 1; k >= 0; k--) {
    int64_t c = s->knobs[k].nchoices > 0 ? s->knobs[k].nchoices : 1;
    index = index * c + (digits[k] < c ? digits[k] : 0);
  }
  return index;
}

void tune_config_from_index(const TopiConfigSpace *s, int64_t index, TopiConfig *cfg) {
  int digits[TOPI_MAX_KNOBS];
  memset(cfg, 0, sizeof *cfg);
  tune_index_digits(s, index, digits);
  for (int k = 0; k < s->nknobs; k++) {
    cfg->names[k] = s->knobs[k].name;
    cfg->values[k] = s->knobs[k].nchoices > 0 ? s->knobs[k].choices[digits[k]] : 0;
  }
  cfg->nknobs = s->nknobs;
}

int64_t tune_index_from_config(const TopiConfigSpace *s, const TopiConfig *cfg) {
  int digits[TOPI_MAX_KNOBS];
  for (int k = 0; k < s->nknobs; k++) {
    const TopiKnob *kb = &s->knobs[k];
    int found = -1;
    for (int i = 0; i < cfg->nknobs && found < 0; i++)
      if (cfg->names[i] && !strcmp(cfg->names[i], kb->name))
        for (int c = 0; c < kb->nchoices; c++)
          if (kb->choices[c] == cfg->values[i]) {
            found = c;
            break;
          }
    if (found < 0 && kb->nchoices > 1) return -1; /* a knob with one choice (added since) is unambiguous */
    digits[k] = found < 0 ? 0 : found;
  }
  return tune_index_from_digits(s, digits);
}

/* ---------------------------------------------------------------- index set */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

bool tune_set_has(const TuneIndexSet *s, int64_t v) {
  if (!s->cap) return false;
  for (int i = (int)(mix((uint64_t)v) & (uint64_t)(s->cap - 1));; i = (i + 1) & (s->cap - 1)) {
    if (s->slots[i] == v) return true;
    if (s->slots[i] < 0) return false;
  }
}

bool tune_set_add(TuneIndexSet *s, int64_t v) {
  if (tune_set_has(s, v)) return false;
  if (2 * (s->n + 1) > s->cap) {
    int ncap = s->cap ? 2 * s->cap : 64;
    int64_t *ns = malloc(sizeof(int64_t) * (size_t)ncap);
    if (!ns) return false;
    for (int i = 0; i < ncap; i++) ns[i] = -1;
    TuneIndexSet old = *s;
    s->slots = ns;
    s->cap = ncap;
    s->n = 0;
    for (int i = 0; i < old.cap; i++)
      if (old.slots[i] >= 0) tune_set_add(s, old.slots[i]);
    free(old.slots);
  }
  int i = (int)(mix((uint64_t)v) & (uint64_t)(s->cap - 1));
  while (s->slots[i] >= 0) i = (i + 1) & (s->cap - 1);
  s->slots[i] = v;
  s->n++;
  return true;
}

void tune_set_free(TuneIndexSet *s) {
  free(s->slots);
  memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------- random numbers */

uint64_t tune_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t tune_rand_below(uint64_t *state, int64_t n) { return n <= 1 ? 0 : (int64_t)(tune_rand(state) % (uint64_t)n); }

double tune_rand_unit(uint64_t *state) { return (double)(tune_rand(state) >> 11) * (1.0 / 9007199254740992.0); }
