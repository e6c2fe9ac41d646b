/* Runtime error state: one thread-local message buffer behind mlc_rt_last_error().
 *
 * Runtime internals report errors into caller-supplied `char err[RT_ERRLEN]` buffers; the public mlc_module_*
 * API copies the final message here with rt_set_error so a C caller can read it after a non-zero status,
 * in the style of xgboost's XGBGetLastError. */
#include <stdarg.h>
#include <stdio.h>
#include "runtime/rt.h"

static _Thread_local char rt_last_error[RT_ERRLEN];

void rt_set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt_last_error, sizeof rt_last_error, fmt, ap);
  va_end(ap);
}

const char *mlc_rt_last_error(void) { return rt_last_error; }
