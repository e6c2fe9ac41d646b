#!/bin/sh
# Install, as a packager and a downstream project use it: `cmake --install` into a temporary prefix, then
#  1. an outside CMake project finds it with find_package(mlc), compiles models/cnn_small.onnx with the
#     installed mlc (--output-format obj) and links the object with mlc::runtime_static;
#  2. a plain cc build with `pkg-config --cflags --libs mlc-runtime` links a program that loads the model
#     compiled as --output-format so through mlc_module_load from the shared libmlcrt.
# Both programs must print the same outputs as `mlc run` on the same seed-0 input.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2 dir=$1/install-test
rm -rf "$dir" && mkdir -p "$dir/proj"
prefix=$dir/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/mlc lib/libmlcrt.a lib/libmlcrt.so include/mlc/runtime.h lib/pkgconfig/mlc-runtime.pc \
         lib/cmake/mlc/mlcConfig.cmake lib/cmake/mlc/mlcTargets.cmake; do
  [ -e "$prefix/$f" ] || { echo "install: $f missing"; exit 1; }
done
mlc=$prefix/bin/mlc
model=$src/models/cnn_small.onnx

# 1. CMake package
cp "$src/examples/cnn_small/main.c" "$dir/proj/main.c"
cat > "$dir/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(outside C)
find_package(mlc 0.1 REQUIRED CONFIG)
add_custom_command(OUTPUT cnn.o cnn.h
  COMMAND \${MLC_EXECUTABLE} compile $model --output-format obj --module-name cnn --output cnn.o
  DEPENDS $model)
add_executable(outside main.c cnn.o)
target_include_directories(outside PRIVATE \${CMAKE_CURRENT_BINARY_DIR})
target_link_libraries(outside PRIVATE mlc::runtime_static)
set_target_properties(outside PROPERTIES C_STANDARD 17)
CM
cmake -S "$dir/proj" -B "$dir/proj/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$dir/proj/build" >/dev/null
"$dir/proj/build/outside" > "$dir/cmake_out.txt"

# 2. pkg-config, shared runtime, the model as a shared library
"$mlc" compile "$model" --output-format so --output "$dir/cnn.so" >/dev/null
cat > "$dir/load_so.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <mlc/runtime.h>
int main(int argc, char **argv) {
  mlc_module *m;
  if (mlc_module_load(argv[1], 1, &m)) { fprintf(stderr, "%s\n", mlc_rt_last_error()); return 1; }
  const mlc_tensor_info *in = mlc_module_input(m, 0), *out = mlc_module_output(m, 0);
  size_t n = 1, k = 1;
  for (int d = 0; d < in->ndim; d++) n *= (size_t)in->shape[d];
  for (int d = 0; d < out->ndim; d++) k *= (size_t)out->shape[d];
  float *x = malloc(n * sizeof *x);
  unsigned long long s = 0;
  for (size_t i = 0; i < n; i++) { /* splitmix64, as `mlc run` without --inputs */
    unsigned long long z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; z ^= z >> 31;
    x[i] = (float)((double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
  if (mlc_module_set_input(m, 0, x, n * sizeof *x) || mlc_module_run(m)) { fprintf(stderr, "%s\n", mlc_rt_last_error()); return 1; }
  const float *y = mlc_module_output_data(m, 0);
  for (size_t i = 0; i < k; i++) printf("%.9g\n", y[i]);
  mlc_module_free(m);
  free(x);
  return 0;
}
C
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c17 -o "$dir/load_so" "$dir/load_so.c" $(pkg-config --cflags --libs mlc-runtime) -Wl,-rpath,"$prefix/lib"
"$dir/load_so" "$dir/cnn.so" > "$dir/pc_out.txt"
ldd "$dir/load_so" | grep -q "$prefix/lib/libmlcrt.so" || { echo "load_so is not linked with the installed libmlcrt.so"; exit 1; }

"$mlc" compile "$model" --output "$dir/cnn.tar" >/dev/null
"$mlc" run "$dir/cnn.tar" --outputs "$dir/ref.npz"
for f in cmake_out.txt pc_out.txt; do
  /usr/bin/python3 - "$dir/ref.npz" "$dir/$f" <<'PY'
import sys, numpy as np
ref = np.load(sys.argv[1]); ref = ref[ref.files[0]].ravel().astype(np.float64)
got = np.loadtxt(sys.argv[2], dtype=np.float64).ravel()
if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-5, atol=1e-6):
    print(sys.argv[2], "differs from mlc run:\n", got, "\n", ref); sys.exit(1)
PY
done
echo "install ok: find_package(mlc) and pkg-config mlc-runtime"
