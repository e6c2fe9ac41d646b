/* Unit tests of the ops added for Attention, Einsum, GridSample, AffineGrid and the loss family
 * (nn.attention and einsum in src/topi/attention.c, image.grid_sample / image.affine_grid in image.c,
 * nn.nll_loss in loss.c): type relations (output shapes for 3-D/4-D attention with a past, grouped-query
 * heads, einsum's implicit and explicit outputs with ellipsis and diagonals, loss reductions), the errors for
 * invalid combinations, and that each compute builds TE tensors of the inferred types. The numerics are
 * covered end to end by the ONNX conformance tests (test_attention_*, test_einsum_*, test_gridsample_*,
 * test_affine_grid_*, test_nllloss_*, test_sce_*). */
#include <stdio.h>
#include <string.h>
#include "topi/topi.h"

static int failures;
#define CHECK(c)                                                            \
  do {                                                                      \
    if (!(c)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                                           \
    }                                                                       \
  } while (0)

typedef void (*SetAttrs)(Graph *g, Node *n);

/* infers op over inputs of the given types (ndim < 0: absent) and builds its compute; output types in ot */
static mlc_status run(const char *name, int nin, const TensorType *in, int nout, SetAttrs attrs, TensorType *ot) {
  Arena *a = arena_new();
  Graph *g = ir_graph_new(a, "test");
  Value *vs[8] = {0};
  for (int i = 0; i < nin; i++)
    if (in[i].ndim >= 0) vs[i] = ir_value_new(g, arena_printf(a, "in%d", i), in[i]);
  const OpDef *op = ir_op_find(name);
  if (!op) {
    fprintf(stderr, "op %s not registered\n", name);
    failures++;
    arena_free(a);
    return MLC_ERR_INTERNAL;
  }
  Node *n = ir_node_new(g, op, name, name, 23, vs, nin, nout);
  if (attrs) attrs(g, n);
  Diag d = {0};
  mlc_status st = ir_infer_node(g, n, &d);
  if (st == MLC_OK) {
    TeCtx c = {.arena = a};
    TeTensor *tin[8] = {0}, *tout[4] = {0};
    for (int i = 0; i < nin; i++)
      if (vs[i]) tin[i] = te_placeholder(&c, vs[i]->name, in[i].dtype, in[i].ndim, in[i].dims);
    st = op->compute(&c, n, tin, tout, &d);
    for (int i = 0; st == MLC_OK && i < n->noutputs; i++) {
      ot[i] = n->outputs[i]->type;
      CHECK(tout[i] && tout[i]->dtype == ot[i].dtype && tout[i]->ndim == ot[i].ndim);
      for (int k = 0; tout[i] && k < ot[i].ndim; k++) CHECK(tout[i]->shape[k] == ot[i].dims[k]);
    }
  }
  arena_free(a);
  return st;
}

static bool dims_are(const TensorType *t, int nd, const int64_t *want) {
  if (t->ndim != nd) return false;
  for (int i = 0; i < nd; i++)
    if (t->dims[i] != want[i]) return false;
  return true;
}

static const char *equation;
static void ein_attrs(Graph *g, Node *n) { ir_set_string(g, n, "equation", equation); }
static void attn3_attrs(Graph *g, Node *n) {
  ir_set_int(g, n, "q_num_heads", 4);
  ir_set_int(g, n, "kv_num_heads", 2);
  ir_set_int(g, n, "is_causal", 1);
  ir_set_int(g, n, "qk_mode", 2);
}
static void attn_bad_mode(Graph *g, Node *n) { ir_set_int(g, n, "qk_mode", 5); }
static void nll_mean(Graph *g, Node *n) {
  ir_set_string(g, n, "reduction", "mean");
  ir_set_int(g, n, "has_ignore", 1);
  ir_set_int(g, n, "ignore_index", -1);
}
static void nll_none(Graph *g, Node *n) { ir_set_string(g, n, "reduction", "none"); }
static void nll_bad(Graph *g, Node *n) { ir_set_string(g, n, "reduction", "avg"); }
static void gs_attrs(Graph *g, Node *n) {
  ir_set_string(g, n, "method", "cubic");
  ir_set_string(g, n, "padding_mode", "reflection");
}
static void gs_bad(Graph *g, Node *n) { ir_set_string(g, n, "padding_mode", "wrap"); }
static void ag_attrs(Graph *g, Node *n) {
  int64_t size[5] = {2, 3, 4, 5, 6};
  ir_set_ints(g, n, "size", size, 5);
  ir_set_int(g, n, "align_corners", 1);
}

int main(void) {
  topi_register_ops();
  TensorType ot[4];
  const TensorType absent = {MLC_F32, -1, {0}};

  /* attention: 3-D inputs, 4 q heads over 2 kv heads, a past of 5, a float mask of 2-D */
  {
    TensorType in[7] = {{MLC_F32, 3, {2, 3, 32}},    {MLC_F32, 3, {2, 4, 16}}, {MLC_F32, 3, {2, 4, 12}},
                        {MLC_F32, 2, {3, 9}},        {MLC_F32, 4, {2, 2, 5, 8}}, {MLC_F32, 4, {2, 2, 5, 6}}, absent};
    CHECK(run("nn.attention", 6, in, 4, attn3_attrs, ot) == MLC_OK);
    CHECK(dims_are(&ot[0], 3, (int64_t[]){2, 3, 24}));
    CHECK(dims_are(&ot[1], 4, (int64_t[]){2, 2, 9, 8}));
    CHECK(dims_are(&ot[2], 4, (int64_t[]){2, 2, 9, 6}));
    CHECK(dims_are(&ot[3], 4, (int64_t[]){2, 4, 3, 9}));
    /* 4-D float16 with nonpad_kv_seqlen and no mask or past */
    TensorType h[7] = {{MLC_F16, 4, {1, 4, 2, 8}}, {MLC_F16, 4, {1, 2, 6, 8}}, {MLC_F16, 4, {1, 2, 6, 8}}, absent,
                       absent, absent, {MLC_I64, 1, {1}}};
    CHECK(run("nn.attention", 7, h, 4, NULL, ot) == MLC_OK);
    CHECK(dims_are(&ot[0], 4, (int64_t[]){1, 4, 2, 8}) && ot[0].dtype == MLC_F16);
    /* heads that do not divide, a mask that does not broadcast, an unknown qk mode */
    TensorType bad[3] = {{MLC_F32, 4, {1, 3, 2, 8}}, {MLC_F32, 4, {1, 2, 6, 8}}, {MLC_F32, 4, {1, 2, 6, 8}}};
    CHECK(run("nn.attention", 3, bad, 4, NULL, ot) == MLC_ERR_INVALID);
    TensorType bm[4] = {{MLC_F32, 4, {1, 2, 2, 8}}, {MLC_F32, 4, {1, 2, 6, 8}}, {MLC_F32, 4, {1, 2, 6, 8}},
                        {MLC_F32, 2, {3, 6}}};
    CHECK(run("nn.attention", 4, bm, 4, NULL, ot) == MLC_ERR_INVALID);
    CHECK(run("nn.attention", 3, h, 4, attn_bad_mode, ot) == MLC_ERR_UNSUPPORTED);
    TensorType ints[3] = {{MLC_I32, 4, {1, 2, 2, 8}}, {MLC_I32, 4, {1, 2, 6, 8}}, {MLC_I32, 4, {1, 2, 6, 8}}};
    CHECK(run("nn.attention", 3, ints, 4, NULL, ot) == MLC_ERR_UNSUPPORTED);
  }

  /* einsum */
  {
    TensorType a = {MLC_F32, 3, {5, 2, 3}}, b = {MLC_F32, 3, {5, 3, 4}};
    TensorType ab[2] = {a, b};
    equation = "bij,bjk->bik";
    CHECK(run("einsum", 2, ab, 1, ein_attrs, ot) == MLC_OK && dims_are(&ot[0], 3, (int64_t[]){5, 2, 4}));
    equation = "...ij,...jk"; /* implicit: ellipsis, then i, k */
    CHECK(run("einsum", 2, ab, 1, ein_attrs, ot) == MLC_OK && dims_are(&ot[0], 3, (int64_t[]){5, 2, 4}));
    TensorType sq = {MLC_F64, 3, {3, 4, 4}};
    equation = "...ii->...i"; /* batch diagonal */
    CHECK(run("einsum", 1, &sq, 1, ein_attrs, ot) == MLC_OK && dims_are(&ot[0], 2, (int64_t[]){3, 4}));
    equation = "bii"; /* implicit trace: b only */
    CHECK(run("einsum", 1, &sq, 1, ein_attrs, ot) == MLC_OK && dims_are(&ot[0], 1, (int64_t[]){3}));
    TensorType h = {MLC_F16, 2, {3, 4}};
    equation = "ij->";
    CHECK(run("einsum", 1, &h, 1, ein_attrs, ot) == MLC_OK && ot[0].ndim == 0 && ot[0].dtype == MLC_F16);
    equation = "bij,bkk->bik"; /* k is 3 and 4 */
    CHECK(run("einsum", 2, ab, 1, ein_attrs, ot) == MLC_ERR_INVALID);
    equation = "ij,jk->ik"; /* rank mismatch */
    CHECK(run("einsum", 2, ab, 1, ein_attrs, ot) == MLC_ERR_INVALID);
    equation = "bij,bjk->bxk"; /* unknown output label */
    CHECK(run("einsum", 2, ab, 1, ein_attrs, ot) == MLC_ERR_INVALID);
  }

  /* nll_loss */
  {
    TensorType in[3] = {{MLC_F32, 4, {2, 5, 3, 4}}, {MLC_I64, 3, {2, 3, 4}}, {MLC_F32, 1, {5}}};
    CHECK(run("nn.nll_loss", 3, in, 1, nll_mean, ot) == MLC_OK && ot[0].ndim == 0 && ot[0].dtype == MLC_F32);
    CHECK(run("nn.nll_loss", 2, in, 1, nll_none, ot) == MLC_OK && dims_are(&ot[0], 3, (int64_t[]){2, 3, 4}));
    CHECK(run("nn.nll_loss", 2, in, 1, nll_bad, ot) == MLC_ERR_INVALID);
    TensorType bt[2] = {{MLC_F32, 3, {2, 5, 3}}, {MLC_I64, 2, {2, 4}}};
    CHECK(run("nn.nll_loss", 2, bt, 1, NULL, ot) == MLC_ERR_INVALID);
    TensorType ft[2] = {{MLC_F32, 2, {2, 5}}, {MLC_F32, 1, {2}}};
    CHECK(run("nn.nll_loss", 2, ft, 1, NULL, ot) == MLC_ERR_INVALID);
  }

  /* grid_sample and affine_grid */
  {
    TensorType in[2] = {{MLC_F32, 4, {1, 3, 4, 5}}, {MLC_F32, 4, {1, 6, 7, 2}}};
    CHECK(run("image.grid_sample", 2, in, 1, gs_attrs, ot) == MLC_OK && dims_are(&ot[0], 4, (int64_t[]){1, 3, 6, 7}));
    CHECK(run("image.grid_sample", 2, in, 1, gs_bad, ot) == MLC_ERR_UNSUPPORTED);
    TensorType v[2] = {{MLC_F64, 5, {1, 2, 3, 4, 5}}, {MLC_F64, 5, {1, 2, 2, 2, 3}}};
    CHECK(run("image.grid_sample", 2, v, 1, NULL, ot) == MLC_OK && dims_are(&ot[0], 5, (int64_t[]){1, 2, 2, 2, 2}));
    TensorType bg[2] = {{MLC_F32, 4, {1, 3, 4, 5}}, {MLC_F32, 4, {1, 6, 7, 3}}};
    CHECK(run("image.grid_sample", 2, bg, 1, NULL, ot) == MLC_ERR_INVALID);
    TensorType th = {MLC_F32, 3, {2, 3, 4}};
    CHECK(run("image.affine_grid", 1, &th, 1, ag_attrs, ot) == MLC_OK &&
          dims_are(&ot[0], 5, (int64_t[]){2, 4, 5, 6, 3}));
    TensorType th2 = {MLC_F32, 3, {2, 2, 3}};
    CHECK(run("image.affine_grid", 1, &th2, 1, ag_attrs, ot) == MLC_ERR_INVALID);
  }

  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("test_topi_contract: all checks passed\n");
  return failures != 0;
}
