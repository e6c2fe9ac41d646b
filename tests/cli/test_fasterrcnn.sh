#!/bin/sh
# torchvision's Faster R-CNN end to end through the mlc CLI (make_fasterrcnn_model.py:
# fasterrcnn_mobilenet_v3_large_320_fpn with random weights and 5 classes, exported by torch with opset 17, for
# three box score thresholds: every box a candidate, some, none). Both stages compute with data-dependent shapes
# (NonZero of data-dependent values, NonMaxSuppression in an If, RoiAlign of a run-time number of proposals per
# level, ScatterElements of the pooled features back into proposal order, reshapes merging the box axis with
# the classes; each RoiAlign given its level's count and skipping the padding proposals, reading its level in
# NCHWc). Each must compile, run, and give torch's detections: the same count, labels exactly, scores
# and boxes within 1e-4 (compare_detections.py, order-insensitive).
# usage: test_fasterrcnn.sh MLC BUILD_DIR [NUM_CLASSES]
set -eu
mlc=$1 dir=$2/fasterrcnn
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_fasterrcnn_model.py" "$dir" "${3:-5}"
for m in $(sample <"$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar" --dump-ir "$dir/$m.d"
  # each level's RoiAlign is given its run-time number of proposals (the padding ones are skipped)
  n=$(grep -c "vision.roi_align(%[0-9.]*, %[0-9.]*, %[0-9.]*, %[0-9.]*," "$dir/$m.d/00_graph.txt" || true)
  [ "$n" -ge 2 ] || { echo "FAIL $m: RoiAlign without its count of rois ($n)"; exit 1; }
  # and reads the FPN levels in their NCHWc layout (no transform back to NCHW before it)
  n=$(grep -c "vision.roi_align(.*data_block=" "$dir/$m.d/15_after_DeadCodeElim.txt" || true)
  [ "$n" -ge 2 ] || { echo "FAIL $m: RoiAlign does not read NCHWc ($n)"; exit 1; }
  "$mlc" run "$dir/$m.tar" --inputs "$dir/fasterrcnn_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_detections.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4
done
echo "fasterrcnn: all passed"
