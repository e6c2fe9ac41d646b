/* The execution plan: freeing, tensor sizes and validation.
 *
 * rt_plan_validate is the one place that checks every index of a plan (tensor ids, storage ids, offsets and
 * sizes, ranks, dims, kernel names) with overflow-safe arithmetic. The mod.json reader calls it on untrusted
 * files and the executor calls it again, so a plan built in memory by the compiler is held to the same rules.
 * A data-dependent output's record must name a kernel-computed output once, an axis within its rank and a
 * one-element int64 activation as its extent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/rt.h"

#define RT_MAX_BYTES ((int64_t)1 << 48) /* 256 TiB: any size above is a corrupt plan, and sums cannot overflow */

void rt_plan_free(rt_plan *p) {
  if (!p) return;
  for (int i = 0; i < p->ntensors && p->tensors; i++) free(p->tensors[i].name);
  if (p->param_data)
    for (int i = 0; i < p->ntensors; i++) free(p->param_data[i]);
  for (int i = 0; i < p->ncalls && p->calls; i++) {
    free(p->calls[i].kernel);
    free(p->calls[i].args);
  }
  free(p->tensors);
  free(p->storage_size);
  free(p->calls);
  free(p->inputs);
  free(p->outputs);
  free(p->param_data);
  free(p->dynamic);
  memset(p, 0, sizeof *p);
}

int64_t rt_tensor_nbytes(const rt_tensor *t) {
  int64_t esize = mlc_dtype_size(t->dtype);
  if (esize <= 0 || t->ndim < 0 || t->ndim > MLC_MAX_DIMS) return -1;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] < 0) return -1;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 0) return 0;
  int64_t n = esize;
  for (int d = 0; d < t->ndim; d++) {
    if (n > RT_MAX_BYTES / t->shape[d]) return -1;
    n *= t->shape[d];
  }
  return n;
}

static bool rt_symbol_name_ok(const char *s) {
  if (!s || !*s || strlen(s) > 255) return false;
  if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return false;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '.'))
      return false;
  return true;
}

int rt_plan_validate(const rt_plan *p, char *err) {
#define BAD(...) return snprintf(err, RT_ERRLEN, __VA_ARGS__), MLC_ERR_INVALID
  if (p->ntensors < 0 || p->nstorage < 0 || p->ncalls < 0 || p->ninputs < 0 || p->noutputs < 0)
    BAD("plan: negative count");
  if ((p->ntensors && !p->tensors) || (p->nstorage && !p->storage_size) || (p->ncalls && !p->calls) ||
      (p->ninputs && !p->inputs) || (p->noutputs && !p->outputs))
    BAD("plan: missing array");
  for (int s = 0; s < p->nstorage; s++)
    if (p->storage_size[s] < 0 || p->storage_size[s] > RT_MAX_BYTES)
      BAD("plan: storage %d: invalid size %lld", s, (long long)p->storage_size[s]);
  for (int i = 0; i < p->ntensors; i++) {
    const rt_tensor *t = &p->tensors[i];
    const char *name = t->name ? t->name : "?";
    if (!t->name) BAD("plan: tensor %d has no name", i);
    if (t->ndim < 0 || t->ndim > MLC_MAX_DIMS) BAD("plan: tensor '%s': rank %d out of range", name, t->ndim);
    if (mlc_dtype_size(t->dtype) <= 0) BAD("plan: tensor '%s': unsupported dtype %d", name, (int)t->dtype);
    for (int d = 0; d < t->ndim; d++)
      if (t->shape[d] < 0) BAD("plan: tensor '%s': negative dimension", name);
    int64_t nb = rt_tensor_nbytes(t);
    if (nb < 0) BAD("plan: tensor '%s': size overflows", name);
    switch (t->kind) {
    case RT_INPUT:
    case RT_PARAM:
      if (t->storage_id != -1) BAD("plan: tensor '%s': only activations have a storage id", name);
      break;
    case RT_ACTIVATION:
      if (t->storage_id < 0 || t->storage_id >= p->nstorage)
        BAD("plan: tensor '%s': storage id %d out of range", name, t->storage_id);
      if (t->offset < 0 || t->offset > RT_MAX_BYTES || t->offset + nb > p->storage_size[t->storage_id])
        BAD("plan: tensor '%s': bytes [%lld, %lld) outside storage %d (%lld bytes)", name, (long long)t->offset,
            (long long)(t->offset + nb), t->storage_id, (long long)p->storage_size[t->storage_id]);
      break;
    default: BAD("plan: tensor '%s': invalid kind %d", name, (int)t->kind);
    }
  }
  for (int c = 0; c < p->ncalls; c++) {
    const rt_call *call = &p->calls[c];
    if (!rt_symbol_name_ok(call->kernel)) BAD("plan: call %d: invalid kernel name", c);
    if (call->nargs < 0 || call->nargs > 4096 || (call->nargs && !call->args))
      BAD("plan: call %d (%s): invalid argument count", c, call->kernel);
    for (int a = 0; a < call->nargs; a++)
      if (call->args[a] < 0 || call->args[a] >= p->ntensors)
        BAD("plan: call %d (%s): argument %d: tensor id %d out of range", c, call->kernel, a, call->args[a]);
  }
  for (int i = 0; i < p->ninputs; i++) {
    int id = p->inputs[i];
    if (id < 0 || id >= p->ntensors) BAD("plan: input %d: tensor id %d out of range", i, id);
    if (p->tensors[id].kind != RT_INPUT) BAD("plan: input %d: tensor '%s' is not an input", i, p->tensors[id].name);
    for (int j = 0; j < i; j++)
      if (p->inputs[j] == id) BAD("plan: input %d: tensor '%s' listed twice", i, p->tensors[id].name);
  }
  for (int i = 0; i < p->ntensors; i++) {
    if (p->tensors[i].kind != RT_INPUT) continue;
    bool listed = false;
    for (int j = 0; j < p->ninputs && !listed; j++) listed = p->inputs[j] == i;
    if (!listed) BAD("plan: input tensor '%s' is not in the input list", p->tensors[i].name);
  }
  for (int i = 0; i < p->noutputs; i++)
    if (p->outputs[i] < 0 || p->outputs[i] >= p->ntensors)
      BAD("plan: output %d: tensor id %d out of range", i, p->outputs[i]);
  if (p->ndynamic < 0 || (p->ndynamic && !p->dynamic))
    BAD("plan: invalid count of data-dependent outputs");
  for (int k = 0; k < p->ndynamic; k++) {
    const rt_dyn_output *dy = &p->dynamic[k];
    if (dy->output < 0 || dy->output >= p->noutputs) BAD("plan: dynamic record %d: output %d out of range", k, dy->output);
    for (int j = 0; j < k; j++)
      if (p->dynamic[j].output == dy->output) BAD("plan: dynamic record %d: output %d listed twice", k, dy->output);
    const rt_tensor *t = &p->tensors[p->outputs[dy->output]];
    if (t->kind != RT_ACTIVATION) BAD("plan: dynamic record %d: output '%s' is not computed by a kernel", k, t->name);
    if (dy->axis < 0 || dy->axis >= t->ndim)
      BAD("plan: dynamic record %d: axis %d out of range for output '%s' of rank %d", k, dy->axis, t->name, t->ndim);
    if (dy->extent < 0 || dy->extent >= p->ntensors)
      BAD("plan: dynamic record %d: extent tensor id %d out of range", k, dy->extent);
    const rt_tensor *x = &p->tensors[dy->extent];
    if (x->kind != RT_ACTIVATION || x->dtype != MLC_I64 || rt_tensor_nbytes(x) != 8 || dy->extent == p->outputs[dy->output])
      BAD("plan: dynamic record %d: extent tensor '%s' is not a one-element int64 activation", k, x->name);
  }
  return MLC_OK;
#undef BAD
}

int rt_plan_dynamic_axis(const rt_plan *p, int i) {
  for (int k = 0; k < p->ndynamic; k++)
    if (p->dynamic[k].output == i) return p->dynamic[k].axis;
  return -1;
}

const char *rt_host_arch(void) {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}
