/* rnn family: the recurrent layers RNN, GRU and LSTM (ONNX semantics) as extern ops.
 *
 * A recurrence is sequential in time, so it is not one tensor expression: the compute is a TE extern whose
 * TIR statement is the whole loop nest, written here directly (TVM writes scans the same way with
 * te.extern / ir_builder). The input product X . W^T + Wb does not depend on the recurrence: the graph pass
 * HoistRnnProjection (passes/graph/rnn_projection.c) computes it for all steps and rows as one packed GEMM
 * and hands the extern the result P instead of X and W (attribute `projected`), and R already packed
 * (attribute r_block); without that pass (opt level 0, unit tests) the loop computes the product per step and
 * packs R itself at the start of every call. For each direction:
 *
 *   Rp = R packed [D, GH / bn, H, bn]   (r_block, or packed here)
 *   h, c <- initial_h, initial_c (or 0)       [B, H] each
 *   for s in [0, T):                           t_b = forward ? s : len_b - 1 - s, len_b = sequence_lens[b] (or T)
 *     gates[b, g] = P[t_b, b, dir * GH + g] (or Wb[g] + sum_i X[t_b, b, i] * W[g, i]) + Rb[g]    for every row b
 *     gates[b, g] += sum_k h[b, k] * R[g, k]   the recurrent product (below)
 *     for each row b: if s < len_b: the cell update (below) -> h[b] (and c[b]) in place; Y[t_b, dir, b, :] = h[b]
 *                     else:         Y[s, dir, b, :] = 0
 *   Y_h[dir, b, :] = h[b];  Y_c[dir, b, :] = c[b]
 * The recurrent product is a small GEMM per step: for each block of bn gates (bn the largest power of two
 * <= 64 dividing GH; GRU: H, so that no block straddles the gates its two products read) and each tile of bt
 * rows (4, 2 or 1 dividing B, bt x bn accumulators in at most 16 vector registers), a bt x bn accumulator
 * tile is held in registers over k: per k, bn / lanes vector loads of the contiguous Rp row, each feeding bt
 * FMAs with a broadcast h[b, k]. Loops over hidden units and gates are FOR_VECTORIZED (straight-line bodies;
 * LowerIntrinsics makes the activations vectorizable arithmetic). On CPUs, a bidirectional layer runs its two
 * directions as a parallel loop; a single direction shares its gate blocks out at every step when the step's
 * product has at least RNN_PARALLEL_MIN_WORK multiply-adds (the pool's threads spin between steps, and each
 * keeps its part of R in its own L2).
 *
 * Cells (gate order as ONNX stores W / R / B; f, g, h are the direction's activations, clip bounds every
 * activation input to [-clip, clip]):
 *   RNN:  h = f(gates)
 *   GRU:  z = f(gz), r = f(gr), n = g(xn + r * (h.Rn + Rbn)) when linear_before_reset, else g(xn + (r*h).Rn + Rbn);
 *         h = (1 - z) * n + z * h
 *   LSTM: i = f(gi + Pi*c), f = f(gf + Pf*c) (or 1 - i with input_forget), c' = f*c + i*g(gc),
 *         o = f(go + Po*c'), h = o * h(c')
 * float16/bfloat16 are computed in float32 (a packed float16 R converts in the inner loop). Scratch (state, gate
 * sums, the accumulator tile, Rp when packed here) lives in S_ALLOCATE buffers.
 *
 * Graph ops nn.rnn / nn.gru / nn.lstm, inputs (X, W, R, B?, sequence_lens?, initial_h?[, initial_c?, P?]),
 * outputs (Y, Y_h[, Y_c]), attributes as the importer normalises them: hidden_size, direction (0 forward,
 * 1 reverse, 2 bidirectional), layout (0: X [T, B, I]; 1: X [B, T, I]), clip (absent: none),
 * linear_before_reset, input_forget, activations (num_directions x per-cell count, lower case), and
 * activation_alpha / activation_beta aligned with activations. With projected = 1 (HoistRnnProjection), input
 * 0 is the projection [T, B, D * GH] (layout 1: [B, T, D * GH]) in the accumulation type (float32, float64 for
 * float64 layers) and W is absent; B's Wb half is already in it (Rb is still read). With r_block = bn > 0, R is
 * packed [D, GH / bn, H, bn] in the layer's dtype. */
#include <math.h>
#include <string.h>
#include <strings.h>
#include "topi/topi.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };

#define RNN_PARALLEL_MIN_WORK 65536 /* multiply-adds of one step's recurrent product below which it stays serial */

typedef enum Act {
  ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKYRELU, ACT_THRESHOLDEDRELU, ACT_SCALEDTANH,
  ACT_HARDSIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS, ACT_COUNT
} Act;

static const char *act_names[ACT_COUNT] = {"relu",       "tanh", "sigmoid", "affine",   "leakyrelu", "thresholdedrelu",
                                           "scaledtanh", "hardsigmoid", "elu", "softsign", "softplus"};

static int cell_of(const Node *n) {
  const char *s = n->op->name;
  return !strcmp(s, "nn.lstm") ? CELL_LSTM : !strcmp(s, "nn.gru") ? CELL_GRU : CELL_RNN;
}

static const int gates_of[3] = {1, 3, 4};
static const int nacts_of[3] = {1, 2, 3};

typedef struct RnnCfg {
  int cell;
  int64_t T, B, I, H;
  int64_t GH, bn; /* gate rows per direction; the gate block of the recurrent product (a power of two <= 64) */
  int64_t bt;     /* rows per tile of the recurrent product (4, 2 or 1, dividing B) */
  int D, dir_kind, layout;
  bool projected; /* input 0 is the input projection P (HoistRnnProjection), W absent */
  bool r_packed;  /* R is given packed [D, GH / bn, H, bn] (attribute r_block = bn) */
  bool has_clip, lbr, input_forget;
  double clip;
  Act act[2][3];
  double alpha[2][3], beta[2][3];
  int in_at[8]; /* input slot -> extern input index (-1 absent) */
  mlc_dtype dt, acc;
} RnnCfg;

/* The gate block of the recurrent product: the largest power of two <= 64 dividing the gate rows (for GRU the
 * hidden size, so that no block straddles the gates its two products read). */
int64_t topi_rnn_gate_block(const char *op, int64_t hidden) {
  int64_t rows = !strcmp(op, "nn.lstm") ? 4 * hidden : hidden, bn = 1;
  while (bn < 64 && rows > 0 && rows % (2 * bn) == 0) bn *= 2;
  return bn;
}

static Value *in_at(const Node *n, int i) { return i < n->ninputs ? n->inputs[i] : NULL; }

/* Reads and checks shapes and attributes into cfg. */
static mlc_status rnn_config(const Node *n, RnnCfg *k, Diag *d) {
  memset(k, 0, sizeof *k);
  k->cell = cell_of(n);
  const char *name = n->op->name;
  if (!n->inputs[0] || !n->inputs[2]) return diag_set(d, MLC_ERR_INVALID, "%s needs inputs X and R", name);
  k->projected = ir_attr_int(n, "projected", 0) != 0;
  if (!k->projected && !in_at(n, 1)) return diag_set(d, MLC_ERR_INVALID, "%s needs input W", name);
  if (k->projected && in_at(n, 1)) return diag_set(d, MLC_ERR_INVALID, "%s: projected, but W is given", name);
  const TensorType *x = &n->inputs[0]->type, *r = &n->inputs[2]->type;
  int G = gates_of[k->cell];
  k->dt = r->dtype;
  if (!dtype_is_float(k->dt))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported (float types only)", name,
                    mlc_dtype_name(k->dt));
  k->acc = k->dt == MLC_F64 ? MLC_F64 : MLC_F32;
  if (x->dtype != (k->projected ? k->acc : k->dt))
    return diag_set(d, MLC_ERR_INVALID, "%s: X has dtype %s, expected %s", name, mlc_dtype_name(x->dtype),
                    mlc_dtype_name(k->projected ? k->acc : k->dt));
  k->H = ir_attr_int(n, "hidden_size", 0);
  k->dir_kind = (int)ir_attr_int(n, "direction", 0);
  k->D = k->dir_kind == 2 ? 2 : 1;
  k->layout = (int)ir_attr_int(n, "layout", 0);
  if (k->dir_kind < 0 || k->dir_kind > 2 || (k->layout != 0 && k->layout != 1))
    return diag_set(d, MLC_ERR_INVALID, "%s: bad direction or layout", name);
  if (x->ndim != 3) return diag_set(d, MLC_ERR_INVALID, "%s: X must have rank 3, got %d", name, x->ndim);
  k->T = x->dims[k->layout ? 1 : 0];
  k->B = x->dims[k->layout ? 0 : 1];
  k->I = x->dims[2];
  if (k->H <= 0) k->H = r->ndim == 3 || r->ndim == 4 ? r->dims[2] : 0;
  if (k->H <= 0) return diag_set(d, MLC_ERR_INVALID, "%s: hidden_size must be > 0", name);
  int64_t H = k->H, D = k->D;
  k->GH = G * H;
  const TensorType *w = k->projected ? NULL : &n->inputs[1]->type;
  if (k->projected && k->I != D * G * H)
    return diag_set(d, MLC_ERR_INVALID, "%s: the projected input's last axis must be %lld", name,
                    (long long)(D * G * H));
  if (w && (w->ndim != 3 || w->dims[0] != D || w->dims[1] != G * H || w->dims[2] != k->I))
    return diag_set(d, MLC_ERR_INVALID, "%s: W must be [%lld, %lld, %lld]", name, (long long)D, (long long)(G * H),
                    (long long)k->I);
  k->bn = ir_attr_int(n, "r_block", 0);
  k->r_packed = k->bn > 0;
  if (!k->r_packed) k->bn = topi_rnn_gate_block(name, H);
  if ((k->cell == CELL_GRU ? H : k->GH) % k->bn)
    return diag_set(d, MLC_ERR_INVALID, "%s: r_block %lld does not divide the gates", name, (long long)k->bn);
  if (k->r_packed && (r->ndim != 4 || r->dims[0] != D || r->dims[1] != k->GH / k->bn || r->dims[2] != H ||
                      r->dims[3] != k->bn))
    return diag_set(d, MLC_ERR_INVALID, "%s: packed R must be [%lld, %lld, %lld, %lld]", name, (long long)D,
                    (long long)(k->GH / k->bn), (long long)H, (long long)k->bn);
  if (!k->r_packed && (r->ndim != 3 || r->dims[0] != D || r->dims[1] != G * H || r->dims[2] != H))
    return diag_set(d, MLC_ERR_INVALID, "%s: R must be [%lld, %lld, %lld]", name, (long long)D, (long long)(G * H),
                    (long long)H);
  int nslots = k->cell == CELL_LSTM ? 8 : 6;
  for (int i = 0; i < 8; i++) k->in_at[i] = -1;
  for (int i = 0, j = 0; i < nslots; i++)
    if (in_at(n, i)) k->in_at[i] = j++;
  for (int i = 1; i < nslots; i++) {
    Value *v = in_at(n, i);
    if (!v || i == 4) continue;
    if (v->type.dtype != k->dt)
      return diag_set(d, MLC_ERR_INVALID, "%s: input %d has dtype %s, expected %s", name, i,
                      mlc_dtype_name(v->type.dtype), mlc_dtype_name(k->dt));
  }
  const TensorType *b = in_at(n, 3) ? &n->inputs[3]->type : NULL;
  if (b && (b->ndim != 2 || b->dims[0] != D || b->dims[1] != 2 * G * H))
    return diag_set(d, MLC_ERR_INVALID, "%s: B must be [%lld, %lld]", name, (long long)D, (long long)(2 * G * H));
  const TensorType *sl = in_at(n, 4) ? &n->inputs[4]->type : NULL;
  if (sl && (sl->ndim != 1 || sl->dims[0] != k->B || (sl->dtype != MLC_I32 && sl->dtype != MLC_I64)))
    return diag_set(d, MLC_ERR_INVALID, "%s: sequence_lens must be int32 [%lld]", name, (long long)k->B);
  for (int s = 5; s <= 6; s++) {
    const TensorType *h0 = in_at(n, s) ? &n->inputs[s]->type : NULL;
    int64_t e0 = k->layout ? k->B : D, e1 = k->layout ? D : k->B;
    if (h0 && (h0->ndim != 3 || h0->dims[0] != e0 || h0->dims[1] != e1 || h0->dims[2] != H))
      return diag_set(d, MLC_ERR_INVALID, "%s: initial state must be [%lld, %lld, %lld]", name, (long long)e0,
                      (long long)e1, (long long)H);
  }
  const TensorType *p = in_at(n, 7) ? &n->inputs[7]->type : NULL;
  if (p && (p->ndim != 2 || p->dims[0] != D || p->dims[1] != 3 * H))
    return diag_set(d, MLC_ERR_INVALID, "%s: P must be [%lld, %lld]", name, (long long)D, (long long)(3 * H));
  const Attr *clip = ir_attr(n, "clip");
  k->has_clip = clip != NULL;
  k->clip = ir_attr_float(n, "clip", 0);
  k->lbr = ir_attr_int(n, "linear_before_reset", 0) != 0;
  k->input_forget = ir_attr_int(n, "input_forget", 0) != 0;
  int na = nacts_of[k->cell];
  const Attr *acts = ir_attr(n, "activations");
  const Attr *al = ir_attr(n, "activation_alpha"), *be = ir_attr(n, "activation_beta");
  static const Act dflt[3][3] = {{ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
  if (acts && acts->kind == ATTR_STRINGS && acts->n != na * D)
    return diag_set(d, MLC_ERR_INVALID, "%s: %d activations given, expected %d", name, acts->n, (int)(na * D));
  for (int dir = 0; dir < D; dir++)
    for (int j = 0; j < na; j++) {
      int idx = dir * na + j;
      k->act[dir][j] = dflt[k->cell][j];
      k->alpha[dir][j] = al && al->kind == ATTR_FLOATS && idx < al->n ? al->floats[idx] : 0;
      k->beta[dir][j] = be && be->kind == ATTR_FLOATS && idx < be->n ? be->floats[idx] : 0;
      if (!acts || acts->kind != ATTR_STRINGS) continue;
      int a;
      for (a = 0; a < ACT_COUNT; a++)
        if (!strcasecmp(acts->strs[idx], act_names[a])) break;
      if (a == ACT_COUNT)
        return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: activation '%s' is not supported", name, acts->strs[idx]);
      k->act[dir][j] = (Act)a;
    }
  return MLC_OK;
}

static mlc_status rnn_infer(Node *n, Diag *d) {
  RnnCfg k;
  mlc_status st = rnn_config(n, &k, d);
  if (st) return st;
  int nout = k.cell == CELL_LSTM ? 3 : 2;
  if (n->noutputs != nout) return diag_set(d, MLC_ERR_INVALID, "%s has %d outputs", n->op->name, nout);
  TensorType y = {.dtype = k.dt, .ndim = 4}, yh = {.dtype = k.dt, .ndim = 3};
  if (k.layout) {
    int64_t yd[4] = {k.B, k.T, k.D, k.H}, hd[3] = {k.B, k.D, k.H};
    memcpy(y.dims, yd, sizeof yd);
    memcpy(yh.dims, hd, sizeof hd);
  } else {
    int64_t yd[4] = {k.T, k.D, k.B, k.H}, hd[3] = {k.D, k.B, k.H};
    memcpy(y.dims, yd, sizeof yd);
    memcpy(yh.dims, hd, sizeof hd);
  }
  n->outputs[0]->type = y;
  for (int i = 1; i < nout; i++) n->outputs[i]->type = yh;
  return MLC_OK;
}

/* ---------------------------------------------------------------- TIR building */

typedef struct RnnBuild {
  TeCtx *c;
  Arena *A;
  RnnCfg *k;
  Buffer **ins, **outs;
  Buffer *rp;                     /* R packed [D, GH / bn, H, bn] in the accumulation type */
  Buffer *h, *cst, *rg, *gx, *gh; /* scratch [B, ..]: state, GRU reset gate, gate sums (input part, hidden part) */
  Expr *dir, *b, *step;           /* current direction (constant), batch row, step */
  int d;                          /* direction index (C level) */
  bool par_gates;                 /* the recurrent product's gate blocks are a parallel loop */
} RnnBuild;

static Expr *I(RnnBuild *r, int64_t v) { return tir_idx(r->A, v); }
static Expr *F(RnnBuild *r, double v) { return tir_const(r->A, r->k->acc, v); }
static Expr *V(RnnBuild *r, Var *v) { return tir_varref(r->A, v); }
static Var *loopvar(RnnBuild *r, const char *name) { return tir_var(r->A, name, MLC_I64); }
static Stmt *loop_k(RnnBuild *r, Var *v, int64_t n, ForKind kind, Stmt *body) {
  return tir_for(r->A, v, I(r, 0), I(r, n), kind, body);
}
static Stmt *loop(RnnBuild *r, Var *v, int64_t n, Stmt *body) { return loop_k(r, v, n, FOR_SERIAL, body); }
/* a loop over the hidden units or gates: straight-line bodies that VectorizeLoop or LLVM turn into SIMD */
static Stmt *vloop(RnnBuild *r, Var *v, int64_t n, Stmt *body) {
  return loop_k(r, v, n, n > 1 ? FOR_VECTORIZED : FOR_SERIAL, body);
}

static Expr *acc_of(RnnBuild *r, Expr *e) { return e->dtype == r->k->acc ? e : tir_cast(r->A, r->k->acc, e); }

static Expr *ld(RnnBuild *r, Buffer *b, int n, Expr *i0, Expr *i1, Expr *i2) {
  Expr *idx[3] = {i0, i1, i2};
  return acc_of(r, tir_load(r->A, b, n, idx));
}

/* scratch [B, n] at (current row, j) */
static Expr *ldb(RnnBuild *r, Buffer *b, Expr *j) {
  Expr *idx[2] = {r->b, j};
  return tir_load(r->A, b, 2, idx);
}
static Stmt *stb(RnnBuild *r, Buffer *b, Expr *j, Expr *v) {
  Expr *idx[2] = {r->b, j};
  return tir_store(r->A, b, 2, idx, v);
}

static Buffer *in_buf(RnnBuild *r, int slot) { return r->k->in_at[slot] >= 0 ? r->ins[r->k->in_at[slot]] : NULL; }

/* X (or the projection) at time t of the current row, last index i */
static Expr *x_at(RnnBuild *r, Expr *t, Expr *i) {
  Buffer *x = r->ins[0];
  return r->k->layout ? ld(r, x, 3, r->b, t, i) : ld(r, x, 3, t, r->b, i);
}

/* state tensors [D, B, H] (layout 0) or [B, D, H] (layout 1) */
static Expr **state_idx(RnnBuild *r, Expr *j) {
  Expr **idx = arena_alloc(r->A, 3 * sizeof(Expr *));
  idx[0] = r->k->layout ? r->b : r->dir;
  idx[1] = r->k->layout ? r->dir : r->b;
  idx[2] = j;
  return idx;
}

static Stmt *store_y(RnnBuild *r, Expr *t, Expr *j, Expr *v) {
  Expr *idx[4];
  if (r->k->layout) {
    idx[0] = r->b, idx[1] = t, idx[2] = r->dir, idx[3] = j;
  } else {
    idx[0] = t, idx[1] = r->dir, idx[2] = r->b, idx[3] = j;
  }
  return tir_store(r->A, r->outs[0], 4, idx, tir_cast(r->A, r->k->dt, v));
}

static bool reverse(RnnBuild *r) { return r->k->dir_kind == 1 || (r->k->dir_kind == 2 && r->d == 1); }

/* the current row's sequence length */
static Expr *len_of(RnnBuild *r) {
  Buffer *sl = in_buf(r, 4);
  return sl ? tir_cast(r->A, MLC_I64, tir_load(r->A, sl, 1, &r->b)) : I(r, r->k->T);
}

/* the time the current step reads and writes for the current row: s, or len - 1 - s in reverse (clamped at 0:
 * the rows whose sequence has ended still have their input part computed, from a valid address, unused) */
static Expr *time_of(RnnBuild *r) {
  if (!reverse(r)) return r->step;
  Expr *t = tir_sub(r->A, tir_sub(r->A, len_of(r), I(r, 1)), r->step);
  return in_buf(r, 4) ? tir_bin(r->A, E_MAX, t, I(r, 0)) : t;
}

static Expr *clip(RnnBuild *r, Expr *x) {
  if (!r->k->has_clip) return x;
  return tir_bin(r->A, E_MIN, tir_bin(r->A, E_MAX, x, F(r, -r->k->clip)), F(r, r->k->clip));
}

static Expr *activate(RnnBuild *r, int which, Expr *x) {
  Arena *A = r->A;
  Act a = r->k->act[r->d][which];
  double al = r->k->alpha[r->d][which], be = r->k->beta[r->d][which];
  mlc_dtype t = r->k->acc;
  x = clip(r, x);
  switch (a) {
    case ACT_RELU: return tir_bin(A, E_MAX, x, F(r, 0));
    case ACT_TANH: return tir_call(A, INTRIN_TANH, t, 1, &x);
    case ACT_SIGMOID: return tir_call(A, INTRIN_SIGMOID, t, 1, &x);
    case ACT_AFFINE: return tir_add(A, tir_mul(A, F(r, al), x), F(r, be));
    case ACT_LEAKYRELU: return tir_select(A, tir_bin(A, E_GE, x, F(r, 0)), x, tir_mul(A, F(r, al), x));
    case ACT_THRESHOLDEDRELU: return tir_select(A, tir_bin(A, E_GT, x, F(r, al)), x, F(r, 0));
    case ACT_SCALEDTANH: {
      Expr *y = tir_mul(A, F(r, be), x);
      return tir_mul(A, F(r, al), tir_call(A, INTRIN_TANH, t, 1, &y));
    }
    case ACT_HARDSIGMOID:
      return tir_bin(A, E_MAX, F(r, 0), tir_bin(A, E_MIN, F(r, 1), tir_add(A, tir_mul(A, F(r, al), x), F(r, be))));
    case ACT_ELU: {
      Expr *e = tir_call(A, INTRIN_EXP, t, 1, &x);
      return tir_select(A, tir_bin(A, E_GE, x, F(r, 0)), x, tir_mul(A, F(r, al), tir_sub(A, e, F(r, 1))));
    }
    case ACT_SOFTSIGN: {
      Expr *ab = tir_call(A, INTRIN_FABS, t, 1, &x);
      return tir_bin(A, E_DIV, x, tir_add(A, F(r, 1), ab));
    }
    case ACT_SOFTPLUS: {
      Expr *e = tir_add(A, F(r, 1), tir_call(A, INTRIN_EXP, t, 1, &x));
      return tir_call(A, INTRIN_LOG, t, 1, &e);
    }
    default: return x;
  }
}

/* Rp[d, go, k, gi] = R[d, go * bn + gi, k] for every direction: once per call, so that the recurrent product
 * streams R contiguously (and converts float16/bfloat16 once, not at every step). */
static Stmt *pack_r(RnnBuild *r) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  Var *dv = loopvar(r, "d"), *ov = loopvar(r, "go"), *kv = loopvar(r, "k"), *iv = loopvar(r, "gi");
  Expr *g = tir_add(A, tir_mul(A, V(r, ov), I(r, k->bn)), V(r, iv));
  Expr *idx[4] = {V(r, dv), V(r, ov), V(r, kv), V(r, iv)};
  Stmt *st = tir_store(A, r->rp, 4, idx, ld(r, r->ins[k->in_at[2]], 3, V(r, dv), g, V(r, kv)));
  return loop(r, dv, k->D, loop(r, ov, k->GH / k->bn, loop(r, kv, k->H, loop(r, iv, k->bn, st))));
}

/* dst[b, g] = the input part of gate g (wbias: with Wb) + Rb[g] (rbias), for every row at the current step:
 * P[t, b, dir * GH + g] when projected, else Wb[g] + sum_i X[t, b, i] * W[dir, g, i]. */
static Stmt *gate_inputs(RnnBuild *r, Buffer *dst, bool with_x, bool rbias) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  Var *bv = loopvar(r, "b"), *gv = loopvar(r, "g");
  r->b = V(r, bv);
  Expr *g = V(r, gv), *t = time_of(r);
  Buffer *B = in_buf(r, 3);
  Expr *init = F(r, 0);
  Stmt *sum = NULL;
  if (with_x && k->projected) init = x_at(r, t, tir_add(A, g, I(r, r->d * k->GH)));
  if (with_x && !k->projected && B) init = ld(r, B, 2, r->dir, g, NULL);
  if (B && rbias) init = tir_add(A, init, ld(r, B, 2, r->dir, tir_add(A, g, I(r, k->GH)), NULL));
  if (with_x && !k->projected) {
    Var *iv = loopvar(r, "i");
    Expr *prod = tir_mul(A, x_at(r, t, V(r, iv)), ld(r, r->ins[1], 3, r->dir, g, V(r, iv)));
    sum = loop(r, iv, k->I, stb(r, dst, g, tir_add(A, ldb(r, dst, g), prod)));
  }
  Stmt *body = sum ? tir_seq(A, 2, (Stmt *[]){stb(r, dst, g, init), sum}) : stb(r, dst, g, init);
  return loop(r, bv, k->B, (sum ? loop : vloop)(r, gv, k->GH, body));
}

/* dst[b, g] += sum_k src(b, k) * R[dir, g, k] for g in [g0, g1) and every row: src is h, or r * h when gated
 * (GRU without linear_before_reset). A tile of bt rows x bn gates accumulates in registers (acc) over k, reading
 * the packed R contiguously: per k, one vector load of Rp per bn / lanes, reused by the bt rows' FMAs with
 * their broadcast state element. */
static Stmt *recurrent(RnnBuild *r, Buffer *dst, int64_t g0, int64_t g1, bool gated) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  int64_t bn = k->bn, bt = k->bt;
  Var *ov = loopvar(r, "go"), *bo = loopvar(r, "bo"), *kv = loopvar(r, "k");
  Expr *go = tir_add(A, V(r, ov), I(r, g0 / bn)), *kk = V(r, kv);
  int64_t at[2] = {bt, bn};
  Buffer *acc = tir_buffer(A, "rnn_acc", k->acc, 2, at); /* per gate block: private to a parallel iteration */
  Stmt *parts[3];
  for (int p = 0; p < 3; p++) { /* load the tile, accumulate over k, store it */
    Var *bi = loopvar(r, "bi"), *gi = loopvar(r, "gi");
    r->b = tir_add(A, tir_mul(A, V(r, bo), I(r, bt)), V(r, bi));
    Expr *g = tir_add(A, tir_mul(A, go, I(r, bn)), V(r, gi));
    Expr *aidx[2] = {V(r, bi), V(r, gi)};
    Stmt *st;
    if (p == 0) {
      st = tir_store(A, acc, 2, aidx, ldb(r, dst, g));
    } else if (p == 2) {
      st = stb(r, dst, g, tir_load(A, acc, 2, aidx));
    } else {
      Expr *src = ldb(r, r->h, kk);
      if (gated) src = tir_mul(A, ldb(r, r->rg, kk), src);
      Expr *ridx[4] = {r->dir, go, kk, V(r, gi)};
      Expr *rk = acc_of(r, tir_load(A, r->rp, 4, ridx));
      st = tir_store(A, acc, 2, aidx, tir_add(A, tir_load(A, acc, 2, aidx), tir_mul(A, src, rk)));
    }
    parts[p] = loop_k(r, bi, bt, bt > 1 ? FOR_UNROLLED : FOR_SERIAL, vloop(r, gi, bn, st));
  }
  parts[1] = loop(r, kv, k->H, parts[1]);
  Stmt *block = tir_allocate(A, acc, loop(r, bo, k->B / bt, tir_seq(A, 3, parts)));
  return loop_k(r, ov, (g1 - g0) / bn, r->par_gates ? FOR_PARALLEL : FOR_SERIAL, block);
}

/* The cell update of the current row at the current step (time t): h (and c) in place, Y[t] = h. */
static Stmt *cell_update(RnnBuild *r, Expr *t) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  int64_t H = k->H;
  Var *jv = loopvar(r, "j");
  Expr *j = V(r, jv);
  Stmt *s[3] = {0};
  int ns = 0;
  if (k->cell == CELL_RNN) {
    s[ns++] = stb(r, r->h, j, activate(r, 0, ldb(r, r->gx, j)));
  } else if (k->cell == CELL_GRU) {
    Expr *z = activate(r, 0, tir_add(A, ldb(r, r->gx, j), ldb(r, r->gh, j)));
    Expr *j2 = tir_add(A, j, I(r, 2 * H));
    Expr *hpart = ldb(r, r->gh, j2);
    if (k->lbr) hpart = tir_mul(A, ldb(r, r->rg, j), hpart);
    Expr *nn = activate(r, 1, tir_add(A, ldb(r, r->gx, j2), hpart));
    s[ns++] = stb(r, r->h, j, tir_add(A, tir_mul(A, tir_sub(A, F(r, 1), z), nn), tir_mul(A, z, ldb(r, r->h, j))));
  } else {
    Buffer *P = in_buf(r, 7);
    Expr *c = ldb(r, r->cst, j);
    Expr *gi = ldb(r, r->gx, j), *go = ldb(r, r->gx, tir_add(A, j, I(r, H)));
    Expr *gf = ldb(r, r->gx, tir_add(A, j, I(r, 2 * H))), *gc = ldb(r, r->gx, tir_add(A, j, I(r, 3 * H)));
    if (P) {
      gi = tir_add(A, gi, tir_mul(A, ld(r, P, 2, r->dir, j, NULL), c));
      gf = tir_add(A, gf, tir_mul(A, ld(r, P, 2, r->dir, tir_add(A, j, I(r, 2 * H)), NULL), c));
    }
    Expr *ig = activate(r, 0, gi);
    Expr *fg = k->input_forget ? tir_sub(A, F(r, 1), ig) : activate(r, 0, gf);
    s[ns++] = stb(r, r->cst, j, tir_add(A, tir_mul(A, fg, c), tir_mul(A, ig, activate(r, 1, gc))));
    Expr *c2 = ldb(r, r->cst, j); /* c' is stored first; o and h read it back */
    if (P) go = tir_add(A, go, tir_mul(A, ld(r, P, 2, r->dir, tir_add(A, j, I(r, H)), NULL), c2));
    s[ns++] = stb(r, r->h, j, tir_mul(A, activate(r, 0, go), activate(r, 2, c2)));
  }
  s[ns++] = store_y(r, t, j, ldb(r, r->h, j));
  return vloop(r, jv, H, tir_seq(A, ns, s));
}

/* One step of the current direction for every row: the gate sums, then each row's cell update (a row whose
 * sequence has ended keeps its state and gets Y[s] = 0). */
static Stmt *step(RnnBuild *r) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  int64_t H = k->H, GH = k->GH;
  Stmt *s[6] = {0};
  int ns = 0;
  if (k->cell == CELL_GRU) {
    s[ns++] = gate_inputs(r, r->gx, true, false);
    s[ns++] = gate_inputs(r, r->gh, false, true);
    s[ns++] = recurrent(r, r->gh, 0, k->lbr ? GH : 2 * H, false);
    Var *bv = loopvar(r, "b"), *jv = loopvar(r, "j");
    r->b = V(r, bv);
    Expr *jh = tir_add(A, V(r, jv), I(r, H));
    s[ns++] = loop(r, bv, k->B, vloop(r, jv, H, stb(r, r->rg, V(r, jv),
                                                   activate(r, 0, tir_add(A, ldb(r, r->gx, jh), ldb(r, r->gh, jh))))));
    if (!k->lbr) s[ns++] = recurrent(r, r->gh, 2 * H, GH, true);
  } else {
    s[ns++] = gate_inputs(r, r->gx, true, true);
    s[ns++] = recurrent(r, r->gx, 0, GH, false);
  }
  Var *bv = loopvar(r, "b"), *zv = loopvar(r, "j");
  r->b = V(r, bv);
  Stmt *update = cell_update(r, time_of(r));
  if (in_buf(r, 4)) {
    Stmt *zero = vloop(r, zv, H, store_y(r, r->step, V(r, zv), F(r, 0)));
    update = tir_if(A, tir_bin(A, E_LT, r->step, len_of(r)), update, zero);
  }
  s[ns++] = loop(r, bv, k->B, update);
  return tir_seq(A, ns, s);
}

/* The whole recurrence of one direction. */
static Stmt *direction(RnnBuild *r) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  Buffer *h0 = in_buf(r, 5), *c0 = in_buf(r, 6);
  Stmt *s[3] = {0};
  Var *bv = loopvar(r, "b"), *jv = loopvar(r, "j");
  r->b = V(r, bv);
  Expr *j = V(r, jv);
  Expr **si = state_idx(r, j);
  Stmt *init[2] = {stb(r, r->h, j, h0 ? acc_of(r, tir_load(A, h0, 3, si)) : F(r, 0)),
                   k->cell == CELL_LSTM ? stb(r, r->cst, j, c0 ? acc_of(r, tir_load(A, c0, 3, si)) : F(r, 0)) : NULL};
  s[0] = loop(r, bv, k->B, loop(r, jv, k->H, tir_seq(A, 2, init)));
  Var *sv = loopvar(r, "s");
  r->step = V(r, sv);
  s[1] = loop(r, sv, k->T, step(r));
  Var *bv2 = loopvar(r, "b"), *ov = loopvar(r, "j");
  r->b = V(r, bv2);
  Expr *oj = V(r, ov);
  Expr **oi = state_idx(r, oj);
  Stmt *fin[2] = {tir_store(A, r->outs[1], 3, oi, tir_cast(A, k->dt, ldb(r, r->h, oj))),
                  k->cell == CELL_LSTM ? tir_store(A, r->outs[2], 3, oi, tir_cast(A, k->dt, ldb(r, r->cst, oj)))
                                       : NULL};
  s[2] = loop(r, bv2, k->B, loop(r, ov, k->H, tir_seq(A, 2, fin)));
  return tir_seq(A, 3, s);
}

/* Each direction with its own scratch. On CPUs the two directions of a bidirectional layer are the two
 * iterations of a parallel loop (each thread then also keeps its direction's R in its own caches), and a
 * single direction shares out its gate blocks at every step instead; on GPUs the scratch is top-level (nvptx.c
 * hoists it into device buffers) and everything runs in order. */
static Stmt *rnn_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  RnnBuild *r = user;
  Arena *A = c->arena;
  RnnCfg *k = r->k;
  r->ins = ins;
  r->outs = outs;
  int64_t bh[2] = {k->B, k->H}, bg[2] = {k->B, k->GH}, rs[4] = {k->D, k->GH / k->bn, k->H, k->bn};
  r->rp = k->r_packed ? ins[k->in_at[2]] : tir_buffer(A, "rnn_rp", k->acc, 4, rs);
  bool cpu = !c->target || c->target->kind == TARGET_CPU;
  bool par = k->D == 2 && cpu;
  /* one direction: its gate blocks shared out at each step, when the step's product is worth a launch (the
   * thread pool spins between launches; each thread keeps its blocks of R in its own cache) */
  r->par_gates = !par && cpu && k->B * k->GH * k->H >= RNN_PARALLEL_MIN_WORK && k->GH / k->bn > 1;
  Stmt *dirs[2] = {0};
  Buffer *scratch[12];
  int ns = 0;
  for (int d = 0; d < k->D; d++) {
    r->d = d;
    r->dir = I(r, d);
    r->h = tir_buffer(A, "rnn_h", k->acc, 2, bh);
    r->cst = tir_buffer(A, "rnn_c", k->acc, 2, bh);
    r->rg = tir_buffer(A, "rnn_r", k->acc, 2, bh);
    r->gx = tir_buffer(A, "rnn_gx", k->acc, 2, bg);
    r->gh = tir_buffer(A, "rnn_gh", k->acc, 2, bg);
    Buffer *mine[5] = {r->h, r->cst, r->rg, r->gx, r->gh};
    dirs[d] = direction(r);
    for (int i = 0; i < 5; i++) {
      if (par) dirs[d] = tir_allocate(A, mine[i], dirs[d]);
      else scratch[ns++] = mine[i];
    }
  }
  Stmt *body;
  if (par) {
    Var *dv = loopvar(r, "dir");
    Stmt *which = tir_if(A, tir_bin(A, E_EQ, V(r, dv), I(r, 0)), dirs[0], dirs[1]);
    body = tir_for(A, dv, I(r, 0), I(r, 2), FOR_PARALLEL, which);
  } else {
    body = tir_seq(A, k->D, dirs);
  }
  if (!k->r_packed) {
    body = tir_seq(A, 2, (Stmt *[]){pack_r(r), body});
    scratch[ns++] = r->rp;
  }
  for (int i = 0; i < ns; i++) body = tir_allocate(A, scratch[i], body);
  return body;
}

static mlc_status rnn_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  RnnBuild *r = arena_alloc(c->arena, sizeof *r);
  r->c = c;
  r->A = c->arena;
  r->k = arena_alloc(c->arena, sizeof *r->k);
  mlc_status st = rnn_config(n, r->k, d);
  if (st) return st;
  /* the row tile: its bt x bn accumulators in at most 16 vector registers */
  RnnCfg *k = r->k;
  int vb = c->target && c->target->vector_bytes > 0 ? c->target->vector_bytes : 16;
  int64_t regs_elems = 16 * (vb / mlc_dtype_size(k->acc));
  for (k->bt = 4; k->bt > 1 && (k->B % k->bt || k->bt * k->bn > regs_elems);) k->bt /= 2;
  TeTensor *present[8];
  int np = 0;
  for (int i = 0; i < n->ninputs && i < 8; i++)
    if (ins[i] && r->k->in_at[i] >= 0) present[np++] = ins[i];
  TeTensor types[3];
  memset(types, 0, sizeof types);
  for (int i = 0; i < n->noutputs; i++) {
    const TensorType *o = &n->outputs[i]->type;
    types[i].dtype = o->dtype;
    types[i].ndim = o->ndim;
    memcpy(types[i].shape, o->dims, sizeof(int64_t) * (size_t)o->ndim);
  }
  te_extern(c, n->op->name + 3, "rnn", np, present, n->noutputs, types, rnn_extern, r, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_rnn[] = {
    /* name      pattern     min max nout infer      compute */
    {"nn.rnn", PAT_OPAQUE, 3, 6, 2, rnn_infer, rnn_compute},
    {"nn.gru", PAT_OPAQUE, 3, 6, 2, rnn_infer, rnn_compute},
    {"nn.lstm", PAT_OPAQUE, 3, 8, 3, rnn_infer, rnn_compute},
    {0},
};
