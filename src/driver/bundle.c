/* The linkable outputs of a compilation (DESIGN.md "Packages"): `--output-format so` and `obj`.
 *
 * so:  one shared library = the kernels' objects + a bundle object exporting the package's other members as
 *      data symbols (mlc_so_plan = mod.json, mlc_so_params = mod.params, mlc_so_meta = meta.json, each with
 *      a uint64_t SYM_size). mlc_module_load opens it with dlopen and reads the plan from those symbols, so the
 *      format is the package's, minus the tar.
 * obj: one relocatable object = the kernels' objects + a bundle object holding the weights as constant data and
 *      the entry points NAME_run / NAME_run_ctx (codegen/llvm/bundle.c), linked with `cc -r` and every symbol
 *      but the entry points made local; plus a C header declaring them with the workspace size, the inputs'
 *      and outputs' names, dtypes and shapes as constants (Glow bundles, TVM AOT's tvmgen_default.h).
 *      The workspace holds every storage block of the memory plan, each at a 64-byte-aligned offset.
 * Both are written through a temporary directory and renamed into place (never half-written). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver/driver.h"

#define ALIGN64(x) (((x) + 63) & ~(int64_t)63)

bool mlc_c_identifier_ok(const char *s) {
  if (!s || !*s || strlen(s) > 64) return false;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return false;
  return true;
}

mlc_status mlc_write_shared(Compiled *c, const char *path, Diag *d) {
  if (c->target.arch == ARCH_NVPTX)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "--output-format so: GPU target '%s' is unsupported", c->target.str);
  char dir[] = "/tmp/mlc-so-XXXXXX";
  if (!mkdtemp(dir)) return diag_set(d, MLC_ERR_INTERNAL, "cannot create a temporary directory");
  char kstem[64], bobj[64], *kobjs[CG_MAX_OBJECTS];
  int nk = 0;
  snprintf(kstem, sizeof kstem, "%s/kernels", dir);
  snprintf(bobj, sizeof bobj, "%s/bundle.o", dir);
  rt_plan plan = {0};
  void *params = NULL;
  size_t params_size = 0;
  char *json = NULL, *meta = NULL, *kinfo = mlc_kernels_json(c);
  if (cg_emit_objects(c->cg, kstem, &nk, kobjs, d) == MLC_OK && mlc_build_plan(c, &plan, d) == MLC_OK) {
    json = rt_plan_to_json(&plan);
    meta = mlc_meta_json(c, &plan);
    if (!json || !meta || !kinfo || rt_params_serialize(&plan, &params, &params_size) != 0)
      diag_set(d, MLC_ERR_INTERNAL, "cannot serialise the plan and parameters");
    else {
      CgBlob blobs[] = {
          {"mlc_so_plan", json, strlen(json)},
          {"mlc_so_params", params, params_size},
          {"mlc_so_meta", meta, strlen(meta)},
          {"mlc_so_kernels", kinfo, strlen(kinfo)},
      };
      CgBundle b = {.nblobs = (int)countof(blobs), .blobs = blobs};
      const char *objs[CG_MAX_OBJECTS + 1];
      for (int i = 0; i < nk; i++) objs[i] = kobjs[i];
      objs[nk] = bobj;
      if (cg_emit_bundle(&c->target, &b, bobj, d) == MLC_OK) cg_link_shared(&c->target, nk + 1, objs, path, d);
    }
  }
  for (int i = 0; i < nk; i++) free(kobjs[i]);
  free(params);
  free(json);
  free(meta);
  free(kinfo);
  rt_plan_free(&plan);
  mlc_remove_dir(dir);
  return d->status;
}

static void c_string(StrBuf *b, const char *s) {
  sb_printf(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') sb_printf(b, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f) sb_printf(b, "\\%03o", *p);
    else sb_printf(b, "%c", *p);
  }
  sb_printf(b, "\"");
}

static const char *c_type(mlc_dtype t) {
  switch (t) {
  case MLC_F32: return "float";
  case MLC_F64: return "double";
  case MLC_I8: return "int8_t";
  case MLC_U8: return "uint8_t";
  case MLC_BOOL: return "uint8_t";
  case MLC_I16: return "int16_t";
  case MLC_U16: return "uint16_t";
  case MLC_F16: return "uint16_t"; /* IEEE half bits */
  case MLC_BF16: return "uint16_t"; /* bfloat16 bits */
  case MLC_I32: return "int32_t";
  case MLC_U32: return "uint32_t";
  case MLC_I64: return "int64_t";
  case MLC_U64: return "uint64_t";
  case MLC_I4: case MLC_I2: return "int8_t"; /* one value per byte, sign-extended */
  case MLC_U4: case MLC_U2: return "uint8_t";
  case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_F4E2M1: case MLC_F8E8M0:
    return "uint8_t"; /* float8 / float4 bits, one element per byte */
  default: return "void";
  }
}

static void header_tensor(StrBuf *b, const char *NAME, const char *kind, int i, const rt_tensor *t) {
  int64_t n = 1;
  for (int k = 0; k < t->ndim; k++) n *= t->shape[k];
  sb_printf(b, "#define %s_%s%d_NAME ", NAME, kind, i);
  c_string(b, t->name);
  sb_printf(b, "\n#define %s_%s%d_DTYPE \"%s\"\n", NAME, kind, i, mlc_dtype_name(t->dtype));
  sb_printf(b, "#define %s_%s%d_NDIM %d\n", NAME, kind, i, t->ndim);
  sb_printf(b, "#define %s_%s%d_SHAPE {", NAME, kind, i);
  for (int k = 0; k < t->ndim; k++) sb_printf(b, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
  if (t->ndim == 0) sb_printf(b, "1");
  sb_printf(b, "}\n#define %s_%s%d_SIZE %lld /* elements */\n", NAME, kind, i, (long long)n);
  sb_printf(b, "#define %s_%s%d_BYTES %lld\n", NAME, kind, i, (long long)(n * mlc_dtype_size(t->dtype)));
}

static char *make_header(const rt_plan *p, const char *name, const char *target, int64_t ws) {
  StrBuf b = {0};
  char NAME[80];
  size_t i = 0;
  for (; name[i] && i < sizeof NAME - 1; i++) NAME[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
  NAME[i] = 0;
  sb_printf(&b, "/* %s.h: generated by mlc %s (`mlc compile --output-format obj --module-name %s`) for target ", name,
            MLC_VERSION, name);
  sb_printf(&b, "'%s'. */\n", target);
  sb_printf(&b, "/* Link the object with -lm (and libmlcrt only for %s_run_ctx on a thread pool). The model's weights are\n"
                " * constant data in the object; nothing is read from files. %s_run runs every kernel in plan order\n"
                " * on the caller's thread; the workspace must be %s_WORKSPACE_SIZE bytes, %s_WORKSPACE_ALIGN-byte\n"
                " * aligned, and may be reused between calls. Returns 0, or the failing kernel's non-zero code. */\n",
            name, name, NAME, NAME);
  sb_printf(&b, "#ifndef %s_MLC_H\n#define %s_MLC_H\n#include <stdint.h>\n#include \"mlc/runtime.h\"\n\n", NAME, NAME);
  sb_printf(&b, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  sb_printf(&b, "#define %s_WORKSPACE_SIZE %lld\n#define %s_WORKSPACE_ALIGN 64\n", NAME, (long long)ws, NAME);
  sb_printf(&b, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n\n", NAME, p->ninputs, NAME, p->noutputs);
  for (int k = 0; k < p->ninputs; k++) header_tensor(&b, NAME, "INPUT", k, &p->tensors[p->inputs[k]]);
  for (int k = 0; k < p->noutputs; k++) header_tensor(&b, NAME, "OUTPUT", k, &p->tensors[p->outputs[k]]);
  sb_printf(&b, "\nint32_t %s_run(", name);
  for (int k = 0; k < p->ninputs; k++)
    sb_printf(&b, "const %s *input%d, ", c_type(p->tensors[p->inputs[k]].dtype), k);
  for (int k = 0; k < p->noutputs; k++) sb_printf(&b, "%s *output%d, ", c_type(p->tensors[p->outputs[k]].dtype), k);
  sb_printf(&b, "void *workspace);\n");
  sb_printf(&b, "/* the same with arrays of pointers, parallel loops on ctx (mlc_pool_kernel_ctx) */\n");
  sb_printf(&b, "int32_t %s_run_ctx(const void *const *inputs, void *const *outputs, void *workspace, "
                "mlc_kernel_ctx *ctx);\n", name);
  sb_printf(&b, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
  return b.s;
}

mlc_status mlc_write_object(Compiled *c, const char *path, const char *header_path, const char *name, Diag *d) {
  if (!mlc_c_identifier_ok(name))
    return diag_set(d, MLC_ERR_USAGE, "--module-name '%s': not a C identifier (letters, digits, '_', at most 64)",
                    name ? name : "");
  if (c->target.arch == ARCH_NVPTX)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "--output-format obj: GPU target '%s' is unsupported", c->target.str);
  char dir[] = "/tmp/mlc-obj-XXXXXX";
  if (!mkdtemp(dir)) return diag_set(d, MLC_ERR_INTERNAL, "cannot create a temporary directory");
  char kstem[64], bobj[64], *kobjs[CG_MAX_OBJECTS];
  int nk = 0;
  snprintf(kstem, sizeof kstem, "%s/kernels", dir);
  snprintf(bobj, sizeof bobj, "%s/bundle.o", dir);
  rt_plan plan = {0};
  int64_t *base = NULL;
  int *param_index = NULL;
  const void **pdata = NULL;
  size_t *psize = NULL;
  CgBundleCall *calls = NULL;
  CgArg *args = NULL, *out_src = NULL;
  int64_t *out_bytes = NULL;
  char *header = NULL;
  if (cg_emit_objects(c->cg, kstem, &nk, kobjs, d) != MLC_OK || mlc_build_plan(c, &plan, d) != MLC_OK) goto done;
  if (plan.ndynamic) {
    /* the generated entry points return fixed-size outputs; a data-dependent one needs the runtime's trimming */
    const rt_tensor *t = &plan.tensors[plan.outputs[plan.dynamic[0].output]];
    diag_set(d, MLC_ERR_UNSUPPORTED,
             "--output-format obj: output '%s' has a data-dependent shape; use --output-format tar or so", t->name);
    goto done;
  }
  int nt = plan.ntensors, totargs = 0;
  for (int k = 0; k < plan.ncalls; k++) totargs += plan.calls[k].nargs;
  base = calloc((size_t)plan.nstorage + 1, sizeof *base);
  param_index = calloc((size_t)nt + 1, sizeof *param_index);
  pdata = calloc((size_t)nt + 1, sizeof *pdata);
  psize = calloc((size_t)nt + 1, sizeof *psize);
  calls = calloc((size_t)plan.ncalls + 1, sizeof *calls);
  args = calloc((size_t)totargs + 1, sizeof *args);
  out_src = calloc((size_t)plan.noutputs + 1, sizeof *out_src);
  out_bytes = calloc((size_t)plan.noutputs + 1, sizeof *out_bytes);
  if (!base || !param_index || !pdata || !psize || !calls || !args || !out_src || !out_bytes) {
    diag_set(d, MLC_ERR_INTERNAL, "out of memory");
    goto done;
  }
  int64_t ws = 0;
  for (int s = 0; s < plan.nstorage; s++) {
    base[s] = ws;
    ws += ALIGN64(plan.storage_size[s]);
  }
  int nparams = 0;
  for (int t = 0; t < nt; t++)
    if (plan.tensors[t].kind == RT_PARAM) {
      param_index[t] = nparams;
      pdata[nparams] = plan.param_data[t];
      psize[nparams++] = (size_t)rt_tensor_nbytes(&plan.tensors[t]);
    }
#define ARG_OF(tid, out)                                                                           \
  do {                                                                                             \
    const rt_tensor *t_ = &plan.tensors[tid];                                                      \
    if (t_->kind == RT_PARAM) *(out) = (CgArg){CG_ARG_PARAM, param_index[tid], 0};                 \
    else if (t_->kind == RT_ACTIVATION)                                                            \
      *(out) = (CgArg){CG_ARG_WORKSPACE, 0, base[t_->storage_id] + t_->offset};                    \
    else                                                                                           \
      for (int i_ = 0; i_ < plan.ninputs; i_++)                                                    \
        if (plan.inputs[i_] == (tid)) *(out) = (CgArg){CG_ARG_INPUT, i_, 0};                       \
  } while (0)
  CgArg *ap = args;
  for (int k = 0; k < plan.ncalls; k++) {
    calls[k] = (CgBundleCall){plan.calls[k].kernel, plan.calls[k].nargs, ap};
    for (int i = 0; i < plan.calls[k].nargs; i++, ap++) ARG_OF(plan.calls[k].args[i], ap);
  }
  for (int o = 0; o < plan.noutputs; o++) {
    ARG_OF(plan.outputs[o], &out_src[o]);
    out_bytes[o] = rt_tensor_nbytes(&plan.tensors[plan.outputs[o]]);
  }
#undef ARG_OF
  CgBundle b = {.entry = name, .nparams = nparams, .param_data = pdata, .param_size = psize,
                .ninputs = plan.ninputs, .noutputs = plan.noutputs, .ncalls = plan.ncalls, .calls = calls,
                .output_src = out_src, .output_nbytes = out_bytes};
  if (cg_emit_bundle(&c->target, &b, bobj, d) != MLC_OK) goto done;
  header = make_header(&plan, name, c->target.str, ws);
  char run[96], run_ctx[96];
  snprintf(run, sizeof run, "%s_run", name);
  snprintf(run_ctx, sizeof run_ctx, "%s_run_ctx", name);
  const char *objs[CG_MAX_OBJECTS + 1], *keep[] = {run, run_ctx};
  for (int i = 0; i < nk; i++) objs[i] = kobjs[i];
  objs[nk] = bobj;
  if (cg_link_relocatable(&c->target, nk + 1, objs, 2, keep, path, d) != MLC_OK) goto done;
  if (header_path && file_write_atomic(header_path, header, strlen(header), d) != MLC_OK) unlink(path);
done:
  for (int i = 0; i < nk; i++) free(kobjs[i]);
  free(header);
  free(base);
  free(param_index);
  free(pdata);
  free(psize);
  free(calls);
  free(args);
  free(out_src);
  free(out_bytes);
  rt_plan_free(&plan);
  mlc_remove_dir(dir);
  return d->status;
}
