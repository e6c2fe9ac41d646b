/* Element types: sizes and numpy names; float32 to float16 / bfloat16 on the host (constants, .npz inputs and
 * outputs), rounding to nearest even as the generated code does. */
#include <string.h>
#include "mlc/runtime.h"
#include "runtime/rt.h"

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

uint16_t rt_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int32_t exp = (int32_t)((x >> 23) & 0xff);
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e), h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into the exponent: still correct */
  return (uint16_t)(sign | h);
}

uint16_t rt_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* NaN stays NaN */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

float rt_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}
