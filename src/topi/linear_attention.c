/* linear_attention family: the recurrent (linear) attention of Gated DeltaNet / Mamba-style LLM layers (ONNX
 * LinearAttention, opset 27) as an extern op.
 *
 *   nn.linear_attention(query, key, value[, past_state, decay, beta, erase_gate]) -> output, present_state
 * attributes q_num_heads (Hq), kv_num_heads (Hkv), scale (0: 1/sqrt(dk)), update_rule (0 linear, 1 gated,
 * 2 delta, 3 gated_delta). query is (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv), heads packed in
 * the last dim; the state of each (batch, kv head) is a (dk, dv) matrix S, past_state / present_state
 * (B, Hkv, dk, dv) (zeros when past_state is absent). decay (log-space, gated rules) is per kv head (B, T, Hkv)
 * or per key dim (B, T, Hkv*dk); beta (delta rules) per kv head (B, T, Hkv) or shared (B, T, 1); erase_gate
 * (delta rules, optional) (B, T, Hkv*dk) scales the key the delta rule retrieves with. Query head qh reads
 * the state of kv head qh / (Hq/Hkv) (grouped / multi-query heads). For each t, as the ONNX reference:
 *   g = exp(decay_t)                                (gated; 1 otherwise), broadcast along dv
 *   u = beta_t * (v_t - (g*S)^T (erase_t * k_t))    (delta; u = v_t otherwise)
 *   S = g*S + k_t u^T
 *   o_t[qh] = scale * q_t[qh]^T S
 * output (B, T, Hq*dv) has query's dtype, present_state past_state's (query's without one).
 *
 * A recurrence in time, so the compute is a TE extern whose TIR is the loop nest written here (as rnn.c does):
 * the (batch, kv head) pairs are independent and run as one parallel loop; inside, time is serial and each
 * step makes three passes over S, rows (d) outer and the dv-long rows inner (contiguous, vectorizable):
 *   retrieve (delta rules): u[m] = sum_d S[d, m] * (g[d] * ke[d]), then u[m] = beta * (v[m] - u[m]);
 *   update: S[d, m] = g[d] * S[d, m] + k[d] * u[m] (the decay is applied here, once);
 *   read, per query head of the group: acc[m] = sum_d q[d] * S[d, m], output = scale * acc.
 * S accumulates in float32 (float64 for double inputs): directly in present_state when that has this dtype,
 * else in a scratch state cast into present_state at the end. u and acc are scratch rows, one per pair so
 * that the parallel iterations share nothing. */
#include <math.h>
#include <string.h>
#include "topi/topi.h"

enum { RULE_LINEAR, RULE_GATED, RULE_DELTA, RULE_GATED_DELTA };
enum { IN_Q, IN_K, IN_V, IN_PAST, IN_DECAY, IN_BETA, IN_ERASE, IN_COUNT };

typedef struct LinAttnCfg {
  int64_t B, T, Hq, Hkv, G, dk, dv;
  int rule;
  bool gated, delta;
  bool decay_per_key, beta_per_head;
  double scale;
  mlc_dtype dt, state_dt, acc;
  int in_at[IN_COUNT]; /* input slot -> extern input index (-1 absent) */
} LinAttnCfg;

static const TensorType *opt_type(const Node *n, int i) {
  return i < n->ninputs && n->inputs[i] ? &n->inputs[i]->type : NULL;
}

/* (B, T, last) of dtype dt */
static bool is_btx(const TensorType *t, const LinAttnCfg *k, int64_t last) {
  return t->ndim == 3 && t->dims[0] == k->B && t->dims[1] == k->T && t->dims[2] == last && t->dtype == k->dt;
}

static mlc_status linattn_config(const Node *n, LinAttnCfg *k, Diag *d) {
  const char *name = n->op->name;
  const TensorType *q = &n->inputs[IN_Q]->type, *kk = &n->inputs[IN_K]->type, *v = &n->inputs[IN_V]->type;
  const TensorType *past = opt_type(n, IN_PAST), *decay = opt_type(n, IN_DECAY), *beta = opt_type(n, IN_BETA);
  const TensorType *erase = opt_type(n, IN_ERASE);
  memset(k, 0, sizeof *k);
  k->dt = q->dtype;
  if (!dtype_is_float(q->dtype))
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s of %s is not supported (float types only)", name,
                    mlc_dtype_name(q->dtype));
  if (kk->dtype != q->dtype || v->dtype != q->dtype)
    return diag_set(d, MLC_ERR_INVALID, "%s: query, key and value must have one dtype", name);
  if (q->ndim != 3 || kk->ndim != 3 || v->ndim != 3)
    return diag_set(d, MLC_ERR_INVALID, "%s: query, key and value must be 3-D (batch, time, heads * head size)", name);
  k->B = q->dims[0];
  k->T = q->dims[1];
  k->Hq = ir_attr_int(n, "q_num_heads", 0);
  k->Hkv = ir_attr_int(n, "kv_num_heads", 0);
  if (k->Hq <= 0 || k->Hkv <= 0 || k->Hq % k->Hkv)
    return diag_set(d, MLC_ERR_INVALID, "%s: q_num_heads %lld must be a positive multiple of kv_num_heads %lld", name,
                    (long long)k->Hq, (long long)k->Hkv);
  k->G = k->Hq / k->Hkv;
  if (q->dims[2] % k->Hq)
    return diag_set(d, MLC_ERR_INVALID, "%s: query's last dim %lld is not a multiple of q_num_heads %lld", name,
                    (long long)q->dims[2], (long long)k->Hq);
  k->dk = q->dims[2] / k->Hq;
  if (v->dims[2] % k->Hkv)
    return diag_set(d, MLC_ERR_INVALID, "%s: value's last dim %lld is not a multiple of kv_num_heads %lld", name,
                    (long long)v->dims[2], (long long)k->Hkv);
  k->dv = v->dims[2] / k->Hkv;
  if (!is_btx(kk, k, k->Hkv * k->dk) || v->dims[0] != k->B || v->dims[1] != k->T)
    return diag_set(d, MLC_ERR_INVALID, "%s: key must be (%lld, %lld, %lld) and value (%lld, %lld, kv heads * dv)",
                    name, (long long)k->B, (long long)k->T, (long long)(k->Hkv * k->dk), (long long)k->B,
                    (long long)k->T);
  k->rule = (int)ir_attr_int(n, "update_rule", RULE_GATED_DELTA);
  if (k->rule < RULE_LINEAR || k->rule > RULE_GATED_DELTA)
    return diag_set(d, MLC_ERR_INVALID, "%s: bad update_rule %d", name, k->rule);
  k->gated = k->rule == RULE_GATED || k->rule == RULE_GATED_DELTA;
  k->delta = k->rule == RULE_DELTA || k->rule == RULE_GATED_DELTA;
  if (k->gated != (decay != NULL))
    return diag_set(d, MLC_ERR_INVALID, "%s: the decay input is %s the gated update rules", name,
                    k->gated ? "required by" : "only allowed with");
  if (k->delta != (beta != NULL))
    return diag_set(d, MLC_ERR_INVALID, "%s: the beta input is %s the delta update rules", name,
                    k->delta ? "required by" : "only allowed with");
  if (erase && !k->delta)
    return diag_set(d, MLC_ERR_INVALID, "%s: erase_gate is only allowed with the delta update rules", name);
  if (decay) {
    k->decay_per_key = is_btx(decay, k, k->Hkv * k->dk);
    if (!k->decay_per_key && !is_btx(decay, k, k->Hkv))
      return diag_set(d, MLC_ERR_INVALID, "%s: decay must be (%lld, %lld, %lld or %lld) of query's dtype", name,
                      (long long)k->B, (long long)k->T, (long long)k->Hkv, (long long)(k->Hkv * k->dk));
  }
  if (beta) {
    k->beta_per_head = is_btx(beta, k, k->Hkv);
    if (!k->beta_per_head && !is_btx(beta, k, 1))
      return diag_set(d, MLC_ERR_INVALID, "%s: beta must be (%lld, %lld, %lld or 1) of query's dtype", name,
                      (long long)k->B, (long long)k->T, (long long)k->Hkv);
  }
  if (erase && !is_btx(erase, k, k->Hkv * k->dk))
    return diag_set(d, MLC_ERR_INVALID, "%s: erase_gate must be (%lld, %lld, %lld) of query's dtype", name,
                    (long long)k->B, (long long)k->T, (long long)(k->Hkv * k->dk));
  k->state_dt = k->dt;
  if (past) {
    if (!dtype_is_float(past->dtype))
      return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: past_state of %s is not supported (float types only)", name,
                      mlc_dtype_name(past->dtype));
    if (past->ndim != 4 || past->dims[0] != k->B || past->dims[1] != k->Hkv || past->dims[2] != k->dk ||
        past->dims[3] != k->dv)
      return diag_set(d, MLC_ERR_INVALID, "%s: past_state must be (%lld, %lld, %lld, %lld)", name, (long long)k->B,
                      (long long)k->Hkv, (long long)k->dk, (long long)k->dv);
    k->state_dt = past->dtype;
  }
  k->scale = ir_attr_float(n, "scale", 0.0);
  if (k->scale == 0.0) k->scale = k->dk > 0 ? 1.0 / sqrt((double)k->dk) : 1.0;
  k->acc = k->dt == MLC_F64 || k->state_dt == MLC_F64 ? MLC_F64 : MLC_F32;
  for (int i = 0, j = 0; i < IN_COUNT; i++) k->in_at[i] = opt_type(n, i) ? j++ : -1;
  return MLC_OK;
}

static mlc_status linattn_infer(Node *n, Diag *d) {
  LinAttnCfg k;
  mlc_status st = linattn_config(n, &k, d);
  if (st != MLC_OK) return st;
  n->outputs[0]->type = (TensorType){k.dt, 3, {k.B, k.T, k.Hq * k.dv}};
  n->outputs[1]->type = (TensorType){k.state_dt, 4, {k.B, k.Hkv, k.dk, k.dv}};
  return MLC_OK;
}

/* ---------------------------------------------------------------- TIR building */

typedef struct LinAttnBuild {
  Arena *A;
  LinAttnCfg *k;
  Buffer **ins, **outs;
  Buffer *S, *u, *acc; /* state (B, Hkv, dk, dv); rows (B, Hkv, dv) */
  Expr *b, *h, *t;     /* current batch row, kv head, time step */
} LinAttnBuild;

static Expr *I(LinAttnBuild *r, int64_t v) { return tir_idx(r->A, v); }
static Expr *F(LinAttnBuild *r, double v) { return tir_const(r->A, r->k->acc, v); }
static Var *loopvar(LinAttnBuild *r, const char *name) { return tir_var(r->A, name, MLC_I64); }
static Stmt *loop(LinAttnBuild *r, Var *v, int64_t n, Stmt *body) {
  return tir_for(r->A, v, I(r, 0), I(r, n), FOR_SERIAL, body);
}
static Expr *to_acc(LinAttnBuild *r, Expr *e) { return e->dtype == r->k->acc ? e : tir_cast(r->A, r->k->acc, e); }
static Buffer *in_buf(LinAttnBuild *r, int slot) {
  return r->k->in_at[slot] >= 0 ? r->ins[r->k->in_at[slot]] : NULL;
}

/* x[b, t, head * size + i] of a (B, T, heads * size) input, in the accumulation dtype */
static Expr *packed(LinAttnBuild *r, int slot, Expr *head, int64_t size, Expr *i) {
  Arena *A = r->A;
  Expr *idx[3] = {r->b, r->t, tir_add(A, tir_mul(A, head, I(r, size)), i)};
  return to_acc(r, tir_load(A, in_buf(r, slot), 3, idx));
}

static Expr *state_at(LinAttnBuild *r, Expr *dd, Expr *m) {
  Expr *idx[4] = {r->b, r->h, dd, m};
  return tir_load(r->A, r->S, 4, idx);
}
static Stmt *state_set(LinAttnBuild *r, Expr *dd, Expr *m, Expr *v) {
  Expr *idx[4] = {r->b, r->h, dd, m};
  return tir_store(r->A, r->S, 4, idx, v);
}
static Expr *row_at(LinAttnBuild *r, Buffer *row, Expr *m) {
  Expr *idx[3] = {r->b, r->h, m};
  return tir_load(r->A, row, 3, idx);
}
static Stmt *row_set(LinAttnBuild *r, Buffer *row, Expr *m, Expr *v) {
  Expr *idx[3] = {r->b, r->h, m};
  return tir_store(r->A, row, 3, idx, v);
}

/* the decay factor exp(decay) of key dim dd at the current step (NULL when not gated) */
static Expr *decay_factor(LinAttnBuild *r, Expr *dd) {
  if (!r->k->gated) return NULL;
  Expr *g = r->k->decay_per_key ? packed(r, IN_DECAY, r->h, r->k->dk, dd) : packed(r, IN_DECAY, r->h, 1, I(r, 0));
  return tir_call(r->A, INTRIN_EXP, r->k->acc, 1, &g);
}

/* for d in [0, dk): let gd = exp(decay[d]) (gated rules) in for m in [0, dv): inner(gd, d, m) */
typedef Stmt *(*RowFn)(LinAttnBuild *r, Expr *gd, Expr *dd, Expr *m);
static Stmt *over_state(LinAttnBuild *r, RowFn inner) {
  Var *dv = loopvar(r, "d"), *mv = loopvar(r, "m");
  Expr *dd = tir_varref(r->A, dv);
  Expr *g = decay_factor(r, dd);
  Var *gv = g ? tir_var(r->A, "g", r->k->acc) : NULL;
  Stmt *row = loop(r, mv, r->k->dv, inner(r, gv ? tir_varref(r->A, gv) : NULL, dd, tir_varref(r->A, mv)));
  return loop(r, dv, r->k->dk, gv ? tir_let_stmt(r->A, gv, g, row) : row);
}

/* u[m] += S[d, m] * g[d] * ke[d], ke the key (times erase_gate when given) */
static Stmt *retrieve_row(LinAttnBuild *r, Expr *gd, Expr *dd, Expr *m) {
  Arena *A = r->A;
  Expr *ke = packed(r, IN_K, r->h, r->k->dk, dd);
  if (in_buf(r, IN_ERASE)) ke = tir_mul(A, packed(r, IN_ERASE, r->h, r->k->dk, dd), ke);
  if (gd) ke = tir_mul(A, gd, ke);
  return row_set(r, r->u, m, tir_add(A, row_at(r, r->u, m), tir_mul(A, state_at(r, dd, m), ke)));
}

/* S[d, m] = g[d] * S[d, m] + k[d] * u[m] */
static Stmt *update_row(LinAttnBuild *r, Expr *gd, Expr *dd, Expr *m) {
  Arena *A = r->A;
  Expr *s = state_at(r, dd, m);
  if (gd) s = tir_mul(A, gd, s);
  Expr *w = tir_mul(A, packed(r, IN_K, r->h, r->k->dk, dd), row_at(r, r->u, m));
  return state_set(r, dd, m, tir_add(A, s, w));
}

/* One time step of one (batch, kv head) pair. */
static Stmt *linattn_step(LinAttnBuild *r) {
  Arena *A = r->A;
  LinAttnCfg *k = r->k;
  Stmt *s[8] = {0};
  int ns = 0;
  Var *mv = loopvar(r, "m");
  Expr *m = tir_varref(A, mv);
  Expr *vm = packed(r, IN_V, r->h, k->dv, m);
  if (k->delta) {
    Expr *beta = k->beta_per_head ? packed(r, IN_BETA, r->h, 1, I(r, 0)) : packed(r, IN_BETA, I(r, 0), 1, I(r, 0));
    s[ns++] = loop(r, mv, k->dv, row_set(r, r->u, m, F(r, 0)));
    s[ns++] = over_state(r, retrieve_row);
    Var *m2v = loopvar(r, "m");
    Expr *m2 = tir_varref(A, m2v);
    Expr *v2 = tir_substitute(A, vm, 1, &mv, &m2);
    s[ns++] = loop(r, m2v, k->dv, row_set(r, r->u, m2, tir_mul(A, beta, tir_sub(A, v2, row_at(r, r->u, m2)))));
  } else {
    s[ns++] = loop(r, mv, k->dv, row_set(r, r->u, m, vm));
  }
  s[ns++] = over_state(r, update_row);
  /* read: every query head of this kv head's group */
  Var *gv = loopvar(r, "qh"), *dv = loopvar(r, "d"), *av = loopvar(r, "m"), *ov = loopvar(r, "m");
  Expr *qh = tir_add(A, tir_mul(A, r->h, I(r, k->G)), tir_varref(A, gv));
  Expr *dd = tir_varref(A, dv), *am = tir_varref(A, av), *om = tir_varref(A, ov);
  Expr *qd = packed(r, IN_Q, qh, k->dk, dd);
  Stmt *rd[3];
  rd[0] = loop(r, av, k->dv, row_set(r, r->acc, am, F(r, 0)));
  Expr *sum = tir_add(A, row_at(r, r->acc, am), tir_mul(A, qd, state_at(r, dd, am)));
  rd[1] = loop(r, dv, k->dk, loop(r, av, k->dv, row_set(r, r->acc, am, sum)));
  Expr *oi[3] = {r->b, r->t, tir_add(A, tir_mul(A, qh, I(r, k->dv)), om)};
  Expr *o = tir_cast(A, k->dt, tir_mul(A, F(r, k->scale), row_at(r, r->acc, om)));
  rd[2] = loop(r, ov, k->dv, tir_store(A, r->outs[0], 3, oi, o));
  s[ns++] = loop(r, gv, k->G, tir_seq(A, 3, rd));
  return tir_seq(A, ns, s);
}

static Stmt *linattn_extern(TeCtx *c, Buffer **ins, Buffer **outs, void *user) {
  LinAttnBuild *r = user;
  Arena *A = c->arena;
  LinAttnCfg *k = r->k;
  r->ins = ins;
  r->outs = outs;
  int64_t sshape[4] = {k->B, k->Hkv, k->dk, k->dv}, rshape[3] = {k->B, k->Hkv, k->dv};
  bool scratch_state = outs[1]->dtype != k->acc;
  r->S = scratch_state ? tir_buffer(A, "la_state", k->acc, 4, sshape) : outs[1];
  r->u = tir_buffer(A, "la_u", k->acc, 3, rshape);
  r->acc = tir_buffer(A, "la_acc", k->acc, 3, rshape);
  Var *pv = loopvar(r, "bh");
  Expr *p = tir_varref(A, pv);
  r->b = tir_bin(A, E_FLOORDIV, p, I(r, k->Hkv));
  r->h = tir_bin(A, E_FLOORMOD, p, I(r, k->Hkv));
  Stmt *s[3];
  Buffer *past = in_buf(r, IN_PAST);
  Var *dv = loopvar(r, "d"), *mv = loopvar(r, "m");
  Expr *dd = tir_varref(A, dv), *m = tir_varref(A, mv);
  Expr *si[4] = {r->b, r->h, dd, m};
  Expr *init = past ? to_acc(r, tir_load(A, past, 4, si)) : F(r, 0);
  s[0] = loop(r, dv, k->dk, loop(r, mv, k->dv, state_set(r, dd, m, init)));
  Var *tv = loopvar(r, "t");
  r->t = tir_varref(A, tv);
  s[1] = loop(r, tv, k->T, linattn_step(r));
  Stmt *fin = tir_store(A, outs[1], 4, si, tir_cast(A, outs[1]->dtype, state_at(r, dd, m)));
  s[2] = scratch_state ? loop(r, dv, k->dk, loop(r, mv, k->dv, fin)) : NULL;
  Stmt *body = tir_for(A, pv, I(r, 0), I(r, k->B * k->Hkv), FOR_PARALLEL, tir_seq(A, 3, s));
  body = tir_allocate(A, r->u, tir_allocate(A, r->acc, body));
  if (scratch_state) body = tir_allocate(A, r->S, body);
  return body;
}

static mlc_status linattn_compute(TeCtx *c, Node *n, TeTensor **ins, TeTensor **outs, Diag *d) {
  LinAttnBuild *r = arena_alloc(c->arena, sizeof *r);
  r->A = c->arena;
  r->k = arena_alloc(c->arena, sizeof *r->k);
  mlc_status st = linattn_config(n, r->k, d);
  if (st != MLC_OK) return st;
  TeTensor *present[IN_COUNT];
  int np = 0;
  for (int i = 0; i < n->ninputs && i < IN_COUNT; i++)
    if (r->k->in_at[i] >= 0) present[np++] = ins[i];
  TeTensor types[2];
  memset(types, 0, sizeof types);
  for (int i = 0; i < 2; i++) {
    const TensorType *o = &n->outputs[i]->type;
    types[i].dtype = o->dtype;
    types[i].ndim = o->ndim;
    memcpy(types[i].shape, o->dims, sizeof(int64_t) * (size_t)o->ndim);
  }
  te_extern(c, "linear_attention", "linear_attention", np, present, 2, types, linattn_extern, r, outs);
  return MLC_OK;
}

/* ---------------------------------------------------------------- the table */

const OpDef topi_ops_linear_attention[] = {
    /* name                 pattern     min max nout infer          compute */
    {"nn.linear_attention", PAT_OPAQUE, 3, IN_COUNT, 2, linattn_infer, linattn_compute},
    {0},
};
