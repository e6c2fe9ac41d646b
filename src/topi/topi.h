/* topi: the operator inventory. One file per op family holds, for each op: its attributes (as the graph
 * IR stores them), the shape/type relation, the pattern kind, the TE compute, and for heavy ops the schedule
 * template with its config space (knobs) and fallback config. topi_register_ops puts every OpDef into the
 * registry of src/ir. Graph op names follow Relay ("nn.conv2d", "add", "nn.relu").
 *
 * Conventions for ops the ONNX importer produces (the importer normalises every opset's attributes into
 * these, so ops see one form):
 *   - axes are non-negative after import; shape-like inputs known at compile time become int attributes;
 *   - broadcasting follows numpy rules (ONNX multidirectional broadcasting). */
#ifndef MLC_TOPI_H
#define MLC_TOPI_H
#include "ir/ir.h"
#include "te/te.h"

void topi_register_ops(void);

/* ---- schedule templates (schedule.c and the op families) ---- */
#define TOPI_MAX_KNOBS 16
#define TOPI_MAX_CHOICES 64
typedef struct TopiKnob {
  const char *name;
  int nchoices;
  int64_t choices[TOPI_MAX_CHOICES]; /* a split factor, an unroll step, 0/1 for on/off, ... */
} TopiKnob;

typedef struct TopiConfigSpace {
  int nknobs;
  TopiKnob knobs[TOPI_MAX_KNOBS];
} TopiConfigSpace;

typedef struct TopiConfig {
  int nknobs;
  const char *names[TOPI_MAX_KNOBS];
  int64_t values[TOPI_MAX_KNOBS];
} TopiConfig;

int64_t topi_config_get(const TopiConfig *c, const char *name, int64_t dflt);

typedef struct TopiTemplate {
  const char *name; /* "conv2d_nchw.x86" (matches TeOp.tag of its anchor) */
  void (*space)(const Target *t, const TeOp *anchor, TopiConfigSpace *space);
  void (*fallback)(const Target *t, const TeOp *anchor, TopiConfig *cfg);
  /* schedules the anchor's stage (and its epilogue output when out != anchor output) */
  void (*schedule)(TeCtx *c, TeSchedule *s, TeOp *anchor, TeTensor *out, const TopiConfig *cfg);
} TopiTemplate;

const TopiTemplate *topi_template_find(const char *tag);

/* Helpers the templates share (schedule.c). */
void topi_cfg_set(TopiConfig *c, const char *name, int64_t v);
TopiKnob *topi_knob_add(TopiConfigSpace *s, const char *name);
void topi_knob_choice(TopiKnob *k, int64_t v);
int topi_vector_lanes(const Target *t, mlc_dtype dt); /* elements of dt per vector register */
int topi_vector_regs(const Target *t);                /* vector registers: 32 with AVX-512, else 16 */
int topi_num_cores(const Target *t);
int64_t topi_largest_divisor(int64_t n, int64_t max);  /* the largest divisor of n that is <= max */
/* the tensor read as operand i (0 or 1) of a reduction of products, sum(x[..] * w[..]) (the weight of a GEMM or
 * a conv: what te_prefetch streams), or NULL when a's body is not of that form */
TeTensor *topi_product_operand(const TeOp *a, int i);
/* Parallel loops are cut into contiguous chunks, one per thread, so a kernel whose parallel loop has the
 * channel blocks outermost gives each of two threads half the channels of every row, and reads an input
 * whose rows (the previous kernel split the same way) half sit in the neighbour core's cache. The schedules
 * of the convolutions therefore cut the rows (or a GEMM's rows of tiles) into topi_row_groups(rows) groups
 * outside the channel blocks: 2 where rows is even and > 2, else 1. */
int64_t topi_row_groups(int64_t rows);
/* Register tiles of several channel blocks x cols columns (conv2d_packed's tile_ocn, conv2d_winograd's tile_k):
 * at most TOPI_BLOCKS_MAX_ACC accumulators (2 x 14 spilled the 14 broadcasts the blocks share, 2 x 12 did not);
 * the fallbacks stay at TOPI_BLOCKS_DEFAULT_ACC (the Winograd GEMM's 2 x 12 ran slower than 1 x 12, its 2 x 10
 * faster than 1 x 10). topi_fit_blocks halves `want` until it divides nblocks and the tile fits (1 always does). */
#define TOPI_BLOCKS_MAX_ACC 24
#define TOPI_BLOCKS_DEFAULT_ACC 20
int64_t topi_fit_blocks(int64_t nblocks, int64_t want, int64_t cols);
/* the range of an integer dtype of at most 32 bits (int2 .. uint32; 0 for others) */
double topi_int_lo(mlc_dtype t);
double topi_int_hi(mlc_dtype t);
/* Row y and column x of a padded image (top, left padding) in an h x w image: the condition that they fall
 * inside it, and in *cy / *cx the indices clamped into it (a read that stays in bounds under the select) */
Expr *topi_pad_window(Arena *a, Expr *y, Expr *x, int64_t top, int64_t left, int64_t h, int64_t w, Expr **cy,
                      Expr **cx);
IterVar *topi_fuse_range(TeStage *st, IterVar **ivs, int n);
void topi_split(TeStage *st, IterVar *iv, int64_t factor, IterVar **outer, IterVar **inner); /* factor clamped */
/* conv2d_x86.c: the template of nn.conv2d_packed (tag "conv2d_packed") */
void topi_conv2d_packed_space(const Target *t, const TeOp *a, TopiConfigSpace *s);
void topi_conv2d_packed_fallback(const Target *t, const TeOp *a, TopiConfig *cfg);
void topi_conv2d_packed_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg);
/* winograd_x86.c: the template of nn.winograd_gemm (tag "conv2d_winograd": the batched GEMM of a Winograd conv) */
void topi_conv2d_winograd_space(const Target *t, const TeOp *a, TopiConfigSpace *s);
void topi_conv2d_winograd_fallback(const Target *t, const TeOp *a, TopiConfig *cfg);
void topi_conv2d_winograd_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg);
/* the templates of nn.winograd_input and nn.winograd_output (no knobs) */
void topi_winograd_input_space(const Target *t, const TeOp *a, TopiConfigSpace *s);
void topi_winograd_input_fallback(const Target *t, const TeOp *a, TopiConfig *cfg);
void topi_winograd_input_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg);
void topi_winograd_output_space(const Target *t, const TeOp *a, TopiConfigSpace *s);
void topi_winograd_output_fallback(const Target *t, const TeOp *a, TopiConfig *cfg);
void topi_winograd_output_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg);
/* image.c: the template of a separable image.resize (no knobs) */
void topi_resize_space(const Target *t, const TeOp *a, TopiConfigSpace *s);
void topi_resize_fallback(const Target *t, const TeOp *a, TopiConfig *cfg);
void topi_resize_schedule(TeCtx *c, TeSchedule *s, TeOp *a, TeTensor *out, const TopiConfig *cfg);
/* PP: the Winograd tile count rounded up to a multiple of the GEMM's default register tile (AlterOpLayout
 * sets it as nn.winograd_input's ptiles) */
int64_t topi_winograd_padded_tiles(const Target *t, int64_t tiles, int64_t kb);
/* The schedule of one fused group whose outputs are outs: inlines injective stages, finds the anchor
 * (the non-injective op), applies its template with cfg (the fallback when cfg is NULL), and gives every
 * remaining root stage the generic schedule (fuse outer axes, parallel, vectorize the innermost). */
TeSchedule *topi_schedule_group(TeCtx *c, int nout, TeTensor **outs, const TopiConfig *cfg, Diag *d);
/* GPU targets (schedule_gpu.c): injective stages inlined; every root stage's spatial axes fused, split by
 * the threads per block and bound to blockIdx.x / threadIdx.x; reduce axes serial inside the thread. */
TeSchedule *topi_schedule_gpu(TeCtx *c, int nout, TeTensor **outs, Diag *d);

/* The generic schedule of a root stage that no template owns (schedule.c): injective stages fuse outer axes,
 * parallel, vectorize the innermost; reductions parallel over their spatial axes. */
void topi_schedule_stage_generic(TeCtx *c, TeStage *st);

/* ---- dense_x86.c: the dense / matmul / batch_matmul template ---- */
void topi_dense_x86_space(const Target *t, const TeOp *anchor, TopiConfigSpace *space);
void topi_dense_x86_fallback(const Target *t, const TeOp *anchor, TopiConfig *cfg);
void topi_dense_x86_schedule(TeCtx *c, TeSchedule *s, TeOp *anchor, TeTensor *out, const TopiConfig *cfg);
/* the template of nn.dense_packed (tag "dense_packed"; weight [N/bn][K][bn] packed by AlterOpLayout) */
void topi_dense_packed_space(const Target *t, const TeOp *anchor, TopiConfigSpace *space);
void topi_dense_packed_fallback(const Target *t, const TeOp *anchor, TopiConfig *cfg);
void topi_dense_packed_schedule(TeCtx *c, TeSchedule *s, TeOp *anchor, TeTensor *out, const TopiConfig *cfg);

/* ---- norm.c: the per-row template of nn.layer_norm / nn.rms_norm (tag "layer_norm", no knobs) ---- */
void topi_layer_norm_space(const Target *t, const TeOp *anchor, TopiConfigSpace *space);
void topi_layer_norm_fallback(const Target *t, const TeOp *anchor, TopiConfig *cfg);
void topi_layer_norm_schedule(TeCtx *c, TeSchedule *s, TeOp *anchor, TeTensor *out, const TopiConfig *cfg);
/* ---- conv2d_x86.c's register tile of a packed conv, shared with conv3d_x86.c: reg_n output columns (the
 * fallback tile_ow) over the width *owp it pads OW up to, and the most columns the register file holds ---- */
int64_t topi_conv_packed_tile(const Target *t, int64_t ow, int64_t ocb, int64_t *owp);
int64_t topi_conv_packed_reg_max(const Target *t, int64_t ocb);
/* ---- conv2d_x86.c's rows form (vectors along H x W) register tile, shared with conv3d_x86.c's temporal form:
 * tile_rows output channels (a power of two <= 16 dividing OC) x tile_vecs vectors (dividing nvec) ---- */
bool topi_conv_rows_ok(int64_t oc, int64_t rows);
void topi_conv_rows_tile(const Target *t, int64_t oc, int64_t nvec, int64_t *rows, int64_t *vecs);
/* ---- conv3d_x86.c: the template of nn.conv3d_packed (tag "conv3d_packed", knobs tile_ow, tile_ic) ---- */
void topi_conv3d_packed_space(const Target *t, const TeOp *anchor, TopiConfigSpace *space);
void topi_conv3d_packed_fallback(const Target *t, const TeOp *anchor, TopiConfig *cfg);
void topi_conv3d_packed_schedule(TeCtx *c, TeSchedule *s, TeOp *anchor, TeTensor *out, const TopiConfig *cfg);
/* ---- depthwise_x86.c: the template of nn.depthwise_conv2d (tag "depthwise_conv2d") ---- */
void topi_depthwise_x86_space(const Target *t, const TeOp *anchor, TopiConfigSpace *space);
void topi_depthwise_x86_fallback(const Target *t, const TeOp *anchor, TopiConfig *cfg);
void topi_depthwise_x86_schedule(TeCtx *c, TeSchedule *s, TeOp *anchor, TeTensor *out, const TopiConfig *cfg);
/* ---- rnn.c: the gate block bn of nn.rnn / nn.gru / nn.lstm's recurrent product (HoistRnnProjection packs R
 * [D, G * H / bn, H, bn] with it) ---- */
int64_t topi_rnn_gate_block(const char *op, int64_t hidden);
/* ---- attention.c: einsum's equation parsed against its operands' ranks (LowerEinsum rewrites the products
 * it can into nn.batch_matmul). Labels are letters by ASCII code; ellipsis dims are 1 + their right-aligned
 * position. The output labels come from "->" or numpy's implicit rule. ---- */
#define TOPI_EINSUM_MAX_OPS 8
#define TOPI_EINSUM_LABELS 128
typedef struct TopiEinsum {
  int nops;
  int rank[TOPI_EINSUM_MAX_OPS];
  int lab[TOPI_EINSUM_MAX_OPS][MLC_MAX_DIMS]; /* the label of each operand dim */
  int nout, out[MLC_MAX_DIMS];                /* the output's labels */
  int64_t size[TOPI_EINSUM_LABELS];           /* each label's extent (the broadcast one) */
} TopiEinsum;
mlc_status topi_einsum_parse(const Node *n, TopiEinsum *e, Diag *d);
/* ---- sort.c: a stable bottom-up merge sort as TIR (TopK's long rows, NonMaxSuppression's candidates):
 * ord[0..n) = 0..n-1 ordered by key(index) (descending or ascending; equal keys keep index order), with the
 * scratch tmp[n] and the one-element run pointers pi, pj ---- */
Stmt *topi_merge_sort(Arena *A, int64_t n, Buffer *ord, Buffer *tmp, Buffer *pi, Buffer *pj, bool descending,
                      Expr *(*key)(Arena *A, Expr *index, void *user), void *user);
/* ---- helpers shared by op families (common.c) ---- */
/* numpy broadcasting of input shapes -> output type (dtype of a) */
mlc_status topi_broadcast_shape(const TensorType *a, const TensorType *b, TensorType *out);
/* index expressions into t for output index idx of a broadcast with output rank ndim */
void topi_broadcast_index(TeCtx *c, const TeTensor *t, int ndim, Expr **idx, Expr **out_idx);
/* t cast to dtype `to` as an elemwise stage (t itself if it has that dtype): the cast back after a float32
 * accumulation of a float16/bfloat16 op */
TeTensor *topi_cast_stage(TeCtx *c, TeTensor *t, mlc_dtype to);
Expr *topi_to_lowfloat(TeCtx *c, Expr *x, mlc_dtype to, bool saturate); /* ONNX Cast to float8 / float4 */
Expr *topi_to_e8m0(TeCtx *c, Expr *x, const char *round_mode, bool saturate); /* "up" / "down" / "nearest" */
/* the window attributes of a 2-D conv op: strides and dilation (2 values >= 1 each, default 1) and padding (top,
 * left, bottom, right; >= 0, default 0); any argument may be NULL when the op has no such attribute */
mlc_status topi_conv2d_window(const Node *n, int64_t *strides, int64_t *dil, int64_t *pad, Diag *d);

#endif
