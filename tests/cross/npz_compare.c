/* npz_compare: compares two .npz files written by `mlc run --outputs` array by array (same names, dtypes and
 * shapes; floats within |a - b| <= atol + rtol * |b|, NaN matching NaN and infinities matching exactly;
 * integers and bools exactly). Exit 0 when they agree, 1 with the first difference on stderr, 2 on bad input.
 * Used by the cross-architecture tests to compare an AArch64 run under qemu with the x86-64 run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/rt.h"

static double elem(const rt_array *a, int64_t i, int *ok) {
  *ok = 1;
  switch (a->dtype) {
  case MLC_F32: return ((const float *)a->data)[i];
  case MLC_F64: return ((const double *)a->data)[i];
  default: *ok = 0; return 0;
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: npz_compare got.npz want.npz [rtol] [atol]\n");
    return 2;
  }
  double rtol = argc > 3 ? atof(argv[3]) : 1e-4, atol = argc > 4 ? atof(argv[4]) : 1e-5;
  int na, nb;
  rt_array *a, *b;
  char err[RT_ERRLEN];
  if (rt_npz_read(argv[1], &na, &a, err) || rt_npz_read(argv[2], &nb, &b, err)) {
    fprintf(stderr, "npz_compare: %s\n", err);
    return 2;
  }
  if (na != nb) {
    fprintf(stderr, "npz_compare: %d arrays vs %d\n", na, nb);
    return 1;
  }
  for (int k = 0; k < na; k++) {
    const rt_array *x = &a[k], *y = NULL;
    for (int j = 0; j < nb; j++)
      if (!strcmp(b[j].name, x->name)) y = &b[j];
    if (!y || y->dtype != x->dtype || y->ndim != x->ndim || y->nbytes != x->nbytes ||
        memcmp(y->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim)) {
      fprintf(stderr, "npz_compare: array '%s' missing or of another dtype/shape\n", x->name);
      return 1;
    }
    int es = mlc_dtype_size(x->dtype);
    int64_t n = es ? (int64_t)(x->nbytes / (size_t)es) : 0;
    for (int64_t i = 0; i < n; i++) {
      int fl;
      double u = elem(x, i, &fl), v = elem(y, i, &fl);
      bool same = fl ? ((isnan(u) && isnan(v)) || (isinf(u) || isinf(v) ? u == v : fabs(u - v) <= atol + rtol * fabs(v)))
                     : !memcmp((const char *)x->data + i * es, (const char *)y->data + i * es, (size_t)es);
      if (!same) {
        fprintf(stderr, "npz_compare: '%s'[%lld]: %.9g vs %.9g\n", x->name, (long long)i, u, v);
        return 1;
      }
    }
  }
  rt_arrays_free(na, a);
  rt_arrays_free(nb, b);
  return 0;
}
