#!/bin/sh
# nn.dense_packed and the row form of nn.softmax end to end: every model of make_dense_models.py (Gemm transB
# 0/1, MatMul [K, N], M = 1 and M > 1, N a multiple of the weight block or not, bias/relu/residual epilogues;
# softmax / log-softmax rows; bmm_*: batch matmuls of run-time operands; ein_*: einsums LowerEinsum makes
# matmuls, einx_*: ones it leaves generic, each also compiled without the pass) must compile (the products all into nn.dense_packed), and `mlc run` must match
# the numpy reference (relative 1e-4) at 1 and 2 threads.
# Rows in two axes longer than 1 (an NHWC [1, H, W, C] input) must get a register tile of several rows; a weight
# panel that outgrows L1 a tile of more rows and fewer column vectors.
# usage: test_dense_packed.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/dense_packed
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
cases=$(/usr/bin/python3 "$here/make_dense_models.py" "$dir")
for c in $(printf "%s\n" $cases | sample); do
  echo "== $c"
  "$mlc" compile "$dir/$c.onnx" --target llvm --output "$dir/$c.tar" --dump-ir "$dir/$c.d" >/dev/null
  case $c in
  softmax_*x9) ;; # shorter than a vector: the generic form
  softmax_*) grep -q "softmax_sum_part" "$dir/$c.d/"*_schedules.txt || { echo "FAIL $c: not the row form"; exit 1; } ;;
  bmm_*) ;;
  ein_*|einx_*)
  if [ "${c#einx_}" = "$c" ]; then
    grep -Eq "nn\.(batch_matmul|matmul|dense_packed) " "$dir/$c.d/"*_fused_groups.txt || { echo "FAIL $c: not lowered to a matmul"; exit 1; }
    ! grep -Eq "^ +einsum " "$dir/$c.d/"*_fused_groups.txt || { echo "FAIL $c: an einsum is left"; exit 1; }
  else
    grep -Eq "^ +einsum " "$dir/$c.d/"*_fused_groups.txt || { echo "FAIL $c: should stay a generic einsum"; exit 1; }
  fi
  # the generic op must give the same result
  "$mlc" compile "$dir/$c.onnx" --target llvm --output "$dir/${c}_generic.tar" --disable-pass LowerEinsum >/dev/null
  "$mlc" run "$dir/${c}_generic.tar" --inputs "$dir/${c}_inputs.npz" --outputs "$dir/${c}_generic.npz" >/dev/null
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${c}_generic.npz" "$dir/${c}_ref.npz" --tol 1e-4 ;;
  *)
  case $c in
  matmul_residual_1x7x7x*|matmul_residual_2x6x10x*)
    # rows in two axes > 1 (NHWC): the register tile spans H x W fused, several rows, and its accumulator
    # covers just the tile (not every row: the region of h * W + w over a tile must be tight)
    r=$(grep -m1 -o "allocate dense_packed: float32\[[0-9]*" "$dir/$c.d/"*_tir.txt | grep -o "[0-9]*$")
    [ "$r" -ge 2 ] && [ "$r" -le 16 ] || { echo "FAIL $c: accumulator tile of $r rows"; exit 1; } ;;
  matmul_gelu_*)
    # the GELU's nodes read the product's value twice (a diamond): FuseOps keeps them in the product's kernel
    awk '/^fused/ { dense = 0 } /nn.dense_packed \(anchor\)/ { dense = 1 } /^  erf / && !dense { bad = 1 }
         END { exit bad }' "$dir/$c.d/"*_fused_groups.txt ||
      { echo "FAIL $c: the GELU is not in the product's kernel"; exit 1; } ;;
  matmul_residual_1x197x96)
    # AVX-512 with 32 KiB of L1: a 4 x 6-vector tile's 36 KiB weight panel comes from L2 for every row
    # tile, so the fallback takes 8 rows x 3 vectors (half the weight traffic)
    "$mlc" compile "$dir/$c.onnx" --target "llvm -mcpu=skylake-avx512" --output "$dir/${c}_avx512.tar" \
      --dump-ir "$dir/${c}_avx512.d" >/dev/null
    grep -q "allocate dense_packed: float32\[8, 3, 16\]" "$dir/${c}_avx512.d/"*_tir.txt ||
      { echo "FAIL $c: not the 8 x 3 register tile"; exit 1; } ;;
  esac
  grep -q "nn.dense_packed" "$dir/$c.d/"*_fused_groups.txt || { echo "FAIL $c: no nn.dense_packed"; exit 1; }
  if grep -Eq "nn\.(dense|matmul|batch_matmul) " "$dir/$c.d/"*_fused_groups.txt; then
    echo "FAIL $c: a product was not packed"; exit 1
  fi ;;
  esac
  for t in 1 2; do
    "$mlc" run "$dir/$c.tar" --inputs "$dir/${c}_inputs.npz" --outputs "$dir/${c}_out$t.npz" --threads $t >/dev/null
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${c}_out$t.npz" "$dir/${c}_ref.npz" --tol 1e-4
  done
done
