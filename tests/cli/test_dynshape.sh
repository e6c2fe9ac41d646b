#!/bin/sh
# Run-time shapes of data-dependent values end to end through the mlc CLI: each model of
# make_dynshape_models.py (Shape / Size of NonZero results as run-time values, reductions over the
# data-dependent axis, TopK with a run-time K = min(K, n), Gather along the data-dependent axis, ConstantOfShape
# and Expand of a run-time shape, Concat of pieces with different extents, and torchvision's SSD per-class
# post-processing exported by torch) is compiled and run on every data set (empty, typical and full extents),
# and out.npz must equal the numpy / torch reference, shapes included (within tol.txt's tolerance for the few
# computed in float arithmetic).
# usage: test_dynshape.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/dynshape
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_dynshape_models.py" "$dir" 2>/dev/null
for m in $(cat "$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  tol=$(awk -F'\t' -v m="$m" '$1 == m { print $2 }' "$dir/tol.txt")
  for inputs in "$dir/${m}"_inputs*.npz; do
    k=${inputs#"$dir/${m}_inputs"}
    k=${k%.npz}
    "$mlc" run "$dir/$m.tar" --inputs "$inputs" --outputs "$dir/${m}_out$k.npz"
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out$k.npz" "$dir/${m}_ref$k.npz" --tol "${tol:-0}"
  done
done
echo "dynshape: all passed"
