/* conv_block.c: the NCHW[x]c block of a conv from the tuning records (after TVM's AlterOpLayout, which asks
 * the dispatch context for the conv's config before it packs the weights).
 *
 * The conv2d_packed.x86 template has a knob tile_oc (src/topi/conv2d_x86.c): the output channel block of the
 * packed weight and of an NCHWc output. The block is a graph layout, decided by AlterOpLayout before the
 * packed conv (and so its workload key) exists, and ConvertLayoutNCHWc then adds data_block / out_block. So a
 * record is matched by the conv it describes, whatever its layout: data N, C, H, W (C = C/ib x ib for blocked
 * data), output channels (OC/ocb x ocb), kernel KH x KW, strides, padding and dilation. Among the valid
 * records of the target that match and carry tile_oc, the fastest gives the block. */
#include <cjson/cJSON.h>
#include <string.h>
#include "autotvm/autotvm.h"

typedef struct ConvShape {
  int64_t n, c, h, w, oc, kh, kw, strides[2], pad[4], dil[2];
} ConvShape;

static int64_t json_int(const cJSON *a, int i) {
  const cJSON *x = cJSON_GetArrayItem(a, i);
  return cJSON_IsNumber(x) ? (int64_t)x->valuedouble : -1;
}

/* an attribute array of kwargs (n values, else the defaults dflt) */
static bool json_ints(const cJSON *kw, const char *name, int n, const int64_t *dflt, int64_t *out) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(kw, name);
  for (int i = 0; i < n; i++) out[i] = dflt[i];
  if (!a) return true;
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) return false;
  for (int i = 0; i < n; i++) out[i] = json_int(a, i);
  return true;
}

/* the dims of args[i] = ["TENSOR", [dims], dtype] */
static int tensor_dims(const cJSON *args, int i, int64_t *dims) {
  const cJSON *t = cJSON_GetArrayItem(args, i), *d = t ? cJSON_GetArrayItem(t, 1) : NULL;
  if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) > MLC_MAX_DIMS) return -1;
  int n = cJSON_GetArraySize(d);
  for (int k = 0; k < n; k++) dims[k] = json_int(d, k);
  return n;
}

static const int64_t ones[4] = {1, 1, 1, 1}, zeros[4] = {0, 0, 0, 0};

/* the conv of a conv2d_packed.x86 record: input [target, task, args, kwargs] */
static bool record_conv(const char *line, ConvShape *s) {
  cJSON *root = cJSON_Parse(line);
  if (!root) return false;
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "input");
  const cJSON *args = cJSON_GetArrayItem(in, 2), *kw = cJSON_GetArrayItem(in, 3);
  int64_t x[MLC_MAX_DIMS], wt[MLC_MAX_DIMS];
  int xn = cJSON_IsArray(args) ? tensor_dims(args, 0, x) : -1, wn = xn > 0 ? tensor_dims(args, 1, wt) : -1;
  bool ok = cJSON_IsObject(kw) && (xn == 4 || xn == 5) && wn == xn + 1;
  if (ok) {
    s->n = x[0], s->c = xn == 5 ? x[1] * x[4] : x[1], s->h = x[2], s->w = x[3];
    s->oc = wt[0] * wt[wn - 1], s->kh = wt[2], s->kw = wt[3];
    ok = json_ints(kw, "strides", 2, ones, s->strides) && json_ints(kw, "padding", 4, zeros, s->pad) &&
         json_ints(kw, "dilation", 2, ones, s->dil);
  }
  cJSON_Delete(root);
  return ok;
}

/* the same of an nn.conv2d node (data [N, C, H, W], weight [OC, C, KH, KW]) */
static bool node_conv(const Node *n, ConvShape *s) {
  if (n->ninputs < 2 || !n->inputs[0] || !n->inputs[1]) return false;
  const TensorType *x = &n->inputs[0]->type, *w = &n->inputs[1]->type;
  if (x->ndim != 4 || w->ndim != 4) return false;
  s->n = x->dims[0], s->c = x->dims[1], s->h = x->dims[2], s->w = x->dims[3];
  s->oc = w->dims[0], s->kh = w->dims[2], s->kw = w->dims[3];
  memcpy(s->strides, ones, sizeof s->strides);
  memcpy(s->dil, ones, sizeof s->dil);
  memcpy(s->pad, zeros, sizeof s->pad);
  if (ir_attr_ints(n, "strides", s->strides, 2) == 1) s->strides[1] = s->strides[0];
  if (ir_attr_ints(n, "dilation", s->dil, 2) == 1) s->dil[1] = s->dil[0];
  ir_attr_ints(n, "padding", s->pad, 4);
  return true;
}

int64_t tune_apply_conv_block(void *user, const Node *conv) {
  const TuneApply *ap = user;
  ConvShape want, got;
  if (!ap || !ap->records || !node_conv(conv, &want)) return 0;
  const TuneRecord *best = NULL;
  int64_t block = 0;
  for (int i = 0; i < ap->records->v.n; i++) {
    const TuneRecord *r = &ap->records->v.v[i];
    if (r->error_no != TUNE_NO_ERROR || strcmp(r->task, "conv2d_packed.x86") || (ap->target && strcmp(r->target, ap->target)))
      continue;
    int64_t b = topi_config_get(&r->config, "tile_oc", 0);
    if (b <= 0 || (best && r->cost >= best->cost) || !record_conv(r->line, &got) || memcmp(&got, &want, sizeof got))
      continue;
    best = r;
    block = b;
  }
  return block;
}
