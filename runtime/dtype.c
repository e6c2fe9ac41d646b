/* Element types: sizes and numpy names. */
#include <string.h>
#include "mlc/runtime.h"

static const struct {
  int size;
  const char *name;
} dtypes[MLC_DTYPE_COUNT] = {
    [MLC_F32] = {4, "float32"},  [MLC_U8] = {1, "uint8"},     [MLC_I8] = {1, "int8"},
    [MLC_U16] = {2, "uint16"},   [MLC_I16] = {2, "int16"},    [MLC_I32] = {4, "int32"},
    [MLC_I64] = {8, "int64"},    [MLC_STRING] = {0, "string"}, [MLC_BOOL] = {1, "bool"},
    [MLC_F16] = {2, "float16"},  [MLC_F64] = {8, "float64"},  [MLC_U32] = {4, "uint32"},
    [MLC_U64] = {8, "uint64"},   [MLC_BF16] = {2, "bfloat16"},
};

int mlc_dtype_size(mlc_dtype t) { return (unsigned)t < MLC_DTYPE_COUNT ? dtypes[t].size : 0; }

const char *mlc_dtype_name(mlc_dtype t) {
  return (unsigned)t < MLC_DTYPE_COUNT && dtypes[t].name ? dtypes[t].name : "unknown";
}

mlc_dtype mlc_dtype_from_name(const char *name) {
  for (int t = 1; t < MLC_DTYPE_COUNT; t++)
    if (dtypes[t].name && strcmp(dtypes[t].name, name) == 0) return (mlc_dtype)t;
  return MLC_UNDEF;
}
