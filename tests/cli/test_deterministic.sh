#!/bin/sh
# Deterministic builds: the same model, target and options compiled twice (to different paths) give
# byte-identical packages, shared libraries, objects and headers; and on 2 or 4 compile threads or one CPU (a
# fixed number of partitions, whatever the core count).
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
MLC_COMPILE_THREADS=2 "$mlc" compile "$model" --output "$dir/a/t2.tar" >/dev/null
MLC_COMPILE_THREADS=4 "$mlc" compile "$model" --output "$dir/b/t4.tar" >/dev/null
cmp "$dir/a/t2.tar" "$dir/b/t4.tar"
# on one CPU (the affinity mask, as a container's share or taskset gives) the partitions run one after another
env -u MLC_COMPILE_THREADS taskset -c 0 "$mlc" compile "$model" --output "$dir/b/cpu1.tar" >/dev/null
cmp "$dir/a/t2.tar" "$dir/b/cpu1.tar"
echo "deterministic: tar, so, obj and header identical, and on 2 or 4 compile threads or one CPU"
