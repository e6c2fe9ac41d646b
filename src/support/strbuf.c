/* StrBuf: a growable malloc'd string for printers and serialisers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support/support.h"

static void sb_reserve(StrBuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *s = realloc(b->s, cap);
  if (!s) {
    fprintf(stderr, "mlc: out of memory\n");
    exit(MLC_ERR_INTERNAL);
  }
  b->s = s;
  b->cap = cap;
}

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  sb_reserve(b, (size_t)n);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  b->len += (size_t)n;
}

void sb_printf(StrBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

void sb_putc(StrBuf *b, char c) {
  sb_reserve(b, 1);
  b->s[b->len++] = c;
  b->s[b->len] = 0;
}

void sb_free(StrBuf *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}
