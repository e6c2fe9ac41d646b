/* LowerEinsum: a two-operand einsum that is a (batched) matrix product becomes one nn.batch_matmul (nn.matmul
 * without batch labels) between the transposes and reshapes that line its operands up, as ONNX Runtime and
 * numpy's tensordot path evaluate it. It then runs on the register-blocked GEMM templates (and a constant
 * operand is packed by AlterOpLayout) instead of the generic op's reduction loop: MaxViT's attention einsums
 * "BGHID,BGHJD->BGHIJ" are plain batched products.
 *
 * The labels split into batch X (both operands and the output), contracted K (both operands, not the
 * output), and the free labels P of A and Q of B (one operand and the output). The product is
 *     A'[X..., M, K] x B'[X..., K, N] -> [X..., M, N]       M = |P|, N = |Q|, K = |K| (products of extents)
 * with X, P and Q in their output order and K in A's order. A already in the order [X, K, P] is read through
 * transpose_a instead of being transposed (B is always transposed to [X, K, Q], see lower()); reshapes merge P, Q and K
 * (a missing group is an extent of 1; without batch labels P's dims stay, as the matmul fuses its leading
 * axes into the GEMM rows); a transpose of the result gives the output's label order. Transposes
 * and reshapes that change nothing are not made. A batch label of extent 1 in one operand broadcasts, as
 * nn.batch_matmul's batch dims do.
 *
 * Left to the generic op: one or three or more operands, a label repeated within an operand (a diagonal), a
 * label of one operand missing from the output (summed out), other broadcasting, and non-float dtypes (whose
 * accumulation the matmul does not share). */
#include <string.h>
#include "passes/graph/passes.h"
#include "topi/topi.h"

typedef struct Lower {
  Graph *g;
  Node *n; /* the einsum */
  Diag *d;
} Lower;

static Value *add_node(Lower *w, const char *op, const char *suffix, Value **ins, int nin, Node **out) {
  Node *n = ir_node_new(w->g, ir_op_find(op), arena_printf(w->g->arena, "%s_%s", w->n->name, suffix),
                        w->n->op_type, w->n->opset, ins, nin, 1);
  *out = n;
  return n->outputs[0];
}

static Value *transpose(Lower *w, Value *v, const int64_t *perm, const char *suffix) {
  bool identity = true;
  for (int i = 0; i < v->type.ndim; i++) identity &= perm[i] == i;
  if (identity) return v;
  Node *n;
  add_node(w, "transpose", suffix, &v, 1, &n);
  ir_set_ints(w->g, n, "axes", perm, v->type.ndim);
  return ir_infer_node(w->g, n, w->d) ? NULL : n->outputs[0];
}

static Value *reshape(Lower *w, Value *v, int ndim, const int64_t *shape, const char *suffix) {
  if (!v) return NULL;
  if (v->type.ndim == ndim && !memcmp(v->type.dims, shape, sizeof(int64_t) * (size_t)ndim)) return v;
  Node *n;
  add_node(w, "reshape", suffix, &v, 1, &n);
  ir_set_ints(w->g, n, "newshape", shape, ndim);
  return ir_infer_node(w->g, n, w->d) ? NULL : n->outputs[0];
}

static int find(const int *labels, int n, int l) {
  for (int i = 0; i < n; i++)
    if (labels[i] == l) return i;
  return -1;
}

static bool same(const int *a, const int *b, int n) { return !memcmp(a, b, sizeof(int) * (size_t)n); }

/* Lines operand v (labels lab, rank r) up as [X, G1, G2] (one of the two orders o0 / o1 of its groups, which
 * transpose_* selects), merged to [X extents of v..., prod G1, prod G2]. *flip says which order was used.
 * With rows (A without batch labels, in order [P, K]), P's dims stay: [P..., prod K]. */
static Value *line_up(Lower *w, Value *v, const int *lab, int r, int nx, const int *o0, const int *o1, int n1,
                      int n2, bool rows, bool *flip, const char *suffix) {
  *flip = o1 && !same(lab, o0, r) && same(lab, o1, r);
  const int *order = *flip ? o1 : o0;
  int64_t perm[MLC_MAX_DIMS];
  for (int i = 0; i < r; i++) perm[i] = find(lab, r, order[i]);
  Value *t = transpose(w, v, perm, arena_printf(w->g->arena, "%s_perm", suffix));
  if (!t) return NULL;
  int64_t shape[MLC_MAX_DIMS];
  int first = *flip ? n2 : n1; /* the dims of the group that comes first in t */
  const char *name = arena_printf(w->g->arena, "%s_merge", suffix);
  if (rows && !*flip && n1 > 1) { /* [P..., K]: the matmul fuses P into its rows */
    memcpy(shape, t->type.dims, sizeof(int64_t) * (size_t)n1);
    shape[n1] = 1;
    for (int i = n1; i < r; i++) shape[n1] *= t->type.dims[i];
    return reshape(w, t, n1 + 1, shape, name);
  }
  for (int i = 0; i < nx; i++) shape[i] = t->type.dims[i];
  shape[nx] = shape[nx + 1] = 1;
  for (int i = nx; i < r; i++) shape[i < nx + first ? nx : nx + 1] *= t->type.dims[i];
  return reshape(w, t, nx + 2, shape, name);
}

/* Rewrites w->n (see the file comment): the value that replaces its output, NULL when it does not apply or
 * a new node failed (w->d says). */
static Value *lower(Lower *w) {
  Node *n = w->n;
  if (n->ninputs != 2 || !n->inputs[0] || !n->inputs[1]) return NULL;
  mlc_dtype dt = n->inputs[0]->type.dtype;
  if (dt != MLC_F32 && dt != MLC_F64 && dt != MLC_F16 && dt != MLC_BF16) return NULL;
  TopiEinsum e;
  Diag quiet = {0};
  if (topi_einsum_parse(n, &e, &quiet) != MLC_OK) return NULL;
  const int *la = e.lab[0], *lb = e.lab[1];
  int ra = e.rank[0], rb = e.rank[1];
  int x[MLC_MAX_DIMS], p[MLC_MAX_DIMS], q[MLC_MAX_DIMS], k[MLC_MAX_DIMS], nx = 0, np = 0, nq = 0, nk = 0;
  for (int i = 0; i < 2; i++) {
    const int *lab = e.lab[i];
    const Value *v = n->inputs[i];
    for (int j = 0; j < e.rank[i]; j++) {
      if (find(lab, j, lab[j]) >= 0) return NULL; /* a diagonal */
      bool other = find(e.lab[1 - i], e.rank[1 - i], lab[j]) >= 0, out = find(e.out, e.nout, lab[j]) >= 0;
      if (!out && !other) return NULL;                                     /* summed out of one operand */
      if (v->type.dims[j] != e.size[lab[j]] && !(other && out)) return NULL; /* broadcast off the batch */
    }
  }
  for (int j = 0; j < e.nout; j++) {
    int l = e.out[j];
    bool ina = find(la, ra, l) >= 0, inb = find(lb, rb, l) >= 0;
    if (ina && inb) x[nx++] = l;
    else if (ina) p[np++] = l;
    else q[nq++] = l;
  }
  for (int j = 0; j < ra; j++)
    if (find(e.out, e.nout, la[j]) < 0) k[nk++] = la[j];
  /* a contracted label of extent 1 on one side would broadcast: the generic op handles it */
  for (int j = 0; j < nk; j++)
    if (n->inputs[0]->type.dims[find(la, ra, k[j])] != n->inputs[1]->type.dims[find(lb, rb, k[j])]) return NULL;
  if (nx + np + nq != e.nout || nx + np + nk != ra || nx + nq + nk != rb) return NULL;
  int a0[MLC_MAX_DIMS], a1[MLC_MAX_DIMS], b0[MLC_MAX_DIMS];
  memcpy(a0, x, sizeof(int) * (size_t)nx), memcpy(a1, x, sizeof(int) * (size_t)nx);
  memcpy(b0, x, sizeof(int) * (size_t)nx);
  memcpy(a0 + nx, p, sizeof(int) * (size_t)np), memcpy(a0 + nx + np, k, sizeof(int) * (size_t)nk);
  memcpy(a1 + nx, k, sizeof(int) * (size_t)nk), memcpy(a1 + nx + nk, p, sizeof(int) * (size_t)np);
  memcpy(b0 + nx, k, sizeof(int) * (size_t)nk), memcpy(b0 + nx + nk, q, sizeof(int) * (size_t)nq);
  bool ta, tb;
  Value *a = line_up(w, n->inputs[0], la, ra, nx, a0, a1, np, nk, nx == 0, &ta, "a");
  /* B is never read transposed: the GEMM templates load its rows [K, N] as vectors along N, which
   * transpose_b would turn into gathers; a transpose of B costs one pass over it instead */
  Value *b = line_up(w, n->inputs[1], lb, rb, nx, b0, NULL, nk, nq, false, &tb, "b");
  if (!a || !b) return NULL;
  Value *ins[2] = {a, b};
  Node *mm;
  Value *y = add_node(w, a->type.ndim > 2 ? "nn.batch_matmul" : "nn.matmul", "matmul", ins, 2, &mm);
  ir_set_int(w->g, mm, "transpose_a", ta);
  ir_set_int(w->g, mm, "transpose_b", tb);
  if (ir_infer_node(w->g, mm, w->d)) return NULL;
  /* [X, M, N] -> [X, P..., Q...] -> the output's order */
  int64_t shape[MLC_MAX_DIMS], perm[MLC_MAX_DIMS];
  int mid[MLC_MAX_DIMS];
  for (int i = 0; i < nx; i++) shape[i] = e.size[x[i]], mid[i] = x[i];
  for (int i = 0; i < np; i++) shape[nx + i] = e.size[p[i]], mid[nx + i] = p[i];
  for (int i = 0; i < nq; i++) shape[nx + np + i] = e.size[q[i]], mid[nx + np + i] = q[i];
  y = reshape(w, y, e.nout, shape, "split");
  for (int j = 0; j < e.nout; j++) perm[j] = find(mid, e.nout, e.out[j]);
  if (y) y = transpose(w, y, perm, "out");
  if (y && !tt_equal(&y->type, &n->outputs[0]->type)) {
    diag_set(w->d, MLC_ERR_INTERNAL, "LowerEinsum: node '%s' would change its output type", n->name);
    return NULL;
  }
  return y;
}

static Value *rewrite(Graph *g, Node *n, const PassOptions *opt, Diag *d) {
  (void)opt;
  if (strcmp(n->op->name, "einsum")) return NULL;
  Lower w = {.g = g, .n = n, .d = d};
  return lower(&w);
}

mlc_status pass_lower_einsum(Graph *g, const PassOptions *opt, Diag *d) { return pass_rewrite_outputs(g, opt, rewrite, d); }
