/* The model-based tuner (TVM's XGBTuner with its SimulatedAnnealingOptimizer).
 *
 * Until PLAN configs are measured it proposes the default config's neighbours (it with one knob changed, in
 * random order), then random ones. Then, for each batch: an XGBoost ranking model is trained on the loop
 * features (features.c) of every measured config, labelled with its throughput relative to the best (failed
 * configs 0), together with what the session measured on the earlier tasks of the same template
 * (TuneHistory, one ranking group per task: transfer learning, as TVM's tune_tasks does; with PLAN such
 * measurements the model ranks the task's first batch already, half of it among the default's neighbours);
 * the space is searched for the configs the model ranks highest: every unvisited config when the space is
 * small (at most EXHAUSTIVE), else simulated annealing from CHAINS points (the best measured configs and
 * random ones): each step moves every chain one knob to a random choice, the model scores all moves in one
 * prediction, a move is kept when better or with probability exp((new - old) / temperature), the
 * temperature falls linearly from 1 to 0 over STEPS steps. The batch is the best unvisited configs seen, with
 * an EPSILON share of random configs for exploration. Features are computed once per config (lowering it)
 * and cached. If the model fails the tuner falls back to random. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"

#define PLAN 8
#define EXHAUSTIVE 1024
#define CHAINS 32
#define STEPS 24
#define EPSILON 0.05

typedef struct FeatCache {
  int64_t *keys; /* -1 empty */
  float *feats;  /* cap x TUNE_NFEATURES */
  int cap, n;
} FeatCache;

typedef struct XgbState {
  FeatCache cache;
  int n, cap;
  int64_t *idx;
  double *gflops;
} XgbState;

static uint64_t hmix(int64_t v) {
  uint64_t x = (uint64_t)v * 0x9e3779b97f4a7c15ULL;
  return x ^ (x >> 29);
}

static const float *cache_find(FeatCache *c, int64_t key) {
  if (!c->cap) return NULL;
  for (int i = (int)(hmix(key) & (uint64_t)(c->cap - 1));; i = (i + 1) & (c->cap - 1)) {
    if (c->keys[i] == key) return c->feats + (size_t)i * TUNE_NFEATURES;
    if (c->keys[i] < 0) return NULL;
  }
}

static bool cache_grow(FeatCache *c) {
  int ncap = c->cap ? 2 * c->cap : 256;
  int64_t *nk = malloc(sizeof(int64_t) * (size_t)ncap);
  float *nf = malloc(sizeof(float) * (size_t)ncap * TUNE_NFEATURES);
  if (!nk || !nf) {
    free(nk);
    free(nf);
    return false;
  }
  for (int i = 0; i < ncap; i++) nk[i] = -1;
  for (int i = 0; i < c->cap; i++) {
    if (c->keys[i] < 0) continue;
    int j = (int)(hmix(c->keys[i]) & (uint64_t)(ncap - 1));
    while (nk[j] >= 0) j = (j + 1) & (ncap - 1);
    nk[j] = c->keys[i];
    memcpy(nf + (size_t)j * TUNE_NFEATURES, c->feats + (size_t)i * TUNE_NFEATURES, sizeof(float) * TUNE_NFEATURES);
  }
  free(c->keys);
  free(c->feats);
  c->keys = nk;
  c->feats = nf;
  c->cap = ncap;
  return true;
}

/* the features of config key (computed and cached on first use) */
static const float *features(Tuner *t, XgbState *s, int64_t key) {
  FeatCache *c = &s->cache;
  const float *f = cache_find(c, key);
  if (f) return f;
  if (2 * (c->n + 1) > c->cap && !cache_grow(c)) return NULL;
  int i = (int)(hmix(key) & (uint64_t)(c->cap - 1));
  while (c->keys[i] >= 0) i = (i + 1) & (c->cap - 1);
  float *dst = c->feats + (size_t)i * TUNE_NFEATURES;
  if (!tune_config_features(t->tasks, t->task, key, dst)) memset(dst, 0, sizeof(float) * TUNE_NFEATURES);
  c->keys[i] = key;
  c->n++;
  return dst;
}

static mlc_status predict(Tuner *t, XgbState *s, TuneXgb *m, int n, const int64_t *keys, float *out) {
  float *x = malloc(sizeof(float) * (size_t)n * TUNE_NFEATURES);
  if (!x) return diag_set(&t->diag, MLC_ERR_INTERNAL, "out of memory");
  for (int i = 0; i < n; i++) {
    const float *f = features(t, s, keys[i]);
    if (f) memcpy(x + (size_t)i * TUNE_NFEATURES, f, sizeof(float) * TUNE_NFEATURES);
    else memset(x + (size_t)i * TUNE_NFEATURES, 0, sizeof(float) * TUNE_NFEATURES);
  }
  mlc_status st = tune_xgb_predict(m, n, TUNE_NFEATURES, x, out, &t->diag);
  free(x);
  return st;
}

static void history_push(TuneHistory *h, const char *tmpl, int task, const float *f, double gflops) {
  if (h->n == h->cap) {
    int nc = h->cap ? 2 * h->cap : 256;
    const char **nt = realloc(h->tmpl, sizeof(char *) * (size_t)nc);
    if (!nt) return;
    h->tmpl = nt;
    int *nk = realloc(h->task, sizeof(int) * (size_t)nc);
    if (!nk) return;
    h->task = nk;
    float *nf = realloc(h->feats, sizeof(float) * (size_t)nc * TUNE_NFEATURES);
    if (!nf) return;
    h->feats = nf;
    double *ng = realloc(h->gflops, sizeof(double) * (size_t)nc);
    if (!ng) return;
    h->gflops = ng;
    h->cap = nc;
  }
  h->tmpl[h->n] = tmpl;
  h->task[h->n] = task;
  memcpy(h->feats + (size_t)h->n * TUNE_NFEATURES, f, sizeof(float) * TUNE_NFEATURES);
  h->gflops[h->n++] = gflops;
}

void tune_history_free(TuneHistory *h) {
  free(h->tmpl);
  free(h->task);
  free(h->feats);
  free(h->gflops);
  memset(h, 0, sizeof *h);
}

/* the top list: the best unvisited candidates seen, by predicted score */
typedef struct Top {
  int n, cap;
  int64_t *idx;
  float *score;
} Top;

static void top_offer(Top *tp, const Tuner *t, int64_t idx, float score) {
  if (tune_set_has(&t->visited, idx)) return;
  for (int i = 0; i < tp->n; i++)
    if (tp->idx[i] == idx) return;
  if (tp->n == tp->cap && score <= tp->score[tp->n - 1]) return;
  int pos = tp->n < tp->cap ? tp->n++ : tp->n - 1;
  while (pos > 0 && tp->score[pos - 1] < score) {
    tp->idx[pos] = tp->idx[pos - 1];
    tp->score[pos] = tp->score[pos - 1];
    pos--;
  }
  tp->idx[pos] = idx;
  tp->score[pos] = score;
}

/* history entries the model can learn from: other tasks of the same template */
static bool transferable(const Tuner *t, int i) {
  const TuneHistory *h = t->history;
  return h->task[i] != t->task->index && !strcmp(h->tmpl[i], t->task->name);
}

/* labels of rows [from, to): throughput relative to the best of them */
static void label_group(float *y, const double *g, int from, int to) {
  double best = 0;
  for (int i = from; i < to; i++) best = g[i] > best ? g[i] : best;
  for (int i = from; i < to; i++) y[i] = best > 0 ? (float)(g[i] / best) : 0;
}

/* The model of this task: trained on its own measurements (one query group) and on the history's of the
 * other tasks of its template (a group each), so the first batches are already ranked by what those taught
 * (TVM's transfer learning); NULL when there are too few measurements. */
static TuneXgb *train(Tuner *t, XgbState *s) {
  const TuneHistory *h = t->history;
  int ext = 0;
  for (int i = 0; h && i < h->n; i++) ext += transferable(t, i);
  if (s->n < PLAN && ext < PLAN) return NULL;
  if (ext > t->transferred) t->transferred = ext;
  int rows = s->n + ext, ng = 0;
  float *x = malloc(sizeof(float) * (size_t)rows * TUNE_NFEATURES), *y = malloc(sizeof(float) * (size_t)rows);
  double *g = malloc(sizeof(double) * (size_t)rows);
  unsigned *groups = malloc(sizeof(unsigned) * (size_t)(rows + 1));
  int *tasks = malloc(sizeof(int) * (size_t)(ext + 1)), ntasks = 0;
  TuneXgb *m = NULL;
  if (!x || !y || !g || !groups || !tasks) goto done;
  int r = 0;
  for (int i = 0; i < s->n; i++, r++) {
    const float *f = features(t, s, s->idx[i]);
    if (f) memcpy(x + (size_t)r * TUNE_NFEATURES, f, sizeof(float) * TUNE_NFEATURES);
    else memset(x + (size_t)r * TUNE_NFEATURES, 0, sizeof(float) * TUNE_NFEATURES);
    g[r] = s->gflops[i];
  }
  if (s->n) label_group(y, g, 0, s->n), groups[ng++] = (unsigned)s->n;
  for (int i = 0; h && i < h->n; i++) { /* the other tasks, in the order they were tuned */
    if (!transferable(t, i)) continue;
    bool known = false;
    for (int k = 0; k < ntasks && !known; k++) known = tasks[k] == h->task[i];
    if (!known) tasks[ntasks++] = h->task[i];
  }
  for (int k = 0; k < ntasks; k++) {
    int from = r;
    for (int i = 0; i < h->n; i++)
      if (h->task[i] == tasks[k] && transferable(t, i)) {
        memcpy(x + (size_t)r * TUNE_NFEATURES, h->feats + (size_t)i * TUNE_NFEATURES, sizeof(float) * TUNE_NFEATURES);
        g[r++] = h->gflops[i];
      }
    label_group(y, g, from, r);
    groups[ng++] = (unsigned)(r - from);
  }
  if (tune_xgb_fit(rows, TUNE_NFEATURES, x, y, ng, groups, t->rng, &m, &t->diag) != MLC_OK) m = NULL;
done:
  free(x);
  free(y);
  free(g);
  free(groups);
  free(tasks);
  return m;
}

/* The unvisited neighbours of the default config (it with one knob changed), at most cap. The default is the
 * templates' heuristic choice, so the configs that beat it mostly differ from it in a knob or two (a tile
 * size, an unroll): the first batches search there, before the task's own measurements can rank the space */
static int default_neighbours(Tuner *t, int64_t *cand, int cap) {
  const TopiConfigSpace *sp = &t->task->space;
  int64_t d = t->task->default_index;
  int nc = 0, dg[TOPI_MAX_KNOBS];
  if (d < 0) return 0;
  tune_index_digits(sp, d, dg);
  for (int kn = 0; kn < sp->nknobs; kn++) {
    int own = dg[kn];
    for (int c = 0; c < sp->knobs[kn].nchoices && nc < cap; c++) {
      if (c == own) continue;
      dg[kn] = c;
      int64_t idx = tune_index_from_digits(sp, dg);
      if (idx >= 0 && !tune_set_has(&t->visited, idx)) cand[nc++] = idx;
    }
    dg[kn] = own;
  }
  return nc;
}

#define NEIGHBOURS_MAX (TOPI_MAX_KNOBS * 64)

/* Before there is a model: the default's neighbours in random order, then random configs */
static int neighbour_batch(Tuner *t, int n, int64_t *out) {
  int64_t cand[NEIGHBOURS_MAX];
  int nc = default_neighbours(t, cand, NEIGHBOURS_MAX), k = 0;
  while (k < n && nc > 0) {
    int i = (int)tune_rand_below(&t->rng, nc);
    int64_t idx = cand[i];
    cand[i] = cand[--nc];
    if (tune_set_add(&t->visited, idx)) out[k++] = idx;
  }
  if (k < n) k += tune_random_batch(t, n - k, out + k);
  return k;
}

static int xgb_batch(Tuner *t, int n, int64_t *out) {
  XgbState *s = t->state;
  if (t->diag.status != MLC_OK) return tune_random_batch(t, n, out);
  TuneXgb *m = train(t, s);
  if (!m) return neighbour_batch(t, n, out);
  int k = 0;
  if (s->n < PLAN && n >= 2) { /* a model from the other tasks only: half the batch its best neighbours of the default */
    int64_t cand[NEIGHBOURS_MAX];
    float sc[NEIGHBOURS_MAX];
    int nc = default_neighbours(t, cand, NEIGHBOURS_MAX);
    Top nb = {0, n / 2, malloc(sizeof(int64_t) * (size_t)(n / 2 + 1)), malloc(sizeof(float) * (size_t)(n / 2 + 1))};
    if (nc && nb.idx && nb.score && predict(t, s, m, nc, cand, sc) == MLC_OK)
      for (int i = 0; i < nc; i++) top_offer(&nb, t, cand[i], sc[i]);
    for (int i = 0; i < nb.n; i++)
      if (tune_set_add(&t->visited, nb.idx[i])) out[k++] = nb.idx[i];
    free(nb.idx);
    free(nb.score);
  }

  Top tp = {0, n, malloc(sizeof(int64_t) * (size_t)n), malloc(sizeof(float) * (size_t)n)};
  int64_t size = t->task->space_size;
  const TopiConfigSpace *sp = &t->task->space;
  if (size - t->visited.n <= EXHAUSTIVE) {
    int64_t *all = malloc(sizeof(int64_t) * (size_t)(size + 1));
    float *sc = malloc(sizeof(float) * (size_t)(size + 1));
    int na = 0;
    for (int64_t i = 0; i < size; i++)
      if (!tune_set_has(&t->visited, i)) all[na++] = i;
    if (na && predict(t, s, m, na, all, sc) == MLC_OK)
      for (int i = 0; i < na; i++) top_offer(&tp, t, all[i], sc[i]);
    free(all);
    free(sc);
  } else {
    int64_t cur[CHAINS], nxt[CHAINS];
    float cs[CHAINS], ns[CHAINS];
    /* chains start at the best measured configs, then random points */
    int nc = 0;
    int *order = malloc(sizeof(int) * (size_t)s->n);
    for (int i = 0; i < s->n; i++) order[i] = i;
    for (int i = 0; i < s->n && nc < CHAINS / 2; i++) { /* partial selection of the best */
      int b = i;
      for (int j = i + 1; j < s->n; j++)
        if (s->gflops[order[j]] > s->gflops[order[b]]) b = j;
      int tmp = order[i];
      order[i] = order[b];
      order[b] = tmp;
      cur[nc++] = s->idx[order[i]];
    }
    free(order);
    while (nc < CHAINS) cur[nc++] = tune_rand_below(&t->rng, size);
    if (predict(t, s, m, nc, cur, cs) == MLC_OK) {
      for (int i = 0; i < nc; i++) top_offer(&tp, t, cur[i], cs[i]);
      for (int step = 0; step < STEPS; step++) {
        double temp = 1.0 - (double)step / STEPS;
        for (int i = 0; i < nc; i++) {
          int dg[TOPI_MAX_KNOBS];
          tune_index_digits(sp, cur[i], dg);
          int k = (int)tune_rand_below(&t->rng, sp->nknobs);
          dg[k] = (int)tune_rand_below(&t->rng, sp->knobs[k].nchoices);
          nxt[i] = tune_index_from_digits(sp, dg);
        }
        if (predict(t, s, m, nc, nxt, ns) != MLC_OK) break;
        for (int i = 0; i < nc; i++) {
          top_offer(&tp, t, nxt[i], ns[i]);
          if (ns[i] >= cs[i] || tune_rand_unit(&t->rng) < exp((ns[i] - cs[i]) / (temp + 1e-5))) {
            cur[i] = nxt[i];
            cs[i] = ns[i];
          }
        }
      }
    }
  }
  tune_xgb_free(m);
  for (int i = 0; i < tp.n && k < n; i++) {
    if (tune_rand_unit(&t->rng) < EPSILON) continue; /* leave room for a random config */
    if (tune_set_add(&t->visited, tp.idx[i])) out[k++] = tp.idx[i];
  }
  free(tp.idx);
  free(tp.score);
  if (k < n) k += tune_random_batch(t, n - k, out + k);
  return k;
}

static void xgb_update(Tuner *t, int n, const int64_t *idx, const MeasureResult *res) {
  XgbState *s = t->state;
  for (int i = 0; i < n; i++) {
    if (s->n == s->cap) {
      int nc = s->cap ? 2 * s->cap : 64;
      int64_t *ni = realloc(s->idx, sizeof(int64_t) * (size_t)nc);
      if (!ni) return;
      s->idx = ni;
      double *ng = realloc(s->gflops, sizeof(double) * (size_t)nc);
      if (!ng) return;
      s->gflops = ng;
      s->cap = nc;
    }
    double c = tune_result_cost(&res[i]);
    s->idx[s->n] = idx[i];
    s->gflops[s->n++] = c < 1e9 ? t->task->flops / c * 1e-9 : 0;
    const float *f = t->history ? features(t, s, idx[i]) : NULL;
    if (f) history_push(t->history, t->task->name, t->task->index, f, s->gflops[s->n - 1]);
  }
}

static void xgb_free(Tuner *t) {
  XgbState *s = t->state;
  if (!s) return;
  free(s->cache.keys);
  free(s->cache.feats);
  free(s->idx);
  free(s->gflops);
  free(s);
}

Tuner *tune_tuner_xgb_init(Tuner *t, Diag *d) {
  t->state = calloc(1, sizeof(XgbState));
  if (!t->state) {
    free(t);
    diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  t->next_batch = xgb_batch;
  t->update = xgb_update;
  t->free = xgb_free;
  return t;
}
