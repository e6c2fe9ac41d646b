/* kernels.json: what each kernel of a compilation is, for `mlc run --profile`.
 *
 * {"version":1,"kernels":[{"name":"fused_nn_conv2d_add_nn_relu_3","ops":["nn.conv2d","add","nn.relu"],
 *  "flops":N}]} in kernel (plan) order, with flops = 2 x the multiply-accumulates of the group's nodes that
 * ir_node_macs counts (0 where none is known). The package carries it as the tar member kernels.json and a
 * shared library as the data symbol mlc_so_kernels; the runtime itself never needs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver/driver.h"

static void json_str(StrBuf *b, const char *s) {
  sb_printf(b, "\"");
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') sb_printf(b, "\\%c", *p);
    else if (*p < 0x20) sb_printf(b, "\\u%04x", *p);
    else sb_printf(b, "%c", *p);
  }
  sb_printf(b, "\"");
}

char *mlc_kernels_json(const Compiled *c) {
  StrBuf b = {0};
  sb_printf(&b, "{\"version\":1,\"kernels\":[");
  for (int k = 0; k < c->kernels.n; k++) {
    const Kernel *kr = &c->kernels.v[k];
    sb_printf(&b, "%s\n {\"name\":", k ? "," : "");
    json_str(&b, kr->func->name);
    sb_printf(&b, ",\"ops\":[");
    int64_t macs = 0;
    for (int i = 0; kr->group && i < kr->group->nodes.n; i++) {
      const Node *n = kr->group->nodes.v[i];
      if (i) sb_printf(&b, ",");
      json_str(&b, n->op ? n->op->name : "?");
      int64_t m = ir_node_macs(n);
      macs = m > INT64_MAX / 2 - macs ? INT64_MAX / 2 : macs + m;
    }
    sb_printf(&b, "],\"flops\":%lld}", (long long)(2 * macs));
  }
  sb_printf(&b, "]}\n");
  return b.s;
}
