/* mlc tune: AutoTVM-style template tuning (src/autotvm). Not available in this version: it says so and
 * exits with the "unsupported" code, so build scripts fail loudly instead of using untuned records; with
 * --json the same error is one JSON object on stdout (cli.h). Usage errors are still usage errors. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "support/support.h"

int cmd_tune(int argc, char **argv) {
  bool json = false;
  const char *model = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = true;
    else if (argv[i][0] != '-' && !model && (i == 1 || argv[i - 1][0] != '-' || !strcmp(argv[i - 1], "--json")))
      model = argv[i];
  }
  char msg[512];
  int code = MLC_ERR_UNSUPPORTED;
  if (!model) {
    code = MLC_ERR_USAGE;
    snprintf(msg, sizeof msg, "no model given; usage: mlc tune model.onnx --target T --output records.json");
  } else {
    snprintf(msg, sizeof msg, "tuning is not available in mlc %s; `mlc compile` uses the default schedules",
             MLC_VERSION);
  }
  fprintf(stderr, "mlc tune: error: %s\n", msg);
  if (json) cli_json_error(stdout, "tune", code, msg);
  return code;
}
