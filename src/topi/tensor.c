/* tensor family: data movement ops, all injective (each output element reads input elements at indices that
 * are functions of the output index): reshape, transpose, copy, concatenate, split, slice, take (gather),
 * ... For each op: the type relation (infer), the TE compute and the pattern kind. They get the generic
 * injective schedule (schedule.c) or are inlined into their consumer.
 *
 * Index mapping of reshape-like ops goes through the row-major flat index: flat = sum(idx[i] * stride[i]),
 * then in[j] = (flat / instride[j]) % indim[j] (floordiv/floormod; the simplifier folds constant strides).
 *
 * Graph attributes (as the ONNX importer writes them): reshape: newshape (fully resolved, no 0 / -1);
 * transpose: axes (a permutation); concatenate: axis; strided_slice: begin, end, strides (one per axis,
 * clamped); nn.pad: pad_width (befores then afters, negative crops), pad_mode, pad_value (or a second
 * one-element input); tile: reps; broadcast_to / full: shape (the result); arange: num (inputs start, delta);
 * trilu: upper, k; nn.depth_to_space: block_size, mode; nn.space_to_depth: block_size; eye_like: k, dtype;
 * one_hot: depth, axis (inputs indices, [off, on]); reverse_sequence: batch_axis, time_axis.
 * Gathers and scatters are in index.c. Everything here is generic over dtypes (pure data movement; arange
 * computes float16/bfloat16 in float32). */
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

/* the read of input i at idx, its position along axis shifted by off and clamped into the input (a select
 * may evaluate an arm it does not take) */
static Expr *concat_read(TeCtx *c, ConcatCtx *k, Expr **idx, int i, int64_t off) {
  Arena *A = c->arena;
  TeTensor *t = k->ins[i];
  Expr *xi[MLC_MAX_DIMS];
  memcpy(xi, idx, sizeof(Expr *) * (size_t)t->ndim);
  Expr *p = off ? tir_sub(A, idx[k->axis], tir_idx(A, off)) : idx[k->axis];
  xi[k->axis] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, p, tir_idx(A, 0)), tir_idx(A, t->shape[k->axis] - 1));
  return te_read(c, t, t->ndim, xi);
}

/* inputs [lo, hi) (non-empty along axis, starting at off[]) as a balanced tree of selects on the position
 * along axis: log2(inputs) compares per element, not one per input before it (DenseNet concatenates up to 48) */
static Expr *concat_tree(TeCtx *c, ConcatCtx *k, Expr **idx, const int *in, const int64_t *off, int lo, int hi) {
  if (hi - lo == 1) return concat_read(c, k, idx, in[lo], off[lo]);
  int mid = (lo + hi) / 2;
  Expr *cond = tir_bin(c->arena, E_LT, idx[k->axis], tir_idx(c->arena, off[mid]));
  return tir_select(c->arena, cond, concat_tree(c, k, idx, in, off, lo, mid), concat_tree(c, k, idx, in, off, mid, hi));
}

static Expr *concat_body(TeCtx *c, Expr **idx, void *user) {
  ConcatCtx *k = user;
  int in[256], n = 0;
  int64_t off[256], acc = 0;
  for (int i = 0; i < k->n; i++) {
    int64_t ext = k->ins[i]->shape[k->axis];
    if (ext > 0) in[n] = i, off[n++] = acc;
    acc += ext;
  }
  return n ? concat_tree(c, k, idx, in, off, 0, n) : tir_const(c->arena, k->ins[0]->dtype, 0);
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

/* ---------------------------------------------------------------- shared helpers of the ops below */

static Expr *imin(Arena *A, Expr *x, int64_t v) { return tir_bin(A, E_MIN, x, tir_idx(A, v)); }
static Expr *imax(Arena *A, Expr *x, int64_t v) { return tir_bin(A, E_MAX, x, tir_idx(A, v)); }
static Expr *iclamp(Arena *A, Expr *x, int64_t lo, int64_t hi) { return imin(A, imax(A, x, lo), hi); }

/* element 0 of a 1-element tensor (any rank) */
static Expr *read_scalar(TeCtx *c, TeTensor *t) {
  Expr *z[MLC_MAX_DIMS];
  for (int i = 0; i < t->ndim; i++) z[i] = tir_idx(c->arena, 0);
  return te_read(c, t, t->ndim, z);
}

static mlc_status same_rank_attr(const Node *n, const char *name, int ndim, int64_t *out, Diag *d) {
  int cnt = ir_attr_ints(n, name, out, MLC_MAX_DIMS);
  if (cnt != ndim)
    return diag_set(d, MLC_ERR_INVALID, "%s: attribute '%s' has %d entries for rank %d", n->op->name, name, cnt, ndim);
  return MLC_OK;
}

static mlc_status out_shape_attr(const Node *n, const char *name, TensorType *o, Diag *d) {
  const Attr *a = ir_attr(n, name);
  if (!a) return diag_set(d, MLC_ERR_INVALID, "%s needs the attribute '%s'", n->op->name, name);
  o->ndim = ir_attr_ints(n, name, o->dims, MLC_MAX_DIMS);
  if (o->ndim > MLC_MAX_DIMS) return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: rank %d (max %d)", n->op->name, o->ndim, MLC_MAX_DIMS);
  for (int i = 0; i < o->ndim; i++)
    if (o->dims[i] < 0) return diag_set(d, MLC_ERR_INVALID, "%s: negative dim %lld", n->op->name, (long long)o->dims[i]);
  return MLC_OK;
}

/* ---------------------------------------------------------------- strided_slice
 * attrs begin, end, strides: one entry per axis, normalised by the importer (begin clamped into the axis,
 * end clamped to [0, dim] for positive strides and to [-1, dim - 1] for negative ones). */

static int64_t slice_len(int64_t b, int64_t e, int64_t s) {
  if (s > 0) return e > b ? (e - b + s - 1) / s : 0;
  return b > e ? (b - e + (-s) - 1) / (-s) : 0;
}

static mlc_status slice_attrs(const Node *n, int ndim, int64_t *b, int64_t *e, int64_t *s, Diag *d) {
  mlc_status st;
  if ((st = same_rank_attr(n, "begin", ndim, b, d)) || (st = same_rank_attr(n, "end", ndim, e, d)) ||
      (st = same_rank_attr(n, "strides", ndim, s, d)))
    return st;
  return MLC_OK;
}

static mlc_status slice_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  int64_t b[MLC_MAX_DIMS], e[MLC_MAX_DIMS], s[MLC_MAX_DIMS];
  if ((st = slice_attrs(n, x->ndim, b, e, s, d))) return st;
  TensorType o = *x;
  for (int i = 0; i < x->ndim; i++) {
    if (s[i] == 0) return diag_set(d, MLC_ERR_INVALID, "strided_slice: stride 0 on axis %d", i);
    o.dims[i] = slice_len(b[i], e[i], s[i]);
    if (o.dims[i] > 0) {
      int64_t last = b[i] + (o.dims[i] - 1) * s[i];
      if (b[i] < 0 || b[i] >= x->dims[i] || last < 0 || last >= x->dims[i])
        return diag_set(d, MLC_ERR_INVALID, "strided_slice: axis %d range [%lld, %lld) step %lld outside [0, %lld)", i,
                        (long long)b[i], (long long)e[i], (long long)s[i], (long long)x->dims[i]);
    }
  }
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct SliceCtx {
  TeTensor *x;
  int64_t b[MLC_MAX_DIMS], s[MLC_MAX_DIMS];
} SliceCtx;

static Expr *slice_body(TeCtx *c, Expr **idx, void *user) {
  SliceCtx *k = user;
  Arena *A = c->arena;
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0; i < k->x->ndim; i++) {
    Expr *e = k->s[i] == 1 ? idx[i] : tir_mul(A, idx[i], tir_idx(A, k->s[i]));
    xi[i] = k->b[i] ? tir_add(A, e, tir_idx(A, k->b[i])) : e;
  }
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status slice_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  SliceCtx *k = arena_alloc(c->arena, sizeof *k);
  int64_t e[MLC_MAX_DIMS];
  k->x = ins[0];
  mlc_status st = slice_attrs(n, ins[0]->ndim, k->b, e, k->s, d);
  if (st) return st;
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "strided_slice", "injective", o->dtype, o->ndim, o->dims, slice_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- nn.pad
 * attrs pad_width (2 * rank: all befores then all afters, as ONNX; negative values crop), pad_mode
 * ("constant", "reflect", "edge", "wrap"), pad_value (constant mode without a second input). Optional second
 * input: a one-element tensor holding the pad value (read at run time). */

typedef enum PadMode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } PadMode;

static mlc_status pad_mode(const Node *n, PadMode *m, Diag *d) {
  const char *s = ir_attr_string(n, "pad_mode", "constant");
  if (!strcmp(s, "constant")) *m = PAD_CONSTANT;
  else if (!strcmp(s, "reflect")) *m = PAD_REFLECT;
  else if (!strcmp(s, "edge")) *m = PAD_EDGE;
  else if (!strcmp(s, "wrap")) *m = PAD_WRAP;
  else return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.pad: pad_mode '%s' is not supported", s);
  return MLC_OK;
}

static mlc_status pad_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  PadMode m;
  if ((st = pad_mode(n, &m, d))) return st;
  int64_t p[2 * MLC_MAX_DIMS];
  int cnt = ir_attr_ints(n, "pad_width", p, 2 * MLC_MAX_DIMS);
  if (cnt != 2 * x->ndim) return diag_set(d, MLC_ERR_INVALID, "nn.pad: %d pads for rank %d", cnt, x->ndim);
  if (n->ninputs > 1 && n->inputs[1]) {
    if (tt_numel(&n->inputs[1]->type) != 1 || n->inputs[1]->type.dtype != x->dtype)
      return diag_set(d, MLC_ERR_INVALID, "nn.pad: the pad value must be one element of the data's dtype");
  }
  TensorType o = *x;
  for (int i = 0; i < x->ndim; i++) {
    o.dims[i] = x->dims[i] + p[i] + p[i + x->ndim];
    if (o.dims[i] < 0) return diag_set(d, MLC_ERR_INVALID, "nn.pad: axis %d crops below zero", i);
    if (o.dims[i] > 0 && x->dims[i] == 0) return diag_set(d, MLC_ERR_INVALID, "nn.pad: cannot pad an empty axis %d", i);
  }
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct PadCtx {
  TeTensor *x, *value;
  PadMode mode;
  double fvalue;
  int64_t before[MLC_MAX_DIMS];
} PadCtx;

static Expr *pad_body(TeCtx *c, Expr **idx, void *user) {
  PadCtx *k = user;
  Arena *A = c->arena;
  Expr *xi[MLC_MAX_DIMS];
  Expr *valid = NULL;
  for (int i = 0; i < k->x->ndim; i++) {
    int64_t dim = k->x->shape[i];
    Expr *p = k->before[i] ? tir_sub(A, idx[i], tir_idx(A, k->before[i])) : idx[i];
    switch (k->mode) {
    case PAD_CONSTANT: {
      Expr *v = tir_bin(A, E_AND, tir_bin(A, E_GE, p, tir_idx(A, 0)), tir_bin(A, E_LT, p, tir_idx(A, dim)));
      valid = valid ? tir_bin(A, E_AND, valid, v) : v;
      xi[i] = iclamp(A, p, 0, dim - 1);
      break;
    }
    case PAD_EDGE: xi[i] = iclamp(A, p, 0, dim - 1); break;
    case PAD_WRAP: xi[i] = tir_bin(A, E_FLOORMOD, p, tir_idx(A, dim)); break;
    case PAD_REFLECT:
      if (dim == 1) {
        xi[i] = tir_idx(A, 0);
      } else {
        Expr *q = tir_bin(A, E_FLOORMOD, p, tir_idx(A, 2 * (dim - 1)));
        xi[i] = tir_select(A, tir_bin(A, E_LT, q, tir_idx(A, dim)), q, tir_sub(A, tir_idx(A, 2 * (dim - 1)), q));
      }
      break;
    }
  }
  Expr *r = te_read(c, k->x, k->x->ndim, xi);
  if (!valid) return r;
  Expr *pv = k->value ? read_scalar(c, k->value) : tir_const(A, k->x->dtype, k->fvalue);
  return tir_select(A, valid, r, pv);
}

static mlc_status pad_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  PadCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = pad_mode(n, &k->mode, d);
  if (st) return st;
  int64_t p[2 * MLC_MAX_DIMS];
  ir_attr_ints(n, "pad_width", p, 2 * MLC_MAX_DIMS);
  k->x = ins[0];
  k->value = n->ninputs > 1 && n->inputs[1] ? ins[1] : NULL;
  k->fvalue = ir_attr_float(n, "pad_value", 0);
  for (int i = 0; i < ins[0]->ndim; i++) k->before[i] = p[i];
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "pad", "injective", o->dtype, o->ndim, o->dims, pad_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- tile (attr reps, one per axis) */

static mlc_status tile_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  int64_t r[MLC_MAX_DIMS];
  if ((st = same_rank_attr(n, "reps", x->ndim, r, d))) return st;
  TensorType o = *x;
  for (int i = 0; i < x->ndim; i++) {
    if (r[i] < 0) return diag_set(d, MLC_ERR_INVALID, "tile: negative repeat %lld", (long long)r[i]);
    o.dims[i] = x->dims[i] * r[i];
  }
  n->outputs[0]->type = o;
  return MLC_OK;
}

static Expr *tile_body(TeCtx *c, Expr **idx, void *user) {
  TeTensor *x = user;
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++)
    xi[i] = x->shape[i] == 1 ? tir_idx(c->arena, 0) : tir_bin(c->arena, E_FLOORMOD, idx[i], tir_idx(c->arena, x->shape[i]));
  return te_read(c, x, x->ndim, xi);
}

static mlc_status tile_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "tile", "injective", o->dtype, o->ndim, o->dims, tile_body, ins[0]);
  return MLC_OK;
}

/* ---------------------------------------------------------------- broadcast_to (attr shape: the result) and
 * full (input: one-element fill value; attr shape) */

static mlc_status broadcast_to_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  TensorType o = {.dtype = x->dtype}, b;
  if ((st = out_shape_attr(n, "shape", &o, d))) return st;
  if (topi_broadcast_shape(x, &o, &b) != MLC_OK || !tt_equal(&b, &o))
    return diag_set(d, MLC_ERR_INVALID, "broadcast_to: input does not broadcast to the shape");
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct BcastCtx {
  TeTensor *x;
  int ndim;
} BcastCtx;

static Expr *broadcast_to_body(TeCtx *c, Expr **idx, void *user) {
  BcastCtx *k = user;
  Expr *xi[MLC_MAX_DIMS];
  topi_broadcast_index(c, k->x, k->ndim, idx, xi);
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status broadcast_to_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  BcastCtx *k = arena_alloc(c->arena, sizeof *k);
  const TensorType *o = &n->outputs[0]->type;
  k->x = ins[0];
  k->ndim = o->ndim;
  outs[0] = te_compute(c, n->op->name, "broadcast", o->dtype, o->ndim, o->dims, broadcast_to_body, k);
  return MLC_OK;
}

static mlc_status full_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  if (tt_numel(x) != 1) return diag_set(d, MLC_ERR_INVALID, "full: the fill value must have one element");
  TensorType o = {.dtype = x->dtype};
  if ((st = out_shape_attr(n, "shape", &o, d))) return st;
  n->outputs[0]->type = o;
  return MLC_OK;
}

static Expr *full_body(TeCtx *c, Expr **idx, void *user) { return read_scalar(c, user); }

static mlc_status full_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "full", "broadcast", o->dtype, o->ndim, o->dims, full_body, ins[0]);
  return MLC_OK;
}

/* ---------------------------------------------------------------- arange: inputs start, delta (one element
 * each, the output dtype); attr num (the element count, known at compile time). out[i] = start + i * delta
 * (float16/bfloat16 computed in float32). */

static mlc_status arange_infer(Node *n, Diag *d) {
  const TensorType *s = &n->inputs[0]->type, *dl = &n->inputs[1]->type;
  if (!dtype_is_float(s->dtype) && !dtype_is_int(s->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "arange of %s is not supported", mlc_dtype_name(s->dtype));
  if (tt_numel(s) != 1 || tt_numel(dl) != 1 || s->dtype != dl->dtype)
    return diag_set(d, MLC_ERR_INVALID, "arange: start and delta must be single elements of one dtype");
  int64_t num = ir_attr_int(n, "num", -1);
  if (num < 0) return diag_set(d, MLC_ERR_INVALID, "arange needs a non-negative 'num'");
  TensorType o = {.dtype = s->dtype, .ndim = 1, .dims = {num}};
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct ArangeCtx {
  TeTensor *start, *delta;
} ArangeCtx;

static bool is_half(mlc_dtype t) { return t == MLC_F16 || t == MLC_BF16; }

static Expr *arange_body(TeCtx *c, Expr **idx, void *user) {
  ArangeCtx *k = user;
  Arena *A = c->arena;
  mlc_dtype t = k->start->dtype, ct = is_half(t) ? MLC_F32 : t;
  Expr *s = tir_cast(A, ct, read_scalar(c, k->start)), *dl = tir_cast(A, ct, read_scalar(c, k->delta));
  Expr *r = tir_add(A, s, tir_mul(A, tir_cast(A, ct, idx[0]), dl));
  return ct == t ? r : tir_cast(A, t, r);
}

static mlc_status arange_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ArangeCtx *k = arena_alloc(c->arena, sizeof *k);
  k->start = ins[0];
  k->delta = ins[1];
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "arange", "injective", o->dtype, o->ndim, o->dims, arange_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- trilu (attrs upper 0/1, k): keeps the
 * elements of the last two axes with col - row >= k (upper) or <= k (lower), zeroes the others. An optional
 * second input, an int64 scalar, gives k at run time instead of the attribute. */

static mlc_status trilu_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  if (x->ndim < 2) return diag_set(d, MLC_ERR_INVALID, "trilu needs rank >= 2, got %d", x->ndim);
  if (n->ninputs > 1 && (n->inputs[1]->type.dtype != MLC_I64 || tt_numel(&n->inputs[1]->type) != 1))
    return diag_set(d, MLC_ERR_INVALID, "trilu: k must be an int64 scalar");
  n->outputs[0]->type = *x;
  return MLC_OK;
}

typedef struct TriluCtx {
  TeTensor *x, *kt; /* kt: k at run time, or NULL */
  bool upper;
  int64_t k;
} TriluCtx;

static Expr *trilu_body(TeCtx *c, Expr **idx, void *user) {
  TriluCtx *k = user;
  Arena *A = c->arena;
  int r = k->x->ndim;
  Expr *diff = tir_sub(A, idx[r - 1], idx[r - 2]);
  Expr *kx = tir_idx(A, k->k);
  if (k->kt) {
    Expr *zero[MLC_MAX_DIMS];
    for (int i = 0; i < k->kt->ndim; i++) zero[i] = tir_idx(A, 0);
    kx = te_read(c, k->kt, k->kt->ndim, zero);
  }
  Expr *keep = tir_bin(A, k->upper ? E_GE : E_LE, diff, kx);
  return tir_select(A, keep, te_read(c, k->x, r, idx), tir_const(A, k->x->dtype, 0));
}

static mlc_status trilu_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  TriluCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->kt = n->ninputs > 1 ? ins[1] : NULL;
  k->upper = ir_attr_int(n, "upper", 1) != 0;
  k->k = ir_attr_int(n, "k", 0);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "trilu", "injective", o->dtype, o->ndim, o->dims, trilu_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- nn.depth_to_space (attrs block_size,
 * mode "DCR"/"CRD") and nn.space_to_depth (block_size), NCHW */

static mlc_status d2s_check(Node *n, int64_t *b, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  *b = ir_attr_int(n, "block_size", 0);
  if (x->ndim != 4) return diag_set(d, MLC_ERR_INVALID, "%s needs a 4-D NCHW input", n->op->name);
  if (*b <= 0) return diag_set(d, MLC_ERR_INVALID, "%s: block_size must be positive", n->op->name);
  return MLC_OK;
}

static mlc_status d2s_infer(Node *n, Diag *d) {
  int64_t b;
  mlc_status st = d2s_check(n, &b, d);
  if (st) return st;
  const char *mode = ir_attr_string(n, "mode", "DCR");
  if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "nn.depth_to_space: mode '%s' is not supported", mode);
  const TensorType *x = &n->inputs[0]->type;
  if (x->dims[1] % (b * b))
    return diag_set(d, MLC_ERR_INVALID, "nn.depth_to_space: %lld channels not divisible by %lld", (long long)x->dims[1],
                    (long long)(b * b));
  TensorType o = *x;
  o.dims[1] = x->dims[1] / (b * b);
  o.dims[2] = x->dims[2] * b;
  o.dims[3] = x->dims[3] * b;
  n->outputs[0]->type = o;
  return MLC_OK;
}

static mlc_status s2d_infer(Node *n, Diag *d) {
  int64_t b;
  mlc_status st = d2s_check(n, &b, d);
  if (st) return st;
  const TensorType *x = &n->inputs[0]->type;
  if (x->dims[2] % b || x->dims[3] % b)
    return diag_set(d, MLC_ERR_INVALID, "nn.space_to_depth: spatial dims not divisible by %lld", (long long)b);
  TensorType o = *x;
  o.dims[1] = x->dims[1] * b * b;
  o.dims[2] = x->dims[2] / b;
  o.dims[3] = x->dims[3] / b;
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct D2sCtx {
  TeTensor *x;
  int64_t b, oc; /* block, channels of the smaller-channel side */
  bool crd;
} D2sCtx;

static Expr *d2s_body(TeCtx *c, Expr **idx, void *user) {
  D2sCtx *k = user;
  Arena *A = c->arena;
  Expr *B = tir_idx(A, k->b);
  Expr *bh = tir_bin(A, E_FLOORMOD, idx[2], B), *bw = tir_bin(A, E_FLOORMOD, idx[3], B);
  Expr *blk = tir_add(A, tir_mul(A, bh, B), bw);
  Expr *ch = k->crd ? tir_add(A, tir_mul(A, idx[1], tir_idx(A, k->b * k->b)), blk)
                    : tir_add(A, tir_mul(A, blk, tir_idx(A, k->oc)), idx[1]);
  Expr *xi[4] = {idx[0], ch, tir_bin(A, E_FLOORDIV, idx[2], B), tir_bin(A, E_FLOORDIV, idx[3], B)};
  return te_read(c, k->x, 4, xi);
}

static Expr *s2d_body(TeCtx *c, Expr **idx, void *user) {
  D2sCtx *k = user;
  Arena *A = c->arena;
  Expr *B = tir_idx(A, k->b), *C = tir_idx(A, k->oc);
  Expr *blk = tir_bin(A, E_FLOORDIV, idx[1], C);
  Expr *xi[4] = {idx[0], tir_bin(A, E_FLOORMOD, idx[1], C),
                 tir_add(A, tir_mul(A, idx[2], B), tir_bin(A, E_FLOORDIV, blk, B)),
                 tir_add(A, tir_mul(A, idx[3], B), tir_bin(A, E_FLOORMOD, blk, B))};
  return te_read(c, k->x, 4, xi);
}

static mlc_status d2s_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  D2sCtx *k = arena_alloc(c->arena, sizeof *k);
  const TensorType *o = &n->outputs[0]->type;
  bool d2s = !strcmp(n->op->name, "nn.depth_to_space");
  k->x = ins[0];
  k->b = ir_attr_int(n, "block_size", 1);
  k->oc = d2s ? o->dims[1] : ins[0]->shape[1];
  k->crd = !strcmp(ir_attr_string(n, "mode", "DCR"), "CRD");
  outs[0] = te_compute(c, n->op->name, "injective", o->dtype, o->ndim, o->dims, d2s ? d2s_body : s2d_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- eye_like (input: its 2-D shape only;
 * attrs k, dtype (an mlc_dtype code, the input's when absent)) */

static mlc_status eye_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  if (x->ndim != 2) return diag_set(d, MLC_ERR_INVALID, "eye_like needs a 2-D input, got rank %d", x->ndim);
  mlc_dtype t = (mlc_dtype)ir_attr_int(n, "dtype", x->dtype);
  mlc_status st = check_dtype(n, t, d);
  if (st) return st;
  TensorType o = *x;
  o.dtype = t;
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct EyeCtx {
  mlc_dtype t;
  int64_t k;
} EyeCtx;

static Expr *eye_body(TeCtx *c, Expr **idx, void *user) {
  EyeCtx *k = user;
  Arena *A = c->arena;
  Expr *on = tir_bin(A, E_EQ, tir_sub(A, idx[1], idx[0]), tir_idx(A, k->k));
  return tir_select(A, on, tir_const(A, k->t, 1), tir_const(A, k->t, 0));
}

static mlc_status eye_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  EyeCtx *k = arena_alloc(c->arena, sizeof *k);
  const TensorType *o = &n->outputs[0]->type;
  k->t = o->dtype;
  k->k = ir_attr_int(n, "k", 0);
  outs[0] = te_compute(c, "eye_like", "injective", o->dtype, o->ndim, o->dims, eye_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- one_hot: inputs indices (numeric; negative
 * ones count from depth), values ([off, on]); attrs depth, axis (non-negative, in the output's rank) */

static mlc_status one_hot_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *v = &n->inputs[1]->type;
  if (!dtype_is_int(x->dtype) && !dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "one_hot: indices of %s", mlc_dtype_name(x->dtype));
  mlc_status st = check_dtype(n, v->dtype, d);
  if (st) return st;
  if (tt_numel(v) != 2) return diag_set(d, MLC_ERR_INVALID, "one_hot: values must have 2 elements");
  int64_t depth = ir_attr_int(n, "depth", -1), axis = ir_attr_int(n, "axis", x->ndim);
  if (depth < 0) return diag_set(d, MLC_ERR_INVALID, "one_hot: depth must be non-negative");
  if (axis < 0 || axis > x->ndim) return diag_set(d, MLC_ERR_INVALID, "one_hot: axis %lld out of range", (long long)axis);
  if (x->ndim + 1 > MLC_MAX_DIMS) return diag_set(d, MLC_ERR_UNSUPPORTED, "one_hot: output rank above %d", MLC_MAX_DIMS);
  TensorType o = {.dtype = v->dtype, .ndim = x->ndim + 1};
  for (int i = 0, j = 0; i < o.ndim; i++) o.dims[i] = i == axis ? depth : x->dims[j++];
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct OneHotCtx {
  TeTensor *x, *v;
  int64_t depth;
  int axis;
} OneHotCtx;

static Expr *one_hot_body(TeCtx *c, Expr **idx, void *user) {
  OneHotCtx *k = user;
  Arena *A = c->arena;
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0, j = 0; i <= k->x->ndim; i++)
    if (i != k->axis) xi[j++] = idx[i];
  Expr *raw = te_read(c, k->x, k->x->ndim, xi);
  if (dtype_is_float(k->x->dtype)) raw = tir_call(A, INTRIN_TRUNC, raw->dtype, 1, &raw);
  Expr *ix = tir_cast(A, MLC_I64, raw);
  ix = tir_select(A, tir_bin(A, E_LT, ix, tir_idx(A, 0)), tir_add(A, ix, tir_idx(A, k->depth)), ix);
  Expr *vi[MLC_MAX_DIMS];
  for (int i = 0; i < k->v->ndim; i++) vi[i] = tir_idx(A, 0);
  Expr *off = te_read(c, k->v, k->v->ndim, vi);
  vi[k->v->ndim - 1] = tir_idx(A, 1);
  Expr *on = te_read(c, k->v, k->v->ndim, vi);
  return tir_select(A, tir_bin(A, E_EQ, ix, idx[k->axis]), on, off);
}

static mlc_status one_hot_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  OneHotCtx *k = arena_alloc(c->arena, sizeof *k);
  if (ins[1]->ndim != 1) return diag_set(d, MLC_ERR_INVALID, "one_hot: values must be 1-D");
  k->x = ins[0];
  k->v = ins[1];
  k->depth = ir_attr_int(n, "depth", 0);
  k->axis = (int)ir_attr_int(n, "axis", ins[0]->ndim);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "one_hot", "injective", o->dtype, o->ndim, o->dims, one_hot_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- reverse_sequence: inputs data, seq_lengths
 * (int, one per batch entry); attrs batch_axis, time_axis. Along time, the first seq_len elements of each
 * batch entry are reversed, the rest copied. */

static mlc_status revseq_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *l = &n->inputs[1]->type;
  mlc_status st = check_dtype(n, x->dtype, d);
  if (st) return st;
  int64_t b = ir_attr_int(n, "batch_axis", 1), t = ir_attr_int(n, "time_axis", 0);
  if (x->ndim < 2 || b < 0 || t < 0 || b >= x->ndim || t >= x->ndim || b == t)
    return diag_set(d, MLC_ERR_INVALID, "reverse_sequence: bad batch_axis/time_axis for rank %d", x->ndim);
  if (!dtype_is_int(l->dtype) || l->ndim != 1 || l->dims[0] != x->dims[b])
    return diag_set(d, MLC_ERR_INVALID, "reverse_sequence: seq_lengths must be 1-D integers, one per batch entry");
  n->outputs[0]->type = *x;
  return MLC_OK;
}

typedef struct RevSeqCtx {
  TeTensor *x, *len;
  int b, t;
} RevSeqCtx;

static Expr *revseq_body(TeCtx *c, Expr **idx, void *user) {
  RevSeqCtx *k = user;
  Arena *A = c->arena;
  Expr *li = idx[k->b];
  Expr *len = iclamp(A, tir_cast(A, MLC_I64, te_read(c, k->len, 1, &li)), 0, k->x->shape[k->t]);
  Expr *xi[MLC_MAX_DIMS];
  memcpy(xi, idx, sizeof(Expr *) * (size_t)k->x->ndim);
  Expr *rev = tir_sub(A, tir_sub(A, len, tir_idx(A, 1)), idx[k->t]);
  xi[k->t] = tir_select(A, tir_bin(A, E_LT, idx[k->t], len), rev, idx[k->t]);
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status revseq_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  RevSeqCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->len = ins[1];
  k->b = (int)ir_attr_int(n, "batch_axis", 1);
  k->t = (int)ir_attr_int(n, "time_axis", 0);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "reverse_sequence", "injective", o->dtype, o->ndim, o->dims, revseq_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_tensor[] = {
    /* name        pattern          min max nout infer            compute  dyn */
    {"reshape", PAT_INJECTIVE, 1, 1, 1, reshape_infer, reshape_compute, DYN_RESHAPE},
    {"copy", PAT_ELEMWISE, 1, 1, 1, copy_infer, copy_compute, DYN_ELEMWISE},
    {"transpose", PAT_INJECTIVE, 1, 1, 1, transpose_infer, transpose_compute, DYN_TRANSPOSE},
    {"concatenate", PAT_INJECTIVE, 1, -1, 1, concat_infer, concat_compute, DYN_CONCAT},
    {"strided_slice", PAT_INJECTIVE, 1, 1, 1, slice_infer, slice_compute, DYN_SLICE},
    {"nn.pad", PAT_INJECTIVE, 1, 2, 1, pad_infer, pad_compute, DYN_BATCH},
    {"tile", PAT_INJECTIVE, 1, 1, 1, tile_infer, tile_compute},
    {"broadcast_to", PAT_BROADCAST, 1, 1, 1, broadcast_to_infer, broadcast_to_compute, DYN_ELEMWISE},
    {"full", PAT_BROADCAST, 1, 1, 1, full_infer, full_compute},
    {"arange", PAT_INJECTIVE, 2, 2, 1, arange_infer, arange_compute},
    {"trilu", PAT_INJECTIVE, 1, 2, 1, trilu_infer, trilu_compute},
    {"nn.depth_to_space", PAT_INJECTIVE, 1, 1, 1, d2s_infer, d2s_compute},
    {"nn.space_to_depth", PAT_INJECTIVE, 1, 1, 1, s2d_infer, d2s_compute},
    {"eye_like", PAT_INJECTIVE, 1, 1, 1, eye_infer, eye_compute},
    {"one_hot", PAT_INJECTIVE, 2, 2, 1, one_hot_infer, one_hot_compute},
    {"reverse_sequence", PAT_INJECTIVE, 2, 2, 1, revseq_infer, revseq_compute},
    {0},
};
