/* Package serialisation: mod.json (the execution plan), mod.params (weights) and meta.json (signature).
 *
 * mod.json: {"version":1,"tensors":[{"name","dtype","shape","kind","storage_id","offset"}],"storage":[bytes],
 * "calls":[{"kernel","args":[ids]}],"inputs":[ids],"outputs":[ids]}; version 2 adds "dynamic":[{"output",
 * "axis","extent"}], the data-dependent outputs (rt.h rt_dyn_output). The reader uses runtime/json (depth and
 * bounds checked), requires every field with the right type and range, then rt_plan_validate checks the
 * cross-references. mod.params (little-endian): "MLCPARAM", u32 count, then per param u32 tensor id, u64
 * nbytes, zero padding to the next multiple of 64 bytes of the file, the data. Every RT_PARAM tensor must
 * appear exactly once with exactly its size; the loader copies each into a 64-byte-aligned buffer. The
 * sub-byte types (int4, uint4, float4e2m1, int2, uint2), one byte per element in memory, are stored packed
 * (rt_pack_bits: two or four per byte, nbytes the packed size) and unpacked by the loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "runtime/json.h"
#include "runtime/rt.h"

static const char *kind_names[] = {[RT_INPUT] = "input", [RT_PARAM] = "param", [RT_ACTIVATION] = "activation"};

/* ---- mod.json ---- */

static void put_shape(rj_buf *b, const rt_tensor *t) {
  rj_printf(b, "[");
  for (int d = 0; d < t->ndim; d++) rj_printf(b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
  rj_printf(b, "]");
}

static void put_ids(rj_buf *b, int n, const int *ids) {
  rj_printf(b, "[");
  for (int i = 0; i < n; i++) rj_printf(b, "%s%d", i ? "," : "", ids[i]);
  rj_printf(b, "]");
}

char *rt_plan_to_json(const rt_plan *p) {
  rj_buf b = {0};
  rj_printf(&b, "{\"version\":%d,\n\"tensors\":[", p->ndynamic ? 2 : 1);
  for (int i = 0; i < p->ntensors; i++) {
    const rt_tensor *t = &p->tensors[i];
    rj_printf(&b, "%s\n {\"name\":", i ? "," : "");
    rj_put_string(&b, t->name ? t->name : "");
    rj_printf(&b, ",\"dtype\":\"%s\",\"shape\":", mlc_dtype_name(t->dtype));
    put_shape(&b, t);
    unsigned k = (unsigned)t->kind;
    rj_printf(&b, ",\"kind\":\"%s\",\"storage_id\":%d,\"offset\":%lld}", k <= RT_ACTIVATION ? kind_names[k] : "?",
              t->storage_id, (long long)t->offset);
  }
  rj_printf(&b, "],\n\"storage\":[");
  for (int s = 0; s < p->nstorage; s++) rj_printf(&b, "%s%lld", s ? "," : "", (long long)p->storage_size[s]);
  rj_printf(&b, "],\n\"calls\":[");
  for (int c = 0; c < p->ncalls; c++) {
    rj_printf(&b, "%s\n {\"kernel\":", c ? "," : "");
    rj_put_string(&b, p->calls[c].kernel ? p->calls[c].kernel : "");
    rj_printf(&b, ",\"args\":");
    put_ids(&b, p->calls[c].nargs, p->calls[c].args);
    rj_printf(&b, "}");
  }
  rj_printf(&b, "],\n\"inputs\":");
  put_ids(&b, p->ninputs, p->inputs);
  rj_printf(&b, ",\n\"outputs\":");
  put_ids(&b, p->noutputs, p->outputs);
  if (p->ndynamic) {
    rj_printf(&b, ",\n\"dynamic\":[");
    for (int k = 0; k < p->ndynamic; k++)
      rj_printf(&b, "%s{\"output\":%d,\"axis\":%d,\"extent\":%d}", k ? "," : "", p->dynamic[k].output,
                p->dynamic[k].axis, p->dynamic[k].extent);
    rj_printf(&b, "]");
  }
  rj_printf(&b, "}\n");
  return rj_finish(&b);
}

#define BAD(...) (snprintf(err, RT_ERRLEN, "mod.json: " __VA_ARGS__), false)

static bool get_int(const rj_value *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, const char *where,
                    char *err) {
  const rj_value *v = rj_get(obj, key);
  if (!v) return BAD("%s: missing \"%s\"", where, key);
  if (v->kind != RJ_NUM || !v->is_int) return BAD("%s: \"%s\" is not an integer", where, key);
  if (v->i < lo || v->i > hi) return BAD("%s: \"%s\" = %lld out of range", where, key, (long long)v->i);
  *out = v->i;
  return true;
}

static const rj_value *get_kind(const rj_value *obj, const char *key, rj_kind kind, const char *where, char *err) {
  const rj_value *v = rj_get(obj, key);
  static const char *names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
  if (!v) {
    snprintf(err, RT_ERRLEN, "mod.json: %s: missing \"%s\"", where, key);
    return NULL;
  }
  if (v->kind != kind) {
    snprintf(err, RT_ERRLEN, "mod.json: %s: \"%s\" is not %s", where, key, names[kind]);
    return NULL;
  }
  return v;
}

/* an array of ints in [lo, hi] into a malloc'd int array */
static bool get_ids(const rj_value *obj, const char *key, int64_t lo, int64_t hi, int *n, int **out,
                    const char *where, char *err) {
  const rj_value *a = get_kind(obj, key, RJ_ARR, where, err);
  if (!a) return false;
  *out = calloc((size_t)a->n + 1, sizeof(int));
  if (!*out) return BAD("out of memory");
  *n = a->n;
  for (int i = 0; i < a->n; i++) {
    const rj_value *v = &a->items[i];
    if (v->kind != RJ_NUM || !v->is_int || v->i < lo || v->i > hi)
      return BAD("%s: \"%s\"[%d] is not an integer in [%lld, %lld]", where, key, i, (long long)lo, (long long)hi);
    (*out)[i] = (int)v->i;
  }
  return true;
}

static bool plan_from_tree(const rj_value *root, rt_plan *p, char *err) {
  if (root->kind != RJ_OBJ) return BAD("not a JSON object");
  int64_t version;
  if (!get_int(root, "version", 1, 2, &version, "plan", err)) return false;
  const rj_value *tensors = get_kind(root, "tensors", RJ_ARR, "plan", err);
  const rj_value *storage = tensors ? get_kind(root, "storage", RJ_ARR, "plan", err) : NULL;
  const rj_value *calls = storage ? get_kind(root, "calls", RJ_ARR, "plan", err) : NULL;
  if (!calls) return false;
  p->ntensors = tensors->n;
  p->tensors = calloc((size_t)tensors->n + 1, sizeof *p->tensors);
  p->param_data = calloc((size_t)tensors->n + 1, sizeof *p->param_data);
  p->nstorage = storage->n;
  p->storage_size = calloc((size_t)storage->n + 1, sizeof *p->storage_size);
  p->ncalls = calls->n;
  p->calls = calloc((size_t)calls->n + 1, sizeof *p->calls);
  if (!p->tensors || !p->param_data || !p->storage_size || !p->calls) return BAD("out of memory");
  char where[64];
  for (int i = 0; i < tensors->n; i++) {
    const rj_value *t = &tensors->items[i];
    rt_tensor *rt = &p->tensors[i];
    snprintf(where, sizeof where, "tensor %d", i);
    if (t->kind != RJ_OBJ) return BAD("%s is not an object", where);
    const rj_value *name = get_kind(t, "name", RJ_STR, where, err);
    const rj_value *dtype = name ? get_kind(t, "dtype", RJ_STR, where, err) : NULL;
    const rj_value *shape = dtype ? get_kind(t, "shape", RJ_ARR, where, err) : NULL;
    const rj_value *kind = shape ? get_kind(t, "kind", RJ_STR, where, err) : NULL;
    if (!kind) return false;
    if (!(rt->name = strdup(name->str))) return BAD("out of memory");
    rt->dtype = mlc_dtype_from_name(dtype->str);
    if (rt->dtype == MLC_UNDEF || mlc_dtype_size(rt->dtype) <= 0)
      return BAD("%s ('%s'): unknown dtype \"%.40s\"", where, rt->name, dtype->str);
    if (shape->n > MLC_MAX_DIMS) return BAD("%s ('%s'): rank %d exceeds %d", where, rt->name, shape->n, MLC_MAX_DIMS);
    rt->ndim = shape->n;
    for (int d = 0; d < shape->n; d++) {
      const rj_value *v = &shape->items[d];
      if (v->kind != RJ_NUM || !v->is_int || v->i < 0)
        return BAD("%s ('%s'): shape[%d] is not a non-negative integer", where, rt->name, d);
      rt->shape[d] = v->i;
    }
    int k = -1;
    for (int j = 0; j <= RT_ACTIVATION; j++)
      if (strcmp(kind->str, kind_names[j]) == 0) k = j;
    if (k < 0) return BAD("%s ('%s'): unknown kind \"%.40s\"", where, rt->name, kind->str);
    rt->kind = (rt_tensor_kind)k;
    int64_t sid, off;
    if (!get_int(t, "storage_id", -1, (int64_t)storage->n - 1, &sid, where, err)) return false;
    if (!get_int(t, "offset", 0, INT64_MAX, &off, where, err)) return false;
    rt->storage_id = (int)sid;
    rt->offset = off;
  }
  for (int s = 0; s < storage->n; s++) {
    const rj_value *v = &storage->items[s];
    if (v->kind != RJ_NUM || !v->is_int || v->i < 0) return BAD("storage[%d] is not a non-negative integer", s);
    p->storage_size[s] = v->i;
  }
  for (int c = 0; c < calls->n; c++) {
    const rj_value *call = &calls->items[c];
    snprintf(where, sizeof where, "call %d", c);
    if (call->kind != RJ_OBJ) return BAD("%s is not an object", where);
    const rj_value *kernel = get_kind(call, "kernel", RJ_STR, where, err);
    if (!kernel) return false;
    if (!(p->calls[c].kernel = strdup(kernel->str))) return BAD("out of memory");
    if (!get_ids(call, "args", 0, (int64_t)tensors->n - 1, &p->calls[c].nargs, &p->calls[c].args, where, err))
      return false;
  }
  if (!get_ids(root, "inputs", 0, (int64_t)tensors->n - 1, &p->ninputs, &p->inputs, "plan", err)) return false;
  if (!get_ids(root, "outputs", 0, (int64_t)tensors->n - 1, &p->noutputs, &p->outputs, "plan", err)) return false;
  if (version >= 2) {
    const rj_value *dyn = get_kind(root, "dynamic", RJ_ARR, "plan", err);
    if (!dyn) return false;
    p->ndynamic = dyn->n;
    p->dynamic = calloc((size_t)dyn->n + 1, sizeof *p->dynamic);
    if (!p->dynamic) return BAD("out of memory");
    for (int k = 0; k < dyn->n; k++) {
      const rj_value *r = &dyn->items[k];
      snprintf(where, sizeof where, "dynamic %d", k);
      if (r->kind != RJ_OBJ) return BAD("%s is not an object", where);
      int64_t o, ax, ext;
      if (!get_int(r, "output", 0, (int64_t)p->noutputs - 1, &o, where, err) ||
          !get_int(r, "axis", 0, MLC_MAX_DIMS - 1, &ax, where, err) ||
          !get_int(r, "extent", 0, (int64_t)tensors->n - 1, &ext, where, err))
        return false;
      p->dynamic[k] = (rt_dyn_output){(int)o, (int)ax, (int)ext};
    }
  } else if (rj_get(root, "dynamic")) {
    return BAD("plan: \"dynamic\" needs version 2");
  }
  char verr[RT_ERRLEN];
  if (rt_plan_validate(p, verr) != MLC_OK) return BAD("%.900s", verr);
  return true;
}
#undef BAD

int rt_plan_from_json(const char *text, size_t len, rt_plan *p, char *err) {
  memset(p, 0, sizeof *p);
  char jerr[RT_ERRLEN];
  rj_value *root = rj_parse(text, len, jerr);
  if (!root) {
    snprintf(err, RT_ERRLEN, "mod.json: %.900s", jerr);
    return MLC_ERR_INVALID;
  }
  bool ok = plan_from_tree(root, p, err);
  rj_free(root);
  if (!ok) {
    rt_plan_free(p);
    return MLC_ERR_INVALID;
  }
  return MLC_OK;
}

/* ---- mod.params ---- */

static void put_u32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *b, uint64_t v) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *b) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | b[i];
  return v;
}
static uint64_t get_u64(const unsigned char *b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
  return v;
}

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

/* bytes of a param in mod.params: packed for the sub-byte types (one byte per element in memory) */
static int64_t file_nbytes(const rt_tensor *t) {
  int64_t nb = rt_tensor_nbytes(t);
  int bits = rt_dtype_bits(t->dtype);
  return nb > 0 && bits < 8 ? rt_packed_nbytes(nb, bits) : nb;
}

int rt_params_serialize(const rt_plan *p, void **data, size_t *size) {
  size_t total = 12;
  uint32_t count = 0;
  for (int i = 0; i < p->ntensors; i++) {
    if (p->tensors[i].kind != RT_PARAM) continue;
    int64_t nb = file_nbytes(&p->tensors[i]);
    if (nb < 0 || (nb > 0 && (!p->param_data || !p->param_data[i]))) return MLC_ERR_INVALID;
    total = ALIGN64(total + 12) + (size_t)nb;
    count++;
  }
  unsigned char *buf = calloc(1, total);
  if (!buf) return MLC_ERR_INTERNAL;
  memcpy(buf, "MLCPARAM", 8);
  put_u32(buf + 8, count);
  size_t pos = 12;
  for (int i = 0; i < p->ntensors; i++) {
    if (p->tensors[i].kind != RT_PARAM) continue;
    const rt_tensor *t = &p->tensors[i];
    int64_t nb = file_nbytes(t);
    put_u32(buf + pos, (uint32_t)i);
    put_u64(buf + pos + 4, (uint64_t)nb);
    pos = ALIGN64(pos + 12);
    if (nb > 0 && rt_dtype_bits(t->dtype) < 8)
      rt_pack_bits(buf + pos, p->param_data[i], rt_tensor_nbytes(t), rt_dtype_bits(t->dtype));
    else if (nb > 0)
      memcpy(buf + pos, p->param_data[i], (size_t)nb);
    pos += (size_t)nb;
  }
  *data = buf;
  *size = total;
  return MLC_OK;
}

/* Releases the whole pages inside [from, to) of a private file mapping: they are re-read from the file if
 * touched again, so this only gives memory back. */
static void drop_pages(const unsigned char *from, const unsigned char *to) {
  long pg = sysconf(_SC_PAGESIZE);
  if (pg <= 0) return;
  uintptr_t a = ((uintptr_t)from + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1), b = (uintptr_t)to & ~((uintptr_t)pg - 1);
  if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

int rt_params_load(const void *data, size_t size, rt_plan *p, bool drop_source, char *err) {
#define BADP(...) return snprintf(err, RT_ERRLEN, "mod.params: " __VA_ARGS__), MLC_ERR_INVALID
  const unsigned char *b = data;
  if (size < 12 || memcmp(b, "MLCPARAM", 8) != 0) BADP("bad magic (not an mlc parameter file)");
  if (!p->param_data) {
    p->param_data = calloc((size_t)p->ntensors + 1, sizeof *p->param_data);
    if (!p->param_data) BADP("out of memory");
  }
  uint32_t count = get_u32(b + 8);
  if (count > (uint32_t)p->ntensors) BADP("%u parameters but the plan has %d tensors", count, p->ntensors);
  size_t pos = 12;
  for (uint32_t k = 0; k < count; k++) {
    if (size - pos < 12) BADP("truncated at parameter %u", k);
    uint32_t id = get_u32(b + pos);
    uint64_t nb = get_u64(b + pos + 4);
    if (id >= (uint32_t)p->ntensors) BADP("parameter %u: tensor id %u out of range", k, id);
    rt_tensor *t = &p->tensors[id];
    if (t->kind != RT_PARAM) BADP("parameter %u: tensor '%s' is not a parameter", k, t->name);
    if (p->param_data[id]) BADP("parameter '%s' appears twice", t->name);
    int64_t want = file_nbytes(t), mem = rt_tensor_nbytes(t);
    if (want < 0 || nb != (uint64_t)want)
      BADP("parameter '%s': %llu bytes, expected %lld", t->name, (unsigned long long)nb, (long long)want);
    pos = ALIGN64(pos + 12);
    if (pos > size || size - pos < nb) BADP("parameter '%s': data truncated", t->name);
    void *copy = rt_alloc_buffer((size_t)mem);
    if (!copy) BADP("out of memory for parameter '%s'", t->name);
    int bits = rt_dtype_bits(t->dtype);
    if (nb && bits < 8) /* packed sub-byte elements, one byte each in memory */
      rt_unpack_bits(copy, b + pos, mem, bits, t->dtype == MLC_I4 || t->dtype == MLC_I2);
    else if (nb)
      memcpy(copy, b + pos, (size_t)nb);
    if (drop_source) drop_pages(b + pos, b + pos + nb);
    p->param_data[id] = copy;
    pos += (size_t)nb;
  }
  if (pos != size) BADP("%zu trailing bytes", size - pos);
  for (int i = 0; i < p->ntensors; i++)
    if (p->tensors[i].kind == RT_PARAM && !p->param_data[i]) BADP("no data for parameter '%s'", p->tensors[i].name);
  return MLC_OK;
#undef BADP
}

/* ---- meta.json ---- */

static void put_sig(rj_buf *b, const rt_plan *p, int n, const int *ids, bool outputs) {
  rj_printf(b, "[");
  for (int i = 0; i < n; i++) {
    const rt_tensor *t = &p->tensors[ids[i]];
    rj_printf(b, "%s{\"name\":", i ? "," : "");
    rj_put_string(b, t->name ? t->name : "");
    rj_printf(b, ",\"dtype\":\"%s\",\"shape\":", mlc_dtype_name(t->dtype));
    put_shape(b, t);
    int axis = outputs ? rt_plan_dynamic_axis(p, i) : -1;
    if (axis >= 0) rj_printf(b, ",\"dynamic_axis\":%d", axis); /* shape[axis] is an upper bound */
    rj_printf(b, "}");
  }
  rj_printf(b, "]");
}

uint64_t rt_fnv1a64(const void *data, size_t size) {
  const unsigned char *b = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

char *rt_meta_to_json(const rt_plan *p, const char *target, const char *arch, int nfrozen, const rt_frozen *frozen) {
  rj_buf b = {0};
  rj_printf(&b, "{\"mlc_version\":\"%s\",\"target\":", MLC_RT_VERSION);
  rj_put_string(&b, target ? target : "llvm");
  rj_printf(&b, ",\"arch\":");
  rj_put_string(&b, arch ? arch : rt_host_arch());
  rj_printf(&b, ",\n\"inputs\":");
  put_sig(&b, p, p->ninputs, p->inputs, false);
  rj_printf(&b, ",\n\"outputs\":");
  put_sig(&b, p, p->noutputs, p->outputs, true);
  if (nfrozen > 0) {
    rj_printf(&b, ",\n\"frozen_inputs\":[");
    for (int i = 0; i < nfrozen; i++) {
      const rt_frozen *f = &frozen[i];
      rj_printf(&b, "%s{\"name\":", i ? "," : "");
      rj_put_string(&b, f->name);
      rj_printf(&b, ",\"dtype\":\"%s\",\"shape\":[", mlc_dtype_name(f->dtype));
      for (int k = 0; k < f->ndim; k++) rj_printf(&b, "%s%lld", k ? "," : "", (long long)f->shape[k]);
      rj_printf(&b, "],\"fnv1a64\":\"%016llx\"}", (unsigned long long)f->hash);
    }
    rj_printf(&b, "]");
  }
  rj_printf(&b, "}\n");
  return rj_finish(&b);
}

void rt_frozen_free(int n, rt_frozen *f) {
  for (int i = 0; f && i < n; i++) free(f[i].name);
  free(f);
}

int rt_meta_frozen(const char *text, size_t len, int *n, rt_frozen **out, char *err) {
  *n = 0;
  *out = NULL;
  char jerr[RT_ERRLEN];
  rj_value *meta = rj_parse(text, len, jerr);
  if (!meta || meta->kind != RJ_OBJ) {
    snprintf(err, RT_ERRLEN, "meta.json: %.900s", meta ? "not a JSON object" : jerr);
    rj_free(meta);
    return MLC_ERR_INVALID;
  }
  const rj_value *list = rj_get(meta, "frozen_inputs");
  int rc = MLC_OK;
  if (list && list->kind != RJ_ARR) rc = MLC_ERR_INVALID;
  int cnt = list ? (int)list->n : 0;
  rt_frozen *f = rc ? NULL : calloc((size_t)cnt + 1, sizeof *f);
  if (!rc && !f) rc = MLC_ERR_INTERNAL;
  for (int i = 0; !rc && i < cnt; i++) {
    const rj_value *e = &list->items[i];
    const rj_value *name = rj_get(e, "name"), *dt = rj_get(e, "dtype"), *shape = rj_get(e, "shape"),
                   *hash = rj_get(e, "fnv1a64");
    char *end = NULL;
    if (!name || name->kind != RJ_STR || !dt || dt->kind != RJ_STR || !shape || shape->kind != RJ_ARR ||
        shape->n > MLC_MAX_DIMS || !hash || hash->kind != RJ_STR || strlen(hash->str) != 16 ||
        (f[i].dtype = mlc_dtype_from_name(dt->str)) == MLC_UNDEF) {
      rc = MLC_ERR_INVALID;
      break;
    }
    f[i].hash = strtoull(hash->str, &end, 16);
    if (!end || *end) rc = MLC_ERR_INVALID;
    f[i].ndim = (int)shape->n;
    for (int k = 0; !rc && k < f[i].ndim; k++) {
      const rj_value *d = &shape->items[k];
      if (d->kind != RJ_NUM || !d->is_int || d->i < 0) rc = MLC_ERR_INVALID;
      else f[i].shape[k] = d->i;
    }
    if (!rc && !(f[i].name = strdup(name->str))) rc = MLC_ERR_INTERNAL;
  }
  rj_free(meta);
  if (rc) {
    snprintf(err, RT_ERRLEN, rc == MLC_ERR_INTERNAL ? "out of memory" : "meta.json: bad \"frozen_inputs\"");
    rt_frozen_free(cnt, f);
    return rc;
  }
  *n = cnt;
  *out = f;
  return MLC_OK;
}
