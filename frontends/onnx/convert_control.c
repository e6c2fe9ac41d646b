/* ONNX converters of the control family: If, Loop, Scan, by inlining their bodies (onnx_inline_graph).
 *
 * There are no control-flow graph ops: mlc compiles straight-line graphs, so control flow must be decided at
 * compile time (as XLA and TVM's static unrolling do for static trip counts):
 *   If   (1, 11, 13, 16, ...): a compile-time condition inlines the chosen branch; a run-time one inlines
 *        both and selects each output with a where on it (outputs of one dtype and shape in both branches
 *        only, or outputs differing along a data-dependent axis, selected with the taken branch's extent;
 *        both branches run, which is safe since ONNX ops have no side effects).
 *   Loop (1, 11, 13, 16, ...): trip count and condition must be compile-time constants, and the body's
 *        condition output must fold to a constant each iteration; the body is inlined once per iteration
 *        (at most MAX_UNROLL times). Scan outputs are stacked along a new axis 0 (reshape + concatenate).
 *   Scan (8, 9, 11, 16, ...): the sequence length is static (the scan inputs' shapes); each iteration slices
 *        the scan inputs (strided_slice + reshape, honouring scan_input_axes / directions), inlines the body,
 *        and the scan outputs are stacked along scan_output_axes (reversed for reverse directions). Opset 8's
 *        batch dimension is unrolled too; its sequence_lens must be absent or all equal to the length.
 * A Loop condition or trip count that is not constant is reported as MLC_ERR_UNSUPPORTED ("... must be known at
 * compile time; it depends on the graph inputs 'a', 'b'"), so a caller can freeze those inputs and retry. */
#include <string.h>
#include "frontends/onnx/onnx.h"

#define MAX_UNROLL 1024

static mlc_status reshape(OnnxCtx *cx, const OnnxNode *n, Value *x, int ndim, const int64_t *dims, Value **out,
                          Diag *d) {
  Node *nd = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "newshape", dims, ndim);
  return onnx_finish_one(cx, n, nd, out, d);
}

/* x[..., i, ...] along axis, with the axis dropped */
static mlc_status take(OnnxCtx *cx, const OnnxNode *n, Value *x, int axis, int64_t i, Value **out, Diag *d) {
  const TensorType *t = &x->type;
  int64_t b[MLC_MAX_DIMS], e[MLC_MAX_DIMS], s[MLC_MAX_DIMS], dims[MLC_MAX_DIMS];
  int nd = 0;
  for (int k = 0; k < t->ndim; k++) {
    b[k] = k == axis ? i : 0;
    e[k] = k == axis ? i + 1 : t->dims[k];
    s[k] = 1;
    if (k != axis) dims[nd++] = t->dims[k];
  }
  Node *sl = onnx_emit(cx, n, "strided_slice", 1, &x, 1, d);
  if (sl) {
    Graph *g = onnx_graph(cx);
    ir_set_ints(g, sl, "begin", b, t->ndim);
    ir_set_ints(g, sl, "end", e, t->ndim);
    ir_set_ints(g, sl, "strides", s, t->ndim);
  }
  Value *v = NULL;
  mlc_status st = onnx_finish_one(cx, n, sl, &v, d);
  if (st) return st;
  return reshape(cx, n, v, nd, dims, out, d);
}

/* vals stacked along a new axis */
static mlc_status stack(OnnxCtx *cx, const OnnxNode *n, Value **vals, int cnt, int axis, Value **out, Diag *d) {
  if (cnt == 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "a scan output of zero iterations (an empty tensor) is not supported");
  Arena *A = onnx_graph(cx)->arena;
  Value **parts = arena_alloc(A, sizeof(Value *) * (size_t)cnt);
  for (int i = 0; i < cnt; i++) {
    if (onnx_seq(vals[i]))
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "a scan output that is a sequence is not supported");
    const TensorType *t = &vals[i]->type;
    if (t->ndim + 1 > MLC_MAX_DIMS) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "scan output rank too large");
    if (axis < 0 || axis > t->ndim) return onnx_error(cx, n, d, MLC_ERR_INVALID, "scan output axis out of range");
    int64_t dims[MLC_MAX_DIMS];
    for (int k = 0, j = 0; k <= t->ndim; k++) dims[k] = k == axis ? 1 : t->dims[j++];
    mlc_status st = reshape(cx, n, vals[i], t->ndim + 1, dims, &parts[i], d);
    if (st) return st;
  }
  if (cnt == 1) {
    *out = parts[0];
    return MLC_OK;
  }
  Node *nd = onnx_emit(cx, n, "concatenate", cnt, parts, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", axis);
  return onnx_finish_one(cx, n, nd, out, d);
}

/* The value of a constant scalar (bool or integer); false if v is not a constant. */
static bool const_scalar(const Value *v, int64_t *out) {
  if (!v || !v->data || tt_numel(&v->type) != 1) return false;
  switch (v->type.dtype) {
    case MLC_BOOL: case MLC_U8: *out = *(const uint8_t *)v->data; return true;
    case MLC_I8: *out = *(const int8_t *)v->data; return true;
    case MLC_I32: *out = *(const int32_t *)v->data; return true;
    case MLC_I64: *out = *(const int64_t *)v->data; return true;
    default: return false;
  }
}

/* "; it depends on the graph inputs 'a', 'b'" for an error asking for v at compile time ("" if none) */
static const char *deps_note(OnnxCtx *cx, Value *v) {
  const Value *src = onnx_dyn_source(cx, v); /* a run-time length (detections): freezing inputs would not help */
  if (src) {
    const Node *p = src->dyn_extent && src->dyn_extent->producer ? src->dyn_extent->producer : src->producer;
    return arena_printf(onnx_graph(cx)->arena, "; it is computed from the data-dependent length of '%s'%s%s%s",
                        src->name ? src->name : "?", p ? " (" : "", p ? p->op_type : "", p ? ")" : "");
  }
  const char *deps = onnx_input_deps(cx, 1, &v);
  return *deps ? arena_printf(onnx_graph(cx)->arena, "; it depends on the graph inputs %s", deps) : "";
}

/* ---------------------------------------------------------------- If */

/* A branch output at the bound along axis a with the padding zeroed: itself (masked) when its static length is
 * the bound, zeros when it is empty (NULL: neither) */
static Value *at_bound(OnnxCtx *cx, const OnnxNode *n, Value *v, int a, int64_t bound, Diag *d) {
  if (v->type.dims[a] == bound) return onnx_dyn_mask(cx, n, v, "zero", d);
  if (v->type.dims[a] != 0) return NULL;
  TensorType t = v->type;
  t.dims[a] = bound;
  void *zeros = arena_alloc(onnx_graph(cx)->arena, (size_t)tt_nbytes(&t) + 1);
  memset(zeros, 0, (size_t)tt_nbytes(&t) + 1);
  return onnx_const(cx, NULL, t, zeros);
}

/* Branch outputs that differ in the length of one axis, data-dependent in at least one branch (NonZero /
 * NonMaxSuppression results, or an empty constant for "nothing found"): both are brought to the larger bound
 * (padding zeroed; an empty one becomes zeros), selected by a where, and the result carries the taken
 * branch's extent (a where of the two extents). MLC_ERR_UNSUPPORTED without a message: not this case. */
static mlc_status if_select_extents(OnnxCtx *cx, const OnnxNode *n, Value *cond, Value *t, Value *e, Value **out,
                                    Diag *d) {
  if (onnx_seq(t) || onnx_seq(e) || t->type.dtype != e->type.dtype || t->type.ndim != e->type.ndim ||
      (!t->dyn_extent && !e->dyn_extent))
    return MLC_ERR_UNSUPPORTED;
  int a = t->dyn_extent ? t->dyn_axis : e->dyn_axis;
  for (int k = 0; k < t->type.ndim; k++)
    if (k != a && t->type.dims[k] != e->type.dims[k]) return MLC_ERR_UNSUPPORTED;
  if ((t->dyn_extent && t->dyn_axis != a) || (e->dyn_extent && e->dyn_axis != a)) return MLC_ERR_UNSUPPORTED;
  int64_t bound = t->type.dims[a] > e->type.dims[a] ? t->type.dims[a] : e->type.dims[a];
  Value *ts = at_bound(cx, n, t, a, bound, d), *es = at_bound(cx, n, e, a, bound, d);
  if (!diag_ok(d)) return d->status;
  if (!ts || !es) return MLC_ERR_UNSUPPORTED;
  Value *ext_t = t->dyn_extent ? t->dyn_extent : onnx_extent_const(cx, t->type.dims[a]);
  Value *ext_e = e->dyn_extent ? e->dyn_extent : onnx_extent_const(cx, e->type.dims[a]);
  Value *ins[3] = {cond, ts, es}, *eins[3] = {cond, ext_t, ext_e};
  Node *w = onnx_emit(cx, n, "where", 3, ins, 1, d);
  if (!w || onnx_finish(cx, n, w, d) != MLC_OK) return d->status;
  Node *we = onnx_emit(cx, n, "where", 3, eins, 1, d);
  if (!we || onnx_finish(cx, n, we, d) != MLC_OK) return d->status;
  *out = onnx_dyn_pack(cx, n, a, 1, &w->outputs[0], &we->outputs[0], d);
  return *out ? MLC_OK : d->status;
}

/* An If whose condition is known only at run time: both branches inlined, each output chosen by a where on
 * the condition. Needs outputs of one type (dtype and shape) in both branches, as a select does. */
static mlc_status if_select(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  Value *cond = n->inputs[0];
  if (cond->type.dtype != MLC_BOOL || tt_numel(&cond->type) != 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "the condition of If must be a single bool");
  int nt = 0, ne = 0;
  Value **rt = NULL, **re = NULL;
  mlc_status st = onnx_inline_graph(cx, n, "then_branch", "then", 0, NULL, &nt, &rt, d);
  if (!st) st = onnx_inline_graph(cx, n, "else_branch", "else", 0, NULL, &ne, &re, d);
  if (st) return st;
  if (nt < n->noutputs || ne < n->noutputs)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "the branches have %d and %d outputs, the node %d", nt, ne, n->noutputs);
  if (cond->type.ndim && (st = reshape(cx, n, cond, 0, NULL, &cond, d))) return st;
  for (int i = 0; i < n->noutputs; i++) {
    const TensorType *a = &rt[i]->type, *b = &re[i]->type;
    bool same = !onnx_seq(rt[i]) && !onnx_seq(re[i]) && a->dtype == b->dtype && a->ndim == b->ndim;
    for (int k = 0; same && k < a->ndim; k++) same = a->dims[k] == b->dims[k];
    /* a data-dependent output (even of the same bound) must carry the taken branch's extent, not the first
     * operand's as a plain where would */
    bool dynamic = !onnx_seq(rt[i]) && !onnx_seq(re[i]) && (rt[i]->dyn_extent || re[i]->dyn_extent);
    if ((!same || dynamic) &&
        (st = if_select_extents(cx, n, cond, rt[i], re[i], &outs[i], d)) != MLC_ERR_UNSUPPORTED) {
      if (st) return st;
      continue;
    }
    if (dynamic)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "output %d has a data-dependent shape in a branch, and the branches' shapes do not line up "
                        "along one axis (each the other's bound or empty), so the condition of If must be known at "
                        "compile time%s",
                        i, deps_note(cx, n->inputs[0]));
    if (!same)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "output %d differs in type between the branches, so the condition of If must be known at "
                        "compile time (otherwise mlc computes both branches and selects)%s",
                        i, deps_note(cx, n->inputs[0]));
    Value *ins[3] = {cond, rt[i], re[i]};
    if ((st = onnx_finish_one(cx, n, onnx_emit(cx, n, "where", 3, ins, 1, d), &outs[i], d))) return st;
  }
  return MLC_OK;
}

static mlc_status conv_if(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  int64_t c;
  if (n->ninputs < 1 || !n->inputs[0]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "If needs a condition");
  if (!const_scalar(n->inputs[0], &c)) return if_select(cx, n, outs, d);
  const char *br = c ? "then_branch" : "else_branch";
  int nout = 0;
  Value **res = NULL;
  mlc_status st = onnx_inline_graph(cx, n, br, c ? "then" : "else", 0, NULL, &nout, &res, d);
  if (st) return st;
  if (nout < n->noutputs)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s has %d outputs, the node %d", br, nout, n->noutputs);
  for (int i = 0; i < n->noutputs; i++) outs[i] = res[i];
  return MLC_OK;
}

/* ---------------------------------------------------------------- Loop */

static mlc_status conv_loop(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  Graph *g = onnx_graph(cx);
  Arena *A = g->arena;
  Value *M = n->ninputs > 0 ? n->inputs[0] : NULL, *cond = n->ninputs > 1 ? n->inputs[1] : NULL;
  int64_t trip = -1, c = 1;
  if (M && !const_scalar(M, &trip))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                      "the trip count of Loop must be known at compile time (mlc unrolls loops)%s",
                      deps_note(cx, M));
  if (cond && !const_scalar(cond, &c))
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                      "the condition of Loop must be known at compile time (mlc unrolls loops)%s", deps_note(cx, cond));
  if (trip < 0 && M) return onnx_error(cx, n, d, MLC_ERR_INVALID, "negative trip count");
  int N = n->ninputs - 2 > 0 ? n->ninputs - 2 : 0;
  Value **carried = arena_alloc(A, sizeof(Value *) * (size_t)(N + 1));
  for (int j = 0; j < N; j++) carried[j] = n->inputs[2 + j];
  int K = n->noutputs - N;
  if (K < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Loop has fewer outputs than loop-carried values");
  Value ***scans = arena_alloc(A, sizeof(Value **) * (size_t)(K + 1));
  for (int k = 0; k < K; k++) scans[k] = arena_alloc(A, sizeof(Value *) * MAX_UNROLL);
  int iters = 0;
  Value **bind = arena_alloc(A, sizeof(Value *) * (size_t)(N + 2));
  for (int64_t i = 0; (trip < 0 || i < trip) && c; i++) {
    if (iters == MAX_UNROLL)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Loop runs more than %d iterations: too many to unroll",
                        MAX_UNROLL);
    uint8_t cb = 1;
    bind[0] = onnx_const(cx, arena_printf(A, "%s_iter%lld", n->name, (long long)i), (TensorType){MLC_I64, 0, {0}}, &i);
    bind[1] = onnx_const(cx, arena_printf(A, "%s_cond%lld", n->name, (long long)i), (TensorType){MLC_BOOL, 0, {0}}, &cb);
    for (int j = 0; j < N; j++) bind[2 + j] = carried[j];
    int nout = 0;
    Value **res = NULL;
    mlc_status st = onnx_inline_graph(cx, n, "body", arena_printf(A, "iter%lld", (long long)i), N + 2, bind, &nout,
                                      &res, d);
    if (st) return st;
    if (nout != 1 + N + K)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "Loop body has %d outputs, expected %d", nout, 1 + N + K);
    if (!const_scalar(res[0], &c))
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                        "the loop condition computed by the body must be known at compile time (mlc unrolls loops)");
    for (int j = 0; j < N; j++) carried[j] = res[1 + j];
    for (int k = 0; k < K; k++) scans[k][iters] = res[1 + N + k];
    iters++;
  }
  for (int j = 0; j < N && j < n->noutputs; j++) outs[j] = carried[j];
  for (int k = 0; k < K; k++) {
    if (!n->output_names[N + k] || !*n->output_names[N + k]) continue;
    mlc_status st = stack(cx, n, scans[k], iters, 0, &outs[N + k], d);
    if (st) return st;
  }
  return MLC_OK;
}

/* ---------------------------------------------------------------- Scan */

static mlc_status conv_scan(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  Graph *g = onnx_graph(cx);
  Arena *A = g->arena;
  bool v8 = n->opset < 9;
  int first = v8 ? 1 : 0; /* opset 8: sequence_lens first */
  int64_t M = onnx_attr_int(n, "num_scan_inputs", -1);
  int nin = n->ninputs - first;
  if (M < 1 || M > nin) return onnx_error(cx, n, d, MLC_ERR_INVALID, "bad num_scan_inputs %lld", (long long)M);
  int N = nin - (int)M, K = n->noutputs - N;
  if (K < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Scan has fewer outputs than state values");
  for (int i = first; i < n->ninputs; i++)
    if (!n->inputs[i]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Scan input %d is missing", i);
  int64_t in_axes[16] = {0}, in_dirs[16] = {0}, out_axes[16] = {0}, out_dirs[16] = {0};
  if (M > 16 || K > 16) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Scan with more than 16 scan inputs/outputs");
  if (v8) {
    onnx_attr_ints(n, "directions", in_dirs, 16);
  } else {
    onnx_attr_ints(n, "scan_input_axes", in_axes, 16);
    onnx_attr_ints(n, "scan_input_directions", in_dirs, 16);
    onnx_attr_ints(n, "scan_output_axes", out_axes, 16);
    onnx_attr_ints(n, "scan_output_directions", out_dirs, 16);
  }
  Value **scan_in = n->inputs + first + N;
  int batch = v8 ? 1 : 0; /* opset 8: axis 0 is the batch, axis 1 the sequence */
  for (int j = 0; j < M; j++) {
    int r = scan_in[j]->type.ndim;
    if (in_axes[j] < 0) in_axes[j] += r - batch;
    in_axes[j] += batch;
    if (in_axes[j] < batch || in_axes[j] >= r) return onnx_error(cx, n, d, MLC_ERR_INVALID, "scan input axis out of range");
  }
  int64_t T = scan_in[0]->type.dims[in_axes[0]];
  for (int j = 1; j < M; j++)
    if (scan_in[j]->type.dims[in_axes[j]] != T)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "scan inputs have different sequence lengths");
  if (T > MAX_UNROLL) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Scan of %lld steps: too many to unroll", (long long)T);
  int64_t B = v8 ? scan_in[0]->type.dims[0] : 1;
  if (v8 && n->inputs[0]) {
    int64_t lens[256];
    int cnt = onnx_const_ints(n->inputs[0], lens, 256);
    if (cnt < 0)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Scan's sequence_lens must be known at compile time");
    for (int b = 0; b < cnt; b++)
      if (lens[b] != T) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Scan with sequence_lens shorter than the input");
  }
  if (B > MAX_UNROLL || B * T > MAX_UNROLL) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "Scan too large to unroll");
  Value **state = arena_alloc(A, sizeof(Value *) * (size_t)(N + 1));
  Value **bind = arena_alloc(A, sizeof(Value *) * (size_t)(N + M + 1));
  Value ***final = arena_alloc(A, sizeof(Value **) * (size_t)(N + 1));          /* [state][batch] */
  Value ***per_b = arena_alloc(A, sizeof(Value **) * (size_t)(K + 1));          /* [scan out][batch] */
  Value ***steps = arena_alloc(A, sizeof(Value **) * (size_t)(K + 1));          /* [scan out][step] */
  for (int j = 0; j < N; j++) final[j] = arena_alloc(A, sizeof(Value *) * (size_t)B);
  for (int k = 0; k < K; k++) {
    per_b[k] = arena_alloc(A, sizeof(Value *) * (size_t)B);
    steps[k] = arena_alloc(A, sizeof(Value *) * (size_t)T);
  }
  mlc_status st;
  for (int64_t b = 0; b < B; b++) {
    for (int j = 0; j < N; j++) {
      state[j] = n->inputs[first + j];
      if (v8 && (st = take(cx, n, state[j], 0, b, &state[j], d))) return st;
    }
    for (int64_t t = 0; t < T; t++) {
      for (int j = 0; j < M; j++) {
        Value *x = scan_in[j];
        int axis = (int)in_axes[j];
        if (v8) {
          if ((st = take(cx, n, x, 0, b, &x, d))) return st;
          axis--;
        }
        if ((st = take(cx, n, x, axis, in_dirs[j] ? T - 1 - t : t, &bind[N + j], d))) return st;
      }
      for (int j = 0; j < N; j++) bind[j] = state[j];
      int nout = 0;
      Value **res = NULL;
      st = onnx_inline_graph(cx, n, "body", arena_printf(A, "b%lld_t%lld", (long long)b, (long long)t), N + (int)M,
                             bind, &nout, &res, d);
      if (st) return st;
      if (nout != N + K) return onnx_error(cx, n, d, MLC_ERR_INVALID, "Scan body has %d outputs, expected %d", nout, N + K);
      for (int j = 0; j < N; j++) state[j] = res[j];
      for (int k = 0; k < K; k++) steps[k][out_dirs[k] ? T - 1 - t : t] = res[N + k];
    }
    for (int j = 0; j < N; j++) final[j][b] = state[j];
    for (int k = 0; k < K; k++) {
      int r = steps[k][0]->type.ndim + 1;
      int axis = (int)(out_axes[k] < 0 ? out_axes[k] + r : out_axes[k]);
      if ((st = stack(cx, n, steps[k], (int)T, axis, &per_b[k][b], d))) return st;
    }
  }
  for (int j = 0; j < N && j < n->noutputs; j++) {
    if (!v8) outs[j] = final[j][0];
    else if ((st = stack(cx, n, final[j], (int)B, 0, &outs[j], d))) return st;
  }
  for (int k = 0; k < K; k++) {
    if (!v8) outs[N + k] = per_b[k][0];
    else if ((st = stack(cx, n, per_b[k], (int)B, 0, &outs[N + k], d))) return st;
  }
  return MLC_OK;
}

const OnnxConverter onnx_ops_control[] = {
    /* op_type domain converter */
    {"If", "", conv_if},
    {"Loop", "", conv_loop},
    {"Scan", "", conv_scan},
    {0},
};
