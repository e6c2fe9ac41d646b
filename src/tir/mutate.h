/* Private to src/tir and src/te: generic one-level mutators (defined in substitute.c).
 *
 * tir_expr_map_children rebuilds e with every direct child expression replaced by f(ctx, child), through the
 * folding constructors; it returns e itself when no child changed (the mutator rule of tir.h).
 * tir_stmt_map_children does the same for a statement's child expressions (fe) and statements (fs). */
#ifndef MLC_TIR_MUTATE_H
#define MLC_TIR_MUTATE_H
#include "tir/tir.h"

typedef Expr *(*TirExprMap)(void *ctx, Expr *e);
typedef Stmt *(*TirStmtMap)(void *ctx, Stmt *s);
Expr *tir_expr_map_children(Arena *a, Expr *e, TirExprMap f, void *ctx);
Stmt *tir_stmt_map_children(Arena *a, Stmt *s, TirExprMap fe, TirStmtMap fs, void *ctx);
/* the TirExprMap that keeps every expression: for statement-only rewrites through tir_stmt_map_children */
Expr *tir_keep_expr(void *ctx, Expr *e);
/* structural equality of expressions (vars and buffers by identity) */
bool tir_expr_equal(const Expr *x, const Expr *y);

/* Pointer-keyed memo (open addressing in the arena) so that mutators over expression DAGs visit each shared
 * node once instead of once per path. Bumping gen empties it in O(1) (used when simplifier bounds change). */
typedef struct ExprMemo {
  Arena *a;
  int cap, n;
  unsigned gen;
  const Expr **keys;
  Expr **vals;
  unsigned *gens;
} ExprMemo;
void memo_init(ExprMemo *m, Arena *a);
Expr *memo_get(const ExprMemo *m, const Expr *k); /* NULL if absent */
void memo_put(ExprMemo *m, const Expr *k, Expr *v);
void memo_clear(ExprMemo *m);

#endif
