/* Unit tests of the norm, sort, image and attention op families (src/topi/norm.c, sort.c, image.c,
 * attention.c): type relations (output shapes and dtypes from attributes, layer norm's optional statistics
 * outputs, TopK's two outputs, Resize's sizes), the errors they give for invalid attributes, and that each
 * compute builds TE tensors of the inferred types. The numerics are covered end to end by the ONNX
 * conformance tests of these ops (LayerNormalization, TopK, Resize, RotaryEmbedding, ...). */
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

/* infers op over inputs of the given types and builds its compute; returns the status, output types in ot */
static mlc_status run(const char *name, int nin, const TensorType *in, int nout, SetAttrs attrs, TensorType *ot) {
  Arena *a = arena_new();
  Graph *g = ir_graph_new(a, "test");
  Value *vs[4];
  for (int i = 0; i < nin; i++) vs[i] = ir_value_new(g, arena_printf(a, "in%d", i), in[i]);
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
    TeTensor *tin[4], *tout[4] = {0};
    for (int i = 0; i < nin; i++) tin[i] = te_placeholder(&c, vs[i]->name, in[i].dtype, in[i].ndim, in[i].dims);
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

static void ln_attrs(Graph *g, Node *n) { ir_set_int(g, n, "axis", 1); }
static void gn_attrs(Graph *g, Node *n) { ir_set_int(g, n, "num_groups", 2); ir_set_string(g, n, "param", "group"); }
static void gn_bad(Graph *g, Node *n) { ir_set_int(g, n, "num_groups", 3); }
static void topk_attrs(Graph *g, Node *n) { ir_set_int(g, n, "axis", 1); ir_set_int(g, n, "k", 2); }
static void topk_bad(Graph *g, Node *n) { ir_set_int(g, n, "axis", 1); ir_set_int(g, n, "k", 9); }
static void cum_attrs(Graph *g, Node *n) { ir_set_int(g, n, "axis", 0); ir_set_int(g, n, "reverse", 1); }
static void resize_attrs(Graph *g, Node *n) {
  int64_t size[4] = {1, 3, 8, 6};
  double scale[4] = {1, 1, 2, 1.5};
  ir_set_ints(g, n, "size", size, 4);
  ir_set_floats(g, n, "scale", scale, 4);
  ir_set_string(g, n, "method", "cubic");
  ir_set_string(g, n, "coord", "half_pixel");
}
static void resize_bad_mode(Graph *g, Node *n) { resize_attrs(g, n); ir_set_string(g, n, "method", "area"); }
static void rope_attrs(Graph *g, Node *n) { ir_set_int(g, n, "num_heads", 2); }

int main(void) {
  topi_register_ops();
  TensorType ot[4];
  TensorType x = {MLC_F32, 3, {2, 3, 4}};
  TensorType sc = {MLC_F32, 2, {3, 4}};

  /* layer norm with mean and inv-std-dev outputs: statistics keep the leading dims, ones after axis */
  TensorType ln_in[3] = {x, sc, sc};
  CHECK(run("nn.layer_norm", 3, ln_in, 3, ln_attrs, ot) == MLC_OK);
  CHECK(tt_equal(&ot[0], &x));
  CHECK(ot[1].ndim == 3 && ot[1].dims[0] == 2 && ot[1].dims[1] == 1 && ot[1].dims[2] == 1 && ot[1].dtype == MLC_F32);
  TensorType bad_sc[2] = {x, {MLC_F32, 1, {5}}};
  CHECK(run("nn.layer_norm", 2, bad_sc, 1, ln_attrs, ot) == MLC_ERR_INVALID);
  TensorType ix[2] = {{MLC_I32, 3, {2, 3, 4}}, {MLC_I32, 2, {3, 4}}};
  CHECK(run("nn.rms_norm", 2, ix, 1, ln_attrs, ot) == MLC_ERR_UNSUPPORTED);

  /* group norm: per-group scale (opset 18), groups must divide the channels */
  TensorType gx = {MLC_F32, 4, {1, 4, 2, 2}}, g2 = {MLC_F32, 1, {2}};
  TensorType gn_in[3] = {gx, g2, g2};
  CHECK(run("nn.group_norm", 3, gn_in, 1, gn_attrs, ot) == MLC_OK && tt_equal(&ot[0], &gx));
  CHECK(run("nn.group_norm", 3, gn_in, 1, gn_bad, ot) == MLC_ERR_INVALID);
  CHECK(run("nn.lrn", 1, &gx, 1, NULL, ot) == MLC_ERR_INVALID); /* size is required */

  /* topk: values in the input dtype, int64 indices, k along axis */
  CHECK(run("topk", 1, &x, 2, topk_attrs, ot) == MLC_OK);
  CHECK(ot[0].dims[1] == 2 && ot[0].dtype == MLC_F32 && ot[1].dims[1] == 2 && ot[1].dtype == MLC_I64);
  CHECK(run("topk", 1, &x, 2, topk_bad, ot) == MLC_ERR_INVALID);
  TensorType i64 = {MLC_I64, 2, {3, 5}};
  CHECK(run("cumsum", 1, &i64, 1, cum_attrs, ot) == MLC_OK && tt_equal(&ot[0], &i64));
  CHECK(run("cumprod", 1, &x, 1, cum_attrs, ot) == MLC_OK);
  CHECK(run("hardmax", 1, &x, 1, NULL, ot) == MLC_OK && tt_equal(&ot[0], &x));

  /* resize takes its output shape from "size" */
  TensorType img = {MLC_F32, 4, {1, 3, 4, 4}};
  CHECK(run("image.resize", 1, &img, 1, resize_attrs, ot) == MLC_OK);
  CHECK(ot[0].dims[2] == 8 && ot[0].dims[3] == 6);
  CHECK(run("image.resize", 1, &img, 1, resize_bad_mode, ot) == MLC_ERR_UNSUPPORTED);

  /* rotary embedding of a 3-D input with position ids */
  TensorType rp[4] = {{MLC_F32, 3, {2, 3, 16}}, {MLC_F32, 2, {10, 4}}, {MLC_F32, 2, {10, 4}}, {MLC_I64, 2, {2, 3}}};
  CHECK(run("nn.rotary_embedding", 4, rp, 1, rope_attrs, ot) == MLC_OK && tt_equal(&ot[0], &rp[0]));
  rp[1].dims[1] = 3;
  CHECK(run("nn.rotary_embedding", 4, rp, 1, rope_attrs, ot) == MLC_ERR_INVALID);

  if (failures) fprintf(stderr, "test_topi_norm: %d failure(s)\n", failures);
  else printf("test_topi_norm: ok\n");
  return failures != 0;
}
