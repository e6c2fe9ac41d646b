/* Unit tests of the graph IR: construction, attributes, type inference with a fake op, the Relay-style
 * printer, the verifier (use-before-def and cycles must fail), the graph summary (MACs) and the rules that
 * carry data-dependent extents (dynamic.c: propagated, refused, and a dropped extent caught). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

static int failures;
#define CHECK(c)                                                       \
  do {                                                                 \
    if (!(c)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      failures++;                                                      \
    }                                                                  \
  } while (0)

/* test.same: output has the type of input 0; fails when asked to by attribute "fail" */
static mlc_status same_infer(Node *n, Diag *d) {
  if (ir_attr_int(n, "fail", 0)) return diag_set(d, MLC_ERR_INVALID, "shapes do not match");
  for (int i = 0; i < n->noutputs; i++) n->outputs[i]->type = n->inputs[0]->type;
  return MLC_OK;
}
static const OpDef op_same = {"test.same", PAT_ELEMWISE, 1, 3, 1, same_infer, NULL};
static const OpDef op_split = {"test.split", PAT_INJECTIVE, 1, 1, -1, same_infer, NULL};

/* nn.dense: [M, K] x [N, K] -> [M, N] */
static mlc_status dense_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type, *w = &n->inputs[1]->type;
  if (x->ndim != 2 || w->ndim != 2 || x->dims[1] != w->dims[1])
    return diag_set(d, MLC_ERR_INVALID, "dense: bad shapes");
  n->outputs[0]->type = (TensorType){x->dtype, 2, {x->dims[0], w->dims[0]}};
  return MLC_OK;
}
static const OpDef op_dense = {"nn.dense", PAT_OUT_ELEMWISE_FUSABLE, 2, 3, 1, dense_infer, NULL};

static void test_types(void) {
  TensorType t = {MLC_F32, 4, {1, 64, 112, 112}};
  CHECK(tt_numel(&t) == 64 * 112 * 112);
  CHECK(tt_nbytes(&t) == 4 * 64 * 112 * 112);
  TensorType u = t;
  CHECK(tt_equal(&t, &u));
  u.dims[3] = 7;
  CHECK(!tt_equal(&t, &u));
  StrBuf b = {0};
  tt_print(&b, &t);
  CHECK(b.s && strcmp(b.s, "Tensor[(1, 64, 112, 112), float32]") == 0);
  sb_free(&b);
  TensorType s = {MLC_I64, 0, {0}};
  CHECK(tt_numel(&s) == 1);
  TensorType huge = {MLC_F32, 4, {INT64_MAX / 2, INT64_MAX / 2, 4, 0}};
  CHECK(tt_numel(&huge) == 0);
  huge.dims[3] = 5;
  CHECK(tt_numel(&huge) == INT64_MAX);
}

static void test_registry(void) {
  ir_op_register(&op_same);
  ir_op_register(&op_split);
  ir_op_register(&op_dense);
  ir_op_register(&op_same); /* twice: ignored */
  CHECK(ir_op_find("test.same") == &op_same);
  CHECK(ir_op_find("nn.dense") == &op_dense);
  CHECK(ir_op_find("nope") == NULL);
  int found = 0;
  for (int i = 0; i < ir_op_count(); i++) found += ir_op_at(i) == &op_same;
  CHECK(found == 1);
}

static void test_graph(void) {
  Arena *a = arena_new();
  Graph *g = ir_graph_new(a, "model.onnx");
  Value *x = ir_value_new(g, "data", (TensorType){MLC_F32, 2, {4, 8}});
  x->is_input = true;
  vec_push(a, &g->inputs, x);
  float wdata[16 * 8];
  for (int i = 0; i < 16 * 8; i++) wdata[i] = (float)i;
  Value *w = ir_const_new(g, "w", (TensorType){MLC_F32, 2, {16, 8}}, wdata);
  CHECK(((float *)w->data)[5] == 5.0f);
  float half = 0.5f;
  Value *sc = ir_const_new(g, "half", (TensorType){MLC_F32, 0, {0}}, &half);

  Node *n0 = ir_node_new(g, &op_dense, "fc", "Gemm", 13, (Value *[]){x, w}, 2, 1);
  ir_set_int(g, n0, "units", 16);
  ir_set_ints(g, n0, "axes", (int64_t[]){1, 2}, 2);
  ir_set_string(g, n0, "layout", "NC");
  ir_set_float(g, n0, "alpha", 1.5);
  ir_set_int(g, n0, "units", 16); /* replaced in place */
  CHECK(n0->nattrs == 4);
  Diag d = {0};
  CHECK(ir_infer_node(g, n0, &d) == MLC_OK);
  CHECK(n0->outputs[0]->type.dims[1] == 16);
  CHECK(ir_attr_int(n0, "units", 0) == 16);
  CHECK(ir_attr_float(n0, "alpha", 0) == 1.5);
  CHECK(strcmp(ir_attr_string(n0, "layout", ""), "NC") == 0);
  int64_t axes[4];
  CHECK(ir_attr_ints(n0, "axes", axes, 4) == 2 && axes[1] == 2);
  CHECK(ir_attr_ints(n0, "missing", axes, 4) == 0);
  CHECK(ir_attr_int(n0, "missing", 7) == 7);

  Node *n1 = ir_node_new(g, &op_split, "sp", "Split", 13, (Value *[]){n0->outputs[0]}, 1, 2);
  Node *n2 = ir_node_new(g, &op_same, "add", "Add", 14, (Value *[]){n1->outputs[0], n1->outputs[1], sc}, 3, 1);
  CHECK(ir_infer_types(g, &d) == MLC_OK);
  vec_push(a, &g->outputs, n2->outputs[0]);
  vec_push(a, &g->outputs, n1->outputs[1]);
  CHECK(ir_verify(g, &d) == MLC_OK);
  if (!diag_ok(&d)) fprintf(stderr, "verify: %s\n", d.msg);

  StrBuf b = {0};
  ir_print(g, &b);
  const char *want =
      "def @main(%data: Tensor[(4, 8), float32]) {\n"
      "  %0 = nn.dense(%data, meta[const][0] /* ty=Tensor[(16, 8), float32] */, units=16, axes=[1, 2], "
      "layout=\"NC\", alpha=1.5f) /* ty=Tensor[(4, 16), float32] */;\n"
      "  %1 = test.split(%0) /* ty=(Tensor[(4, 16), float32], Tensor[(4, 16), float32]) */;\n"
      "  %2 = test.same(%1.0, %1.1, 0.5f) /* ty=Tensor[(4, 16), float32] */;\n"
      "  (%2, %1.1) /* outputs */\n"
      "}\n";
  CHECK(b.s && strcmp(b.s, want) == 0);
  if (b.s && strcmp(b.s, want) != 0) fprintf(stderr, "got:\n%s\nwant:\n%s", b.s, want);
  sb_free(&b);

  GraphStats st;
  ir_graph_stats(g, &st);
  CHECK(st.ninputs == 1 && st.noutputs == 2 && st.nnodes == 3 && st.nops == 3);
  CHECK(st.nconsts == 2 && st.params == 16 * 8 + 1 && st.param_bytes == 4 * (16 * 8 + 1));
  CHECK(st.macs == 4 * 16 * 8);

  /* a failing type relation names the node */
  Node *bad = ir_node_new(g, &op_same, "badnode", "Relu", 14, (Value *[]){x}, 1, 1);
  ir_set_int(g, bad, "fail", 1);
  Diag d2 = {0};
  CHECK(ir_infer_node(g, bad, &d2) == MLC_ERR_INVALID);
  CHECK(strcmp(d2.msg, "model.onnx: node 'badnode' (Relu, opset 14): error: shapes do not match") == 0);
  if (strcmp(d2.msg, "model.onnx: node 'badnode' (Relu, opset 14): error: shapes do not match"))
    fprintf(stderr, "got: %s\n", d2.msg);
  g->nodes.n--; /* drop it again */

  /* too many inputs for the OpDef */
  Node *many = ir_node_new(g, &op_same, "many", "Sum", 13, (Value *[]){x, x, x, x}, 4, 1);
  many->outputs[0]->type = x->type;
  Diag d3 = {0};
  CHECK(ir_verify(g, &d3) != MLC_OK && strstr(d3.msg, "'many'") && strstr(d3.msg, "inputs"));
  g->nodes.n--;

  /* use before definition: swap two nodes */
  Node *t = g->nodes.v[0];
  g->nodes.v[0] = g->nodes.v[1];
  g->nodes.v[1] = t;
  Diag d4 = {0};
  CHECK(ir_verify(g, &d4) != MLC_OK && strstr(d4.msg, "before its definition"));
  g->nodes.v[1] = g->nodes.v[0];
  g->nodes.v[0] = t;
  Diag d5 = {0};
  CHECK(ir_verify(g, &d5) == MLC_OK);

  /* a cycle: fc reads the output of add */
  n0->inputs[0] = n2->outputs[0];
  Diag d6 = {0};
  CHECK(ir_verify(g, &d6) != MLC_OK && strstr(d6.msg, "cycle"));
  n0->inputs[0] = x;

  /* a value that nobody defines */
  Value *ghost = ir_value_new(g, "ghost", x->type);
  n2->inputs[2] = ghost;
  Diag d7 = {0};
  CHECK(ir_verify(g, &d7) != MLC_OK && strstr(d7.msg, "never defined"));
  n2->inputs[2] = sc;

  /* an untyped output */
  n2->outputs[0]->type.dtype = MLC_UNDEF;
  Diag d8 = {0};
  CHECK(ir_verify(g, &d8) != MLC_OK && strstr(d8.msg, "no type"));
  arena_free(a);
}

/* a stand-in conv: output type given by attribute "oshape" */
static mlc_status conv_infer(Node *n, Diag *d) {
  TensorType t = {n->inputs[0]->type.dtype, 0, {0}};
  t.ndim = ir_attr_ints(n, "oshape", t.dims, MLC_MAX_DIMS);
  n->outputs[0]->type = t;
  return MLC_OK;
}
static const OpDef op_conv = {"nn.conv2d", PAT_OUT_ELEMWISE_FUSABLE, 2, 3, 1, conv_infer, NULL};

static void test_conv_macs(void) {
  Arena *a = arena_new();
  Graph *g = ir_graph_new(a, "conv.onnx");
  Value *x = ir_value_new(g, "x", (TensorType){MLC_F32, 4, {1, 8, 16, 16}});
  x->is_input = true;
  vec_push(a, &g->inputs, x);
  /* grouped conv: 8 -> 4 channels, groups=2, weight [4, 4, 3, 3] */
  Value *w = ir_const_new(g, "w", (TensorType){MLC_F32, 4, {4, 4, 3, 3}}, NULL);
  Node *c = ir_node_new(g, &op_conv, "conv1", "Conv", 11, (Value *[]){x, w}, 2, 1);
  ir_set_ints(g, c, "oshape", (int64_t[]){1, 4, 14, 14}, 4);
  ir_set_int(g, c, "groups", 2);
  Diag d = {0};
  CHECK(ir_infer_types(g, &d) == MLC_OK);
  vec_push(a, &g->outputs, c->outputs[0]);
  CHECK(ir_verify(g, &d) == MLC_OK);
  GraphStats st;
  ir_graph_stats(g, &st);
  CHECK(st.macs == (int64_t)1 * 4 * 14 * 14 * 4 * 3 * 3);
  CHECK(st.params == 4 * 4 * 3 * 3 && st.nops == 1 && strcmp(st.ops[0].op, "nn.conv2d") == 0);
  /* no outputs: verify fails */
  g->outputs.n = 0;
  Diag d2 = {0};
  CHECK(ir_verify(g, &d2) != MLC_OK);
  arena_free(a);
}

/* test.source: a data-dependent op (output 0 like its input, bounded along axis 0; output 1 the extent) */
static mlc_status source_infer(Node *n, Diag *d) {
  n->outputs[0]->type = n->inputs[0]->type;
  n->outputs[1]->type = (TensorType){MLC_I64, 1, {1}};
  n->outputs[0]->dyn_extent = n->outputs[1];
  n->outputs[0]->dyn_axis = 0;
  return MLC_OK;
}
static const OpDef op_source = {"test.source", PAT_OPAQUE, 1, 1, 2, source_infer, NULL, DYN_SOURCE};
static const OpDef op_mul = {"test.mul", PAT_BROADCAST, 2, 2, 1, same_infer, NULL, DYN_ELEMWISE};
/* test.sum: reduces attribute axis away */
static mlc_status sum_infer(Node *n, Diag *d) {
  const TensorType *x = &n->inputs[0]->type;
  int64_t axis = ir_attr_int(n, "axis", 0);
  TensorType o = {x->dtype, 0, {0}};
  for (int i = 0; i < x->ndim; i++)
    if (i != axis) o.dims[o.ndim++] = x->dims[i];
  n->outputs[0]->type = o;
  return MLC_OK;
}
static const OpDef op_sum = {"test.sum", PAT_COMM_REDUCE, 1, 1, 1, sum_infer, NULL, DYN_REDUCE};
/* test.masked(x, extent): DYN_MASK; test.packed(x1, x2, e1, e2, total): DYN_PACK along axis 0 */
static mlc_status first_infer(Node *n, Diag *d) {
  (void)d;
  n->outputs[0]->type = n->inputs[0]->type;
  return MLC_OK;
}
static mlc_status packed_infer(Node *n, Diag *d) {
  (void)d;
  n->outputs[0]->type = n->inputs[0]->type;
  n->outputs[0]->type.dims[0] += n->inputs[1]->type.dims[0];
  return MLC_OK;
}
static const OpDef op_masked = {"test.masked", PAT_INJECTIVE, 2, 2, 1, first_infer, NULL, DYN_MASK};
static const OpDef op_packed = {"test.packed", PAT_OPAQUE, 5, 5, 1, packed_infer, NULL, DYN_PACK};

static void test_dynamic(void) {
  Arena *a = arena_new();
  Graph *g = ir_graph_new(a, "model.onnx");
  Value *x = ir_value_new(g, "x", (TensorType){MLC_F32, 2, {4, 8}});
  x->is_input = true;
  vec_push(a, &g->inputs, x);
  float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, many[32] = {0};
  Value *row = ir_const_new(g, "row", (TensorType){MLC_F32, 2, {1, 8}}, ones);
  Value *full = ir_const_new(g, "full", (TensorType){MLC_F32, 2, {4, 8}}, many);
  Diag d = {0};
  Node *src = ir_node_new(g, &op_source, "nz", "NonZero", 13, &x, 1, 2);
  CHECK(ir_infer_node(g, src, &d) == MLC_OK);
  Value *y = src->outputs[0], *ext = src->outputs[1];
  /* a static operand broadcast along the dynamic axis: the output carries the extent */
  Node *mul = ir_node_new(g, &op_mul, "m", "Mul", 13, (Value *[]){y, row}, 2, 1);
  CHECK(ir_infer_node(g, mul, &d) == MLC_OK);
  CHECK(mul->outputs[0]->dyn_extent == ext && mul->outputs[0]->dyn_axis == 0);
  /* reducing another axis keeps it; reducing the dynamic axis is refused, naming both nodes */
  Node *s1 = ir_node_new(g, &op_sum, "s1", "ReduceSum", 13, &mul->outputs[0], 1, 1);
  ir_set_int(g, s1, "axis", 1);
  CHECK(ir_infer_node(g, s1, &d) == MLC_OK && s1->outputs[0]->dyn_extent == ext);
  vec_push(a, &g->outputs, s1->outputs[0]);
  CHECK(ir_check_dynamic(g, &d) == MLC_OK);
  /* a pass that drops the extent is caught */
  mul->outputs[0]->dyn_extent = NULL;
  Diag d1 = {0};
  CHECK(ir_check_dynamic(g, &d1) == MLC_ERR_INTERNAL && strstr(d1.msg, "lost its data-dependent extent"));
  mul->outputs[0]->dyn_extent = ext;
  Node *s0 = ir_node_new(g, &op_sum, "s0", "ReduceSum", 13, &y, 1, 1);
  ir_set_int(g, s0, "axis", 0);
  Diag d2 = {0};
  CHECK(ir_infer_node(g, s0, &d2) == MLC_ERR_UNSUPPORTED &&
        strstr(d2.msg, "node 'nz' (NonZero, opset 13): error: NonZero's output") &&
        strstr(d2.msg, "feeds 's0' (ReduceSum): it reduces over the data-dependent axis"));
  /* a static operand with the bound's size along the axis does not line up with the valid rows */
  Node *bad = ir_node_new(g, &op_mul, "m2", "Mul", 13, (Value *[]){y, full}, 2, 1);
  Diag d3 = {0};
  CHECK(ir_infer_node(g, bad, &d3) == MLC_ERR_UNSUPPORTED && strstr(d3.msg, "static size 4"));
  /* DYN_MASK: reading the extent as an input makes the output static; another extent is refused */
  Node *src2 = ir_node_new(g, &op_source, "nz2", "NonZero", 13, &x, 1, 2);
  CHECK(ir_infer_node(g, src2, &d) == MLC_OK);
  Value *y2 = src2->outputs[0], *ext2 = src2->outputs[1];
  Node *m1 = ir_node_new(g, &op_masked, "mask", "ReduceSum", 13, (Value *[]){y, ext}, 2, 1);
  CHECK(ir_infer_node(g, m1, &d) == MLC_OK && !m1->outputs[0]->dyn_extent);
  Node *m2 = ir_node_new(g, &op_masked, "mask2", "ReduceSum", 13, (Value *[]){y, ext2}, 2, 1);
  Diag d4 = {0};
  CHECK(ir_infer_node(g, m2, &d4) == MLC_ERR_UNSUPPORTED && strstr(d4.msg, "another extent"));
  /* DYN_PACK: pieces with different extents; the output carries the total, its last input */
  Node *tot = ir_node_new(g, &op_mul, "tot", "Concat", 13, (Value *[]){ext, ext2}, 2, 1);
  CHECK(ir_infer_node(g, tot, &d) == MLC_OK);
  Node *pk = ir_node_new(g, &op_packed, "pack", "Concat", 13, (Value *[]){y, y2, ext, ext2, tot->outputs[0]}, 5, 1);
  CHECK(ir_infer_node(g, pk, &d) == MLC_OK && pk->outputs[0]->dyn_extent == tot->outputs[0] &&
        pk->outputs[0]->dyn_axis == 0);
  Node *pk2 = ir_node_new(g, &op_packed, "pack2", "Concat", 13, (Value *[]){y, y2, ext2, ext, tot->outputs[0]}, 5, 1);
  Diag d5 = {0};
  CHECK(ir_infer_node(g, pk2, &d5) == MLC_ERR_UNSUPPORTED && strstr(d5.msg, "another extent"));
  arena_free(a);
}

int main(void) {
  test_types();
  test_dynamic();
  test_registry();
  test_graph();
  test_conv_macs();
  if (failures) {
    fprintf(stderr, "test_ir: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_ir: ok\n");
  return 0;
}
