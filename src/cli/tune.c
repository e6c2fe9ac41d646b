/* mlc tune: AutoTVM-style template tuning (src/autotvm). Extracts the tunable tasks of a model (after the
 * graph passes and FuseOps, as `mlc compile` sees them), prints them, tunes each (or every N-th with
 * --task-shard) with the chosen tuner, appending one JSON record per measurement to --output, and optionally
 * plots the tuning curves. Progress goes to stderr: a redrawn line on a terminal, plain lines otherwise.
 *
 * --time-budget S bounds the whole run: each task, when it starts, gets a deadline at its share of the time
 * left, shared over the tasks not yet tuned by weight = 1/ntasks + its share of the model's FLOPs (FLOPs x
 * groups of the workload), so the heavy convs get most of the time but no task is starved; a task that ends
 * early (its space is small) leaves its time to the others. Without --trials the trials are then bounded
 * only by the spaces and the time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autotvm/autotvm.h"
#include "cli/cli.h"
#include "frontends/onnx/onnx.h"

#define PROG "mlc tune"

static const char *tune_usage =
    "usage: mlc tune model.onnx --output records.json [--target T] [--tuner xgb|ga|random|grid] [--trials N]\n"
    "                [--time-budget S] [--early-stopping N] [--number N] [--repeat N] [--min-repeat-ms MS]\n"
    "                [--timeout S] [--remeasure N] [--replay records.json]\n"
    "                [--parallel N] [--threads N] [--seed N] [--tuning-records old.json] [--task-shard K/N]\n"
    "                [--plot FILE.svg] [--opt-level 0..3] [--input-shapes name:[d,..]] [--freeze-inputs values.npz]\n"
    "                [--cache-flush on|off]\n"
    "                [--transfer-learning on|off] [--json]\n"
    "  --time-budget S   stop after S seconds in all (shared out over the tasks by FLOPs; without --trials,\n"
    "                    as many trials as fit); a batch in flight finishes (each config bounded by --timeout)\n"
    "  --trials N        configs per task (default 64; records resumed from --tuning-records count)\n"
    "  --repeat N        timed repeats per config; its cost is the fastest (default 3)\n"
    "  --remeasure N     at the end of a task, its best N configs and the default measured again (default 2)\n"
    "  --cache-flush on|off  before each timed run, flush the kernel's buffers but its first input from the\n"
    "                    caches, as a model's kernel finds its weights (default on)\n"
    "  --transfer-learning on|off  the xgb tuner's model also learns from the earlier tasks of the same\n"
    "                    template in this run, so it ranks a task's first configs too (default on)\n"
    "  --replay FILE     measure nothing: each config's cost is its best record in FILE (tuners compared on the\n"
    "                    same costs); no records are written, --output is not needed\n";

static int report(bool json, int code, const char *msg) {
  fprintf(stderr, PROG ": %s\n", msg);
  if (json) cli_json_error(stdout, "tune", code, msg);
  return code;
}

typedef struct Progress {
  bool tty;
  int pos, count, trials;
} Progress;

static void progress(void *user, const TuneTask *t, const TuneSummary *s, double elapsed, bool done) {
  Progress *p = user;
  double best = s->best_cost < 1e9 ? t->flops / s->best_cost * 1e-9 : 0;
  int new_trials = s->trials - s->resumed;
  if (p->tty) {
    int total = t->space_size < p->trials ? (int)t->space_size : p->trials; /* a config is measured once */
    double left = new_trials > 0 && !done ? elapsed / new_trials * (total - s->trials) : 0;
    fprintf(stderr, "\r[task %2d/%2d] %-20.20s trials %4d/%d  best %8.2f GFLOP/s  elapsed %6.1f s  left ~%5.1f s %s",
            p->pos, p->count, t->name, s->trials, total, best, elapsed, left, done ? "\n" : "");
  } else if (done) {
    char dflt[48];
    if (s->default_cost < 1e9) snprintf(dflt, sizeof dflt, "%.2f", t->flops / s->default_cost * 1e-9);
    else snprintf(dflt, sizeof dflt, "unknown (error %d)", s->default_error);
    char twins[64] = "";
    if (s->twins) snprintf(twins, sizeof twins, ", %d twins of measured kernels skipped", s->twins);
    fprintf(stderr, "task %d/%d %s: %d trials (%d resumed, %d errors%s), default %s, best %.2f GFLOP/s, %.1f s%s\n",
            p->pos, p->count, t->name, s->trials, s->resumed, s->errors, twins, dflt, best, elapsed,
            s->out_of_time ? " (its time is up)" : "");
  }
  fflush(stderr);
}

int cmd_tune(int argc, char **argv) {
  const char *model = NULL, *output = NULL, *tuner = "xgb", *shapes = NULL, *freeze = NULL, *prior_path = NULL,
             *plot = NULL, *shard = NULL, *replay_path = NULL;
  CompileOptions copt = {.target = "llvm", .opt_level = 3};
  long long trials = 64, early = 0, number = 10, repeat = 3, min_ms = 0, timeout = 10, parallel = 0, threads = 0,
            seed = 0, budget = 0, remeasure = 2, lv;
  bool trials_given = false, cache_flush = true, transfer = true;
  bool json = false;
  ArgIter it;
  arg_init(&it, argc, argv);
  while (arg_more(&it)) {
    const char *v;
    if (arg_flag(&it, "--json")) json = true;
    else if (arg_flag(&it, "--help") || arg_flag(&it, "-h")) {
      fputs(tune_usage, stdout);
      return 0;
    } else if (arg_value(&it, "--target", &v)) copt.target = v;
    else if (arg_value(&it, "--output", &v) || arg_value(&it, "-o", &v)) output = v;
    else if (arg_value(&it, "--tuner", &v)) tuner = v;
    else if (arg_int(&it, "--trials", 0, 1000000, &trials)) trials_given = true;
    else if (arg_int(&it, "--time-budget", 1, 10000000, &budget)) {}
    else if (arg_int(&it, "--remeasure", 0, 8, &remeasure)) {}
    else if (arg_int(&it, "--early-stopping", 0, 1000000, &early)) {}
    else if (arg_int(&it, "--number", 1, 1000000, &number)) {}
    else if (arg_int(&it, "--repeat", 1, TUNE_MAX_REPEAT, &repeat)) {}
    else if (arg_int(&it, "--min-repeat-ms", 0, 100000, &min_ms)) {}
    else if (arg_int(&it, "--timeout", 1, 3600, &timeout)) {}
    else if (arg_int(&it, "--parallel", 1, 256, &parallel)) {}
    else if (arg_int(&it, "--threads", 0, 1024, &threads)) {}
    else if (arg_int(&it, "--seed", 0, (long long)1 << 62, &seed)) {}
    else if (arg_int(&it, "--opt-level", 0, 3, &lv) || arg_int(&it, "-O", 0, 3, &lv)) copt.opt_level = (int)lv;
    else if (arg_value(&it, "--tuning-records", &v)) prior_path = v;
    else if (arg_value(&it, "--replay", &v)) replay_path = v;
    else if (arg_value(&it, "--task-shard", &v)) shard = v;
    else if (arg_value(&it, "--plot", &v)) plot = v;
    else if (arg_value(&it, "--transfer-learning", &v)) {
      if (!strcmp(v, "on") || !strcmp(v, "off")) transfer = !strcmp(v, "on");
      else snprintf(it.error, sizeof it.error, "--transfer-learning '%.100s': expected on or off", v);
    } else if (arg_value(&it, "--cache-flush", &v)) {
      if (!strcmp(v, "on") || !strcmp(v, "off")) cache_flush = !strcmp(v, "on");
      else snprintf(it.error, sizeof it.error, "--cache-flush '%.100s': expected on or off", v);
    }
    else if (arg_value(&it, "--input-shapes", &v)) shapes = v;
    else if (arg_value(&it, "--freeze-inputs", &v)) freeze = v;
    else if (arg_positional(&it, &v)) {
      if (model) snprintf(it.error, sizeof it.error, "more than one model given ('%.200s', '%.200s')", model, v);
      model = v;
    } else arg_unknown(&it);
  }
  if (!it.error[0] && !model) snprintf(it.error, sizeof it.error, "no model given");
  if (!it.error[0] && !output && !replay_path) snprintf(it.error, sizeof it.error, "no --output records file given");
  if (!it.error[0] && strcmp(tuner, "xgb") && strcmp(tuner, "ga") && strcmp(tuner, "random") && strcmp(tuner, "grid"))
    snprintf(it.error, sizeof it.error, "--tuner '%.100s': expected xgb, ga, random or grid", tuner);
  long long shard_k = 0, shard_n = 1;
  if (!it.error[0] && shard) {
    const char *slash = strchr(shard, '/');
    char kbuf[32];
    snprintf(kbuf, sizeof kbuf, "%.*s", slash ? (int)(slash - shard) : 0, shard);
    if (!slash || !parse_int(kbuf, 0, 1 << 20, &shard_k) || !parse_int(slash + 1, 1, 1 << 20, &shard_n) ||
        shard_k >= shard_n)
      snprintf(it.error, sizeof it.error, "--task-shard '%.100s': expected K/N with 0 <= K < N", shard);
  }
  if (it.error[0]) {
    if (!json) fputs(tune_usage, stderr);
    return report(json, MLC_ERR_USAGE, it.error);
  }
  if (budget > 0 && !trials_given) trials = 1000000; /* the spaces and the time bound it */
  if (parallel <= 0) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    parallel = nc > 0 ? nc : 1;
  }

  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = NULL;
  TuneTasks ts;
  TuneRecords prior = {0}, replay = {0};
  int nbad = 0, rc = 0;
  char msg[2300];
  if (cli_import_model(a, model, shapes, freeze, &g, &d) || tune_extract_tasks(a, g, &copt, &ts, &d) ||
      (prior_path && access(prior_path, F_OK) == 0 && tune_records_load(a, prior_path, &prior, &nbad, &d)) ||
      (replay_path && tune_records_load(a, replay_path, &replay, NULL, &d))) {
    rc = report(json, d.status ? (int)d.status : MLC_ERR_INTERNAL, d.msg);
    arena_free(a);
    return rc;
  }
  if (nbad) fprintf(stderr, PROG ": note: %s: %d lines that are not records skipped\n", prior_path, nbad);
  if (!json) {
    printf("%d tunable tasks in %s for '%s':\n", ts.tasks.n, model, ts.target.str);
    for (int i = 0; i < ts.tasks.n; i++) {
      const TuneTask *t = &ts.tasks.v[i];
      printf("  task %d: %s %s  %.4f GFLOP, %lld configs, %d group%s%s\n", i, t->name, t->args, t->flops * 1e-9,
             (long long)t->space_size, t->ngroups, t->ngroups == 1 ? "" : "s",
             i % shard_n == shard_k ? "" : " (other shard)");
    }
    fflush(stdout);
  }
  FILE *log = trials > 0 && !replay_path ? fopen(output, "a") : NULL;
  if (trials > 0 && !replay_path && !log) {
    snprintf(msg, sizeof msg, "%s: cannot open for appending", output);
    arena_free(a);
    return report(json, MLC_ERR_INVALID, msg);
  }
  double start = tune_clock();
  Progress pr = {isatty(2) && !json, 0, 0, (int)trials};
  for (int i = 0; i < ts.tasks.n; i++) pr.count += i % shard_n == shard_k;
  TuneHistory history = {0};
  TuneOptions to = {.tuner = tuner, .history = transfer ? &history : NULL, .trials = (int)trials, .early_stopping = (int)early,
                    .measure = {.number = (int)number, .repeat = (int)repeat, .min_repeat_ms = (int)min_ms,
                                .timeout = (double)timeout, .threads = (int)threads, .parallel = (int)parallel,
                                .cache_flush = cache_flush,
                                .seed = (uint64_t)seed},
                    .seed = (uint64_t)seed, .prior = prior_path ? &prior : NULL, .log = log,
                    .replay = replay_path ? &replay : NULL,
                    .remeasure = (int)remeasure, .progress = progress, .progress_user = &pr};
  TuneSummary *sums = arena_alloc(a, sizeof(TuneSummary) * (size_t)(ts.tasks.n + 1));
  const TuneTask **tuned = arena_alloc(a, sizeof(TuneTask *) * (size_t)(ts.tasks.n + 1));
  TuneCurve *curves = arena_alloc(a, sizeof(TuneCurve) * (size_t)(ts.tasks.n + 1));
  bool *failed = arena_alloc(a, (size_t)ts.tasks.n + 1);
  bool *skipped = arena_alloc(a, (size_t)ts.tasks.n + 1); /* the time budget was spent before it */
  /* the weights of the time budget: even part + FLOPs part, each summing to 1 over this shard's tasks */
  double *weight = arena_alloc(a, sizeof(double) * (size_t)(ts.tasks.n + 1)), wleft = 0, total_flops = 0;
  int nmine = 0;
  for (int i = 0; i < ts.tasks.n; i++)
    if (i % shard_n == shard_k) {
      nmine++;
      total_flops += ts.tasks.v[i].flops * ts.tasks.v[i].ngroups;
    }
  for (int i = 0; i < ts.tasks.n; i++)
    if (i % shard_n == shard_k) {
      weight[i] = 1.0 / nmine + (total_flops > 0 ? ts.tasks.v[i].flops * ts.tasks.v[i].ngroups / total_flops : 0);
      wleft += weight[i];
    }
  int ntuned = 0;
  for (int i = 0; trials > 0 && i < ts.tasks.n; i++) {
    if (i % shard_n != shard_k) continue;
    pr.pos++;
    if (budget > 0) {
      double now = tune_clock(), left = start + (double)budget - now;
      if (left <= 0) {
        skipped[i] = true;
        fprintf(stderr, PROG ": task %d (%s): not tuned, the time budget is spent\n", i, ts.tasks.v[i].name);
        continue;
      }
      to.deadline = now + left * (wleft > 0 ? weight[i] / wleft : 1);
      wleft -= weight[i];
    }
    Diag td = {0};
    if (tune_task_run(a, &ts, &ts.tasks.v[i], &to, &sums[i], &td) != MLC_OK) {
      /* a task whose default schedule cannot run is reported and skipped; a write error stops */
      fprintf(stderr, PROG ": task %d (%s): %s\n", i, ts.tasks.v[i].name, td.msg);
      failed[i] = true;
      if (td.status == MLC_ERR_INVALID) {
        rc = report(json, MLC_ERR_INVALID, td.msg);
        break;
      }
      continue;
    }
    tuned[ntuned] = &ts.tasks.v[i];
    curves[ntuned++] = sums[i].curve;
  }
  if (log) fclose(log);
  if (!rc && plot && tune_plot_svg(plot, ntuned, tuned, curves, &d) != MLC_OK)
    rc = report(json, d.status, d.msg);
  if (!rc && json) {
    cli_json_begin(stdout, "tune");
    printf(",\"model\":");
    cli_json_string(stdout, model);
    printf(",\"output\":");
    if (output) cli_json_string(stdout, output);
    else printf("null");
    printf(",\"replay\":%s", replay_path ? "true" : "false");
    printf(",\"target\":");
    cli_json_string(stdout, ts.target.str);
    printf(",\"tuner\":\"%s\",\"time_budget_s\":%lld,\"elapsed_s\":%.3f,\"tasks\":[", tuner, budget,
           tune_clock() - start);
    for (int i = 0; i < ts.tasks.n; i++) {
      const TuneTask *t = &ts.tasks.v[i];
      const TuneSummary *s = &sums[i];
      bool mine = trials > 0 && i % shard_n == shard_k && !failed[i] && !skipped[i];
      printf("%s{\"index\":%d,\"name\":", i ? "," : "", i);
      cli_json_string(stdout, t->name);
      printf(",\"args\":%s,\"flops\":%.0f,\"space_size\":%lld,\"groups\":%d,\"tuned\":%s", t->args, t->flops,
             (long long)t->space_size, t->ngroups, mine ? "true" : "false");
      if (skipped[i]) printf(",\"skipped\":\"time budget spent\"");
      if (mine) {
        printf(",\"trials\":%d,\"resumed\":%d,\"errors\":%d,\"remeasured\":%d,\"twins\":%d,\"best_gflops\":%.4f,"
               "\"best_ms\":%.6f,\"best_index\":%lld,\"default_index\":%lld",
               s->trials, s->resumed, s->errors, s->remeasured, s->twins,
               s->best_cost < 1e9 ? t->flops / s->best_cost * 1e-9 : 0,
               s->best_cost < 1e9 ? s->best_cost * 1e3 : 0, (long long)s->best_index, (long long)t->default_index);
        /* null: the default schedule never measured (its error number in default_error) */
        if (s->default_cost < 1e9)
          printf(",\"default_gflops\":%.4f,\"default_ms\":%.6f", t->flops / s->default_cost * 1e-9,
                 s->default_cost * 1e3);
        else
          printf(",\"default_gflops\":null,\"default_ms\":null");
        printf(",\"default_error\":%d,\"seconds\":%.3f,\"out_of_time\":%s,\"transferred\":%d,"
               "\"best_gflops_curve\":[",
               s->default_error, s->seconds, s->out_of_time ? "true" : "false", s->transferred);
        for (int j = 0; j < s->curve.n; j++) printf("%s%.4f", j ? "," : "", s->curve.best_gflops[j]);
        printf("]");
      }
      printf("}");
    }
    printf("]}\n");
  } else if (!rc) {
    for (int i = 0; trials > 0 && i < ts.tasks.n; i++) {
      const TuneTask *t = &ts.tasks.v[i];
      const TuneSummary *s = &sums[i];
      if (i % shard_n != shard_k || failed[i] || skipped[i]) continue;
      char dflt[64];
      if (s->default_cost < 1e9) snprintf(dflt, sizeof dflt, "%.2f GFLOP/s", t->flops / s->default_cost * 1e-9);
      else snprintf(dflt, sizeof dflt, "unknown (error %d)", s->default_error);
      printf("task %d %s: default %s, best %.2f GFLOP/s (config #%lld) after %d trials, %.1f s\n", i, t->name, dflt,
             s->best_cost < 1e9 ? t->flops / s->best_cost * 1e-9 : 0, (long long)s->best_index, s->trials,
             s->seconds);
    }
    if (budget > 0) printf("%.1f s of a %lld s time budget\n", tune_clock() - start, budget);
    if (trials > 0 && log) printf("records appended to %s\n", output);
  }
  tune_history_free(&history);
  arena_free(a);
  return rc;
}
