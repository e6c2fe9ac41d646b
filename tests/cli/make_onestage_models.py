#!/usr/bin/env python3
"""make_onestage_models.py DIR: torchvision 0.14's one-stage detectors RetinaNet and FCOS, each on a ResNet-18 FPN
backbone (P3-P7 as torchvision's resnet50 versions build theirs) with 5 classes and random weights from a fixed
seed, resizing to 160x160, exported by torch.onnx.export with opset 17 for one [3, 160, 160] image. Their
post-processing computes with data-dependent shapes: per FPN level, scores > threshold -> NonZero, TopK of
K = min(1000, n) (ReduceMin of a constant and the run-time length: the TopK output is bounded by 1000),
Reshape / Expand by shapes built from Shape of the kept values (Shape -> Gather -> Unsqueeze -> Concat ->
Reshape), Concat of the levels, batched NMS (boxes offset per class) and the first 300 kept. Score
thresholds low enough that hundreds of candidates survive per level (RetinaNet's classification prior makes
every score about 0.01). Writes DIR/onestage_inputs.npz (images), DIR/NAME.onnx and DIR/NAME_ref.npz (boxes,
scores, labels from torch); names in DIR/models.txt. Used by tests/cli/test_onestage.sh."""
import sys
import warnings

import numpy as np
import torch
import torchvision
from torchvision.models.detection import FCOS, RetinaNet
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.ops.feature_pyramid_network import LastLevelP6P7

warnings.filterwarnings("ignore")
out = sys.argv[1]
x = torch.rand(1, 3, 160, 160, generator=torch.Generator().manual_seed(1))
np.savez(f"{out}/onestage_inputs.npz", images=x.numpy())


class Detections(torch.nn.Module):  # one image tensor in, (boxes, labels, scores) out
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, images):
        r = self.m([images[0]])[0]
        return r["boxes"], r["labels"], r["scores"]


names = []
for name, cls, thresh in (("retinanet", RetinaNet, 0.0095), ("fcos", FCOS, 0.05)):
    torch.manual_seed(0)
    resnet = torchvision.models.resnet18(weights=None)
    backbone = _resnet_fpn_extractor(resnet, 5, returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256))
    model = cls(backbone, num_classes=5, min_size=160, max_size=160, score_thresh=thresh).eval()
    with torch.no_grad():
        det = model([x[0]])[0]
    torch.onnx.export(Detections(model), (x,), f"{out}/{name}.onnx", opset_version=17, input_names=["images"],
                      output_names=["boxes", "labels", "scores"])
    np.savez(f"{out}/{name}_ref.npz", boxes=det["boxes"].numpy(), scores=det["scores"].numpy(),
             labels=det["labels"].numpy())
    names.append(name)
    print(f"{name}: {len(det['scores'])} detections", file=sys.stderr)
with open(f"{out}/models.txt", "w") as fh:
    fh.write("\n".join(names) + "\n")
