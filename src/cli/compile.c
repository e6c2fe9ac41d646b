/* mlc compile: ONNX model -> package (tar with mod.so, mod.json, mod.params, meta.json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/driver.h"
#include "frontends/onnx/onnx.h"

static int fail(const Diag *d) {
  fprintf(stderr, "mlc compile: %s\n", d->msg);
  return d->status ? (int)d->status : MLC_ERR_INTERNAL;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

int cmd_compile(int argc, char **argv) {
  const char *model = NULL, *output = "module.tar", *format = "tar", *shapes = NULL;
  CompileOptions opt = {.target = "llvm", .opt_level = 3};
  bool json = false;
  const char *disabled[64];
  opt.disabled = disabled;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_val = i + 1 < argc;
#define OPTION(name) (!strcmp(a, name) && has_val && (++i, 1))
    if (OPTION("--target")) opt.target = argv[i];
    else if (OPTION("--output") || OPTION("-o")) output = argv[i];
    else if (OPTION("--output-format")) format = argv[i];
    else if (OPTION("--opt-level") || OPTION("-O")) {
      char *end;
      long v = strtol(argv[i], &end, 10);
      if (*end || v < 0 || v > 3) {
        fprintf(stderr, "mlc compile: --opt-level must be 0..3, got '%s'\n", argv[i]);
        return MLC_ERR_USAGE;
      }
      opt.opt_level = (int)v;
    } else if (OPTION("--input-shapes")) shapes = argv[i];
    else if (OPTION("--dump-ir")) opt.dump_dir = argv[i];
    else if (OPTION("--disable-pass")) {
      if (!pass_find(argv[i])) {
        fprintf(stderr, "mlc compile: --disable-pass: unknown pass '%s'; passes:", argv[i]);
        for (int k = 0; k < pass_count(); k++) fprintf(stderr, " %s", pass_at(k)->name);
        fprintf(stderr, "\n");
        return MLC_ERR_USAGE;
      }
      if (opt.ndisabled < 64) disabled[opt.ndisabled++] = argv[i];
    }
    else if (!strcmp(a, "--json")) json = true;
    else if (a[0] == '-') {
      fprintf(stderr, "mlc compile: unknown or incomplete option '%s'\n", a);
      return MLC_ERR_USAGE;
    } else if (!model) model = a;
    else {
      fprintf(stderr, "mlc compile: more than one model given ('%s', '%s')\n", model, a);
      return MLC_ERR_USAGE;
    }
#undef OPTION
  }
  if (!model) {
    fprintf(stderr, "usage: mlc compile model.onnx [--target T] [--output model.tar] [--opt-level 0..3]\n"
                    "                   [--input-shapes name:[d,..]] [--dump-ir DIR] [--json]\n");
    return MLC_ERR_USAGE;
  }
  if (strcmp(format, "tar") != 0) {
    fprintf(stderr, "mlc compile: --output-format %s: only 'tar' is supported in this version\n", format);
    return MLC_ERR_UNSUPPORTED;
  }
  Arena *a = arena_new();
  Diag d = {0};
  OnnxImportOptions io = {0};
  Graph *g = NULL;
  Compiled *c = NULL;
  int rc = 0;
  if ((shapes && onnx_parse_input_shapes(a, shapes, &io, &d) != MLC_OK) || onnx_import_file(a, model, &io, &g, &d) ||
      mlc_compile_graph(a, g, &opt, &c, &d) || mlc_write_package(c, output, &d)) {
    rc = fail(&d);
  } else if (json) {
    printf("{\"model\":");
    json_string(stdout, model);
    printf(",\"output\":");
    json_string(stdout, output);
    printf(",\"target\":");
    json_string(stdout, c->target.str);
    printf(",\"kernels\":%d,\"activation_bytes\":%lld,\"compile_seconds\":%.3f}\n", c->kernels.n,
           (long long)c->memory.total_bytes, c->seconds);
  } else {
    printf("compiled %s for '%s': %d kernels, %lld bytes of activations, %.2f s -> %s\n", model, c->target.str,
           c->kernels.n, (long long)c->memory.total_bytes, c->seconds, output);
  }
  mlc_compiled_free(c);
  arena_free(a);
  return rc;
}
