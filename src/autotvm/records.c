/* Tuning records (TVM's autotvm record format, version 0.2): one JSON line per measurement,
 *   {"input": [target, task, args, kwargs], "config": {"index": i, "entity": [[knob, value], ...]},
 *    "result": [[costs...], error_no, all_cost, timestamp], "version": 0.2}
 * appended and flushed as measured, so a killed run loses nothing. Loading keeps every well-formed line
 * (the others are counted and skipped); the best record of a (target, task key) is the valid one with the
 * lowest cost (its fastest repeat), where configs measured again count by their latest measurement
 * (tune_records_best); merging keeps that one per (target, key). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"

char *tune_record_line(const char *target, const TuneTask *t, int64_t index, const TopiConfig *cfg,
                       const MeasureResult *r) {
  cJSON *root = cJSON_CreateObject();
  cJSON *in = cJSON_CreateArray();
  cJSON_AddItemToArray(in, cJSON_CreateString(target));
  cJSON_AddItemToArray(in, cJSON_CreateString(t->name));
  cJSON *args = cJSON_Parse(t->args), *kw = cJSON_Parse(t->kwargs);
  cJSON_AddItemToArray(in, args ? args : cJSON_CreateArray());
  cJSON_AddItemToArray(in, kw ? kw : cJSON_CreateObject());
  cJSON_AddItemToObject(root, "input", in);
  cJSON *conf = cJSON_CreateObject();
  cJSON_AddNumberToObject(conf, "index", (double)index);
  cJSON *ent = cJSON_CreateArray();
  for (int k = 0; k < cfg->nknobs; k++) {
    cJSON *kv = cJSON_CreateArray();
    cJSON_AddItemToArray(kv, cJSON_CreateString(cfg->names[k]));
    cJSON_AddItemToArray(kv, cJSON_CreateNumber((double)cfg->values[k]));
    cJSON_AddItemToArray(ent, kv);
  }
  cJSON_AddItemToObject(conf, "entity", ent);
  cJSON_AddItemToObject(root, "config", conf);
  cJSON *res = cJSON_CreateArray(), *costs = cJSON_CreateArray();
  if (r->error_no == TUNE_NO_ERROR)
    for (int i = 0; i < r->ncosts; i++) cJSON_AddItemToArray(costs, cJSON_CreateNumber(r->costs[i]));
  else
    cJSON_AddItemToArray(costs, cJSON_CreateString(r->msg[0] ? r->msg : "error"));
  cJSON_AddItemToArray(res, costs);
  cJSON_AddItemToArray(res, cJSON_CreateNumber(r->error_no));
  cJSON_AddItemToArray(res, cJSON_CreateNumber(r->all_cost));
  cJSON_AddItemToArray(res, cJSON_CreateNumber(r->timestamp));
  cJSON_AddItemToObject(root, "result", res);
  cJSON_AddNumberToObject(root, "version", 0.2);
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

static bool parse_record(Arena *a, const char *line, TuneRecord *r) {
  cJSON *root = cJSON_Parse(line);
  if (!root) return false;
  bool ok = false;
  cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
  cJSON *conf = cJSON_GetObjectItemCaseSensitive(root, "config");
  cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "result");
  if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) != 4 || !cJSON_IsObject(conf) || !cJSON_IsArray(res) ||
      cJSON_GetArraySize(res) != 4)
    goto done;
  cJSON *tg = cJSON_GetArrayItem(in, 0), *tk = cJSON_GetArrayItem(in, 1), *args = cJSON_GetArrayItem(in, 2),
        *kw = cJSON_GetArrayItem(in, 3);
  cJSON *idx = cJSON_GetObjectItemCaseSensitive(conf, "index"), *ent = cJSON_GetObjectItemCaseSensitive(conf, "entity");
  cJSON *costs = cJSON_GetArrayItem(res, 0), *eno = cJSON_GetArrayItem(res, 1), *all = cJSON_GetArrayItem(res, 2),
        *ts = cJSON_GetArrayItem(res, 3);
  if (!cJSON_IsString(tg) || !cJSON_IsString(tk) || !cJSON_IsArray(args) || !cJSON_IsObject(kw) ||
      !cJSON_IsNumber(idx) || !cJSON_IsArray(ent) || !cJSON_IsArray(costs) || !cJSON_IsNumber(eno) ||
      !cJSON_IsNumber(all) || !cJSON_IsNumber(ts))
    goto done;
  memset(r, 0, sizeof *r);
  r->target = arena_strdup(a, tg->valuestring);
  r->task = arena_strdup(a, tk->valuestring);
  char *as = cJSON_PrintUnformatted(args), *ks = cJSON_PrintUnformatted(kw);
  r->key = arena_printf(a, "%s %s %s", r->task, as ? as : "", ks ? ks : "");
  free(as);
  free(ks);
  r->index = (int64_t)idx->valuedouble;
  cJSON *kv;
  cJSON_ArrayForEach(kv, ent) {
    cJSON *n = cJSON_GetArrayItem(kv, 0), *v = cJSON_GetArrayItem(kv, 1);
    if (!cJSON_IsString(n) || !cJSON_IsNumber(v) || r->config.nknobs >= TOPI_MAX_KNOBS) goto done;
    r->config.names[r->config.nknobs] = arena_strdup(a, n->valuestring);
    r->config.values[r->config.nknobs++] = (int64_t)v->valuedouble;
  }
  r->error_no = (int)eno->valuedouble;
  r->all_cost = all->valuedouble;
  r->timestamp = ts->valuedouble;
  double fastest = 1e9; /* the cost: the fastest repeat, as tune_result_cost */
  cJSON *c;
  cJSON_ArrayForEach(c, costs) {
    if (cJSON_IsNumber(c) && c->valuedouble > 0 && c->valuedouble < fastest) fastest = c->valuedouble;
  }
  r->cost = r->error_no == TUNE_NO_ERROR ? fastest : 1e9;
  if (r->cost >= 1e9 && r->error_no == TUNE_NO_ERROR) r->error_no = TUNE_ERR_UNKNOWN;
  r->line = arena_strdup(a, line);
  ok = true;
done:
  cJSON_Delete(root);
  return ok;
}

mlc_status tune_records_load(Arena *a, const char *path, TuneRecords *out, int *nbad, Diag *d) {
  void *data;
  size_t size;
  if (file_read(path, &data, &size, d) != MLC_OK) return d->status;
  char *text = data;
  int bad = 0;
  for (size_t i = 0; i < size;) {
    size_t j = i;
    while (j < size && text[j] != '\n') j++;
    if (j > i) {
      char *line = arena_alloc(a, j - i + 1);
      memcpy(line, text + i, j - i);
      TuneRecord r;
      bool blank = strspn(line, " \t\r") == j - i;
      if (!blank && parse_record(a, line, &r))
        vec_push(a, &out->v, r);
      else if (!blank)
        bad++;
    }
    i = j + 1;
  }
  free(data);
  if (nbad) *nbad = bad;
  return MLC_OK;
}

static bool same_task(const TuneRecord *x, const char *target, const char *key) {
  return !strcmp(x->target, target) && !strcmp(x->key, key);
}

/* The best record of a task. A config measured more than once (mlc tune --remeasure: at the end of a task its
 * best few configs and the default again, one after the other) is judged by its latest measurement, and such
 * confirmed configs take precedence: the lowest of some 70 noisy first measurements is biased low (ResNet-18's
 * 512-channel conv: a config first timed at 2.17 ms ran 2.71 ms when measured again beside the default's 2.30,
 * and the model compiled with it ran 4% slower than untuned). Without any, the lowest valid cost. */
const TuneRecord *tune_records_best(const TuneRecords *r, const char *target, const char *key) {
  if (!r || r->v.n == 0) return NULL;
  const TuneRecord **mine = malloc(sizeof *mine * (size_t)r->v.n); /* the task's records, in file order */
  const TuneRecord *best = NULL, *confirmed = NULL;
  int n = 0;
  for (int i = 0; i < r->v.n; i++) {
    const TuneRecord *x = &r->v.v[i];
    if (!same_task(x, target, key)) continue;
    if (x->error_no == TUNE_NO_ERROR && (!best || x->cost < best->cost)) best = x;
    if (mine) mine[n++] = x;
  }
  for (int i = 0; i < n; i++) {
    const TuneRecord *x = mine[i];
    if (x->error_no != TUNE_NO_ERROR || (confirmed && x->cost >= confirmed->cost)) continue;
    /* the latest record of a config measured before */
    bool earlier = false, later = false;
    for (int j = 0; j < n && !later; j++)
      if (j != i && mine[j]->index == x->index) earlier |= j < i, later |= j > i;
    if (earlier && !later) confirmed = x;
  }
  free(mine);
  return confirmed ? confirmed : best;
}

mlc_status tune_records_merge(int nfiles, const char *const *files, const char *out, int *nkept, int *nread,
                              Diag *d) {
  Arena *a = arena_new();
  TuneRecords all = {0};
  for (int i = 0; i < nfiles; i++) {
    int bad = 0;
    if (tune_records_load(a, files[i], &all, &bad, d) != MLC_OK) {
      arena_free(a);
      return d->status;
    }
  }
  /* first appearance order of (target, key); the best valid record of each */
  StrBuf b = {0};
  int kept = 0;
  for (int i = 0; i < all.v.n; i++) {
    const TuneRecord *x = &all.v.v[i];
    bool first = true;
    for (int j = 0; j < i && first; j++)
      first = strcmp(all.v.v[j].target, x->target) || strcmp(all.v.v[j].key, x->key);
    if (!first) continue;
    const TuneRecord *best = tune_records_best(&all, x->target, x->key);
    if (!best) continue;
    sb_printf(&b, "%s\n", best->line);
    kept++;
  }
  mlc_status st = file_write_atomic(out, b.s ? b.s : "", b.len, d);
  sb_free(&b);
  if (nkept) *nkept = kept;
  if (nread) *nread = all.v.n;
  arena_free(a);
  return st;
}
