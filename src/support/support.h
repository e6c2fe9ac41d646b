/* support: arenas, growable arrays, string buffers, diagnostics and the target description.
 *
 * Every compilation owns an Arena; IR nodes of all stages live in it and die with it (no per-node free).
 * Library code never exits: it returns an mlc_status and fills a Diag whose message names the file, node,
 * op type and opset ("model.onnx: node 'conv1' (Conv, opset 11): error: ..."). */
#ifndef MLC_SUPPORT_H
#define MLC_SUPPORT_H
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mlc/runtime.h"

#define MLC_VERSION "0.1.0"
#define countof(a) (sizeof(a) / sizeof((a)[0]))

/* ---- arena.c ---- */
typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n); /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *arena_memdup(Arena *a, const void *p, size_t n);
size_t arena_bytes(const Arena *a);

/* Growable array in an arena: struct { T *v; int n, cap; }. vec_push(arena, &vec, item). */
#define VEC(T) struct { T *v; int n, cap; }
#define vec_push(A, vec, item)                                                                 \
  do {                                                                                         \
    if ((vec)->n == (vec)->cap) {                                                              \
      int nc_ = (vec)->cap ? (vec)->cap * 2 : 8;                                               \
      void *nv_ = arena_alloc((A), (size_t)nc_ * sizeof(*(vec)->v));                           \
      if ((vec)->n) memcpy(nv_, (vec)->v, (size_t)(vec)->n * sizeof(*(vec)->v));              \
      (vec)->v = nv_;                                                                          \
      (vec)->cap = nc_;                                                                        \
    }                                                                                          \
    (vec)->v[(vec)->n++] = (item);                                                             \
  } while (0)

/* ---- strbuf.c: a malloc-backed string builder (for printers and JSON) ---- */
typedef struct StrBuf {
  char *s;
  size_t len, cap;
} StrBuf;
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_putc(StrBuf *b, char c);
void sb_free(StrBuf *b);

/* ---- diag.c ---- */
typedef struct Diag {
  mlc_status status;
  char msg[2048];
} Diag;
/* Sets the diagnostic (the first error wins; later ones are ignored) and returns status. */
mlc_status diag_set(Diag *d, mlc_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Appends "; ..." to an existing message (used to list every unsupported op at once). */
void diag_append(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define diag_ok(d) ((d)->status == MLC_OK)
/* Internal-error check that never aborts: records a compiler bug and returns from the enclosing function. */
#define MLC_CHECK(d, cond, ret)                                                                      \
  do {                                                                                               \
    if (!(cond)) {                                                                                   \
      diag_set((d), MLC_ERR_INTERNAL, "internal error: %s:%d: check failed: %s", __FILE__, __LINE__, \
               #cond);                                                                               \
      return ret;                                                                                    \
    }                                                                                                \
  } while (0)

/* ---- file.c ---- */
/* Reads a whole file into malloc'd memory. */
mlc_status file_read(const char *path, void **data, size_t *size, Diag *d);
/* Writes atomically: to "path.tmp.PID" then rename, so no half-written output is ever left. */
mlc_status file_write_atomic(const char *path, const void *data, size_t size, Diag *d);

/* Scratch a generated kernel allocates: up to this many bytes an alloca on the stack, beyond it aligned_alloc
 * per call (which glibc serves with mmap from 128 KiB on: page faults and unmaps on every call). */
#define MLC_STACK_SCRATCH_MAX (64 * 1024)

/* ---- target.h: the target description, parsed from the target string in codegen/llvm/target.c ---- */
typedef enum TargetKind { TARGET_CPU, TARGET_GPU } TargetKind;
typedef enum TargetArch { ARCH_X86_64, ARCH_AARCH64, ARCH_NVPTX } TargetArch;
typedef struct Target {
  char str[256];      /* the target string as given ("llvm -mcpu=znver4") */
  TargetKind kind;
  TargetArch arch;
  char triple[96];    /* "x86_64-pc-linux-gnu" */
  char cpu[64];       /* "znver4" */
  char features[512]; /* "+avx2,+fma,..." as LLVM takes them */
  int vector_bytes;   /* widest SIMD register: 64 for AVX-512, 32 for AVX2, 16 for SSE/NEON */
  int dot_i8_lanes;   /* int32 lanes of one u8 x s8 dot-product instruction on vector_bytes (x86 VNNI's vpdpbusd:
                       * 16 with AVX512-VNNI, 8 with AVX-VNNI), 0 when the target has none */
  int l1_bytes, l2_bytes, l3_bytes;
  int num_cores;
  int opt_level; /* LLVM optimisation level 0..3 */
} Target;

#endif
