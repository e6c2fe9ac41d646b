/* tensor family: data movement ops, all injective (each output element reads input elements at indices that
 * are functions of the output index): reshape, transpose, copy, concatenate, split, slice, take (gather),
 * ... For each op: the type relation (infer), the TE compute and the pattern kind. They get the generic
 * injective schedule (schedule.c) or are inlined into their consumer.
 *
 * Index mapping of reshape-like ops goes through the row-major flat index: flat = sum(idx[i] * stride[i]),
 * then in[j] = (flat / instride[j]) % indim[j] (floordiv/floormod; the simplifier folds constant strides).
 *
 * Graph attributes (as the ONNX importer writes them): reshape: newshape (fully resolved, no 0 / -1);
 * transpose: axes (a permutation); concatenate: axis. */
#include <string.h>
#include "topi/topi.h"

/* ---------------------------------------------------------------- helpers */


static bool dtype_ok(mlc_dtype t) { return t != MLC_STRING && mlc_dtype_size(t) > 0; }

static mlc_status check_dtype(const Node *n, mlc_dtype t, Diag *d) {
  if (!dtype_ok(t)) return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(t));
  return MLC_OK;
}

/* flat row-major index of idx in shape */
static Expr *flat_index(TeCtx *c, int ndim, const int64_t *shape, Expr **idx) {
  Arena *A = c->arena;
  Expr *f = tir_idx(A, 0);
  for (int i = 0; i < ndim; i++) f = tir_add(A, tir_mul(A, f, tir_idx(A, shape[i])), idx[i]);
  return f;
}

/* idx in shape from a flat row-major index */
static void unflatten(TeCtx *c, Expr *flat, int ndim, const int64_t *shape, Expr **idx) {
  Arena *A = c->arena;
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    Expr *e = stride == 1 ? flat : tir_bin(A, E_FLOORDIV, flat, tir_idx(A, stride));
    if (i > 0) e = tir_bin(A, E_FLOORMOD, e, tir_idx(A, shape[i]));
    idx[i] = shape[i] == 1 ? tir_idx(A, 0) : e;
    stride *= shape[i];
  }
}

/* ---------------------------------------------------------------- reshape */

static mlc_status reshape_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  TensorType o = {.dtype = x->dtype};
  const Attr *a = ir_attr(n, "newshape");
  if (!a) return diag_set(d, MLC_ERR_INVALID, "reshape needs the attribute 'newshape'");
  o.ndim = ir_attr_ints(n, "newshape", o.dims, MLC_MAX_DIMS);
  if (o.ndim > MLC_MAX_DIMS) return diag_set(d, MLC_ERR_UNSUPPORTED, "reshape to rank %d (max %d)", o.ndim, MLC_MAX_DIMS);
  for (int i = 0; i < o.ndim; i++)
    if (o.dims[i] < 0) return diag_set(d, MLC_ERR_INVALID, "reshape: negative dim %lld", (long long)o.dims[i]);
  if (tt_numel(&o) != tt_numel(x))
    return diag_set(d, MLC_ERR_INVALID, "reshape: %lld elements cannot become %lld", (long long)tt_numel(x),
                    (long long)tt_numel(&o));
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct ReshapeCtx {
  TeTensor *x;
  int ndim;
  int64_t shape[MLC_MAX_DIMS];
} ReshapeCtx;

static Expr *reshape_body(TeCtx *c, Expr **idx, void *user) {
  ReshapeCtx *k = user;
  Expr *xi[MLC_MAX_DIMS];
  unflatten(c, flat_index(c, k->ndim, k->shape, idx), k->x->ndim, k->x->shape, xi);
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status reshape_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ReshapeCtx *k = arena_alloc(c->arena, sizeof *k);
  const TensorType *o = &n->outputs[0]->type;
  k->x = ins[0];
  k->ndim = o->ndim;
  memcpy(k->shape, o->dims, sizeof k->shape);
  outs[0] = te_compute(c, "reshape", "injective", o->dtype, o->ndim, o->dims, reshape_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- copy */

static mlc_status copy_infer(Node *n, Diag *d) {
  mlc_status st = check_dtype(n, n->inputs[0]->type.dtype, d);
  if (st) return st;
  n->outputs[0]->type = n->inputs[0]->type;
  return MLC_OK;
}

static Expr *copy_body(TeCtx *c, Expr **idx, void *user) {
  TeTensor *x = user;
  return te_read(c, x, x->ndim, idx);
}

static mlc_status copy_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  outs[0] = te_compute(c, "copy", "elemwise", ins[0]->dtype, ins[0]->ndim, ins[0]->shape, copy_body, ins[0]);
  return MLC_OK;
}

/* ---------------------------------------------------------------- transpose */

static mlc_status transpose_perm(const Node *n, int ndim, int64_t *perm, Diag *d) {
  int cnt = ir_attr_ints(n, "axes", perm, MLC_MAX_DIMS);
  if (cnt == 0) {
    for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
    return MLC_OK;
  }
  if (cnt != ndim) return diag_set(d, MLC_ERR_INVALID, "transpose: %d axes for rank %d", cnt, ndim);
  bool seen[MLC_MAX_DIMS] = {0};
  for (int i = 0; i < ndim; i++) {
    if (perm[i] < 0 || perm[i] >= ndim || seen[perm[i]])
      return diag_set(d, MLC_ERR_INVALID, "transpose: axes are not a permutation");
    seen[perm[i]] = true;
  }
  return MLC_OK;
}

static mlc_status transpose_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  int64_t perm[MLC_MAX_DIMS];
  if ((st = transpose_perm(n, x->ndim, perm, d))) return st;
  TensorType o = {.dtype = x->dtype, .ndim = x->ndim};
  for (int i = 0; i < x->ndim; i++) o.dims[i] = x->dims[perm[i]];
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct TransposeCtx {
  TeTensor *x;
  int64_t perm[MLC_MAX_DIMS];
} TransposeCtx;

static Expr *transpose_body(TeCtx *c, Expr **idx, void *user) {
  TransposeCtx *k = user;
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0; i < k->x->ndim; i++) xi[k->perm[i]] = idx[i];
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status transpose_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  TransposeCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  mlc_status st = transpose_perm(n, ins[0]->ndim, k->perm, d);
  if (st) return st;
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "transpose", "injective", o->dtype, o->ndim, o->dims, transpose_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- concatenate */

static mlc_status concat_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "concatenate: axis %lld out of range for rank %d", (long long)axis, x->ndim);
  TensorType o = *x;
  o.dims[axis] = 0;
  for (int i = 0; i < n->ninputs; i++) {
    const TensorType *t = &n->inputs[i]->type;
    if (!n->inputs[i] || t->ndim != x->ndim || t->dtype != x->dtype)
      return diag_set(d, MLC_ERR_INVALID, "concatenate: input %d has a different rank or dtype", i);
    for (int j = 0; j < x->ndim; j++)
      if (j != axis && t->dims[j] != x->dims[j])
        return diag_set(d, MLC_ERR_INVALID, "concatenate: input %d differs in dim %d", i, j);
    o.dims[axis] += t->dims[axis];
  }
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct ConcatCtx {
  int n, axis;
  TeTensor **ins;
} ConcatCtx;

/* a select chain over the inputs by the position along axis; every read is clamped into its input */
static Expr *concat_body(TeCtx *c, Expr **idx, void *user) {
  ConcatCtx *k = user;
  Arena *A = c->arena;
  int64_t off[256];
  int64_t acc = 0;
  for (int i = 0; i < k->n; i++) {
    off[i] = acc;
    acc += k->ins[i]->shape[k->axis];
  }
  Expr *r = NULL;
  for (int i = k->n - 1; i >= 0; i--) {
    TeTensor *t = k->ins[i];
    int64_t ext = t->shape[k->axis];
    if (ext == 0) continue;
    Expr *xi[MLC_MAX_DIMS];
    memcpy(xi, idx, sizeof(Expr *) * (size_t)t->ndim);
    Expr *p = off[i] ? tir_sub(A, idx[k->axis], tir_idx(A, off[i])) : idx[k->axis];
    if (r) p = tir_bin(A, E_MIN, tir_bin(A, E_MAX, p, tir_idx(A, 0)), tir_idx(A, ext - 1));
    else if (off[i]) p = tir_bin(A, E_MAX, p, tir_idx(A, 0));
    xi[k->axis] = p;
    Expr *v = te_read(c, t, t->ndim, xi);
    r = r ? tir_select(A, tir_bin(A, E_LT, idx[k->axis], tir_idx(A, off[i] + ext)), v, r) : v;
  }
  return r ? r : tir_const(A, k->ins[0]->dtype, 0);
}

static mlc_status concat_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ConcatCtx *k = arena_alloc(c->arena, sizeof *k);
  if (n->ninputs > 256) return diag_set(d, MLC_ERR_UNSUPPORTED, "concatenate of more than 256 inputs");
  k->n = n->ninputs;
  k->axis = (int)ir_attr_int(n, "axis", 0);
  k->ins = ins;
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "concatenate", "injective", o->dtype, o->ndim, o->dims, concat_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_tensor[] = {
    /* name        pattern          min max nout infer            compute */
    {"reshape", PAT_INJECTIVE, 1, 1, 1, reshape_infer, reshape_compute},
    {"copy", PAT_ELEMWISE, 1, 1, 1, copy_infer, copy_compute},
    {"transpose", PAT_INJECTIVE, 1, 1, 1, transpose_infer, transpose_compute},
    {"concatenate", PAT_INJECTIVE, 1, -1, 1, concat_infer, concat_compute},
    {0},
};
