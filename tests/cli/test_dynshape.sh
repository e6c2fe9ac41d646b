#!/bin/sh
# Run-time shapes of data-dependent values end to end through the mlc CLI: each model of
# make_dynshape_models.py (Shape / Size of NonZero results as run-time values, reductions over the
# data-dependent axis, TopK with a run-time K = min(K, n), Gather along the data-dependent axis, ConstantOfShape
# and Expand of a run-time shape, Concat of pieces with different extents, and torchvision's SSD per-class
# post-processing exported by torch) is compiled and run on every data set (empty, typical and full extents),
# and out.npz must equal the numpy / torch reference, shapes included (within tol.txt's tolerance for the few
# computed in float arithmetic). Each also compiles for --target cuda (not run: no GPU needed) and, where ptxas
# is installed, its PTX assembles.
# usage: test_dynshape.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/dynshape
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_dynshape_models.py" "$dir" 2>/dev/null
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for m in $(sample <"$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  "$mlc" compile "$dir/$m.onnx" --target cuda --output "$dir/$m.cuda.tar" >/dev/null # NVPTX compiles too
  if [ -x "$ptxas" ]; then
    mkdir -p "$dir/$m.ptx" && (cd "$dir/$m.ptx" && tar xf "../$m.cuda.tar" mod.ptx)
    "$ptxas" -arch=sm_90 "$dir/$m.ptx/mod.ptx" -o "$dir/$m.ptx/mod.cubin" || { echo "FAIL $m: ptxas"; exit 1; }
  fi
  tol=$(awk -F'\t' -v m="$m" '$1 == m { print $2 }' "$dir/tol.txt")
  for inputs in "$dir/${m}"_inputs*.npz; do
    k=${inputs#"$dir/${m}_inputs"}
    k=${k%.npz}
    "$mlc" run "$dir/$m.tar" --inputs "$inputs" --outputs "$dir/${m}_out$k.npz"
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out$k.npz" "$dir/${m}_ref$k.npz" --tol "${tol:-0}"
  done
done
echo "dynshape: all passed"
