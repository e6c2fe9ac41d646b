/* src/cli/import: reading the model for load, compile and tune, with --input-shapes (fixing dynamic dims) and
 * --freeze-inputs (binding inputs to the values in a .npz, which makes them constants: what an op that needs a
 * value at compile time, such as Reshape's shape or Reduce's axes, asks for when it is a graph input). */
#include <string.h>
#include "cli/cli.h"
#include "frontends/onnx/onnx.h"
#include "runtime/rt.h"

int cli_import_model(Arena *a, const char *model, const char *shapes, const char *freeze, Graph **g, Diag *d) {
  OnnxImportOptions io = {0};
  if (shapes && onnx_parse_input_shapes(a, shapes, &io, d) != MLC_OK) return d->status;
  if (freeze) {
    char err[RT_ERRLEN];
    int narr = 0;
    rt_array *arr = NULL;
    if (rt_npz_read(freeze, &narr, &arr, err) != MLC_OK)
      return diag_set(d, MLC_ERR_USAGE, "--freeze-inputs: %s", err);
    int n = io.ninput_shapes;
    OnnxInputShape *all = arena_alloc(a, sizeof *all * (size_t)(n + narr + 1));
    if (n) memcpy(all, io.input_shapes, sizeof *all * (size_t)n);
    mlc_status st = MLC_OK;
    for (int j = 0; j < narr && st == MLC_OK; j++) {
      for (int i = 0; i < io.ninput_shapes && st == MLC_OK; i++)
        if (!strcmp(all[i].name, arr[j].name))
          st = diag_set(d, MLC_ERR_USAGE, "input '%s' is given by both --input-shapes and --freeze-inputs %s",
                        arr[j].name, freeze);
      if (st) break;
      OnnxInputShape *s = &all[n++];
      memset(s, 0, sizeof *s);
      s->name = arena_strdup(a, arr[j].name);
      s->ndim = arr[j].ndim;
      memcpy(s->dims, arr[j].shape, sizeof(int64_t) * (size_t)arr[j].ndim);
      s->dtype = arr[j].dtype;
      void *data = arena_alloc(a, arr[j].nbytes ? arr[j].nbytes : 1);
      memcpy(data, arr[j].data, arr[j].nbytes);
      s->data = data;
    }
    rt_arrays_free(narr, arr);
    if (st) return st;
    io.ninput_shapes = n;
    io.input_shapes = all;
  }
  return onnx_import_file(a, model, &io, g, d);
}
