/* ONNX converters of the ml family (see families.def): the ai.onnx.ml operators that are plain tensor
 * arithmetic (scikit-learn pipelines converted by skl2onnx end in them):
 *   Binarizer(X; threshold) = X > threshold ? 1 : 0, in X's type;
 *   ArrayFeatureExtractor(X, Y) = X's elements at the int64 indices Y along the last axis (a 1-D X gives
 *     [1, len(Y)], as ONNX Runtime does).
 *   TreeEnsemble (opset 5) as tensor ops, see tree_ensemble.
 * The string ops (LabelEncoder's string keys, ...) and the older TreeEnsembleRegressor / Classifier are not
 * supported. */
#include <math.h>
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
  for (int i = 0; i < nin; i++)
    if (!ins[i]) return NULL;
  Node *nd = onnx_emit(k->cx, k->n, op, nin, ins, 1, k->d);
  if (nd && attr) {
    if (!strcmp(attr, "axis_list")) ir_set_ints(onnx_graph(k->cx), nd, "axis", &v, 1);
    else ir_set_int(onnx_graph(k->cx), nd, attr, v);
  }
  Value *y = NULL;
  return onnx_finish_one(k->cx, k->n, nd, &y, k->d) ? NULL : y;
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

/* TreeEnsemble(X [N, F]) -> [N, n_targets]: every tree walked level by level as tensor ops, all trees at
 * once: the position C [N, trees] indexes the internal nodes, then (after them) the leaves, which point at
 * themselves; each of the depth steps reads X[n, feature[C]] (GatherElements), compares it with split[C]
 * by mode[C] (a missing value goes true where missing_value_tracks_true), and moves to the true or the false
 * child. The leaves' weights go to their targets (one-hot), aggregated over the trees (SUM, AVERAGE, MIN,
 * MAX), then post_transform (NONE, LOGISTIC, SOFTMAX). */
static mlc_status tree_ensemble(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  Trees k = {cx, n, d, onnx_graph(cx)->arena, x->type.dtype, 0, 0};
  if ((k.t != MLC_F32 && k.t != MLC_F64) || x->type.ndim != 2)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s needs float or double X [N, F], got rank %d %s", n->op_type,
                      x->type.ndim, mlc_dtype_name(k.t));
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
  int64_t total = nn + nl, kmax = 0;
  /* per position: feature, split, mode, missing goes true, the next positions; leaves loop on themselves */
  double *pf = arena_alloc(k.a, sizeof(double) * (size_t)total * 6);
  double *ps = pf + total, *pm = ps + total, *pt = pm + total, *pn = pt + total, *pmt = pn + total;
  bool used[NMODES] = {false};
  for (int64_t i = 0; i < total; i++) {
    bool leaf = i >= nn;
    int64_t m = leaf ? 0 : (int64_t)modes[i];
    if (!leaf && (m < 0 || m >= NMODES || feat[i] < 0 || feat[i] >= x->type.dims[1] || tid[i] < 0 || fid[i] < 0 ||
                  tid[i] >= (tleaf[i] ? nl : nn) || fid[i] >= (fleaf[i] ? nl : nn)))
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: node %lld: a mode, feature or child out of range", n->op_type,
                        (long long)i);
    if (leaf && (ltarget[i - nn] < 0 || ltarget[i - nn] >= targets))
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: leaf %lld targets %lld of %lld", n->op_type,
                        (long long)(i - nn), (long long)ltarget[i - nn], (long long)targets);
    if (!leaf) used[m] = true;
    pf[i] = leaf ? 0 : (double)feat[i];
    ps[i] = leaf ? 0 : splits[i];
    pm[i] = (double)m;
    pt[i] = leaf ? (double)i : (double)(tleaf[i] ? nn + tid[i] : tid[i]);
    pn[i] = leaf ? (double)i : (double)(fleaf[i] ? nn + fid[i] : fid[i]);
    pmt[i] = !leaf && mtt && mtt[i];
  }
  /* set membership: member node j's values, NaN-separated in membership_values, as a row of [total, kmax] */
  double *mrows = NULL;
  if (used[MODE_MEMBER]) {
    if (nmem < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: set membership nodes without membership_values",
                                    n->op_type);
    int64_t run = 0;
    for (int64_t i = 0; i < nmem; i++) {
      run = isnan(members[i]) ? 0 : run + 1;
      if (run > kmax) kmax = run;
    }
    if (kmax < 1) kmax = 1;
    mrows = arena_alloc(k.a, sizeof(double) * (size_t)(total * kmax));
    for (int64_t i = 0; i < total * kmax; i++) mrows[i] = NAN;
    int64_t at = 0;
    for (int64_t i = 0; i < nn; i++) {
      if ((int64_t)modes[i] != MODE_MEMBER) continue;
      for (int64_t j = 0; at < nmem && !isnan(members[at]); at++, j++) mrows[i * kmax + j] = members[at];
      if (at++ >= nmem) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: too few membership_values", n->op_type);
    }
  }
  /* the start positions and the depth (the longest path of internal nodes; a cycle is an error) */
  k.N = x->type.dims[0];
  k.T = ntrees;
  double *start = arena_alloc(k.a, sizeof(double) * (size_t)(k.N * ntrees));
  int64_t depth = 0, *stack = arena_alloc(k.a, sizeof(int64_t) * (size_t)(2 * (nn + 1)));
  for (int64_t t = 0; t < ntrees; t++) {
    int64_t r = roots[t];
    if (r < 0 || r >= nn) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: tree root %lld", n->op_type, (long long)r);
    bool leaf_root = tleaf[r] && fleaf[r] && tid[r] == fid[r];
    for (int64_t s = 0; s < k.N; s++) start[s * ntrees + t] = leaf_root ? (double)(nn + tid[r]) : (double)r;
    if (leaf_root) continue;
    int64_t sp = 0;
    stack[sp++] = r;
    stack[sp++] = 1;
    while (sp) {
      int64_t dep = stack[--sp], i = stack[--sp];
      if (dep > nn) return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s: the nodes of tree %lld form a cycle", n->op_type,
                                      (long long)t);
      if (dep > depth) depth = dep;
      int64_t kids[2] = {tleaf[i] ? -1 : tid[i], fleaf[i] ? -1 : fid[i]};
      for (int c = 0; c < 2; c++)
        if (kids[c] >= 0) {
          if (sp + 2 > 2 * (nn + 1)) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "%s: trees too deep", n->op_type);
          stack[sp++] = kids[c];
          stack[sp++] = dep + 1;
        }
    }
  }
  Value *feats = tr_const(&k, "features", MLC_I64, 0, total, pf), *spl = tr_const(&k, "splits", k.t, 0, total, ps);
  Value *mode = tr_const(&k, "modes", MLC_I32, 0, total, pm), *tnext = tr_const(&k, "true_next", MLC_I64, 0, total, pt);
  Value *fnext = tr_const(&k, "false_next", MLC_I64, 0, total, pn);
  Value *miss = mtt ? tr_const(&k, "missing_true", MLC_BOOL, 0, total, pmt) : NULL;
  Value *mem = mrows ? tr_const(&k, "members", k.t, total, total * kmax, mrows) : NULL;
  Value *pos = tr_const(&k, "start", MLC_I64, k.N, k.N * ntrees, start);
  static const char *const cmp[NMODES] = {"less_equal", "less", "greater_equal", "greater", "equal", "equal", ""};
  for (int64_t step = 0; step < depth && pos; step++) {
    Value *ti[2] = {feats, pos}, *f = tr_op(&k, "take", 2, ti, "axis", 0);
    Value *gi[2] = {x, f}, *xv = tr_op(&k, "gather", 2, gi, "axis", 1);
    Value *si[2] = {spl, pos}, *sv = tr_op(&k, "take", 2, si, "axis", 0);
    Value *mi[2] = {mode, pos}, *mv = tr_op(&k, "take", 2, mi, "axis", 0), *cond = NULL;
    for (int m = 0; m < NMODES; m++) {
      if (!used[m]) continue;
      Value *c;
      if (m == MODE_MEMBER) { /* any(members[C] == x) */
        Value *mr[2] = {mem, pos}, *rows = tr_op(&k, "take", 2, mr, "axis", 0);
        int64_t shape[3] = {k.N, k.T, 1};
        Node *rs = xv ? onnx_emit(cx, n, "reshape", 1, &xv, 1, d) : NULL;
        if (rs) ir_set_ints(onnx_graph(cx), rs, "newshape", shape, 3);
        Value *x3 = NULL;
        if (!rs || onnx_finish_one(cx, n, rs, &x3, d)) return d->status ? d->status : MLC_ERR_INTERNAL;
        Value *hit = tr_bin(&k, "equal", rows, x3), *ci[1] = {hit};
        Value *cnt = tr_op(&k, "cast", 1, ci, "dtype", MLC_I32), *ri[1] = {cnt};
        Value *any = tr_op(&k, "max", 1, ri, "axis_list", 2);
        c = tr_bin(&k, "greater", any, onnx_scalar(cx, n, "zero", MLC_I32, 0));
        /* (max keeps dims by default: [N, T, 1] -> [N, T]) */
        int64_t shape2[2] = {k.N, k.T};
        Node *r2 = c ? onnx_emit(cx, n, "reshape", 1, &c, 1, d) : NULL;
        if (r2) ir_set_ints(onnx_graph(cx), r2, "newshape", shape2, 2);
        if (!r2 || onnx_finish_one(cx, n, r2, &c, d)) return d->status ? d->status : MLC_ERR_INTERNAL;
      } else {
        c = tr_bin(&k, cmp[m], xv, sv);
        if (m == MODE_NEQ) { /* not equal; NaN compares unequal as in the reference, but goes by missing below */
          Value *ci[1] = {c};
          c = tr_op(&k, "logical_not", 1, ci, NULL, 0);
        }
      }
      if (!cond) { /* the first mode used: where the ensemble has one mode, the comparison alone */
        cond = c;
        continue;
      }
      Value *is = tr_bin(&k, "equal", mv, onnx_scalar(cx, n, "mode", MLC_I32, m)), *wi[3] = {is, c, cond};
      cond = tr_op(&k, "where", 3, wi, NULL, 0);
    }
    if (miss) { /* NaN goes true where missing_value_tracks_true */
      Value *ni[1] = {xv}, *nan = tr_op(&k, "isnan", 1, ni, NULL, 0);
      Value *mm[2] = {miss, pos}, *mt = tr_op(&k, "take", 2, mm, "axis", 0);
      cond = tr_bin(&k, "logical_or", cond, tr_bin(&k, "logical_and", nan, mt));
    }
    Value *a1[2] = {tnext, pos}, *a2[2] = {fnext, pos};
    Value *wi[3] = {cond, tr_op(&k, "take", 2, a1, "axis", 0), tr_op(&k, "take", 2, a2, "axis", 0)};
    pos = tr_op(&k, "where", 3, wi, NULL, 0);
  }
  if (!pos) return d->status ? d->status : MLC_ERR_INTERNAL;
  /* leaves: weight and target of each (sample, tree), one-hot over the targets, aggregated over the trees */
  double *lw = arena_alloc(k.a, sizeof(double) * (size_t)total), *lt = arena_alloc(k.a, sizeof(double) * (size_t)total);
  for (int64_t i = 0; i < total; i++) {
    lw[i] = i < nn ? 0 : weights[i - nn];
    lt[i] = i < nn ? -1 : (double)ltarget[i - nn];
  }
  Value *wv[2] = {tr_const(&k, "leaf_weights", k.t, 0, total, lw), pos};
  Value *tv[2] = {tr_const(&k, "leaf_targets", MLC_I64, 0, total, lt), pos};
  Value *w = tr_op(&k, "take", 2, wv, "axis", 0), *tg = tr_op(&k, "take", 2, tv, "axis", 0);
  double *ar = arena_alloc(k.a, sizeof(double) * (size_t)targets);
  for (int64_t i = 0; i < targets; i++) ar[i] = (double)i;
  int64_t s3[3] = {k.N, k.T, 1};
  Node *r1 = tg ? onnx_emit(cx, n, "reshape", 1, &tg, 1, d) : NULL;
  Node *r2 = w ? onnx_emit(cx, n, "reshape", 1, &w, 1, d) : NULL;
  if (r1) ir_set_ints(onnx_graph(cx), r1, "newshape", s3, 3);
  if (r2) ir_set_ints(onnx_graph(cx), r2, "newshape", s3, 3);
  Value *tg3 = NULL, *w3 = NULL;
  if (!r1 || !r2 || onnx_finish_one(cx, n, r1, &tg3, d) || onnx_finish_one(cx, n, r2, &w3, d))
    return d->status ? d->status : MLC_ERR_INTERNAL;
  Value *hot = tr_bin(&k, "equal", tg3, tr_const(&k, "target_ids", MLC_I64, 0, targets, ar));
  double fill = agg == 2 ? (k.t == MLC_F32 ? 3.4028234663852886e38 : 1.7976931348623157e308)
                : agg == 3 ? (k.t == MLC_F32 ? -3.4028234663852886e38 : -1.7976931348623157e308) : 0.0;
  Value *wh[3] = {hot, w3, onnx_scalar(cx, n, "fill", k.t, fill)}, *spread = tr_op(&k, "where", 3, wh, NULL, 0);
  Node *red = spread ? onnx_emit(cx, n, agg == 2 ? "min" : agg == 3 ? "max" : "sum", 1, &spread, 1, d) : NULL;
  int64_t ax = 1;
  if (red) {
    ir_set_ints(onnx_graph(cx), red, "axis", &ax, 1);
    ir_set_int(onnx_graph(cx), red, "keepdims", 0);
  }
  Value *y = NULL;
  if (!red || onnx_finish_one(cx, n, red, &y, d)) return d->status ? d->status : MLC_ERR_INTERNAL;
  if (agg == 0) y = tr_bin(&k, "divide", y, onnx_scalar(cx, n, "trees", k.t, (double)ntrees));
  if (y && post == 2) {
    Value *yi[1] = {y};
    y = tr_op(&k, "sigmoid", 1, yi, NULL, 0);
  } else if (y && post == 1) {
    Value *yi[1] = {y}, *sm = NULL;
    if ((st = onnx_convert_as(cx, n, "Softmax", 13, false, 1, yi, &sm, d))) return st;
    y = sm;
  }
  if (!y) return d->status ? d->status : MLC_ERR_INTERNAL;
  outs[0] = y;
  return MLC_OK;
}

const OnnxConverter onnx_ops_ml[] = {
    /* op_type                 domain        converter */
    {"Binarizer", "ai.onnx.ml", binarizer},
    {"ArrayFeatureExtractor", "ai.onnx.ml", array_feature_extractor},
    {"TreeEnsemble", "ai.onnx.ml", tree_ensemble},
    {NULL, NULL, NULL},
};
