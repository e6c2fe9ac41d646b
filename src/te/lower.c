/* te_lower: a TE schedule -> one TirFunc (TVM's ScheduleOps + the buffer binding of te.lower, much reduced).
 *
 * Algorithm:
 *   1. Buffers. Each kernel argument gets a Buffer (its param); every other non-inlined compute/extern
 *      output gets a scratch Buffer, S_ALLOCATE'd around the whole body. Placeholders must be arguments.
 *      A stage marked inline stays a root when it is an argument or is read by an extern (those need memory).
 *   2. Reads. E_TENSOR reads of inlined stages are replaced by the stage's body with its axis vars
 *      substituted by the read's indices (recursively); all other reads become E_LOAD of the tensor's buffer.
 *   3. Loop nests, one per root stage in producer-first order. The leaf iter vars become For loops with
 *      their annotations; root axis values are recovered through the relations (split: parent = outer *
 *      factor + inner; fuse: outer = fused / ext(inner), inner = fused % ext(inner)) until a fixed point.
 *      Every split whose factor does not divide its parent adds a guard `parent < ext(parent)`, placed just
 *      inside the innermost loop whose var it uses, so it wraps exactly what depends on it.
 *   4. Reductions: out[spatial] = init, then out[spatial] = combine(out[spatial], source) in the nest (a
 *      select when the reduction has a condition). When every reduce leaf comes after every spatial leaf the
 *      init sits right before the outermost reduce loop; otherwise a separate init nest over the spatial
 *      leaves (fresh ".init" loop vars) runs before the main nest.
 *   5. Externs: their statement is used as is, with its placeholder Buffers rebound to the real ones.
 *   6. compute_at: a stage attached to (parent, iv) is lowered where parent's nest reaches loop iv. The
 *      region it must cover is inferred from parent's statement inside that loop: every load of the stage's
 *      (logical, full-shape) buffer is bounded by interval arithmetic, loops outside iv held fixed and loops
 *      inside it ranging over [min, min + extent); the union of the intervals per dimension gives region min
 *      (an expression of the outer loop vars) and extent (a constant, or the whole dimension when it is not
 *      one: conservative). The stage's root axes get those extents (its leaves' follow through the
 *      relations), its root values are offset by the region min and guarded against the tensor's shape, and
 *      its buffer shrinks to the region: a local S_ALLOCATE inside loop iv, indexed by (index - min).
 *   7. tir_simplify_stmt over the result (it knows the loop ranges, so most guards and div/mods fold).
 *   8. tir_peel_guarded_loops: a serial loop whose last iteration alone fails a guard inside a vectorized
 *      loop runs that iteration separately (the others then vectorize without the guard), and simplify again.
 *   9. tir_partition_pad_loops: the loops of a padded copy split where its bounds tests change value, and
 *      simplify again (the middle piece copies without tests or clamps).
 *  10. te_prefetch: tir_inject_prefetch on the stage's loop (its leaf's var) for the tensor's buffer. */
#include <string.h>
#include "te/stage.h"
#include "tir/mutate.h"

typedef struct StageInfo {
  TeStage *st;
  TeOp *op;
  bool inlined;
  Buffer **bufs;    /* one per output */
  Expr *inl_body;   /* memo: the inlined body with its reads lowered */
  bool inl_busy;    /* cycle guard */
  /* inlined reads already expanded, by index list: equal reads share one expression (a DAG, not a tree),
   * so a chain of stages that each read their input twice stays linear in size */
  VEC(Expr *) read_keys;
  VEC(Expr *) read_vals;
  bool attached, emitted; /* compute_at */
  Expr **region_min;      /* while its nest is lowered: the region's origin per output dim */
} StageInfo;

typedef struct Lower {
  TeCtx *c;
  Arena *a;
  Diag *d;
  int n;
  StageInfo *info;
  VEC(Buffer *) allocs;
  /* buffer rebinding for extern bodies */
  int nbind;
  Buffer **bind_from, **bind_to;
  ExprMemo reads; /* lower_reads is a pure function of the node: each shared node is lowered once */
  /* extents of the iter vars of attached stages, as bound inference shrank them (a stack) */
  int next;
  IterVar *ext_iv[256];
  int64_t ext_val[256];
} Lower;

static int64_t ext_of(const Lower *l, const IterVar *iv) {
  for (int i = l->next - 1; i >= 0; i--)
    if (l->ext_iv[i] == iv) return l->ext_val[i];
  return iv->extent;
}

static Stmt *lower_compute(Lower *l, StageInfo *si);

static StageInfo *info_of(Lower *l, const TeOp *op) {
  for (int i = 0; i < l->n; i++)
    if (l->info[i].op == op) return &l->info[i];
  return NULL;
}

/* ---- reads ---- */

static Expr *lower_reads(void *ctx, Expr *e);
static Expr *lower_read_node(Lower *l, Expr *e1);

static Expr *inline_body(Lower *l, StageInfo *si) {
  if (!si->inl_body) {
    if (si->inl_busy) {
      diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: cyclic inline through stage '%s'", si->op->name);
      return si->op->body;
    }
    si->inl_busy = true;
    si->inl_body = lower_reads(l, si->op->body);
    si->inl_busy = false;
  }
  return si->inl_body;
}

static Expr *lower_reads(void *ctx, Expr *e) {
  Lower *l = ctx;
  if (!e) return e;
  if (e->kind == E_REDUCE) {
    diag_set(l->d, MLC_ERR_UNSUPPORTED, "te_lower: a reduction must be the whole body of its compute");
    return e;
  }
  if (e->kind == E_INT || e->kind == E_FLOAT || e->kind == E_VAR) return e;
  Expr *done = memo_get(&l->reads, e);
  if (done) return done;
  Expr *r = lower_read_node(l, tir_expr_map_children(l->a, e, lower_reads, ctx));
  memo_put(&l->reads, e, r);
  return r;
}

static Expr *lower_read_node(Lower *l, Expr *e1) {
  if (e1->kind != E_TENSOR) return e1;
  TeTensor *t = e1->tensor.tensor;
  StageInfo *si = info_of(l, t->op);
  if (!si) {
    diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: tensor '%s' is read but has no stage in the schedule", t->op->name);
    return e1;
  }
  if (e1->tensor.n != t->ndim) {
    diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: read of '%s' with %d indices, tensor has %d dims", t->op->name,
             e1->tensor.n, t->ndim);
    return e1;
  }
  if (si->inlined) {
    for (int k = 0; k < si->read_keys.n; k++) {
      Expr *key = si->read_keys.v[k];
      bool same = true;
      for (int i = 0; i < t->ndim && same; i++) same = tir_expr_equal(key->tensor.idx[i], e1->tensor.idx[i]);
      if (same) return si->read_vals.v[k];
    }
    Expr *body = inline_body(l, si);
    Var **vars = arena_alloc(l->a, (size_t)(si->op->naxes + 1) * sizeof(Var *));
    for (int i = 0; i < si->op->naxes; i++) vars[i] = si->op->axes[i]->var;
    Expr *r = tir_substitute(l->a, body, si->op->naxes, vars, e1->tensor.idx);
    if (si->read_keys.n < 64) {
      vec_push(l->a, &si->read_keys, e1);
      vec_push(l->a, &si->read_vals, r);
    }
    return r;
  }
  Buffer *b = si->bufs ? si->bufs[t->value_index] : NULL;
  if (!b) {
    diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: tensor '%s' has no buffer", t->op->name);
    return e1;
  }
  return tir_load(l->a, b, e1->tensor.n, e1->tensor.idx);
}

/* ---- iter var values through the relations ---- */

typedef struct IvMap {
  int n;
  IterVar *iv[64];
  Expr *val[64];
} IvMap;

static Expr *iv_get(const IvMap *m, const IterVar *iv) {
  for (int i = 0; i < m->n; i++)
    if (m->iv[i] == iv) return m->val[i];
  return NULL;
}

static bool iv_set(IvMap *m, IterVar *iv, Expr *v) {
  if ((size_t)m->n == countof(m->iv)) return false;
  m->iv[m->n] = iv;
  m->val[m->n++] = v;
  return true;
}

/* Values of all iter vars derivable from the given leaves (loop vars), and the split guards. */
static bool resolve(Lower *l, TeStage *st, int nleaf, IterVar **leaf, Var **vars, IvMap *m, int *nguard,
                    Expr **guards) {
  Arena *a = l->a;
  m->n = 0;
  *nguard = 0;
  for (int i = 0; i < nleaf; i++)
    if (!iv_set(m, leaf[i], tir_varref(a, vars[i]))) return false;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < st->nrels; r++) {
      TeRelation *rel = &st->rels[r];
      if (rel->kind == REL_SPLIT) {
        Expr *o = iv_get(m, rel->outer), *in = iv_get(m, rel->inner);
        if (iv_get(m, rel->parent) || !o || !in) continue;
        Expr *p = tir_add(a, tir_mul(a, o, tir_idx(a, rel->factor)), in);
        if (!iv_set(m, rel->parent, p)) return false;
        if (ext_of(l, rel->outer) * rel->factor != ext_of(l, rel->parent) && *nguard < 64)
          guards[(*nguard)++] = tir_bin(a, E_LT, p, tir_idx(a, ext_of(l, rel->parent)));
        progress = true;
      } else {
        Expr *f = iv_get(m, rel->fused);
        if (!f || iv_get(m, rel->outer) || iv_get(m, rel->inner)) continue;
        Expr *ext = tir_idx(a, rel->inner->extent);
        if (!iv_set(m, rel->outer, tir_bin(a, E_FLOORDIV, f, ext)) ||
            !iv_set(m, rel->inner, tir_bin(a, E_FLOORMOD, f, ext)))
          return false;
        progress = true;
      }
    }
  }
  return true;
}

/* deepest loop (index into vars) whose var e uses; -1 if none */
typedef struct DepCtx {
  Arena *a;
  int n;
  Var **vars;
  int dep;
} DepCtx;

static Expr *dep_visit(void *ctx, Expr *e) {
  DepCtx *d = ctx;
  if (e->kind == E_VAR)
    for (int i = 0; i < d->n; i++)
      if (d->vars[i] == e->var && i > d->dep) d->dep = i;
  tir_expr_map_children(d->a, e, dep_visit, ctx);
  return e;
}

static int guard_dep(Arena *a, Expr *g, int n, Var **vars) {
  DepCtx d = {a, n, vars, -1};
  dep_visit(&d, g);
  return d.dep;
}

static Stmt *attach_producer(Lower *l, StageInfo *pi, Stmt *inner);

/* Builds the loop nest over vars (outermost first) around body; guards go right inside the deepest loop
 * they use; init (if any) is put right before the loop at init_pos (init_pos == n: right before body).
 * Stages attached to owner's leaves are lowered inside their loops. */
static Stmt *emit_nest(Lower *l, StageInfo *owner, int n, IterVar **leaf, Var **vars, int nguard, Expr **guards,
                       int init_pos, Stmt *init, Stmt *body) {
  Arena *a = l->a;
  int dep[64];
  for (int g = 0; g < nguard; g++) dep[g] = guard_dep(a, guards[g], n, vars);
  Stmt *s = body;
  if (init && init_pos >= n) s = tir_seq2(a, init, s);
  for (int k = n - 1; k >= -1; k--) {
    for (int g = nguard - 1; g >= 0; g--)
      if (dep[g] == k) s = tir_if(a, guards[g], s, NULL);
    if (k < 0) break;
    if (owner)
      for (int j = l->n - 1; j >= 0 && s; j--) {
        StageInfo *pi = &l->info[j];
        if (pi->attached && pi->st->attach_parent == owner->st && pi->st->attach_iv == leaf[k])
          s = attach_producer(l, pi, s);
      }
    if (!s) return NULL;
    s = tir_for(a, vars[k], tir_idx(a, 0), tir_idx(a, ext_of(l, leaf[k])), leaf[k]->for_kind, s);
    if (init && k == init_pos) s = tir_seq2(a, init, s);
  }
  return s;
}

static Expr *combine(Arena *a, ReduceKind k, Expr *acc, Expr *x) {
  switch (k) {
  case RED_SUM:
    /* a sum of products accumulates with fused multiply-adds (one rounding; one instruction per lane) */
    if ((acc->dtype == MLC_F32 || acc->dtype == MLC_F64) && x->kind == E_MUL && x->dtype == acc->dtype &&
        x->lanes == acc->lanes) {
      Expr *args[3] = {x->op.a, x->op.b, acc};
      return tir_call(a, INTRIN_FMA, acc->dtype, 3, args);
    }
    return tir_add(a, acc, x);
  case RED_PROD: return tir_mul(a, acc, x);
  case RED_MIN: return tir_bin(a, E_MIN, acc, x);
  default: return tir_bin(a, E_MAX, acc, x);
  }
}

static Expr *identity(Arena *a, ReduceKind k, mlc_dtype t) {
  switch (k) {
  case RED_SUM: return tir_const(a, t, 0);
  case RED_PROD: return tir_const(a, t, 1);
  case RED_MIN: return tir_max_value(a, t);
  default: return tir_min_value(a, t);
  }
}

/* root axis vars of op -> their values in m */
static bool root_subst(Lower *l, TeOp *op, IvMap *m, bool spatial_only, int *n, Var **vars, Expr **vals) {
  *n = 0;
  int total = op->naxes + (spatial_only ? 0 : op->nreduce);
  for (int i = 0; i < total; i++) {
    IterVar *iv = i < op->naxes ? op->axes[i] : op->reduce_axes[i - op->naxes];
    Expr *v = iv_get(m, iv);
    if (!v) {
      diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: stage '%s': axis '%s' is not reachable from the leaves",
               op->name, iv->var->name);
      return false;
    }
    vars[*n] = iv->var;
    vals[(*n)++] = v;
  }
  return true;
}

static Stmt *lower_compute(Lower *l, StageInfo *si) {
  Arena *a = l->a;
  TeStage *st = si->st;
  TeOp *op = si->op;
  Buffer *out = si->bufs[0];
  if (op->naxes + op->nreduce > 32 || st->nleaf > 48) {
    diag_set(l->d, MLC_ERR_UNSUPPORTED, "te_lower: stage '%s' has too many iter vars", op->name);
    return NULL;
  }
  if (!op->body) {
    diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: compute '%s' has no body", op->name);
    return NULL;
  }
  Var *lvars[64];
  for (int i = 0; i < st->nleaf; i++) lvars[i] = st->leaf[i]->var;
  IvMap m;
  Expr *guards[64];
  int nguard;
  if (!resolve(l, st, st->nleaf, st->leaf, lvars, &m, &nguard, guards)) {
    diag_set(l->d, MLC_ERR_UNSUPPORTED, "te_lower: stage '%s': too many iter vars", op->name);
    return NULL;
  }
  Var *rv[64];
  Expr *rval[64];
  int nr;
  if (!root_subst(l, op, &m, false, &nr, rv, rval)) return NULL;
  if (si->region_min) /* attached: root values are offsets into the region; stay inside the tensor */
    for (int i = 0; i < op->naxes; i++) {
      rval[i] = tir_add(a, si->region_min[i], rval[i]);
      if (nguard < 62) {
        guards[nguard++] = tir_bin(a, E_LT, rval[i], tir_idx(a, op->outputs[0]->shape[i]));
        guards[nguard++] = tir_bin(a, E_GE, rval[i], tir_idx(a, 0));
      }
    }
  Expr *idx[MLC_MAX_DIMS];
  for (int i = 0; i < op->naxes; i++) idx[i] = rval[i];

  Expr *body = op->body;
  if (body->kind != E_REDUCE) {
    Expr *v = tir_substitute(a, lower_reads(l, body), nr, rv, rval);
    Stmt *store = tir_store(a, out, op->naxes, idx, v);
    return emit_nest(l, si, st->nleaf, st->leaf, lvars, nguard, guards, st->nleaf, NULL, store);
  }

  /* reduction */
  ReduceKind rk = body->reduce.combiner;
  Expr *src = tir_substitute(a, lower_reads(l, body->reduce.source), nr, rv, rval);
  Expr *cond = body->reduce.cond ? tir_substitute(a, lower_reads(l, body->reduce.cond), nr, rv, rval) : NULL;
  Expr *cur = tir_load(a, out, op->naxes, idx);
  Expr *acc = combine(a, rk, cur, src->dtype == out->dtype ? src : tir_cast(a, out->dtype, src));
  if (cond) acc = tir_select(a, cond, acc, cur);
  Stmt *update = tir_store(a, out, op->naxes, idx, acc);

  int first_reduce = st->nleaf, last_spatial = -1;
  for (int i = 0; i < st->nleaf; i++) {
    if (st->leaf[i]->kind == ITER_REDUCE && i < first_reduce) first_reduce = i;
    if (st->leaf[i]->kind == ITER_SPATIAL) last_spatial = i;
  }
  Expr *init_src = body->reduce.init ? lower_reads(l, body->reduce.init) : identity(a, rk, out->dtype);
  if (last_spatial < first_reduce) {
    Stmt *init = tir_store(a, out, op->naxes, idx, tir_substitute(a, init_src, nr, rv, rval));
    return emit_nest(l, si, st->nleaf, st->leaf, lvars, nguard, guards, first_reduce, init, update);
  }
  /* separate init nest over the spatial leaves, with fresh loop vars */
  IterVar *sleaf[64];
  Var *svars[64];
  int ns = 0;
  for (int i = 0; i < st->nleaf; i++)
    if (st->leaf[i]->kind == ITER_SPATIAL) {
      sleaf[ns] = st->leaf[i];
      svars[ns++] = tir_var(a, arena_printf(a, "%s.init", st->leaf[i]->var->name), MLC_I64);
    }
  IvMap mi;
  Expr *iguards[64];
  int niguard;
  if (!resolve(l, st, ns, sleaf, svars, &mi, &niguard, iguards)) {
    diag_set(l->d, MLC_ERR_UNSUPPORTED, "te_lower: stage '%s': too many iter vars", op->name);
    return NULL;
  }
  Var *iv[64];
  Expr *ival[64];
  int ni;
  if (!root_subst(l, op, &mi, true, &ni, iv, ival)) return NULL;
  if (si->region_min)
    for (int i = 0; i < op->naxes; i++) {
      ival[i] = tir_add(a, si->region_min[i], ival[i]);
      if (niguard < 62) {
        iguards[niguard++] = tir_bin(a, E_LT, ival[i], tir_idx(a, op->outputs[0]->shape[i]));
        iguards[niguard++] = tir_bin(a, E_GE, ival[i], tir_idx(a, 0));
      }
    }
  /* the init value and indices may only use spatial axes */
  Stmt *init = tir_store(a, out, op->naxes, ival, tir_substitute(a, init_src, ni, iv, ival));
  Stmt *init_nest = emit_nest(l, NULL, ns, sleaf, svars, niguard, iguards, ns, NULL, init);
  Stmt *main_nest = emit_nest(l, si, st->nleaf, st->leaf, lvars, nguard, guards, st->nleaf, NULL, update);
  if (!main_nest) return NULL;
  return tir_seq2(a, init_nest, main_nest);
}

/* ---- compute_at: bound inference and the attached nest ---- */

typedef struct Rng {
  Var *v;
  Expr *lo, *hi; /* NULL: unknown */
} Rng;

typedef struct Region {
  Lower *l;
  Buffer *buf;
  int nd;
  int nrng;
  Rng rng[96];
  bool any, overflow;
  bool full[MLC_MAX_DIMS];
  Expr *lo[MLC_MAX_DIMS], *hi[MLC_MAX_DIMS];
  ExprMemo seen;
} Region;

/* [lo, hi] of e with the ranged vars varying and every other var fixed; false when not bounded */
static bool interval(Region *r, Expr *e, Expr **lo, Expr **hi) {
  Arena *a = r->l->a;
  Expr *alo, *ahi, *blo, *bhi;
  int64_t c;
  switch (e->kind) {
  case E_INT: *lo = *hi = e; return true;
  case E_VAR:
    for (int i = r->nrng - 1; i >= 0; i--)
      if (r->rng[i].v == e->var) {
        if (!r->rng[i].lo) return false;
        *lo = r->rng[i].lo;
        *hi = r->rng[i].hi;
        return true;
      }
    *lo = *hi = e;
    return true;
  case E_ADD:
  case E_SUB:
  case E_MIN:
  case E_MAX:
    if (!interval(r, e->op.a, &alo, &ahi) || !interval(r, e->op.b, &blo, &bhi)) return false;
    if (e->kind == E_SUB) {
      *lo = tir_sub(a, alo, bhi);
      *hi = tir_sub(a, ahi, blo);
    } else {
      *lo = tir_bin(a, e->kind, alo, blo);
      *hi = tir_bin(a, e->kind, ahi, bhi);
    }
    return true;
  case E_MUL: {
    Expr *x = e->op.a, *y = e->op.b;
    if (tir_is_const_int(x, &c)) {
      Expr *t = x;
      x = y;
      y = t;
    }
    if (!interval(r, x, &alo, &ahi)) return false;
    if (tir_is_const_int(y, &c)) {
      *lo = tir_mul(a, c >= 0 ? alo : ahi, y);
      *hi = tir_mul(a, c >= 0 ? ahi : alo, y);
      return true;
    }
    if (!interval(r, y, &blo, &bhi) || alo != ahi || blo != bhi) return false;
    *lo = *hi = alo == x && blo == y ? e : tir_mul(a, alo, blo);
    return true;
  }
  case E_FLOORDIV:
  case E_FLOORMOD:
    if (!tir_is_const_int(e->op.b, &c) || c <= 0 || !interval(r, e->op.a, &alo, &ahi)) return false;
    if (alo == ahi) { /* a point; alo may be the value of a var ranged over one iteration */
      *lo = *hi = alo == e->op.a ? e : tir_bin(a, e->kind, alo, e->op.b);
    } else if (e->kind == E_FLOORDIV) {
      *lo = tir_bin(a, E_FLOORDIV, alo, e->op.b);
      *hi = tir_bin(a, E_FLOORDIV, ahi, e->op.b);
    } else {
      *lo = tir_idx(a, 0);
      *hi = tir_idx(a, c - 1);
    }
    return true;
  case E_CAST:
    if (!dtype_is_int(e->dtype) || !dtype_is_int(e->op.a->dtype)) return false;
    if (!interval(r, e->op.a, &alo, &ahi)) return false;
    *lo = alo == e->op.a ? e : tir_cast(a, e->dtype, alo);
    *hi = ahi == e->op.a ? e : tir_cast(a, e->dtype, ahi);
    return true;
  default: return false;
  }
}

static void region_add_load(Region *r, Expr *e) {
  Arena *a = r->l->a;
  /* the ranged vars with constant bounds, for the simplifier */
  Var *bv[countof(r->rng)];
  int64_t blo[countof(r->rng)], bhi[countof(r->rng)];
  int nb = 0;
  for (int i = 0; i < r->nrng; i++)
    if (r->rng[i].lo && tir_is_const_int(tir_simplify(a, r->rng[i].lo), &blo[nb]) &&
        tir_is_const_int(tir_simplify(a, r->rng[i].hi), &bhi[nb]))
      bv[nb++] = r->rng[i].v;
  for (int d = 0; d < r->nd; d++) {
    if (r->full[d]) continue;
    Expr *lo, *hi;
    /* simplified first: an index that splits a fused var into two axes and joins them again
     * (floordiv(x, W) * W + floormod(x, W), or with x = a fused loop's rows floormod(floordiv(x, W), H) * W +
     * floormod(x, W), where the bounds of x's inner loops show x < H * W) is x, whose interval is tight */
    if (!interval(r, tir_simplify_bounded(a, e->load.idx[d], nb, bv, blo, bhi), &lo, &hi)) {
      r->full[d] = true;
      continue;
    }
    if (!r->any) {
      r->lo[d] = lo;
      r->hi[d] = hi;
      continue;
    }
    if (!tir_expr_equal(lo, r->lo[d])) r->lo[d] = tir_bin(a, E_MIN, r->lo[d], lo);
    if (!tir_expr_equal(hi, r->hi[d])) r->hi[d] = tir_bin(a, E_MAX, r->hi[d], hi);
  }
  r->any = true;
}

static Expr *region_expr(void *ctx, Expr *e) {
  Region *r = ctx;
  if (!e || e->kind == E_INT || e->kind == E_FLOAT || e->kind == E_VAR) return e;
  if (memo_get(&r->seen, e)) return e;
  memo_put(&r->seen, e, e);
  if (e->kind == E_LET) {
    /* the let var is unknown inside its body: indices using it take the whole dimension */
    region_expr(ctx, e->op.a);
    if (r->nrng < (int)countof(r->rng)) {
      r->rng[r->nrng++] = (Rng){e->let_var, NULL, NULL};
      region_expr(ctx, e->op.b);
      r->nrng--;
    } else {
      r->overflow = true;
    }
    return e;
  }
  tir_expr_map_children(r->l->a, e, region_expr, ctx);
  if (e->kind == E_LOAD && e->load.buf == r->buf) region_add_load(r, e);
  return e;
}

static void region_stmt(Region *r, Stmt *s) {
  if (!s) return;
  memo_clear(&r->seen);
  switch (s->kind) {
  case S_FOR: {
    region_expr(r, s->loop.min);
    region_expr(r, s->loop.extent);
    if (r->nrng >= (int)countof(r->rng)) {
      r->overflow = true;
      return;
    }
    Expr *lo, *hi, *elo, *ehi;
    Rng g = {s->loop.var, NULL, NULL};
    if (interval(r, s->loop.min, &lo, &hi) && interval(r, s->loop.extent, &elo, &ehi)) {
      g.lo = lo;
      g.hi = tir_sub(r->l->a, tir_add(r->l->a, hi, ehi), tir_idx(r->l->a, 1));
    }
    r->rng[r->nrng++] = g;
    region_stmt(r, s->loop.body);
    r->nrng--;
    return;
  }
  case S_LET: {
    region_expr(r, s->let.value);
    if (r->nrng >= (int)countof(r->rng)) {
      r->overflow = true;
      return;
    }
    Rng g = {s->let.var, NULL, NULL};
    Expr *lo, *hi;
    if (interval(r, s->let.value, &lo, &hi)) {
      g.lo = lo;
      g.hi = hi;
    }
    r->rng[r->nrng++] = g;
    region_stmt(r, s->let.body);
    r->nrng--;
    return;
  }
  case S_STORE:
    for (int i = 0; i < s->store.n; i++) region_expr(r, s->store.idx[i]);
    region_expr(r, s->store.value);
    return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) region_stmt(r, s->seq.stmts[i]);
    return;
  case S_IF:
    region_expr(r, s->ifs.cond);
    region_stmt(r, s->ifs.then_s);
    region_stmt(r, s->ifs.else_s);
    return;
  case S_ALLOCATE: region_stmt(r, s->alloc.body); return;
  case S_EVAL: region_expr(r, s->eval.e); return;
  }
}

/* logical (full-shape) buffer -> the region's local buffer, index - min */
typedef struct Relocate {
  Arena *a;
  Buffer *from, *to;
  Expr **min;
  ExprMemo memo;
} Relocate;

static Expr **relocated_idx(Relocate *rl, int n, Expr **idx) {
  Expr **ni = arena_alloc(rl->a, (size_t)(n ? n : 1) * sizeof(Expr *));
  for (int i = 0; i < n; i++) ni[i] = tir_sub(rl->a, idx[i], rl->min[i]);
  return ni;
}

static Expr *relocate_expr(void *ctx, Expr *e) {
  Relocate *rl = ctx;
  if (!e || e->kind == E_INT || e->kind == E_FLOAT || e->kind == E_VAR) return e;
  Expr *done = memo_get(&rl->memo, e);
  if (done) return done;
  Expr *e1 = tir_expr_map_children(rl->a, e, relocate_expr, ctx);
  if (e1->kind == E_LOAD && e1->load.buf == rl->from)
    e1 = tir_load(rl->a, rl->to, e1->load.n, relocated_idx(rl, e1->load.n, e1->load.idx));
  memo_put(&rl->memo, e, e1);
  return e1;
}

static Stmt *relocate_stmt(void *ctx, Stmt *s) {
  Relocate *rl = ctx;
  Stmt *s1 = tir_stmt_map_children(rl->a, s, relocate_expr, relocate_stmt, ctx);
  if (s1 && s1->kind == S_STORE && s1->store.buf == rl->from)
    return tir_store(rl->a, rl->to, s1->store.n, relocated_idx(rl, s1->store.n, s1->store.idx), s1->store.value);
  return s1;
}

/* pi's nest over the region of its output that inner (the parent's body inside the attach loop) reads */
static Stmt *attach_producer(Lower *l, StageInfo *pi, Stmt *inner) {
  Arena *a = l->a;
  TeOp *op = pi->op;
  TeStage *st = pi->st;
  if (pi->emitted) {
    diag_set(l->d, MLC_ERR_UNSUPPORTED, "te_lower: stage '%s' attached inside a loop that is emitted twice",
             op->name);
    return NULL;
  }
  pi->emitted = true;
  Buffer *logical = pi->bufs[0];
  TeTensor *t = op->outputs[0];
  Region *r = arena_alloc(a, sizeof(Region));
  r->l = l;
  r->buf = logical;
  r->nd = t->ndim;
  memo_init(&r->seen, a);
  region_stmt(r, inner);
  Expr **mins = arena_alloc(a, (size_t)(t->ndim ? t->ndim : 1) * sizeof(Expr *));
  int64_t ext[MLC_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) {
    mins[d] = tir_idx(a, 0);
    ext[d] = t->shape[d];
    if (r->overflow || !r->any || r->full[d]) continue;
    Expr *lo = tir_simplify(a, r->lo[d]);
    Expr *e = tir_simplify(a, tir_add(a, tir_sub(a, r->hi[d], lo), tir_idx(a, 1)));
    int64_t n;
    if (tir_is_const_int(e, &n) && n >= 1 && n < t->shape[d]) {
      mins[d] = lo;
      ext[d] = n;
    }
  }
  /* extents of the root axes, then of every derived iter var through the relations (created in order) */
  int base = l->next;
  for (int i = 0; i < op->naxes && l->next < (int)countof(l->ext_iv); i++) {
    l->ext_iv[l->next] = op->axes[i];
    l->ext_val[l->next++] = ext[i];
  }
  for (int i = 0; i < st->nrels && l->next + 2 <= (int)countof(l->ext_iv); i++) {
    TeRelation *rel = &st->rels[i];
    if (rel->kind == REL_SPLIT) {
      int64_t pe = ext_of(l, rel->parent), f = rel->factor;
      l->ext_iv[l->next] = rel->outer;
      l->ext_val[l->next++] = (pe + f - 1) / f;
      l->ext_iv[l->next] = rel->inner;
      l->ext_val[l->next++] = pe < f ? pe : f;
    } else {
      l->ext_iv[l->next] = rel->fused;
      l->ext_val[l->next++] = ext_of(l, rel->outer) * ext_of(l, rel->inner);
    }
  }
  pi->region_min = mins;
  Stmt *prod = lower_compute(l, pi);
  pi->region_min = NULL;
  l->next = base;
  if (!prod) return NULL;
  Buffer *local = tir_buffer(a, logical->name, logical->dtype, t->ndim, ext);
  Relocate rl = {.a = a, .from = logical, .to = local, .min = mins};
  memo_init(&rl.memo, a);
  Stmt *body = tir_seq2(a, prod, inner);
  body = relocate_stmt(&rl, body);
  return tir_allocate(a, local, body);
}

/* ---- extern ops: rebind their placeholder buffers ---- */

static Buffer *rebound(Lower *l, Buffer *b) {
  for (int i = 0; i < l->nbind; i++)
    if (l->bind_from[i] == b) return l->bind_to[i];
  return b;
}

static Expr *rebind_expr(void *ctx, Expr *e) {
  Lower *l = ctx;
  if (e->kind == E_TENSOR || e->kind == E_REDUCE) return lower_reads(l, e);
  Expr *e1 = tir_expr_map_children(l->a, e, rebind_expr, ctx);
  if (e1->kind == E_LOAD) {
    Buffer *b = rebound(l, e1->load.buf);
    if (b != e1->load.buf) return tir_load(l->a, b, e1->load.n, e1->load.idx);
  }
  return e1;
}

static Stmt *rebind_stmt(void *ctx, Stmt *s) {
  Lower *l = ctx;
  Stmt *s1 = tir_stmt_map_children(l->a, s, rebind_expr, rebind_stmt, ctx);
  if (s1 && s1->kind == S_STORE) {
    Buffer *b = rebound(l, s1->store.buf);
    if (b != s1->store.buf) return tir_store(l->a, b, s1->store.n, s1->store.idx, s1->store.value);
  }
  return s1;
}

static Stmt *lower_extern(Lower *l, StageInfo *si) {
  TeOp *op = si->op;
  if (!op->body_stmt) {
    diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: extern '%s' has no body", op->name);
    return NULL;
  }
  int n = op->ninputs + op->noutputs;
  l->nbind = n;
  l->bind_from = arena_alloc(l->a, (size_t)(n ? n : 1) * sizeof(Buffer *));
  l->bind_to = arena_alloc(l->a, (size_t)(n ? n : 1) * sizeof(Buffer *));
  for (int i = 0; i < op->ninputs; i++) {
    StageInfo *in = info_of(l, op->inputs[i]->op);
    if (!in || in->inlined || !in->bufs) {
      diag_set(l->d, MLC_ERR_INTERNAL, "te_lower: extern '%s': input '%s' has no buffer", op->name,
               op->inputs[i]->op->name);
      return NULL;
    }
    l->bind_from[i] = op->in_bufs[i];
    l->bind_to[i] = in->bufs[op->inputs[i]->value_index];
  }
  for (int i = 0; i < op->noutputs; i++) {
    l->bind_from[op->ninputs + i] = op->out_bufs[i];
    l->bind_to[op->ninputs + i] = si->bufs[i];
  }
  Stmt *s = rebind_stmt(l, op->body_stmt);
  l->nbind = 0;
  return s;
}

/* ---- driver ---- */

static const char *buf_name(Lower *l, TeTensor *t) {
  return t->op->noutputs > 1 ? arena_printf(l->a, "%s_%d", t->op->name, t->value_index) : t->op->name;
}

TirFunc *te_lower(TeCtx *c, TeSchedule *s, const char *name, int nargs, TeTensor **args, Diag *d) {
  Arena *a = c->arena;
  Lower l = {.c = c, .a = a, .d = d, .n = s->nstages};
  memo_init(&l.reads, a);
  l.info = arena_alloc(a, (size_t)(s->nstages ? s->nstages : 1) * sizeof(StageInfo));
  for (int i = 0; i < s->nstages; i++) {
    TeStage *st = s->stages[i];
    const StageImpl *impl = (const StageImpl *)st;
    if (impl->error) {
      diag_set(d, MLC_ERR_INTERNAL, "te_lower '%s': schedule error: %s", name, impl->error);
      return NULL;
    }
    l.info[i].st = st;
    l.info[i].op = st->op;
  }
  TirFunc *f = arena_alloc(a, sizeof(TirFunc));
  f->name = arena_strdup(a, name);
  f->nparams = nargs;
  f->params = arena_alloc(a, (size_t)(nargs ? nargs : 1) * sizeof(Buffer *));
  /* 1. buffers of the arguments */
  for (int i = 0; i < nargs; i++) {
    TeTensor *t = args[i];
    for (int j = 0; j < i; j++)
      if (args[j] == t) {
        diag_set(d, MLC_ERR_INTERNAL, "te_lower '%s': tensor '%s' is passed twice", name, t->op->name);
        return NULL;
      }
    Buffer *b = tir_buffer(a, buf_name(&l, t), t->dtype, t->ndim, t->shape);
    f->params[i] = b;
    StageInfo *si = info_of(&l, t->op);
    if (si) {
      if (!si->bufs) si->bufs = arena_alloc(a, (size_t)t->op->noutputs * sizeof(Buffer *));
      si->bufs[t->value_index] = b;
    }
  }
  /* which stages really inline */
  for (int i = 0; i < l.n; i++) {
    StageInfo *si = &l.info[i];
    si->inlined = si->st->attach == ATTACH_INLINE && si->op->kind == TE_COMPUTE && si->op->nreduce == 0 &&
                  !si->bufs && si->op->body && si->op->body->kind != E_REDUCE;
    si->attached = si->st->attach == ATTACH_AT && si->op->kind == TE_COMPUTE && si->op->noutputs == 1 && !si->bufs;
    if (si->st->attach == ATTACH_AT && !si->attached) {
      diag_set(d, MLC_ERR_UNSUPPORTED, "te_lower '%s': stage '%s' cannot be attached (compute_at needs a "
               "single-output compute that is not a kernel argument)", name, si->op->name);
      return NULL;
    }
    for (int j = 0; j < l.n && si->inlined; j++) {
      TeOp *u = l.info[j].op;
      if (u->kind != TE_EXTERN) continue;
      for (int k = 0; k < u->ninputs; k++)
        if (u->inputs[k]->op == si->op) si->inlined = false;
    }
  }
  /* scratch buffers; placeholders must be arguments */
  for (int i = 0; i < l.n; i++) {
    StageInfo *si = &l.info[i];
    if (si->op->kind == TE_PLACEHOLDER) {
      if (!si->bufs) {
        diag_set(d, MLC_ERR_INTERNAL, "te_lower '%s': placeholder '%s' is read but is not a kernel argument", name,
                 si->op->name);
        return NULL;
      }
      continue;
    }
    if (si->inlined) continue;
    if (!si->bufs) si->bufs = arena_alloc(a, (size_t)si->op->noutputs * sizeof(Buffer *));
    for (int k = 0; k < si->op->noutputs; k++)
      if (!si->bufs[k]) {
        TeTensor *t = si->op->outputs[k];
        si->bufs[k] = tir_buffer(a, buf_name(&l, t), t->dtype, t->ndim, t->shape);
        if (!si->attached) vec_push(a, &l.allocs, si->bufs[k]);
      }
  }
  /* 2-5. one nest per root stage, producers first */
  Stmt **parts = arena_alloc(a, (size_t)(l.n ? l.n : 1) * sizeof(Stmt *));
  int np = 0;
  for (int i = 0; i < l.n && diag_ok(d); i++) {
    StageInfo *si = &l.info[i];
    if (si->op->kind == TE_PLACEHOLDER || si->inlined || si->attached) continue;
    Stmt *st = si->op->kind == TE_COMPUTE ? lower_compute(&l, si) : lower_extern(&l, si);
    if (!diag_ok(d)) break;
    parts[np++] = st;
  }
  for (int i = 0; i < l.n && diag_ok(d); i++)
    if (l.info[i].attached && !l.info[i].emitted)
      diag_set(d, MLC_ERR_UNSUPPORTED, "te_lower '%s': stage '%s' is attached to loop '%s' of stage '%s', which is "
               "not lowered as a loop nest", name, l.info[i].op->name, l.info[i].st->attach_iv->var->name,
               l.info[i].st->attach_parent->op->name);
  if (!diag_ok(d)) return NULL;
  Stmt *body = tir_seq(a, np, parts);
  for (int i = l.allocs.n - 1; i >= 0; i--) body = tir_allocate(a, l.allocs.v[i], body);
  /* 6. */
  f->body = tir_simplify_stmt(a, body);
  /* 8. */
  bool peeled = false;
  Stmt *p = tir_peel_guarded_loops(a, f->body, &peeled);
  if (peeled) f->body = tir_simplify_stmt(a, p);
  /* 9. */
  bool split = false;
  Stmt *q = tir_partition_pad_loops(a, f->body, &split);
  if (split) f->body = tir_simplify_stmt(a, q);
  /* 10. */
  for (int i = 0; i < l.n; i++) {
    TeStage *st = l.info[i].st;
    StageInfo *ti = st->prefetch ? info_of(&l, st->prefetch->op) : NULL;
    if (ti && ti->bufs && !ti->inlined && ti->bufs[st->prefetch->value_index])
      f->body = tir_inject_prefetch(a, f->body, st->prefetch_iv->var, ti->bufs[st->prefetch->value_index],
                                    st->prefetch_ahead, NULL);
  }
  return f;
}
