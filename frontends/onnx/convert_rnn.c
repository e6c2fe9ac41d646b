/* ONNX converters of the rnn family: RNN, GRU, LSTM (all opsets: 1/3/7/14/22) -> nn.rnn / nn.gru / nn.lstm
 * (src/topi/rnn.c).
 *
 * Normalisation: direction string -> 0 forward / 1 reverse / 2 bidirectional; layout (opset 14+, default 0);
 * clip kept only when given; activations lower-cased and completed to num_directions x per-cell count (the
 * defaults Tanh; Sigmoid, Tanh; Sigmoid, Tanh, Tanh; one direction's list repeated for bidirectional);
 * activation_alpha / activation_beta consumed in order by the activations that take them (as ONNX Runtime
 * does) and written aligned with the activations, with each activation's own default where none is left
 * (LeakyRelu 0.01, ThresholdedRelu 1, HardSigmoid 0.2 / 0.5, Elu 1, Affine 1 / 0, ScaledTanh 1 / 1).
 * Opset 1 GRU/LSTM `output_sequence` only says whether Y is produced, which the output names already say. */
#include <ctype.h>
#include <string.h>
#include "frontends/onnx/onnx.h"

typedef struct ActDef {
  const char *name;
  bool has_alpha, has_beta;
  double alpha, beta;
} ActDef;

static const ActDef acts[] = {
    {"relu"},    {"tanh"}, {"sigmoid"}, {"affine", true, true, 1.0, 0.0}, {"leakyrelu", true, false, 0.01, 0},
    {"thresholdedrelu", true, false, 1.0, 0}, {"scaledtanh", true, true, 1.0, 1.0},
    {"hardsigmoid", true, true, 0.2, 0.5},    {"elu", true, false, 1.0, 0},   {"softsign"}, {"softplus"},
};

static mlc_status convert_recurrent(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d, const char *op, int na,
                                    int nin, int nout) {
  Graph *g = onnx_graph(cx);
  Arena *A = g->arena;
  if (n->ninputs < 3 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2])
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%s needs inputs X, W and R", n->op_type);
  const char *dirs = onnx_attr_string(n, "direction", "forward");
  int dir = !strcmp(dirs, "forward") ? 0 : !strcmp(dirs, "reverse") ? 1 : !strcmp(dirs, "bidirectional") ? 2 : -1;
  if (dir < 0) return onnx_error(cx, n, d, MLC_ERR_INVALID, "unknown direction '%s'", dirs);
  int D = dir == 2 ? 2 : 1;
  int64_t layout = n->opset >= 14 ? onnx_attr_int(n, "layout", 0) : 0;
  if (layout != 0 && layout != 1) return onnx_error(cx, n, d, MLC_ERR_INVALID, "layout must be 0 or 1");

  /* activations */
  const char *given[8];
  int ng = onnx_attr_strings(n, "activations", given, 8);
  static const char *dflt[3][3] = {{"tanh"}, {"sigmoid", "tanh"}, {"sigmoid", "tanh", "tanh"}};
  const char *names[6];
  if (ng > 8 || (ng >= 0 && ng != na && ng != na * D))
    return onnx_error(cx, n, d, MLC_ERR_INVALID, "%d activations given, expected %d", ng, na * D);
  for (int i = 0; i < na * D; i++) {
    const char *s = ng > 0 ? given[i % ng] : dflt[na - 1][i % na];
    char *low = arena_strdup(A, s);
    for (char *p = low; *p; p++) *p = (char)tolower((unsigned char)*p);
    names[i] = low;
  }
  double al_in[8], be_in[8], al[6], be[6];
  int nal = onnx_attr_floats(n, "activation_alpha", al_in, 8), nbe = onnx_attr_floats(n, "activation_beta", be_in, 8);
  int ia = 0, ib = 0;
  for (int i = 0; i < na * D; i++) {
    const ActDef *ad = NULL;
    for (size_t j = 0; j < sizeof acts / sizeof acts[0]; j++)
      if (!strcmp(acts[j].name, names[i])) ad = &acts[j];
    if (!ad) return onnx_error(cx, n, d, MLC_ERR_UNSUPPORTED, "activation '%s' is not supported", names[i]);
    al[i] = ad->alpha;
    be[i] = ad->beta;
    if (ad->has_alpha && ia < nal && ia < 8) al[i] = al_in[ia++];
    if (ad->has_beta && ib < nbe && ib < 8) be[i] = be_in[ib++];
  }

  Value *ins[8] = {0};
  int ni = 0;
  for (int i = 0; i < n->ninputs && i < nin; i++) {
    ins[i] = n->inputs[i];
    if (ins[i]) ni = i + 1;
  }
  Node *nd = onnx_emit(cx, n, op, ni, ins, nout, d);
  if (!nd) return d->status != MLC_OK ? d->status : MLC_ERR_INTERNAL;
  ir_set_int(g, nd, "hidden_size", onnx_attr_int(n, "hidden_size", 0));
  ir_set_int(g, nd, "direction", dir);
  ir_set_int(g, nd, "layout", layout);
  if (onnx_has_attr(n, "clip")) ir_set_float(g, nd, "clip", onnx_attr_float(n, "clip", 0));
  if (!strcmp(op, "nn.gru")) ir_set_int(g, nd, "linear_before_reset", onnx_attr_int(n, "linear_before_reset", 0));
  if (!strcmp(op, "nn.lstm")) ir_set_int(g, nd, "input_forget", onnx_attr_int(n, "input_forget", 0));
  ir_set_strings(g, nd, "activations", names, na * D);
  ir_set_floats(g, nd, "activation_alpha", al, na * D);
  ir_set_floats(g, nd, "activation_beta", be, na * D);
  mlc_status st = onnx_finish(cx, n, nd, d);
  if (st) return st;
  for (int i = 0; i < n->noutputs && i < nout; i++)
    outs[i] = n->output_names && n->output_names[i] && *n->output_names[i] ? nd->outputs[i] : NULL;
  return MLC_OK;
}

static mlc_status conv_rnn(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return convert_recurrent(cx, n, outs, d, "nn.rnn", 1, 6, 2);
}
static mlc_status conv_gru(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return convert_recurrent(cx, n, outs, d, "nn.gru", 2, 6, 2);
}
static mlc_status conv_lstm(OnnxCtx *cx, const OnnxNode *n, Value **outs, Diag *d) {
  return convert_recurrent(cx, n, outs, d, "nn.lstm", 3, 8, 3);
}

const OnnxConverter onnx_ops_rnn[] = {
    /* op_type domain converter */
    {"RNN", "", conv_rnn},
    {"GRU", "", conv_gru},
    {"LSTM", "", conv_lstm},
    {0},
};
