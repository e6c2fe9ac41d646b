/* The op registry: a static array of OpDef pointers filled at start-up (topi_register_ops) and searched by
 * name. Registration order is kept so listings are deterministic; registering the same name twice keeps the
 * first definition (one definition per op). Lookups are linear: a few hundred ops, a few lookups per node. */
#include <string.h>
#include "ir/ir.h"

#define IR_MAX_OPS 1024

static const OpDef *ops[IR_MAX_OPS];
static int nops;

void ir_op_register(const OpDef *op) {
  if (!op || !op->name || nops >= IR_MAX_OPS) return;
  if (ir_op_find(op->name)) return;
  ops[nops++] = op;
}

const OpDef *ir_op_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < nops; i++)
    if (strcmp(ops[i]->name, name) == 0) return ops[i];
  return NULL;
}

int ir_op_count(void) { return nops; }

const OpDef *ir_op_at(int i) { return i >= 0 && i < nops ? ops[i] : NULL; }
