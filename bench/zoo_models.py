#!/usr/bin/python3
"""Exports torchvision models that bench/compare.py does not generate, as ONNX files (input `data`, output `out`),
so that mlc is measured on more than the ResNets: SiLU/SE nets (EfficientNet, MobileNetV3, RegNet), grouped
convs (ResNeXt), channel shuffles (ShuffleNet), NHWC MLPs and LayerNorm (ConvNeXt, Swin), attention (ViT),
dilated segmentation heads with bilinear resizes (DeepLabV3, LR-ASPP), 3-D convs (R3D-18), inception blocks.
Weights are random (fixed seed); batch-norm statistics are randomised so that folding them is exercised, and
layers torchvision initialises to zero (ViT's head) get random weights, so that the outputs say something.

usage: bench/zoo_models.py OUT_DIR [--only a,b] [--opset 17]
then:  bench/compare.py --work W --models a,b   (with OUT_DIR = W/models)
Needs Debian's python3-torch and python3-torchvision.
"""
import argparse, os, sys
import torch, torchvision

MODELS = ["efficientnet_b0", "efficientnet_v2_s", "mobilenet_v3_small", "shufflenet_v2_x1_0", "regnet_y_400mf",
          "mnasnet0_5", "googlenet", "inception_v3", "resnext50_32x4d", "alexnet", "convnext_tiny", "swin_t",
          "vit_b_16", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "r3d_18"]
SEGMENTATION = ("deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large")


class SegmentationOut(torch.nn.Module):
    """The segmentation models return a dict; export its 'out' tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def build(name):
    if name == "r3d_18":
        return torchvision.models.video.r3d_18(weights=None), (1, 3, 8, 112, 112)
    if name in SEGMENTATION:
        m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)
        return SegmentationOut(m), (1, 3, 224, 224)
    if name in ("googlenet", "inception_v3"):
        m = getattr(torchvision.models, name)(weights=None, aux_logits=False, init_weights=True)
        return m, (1, 3, 299, 299) if name == "inception_v3" else (1, 3, 224, 224)
    return getattr(torchvision.models, name)(weights=None), (1, 3, 224, 224)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", help="comma-separated subset of: " + ",".join(MODELS))
    ap.add_argument("--opset", type=int, default=17)
    a = ap.parse_args()
    names = a.only.split(",") if a.only else MODELS
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit("unknown model(s): " + ", ".join(unknown))
    os.makedirs(a.out, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        m, shape = build(name)
        m.eval()
        for mod in m.modules():
            if isinstance(mod, (torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
            if isinstance(mod, torch.nn.Linear) and not mod.weight.detach().any():
                with torch.no_grad():
                    mod.weight.normal_(0, 0.02)
        path = os.path.join(a.out, name + ".onnx")
        torch.onnx.export(m, torch.randn(*shape), path, opset_version=a.opset, input_names=["data"],
                          output_names=["out"])
        print(path, flush=True)


if __name__ == "__main__":
    main()
