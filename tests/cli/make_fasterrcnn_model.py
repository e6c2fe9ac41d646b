#!/usr/bin/env python3
"""make_fasterrcnn_model.py DIR [NUM_CLASSES]: torchvision 0.14's fasterrcnn_mobilenet_v3_large_320_fpn
(weights=None, weights_backbone=None, eval) with random weights from a fixed seed, exported by torch.onnx.export
with opset_version=17 for one [3, 320, 320] image. Both stages compute with data-dependent shapes: the region
proposal network keeps per level the top-k objectness scores, decodes and clips the boxes, drops small ones and
low scores (NonZero of a value that is itself data-dependent, twice), runs NonMaxSuppression in an If on
"no boxes" and keeps the first 150; MultiScaleRoIAlign assigns each proposal a level (NonZero per level),
RoiAlign pools a run-time number of boxes per level (torch's aligned=False, which torchvision 0.14 exports
without the coordinate_transformation_mode that opset 16 needs for it: added here) and ScatterElements puts the pooled features back in
proposal order; the box head's per-class boxes and scores are flattened (a reshape merging the
data-dependent axis), filtered by score (NonZero), small boxes dropped, NMS per class in an If, the first 100
kept. The backbone's weights are redrawn (He-normal convolutions, random batch-norm statistics) and the class
logits scaled down, so that proposals vary (124 of them) and scores are distinct and unsaturated: ties do not
decide which boxes survive. NUM_CLASSES (default 5) includes background.
Writes DIR/fasterrcnn_inputs.npz (images) and, for three box score thresholds (every box a candidate, some, none;
exported once, the threshold constant of the box head's Greater rewritten), DIR/NAME.onnx and DIR/NAME_ref.npz
(boxes, scores, labels from torch with that box_score_thresh); the names go to DIR/models.txt.
Used by tests/cli/test_fasterrcnn.sh with compare_detections.py."""
import sys
import warnings

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper

from detection_weights import redraw

warnings.filterwarnings("ignore")
out = sys.argv[1]
num_classes = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.manual_seed(0)
model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
    weights=None, weights_backbone=None, num_classes=num_classes, box_score_thresh=0.05).eval()
redraw(model.backbone.body)
with torch.no_grad():
    for m in model.backbone.fpn.layer_blocks.modules():  # moderate features (|x| < 40): box deltas do not
        if isinstance(m, torch.nn.Conv2d):  # amplify float rounding through exp() beyond the test's tolerance
            m.weight.mul_(0.1)
    model.roi_heads.box_predictor.cls_score.weight.mul_(0.5)  # moderate logits: distinct, unsaturated scores
x = torch.rand(3, 320, 320, generator=torch.Generator().manual_seed(1))
np.savez(f"{out}/fasterrcnn_inputs.npz", images=x.numpy())


class Wrap(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, images):
        det = self.m([images])[0]
        return det["boxes"], det["scores"], det["labels"]


torch.onnx.export(Wrap(model).eval(), (x,), f"{out}/fasterrcnn.onnx", opset_version=17, input_names=["images"],
                  output_names=["boxes", "scores", "labels"])
base = onnx.load(f"{out}/fasterrcnn.onnx")
# torchvision 0.14 exports roi_align(aligned=False) with its opset-11 symbolic, without the attribute
# coordinate_transformation_mode, whose default from opset 16 on is half_pixel (torch's aligned=True): the
# file would then ask for boxes shifted by half a pixel. Set what torch computes (onnx/onnx#3625).
fixed = 0
for n in base.graph.node:
    if n.op_type == "RoiAlign" and not any(a.name == "coordinate_transformation_mode" for a in n.attribute):
        n.attribute.append(onnx.helper.make_attribute("coordinate_transformation_mode", "output_half_pixel"))
        fixed += 1
assert fixed == 2, f"{fixed} RoiAlign nodes without coordinate_transformation_mode, want 2"
names = []
for name, thresh in (("fasterrcnn", 0.0), ("fasterrcnn_some", 0.3), ("fasterrcnn_none", 0.9)):
    m = onnx.ModelProto()
    m.CopyFrom(base)
    consts = {n.output[0]: n for n in m.graph.node if n.op_type == "Constant"}
    changed = 0
    for n in m.graph.node:
        c = consts.get(n.input[1]) if n.op_type == "Greater" and n.name.startswith("/m/roi_heads/") else None
        if c is not None and np.isclose(numpy_helper.to_array(c.attribute[0].t), np.float32(0.05)):
            c.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(thresh, np.float32)))
            changed += 1
    assert changed == 1, f"{changed} box score thresholds found, want 1"
    onnx.save(m, f"{out}/{name}.onnx")
    model.roi_heads.score_thresh = thresh
    with torch.no_grad():
        det = model([x])[0]
    s = np.sort(det["scores"].numpy())
    assert len(s) < 2 or np.diff(s).min() > 0, "tied scores"
    np.savez(f"{out}/{name}_ref.npz", boxes=det["boxes"].numpy(), scores=det["scores"].numpy(),
             labels=det["labels"].numpy())
    names.append(name)
    print(f"{name} ({num_classes} classes, box score threshold {thresh}): {len(det['scores'])} detections",
          file=sys.stderr)
with open(f"{out}/models.txt", "w") as fh:
    fh.write("\n".join(names) + "\n")
