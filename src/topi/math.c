/* topi math family: elementwise and broadcast arithmetic, activations, comparisons, logic, bitwise ops,
 * casts, clip and where. bitcast reads each element's bits as another dtype of the same size (ONNX BitCast);
 * its body is the reinterpret intrinsic, which codegen applies to the stored (memory) form of both dtypes.
 *
 * Every op here is one TE compute whose body is a single scalar expression of its inputs read at the same
 * (numpy-broadcast) output index, so they are all PAT_ELEMWISE (one input) or PAT_BROADCAST (several).
 * The op set is the MATH_OPS table below: an X-macro expanded into the enum, the per-op infer/compute
 * wrappers and the OpDef table. Arithmetic on float16/bfloat16 is done in float32 (inputs widened, the
 * result rounded back once); integer ops keep the C semantics of TIR (division truncates toward zero,
 * guarded against a zero divisor so generated code never traps). */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

/* input type classes accepted by an op */
typedef enum TypeClass {
  TC_FLOAT,  /* f16, bf16, f32, f64 */
  TC_NUM,    /* floats and integers */
  TC_SNUM,   /* floats and signed integers */
  TC_INT,    /* integers (signed and unsigned) */
  TC_UINT,   /* unsigned integers */
  TC_BOOL,   /* bool only */
  TC_ALL,    /* numbers and bool */
} TypeClass;

/* output dtype rules */
typedef enum OutRule {
  OUT_SAME, /* dtype of the (first data) input */
  OUT_BOOL, /* comparisons, predicates */
  OUT_ATTR, /* cast, bitcast: attribute "dtype" */
} OutRule;

/*  enum       graph op name          inputs  classes   output   */
#define MATH_OPS(X)                                              \
  X(M_ADD, "add", 2, TC_NUM, OUT_SAME)                           \
  X(M_SUB, "subtract", 2, TC_NUM, OUT_SAME)                      \
  X(M_MUL, "multiply", 2, TC_NUM, OUT_SAME)                      \
  X(M_DIV, "divide", 2, TC_NUM, OUT_SAME)                        \
  X(M_MAX, "maximum", 2, TC_NUM, OUT_SAME)                       \
  X(M_MIN, "minimum", 2, TC_NUM, OUT_SAME)                       \
  X(M_MOD, "mod", 2, TC_NUM, OUT_SAME)          /* C % / fmod */ \
  X(M_FLOORMOD, "floor_mod", 2, TC_NUM, OUT_SAME) /* python % */ \
  X(M_POW, "power", 2, TC_NUM, OUT_SAME)  /* exponent any num */ \
  X(M_PRELU, "nn.prelu", 2, TC_SNUM, OUT_SAME)                   \
  X(M_BITAND, "bitwise_and", 2, TC_INT, OUT_SAME)                \
  X(M_BITOR, "bitwise_or", 2, TC_INT, OUT_SAME)                  \
  X(M_BITXOR, "bitwise_xor", 2, TC_INT, OUT_SAME)                \
  X(M_SHL, "left_shift", 2, TC_UINT, OUT_SAME)                   \
  X(M_SHR, "right_shift", 2, TC_UINT, OUT_SAME)                  \
  X(M_AND, "logical_and", 2, TC_BOOL, OUT_SAME)                  \
  X(M_OR, "logical_or", 2, TC_BOOL, OUT_SAME)                    \
  X(M_XOR, "logical_xor", 2, TC_BOOL, OUT_SAME)                  \
  X(M_EQ, "equal", 2, TC_ALL, OUT_BOOL)                          \
  X(M_LT, "less", 2, TC_NUM, OUT_BOOL)                           \
  X(M_GT, "greater", 2, TC_NUM, OUT_BOOL)                        \
  X(M_LE, "less_equal", 2, TC_NUM, OUT_BOOL)                     \
  X(M_GE, "greater_equal", 2, TC_NUM, OUT_BOOL)                  \
  X(M_WHERE, "where", 3, TC_ALL, OUT_SAME) /* cond, x, y */      \
  X(M_NEG, "negative", 1, TC_SNUM, OUT_SAME)                     \
  X(M_ABS, "abs", 1, TC_NUM, OUT_SAME)                           \
  X(M_EXP, "exp", 1, TC_FLOAT, OUT_SAME)                         \
  X(M_LOG, "log", 1, TC_FLOAT, OUT_SAME)                         \
  X(M_SQRT, "sqrt", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_RECIP, "reciprocal", 1, TC_FLOAT, OUT_SAME)                \
  X(M_SIGMOID, "sigmoid", 1, TC_FLOAT, OUT_SAME)                 \
  X(M_TANH, "tanh", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_ERF, "erf", 1, TC_FLOAT, OUT_SAME)                         \
  X(M_SIN, "sin", 1, TC_FLOAT, OUT_SAME)                         \
  X(M_COS, "cos", 1, TC_FLOAT, OUT_SAME)                         \
  X(M_TAN, "tan", 1, TC_FLOAT, OUT_SAME)                         \
  X(M_ASIN, "asin", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_ACOS, "acos", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_ATAN, "atan", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_SINH, "sinh", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_COSH, "cosh", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_ASINH, "asinh", 1, TC_FLOAT, OUT_SAME)                     \
  X(M_ACOSH, "acosh", 1, TC_FLOAT, OUT_SAME)                     \
  X(M_ATANH, "atanh", 1, TC_FLOAT, OUT_SAME)                     \
  X(M_FLOOR, "floor", 1, TC_FLOAT, OUT_SAME)                     \
  X(M_CEIL, "ceil", 1, TC_FLOAT, OUT_SAME)                       \
  X(M_ROUND, "round", 1, TC_FLOAT, OUT_SAME) /* half to even */  \
  X(M_SIGN, "sign", 1, TC_NUM, OUT_SAME)                         \
  X(M_RELU, "nn.relu", 1, TC_SNUM, OUT_SAME)                     \
  X(M_LEAKY, "nn.leaky_relu", 1, TC_FLOAT, OUT_SAME) /* alpha */ \
  X(M_HSIG, "nn.hard_sigmoid", 1, TC_FLOAT, OUT_SAME)            \
  X(M_HSWISH, "nn.hard_swish", 1, TC_FLOAT, OUT_SAME)            \
  X(M_ELU, "nn.elu", 1, TC_FLOAT, OUT_SAME)                      \
  X(M_SELU, "nn.selu", 1, TC_FLOAT, OUT_SAME)                    \
  X(M_CELU, "nn.celu", 1, TC_FLOAT, OUT_SAME)                    \
  X(M_GELU, "nn.gelu", 1, TC_FLOAT, OUT_SAME)                    \
  X(M_MISH, "nn.mish", 1, TC_FLOAT, OUT_SAME)                    \
  X(M_SWISH, "nn.swish", 1, TC_FLOAT, OUT_SAME)   /* alpha */    \
  X(M_SOFTPLUS, "nn.softplus", 1, TC_FLOAT, OUT_SAME)            \
  X(M_SOFTSIGN, "nn.softsign", 1, TC_FLOAT, OUT_SAME)            \
  X(M_THRELU, "nn.thresholded_relu", 1, TC_FLOAT, OUT_SAME)      \
  X(M_SHRINK, "nn.shrink", 1, TC_NUM, OUT_SAME)                  \
  X(M_NOT, "logical_not", 1, TC_BOOL, OUT_SAME)                  \
  X(M_BITNOT, "bitwise_not", 1, TC_INT, OUT_SAME)                \
  X(M_ISNAN, "isnan", 1, TC_FLOAT, OUT_BOOL)                     \
  X(M_ISINF, "isinf", 1, TC_FLOAT, OUT_BOOL)                     \
  X(M_CAST, "cast", 1, TC_ALL, OUT_ATTR)                         \
  X(M_BITCAST, "bitcast", 1, TC_ALL, OUT_ATTR) /* same size */   \
  X(M_CLIP, "clip", 1, TC_NUM, OUT_SAME) /* a_min, a_max */

typedef enum MathOp {
#define X(e, name, nin, cls, out) e,
  MATH_OPS(X)
#undef X
  M_COUNT
} MathOp;

static const struct {
  const char *name;
  int nin;
  TypeClass cls;
  OutRule out;
} math_info[M_COUNT] = {
#define X(e, name, nin, cls, out) [e] = {name, nin, cls, out},
    MATH_OPS(X)
#undef X
};

static bool is_half(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16; }

static bool dtype_supported(mlc_dtype t) {
  return dtype_is_float(t) || dtype_is_int(t) || t == MLC_BOOL;
}

static bool in_class(mlc_dtype t, TypeClass c) {
  switch (c) {
    case TC_FLOAT: return dtype_is_float(t);
    case TC_NUM: return dtype_is_float(t) || dtype_is_int(t);
    case TC_SNUM: return dtype_is_float(t) || (dtype_is_int(t) && dtype_is_signed(t));
    case TC_INT: return dtype_is_int(t);
    case TC_UINT: return dtype_is_int(t) && !dtype_is_signed(t);
    case TC_BOOL: return t == MLC_BOOL;
    case TC_ALL: return dtype_supported(t);
  }
  return false;
}

static const char *class_name(TypeClass c) {
  switch (c) {
    case TC_FLOAT: return "floating-point";
    case TC_NUM: return "numeric";
    case TC_SNUM: return "floating-point or signed integer";
    case TC_INT: return "integer";
    case TC_UINT: return "unsigned integer";
    case TC_BOOL: return "bool";
    case TC_ALL: return "numeric or bool";
  }
  return "?";
}

/* ---- type relation ---- */

static mlc_status math_infer(Node *n, MathOp op, Diag *d) {
  const char *name = math_info[op].name;
  int nin = math_info[op].nin;
  if (n->ninputs != nin) return diag_set(d, MLC_ERR_INVALID, "%s takes %d inputs, got %d", name, nin, n->ninputs);
  for (int i = 0; i < nin; i++)
    if (!n->inputs[i]) return diag_set(d, MLC_ERR_INVALID, "%s: input %d is missing", name, i);
  /* the data input whose dtype the op is typed by (where: x) */
  int first = op == M_WHERE ? 1 : 0;
  mlc_dtype t = n->inputs[first]->type.dtype;
  /* the low-precision storage types (see mlc_dtype) take part in casts only; bitcast moves the 8-bit ones */
  bool low_ok = op == M_CAST || (op == M_BITCAST && dtype_is_lowfloat(t) && t != MLC_F4E2M1);
  if (!dtype_supported(t) && !(low_ok && dtype_is_lowbit(t)))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: dtype %s is not supported", name, mlc_dtype_name(t));
  if (!in_class(t, math_info[op].cls) && !(low_ok && dtype_is_lowbit(t)))
    return diag_set(d, MLC_ERR_INVALID, "%s: input dtype %s is not %s", name, mlc_dtype_name(t),
                    class_name(math_info[op].cls));
  for (int i = 0; i < nin; i++) {
    mlc_dtype ti = n->inputs[i]->type.dtype;
    if (op == M_WHERE && i == 0) {
      if (ti != MLC_BOOL)
        return diag_set(d, MLC_ERR_INVALID, "where: condition must be bool, got %s", mlc_dtype_name(ti));
      continue;
    }
    if (op == M_POW && i == 1) {
      if (!dtype_is_float(ti) && !dtype_is_int(ti))
        return diag_set(d, MLC_ERR_INVALID, "power: exponent dtype %s is not numeric", mlc_dtype_name(ti));
      continue;
    }
    if (ti != t)
      return diag_set(d, MLC_ERR_INVALID, "%s: input dtypes differ (%s and %s)", name, mlc_dtype_name(t),
                      mlc_dtype_name(ti));
  }
  TensorType out = n->inputs[0]->type;
  for (int i = 1; i < nin; i++) {
    TensorType r;
    if (topi_broadcast_shape(&out, &n->inputs[i]->type, &r) != MLC_OK) {
      StrBuf b = {0};
      tt_print(&b, &out);
      sb_printf(&b, " and ");
      tt_print(&b, &n->inputs[i]->type);
      diag_set(d, MLC_ERR_INVALID, "%s: shapes %s do not broadcast", name, b.s ? b.s : "");
      sb_free(&b);
      return MLC_ERR_INVALID;
    }
    out = r;
  }
  if (op == M_PRELU) { /* slope broadcasts to x only (unidirectional) */
    const TensorType *xt = &n->inputs[0]->type;
    if (out.ndim != xt->ndim || memcmp(out.dims, xt->dims, sizeof(int64_t) * (size_t)out.ndim) != 0)
      return diag_set(d, MLC_ERR_INVALID, "nn.prelu: slope does not broadcast to the shape of x");
  }
  switch (math_info[op].out) {
    case OUT_SAME: out.dtype = t; break;
    case OUT_BOOL: out.dtype = MLC_BOOL; break;
    case OUT_ATTR: {
      int64_t to = ir_attr_int(n, "dtype", MLC_UNDEF);
      bool low_to = to > 0 && to < MLC_DTYPE_COUNT && dtype_is_lowbit((mlc_dtype)to) &&
                    (op == M_CAST || (dtype_is_lowfloat((mlc_dtype)to) && to != MLC_F4E2M1));
      if (to <= 0 || to >= MLC_DTYPE_COUNT || !(dtype_supported((mlc_dtype)to) || low_to))
        return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: target dtype %lld is not supported", name, (long long)to);
      if (op == M_BITCAST && mlc_dtype_size((mlc_dtype)to) != mlc_dtype_size(t))
        return diag_set(d, MLC_ERR_INVALID, "bitcast: %s and %s differ in size", mlc_dtype_name(t),
                        mlc_dtype_name((mlc_dtype)to));
      out.dtype = (mlc_dtype)to;
      break;
    }
  }
  if (n->noutputs != 1) return diag_set(d, MLC_ERR_INVALID, "%s has one output", name);
  n->outputs[0]->type = out;
  return MLC_OK;
}

/* ---- compute ---- */

typedef struct MathArgs {
  const Node *n;
  MathOp op;
  int nin;
  TeTensor **ins;
  int ndim;
  mlc_dtype out;
} MathArgs;

static Expr *cst(TeCtx *c, mlc_dtype t, double v) { return tir_const(c->arena, t, v); }
static Expr *bin(TeCtx *c, ExprKind k, Expr *x, Expr *y) { return tir_bin(c->arena, k, x, y); }
static Expr *call1(TeCtx *c, Intrin in, Expr *x) { return tir_call(c->arena, in, x->dtype, 1, &x); }
static Expr *sel(TeCtx *c, Expr *cond, Expr *t, Expr *f) { return tir_select(c->arena, cond, t, f); }

/* integer division / remainder whose divisor 0 is replaced by 1 and whose result is then 0 (numpy gives 0
 * for integer division by zero; LLVM's sdiv by zero would trap) */
static Expr *int_divmod(TeCtx *c, ExprKind k, Expr *x, Expr *y) {
  Expr *zero = cst(c, y->dtype, 0);
  Expr *isz = bin(c, E_EQ, y, zero);
  Expr *safe = sel(c, isz, cst(c, y->dtype, 1), y);
  return sel(c, isz, zero, bin(c, k, x, safe));
}

/* python-style remainder of floats: fmod, then moved to the sign of the divisor */
static Expr *float_floormod(TeCtx *c, Expr *x, Expr *y) {
  mlc_dtype t = x->dtype;
  Expr *r = bin(c, E_MOD, x, y);
  Expr *zero = cst(c, t, 0);
  Expr *fix = bin(c, E_AND, bin(c, E_NE, r, zero), bin(c, E_NE, bin(c, E_LT, r, zero), bin(c, E_LT, y, zero)));
  return sel(c, fix, bin(c, E_ADD, r, y), r);
}

/* x in the compute dtype t (a float type for every activation) */
static Expr *activation(TeCtx *c, const Node *n, MathOp op, Expr *x) {
  mlc_dtype t = x->dtype;
  Expr *zero = cst(c, t, 0), *one = cst(c, t, 1);
  switch (op) {
    case M_LEAKY: {
      Expr *alpha = cst(c, t, ir_attr_float(n, "alpha", 0.01));
      return sel(c, bin(c, E_LT, x, zero), bin(c, E_MUL, alpha, x), x);
    }
    case M_HSIG: {
      Expr *alpha = cst(c, t, ir_attr_float(n, "alpha", 0.2)), *beta = cst(c, t, ir_attr_float(n, "beta", 0.5));
      Expr *v = bin(c, E_ADD, bin(c, E_MUL, alpha, x), beta);
      return bin(c, E_MAX, zero, bin(c, E_MIN, one, v));
    }
    case M_HSWISH: {
      Expr *v = bin(c, E_ADD, bin(c, E_MUL, x, cst(c, t, 1.0 / 6.0)), cst(c, t, 0.5));
      return bin(c, E_MUL, x, bin(c, E_MAX, zero, bin(c, E_MIN, one, v)));
    }
    case M_ELU: {
      Expr *alpha = cst(c, t, ir_attr_float(n, "alpha", 1.0));
      Expr *neg = bin(c, E_MUL, alpha, bin(c, E_SUB, call1(c, INTRIN_EXP, x), one));
      return sel(c, bin(c, E_LT, x, zero), neg, x);
    }
    case M_SELU: {
      double a = ir_attr_float(n, "alpha", 1.67326319217681884765625);
      double g = ir_attr_float(n, "gamma", 1.05070102214813232421875);
      Expr *neg = bin(c, E_SUB, bin(c, E_MUL, cst(c, t, a * g), call1(c, INTRIN_EXP, x)), cst(c, t, a * g));
      return sel(c, bin(c, E_LE, x, zero), neg, bin(c, E_MUL, cst(c, t, g), x));
    }
    case M_CELU: {
      Expr *alpha = cst(c, t, ir_attr_float(n, "alpha", 1.0));
      Expr *e = call1(c, INTRIN_EXP, bin(c, E_DIV, x, alpha));
      Expr *neg = bin(c, E_MUL, alpha, bin(c, E_SUB, e, one));
      return bin(c, E_ADD, bin(c, E_MAX, zero, x), bin(c, E_MIN, zero, neg));
    }
    case M_GELU: {
      const char *ap = ir_attr_string(n, "approximate", "none");
      Expr *half = cst(c, t, 0.5);
      Expr *inner;
      if (strcmp(ap, "tanh") == 0) {
        Expr *x3 = bin(c, E_MUL, bin(c, E_MUL, x, x), x);
        Expr *u = bin(c, E_MUL, cst(c, t, sqrt(2.0 / M_PI)), bin(c, E_ADD, x, bin(c, E_MUL, cst(c, t, 0.044715), x3)));
        inner = call1(c, INTRIN_TANH, u);
      } else {
        inner = call1(c, INTRIN_ERF, bin(c, E_MUL, x, cst(c, t, M_SQRT1_2)));
      }
      return bin(c, E_MUL, bin(c, E_MUL, half, x), bin(c, E_ADD, one, inner));
    }
    case M_SOFTPLUS:
    case M_MISH: {
      /* softplus(x) = max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x| */
      Expr *sp = bin(c, E_ADD, bin(c, E_MAX, x, zero),
                     call1(c, INTRIN_LOG, bin(c, E_ADD, one, call1(c, INTRIN_EXP, bin(c, E_SUB, zero, call1(c, INTRIN_FABS, x))))));
      return op == M_SOFTPLUS ? sp : bin(c, E_MUL, x, call1(c, INTRIN_TANH, sp));
    }
    case M_SWISH: {
      Expr *ax = bin(c, E_MUL, cst(c, t, ir_attr_float(n, "alpha", 1.0)), x);
      return bin(c, E_MUL, x, tir_call(c->arena, INTRIN_SIGMOID, t, 1, &ax));
    }
    case M_SOFTSIGN: return bin(c, E_DIV, x, bin(c, E_ADD, one, call1(c, INTRIN_FABS, x)));
    case M_THRELU: {
      Expr *alpha = cst(c, t, ir_attr_float(n, "alpha", 1.0));
      return sel(c, bin(c, E_GT, x, alpha), x, zero);
    }
    default: return NULL;
  }
}

static Expr *unary_intrin(TeCtx *c, MathOp op, Expr *x) {
  static const struct { MathOp op; Intrin in; } map[] = {
      {M_EXP, INTRIN_EXP},     {M_LOG, INTRIN_LOG},     {M_SQRT, INTRIN_SQRT},   {M_SIGMOID, INTRIN_SIGMOID},
      {M_TANH, INTRIN_TANH},   {M_ERF, INTRIN_ERF},     {M_SIN, INTRIN_SIN},     {M_COS, INTRIN_COS},
      {M_TAN, INTRIN_TAN},     {M_ASIN, INTRIN_ASIN},   {M_ACOS, INTRIN_ACOS},   {M_ATAN, INTRIN_ATAN},
      {M_SINH, INTRIN_SINH},   {M_COSH, INTRIN_COSH},   {M_ASINH, INTRIN_ASINH}, {M_ACOSH, INTRIN_ACOSH},
      {M_ATANH, INTRIN_ATANH}, {M_FLOOR, INTRIN_FLOOR}, {M_CEIL, INTRIN_CEIL},   {M_ROUND, INTRIN_ROUND},
  };
  for (size_t i = 0; i < countof(map); i++)
    if (map[i].op == op) return call1(c, map[i].in, x);
  return NULL;
}

/* The scalar body of op. x[] are the inputs read at the output index; the result has dtype out. */
static Expr *math_body(TeCtx *c, const MathArgs *m, Expr **xin) {
  const Node *n = m->n;
  MathOp op = m->op;
  Arena *A = c->arena;
  mlc_dtype t = xin[op == M_WHERE ? 1 : 0]->dtype; /* storage dtype of the data inputs */
  mlc_dtype ct = is_half(t) ? MLC_F32 : t;        /* compute dtype */
  Expr *x[3] = {0};
  for (int i = 0; i < m->nin; i++) x[i] = is_half(xin[i]->dtype) ? tir_cast(A, MLC_F32, xin[i]) : xin[i];
  Expr *r = NULL;
  bool isf = dtype_is_float(ct);
  switch (op) {
    case M_ADD: r = bin(c, E_ADD, x[0], x[1]); break;
    case M_SUB: r = bin(c, E_SUB, x[0], x[1]); break;
    case M_MUL: r = bin(c, E_MUL, x[0], x[1]); break;
    case M_DIV: r = isf ? bin(c, E_DIV, x[0], x[1]) : int_divmod(c, E_DIV, x[0], x[1]); break;
    case M_MAX: r = bin(c, E_MAX, x[0], x[1]); break;
    case M_MIN: r = bin(c, E_MIN, x[0], x[1]); break;
    case M_MOD: r = isf ? bin(c, E_MOD, x[0], x[1]) : int_divmod(c, E_MOD, x[0], x[1]); break;
    case M_FLOORMOD: r = isf ? float_floormod(c, x[0], x[1]) : int_divmod(c, E_FLOORMOD, x[0], x[1]); break;
    case M_POW: {
      /* integer bases: computed in float64 and truncated back, as the reference does */
      mlc_dtype pt = isf ? ct : MLC_F64;
      Expr *args[2] = {x[0]->dtype == pt ? x[0] : tir_cast(A, pt, x[0]),
                       x[1]->dtype == pt ? x[1] : tir_cast(A, pt, x[1])};
      r = tir_call(A, INTRIN_POW, pt, 2, args);
      break;
    }
    case M_PRELU: r = sel(c, bin(c, E_LT, x[0], cst(c, ct, 0)), bin(c, E_MUL, x[1], x[0]), x[0]); break;
    case M_BITAND: r = bin(c, E_BITAND, x[0], x[1]); break;
    case M_BITOR: r = bin(c, E_BITOR, x[0], x[1]); break;
    case M_BITXOR: r = bin(c, E_BITXOR, x[0], x[1]); break;
    case M_SHL: r = bin(c, E_SHL, x[0], x[1]); break;
    case M_SHR: r = bin(c, E_SHR, x[0], x[1]); break;
    case M_AND: r = bin(c, E_AND, x[0], x[1]); break;
    case M_OR: r = bin(c, E_OR, x[0], x[1]); break;
    case M_XOR: r = bin(c, E_NE, x[0], x[1]); break;
    case M_EQ: r = bin(c, E_EQ, x[0], x[1]); break;
    case M_LT: r = bin(c, E_LT, x[0], x[1]); break;
    case M_GT: r = bin(c, E_GT, x[0], x[1]); break;
    case M_LE: r = bin(c, E_LE, x[0], x[1]); break;
    case M_GE: r = bin(c, E_GE, x[0], x[1]); break;
    case M_WHERE: r = sel(c, x[0], x[1], x[2]); break;
    case M_NEG: r = isf ? bin(c, E_MUL, x[0], cst(c, ct, -1)) : bin(c, E_SUB, cst(c, ct, 0), x[0]); break;
    case M_ABS:
      if (isf) r = call1(c, INTRIN_FABS, x[0]);
      else if (dtype_is_signed(ct)) r = sel(c, bin(c, E_LT, x[0], cst(c, ct, 0)), bin(c, E_SUB, cst(c, ct, 0), x[0]), x[0]);
      else r = x[0];
      break;
    case M_RECIP: r = bin(c, E_DIV, cst(c, ct, 1), x[0]); break;
    case M_SIGN: {
      Expr *zero = cst(c, ct, 0), *one = cst(c, ct, 1);
      Expr *neg = dtype_is_signed(ct) || isf ? cst(c, ct, -1) : zero;
      r = sel(c, bin(c, E_GT, x[0], zero), one, sel(c, bin(c, E_LT, x[0], zero), neg, zero));
      if (isf) r = sel(c, tir_call(A, INTRIN_ISNAN, MLC_BOOL, 1, &x[0]), x[0], r); /* sign(nan) = nan */
      break;
    }
    case M_RELU: r = bin(c, E_MAX, x[0], cst(c, ct, 0)); break;
    case M_SHRINK: {
      double lambd = ir_attr_float(n, "lambd", 0.5), bias = ir_attr_float(n, "bias", 0.0);
      /* integer inputs: compare and shift in float64, then convert back */
      mlc_dtype st = isf ? ct : MLC_F64;
      Expr *v = isf ? x[0] : tir_cast(A, st, x[0]);
      Expr *zero = cst(c, st, 0);
      r = sel(c, bin(c, E_LT, v, cst(c, st, -lambd)), bin(c, E_ADD, v, cst(c, st, bias)),
              sel(c, bin(c, E_GT, v, cst(c, st, lambd)), bin(c, E_SUB, v, cst(c, st, bias)), zero));
      break;
    }
    case M_NOT: r = tir_not(A, x[0]); break;
    case M_BITNOT:
      r = bin(c, E_BITXOR, x[0], dtype_is_signed(ct) ? tir_int(A, ct, -1) : tir_max_value(A, ct));
      break;
    case M_ISNAN: r = tir_call(A, INTRIN_ISNAN, MLC_BOOL, 1, &x[0]); break;
    case M_ISINF: {
      bool pos = ir_attr_int(n, "detect_positive", 1) != 0, neg = ir_attr_int(n, "detect_negative", 1) != 0;
      Expr *p = bin(c, E_EQ, x[0], cst(c, ct, INFINITY)), *q = bin(c, E_EQ, x[0], cst(c, ct, -INFINITY));
      if (pos && neg) r = bin(c, E_OR, p, q);
      else if (pos) r = p;
      else if (neg) r = q;
      else r = tir_int(A, MLC_BOOL, 0);
      break;
    }
    case M_CAST:
      if (m->out == MLC_F8E8M0) { /* round_mode (opset 25, default up) */
        r = topi_to_e8m0(c, x[0], ir_attr_string(n, "round_mode", "up"), ir_attr_int(n, "saturate", 1) != 0);
        break;
      }
      if (dtype_is_lowfloat(m->out)) { /* ONNX's saturate (opset 19+, default 1) clamps to the largest finite */
        r = topi_to_lowfloat(c, x[0], m->out, ir_attr_int(n, "saturate", 1) != 0);
        break;
      }
      /* half <-> anything goes through float32 (exact for f16/bf16 -> f32) */
      r = x[0];
      if (is_half(m->out) && !dtype_is_float(r->dtype)) r = tir_cast(A, MLC_F32, r);
      if (m->out == MLC_BOOL && dtype_is_float(r->dtype)) r = bin(c, E_NE, r, cst(c, r->dtype, 0));
      break;
    case M_BITCAST: /* the stored bits of the input, not its float32 widening */
      r = tir_call(A, INTRIN_REINTERPRET, m->out, 1, &xin[0]);
      break;
    case M_CLIP: {
      double lo = ir_attr_float(n, "a_min", -INFINITY), hi = ir_attr_float(n, "a_max", INFINITY);
      r = x[0];
      if (isf) {
        if (lo > -INFINITY) r = bin(c, E_MAX, r, cst(c, ct, lo));
        if (hi < INFINITY) r = bin(c, E_MIN, r, cst(c, ct, hi));
      } else {
        Expr *tmin = tir_min_value(A, ct), *tmax = tir_max_value(A, ct);
        int64_t vmin = 0, vmax = 0;
        bool klo = tir_is_const_int(tmin, &vmin), khi = tir_is_const_int(tmax, &vmax);
        if (lo > -INFINITY && !(klo && lo <= (double)vmin)) r = bin(c, E_MAX, r, cst(c, ct, ceil(lo)));
        if (hi < INFINITY && !(khi && hi >= (double)vmax)) r = bin(c, E_MIN, r, cst(c, ct, floor(hi)));
      }
      break;
    }
    default:
      r = unary_intrin(c, op, x[0]);
      if (!r) r = activation(c, n, op, x[0]);
      break;
  }
  if (!r) return NULL;
  if (r->dtype != m->out) r = tir_cast(A, m->out, r);
  return r;
}

static Expr *math_fn(TeCtx *c, Expr **idx, void *user) {
  MathArgs *m = user;
  Expr *x[3] = {0};
  for (int i = 0; i < m->nin; i++) {
    Expr *ii[MLC_MAX_DIMS];
    topi_broadcast_index(c, m->ins[i], m->ndim, idx, ii);
    x[i] = te_read(c, m->ins[i], m->ins[i]->ndim, ii);
  }
  return math_body(c, m, x);
}

static mlc_status math_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, MathOp op, Diag *d) {
  MathArgs *m = arena_alloc(c->arena, sizeof *m);
  const TensorType *ot = &n->outputs[0]->type;
  *m = (MathArgs){.n = n, .op = op, .nin = math_info[op].nin, .ins = ins, .ndim = ot->ndim, .out = ot->dtype};
  /* check that the body builds (an op missing from math_body is a compiler bug, not a user error) */
  bool bcast = false;
  for (int i = 0; i < m->nin; i++)
    if (ins[i]->ndim != ot->ndim || memcmp(ins[i]->shape, ot->dims, sizeof(int64_t) * (size_t)ot->ndim) != 0)
      bcast = true;
  const char *tag = m->nin > 1 && bcast ? "broadcast" : "elemwise";
  outs[0] = te_compute(c, math_info[op].name, tag, ot->dtype, ot->ndim, ot->dims, math_fn, m);
  MLC_CHECK(d, outs[0] && outs[0]->op && outs[0]->op->body, MLC_ERR_INTERNAL);
  return MLC_OK;
}

#define X(e, name, nin, cls, out)                                                                         \
  static mlc_status infer_##e(Node *n, Diag *d) { return math_infer(n, e, d); }                          \
  static mlc_status compute_##e(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {           \
    return math_compute(c, n, ins, outs, e, d);                                                           \
  }
MATH_OPS(X)
#undef X

const OpDef topi_ops_math[] = {
#define X(e, name, nin, cls, out) {name, nin == 1 ? PAT_ELEMWISE : PAT_BROADCAST, nin, nin, 1, infer_##e, compute_##e, DYN_ELEMWISE},
    MATH_OPS(X)
#undef X
    {0},
};
