/* Unit test of the tensor and index op families (src/topi/tensor.c, src/topi/index.c): each case builds one
 * graph node, runs its type relation and TE compute on placeholders, schedules it with topi_schedule_group,
 * lowers, JIT-compiles and runs it, and compares with a naive C reference written here. Also checks that the
 * type relations reject invalid attribute combinations with MLC_ERR_INVALID. */
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

/* Runs op on inputs of any dtype; returns the output (malloc'd) and its type, or NULL on failure. With
 * want_status non-zero, only checks that infer fails with that status. */
static void *run_op(const char *cn, const char *opname, int nin, const TensorType *tin, void **data, SetAttrs set,
                    TensorType *otype, mlc_status want_status) {
  Arena *A = arena_new();
  Diag d = {0};
  void *result = NULL;
  Graph *g = ir_graph_new(A, "test");
  Value *vin[4];
  for (int i = 0; i < nin; i++) vin[i] = ir_value_new(g, arena_printf(A, "in%d", i), tin[i]);
  const OpDef *op = ir_op_find(opname);
  if (!op) {
    FAIL("%s: op %s not registered", cn, opname);
    goto out;
  }
  Node *n = ir_node_new(g, op, "n", "Test", 18, vin, nin, 1);
  if (set) set(g, n);
  mlc_status st = ir_infer_node(g, n, &d);
  if (want_status) {
    if (st != want_status) FAIL("%s: infer gave status %d (%s), want %d", cn, st, d.msg, want_status);
    goto out;
  }
  if (st) {
    FAIL("%s: infer: %s", cn, d.msg);
    goto out;
  }
  *otype = n->outputs[0]->type;
  TeCtx c = {.arena = A, .target = &target};
  TeTensor *ins[4], *outs[1];
  for (int i = 0; i < nin; i++) ins[i] = te_placeholder(&c, arena_printf(A, "in%d", i), tin[i].dtype, tin[i].ndim, tin[i].dims);
  if (op->compute(&c, n, ins, outs, &d)) {
    FAIL("%s: compute: %s", cn, d.msg);
    goto out;
  }
  TeSchedule *s = topi_schedule_group(&c, 1, outs, NULL, &d);
  TeTensor *args[5];
  for (int i = 0; i < nin; i++) args[i] = ins[i];
  args[nin] = outs[0];
  TirFunc *f = s ? te_lower(&c, s, "kernel", nin + 1, args, &d) : NULL;
  if (!f) {
    FAIL("%s: schedule/lower: %s", cn, d.msg);
    goto out;
  }
  CgModule *m = cg_module_new(&target, "test", &d);
  CgJit *jit = NULL;
  if (!m || cg_add_func(m, f, &d) || cg_jit_create(m, &jit, &d)) {
    FAIL("%s: codegen: %s", cn, d.msg);
    goto out;
  }
  mlc_kernel_fn fn = (mlc_kernel_fn)cg_jit_lookup(jit, "kernel");
  if (!fn) {
    FAIL("%s: kernel symbol missing", cn);
    cg_jit_free(jit);
    goto out;
  }
  result = calloc((size_t)tt_nbytes(otype) + 8, 1);
  void *bufs[5];
  for (int i = 0; i < nin; i++) bufs[i] = data[i];
  bufs[nin] = result;
  mlc_kernel_ctx kc;
  mlc_pool_kernel_ctx(pool, &kc);
  int32_t rc = fn(bufs, NULL, &kc);
  if (rc) {
    FAIL("%s: kernel returned %d", cn, rc);
    free(result);
    result = NULL;
  }
  cg_jit_free(jit);
out:
  arena_free(A);
  return result;
}

static void check_f32(const char *cn, const float *got, const TensorType *ot, int nd, const int64_t *dims,
                      const float *want) {
  if (!got) return;
  if (ot->ndim != nd || memcmp(ot->dims, dims, sizeof(int64_t) * (size_t)nd)) {
    FAIL("%s: wrong output shape", cn);
    return;
  }
  for (int64_t i = 0; i < tt_numel(ot); i++)
    if (got[i] != want[i]) {
      FAIL("%s: element %lld: got %g want %g", cn, (long long)i, got[i], want[i]);
      return;
    }
}

static TensorType tt(mlc_dtype t, int nd, const int64_t *dims) {
  TensorType r = {.dtype = t, .ndim = nd};
  memcpy(r.dims, dims, sizeof(int64_t) * (size_t)nd);
  return r;
}

/* ---- strided_slice: x[4,5] rows 3..0 step -2, cols 1..4 step 2 */
static void set_slice(Graph *g, Node *n) {
  int64_t b[2] = {3, 1}, e[2] = {-1, 5}, s[2] = {-2, 2};
  ir_set_ints(g, n, "begin", b, 2);
  ir_set_ints(g, n, "end", e, 2);
  ir_set_ints(g, n, "strides", s, 2);
}
static void test_slice(void) {
  int64_t xd[2] = {4, 5};
  float x[20];
  for (int i = 0; i < 20; i++) x[i] = (float)i;
  TensorType ti = tt(MLC_F32, 2, xd), ot;
  void *in[1] = {x};
  float *r = run_op("strided_slice", "strided_slice", 1, &ti, in, set_slice, &ot, MLC_OK);
  int64_t od[2] = {2, 2};
  float want[4] = {16, 18, 6, 8};
  check_f32("strided_slice", r, &ot, 2, od, want);
  free(r);
}

/* ---- nn.pad in every mode on x[3] = {1, 2, 3}, pads (2, 3); constant also with a crop */
static const char *pad_mode_s;
static int64_t pad_w[2];
static void set_pad(Graph *g, Node *n) {
  ir_set_ints(g, n, "pad_width", pad_w, 2);
  ir_set_string(g, n, "pad_mode", pad_mode_s);
  ir_set_float(g, n, "pad_value", 9);
}
static void test_pad(void) {
  int64_t xd[1] = {3};
  float x[3] = {1, 2, 3};
  TensorType ti = tt(MLC_F32, 1, xd), ot;
  void *in[1] = {x};
  struct { const char *mode; int64_t b, a; int64_t n; float want[8]; } cases[] = {
      {"constant", 2, 3, 8, {9, 9, 1, 2, 3, 9, 9, 9}},
      {"reflect", 2, 3, 8, {3, 2, 1, 2, 3, 2, 1, 2}},
      {"edge", 2, 3, 8, {1, 1, 1, 2, 3, 3, 3, 3}},
      {"wrap", 2, 3, 8, {2, 3, 1, 2, 3, 1, 2, 3}},
      {"constant", -1, 1, 3, {2, 3, 9}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pad_mode_s = cases[i].mode;
    pad_w[0] = cases[i].b, pad_w[1] = cases[i].a;
    char nm[64];
    snprintf(nm, sizeof nm, "pad %s %lld/%lld", cases[i].mode, (long long)cases[i].b, (long long)cases[i].a);
    float *r = run_op(nm, "nn.pad", 1, &ti, in, set_pad, &ot, MLC_OK);
    check_f32(nm, r, &ot, 1, &cases[i].n, cases[i].want);
    free(r);
  }
}

/* ---- take along axis 1 with negative int64 indices */
static void set_axis1(Graph *g, Node *n) { ir_set_int(g, n, "axis", 1); }
static void test_take(void) {
  int64_t xd[2] = {2, 3}, id[1] = {3};
  float x[6] = {0, 1, 2, 10, 11, 12};
  int64_t ix[3] = {-1, 0, 1};
  TensorType ti[2] = {tt(MLC_F32, 2, xd), tt(MLC_I64, 1, id)}, ot;
  void *in[2] = {x, ix};
  float *r = run_op("take", "take", 2, ti, in, set_axis1, &ot, MLC_OK);
  int64_t od[2] = {2, 3};
  float want[6] = {2, 0, 1, 12, 10, 11};
  check_f32("take", r, &ot, 2, od, want);
  free(r);
}

/* ---- gather_nd with batch_dims 1: data[2,2,2], indices[2,1] (int32) -> out[2,2] */
static void set_b1(Graph *g, Node *n) { ir_set_int(g, n, "batch_dims", 1); }
static void test_gather_nd(void) {
  int64_t xd[3] = {2, 2, 2}, id[2] = {2, 1};
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int32_t ix[2] = {1, 0};
  TensorType ti[2] = {tt(MLC_F32, 3, xd), tt(MLC_I32, 2, id)}, ot;
  void *in[2] = {x, ix};
  float *r = run_op("gather_nd", "gather_nd", 2, ti, in, set_b1, &ot, MLC_OK);
  int64_t od[2] = {2, 2};
  float want[4] = {2, 3, 4, 5};
  check_f32("gather_nd", r, &ot, 2, od, want);
  free(r);
}

/* ---- scatter_elements axis 1, reduction add, repeated and negative indices */
static void set_scatter_add(Graph *g, Node *n) {
  ir_set_int(g, n, "axis", 1);
  ir_set_string(g, n, "reduction", "add");
}
static void test_scatter_elements(void) {
  int64_t xd[2] = {1, 5}, id[2] = {1, 3};
  float x[5] = {1, 2, 3, 4, 5}, u[3] = {1.5f, 2, 10};
  int64_t ix[3] = {1, 1, -1};
  TensorType ti[3] = {tt(MLC_F32, 2, xd), tt(MLC_I64, 2, id), tt(MLC_F32, 2, id)}, ot;
  void *in[3] = {x, ix, u};
  float *r = run_op("scatter_elements add", "scatter_elements", 3, ti, in, set_scatter_add, &ot, MLC_OK);
  float want[5] = {1, 5.5f, 3, 4, 15};
  check_f32("scatter_elements add", r, &ot, 2, xd, want);
  free(r);
}

/* ---- scatter_nd (reduction none) on int64 data: rows replaced */
static void test_scatter_nd(void) {
  int64_t xd[2] = {3, 2}, id[2] = {2, 1}, ud[2] = {2, 2};
  int64_t x[6] = {1, 2, 3, 4, 5, 6}, ix[2] = {2, 0}, u[4] = {70, 80, 90, 100};
  TensorType ti[3] = {tt(MLC_I64, 2, xd), tt(MLC_I64, 2, id), tt(MLC_I64, 2, ud)}, ot;
  void *in[3] = {x, ix, u};
  int64_t *r = run_op("scatter_nd", "scatter_nd", 3, ti, in, NULL, &ot, MLC_OK);
  int64_t want[6] = {90, 100, 3, 4, 70, 80};
  if (r && memcmp(r, want, sizeof want)) FAIL("scatter_nd: wrong result");
  free(r);
}

/* ---- depth_to_space CRD, blocksize 2 on x[1,4,1,1] -> [1,1,2,2] */
static void set_d2s(Graph *g, Node *n) {
  ir_set_int(g, n, "block_size", 2);
  ir_set_string(g, n, "mode", "CRD");
}
static void test_depth_to_space(void) {
  int64_t xd[4] = {1, 4, 1, 1}, od[4] = {1, 1, 2, 2};
  float x[4] = {0, 1, 2, 3};
  TensorType ti = tt(MLC_F32, 4, xd), ot;
  void *in[1] = {x};
  float *r = run_op("depth_to_space", "nn.depth_to_space", 1, &ti, in, set_d2s, &ot, MLC_OK);
  check_f32("depth_to_space", r, &ot, 4, od, x);
  free(r);
}

/* ---- trilu lower with k = -1 on a 3x3 */
static void set_tril(Graph *g, Node *n) {
  ir_set_int(g, n, "upper", 0);
  ir_set_int(g, n, "k", -1);
}
static void test_trilu(void) {
  int64_t xd[2] = {3, 3};
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, want[9] = {0, 0, 0, 4, 0, 0, 7, 8, 0};
  TensorType ti = tt(MLC_F32, 2, xd), ot;
  void *in[1] = {x};
  float *r = run_op("trilu", "trilu", 1, &ti, in, set_tril, &ot, MLC_OK);
  check_f32("trilu", r, &ot, 2, xd, want);
  free(r);
}

/* ---- invalid combinations are MLC_ERR_INVALID */
static void set_bad_slice(Graph *g, Node *n) {
  int64_t b[1] = {0}, e[1] = {2}, s[1] = {0};
  ir_set_ints(g, n, "begin", b, 1);
  ir_set_ints(g, n, "end", e, 1);
  ir_set_ints(g, n, "strides", s, 1);
}
static void set_axis5(Graph *g, Node *n) { ir_set_int(g, n, "axis", 5); }
static void test_invalid(void) {
  int64_t xd[1] = {4};
  TensorType t1 = tt(MLC_F32, 1, xd), ot;
  TensorType ti[2] = {t1, tt(MLC_F32, 1, xd)};
  run_op("slice stride 0", "strided_slice", 1, &t1, NULL, set_bad_slice, &ot, MLC_ERR_INVALID);
  run_op("take float indices", "take", 2, ti, NULL, NULL, &ot, MLC_ERR_INVALID);
  ti[1].dtype = MLC_I64;
  run_op("take axis out of range", "take", 2, ti, NULL, set_axis5, &ot, MLC_ERR_INVALID);
}

int main(void) {
  Diag d = {0};
  topi_register_ops();
  if (cg_target_parse("llvm", &target, &d)) {
    printf("FAIL: target: %s\n", d.msg);
    return 1;
  }
  pool = mlc_pool_create(2);
  test_slice();
  test_pad();
  test_take();
  test_gather_nd();
  test_scatter_elements();
  test_scatter_nd();
  test_depth_to_space();
  test_trilu();
  test_invalid();
  mlc_pool_destroy(pool);
  if (failures) printf("%d failure(s)\n", failures);
  else printf("test_topi_tensor: all passed\n");
  return failures != 0;
}
