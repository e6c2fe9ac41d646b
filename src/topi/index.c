/* index family: ops that read or write at positions given by an index tensor (after Relay's take, gather,
 * gather_nd, scatter_elements, scatter_nd) and tensor_scatter (ONNX TensorScatter, a KV-cache update).
 *
 * Gathers are injective computes: the output index selects an element of the index tensor, whose value
 * (negative values count from the end: wrapped with a select, then clamped into the axis so a bad index can
 * never read outside the buffer) replaces one coordinate of the data read. Scatters are extern ops whose TIR
 * copies the data into the output and then, in a serial loop nest over the updates (so repeated indices
 * apply in order, as the ONNX reference does), combines each update into its target element with the
 * reduction (none / add / mul / max / min; float16/bfloat16 combined in float32).
 *
 * Graph attributes (non-negative after import): take: axis; gather: axis; gather_nd: batch_dims;
 * scatter_elements: axis, reduction; scatter_nd: reduction; tensor_scatter: axis, circular. Indices are int32
 * or int64, ONNX layout (gather_nd / scatter_nd: the coordinate tuple is the last axis of indices). */
#include <string.h>
#include "topi/topi.h"

/* ---------------------------------------------------------------- helpers */

static mlc_status check_data(const Node *n, mlc_dtype t, Diag *d) {
  if (t == MLC_STRING || mlc_dtype_size(t) <= 0)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported", n->op->name, mlc_dtype_name(t));
  return MLC_OK;
}

static mlc_status check_indices(const Node *n, const TensorType *t, Diag *d) {
  if (t->dtype != MLC_I32 && t->dtype != MLC_I64)
    return diag_set(d, MLC_ERR_INVALID, "%s: indices must be int32 or int64, got %s", n->op->name,
                    mlc_dtype_name(t->dtype));
  return MLC_OK;
}

/* an index value read as int64, negative values wrapped by dim, clamped into [0, dim) */
static Expr *wrap_index(Arena *A, Expr *raw, int64_t dim) {
  Expr *i = tir_cast(A, MLC_I64, raw);
  i = tir_select(A, tir_bin(A, E_LT, i, tir_idx(A, 0)), tir_add(A, i, tir_idx(A, dim)), i);
  return tir_bin(A, E_MIN, tir_bin(A, E_MAX, i, tir_idx(A, 0)), tir_idx(A, dim > 0 ? dim - 1 : 0));
}

/* ---------------------------------------------------------------- take (ONNX Gather) */

static mlc_status take_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *ix = &n->inputs[1]->type;
  mlc_status st;
  if ((st = check_data(n, x->dtype, d)) || (st = check_indices(n, ix, d))) return st;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "take: axis %lld out of range for rank %d", (long long)axis, x->ndim);
  int r = x->ndim - 1 + ix->ndim;
  if (r > MLC_MAX_DIMS) return diag_set(d, MLC_ERR_UNSUPPORTED, "take: output rank %d above %d", r, MLC_MAX_DIMS);
  TensorType o = {.dtype = x->dtype, .ndim = r};
  int k = 0;
  for (int i = 0; i < axis; i++) o.dims[k++] = x->dims[i];
  for (int i = 0; i < ix->ndim; i++) o.dims[k++] = ix->dims[i];
  for (int i = (int)axis + 1; i < x->ndim; i++) o.dims[k++] = x->dims[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct TakeCtx {
  TeTensor *x, *ix;
  int axis;
} TakeCtx;

static Expr *take_body(TeCtx *c, Expr **idx, void *user) {
  TakeCtx *k = user;
  Arena *A = c->arena;
  Expr *xi[MLC_MAX_DIMS];
  int q = k->ix->ndim;
  for (int i = 0; i < k->axis; i++) xi[i] = idx[i];
  Expr *raw = te_read(c, k->ix, q, idx + k->axis);
  xi[k->axis] = wrap_index(A, raw, k->x->shape[k->axis]);
  for (int i = k->axis + 1; i < k->x->ndim; i++) xi[i] = idx[i - 1 + q];
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status take_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  TakeCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->ix = ins[1];
  k->axis = (int)ir_attr_int(n, "axis", 0);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "take", "injective", o->dtype, o->ndim, o->dims, take_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- gather (ONNX GatherElements) */

static mlc_status gather_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *ix = &n->inputs[1]->type;
  mlc_status st;
  if ((st = check_data(n, x->dtype, d)) || (st = check_indices(n, ix, d))) return st;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "gather: axis %lld out of range for rank %d", (long long)axis, x->ndim);
  if (ix->ndim != x->ndim) return diag_set(d, MLC_ERR_INVALID, "gather: indices rank %d, data rank %d", ix->ndim, x->ndim);
  for (int i = 0; i < x->ndim; i++)
    if (i != axis && ix->dims[i] > x->dims[i])
      return diag_set(d, MLC_ERR_INVALID, "gather: indices dim %d larger than the data's", i);
  TensorType o = *ix;
  o.dtype = x->dtype;
  n->outputs[0]->type = o;
  return MLC_OK;
}

static Expr *gather_body(TeCtx *c, Expr **idx, void *user) {
  TakeCtx *k = user;
  Expr *xi[MLC_MAX_DIMS];
  memcpy(xi, idx, sizeof(Expr *) * (size_t)k->x->ndim);
  xi[k->axis] = wrap_index(c->arena, te_read(c, k->ix, k->ix->ndim, idx), k->x->shape[k->axis]);
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status gather_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  TakeCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->ix = ins[1];
  k->axis = (int)ir_attr_int(n, "axis", 0);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "gather", "injective", o->dtype, o->ndim, o->dims, gather_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- gather_nd (ONNX GatherND) */

static mlc_status gather_nd_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *ix = &n->inputs[1]->type;
  mlc_status st;
  if ((st = check_data(n, x->dtype, d)) || (st = check_indices(n, ix, d))) return st;
  int64_t b = ir_attr_int(n, "batch_dims", 0);
  if (ix->ndim < 1) return diag_set(d, MLC_ERR_INVALID, "gather_nd: indices must have rank >= 1");
  int64_t m = ix->dims[ix->ndim - 1];
  if (b < 0 || b >= ix->ndim || b >= x->ndim || m < 1 || b + m > x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "gather_nd: batch_dims %lld / index length %lld do not fit data rank %d",
                    (long long)b, (long long)m, x->ndim);
  for (int i = 0; i < b; i++)
    if (ix->dims[i] != x->dims[i]) return diag_set(d, MLC_ERR_INVALID, "gather_nd: batch dim %d differs", i);
  int r = ix->ndim - 1 + x->ndim - (int)(b + m);
  if (r > MLC_MAX_DIMS) return diag_set(d, MLC_ERR_UNSUPPORTED, "gather_nd: output rank %d", r);
  TensorType o = {.dtype = x->dtype, .ndim = r};
  int k = 0;
  for (int i = 0; i < ix->ndim - 1; i++) o.dims[k++] = ix->dims[i];
  for (int i = (int)(b + m); i < x->ndim; i++) o.dims[k++] = x->dims[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}

typedef struct GatherNdCtx {
  TeTensor *x, *ix;
  int b;
} GatherNdCtx;

static Expr *gather_nd_body(TeCtx *c, Expr **idx, void *user) {
  GatherNdCtx *k = user;
  Arena *A = c->arena;
  int q = k->ix->ndim, m = (int)k->ix->shape[q - 1];
  Expr *xi[MLC_MAX_DIMS], *ii[MLC_MAX_DIMS];
  for (int i = 0; i < k->b; i++) xi[i] = idx[i];
  memcpy(ii, idx, sizeof(Expr *) * (size_t)(q - 1));
  for (int j = 0; j < m; j++) {
    ii[q - 1] = tir_idx(A, j);
    xi[k->b + j] = wrap_index(A, te_read(c, k->ix, q, ii), k->x->shape[k->b + j]);
  }
  for (int i = k->b + m; i < k->x->ndim; i++) xi[i] = idx[q - 1 + i - (k->b + m)];
  return te_read(c, k->x, k->x->ndim, xi);
}

static mlc_status gather_nd_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  GatherNdCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->ix = ins[1];
  k->b = (int)ir_attr_int(n, "batch_dims", 0);
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "gather_nd", "injective", o->dtype, o->ndim, o->dims, gather_nd_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- scatters (extern ops) */

typedef enum ScatterRed { SR_NONE, SR_ADD, SR_MUL, SR_MAX, SR_MIN } ScatterRed;

static mlc_status scatter_red(const Node *n, ScatterRed *r, Diag *d) {
  const char *s = ir_attr_string(n, "reduction", "none");
  if (!strcmp(s, "none")) *r = SR_NONE;
  else if (!strcmp(s, "add")) *r = SR_ADD;
  else if (!strcmp(s, "mul")) *r = SR_MUL;
  else if (!strcmp(s, "max")) *r = SR_MAX;
  else if (!strcmp(s, "min")) *r = SR_MIN;
  else return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: reduction '%s' is not supported", n->op->name, s);
  return MLC_OK;
}

static Expr *combine(Arena *A, ScatterRed r, Expr *old, Expr *upd) {
  static const ExprKind kinds[] = {E_ADD, E_ADD, E_MUL, E_MAX, E_MIN};
  if (r == SR_NONE) return upd;
  mlc_dtype t = old->dtype;
  if (t == MLC_BOOL) {
    /* bool: add = or, mul = and, max = or, min = and */
    return tir_bin(A, r == SR_ADD || r == SR_MAX ? E_OR : E_AND, old, upd);
  }
  if (t == MLC_F16 || t == MLC_BF16)
    return tir_cast(A, t, tir_bin(A, kinds[r], tir_cast(A, MLC_F32, old), tir_cast(A, MLC_F32, upd)));
  return tir_bin(A, kinds[r], old, upd);
}

/* out = data, as a loop nest */
static Stmt *copy_stmt(Arena *A, Buffer *data, Buffer *out) {
  Expr *iv[MLC_MAX_DIMS];
  Var *v[MLC_MAX_DIMS];
  for (int i = 0; i < out->ndim; i++) {
    v[i] = tir_var(A, arena_printf(A, "c%d", i), MLC_I64);
    iv[i] = tir_varref(A, v[i]);
  }
  Stmt *s = tir_store(A, out, out->ndim, iv, tir_load(A, data, data->ndim, iv));
  for (int i = out->ndim - 1; i >= 0; i--) s = tir_for(A, v[i], tir_idx(A, 0), tir_idx(A, out->shape[i]), FOR_SERIAL, s);
  return s;
}

typedef struct ScatterCtx {
  int axis;
  ScatterRed red;
} ScatterCtx;

static mlc_status scatter_elements_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *ix = &n->inputs[1]->type, *u = &n->inputs[2]->type;
  mlc_status st;
  ScatterRed r;
  if ((st = check_data(n, x->dtype, d)) || (st = check_indices(n, ix, d)) || (st = scatter_red(n, &r, d))) return st;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (axis < 0 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "scatter_elements: axis %lld out of range", (long long)axis);
  if (u->dtype != x->dtype || u->ndim != ix->ndim || ix->ndim != x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "scatter_elements: updates must match indices and data in rank and dtype");
  for (int i = 0; i < ix->ndim; i++)
    if (ix->dims[i] != u->dims[i] || (i != axis && ix->dims[i] > x->dims[i]))
      return diag_set(d, MLC_ERR_INVALID, "scatter_elements: indices/updates dim %d does not fit", i);
  n->outputs[0]->type = *x;
  return MLC_OK;
}

static Stmt *scatter_elements_body(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  ScatterCtx *k = user;
  Arena *A = c->arena;
  Buffer *data = ins[0], *ind = ins[1], *upd = ins[2], *out = outs[0];
  Expr *u[MLC_MAX_DIMS], *oi[MLC_MAX_DIMS];
  Var *v[MLC_MAX_DIMS];
  for (int i = 0; i < upd->ndim; i++) {
    v[i] = tir_var(A, arena_printf(A, "u%d", i), MLC_I64);
    u[i] = tir_varref(A, v[i]);
  }
  memcpy(oi, u, sizeof(Expr *) * (size_t)upd->ndim);
  oi[k->axis] = wrap_index(A, tir_load(A, ind, ind->ndim, u), out->shape[k->axis]);
  Stmt *s = tir_store(A, out, out->ndim, oi, combine(A, k->red, tir_load(A, out, out->ndim, oi), tir_load(A, upd, upd->ndim, u)));
  for (int i = upd->ndim - 1; i >= 0; i--) s = tir_for(A, v[i], tir_idx(A, 0), tir_idx(A, upd->shape[i]), FOR_SERIAL, s);
  return tir_seq2(A, copy_stmt(A, data, out), s);
}

static mlc_status scatter_elements_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ScatterCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = scatter_red(n, &k->red, d);
  if (st) return st;
  k->axis = (int)ir_attr_int(n, "axis", 0);
  te_extern(c, "scatter_elements", "scatter", 3, ins, 1, ins[0], scatter_elements_body, k, outs);
  return MLC_OK;
}

static mlc_status scatter_nd_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *ix = &n->inputs[1]->type, *u = &n->inputs[2]->type;
  mlc_status st;
  ScatterRed r;
  if ((st = check_data(n, x->dtype, d)) || (st = check_indices(n, ix, d)) || (st = scatter_red(n, &r, d))) return st;
  if (ix->ndim < 1) return diag_set(d, MLC_ERR_INVALID, "scatter_nd: indices must have rank >= 1");
  int q = ix->ndim;
  int64_t m = ix->dims[q - 1];
  if (m < 1 || m > x->ndim) return diag_set(d, MLC_ERR_INVALID, "scatter_nd: index length %lld for data rank %d", (long long)m, x->ndim);
  bool ok = u->dtype == x->dtype && u->ndim == q - 1 + x->ndim - (int)m;
  for (int i = 0; ok && i < q - 1; i++) ok = u->dims[i] == ix->dims[i];
  for (int i = (int)m; ok && i < x->ndim; i++) ok = u->dims[q - 1 + i - m] == x->dims[i];
  if (!ok) return diag_set(d, MLC_ERR_INVALID, "scatter_nd: updates shape must be indices.shape[:-1] + data.shape[k:]");
  n->outputs[0]->type = *x;
  return MLC_OK;
}

static Stmt *scatter_nd_body(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  ScatterCtx *k = user;
  Arena *A = c->arena;
  Buffer *data = ins[0], *ind = ins[1], *upd = ins[2], *out = outs[0];
  int q = ind->ndim, m = (int)ind->shape[q - 1];
  Expr *u[MLC_MAX_DIMS], *oi[MLC_MAX_DIMS], *ii[MLC_MAX_DIMS];
  Var *v[MLC_MAX_DIMS];
  for (int i = 0; i < upd->ndim; i++) {
    v[i] = tir_var(A, arena_printf(A, "u%d", i), MLC_I64);
    u[i] = tir_varref(A, v[i]);
  }
  memcpy(ii, u, sizeof(Expr *) * (size_t)(q - 1));
  for (int j = 0; j < m; j++) {
    ii[q - 1] = tir_idx(A, j);
    oi[j] = wrap_index(A, tir_load(A, ind, q, ii), out->shape[j]);
  }
  for (int i = m; i < out->ndim; i++) oi[i] = u[q - 1 + i - m];
  Stmt *s = tir_store(A, out, out->ndim, oi, combine(A, k->red, tir_load(A, out, out->ndim, oi), tir_load(A, upd, upd->ndim, u)));
  for (int i = upd->ndim - 1; i >= 0; i--) s = tir_for(A, v[i], tir_idx(A, 0), tir_idx(A, upd->shape[i]), FOR_SERIAL, s);
  return tir_seq2(A, copy_stmt(A, data, out), s);
}

static mlc_status scatter_nd_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  ScatterCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = scatter_red(n, &k->red, d);
  if (st) return st;
  te_extern(c, "scatter_nd", "scatter", 3, ins, 1, ins[0], scatter_nd_body, k, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- tensor_scatter (ONNX TensorScatter) */

/* A KV-cache update: past [B, .., M, ..] (M at `axis` >= 1), update [B, .., L, ..] (L <= M), optional int
 * write_indices [B] (0 when absent). Batch b's update rows land at positions w[b] .. w[b]+L-1 of the axis
 * (circular: modulo M). Written as the inverse map, an injective compute: output position j takes update row
 * s = j - w[b] (circular: floormod(j - w[b], M)) when 0 <= s < L, else the past value; rows a linear write
 * would put past M are dropped. The update read is clamped into [0, L) since both select arms are evaluated. */

static mlc_status tensor_scatter_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *u = &n->inputs[1]->type;
  mlc_status st;
  if ((st = check_data(n, x->dtype, d))) return st;
  int64_t axis = ir_attr_int(n, "axis", 0);
  if (x->ndim < 2 || axis < 1 || axis >= x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "tensor_scatter: axis %lld must be a non-batch axis of a rank-%d cache",
                    (long long)axis, x->ndim);
  if (u->dtype != x->dtype || u->ndim != x->ndim)
    return diag_set(d, MLC_ERR_INVALID, "tensor_scatter: update must have the cache's rank and dtype");
  for (int i = 0; i < x->ndim; i++)
    if (i == axis ? u->dims[i] > x->dims[i] : u->dims[i] != x->dims[i])
      return diag_set(d, MLC_ERR_INVALID, "tensor_scatter: update dim %d (%lld) does not fit the cache's (%lld)", i,
                      (long long)u->dims[i], (long long)x->dims[i]);
  if (n->ninputs > 2 && n->inputs[2]) {
    const TensorType *w = &n->inputs[2]->type;
    if ((st = check_indices(n, w, d))) return st;
    if (w->ndim != 1 || w->dims[0] != x->dims[0])
      return diag_set(d, MLC_ERR_INVALID, "tensor_scatter: write_indices must have shape [%lld]", (long long)x->dims[0]);
  }
  n->outputs[0]->type = *x;
  return MLC_OK;
}

typedef struct TensorScatterCtx {
  TeTensor *past, *update, *write; /* write: NULL when absent */
  int axis;
  bool circular;
} TensorScatterCtx;

static Expr *tensor_scatter_body(TeCtx *c, Expr **idx, void *user) {
  TensorScatterCtx *k = user;
  Arena *A = c->arena;
  int64_t max_len = k->past->shape[k->axis], len = k->update->shape[k->axis];
  if (len == 0) return te_read(c, k->past, k->past->ndim, idx);
  Expr *pos = idx[k->axis];
  Expr *w = k->write ? tir_cast(A, MLC_I64, te_read(c, k->write, 1, idx)) : tir_idx(A, 0);
  Expr *row = tir_sub(A, pos, w);
  if (k->circular) row = tir_bin(A, E_FLOORMOD, row, tir_idx(A, max_len));
  Expr *hit = tir_bin(A, E_AND, tir_bin(A, E_GE, row, tir_idx(A, 0)), tir_bin(A, E_LT, row, tir_idx(A, len)));
  Expr *ui[MLC_MAX_DIMS];
  memcpy(ui, idx, sizeof(Expr *) * (size_t)k->past->ndim);
  ui[k->axis] = tir_bin(A, E_MIN, tir_bin(A, E_MAX, row, tir_idx(A, 0)), tir_idx(A, len - 1));
  return tir_select(A, hit, te_read(c, k->update, k->update->ndim, ui), te_read(c, k->past, k->past->ndim, idx));
}

static mlc_status tensor_scatter_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  TensorScatterCtx *k = arena_alloc(c->arena, sizeof *k);
  k->past = ins[0];
  k->update = ins[1];
  k->write = n->ninputs > 2 ? ins[2] : NULL;
  k->axis = (int)ir_attr_int(n, "axis", 0);
  k->circular = ir_attr_int(n, "circular", 0) != 0;
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "tensor_scatter", "injective", o->dtype, o->ndim, o->dims, tensor_scatter_body, k);
  MLC_CHECK(d, outs[0] != NULL, MLC_ERR_INTERNAL);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_index[] = {
    /* name             pattern         min max nout infer                  compute  dyn */
    {"take", PAT_INJECTIVE, 2, 2, 1, take_infer, take_compute, DYN_TAKE},
    {"gather", PAT_INJECTIVE, 2, 2, 1, gather_infer, gather_compute},
    {"gather_nd", PAT_INJECTIVE, 2, 2, 1, gather_nd_infer, gather_nd_compute, DYN_GATHER_ND},
    {"scatter_elements", PAT_OPAQUE, 3, 3, 1, scatter_elements_infer, scatter_elements_compute},
    {"scatter_nd", PAT_OPAQUE, 3, 3, 1, scatter_nd_infer, scatter_nd_compute},
    {"tensor_scatter", PAT_INJECTIVE, 2, 3, 1, tensor_scatter_infer, tensor_scatter_compute},
    {0},
};
