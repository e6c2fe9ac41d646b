/* ONNX converters of the sequence family (see families.def): sequences as compile-time lists of tensors.
 *
 * mlc compiles straight-line graphs of tensors, so a sequence exists only while the model is imported: a
 * sequence value (onnx_seq_new) is a Value outside the graph whose items are tensors of the graph. Exporters
 * write sequences for lists whose length is fixed once the shapes are (torch's repeat_interleave, split and
 * unbind under dynamic axes, scripted list building inside a Loop), and Loop is unrolled at compile time, so
 * every position and length below is a compile-time constant:
 *   SequenceEmpty (11: dtype), SequenceConstruct (11), SequenceLength (11) -> a constant int64 scalar,
 *   SequenceAt (11: position, negative from the end), SequenceInsert (11: position, default the end),
 *   SequenceErase (11: position, default the last), SplitToSequence (11: split absent -> pieces of 1 along axis,
 *     squeezed unless keepdims; a scalar -> pieces of that size, the last shorter; a vector -> those sizes),
 *   ConcatFromSequence (11: axis, new_axis) -> concatenate (each item reshaped to a new axis when new_axis),
 *   SequenceMap (17: body) -> the body inlined once per position of the first sequence, bound to the items at
 *     that position of the sequence inputs (which must all be as long) and to the tensor inputs themselves;
 *   Optional, OptionalHasElement, OptionalGetElement: optionals are resolved at compile time too (see
 *     optional_new).
 * A position or split that is not a compile-time constant, an empty ConcatFromSequence, and a sequence where an
 * op wants a tensor (a graph output, a Loop scan output, any other op) are errors naming the node. */
#include <string.h>
#include "frontends/onnx/onnx.h"

#define SEQ_MAX 4096 /* items in one sequence (as many as MAX_UNROLL iterations can insert, and more) */

/* The position input i of n (a constant scalar) normalised into [0, len] (inclusive when end_ok): positions
 * count from the end when negative; dflt when the input is absent. */
static mlc_status seq_position(OnnxCtx *cx, const OnnxNode *n, int i, int len, bool end_ok, int dflt, int *out,
                               Diag *d) {
  if (n->ninputs <= i || !n->inputs[i]) {
    *out = dflt;
    return MLC_OK;
  }
  int64_t p;
  if (onnx_seq(n->inputs[i]) || tt_numel(&n->inputs[i]->type) != 1 || onnx_const_ints(n->inputs[i], &p, 1) != 1)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                      "the position must be an integer scalar known at compile time (sequences are unrolled)");
  if (p < 0) p += len;
  if (p < 0 || p > len || (p == len && !end_ok))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "position out of range for a sequence of %d tensors", len);
  *out = (int)p;
  return MLC_OK;
}

static mlc_status need_seq(OnnxCtx *cx, const OnnxNode *n, const OnnxSeq **s, Diag *d) {
  *s = n->ninputs > 0 && n->inputs[0] ? onnx_seq(n->inputs[0]) : NULL;
  if (!*s) return onnx_error(cx, n, d, MLC_ERR_INVALID, "input 0 must be a sequence");
  return MLC_OK;
}

static mlc_status need_tensor(OnnxCtx *cx, const OnnxNode *n, const Value *v, mlc_dtype elem, Diag *d) {
  if (!v || onnx_seq(v)) return onnx_error(cx, n, d, MLC_ERR_INVALID, "a tensor input is missing or a sequence");
  if (elem != MLC_UNDEF && v->type.dtype != elem)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "a %s tensor in a sequence of %s", mlc_dtype_name(v->type.dtype),
                      mlc_dtype_name(elem));
  return MLC_OK;
}

static mlc_status seq_empty(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  int64_t t = onnx_attr_int(n, "dtype", MLC_F32); /* mlc's dtype numbers are ONNX's */
  if (t <= 0 || t >= MLC_DTYPE_COUNT || t == MLC_STRING || mlc_dtype_size((mlc_dtype)t) <= 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "sequences of ONNX data type %lld are not supported", (long long)t);
  outs[0] = onnx_seq_new(cx, n->output_names[0], (mlc_dtype)t, 0, NULL);
  return MLC_OK;
}

static mlc_status seq_construct(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  for (int i = 0; i < n->ninputs; i++)
    if ((st = need_tensor(cx, n, n->inputs[i], n->inputs[0]->type.dtype, d))) return st;
  outs[0] = onnx_seq_new(cx, n->output_names[0], n->inputs[0]->type.dtype, n->ninputs, n->inputs);
  return MLC_OK;
}

static mlc_status seq_length(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const OnnxSeq *s;
  mlc_status st = need_seq(cx, n, &s, d);
  if (st) return st;
  int64_t len = s->n;
  outs[0] = onnx_const(cx, n->output_names[0], (TensorType){MLC_I64, 0, {0}}, &len);
  return MLC_OK;
}

static mlc_status seq_at(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const OnnxSeq *s;
  mlc_status st = need_seq(cx, n, &s, d);
  if (st) return st;
  if (n->ninputs < 2 || !n->inputs[1]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "input 'position' is missing");
  int p = 0;
  if ((st = seq_position(cx, n, 1, s->n, false, 0, &p, d))) return st;
  /* a copy, so the tensor takes the output's name (a graph output is named after it) */
  return onnx_finish_one(cx, n, onnx_emit(cx, n, "copy", 1, &s->items[p], 1, d), &outs[0], d);
}

static mlc_status seq_insert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const OnnxSeq *s;
  mlc_status st = need_seq(cx, n, &s, d);
  if (st) return st;
  Value *t = n->ninputs > 1 ? n->inputs[1] : NULL;
  if ((st = need_tensor(cx, n, t, s->elem, d))) return st;
  if (s->n >= SEQ_MAX) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "a sequence of more than %d tensors", SEQ_MAX);
  int p;
  if ((st = seq_position(cx, n, 2, s->n, true, s->n, &p, d))) return st;
  Value **items = arena_alloc(onnx_graph(cx)->arena, sizeof(Value *) * (size_t)(s->n + 1));
  for (int i = 0, j = 0; i <= s->n; i++) items[i] = i == p ? t : s->items[j++];
  outs[0] = onnx_seq_new(cx, n->output_names[0], s->elem, s->n + 1, items);
  return MLC_OK;
}

static mlc_status seq_erase(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const OnnxSeq *s;
  mlc_status st = need_seq(cx, n, &s, d);
  if (st) return st;
  if (s->n == 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "SequenceErase on an empty sequence");
  int p;
  if ((st = seq_position(cx, n, 1, s->n, false, s->n - 1, &p, d))) return st;
  Value **items = arena_alloc(onnx_graph(cx)->arena, sizeof(Value *) * (size_t)s->n);
  for (int i = 0, j = 0; i < s->n; i++)
    if (i != p) items[j++] = s->items[i];
  outs[0] = onnx_seq_new(cx, n->output_names[0], s->elem, s->n - 1, items);
  return MLC_OK;
}

static mlc_status emit_reshape(OnnxCtx *cx, const OnnxNode *n, Value *x, int ndim, const int64_t *dims, Value **out,
                               Diag *d) {
  Node *nd = onnx_emit(cx, n, "reshape", 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, "newshape", dims, ndim);
  return onnx_finish_one(cx, n, nd, out, d);
}

static mlc_status split_to_seq(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  if ((st = need_tensor(cx, n, x, MLC_UNDEF, d))) return st;
  int r = x->type.ndim;
  int64_t axis = onnx_attr_int(n, "axis", 0);
  if (axis < -r || axis >= r)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  int64_t dim = x->type.dims[axis];
  Value *sp = n->ninputs > 1 ? n->inputs[1] : NULL;
  bool squeeze = !sp && onnx_attr_int(n, "keepdims", 1) == 0;
  Arena *A = onnx_graph(cx)->arena;
  int64_t *sizes = arena_alloc(A, sizeof(int64_t) * SEQ_MAX);
  int cnt = 0;
  if (!sp) {
    if (dim > SEQ_MAX) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "a sequence of more than %d tensors", SEQ_MAX);
    for (; cnt < dim; cnt++) sizes[cnt] = 1;
  } else {
    int64_t k = tt_numel(&sp->type);
    if (onnx_seq(sp) || sp->type.ndim > 1 || k > SEQ_MAX || onnx_const_ints(sp, sizes, SEQ_MAX) != k)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "'split' must be an integer scalar or vector known at compile time");
    if (sp->type.ndim == 0) {
      int64_t chunk = sizes[0];
      if (chunk < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "split size %lld must be >= 1", (long long)chunk);
      if ((dim + chunk - 1) / chunk > SEQ_MAX)
        return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "a sequence of more than %d tensors", SEQ_MAX);
      for (int64_t off = 0; off < dim; off += chunk) sizes[cnt++] = dim - off < chunk ? dim - off : chunk;
    } else {
      int64_t tot = 0;
      for (cnt = 0; cnt < k; cnt++) {
        if (sizes[cnt] < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "negative split size");
        tot += sizes[cnt];
      }
      if (tot != dim)
        return onnx_error(cx, n, d, MLC_ERR_INVALID, "split sizes sum to %lld, the axis has %lld", (long long)tot,
                          (long long)dim);
    }
  }
  Value **items = arena_alloc(A, sizeof(Value *) * (size_t)(cnt + 1));
  int64_t b[MLC_MAX_DIMS], e[MLC_MAX_DIMS], s[MLC_MAX_DIMS], sq[MLC_MAX_DIMS];
  for (int i = 0, j = 0; i < r; i++) {
    b[i] = 0, e[i] = x->type.dims[i], s[i] = 1;
    if (i != axis) sq[j++] = x->type.dims[i];
  }
  for (int i = 0, off = 0; i < cnt; off += (int)sizes[i++]) {
    b[axis] = off;
    e[axis] = off + sizes[i];
    Node *nd = onnx_emit(cx, n, "strided_slice", 1, &x, 1, d);
    if (nd) {
      Graph *g = onnx_graph(cx);
      ir_set_ints(g, nd, "begin", b, r);
      ir_set_ints(g, nd, "end", e, r);
      ir_set_ints(g, nd, "strides", s, r);
    }
    if ((st = onnx_finish_one(cx, n, nd, &items[i], d))) return st;
    if (squeeze && (st = emit_reshape(cx, n, items[i], r - 1, sq, &items[i], d))) return st;
  }
  outs[0] = onnx_seq_new(cx, n->output_names[0], x->type.dtype, cnt, items);
  return MLC_OK;
}

static mlc_status concat_from_seq(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const OnnxSeq *s;
  mlc_status st = need_seq(cx, n, &s, d);
  if (st) return st;
  if (s->n == 0)
    return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "ConcatFromSequence of an empty sequence (no output shape)");
  bool new_axis = onnx_attr_int(n, "new_axis", 0) != 0;
  int r = s->items[0]->type.ndim + (new_axis ? 1 : 0);
  if (!onnx_has_attr(n, "axis")) return onnx_error(cx, n, d, MLC_ERR_INVALID, "attribute 'axis' is missing");
  int64_t axis = onnx_attr_int(n, "axis", 0);
  if (axis < -r || axis >= r || r > MLC_MAX_DIMS)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld out of range for rank %d", (long long)axis, r);
  if (axis < 0) axis += r;
  Value **ins = arena_alloc(onnx_graph(cx)->arena, sizeof(Value *) * (size_t)s->n);
  for (int i = 0; i < s->n; i++) {
    ins[i] = s->items[i];
    if (!new_axis) continue;
    int64_t dims[MLC_MAX_DIMS];
    for (int k = 0, j = 0; k < r; k++) dims[k] = k == axis ? 1 : ins[i]->type.dims[j++];
    if ((st = emit_reshape(cx, n, ins[i], r, dims, &ins[i], d))) return st;
  }
  if (s->n == 1) return onnx_finish_one(cx, n, onnx_emit(cx, n, "copy", 1, ins, 1, d), &outs[0], d);
  Node *nd = onnx_emit(cx, n, "concatenate", s->n, ins, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "axis", axis);
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status seq_map(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  const OnnxSeq *s;
  mlc_status st = need_seq(cx, n, &s, d);
  if (st) return st;
  Arena *A = onnx_graph(cx)->arena;
  for (int j = 1; j < n->ninputs; j++) {
    const OnnxSeq *o = n->inputs[j] ? onnx_seq(n->inputs[j]) : NULL;
    if (!n->inputs[j]) return onnx_error(cx, n, d, MLC_ERR_INVALID, "input %d is missing", j);
    if (o && o->n != s->n)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "input %d is a sequence of %d items, input 0 one of %d", j, o->n,
                        s->n);
  }
  Value ***items = arena_alloc(A, sizeof(Value **) * (size_t)(n->noutputs + 1));
  for (int k = 0; k < n->noutputs; k++) items[k] = arena_alloc(A, sizeof(Value *) * (size_t)(s->n + 1));
  Value **bind = arena_alloc(A, sizeof(Value *) * (size_t)(n->ninputs + 1));
  for (int i = 0; i < s->n; i++) {
    for (int j = 0; j < n->ninputs; j++) {
      const OnnxSeq *o = onnx_seq(n->inputs[j]);
      bind[j] = o ? o->items[i] : n->inputs[j];
    }
    int nout = 0;
    Value **res = NULL;
    if ((st = onnx_inline_graph(cx, n, "body", arena_printf(A, "item%d", i), n->ninputs, bind, &nout, &res, d)))
      return st;
    if (nout != n->noutputs)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "the body has %d outputs, SequenceMap %d", nout, n->noutputs);
    for (int k = 0; k < nout; k++) {
      if ((st = need_tensor(cx, n, res[k], i ? items[k][0]->type.dtype : MLC_UNDEF, d))) return st;
      items[k][i] = res[k];
    }
  }
  for (int k = 0; k < n->noutputs; k++) {
    mlc_dtype t = s->n ? items[k][0]->type.dtype : onnx_body_output_dtype(n, "body", k);
    if (t == MLC_UNDEF)
      return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "the body declares no element type for output %d", k);
    outs[k] = onnx_seq_new(cx, n->output_names[k], t, s->n, items[k]);
  }
  return MLC_OK;
}

/* Optional (15): its input itself (an optional holding a value is that value), or the empty optional without
 * one; OptionalHasElement (15, 18): a constant, false for an empty optional or a missing input;
 * OptionalGetElement (15, 18): the value held (a tensor input itself), an error for an empty optional. */
static mlc_status optional_new(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  (void)d;
  outs[0] = n->ninputs > 0 && n->inputs[0] ? n->inputs[0] : onnx_none_new(cx, n->output_names[0]);
  return MLC_OK;
}

static mlc_status optional_has(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  (void)d;
  uint8_t has = n->ninputs > 0 && n->inputs[0] && !onnx_is_none(n->inputs[0]);
  outs[0] = onnx_const(cx, n->output_names[0], (TensorType){MLC_BOOL, 0, {0}}, &has);
  return MLC_OK;
}

static mlc_status optional_get(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  if (onnx_is_none(n->inputs[0])) return onnx_error(cx, n, d, MLC_ERR_INVALID, "the optional input is empty");
  outs[0] = n->inputs[0];
  return MLC_OK;
}

const OnnxConverter onnx_ops_sequence[] = {
    /* op_type             domain converter */
    {"SequenceEmpty", "", seq_empty},
    {"SequenceConstruct", "", seq_construct},
    {"SequenceLength", "", seq_length},
    {"SequenceAt", "", seq_at},
    {"SequenceInsert", "", seq_insert},
    {"SequenceErase", "", seq_erase},
    {"SplitToSequence", "", split_to_seq},
    {"ConcatFromSequence", "", concat_from_seq},
    {"SequenceMap", "", seq_map},
    {"Optional", "", optional_new},
    {"OptionalHasElement", "", optional_has},
    {"OptionalGetElement", "", optional_get},
    {0},
};
