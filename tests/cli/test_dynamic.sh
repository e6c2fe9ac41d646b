#!/bin/sh
# Data-dependent output shapes end to end through the mlc CLI: each model of make_dynamic_models.py
# (NonMaxSuppression, Unique, NonZero, Compress on run-time inputs, and readers of their outputs that carry the
# extent: gathers, masked selects, elementwise ops, MatMul, convs per selected crop, Winograd ones too) is compiled and run on every data set, and out.npz
# must equal the numpy / torch reference exactly (within tol.txt's tolerance for the few computed in float
# arithmetic), shapes included (the trimmed arrays); each also compiles for --target cuda (not run: no GPU
# needed) and, where ptxas is installed, its PTX assembles. The models in fail.txt (a reader that cannot carry
# the data-dependent shape, a max_output_boxes_per_class only known at run time) must fail to compile with exit
# code 3 (unsupported) and the message given there.
# usage: test_dynamic.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/dynamic
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_dynamic_models.py" "$dir"
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
# mlc run --json reports the run's shape of a data-dependent output
for m in nonzero_f32 masked_index; do # compiled above unless sampled out
  [ -f "$dir/$m.tar" ] || "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
done
"$mlc" run "$dir/nonzero_f32.tar" --inputs "$dir/nonzero_f32_inputs2.npz" --json >"$dir/run.json"
grep -q '"shape":\[3,0\]' "$dir/run.json" || { echo "FAIL: --json does not give the trimmed shape"; cat "$dir/run.json"; exit 1; }
# and of one derived from it (x[x > t] with nothing above t)
"$mlc" run "$dir/masked_index.tar" --inputs "$dir/masked_index_inputs2.npz" --json >"$dir/run2.json"
grep -q '"shape":\[0\]' "$dir/run2.json" || { echo "FAIL: --json does not give the derived trimmed shape"; cat "$dir/run2.json"; exit 1; }
# the box head's convs on a data-dependent number of crops run as Winograd convs (the tiles of the valid crops lead)
"$mlc" compile "$dir/crop_box_head.onnx" --output "$dir/crop_box_head.tar" --dump-ir "$dir/crop_box_head.ir" >/dev/null
n=$(grep -c "nn.winograd_gemm(" "$dir/crop_box_head.ir/15_after_DeadCodeElim.txt" || true)
[ "$n" = 2 ] || { echo "FAIL crop_box_head: $n Winograd convs, want 2"; exit 1; }
tab=$(printf '\t')
while IFS="$tab" read -r m msg; do
  echo "== $m (must fail)"
  rc=0
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar" 2>"$dir/$m.err" || rc=$?
  cat "$dir/$m.err"
  if [ "$rc" != 3 ]; then echo "FAIL $m: exit code $rc, want 3"; exit 1; fi
  if ! grep -qF "$msg" "$dir/$m.err"; then echo "FAIL $m: the message lacks: $msg"; exit 1; fi
  if [ -e "$dir/$m.tar" ]; then echo "FAIL $m: a package was written"; exit 1; fi
done <"$dir/fail.txt"
echo "dynamic: all passed"
