/* mlc runtime: the public API of the standalone runtime library (libmlcrt).
 *
 * A compiled model is a package (tar with mod.so, mod.json, mod.params, meta.json, see DESIGN.md "Packages").
 * The runtime loads it, binds inputs, runs the kernels of the execution plan in order on a thread pool, and
 * hands back outputs. It depends on libc, pthreads and libdl only. No LLVM, protobuf or xgboost type appears
 * here. Functions return 0 on success or an mlc_status code; mlc_rt_last_error() gives the message. */
#ifndef MLC_RUNTIME_H
#define MLC_RUNTIME_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes and status values used by both the runtime and the compiler. */
typedef enum mlc_status {
  MLC_OK = 0,
  MLC_ERR_USAGE = 1,       /* bad command line or API misuse */
  MLC_ERR_INVALID = 2,     /* invalid model, package or input */
  MLC_ERR_UNSUPPORTED = 3, /* valid but not supported (op, dtype, attribute) */
  MLC_ERR_INTERNAL = 4,    /* a bug in mlc */
} mlc_status;

/* Element types. The values are ONNX's TensorProto.DataType numbers, so the frontend maps them 1:1. */
typedef enum mlc_dtype {
  MLC_UNDEF = 0,
  MLC_F32 = 1,
  MLC_U8 = 2,
  MLC_I8 = 3,
  MLC_U16 = 4,
  MLC_I16 = 5,
  MLC_I32 = 6,
  MLC_I64 = 7,
  MLC_STRING = 8, /* not supported by the compiler; kept so the frontend can name it */
  MLC_BOOL = 9,   /* one byte per element, 0 or 1 */
  MLC_F16 = 10,
  MLC_F64 = 11,
  MLC_U32 = 12,
  MLC_U64 = 13,
  MLC_BF16 = 16,
  /* Low-precision types. Inside mlc, in the runtime's buffers and at this API (inputs, outputs, params) every
   * element takes one byte: the float8 and float4 types hold their bit pattern (a float4 in the low nibble),
   * int4/int2 their value sign-extended to int8, uint4/uint2 their value as uint8. Only ONNX TensorProto data
   * is packed (two 4-bit or four 2-bit elements per byte, the first in the low bits); the importer unpacks it.
   * They are storage types: casts, QuantizeLinear/DequantizeLinear and data movement accept them, arithmetic
   * does not (see Float8.md / the Cast spec for the conversions). */
  MLC_F8E4M3FN = 17,   /* 1-4-3, bias 7, max 448, NaN s.1111.111, no inf */
  MLC_F8E4M3FNUZ = 18, /* 1-4-3, bias 8, max 240, NaN 0x80 only, no inf, no -0 */
  MLC_F8E5M2 = 19,     /* 1-5-2, bias 15, max 57344, inf s.11111.00, NaN s.11111.{01,10,11} */
  MLC_F8E5M2FNUZ = 20, /* 1-5-2, bias 16, max 57344, NaN 0x80 only, no inf, no -0 */
  MLC_U4 = 21,
  MLC_I4 = 22,
  MLC_F4E2M1 = 23,     /* 1-2-1, bias 1, max 6, no inf or NaN */
  MLC_F8E8M0 = 24,     /* exponent only: 2^(e-127), NaN 0xff, no sign, zero, inf (MX scales) */
  MLC_U2 = 25,
  MLC_I2 = 26,
  MLC_DTYPE_COUNT = 27,
} mlc_dtype;

#define MLC_MAX_DIMS 8

int mlc_dtype_size(mlc_dtype t);            /* bytes per element, 0 if unknown */
const char *mlc_dtype_name(mlc_dtype t);    /* "float32", "int64", ... (numpy / ml_dtypes names) */
mlc_dtype mlc_dtype_from_name(const char *name); /* inverse; MLC_UNDEF if unknown */

/* ---- the kernel ABI: every generated kernel has this signature ---- */
/* buffers: one pointer per argument, in the kernel's parameter order (inputs then outputs);
 * dims: reserved for dynamic shapes (NULL today); ctx: the runtime's mlc_kernel_ctx.
 * Returns 0 on success. */
typedef int32_t (*mlc_kernel_fn)(void **buffers, const int64_t *dims, void *ctx);
/* A parallel loop body outlined by codegen: runs iterations [begin, end). */
typedef int32_t (*mlc_parallel_body)(int64_t begin, int64_t end, void *closure);
/* The table of runtime helpers a kernel may call; generated code reads the fields by position, so the layout
 * is part of the ABI: never reorder. */
typedef struct mlc_kernel_ctx {
  /* split [0, extent) into chunks over the pool's threads, call body on each, wait; returns the first error */
  int32_t (*parallel_launch)(struct mlc_kernel_ctx *ctx, mlc_parallel_body body, void *closure, int64_t extent);
  void *pool;          /* the runtime's thread pool */
  int32_t num_threads; /* threads in the pool */
  int32_t reserved;
} mlc_kernel_ctx;

/* ---- thread pool ---- */
typedef struct mlc_pool mlc_pool;
mlc_pool *mlc_pool_create(int num_threads); /* num_threads <= 0: MLC_NUM_THREADS or all cores */
void mlc_pool_destroy(mlc_pool *pool);
int mlc_pool_threads(const mlc_pool *pool);
/* fills ctx so that kernels run their parallel loops on pool */
void mlc_pool_kernel_ctx(mlc_pool *pool, mlc_kernel_ctx *ctx);

/* ---- modules ---- */
typedef struct mlc_module mlc_module;

typedef struct mlc_tensor_info {
  const char *name;
  mlc_dtype dtype;
  int ndim;
  int64_t shape[MLC_MAX_DIMS];
} mlc_tensor_info;

/* Load a package (.tar) or shared library (.so, from --output-format so) written by `mlc compile`.
 * threads <= 0: default. */
int mlc_module_load(const char *path, int threads, mlc_module **out);
/* The same on a device: "cpu" (as mlc_module_load) or "cuda" for packages compiled with --target cuda (the
 * NVIDIA driver, libcuda.so.1, is loaded at run time; MLC_ERR_UNSUPPORTED without it or without a GPU).
 * A package compiled for the other kind of device is refused with MLC_ERR_UNSUPPORTED. */
int mlc_module_load_device(const char *path, const char *device, int threads, mlc_module **out);
void mlc_module_free(mlc_module *m);
int mlc_module_num_inputs(const mlc_module *m);
int mlc_module_num_outputs(const mlc_module *m);
const mlc_tensor_info *mlc_module_input(const mlc_module *m, int i);
const mlc_tensor_info *mlc_module_output(const mlc_module *m, int i);
/* Copy data (dtype and shape as the module's input i, nbytes checked) into the module. */
int mlc_module_set_input(mlc_module *m, int i, const void *data, size_t nbytes);
int mlc_module_run(mlc_module *m);
/* Pointer to output i, valid until the next run or free. */
const void *mlc_module_output_data(const mlc_module *m, int i);
/* Data-dependent outputs (NonZero, NonMaxSuppression, Unique, Compress on run-time data): mlc_module_output
 * gives the static upper bound of such an output's shape, and its extent along one axis is known only after a
 * run. mlc_module_output_shape writes output i's shape after the last run (before the first run, its static
 * shape) into shape and returns the rank, or -1 when i is out of range. The valid data are the first elements
 * of mlc_module_output_data, row-major in that shape (the runtime compacts them there after each run).
 * mlc_module_output_dynamic_axis gives the data-dependent axis of output i, or -1 for a static output. */
int mlc_module_output_shape(const mlc_module *m, int i, int64_t shape[MLC_MAX_DIMS]);
int mlc_module_output_dynamic_axis(const mlc_module *m, int i);
const char *mlc_rt_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
