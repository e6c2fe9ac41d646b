#!/bin/sh
# Winograd convolution end to end: each model of make_winograd_models.py is compiled with every eligible 3x3
# conv rewritten into nn.conv2d_winograd (--pass-config AlterOpLayout.winograd=2), checked to contain it,
# run, and compared with the float64 numpy reference of the direct conv (max relative error under 1e-4);
# then compiled with the rewrite off (=0) and checked not to contain it, so the comparison is of two paths.
# usage: test_winograd.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/winograd
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_winograd_models.py" "$dir"
for m in wino_bias_relu wino_residual wino_block; do
  for mode in 2 0; do
    echo "== $m with AlterOpLayout.winograd=$mode"
    "$mlc" compile "$dir/$m.onnx" --target llvm --pass-config "AlterOpLayout.winograd=$mode" \
      --output "$dir/$m.$mode.tar" --dump-ir "$dir/$m.$mode.d"
    n=$(grep -c "nn.winograd_gemm" "$dir/$m.$mode.d/10_fused_groups.txt" || true)
    if [ "$mode" = 2 ] && [ "$n" = 0 ]; then echo "FAIL $m: no nn.winograd_gemm in the fused groups"; exit 1; fi
    if [ "$mode" = 0 ] && [ "$n" != 0 ]; then echo "FAIL $m: nn.winograd_gemm with the rewrite off"; exit 1; fi
    "$mlc" run "$dir/$m.$mode.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.$mode.npz"
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.$mode.npz" "$dir/${m}_ref.npz" --tol 1e-4
  done
done
echo "winograd: all passed"
