/* mlc tune: AutoTVM-style template tuning (src/autotvm). Not available in this version: it says so and
 * exits with the "unsupported" code, so build scripts fail loudly instead of using untuned records. */
#include <stdio.h>
#include "support/support.h"

int cmd_tune(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "mlc tune: error: tuning is not available in mlc %s; `mlc compile` uses the default schedules\n",
          MLC_VERSION);
  return MLC_ERR_UNSUPPORTED;
}
