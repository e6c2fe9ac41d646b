/* libFuzzer target for the ONNX reader and importer (frontends/onnx): any byte string is a model file.
 *
 * Each input is written to one memfd and imported through onnx_import_file via /proc/self/fd/N, the path a
 * user's file takes (protobuf-c parsing, external data resolution relative to the model's folder, every
 * converter, type inference). The importer must return a status for anything it cannot take; a crash, leak
 * or undefined behaviour is a bug (ASan/UBSan report it). Built with clang-19 by `make fuzz`
 * (-DMLC_FUZZ=ON); each crash it finds becomes a file in tests/fuzz/regressions/, which the ctest
 * fuzz.regressions replays through the normal `mlc load`. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "frontends/onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("fuzz.onnx", 0);
    if (fd < 0) return 0;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) return 0;
  Arena *a = arena_new();
  Diag d = {0};
  OnnxImportOptions io = {0};
  Graph *g = NULL;
  if (onnx_import_file(a, path, &io, &g, &d) == MLC_OK && g) {
    StrBuf b = {0};
    ir_print(g, &b); /* the printer must cope with whatever the importer accepted */
    sb_free(&b);
  }
  arena_free(a);
  return 0;
}
