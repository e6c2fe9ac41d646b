/* mlc: the command-line driver. `mlc load | compile | run | tune`, each in its own file.
 * Exit codes: 0 ok, 1 usage, 2 invalid model or input, 3 unsupported, 4 internal error. */
#include <stdio.h>
#include <string.h>
#include "support/support.h"

int cmd_load(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_records(int argc, char **argv);

static void usage(FILE *f) {
  fprintf(f,
          "usage: mlc <command> [options]\n"
          "\n"
          "commands:\n"
          "  load     model.onnx [--input-shapes name:[d,..]] [--freeze-inputs values.npz]\n"
          "           [--dump-ir FILE] [--json]\n"
          "  compile  model.onnx [--target T] [--output model.tar] [--opt-level 0..3]\n"
          "           [--input-shapes name:[d,..]] [--freeze-inputs values.npz]\n"
          "           [--dump-ir DIR] [--json]\n"
          "  run      model.tar [--inputs in.npz] [--outputs out.npz] [--repeat N] [--number N]\n"
          "           [--print-time] [--print-top K] [--profile] [--threads N] [--json]\n"
          "  tune     model.onnx --target T --output records.json [--tuner xgb|ga|random|grid] [--trials N]\n"
          "  records  merge a.json b.json .. -o out.json\n"
          "\n"
          "exit codes: 0 ok, 1 usage, 2 invalid model or input, 3 unsupported, 4 internal error\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return MLC_ERR_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("mlc %s\n", MLC_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "load")) return cmd_load(argc - 1, argv + 1);
  if (!strcmp(cmd, "compile")) return cmd_compile(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "tune")) return cmd_tune(argc - 1, argv + 1);
  if (!strcmp(cmd, "records")) return cmd_records(argc - 1, argv + 1);
  fprintf(stderr, "mlc: unknown command '%s'\n", cmd);
  usage(stderr);
  return MLC_ERR_USAGE;
}
