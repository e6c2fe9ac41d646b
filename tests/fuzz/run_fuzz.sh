#!/bin/sh
# Runs the libFuzzer target for a bounded time on a seed corpus made from the test models (models/*.onnx, the
# crash regressions, and a sample of the ONNX node-test models). A crash leaves its input in BUILD/crashes/
# and fails the run: add it to tests/fuzz/regressions/ once fixed (ctest fuzz.regressions replays them).
# usage: run_fuzz.sh FUZZ_BINARY BUILD_DIR SECONDS
set -eu
fuzz=$1 dir=$2 seconds=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
rm -rf "$dir/corpus" && mkdir -p "$dir/corpus" "$dir/crashes"
cp "$root"/models/*.onnx "$here"/regressions/*.onnx "$dir/corpus/"
i=0
for f in $(find "$root/../shared/onnx-tests/node" -name model.onnx 2>/dev/null | sort | awk 'NR % 8 == 1'); do
  cp "$f" "$dir/corpus/node_$i.onnx"
  i=$((i + 1))
done
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
  "$fuzz" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=1048576 \
  -artifact_prefix="$dir/crashes/" "$dir/corpus"
