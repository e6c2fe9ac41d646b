/* passes/tir: TIR-to-TIR passes run by the driver between te_lower and codegen. Each follows the mutator rule
 * of tir.h (the same pointer back when nothing changed). */
#ifndef MLC_TIR_PASSES_H
#define MLC_TIR_PASSES_H
#include "tir/tir.h"

/* lower_intrinsics.c: expands the float32 transcendental intrinsics (exp, log, tanh, sigmoid, erf) and
 * pow with a small integer constant exponent into arithmetic (range reduction + polynomials) that LLVM's
 * loop vectorizer turns into SIMD code, and contracts float32 a * b + c into fma where the target has it.
 * Other dtypes keep their libm calls. */
Stmt *tir_lower_intrinsics(Arena *a, Stmt *s, const Target *t);
void tir_lower_intrinsics_func(Arena *a, TirFunc *f, const Target *t);

/* flatten_split_index.c: an access buf[.., floordiv(x, W), floormod(x, W)] (a fused H x W index split back
 * into its axes) becomes buf[flat] with the div/mod pair folded into x, so a vector along x is contiguous. */
Stmt *tir_flatten_split_index(Arena *a, Stmt *s);
void tir_flatten_split_index_func(Arena *a, TirFunc *f);

#endif
