#!/bin/sh
# LowerConv end to end: each model of make_lowerconv_models.py (1-D Conv, 1-D, 2-D and 3-D ConvTranspose with
# constant weights, 2-D Conv with taps that read padding only) compiles with its conv lowered to nn.conv2d /
# nn.conv3d (no conv1d or transposed conv op left after the passes; trim_*: the dead taps cut, regions_*: split
# into regions of live taps, keep_*: neither, phases_*: a dilated conv as the Winograd conv of its dilation phases;
# *_chain_*: between convs, in their NCHWc layout),
# and `mlc run` matches torch within 1e-4, as does the same model compiled with --disable-pass LowerConv (the
# generic ops).
# usage: test_lowerconv.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/lowerconv
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_lowerconv_models.py" "$dir"
for m in $(sample <"$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar" --dump-ir "$dir/$m.d" >/dev/null
  if grep -q "nn.conv1d\|_transpose(" "$dir/$m.d/"*_after_DeadCodeElim.txt; then echo "FAIL $m: not lowered"; exit 1; fi
  grep -q "nn.conv[23]d\|nn.winograd_gemm" "$dir/$m.d/"*_after_DeadCodeElim.txt || { echo "FAIL $m: no nn.conv2d / nn.conv3d / Winograd conv"; exit 1; }
  case $m in # the conv's weight type and padding before and after LowerConv
  regions_*)
    [ "$(grep -o "nn.conv2d(" "$dir/$m.d/"*_after_LowerConv.txt | wc -l)" -gt 1 ] || { echo "FAIL $m: not split"; exit 1; }
    case $m in # between convs: the slices and the regions' concatenations stay NCHWc (no transform back)
    regions_chain_*)
      layout=$(ls "$dir/$m.d/"*_after_ConvertLayoutNCHWc.txt)
      ! grep -q "to_nchw" "$layout" || { echo "FAIL $m: NCHW transforms around the split conv"; exit 1; }
      grep -q "strided_slice(.*begin=\[0, 0, [0-9]*, [0-9]*, 0\]" "$layout" || { echo "FAIL $m: slices not NCHWc"; exit 1; }
      grep -q "concatenate(.*axis=3) /\* ty=Tensor\[([0-9]*, [0-9]*, [0-9]*, [0-9]*, [0-9]*)" "$layout" ||
        { echo "FAIL $m: region concat not NCHWc"; exit 1; } ;;
    esac ;;
  phases_*) # dilation phases around an undilated conv that AlterOpLayout makes Winograd
    grep -q "nn.dilation_phases" "$dir/$m.d/"*_after_LowerConv.txt || { echo "FAIL $m: no dilation phases"; exit 1; }
    grep -q "nn.winograd_gemm" "$dir/$m.d/"*_after_AlterOpLayout.txt || { echo "FAIL $m: phase conv not Winograd"; exit 1; }
    case $m in
    phases_chain_*)
      layout=$(ls "$dir/$m.d/"*_after_ConvertLayoutNCHWc.txt)
      ! grep -q "to_nchw" "$layout" || { echo "FAIL $m: NCHW transforms around the phases"; exit 1; }
      [ "$(grep -c "nn.dilation_\(phases\|merge\)(.*data_block=" "$layout")" = 2 ] || { echo "FAIL $m: phases not NCHWc"; exit 1; } ;;
    esac ;;
  trim_* | keep_*)
    before=$(grep -o "nn.conv2d(.*padding=[^]]*" "$dir/$m.d/00_graph.txt")
    after=$(grep -o "nn.conv2d(.*padding=[^]]*" "$dir/$m.d/"*_after_LowerConv.txt)
    case $m in
    trim_*) [ "$before" != "$after" ] || { echo "FAIL $m: dead taps kept"; exit 1; } ;;
    keep_*) [ "$before" = "$after" ] || { echo "FAIL $m: live taps cut"; exit 1; } ;;
    esac ;;
  esac
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_in.npz" --outputs "$dir/${m}_out.npz" >/dev/null
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.generic.tar" --disable-pass LowerConv >/dev/null
  "$mlc" run "$dir/$m.generic.tar" --inputs "$dir/${m}_in.npz" --outputs "$dir/${m}_generic.npz" >/dev/null
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_generic.npz" "$dir/${m}_ref.npz" --tol 1e-4
done
echo "lowerconv: all passed"
