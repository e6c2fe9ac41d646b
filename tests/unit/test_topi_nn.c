/* Unit test of the nn and tensor op families and their default schedules: each case builds one graph node,
 * runs its type relation and TE compute on placeholders, schedules it with topi_schedule_group (the
 * fallback config, and for conv/dense also configs whose split factors do not divide), lowers, JIT-compiles,
 * runs it on the runtime's thread pool and compares with a naive C reference written here independently. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codegen/llvm/codegen.h"
#include "topi/topi.h"

static int failures;
static Target target;
static mlc_pool *pool;

#define FAIL(...)                \
  do {                           \
    printf("FAIL: " __VA_ARGS__); \
    printf("\n");                \
    failures++;                  \
  } while (0)

typedef void (*SetAttrs)(Graph *g, Node *n);

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Runs op on float32 inputs; returns the output (malloc'd) and its type, or NULL on failure. */
static float *run_op(const char *case_name, const char *opname, int nin, const TensorType *tin, float **data,
                     SetAttrs set, const TopiConfig *cfg, TensorType *otype) {
  Arena *A = arena_new();
  Diag d = {0};
  float *result = NULL;
  Graph *g = ir_graph_new(A, "test");
  Value *vin[4];
  for (int i = 0; i < nin; i++) vin[i] = ir_value_new(g, arena_printf(A, "in%d", i), tin[i]);
  const OpDef *op = ir_op_find(opname);
  if (!op) {
    FAIL("%s: op %s not registered", case_name, opname);
    goto out;
  }
  Node *n = ir_node_new(g, op, "n", "Test", 18, vin, nin, 1);
  if (set) set(g, n);
  if (ir_infer_node(g, n, &d)) {
    FAIL("%s: infer: %s", case_name, d.msg);
    goto out;
  }
  *otype = n->outputs[0]->type;
  TeCtx c = {.arena = A, .target = &target};
  TeTensor *ins[4], *outs[1];
  for (int i = 0; i < nin; i++) ins[i] = te_placeholder(&c, arena_printf(A, "in%d", i), tin[i].dtype, tin[i].ndim, tin[i].dims);
  if (op->compute(&c, n, ins, outs, &d)) {
    FAIL("%s: compute: %s", case_name, d.msg);
    goto out;
  }
  TeSchedule *s = topi_schedule_group(&c, 1, outs, cfg, &d);
  if (!s) {
    FAIL("%s: schedule: %s", case_name, d.msg);
    goto out;
  }
  TeTensor *args[5];
  for (int i = 0; i < nin; i++) args[i] = ins[i];
  args[nin] = outs[0];
  TirFunc *f = te_lower(&c, s, "kernel", nin + 1, args, &d);
  if (!f) {
    StrBuf b = {0};
    te_print_schedule(&b, s);
    FAIL("%s: lower: %s\n%s", case_name, d.msg, b.s);
    sb_free(&b);
    goto out;
  }
  if (getenv("TEST_VERBOSE")) {
    StrBuf b = {0};
    te_print_schedule(&b, s);
    tir_print_func(&b, f);
    printf("%s\n", b.s);
    sb_free(&b);
  }
  CgModule *m = cg_module_new(&target, "test", &d);
  CgJit *jit = NULL;
  if (!m || cg_add_func(m, f, &d) || cg_jit_create(m, &jit, &d)) {
    FAIL("%s: codegen: %s", case_name, d.msg);
    goto out;
  }
  mlc_kernel_fn fn = (mlc_kernel_fn)cg_jit_lookup(jit, "kernel");
  if (!fn) {
    FAIL("%s: kernel symbol missing", case_name);
    cg_jit_free(jit);
    goto out;
  }
  result = calloc((size_t)tt_numel(otype) + 1, sizeof(float));
  void *bufs[5];
  for (int i = 0; i < nin; i++) bufs[i] = data[i];
  bufs[nin] = result;
  mlc_kernel_ctx kc;
  mlc_pool_kernel_ctx(pool, &kc);
  int32_t rc = fn(bufs, NULL, &kc);
  if (rc) {
    FAIL("%s: kernel returned %d", case_name, rc);
    free(result);
    result = NULL;
  }
  cg_jit_free(jit);
out:
  arena_free(A);
  return result;
}

static void compare(const char *name, const float *got, const float *want, int64_t n, double tol) {
  if (!got) return;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - (double)want[i]);
    if (!(e <= tol * (1 + fabs((double)want[i])))) {
      FAIL("%s: element %lld: got %g want %g", name, (long long)i, got[i], want[i]);
      return;
    }
  }
}

static float *rand_tensor(const TensorType *t, unsigned seed) {
  int64_t n = tt_numel(t);
  float *p = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) p[i] = frand(&seed);
  return p;
}

static TensorType tt(int ndim, const int64_t *dims) {
  TensorType t = {.dtype = MLC_F32, .ndim = ndim};
  memcpy(t.dims, dims, sizeof(int64_t) * (size_t)ndim);
  return t;
}

/* ---------------------------------------------------------------- convolution */

static struct {
  int nsp;
  int64_t strides[3], dil[3], pads[6], groups;
} conv_p;

static void conv_set(Graph *g, Node *n) {
  ir_set_ints(g, n, "strides", conv_p.strides, conv_p.nsp);
  ir_set_ints(g, n, "dilation", conv_p.dil, conv_p.nsp);
  ir_set_ints(g, n, "padding", conv_p.pads, 2 * conv_p.nsp);
  ir_set_int(g, n, "groups", conv_p.groups);
}

/* N-d conv reference over up to 3 spatial dims (missing ones are 1) */
static void conv_ref(const TensorType *x, const float *xd, const TensorType *w, const float *wd, const TensorType *o,
                     float *od) {
  int nsp = x->ndim - 2;
  int64_t X[3] = {1, 1, 1}, K[3] = {1, 1, 1}, O[3] = {1, 1, 1}, S[3] = {1, 1, 1}, D[3] = {1, 1, 1}, P[3] = {0};
  for (int i = 0; i < nsp; i++) {
    int j = 3 - nsp + i;
    X[j] = x->dims[2 + i];
    K[j] = w->dims[2 + i];
    O[j] = o->dims[2 + i];
    S[j] = conv_p.strides[i];
    D[j] = conv_p.dil[i];
    P[j] = conv_p.pads[i];
  }
  int64_t N = x->dims[0], C = x->dims[1], OC = w->dims[0], G = conv_p.groups, icpg = C / G, ocpg = OC / G;
  for (int64_t n = 0; n < N; n++)
    for (int64_t oc = 0; oc < OC; oc++)
      for (int64_t a = 0; a < O[0]; a++)
        for (int64_t b = 0; b < O[1]; b++)
          for (int64_t cc = 0; cc < O[2]; cc++) {
            double acc = 0;
            for (int64_t ic = 0; ic < icpg; ic++)
              for (int64_t ka = 0; ka < K[0]; ka++)
                for (int64_t kb = 0; kb < K[1]; kb++)
                  for (int64_t kc = 0; kc < K[2]; kc++) {
                    int64_t ia = a * S[0] + ka * D[0] - P[0], ib = b * S[1] + kb * D[1] - P[1],
                            ic2 = cc * S[2] + kc * D[2] - P[2];
                    if (ia < 0 || ia >= X[0] || ib < 0 || ib >= X[1] || ic2 < 0 || ic2 >= X[2]) continue;
                    int64_t ch = (oc / ocpg) * icpg + ic;
                    acc += xd[(((n * C + ch) * X[0] + ia) * X[1] + ib) * X[2] + ic2] *
                           wd[(((oc * icpg + ic) * K[0] + ka) * K[1] + kb) * K[2] + kc];
                  }
            od[(((n * OC + oc) * O[0] + a) * O[1] + b) * O[2] + cc] = (float)acc;
          }
}

static void test_conv(const char *name, int nsp, const int64_t *xs, const int64_t *ws, const int64_t *strides,
                      const int64_t *dil, const int64_t *pads, int64_t groups) {
  conv_p.nsp = nsp;
  memcpy(conv_p.strides, strides, sizeof(int64_t) * (size_t)nsp);
  memcpy(conv_p.dil, dil, sizeof(int64_t) * (size_t)nsp);
  memcpy(conv_p.pads, pads, sizeof(int64_t) * (size_t)(2 * nsp));
  conv_p.groups = groups;
  TensorType tin[2] = {tt(nsp + 2, xs), tt(nsp + 2, ws)};
  float *data[2] = {rand_tensor(&tin[0], 1), rand_tensor(&tin[1], 2)};
  static const char *ops[4] = {"", "nn.conv1d", "nn.conv2d", "nn.conv3d"};
  TopiConfig odd = {.nknobs = 4, .names = {"tile_oc", "tile_ow", "tile_ic", "unroll_kw"}, .values = {3, 5, 2, 1}};
  const TopiConfig *cfgs[2] = {NULL, &odd};
  for (int k = 0; k < 2; k++) {
    TensorType ot;
    char cn[128];
    snprintf(cn, sizeof cn, "%s%s", name, k ? " (odd tiles)" : "");
    float *got = run_op(cn, ops[nsp], 2, tin, data, conv_set, cfgs[k], &ot);
    if (got) {
      float *want = calloc((size_t)tt_numel(&ot), sizeof(float));
      conv_ref(&tin[0], data[0], &tin[1], data[1], &ot, want);
      compare(cn, got, want, tt_numel(&ot), 1e-4);
      free(want);
      free(got);
    }
  }
  free(data[0]);
  free(data[1]);
}

/* nn.conv2d_packed (src/topi/conv2d_x86.c): the weight packed [OC/ocb][IC][KH][KW][ocb] here, the result
 * against the plain conv reference; widths the register tile does not divide (13, 27, 11 with stride 2, no
 * padding) take the padded-width path, whose extra columns must never reach the output */
static void test_conv_packed_cfg(const char *name, const int64_t *xs, const int64_t *ws, int64_t ocb,
                                 int64_t stride, const int64_t *pads, const TopiConfig *cfg) {
  conv_p.nsp = 2;
  for (int i = 0; i < 2; i++) conv_p.strides[i] = stride, conv_p.dil[i] = 1;
  memcpy(conv_p.pads, pads, sizeof(int64_t) * 4);
  conv_p.groups = 1;
  TensorType tin[2] = {tt(4, xs), tt(4, ws)};
  float *data[2] = {rand_tensor(&tin[0], 3), rand_tensor(&tin[1], 4)};
  int64_t OC = ws[0], IC = ws[1], KH = ws[2], KW = ws[3];
  int64_t pd[5] = {OC / ocb, IC, KH, KW, ocb};
  TensorType pin[2] = {tin[0], tt(5, pd)};
  float *packed = malloc(sizeof(float) * (size_t)tt_numel(&tin[1]));
  for (int64_t o = 0; o < OC; o++)
    for (int64_t i = 0; i < IC * KH * KW; i++) packed[((o / ocb) * IC * KH * KW + i) * ocb + o % ocb] = data[1][o * IC * KH * KW + i];
  float *pdata[2] = {data[0], packed};
  TensorType ot;
  float *got = run_op(name, "nn.conv2d_packed", 2, pin, pdata, conv_set, cfg, &ot);
  if (got) {
    float *want = calloc((size_t)tt_numel(&ot), sizeof(float));
    conv_ref(&tin[0], data[0], &tin[1], data[1], &ot, want);
    compare(name, got, want, tt_numel(&ot), 1e-4);
    free(want);
    free(got);
  }
  free(packed);
  free(data[0]);
  free(data[1]);
}

static void test_conv_packed(const char *name, const int64_t *xs, const int64_t *ws, int64_t ocb, int64_t stride,
                             const int64_t *pads) {
  test_conv_packed_cfg(name, xs, ws, ocb, stride, pads, NULL);
}

/* nn.conv2d_packed with NCHWc activations: data_block ib reads data [N, C/ib, H, W, ib] with the weight
 * [OC/ocb][IC/ib][KH][KW][ib][ocb]; out_block writes [N, OC/ocb, OH, OW, ocb]. The data is blocked and the
 * result unblocked here, then compared with the plain conv reference (every combination of the two). */
static int64_t nchwc_attrs[2]; /* data_block, out_block */

static void conv_nchwc_set(Graph *g, Node *n) {
  conv_set(g, n);
  ir_set_int(g, n, "data_block", nchwc_attrs[0]);
  ir_set_int(g, n, "out_block", nchwc_attrs[1]);
}

static void test_conv_packed_nchwc(const char *name, const int64_t *xs, const int64_t *ws, int64_t ocb, int64_t ib,
                                   int64_t out_block, int64_t stride, const int64_t *pads, const TopiConfig *cfg) {
  conv_p.nsp = 2;
  for (int i = 0; i < 2; i++) conv_p.strides[i] = stride, conv_p.dil[i] = 1;
  memcpy(conv_p.pads, pads, sizeof(int64_t) * 4);
  conv_p.groups = 1;
  nchwc_attrs[0] = ib;
  nchwc_attrs[1] = out_block;
  TensorType tin[2] = {tt(4, xs), tt(4, ws)};
  float *data[2] = {rand_tensor(&tin[0], 5), rand_tensor(&tin[1], 6)};
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OC = ws[0], KH = ws[2], KW = ws[3], b = ib ? ib : C;
  int64_t xd[5] = {N, C / b, H, W, b}, wd[6] = {OC / ocb, C / b, KH, KW, b, ocb}, wd5[5] = {OC / ocb, C, KH, KW, ocb};
  TensorType pin[2] = {ib ? tt(5, xd) : tin[0], ib ? tt(6, wd) : tt(5, wd5)};
  float *px = malloc(sizeof(float) * (size_t)tt_numel(&tin[0])), *pw = malloc(sizeof(float) * (size_t)tt_numel(&tin[1]));
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t hw = 0; hw < H * W; hw++)
        px[ib ? ((n * (C / b) + c / b) * H * W + hw) * b + c % b : (n * C + c) * H * W + hw] =
            data[0][(n * C + c) * H * W + hw];
  for (int64_t o = 0; o < OC; o++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t k = 0; k < KH * KW; k++)
        pw[(ib ? (((o / ocb) * (C / b) + c / b) * KH * KW + k) * b + c % b : ((o / ocb) * C + c) * KH * KW + k) * ocb +
           o % ocb] = data[1][(o * C + c) * KH * KW + k];
  float *pdata[2] = {ib ? px : data[0], pw};
  TensorType ot;
  float *got = run_op(name, "nn.conv2d_packed", 2, pin, pdata, conv_nchwc_set, cfg, &ot);
  if (got) {
    TensorType rt = ot;
    if (out_block) rt = (TensorType){.dtype = MLC_F32, .ndim = 4, .dims = {N, OC, ot.dims[2], ot.dims[3]}};
    if (out_block ? !(ot.ndim == 5 && ot.dims[1] == OC / ocb && ot.dims[4] == ocb) : ot.ndim != 4)
      FAIL("%s: output of rank %d", name, ot.ndim);
    float *want = calloc((size_t)tt_numel(&rt), sizeof(float)), *flat = malloc(sizeof(float) * (size_t)tt_numel(&rt));
    conv_ref(&tin[0], data[0], &tin[1], data[1], &rt, want);
    int64_t OHW = rt.dims[2] * rt.dims[3];
    for (int64_t n = 0; n < N; n++)
      for (int64_t o = 0; o < OC; o++)
        for (int64_t hw = 0; hw < OHW; hw++)
          flat[(n * OC + o) * OHW + hw] =
              got[out_block ? ((n * (OC / ocb) + o / ocb) * OHW + hw) * ocb + o % ocb : (n * OC + o) * OHW + hw];
    compare(name, flat, want, tt_numel(&rt), 1e-4);
    free(flat);
    free(want);
    free(got);
  }
  free(px);
  free(pw);
  free(data[0]);
  free(data[1]);
}

/* ---------------------------------------------------------------- pooling */

static struct {
  int nsp;
  int64_t k[3], s[3], d[3], pads[6], ceil_mode, cip;
} pool_p;

static void pool_set(Graph *g, Node *n) {
  ir_set_ints(g, n, "pool_size", pool_p.k, pool_p.nsp);
  ir_set_ints(g, n, "strides", pool_p.s, pool_p.nsp);
  ir_set_ints(g, n, "dilation", pool_p.d, pool_p.nsp);
  ir_set_ints(g, n, "padding", pool_p.pads, 2 * pool_p.nsp);
  ir_set_int(g, n, "ceil_mode", pool_p.ceil_mode);
  ir_set_int(g, n, "count_include_pad", pool_p.cip);
}

/* 2-D pooling reference (max or average) */
static void pool2d_ref(bool is_max, const TensorType *x, const float *xd, const TensorType *o, float *od) {
  int64_t NC = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3], OH = o->dims[2], OW = o->dims[3];
  for (int64_t c = 0; c < NC; c++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double acc = is_max ? -INFINITY : 0;
        int64_t cnt = 0;
        for (int64_t kh = 0; kh < pool_p.k[0]; kh++)
          for (int64_t kw = 0; kw < pool_p.k[1]; kw++) {
            int64_t h = oh * pool_p.s[0] + kh * pool_p.d[0] - pool_p.pads[0];
            int64_t w = ow * pool_p.s[1] + kw * pool_p.d[1] - pool_p.pads[1];
            bool in = h >= 0 && h < H && w >= 0 && w < W;
            bool in_padded = h >= -pool_p.pads[0] && h < H + pool_p.pads[2] && w >= -pool_p.pads[1] &&
                             w < W + pool_p.pads[3];
            if (pool_p.cip ? in_padded : in) cnt++;
            if (!in) continue;
            double v = xd[(c * H + h) * W + w];
            if (is_max)
              acc = v > acc ? v : acc;
            else
              acc += v;
          }
        od[(c * OH + oh) * OW + ow] = (float)(is_max ? acc : acc / (double)(cnt ? cnt : 1));
      }
}

static void test_pool2d(const char *name, bool is_max, const int64_t *xs, const int64_t *k, const int64_t *s,
                        const int64_t *dl, const int64_t *pads, int ceil_mode, int cip) {
  pool_p.nsp = 2;
  memcpy(pool_p.k, k, 2 * sizeof(int64_t));
  memcpy(pool_p.s, s, 2 * sizeof(int64_t));
  memcpy(pool_p.d, dl, 2 * sizeof(int64_t));
  memcpy(pool_p.pads, pads, 4 * sizeof(int64_t));
  pool_p.ceil_mode = ceil_mode;
  pool_p.cip = cip;
  TensorType tin = tt(4, xs), ot;
  float *data = rand_tensor(&tin, 3);
  float *got = run_op(name, is_max ? "nn.max_pool2d" : "nn.avg_pool2d", 1, &tin, &data, pool_set, NULL, &ot);
  if (got) {
    float *want = calloc((size_t)tt_numel(&ot), sizeof(float));
    pool2d_ref(is_max, &tin, data, &ot, want);
    compare(name, got, want, tt_numel(&ot), 1e-5);
    free(want);
    free(got);
  }
  free(data);
}

static void test_global_pool(void) {
  int64_t xs[4] = {2, 3, 5, 7};
  TensorType tin = tt(4, xs), ot;
  float *data = rand_tensor(&tin, 4);
  for (int is_max = 0; is_max < 2; is_max++) {
    const char *name = is_max ? "global max pool" : "global avg pool";
    float *got = run_op(name, is_max ? "nn.global_max_pool2d" : "nn.global_avg_pool2d", 1, &tin, &data, NULL, NULL, &ot);
    if (!got) continue;
    float want[6];
    for (int c = 0; c < 6; c++) {
      double acc = is_max ? -INFINITY : 0;
      for (int i = 0; i < 35; i++) acc = is_max ? fmax(acc, data[c * 35 + i]) : acc + data[c * 35 + i];
      want[c] = (float)(is_max ? acc : acc / 35);
    }
    if (ot.ndim != 4 || ot.dims[2] != 1 || ot.dims[3] != 1) FAIL("%s: bad output shape", name);
    compare(name, got, want, 6, 1e-5);
    free(got);
  }
  free(data);
}

/* ---------------------------------------------------------------- matmul family */

static int64_t mm_ta, mm_tb;
static void mm_set(Graph *g, Node *n) {
  ir_set_int(g, n, "transpose_a", mm_ta);
  ir_set_int(g, n, "transpose_b", mm_tb);
}

static void test_dense(void) {
  int64_t xs[2] = {5, 37}, ws[2] = {19, 37};
  TensorType tin[2] = {tt(2, xs), tt(2, ws)}, ot;
  float *data[2] = {rand_tensor(&tin[0], 5), rand_tensor(&tin[1], 6)};
  TopiConfig odd = {.nknobs = 3, .names = {"tile_n", "tile_m", "tile_k"}, .values = {4, 3, 10}};
  const TopiConfig *cfgs[2] = {NULL, &odd};
  for (int k = 0; k < 2; k++) {
    const char *name = k ? "dense (odd tiles)" : "dense";
    float *got = run_op(name, "nn.dense", 2, tin, data, NULL, cfgs[k], &ot);
    if (!got) continue;
    float want[5 * 19];
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 19; j++) {
        double acc = 0;
        for (int q = 0; q < 37; q++) acc += data[0][i * 37 + q] * data[1][j * 37 + q];
        want[i * 19 + j] = (float)acc;
      }
    compare(name, got, want, 5 * 19, 1e-4);
    free(got);
  }
  free(data[0]);
  free(data[1]);
}

/* numpy matmul reference for a[B?,M,K] b[B?,K,N] with transposes and broadcasting of one batch dim */
static void test_matmul(const char *name, const char *op, int ra, const int64_t *as, int rb, const int64_t *bs,
                        int ta, int tb) {
  mm_ta = ta;
  mm_tb = tb;
  TensorType tin[2] = {tt(ra, as), tt(rb, bs)}, ot;
  float *data[2] = {rand_tensor(&tin[0], 7), rand_tensor(&tin[1], 8)};
  float *got = run_op(name, op, 2, tin, data, mm_set, NULL, &ot);
  if (got) {
    /* promote to rank 3 [B, M, K] / [B, K, N] views */
    int64_t M = ra == 1 ? 1 : as[ra - (ta ? 1 : 2)], K = ra == 1 ? as[0] : as[ra - (ta ? 2 : 1)];
    int64_t N = rb == 1 ? 1 : bs[rb - (tb ? 2 : 1)];
    int64_t Ba = 1, Bb = 1;
    for (int i = 0; i < ra - 2; i++) Ba *= as[i];
    for (int i = 0; i < rb - 2; i++) Bb *= bs[i];
    int64_t B = Ba > Bb ? Ba : Bb;
    float *want = calloc((size_t)(B * M * N), sizeof(float));
    for (int64_t bi = 0; bi < B; bi++)
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          double acc = 0;
          for (int64_t q = 0; q < K; q++) {
            const float *A = data[0] + (Ba == 1 ? 0 : bi) * M * K, *Bm = data[1] + (Bb == 1 ? 0 : bi) * K * N;
            float av = ta ? A[q * M + i] : A[i * K + q];
            float bv = tb ? Bm[j * K + q] : Bm[q * N + j];
            acc += av * bv;
          }
          want[(bi * M + i) * N + j] = (float)acc;
        }
    if (tt_numel(&ot) != B * M * N) FAIL("%s: output has %lld elements, want %lld", name, (long long)tt_numel(&ot), (long long)(B * M * N));
    else compare(name, got, want, B * M * N, 1e-4);
    free(want);
    free(got);
  }
  free(data[0]);
  free(data[1]);
}

/* ---------------------------------------------------------------- softmax, reshape, transpose */

static int64_t sm_axis;
static void sm_set(Graph *g, Node *n) { ir_set_int(g, n, "axis", sm_axis); }

static void test_softmax(bool lg, int64_t axis) {
  int64_t xs[3] = {3, 4, 5};
  sm_axis = axis;
  TensorType tin = tt(3, xs), ot;
  float *data = rand_tensor(&tin, 9);
  char name[64];
  snprintf(name, sizeof name, "%s axis %lld", lg ? "log_softmax" : "softmax", (long long)axis);
  float *got = run_op(name, lg ? "nn.log_softmax" : "nn.softmax", 1, &tin, &data, sm_set, NULL, &ot);
  if (got) {
    float want[60];
    int64_t st[3] = {20, 5, 1};
    for (int i = 0; i < 60; i++) {
      int64_t pos = (i / st[axis]) % xs[axis], base = i - pos * st[axis];
      double mx = -INFINITY, sum = 0;
      for (int k = 0; k < xs[axis]; k++) mx = fmax(mx, data[base + k * st[axis]]);
      for (int k = 0; k < xs[axis]; k++) sum += exp(data[base + k * st[axis]] - mx);
      want[i] = (float)(lg ? data[i] - mx - log(sum) : exp(data[i] - mx) / sum);
    }
    compare(name, got, want, 60, 1e-5);
    free(got);
  }
  free(data);
}

static void rs_set(Graph *g, Node *n) {
  int64_t s[3] = {4, 3, 5};
  ir_set_ints(g, n, "newshape", s, 3);
}
static void tr_set(Graph *g, Node *n) {
  int64_t p[3] = {2, 0, 1};
  ir_set_ints(g, n, "axes", p, 3);
}

static void test_reshape_transpose(void) {
  int64_t xs[3] = {3, 4, 5};
  TensorType tin = tt(3, xs), ot;
  float *data = rand_tensor(&tin, 10);
  float *got = run_op("reshape", "reshape", 1, &tin, &data, rs_set, NULL, &ot);
  if (got) {
    compare("reshape", got, data, 60, 0);
    free(got);
  }
  got = run_op("transpose", "transpose", 1, &tin, &data, tr_set, NULL, &ot);
  if (got) {
    float want[60];
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 4; b++)
        for (int c = 0; c < 5; c++) want[(c * 3 + a) * 4 + b] = data[(a * 4 + b) * 5 + c];
    if (ot.dims[0] != 5 || ot.dims[1] != 3 || ot.dims[2] != 4) FAIL("transpose: bad shape");
    compare("transpose", got, want, 60, 0);
    free(got);
  }
  free(data);
}

int main(void) {
  Diag d = {0};
  topi_register_ops();
  if (cg_target_parse("llvm", &target, &d)) {
    printf("FAIL: target: %s\n", d.msg);
    return 1;
  }
  pool = mlc_pool_create(4);
  {
    int64_t xs[4] = {1, 3, 7, 9}, ws[4] = {4, 3, 3, 3}, s[2] = {1, 2}, dl[2] = {1, 1}, p[4] = {1, 0, 1, 2};
    test_conv("conv2d pads strides", 2, xs, ws, s, dl, p, 1);
  }
  {
    int64_t xs[4] = {2, 4, 8, 8}, ws[4] = {6, 2, 3, 3}, s[2] = {1, 1}, dl[2] = {2, 2}, p[4] = {2, 2, 2, 2};
    test_conv("conv2d groups dilation", 2, xs, ws, s, dl, p, 2);
  }
  {
    int64_t xs[4] = {1, 8, 10, 16}, ws[4] = {8, 1, 3, 3}, s[2] = {1, 1}, dl[2] = {1, 1}, p[4] = {1, 1, 1, 1};
    test_conv("conv2d depthwise", 2, xs, ws, s, dl, p, 8);
  }
  {
    int64_t xs[4] = {1, 5, 13, 13}, ws[4] = {32, 5, 3, 3}, p[4] = {1, 1, 1, 1};
    test_conv_packed("conv2d_packed width 13", xs, ws, 16, 1, p);
    int64_t xs2[4] = {1, 3, 6, 27}, ws2[4] = {16, 3, 3, 3};
    test_conv_packed("conv2d_packed width 27", xs2, ws2, 16, 1, p);
    int64_t xs3[4] = {1, 3, 9, 23}, p3[4] = {0, 0, 0, 0};
    test_conv_packed("conv2d_packed stride 2 no pad", xs3, ws2, 8, 2, p3);
    int64_t xs4[4] = {1, 4, 5, 13}, ws4[4] = {16, 4, 1, 1};
    test_conv_packed("conv2d_packed 1x1 width 13", xs4, ws4, 16, 1, p3);
    int64_t xs5[4] = {1, 4, 5, 14}, ws5[4] = {16, 4, 3, 3};
    test_conv_packed("conv2d_packed width 14", xs5, ws5, 16, 1, p);
    /* 1x1 NCHW -> NCHW with H*W a multiple of the lanes: the rows form (vectors along the fused H x W;
     * 7 x 16 = 7 vectors of AVX-512, 14 of AVX2; 2 images; a block of 8 with 24 channels) */
    int64_t xr[4] = {1, 5, 7, 16}, wr[4] = {32, 5, 1, 1};
    test_conv_packed("conv2d_packed 1x1 rows 7x16", xr, wr, 16, 1, p3);
    int64_t xr2[4] = {2, 24, 8, 12}, wr2[4] = {48, 24, 1, 1};
    test_conv_packed("conv2d_packed 1x1 rows 2 images", xr2, wr2, 16, 1, p3);
    int64_t xr3[4] = {1, 3, 16, 6}, wr3[4] = {24, 3, 1, 1};
    test_conv_packed("conv2d_packed 1x1 rows block 8", xr3, wr3, 8, 1, p3);
  }
  {
    int64_t xs[4] = {1, 16, 6, 14}, ws[4] = {32, 16, 3, 3}, p[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
    test_conv_packed_nchwc("conv2d_packed NCHW in, NCHWc out", xs, ws, 16, 0, 16, 1, p, NULL);
    test_conv_packed_nchwc("conv2d_packed NCHWc in, NCHW out", xs, ws, 16, 8, 0, 1, p, NULL);
    test_conv_packed_nchwc("conv2d_packed NCHWc in and out", xs, ws, 8, 16, 8, 1, p, NULL);
    test_conv_packed_nchwc("conv2d_packed NCHWc stride 2", xs, ws, 16, 16, 16, 2, p, NULL);
    int64_t xs2[4] = {2, 8, 5, 13}, ws2[4] = {16, 8, 1, 1};
    test_conv_packed_nchwc("conv2d_packed NCHWc 1x1 width 13", xs2, ws2, 16, 8, 16, 1, p0, NULL);
    int64_t xs3[4] = {1, 16, 7, 27};
    test_conv_packed_nchwc("conv2d_packed NCHWc width 27", xs3, ws, 16, 16, 16, 1, p, NULL);
    /* register tiles of several output channel blocks (tile_ocn): 4 blocks x 3 columns; 4 x 7 exceeds the
     * accumulator budget and runs as 2 x 7; 2 blocks x 14 columns as 1 x 14; NCHW and NCHWc outputs */
    int64_t ws4[4] = {64, 16, 3, 3};
    TopiConfig c4x3 = {.nknobs = 2, .names = {"tile_ocn", "tile_ow"}, .values = {4, 3}};
    TopiConfig c4x7 = {.nknobs = 2, .names = {"tile_ocn", "tile_ow"}, .values = {4, 7}};
    TopiConfig c2x14 = {.nknobs = 2, .names = {"tile_ocn", "tile_ow"}, .values = {2, 14}};
    test_conv_packed_nchwc("conv2d_packed NCHWc 4 blocks x 3", xs, ws4, 16, 16, 16, 1, p, &c4x3);
    test_conv_packed_nchwc("conv2d_packed NCHWc in, NCHW out, 4 blocks x 7", xs, ws4, 16, 16, 0, 1, p, &c4x7);
    test_conv_packed_nchwc("conv2d_packed NCHW in, NCHWc out, 2 blocks x 14", xs, ws4, 16, 0, 16, 1, p, &c2x14);
    test_conv_packed_cfg("conv2d_packed NCHW 4 blocks x 7", xs, ws4, 16, 1, p, &c4x7);
    /* order 0 cuts the 6 rows into two halves outside the channel blocks; order 1 walks the rows outermost;
     * 2-block tiles; 2 images; NCHW and NCHWc outputs */
    TopiConfig g2 = {.nknobs = 3, .names = {"tile_ocn", "tile_ow", "order"}, .values = {2, 7, 0}};
    TopiConfig g3 = {.nknobs = 3, .names = {"tile_ocn", "tile_ow", "order"}, .values = {1, 14, 0}};
    TopiConfig g6 = {.nknobs = 3, .names = {"tile_ocn", "tile_ow", "order"}, .values = {2, 7, 1}};
    int64_t xs5[4] = {2, 16, 6, 14};
    test_conv_packed_nchwc("conv2d_packed NCHWc row halves", xs5, ws4, 16, 16, 16, 1, p, &g2);
    test_conv_packed_nchwc("conv2d_packed NCHWc in, NCHW out, row halves", xs5, ws4, 16, 16, 0, 1, p, &g3);
    test_conv_packed_nchwc("conv2d_packed NCHWc rows outermost", xs5, ws4, 16, 16, 16, 1, p, &g6);
    test_conv_packed_cfg("conv2d_packed NCHW row halves", xs5, ws4, 16, 1, p, &g2);
  }
  {
    int64_t xs[3] = {1, 2, 11}, ws[3] = {3, 2, 4}, s[1] = {2}, dl[1] = {1}, p[2] = {1, 3};
    test_conv("conv1d", 1, xs, ws, s, dl, p, 1);
  }
  {
    int64_t xs[5] = {1, 2, 4, 5, 6}, ws[5] = {2, 2, 2, 3, 3}, s[3] = {1, 1, 2}, dl[3] = {1, 1, 1},
            p[6] = {0, 1, 1, 0, 1, 1};
    test_conv("conv3d", 3, xs, ws, s, dl, p, 1);
  }
  {
    int64_t xs[4] = {1, 2, 7, 9}, k[2] = {3, 3}, s[2] = {2, 2}, dl[2] = {1, 1}, p[4] = {1, 1, 1, 1};
    test_pool2d("max_pool2d pads", true, xs, k, s, dl, p, 0, 0);
    test_pool2d("avg_pool2d pads", false, xs, k, s, dl, p, 0, 0);
    test_pool2d("avg_pool2d count_include_pad", false, xs, k, s, dl, p, 0, 1);
    test_pool2d("avg_pool2d ceil", false, xs, k, s, dl, p, 1, 1);
    test_pool2d("max_pool2d ceil", true, xs, k, s, dl, p, 1, 0);
  }
  {
    int64_t xs[4] = {1, 1, 8, 16}, k[2] = {2, 2}, s[2] = {1, 1}, dl[2] = {2, 2}, p[4] = {0, 0, 0, 0};
    test_pool2d("max_pool2d dilation", true, xs, k, s, dl, p, 0, 0);
  }
  test_global_pool();
  test_dense();
  {
    int64_t a[2] = {6, 17}, b[2] = {17, 33};
    test_matmul("matmul 2d", "nn.matmul", 2, a, 2, b, 0, 0);
    int64_t at[2] = {17, 6}, bt[2] = {33, 17};
    test_matmul("matmul transposed", "nn.matmul", 2, at, 2, bt, 1, 1);
    int64_t a3[3] = {3, 4, 5}, b2[2] = {5, 16};
    test_matmul("batch_matmul broadcast", "nn.batch_matmul", 3, a3, 2, b2, 0, 0);
    int64_t a1[1] = {5}, b3[3] = {2, 5, 3};
    test_matmul("batch_matmul 1d x 3d", "nn.batch_matmul", 1, a1, 3, b3, 0, 0);
    int64_t a4[4] = {1, 2, 3, 4}, b1[1] = {4};
    test_matmul("batch_matmul 4d x 1d", "nn.batch_matmul", 4, a4, 1, b1, 0, 0);
  }
  for (int ax = 0; ax < 3; ax++) {
    test_softmax(false, ax);
    test_softmax(true, ax);
  }
  test_reshape_transpose();
  mlc_pool_destroy(pool);
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  printf("test_topi_nn: all passed\n");
  return 0;
}
