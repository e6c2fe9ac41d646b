#!/usr/bin/python3
"""Recurrent layers for timing mlc against torch: exports each as ONNX (torch.onnx.export, opset 14) with an
input .npz and torch's output .npz, and writes torch's median time at 1 and 2 threads.

usage: bench/rnn_layers.py OUT_DIR        then bench/rnn_layers.sh MLC OUT_DIR prints the table
writes OUT_DIR/layers.txt: one line per layer, "name torch_ms_1t torch_ms_2t"."""
import os
import sys
import time

import numpy as np
import torch
from torch import nn

T, I, H = 500, 256, 256
LAYERS = {  # name: (module, input shape)
    "lstm_b1": (lambda: nn.LSTM(I, H), (T, 1, I)),
    "gru_b1": (lambda: nn.GRU(I, H), (T, 1, I)),
    "rnn_b1": (lambda: nn.RNN(I, H), (T, 1, I)),
    "lstm_b8": (lambda: nn.LSTM(I, H), (T, 8, I)),
    "gru_b8": (lambda: nn.GRU(I, H), (T, 8, I)),
    "lstm_bi2_b1": (lambda: nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True), (1, T, I)),
}


class Wrap(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        y, _ = self.m(x)
        return y


def median_ms(f, x, threads, reps=10):
    torch.set_num_threads(threads)
    with torch.no_grad():
        f(x)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f(x)
            ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    lines = []
    for name, (make, shape) in LAYERS.items():
        m = Wrap(make()).eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            y = m(x)
        torch.onnx.export(m, (x,), os.path.join(out, name + ".onnx"), input_names=["x"], output_names=["y"],
                          opset_version=14)
        np.savez(os.path.join(out, name + "_inputs.npz"), x=x.numpy())
        np.savez(os.path.join(out, name + "_ref.npz"), y=y.numpy())
        lines.append("%s %.3f %.3f" % (name, median_ms(m, x, 1), median_ms(m, x, 2)))
        print(lines[-1], flush=True)
    with open(os.path.join(out, "layers.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
