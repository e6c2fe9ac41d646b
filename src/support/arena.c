/* Arenas: bump allocation in chunks, freed whole. Every IR node of a compilation lives in one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "support/support.h"

typedef struct Chunk {
  struct Chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
  Chunk *head;
  size_t total;
};

Arena *arena_new(void) {
  Arena *a = calloc(1, sizeof(Arena));
  return a;
}

void arena_free(Arena *a) {
  if (!a) return;
  for (Chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *arena_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  Chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t size = n > (1u << 20) ? n : (1u << 20);
    c = malloc(sizeof(Chunk) + size);
    if (!c) {
      fprintf(stderr, "mlc: out of memory (%zu bytes)\n", n);
      exit(MLC_ERR_INTERNAL);
    }
    c->size = size;
    c->used = 0;
    /* a huge one-off block goes behind the current chunk so the current one keeps filling */
    if (a->head && n > (1u << 19)) {
      c->next = a->head->next;
      a->head->next = c;
    } else {
      c->next = a->head;
      a->head = c;
    }
    a->total += size;
  }
  void *p = c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char *arena_strdup(Arena *a, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  return memcpy(arena_alloc(a, n), s, n);
}

void *arena_memdup(Arena *a, const void *p, size_t n) {
  void *q = arena_alloc(a, n ? n : 1);
  if (n) memcpy(q, p, n);
  return q;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = arena_alloc(a, (size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

size_t arena_bytes(const Arena *a) { return a->total; }
