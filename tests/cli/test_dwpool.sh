#!/bin/sh
# Depthwise convolution and window pools end to end: each model of make_dwpool_models.py is compiled, run and
# compared with its float64 numpy reference (max relative error under 1e-4); the depthwise models must compile
# to nn.depthwise_conv2d (AlterOpLayout's rewrite), the ones between packed convs (dwc_*) to its NCHWc form
# (ConvertLayoutNCHWc's data_block), the pools to the padded-input form (a pool_pad stage), and the pools
# between packed convs (poolc_*) to the NCHWc form; a concatenate of packed convs' outputs in one block (catc_*)
# concatenates NCHWc blocks, one with different blocks or the graph input among its inputs (catn_*) stays NCHW;
# with each input a kernel's output read by nothing else (cat*_in_place) the convs write their outputs into the
# concatenation's storage and the concatenate is no kernel, else (an input twice, the graph input, an input
# that would start off a 64-byte boundary: catn_unaligned) it is one;
# grouped convs (grp_*) are packed, their channel block inside one group, and between packed convs (grpc_*)
# read and write NCHWc, with groups of 4 or 8 channels merged into groups of 16 (grpm_*: 8 and 4 groups; with
# AlterOpLayout.merge_groups=1 they stay unmerged, same output); convs of 58 or 116 output channels pad their
# last block (padc_*: channels=58, 116), and with AVX-512 so does a 1000-class head (padw_*); global pools of
# NCHW rows of at least a vector (gpool_*) take the row form (a gpool_part stage); 3-D convs (c3d_*) are packed
# (nn.conv3d_packed), the (3, 1, 1) one over 8x8 frames in its temporal form, the others with a register tile
# of unrolled columns around a vector of output channels.
# usage: test_dwpool.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/dwpool
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_dwpool_models.py" "$dir"
for m in $(sample <"$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar" --dump-ir "$dir/$m.d"
  case $m in
  dw_*) want=nn.depthwise_conv2d file=fused_groups.txt ;;
  dwc_*) want="nn.depthwise_conv2d(.*data_block=" file=after_DeadCodeElim.txt ;;
  poolc_*) want="_pool2d(.*data_block=" file=after_DeadCodeElim.txt ;;
  grp_*) want="nn.conv2d_packed(.*groups=" file=after_DeadCodeElim.txt ;;
  grpc_*) want="nn.conv2d_packed(.*groups=[23], data_block=[0-9]*, out_block=" file=after_DeadCodeElim.txt ;;
  grpm_*) want="nn.conv2d_packed(.*groups=[48], data_block=16, out_block=16" file=after_DeadCodeElim.txt ;;
  padc_*) ch=${m#padc_} && want="nn.conv2d_packed(.*channels=${ch%%_*}" file=after_DeadCodeElim.txt ;;
  padw_*) ch=${m#padw_} && want="nn.conv2d_packed(.*channels=${ch%%_*}" file=after_DeadCodeElim.txt
    grep -q avx512f /proc/cpuinfo || want="nn.conv2d_packed(" ;; # blocks of 8 fill a whole AVX2 vector
  c3d_padc_*) want="nn.conv3d_packed(.*channels=${m#c3d_padc_}" file=after_DeadCodeElim.txt ;;
  c3d_temporal_form) want='compute "conv3d_packed" float32\[[0-9]*, [0-9]*, [0-9]*, [0-9]*\]' file=schedules.txt ;;
  c3d_*) want="nn.conv3d_packed(" file=after_DeadCodeElim.txt ;;
  gpool_short_*) want="global_" file=schedules.txt ;;
  gpool_*) want="gpool_part" file=schedules.txt ;;
  catc_*) want="concatenate(.*ty=Tensor\[([0-9]*, [0-9]*, [0-9]*, [0-9]*, [0-9]*)" file=after_DeadCodeElim.txt ;;
  catn_*) want="concatenate(.*ty=Tensor\[([0-9]*, [0-9]*, [0-9]*, [0-9]*)," file=after_DeadCodeElim.txt ;;
  *) want=pool_pad file=schedules.txt ;;
  esac
  if ! cat "$dir/$m.d/"*_$file | grep -q "$want"; then echo "FAIL $m: no $want in *_$file"; exit 1; fi
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4
  case $m in
  cat*_in_place) ! grep -q "^// fused_concatenate" "$dir/$m.d/20_schedules.txt" ||
    { echo "FAIL $m: the concatenate is a kernel, not done in place"; exit 1; } ;;
  cat*) grep -q "^// fused_concatenate" "$dir/$m.d/20_schedules.txt" ||
    { echo "FAIL $m: no concatenate kernel"; exit 1; } ;;
  c3d_temporal_form|c3d_padc_*) ;;
  c3d_*) # the direct form's register tile: the unrolled columns around the vector of output channels, so
    # each column's accumulator is a register (a vector loop outside them kept them on the stack)
    if ! grep -A2 "unrolled (" "$dir/$m.d/"*_tir.txt | grep -A1 "vectorized (" | grep -q "conv3d_packed\[.*= fma("; then
      echo "FAIL $m: the conv3d tile is not unrolled columns around a vector"; exit 1
    fi ;;
  grpm_*)
    "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.unmerged.tar" --dump-ir "$dir/$m.unmerged.d" \
      --pass-config AlterOpLayout.merge_groups=1
    if ! grep -q "nn.conv2d_packed(.*groups=[38][2]*, " "$dir/$m.unmerged.d/"*_after_DeadCodeElim.txt; then
      echo "FAIL $m: merge_groups=1 still merges"; exit 1
    fi
    "$mlc" run "$dir/$m.unmerged.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out1.npz"
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out1.npz" "$dir/${m}_ref.npz" --tol 1e-4 ;;
  esac
done
# with AVX-512 a 16-channel block is one vector and the 3-wide kernel's unrolled taps keep tile + 2 broadcasts
# live: a 56-wide 3x3x3 conv takes 14 columns (28 spilled; compiled for skylake-avx512, not run)
"$mlc" compile "$dir/c3d_wide.onnx" --target "llvm -mcpu=skylake-avx512" --output "$dir/c3d_wide.avx512.tar" \
  --dump-ir "$dir/c3d_wide.avx512.d" >/dev/null
grep -q "split i4\[56\] by 14 " "$dir/c3d_wide.avx512.d/20_schedules.txt" ||
  { echo "FAIL c3d_wide: not a 14-column tile on AVX-512"; exit 1; }
echo "dwpool: all passed"
