/* runtime/json: recursive-descent JSON parser (RFC 8259) and a minimal writer.
 *
 * The parser is meant for untrusted files: it never reads past len, limits nesting to RJ_MAX_DEPTH, rejects
 * control characters and embedded NULs in strings, validates \u escapes (surrogate pairs become UTF-8) and
 * reports the byte offset of the first error. Numbers keep an exact int64 when the text is an integer. */
#include "runtime/json.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/rt.h"

typedef struct rj_parser {
  const char *s;
  size_t len, pos;
  char *err;
  bool failed;
} rj_parser;

static void fail(rj_parser *p, const char *what) {
  if (!p->failed) snprintf(p->err, RT_ERRLEN, "invalid JSON at byte %zu: %s", p->pos, what);
  p->failed = true;
}

static void skip_ws(rj_parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static bool parse_value(rj_parser *p, rj_value *v, int depth);

static void free_contents(rj_value *v) {
  if (v->kind == RJ_STR) free(v->str);
  if (v->kind == RJ_ARR || v->kind == RJ_OBJ) {
    for (int i = 0; i < v->n; i++) {
      free_contents(&v->items[i]);
      if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
  }
}

void rj_free(rj_value *v) {
  if (!v) return;
  free_contents(v);
  free(v);
}

static int hex4(rj_parser *p) {
  if (p->len - p->pos < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->s[p->pos + i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  p->pos += 4;
  return v;
}

/* at the opening quote; returns a malloc'd NUL-terminated string */
static char *parse_string(rj_parser *p) {
  p->pos++; /* '"' */
  size_t cap = 16, n = 0;
  char *out = malloc(cap);
  if (!out) return fail(p, "out of memory"), NULL;
  for (;;) {
    if (p->pos >= p->len) return fail(p, "unterminated string"), free(out), NULL;
    unsigned char c = (unsigned char)p->s[p->pos++];
    if (c == '"') break;
    if (c < 0x20) return p->pos--, fail(p, "control character in string"), free(out), NULL;
    char tmp[4];
    int tn = 1;
    tmp[0] = (char)c;
    if (c == '\\') {
      if (p->pos >= p->len) return fail(p, "unterminated escape"), free(out), NULL;
      char e = p->s[p->pos++];
      switch (e) {
      case '"': tmp[0] = '"'; break;
      case '\\': tmp[0] = '\\'; break;
      case '/': tmp[0] = '/'; break;
      case 'b': tmp[0] = '\b'; break;
      case 'f': tmp[0] = '\f'; break;
      case 'n': tmp[0] = '\n'; break;
      case 'r': tmp[0] = '\r'; break;
      case 't': tmp[0] = '\t'; break;
      case 'u': {
        int cp = hex4(p);
        if (cp < 0) return fail(p, "bad \\u escape"), free(out), NULL;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
            return fail(p, "unpaired surrogate"), free(out), NULL;
          p->pos += 2;
          int lo = hex4(p);
          if (lo < 0xDC00 || lo > 0xDFFF) return fail(p, "unpaired surrogate"), free(out), NULL;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail(p, "unpaired surrogate"), free(out), NULL;
        }
        if (cp == 0) return fail(p, "NUL character in string"), free(out), NULL;
        if (cp < 0x80) {
          tmp[0] = (char)cp;
        } else if (cp < 0x800) {
          tmp[0] = (char)(0xC0 | (cp >> 6));
          tmp[1] = (char)(0x80 | (cp & 0x3F));
          tn = 2;
        } else if (cp < 0x10000) {
          tmp[0] = (char)(0xE0 | (cp >> 12));
          tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
          tmp[2] = (char)(0x80 | (cp & 0x3F));
          tn = 3;
        } else {
          tmp[0] = (char)(0xF0 | (cp >> 18));
          tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
          tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
          tmp[3] = (char)(0x80 | (cp & 0x3F));
          tn = 4;
        }
        break;
      }
      default: return p->pos--, fail(p, "bad escape"), free(out), NULL;
      }
    }
    if (n + (size_t)tn + 1 > cap) {
      cap *= 2;
      char *nb = realloc(out, cap);
      if (!nb) return fail(p, "out of memory"), free(out), NULL;
      out = nb;
    }
    memcpy(out + n, tmp, (size_t)tn);
    n += (size_t)tn;
  }
  out[n] = '\0';
  return out;
}

static bool parse_number(rj_parser *p, rj_value *v) {
  size_t start = p->pos;
  bool is_int = true;
  if (p->pos < p->len && p->s[p->pos] == '-') p->pos++;
  if (p->pos >= p->len) return fail(p, "bad number"), false;
  if (p->s[p->pos] == '0') {
    p->pos++;
  } else if (p->s[p->pos] >= '1' && p->s[p->pos] <= '9') {
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  } else {
    return fail(p, "bad number"), false;
  }
  if (p->pos < p->len && p->s[p->pos] == '.') {
    is_int = false;
    p->pos++;
    size_t d = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    if (p->pos == d) return fail(p, "bad number"), false;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    is_int = false;
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    size_t d = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    if (p->pos == d) return fail(p, "bad number"), false;
  }
  char buf[64];
  size_t n = p->pos - start;
  if (n >= sizeof buf) return p->pos = start, fail(p, "number too long"), false;
  memcpy(buf, p->s + start, n);
  buf[n] = '\0';
  v->kind = RJ_NUM;
  v->num = strtod(buf, NULL);
  if (is_int) {
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno == 0) {
      v->is_int = true;
      v->i = x;
    }
  }
  return true;
}

static bool match_word(rj_parser *p, const char *w) {
  size_t n = strlen(w);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0) return false;
  p->pos += n;
  return true;
}

/* appends into a growing items/keys array */
static bool grow(rj_parser *p, rj_value *v, int *cap, bool keys) {
  if (v->n < *cap) return true;
  if (*cap > (1 << 26)) return fail(p, "too many items"), false;
  int nc = *cap ? *cap * 2 : 4;
  rj_value *ni = realloc(v->items, (size_t)nc * sizeof *ni);
  if (!ni) return fail(p, "out of memory"), false;
  v->items = ni;
  if (keys) {
    char **nk = realloc(v->keys, (size_t)nc * sizeof *nk);
    if (!nk) return fail(p, "out of memory"), false;
    v->keys = nk;
  }
  *cap = nc;
  return true;
}

static bool parse_value(rj_parser *p, rj_value *v, int depth) {
  memset(v, 0, sizeof *v);
  skip_ws(p);
  if (p->pos >= p->len) return fail(p, "unexpected end of input"), false;
  char c = p->s[p->pos];
  if (c == '{' || c == '[') {
    if (depth >= RJ_MAX_DEPTH) return fail(p, "nesting too deep"), false;
    bool obj = c == '{';
    char close = obj ? '}' : ']';
    v->kind = obj ? RJ_OBJ : RJ_ARR;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
      p->pos++;
      return true;
    }
    int cap = 0;
    for (;;) {
      if (!grow(p, v, &cap, obj)) return false;
      skip_ws(p);
      char *key = NULL;
      if (obj) {
        if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "expected a key string"), false;
        key = parse_string(p);
        if (!key) return false;
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') return free(key), fail(p, "expected ':'"), false;
        p->pos++;
      }
      bool ok = parse_value(p, &v->items[v->n], depth + 1);
      if (obj) v->keys[v->n] = key;
      v->n++; /* counted even on failure so free_contents releases it */
      if (!ok) return false;
      skip_ws(p);
      if (p->pos >= p->len) return fail(p, "unexpected end of input"), false;
      if (p->s[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->s[p->pos] == close) {
        p->pos++;
        return true;
      }
      return fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'"), false;
    }
  }
  if (c == '"') {
    v->str = parse_string(p);
    if (!v->str) return false;
    v->kind = RJ_STR;
    return true;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, v);
  if (match_word(p, "true")) return v->kind = RJ_BOOL, v->b = true, true;
  if (match_word(p, "false")) return v->kind = RJ_BOOL, true;
  if (match_word(p, "null")) return v->kind = RJ_NULL, true;
  return fail(p, "unexpected character"), false;
}

rj_value *rj_parse(const char *text, size_t len, char *err) {
  rj_parser p = {text, len, 0, err, false};
  rj_value *v = calloc(1, sizeof *v);
  if (!v) return snprintf(err, RT_ERRLEN, "out of memory"), NULL;
  if (!parse_value(&p, v, 0)) return rj_free(v), NULL;
  skip_ws(&p);
  if (p.pos != len) {
    fail(&p, "trailing characters");
    rj_free(v);
    return NULL;
  }
  return v;
}

const rj_value *rj_get(const rj_value *v, const char *key) {
  if (!v || v->kind != RJ_OBJ) return NULL;
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->keys[i], key) == 0) return &v->items[i];
  return NULL;
}

/* ---- writer ---- */

static void reserve(rj_buf *b, size_t extra) {
  if (b->oom || b->len + extra + 1 <= b->cap) return;
  size_t nc = b->cap ? b->cap : 256;
  while (nc < b->len + extra + 1) nc *= 2;
  char *ns = realloc(b->s, nc);
  if (!ns) {
    b->oom = true;
    return;
  }
  b->s = ns;
  b->cap = nc;
}

void rj_printf(rj_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  reserve(b, (size_t)n);
  if (b->oom) return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void rj_put_string(rj_buf *b, const char *s) {
  rj_printf(b, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') rj_printf(b, "\\%c", *c);
    else if (*c == '\n') rj_printf(b, "\\n");
    else if (*c == '\t') rj_printf(b, "\\t");
    else if (*c == '\r') rj_printf(b, "\\r");
    else if (*c < 0x20) rj_printf(b, "\\u%04x", *c);
    else rj_printf(b, "%c", *c);
  }
  rj_printf(b, "\"");
}

char *rj_finish(rj_buf *b) {
  reserve(b, 0);
  if (b->oom) {
    free(b->s);
    return NULL;
  }
  b->s[b->len] = '\0';
  return b->s;
}
