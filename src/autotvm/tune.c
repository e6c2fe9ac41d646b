/* The tuning loop of one task (TVM's Tuner.tune) and the SVG plot of the tuning curves.
 *
 * Records of the task already in --tuning-records (same target and workload) are fed to the tuner first and
 * count towards the trials, so a killed run resumes where it stopped. Then, until the trials are done, the
 * space is exhausted or early stopping triggers (no better config in that many trials): the tuner proposes a
 * batch, the measurer builds and times it in child processes, each result is appended to the log as one
 * JSON line and flushed at once, and the tuner learns from the batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "autotvm/autotvm.h"

static double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void note(TuneSummary *sum, const TuneTask *task, double cost, int64_t idx, int trials_done,
                 int *last_improve) {
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

mlc_status tune_task_run(Arena *a, const TuneTasks *ts, const TuneTask *task, const TuneOptions *o, TuneSummary *sum,
                         Diag *d) {
  memset(sum, 0, sizeof *sum);
  sum->best_cost = 1e9;
  sum->best_index = -1;
  int trials = o->trials > 0 ? o->trials : 1;
  sum->curve.best_gflops = arena_alloc(a, sizeof(double) * (size_t)(trials + 1));
  double t0 = mono();
  Tuner *t = tune_tuner_new(o->tuner, ts, task, o->seed, d);
  if (!t) return d->status;
  Measurer *m = NULL;
  if (tune_measurer_new(ts, task, &o->measure, &m, d) != MLC_OK) {
    tune_tuner_free(t);
    return d->status;
  }
  sum->default_cost = tune_measurer_default_cost(m);
  int last_improve = 0;
  /* resume: what is measured already */
  if (o->prior)
    for (int i = 0; i < o->prior->v.n && sum->trials < trials; i++) {
      const TuneRecord *r = &o->prior->v.v[i];
      if (strcmp(r->target, ts->target.str) || strcmp(r->key, task->key)) continue;
      int64_t idx = tune_index_from_config(&task->space, &r->config);
      if (idx < 0 || !tune_set_add(&t->visited, idx)) continue;
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
      note(sum, task, r->error_no == TUNE_NO_ERROR ? r->cost : 1e9, idx, sum->trials, &last_improve);
    }
  int par = o->measure.parallel > 0 ? o->measure.parallel : 1;
  int batch_max = par > 8 ? par : 8;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)batch_max);
  MeasureResult *res = malloc(sizeof(MeasureResult) * (size_t)batch_max);
  mlc_status st = MLC_OK;
  if (!idx || !res) st = diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  while (st == MLC_OK && sum->trials < trials) {
    if (o->early_stopping > 0 && sum->trials - last_improve >= o->early_stopping) break;
    int want = trials - sum->trials < batch_max ? trials - sum->trials : batch_max;
    int k = t->next_batch(t, want, idx);
    if (k <= 0) break; /* the space is exhausted */
    tune_measure_batch(m, k, idx, res);
    for (int i = 0; i < k; i++) {
      TopiConfig cfg;
      tune_config_from_index(&task->space, idx[i], &cfg);
      char *line = tune_record_line(ts->target.str, task, idx[i], &cfg, &res[i]);
      if (!line) {
        st = diag_set(d, MLC_ERR_INTERNAL, "out of memory");
        break;
      }
      if (o->log && (fprintf(o->log, "%s\n", line) < 0 || fflush(o->log) != 0))
        st = diag_set(d, MLC_ERR_INVALID, "cannot write the tuning records");
      free(line);
      sum->trials++;
      sum->measured++;
      if (res[i].error_no != TUNE_NO_ERROR) sum->errors++;
      note(sum, task, tune_result_cost(&res[i]), idx[i], sum->trials, &last_improve);
    }
    t->update(t, k, idx, res);
    if (o->progress) o->progress(o->progress_user, task, sum, mono() - t0, false);
  }
  if (st == MLC_OK && o->progress) o->progress(o->progress_user, task, sum, mono() - t0, true);
  free(idx);
  free(res);
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
