#!/usr/bin/env python3
"""compare_detections.py GOT.npz WANT.npz [--tol 1e-4]: detection outputs (boxes [K, 4], scores [K], labels [K])
against a reference: the same number of detections K, then both sets sorted by (label, score descending, box)
and compared row by row, labels exactly, scores and box coordinates within tol relative to the largest
magnitude (the order of the detections themselves is not compared: equal scores may come out in either order,
and so may scores of one label that agree within tol, which are then paired by their boxes).
Prints the counts and errors; exits 1 on any mismatch."""
import sys

import numpy as np

got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
tol = float(sys.argv[sys.argv.index("--tol") + 1]) if "--tol" in sys.argv else 1e-4
names = {"boxes": None, "scores": None, "labels": None}
for k in names:
    # the exported graph names its outputs; accept the reference's names or the export's positional ones
    names[k] = k if k in got.files else None
if None in names.values():
    files = list(got.files)
    if len(files) == 3:
        names = dict(zip(("boxes", "scores", "labels"), files))
    else:
        print(f"expected boxes, scores, labels in {sys.argv[1]}, got {files}")
        sys.exit(1)
gb, gs, gl = (got[names[k]] for k in ("boxes", "scores", "labels"))
wb, ws, wl = want["boxes"], want["scores"], want["labels"]
print(f"detections: got {len(gs)}, want {len(ws)}; shapes {gb.shape} {gs.shape} {gl.shape}")
if gb.shape != wb.shape or gs.shape != ws.shape or gl.shape != wl.shape or gl.dtype != wl.dtype:
    print(f"shape/dtype mismatch: got {gb.dtype}{gb.shape} {gs.dtype}{gs.shape} {gl.dtype}{gl.shape}, want "
          f"{wb.dtype}{wb.shape} {ws.dtype}{ws.shape} {wl.dtype}{wl.shape}")
    sys.exit(1)
if len(ws) == 0:
    sys.exit(0)


def order(b, s, lab):
    return np.lexsort((b[:, 3], b[:, 2], b[:, 1], b[:, 0], -s, lab))


go, wo = order(gb, gs, gl), order(wb, ws, wl)
ss, sb = max(float(np.abs(ws).max()), 1e-30), max(float(np.abs(wb).max()), 1e-30)


def near_tie_pairing():
    """detections of one label whose scores agree within tol may come out in either order (float rounding
    decides): each got detection, in order, paired with the unused reference one of its label and a score
    within tol whose box is closest; None when one has no such partner"""
    used, pairs = np.zeros(len(ws), bool), []
    for i in go:
        cand = [j for j in wo if not used[j] and wl[j] == gl[i] and abs(float(ws[j]) - float(gs[i])) <= tol * ss]
        if not cand:
            return None
        j = min(cand, key=lambda j: float(np.abs(gb[i] - wb[j]).max()))
        used[j] = True
        pairs.append(j)
    return np.array(pairs, dtype=np.int64)


if float(np.abs(gb[go] - wb[wo]).max()) > tol * sb:
    p = near_tie_pairing()
    if p is not None and float(np.abs(gb[go] - wb[p]).max()) <= tol * sb:
        print("near-tied scores paired by box")
        wo = p
bad = 0
if not np.array_equal(gl[go], wl[wo]):
    print(f"labels differ: {int(np.count_nonzero(gl[go] != wl[wo]))} of {len(wl)}")
    bad += 1
es = float(np.abs(gs[go] - ws[wo]).max()) / ss
eb = float(np.abs(gb[go] - wb[wo]).max()) / sb
print(f"scores: max relative error {es:.3g}; boxes: max relative error {eb:.3g}")
bad += not (es <= tol) + (not (eb <= tol))
sys.exit(1 if bad else 0)
