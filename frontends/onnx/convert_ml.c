/* ONNX converters of the ml family (see families.def): the ai.onnx.ml operators that are plain tensor
 * arithmetic (scikit-learn pipelines converted by skl2onnx end in them):
 *   Binarizer(X; threshold) = X > threshold ? 1 : 0, in X's type;
 *   ArrayFeatureExtractor(X, Y) = X's elements at the int64 indices Y along the last axis (a 1-D X gives
 *     [1, len(Y)], as ONNX Runtime does).
 *   TreeEnsemble (opset 5), TreeEnsembleRegressor and TreeEnsembleClassifier (1, 3) as tensor ops, see
 *     forest_eval;
 *   TfIdfVectorizer (default domain, 9: the n-gram featurizer of the same pipelines) with an integer pool.
 * The string ops (LabelEncoder's string keys, string class labels, ...) are not supported. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "frontends/onnx/onnx.h"

static mlc_status binarizer(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  mlc_dtype t = x->type.dtype;
  Value *th = onnx_scalar(cx, n, "threshold", t, onnx_attr_float(n, "threshold", 0));
  Value *above = th ? onnx_binary(cx, n, "greater", x, th, d) : NULL;
  if (!above) return d->status ? d->status : MLC_ERR_INTERNAL;
  Node *nd = onnx_emit(cx, n, "cast", 1, &above, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "dtype", t);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status array_feature_extractor(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *y = n->inputs[1];
  if (y->type.dtype != MLC_I64)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the indices must be int64", n->op_type);
  Value *ins[2] = {x, y};
  if (x->type.ndim == 1) { /* [1, K] */
    Node *r = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
    int64_t shape[2] = {1, x->type.dims[0]};
    if (r) ir_set_ints(onnx_graph(cx), r, "newshape", shape, 2);
    if ((st = onnx_finish_one(cx, n, r, &ins[0], d))) return st;
  }
  if (y->type.ndim != 1) { /* the indices flattened, as ONNX Runtime reads them */
    Node *r = onnx_emit(cx, n, "reshape", 1, &y, 1, d);
    int64_t len = tt_numel(&y->type);
    if (r) ir_set_ints(onnx_graph(cx), r, "newshape", &len, 1);
    if ((st = onnx_finish_one(cx, n, r, &ins[1], d))) return st;
  }
  Node *nd = onnx_emit(cx, n, "take", 2, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", ins[0]->type.ndim - 1);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

/* ---------------------------------------------------------------- TreeEnsemble (ai.onnx.ml 5) */

enum { MODE_LEQ, MODE_LT, MODE_GTE, MODE_GT, MODE_EQ, MODE_NEQ, MODE_MEMBER, NMODES };

typedef struct Trees {
  OnnxCtx *cx;
  const OnnxNode *n;
  Diag *d;
  Arena *a;
  mlc_dtype t;     /* X's float type: splits, weights and the result are computed in it */
  int64_t N, T;    /* samples, trees */
} Trees;

static Value *tr_op(Trees *k, const char *op, int nin, Value **ins, const char *attr, int64_t v) {
  return onnx_apply(k->cx, k->n, op, nin, ins, attr, v, k->d);
}

/* the reduction op (sum, min, max) of v over axis, the axis dropped */
static Value *tr_reduce(Trees *k, const char *op, Value *v, int64_t axis) {
  Node *nd = v ? onnx_emit(k->cx, k->n, op, 1, &v, 1, k->d) : NULL;
  if (nd) {
    ir_set_ints(onnx_graph(k->cx), nd, "axis", &axis, 1);
    ir_set_int(onnx_graph(k->cx), nd, "keepdims", 0);
  }
  Value *y = NULL;
  return !nd || onnx_finish_one(k->cx, k->n, nd, &y, k->d) ? NULL : y;
}

static Value *tr_bin(Trees *k, const char *op, Value *a, Value *b) {
  return a && b ? onnx_binary(k->cx, k->n, op, a, b, k->d) : NULL;
}

/* a constant [len] (or [rows, len / rows]) of dtype t from doubles */
static Value *tr_const(Trees *k, const char *what, mlc_dtype t, int64_t rows, int64_t len, const double *v) {
  TensorType tt = {.dtype = t, .ndim = rows ? 2 : 1, .dims = {rows ? rows : len, rows ? len / rows : 0}};
  size_t es = (size_t)mlc_dtype_size(t);
  unsigned char *buf = arena_alloc(k->a, es * (size_t)(len ? len : 1));
  for (int64_t i = 0; i < len; i++) {
    switch (t) {
      case MLC_I64: ((int64_t *)buf)[i] = (int64_t)v[i]; break;
      case MLC_I32: ((int32_t *)buf)[i] = (int32_t)v[i]; break;
      case MLC_BOOL: buf[i] = v[i] != 0; break;
      case MLC_F64: ((double *)buf)[i] = v[i]; break;
      default: ((float *)buf)[i] = (float)v[i]; break;
    }
  }
  return onnx_const(k->cx, arena_printf(k->a, "%s_%s", k->n->name, what), tt, buf);
}

/* a float list attribute given as a tensor (float or double): its values, or -1 */
static int64_t tensor_doubles(Trees *k, const char *name, double **out) {
  Value *v = onnx_attr_tensor(k->cx, k->n, name, k->d);
  if (!v) return -1;
  int64_t len = tt_numel(&v->type);
  double *o = arena_alloc(k->a, sizeof(double) * (size_t)(len ? len : 1));
  for (int64_t i = 0; i < len; i++) {
    switch (v->type.dtype) {
      case MLC_F64: o[i] = ((const double *)v->data)[i]; break;
      case MLC_F32: o[i] = ((const float *)v->data)[i]; break;
      case MLC_U8: o[i] = ((const uint8_t *)v->data)[i]; break; /* nodes_modes */
      case MLC_I32: o[i] = ((const int32_t *)v->data)[i]; break;
      default: o[i] = NAN; break;
    }
  }
  *out = o;
  return len;
}

static int64_t ints(Trees *k, const char *name, int64_t **out) {
  int64_t cnt = onnx_attr_ints(k->n, name, NULL, 0);
  if (cnt < 0) return -1;
  *out = arena_alloc(k->a, sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
  onnx_attr_ints(k->n, name, *out, (int)cnt);
  return cnt;
}

/* A tree ensemble as the lowering takes it: positions 0..nn-1 are the internal nodes, nn.. the leaves; per
 * position the feature, split, mode, missing-goes-true flag and the next position on true / false (a leaf
 * points at itself); per leaf its value for each target (fill where it gives none); the trees' start
 * positions; the aggregation (0 AVERAGE, 1 SUM, 2 MIN, 3 MAX), post transform (0 NONE, 1 SOFTMAX, 2 LOGISTIC)
 * and base values added before it (or NULL). */
typedef struct Forest {
  int64_t nn, nl, ntrees, targets, kmax;
  double *feat, *split, *mode, *miss, *tnext, *fnext; /* [nn + nl] */
  double *members;                                    /* [nn + nl, kmax] NaN-padded, or NULL */
  double *leaf;                                       /* [nl, targets] */
  int64_t *roots;                                     /* start positions [ntrees] */
  bool used[NMODES], any_miss, none_is_zero;          /* none_is_zero: a MIN / MAX no tree fed is 0 */
  int64_t agg, post;
  double *base;
} Forest;

static double agg_fill(const Forest *f, mlc_dtype t) {
  double big = t == MLC_F32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
  return f->agg == 2 ? big : f->agg == 3 ? -big : 0.0;
}

static Forest *forest_new(Trees *k, int64_t nn, int64_t nl, int64_t ntrees, int64_t targets) {
  Forest *f = arena_alloc(k->a, sizeof *f);
  memset(f, 0, sizeof *f);
  int64_t total = nn + nl;
  f->nn = nn, f->nl = nl, f->ntrees = ntrees, f->targets = targets;
  double *p = arena_alloc(k->a, sizeof(double) * (size_t)total * 6);
  memset(p, 0, sizeof(double) * (size_t)total * 6);
  f->feat = p, f->split = p + total, f->mode = p + 2 * total, f->miss = p + 3 * total;
  f->tnext = p + 4 * total, f->fnext = p + 5 * total;
  for (int64_t i = nn; i < total; i++) f->tnext[i] = f->fnext[i] = (double)i;
  f->leaf = arena_alloc(k->a, sizeof(double) * (size_t)(nl * targets));
  f->roots = arena_alloc(k->a, sizeof(int64_t) * (size_t)ntrees);
  return f;
}

/* the longest path of internal nodes from any root (a cycle is an error), or -1 */
static int64_t forest_depth(Trees *k, const Forest *f) {
  int64_t depth = 0, cap = 2 * (f->nn + 1), *stack = arena_alloc(k->a, sizeof(int64_t) * (size_t)cap);
  for (int64_t t = 0; t < f->ntrees; t++) {
    if (f->roots[t] >= f->nn) continue; /* a tree that is one leaf */
    int64_t sp = 0;
    stack[sp++] = f->roots[t];
    stack[sp++] = 1;
    while (sp) {
      int64_t dep = stack[--sp], i = stack[--sp];
      if (dep > f->nn) {
        onnx_error(k->cx, k->n, k->d, MLC_ERR_INVALID, "%s: the nodes of tree %lld form a cycle", k->n->op_type,
                   (long long)t);
        return -1;
      }
      if (dep > depth) depth = dep;
      int64_t kids[2] = {(int64_t)f->tnext[i], (int64_t)f->fnext[i]};
      for (int c = 0; c < 2; c++)
        if (kids[c] < f->nn && sp + 2 <= cap) {
          stack[sp++] = kids[c];
          stack[sp++] = dep + 1;
        }
    }
  }
  return depth;
}

/* [N, 1..] reshape of v */
static Value *tr_reshape(Trees *k, Value *v, int r, const int64_t *dims) {
  if (!v) return NULL;
  Node *nd = onnx_emit(k->cx, k->n, "reshape", 1, &v, 1, k->d);
  if (nd) ir_set_ints(onnx_graph(k->cx), nd, "newshape", dims, r);
  Value *y = NULL;
  return onnx_finish_one(k->cx, k->n, nd, &y, k->d) ? NULL : y;
}

/* The lowering: the position C [N, trees] starts at the roots; each of the depth steps reads X[n, feature[C]]
 * (GatherElements), compares it with split[C] by mode[C] (set membership: any of members[C]; a NaN also goes
 * true where missing_value_tracks_true) and moves C to the true or the false child; then the leaves' target
 * values [N, trees, targets] are aggregated over the trees, the base values added and the post transform
 * applied. */
static Value *forest_eval(Trees *k, const Forest *f, Value *x) {
  OnnxCtx *cx = k->cx;
  const OnnxNode *n = k->n;
  int64_t total = f->nn + f->nl, depth = forest_depth(k, f);
  if (depth < 0) return NULL;
  double *start = arena_alloc(k->a, sizeof(double) * (size_t)(k->N * f->ntrees));
  for (int64_t s = 0; s < k->N; s++)
    for (int64_t t = 0; t < f->ntrees; t++) start[s * f->ntrees + t] = (double)f->roots[t];
  Value *feats = tr_const(k, "features", MLC_I64, 0, total, f->feat);
  Value *spl = tr_const(k, "splits", k->t, 0, total, f->split);
  Value *mode = tr_const(k, "modes", MLC_I32, 0, total, f->mode);
  Value *tnext = tr_const(k, "true_next", MLC_I64, 0, total, f->tnext);
  Value *fnext = tr_const(k, "false_next", MLC_I64, 0, total, f->fnext);
  Value *miss = f->any_miss ? tr_const(k, "missing_true", MLC_BOOL, 0, total, f->miss) : NULL;
  Value *mem = f->members ? tr_const(k, "members", k->t, total, total * f->kmax, f->members) : NULL;
  Value *pos = tr_const(k, "start", MLC_I64, k->N, k->N * f->ntrees, start);
  static const char *const cmp[NMODES] = {"less_equal", "less", "greater_equal", "greater", "equal", "equal", ""};
  int64_t s3[3] = {k->N, k->T, 1};
  for (int64_t step = 0; step < depth && pos; step++) {
    Value *ti[2] = {feats, pos}, *fe = tr_op(k, "take", 2, ti, "axis", 0);
    Value *gi[2] = {x, fe}, *xv = tr_op(k, "gather", 2, gi, "axis", 1);
    Value *si[2] = {spl, pos}, *sv = tr_op(k, "take", 2, si, "axis", 0);
    Value *mi[2] = {mode, pos}, *mv = tr_op(k, "take", 2, mi, "axis", 0), *cond = NULL;
    for (int m = 0; m < NMODES; m++) {
      if (!f->used[m]) continue;
      Value *c;
      if (m == MODE_MEMBER) { /* any(members[C] == x) */
        Value *mr[2] = {mem, pos}, *rows = tr_op(k, "take", 2, mr, "axis", 0);
        Value *hit = tr_bin(k, "equal", rows, tr_reshape(k, xv, 3, s3)), *ci[1] = {hit};
        Value *cnt = tr_op(k, "cast", 1, ci, "dtype", MLC_I32), *ri[1] = {cnt};
        Value *any = tr_reduce(k, "max", ri[0], 2);
        c = tr_bin(k, "greater", any, onnx_scalar(cx, n, "zero", MLC_I32, 0));
      } else {
        c = tr_bin(k, cmp[m], xv, sv);
        if (m == MODE_NEQ) { /* a NaN is unequal to everything, as in ONNX's reference */
          Value *ci[1] = {c};
          c = tr_op(k, "logical_not", 1, ci, NULL, 0);
        }
      }
      if (!cond) { /* the first mode used; each later one where the position has it */
        cond = c;
        continue;
      }
      Value *is = tr_bin(k, "equal", mv, onnx_scalar(cx, n, "mode", MLC_I32, m)), *wi[3] = {is, c, cond};
      cond = tr_op(k, "where", 3, wi, NULL, 0);
    }
    if (miss) {
      Value *ni[1] = {xv}, *nan = tr_op(k, "isnan", 1, ni, NULL, 0);
      Value *mm[2] = {miss, pos}, *mt = tr_op(k, "take", 2, mm, "axis", 0);
      cond = tr_bin(k, "logical_or", cond, tr_bin(k, "logical_and", nan, mt));
    }
    Value *a1[2] = {tnext, pos}, *a2[2] = {fnext, pos};
    Value *wi[3] = {cond, tr_op(k, "take", 2, a1, "axis", 0), tr_op(k, "take", 2, a2, "axis", 0)};
    pos = tr_op(k, "where", 3, wi, NULL, 0);
  }
  /* the leaves' rows [N, trees, targets] (positions are leaves now) aggregated over the trees */
  double fill = agg_fill(f, k->t);
  double *rows = arena_alloc(k->a, sizeof(double) * (size_t)(total * f->targets));
  for (int64_t i = 0; i < total * f->targets; i++)
    rows[i] = i < f->nn * f->targets ? fill : f->leaf[i - f->nn * f->targets];
  Value *li[2] = {tr_const(k, "leaf_values", k->t, total, total * f->targets, rows), pos};
  Value *vals = tr_op(k, "take", 2, li, "axis", 0);
  Value *y = tr_reduce(k, f->agg == 2 ? "min" : f->agg == 3 ? "max" : "sum", vals, 1);
  if (!y) return NULL;
  if (f->agg == 0) y = tr_bin(k, "divide", y, onnx_scalar(cx, n, "trees", k->t, (double)f->ntrees));
  if (f->none_is_zero && (f->agg == 2 || f->agg == 3)) { /* no tree gave the target a value: 0 */
    Value *none = tr_bin(k, "equal", y, onnx_scalar(cx, n, "fill", k->t, fill));
    Value *wi[3] = {none, onnx_scalar(cx, n, "zero", k->t, 0), y};
    y = tr_op(k, "where", 3, wi, NULL, 0);
  }
  if (f->base) y = tr_bin(k, "add", y, tr_const(k, "base_values", k->t, 0, f->targets, f->base));
  if (y && f->post == 2) {
    Value *yi[1] = {y};
    y = tr_op(k, "sigmoid", 1, yi, NULL, 0);
  } else if (y && f->post == 1) {
    Value *yi[1] = {y}, *sm = NULL;
    if (onnx_convert_as(cx, n, "Softmax", 13, false, 1, yi, &sm, k->d)) return NULL;
    y = sm;
  }
  return y;
}

static mlc_status forest_input(OnnxCtx *cx, const OnnxNode *n, Diag *d, Trees *k) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  *k = (Trees){cx, n, d, onnx_graph(cx)->arena, x->type.dtype, x->type.ndim == 2 ? x->type.dims[0] : 0, 0};
  if ((k->t != MLC_F32 && k->t != MLC_F64) || x->type.ndim != 2)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s needs float or double X [N, F], got rank %d %s", n->op_type,
                      x->type.ndim, mlc_dtype_name(k->t));
  return MLC_OK;
}

/* TreeEnsemble (ai.onnx.ml 5) -> [N, n_targets]: nodes and leaves in their own arrays, one target per leaf,
 * tree_roots; missing targets of MIN / MAX keep the type's extreme, as ONNX's reference has them */
static mlc_status tree_ensemble(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  Trees k;
  mlc_status st = forest_input(cx, n, d, &k);
  if (st) return st;
  Value *x = n->inputs[0];
  int64_t *feat = NULL, *tid = NULL, *fid = NULL, *tleaf = NULL, *fleaf = NULL, *ltarget = NULL, *roots = NULL;
  int64_t *mtt = NULL;
  double *splits = NULL, *modes = NULL, *weights = NULL, *members = NULL;
  int64_t nn = ints(&k, "nodes_featureids", &feat), nl = ints(&k, "leaf_targetids", &ltarget);
  int64_t ntrees = ints(&k, "tree_roots", &roots);
  if (d->status) return d->status;
  if (nn < 1 || nl < 1 || ntrees < 1 || ints(&k, "nodes_truenodeids", &tid) != nn ||
      ints(&k, "nodes_falsenodeids", &fid) != nn || ints(&k, "nodes_trueleafs", &tleaf) != nn ||
      ints(&k, "nodes_falseleafs", &fleaf) != nn || tensor_doubles(&k, "nodes_splits", &splits) != nn ||
      tensor_doubles(&k, "nodes_modes", &modes) != nn || tensor_doubles(&k, "leaf_weights", &weights) != nl ||
      (onnx_has_attr(n, "nodes_missing_value_tracks_true") &&
       ints(&k, "nodes_missing_value_tracks_true", &mtt) != nn))
    return d->status ? d->status
                     : onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the node, leaf and tree attributes disagree in "
                                  "length", n->op_type);
  int64_t nmem = onnx_has_attr(n, "membership_values") ? tensor_doubles(&k, "membership_values", &members) : 0;
  int64_t targets = onnx_attr_int(n, "n_targets", 0), agg = onnx_attr_int(n, "aggregate_function", 1);
  int64_t post = onnx_attr_int(n, "post_transform", 0);
  if (targets < 1 || agg < 0 || agg > 3)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: n_targets %lld, aggregate_function %lld", n->op_type,
                      (long long)targets, (long long)agg);
  if (post != 0 && post != 1 && post != 2)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: post_transform %lld (SOFTMAX_ZERO, PROBIT) is not supported",
                      n->op_type, (long long)post);
  k.T = ntrees;
  Forest *f = forest_new(&k, nn, nl, ntrees, targets);
  f->agg = agg, f->post = post;
  for (int64_t i = 0; i < nn; i++) {
    int64_t m = (int64_t)modes[i];
    if (m < 0 || m >= NMODES || feat[i] < 0 || feat[i] >= x->type.dims[1] || tid[i] < 0 || fid[i] < 0 ||
        tid[i] >= (tleaf[i] ? nl : nn) || fid[i] >= (fleaf[i] ? nl : nn))
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: node %lld: a mode, feature or child out of range", n->op_type,
                        (long long)i);
    f->used[m] = true;
    f->feat[i] = (double)feat[i];
    f->split[i] = splits[i];
    f->mode[i] = (double)m;
    f->tnext[i] = (double)(tleaf[i] ? nn + tid[i] : tid[i]);
    f->fnext[i] = (double)(fleaf[i] ? nn + fid[i] : fid[i]);
    f->miss[i] = mtt && mtt[i];
    f->any_miss |= mtt && mtt[i];
  }
  double fill = agg_fill(f, k.t);
  for (int64_t l = 0; l < nl; l++) {
    if (ltarget[l] < 0 || ltarget[l] >= targets)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: leaf %lld targets %lld of %lld", n->op_type, (long long)l,
                        (long long)ltarget[l], (long long)targets);
    for (int64_t t = 0; t < targets; t++) f->leaf[l * targets + t] = t == ltarget[l] ? weights[l] : fill;
  }
  if (f->used[MODE_MEMBER]) { /* member node j's values, NaN-separated in membership_values, as its row */
    if (nmem < 1)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: set membership nodes without membership_values", n->op_type);
    for (int64_t i = 0, run = 0; i < nmem; i++) {
      run = isnan(members[i]) ? 0 : run + 1;
      if (run > f->kmax) f->kmax = run;
    }
    if (f->kmax < 1) f->kmax = 1;
    f->members = arena_alloc(k.a, sizeof(double) * (size_t)((nn + nl) * f->kmax));
    for (int64_t i = 0; i < (nn + nl) * f->kmax; i++) f->members[i] = NAN;
    int64_t at = 0;
    for (int64_t i = 0; i < nn; i++) {
      if ((int64_t)modes[i] != MODE_MEMBER) continue;
      for (int64_t j = 0; at < nmem && !isnan(members[at]); at++, j++) f->members[i * f->kmax + j] = members[at];
      if (at++ >= nmem) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: too few membership_values", n->op_type);
    }
  }
  for (int64_t t = 0; t < ntrees; t++) {
    int64_t r = roots[t];
    if (r < 0 || r >= nn) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: tree root %lld", n->op_type, (long long)r);
    f->roots[t] = tleaf[r] && fleaf[r] && tid[r] == fid[r] ? nn + tid[r] : r; /* a tree that is one leaf */
  }
  Value *y = forest_eval(&k, f, x);
  if (!y) return d->status ? d->status : MLC_ERR_INTERNAL;
  outs[0] = y;
  return MLC_OK;
}

/* the float list attribute `name`, or its _as_tensor form (opset 3), or NULL with *len -1 */
static double *floats_or_tensor(Trees *k, const char *name, int64_t *len) {
  double *v = NULL;
  int cnt = onnx_attr_floats(k->n, name, NULL, 0);
  if (cnt >= 0) {
    v = arena_alloc(k->a, sizeof(double) * (size_t)(cnt ? cnt : 1));
    onnx_attr_floats(k->n, name, v, cnt);
    *len = cnt;
    return v;
  }
  *len = tensor_doubles(k, arena_printf(k->a, "%s_as_tensor", name), &v);
  return *len >= 0 ? v : NULL;
}

static int64_t name_index(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

/* a node's name (tree id, node id) and its attribute entry, sorted to find entries in log time */
typedef struct NodeKey {
  int64_t tree, node, entry;
} NodeKey;

static int node_key_cmp(const void *a, const void *b) {
  const NodeKey *x = a, *y = b;
  if (x->tree != y->tree) return x->tree < y->tree ? -1 : 1;
  return x->node < y->node ? -1 : x->node > y->node;
}

/* the attribute entry named (tree, node) in the sorted keys, or -1 */
static int64_t find_node(const NodeKey *keys, int64_t nn, int64_t tree, int64_t node) {
  NodeKey want = {tree, node, 0};
  const NodeKey *k = bsearch(&want, keys, (size_t)nn, sizeof *keys, node_key_cmp);
  return k ? k->entry : -1;
}

/* The trees of TreeEnsembleRegressor / TreeEnsembleClassifier (ai.onnx.ml 1, 3): nodes named by (tree id,
 * node id), LEAF nodes holding any number of (target, weight) entries in the attributes PREFIX_treeids,
 * PREFIX_nodeids, PREFIX_ids, PREFIX_weights (summed per leaf and target) for `targets` targets; a target a
 * leaf gives nothing has the fill of the aggregation agg. */
static Forest *legacy_forest(Trees *k, const char *prefix, int64_t targets, int64_t agg) {
  OnnxCtx *cx = k->cx;
  const OnnxNode *n = k->n;
  Diag *d = k->d;
  Value *x = n->inputs[0];
  static const char *const modes[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ",
                                      "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
  int64_t *tree = NULL, *node = NULL, *feat = NULL, *tid = NULL, *fid = NULL, *mtt = NULL;
  int64_t *ttree = NULL, *tnode = NULL, *tgt = NULL, nv = 0, nw = 0;
  int64_t nn = ints(k, "nodes_treeids", &tree), ne = ints(k, arena_printf(k->a, "%s_ids", prefix), &tgt);
  const char **ms = arena_alloc(k->a, sizeof(char *) * (size_t)(nn > 0 ? nn : 1));
  double *vals = floats_or_tensor(k, "nodes_values", &nv);
  double *w = floats_or_tensor(k, arena_printf(k->a, "%s_weights", prefix), &nw);
  if (d->status) return NULL;
  if (nn < 1 || ne < 0 || ints(k, "nodes_nodeids", &node) != nn || ints(k, "nodes_featureids", &feat) != nn ||
      ints(k, "nodes_truenodeids", &tid) != nn || ints(k, "nodes_falsenodeids", &fid) != nn ||
      onnx_attr_strings(n, "nodes_modes", ms, (int)nn) != nn || nv != nn ||
      ints(k, arena_printf(k->a, "%s_treeids", prefix), &ttree) != ne ||
      ints(k, arena_printf(k->a, "%s_nodeids", prefix), &tnode) != ne || nw != ne ||
      (onnx_has_attr(n, "nodes_missing_value_tracks_true") &&
       ints(k, "nodes_missing_value_tracks_true", &mtt) != nn)) {
    if (!d->status)
      onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the node and %s attributes disagree in length", n->op_type, prefix);
    return NULL;
  }
  /* positions: internal nodes first, then leaves, in attribute order; pos_of[i] for attribute entry i */
  int64_t *pos_of = arena_alloc(k->a, sizeof(int64_t) * (size_t)nn), ni = 0, nl = 0, ntrees = 0;
  for (int64_t i = 0; i < nn; i++) {
    int64_t m = name_index(ms[i], modes, 8);
    if (m < 0 || m == MODE_MEMBER) {
      onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: node mode '%s' is not supported", n->op_type, ms[i]);
      return NULL;
    }
    pos_of[i] = m == 7 ? -1 - nl++ : ni++;
  }
  NodeKey *keys = arena_alloc(k->a, sizeof(NodeKey) * (size_t)nn);
  for (int64_t i = 0; i < nn; i++) {
    if (pos_of[i] < 0) pos_of[i] = ni + (-1 - pos_of[i]);
    keys[i] = (NodeKey){tree[i], node[i], i};
  }
  qsort(keys, (size_t)nn, sizeof *keys, node_key_cmp);
  for (int64_t i = 0; i < nn; i++) {
    if (i && !node_key_cmp(&keys[i], &keys[i - 1])) {
      onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: node %lld of tree %lld is defined twice", n->op_type,
                 (long long)keys[i].node, (long long)keys[i].tree);
      return NULL;
    }
    ntrees += !i || keys[i].tree != keys[i - 1].tree;
  }
  if (nl < 1) {
    onnx_error(cx, n, d, MLC_ERR_INVALID, "%s has no LEAF node", n->op_type);
    return NULL;
  }
  k->T = ntrees;
  Forest *f = forest_new(k, ni, nl, ntrees, targets);
  bool *is_child = arena_alloc(k->a, (size_t)nn);
  memset(is_child, 0, (size_t)nn);
  for (int64_t i = 0; i < nn; i++) {
    int64_t m = name_index(ms[i], modes, 8), p = pos_of[i];
    if (m == 7) continue;
    int64_t te = find_node(keys, nn, tree[i], tid[i]), fe = find_node(keys, nn, tree[i], fid[i]);
    if (te < 0 || fe < 0 || feat[i] < 0 || feat[i] >= x->type.dims[1]) {
      onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: node %lld of tree %lld: a child or feature out of range",
                 n->op_type, (long long)node[i], (long long)tree[i]);
      return NULL;
    }
    is_child[te] = is_child[fe] = true;
    f->used[m] = true;
    f->feat[p] = (double)feat[i];
    f->split[p] = vals[i];
    f->mode[p] = (double)m;
    f->tnext[p] = (double)pos_of[te];
    f->fnext[p] = (double)pos_of[fe];
    f->miss[p] = mtt && mtt[i];
    f->any_miss |= mtt && mtt[i];
  }
  bool *has = arena_alloc(k->a, (size_t)(nl * targets));
  memset(has, 0, (size_t)(nl * targets));
  memset(f->leaf, 0, sizeof(double) * (size_t)(nl * targets));
  for (int64_t e = 0; e < ne; e++) {
    int64_t q = find_node(keys, nn, ttree[e], tnode[e]);
    if (q < 0 || pos_of[q] < ni || tgt[e] < 0 || tgt[e] >= targets) {
      onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: %s entry %lld names no leaf or a %s id out of range", n->op_type,
                 prefix, (long long)e, prefix);
      return NULL;
    }
    int64_t at = (pos_of[q] - ni) * targets + tgt[e];
    f->leaf[at] += w[e];
    has[at] = true;
  }
  f->agg = agg;
  double fill = agg_fill(f, k->t);
  for (int64_t i = 0; i < nl * targets; i++)
    if (!has[i]) f->leaf[i] = fill;
  /* each tree's root: its entry that is no other's child */
  for (int64_t i = 0, t = 0; i < nn; i++) { /* the keys are grouped by tree, in tree id order */
    if (i && keys[i].tree == keys[i - 1].tree) continue;
    int64_t r = -1;
    for (int64_t j = i; j < nn && keys[j].tree == keys[i].tree && r < 0; j++)
      if (!is_child[keys[j].entry]) r = keys[j].entry;
    if (r < 0) {
      onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: tree %lld has no root", n->op_type, (long long)keys[i].tree);
      return NULL;
    }
    f->roots[t++] = pos_of[r];
  }
  return f;
}

/* TreeEnsembleRegressor (ai.onnx.ml 1, 3) -> [N, n_targets]: aggregate_function and post_transform as strings,
 * base_values added after the aggregation; as ONNX Runtime, a MIN / MAX target no tree gives a value is 0 */
static mlc_status tree_ensemble_regressor(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  Trees k;
  mlc_status st = forest_input(cx, n, d, &k);
  if (st) return st;
  static const char *const aggs[] = {"AVERAGE", "SUM", "MIN", "MAX"};
  static const char *const posts[] = {"NONE", "SOFTMAX", "LOGISTIC"};
  int64_t targets = onnx_attr_int(n, "n_targets", 1), nb = 0;
  int64_t agg = name_index(onnx_attr_string(n, "aggregate_function", "SUM"), aggs, 4);
  int64_t post = name_index(onnx_attr_string(n, "post_transform", "NONE"), posts, 3);
  double *base = floats_or_tensor(&k, "base_values", &nb);
  if (targets < 1 || agg < 0 || post < 0 || (base && nb != targets))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: n_targets %lld, aggregate_function '%s', post_transform "
                      "'%s' or %lld base values are not supported", n->op_type, (long long)targets,
                      onnx_attr_string(n, "aggregate_function", "SUM"), onnx_attr_string(n, "post_transform", "NONE"),
                      (long long)nb);
  Forest *f = legacy_forest(&k, "target", targets, agg);
  if (!f) return d->status ? d->status : MLC_ERR_INTERNAL;
  f->post = post, f->base = base, f->none_is_zero = true;
  Value *y = forest_eval(&k, f, n->inputs[0]);
  if (!y) return d->status ? d->status : MLC_ERR_INTERNAL;
  outs[0] = y;
  return MLC_OK;
}

/* TreeEnsembleClassifier (ai.onnx.ml 1, 3) -> label [N] (classlabels_int64s at the highest score), scores
 * [N, classes]: the class weights summed over the trees, base_values added, post_transform NONE, SOFTMAX or
 * LOGISTIC; equal to ONNX Runtime's for 3 or more classes. String labels and two classes (ONNX Runtime's
 * binary rules differ from the highest score) are not supported. */
static mlc_status tree_ensemble_classifier(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  Trees k;
  mlc_status st = forest_input(cx, n, d, &k);
  if (st) return st;
  static const char *const posts[] = {"NONE", "SOFTMAX", "LOGISTIC"};
  int64_t *labels = NULL, nlab = ints(&k, "classlabels_int64s", &labels), nb = 0;
  int64_t post = name_index(onnx_attr_string(n, "post_transform", "NONE"), posts, 3);
  double *base = floats_or_tensor(&k, "base_values", &nb);
  if (nlab < 1 || onnx_has_attr(n, "classlabels_strings"))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: only int64 class labels are supported (strings are not)",
                      n->op_type);
  if (post < 0 || (base && nb != nlab))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: post_transform '%s' or %lld base values are not supported",
                      n->op_type, onnx_attr_string(n, "post_transform", "NONE"), (long long)nb);
  Forest *f = legacy_forest(&k, "class", nlab, 1);
  if (!f) return d->status ? d->status : MLC_ERR_INTERNAL;
  if (nlab < 3) /* ONNX Runtime decides two classes by rules of its own (a threshold on one score) */
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s with %lld classes is not supported (3 or more are)",
                      n->op_type, (long long)nlab);
  f->post = post, f->base = base;
  Value *scores = forest_eval(&k, f, n->inputs[0]);
  Node *am = scores ? onnx_emit(cx, n, "argmax", 1, &scores, 1, d) : NULL;
  int64_t ax = 1;
  if (am) {
    ir_set_ints(onnx_graph(cx), am, "axis", &ax, 1);
    ir_set_int(onnx_graph(cx), am, "keepdims", 0);
    ir_set_int(onnx_graph(cx), am, "select_last_index", 0);
  }
  Value *best = NULL;
  if (!am || onnx_finish_one(cx, n, am, &best, d)) return d->status ? d->status : MLC_ERR_INTERNAL;
  double *lab = arena_alloc(k.a, sizeof(double) * (size_t)nlab);
  for (int64_t i = 0; i < nlab; i++) lab[i] = (double)labels[i];
  Value *li[2] = {tr_const(&k, "labels", MLC_I64, 0, nlab, lab), best};
  outs[0] = tr_op(&k, "take", 2, li, "axis", 0);
  if (n->noutputs > 1) outs[1] = scores;
  return outs[0] ? MLC_OK : d->status ? d->status : MLC_ERR_INTERNAL;
}

/* ---------------------------------------------------------------- TfIdfVectorizer (9) */

/* an int64 constant [rows, cols] */
static Value *tf_const_i64(Trees *k, const char *what, int64_t rows, int64_t cols, const int64_t *v) {
  TensorType tt = {.dtype = MLC_I64, .ndim = 2, .dims = {rows, cols}};
  int64_t *buf = arena_alloc(k->a, sizeof(int64_t) * (size_t)(rows * cols > 0 ? rows * cols : 1));
  memcpy(buf, v, sizeof(int64_t) * (size_t)(rows * cols));
  return onnx_const(k->cx, arena_printf(k->a, "%s_%s", k->n->name, what), tt, buf);
}

/* TfIdfVectorizer(X) with an integer pool (pool_int64s), X int32 or int64 [C] or [N, C] -> float32 [O] or
 * [N, O], O = max(ngram_indexes) + 1. The n-grams of length n in [min_gram_length, max_gram_length] are counted
 * in every window of n items spaced by a skip distance sd in 1 .. max_skip_count + 1 that lies within a row;
 * unigrams once per item (sd 1 only), as ONNX's reference and ONNX Runtime count them. Per length n, as tensor
 * ops: the windows of X gathered by a constant index [W, n], compared with the pool's n-grams [P, n], all n
 * items equal -> summed over the windows: counts [N, P]. Each pool entry p's value, TF: its count, IDF:
 * weights[p] where its count is positive (1 without weights), TFIDF: count * weights[p], goes to column
 * ngram_indexes[p], entries sharing a column adding up (as ONNX Runtime computes it). IDF with entries sharing
 * a column is refused: ONNX Runtime then keeps the weight of the entry found last in its scan of the row. String
 * pools are not supported (mlc has no string tensors). */
static mlc_status tfidf_vectorizer(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Trees k = {.cx = cx, .n = n, .d = d, .a = onnx_graph(cx)->arena, .t = MLC_F32};
  Value *x = n->inputs[0];
  if (onnx_has_attr(n, "pool_strings"))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: string pools (pool_strings) are not supported",
                      n->op_type);
  if ((x->type.dtype != MLC_I32 && x->type.dtype != MLC_I64) || x->type.ndim < 1 || x->type.ndim > 2)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: X must be an int32 or int64 tensor of rank 1 or 2, not %s of "
                      "rank %d", n->op_type, mlc_dtype_name(x->type.dtype), x->type.ndim);
  static const char *const modes[] = {"TF", "IDF", "TFIDF"};
  int64_t mode = name_index(onnx_attr_string(n, "mode", ""), modes, 3);
  int64_t lo = onnx_attr_int(n, "min_gram_length", 0), hi = onnx_attr_int(n, "max_gram_length", 0);
  int64_t skips = onnx_attr_int(n, "max_skip_count", 0);
  int64_t *counts = NULL, *index = NULL, *pool = NULL;
  int64_t ncounts = ints(&k, "ngram_counts", &counts), nidx = ints(&k, "ngram_indexes", &index);
  int64_t npool = ints(&k, "pool_int64s", &pool);
  int64_t nw = onnx_attr_floats(n, "weights", NULL, 0);
  if (mode < 0 || lo < 1 || hi < lo || skips < 0 || ncounts < 1 || nidx < 1 || npool < 0)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: needs mode TF, IDF or TFIDF, 1 <= min_gram_length <= "
                      "max_gram_length, max_skip_count >= 0, ngram_counts, ngram_indexes and pool_int64s",
                      n->op_type);
  /* the pool: counts[i] is where the (i + 1)-grams start; entry p (pool order) goes to column index[p] */
  int64_t O = 0, P = 0;
  for (int64_t i = 0; i < ncounts; i++) {
    int64_t end = i + 1 < ncounts ? counts[i + 1] : npool;
    if (counts[i] < 0 || end < counts[i] || end > npool || (end - counts[i]) % (i + 1))
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: ngram_counts[%lld] = %lld does not split pool_int64s (%lld "
                        "values) into whole %lld-grams", n->op_type, (long long)i, (long long)counts[i],
                        (long long)npool, (long long)(i + 1));
    P += (end - counts[i]) / (i + 1);
  }
  if (P != nidx)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the pool holds %lld n-grams but ngram_indexes has %lld",
                      n->op_type, (long long)P, (long long)nidx);
  for (int64_t p = 0; p < P; p++) {
    if (index[p] < 0 || index[p] >= (int64_t)1 << 31)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: ngram_indexes[%lld] = %lld is out of range", n->op_type,
                        (long long)p, (long long)index[p]);
    if (index[p] + 1 > O) O = index[p] + 1;
  }
  double *w = NULL;
  if (nw > 0) {
    if (nw != P)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: %lld weights for %lld n-grams", n->op_type, (long long)nw,
                        (long long)P);
    w = arena_alloc(k.a, sizeof(double) * (size_t)nw);
    onnx_attr_floats(n, "weights", w, (int)nw);
  }
  bool flat = x->type.ndim == 1;
  int64_t N = flat ? 1 : x->type.dims[0], C = x->type.dims[flat ? 0 : 1];
  int64_t rows[2] = {N, C};
  Value *xi = flat ? tr_reshape(&k, x, 2, rows) : x;
  if (x->type.dtype != MLC_I64) xi = tr_op(&k, "cast", 1, &xi, "dtype", MLC_I64);

  /* counts per counted pool entry, concatenated over the lengths, then one zero column: [N, used + 1] */
  Value **parts = arena_alloc(k.a, sizeof(Value *) * (size_t)(ncounts + 1));
  int nparts = 0;
  int64_t *col = arena_alloc(k.a, sizeof(int64_t) * (size_t)P); /* column of each pool entry in that, or -1 */
  int64_t used = 0;
  for (int64_t i = 0, p0 = 0; i < ncounts; i++) {
    int64_t len = i + 1, end = i + 1 < ncounts ? counts[i + 1] : npool, pn = (end - counts[i]) / len;
    int64_t maxsd = len == 1 ? 1 : skips + 1, nwin = 0;
    for (int64_t sd = 1; sd <= maxsd; sd++) nwin += C - (len - 1) * sd > 0 ? C - (len - 1) * sd : 0;
    bool counted = len >= lo && len <= hi && pn > 0 && nwin > 0;
    for (int64_t p = 0; p < pn; p++) col[p0 + p] = counted ? used + p : -1;
    p0 += pn;
    if (!counted) continue;
    int64_t *win = arena_alloc(k.a, sizeof(int64_t) * (size_t)(nwin * len)), *at = win;
    for (int64_t sd = 1; sd <= maxsd; sd++)
      for (int64_t s = 0; s + (len - 1) * sd < C; s++)
        for (int64_t j = 0; j < len; j++) *at++ = s + j * sd;
    Value *g = tr_op(&k, "take", 2, (Value *[]){xi, tf_const_i64(&k, "windows", nwin, len, win)}, "axis", 1);
    int64_t gdims[4] = {N, nwin, 1, len};
    Value *eq = tr_bin(&k, "equal", tr_reshape(&k, g, 4, gdims),
                       tf_const_i64(&k, "pool", pn, len, pool + counts[i]));     /* [N, W, pn, len] */
    Value *m = tr_reduce(&k, "min", tr_op(&k, "cast", 1, &eq, "dtype", MLC_F32), 3); /* window == n-gram */
    Value *v = tr_reduce(&k, "sum", m, 1);                                         /* [N, pn] */
    if (mode == 1) /* IDF: present or not */
      v = tr_op(&k, "cast", 1, (Value *[]){tr_bin(&k, "greater", v, onnx_scalar(cx, n, "zero", MLC_F32, 0))},
                "dtype", MLC_F32);
    if (mode > 0 && w) v = tr_bin(&k, "multiply", v, tr_const(&k, "weights", MLC_F32, 0, pn, w + (p0 - pn)));
    if (!(parts[nparts++] = v)) return d->status ? d->status : MLC_ERR_INTERNAL;
    used += pn;
  }
  Value *y;
  if (used == 0) { /* no window can hold a counted n-gram: zeros */
    double *z = arena_alloc(k.a, sizeof(double) * (size_t)(N * O + 1));
    memset(z, 0, sizeof(double) * (size_t)(N * O + 1));
    y = tr_const(&k, "zeros", MLC_F32, N, N * O, z);
  } else {
    double *zc = arena_alloc(k.a, sizeof(double) * (size_t)(N + 1));
    memset(zc, 0, sizeof(double) * (size_t)(N + 1));
    parts[nparts++] = tr_const(&k, "zero_column", MLC_F32, N, N, zc);
    Node *cat = onnx_emit(cx, n, "concatenate", nparts, parts, 1, d);
    if (cat) ir_set_int(onnx_graph(cx), cat, "axis", 1);
    Value *all = NULL;
    if ((st = onnx_finish_one(cx, n, cat, &all, d))) return st;
    /* layer j takes, for each column, the j-th counted entry that goes there (the zero column where none) */
    int64_t *mult = arena_alloc(k.a, sizeof(int64_t) * (size_t)O), layers = 0;
    memset(mult, 0, sizeof(int64_t) * (size_t)O);
    for (int64_t p = 0; p < P; p++)
      if (col[p] >= 0 && ++mult[index[p]] > layers) layers = mult[index[p]];
    if (mode == 1 && layers > 1)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: IDF with n-grams sharing an output column (ngram_indexes "
                        "repeats a column) is not supported", n->op_type);
    y = NULL;
    for (int64_t j = 0; j < layers; j++) {
      int64_t *pick = arena_alloc(k.a, sizeof(int64_t) * (size_t)O);
      for (int64_t o = 0; o < O; o++) pick[o] = used;
      memset(mult, 0, sizeof(int64_t) * (size_t)O);
      for (int64_t p = 0; p < P; p++)
        if (col[p] >= 0 && mult[index[p]]++ == j) pick[index[p]] = col[p];
      Value *t = tr_op(&k, "take", 2, (Value *[]){all, tf_const_i64(&k, "columns", 1, O, pick)}, "axis", 1);
      int64_t yd[2] = {N, O};
      t = tr_reshape(&k, t, 2, yd);
      y = y ? tr_bin(&k, "add", y, t) : t;
    }
  }
  if (y && flat) y = tr_reshape(&k, y, 1, &O);
  if (!y) return d->status ? d->status : MLC_ERR_INTERNAL;
  outs[0] = y;
  return MLC_OK;
}

const OnnxConverter onnx_ops_ml[] = {
    /* op_type                 domain        converter */
    {"Binarizer", "ai.onnx.ml", binarizer},
    {"ArrayFeatureExtractor", "ai.onnx.ml", array_feature_extractor},
    {"TreeEnsemble", "ai.onnx.ml", tree_ensemble},
    {"TreeEnsembleRegressor", "ai.onnx.ml", tree_ensemble_regressor},
    {"TreeEnsembleClassifier", "ai.onnx.ml", tree_ensemble_classifier},
    {"TfIdfVectorizer", "", tfidf_vectorizer},
    {NULL, NULL, NULL},
};
