/* Element types: sizes and numpy names; float32 to float16 / bfloat16 on the host (constants, .npz inputs and
 * outputs), rounding to nearest even as the generated code does. The float8 / float4 conversions are the
 * host's reference for the low-precision types (codegen builds its decode tables from rt_lowfloat_to_f32 and
 * emits the same rounding as rt_f32_to_lowfloat in IR): every value is first widened to double, where scaling by
 * a power of two is exact, and rounded once with rint (the default rounding mode: nearest, ties to even). */
#include <math.h>
#include <stdio.h>
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
    /* one byte per element inside mlc (see mlc_dtype); names as ml_dtypes spells them */
    [MLC_F8E4M3FN] = {1, "float8_e4m3fn"}, [MLC_F8E4M3FNUZ] = {1, "float8_e4m3fnuz"},
    [MLC_F8E5M2] = {1, "float8_e5m2"},     [MLC_F8E5M2FNUZ] = {1, "float8_e5m2fnuz"},
    [MLC_U4] = {1, "uint4"},               [MLC_I4] = {1, "int4"},
    [MLC_F4E2M1] = {1, "float4_e2m1fn"},   [MLC_F8E8M0] = {1, "float8_e8m0fnu"},
    [MLC_U2] = {1, "uint2"},               [MLC_I2] = {1, "int2"},
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

float rt_f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
  if (e == 0) { /* zero and subnormals: m * 2^-24, exact in float32 */
    float f = ldexpf((float)m, -24);
    return s ? -f : f;
  }
  if (e == 31) bits = s | 0x7f800000u | (m << 13); /* inf, NaN (payload kept) */
  else bits = s | ((e + 112) << 23) | (m << 13);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

float rt_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* ---- low-precision types ---- */

bool rt_dtype_is_lowbit(mlc_dtype t) { return t >= MLC_F8E4M3FN && t <= MLC_I2; }

bool rt_dtype_is_lowfloat(mlc_dtype t) {
  return (t >= MLC_F8E4M3FN && t <= MLC_F8E5M2FNUZ) || t == MLC_F4E2M1 || t == MLC_F8E8M0;
}

int rt_dtype_bits(mlc_dtype t) {
  switch (t) {
  case MLC_U4: case MLC_I4: case MLC_F4E2M1: return 4;
  case MLC_U2: case MLC_I2: return 2;
  default: return 8 * mlc_dtype_size(t);
  }
}

typedef struct LowFloat {
  int nbits, mbits, bias;
  uint8_t maxmag; /* the largest finite magnitude code (sign bit clear) */
  bool fnuz;      /* NaN is 0x80 (the negative zero pattern), no inf, no -0 */
  bool inf;       /* s.11111.00 is inf (E5M2) */
} LowFloat;

static LowFloat lowfloat(mlc_dtype t) {
  switch (t) {
  case MLC_F8E4M3FN: return (LowFloat){8, 3, 7, 0x7e, false, false};
  case MLC_F8E4M3FNUZ: return (LowFloat){8, 3, 8, 0x7f, true, false};
  case MLC_F8E5M2: return (LowFloat){8, 2, 15, 0x7b, false, true};
  case MLC_F8E5M2FNUZ: return (LowFloat){8, 2, 16, 0x7f, true, false};
  default: return (LowFloat){4, 1, 1, 0x7, false, false}; /* float4 e2m1 */
  }
}

float rt_lowfloat_to_f32(mlc_dtype t, uint8_t bits) {
  if (t == MLC_F8E8M0) return bits == 0xff ? NAN : ldexpf(1.0f, (int)bits - 127);
  LowFloat f = lowfloat(t);
  unsigned sbit = 1u << (f.nbits - 1), mag = bits & (sbit - 1);
  bool neg = (bits & sbit) != 0;
  if (f.fnuz && bits == 0x80) return NAN;
  if (t == MLC_F8E4M3FN && mag == 0x7f) return neg ? -NAN : NAN;
  if (f.inf && mag >= 0x7c) return mag == 0x7c ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
  unsigned e = mag >> f.mbits, m = mag & ((1u << f.mbits) - 1);
  double v = e == 0 ? ldexp((double)m, 1 - f.bias - f.mbits)
                    : ldexp((double)((1u << f.mbits) + m), (int)e - f.bias - f.mbits);
  return (float)(neg ? -v : v);
}

uint8_t rt_f32_to_lowfloat(mlc_dtype t, float x, bool saturate) {
  if (t == MLC_F8E8M0) { /* the exponent of |x|, rounded up when x is not a power of two (Cast's default) */
    uint32_t b;
    memcpy(&b, &x, 4);
    unsigned e = (b >> 23) & 0xff;
    if (e == 0xff) return 0xff; /* inf and NaN: NaN */
    bool up = (b & 0x7fffff) != 0 && !(saturate && e == 0xfe);
    return (uint8_t)(e + up);
  }
  LowFloat f = lowfloat(t);
  unsigned sbit = 1u << (f.nbits - 1);
  if (t == MLC_F4E2M1) saturate = true;
  if (isnan(x)) {
    if (t == MLC_F4E2M1) return 0x8;
    if (f.fnuz) return 0x80;
    return (uint8_t)((signbit(x) ? sbit : 0) | (f.inf ? 0x7e : 0x7f));
  }
  unsigned sign = signbit(x) ? sbit : 0;
  unsigned overflow = saturate ? sign | f.maxmag : f.fnuz ? 0x80 : f.inf ? sign | 0x7c : sign | 0x7f;
  double a = fabs((double)x);
  if (isinf(a)) return (uint8_t)overflow;
  int emin = 1 - f.bias; /* exponent of the smallest normal */
  unsigned mag;
  if (a < ldexp(1.0, emin)) {
    mag = (unsigned)rint(ldexp(a, f.mbits - emin)); /* subnormal steps; 1 << mbits is the smallest normal */
  } else {
    int e;
    frexp(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
    double q = rint(ldexp(a, f.mbits - e));
    if (q >= ldexp(1.0, f.mbits + 1)) q /= 2, e++;
    int be = e + f.bias;
    if (be >= (1 << (f.nbits - 1 - f.mbits))) return (uint8_t)overflow;
    mag = ((unsigned)be << f.mbits) | ((unsigned)q - (1u << f.mbits));
  }
  if (mag > f.maxmag) return (uint8_t)overflow;
  if (mag == 0 && f.fnuz) return 0;
  return (uint8_t)(sign | mag);
}

mlc_dtype rt_lowbit_npz_dtype(mlc_dtype t) {
  if (rt_dtype_is_lowfloat(t)) return MLC_F32;
  if (t == MLC_I4 || t == MLC_I2) return MLC_I8;
  if (t == MLC_U4 || t == MLC_U2) return MLC_U8;
  return t;
}

bool rt_lowbit_from_npz(mlc_dtype t, mlc_dtype src, const void *data, int64_t n, uint8_t *dst, char *err) {
  int bits = rt_dtype_bits(t);
  if (rt_dtype_is_lowfloat(t) && src == MLC_F32) {
    for (int64_t i = 0; i < n; i++) dst[i] = rt_f32_to_lowfloat(t, ((const float *)data)[i], false);
    return true;
  }
  if (rt_dtype_is_lowfloat(t) && src == MLC_U8) { /* bit patterns */
    for (int64_t i = 0; i < n; i++) {
      uint8_t v = ((const uint8_t *)data)[i];
      if (bits < 8 && v >> bits) {
        snprintf(err, RT_ERRLEN, "%s bit pattern 0x%02x at element %lld does not fit in %d bits", mlc_dtype_name(t),
                 v, (long long)i, bits);
        return false;
      }
      dst[i] = v;
    }
    return true;
  }
  bool sgn = t == MLC_I4 || t == MLC_I2;
  if (!rt_dtype_is_lowfloat(t) && src == (sgn ? MLC_I8 : MLC_U8)) {
    int lo = sgn ? -(1 << (bits - 1)) : 0, hi = sgn ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    for (int64_t i = 0; i < n; i++) {
      int v = sgn ? ((const int8_t *)data)[i] : ((const uint8_t *)data)[i];
      if (v < lo || v > hi) {
        snprintf(err, RT_ERRLEN, "value %d at element %lld is out of the range of %s [%d, %d]", v, (long long)i,
                 mlc_dtype_name(t), lo, hi);
        return false;
      }
      dst[i] = (uint8_t)v;
    }
    return true;
  }
  snprintf(err, RT_ERRLEN, "a %s value is given as %s (numpy has no %s; give %s)", mlc_dtype_name(t),
           mlc_dtype_name(src), mlc_dtype_name(t),
           rt_dtype_is_lowfloat(t) ? "float32 values or uint8 bit patterns" : sgn ? "int8 values" : "uint8 values");
  return false;
}

/* ---- sub-byte packing (ONNX TensorProto data, mod.params): `bits`-wide elements, the first in the low bits ---- */

int64_t rt_packed_nbytes(int64_t n, int bits) { return (n * bits + 7) / 8; }

void rt_pack_bits(uint8_t *dst, const uint8_t *src, int64_t n, int bits) {
  int per = 8 / bits;
  unsigned mask = (1u << bits) - 1;
  memset(dst, 0, (size_t)rt_packed_nbytes(n, bits));
  for (int64_t i = 0; i < n; i++) dst[i / per] |= (uint8_t)((src[i] & mask) << (bits * (int)(i % per)));
}

void rt_unpack_bits(uint8_t *dst, const uint8_t *src, int64_t n, int bits, bool sign_extend) {
  int per = 8 / bits;
  unsigned mask = (1u << bits) - 1;
  for (int64_t i = n - 1; i >= 0; i--) { /* backwards: dst may be the buffer src lies at the start of */
    unsigned v = (src[i / per] >> (bits * (int)(i % per))) & mask;
    if (sign_extend && (v >> (bits - 1))) v |= ~mask;
    dst[i] = (uint8_t)v;
  }
}
