/* The tuning loop of one task (TVM's Tuner.tune) and the SVG plot of the tuning curves.
 *
 * The measurer first runs the default schedule (the reference output and the cost to beat). When the
 * template's fallback config is a point of the space, that measurement is also its record (and a trial), so
 * the best record is never slower than the default as measured. Records of the task already in
 * --tuning-records (same target and workload) are fed to the tuner next and count towards the trials, so a
 * killed run resumes where it stopped. Then, until the trials are done, the space is exhausted, early
 * stopping triggers (no better config in that many trials) or the deadline comes: the tuner proposes a
 * batch, the measurer builds and times it in child processes, each result is appended to the log as one
 * JSON line and flushed at once, and the tuner learns from the batch. Near the deadline batches shrink to
 * what the measured seconds per config say still fits. Last, the best few configs and the default are
 * measured again, one after the other: on a shared machine the load drifts during a run, and the
 * comparison of the default with the best (and the choice among the best) should see the same load.
 * A proposed config whose lowered kernel is the same as one measured already, or proposed earlier in its batch
 * (tune_config_kernel_hash: a knob its schedule ignores, as prefetch where the loop order is not 0), is a
 * twin: it is not built, timed, logged, learned from or counted as a trial (the tuner has marked it visited).
 *
 * Replay (o->replay) runs the same loop on recorded costs instead of measurements, e.g. on the records of a
 * run that measured whole spaces: tuners can then be compared on identical costs, without the noise of a
 * shared machine deciding which one wins. Nothing is logged then (the results are not measurements). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"

typedef struct Seen {
  int64_t index;
  double cost;
  uint64_t kernel; /* tune_config_kernel_hash, 0 unknown */
} Seen;

/* whether kernel h is one of seen's (n of them) or of the first nb of batch */
static bool is_twin(const Seen *seen, int n, const uint64_t *batch, int nb, uint64_t h) {
  for (int i = 0; h && i < n; i++)
    if (seen[i].kernel == h) return true;
  for (int i = 0; h && i < nb; i++)
    if (batch[i] == h) return true;
  return false;
}

static void note(TuneSummary *sum, const TuneTask *task, double cost, int64_t idx, int trials_done,
                 int *last_improve) {
  if (idx == task->default_index && cost < sum->default_cost) sum->default_cost = cost; /* the same schedule */
  if (cost < sum->best_cost) {
    sum->best_cost = cost;
    sum->best_index = idx;
    *last_improve = trials_done;
  }
  if (sum->curve.n < trials_done) {
    double g = sum->best_cost < 1e9 ? task->flops / sum->best_cost * 1e-9 : 0;
    sum->curve.best_gflops[sum->curve.n++] = g;
  }
}

static mlc_status log_record(const TuneTasks *ts, const TuneTask *task, const TuneOptions *o, int64_t index,
                             const MeasureResult *r, Diag *d) {
  if (o->replay) return MLC_OK;
  TopiConfig cfg;
  tune_config_from_index(&task->space, index, &cfg);
  char *line = tune_record_line(ts->target.str, task, index, &cfg, r);
  if (!line) return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  mlc_status st = MLC_OK;
  if (o->log && (fprintf(o->log, "%s\n", line) < 0 || fflush(o->log) != 0))
    st = diag_set(d, MLC_ERR_INVALID, "cannot write the tuning records");
  free(line);
  return st;
}

/* the k lowest costs of seen (distinct indices, valid only) into out; returns how many */
static int best_seen(const Seen *seen, int n, int k, int64_t *out) {
  int got = 0;
  while (got < k) {
    int b = -1;
    for (int i = 0; i < n; i++) {
      if (seen[i].cost >= 1e9) continue;
      bool taken = false;
      for (int j = 0; j < got && !taken; j++) taken = out[j] == seen[i].index;
      if (!taken && (b < 0 || seen[i].cost < seen[b].cost)) b = i;
    }
    if (b < 0) break;
    out[got++] = seen[b].index;
  }
  return got;
}

/* The replayed records of one task: per record its config index in the task's space (-1: another task or
 * target) and its kernel's hash, so that a config replays the records of its twins too (a run that measured
 * one of them logged only that one). */
typedef struct Replay {
  const TuneRecords *recs;
  int64_t *index;
  uint64_t *kernel;
} Replay;

static bool replay_init(Replay *rp, const TuneTasks *ts, const TuneTask *task, const TuneRecords *recs) {
  int n = recs->v.n;
  rp->recs = recs;
  rp->index = malloc(sizeof(int64_t) * (size_t)(n + 1));
  rp->kernel = calloc((size_t)n + 1, sizeof(uint64_t));
  if (!rp->index || !rp->kernel) return false;
  for (int i = 0; i < n; i++) {
    const TuneRecord *r = &recs->v.v[i];
    bool mine = !strcmp(r->target, ts->target.str) && !strcmp(r->key, task->key);
    rp->index[i] = mine ? tune_index_from_config(&task->space, &r->config) : -1;
    for (int j = 0; j < i && rp->index[i] >= 0 && !rp->kernel[i]; j++)
      if (rp->index[j] == rp->index[i]) rp->kernel[i] = rp->kernel[j];
    if (rp->index[i] >= 0 && !rp->kernel[i]) rp->kernel[i] = tune_config_kernel_hash(ts, task, rp->index[i]);
  }
  return true;
}

static void replay_free(Replay *rp) {
  free(rp->index);
  free(rp->kernel);
}

/* the replayed result of config index (kernel hash h): the fastest valid record of it or a twin, else the
 * first error, else "not recorded" */
static void replay_result(const Replay *rp, int64_t index, uint64_t h, MeasureResult *res) {
  memset(res, 0, sizeof *res);
  res->error_no = TUNE_ERR_UNKNOWN;
  snprintf(res->msg, sizeof res->msg, "not in the replayed records");
  double best = 1e9;
  for (int i = 0; i < rp->recs->v.n; i++) {
    const TuneRecord *r = &rp->recs->v.v[i];
    if (rp->index[i] < 0 || (rp->index[i] != index && (!h || rp->kernel[i] != h))) continue;
    if (r->error_no == TUNE_NO_ERROR && r->cost < best) {
      best = r->cost;
      res->error_no = TUNE_NO_ERROR;
      res->ncosts = 1;
      res->costs[0] = r->cost;
      res->all_cost = r->all_cost;
      res->timestamp = r->timestamp;
      res->msg[0] = 0;
    } else if (r->error_no != TUNE_NO_ERROR && res->error_no == TUNE_ERR_UNKNOWN && best >= 1e9) {
      res->error_no = r->error_no;
      snprintf(res->msg, sizeof res->msg, "replayed error");
    }
  }
}

static void measure(Measurer *m, const Replay *rp, int n, const int64_t *idx, const uint64_t *kernel,
                    MeasureResult *res) {
  if (rp)
    for (int i = 0; i < n; i++) replay_result(rp, idx[i], kernel[i], &res[i]);
  else
    tune_measure_batch(m, n, idx, res);
}

mlc_status tune_task_run(Arena *a, const TuneTasks *ts, const TuneTask *task, const TuneOptions *o, TuneSummary *sum,
                         Diag *d) {
  memset(sum, 0, sizeof *sum);
  sum->best_cost = 1e9;
  sum->best_index = -1;
  sum->default_cost = 1e9;
  double t0 = tune_clock();
  int trials = o->trials > 0 ? o->trials : 1;
  if (task->space_size < trials) trials = (int)task->space_size; /* each config is measured once */
  sum->curve.best_gflops = arena_alloc(a, sizeof(double) * (size_t)(trials + 1));
  Seen *seen = malloc(sizeof(Seen) * (size_t)(trials + 1));
  if (!seen) return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  int nseen = 0;
  Tuner *t = tune_tuner_new(o->tuner, ts, task, o->seed, d);
  if (!t) {
    free(seen);
    return d->status;
  }
  t->history = o->history;
  Measurer *m = NULL;
  MeasureResult replayed_default;
  Replay replay = {0}, *rp = o->replay ? &replay : NULL;
  uint64_t dflt_kernel = task->default_index >= 0 ? tune_config_kernel_hash(ts, task, task->default_index) : 0;
  if (rp) {
    if (!replay_init(rp, ts, task, o->replay)) {
      replay_free(rp);
      tune_tuner_free(t);
      free(seen);
      return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    }
    if (task->default_index >= 0)
      replay_result(rp, task->default_index, dflt_kernel, &replayed_default);
    else replayed_default = (MeasureResult){.error_no = TUNE_ERR_UNKNOWN};
  } else if (tune_measurer_new(ts, task, &o->measure, &m, d) != MLC_OK) {
    tune_tuner_free(t);
    free(seen);
    return d->status;
  }
  mlc_status st = MLC_OK;
  const MeasureResult *dr = o->replay ? &replayed_default : tune_measurer_default(m);
  sum->default_error = dr->error_no;
  sum->default_cost = tune_result_cost(dr);
  int last_improve = 0;
  /* resume: what is measured already (a config measured more than once: its first record is the trial, the
   * others still count for the best) */
  if (o->prior)
    for (int i = 0; i < o->prior->v.n; i++) {
      const TuneRecord *r = &o->prior->v.v[i];
      if (strcmp(r->target, ts->target.str) || strcmp(r->key, task->key)) continue;
      int64_t idx = tune_index_from_config(&task->space, &r->config);
      if (idx < 0) continue;
      double cost = r->error_no == TUNE_NO_ERROR ? r->cost : 1e9;
      if (tune_set_has(&t->visited, idx) || sum->trials >= trials) {
        if (tune_set_has(&t->visited, idx)) note(sum, task, cost, idx, sum->trials, &last_improve);
        continue;
      }
      tune_set_add(&t->visited, idx);
      MeasureResult mr = {.error_no = r->error_no, .all_cost = r->all_cost, .timestamp = r->timestamp};
      if (r->error_no == TUNE_NO_ERROR) {
        mr.ncosts = 1;
        mr.costs[0] = r->cost;
      } else {
        sum->errors++;
      }
      t->update(t, 1, &idx, &mr);
      sum->trials++;
      sum->resumed++;
      seen[nseen++] = (Seen){idx, cost, tune_config_kernel_hash(ts, task, idx)};
      note(sum, task, cost, idx, sum->trials, &last_improve);
    }
  /* the default's measurement is the record of the fallback config */
  if (dr->error_no == TUNE_NO_ERROR && task->default_index >= 0 && sum->trials < trials &&
      tune_set_add(&t->visited, task->default_index)) {
    st = log_record(ts, task, o, task->default_index, dr, d);
    t->update(t, 1, &task->default_index, dr);
    sum->trials++;
    sum->measured++;
    seen[nseen++] = (Seen){task->default_index, sum->default_cost, dflt_kernel};
    note(sum, task, sum->default_cost, task->default_index, sum->trials, &last_improve);
  }
  int par = o->measure.parallel > 0 ? o->measure.parallel : 1;
  int batch_max = par > 8 ? par : 8;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(batch_max + 1));
  MeasureResult *res = malloc(sizeof(MeasureResult) * (size_t)(batch_max + 1));
  uint64_t *kernel = malloc(sizeof(uint64_t) * (size_t)(batch_max + 1));
  if (st == MLC_OK && (!idx || !res || !kernel)) st = diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  double measure_s = 0; /* wall seconds in batches, over configs measured: seconds per config */
  int measure_n = 0;
  int remeasure = o->remeasure > 0 ? (o->remeasure < batch_max ? o->remeasure : batch_max) : 0;
  while (st == MLC_OK && sum->trials < trials) {
    if (o->early_stopping > 0 && sum->trials - last_improve >= o->early_stopping) break;
    int want = trials - sum->trials < batch_max ? trials - sum->trials : batch_max;
    if (o->deadline > 0) {
      /* what still fits, keeping room for the final measurements (before any batch: as long as the default
       * took to build and time) */
      double per = measure_n > 0 ? measure_s / measure_n : dr->all_cost > 0 ? dr->all_cost : 1.0;
      double left = o->deadline - tune_clock() - (remeasure ? (remeasure + 1) * per : 0);
      int fit = (int)(left / per + 0.5);
      if (fit < 1) {
        sum->out_of_time = true;
        break;
      }
      if (fit < want) want = fit;
    }
    int k = t->next_batch(t, want, idx);
    if (k <= 0) break; /* the space is exhausted */
    int kept = 0;
    for (int i = 0; i < k; i++) {
      uint64_t h = tune_config_kernel_hash(ts, task, idx[i]);
      if (is_twin(seen, nseen, kernel, kept, h)) {
        sum->twins++;
        continue;
      }
      kernel[kept] = h;
      idx[kept++] = idx[i];
    }
    k = kept;
    double b0 = tune_clock();
    if (k > 0) {
      measure(m, rp, k, idx, kernel, res);
      measure_s += tune_clock() - b0;
      measure_n += k;
    }
    for (int i = 0; i < k && st == MLC_OK; i++) {
      st = log_record(ts, task, o, idx[i], &res[i], d);
      sum->trials++;
      sum->measured++;
      if (res[i].error_no != TUNE_NO_ERROR) sum->errors++;
      seen[nseen++] = (Seen){idx[i], tune_result_cost(&res[i]), kernel[i]};
      note(sum, task, tune_result_cost(&res[i]), idx[i], sum->trials, &last_improve);
    }
    if (k > 0) t->update(t, k, idx, res);
    if (o->progress) o->progress(o->progress_user, task, sum, tune_clock() - t0, false);
  }
  /* the best few and the default again, under the same load */
  if (st == MLC_OK && remeasure > 0 && sum->measured > 0 && !o->replay) {
    int k = best_seen(seen, nseen, remeasure, idx);
    if (k > 0) {
      tune_measure_batch(m, k, idx, res);
      for (int i = 0; i < k && st == MLC_OK; i++) {
        st = log_record(ts, task, o, idx[i], &res[i], d);
        sum->remeasured++;
        note(sum, task, tune_result_cost(&res[i]), idx[i], sum->trials, &last_improve);
      }
    }
    MeasureResult again;
    tune_measure_default(m, &again);
    double c = tune_result_cost(&again);
    if (again.error_no == TUNE_NO_ERROR) sum->default_cost = c;
    /* logged as the fallback config's second record, so that it counts as confirmed */
    bool default_again = again.error_no == TUNE_NO_ERROR && task->default_index >= 0 &&
                         tune_set_has(&t->visited, task->default_index);
    if (st == MLC_OK && default_again) {
      st = log_record(ts, task, o, task->default_index, &again, d);
      sum->remeasured++;
      note(sum, task, c, task->default_index, sum->trials, &last_improve);
    }
    /* the task's result is what these measurements confirm, each config by its latest one, as
     * tune_records_best picks it for compile: the lowest first measurement of many is biased low */
    double best = default_again ? c : 1e9;
    int64_t best_idx = default_again ? task->default_index : -1;
    for (int i = 0; i < k; i++) {
      if (res[i].error_no != TUNE_NO_ERROR || (default_again && idx[i] == task->default_index)) continue;
      double ci = tune_result_cost(&res[i]);
      if (ci < best) best = ci, best_idx = idx[i];
    }
    if (best_idx >= 0) sum->best_cost = best, sum->best_index = best_idx;
  }
  sum->seconds = tune_clock() - t0;
  sum->transferred = t->transferred;
  if (st == MLC_OK && o->progress) o->progress(o->progress_user, task, sum, sum->seconds, true);
  free(kernel);
  free(idx);
  free(res);
  free(seen);
  if (rp) replay_free(rp);
  tune_measurer_free(m);
  tune_tuner_free(t);
  return st;
}

/* ---------------------------------------------------------------- SVG plot */

mlc_status tune_plot_svg(const char *path, int ntasks, const TuneTask *const *tasks, const TuneCurve *curves,
                         Diag *d) {
  static const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const double W = 720, H = 420, L = 70, R = 230, T = 30, B = 50;
  int maxn = 1;
  double maxg = 0;
  for (int i = 0; i < ntasks; i++) {
    if (curves[i].n > maxn) maxn = curves[i].n;
    for (int j = 0; j < curves[i].n; j++)
      if (curves[i].best_gflops[j] > maxg) maxg = curves[i].best_gflops[j];
  }
  if (maxg <= 0) maxg = 1;
  maxg *= 1.1;
  StrBuf b = {0};
  sb_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                "font-size=\"11\">\n", W, H);
  sb_printf(&b, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  sb_printf(&b, "<text x=\"%.0f\" y=\"18\" font-size=\"13\">mlc tune: best GFLOP/s against trials</text>\n", L);
  double pw = W - L - R, ph = H - T - B;
  sb_printf(&b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", L, T,
            pw, ph);
  for (int k = 0; k <= 4; k++) {
    double y = T + ph - ph * k / 4, x = L + pw * k / 4;
    sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", L - 6, y + 4, maxg * k / 4);
    sb_printf(&b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", x, T + ph + 16,
              (int)(maxn * k / 4.0 + 0.5));
  }
  sb_printf(&b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">trials</text>\n", L + pw / 2, H - 12);
  sb_printf(&b, "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">GFLOP/s</text>\n",
            T + ph / 2, T + ph / 2);
  for (int i = 0; i < ntasks; i++) {
    const char *col = colors[i % countof(colors)];
    if (curves[i].n > 0) {
      sb_printf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", col);
      for (int j = 0; j < curves[i].n; j++)
        sb_printf(&b, "%.1f,%.1f ", L + pw * (j + 1) / maxn, T + ph - ph * curves[i].best_gflops[j] / maxg);
      sb_printf(&b, "\"/>\n");
    }
    double ly = T + 10 + 16 * i;
    sb_printf(&b, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>\n",
              L + pw + 10, ly, L + pw + 28, ly, col);
    sb_printf(&b, "<text x=\"%.0f\" y=\"%.0f\">task %d: %s</text>\n", L + pw + 32, ly + 4, tasks[i]->index,
              tasks[i]->name);
  }
  sb_printf(&b, "</svg>\n");
  mlc_status st = file_write_atomic(path, b.s, b.len, d);
  sb_free(&b);
  return st;
}
