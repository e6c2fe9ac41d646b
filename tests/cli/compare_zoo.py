#!/usr/bin/env python3
"""compare_zoo.py GOT.npz WANT.npz [--tol 1e-4]: every array of WANT must be in GOT with the same shape and
dtype; float arrays need relative L2 error ||got - want|| / ||want|| under tol (max abs error printed too),
integer and bool arrays must be equal. One line per array; exits 1 on any mismatch."""
import sys

import numpy as np

got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
tol = float(sys.argv[sys.argv.index("--tol") + 1]) if "--tol" in sys.argv else 1e-4
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
    if w.dtype.kind in "biu":
        n = int(np.count_nonzero(g != w))
        print(f"{k}: {w.dtype}{list(w.shape)} {n} of {w.size} differ")
        bad += n > 0
        continue
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    same_inf = np.isinf(w64) & (g64 == w64)
    d = np.where(same_inf, 0.0, g64 - np.where(same_inf, 0.0, w64))
    wf = np.where(np.isinf(w64), 0.0, w64)
    rel = float(np.linalg.norm(d)) / max(float(np.linalg.norm(wf)), 1e-30)
    mx = float(np.abs(d).max()) if d.size else 0.0
    print(f"{k}: {w.dtype}{list(w.shape)} relative L2 {rel:.3g}, max abs {mx:.3g}")
    bad += not (rel <= tol)
sys.exit(1 if bad else 0)
