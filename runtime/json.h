/* runtime/json: a small JSON reader and writer for mod.json and meta.json (the runtime may not link cJSON).
 * Internal to the runtime and the package writers; not part of the public API. */
#ifndef MLC_RT_JSON_H
#define MLC_RT_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RJ_MAX_DEPTH 64

typedef enum rj_kind {
  RJ_NULL,
  RJ_BOOL,
  RJ_NUM, /* num always set; is_int and i when the text was an integer that fits int64 */
  RJ_STR,
  RJ_ARR,
  RJ_OBJ,
} rj_kind;

typedef struct rj_value {
  rj_kind kind;
  bool b;
  bool is_int;
  int64_t i;
  double num;
  char *str;              /* RJ_STR: NUL-terminated (embedded NULs rejected) */
  int n;                  /* RJ_ARR/RJ_OBJ: number of items */
  struct rj_value *items; /* items[n] */
  char **keys;            /* RJ_OBJ: keys[n] */
} rj_value;

/* Parses text[0..len). Returns a malloc'd tree (free with rj_free) or NULL with a message in err (RT_ERRLEN). */
rj_value *rj_parse(const char *text, size_t len, char *err);
void rj_free(rj_value *v);
/* Object member by key, NULL if absent or v is not an object. */
const rj_value *rj_get(const rj_value *v, const char *key);

/* ---- writer: a growable malloc'd string ---- */
typedef struct rj_buf {
  char *s;
  size_t len, cap;
  bool oom;
} rj_buf;
void rj_printf(rj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rj_put_string(rj_buf *b, const char *s); /* quoted and escaped */
/* Returns the string (caller frees) or NULL if memory ran out. */
char *rj_finish(rj_buf *b);

#endif
