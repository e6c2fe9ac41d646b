// The graph printer, in Relay's text style:
//
//   def @main(%data: Tensor[(1, 3, 224, 224), float32]) {
//     %0 = nn.conv2d(%data, meta[const][0] /* ty=Tensor[(64, 3, 7, 7), float32] */, strides=[2, 2]) /* ty=... */;
//     %1 = split(%0, sections=2) /* ty=(Tensor[...], Tensor[...]) */;
//     %2 = add(%1.0, %1.1) /* ty=... */;
//     %2 /* outputs */
//   }
//
// Graph inputs print by name, node results as %<position in node order> (and %k.i for multi-output nodes),
// constants as meta[const][k] numbered by first use, or as their value when they have one element.
// Attributes print in the order they were set, which converters fix, so the text is deterministic.
// Values are named through a pointer-sorted table, so passes may reuse ids freely.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

typedef struct PtrIdx {
  const void *p;
  int idx;
} PtrIdx;

static int ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const PtrIdx *)a)->p, y = (uintptr_t)((const PtrIdx *)b)->p;
  return x < y ? -1 : x > y;
}

static int ptr_find(const PtrIdx *t, int n, const void *p) {
  if (!t) return -1;
  PtrIdx key = {p, 0};
  const PtrIdx *r = bsearch(&key, t, (size_t)n, sizeof *t, ptr_cmp);
  return r ? r->idx : -1;
}

typedef struct Printer {
  const Graph *g;
  StrBuf *b;
  PtrIdx *nodes; /* node -> position */
  PtrIdx *vals;  /* value -> position in g->values */
  int *const_id; /* per value position: meta[const] index, -1 if none yet */
  int nconst;
  int indent;
} Printer;

static void print_graph(const Graph *g, StrBuf *b, int indent);

/* The shortest text that reads back as the same value: as a float when the value is one (0.35f, not
 * 0.349999994f), else as a double. */
static void print_float(StrBuf *b, double f, const char *suffix) {
  char tmp[64];
  bool is_float = (double)(float)f == f;
  for (int p = is_float ? 6 : 15; p <= (is_float ? 9 : 17); p++) {
    snprintf(tmp, sizeof tmp, "%.*g", p, f);
    double back = strtod(tmp, NULL);
    if (is_float ? (float)back == (float)f : back == f) break;
  }
  sb_printf(b, "%s%s", tmp, suffix);
}

static void print_scalar(StrBuf *b, const Value *v) {
  const void *p = v->data;
  switch (v->type.dtype) {
  case MLC_F32: print_float(b, *(const float *)p, "f"); break;
  case MLC_F64: print_float(b, *(const double *)p, "f64"); break;
  case MLC_I8: sb_printf(b, "%di8", *(const int8_t *)p); break;
  case MLC_U8: sb_printf(b, "%uu8", *(const uint8_t *)p); break;
  case MLC_I16: sb_printf(b, "%di16", *(const int16_t *)p); break;
  case MLC_U16: sb_printf(b, "%uu16", *(const uint16_t *)p); break;
  case MLC_I32: sb_printf(b, "%" PRId32, *(const int32_t *)p); break;
  case MLC_U32: sb_printf(b, "%" PRIu32 "u32", *(const uint32_t *)p); break;
  case MLC_I64: sb_printf(b, "%" PRId64 "i64", *(const int64_t *)p); break;
  case MLC_U64: sb_printf(b, "%" PRIu64 "u64", *(const uint64_t *)p); break;
  case MLC_BOOL: sb_printf(b, "%s", *(const uint8_t *)p ? "True" : "False"); break;
  case MLC_F16: sb_printf(b, "0x%04xf16", *(const uint16_t *)p); break;
  case MLC_BF16: sb_printf(b, "0x%04xbf16", *(const uint16_t *)p); break;
  case MLC_I4: case MLC_I2: sb_printf(b, "%d%s", *(const int8_t *)p, mlc_dtype_name(v->type.dtype)); break;
  case MLC_U4: case MLC_U2: sb_printf(b, "%u%s", *(const uint8_t *)p, mlc_dtype_name(v->type.dtype)); break;
  case MLC_F8E4M3FN: case MLC_F8E4M3FNUZ: case MLC_F8E5M2: case MLC_F8E5M2FNUZ: case MLC_F4E2M1: case MLC_F8E8M0:
    sb_printf(b, "0x%02x%s", *(const uint8_t *)p, mlc_dtype_name(v->type.dtype));
    break;
  default: sb_printf(b, "?"); break;
  }
}

static void print_value(Printer *P, const Value *v) {
  StrBuf *b = P->b;
  if (!v) {
    sb_printf(b, "None");
    return;
  }
  if (v->data) {
    if (tt_numel(&v->type) == 1 && mlc_dtype_size(v->type.dtype) > 0) {
      print_scalar(b, v);
      return;
    }
    int vi = ptr_find(P->vals, P->g->values.n, v);
    int k;
    if (vi >= 0) {
      if (P->const_id[vi] < 0) P->const_id[vi] = P->nconst++;
      k = P->const_id[vi];
    } else {
      k = -1; /* a constant of an outer graph */
    }
    if (k >= 0) sb_printf(b, "meta[const][%d] /* ty=", k);
    else sb_printf(b, "meta[const][%s] /* ty=", v->name ? v->name : "?");
    tt_print(b, &v->type);
    sb_printf(b, " */");
    return;
  }
  int ni = v->producer ? ptr_find(P->nodes, P->g->nodes.n, v->producer) : -1;
  if (ni >= 0) {
    if (v->producer->noutputs > 1) sb_printf(b, "%%%d.%d", ni, v->producer_out);
    else sb_printf(b, "%%%d", ni);
    return;
  }
  sb_printf(b, "%%%s", v->name ? v->name : "?"); /* a graph input, or a value of an outer scope */
}

static void print_attr(Printer *P, const Attr *at) {
  StrBuf *b = P->b;
  sb_printf(b, "%s=", at->name);
  switch (at->kind) {
  case ATTR_INT: sb_printf(b, "%" PRId64, at->i); break;
  case ATTR_FLOAT: print_float(b, at->f, "f"); break;
  case ATTR_STRING: sb_printf(b, "\"%s\"", at->s ? at->s : ""); break;
  case ATTR_INTS:
    sb_putc(b, '[');
    for (int i = 0; i < at->n; i++) sb_printf(b, "%s%" PRId64, i ? ", " : "", at->ints[i]);
    sb_putc(b, ']');
    break;
  case ATTR_FLOATS:
    sb_putc(b, '[');
    for (int i = 0; i < at->n; i++) {
      if (i) sb_printf(b, ", ");
      print_float(b, at->floats[i], "f");
    }
    sb_putc(b, ']');
    break;
  case ATTR_STRINGS:
    sb_putc(b, '[');
    for (int i = 0; i < at->n; i++) sb_printf(b, "%s\"%s\"", i ? ", " : "", at->strs[i] ? at->strs[i] : "");
    sb_putc(b, ']');
    break;
  case ATTR_TENSOR: print_value(P, at->tensor); break;
  case ATTR_GRAPH:
    if (!at->graph) {
      sb_printf(b, "None");
      break;
    }
    sb_printf(b, "\n");
    print_graph(at->graph, b, P->indent + 2);
    for (int i = 0; i < P->indent + 2; i++) sb_putc(b, ' ');
    break;
  }
}

/* a data-dependent value adds which axis is bounded and the value that holds its extent (an output of the
 * NonZero / NonMaxSuppression / Unique / Compress node it comes from) */
static void print_out_type(Printer *P, const Value *v) {
  tt_print(P->b, &v->type);
  if (!v->dyn_extent) return;
  sb_printf(P->b, " dynamic(axis=%d, extent=", v->dyn_axis);
  print_value(P, v->dyn_extent);
  sb_putc(P->b, ')');
}

static void print_type_of(Printer *P, const Node *n) {
  StrBuf *b = P->b;
  if (n->noutputs == 1) {
    print_out_type(P, n->outputs[0]);
    return;
  }
  sb_putc(b, '(');
  for (int i = 0; i < n->noutputs; i++) {
    if (i) sb_printf(b, ", ");
    print_out_type(P, n->outputs[i]);
  }
  sb_putc(b, ')');
}

static void print_graph(const Graph *g, StrBuf *b, int indent) {
  Printer P = {.g = g, .b = b, .indent = indent};
  int nn = g->nodes.n, nv = g->values.n;
  P.nodes = malloc(sizeof(PtrIdx) * (size_t)(nn + 1));
  P.vals = malloc(sizeof(PtrIdx) * (size_t)(nv + 1));
  P.const_id = malloc(sizeof(int) * (size_t)(nv + 1));
  if (!P.nodes || !P.vals || !P.const_id) {
    sb_printf(b, "<out of memory>\n");
    goto done;
  }
  for (int i = 0; i < nn; i++) P.nodes[i] = (PtrIdx){g->nodes.v[i], i};
  for (int i = 0; i < nv; i++) {
    P.vals[i] = (PtrIdx){g->values.v[i], i};
    P.const_id[i] = -1;
  }
  qsort(P.nodes, (size_t)nn, sizeof *P.nodes, ptr_cmp);
  qsort(P.vals, (size_t)nv, sizeof *P.vals, ptr_cmp);

  for (int i = 0; i < indent; i++) sb_putc(b, ' ');
  sb_printf(b, "def @%s(", g->name ? g->name : "main");
  for (int i = 0; i < g->inputs.n; i++) {
    const Value *v = g->inputs.v[i];
    sb_printf(b, "%s%%%s: ", i ? ", " : "", v->name ? v->name : "?");
    tt_print(b, &v->type);
  }
  sb_printf(b, ") {\n");
  for (int k = 0; k < nn; k++) {
    const Node *n = g->nodes.v[k];
    for (int i = 0; i < indent + 2; i++) sb_putc(b, ' ');
    sb_printf(b, "%%%d = %s(", k, n->op ? n->op->name : "?");
    for (int i = 0; i < n->ninputs; i++) {
      if (i) sb_printf(b, ", ");
      print_value(&P, n->inputs[i]);
    }
    for (int i = 0; i < n->nattrs; i++) {
      sb_printf(b, "%s", i || n->ninputs ? ", " : "");
      print_attr(&P, &n->attrs[i]);
    }
    sb_printf(b, ") /* ty=");
    print_type_of(&P, n);
    sb_printf(b, " */;\n");
  }
  for (int i = 0; i < indent + 2; i++) sb_putc(b, ' ');
  if (g->outputs.n == 1) {
    print_value(&P, g->outputs.v[0]);
  } else {
    sb_putc(b, '(');
    for (int i = 0; i < g->outputs.n; i++) {
      if (i) sb_printf(b, ", ");
      print_value(&P, g->outputs.v[i]);
    }
    sb_putc(b, ')');
  }
  sb_printf(b, " /* outputs */\n");
  for (int i = 0; i < indent; i++) sb_putc(b, ' ');
  sb_printf(b, "}\n");
done:
  free(P.nodes);
  free(P.vals);
  free(P.const_id);
}

void ir_print(const Graph *g, StrBuf *b) { print_graph(g, b, 0); }
