/* TensorProto decoding: initializers, Constant values, tensor attributes and the conformance tests' .pb files.
 *
 * The data comes from exactly one place: raw_data (little endian, row-major, must hold exactly numel * size
 * bytes), the typed field of the data type (float_data; int32_data carrying the bits of int8/16/32, uint8/16,
 * bool, float16 and bfloat16; int64_data; double_data; uint64_data for uint32/64), or an external file
 * (data_location = EXTERNAL, keys location/offset/length). External paths are relative to the model's folder;
 * absolute paths, ".." components and symlinks that resolve outside the folder are refused. Shapes are
 * checked for negative dims and for byte counts that overflow.
 *
 * The low-precision types (see mlc_dtype): float8 is one byte per element like uint8. int4/uint4/float4 are
 * packed two per byte and int2/uint2 four per byte, the first element in the low bits, in raw_data (and
 * external data) as well as in int32_data, where each int32 carries one packed byte; the last byte is padded.
 * They are unpacked here to one byte per element, int4/int2 sign-extended. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "frontends/onnx/internal.h"
#include "runtime/rt.h"

#define ONNX_MAX_TENSOR_BYTES ((int64_t)1 << 40) /* 1 TiB: anything larger is a corrupt shape */

static const char *const onnx_type_names[] = {
    "UNDEFINED", "FLOAT",  "UINT8",  "INT8",      "UINT16",     "INT16",    "INT32",
    "INT64",     "STRING", "BOOL",   "FLOAT16",   "DOUBLE",     "UINT32",   "UINT64",
    "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
    "UINT4",     "INT4",   "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2",
};

const char *onnx_dtype_name(int32_t t) {
  return t >= 0 && (size_t)t < countof(onnx_type_names) ? onnx_type_names[t] : "unknown";
}

mlc_dtype onnx_dtype(int32_t t) {
  switch (t) {
  case MLC_F32: case MLC_U8: case MLC_I8: case MLC_U16: case MLC_I16: case MLC_I32: case MLC_I64:
  case MLC_BOOL: case MLC_F16: case MLC_F64: case MLC_U32: case MLC_U64: case MLC_BF16:
  case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_U4: case MLC_I4:
  case MLC_F4E2M1: case MLC_F8E8M0: case MLC_U2: case MLC_I2:
    return (mlc_dtype)t; /* mlc_dtype uses ONNX's numbers */
  default:
    return MLC_UNDEF;
  }
}

mlc_status onnx_tensor_type(const Onnx__TensorProto *t, const char *file, const char *what, TensorType *out,
                            Diag *d) {
  memset(out, 0, sizeof *out);
  int32_t dt = t->has_data_type ? t->data_type : 0;
  out->dtype = onnx_dtype(dt);
  if (dt == 0) return diag_set(d, MLC_ERR_INVALID, "%s: %s has no data type", file, what);
  if (out->dtype == MLC_UNDEF)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: %s has data type %s (%d), which mlc does not support", file,
                    what, onnx_dtype_name(dt), dt);
  if (t->n_dims > MLC_MAX_DIMS)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: %s has rank %zu; mlc supports at most %d dimensions", file, what,
                    t->n_dims, MLC_MAX_DIMS);
  out->ndim = (int)t->n_dims;
  int64_t bytes = mlc_dtype_size(out->dtype);
  for (size_t i = 0; i < t->n_dims; i++) {
    int64_t v = t->dims[i];
    if (v < 0) return diag_set(d, MLC_ERR_INVALID, "%s: %s has a negative dimension (%lld)", file, what, (long long)v);
    out->dims[i] = v;
    if (v && bytes > ONNX_MAX_TENSOR_BYTES / v)
      return diag_set(d, MLC_ERR_INVALID, "%s: %s is too large (its size overflows)", file, what);
    bytes *= v;
  }
  return MLC_OK;
}

/* ---- external data ---- */

static bool parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < 0) return false;
  *out = v;
  return true;
}

static mlc_status read_external(const Onnx__TensorProto *t, int64_t nbytes, const char *file, const char *dir,
                                const char *what, void *dst, Diag *d) {
  const char *loc = NULL, *off_s = NULL, *len_s = NULL;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    if (!e->key) continue;
    if (!strcmp(e->key, "location")) loc = e->value;
    else if (!strcmp(e->key, "offset")) off_s = e->value;
    else if (!strcmp(e->key, "length")) len_s = e->value;
  }
  if (!loc || !*loc) return diag_set(d, MLC_ERR_INVALID, "%s: %s: external data without a location", file, what);
  if (loc[0] == '/' || loc[0] == '\\' || (loc[0] && loc[1] == ':'))
    return diag_set(d, MLC_ERR_INVALID,
                    "%s: %s: external data location '%s' is an absolute path; it must be relative to the model's "
                    "folder",
                    file, what, loc);
  for (const char *p = loc; *p;) {
    size_t n = strcspn(p, "/\\");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return diag_set(d, MLC_ERR_INVALID, "%s: %s: external data location '%s' escapes the model's folder", file,
                      what, loc);
    p += n;
    if (*p) p++;
  }
  int64_t off = 0, len = -1;
  if (off_s && !parse_i64(off_s, &off))
    return diag_set(d, MLC_ERR_INVALID, "%s: %s: bad external data offset '%s'", file, what, off_s);
  if (len_s && !parse_i64(len_s, &len))
    return diag_set(d, MLC_ERR_INVALID, "%s: %s: bad external data length '%s'", file, what, len_s);
  if (len >= 0 && len != nbytes)
    return diag_set(d, MLC_ERR_INVALID, "%s: %s: external data length %lld does not match its shape (%lld bytes)",
                    file, what, (long long)len, (long long)nbytes);
  char full[PATH_MAX], rdir[PATH_MAX], rfull[PATH_MAX];
  if (snprintf(full, sizeof full, "%s/%s", dir, loc) >= (int)sizeof full)
    return diag_set(d, MLC_ERR_INVALID, "%s: %s: external data path too long", file, what);
  if (!realpath(dir, rdir) || !realpath(full, rfull))
    return diag_set(d, MLC_ERR_INVALID, "%s: %s: cannot open external data file '%s': %s", file, what, full,
                    strerror(errno));
  size_t dl = strlen(rdir);
  if (strncmp(rfull, rdir, dl) != 0 || (rfull[dl] != '/' && !(dl == 1 && rdir[0] == '/')))
    return diag_set(d, MLC_ERR_INVALID, "%s: %s: external data location '%s' resolves outside the model's folder",
                    file, what, loc);
  FILE *f = fopen(rfull, "rb");
  if (!f)
    return diag_set(d, MLC_ERR_INVALID, "%s: %s: cannot open external data file '%s': %s", file, what, full,
                    strerror(errno));
  struct stat st;
  mlc_status r = MLC_OK;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
    r = diag_set(d, MLC_ERR_INVALID, "%s: %s: external data '%s' is not a regular file", file, what, full);
  else if (off > (int64_t)st.st_size || nbytes > (int64_t)st.st_size - off)
    r = diag_set(d, MLC_ERR_INVALID,
                 "%s: %s: external data file '%s' is too short (%lld bytes; need %lld at offset %lld)", file, what,
                 full, (long long)st.st_size, (long long)nbytes, (long long)off);
  else if (nbytes > 0 && (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(dst, 1, (size_t)nbytes, f) != (size_t)nbytes))
    r = diag_set(d, MLC_ERR_INVALID, "%s: %s: cannot read external data file '%s'", file, what, full);
  fclose(f);
  return r;
}

/* ---- decoding ---- */

static void fix_endian(void *p, int64_t n, int es) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  unsigned char *b = p;
  for (int64_t i = 0; i < n; i++, b += es)
    for (int j = 0; j < es / 2; j++) {
      unsigned char c = b[j];
      b[j] = b[es - 1 - j];
      b[es - 1 - j] = c;
    }
#else
  (void)p, (void)n, (void)es;
#endif
}

static mlc_status count_error(const char *file, const char *what, const char *field, size_t got, int64_t want,
                              Diag *d) {
  return diag_set(d, MLC_ERR_INVALID, "%s: %s: %s has %zu elements, expected %lld", file, what, field, got,
                  (long long)want);
}

/* The packed sub-byte types: raw_data / external data / int32_data hold ceil(n * bits / 8) bytes. */
static mlc_status packed_data(const Onnx__TensorProto *t, const TensorType *type, const char *file, const char *dir,
                              const char *what, void *dst, Diag *d) {
  int bits = rt_dtype_bits(type->dtype);
  int64_t n = tt_numel(type), nbytes = rt_packed_nbytes(n, bits);
  bool sgn = type->dtype == MLC_I4 || type->dtype == MLC_I2;
  mlc_status st = MLC_OK;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    st = read_external(t, nbytes, file, dir, what, dst, d);
  } else if (t->has_raw_data) {
    if ((int64_t)t->raw_data.len != nbytes)
      return diag_set(d, MLC_ERR_INVALID, "%s: %s: raw_data has %zu bytes, expected %lld for its shape (%s, packed)",
                      file, what, t->raw_data.len, (long long)nbytes, mlc_dtype_name(type->dtype));
    if (nbytes) memcpy(dst, t->raw_data.data, (size_t)nbytes);
  } else {
    if ((int64_t)t->n_int32_data != nbytes) return count_error(file, what, "int32_data (packed)", t->n_int32_data, nbytes, d);
    for (int64_t i = 0; i < nbytes; i++) ((uint8_t *)dst)[i] = (uint8_t)t->int32_data[i];
  }
  if (st == MLC_OK) rt_unpack_bits(dst, dst, n, bits, sgn);
  return st;
}

mlc_status onnx_tensor_data(const Onnx__TensorProto *t, const TensorType *type, const char *file, const char *dir,
                            const char *what, void *dst, Diag *d) {
  int64_t n = tt_numel(type), nbytes = tt_nbytes(type);
  int es = mlc_dtype_size(type->dtype);
  if (rt_dtype_bits(type->dtype) < 8 && !t->segment) return packed_data(t, type, file, dir, what, dst, d);
  if (t->segment)
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: %s is a segment of a larger tensor, which mlc does not support",
                    file, what);
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return read_external(t, nbytes, file, dir, what, dst, d);
  if (t->has_raw_data) {
    if ((int64_t)t->raw_data.len != nbytes)
      return diag_set(d, MLC_ERR_INVALID, "%s: %s: raw_data has %zu bytes, expected %lld for its shape", file,
                      what, t->raw_data.len, (long long)nbytes);
    if (nbytes) memcpy(dst, t->raw_data.data, (size_t)nbytes);
    fix_endian(dst, n, es);
    if (type->dtype == MLC_BOOL)
      for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ((uint8_t *)dst)[i] != 0;
    return MLC_OK;
  }
  switch (type->dtype) {
  case MLC_F32:
    if ((int64_t)t->n_float_data != n) return count_error(file, what, "float_data", t->n_float_data, n, d);
    if (n) memcpy(dst, t->float_data, (size_t)nbytes);
    return MLC_OK;
  case MLC_I64:
    if ((int64_t)t->n_int64_data != n) return count_error(file, what, "int64_data", t->n_int64_data, n, d);
    if (n) memcpy(dst, t->int64_data, (size_t)nbytes);
    return MLC_OK;
  case MLC_F64:
    if ((int64_t)t->n_double_data != n) return count_error(file, what, "double_data", t->n_double_data, n, d);
    if (n) memcpy(dst, t->double_data, (size_t)nbytes);
    return MLC_OK;
  case MLC_U32:
  case MLC_U64:
    if ((int64_t)t->n_uint64_data != n) return count_error(file, what, "uint64_data", t->n_uint64_data, n, d);
    for (int64_t i = 0; i < n; i++) {
      if (type->dtype == MLC_U32) ((uint32_t *)dst)[i] = (uint32_t)t->uint64_data[i];
      else ((uint64_t *)dst)[i] = t->uint64_data[i];
    }
    return MLC_OK;
  case MLC_I32: case MLC_I16: case MLC_I8: case MLC_U16: case MLC_U8: case MLC_BOOL: case MLC_F16: case MLC_BF16:
  case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_F8E8M0:
    if ((int64_t)t->n_int32_data != n) return count_error(file, what, "int32_data", t->n_int32_data, n, d);
    for (int64_t i = 0; i < n; i++) {
      int32_t v = t->int32_data[i];
      switch (es) {
      case 1: ((uint8_t *)dst)[i] = type->dtype == MLC_BOOL ? v != 0 : (uint8_t)v; break;
      case 2: ((uint16_t *)dst)[i] = (uint16_t)v; break;
      default: ((int32_t *)dst)[i] = v; break;
      }
    }
    return MLC_OK;
  default:
    return diag_set(d, MLC_ERR_UNSUPPORTED, "%s: %s has data type %s, which mlc does not support", file, what,
                    mlc_dtype_name(type->dtype));
  }
}

Value *onnx_tensor_const(OnnxCtx *cx, const Onnx__TensorProto *t, const char *name, Diag *d) {
  char what[512];
  snprintf(what, sizeof what, "tensor '%s'", name);
  TensorType ty;
  if (onnx_tensor_type(t, cx->path, what, &ty, d) != MLC_OK) return NULL;
  Value *v = ir_const_new(cx->g, name, ty, NULL);
  if (onnx_tensor_data(t, &ty, cx->path, cx->dir, what, v->data, d) != MLC_OK) return NULL;
  return v;
}

char *onnx_dir_of(Arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return arena_strdup(a, ".");
  if (slash == path) return arena_strdup(a, "/");
  char *s = arena_alloc(a, (size_t)(slash - path) + 1);
  memcpy(s, path, (size_t)(slash - path));
  return s;
}


/* The message of type desc serialized in file path (free with protobuf_c_message_free_unpacked), or NULL with
 * the error in d. */
static void *read_message(const char *path, const ProtobufCMessageDescriptor *desc, Diag *d) {
  void *buf = NULL;
  size_t size = 0;
  if (file_read(path, &buf, &size, d) != MLC_OK) return NULL;
  ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, size, buf);
  free(buf);
  if (!m) diag_set(d, MLC_ERR_INVALID, "%s: not a valid ONNX %s (protobuf parse failed)", path, desc->short_name);
  return m;
}

/* the type and data (in a) of the parsed tensor t of file path */
static mlc_status tensor_of(Arena *a, const Onnx__TensorProto *t, const char *path, TensorType *type, void **data,
                            Diag *d) {
  char what[512];
  snprintf(what, sizeof what, "tensor '%s'", t->name ? t->name : "");
  mlc_status st = onnx_tensor_type(t, path, what, type, d);
  if (st != MLC_OK) return st;
  int64_t nb = tt_nbytes(type);
  *data = arena_alloc(a, nb > 0 ? (size_t)nb : 1);
  return onnx_tensor_data(t, type, path, onnx_dir_of(a, path), what, *data, d);
}

mlc_status onnx_read_tensor_file(Arena *a, const char *path, const char **name, TensorType *type, void **data,
                                 Diag *d) {
  Onnx__TensorProto *t = read_message(path, &onnx__tensor_proto__descriptor, d);
  if (!t) return d->status;
  mlc_status st = tensor_of(a, t, path, type, data, d);
  if (st == MLC_OK && name) *name = arena_strdup(a, t->name ? t->name : "");
  protobuf_c_message_free_unpacked(&t->base, NULL);
  return st;
}

/* the items of the parsed sequence s of file path */
static mlc_status sequence_of(Arena *a, const Onnx__SequenceProto *s, const char *path, int *n, TensorType **types,
                              void ***data, Diag *d) {
  mlc_status st = MLC_OK;
  if (s->has_elem_type && s->elem_type != 1 && !(s->elem_type == 0 && s->n_tensor_values == 0))
    st = diag_set(d, MLC_ERR_UNSUPPORTED, "%s: a sequence of element kind %d; mlc reads sequences of tensors", path,
                  s->elem_type);
  *n = (int)s->n_tensor_values;
  *types = arena_alloc(a, sizeof(TensorType) * (s->n_tensor_values + 1));
  *data = arena_alloc(a, sizeof(void *) * (s->n_tensor_values + 1));
  for (size_t i = 0; i < s->n_tensor_values && st == MLC_OK; i++)
    st = tensor_of(a, s->tensor_values[i], path, &(*types)[i], &(*data)[i], d);
  return st;
}

mlc_status onnx_read_sequence_file(Arena *a, const char *path, int *n, TensorType **types, void ***data, Diag *d) {
  Onnx__SequenceProto *s = read_message(path, &onnx__sequence_proto__descriptor, d);
  if (!s) return d->status;
  mlc_status st = sequence_of(a, s, path, n, types, data, d);
  protobuf_c_message_free_unpacked(&s->base, NULL);
  return st;
}

mlc_status onnx_read_optional_file(Arena *a, const char *path, OnnxOptionalKind *kind, int *n, TensorType **types,
                                   void ***data, Diag *d) {
  Onnx__OptionalProto *o = read_message(path, &onnx__optional_proto__descriptor, d);
  if (!o) return d->status;
  mlc_status st = MLC_OK;
  *kind = ONNX_OPTIONAL_EMPTY;
  *n = 0;
  *types = arena_alloc(a, sizeof(TensorType));
  *data = arena_alloc(a, sizeof(void *));
  if (o->tensor_value) {
    *kind = ONNX_OPTIONAL_TENSOR;
    *n = 1;
    st = tensor_of(a, o->tensor_value, path, *types, *data, d);
  } else if (o->sequence_value) {
    *kind = ONNX_OPTIONAL_SEQUENCE;
    st = sequence_of(a, o->sequence_value, path, n, types, data, d);
  } else if (o->has_elem_type && o->elem_type != 0) {
    st = diag_set(d, MLC_ERR_UNSUPPORTED, "%s: an optional of element kind %d; mlc reads tensors and sequences",
                  path, o->elem_type);
  }
  protobuf_c_message_free_unpacked(&o->base, NULL);
  return st;
}
