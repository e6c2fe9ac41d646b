#!/bin/sh
# torchvision's one-stage detectors RetinaNet and FCOS end to end through the mlc CLI (make_onestage_models.py:
# ResNet-18 FPN backbones, random weights, 5 classes, exported by torch with opset 17): their post-processing
# reshapes by shapes computed from data-dependent lengths and takes the TopK of min(1000, n) candidates per
# level. Each must compile, run, and give torch's detections: the same count, labels exactly, scores and boxes
# within 1e-4 (compare_detections.py, order-insensitive).
# usage: test_onestage.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/onestage
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_onestage_models.py" "$dir"
for m in $(sample <"$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/onestage_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_detections.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4
done
echo "onestage: all passed"
