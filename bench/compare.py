#!/usr/bin/python3
"""mlc against ONNX Runtime on the benchmark models, in the same run.

For each model: generate it (../shared/bench/gen_models.py) if missing, `mlc compile` it (wall time), make one
set of random inputs, then for each thread count run mlc and ORT alternately for several rounds on the same
inputs (`mlc run --json`, ../shared/bench/ort_ref.py), check that the outputs agree (relative L2 error under
1e-4, or --tol), and print one table row: median of medians for both, their ratio (mlc / ORT: below 1 is faster), and
GFLOP/s from ../shared/bench/flops.py. Exits 1 only when some model's outputs disagree (or mlc could not
produce outputs to compare).

usage: bench/compare.sh [--models resnet50,bert_enc4] [--threads 1,2] [--rounds 3] [--runs 20]
                        [--work DIR] [--mlc build/mlc] [--json FILE] [--tol 1e-4]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER = os.path.normpath(os.path.join(ROOT, "..", "shared", "bench"))
DEFAULT_MODELS = "resnet50,resnet18,mobilenet_v2,squeezenet1_1,densenet121,bert_enc4,mlp_mnist,cnn_mnist"


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in output: " + text[-500:])


def rel_l2(got, want):
    worst = 0.0
    for k in want.files:
        if k not in got.files:
            return float("inf")
        g, w = got[k].astype(np.float64), want[k].astype(np.float64)
        if g.shape != w.shape:
            return float("inf")
        den = np.linalg.norm(w.ravel())
        err = np.linalg.norm((g - w).ravel()) / (den if den > 0 else 1.0)
        worst = max(worst, float(err))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--mlc", default=os.path.join(ROOT, "build", "mlc"))
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="largest relative L2 error of the outputs (quantized models: ONNX Runtime rounds differently)")
    a = ap.parse_args()
    models_dir = os.path.join(a.work, "models")
    os.makedirs(models_dir, exist_ok=True)
    threads = [int(t) for t in a.threads.split(",")]
    names = a.models.split(",")
    missing = [m for m in names if not os.path.exists(os.path.join(models_dir, m + ".onnx"))]
    if missing:
        print(f"generating {', '.join(missing)} ...", file=sys.stderr)
        run(["/usr/bin/python3", os.path.join(PEER, "gen_models.py"), models_dir, "--only", ",".join(missing)])
    results, bad = [], 0
    for m in names:
        onnx_path = os.path.join(models_dir, m + ".onnx")
        pkg = os.path.join(a.work, m + ".tar")
        inputs = os.path.join(a.work, m + "_inputs.npz")
        row = {"model": m}
        try:
            row["gflop"] = last_json(run(["/usr/bin/python3", os.path.join(PEER, "flops.py"), onnx_path, "--json"]))["gflop"]
            t0 = time.time()
            run([a.mlc, "compile", onnx_path, "--target", "llvm", "--output", pkg])
            row["compile_s"] = time.time() - t0
            # ORT makes the random inputs once (saved as *_inputs.npz); both sides then read the same file
            ort_out = os.path.join(a.work, m + "_ort.npz")
            run(["/usr/bin/python3", os.path.join(PEER, "ort_ref.py"), onnx_path, "--outputs", ort_out, "--runs", "1"])
            os.replace(os.path.join(a.work, m + "_ort_inputs.npz"), inputs)
            for t in threads:
                mlc_ms, ort_ms = [], []
                for _ in range(a.rounds):
                    mlc_out = os.path.join(a.work, f"{m}_mlc_{t}.npz")
                    r = last_json(run([a.mlc, "run", pkg, "--inputs", inputs, "--outputs", mlc_out, "--repeat",
                                       str(a.runs), "--threads", str(t), "--print-time", "--json"]))
                    mlc_ms.append(r["median_ms"])
                    r = last_json(run(["/usr/bin/python3", os.path.join(PEER, "ort_ref.py"), onnx_path, "--inputs",
                                       inputs, "--outputs", ort_out, "--threads", str(t), "--runs", str(a.runs),
                                       "--json"]))
                    ort_ms.append(r["median_ms"])
                err = rel_l2(np.load(mlc_out), np.load(ort_out))
                row[f"t{t}"] = {"mlc_ms": float(np.median(mlc_ms)), "ort_ms": float(np.median(ort_ms)), "rel_l2": err}
                if not err < a.tol:
                    bad += 1
                    row["error"] = f"outputs disagree with {t} threads: relative L2 error {err:.3g}"
        except (RuntimeError, KeyError, OSError) as e:
            bad += 1
            row["error"] = str(e)
        results.append(row)
        print_row(row, threads, header=len(results) == 1)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(1 if bad else 0)


def print_row(row, threads, header):
    if header:
        cols = "".join(f" | {t}T mlc ms | {t}T ORT ms | {t}T ratio | {t}T GFLOP/s" for t in threads)
        print(f"| model{cols} | compile s | rel L2 |")
        print("|---" * (2 + 4 * len(threads) + 1) + "|")
    cells = [row["model"]]
    worst = 0.0
    for t in threads:
        r = row.get(f"t{t}")
        if not r:
            cells += ["-"] * 4
            continue
        worst = max(worst, r["rel_l2"])
        cells += [f"{r['mlc_ms']:.2f}", f"{r['ort_ms']:.2f}", f"{r['mlc_ms'] / r['ort_ms']:.2f}",
                  f"{row.get('gflop', 0) / (r['mlc_ms'] / 1e3):.0f}"]
    cells.append(f"{row['compile_s']:.1f}" if "compile_s" in row else "-")
    cells.append(f"{worst:.1e}")
    print("| " + " | ".join(cells) + " |", flush=True)
    if "error" in row:
        print(f"  {row['model']}: error: {row['error']}", file=sys.stderr)


if __name__ == "__main__":
    main()
