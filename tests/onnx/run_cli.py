#!/usr/bin/env python3
"""run_cli.py MLC [--root ONNX_TESTS] [--list tests/onnx/expected_pass.txt] [-j N] [NAME_SUBSTRING ...]

The listed ONNX backend tests (node tests, and simple/... or pytorch-operator/... model tests) the way a user runs
them: for each test, its inputs go into an .npz, `mlc compile` compiles model.onnx (fixing symbolic input dims
to the test data's with --input-shapes; when it asks for input values at compile time, again with --freeze-inputs: first the integer
and bool inputs, then all), `mlc run --inputs` runs the package and its out.npz is compared with the expected
outputs (rtol 1e-3, atol 1e-6; integers exact). The conformance runner (ctest onnx.*) checks the same tests in one
process through the JIT; this checks the package, .npz and CLI path. Not a ctest: about 7 minutes on 2 cores.
Prints one line per test and a closing "N passed, N failed" line; exits 1 on any failure."""
import argparse
import concurrent.futures as cf
import io
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import onnx
from onnx import numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("mlc")
ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "../../../shared/onnx-tests"))
ap.add_argument("--list", default=os.path.join(os.path.dirname(__file__), "expected_pass.txt"))
ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
ap.add_argument("names", nargs="*")
args = ap.parse_intermixed_args()
tests = [t.strip() for t in open(args.list) if t.strip()]
if args.names:
    tests = [t for t in tests if any(n in t for n in args.names)]
work = tempfile.mkdtemp(prefix="mlc_run_cli_")


def savez(path, arrays):  # np.savez would take an input named 'like' or 'file' as its own keyword
    with zipfile.ZipFile(path, "w") as z:
        for k, v in arrays.items():
            b = io.BytesIO()
            np.lib.format.write_array(b, np.asarray(v))
            z.writestr(k + ".npy", b.getvalue())


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def fix_shapes(ins, names):
    """--input-shapes giving each named input its array's shape (none: no option)"""
    return ["--input-shapes", " ".join(f"{n}:[{','.join(map(str, ins[n].shape))}]" for n in names)] if names else []


def one(t):
    d, w = f"{args.root}/{t}" if "/" in t else f"{args.root}/node/{t}", f"{work}/{t}"
    os.makedirs(w)
    m = onnx.load(f"{d}/model.onnx", load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    ins = {n: numpy_helper.to_array(onnx.load_tensor(f"{d}/test_data_set_0/input_{k}.pb"))
           for k, n in enumerate(names) if os.path.exists(f"{d}/test_data_set_0/input_{k}.pb")}
    want = {o.name: numpy_helper.to_array(onnx.load_tensor(f"{d}/test_data_set_0/output_{k}.pb"))
            for k, o in enumerate(m.graph.output)}
    savez(f"{w}/in.npz", ins)
    # inputs with symbolic or unknown dims get the test data's shape, as a user fixes them
    dyn = [i.name for i in m.graph.input if i.name in ins and
           any(not x.HasField("dim_value") for x in i.type.tensor_type.shape.dim)]
    r = sh(args.mlc, "compile", f"{d}/model.onnx", *fix_shapes(ins, dyn), "--output", f"{w}/m.tar")
    for frozen in ({n: v for n, v in ins.items() if v.dtype.kind in "iub"}, ins):
        if r.returncode != 3 or "--freeze-inputs" not in r.stderr:
            break
        savez(f"{w}/frozen.npz", frozen)
        fix = fix_shapes(ins, [n for n in dyn if n not in frozen])
        r = sh(args.mlc, "compile", f"{d}/model.onnx", *fix, "--freeze-inputs", f"{w}/frozen.npz", "--output", f"{w}/m.tar")
    if r.returncode:
        return t, False, "compile: " + r.stderr.strip()[-300:]
    r = sh(args.mlc, "run", f"{w}/m.tar", "--inputs", f"{w}/in.npz", "--outputs", f"{w}/out.npz")
    if r.returncode:
        return t, False, "run: " + r.stderr.strip()[-300:]
    got = np.load(f"{w}/out.npz")
    for k, v in want.items():
        if k not in got.files:
            return t, False, f"output '{k}' missing from out.npz"
        g = got[k]
        if g.shape != v.shape or g.dtype != v.dtype:
            return t, False, f"output '{k}': {g.dtype}{list(g.shape)}, want {v.dtype}{list(v.shape)}"
        ok = (np.allclose(g.astype(np.float64), v.astype(np.float64), rtol=1e-3, atol=1e-6, equal_nan=True)
              if v.dtype.kind in "fc" else np.array_equal(g, v))
        if not ok:
            return t, False, f"output '{k}' differs"
    return t, True, ""


failed = 0
with cf.ThreadPoolExecutor(args.j) as ex:
    for t, ok, why in ex.map(one, tests):
        print(f"PASS {t}" if ok else f"FAIL {t}: {why}", flush=True)
        failed += not ok
print(f"{len(tests) - failed} passed, {failed} failed")
if not failed:
    subprocess.run(["rm", "-rf", work])
sys.exit(1 if failed else 0)
