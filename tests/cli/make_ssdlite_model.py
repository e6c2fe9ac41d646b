#!/usr/bin/env python3
"""make_ssdlite_model.py DIR [NUM_CLASSES]: torchvision 0.14's ssdlite320_mobilenet_v3_large (weights=None,
weights_backbone=None, eval) with random weights from a fixed seed, exported by torch.onnx.export with
opset_version=11 for one [3, 320, 320] image, as torchvision's detection export does. Its post-processing
computes with data-dependent shapes throughout: per class, scores > 0.001 -> NonZero -> GatherND, TopK of
min(300, n) (a K computed from Shape of the kept scores), boxes gathered by the TopK indices, labels from
ConstantOfShape(Shape(scores)); Concat of the per-class pieces (different extents), an If on "no boxes at all"
whose else branch offsets the boxes per class (ReduceMax over them) and runs NonMaxSuppression, then the first
300 kept. The weights are redrawn (He-normal convolutions, random batch-norm statistics, a scaled-down
classification head): torchvision's own init makes the deep features constant in space, so most scores would
be equal and ties would decide which boxes survive; these give distinct scores. NUM_CLASSES (default 91)
is the model's class count, background included; the CLI test uses a small one to keep the compile short.
Writes DIR/ssdlite_inputs.npz (x) and, for three score thresholds (torchvision's 0.001, one keeping a few boxes,
one keeping none; exported once, the threshold constant rewritten), DIR/NAME.onnx and DIR/NAME_ref.npz (boxes,
scores, labels from torch with that score_thresh); the names go to DIR/models.txt.
Used by tests/cli/test_ssdlite.sh with compare_detections.py."""
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
num_classes = int(sys.argv[2]) if len(sys.argv) > 2 else 91
torch.manual_seed(0)
model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                  num_classes=num_classes).eval()
redraw(model)
with torch.no_grad():
    for m in model.head.classification_head.modules():
        if isinstance(m, torch.nn.Conv2d):  # moderate logits: distinct scores, no saturated softmax
            m.weight.mul_(0.05)
x = torch.rand(3, 320, 320, generator=torch.Generator().manual_seed(1))
np.savez(f"{out}/ssdlite_inputs.npz", x=x.numpy())
names = []
# score thresholds: torchvision's 0.001 (every box a candidate, 300 per class, 300 detections kept after NMS),
# one that keeps a few per class (fewer than 300: K = n), and one that keeps none (the If's "no boxes" branch).
# The model is exported once; the others differ only in the threshold constant that the per-class Greater
# nodes compare with, which is rewritten (the same graph torch exports for that score_thresh).
torch.onnx.export(model, ([x],), f"{out}/ssdlite.onnx", opset_version=11, input_names=["x"],
                  output_names=["boxes", "scores", "labels"])
base = onnx.load(f"{out}/ssdlite.onnx")
for name, thresh in (("ssdlite", 0.001), ("ssdlite_some", 0.25), ("ssdlite_none", 0.99)):
    m = onnx.ModelProto()
    m.CopyFrom(base)
    consts = {n.output[0]: n for n in m.graph.node if n.op_type == "Constant"}
    changed = 0
    for n in m.graph.node:
        c = consts.get(n.input[1]) if n.op_type == "Greater" and len(n.input) > 1 else None
        if c is not None and np.isclose(numpy_helper.to_array(c.attribute[0].t), np.float32(0.001)):
            c.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(thresh, np.float32)))
            changed += 1
    assert changed == num_classes - 1, f"{changed} score thresholds found, want {num_classes - 1}"
    onnx.save(m, f"{out}/{name}.onnx")
    model.score_thresh = thresh
    with torch.no_grad():
        det = model([x])[0]
    np.savez(f"{out}/{name}_ref.npz", boxes=det["boxes"].numpy(), scores=det["scores"].numpy(),
             labels=det["labels"].numpy())
    names.append(name)
    print(f"{name} ({num_classes} classes, score threshold {thresh}): {len(det['scores'])} detections", file=sys.stderr)
with open(f"{out}/models.txt", "w") as fh:
    fh.write("\n".join(names) + "\n")
