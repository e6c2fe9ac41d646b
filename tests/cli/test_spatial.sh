#!/bin/sh
# MaxPool's Indices output, MaxUnpool, Col2Im, RoiAlign and DeformConv beyond the ONNX backend tests: each node
# test of make_spatial_models.py (numpy references written from the ONNX reference's definitions) must pass the
# conformance runner.
# usage: test_spatial.sh MLC_CONFORMANCE BUILD_DIR
set -eu
runner=$1 dir=$2/spatial
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_spatial_models.py" "$dir"
# shellcheck disable=SC2046
"$runner" --root "$dir" $(cat "$dir/models.txt") | tee "$dir/result.txt"
tail -1 "$dir/result.txt" | grep -q " 0 failed, 0 skipped"
echo "spatial: all passed"
