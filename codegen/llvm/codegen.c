/* codegen/llvm/codegen.c: the codegen context, TIR functions and statements -> LLVM IR.
 *
 * Each TirFunc becomes two functions: the exported kernel `i32 @name(ptr %buffers, ptr %dims, ptr %ctx)`,
 * which loads every buffer pointer once and calls `@name.impl(ptr noalias align 64 %p0, ..., ptr %ctx)`, an
 * internal always-inline function holding the body. Inlining turns the `noalias` parameters into scoped alias
 * metadata, which is how LLVM learns that the kernel's buffers do not overlap (the runtime hands out distinct,
 * 64-byte aligned buffers). Loops are phi-based (header/body/latch/exit). FOR_VECTORIZED loops carry
 * llvm.loop.vectorize.enable/width metadata (forcing also allows reordering float reductions); FOR_UNROLLED
 * loops with a small constant extent are unrolled here, others get llvm.loop.unroll.full. FOR_PARALLEL loops
 * are outlined: the free variables and buffers of the body are packed into a stack closure, the body becomes
 * `i32 @name.parN(i64 begin, i64 end, ptr closure)` (which unpacks the closure and calls a noalias .impl like
 * the kernel), and the kernel calls ctx->parallel_launch(ctx, body, closure, extent), or the body directly
 * when ctx or its launcher is NULL; a non-zero result is returned after freeing live scratch. Parallel loops
 * inside a parallel body run serially. S_ALLOCATE scratch up to 64 KiB is an entry-block alloca aligned to 64;
 * larger scratch comes from aligned_alloc and is freed at the end of its scope and on every early return (the
 * kernel returns -1 when that allocation fails). */
#include <stdlib.h>
#include <string.h>
#include "codegen/llvm/cg_internal.h"
#include "passes/tir/vectorize.h"

#define CG_STACK_SCRATCH_MAX MLC_STACK_SCRATCH_MAX
#define CG_UNROLL_MAX 32

LLVMValueRef cg_const_i64(CgModule *m, int64_t v) { return LLVMConstInt(m->t_i64, (unsigned long long)v, 1); }

/* ---- module ---- */

CgModule *cg_module_new(const Target *t, const char *name, Diag *d) {
  cg_init_llvm();
  LLVMTargetMachineRef tm = cg_create_tm(t, false, d);
  if (!tm) return NULL;
  CgModule *m = calloc(1, sizeof *m);
  if (!m) {
    LLVMDisposeTargetMachine(tm);
    diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  m->target = *t;
  m->tm = tm;
  m->d = d;
  m->arena = arena_new();
  m->tsc = LLVMOrcCreateNewThreadSafeContext();
  m->ctx = LLVMOrcThreadSafeContextGetContext(m->tsc);
  LLVMContextSetDiagnosticHandler(m->ctx, cg_diag_handler, m);
  m->mod = LLVMModuleCreateWithNameInContext(name ? name : "mlc", m->ctx);
  LLVMSetTarget(m->mod, t->triple);
  m->td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m->mod, m->td);
  m->b = LLVMCreateBuilderInContext(m->ctx);
  m->t_void = LLVMVoidTypeInContext(m->ctx);
  m->t_i1 = LLVMInt1TypeInContext(m->ctx);
  m->t_i8 = LLVMInt8TypeInContext(m->ctx);
  m->t_i16 = LLVMInt16TypeInContext(m->ctx);
  m->t_i32 = LLVMInt32TypeInContext(m->ctx);
  m->t_i64 = LLVMInt64TypeInContext(m->ctx);
  m->t_half = LLVMHalfTypeInContext(m->ctx);
  m->t_f32 = LLVMFloatTypeInContext(m->ctx);
  m->t_f64 = LLVMDoubleTypeInContext(m->ctx);
  m->t_ptr = LLVMPointerTypeInContext(m->ctx, 0);
  LLVMTypeRef kp[3] = {m->t_ptr, m->t_ptr, m->t_ptr};
  m->t_kernel = LLVMFunctionType(m->t_i32, kp, 3, 0);
  LLVMTypeRef bp[3] = {m->t_i64, m->t_i64, m->t_ptr};
  m->t_body = LLVMFunctionType(m->t_i32, bp, 3, 0);
  LLVMTypeRef lp[4] = {m->t_ptr, m->t_ptr, m->t_ptr, m->t_i64};
  m->t_launch = LLVMFunctionType(m->t_i32, lp, 4, 0);
  m->md_loop = LLVMGetMDKindIDInContext(m->ctx, "llvm.loop", 9);
  return m;
}

void cg_module_free(CgModule *m) {
  if (!m) return;
  if (m->b) LLVMDisposeBuilder(m->b);
  if (m->mod) LLVMDisposeModule(m->mod);
  for (int i = 0; i < m->nparts; i++) LLVMDisposeMemoryBuffer(m->part_bc[i]);
  if (m->tsc) LLVMOrcDisposeThreadSafeContext(m->tsc);
  if (m->td) LLVMDisposeTargetData(m->td);
  if (m->tm) LLVMDisposeTargetMachine(m->tm);
  arena_free(m->arena);
  free(m);
}

/* ---- functions ---- */

static void add_enum_attr(CgModule *m, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(m->ctx, kind, val));
}

static void add_str_attr(CgModule *m, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(m->ctx, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

typedef struct CgFnList FnList; /* cg_internal.h */

static LLVMValueRef add_fn(CgModule *m, FnList *made, const char *name, LLVMTypeRef ft, bool internal) {
  LLVMValueRef fn = LLVMAddFunction(m->mod, name, ft);
  if (internal) LLVMSetLinkage(fn, LLVMInternalLinkage);
  add_enum_attr(m, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  if (m->target.cpu[0]) add_str_attr(m, fn, "target-cpu", m->target.cpu);
  if (m->target.features[0]) add_str_attr(m, fn, "target-features", m->target.features);
  vec_push(m->arena, made, fn);
  return fn;
}

static void mark_noalias(CgModule *m, LLVMValueRef fn, unsigned param) {
  add_enum_attr(m, fn, param + 1, "noalias", 0);
  add_enum_attr(m, fn, param + 1, "align", 64);
}

static void fn_begin(CgModule *m, CgFn *F, LLVMValueRef fn, const char *kname) {
  memset(F, 0, sizeof *F);
  F->fn = fn;
  F->kname = kname;
  F->entry = LLVMAppendBasicBlockInContext(m->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(m->b, LLVMAppendBasicBlockInContext(m->ctx, fn, "body"));
  m->fn = F;
}

static void fn_finish(CgModule *m, CgFn *F) {
  LLVMBuildRet(m->b, LLVMConstInt(m->t_i32, 0, 0));
  LLVMPositionBuilderAtEnd(m->b, F->entry);
  LLVMBuildBr(m->b, LLVMGetNextBasicBlock(F->entry));
}

static LLVMValueRef entry_alloca(CgModule *m, LLVMTypeRef t, unsigned align) {
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(m->ctx);
  LLVMPositionBuilderAtEnd(eb, m->fn->entry);
  LLVMValueRef a = LLVMBuildAlloca(eb, t, "");
  LLVMSetAlignment(a, align);
  LLVMDisposeBuilder(eb);
  return a;
}

static LLVMValueRef new_block(CgModule *m, const char *name) {
  return (LLVMValueRef)LLVMAppendBasicBlockInContext(m->ctx, m->fn->fn, name);
}
#define BB(x) ((LLVMBasicBlockRef)(x))

/* if (rc != 0) { free live scratch; return rc; } and continue in a fresh block. */
static void return_if_error(CgModule *m, LLVMValueRef rc) {
  LLVMBasicBlockRef fail = BB(new_block(m, "fail")), cont = BB(new_block(m, "ok"));
  LLVMBuildCondBr(m->b, LLVMBuildICmp(m->b, LLVMIntNE, rc, LLVMConstInt(m->t_i32, 0, 0), ""), fail, cont);
  LLVMPositionBuilderAtEnd(m->b, fail);
  LLVMTypeRef ft = LLVMFunctionType(m->t_void, &m->t_ptr, 1, 0);
  LLVMValueRef freefn = LLVMGetNamedFunction(m->mod, "free");
  if (m->fn->heap.n && !freefn) freefn = LLVMAddFunction(m->mod, "free", ft);
  for (int i = m->fn->heap.n - 1; i >= 0; i--) LLVMBuildCall2(m->b, ft, freefn, &m->fn->heap.v[i], 1, "");
  LLVMBuildRet(m->b, rc);
  LLVMPositionBuilderAtEnd(m->b, cont);
}

/* ---- loops ---- */

static LLVMMetadataRef md_prop(CgModule *m, const char *name, LLVMValueRef val) {
  LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(m->ctx, name, strlen(name)), val ? LLVMValueAsMetadata(val) : NULL};
  return LLVMMDNodeInContext2(m->ctx, ops, val ? 2 : 1);
}

/* A distinct self-referential loop id: !0 = distinct !{!0, props...}. */
static LLVMMetadataRef loop_id(CgModule *m, LLVMMetadataRef *props, int n) {
  LLVMMetadataRef ops[8];
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(m->ctx, NULL, 0);
  ops[0] = tmp;
  for (int i = 0; i < n && i < 7; i++) ops[i + 1] = props[i];
  LLVMMetadataRef node = LLVMMDNodeInContext2(m->ctx, ops, (size_t)(n + 1));
  LLVMMetadataReplaceAllUsesWith(tmp, node);
  return node;
}

/* for (i = start; i < end; ++i) { var = i (+ offset); body } with optional loop metadata on the back edge. */
static mlc_status emit_loop(CgModule *m, Var *var, LLVMValueRef start, LLVMValueRef end, LLVMValueRef offset,
                            const Stmt *body, LLVMMetadataRef md) {
  bool sgn = var->dtype != MLC_U64 && var->dtype != MLC_U32 && var->dtype != MLC_U16 && var->dtype != MLC_U8;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(m->b);
  LLVMBasicBlockRef header = BB(new_block(m, "for.head")), bodyb = BB(new_block(m, "for.body"));
  LLVMBasicBlockRef latch = BB(new_block(m, "for.latch")), exit = BB(new_block(m, "for.end"));
  LLVMBuildBr(m->b, header);
  LLVMPositionBuilderAtEnd(m->b, header);
  LLVMValueRef i = LLVMBuildPhi(m->b, LLVMTypeOf(start), var->name ? var->name : "i");
  LLVMBuildCondBr(m->b, LLVMBuildICmp(m->b, sgn ? LLVMIntSLT : LLVMIntULT, i, end, ""), bodyb, exit);
  LLVMPositionBuilderAtEnd(m->b, bodyb);
  cg_bind(m, false, var, offset ? LLVMBuildNSWAdd(m->b, i, offset, "") : i);
  mlc_status st = cg_stmt(m, body);
  cg_unbind(m, false);
  if (st) return st;
  LLVMBuildBr(m->b, latch);
  LLVMPositionBuilderAtEnd(m->b, latch);
  LLVMValueRef next = LLVMBuildNSWAdd(m->b, i, LLVMConstInt(LLVMTypeOf(i), 1, 0), "");
  LLVMValueRef back = LLVMBuildBr(m->b, header);
  if (md) LLVMSetMetadata(back, m->md_loop, LLVMMetadataAsValue(m->ctx, md));
  LLVMValueRef inv[2] = {start, next};
  LLVMBasicBlockRef inb[2] = {pre, latch};
  LLVMAddIncoming(i, inv, inb, 2);
  LLVMPositionBuilderAtEnd(m->b, exit);
  return MLC_OK;
}

/* Evaluates an expression and converts it to the register type of dtype t (integers only). */
static LLVMValueRef int_value(CgModule *m, const Expr *e, mlc_dtype t) {
  LLVMValueRef v = cg_expr(m, e);
  if (!v) return NULL;
  LLVMTypeRef ty = cg_reg_type(m, t, 1);
  if (!ty || LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMIntegerTypeKind) {
    diag_set(m->d, MLC_ERR_INTERNAL, "codegen: loop bound is not an integer in kernel '%s'", m->fn->kname);
    return NULL;
  }
  unsigned fw = LLVMGetIntTypeWidth(LLVMTypeOf(v)), tw = LLVMGetIntTypeWidth(ty);
  if (fw == tw) return v;
  if (fw > tw) return LLVMBuildTrunc(m->b, v, ty, "");
  bool s = e->dtype == MLC_I8 || e->dtype == MLC_I16 || e->dtype == MLC_I32 || e->dtype == MLC_I64;
  return s ? LLVMBuildSExt(m->b, v, ty, "") : LLVMBuildZExt(m->b, v, ty, "");
}

/* Largest element size stored in s (for the vectorisation width). */
static int max_store_size(const Stmt *s) {
  if (!s) return 0;
  int r = 0, x;
  switch (s->kind) {
  case S_FOR: return max_store_size(s->loop.body);
  case S_STORE: return mlc_dtype_size(s->store.buf->dtype);
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if ((x = max_store_size(s->seq.stmts[i])) > r) r = x;
    return r;
  case S_IF:
    r = max_store_size(s->ifs.then_s);
    x = max_store_size(s->ifs.else_s);
    return x > r ? x : r;
  case S_LET: return max_store_size(s->let.body);
  case S_ALLOCATE: return max_store_size(s->alloc.body);
  default: return 0;
  }
}

/* ---- free variables of a parallel body ---- */

typedef struct Captures {
  VEC(const Var *) vars;
  VEC(const Buffer *) bufs;
} Captures;

static void capture_var(CgModule *m, Captures *c, const Var *v) {
  if (!cg_lookup_var(m, v)) return;
  for (int i = 0; i < c->vars.n; i++)
    if (c->vars.v[i] == v) return;
  vec_push(m->arena, &c->vars, v);
}

static void capture_buf(CgModule *m, Captures *c, const Buffer *b) {
  if (!cg_lookup_buf(m, b)) return;
  for (int i = 0; i < c->bufs.n; i++)
    if (c->bufs.v[i] == b) return;
  vec_push(m->arena, &c->bufs, b);
}

static void collect_expr(CgModule *m, Captures *c, const Expr *e) {
  if (!e) return;
  switch (e->kind) {
  case E_INT: case E_FLOAT: return;
  case E_VAR: capture_var(m, c, e->var); return;
  case E_CALL:
    for (int i = 0; i < e->call.nargs; i++) collect_expr(m, c, e->call.args[i]);
    return;
  case E_LOAD:
    capture_buf(m, c, e->load.buf);
    for (int i = 0; i < e->load.n; i++) collect_expr(m, c, e->load.idx[i]);
    return;
  case E_TENSOR: case E_REDUCE: return; /* rejected when emitted */
  default:
    collect_expr(m, c, e->op.a);
    if (e->kind != E_NOT && e->kind != E_CAST && e->kind != E_BROADCAST) collect_expr(m, c, e->op.b);
    if (e->kind == E_SELECT) collect_expr(m, c, e->op.c);
    return;
  }
}

static void collect_stmt(CgModule *m, Captures *c, const Stmt *s) {
  if (!s) return;
  switch (s->kind) {
  case S_FOR:
    collect_expr(m, c, s->loop.min);
    collect_expr(m, c, s->loop.extent);
    collect_stmt(m, c, s->loop.body);
    return;
  case S_STORE:
    capture_buf(m, c, s->store.buf);
    for (int i = 0; i < s->store.n; i++) collect_expr(m, c, s->store.idx[i]);
    collect_expr(m, c, s->store.value);
    return;
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) collect_stmt(m, c, s->seq.stmts[i]);
    return;
  case S_IF:
    collect_expr(m, c, s->ifs.cond);
    collect_stmt(m, c, s->ifs.then_s);
    collect_stmt(m, c, s->ifs.else_s);
    return;
  case S_LET:
    collect_expr(m, c, s->let.value);
    collect_stmt(m, c, s->let.body);
    return;
  case S_ALLOCATE: collect_stmt(m, c, s->alloc.body); return;
  case S_EVAL: collect_expr(m, c, s->eval.e); return;
  }
}

/* ---- parallel loops ---- */

static mlc_status emit_parallel(CgModule *m, const Stmt *s) {
  CgFn *outer = m->fn;
  Var *var = s->loop.var;
  LLVMTypeRef vty = cg_reg_type(m, var->dtype, 1);
  if (!vty || LLVMGetTypeKind(vty) != LLVMIntegerTypeKind || var->dtype == MLC_BOOL)
    return diag_set(m->d, MLC_ERR_INTERNAL, "codegen: loop variable '%s' is not an integer", var->name);
  LLVMValueRef minv = int_value(m, s->loop.min, var->dtype);
  LLVMValueRef ext = minv ? int_value(m, s->loop.extent, MLC_I64) : NULL;
  if (!ext) return m->d->status;

  Captures cap = {0};
  collect_stmt(m, &cap, s->loop.body);
  int nb = cap.bufs.n, nv = cap.vars.n, nf = nb + nv + 1; /* + the loop's min */
  LLVMTypeRef *ftys = arena_alloc(m->arena, sizeof(LLVMTypeRef) * (size_t)nf);
  LLVMValueRef *fvals = arena_alloc(m->arena, sizeof(LLVMValueRef) * (size_t)nf);
  for (int i = 0; i < nb; i++) ftys[i] = m->t_ptr, fvals[i] = cg_lookup_buf(m, cap.bufs.v[i]);
  for (int i = 0; i < nv; i++) {
    fvals[nb + i] = cg_lookup_var(m, cap.vars.v[i]);
    ftys[nb + i] = LLVMTypeOf(fvals[nb + i]);
  }
  ftys[nf - 1] = vty;
  fvals[nf - 1] = minv;
  LLVMTypeRef clo_t = LLVMStructTypeInContext(m->ctx, ftys, (unsigned)nf, 0);
  LLVMValueRef clo = entry_alloca(m, clo_t, 8);
  for (int i = 0; i < nf; i++) LLVMBuildStore(m->b, fvals[i], LLVMBuildStructGEP2(m->b, clo_t, clo, (unsigned)i, ""));

  LLVMBasicBlockRef resume = LLVMGetInsertBlock(m->b);
  int id = m->noutlined++;
  char *name = arena_printf(m->arena, "%s.par%d", outer->kname, id);
  char *iname = arena_printf(m->arena, "%s.par%d.impl", outer->kname, id);

  /* the body implementation: (i64 begin, i64 end, ptr noalias bufs..., vars..., min) */
  LLVMTypeRef *itys = arena_alloc(m->arena, sizeof(LLVMTypeRef) * (size_t)(nf + 2));
  itys[0] = itys[1] = m->t_i64;
  memcpy(itys + 2, ftys, sizeof(LLVMTypeRef) * (size_t)nf);
  LLVMValueRef impl = add_fn(m, m->made, iname, LLVMFunctionType(m->t_i32, itys, (unsigned)(nf + 2), 0), true);
  add_enum_attr(m, impl, LLVMAttributeFunctionIndex, "alwaysinline", 0);
  for (int i = 0; i < nb; i++) mark_noalias(m, impl, (unsigned)(2 + i));
  CgFn F;
  fn_begin(m, &F, impl, outer->kname);
  F.par_depth = outer->par_depth + 1;
  for (int i = 0; i < nb; i++) cg_bind(m, true, cap.bufs.v[i], LLVMGetParam(impl, (unsigned)(2 + i)));
  for (int i = 0; i < nv; i++) cg_bind(m, false, cap.vars.v[i], LLVMGetParam(impl, (unsigned)(2 + nb + i)));
  LLVMValueRef begin = LLVMGetParam(impl, 0), end = LLVMGetParam(impl, 1);
  if (vty != m->t_i64) {
    begin = LLVMBuildTrunc(m->b, begin, vty, "");
    end = LLVMBuildTrunc(m->b, end, vty, "");
  }
  mlc_status st = emit_loop(m, var, begin, end, LLVMGetParam(impl, (unsigned)(nf + 1)), s->loop.body, NULL);
  if (st) {
    m->fn = outer;
    return st;
  }
  fn_finish(m, &F);

  /* the ABI wrapper: unpack the closure and call the implementation */
  LLVMValueRef body = add_fn(m, m->made, name, m->t_body, true);
  LLVMBuilderRef b = m->b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(m->ctx, body, "entry"));
  LLVMValueRef *args = arena_alloc(m->arena, sizeof(LLVMValueRef) * (size_t)(nf + 2));
  args[0] = LLVMGetParam(body, 0);
  args[1] = LLVMGetParam(body, 1);
  for (int i = 0; i < nf; i++)
    args[2 + i] = LLVMBuildLoad2(b, ftys[i], LLVMBuildStructGEP2(b, clo_t, LLVMGetParam(body, 2), (unsigned)i, ""), "");
  LLVMBuildRet(b, LLVMBuildCall2(b, LLVMGlobalGetValueType(impl), impl, args, (unsigned)(nf + 2), ""));

  /* the launch, back in the enclosing function */
  m->fn = outer;
  LLVMPositionBuilderAtEnd(b, resume);
  LLVMBasicBlockRef check = BB(new_block(m, "par.check")), launch = BB(new_block(m, "par.launch"));
  LLVMBasicBlockRef serial = BB(new_block(m, "par.serial")), join = BB(new_block(m, "par.join"));
  LLVMValueRef nullp = LLVMConstNull(m->t_ptr);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, outer->ctx, nullp, ""), serial, check);
  LLVMPositionBuilderAtEnd(b, check);
  LLVMValueRef fnp = LLVMBuildLoad2(b, m->t_ptr, outer->ctx, "launch"); /* mlc_kernel_ctx field 0 */
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, fnp, nullp, ""), serial, launch);
  LLVMPositionBuilderAtEnd(b, launch);
  LLVMValueRef largs[4] = {outer->ctx, body, clo, ext};
  LLVMValueRef rc1 = LLVMBuildCall2(b, m->t_launch, fnp, largs, 4, "");
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, serial);
  LLVMValueRef sargs[3] = {LLVMConstInt(m->t_i64, 0, 0), ext, clo};
  LLVMValueRef rc2 = LLVMBuildCall2(b, m->t_body, body, sargs, 3, "");
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  LLVMValueRef rc = LLVMBuildPhi(b, m->t_i32, "rc");
  LLVMValueRef rcv[2] = {rc1, rc2};
  LLVMBasicBlockRef rcb[2] = {launch, serial};
  LLVMAddIncoming(rc, rcv, rcb, 2);
  return_if_error(m, rc);
  return MLC_OK;
}

/* ---- statements ---- */

/* Statements a loop body becomes once every loop in it is unrolled, or -1 when it holds a loop that codegen
 * would not unroll (not constant, parallel, GPU-bound) or grows past CG_SMALL_LOOP_BUDGET. */
#define CG_SMALL_LOOP_EXTENT 4
#define CG_SMALL_LOOP_BUDGET 256
static int64_t unrolled_size(const Stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
  case S_FOR: {
    ForKind k = s->loop.for_kind;
    if (k == FOR_PARALLEL || k == FOR_GPU_BLOCK_X || k == FOR_GPU_THREAD_X || s->loop.extent->kind != E_INT) return -1;
    int64_t b = unrolled_size(s->loop.body);
    if (b < 0 || s->loop.extent->ival > CG_SMALL_LOOP_BUDGET) return -1;
    b *= s->loop.extent->ival;
    return b > CG_SMALL_LOOP_BUDGET ? -1 : b;
  }
  case S_SEQ: {
    int64_t t = 0;
    for (int i = 0; i < s->seq.n; i++) {
      int64_t b = unrolled_size(s->seq.stmts[i]);
      if (b < 0 || (t += b) > CG_SMALL_LOOP_BUDGET) return -1;
    }
    return t;
  }
  case S_IF: {
    int64_t a = unrolled_size(s->ifs.then_s), b = unrolled_size(s->ifs.else_s);
    return a < 0 || b < 0 ? -1 : 1 + a + b;
  }
  case S_LET: {
    int64_t b = unrolled_size(s->let.body);
    return b < 0 ? -1 : 1 + b;
  }
  case S_ALLOCATE: return -1;
  default: return 1;
  }
}

/* A serial loop with a tiny constant extent and a small straight-line body (a convolution's kh/kw taps, a
 * pooling window) is unrolled here, as LLVM's full unroller would have done (it runs only when forced; see
 * pipeline_options in emit.c). A nest of such loops gets half the budget: unrolled whole, a register tile's
 * reduction becomes straight-line code whose weight loads are all invariant in the tile loop around it, and
 * LLVM hoists them out of it. SqueezeNet's 3 -> 64 3x3 stem (ic, kh, kw of 3 each around a 6 x 16 tile, 162
 * statements) kept its 54 weight vectors in stack spills and accumulated column after column: 37 GFLOP/s, 1.59
 * ms; with its ic loop kept, 0.76 ms (Zen 3, one thread). ResNet-18/50's kernels whose code changed with it
 * ran the same or up to 6% faster. */
#define CG_SMALL_NEST_BUDGET 128
/* whether s holds a serial loop (a nest of small loops, not one loop over straight-line code) */
static bool has_loop(const Stmt *s) {
  if (!s) return false;
  switch (s->kind) {
  case S_FOR: return s->loop.for_kind == FOR_SERIAL || has_loop(s->loop.body);
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++)
      if (has_loop(s->seq.stmts[i])) return true;
    return false;
  case S_IF: return has_loop(s->ifs.then_s) || has_loop(s->ifs.else_s);
  case S_LET: return has_loop(s->let.body);
  default: return false;
  }
}

static bool small_constant_loop(const Stmt *s) {
  if (s->loop.for_kind != FOR_SERIAL || s->loop.min->kind != E_INT || s->loop.extent->kind != E_INT) return false;
  int64_t n = s->loop.extent->ival, b = n >= 1 && n <= CG_SMALL_LOOP_EXTENT ? unrolled_size(s->loop.body) : -1;
  int64_t budget = has_loop(s->loop.body) ? CG_SMALL_NEST_BUDGET : CG_SMALL_LOOP_BUDGET;
  return b >= 0 && b * n <= budget;
}

static mlc_status emit_for(CgModule *m, const Stmt *s) {
  ForKind k = s->loop.for_kind;
  Var *var = s->loop.var;
  if (k == FOR_PARALLEL && m->fn->par_depth == 0 && m->fn->ctx) return emit_parallel(m, s);
  LLVMTypeRef vty = cg_reg_type(m, var->dtype, 1);
  if (!vty || LLVMGetTypeKind(vty) != LLVMIntegerTypeKind || var->dtype == MLC_BOOL)
    return diag_set(m->d, MLC_ERR_INTERNAL, "codegen: loop variable '%s' is not an integer", var->name);
  const Expr *emin = s->loop.min, *eext = s->loop.extent;
  if ((k == FOR_UNROLLED && emin->kind == E_INT && eext->kind == E_INT && eext->ival <= CG_UNROLL_MAX) ||
      small_constant_loop(s)) {
    for (int64_t i = 0; i < eext->ival; i++) {
      cg_bind(m, false, var, LLVMConstInt(vty, (unsigned long long)(emin->ival + i), 1));
      mlc_status st = cg_stmt(m, s->loop.body);
      cg_unbind(m, false);
      if (st) return st;
    }
    return MLC_OK;
  }
  LLVMValueRef minv = int_value(m, emin, var->dtype);
  LLVMValueRef ext = minv ? int_value(m, eext, var->dtype) : NULL;
  if (!ext) return m->d->status;
  LLVMValueRef end = LLVMBuildNSWAdd(m->b, minv, ext, "");
  LLVMMetadataRef md = NULL, props[2];
  if (k == FOR_UNROLLED) {
    props[0] = md_prop(m, "llvm.loop.unroll.full", NULL);
    md = loop_id(m, props, 1);
  } else if (k == FOR_VECTORIZED) {
    int es = max_store_size(s->loop.body);
    int w = m->target.vector_bytes / (es > 0 ? es : 4);
    if (eext->kind == E_INT)
      while (w > 1 && w > eext->ival) w /= 2;
    int np = 0;
    props[np++] = md_prop(m, "llvm.loop.vectorize.enable", LLVMConstInt(m->t_i1, 1, 0));
    if (w >= 2) props[np++] = md_prop(m, "llvm.loop.vectorize.width", LLVMConstInt(m->t_i32, (unsigned)w, 0));
    md = loop_id(m, props, np);
  }
  return emit_loop(m, var, minv, end, NULL, s->loop.body, md);
}

static mlc_status emit_store(CgModule *m, const Stmt *s) {
  Buffer *buf = s->store.buf;
  LLVMValueRef v = cg_expr(m, s->store.value);
  if (!v) return m->d->status;
  if (s->store.value->dtype != buf->dtype)
    return diag_set(m->d, MLC_ERR_INTERNAL, "codegen: store of %s into %s buffer '%s' in kernel '%s'",
                    mlc_dtype_name(s->store.value->dtype), mlc_dtype_name(buf->dtype), buf->name, m->fn->kname);
  int lanes = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(LLVMTypeOf(v)) : 1;
  bool contig;
  LLVMValueRef addr = cg_address(m, buf, s->store.n, s->store.idx, lanes, &contig);
  if (!addr) return m->d->status;
  LLVMValueRef mv = cg_to_mem(m, v, buf->dtype);
  int es = mlc_dtype_size(buf->dtype);
  unsigned align = es > 0 ? (unsigned)es : 1;
  if (LLVMGetTypeKind(LLVMTypeOf(addr)) == LLVMVectorTypeKind) { /* scatter, lane by lane */
    int al = (int)LLVMGetVectorSize(LLVMTypeOf(addr));
    if (lanes == 1) mv = cg_splat(m, mv, al);
    for (int i = 0; i < al; i++) {
      LLVMValueRef li = LLVMConstInt(m->t_i32, (unsigned)i, 0);
      LLVMValueRef st = LLVMBuildStore(m->b, LLVMBuildExtractElement(m->b, mv, li, ""),
                                       LLVMBuildExtractElement(m->b, addr, li, ""));
      LLVMSetAlignment(st, align);
    }
    return MLC_OK;
  }
  if (lanes > 1 && !contig) /* all lanes to one address: the last one wins */
    mv = LLVMBuildExtractElement(m->b, mv, LLVMConstInt(m->t_i32, (unsigned)(lanes - 1), 0), "");
  LLVMValueRef st = LLVMBuildStore(m->b, mv, addr);
  LLVMSetAlignment(st, align);
  return MLC_OK;
}

static mlc_status emit_allocate(CgModule *m, const Stmt *s) {
  Buffer *buf = s->alloc.buf;
  int es = mlc_dtype_size(buf->dtype);
  if (!cg_mem_type(m, buf->dtype) || es <= 0)
    return diag_set(m->d, MLC_ERR_UNSUPPORTED, "codegen: scratch buffer '%s' has unsupported dtype %s", buf->name,
                    mlc_dtype_name(buf->dtype));
  int64_t n = 1;
  for (int i = 0; i < buf->ndim; i++) {
    if (buf->shape[i] < 0 || (buf->shape[i] && n > INT64_MAX / 64 / buf->shape[i]))
      return diag_set(m->d, MLC_ERR_UNSUPPORTED, "codegen: scratch buffer '%s' has an invalid size", buf->name);
    n *= buf->shape[i];
  }
  int64_t bytes = n * es;
  if (bytes < 1) bytes = 1;
  bool heap = bytes > CG_STACK_SCRATCH_MAX;
  LLVMValueRef p;
  if (!heap) {
    p = entry_alloca(m, LLVMArrayType2(m->t_i8, (uint64_t)bytes), 64);
  } else {
    LLVMTypeRef aty[2] = {m->t_i64, m->t_i64};
    LLVMTypeRef ft = LLVMFunctionType(m->t_ptr, aty, 2, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(m->mod, "aligned_alloc");
    if (!fn) fn = LLVMAddFunction(m->mod, "aligned_alloc", ft);
    LLVMValueRef args[2] = {cg_const_i64(m, 64), cg_const_i64(m, (bytes + 63) / 64 * 64)};
    p = LLVMBuildCall2(m->b, ft, fn, args, 2, buf->name);
    LLVMValueRef isnull = LLVMBuildICmp(m->b, LLVMIntEQ, p, LLVMConstNull(m->t_ptr), "");
    return_if_error(m, LLVMBuildSelect(m->b, isnull, LLVMConstInt(m->t_i32, (unsigned long long)-1, 1),
                                       LLVMConstInt(m->t_i32, 0, 0), ""));
    vec_push(m->arena, &m->fn->heap, p);
  }
  cg_bind(m, true, buf, p);
  mlc_status st = cg_stmt(m, s->alloc.body);
  cg_unbind(m, true);
  if (heap) {
    m->fn->heap.n--;
    if (!st) {
      LLVMTypeRef ft = LLVMFunctionType(m->t_void, &m->t_ptr, 1, 0);
      LLVMValueRef freefn = LLVMGetNamedFunction(m->mod, "free");
      if (!freefn) freefn = LLVMAddFunction(m->mod, "free", ft);
      LLVMBuildCall2(m->b, ft, freefn, &p, 1, "");
    }
  }
  return st;
}

mlc_status cg_stmt(CgModule *m, const Stmt *s) {
  if (!s) return MLC_OK;
  switch (s->kind) {
  case S_FOR: return emit_for(m, s);
  case S_STORE: return emit_store(m, s);
  case S_SEQ:
    for (int i = 0; i < s->seq.n; i++) {
      mlc_status st = cg_stmt(m, s->seq.stmts[i]);
      if (st) return st;
    }
    return MLC_OK;
  case S_IF: {
    LLVMValueRef c = cg_expr(m, s->ifs.cond);
    if (!c) return m->d->status;
    if (LLVMTypeOf(c) != m->t_i1) {
      if (LLVMGetTypeKind(LLVMTypeOf(c)) != LLVMIntegerTypeKind)
        return diag_set(m->d, MLC_ERR_INTERNAL, "codegen: if condition is not a scalar bool in kernel '%s'", m->fn->kname);
      c = LLVMBuildICmp(m->b, LLVMIntNE, c, LLVMConstNull(LLVMTypeOf(c)), "");
    }
    LLVMBasicBlockRef then_b = BB(new_block(m, "if.then")), end = BB(new_block(m, "if.end"));
    LLVMBasicBlockRef else_b = s->ifs.else_s ? BB(new_block(m, "if.else")) : end;
    LLVMBuildCondBr(m->b, c, then_b, else_b);
    LLVMPositionBuilderAtEnd(m->b, then_b);
    mlc_status st = cg_stmt(m, s->ifs.then_s);
    if (st) return st;
    LLVMBuildBr(m->b, end);
    if (s->ifs.else_s) {
      LLVMPositionBuilderAtEnd(m->b, else_b);
      if ((st = cg_stmt(m, s->ifs.else_s))) return st;
      LLVMBuildBr(m->b, end);
    }
    LLVMPositionBuilderAtEnd(m->b, end);
    return MLC_OK;
  }
  case S_LET: {
    LLVMValueRef v = cg_expr(m, s->let.value);
    if (!v) return m->d->status;
    cg_bind(m, false, s->let.var, v);
    mlc_status st = cg_stmt(m, s->let.body);
    cg_unbind(m, false);
    return st;
  }
  case S_ALLOCATE: return emit_allocate(m, s);
  case S_EVAL: return cg_expr(m, s->eval.e) ? MLC_OK : m->d->status;
  }
  return diag_set(m->d, MLC_ERR_INTERNAL, "codegen: unknown statement kind %d", (int)s->kind);
}

/* ---- kernels ---- */

mlc_status cg_add_func(CgModule *m, const TirFunc *f, Diag *d) {
  m->d = d;
  if (m->target.kind == TARGET_GPU) return cg_nvptx_add_func(m, f, d);
  if (m->optimized)
    return diag_set(d, MLC_ERR_INTERNAL, "kernel '%s' added after the module was optimised", f->name);
  if (!f->name || !f->name[0]) return diag_set(d, MLC_ERR_INTERNAL, "codegen: kernel without a name");
  if (LLVMGetNamedFunction(m->mod, f->name))
    return diag_set(d, MLC_ERR_INTERNAL, "codegen: kernel '%s' defined twice in one module", f->name);
  for (int i = 0; i < f->nparams; i++)
    if (!cg_mem_type(m, f->params[i]->dtype))
      return diag_set(d, MLC_ERR_UNSUPPORTED, "kernel '%s': buffer '%s' has unsupported dtype %s", f->name,
                      f->params[i]->name, mlc_dtype_name(f->params[i]->dtype));
  FnList made = {0};
  m->made = &made;
  int np = f->nparams;
  LLVMTypeRef *pt = arena_alloc(m->arena, sizeof(LLVMTypeRef) * (size_t)(np + 1));
  for (int i = 0; i <= np; i++) pt[i] = m->t_ptr;
  LLVMTypeRef ift = LLVMFunctionType(m->t_i32, pt, (unsigned)(np + 1), 0);
  LLVMValueRef impl = add_fn(m, &made, arena_printf(m->arena, "%s.impl", f->name), ift, true);
  add_enum_attr(m, impl, LLVMAttributeFunctionIndex, "alwaysinline", 0);
  for (int i = 0; i < np; i++) mark_noalias(m, impl, (unsigned)i);
  CgFn F;
  fn_begin(m, &F, impl, f->name);
  F.ctx = LLVMGetParam(impl, (unsigned)np);
  for (int i = 0; i < np; i++) cg_bind(m, true, f->params[i], LLVMGetParam(impl, (unsigned)i));
  mlc_status st = cg_stmt(m, tir_vectorize_loops(m->arena, f->body));
  m->fn = NULL;
  m->made = NULL;
  if (st) {
    if (diag_ok(d)) diag_set(d, st, "codegen failed for kernel '%s'", f->name);
    for (int i = 0; i < made.n; i++) /* outlined bodies refer to each other: detach first, then delete */
      LLVMReplaceAllUsesWith(made.v[i], LLVMGetPoison(LLVMTypeOf(made.v[i])));
    for (int i = 0; i < made.n; i++) LLVMDeleteFunction(made.v[i]);
    return st;
  }
  fn_finish(m, &F);

  LLVMValueRef k = add_fn(m, &made, f->name, m->t_kernel, false);
  LLVMPositionBuilderAtEnd(m->b, LLVMAppendBasicBlockInContext(m->ctx, k, "entry"));
  LLVMValueRef *args = arena_alloc(m->arena, sizeof(LLVMValueRef) * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {
    LLVMValueRef idx = cg_const_i64(m, i);
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(m->b, m->t_ptr, LLVMGetParam(k, 0), &idx, 1, "");
    args[i] = LLVMBuildLoad2(m->b, m->t_ptr, slot, f->params[i]->name);
    LLVMSetAlignment(args[i], 8);
  }
  args[np] = LLVMGetParam(k, 2);
  LLVMBuildRet(m->b, LLVMBuildCall2(m->b, ift, impl, args, (unsigned)(np + 1), ""));
  return MLC_OK;
}
