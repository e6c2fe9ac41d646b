#!/usr/bin/env python3
"""compare_npz.py GOT.npz WANT.npz [--tol 1e-4] [--l2 | --abs]: every array of WANT must be in GOT with the same shape
and dtype, and max|got - want| / max(|finite want|) under tol (NaN matches NaN, an infinity the same infinity);
with --abs max|got - want| itself at most tol (quantized outputs: tol steps).
With --l2 (the model zoo's check against torch): float arrays need the relative L2 error
||got - want|| / ||want|| under tol (equal infinities match; the max abs error is printed too) and integer and
bool arrays must be equal. Prints one line per array; exits 1 on
any mismatch."""
import sys

import numpy as np

got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
tol = float(sys.argv[sys.argv.index("--tol") + 1]) if "--tol" in sys.argv else 1e-4
l2 = "--l2" in sys.argv
absolute = "--abs" in sys.argv
bad = 0
for k in want.files:
    if k not in got.files:
        print(f"{k}: missing from {sys.argv[1]}")
        bad += 1
        continue
    g, w = got[k], want[k]
    if g.shape != w.shape or g.dtype != w.dtype:
        print(f"{k}: got {g.dtype}{list(g.shape)}, want {w.dtype}{list(w.shape)}")
        bad += 1
        continue
    if w.size == 0:  # an empty result (a data-dependent shape can be): the shape is all there is to compare
        print(f"{k}: empty {list(w.shape)}")
        continue
    if l2 and w.dtype.kind in "biu":
        n = int(np.count_nonzero(g != w))
        print(f"{k}: {w.dtype}{list(w.shape)} {n} of {w.size} differ")
        bad += n > 0
        continue
    gf, wf = g.astype(np.float64), w.astype(np.float64)
    if l2:
        same_inf = np.isinf(wf) & (gf == wf)
        d = np.where(same_inf, 0.0, gf - np.where(same_inf, 0.0, wf))
        rel = float(np.linalg.norm(d)) / max(float(np.linalg.norm(np.where(np.isinf(wf), 0.0, wf))), 1e-30)
        print(f"{k}: {w.dtype}{list(w.shape)} relative L2 {rel:.3g}, max abs {float(np.abs(d).max()):.3g}")
        bad += not (rel <= tol)
        continue
    same = (np.isnan(gf) & np.isnan(wf)) | (gf == wf)  # NaN matches NaN, an infinity the same infinity
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(np.where(same, 0.0, gf - wf)))
    fin = np.abs(wf[np.isfinite(wf)])
    scale = max(float(fin.max()) if fin.size else 0.0, 1e-30)
    if absolute:
        print(f"{k}: max abs error {float(diff.max()):.3g} ({int(np.count_nonzero(diff))} of {w.size} differ)")
        bad += not (float(diff.max()) <= tol)
        continue
    rel = float(diff.max()) / scale
    print(f"{k}: max relative error {rel:.3g}")
    bad += rel > tol or not np.isfinite(rel)
sys.exit(1 if bad else 0)
