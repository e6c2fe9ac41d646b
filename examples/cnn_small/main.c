/* examples/cnn_small: models/cnn_small.onnx linked straight into a C program (`mlc compile --output-format obj`).
 *
 * The model is cnn.o + cnn.h; the weights are constant data inside cnn.o, so nothing is read at run time. The
 * input is the same deterministic pseudo-random tensor `mlc run` uses when given no --inputs (splitmix64 from
 * seed 0, uniform in [-1, 1)); every output value is printed on its own line (%.9g). With an argument N > 1
 * the kernels' parallel loops run on a runtime thread pool of N threads (cnn_run_ctx). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "cnn.h"

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int main(int argc, char **argv) {
  static float input[CNN_INPUT0_SIZE], output[CNN_OUTPUT0_SIZE];
  uint64_t state = 0;
  for (int i = 0; i < CNN_INPUT0_SIZE; i++)
    input[i] = (float)((double)(splitmix64(&state) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  void *workspace = aligned_alloc(CNN_WORKSPACE_ALIGN, CNN_WORKSPACE_SIZE ? CNN_WORKSPACE_SIZE : CNN_WORKSPACE_ALIGN);
  if (!workspace) return 1;
  int threads = argc > 1 ? atoi(argv[1]) : 1, rc;
  if (threads > 1) {
    mlc_pool *pool = mlc_pool_create(threads);
    mlc_kernel_ctx ctx;
    mlc_pool_kernel_ctx(pool, &ctx);
    const void *ins[] = {input};
    void *outs[] = {output};
    rc = cnn_run_ctx(ins, outs, workspace, &ctx);
    mlc_pool_destroy(pool);
  } else {
    rc = cnn_run(input, output, workspace);
  }
  free(workspace);
  if (rc != 0) {
    fprintf(stderr, "cnn_run failed with code %d\n", rc);
    return 1;
  }
  for (int i = 0; i < CNN_OUTPUT0_SIZE; i++) printf("%.9g\n", output[i]);
  return 0;
}
