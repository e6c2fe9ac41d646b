#!/bin/sh
# Linkable outputs, as a user builds them:
#  1. `--output-format so`: `mlc run model.so` gives the same outputs as `mlc run model.tar`;
#  2. `--output-format obj`: examples/cnn_small's plain Makefile turns the model into an executable linked with
#     the runtime library alone, whose printed outputs match `mlc run` on the same (seed 0) input, serial and
#     on a 2-thread pool; the object exports only the entry points.
# usage: test_linkable.sh MLC BUILD_DIR SOURCE_DIR
set -eu
mlc=$1 dir=$2/linkable src=$3
rm -rf "$dir" && mkdir -p "$dir"
model=$src/models/cnn_small.onnx
"$mlc" compile "$model" --output "$dir/m.tar" >/dev/null
"$mlc" compile "$model" --output-format so --output "$dir/m.so" >/dev/null
"$mlc" run "$dir/m.tar" --outputs "$dir/tar_out.npz"
"$mlc" run "$dir/m.so" --outputs "$dir/so_out.npz"
/usr/bin/python3 "$src/tests/cli/compare_npz.py" "$dir/so_out.npz" "$dir/tar_out.npz" --tol 1e-6
# the .so is loadable by the runtime only through its data symbols: check they are there
nm -D "$dir/m.so" | grep -q ' mlc_so_plan$'
# MLC_TEST_LDFLAGS: what a sanitizer build's runtime library needs at link (tests/CMakeLists.txt)
make -s -C "$src/examples/cnn_small" MLC="$mlc" CPPFLAGS="-I$src/include" MLCRT="$2/libmlcrt.a ${MLC_TEST_LDFLAGS:-}" \
  OUT="$dir/ex"
syms=$(nm -g --defined-only "$dir/ex/cnn.o" | awk '{print $3}' | sort | tr '\n' ' ')
[ "$syms" = "cnn_run cnn_run_ctx " ] || { echo "cnn.o exports more than its entry points: $syms"; exit 1; }
"$dir/ex/cnn_small" > "$dir/ex_out.txt"
"$dir/ex/cnn_small" 2 > "$dir/ex_out2.txt"
for f in ex_out.txt ex_out2.txt; do
  /usr/bin/python3 - "$dir/tar_out.npz" "$dir/$f" <<'PY'
import sys, numpy as np
ref = np.load(sys.argv[1])
ref = ref[ref.files[0]].ravel().astype(np.float64)
got = np.loadtxt(sys.argv[2], dtype=np.float64).ravel()
if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-5, atol=1e-6):
    print("example output differs from mlc run:\n", got, "\n", ref)
    sys.exit(1)
PY
done
echo "linkable outputs ok"
