/* Whole-file reads and atomic writes (temporary file, then rename: no half-written output is ever left). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "support/support.h"

mlc_status file_read(const char *path, void **data, size_t *size, Diag *d) {
  FILE *f = fopen(path, "rb");
  if (!f) return diag_set(d, MLC_ERR_INVALID, "%s: cannot open: %s", path, strerror(errno));
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return diag_set(d, MLC_ERR_INVALID, "%s: cannot seek: not a regular file", path);
  }
  long n = ftell(f);
  if (n < 0) {
    fclose(f);
    return diag_set(d, MLC_ERR_INVALID, "%s: cannot read: %s", path, strerror(errno));
  }
  rewind(f);
  void *buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    fclose(f);
    return diag_set(d, MLC_ERR_INVALID, "%s: read failed", path);
  }
  ((char *)buf)[n] = 0;
  fclose(f);
  *data = buf;
  *size = (size_t)n;
  return MLC_OK;
}

mlc_status file_write_atomic(const char *path, const void *data, size_t size, Diag *d) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return diag_set(d, MLC_ERR_INVALID, "%s: cannot write: %s", path, strerror(errno));
  bool ok = fwrite(data, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return diag_set(d, MLC_ERR_INVALID, "%s: cannot write: %s", path, strerror(e));
  }
  return MLC_OK;
}
