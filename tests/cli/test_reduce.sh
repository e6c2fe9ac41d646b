#!/bin/sh
# Reductions over the innermost axis and layer norm end to end: each model of make_reduce_models.py is
# compiled, run and compared with its float64 numpy reference (max relative error under 1e-4). Every model
# that reduces its last axis by at least a vector (and has few enough rows) must schedule the row form (a
# "reduce_partial" stage); the decomposed layer norms must compile to nn.layer_norm (LayerNormFusion).
# usage: test_reduce.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/reduce
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_reduce_models.py" "$dir"
for m in $(cat "$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar" --dump-ir "$dir/$m.d"
  case $m in
  mean_outer_axis | ln_pow_small_row | sum_many_short_rows) ;;
  *) if ! grep -q reduce_partial "$dir/$m.d/20_schedules.txt"; then echo "FAIL $m: no reduce_partial stage"; exit 1; fi ;;
  esac
  if grep -qx "$m" "$dir/layernorm.txt" && ! grep -q nn.layer_norm "$dir/$m.d/10_fused_groups.txt"; then
    echo "FAIL $m: not fused into nn.layer_norm"
    exit 1
  fi
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4
done
echo "reduce: all passed"
