/* Unit test of the quant, rnn and linalg op families: each case builds one graph node (any dtypes, several outputs),
 * runs its type relation and TE compute, schedules with topi_schedule_group, lowers, JIT-compiles, runs the
 * kernel and compares with a reference written here in plain C (rounding half to even, saturation, per-axis
 * and blocked parameters, LSTM / GRU recurrences with both directions and sequence lengths, determinants by cofactor expansion).
 * Also checks
 * that invalid and unsupported combinations are rejected with the right status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/llvm/codegen.h"
#include "topi/topi.h"

static int failures;
static Target target;
static mlc_pool *pool;

#define FAIL(...)                 \
  do {                            \
    printf("FAIL: " __VA_ARGS__); \
    printf("\n");                 \
    failures++;                   \
  } while (0)

typedef void (*SetAttrs)(Graph *g, Node *n);

static TensorType tt(mlc_dtype t, int ndim, const int64_t *dims) {
  TensorType r = {.dtype = t, .ndim = ndim};
  if (ndim) memcpy(r.dims, dims, sizeof(int64_t) * (size_t)ndim);
  return r;
}

/* Builds and infers the node; returns it (NULL and *st set on failure). */
static Node *make_node(Graph *g, const char *opname, int nin, const TensorType *tin, int nout, SetAttrs set,
                       mlc_status *st, Diag *d) {
  Value *vin[8] = {0};
  for (int i = 0; i < nin; i++)
    if (tin[i].dtype) vin[i] = ir_value_new(g, arena_printf(g->arena, "in%d", i), tin[i]);
  const OpDef *op = ir_op_find(opname);
  if (!op) {
    *st = MLC_ERR_INTERNAL;
    diag_set(d, MLC_ERR_INTERNAL, "op %s not registered", opname);
    return NULL;
  }
  Node *n = ir_node_new(g, op, "n", "Test", 21, vin, nin, nout);
  if (set) set(g, n);
  *st = ir_infer_node(g, n, d);
  return *st ? NULL : n;
}

/* Runs the op; outs[i] receives malloc'd output data. Inputs with dtype MLC_UNDEF are absent. */
static bool run_op(const char *name, const char *opname, int nin, const TensorType *tin, void **data, int nout,
                   SetAttrs set, void **outs, TensorType *otypes) {
  Arena *A = arena_new();
  Diag d = {0};
  bool ok = false;
  Graph *g = ir_graph_new(A, "test");
  mlc_status st;
  Node *n = make_node(g, opname, nin, tin, nout, set, &st, &d);
  if (!n) {
    FAIL("%s: infer: %s", name, d.msg);
    goto out;
  }
  TeCtx c = {.arena = A, .target = &target};
  TeTensor *ins[8] = {0}, *touts[4] = {0}, *args[12];
  int na = 0;
  for (int i = 0; i < nin; i++)
    if (tin[i].dtype) {
      ins[i] = te_placeholder(&c, arena_printf(A, "in%d", i), tin[i].dtype, tin[i].ndim, tin[i].dims);
      args[na++] = ins[i];
    }
  if (n->op->compute(&c, n, ins, touts, &d)) {
    FAIL("%s: compute: %s", name, d.msg);
    goto out;
  }
  TeSchedule *s = topi_schedule_group(&c, nout, touts, NULL, &d);
  if (!s) {
    FAIL("%s: schedule: %s", name, d.msg);
    goto out;
  }
  for (int i = 0; i < nout; i++) args[na + i] = touts[i];
  TirFunc *f = te_lower(&c, s, "kernel", na + nout, args, &d);
  if (!f) {
    FAIL("%s: lower: %s", name, d.msg);
    goto out;
  }
  if (getenv("TEST_VERBOSE")) {
    StrBuf b = {0};
    tir_print_func(&b, f);
    printf("%s\n", b.s);
    sb_free(&b);
  }
  CgModule *m = cg_module_new(&target, "test", &d);
  CgJit *jit = NULL;
  if (!m || cg_add_func(m, f, &d) || cg_jit_create(m, &jit, &d)) {
    FAIL("%s: codegen: %s", name, d.msg);
    goto out;
  }
  mlc_kernel_fn fn = (mlc_kernel_fn)cg_jit_lookup(jit, "kernel");
  void *bufs[12];
  int nb = 0;
  for (int i = 0; i < nin; i++)
    if (tin[i].dtype) bufs[nb++] = data[i];
  for (int i = 0; i < nout; i++) {
    otypes[i] = n->outputs[i]->type;
    outs[i] = calloc(1, (size_t)tt_nbytes(&otypes[i]) + 8);
    bufs[nb++] = outs[i];
  }
  mlc_kernel_ctx kc;
  mlc_pool_kernel_ctx(pool, &kc);
  if (!fn || fn(bufs, NULL, &kc)) {
    FAIL("%s: kernel failed", name);
  } else {
    ok = true;
  }
  cg_jit_free(jit);
out:
  arena_free(A);
  return ok;
}

static void expect_status(const char *name, const char *opname, int nin, const TensorType *tin, int nout,
                          SetAttrs set, mlc_status want) {
  Arena *A = arena_new();
  Diag d = {0};
  Graph *g = ir_graph_new(A, "test");
  mlc_status st;
  make_node(g, opname, nin, tin, nout, set, &st, &d);
  if (st != want) FAIL("%s: status %d, want %d (%s)", name, st, want, d.msg);
  arena_free(A);
}

static unsigned seed = 1;
static float frand(void) {
  seed = seed * 1103515245u + 12345u;
  return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* ---------------------------------------------------------------- quantize / dequantize */

static void set_axis1(Graph *g, Node *n) {
  ir_set_int(g, n, "axis", 1);
  ir_set_int(g, n, "out_dtype", MLC_I8);
}

static void test_quantize_per_axis(void) {
  /* x [2, 3, 2], scale per channel (axis 1), int8 zero points; ties round to even, results saturate */
  float x[12] = {2.5f, -2.5f, 3.5f, 1000.f, -1000.f, 0.f, 0.75f, 1.25f, -0.25f, 7.f, 0.5f, -0.5f};
  float scale[3] = {1.0f, 0.5f, 0.25f};
  int8_t zp[3] = {0, 10, -3};
  int64_t xd[3] = {2, 3, 2}, sd[1] = {3};
  TensorType tin[3] = {tt(MLC_F32, 3, xd), tt(MLC_F32, 1, sd), tt(MLC_I8, 1, sd)};
  void *data[3] = {x, scale, zp}, *out[1];
  TensorType ot[1];
  if (!run_op("quantize per-axis", "qnn.quantize", 3, tin, data, 1, set_axis1, out, ot)) return;
  int8_t *y = out[0];
  for (int i = 0; i < 12; i++) {
    int c = (i / 2) % 3;
    double q = nearbyint((double)(x[i] / scale[c])) + zp[c]; /* default rounding mode: half to even */
    q = q < -128 ? -128 : q > 127 ? 127 : q;
    if (y[i] != (int8_t)q) FAIL("quantize per-axis: element %d: got %d want %d", i, y[i], (int)q);
  }
  free(out[0]);
}

static void set_blocked(Graph *g, Node *n) {
  ir_set_int(g, n, "axis", 1);
  ir_set_int(g, n, "block_size", 2);
  ir_set_int(g, n, "out_dtype", MLC_F32);
}

static void test_dequantize_blocked(void) {
  /* x [2, 5] uint8, blocks of 2 along axis 1 -> scale [2, 3] */
  uint8_t x[10];
  for (int i = 0; i < 10; i++) x[i] = (uint8_t)(i * 25);
  float scale[6] = {0.5f, 2.f, 0.1f, 1.f, 3.f, 0.25f};
  uint8_t zp[6] = {0, 100, 7, 128, 1, 255};
  int64_t xd[2] = {2, 5}, sd[2] = {2, 3};
  TensorType tin[3] = {tt(MLC_U8, 2, xd), tt(MLC_F32, 2, sd), tt(MLC_U8, 2, sd)};
  void *data[3] = {x, scale, zp}, *out[1];
  TensorType ot[1];
  if (!run_op("dequantize blocked", "qnn.dequantize", 3, tin, data, 1, set_blocked, out, ot)) return;
  float *y = out[0];
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 5; c++) {
      int p = r * 3 + c / 2;
      float want = (float)((int)x[r * 5 + c] - (int)zp[p]) * scale[p];
      if (fabsf(y[r * 5 + c] - want) > 1e-6f * (1 + fabsf(want)))
        FAIL("dequantize blocked: [%d,%d]: got %g want %g", r, c, y[r * 5 + c], want);
    }
  free(out[0]);
}

static void test_dynamic_quantize(void) {
  float x[6] = {-1.5f, 0.25f, 3.0f, 2.2f, -0.1f, 0.9f};
  int64_t xd[1] = {6};
  TensorType tin[1] = {tt(MLC_F32, 1, xd)};
  void *data[1] = {x}, *out[3];
  TensorType ot[3];
  if (!run_op("dynamic quantize", "qnn.dynamic_quantize", 1, tin, data, 3, NULL, out, ot)) return;
  float lo = -1.5f, hi = 3.0f, scale = (hi - lo) / 255.0f;
  float zpf = nearbyintf(0 - lo / scale);
  uint8_t zp = (uint8_t)(zpf < 0 ? 0 : zpf > 255 ? 255 : zpf);
  if (*(float *)out[1] != scale) FAIL("dynamic quantize: scale %g want %g", *(float *)out[1], scale);
  if (*(uint8_t *)out[2] != zp) FAIL("dynamic quantize: zero point %d want %d", *(uint8_t *)out[2], zp);
  for (int i = 0; i < 6; i++) {
    float q = nearbyintf(x[i] / scale) + zp;
    q = q < 0 ? 0 : q > 255 ? 255 : q;
    if (((uint8_t *)out[0])[i] != (uint8_t)q) FAIL("dynamic quantize: y[%d] %d want %d", i, ((uint8_t *)out[0])[i], (int)q);
  }
  for (int i = 0; i < 3; i++) free(out[i]);
}

static void set_requant(Graph *g, Node *n) {
  ir_set_int(g, n, "axis1", -1);
  ir_set_int(g, n, "axis2", 1);
  ir_set_int(g, n, "bias_axis", 1);
  ir_set_int(g, n, "out_dtype", MLC_U8);
}

static void test_requantize(void) {
  int32_t acc[8] = {100, -50, 7, 30000, -7, 0, 255, 12};
  float s1 = 0.5f, s2[2] = {0.25f, 0.1f}, s3 = 0.2f;
  uint8_t zp = 120;
  int32_t bias[2] = {3, -4};
  int64_t ad[3] = {1, 2, 4}, one[1] = {1}, two[1] = {2};
  TensorType tin[6] = {tt(MLC_I32, 3, ad), tt(MLC_F32, 0, one), tt(MLC_F32, 1, two),
                       tt(MLC_F32, 1, one),  tt(MLC_U8, 0, one),  tt(MLC_I32, 1, two)};
  void *data[6] = {acc, &s1, s2, &s3, &zp, bias}, *out[1];
  TensorType ot[1];
  if (!run_op("requantize", "qnn.requantize", 6, tin, data, 1, set_requant, out, ot)) return;
  for (int i = 0; i < 8; i++) {
    int c = i / 4;
    float mult = s1 * s2[c] / s3;
    double v = nearbyint((double)(acc[i] + bias[c]) * (double)mult) + zp;
    v = v < 0 ? 0 : v > 255 ? 255 : v;
    if (((uint8_t *)out[0])[i] != (uint8_t)v) FAIL("requantize: [%d] %d want %d", i, ((uint8_t *)out[0])[i], (int)v);
  }
  free(out[0]);
}

static void set_f32_out(Graph *g, Node *n) { ir_set_int(g, n, "out_dtype", MLC_F32); }

static void test_quant_errors(void) {
  int64_t xd[2] = {2, 3}, bad[1] = {4};
  TensorType a[2] = {tt(MLC_F32, 2, xd), tt(MLC_F32, 1, bad)};
  expect_status("quantize: scale length differs from the axis", "qnn.quantize", 2, a, 1, set_axis1, MLC_ERR_INVALID);
  TensorType b[2] = {tt(MLC_F32, 2, xd), tt(MLC_F32, 0, NULL)};
  expect_status("quantize to float32", "qnn.quantize", 2, b, 1, set_f32_out, MLC_ERR_UNSUPPORTED);
  TensorType c[1] = {tt(MLC_F64, 2, xd)};
  expect_status("dynamic quantize of float64", "qnn.dynamic_quantize", 1, c, 3, NULL, MLC_ERR_UNSUPPORTED);
}

/* ---------------------------------------------------------------- recurrences */

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

enum { T_ = 3, B_ = 2, I_ = 3, H_ = 2 };

static void set_lstm(Graph *g, Node *n) {
  ir_set_int(g, n, "hidden_size", H_);
  ir_set_int(g, n, "direction", 2);
  ir_set_float(g, n, "clip", 1.5);
}

/* Bidirectional LSTM with bias, sequence_lens, initial states and peepholes, clip 1.5. */
static void test_lstm(void) {
  enum { D = 2, G = 4 };
  float X[T_ * B_ * I_], W[D * G * H_ * I_], R[D * G * H_ * H_], Bb[D * 2 * G * H_], h0[D * B_ * H_], c0[D * B_ * H_],
      P[D * 3 * H_];
  int32_t sl[B_] = {3, 2};
  float *all[6] = {X, W, R, Bb, h0, c0};
  size_t sizes[6] = {countof(X), countof(W), countof(R), countof(Bb), countof(h0), countof(c0)};
  for (int k = 0; k < 6; k++)
    for (size_t i = 0; i < sizes[k]; i++) all[k][i] = frand();
  for (size_t i = 0; i < countof(P); i++) P[i] = frand();
  int64_t xd[3] = {T_, B_, I_}, wd[3] = {D, G * H_, I_}, rd[3] = {D, G * H_, H_}, bd[2] = {D, 2 * G * H_},
          sd[1] = {B_}, hd[3] = {D, B_, H_}, pd[2] = {D, 3 * H_};
  TensorType tin[8] = {tt(MLC_F32, 3, xd), tt(MLC_F32, 3, wd), tt(MLC_F32, 3, rd), tt(MLC_F32, 2, bd),
                       tt(MLC_I32, 1, sd), tt(MLC_F32, 3, hd), tt(MLC_F32, 3, hd), tt(MLC_F32, 2, pd)};
  void *data[8] = {X, W, R, Bb, sl, h0, c0, P}, *out[3];
  TensorType ot[3];
  if (!run_op("lstm", "nn.lstm", 8, tin, data, 3, set_lstm, out, ot)) return;
  float Y[T_][D][B_][H_] = {{{{0}}}}, Yh[D][B_][H_], Yc[D][B_][H_];
  for (int d = 0; d < D; d++)
    for (int b = 0; b < B_; b++) {
      float h[H_], c[H_];
      for (int j = 0; j < H_; j++) h[j] = h0[(d * B_ + b) * H_ + j], c[j] = c0[(d * B_ + b) * H_ + j];
      for (int s = 0; s < sl[b]; s++) {
        int t = d ? sl[b] - 1 - s : s;
        float gsum[G * H_];
        for (int g = 0; g < G * H_; g++) {
          float v = Bb[d * 2 * G * H_ + g] + Bb[d * 2 * G * H_ + G * H_ + g];
          for (int i = 0; i < I_; i++) v += X[(t * B_ + b) * I_ + i] * W[(d * G * H_ + g) * I_ + i];
          for (int k = 0; k < H_; k++) v += h[k] * R[(d * G * H_ + g) * H_ + k];
          gsum[g] = v;
        }
#define CL(v) fminf(fmaxf((v), -1.5f), 1.5f)
        for (int j = 0; j < H_; j++) {
          float ig = sigm(CL(gsum[j] + P[d * 3 * H_ + j] * c[j]));
          float fg = sigm(CL(gsum[2 * H_ + j] + P[d * 3 * H_ + 2 * H_ + j] * c[j]));
          float cn = fg * c[j] + ig * tanhf(CL(gsum[3 * H_ + j]));
          float og = sigm(CL(gsum[H_ + j] + P[d * 3 * H_ + H_ + j] * cn));
          c[j] = cn;
          h[j] = og * tanhf(CL(cn));
        }
        for (int j = 0; j < H_; j++) Y[t][d][b][j] = h[j];
      }
      for (int j = 0; j < H_; j++) Yh[d][b][j] = h[j], Yc[d][b][j] = c[j];
    }
  const float *want[3] = {&Y[0][0][0][0], &Yh[0][0][0], &Yc[0][0][0]};
  for (int o = 0; o < 3; o++) {
    int64_t n = tt_numel(&ot[o]);
    for (int64_t i = 0; i < n; i++)
      if (fabsf(((float *)out[o])[i] - want[o][i]) > 1e-5f)
        FAIL("lstm: output %d element %lld: got %g want %g", o, (long long)i, ((float *)out[o])[i], want[o][i]);
    free(out[o]);
  }
}

static void set_gru(Graph *g, Node *n) {
  ir_set_int(g, n, "hidden_size", H_);
  ir_set_int(g, n, "direction", 1);
  ir_set_int(g, n, "layout", 1);
}

/* Reverse GRU, layout 1 (batch first), no bias, linear_before_reset 0. */
static void test_gru(void) {
  enum { G = 3 };
  float X[B_ * T_ * I_], W[G * H_ * I_], R[G * H_ * H_];
  for (size_t i = 0; i < countof(X); i++) X[i] = frand();
  for (size_t i = 0; i < countof(W); i++) W[i] = frand();
  for (size_t i = 0; i < countof(R); i++) R[i] = frand();
  int64_t xd[3] = {B_, T_, I_}, wd[3] = {1, G * H_, I_}, rd[3] = {1, G * H_, H_};
  TensorType tin[3] = {tt(MLC_F32, 3, xd), tt(MLC_F32, 3, wd), tt(MLC_F32, 3, rd)};
  void *data[3] = {X, W, R}, *out[2];
  TensorType ot[2];
  if (!run_op("gru", "nn.gru", 3, tin, data, 2, set_gru, out, ot)) return;
  float Y[B_][T_][H_], Yh[B_][H_];
  for (int b = 0; b < B_; b++) {
    float h[H_] = {0};
    for (int s = 0; s < T_; s++) {
      int t = T_ - 1 - s;
      float gx[G * H_], gh[G * H_], r[H_], hn[H_];
      for (int g = 0; g < G * H_; g++) {
        gx[g] = 0;
        for (int i = 0; i < I_; i++) gx[g] += X[(b * T_ + t) * I_ + i] * W[g * I_ + i];
      }
      for (int g = 0; g < 2 * H_; g++) {
        gh[g] = 0;
        for (int k = 0; k < H_; k++) gh[g] += h[k] * R[g * H_ + k];
      }
      for (int k = 0; k < H_; k++) r[k] = sigm(gx[H_ + k] + gh[H_ + k]);
      for (int j = 0; j < H_; j++) {
        float v = 0;
        for (int k = 0; k < H_; k++) v += r[k] * h[k] * R[(2 * H_ + j) * H_ + k];
        float z = sigm(gx[j] + gh[j]), nn = tanhf(gx[2 * H_ + j] + v);
        hn[j] = (1 - z) * nn + z * h[j];
      }
      for (int j = 0; j < H_; j++) h[j] = Y[b][t][j] = hn[j];
    }
    for (int j = 0; j < H_; j++) Yh[b][j] = h[j];
  }
  const float *want[2] = {&Y[0][0][0], &Yh[0][0]};
  for (int o = 0; o < 2; o++) {
    int64_t n = tt_numel(&ot[o]);
    for (int64_t i = 0; i < n; i++)
      if (fabsf(((float *)out[o])[i] - want[o][i]) > 1e-5f)
        FAIL("gru: output %d element %lld: got %g want %g", o, (long long)i, ((float *)out[o])[i], want[o][i]);
    free(out[o]);
  }
}

static void set_h3(Graph *g, Node *n) { ir_set_int(g, n, "hidden_size", 3); }

static void test_rnn_errors(void) {
  int64_t xd[3] = {2, 1, 4}, wd[3] = {1, 3, 5}, rd[3] = {1, 3, 3};
  TensorType a[3] = {tt(MLC_F32, 3, xd), tt(MLC_F32, 3, wd), tt(MLC_F32, 3, rd)};
  expect_status("rnn: W does not match the input size", "nn.rnn", 3, a, 2, set_h3, MLC_ERR_INVALID);
  int64_t wd2[3] = {1, 3, 4};
  TensorType b[3] = {tt(MLC_I32, 3, xd), tt(MLC_I32, 3, wd2), tt(MLC_I32, 3, rd)};
  expect_status("rnn of int32", "nn.rnn", 3, b, 2, set_h3, MLC_ERR_UNSUPPORTED);
}

/* ---------------------------------------------------------------- linalg.det */

/* the determinant by cofactor expansion along the first row (an algorithm independent of the LU under test) */
static double cofactor_det(const double *a, int m) {
  if (m == 1) return a[0];
  double sub[64], det = 0;
  for (int c = 0; c < m; c++) {
    int k = 0;
    for (int i = 1; i < m; i++)
      for (int j = 0; j < m; j++)
        if (j != c) sub[k++] = a[i * m + j];
    det += (c % 2 ? -1 : 1) * a[c] * cofactor_det(sub, m - 1);
  }
  return det;
}

static void test_det(void) {
  enum { B = 5, M = 4 };
  double a[B][M * M];
  for (int b = 0; b < B; b++)
    for (int i = 0; i < M * M; i++) a[b][i] = frand() * 3;
  for (int i = 0; i < M; i++) a[1][i * M] = 0;              /* a zero first column: pivoting has to swap */
  a[1][2 * M] = 1.5;
  for (int j = 0; j < M; j++) a[2][3 * M + j] = 2 * a[2][j]; /* singular: two proportional rows */
  memset(a[3], 0, sizeof a[3]);                              /* a permutation matrix: det -1 */
  a[3][0 * M + 1] = a[3][1 * M + 0] = a[3][2 * M + 2] = a[3][3 * M + 3] = 1;
  for (int dt = 0; dt < 2; dt++) {
    mlc_dtype t = dt ? MLC_F64 : MLC_F32;
    int64_t dims[3] = {B, M, M};
    TensorType tin = tt(t, 3, dims);
    float xf[B * M * M];
    double xd[B * M * M];
    for (int b = 0; b < B; b++)
      for (int i = 0; i < M * M; i++) {
        xf[b * M * M + i] = (float)a[b][i];
        xd[b * M * M + i] = dt ? a[b][i] : (double)(float)a[b][i];
      }
    void *data[1] = {dt ? (void *)xd : (void *)xf}, *outs[1] = {0};
    TensorType ot;
    if (!run_op(dt ? "det f64" : "det f32", "linalg.det", 1, &tin, data, 1, NULL, outs, &ot)) continue;
    if (ot.ndim != 1 || ot.dims[0] != B) FAIL("det: output shape");
    for (int b = 0; b < B; b++) {
      double want = cofactor_det(xd + b * M * M, M);
      double got = dt ? ((double *)outs[0])[b] : ((float *)outs[0])[b];
      if (fabs(got - want) > (dt ? 1e-12 : 1e-4) * (1 + fabs(want)))
        FAIL("det %s matrix %d: got %.17g want %.17g", mlc_dtype_name(t), b, got, want);
    }
    free(outs[0]);
  }
  int64_t sq[2] = {3, 4}, ok[2] = {3, 3};
  TensorType rect = tt(MLC_F32, 2, sq), ints = tt(MLC_I32, 2, ok);
  expect_status("det of a non-square matrix", "linalg.det", 1, &rect, 1, NULL, MLC_ERR_INVALID);
  expect_status("det of int32", "linalg.det", 1, &ints, 1, NULL, MLC_ERR_UNSUPPORTED);
}

int main(void) {
  Diag d = {0};
  topi_register_ops();
  if (cg_target_parse("llvm", &target, &d)) {
    printf("FAIL: target: %s\n", d.msg);
    return 1;
  }
  pool = mlc_pool_create(2);
  test_quantize_per_axis();
  test_dequantize_blocked();
  test_dynamic_quantize();
  test_requantize();
  test_quant_errors();
  test_lstm();
  test_gru();
  test_rnn_errors();
  test_det();
  mlc_pool_destroy(pool);
  if (failures) printf("%d failure(s)\n", failures);
  else printf("test_quant_rnn: all passed\n");
  return failures != 0;
}
