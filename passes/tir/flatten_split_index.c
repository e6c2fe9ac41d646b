/* flatten_split_index.c: buffer accesses whose index tuple splits one fused loop index back into two axes
 * (buf[.., floordiv(x, W), floormod(x, W)], from a schedule that fused H x W and tiled the result) become
 * one flat index, simplified: ((.. * H + floordiv(x, W)) * W + floormod(x, W)) folds back into (.. * H * W + x)
 * (src/tir/simplify.c merges the div/mod pair). Codegen addresses a one-index access as the flat element
 * offset, and once vectorized x is a unit ramp: one contiguous vector load or store instead of a gather or a
 * scatter whose lanes cross rows (a 16-lane vector over a 56-wide row). An access is rewritten only when
 * the flat form has fewer div/mod operations than the tuple, so every other access keeps its tuple. */
#include "passes/tir/tir_passes.h"
#include "tir/mutate.h"

typedef struct FlatCtx {
  Arena *a;
  ExprMemo memo;
} FlatCtx;

static int count_divmod(const Expr *e) {
  if (!e) return 0;
  switch (e->kind) {
  case E_INT: case E_FLOAT: case E_VAR: return 0;
  case E_FLOORDIV: case E_FLOORMOD: return 1 + count_divmod(e->op.a) + count_divmod(e->op.b);
  case E_ADD: case E_SUB: case E_MUL: case E_MIN: case E_MAX: /* min/max: a clamped index (padding reads) */
    return count_divmod(e->op.a) + count_divmod(e->op.b);
  default: return 1000; /* anything else: never worth flattening */
  }
}

/* the flat index of an access, or NULL when it keeps its tuple */
static Expr *flat_index(FlatCtx *c, const Buffer *b, int n, Expr *const *idx) {
  if (n < 2 || n != b->ndim) return NULL;
  int before = 0;
  for (int i = 0; i < n; i++) {
    if (idx[i]->lanes != 1 || !dtype_is_int(idx[i]->dtype)) return NULL;
    before += count_divmod(idx[i]);
  }
  if (before == 0 || before >= 1000) return NULL;
  Expr *flat = idx[0];
  for (int i = 1; i < n; i++)
    flat = tir_add(c->a, tir_mul(c->a, flat, tir_int(c->a, flat->dtype, b->shape[i])), idx[i]);
  flat = tir_simplify(c->a, flat);
  return count_divmod(flat) < before ? flat : NULL;
}

static Expr *fl_expr(void *ctx, Expr *e) {
  FlatCtx *c = ctx;
  if (!e) return e;
  Expr *m = memo_get(&c->memo, e);
  if (m) return m;
  Expr *r = tir_expr_map_children(c->a, e, fl_expr, ctx);
  if (r->kind == E_LOAD) {
    Expr *f = flat_index(c, r->load.buf, r->load.n, r->load.idx);
    if (f) r = tir_load(c->a, r->load.buf, 1, &f);
  }
  memo_put(&c->memo, e, r);
  return r;
}

static Stmt *fl_stmt(void *ctx, Stmt *s) {
  FlatCtx *c = ctx;
  if (!s) return s;
  Stmt *r = tir_stmt_map_children(c->a, s, fl_expr, fl_stmt, ctx);
  if (r->kind == S_STORE) {
    Expr *f = flat_index(c, r->store.buf, r->store.n, r->store.idx);
    if (f) r = tir_store(c->a, r->store.buf, 1, &f, r->store.value);
  }
  return r;
}

Stmt *tir_flatten_split_index(Arena *a, Stmt *s) {
  if (!s) return s;
  FlatCtx c = {.a = a};
  memo_init(&c.memo, a);
  return fl_stmt(&c, s);
}

void tir_flatten_split_index_func(Arena *a, TirFunc *f) {
  if (f) f->body = tir_flatten_split_index(a, f->body);
}
