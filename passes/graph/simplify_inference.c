/* SimplifyInference: what only matters for training goes away. Identity and inference-mode Dropout (both the
 * graph op "copy") are bypassed: their readers read the input directly. A copy whose output is a graph output
 * stays (the output keeps its ONNX name). BatchNormalization is rewritten by the importer into a per-channel
 * multiply and add whose constant scale and shift FoldConstant then folds, so conv + batch-norm becomes conv
 * + bias in one fused kernel. */
#include <string.h>
#include "passes/graph/passes.h"

mlc_status pass_simplify_inference(Graph *g, const PassOptions *opt, Diag *d) {
  (void)opt;
  (void)d;
  int kept = 0;
  for (int i = 0; i < g->nodes.n; i++) {
    Node *n = g->nodes.v[i];
    if (!strcmp(n->op->name, "copy") && n->inputs[0] && !pass_is_graph_output(g, n->outputs[0])) {
      pass_replace_uses(g, n->outputs[0], n->inputs[0]);
      continue;
    }
    g->nodes.v[kept++] = n;
  }
  g->nodes.n = kept;
  return MLC_OK;
}
