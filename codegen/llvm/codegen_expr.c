/* codegen/llvm/codegen_expr.c: TIR expressions -> LLVM IR values.
 *
 * A recursive switch over ExprKind (chibicc gen_expr). Integer ops pick signed or unsigned instructions from
 * the operand dtype; E_FLOORDIV/E_FLOORMOD correct the truncating sdiv/srem by one when the remainder is
 * non-zero and its sign differs from the divisor's. Float compares are ordered except != (une), as in C.
 * float16/bfloat16 values live in f32 registers and are rounded back to their precision after every
 * arithmetic result (see cg_internal.h). Math intrinsics map to LLVM intrinsics where LLVM has one that every
 * backend lowers (exp, log, sqrt, fabs, floor, ceil, trunc, roundeven, pow, sin, cos, fma) and to libm calls
 * otherwise; vectors of libm calls are scalarised lane by lane. Vector loads are one contiguous load when the
 * last index is a stride-1 ramp and the others are scalars, and a lane-by-lane gather otherwise. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "codegen/llvm/cg_internal.h"
#include "runtime/rt.h"

static bool is_float(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16 || t == MLC_F32 || t == MLC_F64; }
static bool is_signed(mlc_dtype t) {
  return t == MLC_I8 || t == MLC_I16 || t == MLC_I32 || t == MLC_I64 || t == MLC_I4 || t == MLC_I2;
}
static int int_bits(mlc_dtype t) {
  if (dtype_is_lowbit(t)) return 8; /* the register width */
  switch (t) {
  case MLC_BOOL: return 1;
  case MLC_I8: case MLC_U8: return 8;
  case MLC_I16: case MLC_U16: return 16;
  case MLC_I32: case MLC_U32: return 32;
  case MLC_I64: case MLC_U64: return 64;
  default: return 0;
  }
}

static int lanes_of(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(t) : 1;
}

static LLVMValueRef fail(CgModule *m, mlc_status st, const char *fmt, const char *a, const char *b) {
  diag_set(m->d, st, fmt, a, b);
  return NULL;
}

LLVMTypeRef cg_reg_type(CgModule *m, mlc_dtype t, int lanes) {
  LLVMTypeRef base;
  switch (t) {
  case MLC_BOOL: base = m->t_i1; break;
  case MLC_I8: case MLC_U8: base = m->t_i8; break;
  case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_F4E2M1: case MLC_F8E8M0:
  case MLC_I4: case MLC_U4: case MLC_I2: case MLC_U2: base = m->t_i8; break; /* bits / extended value */
  case MLC_I16: case MLC_U16: base = m->t_i16; break;
  case MLC_I32: case MLC_U32: base = m->t_i32; break;
  case MLC_I64: case MLC_U64: base = m->t_i64; break;
  case MLC_F16: case MLC_BF16: case MLC_F32: base = m->t_f32; break;
  case MLC_F64: base = m->t_f64; break;
  default: return NULL;
  }
  return lanes > 1 ? LLVMVectorType(base, (unsigned)lanes) : base;
}

LLVMTypeRef cg_mem_type(CgModule *m, mlc_dtype t) {
  switch (t) {
  case MLC_BOOL: return m->t_i8;
  case MLC_F16: return m->t_half;
  case MLC_BF16: return m->t_i16;
  default: return cg_reg_type(m, t, 1);
  }
}

static LLVMTypeRef with_lanes(LLVMTypeRef scalar, int lanes) {
  return lanes > 1 ? LLVMVectorType(scalar, (unsigned)lanes) : scalar;
}

LLVMValueRef cg_splat(CgModule *m, LLVMValueRef v, int lanes) {
  if (lanes <= 1 || lanes_of(v) == lanes) return v;
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
  LLVMValueRef undef = LLVMGetPoison(vt);
  LLVMValueRef ins = LLVMBuildInsertElement(m->b, undef, v, LLVMConstInt(m->t_i32, 0, 0), "");
  return LLVMBuildShuffleVector(m->b, ins, undef, LLVMConstNull(LLVMVectorType(m->t_i32, (unsigned)lanes)), "");
}

static LLVMValueRef const_int(LLVMTypeRef scalar, int lanes, CgModule *m, uint64_t v) {
  return cg_splat(m, LLVMConstInt(scalar, v, 0), lanes);
}

/* bfloat16 rounding of f32 values: round to nearest even on the bit pattern. A NaN keeps its top 16 bits, plus
 * the quiet bit when its payload was all in the low half (so it stays a NaN): a bfloat16 NaN, signalling or not,
 * rounds to itself, as every bfloat16 value does (a reinterpreted pattern is stored bit for bit).
 * Returns the i32 pattern with the low 16 bits cleared. */
static LLVMValueRef bf16_bits(CgModule *m, LLVMValueRef v) {
  int lanes = lanes_of(v);
  LLVMTypeRef it = with_lanes(m->t_i32, lanes);
  LLVMValueRef bits = LLVMBuildBitCast(m->b, v, it, "");
  LLVMValueRef lsb = LLVMBuildAnd(m->b, LLVMBuildLShr(m->b, bits, const_int(m->t_i32, lanes, m, 16), ""),
                                  const_int(m->t_i32, lanes, m, 1), "");
  LLVMValueRef r = LLVMBuildAdd(m->b, bits, LLVMBuildAdd(m->b, lsb, const_int(m->t_i32, lanes, m, 0x7fff), ""), "");
  LLVMValueRef mask = const_int(m->t_i32, lanes, m, 0xffff0000u);
  r = LLVMBuildAnd(m->b, r, mask, "");
  LLVMValueRef top = LLVMBuildAnd(m->b, bits, mask, "");
  LLVMValueRef top_payload = LLVMBuildAnd(m->b, bits, const_int(m->t_i32, lanes, m, 0x007f0000), "");
  LLVMValueRef keep = LLVMBuildICmp(m->b, LLVMIntNE, top_payload, const_int(m->t_i32, lanes, m, 0), "");
  LLVMValueRef quiet = LLVMBuildOr(m->b, top, const_int(m->t_i32, lanes, m, 0x00400000), "");
  LLVMValueRef nan = LLVMBuildSelect(m->b, keep, top, quiet, "");
  LLVMValueRef isnan = LLVMBuildFCmp(m->b, LLVMRealUNO, v, v, "");
  return LLVMBuildSelect(m->b, isnan, nan, r, "");
}

/* Rounds an f32 register value to the precision of t (no-op for f32/f64 and non-floats). */
static LLVMValueRef round_to(CgModule *m, LLVMValueRef v, mlc_dtype t) {
  int lanes = lanes_of(v);
  if (t == MLC_F16)
    return LLVMBuildFPExt(m->b, LLVMBuildFPTrunc(m->b, v, with_lanes(m->t_half, lanes), ""), LLVMTypeOf(v), "");
  if (t == MLC_BF16) return LLVMBuildBitCast(m->b, bf16_bits(m, v), LLVMTypeOf(v), "");
  return v;
}

LLVMValueRef cg_to_mem(CgModule *m, LLVMValueRef v, mlc_dtype t) {
  int lanes = lanes_of(v);
  switch (t) {
  case MLC_BOOL: return LLVMBuildZExt(m->b, v, with_lanes(m->t_i8, lanes), "");
  case MLC_F16: return LLVMBuildFPTrunc(m->b, v, with_lanes(m->t_half, lanes), "");
  case MLC_BF16:
    return LLVMBuildTrunc(m->b, LLVMBuildLShr(m->b, bf16_bits(m, v), const_int(m->t_i32, lanes, m, 16), ""),
                          with_lanes(m->t_i16, lanes), "");
  default: return v;
  }
}

LLVMValueRef cg_from_mem(CgModule *m, LLVMValueRef v, mlc_dtype t) {
  int lanes = lanes_of(v);
  switch (t) {
  case MLC_BOOL: return LLVMBuildICmp(m->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
  case MLC_F16: return LLVMBuildFPExt(m->b, v, with_lanes(m->t_f32, lanes), "");
  case MLC_BF16: {
    LLVMValueRef w = LLVMBuildZExt(m->b, v, with_lanes(m->t_i32, lanes), "");
    w = LLVMBuildShl(m->b, w, const_int(m->t_i32, lanes, m, 16), "");
    return LLVMBuildBitCast(m->b, w, with_lanes(m->t_f32, lanes), "");
  }
  default: return v;
  }
}

/* ---- bindings ---- */

void cg_bind(CgModule *m, bool is_buf, const void *key, LLVMValueRef v) {
  CgBind bnd = {key, v};
  if (is_buf) vec_push(m->arena, &m->fn->bufs, bnd);
  else vec_push(m->arena, &m->fn->vars, bnd);
}

void cg_unbind(CgModule *m, bool is_buf) {
  if (is_buf) m->fn->bufs.n--;
  else m->fn->vars.n--;
}

LLVMValueRef cg_lookup_var(CgModule *m, const Var *v) {
  for (int i = m->fn->vars.n - 1; i >= 0; i--)
    if (m->fn->vars.v[i].key == v) return m->fn->vars.v[i].val;
  return NULL;
}

LLVMValueRef cg_lookup_buf(CgModule *m, const Buffer *b) {
  for (int i = m->fn->bufs.n - 1; i >= 0; i--)
    if (m->fn->bufs.v[i].key == b) return m->fn->bufs.v[i].val;
  return NULL;
}

LLVMValueRef cg_call_intrinsic(CgModule *m, const char *name, LLVMTypeRef overload, int nargs, LLVMValueRef *args) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef ov[1] = {overload};
  int nov = overload ? 1 : 0;
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(m->mod, id, ov, (size_t)nov);
  LLVMTypeRef ft = LLVMIntrinsicGetType(m->ctx, id, ov, (size_t)nov);
  return LLVMBuildCall2(m->b, ft, fn, args, (unsigned)nargs, "");
}

/* ---- conversions ---- */

/* The low-precision types (see mlc_dtype) are storage types: a float8 / float4 register holds the bit pattern
 * (i8), an int4 / int2 its value sign-extended to i8, a uint4 / uint2 its value. Loads and stores move the
 * byte unchanged, so data movement keeps every pattern (NaN payloads included); only a cast converts.
 * Decoding a float8 / float4 is a lookup in a 256 (16) entry float table built from rt_lowfloat_to_f32.
 * Encoding from f32 rounds to nearest even on the bit pattern, the same arithmetic as rt_f32_to_lowfloat:
 * normal results add half an ulp minus one plus the kept lsb and shift, subnormal results scale by a power of
 * two (exact) and use roundeven. Out-of-range values and infinities become inf (E5M2) or NaN (E4M3FN, FNUZ):
 * the non-saturating conversion; Cast with saturate=1 clamps to the largest finite value before it
 * (topi_lowfloat_saturate). float4 has no inf or NaN and always saturates (NaN gives 0x8, as ONNX's
 * reference). float8e8m0 takes the exponent of |x|, rounded up and saturating (Cast's defaults; topi adjusts x
 * for the other round modes). Casting to int4/uint4/int2/uint2 wraps to the width, as ONNX's Cast does. Other sources go
 * through f32 (f64 through f32 too: one more rounding, as ONNX's reference does) or through i8. */
typedef struct LowFmt {
  int nbits, mbits, bias;
  unsigned maxmag;
  bool fnuz, inf;
} LowFmt;

static LowFmt low_fmt(mlc_dtype t) {
  switch (t) {
  case MLC_F8E4M3FN: return (LowFmt){8, 3, 7, 0x7e, false, false};
  case MLC_F8E4M3FNUZ: return (LowFmt){8, 3, 8, 0x7f, true, false};
  case MLC_F8E5M2: return (LowFmt){8, 2, 15, 0x7b, false, true};
  case MLC_F8E5M2FNUZ: return (LowFmt){8, 2, 16, 0x7f, true, false};
  default: return (LowFmt){4, 1, 1, 0x7, false, false}; /* float4 e2m1 */
  }
}

static LLVMValueRef decode_lowfloat(CgModule *m, LLVMValueRef v, mlc_dtype t) {
  int n = t == MLC_F4E2M1 ? 16 : 256, lanes = lanes_of(v);
  char name[64];
  snprintf(name, sizeof name, "mlc.%s.to.f32", mlc_dtype_name(t));
  LLVMTypeRef at = LLVMArrayType(m->t_f32, (unsigned)n);
  LLVMValueRef g = LLVMGetNamedGlobal(m->mod, name);
  if (!g) {
    LLVMValueRef vals[256];
    for (int i = 0; i < n; i++) vals[i] = LLVMConstReal(m->t_f32, (double)rt_lowfloat_to_f32(t, (uint8_t)i));
    g = LLVMAddGlobal(m->mod, at, name);
    LLVMSetInitializer(g, LLVMConstArray(m->t_f32, vals, (unsigned)n));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  }
  LLVMValueRef idx = LLVMBuildZExt(m->b, v, with_lanes(m->t_i32, lanes), "");
  idx = LLVMBuildAnd(m->b, idx, const_int(m->t_i32, lanes, m, (uint64_t)(n - 1)), "");
  LLVMValueRef zero = LLVMConstInt(m->t_i32, 0, 0);
  if (lanes == 1) {
    LLVMValueRef ix[2] = {zero, idx};
    return LLVMBuildLoad2(m->b, m->t_f32, LLVMBuildInBoundsGEP2(m->b, at, g, ix, 2, ""), "");
  }
  LLVMValueRef out = LLVMGetPoison(with_lanes(m->t_f32, lanes));
  for (int l = 0; l < lanes; l++) {
    LLVMValueRef li = LLVMConstInt(m->t_i32, (unsigned)l, 0);
    LLVMValueRef ix[2] = {zero, LLVMBuildExtractElement(m->b, idx, li, "")};
    LLVMValueRef x = LLVMBuildLoad2(m->b, m->t_f32, LLVMBuildInBoundsGEP2(m->b, at, g, ix, 2, ""), "");
    out = LLVMBuildInsertElement(m->b, out, x, li, "");
  }
  return out;
}

static LLVMValueRef encode_lowfloat(CgModule *m, LLVMValueRef x, mlc_dtype t) {
  LowFmt f = low_fmt(t);
  int lanes = lanes_of(x), emin = 1 - f.bias, sh = 23 - f.mbits;
  LLVMTypeRef it = with_lanes(m->t_i32, lanes), ft = with_lanes(m->t_f32, lanes);
#define K(v) const_int(m->t_i32, lanes, m, (uint64_t)(v))
  LLVMValueRef bits = LLVMBuildBitCast(m->b, x, it, "");
  if (t == MLC_F8E8M0) { /* the exponent of |x|, up when a mantissa bit is set and below 2^127 (saturating) */
    LLVMValueRef e = LLVMBuildAnd(m->b, LLVMBuildLShr(m->b, bits, K(23), ""), K(0xff), "");
    LLVMValueRef frac = LLVMBuildICmp(m->b, LLVMIntNE, LLVMBuildAnd(m->b, bits, K(0x7fffff), ""), K(0), "");
    LLVMValueRef up = LLVMBuildAnd(m->b, frac, LLVMBuildICmp(m->b, LLVMIntULT, e, K(0xfe), ""), "");
    LLVMValueRef r = LLVMBuildAdd(m->b, e, LLVMBuildZExt(m->b, up, it, ""), "");
    return LLVMBuildTrunc(m->b, r, with_lanes(m->t_i8, lanes), ""); /* e = 0xff (inf, NaN) stays NaN */
  }
  LLVMValueRef sign = LLVMBuildShl(m->b, LLVMBuildLShr(m->b, bits, K(31), ""), K(f.nbits - 1), "");
  LLVMValueRef a = LLVMBuildAnd(m->b, bits, K(0x7fffffffu), "");
  LLVMValueRef isnan = LLVMBuildICmp(m->b, LLVMIntUGT, a, K(0x7f800000u), "");
  /* normal in the target: round the f32 pattern to mbits mantissa bits, then rebias the exponent */
  LLVMValueRef lsb = LLVMBuildAnd(m->b, LLVMBuildLShr(m->b, a, K(sh), ""), K(1), "");
  LLVMValueRef r = LLVMBuildAdd(m->b, a, LLVMBuildAdd(m->b, lsb, K((1u << (sh - 1)) - 1), ""), "");
  LLVMValueRef mag_n = LLVMBuildSub(m->b, LLVMBuildLShr(m->b, r, K(sh), ""), K((unsigned)(127 - f.bias) << f.mbits), "");
  /* subnormal in the target: count steps of 2^(emin - mbits), exact scaling, round half to even */
  LLVMValueRef q = LLVMBuildFMul(m->b, LLVMBuildBitCast(m->b, a, ft, ""),
                                 cg_splat(m, LLVMConstReal(m->t_f32, ldexp(1.0, f.mbits - emin)), lanes), "");
  q = cg_call_intrinsic(m, "llvm.roundeven", ft, 1, &q);
  LLVMValueRef mag_s = LLVMBuildFPToUI(m->b, q, it, "");
  LLVMValueRef isnorm = LLVMBuildICmp(m->b, LLVMIntUGE, a, K((unsigned)(emin + 127) << 23), "");
  LLVMValueRef mag = LLVMBuildSelect(m->b, isnorm, mag_n, mag_s, "");
  LLVMValueRef res = LLVMBuildOr(m->b, sign, mag, "");
  if (f.fnuz) res = LLVMBuildSelect(m->b, LLVMBuildICmp(m->b, LLVMIntEQ, mag, K(0), ""), K(0), res, "");
  LLVMValueRef ovf_code = t == MLC_F4E2M1 ? LLVMBuildOr(m->b, sign, K(f.maxmag), "")
                          : f.fnuz        ? K(0x80)
                                          : LLVMBuildOr(m->b, sign, K(f.inf ? 0x7c : 0x7f), "");
  res = LLVMBuildSelect(m->b, LLVMBuildICmp(m->b, LLVMIntUGT, mag, K(f.maxmag), ""), ovf_code, res, "");
  LLVMValueRef nan_code = t == MLC_F4E2M1 ? K(0x8)
                          : f.fnuz        ? K(0x80)
                                          : LLVMBuildOr(m->b, sign, K(f.inf ? 0x7e : 0x7f), "");
  res = LLVMBuildSelect(m->b, isnan, nan_code, res, "");
#undef K
  return LLVMBuildTrunc(m->b, res, with_lanes(m->t_i8, lanes), "");
}

static LLVMValueRef convert(CgModule *m, LLVMValueRef v, mlc_dtype from, mlc_dtype to);

static LLVMValueRef convert_lowbit(CgModule *m, LLVMValueRef v, mlc_dtype from, mlc_dtype to) {
  if (dtype_is_lowfloat(from)) return convert(m, decode_lowfloat(m, v, from), MLC_F32, to);
  if (dtype_is_lowbit(from)) return convert(m, v, is_signed(from) ? MLC_I8 : MLC_U8, to);
  if (dtype_is_lowfloat(to)) {
    if (from != MLC_F32 && !(v = convert(m, v, from, MLC_F32))) return NULL;
    return encode_lowfloat(m, v, to);
  }
  /* int4 / uint4 / int2 / uint2: wrap to the width (through i32 / i64 like the other narrow integers) */
  int lanes = lanes_of(v), bits = rt_dtype_bits(to);
  mlc_dtype wide = from == MLC_I64 || from == MLC_U64 ? from : MLC_I32;
  if (from != wide && !(v = convert(m, v, from, wide))) return NULL;
  v = LLVMBuildTrunc(m->b, v, with_lanes(m->t_i8, lanes), "");
  if (is_signed(to))
    return LLVMBuildAShr(m->b, LLVMBuildShl(m->b, v, const_int(m->t_i8, lanes, m, (uint64_t)(8 - bits)), ""),
                         const_int(m->t_i8, lanes, m, (uint64_t)(8 - bits)), "");
  return LLVMBuildAnd(m->b, v, const_int(m->t_i8, lanes, m, (1u << bits) - 1), "");
}

static LLVMValueRef convert(CgModule *m, LLVMValueRef v, mlc_dtype from, mlc_dtype to) {
  if (from == to) return v;
  if (dtype_is_lowbit(from) || dtype_is_lowbit(to)) return convert_lowbit(m, v, from, to);
  int lanes = lanes_of(v);
  LLVMTypeRef ty = cg_reg_type(m, to, lanes);
  if (!ty) return fail(m, MLC_ERR_UNSUPPORTED, "codegen: cast to dtype %s is not supported%s", mlc_dtype_name(to), "");
  if (!cg_reg_type(m, from, 1))
    return fail(m, MLC_ERR_UNSUPPORTED, "codegen: cast from dtype %s is not supported%s", mlc_dtype_name(from), "");
  bool ff = is_float(from), tf = is_float(to);
  if (to == MLC_BOOL) {
    if (ff) return LLVMBuildFCmp(m->b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    return LLVMBuildICmp(m->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
  }
  if (ff && tf) {
    if (to == MLC_F16 && from == MLC_F64) /* one rounding, straight to half */
      return LLVMBuildFPExt(m->b, LLVMBuildFPTrunc(m->b, v, with_lanes(m->t_half, lanes), ""), ty, "");
    LLVMValueRef r = v;
    if (LLVMTypeOf(v) != ty) r = to == MLC_F64 ? LLVMBuildFPExt(m->b, v, ty, "") : LLVMBuildFPTrunc(m->b, v, ty, "");
    return round_to(m, r, to);
  }
  if (!ff && tf) {
    LLVMValueRef r = is_signed(from) ? LLVMBuildSIToFP(m->b, v, ty, "") : LLVMBuildUIToFP(m->b, v, ty, "");
    return round_to(m, r, to);
  }
  if (ff && !tf) {
    int bits = int_bits(to);
    if (bits == 64) return is_signed(to) ? LLVMBuildFPToSI(m->b, v, ty, "") : LLVMBuildFPToUI(m->b, v, ty, "");
    /* narrower targets: convert through a wider signed integer and wrap, as numpy does on x86 */
    LLVMTypeRef wide = with_lanes(to == MLC_U32 ? m->t_i64 : m->t_i32, lanes);
    LLVMValueRef w = LLVMBuildFPToSI(m->b, v, wide, "");
    return LLVMTypeOf(w) == ty ? w : LLVMBuildTrunc(m->b, w, ty, "");
  }
  int fb = int_bits(from), tb = int_bits(to);
  if (fb == tb) return v;
  if (fb > tb) return LLVMBuildTrunc(m->b, v, ty, "");
  return is_signed(from) ? LLVMBuildSExt(m->b, v, ty, "") : LLVMBuildZExt(m->b, v, ty, "");
}

/* Index values are int64 for address arithmetic. */
static LLVMValueRef to_i64(CgModule *m, LLVMValueRef v, mlc_dtype t) {
  if (t == MLC_I64 || t == MLC_U64) return v;
  int lanes = lanes_of(v);
  if (is_float(t)) return LLVMBuildFPToSI(m->b, v, with_lanes(m->t_i64, lanes), "");
  return is_signed(t) ? LLVMBuildSExt(m->b, v, with_lanes(m->t_i64, lanes), "")
                      : LLVMBuildZExt(m->b, v, with_lanes(m->t_i64, lanes), "");
}

/* ---- addresses ---- */

static bool is_unit_ramp(const Expr *e) {
  return e->kind == E_RAMP && e->op.a->lanes == 1 && e->op.b->kind == E_INT && e->op.b->ival == 1;
}

LLVMValueRef cg_address(CgModule *m, Buffer *buf, int n, Expr *const *idx, int lanes, bool *contig) {
  LLVMValueRef base = cg_lookup_buf(m, buf);
  if (!base) return fail(m, MLC_ERR_INTERNAL, "codegen: buffer '%s' is not bound in kernel '%s'", buf->name, m->fn->kname);
  if (n != buf->ndim && n != 1)
    return fail(m, MLC_ERR_INTERNAL, "codegen: buffer '%s' accessed with the wrong number of indices in kernel '%s'",
                buf->name, m->fn->kname);
  *contig = n > 0 && is_unit_ramp(idx[n - 1]);
  for (int i = 0; i < n - 1; i++)
    if (idx[i]->lanes > 1) *contig = false;
  LLVMValueRef flat = NULL;
  for (int i = 0; i < n; i++) {
    const Expr *ix = (i == n - 1 && *contig) ? idx[i]->op.a : idx[i];
    LLVMValueRef v = cg_expr(m, ix);
    if (!v) return NULL;
    v = to_i64(m, v, ix->dtype);
    if (!flat) {
      flat = v;
      continue;
    }
    int fl = lanes_of(flat), vl = lanes_of(v), l = fl > vl ? fl : vl;
    flat = cg_splat(m, flat, l);
    v = cg_splat(m, v, l);
    LLVMValueRef dim = const_int(m->t_i64, l, m, (uint64_t)buf->shape[i]);
    flat = LLVMBuildNSWAdd(m->b, LLVMBuildNSWMul(m->b, flat, dim, ""), v, "");
  }
  if (!flat) flat = LLVMConstInt(m->t_i64, 0, 0);
  if (!*contig && lanes > 1) flat = cg_splat(m, flat, lanes);
  LLVMTypeRef et = cg_mem_type(m, buf->dtype);
  if (!et) return fail(m, MLC_ERR_UNSUPPORTED, "codegen: buffer '%s' has unsupported dtype %s", buf->name,
                       mlc_dtype_name(buf->dtype));
  return LLVMBuildInBoundsGEP2(m->b, et, base, &flat, 1, "");
}

static unsigned elem_align(CgModule *m, mlc_dtype t) {
  int s = mlc_dtype_size(t);
  return s > 0 ? (unsigned)s : 1;
}

static LLVMValueRef cg_load(CgModule *m, const Expr *e) {
  Buffer *buf = e->load.buf;
  bool contig;
  int lanes = e->lanes > 1 ? e->lanes : 1;
  LLVMValueRef addr = cg_address(m, buf, e->load.n, e->load.idx, lanes, &contig);
  if (!addr) return NULL;
  LLVMTypeRef et = cg_mem_type(m, buf->dtype);
  LLVMValueRef v;
  if (lanes_of(addr) > 1) { /* gather */
    int l = lanes_of(addr);
    v = LLVMGetPoison(LLVMVectorType(et, (unsigned)l));
    for (int i = 0; i < l; i++) {
      LLVMValueRef li = LLVMConstInt(m->t_i32, (unsigned)i, 0);
      LLVMValueRef x = LLVMBuildLoad2(m->b, et, LLVMBuildExtractElement(m->b, addr, li, ""), "");
      LLVMSetAlignment(x, elem_align(m, buf->dtype));
      v = LLVMBuildInsertElement(m->b, v, x, li, "");
    }
  } else {
    v = LLVMBuildLoad2(m->b, contig ? LLVMVectorType(et, (unsigned)lanes) : et, addr, "");
    LLVMSetAlignment(v, elem_align(m, buf->dtype));
    if (!contig && lanes > 1) v = cg_splat(m, v, lanes);
  }
  return cg_from_mem(m, v, buf->dtype);
}

/* ---- arithmetic ---- */

static LLVMValueRef floor_div_mod(CgModule *m, LLVMValueRef a, LLVMValueRef b, bool mod) {
  LLVMValueRef q = LLVMBuildSDiv(m->b, a, b, ""), r = LLVMBuildSRem(m->b, a, b, "");
  LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(a));
  LLVMValueRef rnz = LLVMBuildICmp(m->b, LLVMIntNE, r, zero, "");
  LLVMValueRef diff = LLVMBuildICmp(m->b, LLVMIntSLT, LLVMBuildXor(m->b, r, b, ""), zero, "");
  LLVMValueRef adj = LLVMBuildAnd(m->b, rnz, diff, "");
  if (mod) return LLVMBuildAdd(m->b, r, LLVMBuildSelect(m->b, adj, b, zero, ""), "");
  return LLVMBuildSub(m->b, q, LLVMBuildZExt(m->b, adj, LLVMTypeOf(a), ""), "");
}

static const char *kind_name(ExprKind k) {
  static const char *const names[] = {
      [E_ADD] = "add", [E_SUB] = "sub", [E_MUL] = "mul", [E_DIV] = "div", [E_MOD] = "mod",
      [E_FLOORDIV] = "floordiv", [E_FLOORMOD] = "floormod", [E_MIN] = "min", [E_MAX] = "max",
      [E_BITAND] = "bitand", [E_BITOR] = "bitor", [E_BITXOR] = "bitxor", [E_SHL] = "shl", [E_SHR] = "shr",
      [E_AND] = "and", [E_OR] = "or"};
  return (unsigned)k < countof(names) && names[k] ? names[k] : "op";
}

/* a*b+c may become one fused multiply-add (as C's -ffp-contract=fast): the backend fuses contractable fmul/fadd
 * pairs into vfmadd on targets with FMA. */
static LLVMValueRef contract(LLVMValueRef v) {
  if (LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) LLVMSetFastMathFlags(v, LLVMFastMathAllowContract);
  return v;
}

static LLVMValueRef cg_binary(CgModule *m, const Expr *e) {
  const Expr *A = e->op.a, *B = e->op.b;
  LLVMValueRef a = cg_expr(m, A);
  LLVMValueRef b = a ? cg_expr(m, B) : NULL;
  if (!b) return NULL;
  mlc_dtype t = A->dtype;
  if (B->dtype != t && !(b = convert(m, b, B->dtype, t))) return NULL;
  int la = lanes_of(a), lb = lanes_of(b), lanes = la > lb ? la : lb;
  a = cg_splat(m, a, lanes);
  b = cg_splat(m, b, lanes);
  ExprKind k = e->kind;
  if (k >= E_EQ && k <= E_GE) {
    if (is_float(t)) {
      static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
      return LLVMBuildFCmp(m->b, fp[k - E_EQ], a, b, "");
    }
    bool s = is_signed(t);
    static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
    static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
    return LLVMBuildICmp(m->b, s ? sp[k - E_EQ] : up[k - E_EQ], a, b, "");
  }
  if (k == E_AND || k == E_OR) {
    if (is_float(t)) return fail(m, MLC_ERR_INTERNAL, "codegen: logical %s on %s", kind_name(k), mlc_dtype_name(t));
    return k == E_AND ? LLVMBuildAnd(m->b, a, b, "") : LLVMBuildOr(m->b, a, b, "");
  }
  if (is_float(t)) {
    LLVMValueRef r;
    switch (k) {
    case E_ADD: r = contract(LLVMBuildFAdd(m->b, a, b, "")); break;
    case E_SUB: r = contract(LLVMBuildFSub(m->b, a, b, "")); break;
    case E_MUL: r = contract(LLVMBuildFMul(m->b, a, b, "")); break;
    case E_DIV: r = LLVMBuildFDiv(m->b, a, b, ""); break;
    case E_MOD: r = LLVMBuildFRem(m->b, a, b, ""); break;
    case E_FLOORDIV:
    case E_FLOORMOD: {
      LLVMValueRef q = LLVMBuildFDiv(m->b, a, b, "");
      LLVMValueRef fq = cg_call_intrinsic(m, "llvm.floor", LLVMTypeOf(q), 1, &q);
      r = k == E_FLOORDIV ? fq : LLVMBuildFSub(m->b, a, LLVMBuildFMul(m->b, fq, b, ""), "");
      break;
    }
    case E_MIN:
    case E_MAX: { /* NaN-propagating, -0 < +0: numpy's minimum/maximum */
      LLVMValueRef args[2] = {a, b};
      r = cg_call_intrinsic(m, k == E_MIN ? "llvm.minimum" : "llvm.maximum", LLVMTypeOf(a), 2, args);
      break;
    }
    default:
      return fail(m, MLC_ERR_UNSUPPORTED, "codegen: %s on floating dtype %s", kind_name(k), mlc_dtype_name(t));
    }
    return round_to(m, r, t);
  }
  bool s = is_signed(t);
  bool nsw = t == MLC_I64; /* index math: overflow is a bug, let LLVM assume it away */
  switch (k) {
  case E_ADD: return nsw ? LLVMBuildNSWAdd(m->b, a, b, "") : LLVMBuildAdd(m->b, a, b, "");
  case E_SUB: return nsw ? LLVMBuildNSWSub(m->b, a, b, "") : LLVMBuildSub(m->b, a, b, "");
  case E_MUL: return nsw ? LLVMBuildNSWMul(m->b, a, b, "") : LLVMBuildMul(m->b, a, b, "");
  case E_DIV: return s ? LLVMBuildSDiv(m->b, a, b, "") : LLVMBuildUDiv(m->b, a, b, "");
  case E_MOD: return s ? LLVMBuildSRem(m->b, a, b, "") : LLVMBuildURem(m->b, a, b, "");
  case E_FLOORDIV: return s ? floor_div_mod(m, a, b, false) : LLVMBuildUDiv(m->b, a, b, "");
  case E_FLOORMOD: return s ? floor_div_mod(m, a, b, true) : LLVMBuildURem(m->b, a, b, "");
  case E_MIN:
  case E_MAX: {
    LLVMValueRef args[2] = {a, b};
    const char *name = k == E_MIN ? (s ? "llvm.smin" : "llvm.umin") : (s ? "llvm.smax" : "llvm.umax");
    return cg_call_intrinsic(m, name, LLVMTypeOf(a), 2, args);
  }
  case E_BITAND: return LLVMBuildAnd(m->b, a, b, "");
  case E_BITOR: return LLVMBuildOr(m->b, a, b, "");
  case E_BITXOR: return LLVMBuildXor(m->b, a, b, "");
  case E_SHL: return LLVMBuildShl(m->b, a, b, "");
  case E_SHR: return s ? LLVMBuildAShr(m->b, a, b, "") : LLVMBuildLShr(m->b, a, b, "");
  default: return fail(m, MLC_ERR_INTERNAL, "codegen: unexpected binary %s on %s", kind_name(k), mlc_dtype_name(t));
  }
}

/* ---- intrinsics ---- */

static LLVMValueRef libm_call(CgModule *m, const char *name, LLVMTypeRef scalar, int nargs, LLVMValueRef *args) {
  char full[32];
  snprintf(full, sizeof full, "%s%s", name, scalar == m->t_f32 ? "f" : "");
  LLVMTypeRef ps[2] = {scalar, scalar};
  LLVMTypeRef ft = LLVMFunctionType(scalar, ps, (unsigned)nargs, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(m->mod, full);
  if (!fn) {
    fn = LLVMAddFunction(m->mod, full, ft);
    const char *attrs[] = {"nounwind", "willreturn", "nosync", "nofree"};
    for (size_t i = 0; i < countof(attrs); i++)
      LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                              LLVMCreateEnumAttribute(m->ctx, LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i])), 0));
    /* memory(none): as with -fno-math-errno, so LICM/CSE/vectorisation may treat them as pure */
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(m->ctx, LLVMGetEnumAttributeKindForName("memory", 6), 0));
  }
  int lanes = lanes_of(args[0]);
  if (lanes == 1) return LLVMBuildCall2(m->b, ft, fn, args, (unsigned)nargs, "");
  LLVMValueRef out = LLVMGetPoison(LLVMTypeOf(args[0]));
  for (int i = 0; i < lanes; i++) {
    LLVMValueRef li = LLVMConstInt(m->t_i32, (unsigned)i, 0), sa[2];
    for (int j = 0; j < nargs; j++) sa[j] = LLVMBuildExtractElement(m->b, args[j], li, "");
    out = LLVMBuildInsertElement(m->b, out, LLVMBuildCall2(m->b, ft, fn, sa, (unsigned)nargs, ""), li, "");
  }
  return out;
}

/* The bits of v (register form of dtype from) read as dtype to of the same size: both go through their
 * memory form (bool as i8, float16 as half, bfloat16 as its i16 pattern), which holds the bits exactly since
 * a half register value is always rounded to its precision. */
static LLVMValueRef reinterpret(CgModule *m, LLVMValueRef v, mlc_dtype from, mlc_dtype to) {
  LLVMTypeRef fm = cg_mem_type(m, from), tm = cg_mem_type(m, to);
  if (!fm || !tm || mlc_dtype_size(from) != mlc_dtype_size(to))
    return fail(m, MLC_ERR_UNSUPPORTED, "codegen: reinterpret of %s as %s", mlc_dtype_name(from), mlc_dtype_name(to));
  if (from == to) return v;
  int lanes = lanes_of(v);
  LLVMValueRef bits;
  if (from == MLC_BF16) /* no rounding: the low half of the f32 pattern is zero */
    bits = LLVMBuildTrunc(m->b, LLVMBuildLShr(m->b, LLVMBuildBitCast(m->b, v, with_lanes(m->t_i32, lanes), ""),
                                              const_int(m->t_i32, lanes, m, 16), ""),
                          with_lanes(m->t_i16, lanes), "");
  else
    bits = cg_to_mem(m, v, from);
  bits = LLVMBuildBitCast(m->b, bits, with_lanes(tm, lanes), "");
  return cg_from_mem(m, bits, to);
}

/* INTRIN_DOT_U8S8 on lanes int32 words: vpdpbusd where the target has it at this width, else the four byte
 * products (zero-extended times sign-extended) added in int32 */
static LLVMValueRef dot_u8s8(CgModule *m, LLVMValueRef *args, int n, int lanes) {
  LLVMValueRef acc = n > 2 ? args[2] : const_int(m->t_i32, lanes, m, 0);
  if (lanes == m->target.dot_i8_lanes && (lanes == 16 || lanes == 8)) {
    LLVMValueRef ops[3] = {acc, args[0], args[1]};
    return cg_call_intrinsic(m, lanes == 16 ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256", NULL,
                             3, ops);
  }
  for (int k = 0; k < 4; k++) {
    LLVMValueRef ua = LLVMBuildAnd(m->b, LLVMBuildLShr(m->b, args[0], const_int(m->t_i32, lanes, m, 8 * k), ""),
                                   const_int(m->t_i32, lanes, m, 255), "");
    LLVMValueRef sb = LLVMBuildAShr(m->b, LLVMBuildShl(m->b, args[1], const_int(m->t_i32, lanes, m, 24 - 8 * k), ""),
                                    const_int(m->t_i32, lanes, m, 24), "");
    acc = LLVMBuildAdd(m->b, acc, LLVMBuildMul(m->b, ua, sb, ""), "");
  }
  return acc;
}

/* INTRIN_PREFETCH: llvm.prefetch of the read's address (read, high locality, data cache); the call's value is
 * a zero that no one uses */
static LLVMValueRef cg_prefetch(CgModule *m, const Expr *e) {
  const Expr *x = e->call.nargs == 1 ? e->call.args[0] : NULL;
  if (!x || x->kind != E_LOAD || x->lanes > 1)
    return fail(m, MLC_ERR_INTERNAL, "codegen: prefetch needs one scalar buffer read%s%s", "", "");
  bool contig;
  LLVMValueRef addr = cg_address(m, x->load.buf, x->load.n, x->load.idx, 1, &contig);
  if (!addr) return NULL;
  LLVMValueRef args[4] = {addr, LLVMConstInt(m->t_i32, 0, 0), LLVMConstInt(m->t_i32, 3, 0),
                          LLVMConstInt(m->t_i32, 1, 0)};
  cg_call_intrinsic(m, "llvm.prefetch", LLVMTypeOf(addr), 4, args);
  return cg_splat(m, LLVMConstInt(m->t_i32, 0, 0), e->lanes > 1 ? e->lanes : 1);
}

static LLVMValueRef cg_call(CgModule *m, const Expr *e) {
  Intrin in = e->call.intrin;
  int n = e->call.nargs;
  if (in == INTRIN_PREFETCH) return cg_prefetch(m, e);
  int want = (in == INTRIN_POW || in == INTRIN_ATAN2) ? 2 : in == INTRIN_FMA ? 3 : 1;
  if (in == INTRIN_DOT_U8S8) want = n == 3 ? 3 : 2;
  const char *iname = intrin_name(in);
  if ((unsigned)in >= INTRIN_COUNT || n != want)
    return fail(m, MLC_ERR_INTERNAL, "codegen: intrinsic %s called with a wrong number of arguments%s", iname, "");
  LLVMValueRef args[3];
  int lanes = 1;
  for (int i = 0; i < n; i++) {
    if (!(args[i] = cg_expr(m, e->call.args[i]))) return NULL;
    if (lanes_of(args[i]) > lanes) lanes = lanes_of(args[i]);
  }
  mlc_dtype at = e->call.args[0]->dtype;
  if (in == INTRIN_REINTERPRET) return reinterpret(m, args[0], at, e->dtype);
  for (int i = 0; i < n; i++) {
    if (e->call.args[i]->dtype != at && !(args[i] = convert(m, args[i], e->call.args[i]->dtype, at))) return NULL;
    args[i] = cg_splat(m, args[i], lanes);
  }
  if (in == INTRIN_DOT_U8S8) {
    if (at != MLC_I32 || e->dtype != MLC_I32)
      return fail(m, MLC_ERR_INTERNAL, "codegen: intrinsic %s on %s", iname, mlc_dtype_name(at));
    return dot_u8s8(m, args, n, lanes);
  }
  LLVMValueRef x = args[0];
  LLVMTypeRef ty = LLVMTypeOf(x);
  if (!is_float(at)) {
    switch (in) {
    case INTRIN_FABS:
      if (is_signed(at)) {
        LLVMValueRef aa[2] = {x, LLVMConstInt(m->t_i1, 0, 0)};
        return cg_call_intrinsic(m, "llvm.abs", ty, 2, aa);
      }
      return x;
    case INTRIN_FLOOR: case INTRIN_CEIL: case INTRIN_ROUND: case INTRIN_TRUNC: return x;
    case INTRIN_ISNAN: case INTRIN_ISINF: return convert(m, const_int(m->t_i1, lanes, m, 0), MLC_BOOL, e->dtype);
    default:
      return fail(m, MLC_ERR_UNSUPPORTED, "codegen: intrinsic %s on integer dtype %s", iname, mlc_dtype_name(at));
    }
  }
  const char *llvm_name = NULL, *libm = NULL;
  switch (in) {
  case INTRIN_EXP: llvm_name = "llvm.exp"; break;
  case INTRIN_LOG: llvm_name = "llvm.log"; break;
  case INTRIN_SQRT: llvm_name = "llvm.sqrt"; break;
  case INTRIN_FABS: llvm_name = "llvm.fabs"; break;
  case INTRIN_FLOOR: llvm_name = "llvm.floor"; break;
  case INTRIN_CEIL: llvm_name = "llvm.ceil"; break;
  case INTRIN_TRUNC: llvm_name = "llvm.trunc"; break;
  case INTRIN_ROUND: llvm_name = "llvm.roundeven"; break;
  case INTRIN_POW: llvm_name = "llvm.pow"; break;
  case INTRIN_SIN: llvm_name = "llvm.sin"; break;
  case INTRIN_COS: llvm_name = "llvm.cos"; break;
  case INTRIN_FMA: llvm_name = "llvm.fma"; break;
  case INTRIN_TANH: libm = "tanh"; break;
  case INTRIN_ERF: libm = "erf"; break;
  case INTRIN_TAN: libm = "tan"; break;
  case INTRIN_ASIN: libm = "asin"; break;
  case INTRIN_ACOS: libm = "acos"; break;
  case INTRIN_ATAN: libm = "atan"; break;
  case INTRIN_ATAN2: libm = "atan2"; break;
  case INTRIN_SINH: libm = "sinh"; break;
  case INTRIN_COSH: libm = "cosh"; break;
  case INTRIN_ASINH: libm = "asinh"; break;
  case INTRIN_ACOSH: libm = "acosh"; break;
  case INTRIN_ATANH: libm = "atanh"; break;
  case INTRIN_ISNAN:
  case INTRIN_ISINF: {
    LLVMValueRef r;
    if (in == INTRIN_ISNAN)
      r = LLVMBuildFCmp(m->b, LLVMRealUNO, x, x, "");
    else {
      LLVMValueRef ax = cg_call_intrinsic(m, "llvm.fabs", ty, 1, &x);
      LLVMTypeRef st = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty;
      r = LLVMBuildFCmp(m->b, LLVMRealOEQ, ax, cg_splat(m, LLVMConstReal(st, INFINITY), lanes), "");
    }
    return e->dtype == MLC_BOOL ? r : convert(m, r, MLC_BOOL, e->dtype);
  }
  case INTRIN_SIGMOID: {
    LLVMValueRef nx = LLVMBuildFNeg(m->b, x, "");
    LLVMValueRef ex = cg_call_intrinsic(m, "llvm.exp", ty, 1, &nx);
    LLVMTypeRef st = lanes > 1 ? LLVMGetElementType(ty) : ty;
    LLVMValueRef one = cg_splat(m, LLVMConstReal(st, 1.0), lanes);
    return round_to(m, LLVMBuildFDiv(m->b, one, LLVMBuildFAdd(m->b, one, ex, ""), ""), e->dtype);
  }
  default: return fail(m, MLC_ERR_INTERNAL, "codegen: unknown intrinsic %s%s", iname, "");
  }
  LLVMValueRef r = llvm_name ? cg_call_intrinsic(m, llvm_name, ty, n, args)
                             : libm_call(m, libm, lanes > 1 ? LLVMGetElementType(ty) : ty, n, args);
  return is_float(e->dtype) ? round_to(m, r, e->dtype) : r;
}

/* ---- the expression switch ---- */

/* whether e reads memory */
static bool has_load(const Expr *e) {
  if (!e) return false;
  switch (e->kind) {
  case E_LOAD: case E_TENSOR: case E_REDUCE: return true;
  case E_INT: case E_FLOAT: case E_VAR: return false;
  case E_CALL:
    for (int i = 0; i < e->call.nargs; i++)
      if (has_load(e->call.args[i])) return true;
    return false;
  default: return has_load(e->op.a) || has_load(e->op.b) || (e->kind == E_SELECT && has_load(e->op.c));
  }
}

/* A vector select on one (scalar) condition whose arms read memory, as a branch: only the arm taken is
 * evaluated. A concatenate is a chain of such selects along its axis; evaluated eagerly every output vector
 * loaded from every input (DenseNet's concatenates of up to 48 inputs); the condition is the same for the
 * whole vector, so the branch is as predictable as the loop around it. */
static LLVMValueRef lazy_select(CgModule *m, const Expr *e, LLVMValueRef c) {
  if (e->op.c->dtype != MLC_BOOL && !(c = convert(m, c, e->op.c->dtype, MLC_BOOL))) return NULL;
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(m->b));
  LLVMBasicBlockRef then_bb = LLVMAppendBasicBlockInContext(m->ctx, fn, "sel.a");
  LLVMBasicBlockRef else_bb = LLVMAppendBasicBlockInContext(m->ctx, fn, "sel.b");
  LLVMBasicBlockRef join_bb = LLVMAppendBasicBlockInContext(m->ctx, fn, "sel.join");
  LLVMBuildCondBr(m->b, c, then_bb, else_bb);
  LLVMValueRef v[2];
  LLVMBasicBlockRef from[2];
  const Expr *arm[2] = {e->op.a, e->op.b};
  LLVMBasicBlockRef bb[2] = {then_bb, else_bb};
  for (int i = 0; i < 2; i++) {
    LLVMPositionBuilderAtEnd(m->b, bb[i]);
    v[i] = cg_expr(m, arm[i]);
    if (!v[i]) return NULL;
    if (arm[i]->dtype != e->op.a->dtype && !(v[i] = convert(m, v[i], arm[i]->dtype, e->op.a->dtype))) return NULL;
    v[i] = cg_splat(m, v[i], e->lanes);
    from[i] = LLVMGetInsertBlock(m->b);
    LLVMBuildBr(m->b, join_bb);
  }
  LLVMPositionBuilderAtEnd(m->b, join_bb);
  LLVMValueRef phi = LLVMBuildPhi(m->b, LLVMTypeOf(v[0]), "");
  LLVMAddIncoming(phi, v, from, 2);
  return phi;
}

LLVMValueRef cg_expr(CgModule *m, const Expr *e) {
  int lanes = e->lanes > 1 ? e->lanes : 1;
  switch (e->kind) {
  case E_INT: {
    LLVMTypeRef t = cg_reg_type(m, e->dtype, 1);
    if (!t) return fail(m, MLC_ERR_UNSUPPORTED, "codegen: immediate of dtype %s is not supported%s", mlc_dtype_name(e->dtype), "");
    LLVMValueRef c = is_float(e->dtype) ? round_to(m, LLVMConstReal(t, (double)e->ival), e->dtype)
                     : e->dtype == MLC_BOOL ? LLVMConstInt(t, e->ival != 0, 0)
                                            : LLVMConstInt(t, (unsigned long long)e->ival, is_signed(e->dtype));
    return cg_splat(m, c, lanes);
  }
  case E_FLOAT: {
    LLVMTypeRef t = cg_reg_type(m, e->dtype, 1);
    if (!t) return fail(m, MLC_ERR_UNSUPPORTED, "codegen: immediate of dtype %s is not supported%s", mlc_dtype_name(e->dtype), "");
    LLVMValueRef c = is_float(e->dtype) ? round_to(m, LLVMConstReal(t, e->fval), e->dtype)
                     : e->dtype == MLC_BOOL ? LLVMConstInt(t, e->fval != 0, 0)
                                            : LLVMConstInt(t, (unsigned long long)(int64_t)e->fval, is_signed(e->dtype));
    return cg_splat(m, c, lanes);
  }
  case E_VAR: {
    LLVMValueRef v = cg_lookup_var(m, e->var);
    if (!v) return fail(m, MLC_ERR_INTERNAL, "codegen: variable '%s' is not bound in kernel '%s'", e->var->name, m->fn->kname);
    return cg_splat(m, v, lanes);
  }
  case E_ADD: case E_SUB: case E_MUL: case E_DIV: case E_MOD: case E_FLOORDIV: case E_FLOORMOD:
  case E_MIN: case E_MAX: case E_BITAND: case E_BITOR: case E_BITXOR: case E_SHL: case E_SHR:
  case E_EQ: case E_NE: case E_LT: case E_LE: case E_GT: case E_GE: case E_AND: case E_OR:
    return cg_binary(m, e);
  case E_NOT: {
    LLVMValueRef a = cg_expr(m, e->op.a);
    if (!a) return NULL;
    if (e->op.a->dtype != MLC_BOOL && !(a = convert(m, a, e->op.a->dtype, MLC_BOOL))) return NULL;
    return LLVMBuildNot(m->b, a, "");
  }
  case E_SELECT: {
    LLVMValueRef c = cg_expr(m, e->op.c);
    /* a condition that folded to a constant (a select on an unrolled loop's variable, e.g. Winograd's
     * per-coordinate transform rows): emit only the chosen arm, not both for LLVM to delete */
    if (c && LLVMIsAConstantInt(c) && e->op.c->dtype == MLC_BOOL && e->op.a->dtype == e->op.b->dtype &&
        e->op.a->lanes == e->op.b->lanes && e->op.a->lanes == e->lanes)
      return cg_expr(m, LLVMConstIntGetZExtValue(c) ? e->op.a : e->op.b);
    if (c && lanes_of(c) == 1 && e->lanes > 1 && (has_load(e->op.a) || has_load(e->op.b)))
      return lazy_select(m, e, c);
    LLVMValueRef a = c ? cg_expr(m, e->op.a) : NULL;
    LLVMValueRef b = a ? cg_expr(m, e->op.b) : NULL;
    if (!b) return NULL;
    if (e->op.c->dtype != MLC_BOOL && !(c = convert(m, c, e->op.c->dtype, MLC_BOOL))) return NULL;
    if (e->op.b->dtype != e->op.a->dtype && !(b = convert(m, b, e->op.b->dtype, e->op.a->dtype))) return NULL;
    int l = lanes_of(c);
    if (lanes_of(a) > l) l = lanes_of(a);
    if (lanes_of(b) > l) l = lanes_of(b);
    a = cg_splat(m, a, l);
    b = cg_splat(m, b, l);
    if (lanes_of(c) > 1) c = cg_splat(m, c, l);
    return LLVMBuildSelect(m->b, c, a, b, "");
  }
  case E_CAST: {
    LLVMValueRef a = cg_expr(m, e->op.a);
    return a ? convert(m, a, e->op.a->dtype, e->dtype) : NULL;
  }
  case E_CALL: return cg_call(m, e);
  case E_LOAD: return cg_load(m, e);
  case E_LET: {
    LLVMValueRef v = cg_expr(m, e->op.a);
    if (!v) return NULL;
    cg_bind(m, false, e->let_var, v);
    LLVMValueRef r = cg_expr(m, e->op.b);
    cg_unbind(m, false);
    return r;
  }
  case E_RAMP: {
    LLVMValueRef base = cg_expr(m, e->op.a);
    LLVMValueRef stride = base ? cg_expr(m, e->op.b) : NULL;
    if (!stride) return NULL;
    if (e->op.b->dtype != e->op.a->dtype && !(stride = convert(m, stride, e->op.b->dtype, e->op.a->dtype))) return NULL;
    LLVMTypeRef st = LLVMTypeOf(base);
    LLVMValueRef steps[64];
    if (lanes > 64) return fail(m, MLC_ERR_UNSUPPORTED, "codegen: ramp wider than 64 lanes%s%s", "", "");
    bool fl = is_float(e->op.a->dtype);
    for (int i = 0; i < lanes; i++) steps[i] = fl ? LLVMConstReal(st, i) : LLVMConstInt(st, (unsigned)i, 0);
    LLVMValueRef iota = LLVMConstVector(steps, (unsigned)lanes);
    LLVMValueRef sb = cg_splat(m, base, lanes), ss = cg_splat(m, stride, lanes);
    if (fl) return LLVMBuildFAdd(m->b, sb, LLVMBuildFMul(m->b, ss, iota, ""), "");
    return LLVMBuildAdd(m->b, sb, LLVMBuildMul(m->b, ss, iota, ""), "");
  }
  case E_BROADCAST: {
    LLVMValueRef a = cg_expr(m, e->op.a);
    return a ? cg_splat(m, a, lanes) : NULL;
  }
  case E_TENSOR:
  case E_REDUCE:
    return fail(m, MLC_ERR_INTERNAL, "codegen: TE-only expression (%s) reached codegen in kernel '%s'",
                e->kind == E_TENSOR ? "tensor read" : "reduce", m->fn->kname);
  default: break;
  }
  return fail(m, MLC_ERR_INTERNAL, "codegen: unknown expression kind in kernel '%s'%s", m->fn->kname, "");
}
