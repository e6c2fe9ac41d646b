/* Run-time shape values followed symbolically (see onnx.h: OnnxSymShape).
 *
 * Shape of a value with a data-dependent extent is an int64 value computed at run time (convert_tensor.c:
 * the static dims as constants around the extent). Exported models do arithmetic on such shapes before they
 * use them: torchvision's detection heads take Shape, Gather one element, Unsqueeze it, Concat it with
 * constants and Reshape by the result. The graph computes those values at run time like any other, but a
 * Reshape, Expand or ConstantOfShape needs to know at compile time which output axis the run-time length
 * lands on. So after each ONNX node is converted, onnx_sym_propagate records, for an output that is still such
 * a shape, its elements: the static ones as numbers, and the one element that is the extent. Ops followed:
 * Shape (start / end), Gather of constant indices (axis 0), Slice with constant arguments, Concat of such
 * values and constants, and the element-order-keeping Identity, Cast to an integer type, Squeeze, Unsqueeze
 * and Reshape; Equal with constants where it is known at compile time (the extent is never negative), and
 * Where of a constant condition (torch's expand_as replaces -1 in a shape so). Arithmetic on the extent (Min,
 * Max, Add, ReduceMin, ReduceMax) gives elements known only by an upper bound (adding zeros keeps the other
 * operand): enough for a TopK's run-time K (min(1000, n) in torchvision's detection heads) to bound its
 * output by 1000 instead of n's bound, not for a Reshape, which refuses them as before. */
#include <string.h>
#include "frontends/onnx/internal.h"

static bool is_int(mlc_dtype t) { return t == MLC_I64 || t == MLC_I32; }

bool onnx_sym_shape(OnnxCtx *cx, const Value *v, OnnxSymShape *s) {
  for (int i = cx->nshapes - 1; v && i >= 0; i--)
    if (cx->shapes[i].v == v) {
      *s = cx->shapes[i].s;
      return true;
    }
  return false;
}

void onnx_note_sym(OnnxCtx *cx, const Value *v, const OnnxSymShape *s) {
  if (cx->nshapes == cx->capshapes) {
    int cap = cx->capshapes ? 2 * cx->capshapes : 16;
    void *p = arena_alloc(cx->arena, sizeof *cx->shapes * (size_t)cap);
    if (cx->nshapes) memcpy(p, cx->shapes, sizeof *cx->shapes * (size_t)cx->nshapes);
    cx->shapes = p;
    cx->capshapes = cap;
  }
  cx->shapes[cx->nshapes].v = v;
  cx->shapes[cx->nshapes++].s = *s;
}

/* v's elements as a symbolic shape: a recorded one, or a small integer constant (no extent) */
static bool elements(OnnxCtx *cx, const Value *v, OnnxSymShape *s) {
  if (onnx_sym_shape(cx, v, s)) return true;
  if (!v || !is_int(v->type.dtype) || v->type.ndim > 1 || tt_numel(&v->type) > MLC_MAX_DIMS) return false;
  int64_t vals[MLC_MAX_DIMS];
  int c = onnx_const_ints(v, vals, MLC_MAX_DIMS);
  if (c < 0) return false;
  *s = (OnnxSymShape){.n = c, .at = -1};
  memcpy(s->dims, vals, sizeof(int64_t) * (size_t)c);
  return true;
}

/* the symbolic shape of Shape(x)[b:e] */
static bool from_shape(const OnnxNode *n, OnnxSymShape *s) {
  const Value *x = n->inputs[0];
  if (!x->dyn_extent) return false;
  int r = x->type.ndim;
  int64_t b = onnx_attr_int(n, "start", 0), e = onnx_attr_int(n, "end", r);
  if (b < 0) b += r;
  if (e < 0) e += r;
  b = b < 0 ? 0 : b > r ? r : b;
  e = e < 0 ? 0 : e > r ? r : e;
  *s = (OnnxSymShape){.at = -1};
  for (int64_t i = b; i < e; i++) {
    if (i == x->dyn_axis) s->at = s->n, s->extent = x->dyn_extent, s->of = (Value *)x;
    s->dims[s->n++] = x->type.dims[i];
  }
  return true;
}

/* keeps the elements at the given positions of in (negative ones count from the end) */
static bool pick(const OnnxSymShape *in, const int64_t *idx, int cnt, OnnxSymShape *s) {
  *s = (OnnxSymShape){.at = -1};
  for (int i = 0; i < cnt; i++) {
    int64_t k = idx[i] < 0 ? idx[i] + in->n : idx[i];
    if (k < 0 || k >= in->n) return false;
    if (k == in->at) {
      if (s->at >= 0) return false; /* the extent twice: not followed */
      s->at = s->n, s->extent = in->extent, s->of = in->of;
    }
    if (in->bounded >> k & 1) s->bounded |= 1u << s->n, s->extent = in->extent, s->of = in->of;
    s->dims[s->n++] = in->dims[k];
  }
  return true;
}

static bool gather(OnnxCtx *cx, const OnnxNode *n, OnnxSymShape *s) {
  OnnxSymShape in;
  int64_t idx[MLC_MAX_DIMS];
  const Value *ix = n->ninputs > 1 ? n->inputs[1] : NULL;
  if (onnx_attr_int(n, "axis", 0) != 0 || !onnx_sym_shape(cx, n->inputs[0], &in) || !ix || ix->type.ndim > 1 ||
      tt_numel(&ix->type) > MLC_MAX_DIMS)
    return false;
  int c = onnx_const_ints(ix, idx, MLC_MAX_DIMS);
  return c >= 0 && pick(&in, idx, c, s);
}

/* Slice of a 1-D shape: ONNX's clamping of starts and ends, any non-zero step */
static bool slice(OnnxCtx *cx, const OnnxNode *n, OnnxSymShape *s) {
  OnnxSymShape in;
  if (!onnx_sym_shape(cx, n->inputs[0], &in)) return false;
  int64_t b, e, st = 1, ax = 0, v[2];
  if (n->opset < 10) {
    if (onnx_attr_ints(n, "starts", &b, 1) != 1 || onnx_attr_ints(n, "ends", &e, 1) != 1) return false;
    if (onnx_attr_ints(n, "axes", v, 2) == 1) ax = v[0];
  } else {
    for (int i = 1; i < 5; i++) {
      const Value *a = n->ninputs > i ? n->inputs[i] : NULL;
      if (!a) {
        if (i < 3) return false;
        continue;
      }
      if (onnx_const_ints(a, v, 2) != 1) return false;
      if (i == 1) b = v[0];
      else if (i == 2) e = v[0];
      else if (i == 3) ax = v[0];
      else st = v[0];
    }
  }
  int64_t dim = in.n;
  if ((ax != 0 && ax != -1) || st == 0) return false;
  onnx_slice_clamp(&b, &e, st, dim);
  int64_t idx[MLC_MAX_DIMS];
  int c = 0;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) idx[c++] = i;
  return pick(&in, idx, c, s);
}

static bool concat(OnnxCtx *cx, const OnnxNode *n, OnnxSymShape *s) {
  *s = (OnnxSymShape){.at = -1};
  bool any = false;
  for (int i = 0; i < n->ninputs; i++) {
    OnnxSymShape p;
    if (!n->inputs[i]) continue;
    if (n->inputs[i]->type.ndim != 1 || !elements(cx, n->inputs[i], &p) || s->n + p.n > MLC_MAX_DIMS) return false;
    any |= p.at >= 0;
    any |= p.bounded != 0;
    if (p.at >= 0 || p.bounded) {
      if ((s->at >= 0 || s->bounded) && p.extent != s->extent) return false;
      s->extent = p.extent, s->of = p.of;
    }
    if (p.at >= 0) {
      if (s->at >= 0) return false;
      s->at = s->n + p.at;
    }
    s->bounded |= p.bounded << s->n;
    memcpy(s->dims + s->n, p.dims, sizeof(int64_t) * (size_t)p.n);
    s->n += p.n;
  }
  return any;
}

/* the length of the numpy broadcast of 1-D operands of lengths len[0..k) (-1: they do not broadcast) */
static int bcast_len(const int *len, int k) {
  int r = 1;
  for (int i = 0; i < k; i++)
    if (len[i] != 1) {
      if (r != 1 && len[i] != r) return -1;
      r = len[i];
    }
  return r;
}

/* the upper bounds of elementwise Min / Max / Add of such values (numpy broadcasting of 1-D operands), or of
 * ReduceMin / ReduceMax over a 1-D one: every element is then only bounded */
static bool bound_arith(OnnxCtx *cx, const OnnxNode *n, const char *op, OnnxSymShape *s) {
  OnnxSymShape in[2];
  int nin = 0, lens[2];
  bool sym = false;
  for (int i = 0; i < n->ninputs; i++) {
    if (!n->inputs[i]) continue;
    if (nin == 2 || n->inputs[i]->type.ndim > 1 || !elements(cx, n->inputs[i], &in[nin])) return false;
    sym |= in[nin].at >= 0 || in[nin].bounded;
    lens[nin] = in[nin].n;
    nin++;
    if (op[0] == 'R') break; /* a reduction: its axes input is not an operand */
  }
  int len = bcast_len(lens, nin);
  if (!sym || nin == 0 || len < 0) return false;
  for (int i = 0; i < nin && nin == 2 && !strcmp(op, "Add"); i++) {
    /* adding constant zeros (torch's running offsets start at 0) keeps the other operand exactly */
    const OnnxSymShape *z = &in[i], *o = &in[1 - i];
    bool zeros = z->at < 0 && !z->bounded && (z->n == 1 || z->n == o->n);
    for (int k = 0; k < z->n && zeros; k++) zeros = z->dims[k] == 0;
    if (zeros && o->n == len) {
      *s = *o;
      return true;
    }
  }
  *s = (OnnxSymShape){.at = -1, .extent = in[0].at >= 0 || in[0].bounded ? in[0].extent : in[nin - 1].extent};
  s->of = in[0].at >= 0 || in[0].bounded ? in[0].of : in[nin - 1].of;
  if (op[0] == 'R') { /* ReduceMin / ReduceMax over the whole 1-D value (its only axis) */
    if (in[0].n == 0) return false;
    int64_t b = in[0].dims[0];
    for (int i = 1; i < in[0].n; i++)
      b = !strcmp(op, "ReduceMin") ? (in[0].dims[i] < b ? in[0].dims[i] : b) : (in[0].dims[i] > b ? in[0].dims[i] : b);
    *s = (OnnxSymShape){.n = 1, .at = -1, .bounded = 1, .dims = {b}, .extent = s->extent, .of = s->of};
    return true;
  }
  if (nin != 2) return false;
  s->n = len;
  for (int i = 0; i < len; i++) {
    int64_t a = in[0].dims[in[0].n == 1 ? 0 : i], b = in[1].dims[in[1].n == 1 ? 0 : i];
    /* an operand's upper bound bounds Min; Max and Add need both bounded from above (all elements are) */
    if (!strcmp(op, "Min")) s->dims[i] = a < b ? a : b;
    else if (!strcmp(op, "Max")) s->dims[i] = a > b ? a : b;
    else if (a > INT64_MAX / 2 || b > INT64_MAX / 2) return false;
    else s->dims[i] = a + b;
    s->bounded |= 1u << i;
  }
  return true;
}

/* Equal of such a value and constants (torch's expand_as compares a shape with -1): known at compile time where
 * both elements are static, and where the extent (at least 0, at most its bound) meets a number out of that
 * range; the result (no extent) is then folded to a constant by the importer */
static bool equal(OnnxCtx *cx, const OnnxNode *n, OnnxSymShape *s) {
  OnnxSymShape in[2];
  if (n->ninputs != 2) return false;
  for (int i = 0; i < 2; i++)
    if (!n->inputs[i] || n->inputs[i]->type.ndim > 1 || !elements(cx, n->inputs[i], &in[i]) || in[i].bounded) return false;
  int lens[2] = {in[0].n, in[1].n}, len = bcast_len(lens, 2);
  if (len < 0 || (in[0].at < 0 && in[1].at < 0)) return false;
  *s = (OnnxSymShape){.n = len, .at = -1};
  for (int i = 0; i < len; i++) {
    int ka = in[0].n == 1 ? 0 : i, kb = in[1].n == 1 ? 0 : i;
    int64_t a = in[0].dims[ka], b = in[1].dims[kb];
    bool ea = ka == in[0].at, eb = kb == in[1].at;
    if (ea && eb) return false;
    if (ea || eb) {
      int64_t c = ea ? b : a, bound = ea ? a : b;
      if (c >= 0 && c <= bound) return false;
      s->dims[i] = 0;
    } else {
      s->dims[i] = a == b;
    }
  }
  return true;
}

/* Where of a constant condition picks each element from one of two such values (or constants) */
static bool where(OnnxCtx *cx, const OnnxNode *n, OnnxSymShape *s) {
  OnnxSymShape in[2];
  int64_t c[MLC_MAX_DIMS];
  const Value *cv = n->ninputs == 3 ? n->inputs[0] : NULL;
  if (!cv || cv->type.ndim > 1 || tt_numel(&cv->type) > MLC_MAX_DIMS) return false;
  int nc = onnx_const_ints(cv, c, MLC_MAX_DIMS);
  if (nc < 1) return false;
  for (int i = 0; i < 2; i++)
    if (!n->inputs[i + 1] || n->inputs[i + 1]->type.ndim > 1 || !elements(cx, n->inputs[i + 1], &in[i])) return false;
  int lens[3] = {nc, in[0].n, in[1].n}, len = bcast_len(lens, 3);
  if (len < 0) return false;
  *s = (OnnxSymShape){.n = len, .at = -1};
  bool has = false;
  for (int i = 0; i < len; i++) {
    const OnnxSymShape *p = &in[c[nc == 1 ? 0 : i] ? 0 : 1];
    int k = p->n == 1 ? 0 : i;
    bool at = k == p->at, bounded = p->bounded >> k & 1;
    if (at || bounded) {
      if (has && p->extent != s->extent) return false;
      has = true, s->extent = p->extent, s->of = p->of;
    }
    if (at) {
      if (s->at >= 0) return false; /* the extent twice: not followed */
      s->at = i;
    }
    if (bounded) s->bounded |= 1u << i;
    s->dims[i] = p->dims[k];
  }
  return has;
}

void onnx_sym_propagate(OnnxCtx *cx, const OnnxNode *n, Value **outs) {
  if (*n->domain || n->noutputs < 1 || !outs[0] || outs[0]->type.ndim > 1 || n->ninputs < 1 || !n->inputs[0])
    return;
  const char *op = n->op_type;
  if (!is_int(outs[0]->type.dtype) && !(outs[0]->type.dtype == MLC_BOOL && !strcmp(op, "Equal"))) return;
  OnnxSymShape s;
  bool ok = false;
  if (!strcmp(op, "Shape")) ok = from_shape(n, &s);
  else if (!strcmp(op, "Gather")) ok = gather(cx, n, &s);
  else if (!strcmp(op, "Slice")) ok = slice(cx, n, &s);
  else if (!strcmp(op, "Concat")) ok = concat(cx, n, &s);
  else if (!strcmp(op, "Equal")) ok = equal(cx, n, &s);
  else if (!strcmp(op, "Where")) ok = where(cx, n, &s);
  else if (!strcmp(op, "Min") || !strcmp(op, "Max") || !strcmp(op, "Add")) ok = bound_arith(cx, n, op, &s);
  else if ((!strcmp(op, "ReduceMin") || !strcmp(op, "ReduceMax")) && n->inputs[0]->type.ndim == 1)
    ok = bound_arith(cx, n, op, &s);
  else if (!strcmp(op, "Identity") || !strcmp(op, "Cast") || !strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") ||
           !strcmp(op, "Reshape"))
    ok = onnx_sym_shape(cx, n->inputs[0], &s) && tt_numel(&outs[0]->type) == s.n;
  if (ok && s.n == tt_numel(&outs[0]->type)) onnx_note_sym(cx, outs[0], &s);
}
