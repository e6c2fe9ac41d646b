/* Diagnostics: errors are values. The first error wins; diag_append extends it (lists of unsupported ops). */
#include <stdio.h>
#include <string.h>
#include "support/support.h"

mlc_status diag_set(Diag *d, mlc_status status, const char *fmt, ...) {
  if (!d || d->status != MLC_OK) return d ? d->status : status;
  d->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  return status;
}

void diag_append(Diag *d, const char *fmt, ...) {
  size_t len = strlen(d->msg);
  if (len + 3 >= sizeof d->msg) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg + len, sizeof d->msg - len, fmt, ap);
  va_end(ap);
}
