/* AlterOpLayout (after TVM's relay AlterOpLayout + topi x86 _alter_conv2d_layout, reduced to the weights):
 * every float32 nn.conv2d (groups 1, or grouped but not depthwise: then the block divides a group's output
 * channels, down to 4) with a constant weight and output channels divisible by the channel block
 * (16: one zmm with AVX-512, two ymm with AVX2, which keeps the FMA:load ratio of the register tile high;
 * else the target's float lanes; groups 1 with no such block: 16, the weight zero-padded to whole blocks, when
 * that adds at most a quarter) becomes nn.conv2d_packed (src/topi/conv2d_x86.c), whose weight is laid out
 * [OC/ocb][IC][KH][KW][ocb]: one vector of ocb output channels per (ic, kh, kw) tap. The packing is two graph
 * ops on the weight, reshape [OC/ocb, ocb, IC, KH, KW] then transpose (0, 2, 3, 4, 1), which the FoldConstant
 * run after this pass evaluates at compile time. Activations stay NCHW: the packed conv reads NCHW data and
 * writes NCHW output, so nothing else in the graph changes. A float32 nn.conv3d (groups 1) becomes
 * nn.conv3d_packed (src/topi/conv3d_x86.c) the same way, its weight [OC/ocb][IC][KD][KH][KW][ocb], NCDHW in and
 * out. Runs only for CPU targets (the pass options' target string does not start with "cuda"/"nvptx").
 *
 * Before that, rewrite_winograd turns the float32 3x3 convolutions with stride 1, dilation 1, groups 1, a
 * constant weight and output channels divisible by 8 into Winograd F(4x4 or 2x2, 3x3) (src/topi/winograd_x86.c:
 * input transform, batched GEMM, output transform) where the rule below says it is faster than the packed
 * direct conv; the weight goes through nn.winograd_weight_transform, which the following FoldConstant
 * evaluates at compile time. The pass config
 * AlterOpLayout.winograd selects it: 0 off, 1 by the rule, 2 every eligible conv (tests);
 * AlterOpLayout.winograd_tile forces F(4x4, 3x3) or F(2x2, 3x3) (0, the default: by the rule). */
#include <string.h>
#include "codegen/llvm/codegen.h"
#include "passes/graph/passes.h"
#include "topi/topi.h"

/* the output channel block of a packed conv: 16, the lanes, or 8 (half an AVX-512 vector: MobileNet's 24-channel
 * projections, so that the depthwise convs around them stay NCHWc too) */
static int64_t pick_block(int64_t oc, int lanes) {
  if (oc % 16 == 0 && lanes <= 16) return 16;
  if (oc % lanes == 0) return lanes;
  if (oc % 8 == 0) return 8;
  return 0;
}

/* the block of a grouped conv: one that divides a group's output channels */
static int64_t grouped_block(int64_t per_group, int lanes) {
  int64_t b = pick_block(per_group, lanes);
  return b ? b : per_group % 4 == 0 ? 4 : 0;
}

static bool gpu_target(const char *t) {
  return t && (strstr(t, "cuda") || strstr(t, "nvptx"));
}

/* The Winograd output tile m (F(m x m, 3x3)) for a layer, or 0 where the packed direct conv is faster
 * (measured on the 3x3 layers of ResNet-18/50 with AVX-512 and AVX2 targets, 1 and 2 threads). The batched
 * GEMM reuses each transformed weight value once per tile, and the transformed weight is (m + 2)^2 / 9 times
 * the weight: with too few tiles the kernel streams the weight from memory instead of computing. So: F(4x4)
 * when it gives at least 32 tiles (ResNet's 56x56 and 28x28 layers: 4 x fewer multiplies), else F(2x2) when
 * that gives at least 16 (14x14: 2.25 x fewer; 7x7, 16 tiles of which 12.25 are used: 1.7 x fewer), else none.
 * ResNet-18's three 512-channel convs at 7x7 (direct: 2.2 ms each, ~95% of the core's FMA peak on Zen 4) took
 * 1.77 ms with F(2x2) including the transforms: the model 7% faster on one thread, its 7x7 stage 3.9 -> 3.2 ms
 * on two; with an AVX2 target the stage ran 17 -> 8 ms. The transformed weights make the package larger
 * (16 MiB instead of 9 per such conv). The input and output transforms need enough channels to be amortised
 * over the GEMM: at least 32 each way. */
static int winograd_tile_for(int64_t c, int64_t k, int64_t n, int64_t oh, int64_t ow) {
  if (c < 32 || k < 32) return 0;
  if (n * ((oh + 3) / 4) * ((ow + 3) / 4) >= 32) return 4;
  if (n * ((oh + 1) / 2) * ((ow + 1) / 2) >= 16) return 2;
  return 0;
}

/* The tile m a conv gets (0: none) under mode / the forced tile (AlterOpLayout.winograd, winograd_tile). The
 * transformed weight, (m + 2)^2 / 9 of the weight, is computed at compile time by FoldConstant: one larger
 * than it folds would be recomputed on every run (FCN's 2048 -> 512 head: 151 MB with F(4x4), 0.4 s a run),
 * so such a conv takes F(2x2) where that folds, else stays direct. */
static int64_t winograd_tile(const PassOptions *opt, int64_t mode, int64_t tile, int64_t c, int64_t k, int64_t n,
                             int64_t oh, int64_t ow) {
  int64_t m = winograd_tile_for(c, k, n, oh, ow);
  if (mode == 0 || (mode == 1 && !m) || !pass_enabled(opt, "FoldConstant")) return 0;
  if (tile || !m) m = tile ? tile : 4; /* forced, or every eligible conv (mode 2) */
  int64_t fold = pass_config_int(opt, "FoldConstant.max_bytes");
  if (!tile && m == 4 && 36 * 4 * k * c > fold) m = 2;
  return (m + 2) * (m + 2) * 4 * k * c > fold ? 0 : m;
}

bool pass_winograd_applies(const PassOptions *opt, int64_t c, int64_t k, int64_t n, int64_t oh, int64_t ow) {
  if (gpu_target(opt->target) || k % 8 || !pass_enabled(opt, "AlterOpLayout")) return false;
  Target t;
  Diag td = {0};
  if (cg_target_parse(opt->target ? opt->target : "llvm", &t, &td) != MLC_OK || t.kind != TARGET_CPU) return false;
  int64_t tile = pass_config_int(opt, "AlterOpLayout.winograd_tile");
  return winograd_tile(opt, pass_config_int(opt, "AlterOpLayout.winograd"), tile == 2 || tile == 4 ? tile : 0, c, k,
                       n, oh, ow) != 0;
}

/* nn.conv2d(x, w) -> nn.winograd_output(nn.winograd_gemm(nn.winograd_input(nn.winograd_pad(x)),
 * nn.winograd_weight_transform(w))) on the convs the rule picks. The conv node itself becomes the output
 * transform (it keeps its output value); the four new nodes go right before it. */
static mlc_status rewrite_winograd(Graph *g, const PassOptions *opt, const Target *tgt, Diag *d) {
  int64_t mode = pass_config_int(opt, "AlterOpLayout.winograd");
  const OpDef *wtrans = ir_op_find("nn.winograd_weight_transform"), *win = ir_op_find("nn.winograd_input"),
              *wgemm = ir_op_find("nn.winograd_gemm"), *wout = ir_op_find("nn.winograd_output"),
              *wpad = ir_op_find("nn.winograd_pad");
  if (mode == 0 || !wtrans || !win || !wgemm || !wout || !wpad) return MLC_OK;
  int64_t tile = pass_config_int(opt, "AlterOpLayout.winograd_tile"); /* 0: by the rule */
  if (tile != 0 && tile != 2 && tile != 4)
    return diag_set(d, MLC_ERR_USAGE, "AlterOpLayout.winograd_tile must be 0, 2 or 4, not %lld", (long long)tile);
  int n0 = g->nodes.n;
  Node **pre = arena_alloc(g->arena, (size_t)(n0 ? n0 : 1) * 4 * sizeof(Node *));
  memset(pre, 0, (size_t)(n0 ? n0 : 1) * 4 * sizeof(Node *));
  bool changed = false;
  for (int i = 0; i < n0; i++) {
    Node *n = g->nodes.v[i];
    if (strcmp(n->op->name, "nn.conv2d") || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1]) continue;
    Value *x = n->inputs[0], *w = n->inputs[1];
    if (x->type.dtype != MLC_F32 || w->type.dtype != MLC_F32 || x->type.ndim != 4 || w->type.ndim != 4) continue;
    if (ir_attr_int(n, "exact", 0)) continue; /* an integer conv in float32 (LowerConv): its transforms would round */
    const int64_t *wd = w->type.dims;
    if (!w->data || ir_attr_int(n, "groups", 1) != 1 || wd[2] != 3 || wd[3] != 3 || wd[0] % 8) continue;
    int64_t v[4];
    int cnt = ir_attr_ints(n, "strides", v, 4);
    if (cnt && (cnt != 2 || v[0] != 1 || v[1] != 1)) continue;
    cnt = ir_attr_ints(n, "dilation", v, 4);
    if (cnt && (cnt != 2 || v[0] != 1 || v[1] != 1)) continue;
    const int64_t *od = n->outputs[0]->type.dims;
    int64_t m = winograd_tile(opt, mode, tile, wd[1], wd[0], od[0], od[2], od[3]);
    if (!m) continue;
    int64_t kb = wd[0] % 16 == 0 ? 16 : 8;
    int64_t pads[4] = {0, 0, 0, 0};
    ir_attr_ints(n, "padding", pads, 4);
    int64_t tiles = od[0] * ((od[2] + m - 1) / m) * ((od[3] + m - 1) / m);
    Node *t = ir_node_new(g, wtrans, arena_printf(g->arena, "%s_weight_winograd", n->name), n->op_type, n->opset,
                          &w, 1, 1);
    ir_set_int(g, t, "tile", m);
    ir_set_int(g, t, "block", kb);
    if (ir_infer_node(g, t, d)) return d->status;
    Node *pd = ir_node_new(g, wpad, arena_printf(g->arena, "%s_winograd_pad", n->name), n->op_type, n->opset, &x,
                           1, 1);
    ir_set_ints(g, pd, "padding", pads, 4);
    ir_set_int(g, pd, "tile", m);
    if (ir_infer_node(g, pd, d)) return d->status;
    Node *in = ir_node_new(g, win, arena_printf(g->arena, "%s_winograd_input", n->name), n->op_type, n->opset,
                           &pd->outputs[0], 1, 1);
    ir_set_int(g, in, "tile", m);
    ir_set_int(g, in, "ptiles", topi_winograd_padded_tiles(tgt, tiles, kb));
    if (ir_infer_node(g, in, d)) return d->status;
    Value *gin[2] = {in->outputs[0], t->outputs[0]};
    Node *gm = ir_node_new(g, wgemm, arena_printf(g->arena, "%s_winograd_gemm", n->name), n->op_type, n->opset,
                           gin, 2, 1);
    if (ir_infer_node(g, gm, d)) return d->status;
    TensorType before = n->outputs[0]->type;
    int64_t os[3] = {od[0], od[2], od[3]};
    n->op = wout;
    n->inputs[0] = gm->outputs[0];
    n->ninputs = 1;
    n->attrs = NULL;
    n->nattrs = 0;
    ir_set_int(g, n, "tile", m);
    ir_set_ints(g, n, "out_shape", os, 3);
    if (ir_infer_node(g, n, d)) return d->status;
    if (!tt_equal(&before, &n->outputs[0]->type))
      return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: node '%s' changed its output type", n->name);
    pre[4 * i] = t;
    pre[4 * i + 1] = pd;
    pre[4 * i + 2] = in;
    pre[4 * i + 3] = gm;
    changed = true;
  }
  if (!changed) return MLC_OK;
  int total = g->nodes.n, k = 0;
  Node **order = arena_alloc(g->arena, (size_t)total * sizeof(Node *));
  for (int i = 0; i < n0; i++) {
    for (int j = 0; j < 4; j++)
      if (pre[4 * i + j]) order[k++] = pre[4 * i + j];
    order[k++] = g->nodes.v[i];
  }
  if (k != total) return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: lost track of %d nodes", total - k);
  memcpy(g->nodes.v, order, (size_t)total * sizeof(Node *));
  return MLC_OK;
}

/* ---- dense: nn.dense / nn.matmul / nn.batch_matmul -> nn.dense_packed (src/topi/dense_x86.c)
 * A float32 product with a constant 2-D weight: nn.dense(x, W[N, K]), or a matmul A[..., K] x B with B [K, N]
 * (or [N, K] with transpose_b) and no transpose_a, whose result is the same [..., N] as a dense of A. The
 * weight is packed [NB][K][bn]: bn = the float lanes when they divide N and 16 does not (N = 1000 with AVX2),
 * else 16 (two AVX2 vectors, one AVX-512 vector) with N padded up to NB * bn by zero columns where needed, so
 * that every weight block is whole vectors (and the layout does not depend on AVX2 vs AVX-512 otherwise). The packing is graph ops on the constant (nn.pad when N needs padding,
 * reshape splitting N into [NB, bn], transpose bringing K out of the block) that the FoldConstant after this
 * pass evaluates; they go right before the product in the node order. */

static int64_t dense_block(int64_t n, int lanes) {
  if (lanes > 16 || (n % 16 != 0 && n % lanes == 0)) return lanes;
  return 16;
}

static mlc_status pack_dense_weights(Graph *g, int lanes, Diag *d) {
  const OpDef *packed = ir_op_find("nn.dense_packed"), *pad = ir_op_find("nn.pad"),
              *reshape = ir_op_find("reshape"), *transpose = ir_op_find("transpose");
  if (!packed || !pad || !reshape || !transpose) return MLC_OK;
  int n0 = g->nodes.n;
  Node **pre = arena_alloc(g->arena, (size_t)(n0 ? n0 : 1) * 3 * sizeof(Node *)); /* up to 3 per node */
  memset(pre, 0, (size_t)(n0 ? n0 : 1) * 3 * sizeof(Node *));
  bool changed = false;
  for (int i = 0; i < n0; i++) {
    Node *n = g->nodes.v[i];
    bool dense = !strcmp(n->op->name, "nn.dense");
    bool matmul = !strcmp(n->op->name, "nn.matmul") || !strcmp(n->op->name, "nn.batch_matmul");
    if ((!dense && !matmul) || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1]) continue;
    Value *x = n->inputs[0], *w = n->inputs[1];
    if (x->type.dtype != MLC_F32 || w->type.dtype != MLC_F32 || !w->data || w->type.ndim != 2 || x->type.ndim < 1)
      continue;
    if (matmul && x->type.ndim >= 2 && ir_attr_int(n, "transpose_a", 0)) continue;
    bool nk = dense || ir_attr_int(n, "transpose_b", 0); /* W is [N, K] (else [K, N]) */
    int64_t nn = w->type.dims[nk ? 0 : 1], kk = w->type.dims[nk ? 1 : 0];
    if (nn < 1 || kk < 1 || kk != x->type.dims[x->type.ndim - 1]) continue;
    int64_t bn = dense_block(nn, lanes), nb = (nn + bn - 1) / bn;
    Value *cur = w;
    int np = 0;
    if (nb * bn != nn) {
      Node *p = ir_node_new(g, pad, arena_printf(g->arena, "%s_weight_pad", n->name), n->op_type, n->opset, &cur, 1, 1);
      int64_t pw[4] = {0, 0, nk ? nb * bn - nn : 0, nk ? 0 : nb * bn - nn}; /* befores, then afters */
      ir_set_ints(g, p, "pad_width", pw, 4);
      if (ir_infer_node(g, p, d)) return d->status;
      cur = p->outputs[0];
      pre[3 * i + np++] = p;
    }
    Node *r = ir_node_new(g, reshape, arena_printf(g->arena, "%s_weight_block", n->name), n->op_type, n->opset, &cur,
                          1, 1);
    int64_t shp_nk[3] = {nb, bn, kk}, shp_kn[3] = {kk, nb, bn};
    ir_set_ints(g, r, "newshape", nk ? shp_nk : shp_kn, 3);
    if (ir_infer_node(g, r, d)) return d->status;
    cur = r->outputs[0];
    pre[3 * i + np++] = r;
    Node *t = ir_node_new(g, transpose, arena_printf(g->arena, "%s_weight_pack", n->name), n->op_type, n->opset,
                          &cur, 1, 1);
    int64_t perm_nk[3] = {0, 2, 1}, perm_kn[3] = {1, 0, 2};
    ir_set_ints(g, t, "axes", nk ? perm_nk : perm_kn, 3);
    if (ir_infer_node(g, t, d)) return d->status;
    pre[3 * i + np++] = t;
    TensorType before = n->outputs[0]->type;
    n->op = packed;
    n->inputs[1] = t->outputs[0];
    n->nattrs = 0; /* transpose_a/_b no longer apply: the packed weight has one layout */
    ir_set_int(g, n, "units", nn);
    if (ir_infer_node(g, n, d)) return d->status;
    if (!tt_equal(&before, &n->outputs[0]->type))
      return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: node '%s' changed its output type", n->name);
    changed = true;
  }
  if (!changed) return MLC_OK;
  int total = g->nodes.n, k = 0;
  Node **order = arena_alloc(g->arena, (size_t)total * sizeof(Node *));
  for (int i = 0; i < n0; i++) {
    for (int j = 0; j < 3; j++)
      if (pre[3 * i + j]) order[k++] = pre[3 * i + j];
    order[k++] = g->nodes.v[i];
  }
  if (k != total) return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: lost track of %d nodes", total - k);
  memcpy(g->nodes.v, order, (size_t)total * sizeof(Node *));
  return MLC_OK;
}

/* ---- small groups: a grouped nn.conv2d whose groups have fewer output channels than a block (ResNeXt-50's
 * 4 and 8 channels a group, RegNet's 8) cannot read or write NCHWc data in whole vectors, so it ran on NCHW
 * at a tenth of the packed conv's speed. merge_small_groups merges S neighbouring groups into one group of
 * a whole block (16) of output channels, with a block-diagonal weight: W'[oc][s * cin + j] = W[oc][j] where
 * s is oc's group within its merged group, zero for the other groups' input channels. The added terms are
 * x * 0.0f, so the sums are exact, unless another group's input is inf or NaN (then NaN, as Winograd's
 * transforms also give). It does S times the multiplies, and runs as a grouped nn.conv2d_packed in block
 * 16 that reads and writes the NCHWc data of the convs around it. Done where S <= the pass config
 * AlterOpLayout.merge_groups (default 4: 4 channels a group and up; 1 turns it off) and the merged group's
 * input channels are whole blocks too. */
static mlc_status merge_small_groups(Graph *g, const PassOptions *opt, Diag *d) {
  int64_t max_s = pass_config_int(opt, "AlterOpLayout.merge_groups");
  const int64_t block = 16;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (strcmp(n->op->name, "nn.conv2d") || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1]) continue;
    Value *x = n->inputs[0], *w = n->inputs[1];
    if (x->type.dtype != MLC_F32 || w->type.dtype != MLC_F32 || x->type.ndim != 4 || w->type.ndim != 4 || !w->data)
      continue;
    int64_t groups = ir_attr_int(n, "groups", 1);
    const int64_t *wd = w->type.dims;
    if (groups < 2 || wd[0] % groups || x->type.dims[1] != groups * wd[1]) continue;
    int64_t cout = wd[0] / groups, cin = wd[1];
    if (cout >= block || block % cout) continue;
    int64_t s = block / cout;
    if (s > max_s || groups % s || (s * cin) % block) continue;
    int64_t taps = wd[2] * wd[3], wide = s * cin;
    TensorType wt = w->type;
    wt.dims[1] = wide;
    Value *mw = ir_const_new(g, arena_printf(g->arena, "%s_weight_merged", n->name), wt, NULL);
    float *dst = mw->data;
    const float *src = w->data;
    memset(dst, 0, (size_t)tt_nbytes(&wt));
    for (int64_t oc = 0; oc < wd[0]; oc++) {
      int64_t at = (oc / cout) % s * cin; /* the group's input channels within the merged group */
      for (int64_t j = 0; j < cin; j++)
        memcpy(dst + (oc * wide + at + j) * taps, src + (oc * cin + j) * taps, (size_t)taps * sizeof(float));
    }
    TensorType before = n->outputs[0]->type;
    n->inputs[1] = mw;
    ir_set_int(g, n, "groups", groups / s);
    if (ir_infer_node(g, n, d)) return d->status;
    if (!tt_equal(&before, &n->outputs[0]->type))
      return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: node '%s' changed its output type", n->name);
  }
  return MLC_OK;
}

/* ---- depthwise: nn.conv2d with groups = C (one input channel per group, any channel multiplier) ->
 * nn.depthwise_conv2d (src/topi/depthwise_x86.c), same inputs and attributes: the op owns a compute with a
 * padding stage and a schedule vectorized along the output row. float32 4-D only; the weight need not be
 * constant (nothing is packed). */
static mlc_status rewrite_depthwise(Graph *g, Diag *d) {
  const OpDef *dw = ir_op_find("nn.depthwise_conv2d");
  if (!dw) return MLC_OK;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (strcmp(n->op->name, "nn.conv2d") || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1]) continue;
    const TensorType *x = &n->inputs[0]->type, *w = &n->inputs[1]->type;
    if (x->dtype != MLC_F32 || w->dtype != MLC_F32 || x->ndim != 4 || w->ndim != 4) continue;
    int64_t groups = ir_attr_int(n, "groups", 1);
    if (groups < 2 || groups != x->dims[1] || w->dims[1] != 1) continue;
    TensorType before = n->outputs[0]->type;
    n->op = dw;
    if (ir_infer_node(g, n, d)) return d->status;
    if (!tt_equal(&before, &n->outputs[0]->type))
      return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: node '%s' changed its output type", n->name);
  }
  return MLC_OK;
}

mlc_status pass_alter_op_layout(Graph *g, const PassOptions *opt, Diag *d) {
  if (gpu_target(opt->target)) return MLC_OK;
  Target t;
  Diag td = {0};
  if (cg_target_parse(opt->target ? opt->target : "llvm", &t, &td) != MLC_OK || t.kind != TARGET_CPU) return MLC_OK;
  if (rewrite_winograd(g, opt, &t, d) != MLC_OK) return d->status;
  if (rewrite_depthwise(g, d) != MLC_OK) return d->status;
  if (merge_small_groups(g, opt, d) != MLC_OK) return d->status;
  int lanes = t.vector_bytes >= 16 ? t.vector_bytes / 4 : 4;
  mlc_status dst = pack_dense_weights(g, lanes, d);
  if (dst) return dst;
  const OpDef *packed = ir_op_find("nn.conv2d_packed"), *packed3 = ir_op_find("nn.conv3d_packed"),
              *reshape = ir_op_find("reshape"), *transpose = ir_op_find("transpose");
  if (!packed || !packed3 || !reshape || !transpose) return MLC_OK;
  const OpDef *pad = ir_op_find("nn.pad");
  int n0 = g->nodes.n;
  /* new nodes are appended to g->nodes; pre[3 i ..] lists the (up to three) that must come right before node i */
  Node **pre = arena_alloc(g->arena, (size_t)(n0 ? n0 : 1) * 3 * sizeof(Node *));
  memset(pre, 0, (size_t)(n0 ? n0 : 1) * 3 * sizeof(Node *));
  bool changed = false;
  for (int i = 0; i < n0; i++) {
    Node *n = g->nodes.v[i];
    bool conv3 = !strcmp(n->op->name, "nn.conv3d"); /* groups 1: nn.conv3d_packed, NCDHW in and out */
    if ((strcmp(n->op->name, "nn.conv2d") && !conv3) || n->ninputs != 2 || !n->inputs[0] || !n->inputs[1]) continue;
    Value *x = n->inputs[0], *w = n->inputs[1];
    int rank = conv3 ? 5 : 4;
    if (x->type.dtype != MLC_F32 || w->type.dtype != MLC_F32 || x->type.ndim != rank || w->type.ndim != rank) continue;
    int64_t groups = ir_attr_int(n, "groups", 1);
    if (conv3 && groups != 1) continue;
    if (!w->data || groups < 1 || w->type.dims[0] % groups || x->type.dims[1] != groups * w->type.dims[1]) continue;
    /* grouped: a block within one group's output channels (4 when a group has only 4: ResNeXt's 32x4d) */
    bool tuned = false;
    int64_t ocb = groups > 1 ? grouped_block(w->type.dims[0] / groups, lanes) : pick_block(w->type.dims[0], lanes);
    if (opt->conv_block && groups == 1 && !conv3) { /* a tuned block (tile_oc of the conv's tuning record) */
      int64_t tb = opt->conv_block(opt->conv_block_user, n);
      if (tb > 0 && w->type.dims[0] % tb == 0) ocb = tb, tuned = true;
    }
    /* output channels in no block (ShuffleNet's 58, 116): zero-padded up to whole blocks of 16 when that adds
     * at most a quarter, else of 8 (a segmentation head's 21 classes: 24); the conv computes the padded blocks
     * and stores only its `channels` */
    int64_t oc = w->type.dims[0], ocp = (oc + 15) / 16 * 16;
    if (ocp * 4 > oc * 5) ocp = (oc + 7) / 8 * 8;
    if (!ocb && groups == 1 && pad && ocp * 4 <= oc * 5) ocb = ocp % 16 ? 8 : 16;
    /* a wide conv whose channels fill only half an AVX-512 vector in the last block (SqueezeNet's 1000-class
     * conv: block 8 ran at half the FMA rate, 90 GFLOP/s) pads to blocks of 16 when that adds at most 1/32 */
    if (ocb == 8 && !tuned && lanes == 16 && groups == 1 && !conv3 && pad && oc >= 256)
      ocb = 16;
    if (!ocb) continue;
    Value *wv = w;
    int np = 0;
    if (oc % ocb) {
      Node *p = ir_node_new(g, pad, arena_printf(g->arena, "%s_weight_pad", n->name), n->op_type, n->opset, &wv, 1, 1);
      int64_t pw[10] = {0}; /* befores, then afters */
      pw[rank] = ocp - oc;
      ir_set_ints(g, p, "pad_width", pw, 2 * rank);
      if (ir_infer_node(g, p, d)) return d->status;
      wv = p->outputs[0];
      pre[3 * i + np++] = p;
      ir_set_int(g, n, "channels", oc);
    }
    const int64_t *wd = wv->type.dims;
    Node *r = ir_node_new(g, reshape, arena_printf(g->arena, "%s_weight_block", n->name), n->op_type, n->opset, &wv,
                          1, 1);
    int64_t shp[6] = {wd[0] / ocb, ocb, wd[1], wd[2], wd[3], conv3 ? wd[4] : 0};
    ir_set_ints(g, r, "newshape", shp, rank + 1);
    if (ir_infer_node(g, r, d)) return d->status;
    Value *rv = r->outputs[0];
    Node *t = ir_node_new(g, transpose, arena_printf(g->arena, "%s_weight_pack", n->name), n->op_type, n->opset,
                          &rv, 1, 1);
    int64_t perm[6] = {0, 2, 3, 4, rank == 5 ? 5 : 1, 1};
    ir_set_ints(g, t, "axes", perm, rank + 1);
    if (ir_infer_node(g, t, d)) return d->status;
    TensorType before = n->outputs[0]->type;
    n->op = conv3 ? packed3 : packed;
    n->inputs[1] = t->outputs[0];
    if (ir_infer_node(g, n, d)) return d->status;
    if (!tt_equal(&before, &n->outputs[0]->type))
      return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: node '%s' changed its output type", n->name);
    pre[3 * i + np++] = r;
    pre[3 * i + np++] = t;
    changed = true;
  }
  if (!changed) return MLC_OK;
  /* topological order: the packing nodes right before their conv */
  int total = g->nodes.n;
  Node **order = arena_alloc(g->arena, (size_t)total * sizeof(Node *));
  int k = 0;
  for (int i = 0; i < n0; i++) {
    for (int j = 0; j < 3; j++)
      if (pre[3 * i + j]) order[k++] = pre[3 * i + j];
    order[k++] = g->nodes.v[i];
  }
  if (k != total) return diag_set(d, MLC_ERR_INTERNAL, "AlterOpLayout: lost track of %d nodes", total - k);
  memcpy(g->nodes.v, order, (size_t)total * sizeof(Node *));
  return MLC_OK;
}
