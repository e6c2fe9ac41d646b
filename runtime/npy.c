/* .npy and .npz reading and writing, with an own inflate (the runtime may not link zlib).
 *
 * .npy: magic "\x93NUMPY", version 1.0 (u16 header length), 2.0 or 3.0 (u32), then a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } parsed by a tiny recursive reader; little-endian
 * and byte types only, C order only. .npz: a zip archive; the central directory (zip64 fields understood, as
 * numpy's savez forces zip64 local headers) gives each member's method, sizes, CRC and local header; members
 * are "stored" or "deflated". Inflate follows RFC 1951 with canonical Huffman decoding bit by bit (the
 * algorithm of Mark Adler's puff): stored, fixed and dynamic blocks; every length, distance, code set and
 * buffer bound is checked, and the CRC-32 of each member is verified. Writing produces stored members with
 * their CRC-32, to a temporary file renamed into place. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/rt.h"

#define NPY_MAX_BYTES ((uint64_t)1 << 40)

static const struct {
  const char *descr;
  mlc_dtype dtype;
} npy_types[] = {
    {"<f4", MLC_F32}, {"<f8", MLC_F64}, {"<i8", MLC_I64}, {"<i4", MLC_I32}, {"|u1", MLC_U8},  {"|b1", MLC_BOOL},
    {"<f2", MLC_F16}, {"<i2", MLC_I16}, {"<u2", MLC_U16}, {"<u4", MLC_U32}, {"<u8", MLC_U64}, {"|i1", MLC_I8},
};

/* ---- CRC-32 (IEEE 802.3, reflected, table-driven) ---- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static void crc_build(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[n] = c;
  }
}
static uint32_t crc32_of(const void *data, size_t n) {
  pthread_once(&crc_once, crc_build);
  const unsigned char *p = data;
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

/* ---- inflate (RFC 1951) ---- */

typedef struct inflate_state {
  const unsigned char *in;
  size_t inlen, inpos;
  uint32_t bitbuf;
  int bitcnt;
  unsigned char *out;
  size_t outlen, outpos;
  const char *error;
} inflate_state;

typedef struct huffman {
  short count[16]; /* codes of each length */
  short symbol[288];
} huffman;

static int getbits(inflate_state *s, int need) {
  uint32_t val = s->bitbuf;
  while (s->bitcnt < need) {
    if (s->inpos == s->inlen) {
      s->error = "compressed data truncated";
      return -1;
    }
    val |= (uint32_t)s->in[s->inpos++] << s->bitcnt;
    s->bitcnt += 8;
  }
  s->bitbuf = val >> need;
  s->bitcnt -= need;
  return (int)(val & ((1u << need) - 1));
}

/* Builds canonical code tables; returns 0 complete, > 0 incomplete, < 0 over-subscribed. */
static int huff_build(huffman *h, const short *length, int n) {
  memset(h->count, 0, sizeof h->count);
  for (int sym = 0; sym < n; sym++) h->count[length[sym]]++;
  if (h->count[0] == n) return 0;
  int left = 1;
  for (int len = 1; len < 16; len++) {
    left <<= 1;
    left -= h->count[len];
    if (left < 0) return left;
  }
  short offs[16];
  offs[1] = 0;
  for (int len = 1; len < 15; len++) offs[len + 1] = (short)(offs[len] + h->count[len]);
  for (int sym = 0; sym < n; sym++)
    if (length[sym] != 0) h->symbol[offs[length[sym]]++] = (short)sym;
  return left;
}

static int huff_decode(inflate_state *s, const huffman *h) {
  int code = 0, first = 0, index = 0;
  for (int len = 1; len < 16; len++) {
    int b = getbits(s, 1);
    if (b < 0) return -1;
    code |= b;
    int count = h->count[len];
    if (code - count < first) return h->symbol[index + (code - first)];
    index += count;
    first += count;
    first <<= 1;
    code <<= 1;
  }
  s->error = "invalid Huffman code";
  return -1;
}

static const short len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                   31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const short len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const short dist_base[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const short dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static int inflate_codes(inflate_state *s, const huffman *lencode, const huffman *distcode) {
  for (;;) {
    int sym = huff_decode(s, lencode);
    if (sym < 0) return -1;
    if (sym < 256) {
      if (s->outpos == s->outlen) return s->error = "inflated data larger than declared", -1;
      s->out[s->outpos++] = (unsigned char)sym;
    } else if (sym == 256) {
      return 0;
    } else {
      sym -= 257;
      if (sym >= 29) return s->error = "invalid length symbol", -1;
      int e = getbits(s, len_extra[sym]);
      if (e < 0) return -1;
      size_t len = (size_t)(len_base[sym] + e);
      int dsym = huff_decode(s, distcode);
      if (dsym < 0) return -1;
      if (dsym >= 30) return s->error = "invalid distance symbol", -1;
      e = getbits(s, dist_extra[dsym]);
      if (e < 0) return -1;
      size_t dist = (size_t)(dist_base[dsym] + e);
      if (dist > s->outpos) return s->error = "distance too far back", -1;
      if (len > s->outlen - s->outpos) return s->error = "inflated data larger than declared", -1;
      for (size_t i = 0; i < len; i++, s->outpos++) s->out[s->outpos] = s->out[s->outpos - dist];
    }
  }
}

static int inflate_stored(inflate_state *s) {
  s->bitbuf = 0;
  s->bitcnt = 0;
  if (s->inlen - s->inpos < 4) return s->error = "stored block truncated", -1;
  const unsigned char *p = s->in + s->inpos;
  unsigned len = p[0] | (unsigned)p[1] << 8, nlen = p[2] | (unsigned)p[3] << 8;
  if (len != (~nlen & 0xFFFF)) return s->error = "stored block length check failed", -1;
  s->inpos += 4;
  if (s->inlen - s->inpos < len) return s->error = "stored block truncated", -1;
  if (s->outlen - s->outpos < len) return s->error = "inflated data larger than declared", -1;
  memcpy(s->out + s->outpos, s->in + s->inpos, len);
  s->inpos += len;
  s->outpos += len;
  return 0;
}

static int inflate_fixed(inflate_state *s) {
  huffman lencode, distcode; /* rebuilt per block: cheap, and no shared state between threads */
  {
    short lengths[288];
    int sym = 0;
    for (; sym < 144; sym++) lengths[sym] = 8;
    for (; sym < 256; sym++) lengths[sym] = 9;
    for (; sym < 280; sym++) lengths[sym] = 7;
    for (; sym < 288; sym++) lengths[sym] = 8;
    huff_build(&lencode, lengths, 288);
    for (sym = 0; sym < 30; sym++) lengths[sym] = 5;
    huff_build(&distcode, lengths, 30);
  }
  return inflate_codes(s, &lencode, &distcode);
}

static int inflate_dynamic(inflate_state *s) {
  static const short order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  short lengths[320];
  huffman lencode, distcode;
  int nlen = getbits(s, 5), ndist = getbits(s, 5), ncode = getbits(s, 4);
  if (nlen < 0 || ndist < 0 || ncode < 0) return -1;
  nlen += 257;
  ndist += 1;
  ncode += 4;
  if (nlen > 286 || ndist > 30) return s->error = "bad dynamic block counts", -1;
  int idx;
  for (idx = 0; idx < ncode; idx++) {
    int b = getbits(s, 3);
    if (b < 0) return -1;
    lengths[order[idx]] = (short)b;
  }
  for (; idx < 19; idx++) lengths[order[idx]] = 0;
  if (huff_build(&lencode, lengths, 19) != 0) return s->error = "bad code-length code", -1;
  idx = 0;
  while (idx < nlen + ndist) {
    int sym = huff_decode(s, &lencode);
    if (sym < 0) return -1;
    if (sym < 16) {
      lengths[idx++] = (short)sym;
      continue;
    }
    int len = 0, rep;
    if (sym == 16) {
      if (idx == 0) return s->error = "repeat with no previous length", -1;
      len = lengths[idx - 1];
      rep = getbits(s, 2);
      if (rep < 0) return -1;
      rep += 3;
    } else if (sym == 17) {
      rep = getbits(s, 3);
      if (rep < 0) return -1;
      rep += 3;
    } else {
      rep = getbits(s, 7);
      if (rep < 0) return -1;
      rep += 11;
    }
    if (idx + rep > nlen + ndist) return s->error = "too many code lengths", -1;
    while (rep--) lengths[idx++] = (short)len;
  }
  if (lengths[256] == 0) return s->error = "no end-of-block code", -1;
  int err = huff_build(&lencode, lengths, nlen);
  if (err < 0 || (err > 0 && nlen - lencode.count[0] != 1)) return s->error = "bad literal/length code", -1;
  err = huff_build(&distcode, lengths + nlen, ndist);
  if (err < 0 || (err > 0 && ndist - distcode.count[0] != 1)) return s->error = "bad distance code", -1;
  return inflate_codes(s, &lencode, &distcode);
}

/* Inflates in[0..inlen) into exactly outlen bytes; NULL on success, else a message. */
static const char *inflate_raw(const unsigned char *in, size_t inlen, unsigned char *out, size_t outlen) {
  inflate_state s = {in, inlen, 0, 0, 0, out, outlen, 0, NULL};
  int last;
  do {
    last = getbits(&s, 1);
    int type = getbits(&s, 2);
    if (last < 0 || type < 0) return s.error;
    int rc = type == 0 ? inflate_stored(&s) : type == 1 ? inflate_fixed(&s) : type == 2 ? inflate_dynamic(&s) : -2;
    if (rc == -2) return "invalid block type";
    if (rc < 0) return s.error ? s.error : "corrupt data";
  } while (!last);
  if (s.outpos != outlen) return "inflated data smaller than declared";
  return NULL;
}

/* ---- .npy ---- */

typedef struct pyreader {
  const char *s;
  size_t n, pos;
} pyreader;

static void py_ws(pyreader *r) {
  while (r->pos < r->n && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' || r->s[r->pos] == '\n')) r->pos++;
}
static bool py_char(pyreader *r, char c) {
  py_ws(r);
  if (r->pos < r->n && r->s[r->pos] == c) return r->pos++, true;
  return false;
}
/* a quoted string ('...' or "...") without escapes, into buf */
static bool py_str(pyreader *r, char *buf, size_t cap) {
  py_ws(r);
  if (r->pos >= r->n || (r->s[r->pos] != '\'' && r->s[r->pos] != '"')) return false;
  char q = r->s[r->pos++];
  size_t k = 0;
  while (r->pos < r->n && r->s[r->pos] != q) {
    if (r->s[r->pos] == '\\' || k + 1 >= cap) return false;
    buf[k++] = r->s[r->pos++];
  }
  if (r->pos >= r->n) return false;
  r->pos++;
  buf[k] = '\0';
  return true;
}
static bool py_word(pyreader *r, const char *w) {
  py_ws(r);
  size_t n = strlen(w);
  if (r->n - r->pos >= n && memcmp(r->s + r->pos, w, n) == 0) return r->pos += n, true;
  return false;
}

static bool parse_npy_header(const char *h, size_t hlen, rt_array *a, char *err, const char *what) {
  pyreader r = {h, hlen, 0};
  char descr[32] = "", key[32];
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  if (!py_char(&r, '{')) return snprintf(err, RT_ERRLEN, "%s: bad .npy header", what), false;
  while (!py_char(&r, '}')) {
    if (!py_str(&r, key, sizeof key) || !py_char(&r, ':'))
      return snprintf(err, RT_ERRLEN, "%s: bad .npy header", what), false;
    if (strcmp(key, "descr") == 0) {
      if (!py_str(&r, descr, sizeof descr))
        return snprintf(err, RT_ERRLEN, "%s: unsupported .npy dtype (structured arrays are not supported)", what),
               false;
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (py_word(&r, "True")) fortran = true;
      else if (!py_word(&r, "False")) return snprintf(err, RT_ERRLEN, "%s: bad fortran_order", what), false;
      have_order = true;
    } else if (strcmp(key, "shape") == 0) {
      if (!py_char(&r, '(')) return snprintf(err, RT_ERRLEN, "%s: bad shape", what), false;
      a->ndim = 0;
      while (!py_char(&r, ')')) {
        py_ws(&r);
        int64_t v = 0;
        size_t start = r.pos;
        while (r.pos < r.n && r.s[r.pos] >= '0' && r.s[r.pos] <= '9') {
          if (v > (INT64_MAX - 9) / 10) return snprintf(err, RT_ERRLEN, "%s: dimension too large", what), false;
          v = v * 10 + (r.s[r.pos++] - '0');
        }
        if (r.pos == start) return snprintf(err, RT_ERRLEN, "%s: bad shape", what), false;
        if (a->ndim == MLC_MAX_DIMS)
          return snprintf(err, RT_ERRLEN, "%s: rank exceeds %d", what, MLC_MAX_DIMS), false;
        a->shape[a->ndim++] = v;
        if (!py_char(&r, ',')) {
          if (!py_char(&r, ')')) return snprintf(err, RT_ERRLEN, "%s: bad shape", what), false;
          break;
        }
      }
      have_shape = true;
    } else {
      return snprintf(err, RT_ERRLEN, "%s: unknown .npy header key '%s'", what, key), false;
    }
    if (!py_char(&r, ',')) {
      if (!py_char(&r, '}')) return snprintf(err, RT_ERRLEN, "%s: bad .npy header", what), false;
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape)
    return snprintf(err, RT_ERRLEN, "%s: .npy header lacks descr, fortran_order or shape", what), false;
  if (fortran)
    return snprintf(err, RT_ERRLEN, "%s: fortran_order arrays are not supported (save a C-contiguous array)", what),
           false;
  if (descr[0] == '>')
    return snprintf(err, RT_ERRLEN, "%s: big-endian dtype '%s' is not supported", what, descr), false;
  a->dtype = MLC_UNDEF;
  for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++) {
    const char *d = npy_types[i].descr;
    /* single-byte types may also be written with '<' or '=' */
    if (strcmp(descr, d) == 0 || (d[0] == '|' && (descr[0] == '<' || descr[0] == '=') && strcmp(descr + 1, d + 1) == 0))
      a->dtype = npy_types[i].dtype;
  }
  if (a->dtype == MLC_UNDEF) return snprintf(err, RT_ERRLEN, "%s: unsupported dtype '%s'", what, descr), false;
  return true;
}

/* Parses one .npy image into a (data copied). */
static bool npy_parse(const unsigned char *b, size_t n, rt_array *a, char *err, const char *what) {
  if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0) return snprintf(err, RT_ERRLEN, "%s: not a .npy file", what), false;
  int major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = b[8] | (size_t)b[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) return snprintf(err, RT_ERRLEN, "%s: truncated .npy header", what), false;
    hlen = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    hstart = 12;
  } else {
    return snprintf(err, RT_ERRLEN, "%s: unsupported .npy version %d", what, major), false;
  }
  if (hlen > n - hstart) return snprintf(err, RT_ERRLEN, "%s: truncated .npy header", what), false;
  if (!parse_npy_header((const char *)b + hstart, hlen, a, err, what)) return false;
  uint64_t nbytes = (uint64_t)mlc_dtype_size(a->dtype);
  for (int d = 0; d < a->ndim; d++) {
    if (a->shape[d] != 0 && nbytes > NPY_MAX_BYTES / (uint64_t)a->shape[d])
      return snprintf(err, RT_ERRLEN, "%s: array too large", what), false;
    nbytes *= (uint64_t)a->shape[d];
  }
  size_t data_off = hstart + hlen;
  if (nbytes > n - data_off)
    return snprintf(err, RT_ERRLEN, "%s: data truncated (%zu of %llu bytes)", what, n - data_off,
                    (unsigned long long)nbytes),
           false;
  a->nbytes = (size_t)nbytes;
  a->data = malloc(nbytes ? nbytes : 1);
  if (!a->data) return snprintf(err, RT_ERRLEN, "%s: out of memory", what), false;
  memcpy(a->data, b + data_off, (size_t)nbytes);
  return true;
}

/* Builds a .npy image (header padded so data starts at a multiple of 64). */
static unsigned char *npy_build(const rt_array *a, size_t *size, char *err) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
    if (npy_types[i].dtype == a->dtype) descr = npy_types[i].descr;
  if (!descr) {
    snprintf(err, RT_ERRLEN, "array '%s': dtype %s cannot be written to .npy", a->name, mlc_dtype_name(a->dtype));
    return NULL;
  }
  if (a->ndim < 0 || a->ndim > MLC_MAX_DIMS) {
    snprintf(err, RT_ERRLEN, "array '%s': invalid rank", a->name);
    return NULL;
  }
  char dict[512];
  int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  uint64_t want = (uint64_t)mlc_dtype_size(a->dtype);
  for (int d = 0; d < a->ndim; d++) {
    k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld%s", (long long)a->shape[d], a->ndim == 1 ? "," : d + 1 < a->ndim ? ", " : "");
    want *= (uint64_t)(a->shape[d] < 0 ? 0 : a->shape[d]);
  }
  k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
  if (want != a->nbytes) {
    snprintf(err, RT_ERRLEN, "array '%s': %zu bytes for %llu expected", a->name, a->nbytes, (unsigned long long)want);
    return NULL;
  }
  size_t hlen = (size_t)k + 1; /* + '\n' */
  size_t total_hdr = (10 + hlen + 63) & ~(size_t)63;
  hlen = total_hdr - 10;
  *size = total_hdr + a->nbytes;
  unsigned char *b = malloc(*size);
  if (!b) {
    snprintf(err, RT_ERRLEN, "out of memory");
    return NULL;
  }
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)(hlen & 0xFF);
  b[9] = (unsigned char)(hlen >> 8);
  memset(b + 10, ' ', hlen);
  memcpy(b + 10, dict, (size_t)k);
  b[10 + hlen - 1] = '\n';
  if (a->nbytes) memcpy(b + total_hdr, a->data, a->nbytes);
  return b;
}

/* ---- .npz (zip) ---- */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}
static void wr32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

void rt_arrays_free(int narrays, rt_array *arrays) {
  if (!arrays) return;
  for (int i = 0; i < narrays; i++) {
    free(arrays[i].name);
    free(arrays[i].data);
  }
  free(arrays);
}

static bool read_file(const char *path, unsigned char **data, size_t *size, char *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return snprintf(err, RT_ERRLEN, "%s: cannot open: %s", path, strerror(errno)), false;
  unsigned char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 1 << 16;
      unsigned char *nb = realloc(buf, nc);
      if (!nb) {
        free(buf);
        fclose(f);
        return snprintf(err, RT_ERRLEN, "%s: out of memory", path), false;
      }
      buf = nb;
      cap = nc;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return snprintf(err, RT_ERRLEN, "%s: read error", path), false;
  }
  *data = buf;
  *size = n;
  return true;
}

int rt_npz_read(const char *path, int *narrays, rt_array **arrays, char *err) {
  *narrays = 0;
  *arrays = NULL;
  unsigned char *z;
  size_t n;
  if (!read_file(path, &z, &n, err)) return MLC_ERR_INVALID;
  rt_array *list = NULL;
  int count = 0;
  char what[512];
#define BADZ(...)                                    \
  do {                                               \
    int n_ = snprintf(err, RT_ERRLEN, "%s: ", path); \
    if (n_ < 0 || n_ >= RT_ERRLEN) n_ = 0;           \
    snprintf(err + n_, RT_ERRLEN - n_, __VA_ARGS__);  \
    goto fail;                                       \
  } while (0)
  /* end of central directory: last signature within the final 64 KiB + 22 bytes */
  if (n < 22) BADZ("not an .npz file (too short for a zip archive)");
  size_t eocd = (size_t)-1;
  size_t lowest = n > 22 + 65535 ? n - 22 - 65535 : 0;
  for (size_t i = n - 22 + 1; i-- > lowest;)
    if (rd32(z + i) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == (size_t)-1) BADZ("not an .npz file (no zip central directory)");
  uint64_t entries = rd16(z + eocd + 10), cd_size = rd32(z + eocd + 12), cd_off = rd32(z + eocd + 16);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
    if (eocd < 20 || rd32(z + eocd - 20) != 0x07064b50) BADZ("zip64 locator missing");
    uint64_t z64 = rd64(z + eocd - 20 + 8);
    if (z64 > n || n - z64 < 56 || rd32(z + z64) != 0x06064b50) BADZ("bad zip64 end record");
    entries = rd64(z + z64 + 32);
    cd_size = rd64(z + z64 + 40);
    cd_off = rd64(z + z64 + 48);
  }
  if (cd_off > n || cd_size > n - cd_off) BADZ("central directory out of bounds");
  if (entries > cd_size / 46) BADZ("bad entry count");
  list = calloc((size_t)entries + 1, sizeof *list);
  if (!list) BADZ("out of memory");
  size_t pos = (size_t)cd_off, end = (size_t)(cd_off + cd_size);
  for (uint64_t e = 0; e < entries; e++) {
    if (end - pos < 46 || rd32(z + pos) != 0x02014b50) BADZ("bad central directory entry %llu", (unsigned long long)e);
    const unsigned char *c = z + pos;
    unsigned flags = rd16(c + 8), method = rd16(c + 10);
    uint32_t crc = rd32(c + 16);
    uint64_t csize = rd32(c + 20), usize = rd32(c + 24);
    size_t name_len = rd16(c + 28), extra_len = rd16(c + 30), comment_len = rd16(c + 32);
    uint64_t local = rd32(c + 42);
    if (end - pos - 46 < name_len + extra_len + comment_len) BADZ("central directory entry out of bounds");
    const unsigned char *name = c + 46, *extra = name + name_len;
    /* zip64 extended information: the fields that are 0xFFFFFFFF, in order */
    for (size_t x = 0; x + 4 <= extra_len;) {
      unsigned id = rd16(extra + x), sz = rd16(extra + x + 2);
      if (x + 4 + sz > extra_len) BADZ("bad extra field");
      if (id == 1) {
        const unsigned char *f = extra + x + 4, *fe = f + sz;
        if (usize == 0xFFFFFFFF) {
          if (fe - f < 8) BADZ("bad zip64 field");
          usize = rd64(f);
          f += 8;
        }
        if (csize == 0xFFFFFFFF) {
          if (fe - f < 8) BADZ("bad zip64 field");
          csize = rd64(f);
          f += 8;
        }
        if (local == 0xFFFFFFFF) {
          if (fe - f < 8) BADZ("bad zip64 field");
          local = rd64(f);
        }
      }
      x += 4 + sz;
    }
    pos += 46 + name_len + extra_len + comment_len;
    if (name_len == 0 || name_len >= sizeof what - 1 || memchr(name, 0, name_len)) BADZ("bad member name");
    memcpy(what, name, name_len);
    what[name_len] = '\0';
    if (name_len < 5 || strcmp(what + name_len - 4, ".npy") != 0) BADZ("member '%s' is not a .npy array", what);
    if (flags & 1) BADZ("member '%s' is encrypted", what);
    if (method != 0 && method != 8) BADZ("member '%s': compression method %u is not supported", what, method);
    if (usize > NPY_MAX_BYTES) BADZ("member '%s' is too large", what);
    if (local > n || n - local < 30 || rd32(z + local) != 0x04034b50) BADZ("member '%s': bad local header", what);
    size_t data_off = (size_t)local + 30 + rd16(z + local + 26) + rd16(z + local + 28);
    if (data_off > n || csize > n - data_off) BADZ("member '%s': data out of bounds", what);
    const unsigned char *cdata = z + data_off;
    unsigned char *raw;
    if (method == 0) {
      if (csize != usize) BADZ("member '%s': stored sizes disagree", what);
      raw = (unsigned char *)cdata;
    } else {
      raw = malloc(usize ? (size_t)usize : 1);
      if (!raw) BADZ("out of memory");
      const char *msg = inflate_raw(cdata, (size_t)csize, raw, (size_t)usize);
      if (msg) {
        free(raw);
        BADZ("member '%s': inflate failed: %s", what, msg);
      }
    }
    if (crc32_of(raw, (size_t)usize) != crc) {
      if (raw != cdata) free(raw);
      BADZ("member '%s': CRC mismatch (corrupt archive)", what);
    }
    rt_array *a = &list[count];
    bool ok = npy_parse(raw, (size_t)usize, a, err, what);
    if (raw != cdata) free(raw);
    if (!ok) {
      char inner[RT_ERRLEN];
      snprintf(inner, sizeof inner, "%s", err);
      BADZ("%.900s", inner);
    }
    what[name_len - 4] = '\0';
    count++;
    if (!(a->name = strdup(what))) BADZ("out of memory");
    for (int j = 0; j < count - 1; j++)
      if (strcmp(list[j].name, a->name) == 0) BADZ("array '%s' appears twice", a->name);
  }
#undef BADZ
  free(z);
  *narrays = count;
  *arrays = list;
  return MLC_OK;
fail:
  free(z);
  rt_arrays_free(count + (list && list[count].data ? 1 : 0), list);
  return MLC_ERR_INVALID;
}

int rt_npz_write(const char *path, int narrays, const rt_array *arrays, char *err) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
    snprintf(err, RT_ERRLEN, "%s: path too long", path);
    return MLC_ERR_INVALID;
  }
  for (int i = 0; i < narrays; i++)
    if (!arrays[i].name || !*arrays[i].name || strlen(arrays[i].name) > 4000) {
      snprintf(err, RT_ERRLEN, "%s: array %d has no valid name", path, i);
      return MLC_ERR_INVALID;
    }
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    snprintf(err, RT_ERRLEN, "%.900s: cannot create: %s", tmp, strerror(errno));
    return MLC_ERR_INVALID;
  }
  unsigned char *central = NULL;
  size_t clen = 0, ccap = 0;
  uint64_t off = 0;
  bool ok = true;
  int rc = MLC_ERR_INVALID;
  for (int i = 0; i < narrays && ok; i++) {
    size_t size;
    unsigned char *npy = npy_build(&arrays[i], &size, err);
    if (!npy) {
      ok = false;
      break;
    }
    char name[4100];
    size_t nl = (size_t)snprintf(name, sizeof name, "%s.npy", arrays[i].name);
    if (size >= 0xFFFFFFFFu || off >= 0xFFFFFFFFu) {
      snprintf(err, RT_ERRLEN, "%s: array '%s': .npz files over 4 GiB are not supported", path, arrays[i].name);
      free(npy);
      rc = MLC_ERR_UNSUPPORTED;
      ok = false;
      break;
    }
    uint32_t crc = crc32_of(npy, size);
    unsigned char lh[30] = {0};
    wr32(lh, 0x04034b50);
    wr16(lh + 4, 20);     /* version needed */
    wr16(lh + 12, 0x21);  /* date 1980-01-01 */
    wr32(lh + 14, crc);
    wr32(lh + 18, (uint32_t)size);
    wr32(lh + 22, (uint32_t)size);
    wr16(lh + 26, (uint32_t)nl);
    ok = fwrite(lh, 1, 30, f) == 30 && fwrite(name, 1, nl, f) == nl && fwrite(npy, 1, size, f) == size;
    free(npy);
    if (clen + 46 + nl > ccap) {
      ccap = (clen + 46 + nl) * 2;
      unsigned char *nc = realloc(central, ccap);
      if (!nc) {
        snprintf(err, RT_ERRLEN, "out of memory");
        ok = false;
        break;
      }
      central = nc;
    }
    unsigned char *c = central + clen;
    memset(c, 0, 46);
    wr32(c, 0x02014b50);
    wr16(c + 4, 20);
    wr16(c + 6, 20);
    wr16(c + 14, 0x21);
    wr32(c + 16, crc);
    wr32(c + 20, (uint32_t)size);
    wr32(c + 24, (uint32_t)size);
    wr16(c + 28, (uint32_t)nl);
    wr32(c + 38, 0644u << 16); /* external attributes: a regular file, rw-r--r-- */
    wr32(c + 42, (uint32_t)off);
    memcpy(c + 46, name, nl);
    clen += 46 + nl;
    off += 30 + nl + size;
    if (!ok) snprintf(err, RT_ERRLEN, "%s: write failed: %s", path, strerror(errno));
  }
  if (ok) {
    if (off >= 0xFFFFFFFFu || narrays > 0xFFFF) {
      snprintf(err, RT_ERRLEN, "%s: .npz files over 4 GiB are not supported", path);
      rc = MLC_ERR_UNSUPPORTED;
      ok = false;
    }
  }
  if (ok) {
    unsigned char eocd[22] = {0};
    wr32(eocd, 0x06054b50);
    wr16(eocd + 8, (uint32_t)narrays);
    wr16(eocd + 10, (uint32_t)narrays);
    wr32(eocd + 12, (uint32_t)clen);
    wr32(eocd + 16, (uint32_t)off);
    ok = (clen == 0 || fwrite(central, 1, clen, f) == clen) && fwrite(eocd, 1, 22, f) == 22 && fflush(f) == 0;
    if (!ok) snprintf(err, RT_ERRLEN, "%s: write failed: %s", path, strerror(errno));
  }
  free(central);
  if (fclose(f) != 0 && ok) {
    snprintf(err, RT_ERRLEN, "%s: write failed: %s", path, strerror(errno));
    ok = false;
  }
  if (ok && rename(tmp, path) != 0) {
    snprintf(err, RT_ERRLEN, "%s: cannot rename into place: %s", path, strerror(errno));
    ok = false;
  }
  if (!ok) {
    unlink(tmp);
    return rc;
  }
  return MLC_OK;
}
