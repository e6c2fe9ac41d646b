#!/bin/sh
# Winograd convolution end to end: each model of make_winograd_models.py is compiled with every eligible 3x3
# conv rewritten into Winograd (--pass-config AlterOpLayout.winograd=2), with F(4x4, 3x3) and with F(2x2, 3x3)
# (AlterOpLayout.winograd_tile=4 and 2), checked to contain nn.winograd_gemm, also by the default rule (=1),
# run, and compared with the float64 numpy reference of the direct conv (max relative error under 1e-4);
# then compiled with the rewrite off (=0) and checked not to contain it, so the comparison is of two paths.
# Between packed convs (wino_nchwc*) the Winograd conv must read and write NCHWc, with no layout transform, and
# a global pool after the last conv reads NCHWc too. A transformed weight larger than FoldConstant folds takes
# F(2x2) or no Winograd, so it is never computed at run time. A GEMM with large weight blocks prefetches them,
# in one pass where one register tile holds every tile.
# usage: test_winograd.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/winograd
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_winograd_models.py" "$dir"
# build M OUT TARGET [OPTION...]: compile model M to OUT.tar (its IR dumped to OUT.d)
build() {
  m_=$1 out_=$2 target_=$3
  shift 3
  "$mlc" compile "$dir/$m_.onnx" --target "$target_" "$@" --output "$out_.tar" --dump-ir "$out_.d" >/dev/null
}
# check M OUT [--threads N]: run OUT.tar on M's inputs and compare with its float64 reference
check() {
  m_=$1 out_=$2
  shift 2
  "$mlc" run "$out_.tar" --inputs "$dir/${m_}_inputs.npz" --outputs "$out_.npz" "$@"
  /usr/bin/python3 "$here/compare_npz.py" "$out_.npz" "$dir/${m_}_ref.npz" --tol 1e-4
}
# expect PATTERN FILE WHAT: fail with WHAT unless FILE has a line matching PATTERN
expect() { grep -q "$1" "$2" || { echo "FAIL $3"; exit 1; }; }
for m in $(printf "%s\n" wino_bias_relu wino_residual wino_block wino_nchwc16 wino_nchwc8 | sample); do
  for run in 2.4 2.2 1.0 0.0; do
    mode=${run%.*} tile=${run#*.} out="$dir/$m.$run"
    echo "== $m with AlterOpLayout.winograd=$mode AlterOpLayout.winograd_tile=$tile"
    build $m "$out" llvm --pass-config "AlterOpLayout.winograd=$mode" --pass-config "AlterOpLayout.winograd_tile=$tile"
    n=$(grep -c "nn.winograd_gemm" "$out.d/10_fused_groups.txt" || true)
    if [ "$mode" = 2 ] && [ "$n" = 0 ]; then echo "FAIL $m: no nn.winograd_gemm in the fused groups"; exit 1; fi
    if [ "$mode" = 0 ] && [ "$n" != 0 ]; then echo "FAIL $m: nn.winograd_gemm with the rewrite off"; exit 1; fi
    case "$m.$mode" in wino_nchwc*.2) # between packed convs the Winograd conv reads and writes NCHWc
      l="$out.d/15_after_DeadCodeElim.txt"
      if ! grep -q "nn.winograd_pad(.*data_block" "$l" || ! grep -q "nn.winograd_output(.*out_block" "$l" ||
        grep -q "to_nchw" "$l"; then echo "FAIL $m: the Winograd conv is not NCHWc in $l"; exit 1; fi
      if [ $m = wino_nchwc8 ] && ! grep -q "nn.global_avg_pool2d(.*data_block" "$l"; then
        echo "FAIL $m: the global pool does not read NCHWc in $l"; exit 1; fi;;
    esac
    check $m "$out"
  done
done
# The transformed weight must fold at compile time: with FoldConstant.max_bytes between wino_block's F(2x2) and
# F(4x4) weights (256 KiB, 576 KiB) its convs take F(2x2); below both they stay direct; never a weight transform
# left to run
for limit in 400000.2 200000.0; do
  bytes=${limit%.*} want=${limit#*.} out="$dir/wino_block.fold$bytes"
  echo "== wino_block with FoldConstant.max_bytes=$bytes"
  build wino_block "$out" llvm --pass-config AlterOpLayout.winograd=2 --pass-config "FoldConstant.max_bytes=$bytes"
  l="$out.d/15_after_DeadCodeElim.txt"
  if grep -q "nn.winograd_weight_transform" "$l"; then
    echo "FAIL wino_block: a weight transform at run time"; exit 1
  fi
  [ "$want" != 2 ] || expect "nn.winograd_input(.*tile=2" "$l" "wino_block: not F(2x2)"
  if [ "$want" = 0 ] && grep -q "nn.winograd" "$l"; then
    echo "FAIL wino_block: Winograd without its folded weight"; exit 1
  fi
  check wino_block "$out"
done
# Without AVX-512 (-mattr=-avx512f: the host's AVX2, where a 16-channel block is two vectors) the packed convs
# around the Winograd conv vectorize the block innermost with a tile that fits 16 registers
for m in wino_nchwc16 wino_nchwc8; do
  out="$dir/$m.avx2"
  echo "== $m with -mattr=-avx512f"
  build $m "$out" "llvm -mattr=-avx512f"
  check $m "$out"
done
# and a 3x3 stride-2 conv with 72 KiB of weights per block on an 8x8 map walks its input channel chunks outermost
# where that is over twice L1: -mcpu=haswell (AVX2, not the host CPU, so the default 32 KiB L1 rather than the
# host's: 48 KiB on Sapphire Rapids would keep the weights within 2 x L1)
out="$dir/chunks_nchwc.avx2"
echo "== chunks_nchwc with -mcpu=haswell"
build chunks_nchwc "$out" "llvm -mcpu=haswell"
expect "rc.outer\[[0-9]*\] reduce, i2\[8\]" "$out.d/20_schedules.txt" "chunks_nchwc: not order 2"
check chunks_nchwc "$out"
# a GEMM with 64 KiB weight blocks prefetches the next block (F(2x2) and F(4x4)): a prefetch in its schedule
# and its loop, the same answer
for tile in 2 4; do
  out="$dir/wino_stream.$tile"
  echo "== wino_stream with AlterOpLayout.winograd_tile=$tile"
  build wino_stream "$out" llvm --pass-config AlterOpLayout.winograd=2 --pass-config "AlterOpLayout.winograd_tile=$tile"
  expect "prefetch .*weight_winograd at .* ahead 1" "$out.d/20_schedules.txt" \
    "wino_stream: the GEMM does not prefetch its weights"
  expect "eval prefetch(" "$out.d/30_tir.txt" "wino_stream: no prefetch in the GEMM's loops"
  check wino_stream "$out"
done
# where U streams and every tile fits one register tile (AVX-512: 16 tiles x 1 block of 16 channels), the
# GEMM passes over U once; it runs where the host has AVX-512
out="$dir/wino_onepass"
build wino_onepass "$out" "llvm -mcpu=skylake-avx512" --pass-config AlterOpLayout.winograd=2 \
  --pass-config AlterOpLayout.winograd_tile=2
expect "i2.inner\[16\] unrolled" "$out.d/20_schedules.txt" "wino_onepass: not one register tile of 16 tiles"
expect "prefetch .*weight_winograd at .* ahead 1" "$out.d/20_schedules.txt" "wino_onepass: no prefetch"
if grep -qw avx512f /proc/cpuinfo; then check wino_onepass "$out"; fi
# the direct conv streams its weights the same way (planned for 2 cores, so its parallel loop keeps two
# iterations per core on any host)
out="$dir/conv_stream"
echo "== conv_stream"
build conv_stream "$out" "llvm -num-cores=2"
expect "prefetch conv_weight_pack at .* ahead 1" "$out.d/20_schedules.txt" \
  "conv_stream: the conv does not prefetch its weights"
expect "eval prefetch(" "$out.d/30_tir.txt" "conv_stream: no prefetch in the conv's loops"
check conv_stream "$out"
# an odd number of rows with more input than weights: rows outermost on two cores, blocks on one
for cores in 1 2; do
  out="$dir/rows_odd.$cores"
  echo "== rows_odd with -num-cores=$cores"
  build rows_odd "$out" "llvm -num-cores=$cores"
  want="i0.i1.outer.outer.fused.i2.fused\[35\] parallel"
  [ $cores = 1 ] || want="i0.i2.fused.i1.outer.outer.fused\[35\] parallel"
  expect "$want" "$out.d/20_schedules.txt" "rows_odd: not the order for $cores cores"
  check rows_odd "$out" --threads $cores
done
echo "winograd: all passed"
