/* Runtime internals shared with the compiler: the execution plan, the package format, .npy/.npz I/O.
 *
 * The compiler builds an rt_plan in memory; `mlc compile` serialises it into a package with the writers here
 * and the JIT path hands it straight to rt_executor_create. So the package format is defined once, here.
 * Package (a ustar tar): mod.so (kernels), mod.json (the plan), mod.params (weights), meta.json (target,
 * signature, version). Everything here uses libc, pthreads and libdl only. */
#ifndef MLC_RT_H
#define MLC_RT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mlc/runtime.h"

#define RT_ERRLEN 1024
#define MLC_RT_VERSION "0.1.0" /* written into meta.json; kept equal to MLC_VERSION in src/support/support.h */

typedef enum rt_tensor_kind {
  RT_INPUT,      /* a graph input, bound by mlc_module_set_input */
  RT_PARAM,      /* a weight: data in mod.params */
  RT_ACTIVATION, /* an intermediate or output: lives at storage_id + offset */
} rt_tensor_kind;

typedef struct rt_tensor {
  char *name;
  mlc_dtype dtype;
  int ndim;
  int64_t shape[MLC_MAX_DIMS];
  rt_tensor_kind kind;
  int storage_id; /* RT_ACTIVATION: index into storage; else -1 */
  int64_t offset; /* bytes into the storage */
} rt_tensor;

typedef struct rt_call {
  char *kernel; /* symbol in mod.so */
  int nargs;
  int *args; /* tensor ids, in the kernel's parameter order */
} rt_call;

/* A graph output whose extent along one axis depends on the data (NonZero, NonMaxSuppression, Unique,
 * Compress on run-time data): its tensor has the static upper-bound shape, and after a run the int64 tensor
 * `extent` (one element, written by the same kernel) holds the actual length of `axis`. The executor then
 * compacts the valid part to the front of the output buffer, row-major in the actual shape. */
typedef struct rt_dyn_output {
  int output; /* index into rt_plan.outputs */
  int axis;   /* the data-dependent axis */
  int extent; /* tensor id of the extent */
} rt_dyn_output;

typedef struct rt_plan {
  int ntensors;
  rt_tensor *tensors;
  int nstorage;
  int64_t *storage_size; /* bytes of each storage block */
  int ncalls;
  rt_call *calls;
  int ninputs;
  int *inputs; /* tensor ids of graph inputs, in ONNX order */
  int noutputs;
  int *outputs; /* tensor ids of graph outputs, in ONNX order (may be inputs or params) */
  void **param_data; /* per tensor: RT_PARAM data, NULL otherwise (owned by the plan) */
  int ndynamic;
  rt_dyn_output *dynamic; /* the data-dependent outputs, at most one record per output */
} rt_plan;

void rt_plan_free(rt_plan *p);
int64_t rt_tensor_nbytes(const rt_tensor *t); /* -1 if the dtype, rank or size is invalid */
/* 64-byte aligned, uninitialized, freed with free(); 2 MiB or more: on transparent huge pages (executor.c) */
void *rt_alloc_buffer(size_t n);
/* Checks every index of the plan (tensor/storage ids, offsets+sizes within storage, ranks, dims, kernel names,
 * input list); the mod.json reader and the executor both call it. */
int rt_plan_validate(const rt_plan *p, char *err);
/* The architecture this runtime was built for, as meta.json's "arch" names it: "x86_64", "aarch64". */
const char *rt_host_arch(void);

/* ---- package.c: serialisation ---- */
/* mod.json text (malloc'd) and back. A plan with data-dependent outputs is written as version 2 (with
 * "dynamic":[{"output","axis","extent"}]), so that a runtime without them refuses it instead of returning
 * untrimmed outputs; version 1 plans have none. */
char *rt_plan_to_json(const rt_plan *p);
int rt_plan_from_json(const char *text, size_t len, rt_plan *p, char *err);
/* mod.params: magic "MLCPARAM", u32 count, then per param: u32 tensor id, u64 nbytes, data (64-byte aligned
 * in the file). */
int rt_params_serialize(const rt_plan *p, void **data, size_t *size);
/* drop_source: data is a private read-only file mapping (rt_tar_read) whose pages may be released as each
 * parameter is copied out, so the weights are resident once, not twice. */
int rt_params_load(const void *data, size_t size, rt_plan *p, bool drop_source, char *err);
/* An ONNX graph input bound to a value at compile time (mlc compile --freeze-inputs): no longer an input of the
 * package; meta.json keeps its signature and the FNV-1a hash of its bytes, so `mlc run` can accept the same
 * value among its inputs and refuse another. */
typedef struct rt_frozen {
  char *name;
  mlc_dtype dtype;
  int ndim;
  int64_t shape[MLC_MAX_DIMS];
  uint64_t hash; /* rt_fnv1a64 of the row-major data */
} rt_frozen;
uint64_t rt_fnv1a64(const void *data, size_t size);
/* meta.json text (malloc'd): {"mlc_version","target","arch","inputs":[{name,dtype,shape}],"outputs":[...]}; a
 * data-dependent output adds "dynamic_axis" (its shape there is the upper bound); "frozen_inputs":[{name,dtype,
 * shape,"fnv1a64":"16 hex digits"}] when there are any. */
char *rt_meta_to_json(const rt_plan *p, const char *target, const char *arch, int nfrozen, const rt_frozen *frozen);
/* Reads meta.json's "frozen_inputs" (absent: none) into a malloc'd array; rt_frozen_free releases it. */
int rt_meta_frozen(const char *text, size_t len, int *n, rt_frozen **out, char *err);
void rt_frozen_free(int n, rt_frozen *f);

/* ---- tar.c: ustar archives of regular files ---- */
typedef struct rt_file {
  const char *name;
  const void *data;
  size_t size;
} rt_file;
int rt_tar_write(const char *path, int nfiles, const rt_file *files, char *err); /* atomic: tmp + rename */
/* Maps the whole archive (read-only); files point into *blob, which rt_tar_free releases. */
int rt_tar_read(const char *path, void **blob, int *nfiles, rt_file **files, char *err);
void rt_tar_free(void *blob);

/* ---- executor.c ---- */
typedef struct rt_executor rt_executor;
/* lookup resolves a kernel symbol (dlsym on mod.so, or the JIT). The executor takes ownership of plan's
 * contents, on success and on failure alike (they are moved out and *plan is zeroed). pool may be NULL (serial). */
int rt_executor_create(rt_plan *plan, void *(*lookup)(void *handle, const char *sym), void *handle,
                       mlc_pool *pool, rt_executor **out, char *err);
void rt_executor_free(rt_executor *e);
int rt_executor_set_input(rt_executor *e, int i, const void *data, size_t nbytes, char *err);
int rt_executor_run(rt_executor *e, char *err);
/* per-kernel wall time of the last run in seconds, when profiling was enabled */
void rt_executor_set_profile(rt_executor *e, bool on);
const double *rt_executor_profile(const rt_executor *e);
const void *rt_executor_output(const rt_executor *e, int i);
/* Output i's shape after the last run (its static shape before one; a data-dependent output's extent comes from
 * the run) into shape; returns the rank, or -1 when i is out of range. */
int rt_executor_output_shape(const rt_executor *e, int i, int64_t *shape);
/* the data-dependent axis of output i, or -1 */
int rt_plan_dynamic_axis(const rt_plan *p, int i);
const rt_plan *rt_executor_plan(const rt_executor *e);
/* The executor behind a loaded module (for `mlc run --profile`). */
rt_executor *rt_module_executor(mlc_module *m);
/* The input bound at compile time under this name (meta.json "frozen_inputs"), or NULL. */
const rt_frozen *rt_module_frozen(const mlc_module *m, const char *name);

/* An executor over a GPU package: the plan's kernels run as the launches of mod.cuda.json from mod.ptx through
 * the CUDA driver (cuda.c); inputs are copied to the device by set_input, outputs back to host buffers after
 * every run, which synchronises. With profiling on (or MLC_CUDA_SYNC=1) every call is synchronised and timed.
 * Takes ownership of plan's contents like rt_executor_create. A missing driver or GPU: MLC_ERR_UNSUPPORTED. */
int rt_executor_create_cuda(rt_plan *plan, const rt_file *ptx, const rt_file *launch_table, rt_executor **out,
                            char *err);

/* ---- cuda.c: the CUDA driver API, loaded with dlopen("libcuda.so.1") (or $MLC_CUDA_DRIVER) at run time ---- */
/* mod.cuda.json: {"kernels":[{"name","nparams","scratch":[bytes..],"launches":[{"entry","grid","block"}]}]} */
typedef struct rt_cuda_launch {
  char *entry; /* the PTX .entry */
  int64_t grid, block;
} rt_cuda_launch;
typedef struct rt_cuda_kernel {
  char *name; /* the plan's kernel name */
  int nparams, nscratch, nlaunches;
  int64_t *scratch; /* bytes of each scratch buffer, passed after the params */
  rt_cuda_launch *launches;
} rt_cuda_kernel;
typedef struct rt_cuda_table {
  int nkernels;
  rt_cuda_kernel *kernels;
} rt_cuda_table;
int rt_cuda_table_parse(const char *text, size_t len, rt_cuda_table *t, char *err);
void rt_cuda_table_free(rt_cuda_table *t);
const rt_cuda_kernel *rt_cuda_table_find(const rt_cuda_table *t, const char *name);

typedef struct rt_cuda rt_cuda;
/* Checks plan against the table, loads the driver, opens device $MLC_CUDA_DEVICE (default 0), JIT-loads the
 * PTX, allocates storage, inputs, params (copied once) and scratch on the device and prebuilds every launch.
 * plan must outlive the rt_cuda. */
int rt_cuda_create(const rt_plan *plan, const char *ptx, size_t ptx_size, const char *table_json, size_t table_size,
                   rt_cuda **out, char *err);
void rt_cuda_free(rt_cuda *c);
const char *rt_cuda_device_name(const rt_cuda *c);
int rt_cuda_set_input(rt_cuda *c, int tensor, const void *data, size_t nbytes, char *err); /* host -> device */
int rt_cuda_get(rt_cuda *c, int tensor, void *dst, size_t nbytes, char *err);             /* device -> host */
int rt_cuda_launch_call(rt_cuda *c, int call, char *err); /* queues the call's launches (asynchronous) */
/* waits for the GPU; call >= 0 names the kernel an error is blamed on */
int rt_cuda_sync(rt_cuda *c, int call, char *err);

/* ---- npy.c: .npy and .npz (stored or deflated; own inflate, no zlib) ---- */
typedef struct rt_array {
  char *name; /* key in the .npz without ".npy" */
  mlc_dtype dtype;
  int ndim;
  int64_t shape[MLC_MAX_DIMS];
  void *data; /* row-major, malloc'd */
  size_t nbytes;
} rt_array;
int rt_npz_read(const char *path, int *narrays, rt_array **arrays, char *err);
int rt_npz_write(const char *path, int narrays, const rt_array *arrays, char *err); /* stored, atomic */
void rt_arrays_free(int narrays, rt_array *arrays);

/* ---- dtype.c: float32 to float16 / bfloat16 (round to nearest even; NaN stays NaN) and back (exact) ---- */
uint16_t rt_f32_to_f16(float f);
uint16_t rt_f32_to_bf16(float f);
float rt_f16_to_f32(uint16_t h);
float rt_bf16_to_f32(uint16_t h);
/* the low-precision types (one byte per element, see mlc_dtype): */
bool rt_dtype_is_lowbit(mlc_dtype t);    /* float8 (e8m0 too) / float4 / int4 / uint4 / int2 / uint2 */
bool rt_dtype_is_lowfloat(mlc_dtype t);  /* float8 (e8m0 too) / float4 (the bit-pattern kinds) */
int rt_dtype_bits(mlc_dtype t);          /* 8 * size, or 4 / 2 for the sub-byte types */
float rt_lowfloat_to_f32(mlc_dtype t, uint8_t bits); /* exact; NaN keeps its sign */
/* Rounds to nearest even. saturate: out-of-range values and infinities become the largest finite value of
 * that sign (ONNX Cast saturate=1); otherwise E4M3FN gives NaN, E5M2 inf, the FNUZ types their NaN (0x80).
 * float4 has neither, so it always saturates; NaN becomes 0x8 as in ONNX's reference. float8e8m0 takes the
 * exponent of |x| rounded up (Cast's default round_mode), inf and NaN give NaN (0xff), and saturate keeps
 * values above 2^127 at 2^127 instead of NaN. */
uint8_t rt_f32_to_lowfloat(mlc_dtype t, float f, bool saturate);
/* numpy has none of the low-precision types. Their .npz form: float8 / float4 values as float32 (outputs are
 * written so, exactly; inputs are rounded as Cast does by default (to nearest even; float8e8m0 up) but without
 * saturation, so every value the type holds, E5M2's infinities included, is kept exactly, and one beyond its
 * range becomes inf or NaN as Cast with saturate=0 gives) or as uint8 bit patterns (inputs), int4 / int2 as int8
 * and uint4 / uint2 as uint8 (the value, range-checked on input).
 * rt_lowbit_npz_dtype: the dtype an output of type t is written as (t itself for the other types).
 * rt_lowbit_from_npz: n elements of an array of dtype src for an input of type t, one byte each to dst;
 * returns false with a message in err (RT_ERRLEN) when src is not an accepted form or a value is out of range. */
mlc_dtype rt_lowbit_npz_dtype(mlc_dtype t);
/* Sub-byte packing, as ONNX TensorProto data and mod.params hold int4 / uint4 / float4 (bits 4) and int2 /
 * uint2 (bits 2): n elements, the first in the low bits of the first byte, the last byte zero-padded.
 * rt_unpack_bits sign-extends when asked (int4, int2) and may unpack in place (dst == src). */
int64_t rt_packed_nbytes(int64_t n, int bits);
void rt_pack_bits(uint8_t *dst, const uint8_t *src, int64_t n, int bits);
void rt_unpack_bits(uint8_t *dst, const uint8_t *src, int64_t n, int bits, bool sign_extend);
bool rt_lowbit_from_npz(mlc_dtype t, mlc_dtype src, const void *data, int64_t n, uint8_t *dst, char *err);

/* error state behind mlc_rt_last_error */
void rt_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
