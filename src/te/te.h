/* TE: tensor expressions and schedules (after TVM's te and Halide's Func/Schedule split).
 *
 * An operation is a placeholder (a kernel argument), a compute (out[axes] = expr over E_TENSOR reads of other
 * tensors, optionally an E_REDUCE over reduce axes) or an extern (a TIR statement written directly by topi
 * for ops that are not a single expression: sorting, scans, scatter). A schedule holds one stage per
 * operation; primitives (split, fuse, reorder, vectorize, parallel, unroll, compute_inline) rewrite only the
 * stage's leaf iteration variables and their relations, never the compute. te_lower turns a schedule into
 * a TirFunc: a loop nest per non-inlined stage over its leaf iter vars, root indices recovered from the
 * relations (split: parent = outer * factor + inner; fuse: outer = fused / extent(inner), inner = fused %
 * extent(inner)), a guard where a split does not divide (bound inference), inlined stages substituted into
 * their consumers, intermediate stages in S_ALLOCATE buffers. */
#ifndef MLC_TE_H
#define MLC_TE_H
#include "tir/tir.h"

typedef enum IterKind { ITER_SPATIAL, ITER_REDUCE } IterKind;

struct IterVar {
  Var *var;
  int64_t extent; /* range [0, extent) */
  IterKind kind;
  ForKind for_kind; /* annotation set by the schedule */
};

typedef enum TeOpKind { TE_PLACEHOLDER, TE_COMPUTE, TE_EXTERN } TeOpKind;

typedef struct TeOp TeOp;

struct TeTensor {
  TeOp *op;
  int value_index; /* output of op (extern ops may have several) */
  mlc_dtype dtype;
  int ndim;
  int64_t shape[MLC_MAX_DIMS];
};

struct TeOp {
  TeOpKind kind;
  const char *name;
  int id;
  int noutputs;
  TeTensor **outputs;
  /* TE_COMPUTE */
  int naxes;
  IterVar **axes; /* one spatial axis per output dimension */
  int nreduce;
  IterVar **reduce_axes;
  Expr *body; /* over axes' vars; E_REDUCE at the top for reductions */
  /* TE_EXTERN: body_stmt reads in_bufs and writes out_bufs (both bound to the tensors at lowering) */
  int ninputs;
  TeTensor **inputs;
  Buffer **in_bufs;
  Buffer **out_bufs;
  Stmt *body_stmt;
  const char *tag; /* "injective", "conv2d_nchw", ...: what the schedule template keys on */
};

/* The context a compute is built in: the arena plus the target (templates read it). */
typedef struct TeCtx {
  Arena *arena;
  const Target *target;
  int next_id;
} TeCtx;

/* ---- tensor.c ---- */
TeTensor *te_placeholder(TeCtx *c, const char *name, mlc_dtype t, int ndim, const int64_t *shape);
/* fcompute gets the output axes' vars as index expressions and returns the body; it may call te_reduce_axis
 * to make reduce axes and return te_reduce(...). */
typedef Expr *(*TeComputeFn)(TeCtx *c, Expr **idx, void *user);
TeTensor *te_compute(TeCtx *c, const char *name, const char *tag, mlc_dtype t, int ndim, const int64_t *shape,
                     TeComputeFn fn, void *user);
IterVar *te_reduce_axis(TeCtx *c, const char *name, int64_t extent);
Expr *te_reduce(TeCtx *c, ReduceKind k, Expr *source, int naxes, IterVar **axes, Expr *init, Expr *cond);
/* read tensor t at indices (n == t->ndim) */
Expr *te_read(TeCtx *c, TeTensor *t, int n, Expr **idx);
/* Extern op: builder receives buffers for inputs and outputs and returns the statement that fills outputs. */
typedef Stmt *(*TeExternFn)(TeCtx *c, Buffer **ins, Buffer **outs, void *user);
/* out_types: only dtype, ndim and shape of each entry are read; outs receives the nout new tensors. */
void te_extern(TeCtx *c, const char *name, const char *tag, int nin, TeTensor **ins, int nout,
               const TeTensor *out_types, TeExternFn fn, void *user, TeTensor **outs);

/* ---- schedule.c ---- */
typedef struct TeRelation {
  enum { REL_SPLIT, REL_FUSE } kind;
  IterVar *parent, *outer, *inner; /* split: parent -> outer, inner; fuse: outer, inner -> fused */
  IterVar *fused;
  int64_t factor;
} TeRelation;

typedef enum Attach {
  ATTACH_ROOT,   /* its own loop nest at the kernel's top level */
  ATTACH_INLINE, /* substituted into its readers */
  ATTACH_AT,     /* nested in attach_parent's loop attach_iv, over the region the parent needs there */
} Attach;

typedef struct TeStage {
  TeOp *op;
  Attach attach;
  int nleaf;
  IterVar **leaf; /* loop order, outermost first */
  int nrels;
  TeRelation *rels;
  int cap_leaf, cap_rels;
  struct TeStage *attach_parent; /* ATTACH_AT: the consumer stage and its leaf the nest goes in */
  IterVar *attach_iv;
  TeTensor *prefetch;     /* te_prefetch: the tensor streamed ahead in loop prefetch_iv, NULL for none */
  IterVar *prefetch_iv;
  int64_t prefetch_ahead;
} TeStage;

typedef struct TeSchedule {
  Arena *arena;
  int nstages;
  TeStage **stages; /* every op reachable from the outputs, producers first */
  int noutputs;
  TeTensor **outputs;
} TeSchedule;

TeSchedule *te_create_schedule(TeCtx *c, int nout, TeTensor **outs);
TeStage *te_stage(TeSchedule *s, const TeTensor *t);
void te_split(TeStage *st, IterVar *iv, int64_t factor, IterVar **outer, IterVar **inner);
IterVar *te_fuse(TeStage *st, IterVar *outer, IterVar *inner); /* adjacent leaves, outer first */
void te_reorder(TeStage *st, int n, IterVar **order);           /* the given leaves take these positions */
void te_vectorize(TeStage *st, IterVar *iv);
void te_parallel(TeStage *st, IterVar *iv);
void te_unroll(TeStage *st, IterVar *iv);
void te_compute_inline(TeStage *st); /* compute ops without reduction only */
/* GPU targets (bind.c): the leaf's loop runs as the thread blocks ("blockIdx.x") or the threads of a block
 * ("threadIdx.x") of a kernel launch; spatial leaves only, each tag once per stage, block outside thread. */
void te_bind(TeStage *st, IterVar *iv, const char *thread_tag);
/* cache_write (TVM's s.cache_write(t, "local")): t's compute (with its reduction) moves to a new stage
 * "<name>.local" inserted just before t's stage, and t becomes the copy t[i] = local[i], so it can be
 * inlined into an epilogue. Returns the local tensor. Call it before any other primitive on t's stage; t
 * must be a single-output compute. Together with te_compute_at the local stage becomes a small accumulator
 * block (registers once its inner loops are unrolled / vectorized), stored once per tile. */
TeTensor *te_cache_write(TeSchedule *s, TeTensor *t);
/* compute_at: st's nest moves inside parent's loop iv and covers only the region of st's output that
 * parent's body reads below that loop (bound inference at lowering: interval arithmetic over the inner loop
 * ranges; a dimension whose extent is not a constant is taken whole). st's buffer shrinks to that region.
 * Every reader of st must be parent (directly or through stages inlined into it). */
void te_compute_at(TeStage *st, TeStage *parent, IterVar *iv);
/* prefetch (TVM's s[C].prefetch(t, iv, offset), as a stream): in each iteration of st's leaf loop iv, the
 * block of t that iteration iv + ahead reads (in st's nest and the stages attached inside it) is prefetched a
 * few cache lines at a time from a serial loop around those reads, spread evenly over the iteration
 * (tir_inject_prefetch, at lowering). For a loop that reads a new block of a large, cold input per iteration
 * (a GEMM's weight panel): memory then streams under the arithmetic of the block before. */
void te_prefetch(TeStage *st, TeTensor *t, IterVar *iv, int64_t ahead);
/* The text form of a schedule: stages, leaves with extents and annotations, relations. */
void te_print_schedule(StrBuf *b, const TeSchedule *s);

/* ---- lower.c ---- */
/* Lowers s to a kernel named name whose params are args (placeholders and outputs, in ABI order). */
TirFunc *te_lower(TeCtx *c, TeSchedule *s, const char *name, int nargs, TeTensor **args, Diag *d);

#endif
