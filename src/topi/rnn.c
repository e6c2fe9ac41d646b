/* rnn family: the recurrent layers RNN, GRU and LSTM (ONNX semantics) as extern ops.
 *
 * A recurrence is sequential in time, so it is not one tensor expression: the compute is a TE extern whose
 * TIR statement is the whole loop nest, written here directly (TVM writes scans the same way with
 * te.extern / ir_builder). For each direction and each batch row (rows are independent):
 *
 *   h, c <- initial_h, initial_c (or 0)
 *   for s in [0, T):                                   len = sequence_lens[b] (or T)
 *     if s < len:  t = forward ? s : len - 1 - s
 *        gates[g] = Wb[g] + Rb[g] + sum_i X[t, b, i] * W[g, i] + sum_k h[k] * R[g, k]   (matrix-vector products)
 *        the cell update (below) -> h (and c); Y[t, dir, b, :] = h
 *     else:        Y[s, dir, b, :] = 0
 *   Y_h[dir, b, :] = h;  Y_c[dir, b, :] = c
 *
 * Cells (gate order as ONNX stores W / R / B; f, g, h are the direction's activations, clip bounds every
 * activation input to [-clip, clip]):
 *   RNN:  h = f(gates)
 *   GRU:  z = f(gz), r = f(gr), n = g(xn + r * (h.Rn + Rbn)) when linear_before_reset, else g(xn + (r*h).Rn + Rbn);
 *         h = (1 - z) * n + z * h
 *   LSTM: i = f(gi + Pi*c), f = f(gf + Pf*c) (or 1 - i with input_forget), c' = f*c + i*g(gc),
 *         o = f(go + Po*c'), h = o * h(c')
 * float16/bfloat16 are computed in float32. Scratch vectors live in S_ALLOCATE buffers.
 *
 * Graph ops nn.rnn / nn.gru / nn.lstm, inputs (X, W, R, B?, sequence_lens?, initial_h?[, initial_c?, P?]),
 * outputs (Y, Y_h[, Y_c]), attributes as the importer normalises them: hidden_size, direction (0 forward,
 * 1 reverse, 2 bidirectional), layout (0: X [T, B, I]; 1: X [B, T, I]), clip (absent: none),
 * linear_before_reset, input_forget, activations (num_directions x per-cell count, lower case), and
 * activation_alpha / activation_beta aligned with activations. */
#include <math.h>
#include <string.h>
#include <strings.h>
#include "topi/topi.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };

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
  int D, dir_kind, layout;
  bool has_clip, lbr, input_forget;
  double clip;
  Act act[2][3];
  double alpha[2][3], beta[2][3];
  int in_at[8]; /* input slot -> extern input index (-1 absent) */
  mlc_dtype dt, acc;
} RnnCfg;

static Value *in_at(const Node *n, int i) { return i < n->ninputs ? n->inputs[i] : NULL; }

/* Reads and checks shapes and attributes into cfg. */
static mlc_status rnn_config(const Node *n, RnnCfg *k, Diag *d) {
  memset(k, 0, sizeof *k);
  k->cell = cell_of(n);
  const char *name = n->op->name;
  const TensorType *x = &n->inputs[0]->type, *w = &n->inputs[1]->type, *r = &n->inputs[2]->type;
  int G = gates_of[k->cell];
  k->dt = x->dtype;
  if (!dtype_is_float(x->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported (float types only)", name,
                    mlc_dtype_name(x->dtype));
  k->acc = x->dtype == MLC_F64 ? MLC_F64 : MLC_F32;
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
  if (k->H <= 0) k->H = r->ndim == 3 ? r->dims[2] : 0;
  if (k->H <= 0) return diag_set(d, MLC_ERR_INVALID, "%s: hidden_size must be > 0", name);
  int64_t H = k->H, D = k->D;
  if (w->ndim != 3 || w->dims[0] != D || w->dims[1] != G * H || w->dims[2] != k->I)
    return diag_set(d, MLC_ERR_INVALID, "%s: W must be [%lld, %lld, %lld]", name, (long long)D, (long long)(G * H),
                    (long long)k->I);
  if (r->ndim != 3 || r->dims[0] != D || r->dims[1] != G * H || r->dims[2] != H)
    return diag_set(d, MLC_ERR_INVALID, "%s: R must be [%lld, %lld, %lld]", name, (long long)D, (long long)(G * H),
                    (long long)H);
  int nslots = k->cell == CELL_LSTM ? 8 : 6;
  for (int i = 0; i < 8; i++) k->in_at[i] = -1;
  for (int i = 0, j = 0; i < nslots; i++)
    if (in_at(n, i)) k->in_at[i] = j++;
  for (int i = 1; i < nslots; i++) {
    Value *v = in_at(n, i);
    if (!v || i == 4) continue;
    if (v->type.dtype != x->dtype)
      return diag_set(d, MLC_ERR_INVALID, "%s: input %d has dtype %s, expected %s", name, i,
                      mlc_dtype_name(v->type.dtype), mlc_dtype_name(x->dtype));
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
  Buffer *h, *cst, *hn, *gx, *gh, *rg; /* scratch: state, next state, gate sums, GRU reset gate */
  Expr *dir, *b;                     /* current direction (constant) and batch row */
  int d;                             /* direction index (C level) */
} RnnBuild;

static Expr *I(RnnBuild *r, int64_t v) { return tir_idx(r->A, v); }
static Expr *F(RnnBuild *r, double v) { return tir_const(r->A, r->k->acc, v); }
static Expr *V(RnnBuild *r, Var *v) { return tir_varref(r->A, v); }
static Var *loopvar(RnnBuild *r, const char *name) { return tir_var(r->A, name, MLC_I64); }
static Stmt *loop(RnnBuild *r, Var *v, int64_t n, Stmt *body) {
  return tir_for(r->A, v, I(r, 0), I(r, n), FOR_SERIAL, body);
}

static Expr *acc_of(RnnBuild *r, Expr *e) { return e->dtype == r->k->acc ? e : tir_cast(r->A, r->k->acc, e); }

static Expr *ld(RnnBuild *r, Buffer *b, int n, Expr *i0, Expr *i1, Expr *i2) {
  Expr *idx[3] = {i0, i1, i2};
  return acc_of(r, tir_load(r->A, b, n, idx));
}

static Stmt *st1(RnnBuild *r, Buffer *b, Expr *i, Expr *v) { return tir_store(r->A, b, 1, &i, v); }
static Expr *ld1(RnnBuild *r, Buffer *b, Expr *i) { return tir_load(r->A, b, 1, &i); }

static Buffer *in_buf(RnnBuild *r, int slot) { return r->k->in_at[slot] >= 0 ? r->ins[r->k->in_at[slot]] : NULL; }

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

/* dst[g] = bias(g) + sum_i X[t, b, i] * W[dir, g, i] (with_x) + sum_k src(k) * R[dir, g, k] (with_h), g in [g0, g1)
 * src(k) is h[k], or r[k] * h[k] when gated (GRU without linear_before_reset). */
static Stmt *matvec(RnnBuild *r, Buffer *dst, int64_t g0, int64_t g1, Expr *t, bool wbias, bool rbias, bool with_x,
                    bool with_h, bool gated) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  int64_t GH = gates_of[k->cell] * k->H;
  Var *gv = loopvar(r, "g");
  Expr *g = tir_add(A, V(r, gv), I(r, g0));
  Buffer *B = in_buf(r, 3);
  Expr *init = F(r, 0);
  if (B && wbias) init = tir_add(A, init, ld(r, B, 2, r->dir, g, NULL));
  if (B && rbias) init = tir_add(A, init, ld(r, B, 2, r->dir, tir_add(A, g, I(r, GH)), NULL));
  Stmt *parts[3] = {st1(r, dst, g, init), NULL, NULL};
  if (with_x) {
    Var *iv = loopvar(r, "i");
    Expr *prod = tir_mul(A, x_at(r, t, V(r, iv)), ld(r, r->ins[1], 3, r->dir, g, V(r, iv)));
    parts[1] = loop(r, iv, k->I, st1(r, dst, g, tir_add(A, ld1(r, dst, g), prod)));
  }
  if (with_h) {
    Var *kv = loopvar(r, "k");
    Expr *src = ld1(r, r->h, V(r, kv));
    if (gated) src = tir_mul(A, ld1(r, r->rg, V(r, kv)), src);
    Expr *prod = tir_mul(A, src, ld(r, r->ins[2], 3, r->dir, g, V(r, kv)));
    parts[2] = loop(r, kv, k->H, st1(r, dst, g, tir_add(A, ld1(r, dst, g), prod)));
  }
  return loop(r, gv, g1 - g0, tir_seq(A, 3, parts));
}

/* One time step of the cell at time t: updates h (and c) and writes Y[t]. */
static Stmt *cell_step(RnnBuild *r, Expr *t) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  int64_t H = k->H;
  Stmt *s[8] = {0};
  int ns = 0;
  Var *jv = loopvar(r, "j");
  Expr *j = V(r, jv);
  Expr *hn;
  if (k->cell == CELL_RNN) {
    s[ns++] = matvec(r, r->gx, 0, H, t, true, true, true, true, false);
    hn = activate(r, 0, ld1(r, r->gx, j));
    s[ns++] = loop(r, jv, H, st1(r, r->hn, j, hn));
  } else if (k->cell == CELL_GRU) {
    s[ns++] = matvec(r, r->gx, 0, 3 * H, t, true, false, true, false, false);
    s[ns++] = matvec(r, r->gh, 0, k->lbr ? 3 * H : 2 * H, t, false, true, false, true, false);
    Var *kv = loopvar(r, "k");
    Expr *kk = V(r, kv);
    Expr *rpre = tir_add(A, ld1(r, r->gx, tir_add(A, kk, I(r, H))), ld1(r, r->gh, tir_add(A, kk, I(r, H))));
    s[ns++] = loop(r, kv, H, st1(r, r->rg, kk, activate(r, 0, rpre)));
    if (!k->lbr) s[ns++] = matvec(r, r->gh, 2 * H, 3 * H, t, false, true, false, true, true);
    Expr *z = activate(r, 0, tir_add(A, ld1(r, r->gx, j), ld1(r, r->gh, j)));
    Expr *j2 = tir_add(A, j, I(r, 2 * H));
    Expr *hpart = ld1(r, r->gh, j2);
    if (k->lbr) hpart = tir_mul(A, ld1(r, r->rg, j), hpart);
    Expr *nn = activate(r, 1, tir_add(A, ld1(r, r->gx, j2), hpart));
    hn = tir_add(A, tir_mul(A, tir_sub(A, F(r, 1), z), nn), tir_mul(A, z, ld1(r, r->h, j)));
    s[ns++] = loop(r, jv, H, st1(r, r->hn, j, hn));
  } else {
    s[ns++] = matvec(r, r->gx, 0, 4 * H, t, true, true, true, true, false);
    Buffer *P = in_buf(r, 7);
    Expr *c = ld1(r, r->cst, j);
    Expr *gi = ld1(r, r->gx, j), *go = ld1(r, r->gx, tir_add(A, j, I(r, H)));
    Expr *gf = ld1(r, r->gx, tir_add(A, j, I(r, 2 * H))), *gc = ld1(r, r->gx, tir_add(A, j, I(r, 3 * H)));
    if (P) {
      gi = tir_add(A, gi, tir_mul(A, ld(r, P, 2, r->dir, j, NULL), c));
      gf = tir_add(A, gf, tir_mul(A, ld(r, P, 2, r->dir, tir_add(A, j, I(r, 2 * H)), NULL), c));
    }
    Expr *ig = activate(r, 0, gi);
    Expr *fg = k->input_forget ? tir_sub(A, F(r, 1), ig) : activate(r, 0, gf);
    Expr *cn = tir_add(A, tir_mul(A, fg, c), tir_mul(A, ig, activate(r, 1, gc)));
    /* c' is stored first; o and h read it back */
    Var *j2v = loopvar(r, "j");
    Expr *j2 = V(r, j2v);
    s[ns++] = loop(r, jv, H, st1(r, r->hn, j, cn));
    Expr *c2 = ld1(r, r->hn, j2);
    Expr *go2 = tir_substitute(A, go, 1, &jv, &j2);
    if (P) go2 = tir_add(A, go2, tir_mul(A, ld(r, P, 2, r->dir, tir_add(A, j2, I(r, H)), NULL), c2));
    Expr *h2 = tir_mul(A, activate(r, 0, go2), activate(r, 2, c2));
    Stmt *both[2] = {st1(r, r->cst, j2, c2), st1(r, r->hn, j2, h2)};
    s[ns++] = loop(r, j2v, H, tir_seq(A, 2, both));
  }
  Var *cv = loopvar(r, "j");
  Expr *cj = V(r, cv);
  Stmt *cp[2] = {st1(r, r->h, cj, ld1(r, r->hn, cj)), store_y(r, t, cj, ld1(r, r->hn, cj))};
  s[ns++] = loop(r, cv, H, tir_seq(A, 2, cp));
  return tir_seq(A, ns, s);
}

/* The whole recurrence of one direction for batch row b. */
static Stmt *direction(RnnBuild *r) {
  Arena *A = r->A;
  RnnCfg *k = r->k;
  bool reverse = k->dir_kind == 1 || (k->dir_kind == 2 && r->d == 1);
  Buffer *h0 = in_buf(r, 5), *c0 = in_buf(r, 6), *sl = in_buf(r, 4);
  Stmt *s[6] = {0};
  Var *jv = loopvar(r, "j");
  Expr *j = V(r, jv);
  Expr **si = state_idx(r, j);
  Stmt *init[2] = {st1(r, r->h, j, h0 ? acc_of(r, tir_load(A, h0, 3, si)) : F(r, 0)),
                   k->cell == CELL_LSTM ? st1(r, r->cst, j, c0 ? acc_of(r, tir_load(A, c0, 3, si)) : F(r, 0)) : NULL};
  s[0] = loop(r, jv, k->H, tir_seq(A, 2, init));
  Var *sv = loopvar(r, "s");
  Expr *step = V(r, sv);
  Expr *len = sl ? tir_cast(A, MLC_I64, tir_load(A, sl, 1, &r->b)) : I(r, k->T);
  Expr *t = reverse ? tir_sub(A, tir_sub(A, len, I(r, 1)), step) : step;
  Var *zv = loopvar(r, "j");
  Stmt *zero = loop(r, zv, k->H, store_y(r, step, V(r, zv), F(r, 0)));
  Stmt *body = sl ? tir_if(A, tir_bin(A, E_LT, step, len), cell_step(r, t), zero) : cell_step(r, t);
  s[1] = loop(r, sv, k->T, body);
  Var *ov = loopvar(r, "j");
  Expr *oj = V(r, ov);
  Expr **oi = state_idx(r, oj);
  Stmt *fin[2] = {tir_store(A, r->outs[1], 3, oi, tir_cast(A, k->dt, ld1(r, r->h, oj))),
                  k->cell == CELL_LSTM ? tir_store(A, r->outs[2], 3, oi, tir_cast(A, k->dt, ld1(r, r->cst, oj)))
                                       : NULL};
  s[2] = loop(r, ov, k->H, tir_seq(A, 2, fin));
  return tir_seq(A, 3, s);
}

static Stmt *rnn_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  RnnBuild *r = user;
  Arena *A = c->arena;
  RnnCfg *k = r->k;
  r->ins = ins;
  r->outs = outs;
  int64_t H = k->H, GH = gates_of[k->cell] * H;
  r->h = tir_buffer(A, "rnn_h", k->acc, 1, &H);
  r->cst = tir_buffer(A, "rnn_c", k->acc, 1, &H);
  r->hn = tir_buffer(A, "rnn_hn", k->acc, 1, &H);
  r->rg = tir_buffer(A, "rnn_r", k->acc, 1, &H);
  r->gx = tir_buffer(A, "rnn_gx", k->acc, 1, &GH);
  r->gh = tir_buffer(A, "rnn_gh", k->acc, 1, &GH);
  Stmt *dirs[2] = {0};
  for (int d = 0; d < k->D; d++) {
    r->d = d;
    r->dir = I(r, d);
    Var *bv = loopvar(r, "b");
    r->b = V(r, bv);
    dirs[d] = loop(r, bv, k->B, direction(r));
  }
  Stmt *body = tir_seq(A, k->D, dirs);
  Buffer *scratch[6] = {r->h, r->cst, r->hn, r->rg, r->gx, r->gh};
  for (int i = 0; i < 6; i++) body = tir_allocate(A, scratch[i], body);
  return body;
}

static mlc_status rnn_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  RnnBuild *r = arena_alloc(c->arena, sizeof *r);
  r->c = c;
  r->A = c->arena;
  r->k = arena_alloc(c->arena, sizeof *r->k);
  mlc_status st = rnn_config(n, r->k, d);
  if (st) return st;
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
