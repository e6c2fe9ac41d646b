/* Registers every op family's OpDefs (families.def) into the graph IR's registry, once. */
#include "topi/topi.h"

#define FAMILY(x) extern const OpDef topi_ops_##x[];
#include "topi/families.def"
#undef FAMILY

void topi_register_ops(void) {
  static bool done;
  if (done) return;
  done = true;
  const OpDef *tables[] = {
#define FAMILY(x) topi_ops_##x,
#include "topi/families.def"
#undef FAMILY
  };
  for (size_t t = 0; t < countof(tables); t++)
    for (const OpDef *op = tables[t]; op->name; op++) ir_op_register(op);
}
