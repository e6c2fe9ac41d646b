/* TIR: the loop-level IR that TE lowers to and codegen consumes.
 *
 * Expressions and statements are tagged structs in an Arena. Expressions are immutable and built only through
 * the constructors below (which fold constants of trivial forms); index arithmetic is int64. Buffers are
 * row-major, addressed by multi-dimensional indices; codegen flattens them. A TirFunc is one kernel with the
 * ABI of include/mlc/runtime.h: its params are buffers, passed in order through `void **buffers`.
 * Passes over TIR follow the mutator rule: return the same pointer when nothing changed. */
#ifndef MLC_TIR_H
#define MLC_TIR_H
#include "support/support.h"

typedef enum ExprKind {
  E_INT,       /* integer or bool immediate: ival */
  E_FLOAT,     /* floating immediate: fval */
  E_VAR,       /* variable: var */
  /* binary arithmetic: a, b (same dtype) */
  E_ADD, E_SUB, E_MUL,
  E_DIV,       /* float division; integer division truncating toward zero (C) */
  E_MOD,       /* integer remainder truncating toward zero (C %); fmod for floats */
  E_FLOORDIV,  /* integer division rounding toward -inf (index math) */
  E_FLOORMOD,  /* integer remainder with the sign of b (index math) */
  E_MIN, E_MAX,
  E_BITAND, E_BITOR, E_BITXOR, E_SHL, E_SHR, /* integers; E_SHR is logical for unsigned, arithmetic for signed */
  /* comparisons: a, b -> bool */
  E_EQ, E_NE, E_LT, E_LE, E_GT, E_GE,
  /* logic on bool: a, b (E_NOT: a) */
  E_AND, E_OR, E_NOT,
  E_SELECT,    /* cond ? a : b  (both evaluated; no side effects in TIR exprs) */
  E_CAST,      /* a converted to dtype (float->int truncates; to bool is != 0) */
  E_CALL,      /* intrinsic call: intrin, args */
  E_LOAD,      /* buffer[indices] */
  E_TENSOR,    /* TE only: tensor(indices), a read of another TE tensor before lowering */
  E_REDUCE,    /* TE only: reduction: combiner over reduce axes of source, with init */
  E_LET,       /* let var = a in b */
  E_RAMP,      /* vector: a + [0, 1, .., lanes-1] * b  (a, b scalar) */
  E_BROADCAST, /* vector: a repeated lanes times */
  E_KIND_COUNT
} ExprKind;

typedef enum Intrin {
  INTRIN_EXP, INTRIN_LOG, INTRIN_SQRT, INTRIN_TANH, INTRIN_SIGMOID, INTRIN_ERF,
  INTRIN_SIN, INTRIN_COS, INTRIN_TAN, INTRIN_ASIN, INTRIN_ACOS, INTRIN_ATAN,
  INTRIN_SINH, INTRIN_COSH, INTRIN_ASINH, INTRIN_ACOSH, INTRIN_ATANH,
  INTRIN_FABS, INTRIN_FLOOR, INTRIN_CEIL, INTRIN_ROUND, /* round half to even */
  INTRIN_TRUNC, INTRIN_POW, INTRIN_ATAN2, INTRIN_ISNAN, INTRIN_ISINF, INTRIN_FMA,
  INTRIN_REINTERPRET, /* the bits of args[0] read as the call's dtype (same size): LowerIntrinsics' exponent tricks */
  INTRIN_DOT_U8S8, /* int32 words: the sum over bytes k of args[0]'s byte k (unsigned) times args[1]'s (signed),
                    * plus args[2] when given (LowerIntrinsics folds an add into it): x86 VNNI's vpdpbusd per lane */
  INTRIN_PREFETCH, /* args[0] a scalar E_LOAD, not performed: its cache line is fetched for reading (a hint that
                    * never faults; no value), in an S_EVAL (tir_inject_prefetch) */
  INTRIN_COUNT
} Intrin;

typedef enum ReduceKind { RED_SUM, RED_PROD, RED_MIN, RED_MAX } ReduceKind;

typedef enum ForKind {
  FOR_SERIAL,
  FOR_PARALLEL,   /* outlined and run on the runtime's thread pool */
  FOR_VECTORIZED, /* inner loop turned into vector code */
  FOR_UNROLLED,
  FOR_GPU_BLOCK_X,  /* GPU targets: one iteration per thread block (blockIdx.x); extent is the grid size */
  FOR_GPU_THREAD_X, /* GPU targets: one iteration per thread of the block (threadIdx.x); extent is the block size */
} ForKind;

typedef struct Expr Expr;
typedef struct Stmt Stmt;

typedef struct Var {
  const char *name;
  mlc_dtype dtype; /* MLC_I64 for loop and index vars */
  int id;          /* unique within the arena, for printing and maps */
} Var;

typedef struct Buffer {
  const char *name;
  mlc_dtype dtype;
  int ndim;
  int64_t shape[MLC_MAX_DIMS];
  int id;
} Buffer;

typedef struct IterVar IterVar; /* TE: src/te/te.h */
typedef struct TeTensor TeTensor;

struct Expr {
  ExprKind kind;
  mlc_dtype dtype;
  int lanes; /* 1 for scalars */
  union {
    int64_t ival;
    double fval;
    Var *var;
    struct { Expr *a, *b, *c; } op; /* binary: a, b; E_SELECT: c ? a : b; E_NOT, E_CAST: a; E_LET: var = a in b */
    struct { Intrin intrin; int nargs; Expr **args; } call;
    struct { Buffer *buf; int n; Expr **idx; } load;
    struct { TeTensor *tensor; int n; Expr **idx; } tensor;
    struct {
      ReduceKind combiner;
      Expr *source;
      Expr *init; /* identity if NULL */
      int naxes;
      IterVar **axes;
      Expr *cond; /* only reduce where cond holds (NULL: always) */
    } reduce;
  };
  Var *let_var; /* E_LET */
};

typedef enum StmtKind {
  S_FOR,      /* for (var = min; var < min + extent; ++var) body */
  S_STORE,    /* buf[indices] = value */
  S_SEQ,      /* stmts in order */
  S_IF,       /* if (cond) then else (else may be NULL) */
  S_LET,      /* let var = value in body */
  S_ALLOCATE, /* buf is live in body (scratch from the kernel's stack/workspace) */
  S_EVAL,     /* evaluate an expression for effect */
} StmtKind;

struct Stmt {
  StmtKind kind;
  union {
    struct { Var *var; Expr *min, *extent; ForKind for_kind; Stmt *body; } loop;
    struct { Buffer *buf; int n; Expr **idx; Expr *value; } store;
    struct { int n; Stmt **stmts; } seq;
    struct { Expr *cond; Stmt *then_s, *else_s; } ifs;
    struct { Var *var; Expr *value; Stmt *body; } let;
    struct { Buffer *buf; Stmt *body; } alloc;
    struct { Expr *e; } eval;
  };
};

typedef struct TirFunc {
  const char *name; /* kernel symbol */
  int nparams;
  Buffer **params;  /* inputs then outputs, in the kernel ABI's order */
  Stmt *body;
} TirFunc;

/* ---- constructors (expr.c): simple constant folding, dtype checks by MLC_CHECK-free asserts in debug ---- */
Var *tir_var(Arena *a, const char *name, mlc_dtype t);
Buffer *tir_buffer(Arena *a, const char *name, mlc_dtype t, int ndim, const int64_t *shape);
Expr *tir_int(Arena *a, mlc_dtype t, int64_t v);  /* t integer or bool */
Expr *tir_idx(Arena *a, int64_t v);               /* int64 immediate */
Expr *tir_float(Arena *a, mlc_dtype t, double v); /* t float */
Expr *tir_const(Arena *a, mlc_dtype t, double v); /* immediate of any dtype */
Expr *tir_varref(Arena *a, Var *v);
Expr *tir_bin(Arena *a, ExprKind k, Expr *x, Expr *y); /* arithmetic, bitwise, compare and logic kinds */
Expr *tir_not(Arena *a, Expr *x);
Expr *tir_select(Arena *a, Expr *cond, Expr *t, Expr *f);
Expr *tir_cast(Arena *a, mlc_dtype t, Expr *x);
Expr *tir_call(Arena *a, Intrin in, mlc_dtype t, int nargs, Expr **args);
Expr *tir_load(Arena *a, Buffer *b, int n, Expr **idx);
Expr *tir_let(Arena *a, Var *v, Expr *value, Expr *body);
Expr *tir_ramp(Arena *a, Expr *base, Expr *stride, int lanes);
Expr *tir_broadcast(Arena *a, Expr *x, int lanes);
/* shorthands for index math */
#define tir_add(A, x, y) tir_bin((A), E_ADD, (x), (y))
#define tir_sub(A, x, y) tir_bin((A), E_SUB, (x), (y))
#define tir_mul(A, x, y) tir_bin((A), E_MUL, (x), (y))
Expr *tir_min_value(Arena *a, mlc_dtype t); /* lowest finite (or -inf for floats) */
Expr *tir_max_value(Arena *a, mlc_dtype t);
bool tir_is_const_int(const Expr *e, int64_t *v);
bool dtype_is_float(mlc_dtype t); /* f16, bf16, f32, f64 */
bool dtype_is_int(mlc_dtype t);   /* signed or unsigned integers, not bool */
bool dtype_is_signed(mlc_dtype t);
bool dtype_is_lowbit(mlc_dtype t);   /* float8 / float4 / int4 / uint4 / int2 / uint2: storage types, see mlc_dtype */
bool dtype_is_lowfloat(mlc_dtype t); /* float8 (e8m0 too) / float4: registers hold the bit pattern */

Stmt *tir_for(Arena *a, Var *v, Expr *min, Expr *extent, ForKind k, Stmt *body);
Stmt *tir_store(Arena *a, Buffer *b, int n, Expr **idx, Expr *value);
Stmt *tir_seq(Arena *a, int n, Stmt **stmts); /* flattens nested seqs, drops NULLs */
Stmt *tir_seq2(Arena *a, Stmt *x, Stmt *y);
Stmt *tir_if(Arena *a, Expr *cond, Stmt *then_s, Stmt *else_s);
Stmt *tir_let_stmt(Arena *a, Var *v, Expr *value, Stmt *body);
Stmt *tir_allocate(Arena *a, Buffer *b, Stmt *body);
Stmt *tir_eval(Arena *a, Expr *e);

/* ---- substitute.c: replace vars by expressions (map of n pairs); returns the same pointer if unchanged ---- */
Expr *tir_substitute(Arena *a, Expr *e, int n, Var **vars, Expr **values);
Stmt *tir_substitute_stmt(Arena *a, Stmt *s, int n, Var **vars, Expr **values);

/* ---- simplify.c: the arithmetic simplifier (constant folding, canonical linear forms, div/mod by constants
 * with known bounds of loop vars). Returns the same pointer when nothing changed. ---- */
Expr *tir_simplify(Arena *a, Expr *e);
/* e simplified knowing var i lies in [lo[i], hi[i]] */
Expr *tir_simplify_bounded(Arena *a, Expr *e, int n, Var *const *vars, const int64_t *lo, const int64_t *hi);
Stmt *tir_simplify_stmt(Arena *a, Stmt *s);
/* peel.c: serial loops whose last iteration alone needs a guard inside a vectorized loop run that iteration
 * separately (*changed: something was peeled; simplify again) */
Stmt *tir_peel_guarded_loops(Arena *a, Stmt *s, bool *changed);
/* peel.c: loops of padded copies split where their select's bounds tests change value (*changed: something was
 * split; simplify again: the middle piece then copies without tests or clamps) */
Stmt *tir_partition_pad_loops(Arena *a, Stmt *s, bool *changed);

/* prefetch.c: in each loop over v in s, cache-line prefetches from a serial loop around the reads of buf,
 * spread so that each iteration of v streams in the block of buf that iteration v + ahead reads (*done: some
 * loop got them). Run on lowered, simplified TIR. */
Stmt *tir_inject_prefetch(Arena *a, Stmt *s, const Var *v, const Buffer *buf, int64_t ahead, bool *done);

/* ---- print.c ---- */
void tir_print_expr(StrBuf *b, const Expr *e);
void tir_print_stmt(StrBuf *b, const Stmt *s, int indent);
void tir_print_func(StrBuf *b, const TirFunc *f);
const char *intrin_name(Intrin in);

#endif
