/* The TIR text form (used by --dump-ir and golden tests).
 *
 * Expressions print infix with C-like precedence and parentheses only where needed; floordiv, floormod,
 * min, max, select, casts and intrinsics print as calls. Statements print one per line, two spaces per
 * level:
 *   func name(%a: float32[4, 5], %out: float32[4, 5]) {
 *     parallel (i0, 0, 4) {
 *       vectorized (i1, 0, 5) {
 *         out[i0, i1] = (a[i0, i1] + 1f)
 * Integer immediates of int64 print bare, other integer types as int32(3); float32 immediates get an `f`. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "te/te.h" /* E_TENSOR reads print their TE tensor's name */

static const char *intrin_names[INTRIN_COUNT] = {
    [INTRIN_EXP] = "exp",     [INTRIN_LOG] = "log",       [INTRIN_SQRT] = "sqrt",   [INTRIN_TANH] = "tanh",
    [INTRIN_SIGMOID] = "sigmoid", [INTRIN_ERF] = "erf",   [INTRIN_SIN] = "sin",     [INTRIN_COS] = "cos",
    [INTRIN_TAN] = "tan",     [INTRIN_ASIN] = "asin",     [INTRIN_ACOS] = "acos",   [INTRIN_ATAN] = "atan",
    [INTRIN_SINH] = "sinh",   [INTRIN_COSH] = "cosh",     [INTRIN_ASINH] = "asinh", [INTRIN_ACOSH] = "acosh",
    [INTRIN_ATANH] = "atanh", [INTRIN_FABS] = "fabs",     [INTRIN_FLOOR] = "floor", [INTRIN_CEIL] = "ceil",
    [INTRIN_ROUND] = "round", [INTRIN_TRUNC] = "trunc",   [INTRIN_POW] = "pow",     [INTRIN_ATAN2] = "atan2",
    [INTRIN_ISNAN] = "isnan", [INTRIN_ISINF] = "isinf",   [INTRIN_FMA] = "fma", [INTRIN_REINTERPRET] = "reinterpret",
    [INTRIN_DOT_U8S8] = "dot_u8s8", [INTRIN_PREFETCH] = "prefetch",
};

const char *intrin_name(Intrin in) {
  return (unsigned)in < INTRIN_COUNT && intrin_names[in] ? intrin_names[in] : "unknown_intrin";
}

/* precedence: higher binds tighter */
static int prec(ExprKind k) {
  switch (k) {
  case E_OR: return 1;
  case E_AND: return 2;
  case E_BITOR: return 3;
  case E_BITXOR: return 4;
  case E_BITAND: return 5;
  case E_EQ: case E_NE: return 6;
  case E_LT: case E_LE: case E_GT: case E_GE: return 7;
  case E_SHL: case E_SHR: return 8;
  case E_ADD: case E_SUB: return 9;
  case E_MUL: case E_DIV: case E_MOD: return 10;
  default: return 12;
  }
}

static const char *infix(ExprKind k) {
  switch (k) {
  case E_ADD: return "+";
  case E_SUB: return "-";
  case E_MUL: return "*";
  case E_DIV: return "/";
  case E_MOD: return "%";
  case E_BITAND: return "&";
  case E_BITOR: return "|";
  case E_BITXOR: return "^";
  case E_SHL: return "<<";
  case E_SHR: return ">>";
  case E_EQ: return "==";
  case E_NE: return "!=";
  case E_LT: return "<";
  case E_LE: return "<=";
  case E_GT: return ">";
  case E_GE: return ">=";
  case E_AND: return "&&";
  case E_OR: return "||";
  default: return NULL;
  }
}

static void print_float(StrBuf *b, mlc_dtype t, double v) {
  if (isnan(v)) sb_printf(b, "nan");
  else if (isinf(v)) sb_printf(b, "%sinf", v < 0 ? "-" : "");
  else {
    /* the shortest text that reads back as the same value of the immediate's type */
    char tmp[64];
    for (int digits = 6; digits <= 17; digits++) {
      snprintf(tmp, sizeof tmp, "%.*g", digits, v);
      double back = strtod(tmp, NULL);
      if (t == MLC_F64 ? back == v : (float)back == (float)v) break;
    }
    bool dot = false;
    for (char *p = tmp; *p; p++)
      if (*p == '.' || *p == 'e') dot = true;
    sb_printf(b, "%s%s", tmp, dot ? "" : ".0");
  }
  if (t == MLC_F32) sb_putc(b, 'f');
  else if (t != MLC_F64) sb_printf(b, "_%s", mlc_dtype_name(t));
}

static void print_idx_list(StrBuf *b, int n, Expr *const *idx);

static void print_expr(StrBuf *b, const Expr *e, int parent_prec) {
  if (!e) { sb_printf(b, "<null>"); return; }
  const char *op = infix(e->kind);
  if (op) {
    int p = prec(e->kind);
    bool paren = p <= parent_prec;
    if (paren) sb_putc(b, '(');
    print_expr(b, e->op.a, p - 1);
    sb_printf(b, " %s ", op);
    print_expr(b, e->op.b, p);
    if (paren) sb_putc(b, ')');
    return;
  }
  switch (e->kind) {
  case E_INT:
    if (e->dtype == MLC_BOOL) sb_printf(b, "%s", e->ival ? "True" : "False");
    else if (e->dtype == MLC_I64) sb_printf(b, "%" PRId64, e->ival);
    else if (e->dtype == MLC_U64) sb_printf(b, "uint64(%" PRIu64 ")", (uint64_t)e->ival);
    else sb_printf(b, "%s(%" PRId64 ")", mlc_dtype_name(e->dtype), e->ival);
    break;
  case E_FLOAT: print_float(b, e->dtype, e->fval); break;
  case E_VAR: sb_printf(b, "%s", e->var->name); break;
  case E_FLOORDIV: case E_FLOORMOD: case E_MIN: case E_MAX:
    sb_printf(b, "%s(", e->kind == E_FLOORDIV ? "floordiv" : e->kind == E_FLOORMOD ? "floormod"
                        : e->kind == E_MIN    ? "min" : "max");
    print_expr(b, e->op.a, 0);
    sb_printf(b, ", ");
    print_expr(b, e->op.b, 0);
    sb_putc(b, ')');
    break;
  case E_NOT:
    sb_putc(b, '!');
    print_expr(b, e->op.a, 11);
    break;
  case E_SELECT:
    sb_printf(b, "select(");
    print_expr(b, e->op.c, 0);
    sb_printf(b, ", ");
    print_expr(b, e->op.a, 0);
    sb_printf(b, ", ");
    print_expr(b, e->op.b, 0);
    sb_putc(b, ')');
    break;
  case E_CAST:
    sb_printf(b, "%s", mlc_dtype_name(e->dtype));
    if (e->lanes > 1) sb_printf(b, "x%d", e->lanes);
    sb_putc(b, '(');
    print_expr(b, e->op.a, 0);
    sb_putc(b, ')');
    break;
  case E_CALL:
    sb_printf(b, "%s(", intrin_name(e->call.intrin));
    for (int i = 0; i < e->call.nargs; i++) {
      if (i) sb_printf(b, ", ");
      print_expr(b, e->call.args[i], 0);
    }
    sb_putc(b, ')');
    break;
  case E_LOAD:
    sb_printf(b, "%s", e->load.buf->name);
    print_idx_list(b, e->load.n, e->load.idx);
    break;
  case E_TENSOR:
    /* only TE bodies hold E_TENSOR; the op's name is the tensor's name */
    sb_printf(b, "%s", e->tensor.tensor && e->tensor.tensor->op ? e->tensor.tensor->op->name : "tensor");
    if (e->tensor.tensor && e->tensor.tensor->op && e->tensor.tensor->op->noutputs > 1)
      sb_printf(b, ".%d", e->tensor.tensor->value_index);
    print_idx_list(b, e->tensor.n, e->tensor.idx);
    break;
  case E_REDUCE: {
    static const char *names[] = {"sum", "prod", "min", "max"};
    sb_printf(b, "reduce_%s(", (unsigned)e->reduce.combiner < 4 ? names[e->reduce.combiner] : "?");
    print_expr(b, e->reduce.source, 0);
    sb_printf(b, ", axis=[");
    for (int i = 0; i < e->reduce.naxes; i++)
      sb_printf(b, "%s%s", i ? ", " : "", e->reduce.axes[i] ? e->reduce.axes[i]->var->name : "?");
    sb_putc(b, ']');
    if (e->reduce.init) {
      sb_printf(b, ", init=");
      print_expr(b, e->reduce.init, 0);
    }
    if (e->reduce.cond) {
      sb_printf(b, ", where=");
      print_expr(b, e->reduce.cond, 0);
    }
    sb_putc(b, ')');
    break;
  }
  case E_LET:
    sb_printf(b, "(let %s = ", e->let_var->name);
    print_expr(b, e->op.a, 0);
    sb_printf(b, " in ");
    print_expr(b, e->op.b, 0);
    sb_putc(b, ')');
    break;
  case E_RAMP:
    sb_printf(b, "ramp(");
    print_expr(b, e->op.a, 0);
    sb_printf(b, ", ");
    print_expr(b, e->op.b, 0);
    sb_printf(b, ", %d)", e->lanes);
    break;
  case E_BROADCAST:
    sb_printf(b, "broadcast(");
    print_expr(b, e->op.a, 0);
    sb_printf(b, ", %d)", e->lanes);
    break;
  default: sb_printf(b, "<expr %d>", (int)e->kind); break;
  }
}

static void print_idx_list(StrBuf *b, int n, Expr *const *idx) {
  sb_putc(b, '[');
  for (int i = 0; i < n; i++) {
    if (i) sb_printf(b, ", ");
    print_expr(b, idx[i], 0);
  }
  sb_putc(b, ']');
}

void tir_print_expr(StrBuf *b, const Expr *e) { print_expr(b, e, 0); }

static void indent_to(StrBuf *b, int n) {
  for (int i = 0; i < n; i++) sb_printf(b, "  ");
}

static const char *for_kind_name(ForKind k) {
  switch (k) {
  case FOR_PARALLEL: return "parallel";
  case FOR_VECTORIZED: return "vectorized";
  case FOR_UNROLLED: return "unrolled";
  case FOR_GPU_BLOCK_X: return "for.blockIdx.x";
  case FOR_GPU_THREAD_X: return "for.threadIdx.x";
  default: return "for";
  }
}

static void print_shape(StrBuf *b, const Buffer *buf) {
  sb_printf(b, "%s[", mlc_dtype_name(buf->dtype));
  for (int i = 0; i < buf->ndim; i++) sb_printf(b, "%s%" PRId64, i ? ", " : "", buf->shape[i]);
  sb_putc(b, ']');
}

void tir_print_stmt(StrBuf *b, const Stmt *s, int indent) {
  if (!s) return;
  switch (s->kind) {
  case S_FOR:
    indent_to(b, indent);
    sb_printf(b, "%s (%s, ", for_kind_name(s->loop.for_kind), s->loop.var->name);
    print_expr(b, s->loop.min, 0);
    sb_printf(b, ", ");
    print_expr(b, s->loop.extent, 0);
    sb_printf(b, ") {\n");
    tir_print_stmt(b, s->loop.body, indent + 1);
    indent_to(b, indent);
    sb_printf(b, "}\n");
    break;
  case S_STORE:
    indent_to(b, indent);
    sb_printf(b, "%s", s->store.buf->name);
    print_idx_list(b, s->store.n, s->store.idx);
    sb_printf(b, " = ");
    print_expr(b, s->store.value, 0);
    sb_putc(b, '\n');
    break;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) tir_print_stmt(b, s->seq.stmts[i], indent);
    break;
  case S_IF:
    indent_to(b, indent);
    sb_printf(b, "if (");
    print_expr(b, s->ifs.cond, 0);
    sb_printf(b, ") {\n");
    tir_print_stmt(b, s->ifs.then_s, indent + 1);
    if (s->ifs.else_s) {
      indent_to(b, indent);
      sb_printf(b, "} else {\n");
      tir_print_stmt(b, s->ifs.else_s, indent + 1);
    }
    indent_to(b, indent);
    sb_printf(b, "}\n");
    break;
  case S_LET:
    indent_to(b, indent);
    sb_printf(b, "let %s = ", s->let.var->name);
    print_expr(b, s->let.value, 0);
    sb_putc(b, '\n');
    tir_print_stmt(b, s->let.body, indent);
    break;
  case S_ALLOCATE:
    indent_to(b, indent);
    sb_printf(b, "allocate %s: ", s->alloc.buf->name);
    print_shape(b, s->alloc.buf);
    sb_printf(b, " {\n");
    tir_print_stmt(b, s->alloc.body, indent + 1);
    indent_to(b, indent);
    sb_printf(b, "}\n");
    break;
  case S_EVAL:
    indent_to(b, indent);
    sb_printf(b, "eval ");
    print_expr(b, s->eval.e, 0);
    sb_putc(b, '\n');
    break;
  }
}

void tir_print_func(StrBuf *b, const TirFunc *f) {
  sb_printf(b, "func %s(", f->name);
  for (int i = 0; i < f->nparams; i++) {
    sb_printf(b, "%s%%%s: ", i ? ", " : "", f->params[i]->name);
    print_shape(b, f->params[i]);
  }
  sb_printf(b, ") {\n");
  tir_print_stmt(b, f->body, 1);
  sb_printf(b, "}\n");
}
