#!/bin/sh
# mlc compile --freeze-inputs: ONNX backend tests whose shape-like inputs (Reduce's axes, Expand's and Tile's
# shapes, Pad's pads, Slice's starts.., OneHot's depth, Resize's scales, Range's bounds) are graph inputs. Without
# their values each model is refused (exit 3, the error points at --freeze-inputs); with them bound from a .npz it
# compiles, and `mlc run` takes the test's whole input set (the frozen values again, checked) and must match the
# expected outputs. The same run with a different frozen value, a value of the wrong dtype or shape, and a name
# that is not an input must each fail with a clear error.
# usage: test_freeze.sh MLC BUILD_DIR ONNX_TESTS_DIR
set -eu
mlc=$1 dir=$2/freeze node=$3/node
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
expect_fail() { # CODE WHAT CMD...: CMD must exit with CODE and print WHAT on stderr
  code=$1 what=$2
  shift 2
  set +e
  "$@" 2>"$dir/err.txt" >/dev/null
  rc=$?
  set -e
  if [ $rc -ne "$code" ] || ! grep -q -- "$what" "$dir/err.txt"; then
    echo "FAIL: '$*' exited $rc (want $code) with:"; cat "$dir/err.txt"; exit 1
  fi
}
for spec in test_reduce_sum_keepdims_random test_expand_dim_changed test_constant_pad test_constantofshape_int_zeros \
  test_tile test_slice test_onehot_with_axis:depth test_resize_upsample_scales_linear:scales \
  test_range_float_type_positive_delta:start,limit,delta; do
  t=${spec%%:*} extra=
  [ "$t" != "$spec" ] && extra=$(echo "${spec#*:}" | tr , ' ')
  echo "== $t"
  p=$dir/$t
  # shellcheck disable=SC2086
  /usr/bin/python3 "$here/make_freeze_case.py" "$node/$t" "$p" $extra
  expect_fail 3 "freeze-inputs" "$mlc" compile "$node/$t/model.onnx" --output "$p.tar"
  "$mlc" compile "$node/$t/model.onnx" --freeze-inputs "${p}_frozen.npz" --output "$p.tar"
  "$mlc" run "$p.tar" --inputs "${p}_all.npz" --outputs "${p}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "${p}_out.npz" "${p}_ref.npz" --tol 1e-5
  expect_fail 2 "bound to another value" "$mlc" run "$p.tar" --inputs "${p}_other.npz"
done
# the value must fit the input's declared type; the name must be an input; not given twice
p=$dir/test_tile
/usr/bin/python3 -c "import numpy as np; np.savez('${p}_f32.npz', y=np.array([1, 2], np.float32)); \
np.savez('${p}_rank.npz', y=np.array([[1, 2]], np.int64)); np.savez('${p}_name.npz', z=np.array([1, 2], np.int64))"
expect_fail 1 "input 'y' is int64 in the model, the value given is float32" \
  "$mlc" compile "$node/test_tile/model.onnx" --freeze-inputs "${p}_f32.npz" --output "$dir/x.tar"
expect_fail 1 "has shape \[1,2\]" "$mlc" compile "$node/test_tile/model.onnx" --freeze-inputs "${p}_rank.npz" \
  --output "$dir/x.tar"
expect_fail 1 "names 'z', which is not an input" \
  "$mlc" compile "$node/test_tile/model.onnx" --freeze-inputs "${p}_name.npz" --output "$dir/x.tar"
expect_fail 1 "given by both" "$mlc" compile "$node/test_tile/model.onnx" --freeze-inputs "${p}_frozen.npz" \
  --input-shapes "y:[2]" --output "$dir/x.tar"
expect_fail 1 "freeze-inputs" "$mlc" load "$node/test_tile/model.onnx" --freeze-inputs "$dir/missing.npz"
"$mlc" load "$node/test_tile/model.onnx" --freeze-inputs "${p}_frozen.npz" >/dev/null
[ ! -e "$dir/x.tar" ] || { echo "FAIL: a refused compile left $dir/x.tar"; exit 1; }
echo "freeze: all passed"
