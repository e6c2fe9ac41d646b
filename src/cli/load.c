/* mlc load: import an ONNX model into the graph IR and show it: inputs, outputs, op counts, parameters,
 * MACs (text or --json: one object, see cli.h), and the IR itself with --dump-ir FILE ("-" for stdout). */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "frontends/onnx/onnx.h"

static int load_fail(bool json, int code, const char *msg) {
  fprintf(stderr, "mlc load: %s\n", msg);
  if (json) cli_json_error(stdout, "load", code, msg);
  return code;
}

static void print_tensor(FILE *f, const Value *v, bool json) {
  if (json) {
    fprintf(f, "{\"name\":");
    cli_json_string(f, v->name);
    fprintf(f, ",\"dtype\":\"%s\",\"shape\":[", mlc_dtype_name(v->type.dtype));
    for (int i = 0; i < v->type.ndim; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)v->type.dims[i]);
    fprintf(f, "]");
    if (v->dyn_extent) fprintf(f, ",\"dynamic_axis\":%d", v->dyn_axis); /* shape[axis] is an upper bound */
    fprintf(f, "}");
  } else {
    fprintf(f, "  %s: %s[", v->name, mlc_dtype_name(v->type.dtype));
    for (int i = 0; i < v->type.ndim; i++)
      fprintf(f, "%s%s%lld", i ? ", " : "", v->dyn_extent && v->dyn_axis == i ? "<=" : "", (long long)v->type.dims[i]);
    fprintf(f, "]%s\n", v->dyn_extent ? " (data-dependent)" : "");
  }
}

static const char *human(double v, char *buf, size_t n) {
  const char *unit[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, u++;
  snprintf(buf, n, u ? "%.2f%s" : "%.0f%s", v, unit[u]);
  return buf;
}

int cmd_load(int argc, char **argv) {
  const char *model = NULL, *shapes = NULL, *dump = NULL, *freeze = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--json")) json = true;
  for (int i = 1; i < argc; i++) {
    char msg[512];
    if (!strcmp(argv[i], "--input-shapes") && i + 1 < argc) shapes = argv[++i];
    else if (!strcmp(argv[i], "--freeze-inputs") && i + 1 < argc) freeze = argv[++i];
    else if (!strcmp(argv[i], "--dump-ir") && i + 1 < argc) dump = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = true;
    else if (argv[i][0] == '-' && argv[i][1]) {
      snprintf(msg, sizeof msg, "unknown or incomplete option '%.200s'", argv[i]);
      return load_fail(json, MLC_ERR_USAGE, msg);
    } else if (!model) model = argv[i];
    else return load_fail(json, MLC_ERR_USAGE, "more than one model given");
  }
  if (!model) {
    if (!json) fprintf(stderr, "usage: mlc load model.onnx [--input-shapes name:[d,..]] [--freeze-inputs values.npz] [--dump-ir FILE] [--json]\n");
    return load_fail(json, MLC_ERR_USAGE, "no model given");
  }
  Arena *a = arena_new();
  Diag d = {0};
  Graph *g = NULL;
  if (cli_import_model(a, model, shapes, freeze, &g, &d)) {
    int code = load_fail(json, d.status ? (int)d.status : MLC_ERR_INTERNAL, d.msg);
    arena_free(a);
    return code;
  }
  if (dump) {
    StrBuf b = {0};
    ir_print(g, &b);
    if (!strcmp(dump, "-")) fputs(b.s, stdout);
    else if (file_write_atomic(dump, b.s, b.len, &d) != MLC_OK) {
      int code = load_fail(json, d.status ? (int)d.status : MLC_ERR_INTERNAL, d.msg);
      sb_free(&b);
      arena_free(a);
      return code;
    }
    sb_free(&b);
  }
  GraphStats s;
  ir_graph_stats(g, &s);
  char b1[32], b2[32], b3[32];
  if (json) {
    cli_json_begin(stdout, "load");
    printf(",\"model\":");
    cli_json_string(stdout, model);
    printf(",\"inputs\":[");
    for (int i = 0; i < g->inputs.n; i++) {
      if (i) printf(",");
      print_tensor(stdout, g->inputs.v[i], true);
    }
    printf("],\"outputs\":[");
    for (int i = 0; i < g->outputs.n; i++) {
      if (i) printf(",");
      print_tensor(stdout, g->outputs.v[i], true);
    }
    printf("],\"nodes\":%d,\"ops\":{", s.nnodes);
    for (int i = 0; i < s.nops; i++) {
      printf("%s", i ? "," : "");
      cli_json_string(stdout, s.ops[i].op);
      printf(":%d", s.ops[i].count);
    }
    printf("},\"params\":%lld,\"param_bytes\":%lld,\"macs\":%lld}\n", (long long)s.params, (long long)s.param_bytes,
           (long long)s.macs);
  } else if (!dump || strcmp(dump, "-")) {
    printf("model: %s\ninputs:\n", model);
    for (int i = 0; i < g->inputs.n; i++) print_tensor(stdout, g->inputs.v[i], false);
    printf("outputs:\n");
    for (int i = 0; i < g->outputs.n; i++) print_tensor(stdout, g->outputs.v[i], false);
    printf("nodes: %d\nops:\n", s.nnodes);
    for (int i = 0; i < s.nops; i++) printf("  %-28s %d\n", s.ops[i].op, s.ops[i].count);
    printf("parameters: %s (%sB)\nMACs: %s\n", human((double)s.params, b1, sizeof b1),
           human((double)s.param_bytes, b2, sizeof b2), human((double)s.macs, b3, sizeof b3));
  }
  arena_free(a);
  return 0;
}
