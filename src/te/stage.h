/* Private to src/te: the schedule's per-stage bookkeeping that te.h does not expose.
 *
 * Every TeStage handed out by te_create_schedule is the first member of a StageImpl, which adds the arena
 * the primitives allocate new IterVars in and the first misuse of a primitive (schedule primitives return
 * void, so an error is recorded here and te_lower reports it as a Diag). */
#ifndef MLC_TE_STAGE_H
#define MLC_TE_STAGE_H
#include "te/te.h"

typedef struct StageImpl {
  TeStage pub; /* must stay first */
  Arena *arena;
  const char *error; /* first primitive misuse, NULL if none */
} StageImpl;

static inline StageImpl *stage_impl(TeStage *st) { return (StageImpl *)st; }

#endif
