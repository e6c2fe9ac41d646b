#!/bin/sh
# Deterministic builds: the same model, target and options compiled twice (to different paths) give
# byte-identical packages, shared libraries, objects and headers.
# usage: test_deterministic.sh MLC BUILD_DIR MODEL.onnx
set -eu
mlc=$1 dir=$2/deterministic model=$3
rm -rf "$dir" && mkdir -p "$dir/a" "$dir/b"
for fmt in tar so obj; do
  name=""
  [ $fmt = obj ] && name="--module-name m"
  "$mlc" compile "$model" --output-format $fmt $name --output "$dir/a/m1.$fmt" >/dev/null
  "$mlc" compile "$model" --output-format $fmt $name --output "$dir/b/m2.$fmt" >/dev/null
  cmp "$dir/a/m1.$fmt" "$dir/b/m2.$fmt"
done
cmp "$dir/a/m1.h" "$dir/b/m2.h"
echo "deterministic: tar, so, obj and header identical"
