/* Tensor types: element counts, byte sizes, equality and the Relay-style text form
 * "Tensor[(1, 64, 112, 112), float32]". Element counts saturate at INT64_MAX instead of overflowing, so a
 * hostile shape can never wrap around into a small allocation. */
#include <string.h>
#include "ir/ir.h"

int64_t tt_numel(const TensorType *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) {
    int64_t d = t->dims[i];
    if (d < 0) return -1;
    if (d == 0) return 0;
    if (n > INT64_MAX / d) n = INT64_MAX; /* saturate; keep scanning for a zero dim */
    else n *= d;
  }
  return n;
}

int64_t tt_nbytes(const TensorType *t) {
  int64_t n = tt_numel(t);
  int64_t es = mlc_dtype_size(t->dtype);
  if (n < 0) return -1;
  if (es > 0 && n > INT64_MAX / es) return INT64_MAX;
  return n * es;
}

bool tt_equal(const TensorType *a, const TensorType *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

void tt_print(StrBuf *b, const TensorType *t) {
  sb_printf(b, "Tensor[(");
  for (int i = 0; i < t->ndim; i++) sb_printf(b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  const char *dn = mlc_dtype_name(t->dtype);
  sb_printf(b, "), %s]", dn ? dn : "undef");
}
