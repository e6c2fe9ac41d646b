#!/usr/bin/env python3
"""A zoo of small real-world architectures exported with torch.onnx.export at several opsets, random seeded
weights, to find what real models users bring do to mlc (see tests/cli/test_zoo.sh):

  gpt2        causal decoder: token + position embedding, causal mask (triu + masked_fill), GELU tanh,
              LayerNorm, tied LM head
  t5          encoder-decoder block: RMS norm, relative position bias (log buckets), self + cross attention
  bart        nn.Transformer encoder-decoder (post-norm, masks) with embeddings
  lstm_lm     embedding, 2-layer bidirectional LSTM (batch_first), linear head
  gru_lm      the same with a GRU, and an initial state input
  audio1d     Conv1d (dilated, strided), BatchNorm1d, ConvTranspose1d, GroupNorm(1), GELU erf, causal pad
  unet        ConvTranspose2d, concat skips, Upsample bilinear (align_corners True and False) and nearest
  superres    PixelShuffle (DepthToSpace), PixelUnshuffle, reflection / replication pads
  yolo        SiLU, SPPF max pools, Resize nearest, Concat, chunk / split, sigmoid grid decode (arange, meshgrid)
  roialign    torchvision.ops.roi_align / roi_pool over fixed boxes on a conv feature map (aligned=False at
              opset 11, aligned=True at opset 16)
  mixer       MLP-Mixer: patch conv, token-mixing transpose MLPs, LayerNorm, GELU
  unet3d      Conv3d, MaxPool3d, ConvTranspose3d, trilinear upsample, InstanceNorm3d
  einsum      einsum attention, bilinear form, batched outer product and trace-like contractions
  mha         nn.MultiheadAttention (batch_first, key padding mask, attention weights output)
  norms       GroupNorm, InstanceNorm2d (affine and not), LayerNorm over [C, H, W], LocalResponseNorm
  pool        adaptive avg / max pooling to odd sizes, avg pool ceil_mode / count_include_pad, LPPool
  convs       dilated, grouped, depthwise multiplier-2, asymmetric kernels and strides, padding modes
  fakequant   per-tensor and per-channel fake quantization (QuantizeLinear / DequantizeLinear pairs)
  indexing    int64 index arithmetic: gather, scatter, index_select, cumsum, topk, argmax, sort, masked ops
  activations hardswish, hardsigmoid, mish, softplus, elu, selu, celu, prelu, leaky relu, log_softmax, glu
  dynbatch    a small CNN with a dynamic batch axis, compiled with --input-shapes
  tensorops   flip, roll, repeat, expand, tile, tril, where, clamp, std / var, norm, cumprod-free reductions
  llama       RMSNorm, rotary embeddings, grouped-query attention (repeat_interleave, expand + reshape), SwiGLU
  llama_dyn   the same with dynamic batch and sequence axes, compiled with --input-shapes
  kvcache     one decoding step with a key/value cache of dynamic length
  clippool    argmax-token pooling, masked mean pooling, cumsum position ids, list and strided indexing
  indexput    index_put (ScatterND), masked assignment, slice assignment
  gridsample  GridSample: bilinear / nearest / bicubic, zeros / border / reflection, both align_corners
  interp      interpolate: fractional scales, nearest with sizes, bicubic align_corners, area, linear 1-D
  wavenet     gated dilated causal Conv1d stack with skip sums
  conformer   Conformer conv module: pointwise conv, GLU, depthwise Conv1d, BatchNorm1d, SiLU
  ssd         SSD box decoding: permute / reshape heads, softmax, exp / clamp, max with indices
  rnns        nn.RNN (relu, 2 layers), LSTM with an initial state, bidirectional GRU, sequence-first
  packed      pack_padded_sequence LSTM (sequence_lens), bidirectional
  float64     a float64 model
  weightnorm  weight_norm and spectral_norm parametrisations, F.unfold
  qnet        eager-mode static quantization (fused conv + relu, quantized add and linear), exported as QDQ
  scripted    torch.jit.script control flow: a Loop around an If whose condition depends on the data

Not here, because torch 1.13 cannot export them or exports them wrongly: circular padding (its Slice is off by
one), scatter_add below opset 16 (a plain scatter, wrong on repeated indices), index_add (indices and updates
of different shapes), softplus with a threshold (exported without it), Split of a dynamic axis into unequal
pieces (sizes summing past the axis), repeat_interleave under dynamic axes (a Reshape whose 0 copies the wrong
dim), RoiAlign aligned=False at opset 16 (written without coordinate_transformation_mode, which then means
half_pixel), affine_grid, nearest-exact, EmbeddingBag with offsets (a Loop slicing at run-time offsets).

The models of FLOAT16 are also converted to float16 the way users convert them (NAME_oOPSET_f16).

Each model is written as NAME_oOPSET.onnx with NAME_oOPSET_inputs.npz (inputs in0, in1, ...) and
NAME_oOPSET_ref.npz (torch outputs out0, out1, ...); models.txt lists one line per model:
  NAME_oOPSET TOL [--input-shapes ...]
Opset 9 (Upsample, Slice with attributes, ...) for the models torch exports faithfully there; not unet3d, whose
trilinear half-pixel resize torch writes as Upsample-9 (asymmetric).
Usage: export_zoo.py OUT_DIR [--only gpt2,t5] [--opsets 11,13,17] [--small] [--time]
  --small  only each model's first opset (the ctest)
  --time   also time torch at 1 thread (ms per run, median of 20) into NAME_torch_ms.txt
"""
import argparse
import math
import os
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")

# ---------------------------------------------------------------------------------------------------------------
# The architectures. Each builder returns (module, example inputs); sizes are small so each runs in milliseconds.


class GPT2(nn.Module):
    def __init__(self, vocab=97, d=64, heads=4, layers=2, ctx=32):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
                                                  ln2=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d),
                                                  fc2=nn.Linear(4 * d, d))))
        self.lnf, self.heads = nn.LayerNorm(d), heads
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied
        self.register_buffer("mask", torch.triu(torch.ones(ctx, ctx, dtype=torch.bool), diagonal=1))

    def forward(self, ids):
        b, t = ids.shape
        pos = torch.arange(t, dtype=torch.long).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.blocks:
            h = blk["ln1"](x)
            q, k, v = blk["qkv"](h).split(x.shape[-1], dim=2)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            att = att.masked_fill(self.mask[:t, :t], float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, -1)
            x = x + blk["proj"](y)
            x = x + blk["fc2"](F.gelu(blk["fc"](blk["ln2"](x)), approximate="tanh"))
        return self.head(self.lnf(x))


def make_gpt2():
    return GPT2(), (torch.randint(0, 97, (2, 16)),)


class T5Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class T5Attention(nn.Module):
    def __init__(self, d, heads, bias, causal=False, buckets=16, max_dist=32):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.heads, self.causal, self.buckets, self.max_dist = heads, causal, buckets, max_dist
        self.rel = nn.Embedding(buckets, heads) if bias else None

    def bucket(self, rel):
        n = self.buckets
        if self.causal:
            rel = -torch.min(rel, torch.zeros_like(rel))
            ret = torch.zeros_like(rel)
        else:
            n //= 2
            ret = (rel > 0).to(torch.long) * n
            rel = torch.abs(rel)
        exact = n // 2
        large = exact + (torch.log(rel.float() / exact) / math.log(self.max_dist / exact) * (n - exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, n - 1))
        return ret + torch.where(rel < exact, rel, large)

    def forward(self, x, kv=None, mask=None):
        b, t, d = x.shape
        kv = x if kv is None else kv
        s = kv.shape[1]
        q, k, v = (f(z).view(b, -1, self.heads, d // self.heads).transpose(1, 2)
                   for f, z in ((self.q, x), (self.k, kv), (self.v, kv)))
        scores = q @ k.transpose(-1, -2)
        if self.rel is not None:
            ctx = torch.arange(t, dtype=torch.long)[:, None]
            mem = torch.arange(s, dtype=torch.long)[None, :]
            bias = self.rel(self.bucket(mem - ctx)).permute(2, 0, 1).unsqueeze(0)
            scores = scores + bias
        if mask is not None:
            scores = scores + mask
        y = scores.softmax(-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class T5(nn.Module):
    def __init__(self, vocab=61, d=32, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc_n1, self.enc_att = T5Norm(d), T5Attention(d, heads, True)
        self.enc_n2, self.enc_ff = T5Norm(d), nn.Sequential(nn.Linear(d, 64, bias=False), nn.ReLU(),
                                                            nn.Linear(64, d, bias=False))
        self.enc_nf = T5Norm(d)
        self.dec_n1, self.dec_att = T5Norm(d), T5Attention(d, heads, True, causal=True)
        self.dec_n2, self.cross = T5Norm(d), T5Attention(d, heads, False)
        self.dec_n3, self.dec_ff = T5Norm(d), nn.Sequential(nn.Linear(d, 64, bias=False), nn.ReLU(),
                                                            nn.Linear(64, d, bias=False))
        self.dec_nf, self.lm = T5Norm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, src, tgt):
        x = self.emb(src)
        x = x + self.enc_att(self.enc_n1(x))
        x = x + self.enc_ff(self.enc_n2(x))
        mem = self.enc_nf(x)
        y = self.emb(tgt)
        t = tgt.shape[1]
        r = torch.arange(t)
        causal = (r[None, :] > r[:, None]).float() * -1e9
        y = y + self.dec_att(self.dec_n1(y), mask=causal)
        y = y + self.cross(self.dec_n2(y), kv=mem)
        y = y + self.dec_ff(self.dec_n3(y))
        return self.lm(self.dec_nf(y) * (32 ** -0.5))


def make_t5():
    return T5(), (torch.randint(0, 61, (2, 12)), torch.randint(0, 61, (2, 7)))


class Bart(nn.Module):
    def __init__(self, vocab=53, d=32):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, 16, d) * 0.1)
        self.tr = nn.Transformer(d, 4, 1, 1, 64, dropout=0.0, batch_first=True, activation="gelu")
        self.out = nn.Linear(d, vocab)

    def forward(self, src, tgt, src_pad):
        t = tgt.shape[1]
        r = torch.arange(t)
        causal = torch.zeros(t, t).masked_fill(r[None, :] > r[:, None], float("-inf"))
        s = self.emb(src) + self.pos[:, :src.shape[1]]
        u = self.emb(tgt) + self.pos[:, :t]
        y = self.tr(s, u, tgt_mask=causal, src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad)
        return self.out(y)


def make_bart():
    pad = torch.zeros(2, 10, dtype=torch.bool)
    pad[1, 7:] = True
    return Bart(), (torch.randint(0, 53, (2, 10)), torch.randint(0, 53, (2, 6)), pad)


class RNNLM(nn.Module):
    def __init__(self, cell, vocab=50, d=16, h=24):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = cell(d, h, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * h, vocab)

    def forward(self, ids, *state):
        y, st = self.rnn(self.emb(ids), *state)
        return (self.out(y), *(st if isinstance(st, tuple) else (st,)))


def make_lstm_lm():
    return RNNLM(nn.LSTM), (torch.randint(0, 50, (3, 9)),)


def make_gru_lm():
    return RNNLM(nn.GRU), (torch.randint(0, 50, (3, 9)), torch.randn(4, 3, 24))


class Audio1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(1, 16, 9, stride=2, padding=4)
        self.bn1 = nn.BatchNorm1d(16)
        self.c2 = nn.Conv1d(16, 16, 3, dilation=2)
        self.gn = nn.GroupNorm(1, 16)
        self.c3 = nn.Conv1d(16, 32, 4, stride=4, groups=4)
        self.bn3 = nn.BatchNorm1d(32)
        self.up = nn.ConvTranspose1d(32, 16, 4, stride=4)
        self.up2 = nn.ConvTranspose1d(16, 8, 5, stride=2, padding=2, output_padding=1)
        self.head = nn.Conv1d(8, 3, 1)

    def forward(self, x):
        x = F.relu(self.bn1(self.c1(x)))
        x = F.gelu(self.gn(self.c2(F.pad(x, (4, 0)))))
        x = F.leaky_relu(self.bn3(self.c3(x)), 0.1)
        x = torch.tanh(self.up2(F.relu(self.up(x))))
        return self.head(x), x.mean(-1)


def random_bn_stats(bns):
    """inference statistics away from the defaults (mean 0, variance 1), so that folding BatchNorm is checked"""
    for bn in bns:
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 2.0)


def make_audio1d():
    m = Audio1d()
    random_bn_stats((m.bn1, m.bn3))
    return m, (torch.randn(2, 1, 400),)


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1, self.e2, self.e3 = conv_block(3, 8), conv_block(8, 16), conv_block(16, 32)
        self.up1 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.d1 = conv_block(32, 16)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.d2 = conv_block(24, 8)
        self.up3 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.up4 = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.e3(F.max_pool2d(b, 2))
        y = self.d1(torch.cat([self.up1(c), b], 1))
        y = self.d2(torch.cat([self.up2(y), a], 1))
        y = self.head(y)
        return y, self.up3(y), self.up4(y), F.interpolate(y, size=(27, 21), mode="bilinear", align_corners=False)


def make_unet():
    m = UNet()
    random_bn_stats(mod for mod in m.modules() if isinstance(mod, nn.BatchNorm2d))
    return m, (torch.randn(1, 3, 32, 24),)


class SuperRes(nn.Module):
    def __init__(self):
        super().__init__()
        self.unshuf = nn.PixelUnshuffle(2)
        self.c1 = nn.Conv2d(12, 32, 5, padding=2, padding_mode="reflect")
        self.c2 = nn.Conv2d(32, 32, 3, padding=1, padding_mode="replicate")
        self.c3 = nn.Conv2d(32, 3 * 16, 3, padding=1)
        self.shuf = nn.PixelShuffle(4)

    def forward(self, x):
        y = torch.relu(self.c1(self.unshuf(x)))
        y = torch.relu(self.c2(y)) + y
        return self.shuf(self.c3(y)) + F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)


def make_superres():
    return SuperRes(), (torch.randn(1, 3, 16, 20),)


class ConvBNSiLU(nn.Sequential):
    def __init__(self, cin, cout, k=1, s=1):
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class C2f(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.m, self.cv2 = ConvBNSiLU(c, c), ConvBNSiLU(c // 2, c // 2, 3), ConvBNSiLU(c + c // 2, c)

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.append(self.m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Yolo(nn.Module):
    def __init__(self, nc=5):
        super().__init__()
        self.stem, self.s1, self.c1 = ConvBNSiLU(3, 16, 3, 2), ConvBNSiLU(16, 32, 3, 2), C2f(32)
        self.s2, self.c2 = ConvBNSiLU(32, 64, 3, 2), C2f(64)
        self.sppf1, self.sppf2 = ConvBNSiLU(64, 32), ConvBNSiLU(128, 64)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fuse = ConvBNSiLU(96, 32)
        self.heads = nn.ModuleList([nn.Conv2d(32, 5 + nc, 1), nn.Conv2d(64, 5 + nc, 1)])
        self.strides, self.no = (8, 16), 5 + nc

    def forward(self, x):
        p3 = self.c1(self.s1(self.stem(x)))
        p4 = self.c2(self.s2(p3))
        y = self.sppf1(p4)
        y1 = F.max_pool2d(y, 5, 1, 2)
        y2 = F.max_pool2d(y1, 5, 1, 2)
        p4 = self.sppf2(torch.cat([y, y1, y2, F.max_pool2d(y2, 5, 1, 2)], 1))
        p3 = self.fuse(torch.cat([self.up(p4), p3], 1))
        outs = []
        for head, feat, stride in zip(self.heads, (p3, p4), self.strides):
            b, _, h, w = feat.shape
            p = head(feat).view(b, self.no, h * w).permute(0, 2, 1).sigmoid()
            gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grid = torch.stack((gx, gy), -1).view(1, h * w, 2).float()
            xy, wh, conf = p.split((2, 2, self.no - 4), -1)
            xy = (xy * 2 - 0.5 + grid) * stride
            wh = (wh * 2) ** 2 * stride * 4
            outs.append(torch.cat((xy, wh, conf), -1))
        return torch.cat(outs, 1)


def make_yolo():
    m = Yolo()
    random_bn_stats(mod for mod in m.modules() if isinstance(mod, nn.BatchNorm2d))
    return m, (torch.randn(1, 3, 64, 64),)


class RoiHead(nn.Module):
    def __init__(self, aligned):
        super().__init__()
        self.aligned = aligned
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 16, 3, 1, 1), nn.ReLU())
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x, boxes):
        import torchvision
        f = self.body(x)
        r = torchvision.ops.roi_align(f, boxes, (7, 7), spatial_scale=0.5, sampling_ratio=2, aligned=self.aligned)
        p = torchvision.ops.roi_pool(f, boxes, (3, 4), spatial_scale=0.5)
        p2 = torchvision.ops.roi_pool(x, boxes, (5, 2), spatial_scale=1.0)  # negative maxima, empty bins
        return self.fc(r.flatten(1)), r, p, p2


def make_roialign(aligned=False):
    boxes = torch.tensor([[0, 1.0, 2.0, 30.0, 25.0], [0, 10.0, 4.5, 20.0, 40.0], [1, 0.0, 0.0, 47.0, 47.0],
                          [1, 5.5, 7.25, 9.0, 12.0], [0, 40.0, 38.5, 70.0, 60.0], [1, -10.0, -3.5, 2.5, 0.5]])
    return RoiHead(aligned), (torch.randn(2, 3, 48, 48), boxes)


def make_roialign_aligned():
    # torchvision 0.14 writes RoiAlign without coordinate_transformation_mode at every opset: from opset 16 on
    # that means half_pixel, which is aligned=True
    return make_roialign(True)


class Mixer(nn.Module):
    def __init__(self, d=32, patches=16, layers=2):
        super().__init__()
        self.stem = nn.Conv2d(3, d, 8, 8)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict(dict(
                n1=nn.LayerNorm(d), t=nn.Sequential(nn.Linear(patches, 24), nn.GELU(), nn.Linear(24, patches)),
                n2=nn.LayerNorm(d), c=nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d)))))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, 10)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        for l in self.layers:
            x = x + l["t"](l["n1"](x).transpose(1, 2)).transpose(1, 2)
            x = x + l["c"](l["n2"](x))
        return self.head(self.norm(x).mean(1))


def make_mixer():
    return Mixer(), (torch.randn(2, 3, 32, 32),)


class UNet3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv3d(1, 8, 3, padding=1), nn.InstanceNorm3d(8, affine=True), nn.LeakyReLU(0.01))
        self.e2 = nn.Sequential(nn.Conv3d(8, 16, 3, padding=1), nn.InstanceNorm3d(16), nn.LeakyReLU(0.01))
        self.up = nn.ConvTranspose3d(16, 8, 2, stride=2)
        self.d1 = nn.Conv3d(16, 8, 3, padding=1)
        self.head = nn.Conv3d(8, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool3d(a, 2))
        y = torch.relu(self.d1(torch.cat([self.up(b), a], 1)))
        y = self.head(y)
        return y.softmax(1), F.interpolate(y, scale_factor=2, mode="trilinear", align_corners=False)


def make_unet3d():
    return UNet3d(), (torch.randn(1, 1, 8, 12, 10),)


class Einsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wk = nn.Parameter(torch.randn(16, 4, 8) * 0.3), nn.Parameter(torch.randn(16, 4, 8) * 0.3)
        self.bil = nn.Parameter(torch.randn(16, 5, 12) * 0.3)

    def forward(self, x, y):
        q = torch.einsum("btd,dhk->bhtk", x, self.wq)
        k = torch.einsum("bsd,dhk->bhsk", x, self.wk)
        att = torch.einsum("bhtk,bhsk->bhts", q, k).softmax(-1)
        ctx = torch.einsum("bhts,bhsk->bthk", att, k)
        bil = torch.einsum("bi,ioj,bj->bo", x[:, 0], self.bil, y)
        outer = torch.einsum("bi,bj->bij", x[:, 1], y)
        diag = torch.einsum("bii->bi", outer[:, :12, :])
        tr = torch.einsum("bhtt->bh", att[:, :, :, :6] if att.shape[-1] >= 6 else att)
        return ctx, bil, outer.sum(-1), diag, tr


def make_einsum():
    return Einsum(), (torch.randn(2, 6, 16), torch.randn(2, 12))


class MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.MultiheadAttention(32, 4, batch_first=True)
        self.b = nn.MultiheadAttention(32, 2, kdim=16, vdim=24, batch_first=True)

    def forward(self, x, k, v, pad):
        y, w = self.a(x, x, x, key_padding_mask=pad)
        z, w2 = self.b(y, k, v, average_attn_weights=False)
        return y, w, z, w2


def make_mha():
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[0, 6:] = True
    return MHA(), (torch.randn(2, 9, 32), torch.randn(2, 5, 16), torch.randn(2, 5, 24), pad)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn, self.gn2 = nn.GroupNorm(4, 16), nn.GroupNorm(16, 16, affine=False)
        self.inn, self.inn2 = nn.InstanceNorm2d(16, affine=True), nn.InstanceNorm2d(16)
        self.ln = nn.LayerNorm([16, 6, 7])
        self.ln2 = nn.LayerNorm(7, eps=1e-3)
        self.lrn = nn.LocalResponseNorm(3)
        self.in1 = nn.InstanceNorm1d(16, affine=True)
        with torch.no_grad():
            for p in self.parameters():
                p.uniform_(0.5, 1.5)

    def forward(self, x):
        return (self.gn(x), self.gn2(x), self.inn(x), self.inn2(x), self.ln(x), self.ln2(x), self.lrn(x),
                self.in1(x.flatten(2)), F.normalize(x, dim=1))


def make_norms():
    return Norms(), (torch.randn(2, 16, 6, 7) * 3 + 1,)


class Pools(nn.Module):
    def forward(self, x):
        return (F.adaptive_avg_pool2d(x, (5, 3)), F.adaptive_max_pool2d(x, (3, 1)), F.adaptive_avg_pool2d(x, 1),
                F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                F.avg_pool2d(x, (2, 3), (2, 1), (1, 0), count_include_pad=True),
                F.max_pool2d(x, 3, 2, 0, ceil_mode=True), F.max_pool2d(x, 2, 1, 0, dilation=2),
                F.lp_pool2d(x, 2, 3, 3), F.adaptive_avg_pool1d(x.flatten(2), 9))


def make_pool():
    return Pools(), (torch.randn(2, 4, 15, 9),)


class Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.dil = nn.Conv2d(8, 8, 3, padding=2, dilation=2)
        self.grp = nn.Conv2d(8, 16, 3, padding=1, groups=4)
        self.dw2 = nn.Conv2d(16, 32, 3, stride=2, padding=1, groups=16)
        self.asym = nn.Conv2d(32, 8, (1, 5), stride=(2, 1), padding=(0, 2))
        self.same = nn.Conv2d(8, 8, 4)
        self.circ = nn.Conv2d(8, 4, 3, padding=(2, 1), padding_mode="reflect")
        self.tr = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=1)
        self.tr2 = nn.ConvTranspose2d(4, 3, (3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1))

    def forward(self, x):
        y = F.relu6(self.dil(x))
        y = F.relu(self.grp(y))
        y = self.dw2(y)
        y = self.asym(y)
        y = self.same(F.pad(y, (1, 2, 2, 1)))  # TF-style "same" for an even kernel
        y = self.circ(y)
        return self.tr2(self.tr(y)), y


def make_convs():
    return Convs(), (torch.randn(1, 8, 20, 18),)


class FakeQuant(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.02, 128, 0, 255)
        w = torch.fake_quantize_per_channel_affine(self.c1.weight, torch.full((8,), 0.01) * torch.arange(1, 9),
                                                   torch.zeros(8, dtype=torch.int32), 0, -128, 127)
        y = torch.relu(F.conv2d(x, w, self.c1.bias, padding=1))
        y = torch.fake_quantize_per_tensor_affine(y, 0.05, 0, 0, 255)
        y = torch.relu(self.c2(y))
        y = torch.fake_quantize_per_tensor_affine(y, 0.05, 0, -128, 127)
        return self.fc(y.mean((2, 3)))


def make_fakequant():
    torch.manual_seed(3)
    return FakeQuant(), (torch.rand(1, 3, 10, 10) * 2 - 1,)


class Indexing(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Parameter(torch.randn(20, 6))

    def forward(self, x, idx):
        g = torch.gather(x, 1, idx)
        s = torch.zeros_like(x).scatter(1, idx, g * 2)
        sa = torch.zeros(3, 20).scatter_add(1, idx % 20, torch.ones_like(g))
        sel = torch.index_select(self.emb, 0, idx[0])
        cs = torch.cumsum(idx, 1)
        csf = torch.cumsum(x, 0)
        v, i = torch.topk(x, 4, dim=1)
        vs, is_ = torch.topk(x, 3, dim=1, largest=False, sorted=True)
        am, an = x.argmax(1), x.argmin(0, keepdim=True)
        srt, sidx = torch.sort(x[:, :7], dim=1, descending=True)
        lin = idx * 7 + torch.div(idx, 3, rounding_mode="floor") - idx.shape[1]
        m = x.masked_fill(x > 0.5, 0.0)
        fl = x.flatten()[idx.flatten() + 3]
        return g, s, sa, sel, cs, csf, v, i, vs, is_, am, an, srt, sidx, lin, m, fl, idx.remainder(5)


def make_indexing():
    # distinct indices in a row: torch exports scatter_add below opset 16 as a plain scatter, wrong on repeats
    return Indexing(), (torch.randn(3, 11), torch.stack([torch.randperm(11)[:5] for _ in range(3)]))


class Acts(nn.Module):
    def __init__(self):
        super().__init__()
        self.prelu, self.prelu1 = nn.PReLU(6), nn.PReLU()
        with torch.no_grad():
            self.prelu.weight.uniform_(0.0, 0.5)

    def forward(self, x):
        return (F.hardswish(x), F.hardsigmoid(x), F.mish(x), F.softplus(x, beta=2), F.elu(x, 0.7),
                F.selu(x), F.celu(x, 1.3), self.prelu(x), self.prelu1(x), F.leaky_relu(x, 0.2),
                F.log_softmax(x, 1), F.glu(x, 1), F.softsign(x), F.hardtanh(x, -0.5, 0.8), F.tanhshrink(x),
                F.softshrink(x, 0.3), F.hardshrink(x, 0.4), torch.logsumexp(x, 2), F.softmin(x, -1), F.silu(x),
                F.gelu(x), torch.erf(x), torch.atan(x))


def make_activations():
    return Acts(), (torch.randn(2, 6, 5, 4) * 2,)


class DynCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, 7)

    def forward(self, x):
        y = self.f(x)
        return self.fc(y.view(y.size(0), -1)).softmax(-1)


def make_dynbatch():
    return DynCNN(), (torch.randn(3, 3, 20, 20),)


class TensorOps(nn.Module):
    def forward(self, x, y):
        a = torch.flip(x, [1, 2])
        b = torch.roll(x, shifts=(1, -2), dims=(1, 2))
        c = x.repeat(1, 2, 1)
        d = y.expand(2, 4, 5)
        e = torch.tril(x[0]) + torch.triu(x[1], 1)
        f = torch.where(x > 0, x, y * 3)
        g = x.clamp(-0.5, 0.7)
        h = torch.std(x, 1, unbiased=True) + torch.var(x, (1, 2), unbiased=False)[:, None]
        i = torch.norm(x, dim=2) + x.norm(p=1, dim=2)
        j = x[:, ::2, 1:-1].transpose(0, 2)
        k = torch.stack([x.amax(2), x.amin(2), x.prod(2), x.sum(2)], 0)
        l = torch.cat([x, y.expand_as(x)], -1).reshape(2, -1, 5)
        n = (x * 10).round() + x.floor() - x.ceil() + x.sign() + x.abs().sqrt()
        o = torch.nn.functional.one_hot((x.abs() * 3).long().clamp(max=4), 5).float()
        return a, b, c, d, e, f, g, h, i, j, k, l, n, o, (x > y).any(1), (x < 1).all(2)


def make_tensorops():
    return TensorOps(), (torch.randn(2, 4, 5), torch.randn(1, 4, 1))


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return self.w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rotate_half(x):
    a, b = x.chunk(2, -1)
    return torch.cat((-b, a), -1)


class Llama(nn.Module):
    """RMSNorm, rotary embeddings computed in the graph, grouped-query attention (k by repeat_interleave, v by
    expand + reshape), SwiGLU, a triu causal mask. repeat_interleave=False uses expand + reshape for k too:
    torch 1.13 exports repeat_interleave under dynamic axes as a Loop over sequences whose Reshape is wrong."""

    def __init__(self, repeat_interleave=True, vocab=67, d=48, heads=4, kv=2, layers=2):
        super().__init__()
        self.emb, self.h, self.kv, self.hd, self.ri = nn.Embedding(vocab, d), heads, kv, d // heads, repeat_interleave
        self.layers = nn.ModuleList([nn.ModuleDict(dict(
            n1=RMSNorm(d), q=nn.Linear(d, d, bias=False), k=nn.Linear(d, kv * self.hd, bias=False),
            v=nn.Linear(d, kv * self.hd, bias=False), o=nn.Linear(d, d, bias=False), n2=RMSNorm(d),
            g=nn.Linear(d, 64, bias=False), u=nn.Linear(d, 64, bias=False), dn=nn.Linear(64, d, bias=False)))
            for _ in range(layers)])
        self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)
        self.register_buffer("inv", 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd)))

    def repeat(self, x, b, t):
        g = self.h // self.kv
        if self.ri:
            return x.repeat_interleave(g, 1)
        return x[:, :, None].expand(b, self.kv, g, t, self.hd).reshape(b, self.h, t, self.hd)

    def forward(self, ids):
        b, t = ids.shape
        fr = torch.arange(t, dtype=torch.float32)[:, None] * self.inv[None, :]
        ang = torch.cat((fr, fr), -1)
        cos, sin = ang.cos(), ang.sin()
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.emb(ids)
        for l in self.layers:
            h = l["n1"](x)
            q = l["q"](h).view(b, t, self.h, self.hd).transpose(1, 2)
            k = l["k"](h).view(b, t, self.kv, self.hd).transpose(1, 2)
            v = l["v"](h).view(b, t, self.kv, self.hd).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k = self.repeat(k, b, t)
            v = v[:, :, None].expand(b, self.kv, self.h // self.kv, t, self.hd).reshape(b, self.h, t, self.hd)
            a = (q @ k.transpose(2, 3) / math.sqrt(self.hd) + mask).softmax(-1) @ v
            x = x + l["o"](a.transpose(1, 2).reshape(b, t, -1))
            h = l["n2"](x)
            x = x + l["dn"](F.silu(l["g"](h)) * l["u"](h))
        return self.head(self.norm(x))


def make_llama():
    return Llama(), (torch.randint(0, 67, (2, 11)),)


def make_llama_dyn():
    return Llama(repeat_interleave=False), (torch.randint(0, 67, (2, 11)),)


class KVStep(nn.Module):
    """One decoding step with a key/value cache of dynamic length (concatenated past, present outputs)."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.qkv, self.o, self.h = nn.Linear(d, 3 * d), nn.Linear(d, d), heads

    def forward(self, x, pk, pv):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.h, -1).transpose(1, 2) for z in self.qkv(x).split(d, -1))
        k, v = torch.cat([pk, k], 2), torch.cat([pv, v], 2)
        a = (q @ k.transpose(-1, -2) / math.sqrt(d // self.h)).softmax(-1) @ v
        return self.o(a.transpose(1, 2).reshape(b, t, d)), k, v


def make_kvcache():
    return KVStep(), (torch.randn(2, 1, 32), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 8))


class ClipPool(nn.Module):
    """CLIP's text pooling (the embedding at each row's argmax token), masked mean pooling, RoBERTa's position
    ids from a cumsum of the mask, fancy indexing with lists and strides."""

    def __init__(self):
        super().__init__()
        self.e, self.proj = nn.Embedding(50, 16), nn.Linear(16, 8, bias=False)

    def forward(self, ids, mask):
        h = self.e(ids)
        eot = h[torch.arange(h.shape[0]), ids.argmax(-1)]
        mean = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
        pos = torch.cumsum(mask.long(), 1) * mask.long() + 1
        z = self.proj(eot)
        return z / z.norm(dim=-1, keepdim=True), mean, pos, h[:, [0, 2, 5]], h[..., 1::3]


def make_clippool():
    return ClipPool(), (torch.randint(0, 50, (3, 9)), (torch.rand(3, 9) > 0.3).float())


class IndexPut(nn.Module):
    def forward(self, x, idx, v):
        y = x.clone()
        y[:, idx] = v
        z = x.clone()
        z[z < 0] = 0.5
        w = x.clone()
        w[1, 2:4] = 7.0
        return y, z, w


def make_indexput():
    return IndexPut(), (torch.randn(3, 6), torch.tensor([4, 1]), torch.randn(3, 2))


class GridSample(nn.Module):
    def forward(self, x, grid):
        return (F.grid_sample(x, grid, align_corners=False),
                F.grid_sample(x, grid * 1.3, mode="nearest", padding_mode="border", align_corners=True),
                F.grid_sample(x, grid * 1.2, mode="bilinear", padding_mode="reflection", align_corners=False),
                F.grid_sample(x, grid, mode="bicubic", align_corners=True))


def make_gridsample():
    return GridSample(), (torch.randn(2, 3, 8, 8), torch.rand(2, 5, 6, 2) * 2.2 - 1.1)


class Interp(nn.Module):
    def forward(self, x):
        return (F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=False, recompute_scale_factor=False),
                F.interpolate(x, scale_factor=1.5, mode="nearest"), F.interpolate(x, size=(7, 11), mode="nearest"),
                F.interpolate(x, size=(9, 4), mode="bicubic", align_corners=True),
                F.interpolate(x, size=(3, 2), mode="area"),
                F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False),
                F.interpolate(x[:, :, 0], scale_factor=2.5, mode="linear"))


def make_interp():
    return Interp(), (torch.randn(1, 2, 6, 4),)


class WaveNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.inp, self.out = nn.Conv1d(1, c, 1), nn.Conv1d(c, 8, 1)
        self.f = nn.ModuleList([nn.Conv1d(c, c, 2, dilation=2 ** i) for i in range(4)])
        self.g = nn.ModuleList([nn.Conv1d(c, c, 2, dilation=2 ** i) for i in range(4)])
        self.r = nn.ModuleList([nn.Conv1d(c, c, 1) for _ in range(4)])

    def forward(self, x):
        x, skip = self.inp(x), 0
        for i, (f, g, r) in enumerate(zip(self.f, self.g, self.r)):
            p = F.pad(x, (2 ** i, 0))
            h = torch.tanh(f(p)) * torch.sigmoid(g(p))
            x, skip = x + r(h), skip + h
        return F.log_softmax(self.out(F.relu(skip)), 1)


def make_wavenet():
    return WaveNet(), (torch.randn(2, 1, 64),)


class Conformer(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 64), nn.SiLU(), nn.Linear(64, d))
        self.ln, self.pw1, self.pw2 = nn.LayerNorm(d), nn.Conv1d(d, 2 * d, 1), nn.Conv1d(d, d, 1)
        self.dw, self.bn = nn.Conv1d(d, d, 7, padding=3, groups=d), nn.BatchNorm1d(d)
        random_bn_stats((self.bn,))

    def forward(self, x):
        x = x + 0.5 * self.ff(x)
        h = F.glu(self.pw1(self.ln(x).transpose(1, 2)), 1)
        h = self.pw2(F.silu(self.bn(self.dw(h))))
        return x + h.transpose(1, 2)


def make_conformer():
    return Conformer(), (torch.randn(2, 20, 32),)


class SSDHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.l = nn.Conv2d(8, 4 * 6, 3, padding=1), nn.Conv2d(8, 4 * 4, 3, padding=1)

    def forward(self, f, anchors):
        b = f.shape[0]
        cls = self.c(f).permute(0, 2, 3, 1).reshape(b, -1, 6).softmax(-1)
        loc = self.l(f).permute(0, 2, 3, 1).reshape(b, -1, 4)
        cxcy = anchors[:, :2] + loc[..., :2] * 0.1 * anchors[:, 2:]
        wh = anchors[:, 2:] * torch.exp((loc[..., 2:] * 0.2).clamp(max=math.log(1000 / 16)))
        sc, lab = cls[..., 1:].max(-1)
        return torch.cat([cxcy - wh / 2, cxcy + wh / 2], -1), sc, lab


def make_ssd():
    return SSDHead(), (torch.randn(2, 8, 5, 6), torch.rand(120, 4))


class RNNs(nn.Module):
    def __init__(self):
        super().__init__()
        self.r = nn.RNN(5, 7, nonlinearity="relu", num_layers=2)
        self.l, self.g = nn.LSTM(5, 6), nn.GRU(5, 4, bidirectional=True)

    def forward(self, x, h0, c0):
        a, ha = self.r(x)
        b, (hb, cb) = self.l(x, (h0, c0))
        c, hc = self.g(x)
        return a, ha, b, hb, cb, c, hc


def make_rnns():
    return RNNs(), (torch.randn(6, 2, 5), torch.randn(1, 2, 6), torch.randn(1, 2, 6))


class Packed(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.LSTM(5, 6, batch_first=True, bidirectional=True)

    def forward(self, x, lens):
        p = nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
        y, (h, c) = self.l(p)
        y, _ = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return y, h, c


def make_packed():
    return Packed(), (torch.randn(3, 7, 5), torch.tensor([7, 4, 2]))


class Float64(nn.Module):
    def __init__(self):
        super().__init__()
        self.l, self.c = nn.Linear(6, 5), nn.Conv1d(2, 3, 3)

    def forward(self, x, y):
        return torch.tanh(self.l(x)).softmax(-1), self.c(y).relu()


def make_float64():
    return Float64().double(), (torch.randn(4, 6, dtype=torch.float64), torch.randn(2, 2, 9, dtype=torch.float64))


class WeightNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.utils.weight_norm(nn.Conv1d(4, 6, 3))
        self.l = nn.utils.spectral_norm(nn.Linear(6, 3))

    def forward(self, x):
        return self.l(self.c(x).transpose(1, 2)), F.unfold(x[:, :, None].expand(2, 4, 5, 10), (2, 3), dilation=(1, 2),
                                                           padding=1, stride=(2, 1))


def make_weightnorm():
    return WeightNorm(), (torch.randn(2, 4, 10),)



@torch.jit.script
def _scripted_steps(x, n: int):
    y = x
    for _ in range(n):
        if bool(y.sum() > 0):
            y = y * 0.5 - 1
        else:
            y = torch.tanh(y) + 2
    return y


class Scripted(nn.Module):
    """Scripted control flow: a Loop of fixed trip count around an If on the data (exported as Loop / If)."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x):
        return _scripted_steps(self.l(x), 5)


def make_scripted():
    return Scripted(), (torch.randn(3, 4),)


class QNet(nn.Module):
    """Eager-mode static quantization (torch.ao.quantization: fused conv + relu, fbgemm qconfig, calibrated),
    exported as QuantizeLinear / DequantizeLinear around float ops."""

    def __init__(self):
        super().__init__()
        import torch.ao.quantization as tq
        self.q, self.dq, self.add = tq.QuantStub(), tq.DeQuantStub(), nn.quantized.FloatFunctional()
        self.c1, self.r1 = nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()
        self.c2, self.r2 = nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU()
        self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(8, 5)

    def forward(self, x):
        x = self.q(x)
        y = self.r1(self.c1(x))
        z = self.r2(self.c2(y))
        z = self.add.add(z, z)
        return self.dq(self.fc(self.pool(z).flatten(1)))


def make_qnet():
    import torch.ao.quantization as tq
    m = QNet().eval()
    m = tq.fuse_modules(m, [["c1", "r1"], ["c2", "r2"]])
    m.qconfig = tq.get_default_qconfig("fbgemm")
    tq.prepare(m, inplace=True)
    for _ in range(8):
        m(torch.randn(2, 3, 16, 16))
    tq.convert(m, inplace=True)
    return m, (torch.randn(1, 3, 16, 16),)

# name: (builder, opsets, tolerance on relative L2 error, dynamic axes of inputs, compiled with --input-shapes at
# the example's shapes); the first opset is the ctest's
ZOO = {
    "gpt2": (make_gpt2, [13, 11, 17, 9], 1e-4, None),
    "t5": (make_t5, [13, 11, 17, 9], 1e-4, None),
    "bart": (make_bart, [13, 17], 1e-4, None),
    "lstm_lm": (make_lstm_lm, [13, 11, 17, 9], 1e-4, None),
    "gru_lm": (make_gru_lm, [13, 11, 17, 9], 1e-4, None),
    "audio1d": (make_audio1d, [13, 11, 17, 9], 1e-4, None),
    "unet": (make_unet, [13, 11, 17], 1e-4, None),
    "superres": (make_superres, [13, 11, 17], 1e-4, None),
    "yolo": (make_yolo, [13, 11, 17, 9], 1e-4, None),
    "roialign": (make_roialign, [11], 1e-4, None),
    "roialign_aligned": (make_roialign_aligned, [16], 1e-4, None),
    "mixer": (make_mixer, [13, 11, 17, 9], 1e-4, None),
    "unet3d": (make_unet3d, [13, 11, 17], 1e-4, None),
    "einsum": (make_einsum, [13, 12, 17], 1e-4, None),
    "mha": (make_mha, [13, 11, 17, 9], 1e-4, None),
    "norms": (make_norms, [13, 11, 17, 9], 1e-4, None),
    "pool": (make_pool, [13, 11, 17], 1e-4, None),
    "convs": (make_convs, [13, 11, 17, 9], 1e-4, None),
    "fakequant": (make_fakequant, [13, 17], 1e-4, None),
    "indexing": (make_indexing, [13, 11, 17], 1e-4, None),
    "activations": (make_activations, [13, 12, 17], 1e-4, None),
    "dynbatch": (make_dynbatch, [13, 11, 17, 9], 1e-4, {"in0": {0: "batch"}}),
    "tensorops": (make_tensorops, [14, 17], 1e-4, None),
    "llama": (make_llama, [14, 17], 1e-4, None),
    "llama_dyn": (make_llama_dyn, [17, 14], 1e-4, {"in0": {0: "batch", 1: "seq"}}),
    "kvcache": (make_kvcache, [13, 11, 17], 1e-4, {"in1": {2: "past"}, "in2": {2: "past"}}),
    "clippool": (make_clippool, [13, 11, 17], 1e-4, None),
    "indexput": (make_indexput, [13, 11, 17], 1e-4, None),
    "gridsample": (make_gridsample, [16], 1e-4, None),
    "interp": (make_interp, [13, 11, 17], 1e-4, None),
    "wavenet": (make_wavenet, [13, 11, 17, 9], 1e-4, None),
    "conformer": (make_conformer, [13, 11, 17, 9], 1e-4, None),
    "ssd": (make_ssd, [13, 11, 17, 9], 1e-4, None),
    "rnns": (make_rnns, [13, 11, 17, 9], 1e-4, None),
    "packed": (make_packed, [13, 11, 17, 9], 1e-4, None),
    "float64": (make_float64, [13, 17], 1e-4, None),
    "weightnorm": (make_weightnorm, [13, 11, 17], 1e-4, None),
    "qnet": (make_qnet, [13, 17], 1e-4, None),
    "scripted": (make_scripted, [13, 11, 17, 9], 1e-4, None),
}


# models also converted to float16 (first opset; relative L2 against torch's float32 result under 3e-3)
FLOAT16 = {"gpt2", "yolo", "unet", "norms", "lstm_lm", "gridsample", "activations"}


def to_float16(src, dst):
    """The float32 model at src as users convert it for float16 inference (onnxconverter-common style): float
    initializers, Constant tensors, Cast / dtype attributes and graph inputs / outputs to float16, Resize's
    scales kept float32 as the spec requires."""
    import onnx
    from onnx import TensorProto, numpy_helper
    m = onnx.load(src)
    g = m.graph
    keep = {n.input[2] for n in g.node if n.op_type == "Resize" and len(n.input) > 2}

    def half(t):
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))

    def walk(graph):
        for n in graph.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR and not (n.output and n.output[0] in keep):
                    half(a.t)
                if a.name in ("to", "dtype") and a.type == onnx.AttributeProto.INT and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.FLOAT16
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)

    for t in g.initializer:
        if t.name not in keep:
            half(t)
    walk(g)
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    onnx.save(m, dst)


def flat(o):
    return [t for x in o for t in flat(x)] if isinstance(o, (tuple, list)) else [o]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--opsets", default="")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--time", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    only = set(a.only.split(",")) - {""}
    want_opsets = {int(o) for o in a.opsets.split(",") if o}
    lines = []
    for name, (build, opsets, tol, dyn) in ZOO.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model, inputs = build()
        model.eval()
        with torch.no_grad():
            outs = flat(model(*inputs))
        in_names = [f"in{i}" for i in range(len(inputs))]
        out_names = [f"out{i}" for i in range(len(outs))]
        feeds = {n: t.numpy() for n, t in zip(in_names, inputs)}
        refs = {n: t.numpy() for n, t in zip(out_names, outs)}
        if a.time:
            torch.set_num_threads(1)
            with torch.no_grad():
                for _ in range(3):
                    model(*inputs)
                ts = []
                for _ in range(20):
                    t0 = time.perf_counter()
                    model(*inputs)
                    ts.append(time.perf_counter() - t0)
            with open(os.path.join(a.out, f"{name}_torch_ms.txt"), "w") as f:
                f.write(f"{np.median(ts) * 1e3:.3f}\n")
        for opset in (opsets[:1] if a.small else opsets):
            if want_opsets and opset not in want_opsets:
                continue
            tag = f"{name}_o{opset}"
            try:
                torch.onnx.export(model, inputs, os.path.join(a.out, tag + ".onnx"), opset_version=opset,
                                  input_names=in_names, output_names=out_names, dynamic_axes=dyn,
                                  do_constant_folding=True)
            except Exception as e:  # an export torch itself cannot do is not mlc's to fix
                print(f"{tag}: torch.onnx.export failed: {str(e).splitlines()[0]}")
                continue
            np.savez(os.path.join(a.out, tag + "_inputs.npz"), **feeds)
            np.savez(os.path.join(a.out, tag + "_ref.npz"), **refs)
            shapes = ""
            if dyn:
                shapes = " --input-shapes " + ",".join(f"{n}:[{','.join(map(str, feeds[n].shape))}]" for n in dyn)
            lines.append(f"{tag} {tol}{shapes}")
            if name in FLOAT16 and opset == opsets[0]:
                to_float16(os.path.join(a.out, tag + ".onnx"), os.path.join(a.out, tag + "_f16.onnx"))
                f16 = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
                np.savez(os.path.join(a.out, tag + "_f16_inputs.npz"), **f16)
                np.savez(os.path.join(a.out, tag + "_f16_ref.npz"),
                         **{k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in refs.items()})
                lines.append(f"{tag}_f16 3e-3{shapes}")
    with open(os.path.join(a.out, "models.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
