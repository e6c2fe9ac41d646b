/* ONNX converters of the signal family (see families.def), onto the ops of src/topi/signal.c.
 *
 *   DFT (17: axis attribute, default 1; 20: axis input, default -2) -> signal.twiddle + signal.dft: the axis
 *        in [-r, -2] or [0, r-2] made non-negative; dft_length from the optional input (a compile-time
 *        constant), by default the axis length (2 * (length - 1) for the IRFFT: onesided=1, inverse=1);
 *        inverse, onesided. Real ([..., 1]) and complex ([..., 2]) inputs; float16, bfloat16, float, double.
 *   STFT (17) -> signal.twiddle + signal.stft: frame_step and frame_length are compile-time constants;
 *        frame_length defaults to the window's length, else the signal's (the reference's rule); onesided
 *        (default 1).
 *   HannWindow, HammingWindow, BlackmanWindow (17) -> signal.window: size a compile-time constant; periodic
 *        (default 1), output_datatype (default float).
 *   MelWeightMatrix (17) -> signal.mel_weight_matrix: all five inputs compile-time constants (the shape
 *        depends on num_mel_bins and dft_length, the band edges on the others); output_datatype.
 * float32 transforms whose DFT matrix is at most 16 MiB run as a GEMM instead: DFT as transpose (the axis
 * next to the complex dim) + reshape + nn.dense with signal.dft_matrix + reshape + transpose back, STFT as
 * signal.frames (the windowed frames) + nn.dense with signal.dft_matrix + reshape. The twiddle table and the
 * matrix are nodes of their own with no input: FoldConstant computes them once, at compile time. */
#include <math.h>
#include <string.h>
#include "frontends/onnx/onnx.h"
#include "passes/graph/passes.h"

static bool has_input(const OnnxNode *n, int i) { return n->ninputs > i && n->inputs[i]; }

static mlc_status not_constant(OnnxCtx *cx, const OnnxNode *n, const char *names, Diag *d) {
  return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED,
                    "%s needs input%s %s known at compile time (a constant or initializer)", n->op_type,
                    strchr(names, ',') ? "s" : "", names);
}

/* a one-element integer input as a constant; false if it is not one */
static bool const_int(const Value *v, int64_t *out) {
  return v && tt_numel(&v->type) == 1 && onnx_const_ints(v, out, 1) == 1;
}

static double half_bits(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return h >> 15 ? -v : v;
}

/* a one-element float input as a double: a constant, or a value computed from constants only; false if not */
static bool const_float(OnnxCtx *cx, Value *v, double *out) {
  if (!v || tt_numel(&v->type) != 1) return false;
  const void *p = v->data;
  if (!p && v->producer) {
    void *data = NULL;
    Diag tmp = {0};
    if (pass_evaluate(onnx_graph(cx), v, &data, &tmp) != MLC_OK) return false;
    p = data;
  }
  if (!p) return false;
  switch (v->type.dtype) {
  case MLC_F32: *out = *(const float *)p; return true;
  case MLC_F64: *out = *(const double *)p; return true;
  case MLC_F16: *out = half_bits(*(const uint16_t *)p, false); return true;
  case MLC_BF16: *out = half_bits(*(const uint16_t *)p, true); return true;
  default: return false;
  }
}

/* a scalar integer input that must be a compile-time constant; names it by its tensor name */
static mlc_status const_scalar(OnnxCtx *cx, const OnnxNode *n, int i, const char *what, int64_t *v, Diag *d) {
  if (!has_input(n, i)) return onnx_error(cx, n, d, MLC_ERR_INVALID, "input '%s' is missing", what);
  if (tt_numel(&n->inputs[i]->type) != 1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "input '%s' must have one element", what);
  if (!const_int(n->inputs[i], v))
    return not_constant(cx, n, arena_printf(onnx_graph(cx)->arena, "'%s' (%s)", n->inputs[i]->name, what), d);
  return MLC_OK;
}

/* the twiddle table of length L */
static mlc_status emit_twiddle(OnnxCtx *cx, const OnnxNode *n, int64_t L, Value **out, Diag *d) {
  Node *nd = onnx_emit(cx, n, "signal.twiddle", 0, NULL, 1, d);
  if (nd) ir_set_int(onnx_graph(cx), nd, "length", L);
  return onnx_finish_one(cx, n, nd, out, d);
}

/* ---- the matrix form: float32 transforms whose DFT matrix is small run as nn.dense with a constant matrix
 * (folded at compile time, packed by AlterOpLayout), the GEMM template's speed instead of a scalar reduction */
#define MATRIX_MAX_BYTES (16 << 20)

static bool matrix_fits(mlc_dtype t, int64_t rows, int64_t cols) {
  return t == MLC_F32 && rows <= MATRIX_MAX_BYTES && cols <= MATRIX_MAX_BYTES && rows * cols * 4 <= MATRIX_MAX_BYTES;
}

static Node *emit_attr_ints(OnnxCtx *cx, const OnnxNode *n, const char *op, Value *x, const char *attr,
                            const int64_t *v, int cnt, Diag *d) {
  Node *nd = onnx_emit(cx, n, op, 1, &x, 1, d);
  if (nd) ir_set_ints(onnx_graph(cx), nd, attr, v, cnt);
  return nd;
}

/* y = nn.dense(x, W) with W = signal.dft_matrix(...) [bins * cout, terms * cin] */
static mlc_status emit_matrix_dense(OnnxCtx *cx, const OnnxNode *n, Value *x, int64_t L, int64_t bins, int64_t terms,
                                    int64_t used, int64_t cin, int64_t cout, bool inverse, Value **out, Diag *d) {
  Node *nd = onnx_emit(cx, n, "signal.dft_matrix", 0, NULL, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "length", L);
    ir_set_int(g, nd, "bins", bins);
    ir_set_int(g, nd, "terms", terms);
    ir_set_int(g, nd, "used", used);
    ir_set_int(g, nd, "cin", cin);
    ir_set_int(g, nd, "cout", cout);
    ir_set_int(g, nd, "inverse", inverse);
  }
  Value *ins[2] = {x, NULL};
  mlc_status st = onnx_finish_one(cx, n, nd, &ins[1], d);
  if (st) return st;
  return onnx_finish_one(cx, n, onnx_emit(cx, n, "nn.dense", 2, ins, 1, d), out, d);
}

/* DFT as transpose (the axis next to the complex dim) + reshape + dense + reshape + transpose back */
static mlc_status dft_as_matrix(OnnxCtx *cx, const OnnxNode *n, Value *x, int axis, int64_t L, int64_t bins,
                                int64_t used, int64_t cout, bool inverse, Value **out, Diag *d) {
  int r = x->type.ndim;
  int64_t N = x->type.dims[axis], C = x->type.dims[r - 1];
  int64_t perm[MLC_MAX_DIMS], inv[MLC_MAX_DIMS], shape[MLC_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < r - 1; i++)
    if (i != axis) perm[k++] = i;
  perm[k++] = axis;
  perm[k++] = r - 1;
  bool moved = axis != r - 2;
  Value *t = x;
  mlc_status st;
  if (moved && (st = onnx_finish_one(cx, n, emit_attr_ints(cx, n, "transpose", t, "axes", perm, r, d), &t, d))) return st;
  for (int i = 0; i < r - 2; i++) shape[i] = t->type.dims[i];
  shape[r - 2] = N * C;
  if ((st = onnx_finish_one(cx, n, emit_attr_ints(cx, n, "reshape", t, "newshape", shape, r - 1, d), &t, d))) return st;
  if ((st = emit_matrix_dense(cx, n, t, L, bins, N, used, C, cout, inverse, &t, d))) return st;
  shape[r - 2] = bins;
  shape[r - 1] = cout;
  if ((st = onnx_finish_one(cx, n, emit_attr_ints(cx, n, "reshape", t, "newshape", shape, r, d), moved ? &t : out, d)))
    return st;
  if (!moved) return MLC_OK;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  return onnx_finish_one(cx, n, emit_attr_ints(cx, n, "transpose", t, "axes", inv, r, d), out, d);
}

static mlc_status dft_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  Value *x = n->inputs[0];
  int r = x->type.ndim;
  bool inverse = onnx_attr_int(n, "inverse", 0) != 0, onesided = onnx_attr_int(n, "onesided", 0) != 0;
  int64_t axis = 1, L;
  if (n->opset < 20) axis = onnx_attr_int(n, "axis", 1);
  else if (!has_input(n, 2)) axis = -2;
  else if ((st = const_scalar(cx, n, 2, "axis", &axis, d))) return st;
  if (r < 2 || axis < -r || axis > r - 2 || axis == -1)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "axis %lld is not in [-%d, -2] or [0, %d]", (long long)axis, r,
                      r - 2);
  if (axis < 0) axis += r;
  int64_t N = x->type.dims[axis];
  if (has_input(n, 1)) {
    if ((st = const_scalar(cx, n, 1, "dft_length", &L, d))) return st;
  } else {
    L = onesided && inverse ? 2 * (N - 1) : N;
  }
  if (L < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "the DFT length %lld is not positive", (long long)L);
  int64_t C = x->type.dims[r - 1], cout = onesided && inverse ? 1 : 2;
  int64_t bins = onesided && !inverse ? L / 2 + 1 : L, terms = onesided && inverse ? L / 2 + 1 : L;
  if ((C == 1 || C == 2) && matrix_fits(x->type.dtype, bins * cout, N * C))
    return dft_as_matrix(cx, n, x, (int)axis, L, bins, N < terms ? N : terms, cout, inverse, &outs[0], d);
  Value *ins[2] = {x, NULL};
  if ((st = emit_twiddle(cx, n, L, &ins[1], d))) return st;
  Node *nd = onnx_emit(cx, n, "signal.dft", 2, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "axis", axis);
    ir_set_int(g, nd, "length", L);
    ir_set_int(g, nd, "inverse", inverse);
    ir_set_int(g, nd, "onesided", onesided);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status stft_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 2, d);
  if (st) return st;
  Value *x = n->inputs[0], *window = has_input(n, 2) ? n->inputs[2] : NULL;
  if (x->type.ndim != 3)
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "the signal must be [batch, length, 1 or 2], not rank %d",
                      x->type.ndim);
  int64_t step, L;
  if ((st = const_scalar(cx, n, 1, "frame_step", &step, d))) return st;
  if (has_input(n, 3)) {
    if ((st = const_scalar(cx, n, 3, "frame_length", &L, d))) return st;
  } else {
    L = window && window->type.ndim == 1 ? window->type.dims[0] : x->type.dims[1];
  }
  Value *ins[3] = {x, NULL, window};
  if (L < 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "frame_length %lld is not positive", (long long)L);
  int64_t S = x->type.dims[1], C = x->type.dims[2], bins = onnx_attr_int(n, "onesided", 1) ? L / 2 + 1 : L;
  int64_t used = window && window->type.ndim == 1 && window->type.dims[0] < L ? window->type.dims[0] : L;
  if (step >= 1 && L <= S && (C == 1 || C == 2) && used >= 1 && matrix_fits(x->type.dtype, bins * 2, used * C)) {
    /* frames [B, F, used * C] (windowed), then the matrix */
    Node *nd = onnx_emit(cx, n, "signal.frames", window ? 2 : 1, (Value *[]){x, window}, 1, d);
    if (nd) {
      Graph *g = onnx_graph(cx);
      ir_set_int(g, nd, "step", step);
      ir_set_int(g, nd, "frames", 1 + (S - L) / step);
      ir_set_int(g, nd, "count", used);
    }
    Value *t;
    if ((st = onnx_finish_one(cx, n, nd, &t, d))) return st;
    if ((st = emit_matrix_dense(cx, n, t, L, bins, used, used, C, 2, false, &t, d))) return st;
    int64_t shape[4] = {t->type.dims[0], t->type.dims[1], bins, 2};
    return onnx_finish_one(cx, n, emit_attr_ints(cx, n, "reshape", t, "newshape", shape, 4, d), &outs[0], d);
  }
  if ((st = emit_twiddle(cx, n, L, &ins[1], d))) return st;
  Node *nd = onnx_emit(cx, n, "signal.stft", window ? 3 : 2, ins, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "step", step);
    ir_set_int(g, nd, "length", L);
    ir_set_int(g, nd, "onesided", onnx_attr_int(n, "onesided", 1) != 0);
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status window_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 1, d);
  if (st) return st;
  int64_t size;
  if ((st = const_scalar(cx, n, 0, "size", &size, d))) return st;
  const char *kind = !strcmp(n->op_type, "HannWindow") ? "hann" : !strcmp(n->op_type, "HammingWindow") ? "hamming"
                                                                                                        : "blackman";
  Node *nd = onnx_emit(cx, n, "signal.window", 0, NULL, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_string(g, nd, "window", kind);
    ir_set_int(g, nd, "size", size);
    ir_set_int(g, nd, "periodic", onnx_attr_int(n, "periodic", 1) != 0);
    ir_set_int(g, nd, "dtype", onnx_attr_int(n, "output_datatype", MLC_F32));
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

static mlc_status mel_convert(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  mlc_status st = onnx_need_inputs(cx, n, 5, d);
  if (st) return st;
  static const char *what[5] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"};
  int64_t iv[3];
  double fv[2];
  char missing[1024] = "";
  for (int i = 0; i < 5; i++) {
    Value *v = n->inputs[i];
    if (tt_numel(&v->type) != 1)
      return onnx_error(cx, n, d, MLC_ERR_INVALID, "input '%s' must have one element", what[i]);
    if (i < 3 ? const_int(v, &iv[i]) : const_float(cx, v, &fv[i - 3])) continue;
    size_t len = strlen(missing);
    snprintf(missing + len, sizeof missing - len, "%s'%s' (%s)", len ? ", " : "", v->name, what[i]);
  }
  if (missing[0]) return not_constant(cx, n, missing, d);
  Node *nd = onnx_emit(cx, n, "signal.mel_weight_matrix", 0, NULL, 1, d);
  if (nd) {
    Graph *g = onnx_graph(cx);
    ir_set_int(g, nd, "num_mel_bins", iv[0]);
    ir_set_int(g, nd, "dft_length", iv[1]);
    ir_set_int(g, nd, "sample_rate", iv[2]);
    ir_set_float(g, nd, "lower_edge_hertz", fv[0]);
    ir_set_float(g, nd, "upper_edge_hertz", fv[1]);
    ir_set_int(g, nd, "dtype", onnx_attr_int(n, "output_datatype", MLC_F32));
  }
  return onnx_finish_one(cx, n, nd, &outs[0], d);
}

const OnnxConverter onnx_ops_signal[] = {
    {"DFT", "", dft_convert},
    {"STFT", "", stft_convert},
    {"HannWindow", "", window_convert},
    {"HammingWindow", "", window_convert},
    {"BlackmanWindow", "", window_convert},
    {"MelWeightMatrix", "", mel_convert},
    {0},
};
