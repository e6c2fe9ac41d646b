/* passes/tir/vectorize.h: VectorizeLoop, run by codegen/llvm on every kernel before LLVM IR is built. Follows
 * the mutator rule of tir.h: the same pointer back when nothing changed; new nodes live in the given arena. */
#ifndef MLC_TIR_VECTORIZE_H
#define MLC_TIR_VECTORIZE_H
#include "tir/tir.h"

/* Every FOR_VECTORIZED loop with a constant extent of 2..64 lanes whose body is straight-line code (stores,
 * lets, ifs on loop-invariant conditions) becomes that body once, with the loop variable replaced by the ramp
 * min + [0..extent) and every expression that depends on it widened to vectors. Loops it cannot prove safe or
 * cannot widen (nested loops, allocations, lane-dependent conditions, a reduction into a loop-invariant
 * location, cross-lane dependences through a buffer) are left unchanged. */
Stmt *tir_vectorize_loops(Arena *a, Stmt *s);

#endif
