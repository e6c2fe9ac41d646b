#!/usr/bin/env python3
"""make_lowerconv_models.py DIR: Conv (1-D, 2-D) and ConvTranspose (1-D, 2-D and 3-D) models with constant weights, the
ops the LowerConv pass turns into nn.conv2d (passes/graph/lower_conv.c), each with an input (NAME_in.npz, x)
and torch's float32 output as the reference (NAME_ref.npz, y). The transposed convs cover strides 1, 2 and 3,
kernels smaller than, equal to, and not divisible by the stride, symmetric and asymmetric pads (ONNX pads,
which torch expresses as a crop of its output), output_padding, groups, non-square windows, output_shape, and
a bias; the 1-D convs strides, dilation, padding and groups; 2-D convs with taps that only ever read padding;
dilated 2-D convs split into their dilation phases; a split conv between two convs. Names one per line in DIR/models.txt
(tests/cli/test_lowerconv.sh)."""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(3)
names = []


def save(name, x, w, b, y, op, attrs):
    inits = [numpy_helper.from_array(w.numpy(), "w")] + ([numpy_helper.from_array(b.numpy(), "b")] if b is not None else [])
    node = helper.make_node(op, ["x", "w"] + (["b"] if b is not None else []), ["y"], **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape))], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_in.npz", x=x.numpy())
    np.savez(f"{out}/{name}_ref.npz", y=y.numpy())
    names.append(name)


def crop(y, pads, nsp):  # ONNX's begin/end pads of a transposed conv: torch's output with those rows cut
    idx = [slice(None), slice(None)]
    for i in range(nsp):
        idx.append(slice(pads[i], y.shape[2 + i] - pads[nsp + i]))
    return y[tuple(idx)]


# ConvTranspose 2-D: (name, N, C, O, H, W, kernel, strides, pads [hb, wb, he, we], output_padding, groups, bias)
cases2 = [("t2_k4_s2_p1", 2, 16, 8, 9, 7, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), 1, True),
          ("t2_k2_s2", 1, 8, 16, 6, 6, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), 1, False),
          ("t2_k3_s2_outpad", 1, 12, 5, 5, 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, True),
          ("t2_k3_s1_p1", 1, 8, 8, 7, 7, (3, 3), (1, 1), (1, 1, 1, 1), (0, 0), 1, False),
          ("t2_k5_s3_asym", 1, 6, 7, 4, 5, (5, 5), (3, 3), (2, 0, 1, 3), (0, 0), 1, True),
          ("t2_k1_s3", 1, 4, 6, 5, 4, (1, 1), (3, 3), (0, 0, 0, 0), (2, 1), 1, False),
          ("t2_groups", 2, 8, 12, 6, 5, (4, 3), (2, 1), (1, 1, 1, 0), (0, 0), 4, True),
          ("t2_rect_s21", 1, 10, 6, 5, 9, (3, 5), (2, 3), (0, 1, 2, 0), (1, 2), 2, False)]
for name, N, C, O, H, W, k, s, p, op, g, bias in cases2:
    x = torch.randn(N, C, H, W)
    w = torch.randn(C, O // g, *k) * 0.2
    b = torch.randn(O) if bias else None
    y = crop(F.conv_transpose2d(x, w, b, stride=s, output_padding=op, groups=g), p, 2)
    save(name, x, w, b, y, "ConvTranspose", dict(kernel_shape=list(k), strides=list(s), pads=list(p),
                                                output_padding=list(op), group=g))
# output_shape instead of pads: the total padding 1 per dim (11 -> 10) goes at the start (the spec's rule for
# auto_pad NOTSET: pads[start] = total - total / 2)
x = torch.randn(1, 6, 5, 5)
w = torch.randn(6, 4, 3, 3) * 0.2
full = F.conv_transpose2d(x, w, stride=2)
save("t2_output_shape", x, w, None, full[:, :, 1:, 1:], "ConvTranspose",
     dict(kernel_shape=[3, 3], strides=[2, 2], output_shape=[10, 10]))
# ConvTranspose 1-D
for name, C, O, L, k, s, p, op, g in (("t1_k4_s2_p1", 8, 6, 11, 4, 2, (1, 1), 0, 1), ("t1_k7_s3", 4, 8, 9, 7, 3, (2, 3), 1, 2),
                                      ("t1_k2_s2", 16, 16, 10, 2, 2, (0, 0), 0, 1)):
    x = torch.randn(2, C, L)
    w = torch.randn(C, O // g, k) * 0.2
    b = torch.randn(O)
    y = crop(F.conv_transpose1d(x, w, b, stride=s, output_padding=op, groups=g), p, 1)
    save(name, x, w, b, y, "ConvTranspose", dict(kernel_shape=[k], strides=[s], pads=list(p), output_padding=[op], group=g))
# ConvTranspose 3-D (3-D UNets' upsampling): k = s = 2, and k 3 s 2 with pads and output_padding
for name, C, O, D, H, W, k, s, p, op in (("t3_k2_s2", 8, 4, 4, 5, 3, 2, 2, (0,) * 6, 0),
                                         ("t3_k3_s2_outpad", 6, 5, 3, 4, 4, 3, 2, (1, 0, 1, 1, 1, 0), 1)):
    x = torch.randn(1, C, D, H, W)
    w = torch.randn(C, O, k, k, k) * 0.2
    b = torch.randn(O)
    y = crop(F.conv_transpose3d(x, w, b, stride=s, output_padding=op), p, 3)
    save(name, x, w, b, y, "ConvTranspose", dict(kernel_shape=[k] * 3, strides=[s] * 3, pads=list(p),
                                                output_padding=[op] * 3))
# Conv 1-D (wav2vec2's feature extractor: strided, then grouped and padded positional convs)
for name, C, O, L, k, s, d, p, g in (("c1_k10_s5", 1, 32, 400, 10, 5, 1, (0, 0), 1), ("c1_k3_s2", 32, 32, 79, 3, 2, 1, (0, 0), 1),
                                     ("c1_groups_pad", 32, 32, 50, 9, 1, 1, (4, 4), 4), ("c1_dilated", 16, 24, 60, 3, 1, 2, (2, 1), 1)):
    x = torch.randn(1, C, L)
    w = torch.randn(O, C // g, k) * 0.2
    b = torch.randn(O)
    y = F.conv1d(F.pad(x, p), w, b, stride=s, dilation=d, groups=g)
    save(name, x, w, b, y, "Conv", dict(kernel_shape=[k], strides=[s], dilations=[d], pads=list(p), group=g))
# Conv 2-D whose taps read only padding for every output (trim_*: DeepLabV3's ASPP, dilation >= the map; a
# strided one where only the last row of taps is dead; asymmetric pads), ones whose taps read mostly padding
# (regions_*: split into output regions with their live taps, grouped too), and one where nearly every tap is
# live (keep_*)
for name, C, O, H, W, k, s, d, p in (("trim_aspp_d36", 24, 16, 16, 16, 3, 1, 36, (36, 36, 36, 36)),
                                     ("trim_aspp_d24_rect", 8, 8, 12, 20, 3, 1, 24, (24, 24, 24, 24)),
                                     ("trim_strided_last_row", 8, 8, 9, 9, 3, 2, 5, (0, 0, 4, 4)),
                                     ("trim_one_side", 6, 10, 10, 7, 3, 1, 8, (0, 8, 8, 2)),
                                     ("regions_aspp_d12", 16, 16, 16, 16, 3, 1, 12, (12, 12, 12, 12)),
                                     ("regions_rect_d8", 8, 12, 10, 20, 3, 1, 8, (8, 8, 8, 8)),
                                     ("regions_groups_d6", 8, 8, 9, 9, 3, 1, 6, (6, 6, 6, 6)),
                                     ("keep_d2", 16, 16, 16, 16, 3, 1, 2, (2, 2, 2, 2))):
    x = torch.randn(1, C, H, W)
    g = 2 if "groups" in name else 1
    w = torch.randn(O, C // g, k, k) * 0.2
    b = torch.randn(O)
    y = F.conv2d(F.pad(x, (p[1], p[3], p[0], p[2])), w, b, stride=s, dilation=d, groups=g)
    save(name, x, w, b, y, "Conv", dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], pads=list(p), group=g))
# phases_*: dilated 3x3 convs large enough for Winograd, as dilation phases (space to batch); a batch of 2 with
# different dilations along H and W, and one between convs (DeepLabV3's dilated ResNet stages, NCHWc throughout)
x = torch.randn(2, 32, 20, 26)
w = torch.randn(32, 32, 3, 3) * 0.1
b = torch.randn(32)
save("phases_d3x2_batch2", x, w, b, F.conv2d(x, w, b, padding=(3, 2), dilation=(3, 2)), "Conv",
     dict(kernel_shape=[3, 3], dilations=[3, 2], pads=[3, 2, 3, 2]))
x = torch.randn(1, 32, 22, 23)  # asymmetric pads (ONNX begin h, w, end h, w), no bias
w = torch.randn(40, 32, 3, 3) * 0.1
save("phases_asym_pads", x, w, None, F.conv2d(F.pad(x, (1, 3, 2, 0)), w, dilation=2), "Conv",
     dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 1, 0, 3]))


def chain(name, C, H, W, d, pad):  # conv -> dilated conv -> relu -> conv
    x = torch.randn(1, C, H, W)
    w0, b0 = torch.randn(C, C, 3, 3) * 0.1, torch.randn(C)
    w1, b1 = torch.randn(C, C, 3, 3) * 0.1, torch.randn(C)
    w2 = torch.randn(16, C, 3, 3) * 0.1
    y = F.conv2d(F.relu(F.conv2d(F.conv2d(x, w0, b0, padding=1), w1, b1, padding=pad, dilation=d)), w2, padding=1)
    ws = {"w0": w0, "b0": b0, "w1": w1, "b1": b1, "w2": w2}
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["t0"], kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Conv", ["t0", "w1", "b1"], ["t1"], kernel_shape=[3, 3], dilations=[d, d], pads=[pad] * 4),
             helper.make_node("Relu", ["t1"], ["t2"]),
             helper.make_node("Conv", ["t2", "w2"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape))],
                          [numpy_helper.from_array(v.numpy(), k) for k, v in ws.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_in.npz", x=x.numpy())
    np.savez(f"{out}/{name}_ref.npz", y=y.numpy())
    names.append(name)


chain("phases_chain_d2", 32, 24, 24, 2, 2)
# chain_*: the split conv between two convs (DeepLabV3's ASPP reads the backbone's output), so its live-region
# slices and the concatenations of its regions along H and W run in the backbone's NCHWc layout
chain("regions_chain_d12", 32, 20, 20, 12, 12)
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(names) + "\n")
