/* mlc compile: ONNX model -> package (tar with mod.so, mod.json, mod.params, meta.json), or a linkable output:
 * `--output-format so` (one shared library that mlc_module_load and `mlc run` open) or `--output-format obj`
 * (an object file plus a C header NAME.h beside it, `--module-name NAME`, `--header PATH`), see
 * src/driver/bundle.c. With --json: one JSON object on stdout (cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autotvm/autotvm.h"
#include "cli/cli.h"
#include "driver/driver.h"
#include "frontends/onnx/onnx.h"

#define PROG "mlc compile"

static const char *compile_usage =
    "usage: mlc compile model.onnx [--target T] [--output model.tar] [--output-format tar|so|obj]\n"
    "                   [--module-name NAME] [--header FILE.h] [--opt-level 0..3] [--input-shapes name:[d,..]]\n"
    "                   [--freeze-inputs values.npz] [--disable-pass P] [--pass-config KEY=N] [--tuning-records records.json] [--dump-ir DIR]\n"
    "                   [--json]\n";

static int report(bool json, int code, const char *msg) {
  fprintf(stderr, PROG ": %s\n", msg);
  if (json) cli_json_error(stdout, "compile", code, msg);
  return code;
}

/* "dir/model.o" -> "model" as a C identifier ("model" when nothing usable is left) */
static void default_module_name(const char *output, char *name, size_t cap) {
  const char *base = strrchr(output, '/');
  base = base ? base + 1 : output;
  size_t n = 0;
  for (const char *p = base; *p && *p != '.' && n + 1 < cap && n < 64; p++)
    name[n++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '_');
  name[n] = 0;
  if (!n || (name[0] >= '0' && name[0] <= '9')) snprintf(name, cap, "model");
}

static int tuned_count(const TuneApply *ap) {
  int n = 0;
  for (int i = 0; i < ap->report.n; i++) n += strstr(ap->report.v[i], ": tuned config #") != NULL;
  return n;
}

/* per task: record used or default; then the records that matched nothing (another target, a changed
 * workload) as notes */
static void tuning_report(const TuneApply *ap, const TuneRecords *recs, const char *path) {
  for (int i = 0; i < ap->report.n; i++) fprintf(stderr, PROG ": tuning: %s\n", ap->report.v[i]);
  int other_target = 0, other_workload = 0;
  for (int i = 0; i < recs->v.n; i++) {
    const TuneRecord *r = &recs->v.v[i];
    if (strcmp(r->target, ap->target)) {
      other_target++;
      continue;
    }
    bool seen = false;
    for (int k = 0; k < ap->seen_keys.n && !seen; k++) seen = !strcmp(ap->seen_keys.v[k], r->key);
    other_workload += !seen;
  }
  if (other_target)
    fprintf(stderr, PROG ": note: %s: %d records for other targets than '%s' ignored\n", path, other_target,
            ap->target);
  if (other_workload)
    fprintf(stderr, PROG ": note: %s: %d records for workloads not in this model (changed workload?) ignored\n", path,
            other_workload);
}

int cmd_compile(int argc, char **argv) {
  const char *model = NULL, *output = NULL, *format = "tar", *shapes = NULL, *module_name = NULL, *header = NULL,
             *records = NULL, *freeze = NULL;
  CompileOptions opt = {.target = "llvm", .opt_level = 3};
  bool json = false;
  const char *disabled[64], *config[64];
  opt.disabled = disabled;
  opt.pass_config = config;
  char msg[1024];
  ArgIter it;
  arg_init(&it, argc, argv);
  while (arg_more(&it)) {
    const char *v;
    long long lv;
    if (arg_flag(&it, "--json")) json = true;
    else if (arg_flag(&it, "--help") || arg_flag(&it, "-h")) {
      fputs(compile_usage, stdout);
      return 0;
    } else if (arg_value(&it, "--target", &v)) opt.target = v;
    else if (arg_value(&it, "--output", &v) || arg_value(&it, "-o", &v)) output = v;
    else if (arg_value(&it, "--output-format", &v)) format = v;
    else if (arg_value(&it, "--module-name", &v)) module_name = v;
    else if (arg_value(&it, "--header", &v)) header = v;
    else if (arg_int(&it, "--opt-level", 0, 3, &lv) || arg_int(&it, "-O", 0, 3, &lv)) opt.opt_level = (int)lv;
    else if (arg_value(&it, "--input-shapes", &v)) shapes = v;
    else if (arg_value(&it, "--freeze-inputs", &v)) freeze = v;
    else if (arg_value(&it, "--dump-ir", &v)) opt.dump_dir = v;
    else if (arg_value(&it, "--tuning-records", &v)) records = v;
    else if (arg_value(&it, "--disable-pass", &v)) {
      if (it.error[0]) break;
      if (!pass_find(v)) {
        int n = snprintf(it.error, sizeof it.error, "--disable-pass: unknown pass '%.100s'; passes:", v);
        for (int k = 0; k < pass_count() && n < (int)sizeof it.error - 40; k++)
          n += snprintf(it.error + n, sizeof it.error - (size_t)n, " %s", pass_at(k)->name);
      } else if (opt.ndisabled < 64) disabled[opt.ndisabled++] = v;
    } else if (arg_value(&it, "--pass-config", &v)) {
      if (it.error[0]) break;
      char key[128], *end = NULL;
      const char *eq = strchr(v, '=');
      snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - v) : 0, v);
      if (eq) strtoll(eq + 1, &end, 0);
      if (!eq || !pass_config_known(key) || !end || *end || end == eq + 1) {
        int n = snprintf(it.error, sizeof it.error, "--pass-config '%.100s': expected KEY=INTEGER, KEY one of:", v);
#define X(k, dflt) n += snprintf(it.error + n, sizeof it.error - (size_t)n, " %s", k);
        PASS_CONFIG_KEYS(X)
#undef X
      } else if (opt.npass_config < 64) config[opt.npass_config++] = v;
    } else if (arg_positional(&it, &v)) {
      if (model) snprintf(it.error, sizeof it.error, "more than one model given ('%.200s', '%.200s')", model, v);
      model = v;
    } else arg_unknown(&it);
  }
  if (it.error[0]) {
    if (!json) fputs(compile_usage, stderr);
    return report(json, MLC_ERR_USAGE, it.error);
  }
  if (opt.target && !strcmp(opt.target, "help")) { /* mlc compile --target help */
    fputs(cg_target_help(), stdout);
    return 0;
  }
  if (!model) {
    if (!json) fputs(compile_usage, stderr);
    return report(json, MLC_ERR_USAGE, "no model given");
  }
  bool is_so = !strcmp(format, "so"), is_obj = !strcmp(format, "obj");
  if (strcmp(format, "tar") && !is_so && !is_obj) {
    snprintf(msg, sizeof msg, "--output-format '%.100s': expected tar, so or obj", format);
    return report(json, MLC_ERR_USAGE, msg);
  }
  if (!output) output = is_so ? "module.so" : is_obj ? "module.o" : "module.tar";
  char name_buf[80], *header_buf = NULL;
  if (is_obj) {
    if (!module_name) {
      default_module_name(output, name_buf, sizeof name_buf);
      module_name = name_buf;
    }
    if (!mlc_c_identifier_ok(module_name)) {
      snprintf(msg, sizeof msg, "--module-name '%.100s': not a C identifier (letters, digits, '_', at most 64)",
               module_name);
      return report(json, MLC_ERR_USAGE, msg);
    }
    if (!header) {
      /* model.o -> model.h beside it */
      size_t n = strlen(output);
      header_buf = malloc(n + 3);
      if (!header_buf) return report(json, MLC_ERR_INTERNAL, "out of memory");
      memcpy(header_buf, output, n + 1);
      char *dot = strrchr(header_buf, '.'), *slash = strrchr(header_buf, '/');
      if (dot && (!slash || dot > slash)) strcpy(dot, ".h");
      else strcat(header_buf, ".h");
      header = header_buf;
    }
  } else if (module_name || header) {
    free(header_buf);
    return report(json, MLC_ERR_USAGE, "--module-name and --header apply to --output-format obj only");
  }
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = NULL;
  Compiled *c = NULL;
  int rc = 0;
  /* --tuning-records: apply-history-best (src/autotvm/tasks.c) picks each group's config */
  TuneRecords recs = {0};
  TuneApply apply = {.records = &recs, .arena = a};
  Target tgt;
  if (records) {
    int nbad = 0;
    if (cg_target_parse(opt.target, &tgt, &d) != MLC_OK || tune_records_load(a, records, &recs, &nbad, &d) != MLC_OK) {
      rc = report(json, d.status ? (int)d.status : MLC_ERR_INTERNAL, d.msg);
      arena_free(a);
      free(header_buf);
      return rc;
    }
    if (nbad) fprintf(stderr, PROG ": note: %s: %d lines that are not records skipped\n", records, nbad);
    apply.target = tgt.str;
    opt.pick_config = tune_apply_pick;
    opt.pick_user = &apply;
    opt.conv_block = tune_apply_conv_block;
    opt.conv_block_user = &apply;
  }
  if (cli_import_model(a, model, shapes, freeze, &g, &d) || mlc_compile_graph(a, g, &opt, &c, &d) ||
      (is_so ? mlc_write_shared(c, output, &d)
             : is_obj ? mlc_write_object(c, output, header, module_name, &d) : mlc_write_package(c, output, &d))) {
    rc = report(json, d.status ? (int)d.status : MLC_ERR_INTERNAL, d.msg);
  } else {
    if (records) tuning_report(&apply, &recs, records);
    if (json) {
      cli_json_begin(stdout, "compile");
      printf(",\"model\":");
      cli_json_string(stdout, model);
      printf(",\"output\":");
      cli_json_string(stdout, output);
      printf(",\"format\":\"%s\"", format);
      if (is_obj) {
        printf(",\"header\":");
        cli_json_string(stdout, header);
        printf(",\"module_name\":");
        cli_json_string(stdout, module_name);
      }
      printf(",\"target\":");
      cli_json_string(stdout, c->target.str);
      if (records) printf(",\"tuned_tasks\":%d", tuned_count(&apply));
      printf(",\"kernels\":%d,\"activation_bytes\":%lld,\"compile_seconds\":%.3f}\n", c->kernels.n,
             (long long)c->memory.total_bytes, c->seconds);
    } else {
      printf("compiled %s for '%s': %d kernels, %lld bytes of activations, %.2f s -> %s%s%s\n", model,
             c->target.str, c->kernels.n, (long long)c->memory.total_bytes, c->seconds, output, is_obj ? " + " : "",
             is_obj ? header : "");
    }
  }
  mlc_compiled_free(c);
  arena_free(a);
  free(header_buf);
  return rc;
}
