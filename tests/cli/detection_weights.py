"""detection_weights.py: redraw(module) gives the convolutions and batch norms of a torchvision detector's
backbone weights that make a meaningful test with random weights (used by make_ssdlite_model.py and
make_fasterrcnn_model.py): torchvision's own init makes the deep features nearly constant in space, so most
scores would be equal and ties would decide which boxes survive. Convolutions get variance-preserving (He)
weights and small biases, batch norms non-trivial inference statistics. Draws from torch's global generator in
module order, so a fixed torch.manual_seed gives the same weights."""
import math

import torch


def redraw(module):
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.Conv2d):  # variance-preserving (He) weights, so deep features vary in space
                m.weight.normal_(0, math.sqrt(2.0 / m.weight[0].numel()))
                if m.bias is not None:
                    m.bias.normal_(0, 0.1)
            if isinstance(m, torch.nn.BatchNorm2d):  # non-trivial inference statistics
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.2)
