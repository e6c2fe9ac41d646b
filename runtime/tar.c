/* ustar archives of regular files: the package container.
 *
 * Writer: one 512-byte ustar header per file (mode 0644, uid/gid 0, mtime 0 so equal inputs give identical
 * bytes), data padded to 512, two zero blocks at the end; written to "path.tmp.PID" and renamed, so a failed
 * write never leaves a half-written package. Reader: maps the whole file, and for each header checks the
 * checksum (unsigned sum, or the historical signed sum), the "ustar" magic, a NUL-terminated octal size that
 * fits in the file, type '0' (regular file) only, and a plain name (no '/', no "..", no prefix field, no
 * duplicates). Anything else is rejected with a message naming the member. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/rt.h"

#define TAR_BLOCK 512
#define TAR_MAX_FILES 4096

static bool name_ok(const char *name, size_t len) {
  if (len == 0 || len >= 100) return false;
  if (strcmp(name, ".") == 0 || strstr(name, "..") || strchr(name, '/') || strchr(name, '\\')) return false;
  return true;
}

static void octal(char *field, size_t width, uint64_t v) {
  /* width-1 digits and a NUL */
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = (char)('0' + (v & 7));
    v >>= 3;
  }
  field[width - 1] = '\0';
}

static unsigned header_sum(const unsigned char *h, bool signed_sum) {
  unsigned s = 0;
  for (int i = 0; i < TAR_BLOCK; i++) {
    unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
    s += signed_sum ? (unsigned)(int)(signed char)c : c;
  }
  return s;
}

int rt_tar_write(const char *path, int nfiles, const rt_file *files, char *err) {
  for (int i = 0; i < nfiles; i++) {
    if (!files[i].name || !name_ok(files[i].name, strlen(files[i].name))) {
      snprintf(err, RT_ERRLEN, "%s: invalid member name '%s'", path, files[i].name ? files[i].name : "");
      return MLC_ERR_INVALID;
    }
    if ((uint64_t)files[i].size >= ((uint64_t)1 << 33)) {
      snprintf(err, RT_ERRLEN, "%s: member '%s' is too large for ustar (8 GiB)", path, files[i].name);
      return MLC_ERR_UNSUPPORTED;
    }
  }
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
    snprintf(err, RT_ERRLEN, "%s: path too long", path);
    return MLC_ERR_INVALID;
  }
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    snprintf(err, RT_ERRLEN, "%.900s: cannot create: %s", tmp, strerror(errno));
    return MLC_ERR_INVALID;
  }
  static const unsigned char zeros[TAR_BLOCK * 2];
  bool ok = true;
  for (int i = 0; i < nfiles && ok; i++) {
    unsigned char h[TAR_BLOCK];
    memset(h, 0, sizeof h);
    memcpy(h, files[i].name, strlen(files[i].name));
    octal((char *)h + 100, 8, 0644);
    octal((char *)h + 108, 8, 0);
    octal((char *)h + 116, 8, 0);
    octal((char *)h + 124, 12, files[i].size);
    octal((char *)h + 136, 12, 0);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memcpy(h + 265, "root", 4);
    memcpy(h + 297, "root", 4);
    unsigned sum = header_sum(h, false);
    octal((char *)h + 148, 7, sum); /* six digits, NUL, then a space */
    h[155] = ' ';
    size_t pad = (TAR_BLOCK - files[i].size % TAR_BLOCK) % TAR_BLOCK;
    ok = fwrite(h, 1, TAR_BLOCK, f) == TAR_BLOCK &&
         (files[i].size == 0 || fwrite(files[i].data, 1, files[i].size, f) == files[i].size) &&
         fwrite(zeros, 1, pad, f) == pad;
  }
  ok = ok && fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros;
  ok = (fflush(f) == 0) && ok;
  ok = (fsync(fileno(f)) == 0 || errno == EINVAL) && ok;
  int saved = errno;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    if (ok) saved = errno;
    snprintf(err, RT_ERRLEN, "%s: write failed: %s", path, strerror(saved));
    unlink(tmp);
    return MLC_ERR_INVALID;
  }
  return MLC_OK;
}

static bool parse_octal(const unsigned char *field, size_t width, uint64_t *out) {
  size_t i = 0;
  while (i < width && field[i] == ' ') i++;
  if (i == width || field[i] < '0' || field[i] > '7') return false;
  uint64_t v = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; i++) {
    if (v >> 60) return false;
    v = (v << 3) | (uint64_t)(field[i] - '0');
  }
  for (; i < width; i++)
    if (field[i] != ' ' && field[i] != '\0') return false;
  *out = v;
  return true;
}

static bool is_zero_block(const unsigned char *h) {
  for (int i = 0; i < TAR_BLOCK; i++)
    if (h[i]) return false;
  return true;
}

/* The archive is mapped, not read: a package's weights are most of it, and the parameter loader copies them
 * into aligned buffers and drops each source page after its copy (rt_params_load), so a 100 MB package costs
 * about 100 MB of resident memory, not twice that. */
typedef struct rt_tar_map {
  unsigned char *data;
  size_t size;
} rt_tar_map;

void rt_tar_free(void *blob) {
  rt_tar_map *m = blob;
  if (!m) return;
  if (m->data) munmap(m->data, m->size);
  free(m);
}

int rt_tar_read(const char *path, void **blob, int *nfiles, rt_file **files, char *err) {
  *blob = NULL;
  *nfiles = 0;
  *files = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, RT_ERRLEN, "%s: cannot open: %s", path, strerror(errno));
    return MLC_ERR_INVALID;
  }
  struct stat stt;
  if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode)) {
    close(fd);
    snprintf(err, RT_ERRLEN, "%s: not a regular file", path);
    return MLC_ERR_INVALID;
  }
  rt_tar_map *map = calloc(1, sizeof *map);
  if (!map) {
    close(fd);
    snprintf(err, RT_ERRLEN, "%s: out of memory", path);
    return MLC_ERR_INTERNAL;
  }
  size_t size = (size_t)stt.st_size;
  if (size > 0) {
    void *d = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (d == MAP_FAILED) {
      close(fd);
      free(map);
      snprintf(err, RT_ERRLEN, "%s: cannot map: %s", path, strerror(errno));
      return errno == ENOMEM ? MLC_ERR_INTERNAL : MLC_ERR_INVALID;
    }
    map->data = d;
    map->size = size;
  }
  close(fd);
  const unsigned char *data = map->data;
#define BADT(...)                                   \
  do {                                              \
    int n_ = snprintf(err, RT_ERRLEN, "%s: ", path); \
    if (n_ < 0 || n_ >= RT_ERRLEN) n_ = 0;          \
    snprintf(err + n_, RT_ERRLEN - n_, __VA_ARGS__); \
    rt_tar_free(map);                               \
    free(list);                                     \
    return MLC_ERR_INVALID;                         \
  } while (0)
  rt_file *list = NULL;
  int n = 0, lcap = 0;
  size_t pos = 0;
  bool ended = false;
  while (pos + TAR_BLOCK <= size) {
    const unsigned char *h = data + pos;
    if (is_zero_block(h)) {
      ended = true;
      break;
    }
    uint64_t sum, fsize;
    if (!parse_octal(h + 148, 8, &sum) || (sum != header_sum(h, false) && sum != header_sum(h, true)))
      BADT("not a tar archive (bad header checksum at byte %zu)", pos);
    if (memcmp(h + 257, "ustar", 5) != 0) BADT("not a ustar archive (header at byte %zu)", pos);
    size_t nlen = strnlen((const char *)h, 100);
    char shown[101];
    memcpy(shown, h, nlen);
    shown[nlen] = '\0';
    if (nlen == 100) BADT("member name too long at byte %zu", pos);
    if (h[345] != '\0') BADT("member '%s': path prefixes are not allowed", shown);
    if (h[156] != '0' && h[156] != '\0') BADT("member '%s': not a regular file (type '%c')", shown, h[156]);
    if (!name_ok(shown, nlen)) BADT("member '%s': unsafe name (paths with '/' or '..' are rejected)", shown);
    if (!parse_octal(h + 124, 12, &fsize)) BADT("member '%s': invalid size field", shown);
    pos += TAR_BLOCK;
    if (fsize > size - pos) BADT("member '%s': truncated (%llu bytes declared)", shown, (unsigned long long)fsize);
    for (int i = 0; i < n; i++)
      if (strcmp(list[i].name, shown) == 0) BADT("member '%s' appears twice", shown);
    if (n == TAR_MAX_FILES) BADT("too many members");
    if (n == lcap) {
      lcap = lcap ? lcap * 2 : 8;
      rt_file *nl = realloc(list, (size_t)lcap * sizeof *nl);
      if (!nl) BADT("out of memory");
      list = nl;
    }
    list[n].name = (const char *)h; /* NUL-terminated within the 100-byte field (checked above) */
    list[n].data = data + pos;
    list[n].size = (size_t)fsize;
    n++;
    size_t padded = (size_t)fsize + (TAR_BLOCK - fsize % TAR_BLOCK) % TAR_BLOCK;
    pos = padded > size - pos ? size : pos + padded;
  }
  if (!ended && n == 0) BADT("not a tar archive");
#undef BADT
  *blob = map;
  *nfiles = n;
  *files = list;
  return MLC_OK;
}
