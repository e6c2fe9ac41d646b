/* Unit tests of the math and reduce op families (src/topi/math.c, src/topi/reduce.c): type relations
 * (broadcast shapes, dtype rules, errors) and the semantics of the TE computes. The computes are checked
 * with a small reference interpreter of TE expressions written here (E_TENSOR reads of placeholders and of
 * other computes, E_REDUCE over reduce axes, casts, selects and libm intrinsics), so the op semantics are
 * tested without lowering or codegen: Div truncation, python Mod, round half to even, Gelu, Clip,
 * reductions with keepdims, numerically stable LogSumExp, ArgMax first/last index. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "topi/topi.h"

static int failures;
#define CHECK(c)                                                            \
  do {                                                                      \
    if (!(c)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                                           \
    }                                                                       \
  } while (0)

/* ---- a reference interpreter of TE expressions (values as double or int64) ---- */

typedef struct Val {
  double f;
  int64_t i;
} Val;

typedef struct Bind {
  Var *var;
  int64_t v;
} Bind;

typedef struct Env {
  Bind b[64];
  int n;
  /* placeholder data (as doubles) */
  int nph;
  TeTensor *ph[4];
  const double *phdata[4];
} Env;

static bool isf(mlc_dtype t) { return dtype_is_float(t); }

static int64_t wrap(mlc_dtype t, int64_t v) {
  switch (t) {
    case MLC_BOOL: return v != 0;
    case MLC_I8: return (int8_t)v;
    case MLC_U8: return (uint8_t)v;
    case MLC_I16: return (int16_t)v;
    case MLC_U16: return (uint16_t)v;
    case MLC_I32: return (int32_t)v;
    case MLC_U32: return (uint32_t)v;
    default: return v;
  }
}

static double rnd(mlc_dtype t, double v) { return t == MLC_F64 ? v : (double)(float)v; }

static Val mk(mlc_dtype t, double f, int64_t i) {
  Val v = {0, 0};
  if (isf(t)) v.f = rnd(t, f);
  else v.i = wrap(t, i);
  return v;
}

static double asd(mlc_dtype t, Val v) { return isf(t) ? v.f : (double)v.i; }

static Val eval(Env *env, const Expr *e);

static Val eval_tensor(Env *env, TeTensor *t, const int64_t *idx) {
  TeOp *op = t->op;
  if (op->kind == TE_PLACEHOLDER) {
    for (int p = 0; p < env->nph; p++)
      if (env->ph[p] == t) {
        int64_t off = 0;
        for (int i = 0; i < t->ndim; i++) off = off * t->shape[i] + idx[i];
        double x = env->phdata[p][off];
        return mk(t->dtype, x, (int64_t)x);
      }
    fprintf(stderr, "interpreter: unbound placeholder\n");
    exit(2);
  }
  int save = env->n;
  for (int i = 0; i < op->naxes; i++) env->b[env->n++] = (Bind){op->axes[i]->var, idx[i]};
  Val v = eval(env, op->body);
  env->n = save;
  return v;
}

static int64_t lookup(Env *env, const Var *v) {
  for (int i = env->n - 1; i >= 0; i--)
    if (env->b[i].var == v) return env->b[i].v;
  fprintf(stderr, "interpreter: unbound var %s\n", v->name);
  exit(2);
}

static Val eval_reduce(Env *env, const Expr *e, int k) {
  mlc_dtype t = e->dtype;
  if (k == 0) { /* the identity, then combine over the axes */
    Val acc;
    switch (e->reduce.combiner) {
      case RED_SUM: acc = mk(t, 0, 0); break;
      case RED_PROD: acc = mk(t, 1, 1); break;
      case RED_MIN: acc = isf(t) ? mk(t, INFINITY, 0) : mk(t, 0, t == MLC_I64 ? INT64_MAX : dtype_is_signed(t) ? (1LL << (8 * mlc_dtype_size(t) - 1)) - 1 : (1LL << (8 * mlc_dtype_size(t))) - 1); break;
      case RED_MAX: acc = isf(t) ? mk(t, -INFINITY, 0) : mk(t, 0, t == MLC_I64 ? INT64_MIN : dtype_is_signed(t) ? -(1LL << (8 * mlc_dtype_size(t) - 1)) : 0); break;
    }
    if (e->reduce.init) acc = eval(env, e->reduce.init);
    int total = 1;
    for (int a = 0; a < e->reduce.naxes; a++) total *= (int)e->reduce.axes[a]->extent;
    int save = env->n;
    for (int lin = 0; lin < total; lin++) {
      int rem = lin;
      env->n = save;
      for (int a = e->reduce.naxes - 1; a >= 0; a--) {
        int ext = (int)e->reduce.axes[a]->extent;
        env->b[env->n++] = (Bind){e->reduce.axes[a]->var, rem % ext};
        rem /= ext;
      }
      if (e->reduce.cond && !eval(env, e->reduce.cond).i) continue;
      Val s = eval(env, e->reduce.source);
      if (isf(t)) {
        double x = acc.f, y = s.f;
        acc.f = rnd(t, e->reduce.combiner == RED_SUM ? x + y : e->reduce.combiner == RED_PROD ? x * y
                          : e->reduce.combiner == RED_MIN ? fmin(x, y) : fmax(x, y));
      } else {
        int64_t x = acc.i, y = s.i;
        acc.i = wrap(t, e->reduce.combiner == RED_SUM ? x + y : e->reduce.combiner == RED_PROD ? x * y
                          : e->reduce.combiner == RED_MIN ? (x < y ? x : y) : (x > y ? x : y));
      }
    }
    env->n = save;
    return acc;
  }
  return mk(t, 0, 0);
}

static double intrin(Intrin in, double x, double y) {
  switch (in) {
    case INTRIN_EXP: return exp(x);
    case INTRIN_LOG: return log(x);
    case INTRIN_SQRT: return sqrt(x);
    case INTRIN_TANH: return tanh(x);
    case INTRIN_SIGMOID: return 1 / (1 + exp(-x));
    case INTRIN_ERF: return erf(x);
    case INTRIN_SIN: return sin(x);
    case INTRIN_COS: return cos(x);
    case INTRIN_TAN: return tan(x);
    case INTRIN_ASIN: return asin(x);
    case INTRIN_ACOS: return acos(x);
    case INTRIN_ATAN: return atan(x);
    case INTRIN_SINH: return sinh(x);
    case INTRIN_COSH: return cosh(x);
    case INTRIN_ASINH: return asinh(x);
    case INTRIN_ACOSH: return acosh(x);
    case INTRIN_ATANH: return atanh(x);
    case INTRIN_FABS: return fabs(x);
    case INTRIN_FLOOR: return floor(x);
    case INTRIN_CEIL: return ceil(x);
    case INTRIN_ROUND: return nearbyint(x);
    case INTRIN_TRUNC: return trunc(x);
    case INTRIN_POW: return pow(x, y);
    case INTRIN_ATAN2: return atan2(x, y);
    case INTRIN_ISNAN: return isnan(x);
    case INTRIN_ISINF: return isinf(x);
    default: return NAN;
  }
}

static Val eval(Env *env, const Expr *e) {
  mlc_dtype t = e->dtype;
  switch (e->kind) {
    case E_INT: return mk(t, 0, e->ival);
    case E_FLOAT: return mk(t, e->fval, 0);
    case E_VAR: return mk(t, 0, lookup(env, e->var));
    case E_TENSOR: {
      int64_t idx[MLC_MAX_DIMS];
      for (int i = 0; i < e->tensor.n; i++) idx[i] = eval(env, e->tensor.idx[i]).i;
      return eval_tensor(env, e->tensor.tensor, idx);
    }
    case E_REDUCE: return eval_reduce(env, e, 0);
    case E_CAST: {
      mlc_dtype st = e->op.a->dtype;
      Val a = eval(env, e->op.a);
      if (t == MLC_BOOL) return mk(t, 0, isf(st) ? a.f != 0 : a.i != 0);
      if (isf(t)) return mk(t, asd(st, a), 0);
      return mk(t, 0, isf(st) ? (int64_t)trunc(a.f) : a.i);
    }
    case E_SELECT: return eval(env, e->op.c).i ? eval(env, e->op.a) : eval(env, e->op.b);
    case E_NOT: return mk(t, 0, !eval(env, e->op.a).i);
    case E_CALL: {
      mlc_dtype at = e->call.args[0]->dtype;
      double x = asd(at, eval(env, e->call.args[0]));
      double y = e->call.nargs > 1 ? asd(e->call.args[1]->dtype, eval(env, e->call.args[1])) : 0;
      double r = intrin(e->call.intrin, x, y);
      return isf(t) ? mk(t, r, 0) : mk(t, 0, (int64_t)r);
    }
    default: break;
  }
  if (e->kind >= E_ADD && e->kind <= E_OR) {
    mlc_dtype ot = e->op.a->dtype;
    Val a = eval(env, e->op.a), b = eval(env, e->op.b);
    if (isf(ot)) {
      double x = a.f, y = b.f, r = 0;
      switch (e->kind) {
        case E_ADD: r = x + y; break;
        case E_SUB: r = x - y; break;
        case E_MUL: r = x * y; break;
        case E_DIV: r = x / y; break;
        case E_MOD: r = fmod(x, y); break;
        case E_MIN: r = fmin(x, y); break;
        case E_MAX: r = fmax(x, y); break;
        case E_EQ: return mk(t, 0, x == y);
        case E_NE: return mk(t, 0, x != y);
        case E_LT: return mk(t, 0, x < y);
        case E_LE: return mk(t, 0, x <= y);
        case E_GT: return mk(t, 0, x > y);
        case E_GE: return mk(t, 0, x >= y);
        default: fprintf(stderr, "interpreter: float op %d\n", e->kind); exit(2);
      }
      return mk(t, r, 0);
    }
    int64_t x = a.i, y = b.i, r = 0;
    switch (e->kind) {
      case E_ADD: r = x + y; break;
      case E_SUB: r = x - y; break;
      case E_MUL: r = x * y; break;
      case E_DIV: r = x / y; break;
      case E_MOD: r = x % y; break;
      case E_FLOORDIV: r = x / y - ((x % y != 0) && ((x < 0) != (y < 0))); break;
      case E_FLOORMOD: r = x - (x / y - ((x % y != 0) && ((x < 0) != (y < 0)))) * y; break;
      case E_MIN: r = x < y ? x : y; break;
      case E_MAX: r = x > y ? x : y; break;
      case E_BITAND: r = x & y; break;
      case E_BITOR: r = x | y; break;
      case E_BITXOR: r = x ^ y; break;
      case E_SHL: r = (int64_t)((uint64_t)x << y); break;
      case E_SHR: r = dtype_is_signed(ot) ? x >> y : (int64_t)((uint64_t)x >> y); break;
      case E_EQ: r = x == y; break;
      case E_NE: r = x != y; break;
      case E_LT: r = x < y; break;
      case E_LE: r = x <= y; break;
      case E_GT: r = x > y; break;
      case E_GE: r = x >= y; break;
      case E_AND: r = x && y; break;
      case E_OR: r = x || y; break;
      default: fprintf(stderr, "interpreter: int op %d\n", e->kind); exit(2);
    }
    return mk(t, 0, r);
  }
  fprintf(stderr, "interpreter: expr kind %d\n", e->kind);
  exit(2);
}

/* ---- running one graph op through infer + compute + the interpreter ---- */

typedef struct In {
  mlc_dtype t;
  int ndim;
  int64_t dims[4];
  const double *data;
} In;

typedef void (*SetAttrs)(Graph *g, Node *n);

/* returns the status of inference; fills out (numel values) and the output type */
static mlc_status run_op(const char *name, int nin, const In *ins, SetAttrs attrs, TensorType *ot, double *out) {
  Arena *a = arena_new();
  Graph *g = ir_graph_new(a, "test.onnx");
  Value *vs[4];
  for (int i = 0; i < nin; i++) {
    TensorType tt = {.dtype = ins[i].t, .ndim = ins[i].ndim};
    memcpy(tt.dims, ins[i].dims, sizeof ins[i].dims);
    vs[i] = ir_value_new(g, arena_printf(a, "x%d", i), tt);
  }
  const OpDef *op = ir_op_find(name);
  if (!op) {
    fprintf(stderr, "op %s not registered\n", name);
    failures++;
    arena_free(a);
    return MLC_ERR_INTERNAL;
  }
  Node *n = ir_node_new(g, op, name, name, 17, vs, nin, 1);
  if (attrs) attrs(g, n);
  Diag d = {0};
  mlc_status st = ir_infer_node(g, n, &d);
  if (st != MLC_OK) {
    arena_free(a);
    return st;
  }
  *ot = n->outputs[0]->type;
  TeCtx c = {.arena = a};
  TeTensor *tin[4], *tout[1] = {0};
  Env env = {.nph = nin};
  for (int i = 0; i < nin; i++) {
    tin[i] = te_placeholder(&c, vs[i]->name, vs[i]->type.dtype, vs[i]->type.ndim, vs[i]->type.dims);
    env.ph[i] = tin[i];
    env.phdata[i] = ins[i].data;
  }
  st = op->compute(&c, n, tin, tout, &d);
  if (st != MLC_OK) {
    fprintf(stderr, "%s: compute failed: %s\n", name, d.msg);
    failures++;
    arena_free(a);
    return st;
  }
  CHECK(tout[0]->dtype == ot->dtype && tout[0]->ndim == ot->ndim);
  int64_t total = tt_numel(ot), idx[MLC_MAX_DIMS];
  for (int64_t lin = 0; lin < total; lin++) {
    int64_t rem = lin;
    for (int i = ot->ndim - 1; i >= 0; i--) {
      idx[i] = rem % ot->dims[i];
      rem /= ot->dims[i];
    }
    out[lin] = asd(ot->dtype, eval_tensor(&env, tout[0], idx));
  }
  arena_free(a);
  return MLC_OK;
}

static bool close_to(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  return fabs(a - b) <= 1e-5 + 1e-5 * fabs(b);
}

static void expect(const char *what, const double *got, const double *want, int n) {
  for (int i = 0; i < n; i++)
    if (!close_to(got[i], want[i])) {
      fprintf(stderr, "%s: element %d is %.9g, expected %.9g\n", what, i, got[i], want[i]);
      failures++;
      return;
    }
}

/* ---- tests ---- */

static void test_binary(void) {
  double a[6] = {1, -7, 3, 7, -8, 9}, b[3] = {2, 2, -4}, out[6];
  TensorType ot;
  In f[2] = {{MLC_F32, 2, {2, 3}, a}, {MLC_F32, 1, {3}, b}};
  CHECK(run_op("add", 2, f, NULL, &ot, out) == MLC_OK);
  CHECK(ot.ndim == 2 && ot.dims[0] == 2 && ot.dims[1] == 3 && ot.dtype == MLC_F32);
  expect("add", out, (double[]){3, -5, -1, 9, -6, 5}, 6);
  In i32[2] = {{MLC_I32, 2, {2, 3}, a}, {MLC_I32, 1, {3}, b}};
  CHECK(run_op("divide", 2, i32, NULL, &ot, out) == MLC_OK);
  expect("divide int32 truncates", out, (double[]){0, -3, 0, 3, -4, -2}, 6);
  CHECK(run_op("floor_mod", 2, i32, NULL, &ot, out) == MLC_OK);
  expect("floor_mod int32", out, (double[]){1, 1, -1, 1, 0, -3}, 6);
  CHECK(run_op("mod", 2, i32, NULL, &ot, out) == MLC_OK);
  expect("mod int32 (C)", out, (double[]){1, -1, 3, 1, 0, 1}, 6);
  CHECK(run_op("floor_mod", 2, f, NULL, &ot, out) == MLC_OK);
  expect("floor_mod float", out, (double[]){1, 1, -1, 1, 0, -3}, 6);
  CHECK(run_op("less", 2, f, NULL, &ot, out) == MLC_OK);
  CHECK(ot.dtype == MLC_BOOL);
  expect("less", out, (double[]){1, 1, 0, 0, 1, 0}, 6);
  double z[3] = {0, 1, 0};
  In dz[2] = {{MLC_I32, 1, {3}, b}, {MLC_I32, 1, {3}, z}};
  CHECK(run_op("divide", 2, dz, NULL, &ot, out) == MLC_OK);
  expect("int division by zero gives 0", out, (double[]){0, 2, 0}, 3);
  /* pow with an integer exponent on a float base, and int base with float exponent */
  double e[3] = {2, 0.5, 3};
  In p[2] = {{MLC_F32, 1, {3}, b}, {MLC_I64, 1, {3}, (double[]){3, 2, 2}}};
  CHECK(run_op("power", 2, p, NULL, &ot, out) == MLC_OK && ot.dtype == MLC_F32);
  expect("power f32^i64", out, (double[]){8, 4, 16}, 3);
  In q[2] = {{MLC_I64, 1, {3}, (double[]){3, 4, 2}}, {MLC_F32, 1, {3}, e}};
  CHECK(run_op("power", 2, q, NULL, &ot, out) == MLC_OK && ot.dtype == MLC_I64);
  expect("power i64^f32", out, (double[]){9, 2, 8}, 3);
  /* errors: mismatched dtypes, non-broadcastable shapes */
  In bad[2] = {{MLC_F32, 1, {3}, b}, {MLC_I32, 1, {3}, b}};
  CHECK(run_op("add", 2, bad, NULL, &ot, out) == MLC_ERR_INVALID);
  In bad2[2] = {{MLC_F32, 1, {3}, b}, {MLC_F32, 1, {2}, b}};
  CHECK(run_op("add", 2, bad2, NULL, &ot, out) == MLC_ERR_INVALID);
  In bad3[1] = {{MLC_I32, 1, {3}, b}};
  CHECK(run_op("exp", 1, bad3, NULL, &ot, out) == MLC_ERR_INVALID);
  /* where with broadcasting of all three */
  double cnd[2] = {1, 0};
  In w[3] = {{MLC_BOOL, 2, {2, 1}, cnd}, {MLC_F32, 1, {3}, b}, {MLC_F32, 0, {0}, (double[]){-1}}};
  CHECK(run_op("where", 3, w, NULL, &ot, out) == MLC_OK && ot.ndim == 2 && ot.dims[0] == 2 && ot.dims[1] == 3);
  expect("where", out, (double[]){2, 2, -4, -1, -1, -1}, 6);
  /* prelu: slope broadcast onto x */
  In pr[2] = {{MLC_F32, 2, {2, 3}, a}, {MLC_F32, 1, {3}, (double[]){0.5, 0.25, 2}}};
  CHECK(run_op("nn.prelu", 2, pr, NULL, &ot, out) == MLC_OK);
  expect("prelu", out, (double[]){1, -1.75, 3, 7, -2, 9}, 6);
}

static void set_gelu_tanh(Graph *g, Node *n) { ir_set_string(g, n, "approximate", "tanh"); }
static void set_clip(Graph *g, Node *n) {
  ir_set_float(g, n, "a_min", -1.5);
  ir_set_float(g, n, "a_max", 2);
}
static void set_cast_i8(Graph *g, Node *n) { ir_set_int(g, n, "dtype", MLC_I8); }
static void set_cast_bool(Graph *g, Node *n) { ir_set_int(g, n, "dtype", MLC_BOOL); }
static void set_isinf_pos(Graph *g, Node *n) { ir_set_int(g, n, "detect_negative", 0); }

static void test_unary(void) {
  double x[6] = {-2.5, -0.5, 0, 0.5, 1.5, 2.5}, out[6];
  TensorType ot;
  In f[1] = {{MLC_F32, 1, {6}, x}};
  CHECK(run_op("round", 1, f, NULL, &ot, out) == MLC_OK);
  expect("round half to even", out, (double[]){-2, -0, 0, 0, 2, 2}, 6);
  CHECK(run_op("nn.relu", 1, f, NULL, &ot, out) == MLC_OK);
  expect("relu", out, (double[]){0, 0, 0, 0.5, 1.5, 2.5}, 6);
  CHECK(run_op("nn.gelu", 1, f, NULL, &ot, out) == MLC_OK);
  double want[6];
  for (int i = 0; i < 6; i++) want[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2)));
  expect("gelu", out, want, 6);
  CHECK(run_op("nn.gelu", 1, f, set_gelu_tanh, &ot, out) == MLC_OK);
  for (int i = 0; i < 6; i++)
    want[i] = 0.5 * x[i] * (1 + tanh(sqrt(2 / M_PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
  expect("gelu tanh", out, want, 6);
  CHECK(run_op("nn.softplus", 1, f, NULL, &ot, out) == MLC_OK);
  for (int i = 0; i < 6; i++) want[i] = log(exp(x[i]) + 1);
  expect("softplus", out, want, 6);
  CHECK(run_op("nn.hard_swish", 1, f, NULL, &ot, out) == MLC_OK);
  for (int i = 0; i < 6; i++) want[i] = x[i] * fmax(0, fmin(1, x[i] / 6 + 0.5));
  expect("hard_swish", out, want, 6);
  CHECK(run_op("nn.selu", 1, f, NULL, &ot, out) == MLC_OK);
  for (int i = 0; i < 6; i++)
    want[i] = x[i] <= 0 ? 1.05070102214813232421875 * 1.67326319217681884765625 * (exp(x[i]) - 1)
                        : 1.05070102214813232421875 * x[i];
  expect("selu", out, want, 6);
  CHECK(run_op("clip", 1, f, set_clip, &ot, out) == MLC_OK);
  expect("clip", out, (double[]){-1.5, -0.5, 0, 0.5, 1.5, 2}, 6);
  CHECK(run_op("sign", 1, f, NULL, &ot, out) == MLC_OK);
  expect("sign", out, (double[]){-1, -1, 0, 1, 1, 1}, 6);
  CHECK(run_op("cast", 1, f, set_cast_i8, &ot, out) == MLC_OK && ot.dtype == MLC_I8);
  expect("cast f32->i8 truncates", out, (double[]){-2, 0, 0, 0, 1, 2}, 6);
  CHECK(run_op("cast", 1, f, set_cast_bool, &ot, out) == MLC_OK && ot.dtype == MLC_BOOL);
  expect("cast f32->bool", out, (double[]){1, 1, 0, 1, 1, 1}, 6);
  double h[6] = {1, -1, 2, 0.25, -3, 4};
  In f16[1] = {{MLC_F16, 1, {6}, h}};
  CHECK(run_op("sqrt", 1, f16, NULL, &ot, out) == MLC_OK && ot.dtype == MLC_F16);
  double inf[3] = {INFINITY, -INFINITY, 1};
  In fi[1] = {{MLC_F32, 1, {3}, inf}};
  CHECK(run_op("isinf", 1, fi, set_isinf_pos, &ot, out) == MLC_OK && ot.dtype == MLC_BOOL);
  expect("isinf positive only", out, (double[]){1, 0, 0}, 3);
  double iv[3] = {-3, 0, 5};
  In i8[1] = {{MLC_I8, 1, {3}, iv}};
  CHECK(run_op("abs", 1, i8, NULL, &ot, out) == MLC_OK);
  expect("abs int8", out, (double[]){3, 0, 5}, 3);
  CHECK(run_op("bitwise_not", 1, i8, NULL, &ot, out) == MLC_OK);
  expect("bitwise_not int8", out, (double[]){2, -1, -6}, 3);
  In u8[2] = {{MLC_U8, 1, {3}, (double[]){1, 2, 255}}, {MLC_U8, 1, {3}, (double[]){3, 1, 4}}};
  CHECK(run_op("left_shift", 2, u8, NULL, &ot, out) == MLC_OK);
  expect("left_shift uint8", out, (double[]){8, 4, 240}, 3);
  CHECK(run_op("left_shift", 2, (In[]){{MLC_I8, 1, {3}, iv}, {MLC_I8, 1, {3}, iv}}, NULL, &ot, out) ==
        MLC_ERR_INVALID);
}

static int64_t g_axes[4];
static int g_naxes;
static int g_keep = 1, g_last;
static void set_red(Graph *g, Node *n) {
  ir_set_ints(g, n, "axis", g_axes, g_naxes);
  ir_set_int(g, n, "keepdims", g_keep);
  ir_set_int(g, n, "select_last_index", g_last);
}

static void test_reduce(void) {
  double x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, out[12];
  TensorType ot;
  In f[1] = {{MLC_F32, 3, {2, 3, 2}, x}};
  g_axes[0] = 1, g_naxes = 1, g_keep = 1;
  CHECK(run_op("sum", 1, f, set_red, &ot, out) == MLC_OK);
  CHECK(ot.ndim == 3 && ot.dims[0] == 2 && ot.dims[1] == 1 && ot.dims[2] == 2);
  expect("sum axis 1", out, (double[]){9, 12, 27, 30}, 4);
  g_keep = 0;
  CHECK(run_op("mean", 1, f, set_red, &ot, out) == MLC_OK);
  CHECK(ot.ndim == 2 && ot.dims[0] == 2 && ot.dims[1] == 2);
  expect("mean axis 1", out, (double[]){3, 4, 9, 10}, 4);
  g_axes[0] = 0, g_axes[1] = 2, g_naxes = 2;
  CHECK(run_op("max", 1, f, set_red, &ot, out) == MLC_OK && ot.ndim == 1 && ot.dims[0] == 3);
  expect("max axes 0,2", out, (double[]){8, 10, 12}, 3);
  CHECK(run_op("reduce_l2", 1, f, set_red, &ot, out) == MLC_OK);
  expect("l2", out, (double[]){sqrt(1 + 4 + 49 + 64), sqrt(9 + 16 + 81 + 100), sqrt(25 + 36 + 121 + 144)}, 3);
  CHECK(run_op("logsumexp", 1, f, set_red, &ot, out) == MLC_OK);
  expect("logsumexp", out,
         (double[]){log(exp(1) + exp(2) + exp(7) + exp(8)), log(exp(3) + exp(4) + exp(9) + exp(10)),
                    log(exp(5) + exp(6) + exp(11) + exp(12))}, 3);
  double big[2] = {1000, 1000};
  In fb[1] = {{MLC_F32, 1, {2}, big}};
  g_axes[0] = 0, g_naxes = 1;
  CHECK(run_op("logsumexp", 1, fb, set_red, &ot, out) == MLC_OK && ot.ndim == 0);
  expect("logsumexp stable", out, (double[]){1000 + log(2)}, 1);
  CHECK(run_op("prod", 1, fb, set_red, &ot, out) == MLC_OK);
  expect("prod", out, (double[]){1e6}, 1);
  /* integer mean truncates */
  In iv[1] = {{MLC_I32, 1, {3}, (double[]){1, 2, 4}}};
  CHECK(run_op("mean", 1, iv, set_red, &ot, out) == MLC_OK && ot.dtype == MLC_I32);
  expect("mean int", out, (double[]){2}, 1);
  /* argmax first / last */
  double am[6] = {1, 5, 5, 2, 0, 2};
  In a[1] = {{MLC_F32, 2, {2, 3}, am}};
  g_axes[0] = 1, g_naxes = 1, g_keep = 1, g_last = 0;
  CHECK(run_op("argmax", 1, a, set_red, &ot, out) == MLC_OK && ot.dtype == MLC_I64 && ot.ndim == 2 && ot.dims[1] == 1);
  expect("argmax first", out, (double[]){1, 0}, 2);
  g_last = 1;
  CHECK(run_op("argmax", 1, a, set_red, &ot, out) == MLC_OK);
  expect("argmax last", out, (double[]){2, 2}, 2);
  CHECK(run_op("argmin", 1, a, set_red, &ot, out) == MLC_OK);
  expect("argmin last", out, (double[]){0, 1}, 2);
  g_last = 0;
  /* bool max */
  In bl[1] = {{MLC_BOOL, 2, {2, 3}, (double[]){0, 1, 0, 0, 0, 0}}};
  CHECK(run_op("max", 1, bl, set_red, &ot, out) == MLC_OK && ot.dtype == MLC_BOOL);
  expect("max bool", out, (double[]){1, 0}, 2);
  /* empty reduction: identities */
  In e[1] = {{MLC_F32, 2, {2, 0}, x}};
  CHECK(run_op("sum", 1, e, set_red, &ot, out) == MLC_OK);
  expect("sum empty", out, (double[]){0, 0}, 2);
  CHECK(run_op("max", 1, e, set_red, &ot, out) == MLC_OK);
  expect("max empty", out, (double[]){-INFINITY, -INFINITY}, 2);
  /* errors */
  g_axes[0] = 3;
  CHECK(run_op("sum", 1, a, set_red, &ot, out) == MLC_ERR_INVALID);
  g_axes[0] = 0, g_axes[1] = 1, g_naxes = 2;
  CHECK(run_op("argmax", 1, a, set_red, &ot, out) == MLC_ERR_INVALID);
}

int main(void) {
  topi_register_ops();
  test_binary();
  test_unary();
  test_reduce();
  if (failures) {
    fprintf(stderr, "test_math: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_math: ok\n");
  return 0;
}
