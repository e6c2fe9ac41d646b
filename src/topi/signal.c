/* topi signal family: discrete Fourier transforms, the short-time Fourier transform, window functions and
 * the mel filter bank (the ONNX signal-processing ops).
 *
 *   signal.twiddle()        attr length L: tw[m] = (cos 2*pi*m/L, sin 2*pi*m/L), float64 [L, 2]. It has
 *                           no input, so FoldConstant turns it into a constant: the transforms below read it.
 *   signal.dft(x, tw)       x [..., N (axis), ..., C] with C = 1 (real) or 2 (complex: re, im); attrs axis
 *                           (non-negative, not the last dim), length L (the DFT length), inverse, onesided.
 *       onesided=0:            y[.., k, .., :] = sum_{n < min(N, L)} x[n] e^{-+2 pi i k n / L} (/ L when inverse),
 *                              k in [0, L), output [..., L, ..., 2] (input zero-padded or truncated to L);
 *       onesided=1, inverse=0: the same with k in [0, L/2] (RFFT), output [..., L/2 + 1, ..., 2];
 *       onesided=1, inverse=1: IRFFT: x is the one-sided spectrum of a real signal of length L (bins beyond
 *                              L/2 dropped, missing ones zero); y[n] = (1/L) sum_{k <= L/2} w_k Re(X_k e^{2 pi i
 *                              k n / L}), w_k = 1 for k = 0 and k = L/2 (L even), 2 otherwise (the Hermitian
 *                              extension, as numpy.fft.irfft); output [..., L, ..., 1].
 *   signal.stft(x, tw[, window])  x [B, S, C]; attrs step, length L, onesided:
 *                           y[b, f, k, :] = sum_{n < min(W, L)} x[b, f*step + n] window[n] e^{-2 pi i k n / L},
 *                           W the window's length (L without window), k in [0, L) or [0, L/2] (onesided),
 *                           F = 1 + (S - L) / step, so every sample read lies inside the signal. Output
 *                           [B, F, bins, 2].
 *   signal.dft_matrix()     attrs length L, bins K, terms T, used U, cin, cout, inverse: the same transforms
 *                           as a float32 matrix W [K * cout, T * cin], W[(k, c), (n, c')] the coefficient of
 *                           x[n, c'] in y[k, c] (rows n >= U zero: truncation), so that y = nn.dense(x, W):
 *                           [[cos, s sin], [-s sin, cos]] (s = 1 forward, -1 inverse, / L inverse) for
 *                           cout = 2, (w_n / L) [cos, -sin] for the IRFFT (cout = 1); angles from (k * n) mod L.
 *   signal.frames(x[, window])  attrs step, frames F, count U: the STFT's windowed frames
 *                           [B, F, U * C], out[b, f, n * C + c] = x[b, f * step + n, c] * window[n].
 *   signal.window()         attrs window ("hann" | "hamming" | "blackman"), size, periodic, dtype: with
 *                           N = size (periodic) or size - 1 (symmetric), n in [0, size):
 *                           hann sin^2(pi n / N), hamming 25/46 - 21/46 cos(2 pi n / N),
 *                           blackman 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N).
 *   signal.mel_weight_matrix()  attrs num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
 *                           upper_edge_hertz, dtype: the triangular filter bank of the ONNX reference, shape
 *                           [dft_length / 2 + 1, num_mel_bins].
 * Algorithms, all TE computes:
 *   - the transforms are reductions over the signal (or spectrum) axis; the phase index (k * n) mod L picks
 *     the twiddle factor from the table, so the angle is reduced exactly in integers and the cos / sin are
 *     computed once per table entry in float64 (accurate for any L), not once per term. Accumulation is in
 *     float64 for every input dtype (the reduction loop is scalar, so it costs little): the exact zeros of a
 *     transform stay near 1e-16 * max|x| instead of float32's N * 6e-8 * max|x|; a second stage scales by
 *     1/L (inverse) and casts to x's dtype. Each output component reads only the input components and
 *     the twiddle entries it needs (a real input: one product per term). The work is O(N * L) per
 *     transformed row, a scalar loop (a few ns per term and component).
 *   - the matrix form (what the importer uses for float32 transforms whose matrix is at most 16 MiB): the
 *     matrix has no input, so FoldConstant computes it once (float64 angles and products, then float32) and
 *     AlterOpLayout packs it for the dense template: the transform is a GEMM (a 30 s, 16 kHz STFT with
 *     400-sample frames: 26 ms instead of 1.5 s for the reduction). Larger transforms (the matrix grows as
 *     L^2) and other dtypes keep the reduction.
 *   - windows are computed in float64 from the index, then cast to the output dtype.
 *   - the mel filter bank: the num_mel_bins + 2 band edges (spectrogram bins) are computed here, at compile
 *     time, in float64 as the reference does (mel = 2595 log10(1 + f / 700), equally spaced in mel over
 *     num_mel_bins + 2 steps, back to Hz, bin = floor((dft_length + 1) f / sample_rate)); each element picks
 *     its column's three edges (left, center, right) by a balanced select tree on the column index and
 *     evaluates the triangle: rising (j - left) / (center - left) on [left, center], falling
 *     (right - j) / (right - center) on [center, right), 1 at the center of a band whose left edge equals its
 *     center. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "topi/topi.h"

static Expr *to(TeCtx *c, mlc_dtype t, Expr *e) { return e->dtype == t ? e : tir_cast(c->arena, t, e); }

/* an output dtype attribute: any numeric dtype mlc has (not bool or string) */
static mlc_status out_dtype(const Node *n, int64_t dflt, mlc_dtype *t, Diag *d) {
  int64_t v = ir_attr_int(n, "dtype", dflt);
  bool ok = v > 0 && v < MLC_DTYPE_COUNT && v != MLC_STRING && v != MLC_BOOL && mlc_dtype_size((mlc_dtype)v) > 0;
  if (!ok) return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: output data type %lld is not supported", n->op->name, (long long)v);
  *t = (mlc_dtype)v;
  return MLC_OK;
}

/* ---------------------------------------------------------------- twiddle table */

static mlc_status twiddle_infer(Node *n, Diag *d) {
  int64_t L = ir_attr_int(n, "length", 0);
  if (L < 1) return diag_set(d, MLC_ERR_INVALID, "signal.twiddle: length %lld must be positive", (long long)L);
  n->outputs[0]->type = (TensorType){.dtype = MLC_F64, .ndim = 2, .dims = {L, 2}};
  return MLC_OK;
}

static Expr *twiddle_body(TeCtx *c, Expr **idx, void *user) {
  const int64_t *L = user;
  Arena *A = c->arena;
  /* 2 pi m / L in float64: m < L, so the argument is already reduced to [0, 2 pi) */
  Expr *ang = tir_mul(A, tir_cast(A, MLC_F64, idx[0]), tir_float(A, MLC_F64, 2.0 * M_PI / (double)*L));
  Expr *cs = tir_call(A, INTRIN_COS, MLC_F64, 1, &ang), *sn = tir_call(A, INTRIN_SIN, MLC_F64, 1, &ang);
  return tir_select(A, tir_bin(A, E_EQ, idx[1], tir_idx(A, 0)), cs, sn);
}

static mlc_status twiddle_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)ins, (void)d;
  const TensorType *o = &n->outputs[0]->type;
  int64_t *L = arena_alloc(c->arena, sizeof *L);
  *L = o->dims[0];
  outs[0] = te_compute(c, "twiddle", "injective", o->dtype, o->ndim, o->dims, twiddle_body, L);
  return MLC_OK;
}

/* ---------------------------------------------------------------- dft */

typedef enum DftMode { DFT_FULL, DFT_RFFT, DFT_IRFFT } DftMode;

typedef struct DftCtx {
  TeTensor *x, *tw, *window, *acc;
  int axis;       /* dft: the transformed axis of x */
  DftMode mode;
  bool inverse;
  int64_t L;      /* the DFT length */
  int64_t nsum;   /* terms per output element */
  int64_t step;   /* stft: samples between frames */
  double scale;   /* 1/L for inverse transforms, else 1 */
  mlc_dtype acc_t;
} DftCtx;

static mlc_status check_tw(const Node *n, int64_t L, Diag *d) {
  const TensorType *tw = &n->inputs[1]->type;
  if (tw->ndim != 2 || tw->dims[0] != L || tw->dims[1] != 2 || tw->dtype != MLC_F64)
    return diag_set(d, MLC_ERR_INVALID, "%s: the twiddle table must be [%lld, 2] float64", n->op->name, (long long)L);
  return MLC_OK;
}

static mlc_status dft_parse(const Node *n, DftCtx *k, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  memset(k, 0, sizeof *k);
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "signal.dft of %s is not supported", mlc_dtype_name(x->dtype));
  if (x->ndim < 2 || (x->dims[x->ndim - 1] != 1 && x->dims[x->ndim - 1] != 2))
    return diag_set(d, MLC_ERR_INVALID, "signal.dft: the input's last dim must be 1 (real) or 2 (complex)");
  int64_t axis = ir_attr_int(n, "axis", 1);
  if (axis < 0 || axis > x->ndim - 2)
    return diag_set(d, MLC_ERR_INVALID, "signal.dft: axis %lld is not in [0, %d]", (long long)axis, x->ndim - 2);
  k->axis = (int)axis;
  k->L = ir_attr_int(n, "length", 0);
  if (k->L < 1) return diag_set(d, MLC_ERR_INVALID, "signal.dft: dft_length %lld must be positive", (long long)k->L);
  k->inverse = ir_attr_int(n, "inverse", 0) != 0;
  bool onesided = ir_attr_int(n, "onesided", 0) != 0;
  k->mode = !onesided ? DFT_FULL : k->inverse ? DFT_IRFFT : DFT_RFFT;
  int64_t N = x->dims[axis];
  k->nsum = k->mode == DFT_IRFFT ? (N < k->L / 2 + 1 ? N : k->L / 2 + 1) : (N < k->L ? N : k->L);
  k->scale = k->inverse ? 1.0 / (double)k->L : 1.0;
  k->acc_t = MLC_F64;
  return check_tw(n, k->L, d);
}

static mlc_status dft_infer(Node *n, Diag *d) {
  DftCtx k;
  mlc_status st = dft_parse(n, &k, d);
  if (st) return st;
  TensorType o = n->inputs[0]->type;
  o.dims[k.axis] = k.mode == DFT_RFFT ? k.L / 2 + 1 : k.L;
  o.dims[o.ndim - 1] = k.mode == DFT_IRFFT ? 1 : 2;
  n->outputs[0]->type = o;
  return MLC_OK;
}

/* x at idx with the dim `dim` replaced by pos and the last (complex) dim by comp */
static Expr *read_x(TeCtx *c, DftCtx *k, Expr **idx, int dim, Expr *pos, Expr *comp) {
  TeTensor *x = k->x;
  Expr *xi[MLC_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) xi[i] = i == dim ? pos : idx[i];
  xi[x->ndim - 1] = comp;
  return to(c, k->acc_t, te_read(c, x, x->ndim, xi));
}

static bool is_real(const DftCtx *k) { return k->x->shape[k->x->ndim - 1] == 1; }

/* twiddle table entry (phase mod L, comp): cos (comp 0) or sin (comp 1) of 2 pi phase / L */
static Expr *twiddle(TeCtx *c, DftCtx *k, Expr *phase, Expr *comp) {
  Arena *A = c->arena;
  return te_read(c, k->tw, 2, (Expr *[]){tir_bin(A, E_FLOORMOD, phase, tir_idx(A, k->L)), comp});
}

/* Component comp (an index expression: 0 real, 1 imaginary) of x[pos] * e^{-+i theta}, theta = 2 pi phase / L
 * (- forward, + inverse), reading only what that component needs. With x = a + ib: re = a cos +- b sin and
 * im = b cos -+ a sin, that is x[comp] cos + s x[1 - comp] sin with s = 1 - 2 comp (forward) or 2 comp - 1
 * (inverse); a real input (b = 0) gives a * tw[phase, comp] * (comp == 0 ? 1 : -+1). */
static Expr *rotated(TeCtx *c, DftCtx *k, Expr **idx, int dim, Expr *pos, Expr *phase, Expr *comp) {
  Arena *A = c->arena;
  Expr *zero = tir_idx(A, 0), *one = tir_idx(A, 1);
  if (is_real(k)) {
    Expr *v = tir_mul(A, read_x(c, k, idx, dim, pos, zero), twiddle(c, k, phase, comp));
    if (k->inverse) return v;
    return tir_mul(A, v, tir_select(A, tir_bin(A, E_EQ, comp, zero), tir_float(A, k->acc_t, 1), tir_float(A, k->acc_t, -1)));
  }
  Expr *same = read_x(c, k, idx, dim, pos, comp), *other = read_x(c, k, idx, dim, pos, tir_sub(A, one, comp));
  Expr *s = tir_cast(A, k->acc_t, tir_sub(A, one, tir_mul(A, tir_idx(A, 2), comp)));
  if (k->inverse) s = tir_sub(A, tir_float(A, k->acc_t, 0), s);
  return tir_add(A, tir_mul(A, same, twiddle(c, k, phase, zero)), tir_mul(A, tir_mul(A, other, twiddle(c, k, phase, one)), s));
}

static Expr *dft_body(TeCtx *c, Expr **idx, void *user) {
  DftCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "n", k->nsum);
  Expr *n = tir_varref(A, r->var), *j = idx[k->axis];
  Expr *v;
  if (k->mode == DFT_IRFFT) { /* n walks the spectrum, j the output samples: Re(X_n e^{+i theta}) */
    v = rotated(c, k, idx, k->axis, n, tir_mul(A, n, j), tir_idx(A, 0));
    Expr *single = tir_bin(A, E_OR, tir_bin(A, E_EQ, n, tir_idx(A, 0)),
                           tir_bin(A, E_EQ, tir_mul(A, n, tir_idx(A, 2)), tir_idx(A, k->L)));
    v = tir_mul(A, v, tir_select(A, single, tir_float(A, k->acc_t, 1), tir_float(A, k->acc_t, 2)));
  } else {
    v = rotated(c, k, idx, k->axis, n, tir_mul(A, j, n), idx[k->x->ndim - 1]);
  }
  return te_reduce(c, RED_SUM, v, 1, &r, NULL, NULL);
}

/* the result from the accumulator: scaled (inverse transforms) and cast to the input's dtype */
static Expr *scale_body(TeCtx *c, Expr **idx, void *user) {
  DftCtx *k = user;
  Expr *v = te_read(c, k->acc, k->acc->ndim, idx);
  if (k->scale != 1.0) v = tir_mul(c->arena, v, tir_float(c->arena, k->acc_t, k->scale));
  return to(c, k->x->dtype, v);
}

static TeTensor *finish(TeCtx *c, DftCtx *k, const char *name, const TensorType *o) {
  if (k->scale == 1.0 && k->acc_t == k->x->dtype) return k->acc;
  return te_compute(c, arena_printf(c->arena, "%s_out", name), "elemwise", o->dtype, o->ndim, o->dims, scale_body, k);
}

static mlc_status dft_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  DftCtx *k = arena_alloc(c->arena, sizeof *k);
  mlc_status st = dft_parse(n, k, d);
  if (st) return st;
  k->x = ins[0];
  k->tw = ins[1];
  const TensorType *o = &n->outputs[0]->type;
  k->acc = te_compute(c, "dft", "reduce", k->acc_t, o->ndim, o->dims, dft_body, k);
  outs[0] = finish(c, k, "dft", o);
  return MLC_OK;
}

/* ---------------------------------------------------------------- stft */

static mlc_status stft_parse(const Node *n, DftCtx *k, int64_t *frames, int64_t *bins, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  const TensorType *w = n->ninputs > 2 && n->inputs[2] ? &n->inputs[2]->type : NULL;
  memset(k, 0, sizeof *k);
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "signal.stft of %s is not supported", mlc_dtype_name(x->dtype));
  if (x->ndim != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return diag_set(d, MLC_ERR_INVALID, "signal.stft: the signal must be [batch, length, 1 or 2]");
  k->L = ir_attr_int(n, "length", 0);
  k->step = ir_attr_int(n, "step", 0);
  if (k->L < 1 || k->step < 1)
    return diag_set(d, MLC_ERR_INVALID, "signal.stft: frame_length %lld and frame_step %lld must be positive",
                    (long long)k->L, (long long)k->step);
  if (k->L > x->dims[1])
    return diag_set(d, MLC_ERR_INVALID, "signal.stft: frame_length %lld is longer than the signal (%lld)",
                    (long long)k->L, (long long)x->dims[1]);
  if (w && (w->ndim != 1 || w->dtype != x->dtype || w->dims[0] < 1))
    return diag_set(d, MLC_ERR_INVALID, "signal.stft: the window must be a non-empty 1-D %s tensor",
                    mlc_dtype_name(x->dtype));
  int64_t W = w ? w->dims[0] : k->L;
  k->nsum = W < k->L ? W : k->L;
  k->scale = 1.0;
  k->acc_t = MLC_F64;
  *frames = 1 + (x->dims[1] - k->L) / k->step;
  *bins = ir_attr_int(n, "onesided", 1) ? k->L / 2 + 1 : k->L;
  return check_tw(n, k->L, d);
}

static mlc_status stft_infer(Node *n, Diag *d) {
  DftCtx k;
  int64_t frames = 0, bins = 0;
  mlc_status st = stft_parse(n, &k, &frames, &bins, d);
  if (st) return st;
  n->outputs[0]->type =
      (TensorType){.dtype = n->inputs[0]->type.dtype, .ndim = 4, .dims = {n->inputs[0]->type.dims[0], frames, bins, 2}};
  return MLC_OK;
}

static Expr *stft_body(TeCtx *c, Expr **idx, void *user) {
  DftCtx *k = user;
  Arena *A = c->arena;
  IterVar *r = te_reduce_axis(c, "n", k->nsum);
  Expr *n = tir_varref(A, r->var);
  /* frame f starts at f * step <= S - L and n < L: always inside the signal */
  Expr *pos = tir_add(A, tir_mul(A, idx[1], tir_idx(A, k->step)), n);
  Expr *xidx[3] = {idx[0], NULL, NULL};
  Expr *v = rotated(c, k, xidx, 1, pos, tir_mul(A, idx[2], n), idx[3]);
  if (k->window) v = tir_mul(A, v, to(c, k->acc_t, te_read(c, k->window, 1, &n)));
  return te_reduce(c, RED_SUM, v, 1, &r, NULL, NULL);
}

static mlc_status stft_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  DftCtx *k = arena_alloc(c->arena, sizeof *k);
  int64_t frames = 0, bins = 0;
  mlc_status st = stft_parse(n, k, &frames, &bins, d);
  if (st) return st;
  k->x = ins[0];
  k->tw = ins[1];
  k->window = n->ninputs > 2 && n->inputs[2] ? ins[2] : NULL;
  const TensorType *o = &n->outputs[0]->type;
  k->acc = te_compute(c, "stft", "reduce", k->acc_t, o->ndim, o->dims, stft_body, k);
  outs[0] = finish(c, k, "stft", o);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the DFT as a matrix */

typedef struct MatCtx {
  int64_t L, cin, cout, used;
  bool inverse;
} MatCtx;

static mlc_status dft_matrix_parse(const Node *n, MatCtx *k, int64_t *bins, int64_t *terms, Diag *d) {
  k->L = ir_attr_int(n, "length", 0);
  *bins = ir_attr_int(n, "bins", 0);
  *terms = ir_attr_int(n, "terms", 0);
  k->cin = ir_attr_int(n, "cin", 0);
  k->cout = ir_attr_int(n, "cout", 0);
  k->inverse = ir_attr_int(n, "inverse", 0) != 0;
  k->used = ir_attr_int(n, "used", *terms);
  if (k->L < 1 || *bins < 1 || *terms < 1 || k->cin < 1 || k->cin > 2 || k->cout < 1 || k->cout > 2 ||
      (k->cout == 1 && !k->inverse))
    return diag_set(d, MLC_ERR_INVALID, "signal.dft_matrix: bad attributes");
  return MLC_OK;
}

static mlc_status dft_matrix_infer(Node *n, Diag *d) {
  MatCtx k;
  int64_t bins, terms;
  mlc_status st = dft_matrix_parse(n, &k, &bins, &terms, d);
  if (st) return st;
  n->outputs[0]->type = (TensorType){.dtype = MLC_F32, .ndim = 2, .dims = {bins * k.cout, terms * k.cin}};
  return MLC_OK;
}

/* W[(k, c), (n, c')]: the coefficient of x[n, c'] in y[k, c] (see the header) */
static Expr *dft_matrix_body(TeCtx *c, Expr **idx, void *user) {
  MatCtx *k = user;
  Arena *A = c->arena;
#define I(v) tir_idx(A, (v))
#define F(v) tir_float(A, MLC_F64, (v))
  Expr *bin = tir_bin(A, E_FLOORDIV, idx[0], I(k->cout)), *co = tir_bin(A, E_FLOORMOD, idx[0], I(k->cout));
  Expr *term = tir_bin(A, E_FLOORDIV, idx[1], I(k->cin)), *ci = tir_bin(A, E_FLOORMOD, idx[1], I(k->cin));
  Expr *phase = tir_bin(A, E_FLOORMOD, tir_mul(A, bin, term), I(k->L));
  Expr *ang = tir_mul(A, tir_cast(A, MLC_F64, phase), F(2.0 * M_PI / (double)k->L));
  Expr *cs = tir_call(A, INTRIN_COS, MLC_F64, 1, &ang), *sn = tir_call(A, INTRIN_SIN, MLC_F64, 1, &ang);
  Expr *v;
  if (k->cout == 1) { /* IRFFT: w_n (Re X_n cos - Im X_n sin) / L */
    Expr *single = tir_bin(A, E_OR, tir_bin(A, E_EQ, term, I(0)), tir_bin(A, E_EQ, tir_mul(A, term, I(2)), I(k->L)));
    v = tir_select(A, tir_bin(A, E_EQ, ci, I(0)), cs, tir_sub(A, F(0), sn));
    v = tir_mul(A, v, tir_select(A, single, F(1.0 / (double)k->L), F(2.0 / (double)k->L)));
  } else { /* [[cos, s sin], [-s sin, cos]] with s = 1 forward, -1 inverse; / L for the inverse */
    double sg = k->inverse ? -1 : 1;
    Expr *off = tir_select(A, tir_bin(A, E_EQ, co, I(0)), tir_mul(A, sn, F(sg)), tir_mul(A, sn, F(-sg)));
    v = tir_select(A, tir_bin(A, E_EQ, co, ci), cs, off);
    if (k->inverse) v = tir_mul(A, v, F(1.0 / (double)k->L));
  }
  v = tir_select(A, tir_bin(A, E_LT, term, I(k->used)), v, F(0));
#undef I
#undef F
  return tir_cast(A, MLC_F32, v);
}

static mlc_status dft_matrix_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)ins;
  MatCtx *k = arena_alloc(c->arena, sizeof *k);
  int64_t bins, terms;
  mlc_status st = dft_matrix_parse(n, k, &bins, &terms, d);
  if (st) return st;
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "dft_matrix", "injective", o->dtype, o->ndim, o->dims, dft_matrix_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- stft frames */

typedef struct FramesCtx {
  TeTensor *x, *window;
  int64_t step, C;
} FramesCtx;

static mlc_status frames_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  const TensorType *w = n->ninputs > 1 && n->inputs[1] ? &n->inputs[1]->type : NULL;
  int64_t step = ir_attr_int(n, "step", 0), frames = ir_attr_int(n, "frames", 0), len = ir_attr_int(n, "count", 0);
  if (x->ndim != 3 || step < 1 || frames < 1 || len < 1 || (frames - 1) * step + len > x->dims[1])
    return diag_set(d, MLC_ERR_INVALID, "signal.frames: %lld frames of %lld samples every %lld do not fit the signal",
                    (long long)frames, (long long)len, (long long)step);
  if (w && (w->ndim != 1 || w->dims[0] < len || w->dtype != x->dtype))
    return diag_set(d, MLC_ERR_INVALID, "signal.frames: the window must be 1-D, %lld samples or more", (long long)len);
  n->outputs[0]->type = (TensorType){.dtype = x->dtype, .ndim = 3, .dims = {x->dims[0], frames, len * x->dims[2]}};
  return MLC_OK;
}

static Expr *frames_body(TeCtx *c, Expr **idx, void *user) {
  FramesCtx *k = user;
  Arena *A = c->arena;
  Expr *n = tir_bin(A, E_FLOORDIV, idx[2], tir_idx(A, k->C)), *ci = tir_bin(A, E_FLOORMOD, idx[2], tir_idx(A, k->C));
  Expr *pos = tir_add(A, tir_mul(A, idx[1], tir_idx(A, k->step)), n);
  Expr *v = te_read(c, k->x, 3, (Expr *[]){idx[0], pos, ci});
  if (k->window) v = tir_mul(A, v, te_read(c, k->window, 1, &n));
  return v;
}

static mlc_status frames_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)d;
  FramesCtx *k = arena_alloc(c->arena, sizeof *k);
  k->x = ins[0];
  k->window = n->ninputs > 1 && n->inputs[1] ? ins[1] : NULL;
  k->step = ir_attr_int(n, "step", 1);
  k->C = ins[0]->shape[2];
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "frames", "injective", o->dtype, o->ndim, o->dims, frames_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- windows */

typedef enum WindowKind { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN } WindowKind;

typedef struct WindowCtx {
  WindowKind kind;
  double N; /* the period: size (periodic) or size - 1 (symmetric) */
  mlc_dtype t;
} WindowCtx;

static mlc_status window_parse(const Node *n, WindowCtx *k, int64_t *size, Diag *d) {
  const char *w = ir_attr_string(n, "window", "");
  if (!strcmp(w, "hann")) k->kind = WIN_HANN;
  else if (!strcmp(w, "hamming")) k->kind = WIN_HAMMING;
  else if (!strcmp(w, "blackman")) k->kind = WIN_BLACKMAN;
  else return diag_set(d, MLC_ERR_INVALID, "signal.window: unknown window '%s'", w);
  *size = ir_attr_int(n, "size", -1);
  if (*size < 0) return diag_set(d, MLC_ERR_INVALID, "signal.window: size %lld is negative", (long long)*size);
  k->N = (double)(ir_attr_int(n, "periodic", 1) ? *size : *size - 1);
  return out_dtype(n, MLC_F32, &k->t, d);
}

static mlc_status window_infer(Node *n, Diag *d) {
  WindowCtx k;
  int64_t size;
  mlc_status st = window_parse(n, &k, &size, d);
  if (st) return st;
  n->outputs[0]->type = (TensorType){.dtype = k.t, .ndim = 1, .dims = {size}};
  return MLC_OK;
}

static Expr *cos_of(Arena *A, Expr *i, double f, double N) {
  /* cos(f * pi * i / N) in float64 (a symmetric window of size 1 has N = 0: NaN, as the reference) */
  Expr *ang = tir_bin(A, E_DIV, tir_mul(A, tir_cast(A, MLC_F64, i), tir_float(A, MLC_F64, f * M_PI)),
                      tir_float(A, MLC_F64, N));
  return tir_call(A, INTRIN_COS, MLC_F64, 1, &ang);
}

static Expr *window_body(TeCtx *c, Expr **idx, void *user) {
  WindowCtx *k = user;
  Arena *A = c->arena;
  Expr *v;
  switch (k->kind) {
  case WIN_HANN: {
    Expr *ang = tir_bin(A, E_DIV, tir_mul(A, tir_cast(A, MLC_F64, idx[0]), tir_float(A, MLC_F64, M_PI)),
                        tir_float(A, MLC_F64, k->N));
    Expr *s = tir_call(A, INTRIN_SIN, MLC_F64, 1, &ang);
    v = tir_mul(A, s, s);
    break;
  }
  case WIN_HAMMING:
    v = tir_sub(A, tir_float(A, MLC_F64, 25.0 / 46.0), tir_mul(A, cos_of(A, idx[0], 2, k->N), tir_float(A, MLC_F64, 1 - 25.0 / 46.0)));
    break;
  default:
    v = tir_add(A, tir_sub(A, tir_float(A, MLC_F64, 0.42), tir_mul(A, cos_of(A, idx[0], 2, k->N), tir_float(A, MLC_F64, 0.5))),
                tir_mul(A, cos_of(A, idx[0], 4, k->N), tir_float(A, MLC_F64, 0.08)));
    break;
  }
  return to(c, k->t, v);
}

static mlc_status window_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)ins;
  WindowCtx *k = arena_alloc(c->arena, sizeof *k);
  int64_t size;
  mlc_status st = window_parse(n, k, &size, d);
  if (st) return st;
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "window", "injective", o->dtype, o->ndim, o->dims, window_body, k);
  return MLC_OK;
}

/* ---------------------------------------------------------------- mel weight matrix */

typedef struct MelCtx {
  int64_t nbins;  /* num_mel_bins */
  int64_t *edge;  /* nbins + 2 band edges, in spectrogram bins */
  mlc_dtype t;
} MelCtx;

/* numpy's floor_divide of two doubles (fmod-based, so it agrees with the reference at exact multiples) */
static double floor_divide(double a, double b) {
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return copysign(0.0, a / b);
  double f = floor(div);
  return div - f > 0.5 ? f + 1.0 : f;
}

/* the attributes into k and the band edges into k->edge (nbins + 2 entries, allocated by the caller once
 * k->nbins is known: mel_parse sets it and returns with edge NULL first) */
static mlc_status mel_parse(const Node *n, MelCtx *k, int64_t *nspec, Diag *d) {
  k->nbins = ir_attr_int(n, "num_mel_bins", 0);
  int64_t len = ir_attr_int(n, "dft_length", 0), rate = ir_attr_int(n, "sample_rate", 0);
  double lo = ir_attr_float(n, "lower_edge_hertz", 0), hi = ir_attr_float(n, "upper_edge_hertz", 0);
  if (k->nbins < 1 || len < 1 || rate < 1)
    return diag_set(d, MLC_ERR_INVALID, "signal.mel_weight_matrix: num_mel_bins %lld, dft_length %lld and "
                    "sample_rate %lld must be positive", (long long)k->nbins, (long long)len, (long long)rate);
  if (k->nbins > (1 << 20))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "signal.mel_weight_matrix: %lld mel bins are too many", (long long)k->nbins);
  *nspec = len / 2 + 1;
  mlc_status st = out_dtype(n, MLC_F32, &k->t, d);
  if (st || !k->edge) return st;
  double lo_mel = 2595.0 * log10(1.0 + lo / 700.0), hi_mel = 2595.0 * log10(1.0 + hi / 700.0);
  double step = (hi_mel - lo_mel) / (double)(k->nbins + 2);
  for (int64_t m = 0; m < k->nbins + 2; m++) {
    double hz = 700.0 * (pow(10.0, ((double)m * step + lo_mel) / 2595.0) - 1.0);
    double bin = floor_divide((double)(len + 1) * hz, (double)rate);
    if (!(bin >= -1e15 && bin <= 1e15))
      return diag_set(d, MLC_ERR_INVALID, "signal.mel_weight_matrix: band edge %lld is not finite (lower_edge_hertz "
                      "%g, upper_edge_hertz %g)", (long long)m, lo, hi);
    k->edge[m] = (int64_t)bin;
  }
  /* the bins the reference writes must exist (it fails on higher ones and wraps negative ones around) */
  for (int64_t i = 0; i < k->nbins; i++) {
    int64_t l = k->edge[i], m = k->edge[i + 1], h = k->edge[i + 2];
    int64_t first = l == m ? m : l < m ? l : m, last = m;
    if (m < h && h - 1 > last) last = h - 1;
    bool writes = l <= m || m < h;
    if (writes && (first < 0 || last >= *nspec))
      return diag_set(d, MLC_ERR_INVALID, "signal.mel_weight_matrix: mel band %lld spans spectrogram bins [%lld, "
                      "%lld], outside [0, %lld] (is upper_edge_hertz above sample_rate / 2?)", (long long)i,
                      (long long)first, (long long)last, (long long)(*nspec - 1));
  }
  return MLC_OK;
}

static mlc_status mel_infer(Node *n, Diag *d) {
  MelCtx k = {0};
  int64_t nspec;
  mlc_status st = mel_parse(n, &k, &nspec, d);
  if (st) return st;
  k.edge = malloc(sizeof(int64_t) * (size_t)(k.nbins + 2));
  if (!k.edge) return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  st = mel_parse(n, &k, &nspec, d);
  free(k.edge);
  if (st) return st;
  n->outputs[0]->type = (TensorType){.dtype = k.t, .ndim = 2, .dims = {nspec, k.nbins}};
  return MLC_OK;
}

/* edge[col + off] for col in [lo, hi): a balanced select tree (the edges are compile-time constants) */
static Expr *edge_at(Arena *A, const MelCtx *k, Expr *col, int off, int64_t lo, int64_t hi) {
  if (hi - lo == 1) return tir_idx(A, k->edge[lo + off]);
  int64_t mid = lo + (hi - lo) / 2;
  return tir_select(A, tir_bin(A, E_LT, col, tir_idx(A, mid)), edge_at(A, k, col, off, lo, mid),
                    edge_at(A, k, col, off, mid, hi));
}

static Expr *mel_body(TeCtx *c, Expr **idx, void *user) {
  MelCtx *k = user;
  Arena *A = c->arena;
  Expr *j = idx[0], *col = idx[1];
  Expr *l = edge_at(A, k, col, 0, 0, k->nbins), *m = edge_at(A, k, col, 1, 0, k->nbins);
  Expr *h = edge_at(A, k, col, 2, 0, k->nbins);
#define F64(e) tir_cast(A, MLC_F64, (e))
#define B(op, x, y) tir_bin(A, op, (x), (y))
  Expr *one = tir_float(A, MLC_F64, 1), *v = tir_float(A, MLC_F64, 0);
  v = tir_select(A, B(E_AND, B(E_EQ, l, m), B(E_EQ, j, m)), one, v);
  Expr *rise = B(E_DIV, F64(tir_sub(A, j, l)), F64(tir_sub(A, m, l)));
  v = tir_select(A, B(E_AND, B(E_LT, l, m), B(E_AND, B(E_LE, l, j), B(E_LE, j, m))), rise, v);
  Expr *fall = B(E_DIV, F64(tir_sub(A, h, j)), F64(tir_sub(A, h, m)));
  v = tir_select(A, B(E_AND, B(E_LT, m, h), B(E_AND, B(E_LE, m, j), B(E_LT, j, h))), fall, v);
#undef F64
#undef B
  return to(c, k->t, v);
}

static mlc_status mel_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  (void)ins;
  MelCtx *k = arena_alloc(c->arena, sizeof *k);
  memset(k, 0, sizeof *k);
  int64_t nspec;
  mlc_status st = mel_parse(n, k, &nspec, d);
  if (st) return st;
  k->edge = arena_alloc(c->arena, sizeof(int64_t) * (size_t)(k->nbins + 2));
  if ((st = mel_parse(n, k, &nspec, d))) return st;
  const TensorType *o = &n->outputs[0]->type;
  outs[0] = te_compute(c, "mel_weight_matrix", "injective", o->dtype, o->ndim, o->dims, mel_body, k);
  return MLC_OK;
}

const OpDef topi_ops_signal[] = {
    /* name                      pattern     min max nout infer         compute */
    {"signal.twiddle", PAT_OPAQUE, 0, 0, 1, twiddle_infer, twiddle_compute},
    {"signal.dft", PAT_OPAQUE, 2, 2, 1, dft_infer, dft_compute},
    {"signal.stft", PAT_OPAQUE, 2, 3, 1, stft_infer, stft_compute},
    {"signal.dft_matrix", PAT_OPAQUE, 0, 0, 1, dft_matrix_infer, dft_matrix_compute},
    {"signal.frames", PAT_INJECTIVE, 1, 2, 1, frames_infer, frames_compute},
    {"signal.window", PAT_OPAQUE, 0, 0, 1, window_infer, window_compute},
    {"signal.mel_weight_matrix", PAT_OPAQUE, 0, 0, 1, mel_infer, mel_compute},
    {0},
};
