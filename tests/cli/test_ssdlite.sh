#!/bin/sh
# torchvision's SSDlite detector end to end through the mlc CLI (make_ssdlite_model.py: ssdlite320_mobilenet_v3_large
# with random weights and 5 classes, exported by torch with opset 11, for three score thresholds: every box a
# candidate, a few, none): its post-processing computes with data-dependent shapes (NonZero, TopK of a
# run-time min(300, n), Concat of per-class pieces, an If on "no boxes", NonMaxSuppression of a run-time number
# of boxes, the first 300 kept). Each must compile, run, and give torch's detections: the same count, labels
# exactly, scores and boxes within 1e-4 (compare_detections.py, order-insensitive).
# usage: test_ssdlite.sh MLC BUILD_DIR [NUM_CLASSES]
set -eu
mlc=$1 dir=$2/ssdlite
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_ssdlite_model.py" "$dir" "${3:-5}"
for m in $(sample <"$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/ssdlite_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_detections.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4
done
echo "ssdlite: all passed"
