#!/usr/bin/env python3
"""make_signal_models.py DIR: small ONNX models for the signal ops beyond the backend node tests (float32
transforms with a small DFT matrix run as a GEMM, the others as a float64 reduction: both forms): DFT with
dft_length padding and truncation, complex and real inputs, inverse, RFFT and IRFFT of odd and even lengths,
negative and leading axes, opset 17 (axis attribute) and 20 (axis input), float16 and float64, a long
transform (accuracy of the twiddle table); STFT with complex signals, two-sided output, windows shorter and
longer than the frame; the three windows with other output dtypes; MelWeightMatrix with other parameters.
Each model has random inputs (NAME_inputs.npz) and a float64 numpy reference (NAME_ref.npz), computed from
the definitions (numpy.fft, the ONNX reference's STFT framing and mel formula). DIR/models.txt lists
"NAME TOLERANCE" per line (max error relative to the largest reference value). Used by test_signal.sh."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(17)
lines = []


def ttype(dt):
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)]


def save(name, node, x, inits, ref, opset=17, tol=1e-5):
    ins = [helper.make_tensor_value_info("x", ttype(x.dtype), list(x.shape))] if x is not None else []
    g = helper.make_graph([node], name, ins, [helper.make_tensor_value_info("y", ttype(ref.dtype), None)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", **({"x": x} if x is not None else {}))
    np.savez(f"{out}/{name}_ref.npz", y=ref)
    lines.append(f"{name} {tol}")


def c2r(c):  # complex -> [..., 2]
    return np.stack([c.real, c.imag], -1)


def r2c(x):  # [..., 1 or 2] -> complex (float64)
    x = x.astype(np.float64)
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0] + 0j


def scalar(name, v, dt=np.int64):
    return numpy_helper.from_array(np.array(v, dt), name)


def dft(name, x, axis, length=None, inverse=0, onesided=0, opset=17, tol=1e-5, ref=None):
    ins, inits, attrs = ["x"], [], dict(inverse=inverse, onesided=onesided)
    if length is not None:
        ins.append("len")
        inits.append(scalar("len", length, np.int32))
    else:
        ins.append("")
    if opset >= 20:
        ins.append("axis")
        inits.append(scalar("axis", axis))
    else:
        attrs["axis"] = axis
    if ins[-1] == "":
        ins.pop()
    save(name, helper.make_node("DFT", ins, ["y"], **attrs), x, inits, ref.astype(x.dtype), opset, tol)


# full transforms: padding, truncation, complex / real, forward / inverse, both opsets
x = rng.standard_normal((2, 7, 1))
dft("dft_f64_pad", x, 1, length=12, ref=c2r(np.fft.fft(r2c(x), n=12, axis=1)))
x = rng.standard_normal((3, 9, 2)).astype(np.float32)
dft("dft_complex_trunc_opset20", x, -2, length=6, opset=20, ref=c2r(np.fft.fft(r2c(x), n=6, axis=1)))
x = rng.standard_normal((2, 5, 3, 2)).astype(np.float32)
dft("dft_inverse_pad", x, 1, length=8, inverse=1, ref=c2r(np.fft.ifft(r2c(x), n=8, axis=1)))
x = rng.standard_normal((6, 4, 2)).astype(np.float32)
dft("dft_axis0_opset20", x, 0, opset=20, ref=c2r(np.fft.fft(r2c(x), axis=0)))
x = rng.standard_normal((2, 3, 4, 1)).astype(np.float32)
dft("dft_negative_axis", x, -3, ref=c2r(np.fft.fft(r2c(x), axis=1)))
# RFFT and IRFFT
x = rng.standard_normal((2, 3, 9, 1)).astype(np.float32)
dft("dft_rfft_odd", x, 2, onesided=1, ref=c2r(np.fft.rfft(r2c(x).real, axis=2)))
x = rng.standard_normal((2, 4, 1)).astype(np.float32)
dft("dft_rfft_pad_opset20", x, 1, length=7, onesided=1, opset=20, ref=c2r(np.fft.rfft(r2c(x).real, n=7, axis=1)))
x = rng.standard_normal((2, 5, 2)).astype(np.float32)
dft("dft_irfft_odd_opset20", x, 1, length=9, inverse=1, onesided=1, opset=20,
    ref=np.fft.irfft(r2c(x), n=9, axis=1)[..., None])
x = rng.standard_normal((3, 8, 2)).astype(np.float32)
dft("dft_irfft_crop", x, 1, length=6, inverse=1, onesided=1, ref=np.fft.irfft(r2c(x), n=6, axis=1)[..., None])
x = rng.standard_normal((1, 6, 2, 2))
dft("dft_irfft_default_f64", x, 1, inverse=1, onesided=1, ref=np.fft.irfft(r2c(x), axis=1)[..., None])
# the reference truncates a complex input's spectrum for onesided=1 too
x = rng.standard_normal((2, 6, 2)).astype(np.float32)
dft("dft_onesided_complex", x, 1, onesided=1, ref=c2r(np.fft.fft(r2c(x), axis=1)[:, :4]))
# other dtypes and a long transform
x = rng.standard_normal((1, 16, 1)).astype(np.float16)
dft("dft_f16", x, 1, tol=2e-3, ref=c2r(np.fft.fft(r2c(x), axis=1)))
# float32 transforms whose DFT matrix is over 16 MiB keep the reduction (the others run as a GEMM)
x = rng.standard_normal((2, 4096, 2)).astype(np.float32)
dft("dft_long", x, 1, tol=1e-5, ref=c2r(np.fft.fft(r2c(x), axis=1)))
x = rng.standard_normal((1, 3000, 1)).astype(np.float32)
dft("dft_long_rfft", x, 1, onesided=1, tol=1e-5, ref=c2r(np.fft.rfft(r2c(x).real, axis=1)))
x = rng.standard_normal((1, 1025, 2)).astype(np.float32)
dft("dft_long_irfft", x, 1, inverse=1, onesided=1, tol=1e-5, ref=np.fft.irfft(r2c(x), axis=1)[..., None])


def stft_ref(x, step, window, L, onesided):
    """the ONNX reference's framing: frames of len(window) samples (zero past the signal's end) times the
    window, DFT of length L (pad / truncate), 1 + (S - L) // step frames"""
    c = r2c(x)
    S, W = c.shape[1], len(window)
    frames = 1 + (S - L) // step
    fr = np.zeros((c.shape[0], frames, W), complex)
    for f in range(frames):
        seg = c[:, f * step:f * step + W]
        fr[:, f, :seg.shape[1]] = seg
    y = np.fft.fft(fr * window, n=L, axis=-1)
    return c2r(y[..., :L // 2 + 1] if onesided else y)


def stft(name, x, step, window=None, length=None, onesided=1, tol=1e-5):
    ins, inits = ["x", "step"], [scalar("step", step)]
    if window is not None:
        ins.append("window")
        inits.append(numpy_helper.from_array(window.astype(x.dtype), "window"))
    if length is not None:
        ins += [""] * (3 - len(ins)) + ["len"]
        inits.append(scalar("len", length))
    L = length if length is not None else len(window) if window is not None else x.shape[1]
    w = window if window is not None else np.ones(L)
    ref = stft_ref(x, step, w.astype(np.float64), L, onesided).astype(x.dtype)
    save(name, helper.make_node("STFT", ins, ["y"], onesided=onesided), x, inits, ref, 17, tol)


x = rng.standard_normal((2, 50, 2)).astype(np.float32)
stft("stft_complex_twosided", x, 7, length=10, onesided=0)
x = rng.standard_normal((1, 40, 1)).astype(np.float32)
stft("stft_window_longer", x, 5, window=rng.uniform(0, 1, 12), length=10)
x = rng.standard_normal((3, 33, 1))
stft("stft_window_shorter_f64", x, 4, window=rng.uniform(0, 1, 6), length=10)
x = rng.standard_normal((1, 64, 1)).astype(np.float32)
stft("stft_hann_frames", x, 16, window=np.hanning(33)[:32])
x = rng.standard_normal((1, 6000, 1)).astype(np.float32)
stft("stft_long_frames", x, 1024, window=np.hanning(2049)[:2048])


def window(name, op, size, periodic, dtype, fn):
    N = size if periodic else size - 1
    n = np.arange(size, dtype=np.float64)
    ref = fn(n, N).astype(dtype)
    node = helper.make_node(op, ["size"], ["y"], periodic=periodic, output_datatype=int(ttype(dtype)))
    save(name, node, None, [scalar("size", size, np.int32)], ref, 17, 2e-3 if dtype == np.float16 else 1e-6)


window("hann_f64", "HannWindow", 7, 1, np.float64, lambda n, N: np.sin(np.pi * n / N) ** 2)
window("hamming_f16", "HammingWindow", 9, 0, np.float16,
       lambda n, N: 25 / 46 - 21 / 46 * np.cos(2 * np.pi * n / N))
window("blackman_long", "BlackmanWindow", 400, 1, np.float32,
       lambda n, N: 0.42 - 0.5 * np.cos(2 * np.pi * n / N) + 0.08 * np.cos(4 * np.pi * n / N))


def mel_ref(nbins, length, rate, lo, hi, dtype):
    """the ONNX reference's triangular filter bank"""
    nspec = length // 2 + 1
    bins = np.arange(0, nbins + 2)
    lo_mel, hi_mel = 2595 * np.log10(1 + lo / 700), 2595 * np.log10(1 + hi / 700)
    step = (hi_mel - lo_mel) / bins.shape[0]
    f = 700 * (np.power(10, (bins * step + lo_mel) / 2595) - 1)
    edge = (((length + 1) * f) // rate).astype(int)
    w = np.zeros((nspec, nbins))
    for i in range(nbins):
        l, c, h = edge[i], edge[i + 1], edge[i + 2]
        if c == l:
            w[c, i] = 1
        else:
            for j in range(l, c + 1):
                w[j, i] = (j - l) / (c - l)
        if h > c:
            for j in range(c, h):
                w[j, i] = (h - j) / (h - c)
    return w.astype(dtype)


def mel(name, nbins, length, rate, lo, hi, dtype, edge_dtype=np.float32):
    inits = [scalar("nbins", nbins, np.int32), scalar("len", length), scalar("rate", rate),
             scalar("lo", lo, edge_dtype), scalar("hi", hi, edge_dtype)]
    node = helper.make_node("MelWeightMatrix", ["nbins", "len", "rate", "lo", "hi"], ["y"],
                            output_datatype=int(ttype(dtype)))
    ref = mel_ref(nbins, length, rate, float(edge_dtype(lo)), float(edge_dtype(hi)), dtype)
    save(name, node, None, inits, ref, 17, 1e-6)


mel("mel_speech_f64", 40, 512, 16000, 20.0, 8000.0, np.float64)
mel("mel_small_f64_edges", 5, 64, 22050, 300.0, 3000.0, np.float32, np.float64)

with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
