/* topi linalg family: dense linear algebra on the last two axes of a tensor.
 *
 *   linalg.det(x)   x [..., M, M] (float16, bfloat16, float32, float64) -> [...]: each matrix's determinant
 *                   (ONNX Det); a rank-2 input gives a scalar.
 *
 * Algorithm: LU decomposition with partial pivoting (LAPACK getrf, which numpy's det uses), one matrix at a
 * time. Gaussian elimination is sequential (each step's pivot depends on the previous steps), so the compute
 * is a TE extern whose TIR is written directly, like src/topi/rnn.c:
 *
 *   for each matrix:  a <- x[...] (in the accumulation dtype: float32 for float16/bfloat16, else the dtype)
 *     det <- 1
 *     for k in [0, M):
 *       p <- the first row i >= k with the largest |a[i, k]|
 *       if p != k: swap rows k and p of a; det <- -det
 *       det <- det * a[k, k]
 *       if a[k, k] != 0:                   (else the column is zero below k too: det is 0 and stays 0)
 *         for i in (k, M):  f <- a[i, k] / a[k, k];  a[i, j] -= f * a[k, j] for j in (k, M)
 *     out[...] <- det
 *
 * The matrix a, the running det, the pivot row and its magnitude live in S_ALLOCATE scratch buffers. */
#include <string.h>
#include "topi/topi.h"

static mlc_dtype acc_of(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16 ? MLC_F32 : t; }

/* ---------------------------------------------------------------- det */

static mlc_status det_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "linalg.det of %s is not supported (floating-point only)",
                    mlc_dtype_name(x->dtype));
  if (x->ndim < 2 || x->dims[x->ndim - 1] != x->dims[x->ndim - 2])
    return diag_set(d, MLC_ERR_INVALID, "linalg.det: input must be [..., M, M], got rank %d", x->ndim);
  TensorType o = {.dtype = x->dtype, .ndim = x->ndim - 2};
  memcpy(o.dims, x->dims, sizeof(int64_t) * (size_t)o.ndim);
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct DetBuild {
  Arena *A;
  mlc_dtype acc;
  int64_t M;
  Buffer *a, *det, *piv, *best; /* scratch: the matrix, the running det, the pivot row and |pivot| */
} DetBuild;

static Expr *I(DetBuild *b, int64_t v) { return tir_idx(b->A, v); }
static Expr *V(DetBuild *b, Var *v) { return tir_varref(b->A, v); }
static Expr *F(DetBuild *b, double v) { return tir_float(b->A, b->acc, v); }
static Expr *zero_idx(DetBuild *b) { return I(b, 0); }
static Expr *ld_a(DetBuild *b, Expr *i, Expr *j) {
  Expr *ix[2] = {i, j};
  return tir_load(b->A, b->a, 2, ix);
}
static Stmt *st_a(DetBuild *b, Expr *i, Expr *j, Expr *v) {
  Expr *ix[2] = {i, j};
  return tir_store(b->A, b->a, 2, ix, v);
}
static Expr *ld0(DetBuild *b, Buffer *buf) {
  Expr *z = zero_idx(b);
  return tir_load(b->A, buf, 1, &z);
}
static Stmt *st0(DetBuild *b, Buffer *buf, Expr *v) {
  Expr *z = zero_idx(b);
  return tir_store(b->A, buf, 1, &z, v);
}
static Expr *fabs_(DetBuild *b, Expr *x) { return tir_call(b->A, INTRIN_FABS, x->dtype, 1, &x); }
/* for (v = lo; v < hi; ++v) body, with hi a constant and lo an expression */
static Stmt *loop(DetBuild *b, Var *v, Expr *lo, Stmt *body) {
  return tir_for(b->A, v, lo, tir_sub(b->A, I(b, b->M), lo), FOR_SERIAL, body);
}

/* One elimination step k (an index expression): pivot search, row swap, det update, elimination below k. */
static Stmt *lu_step(DetBuild *b, Expr *k) {
  Arena *A = b->A;
  Expr *k1 = tir_add(A, k, I(b, 1));
  /* pivot search: the first row with the largest magnitude (strictly greater replaces) */
  Var *iv = tir_var(A, "i", MLC_I64);
  Expr *i = V(b, iv);
  Expr *mag = fabs_(b, ld_a(b, i, k));
  Stmt *take[2] = {st0(b, b->best, mag), st0(b, b->piv, i)};
  Stmt *search = loop(b, iv, k1, tir_if(A, tir_bin(A, E_GT, mag, ld0(b, b->best)), tir_seq(A, 2, take), NULL));
  Stmt *init[2] = {st0(b, b->best, fabs_(b, ld_a(b, k, k))), st0(b, b->piv, k)};
  /* row swap */
  Var *sv = tir_var(A, "j", MLC_I64);
  Expr *sj = V(b, sv), *p = ld0(b, b->piv);
  Var *tv = tir_var(A, "t", b->acc);
  Stmt *swap_pair[2] = {st_a(b, k, sj, ld_a(b, p, sj)), st_a(b, p, sj, V(b, tv))};
  Stmt *swap_row = tir_let_stmt(A, tv, ld_a(b, k, sj), tir_seq(A, 2, swap_pair));
  Stmt *swap[2] = {tir_for(A, sv, I(b, 0), I(b, b->M), FOR_SERIAL, swap_row),
                   st0(b, b->det, tir_sub(A, F(b, 0), ld0(b, b->det)))};
  Stmt *do_swap = tir_if(A, tir_bin(A, E_NE, p, k), tir_seq(A, 2, swap), NULL);
  /* det update and elimination */
  Expr *pivot = ld_a(b, k, k);
  Var *rv = tir_var(A, "i", MLC_I64), *cv = tir_var(A, "j", MLC_I64), *fv = tir_var(A, "f", b->acc);
  Expr *r = V(b, rv), *cj = V(b, cv);
  Stmt *upd = st_a(b, r, cj, tir_sub(A, ld_a(b, r, cj), tir_mul(A, V(b, fv), ld_a(b, k, cj))));
  Stmt *row = tir_let_stmt(A, fv, tir_bin(A, E_DIV, ld_a(b, r, k), pivot), loop(b, cv, k1, upd));
  Stmt *elim = tir_if(A, tir_bin(A, E_NE, pivot, F(b, 0)), loop(b, rv, k1, row), NULL);
  Stmt *s[6] = {init[0], init[1], search, do_swap, st0(b, b->det, tir_mul(A, ld0(b, b->det), pivot)), elim};
  return tir_seq(A, 6, s);
}

static Stmt *det_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  DetBuild *b = user;
  Arena *A = c->arena;
  Buffer *x = ins[0], *out = outs[0];
  int nb = out->ndim;
  int64_t M = b->M, one = 1, mm[2] = {M, M};
  b->a = tir_buffer(A, "det_a", b->acc, 2, mm);
  b->det = tir_buffer(A, "det_acc", b->acc, 1, &one);
  b->piv = tir_buffer(A, "det_pivot_row", MLC_I64, 1, &one);
  b->best = tir_buffer(A, "det_pivot_abs", b->acc, 1, &one);
  Var *bv[MLC_MAX_DIMS];
  Expr *xi[MLC_MAX_DIMS];
  for (int d = 0; d < nb; d++) {
    bv[d] = tir_var(A, arena_printf(A, "b%d", d), MLC_I64);
    xi[d] = V(b, bv[d]);
  }
  /* a <- x[batch] */
  Var *iv = tir_var(A, "i", MLC_I64), *jv = tir_var(A, "j", MLC_I64);
  xi[nb] = V(b, iv);
  xi[nb + 1] = V(b, jv);
  Expr *xv = tir_load(A, x, nb + 2, xi);
  if (xv->dtype != b->acc) xv = tir_cast(A, b->acc, xv);
  Stmt *load = tir_for(A, iv, I(b, 0), I(b, M), FOR_SERIAL,
                       tir_for(A, jv, I(b, 0), I(b, M), FOR_SERIAL, st_a(b, V(b, iv), V(b, jv), xv)));
  Var *kv = tir_var(A, "k", MLC_I64);
  Stmt *lu = tir_for(A, kv, I(b, 0), I(b, M), FOR_SERIAL, lu_step(b, V(b, kv)));
  Expr *det = ld0(b, b->det);
  if (det->dtype != out->dtype) det = tir_cast(A, out->dtype, det);
  Stmt *s[4] = {load, st0(b, b->det, F(b, 1)), lu, tir_store(A, out, nb, xi, det)};
  Stmt *body = tir_seq(A, 4, s);
  for (int d = nb - 1; d >= 0; d--) body = tir_for(A, bv[d], I(b, 0), I(b, out->shape[d]), FOR_SERIAL, body);
  Buffer *scratch[4] = {b->a, b->det, b->piv, b->best};
  for (int i = 0; i < 4; i++) body = tir_allocate(A, scratch[i], body);
  return body;
}

static mlc_status det_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  DetBuild *b = arena_alloc(c->arena, sizeof *b);
  const TensorType *x = &n->inputs[0]->type, *o = &n->outputs[0]->type;
  *b = (DetBuild){.A = c->arena, .acc = acc_of(x->dtype), .M = x->dims[x->ndim - 1]};
  TeTensor type;
  memset(&type, 0, sizeof type);
  type.dtype = o->dtype;
  type.ndim = o->ndim;
  memcpy(type.shape, o->dims, sizeof(int64_t) * (size_t)o->ndim);
  te_extern(c, "det", "linalg", 1, ins, 1, &type, det_extern, b, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_linalg[] = {
    /* name        pattern     min max nout infer      compute */
    {"linalg.det", PAT_OPAQUE, 1, 1, 1, det_infer, det_compute},
    {0},
};
