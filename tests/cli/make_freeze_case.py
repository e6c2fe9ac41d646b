#!/usr/bin/env python3
"""make_freeze_case.py TEST_DIR OUT_PREFIX [NAME ...]: from one ONNX backend test (model.onnx and
test_data_set_0), writes OUT_PREFIX_all.npz (every input), OUT_PREFIX_frozen.npz (the integer and bool inputs and
the inputs NAME ...: the values an op needs at compile time, for --freeze-inputs), OUT_PREFIX_other.npz (the
frozen inputs with a changed value) and OUT_PREFIX_ref.npz (the expected outputs)."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

test, out, extra = sys.argv[1], sys.argv[2], set(sys.argv[3:])
model = onnx.load(f"{test}/model.onnx")
inits = {i.name for i in model.graph.initializer}
names = [i.name for i in model.graph.input if i.name not in inits]
data = f"{test}/test_data_set_0"
ins = {n: numpy_helper.to_array(onnx.load_tensor(f"{data}/input_{k}.pb")) for k, n in enumerate(names)}
outs = {o.name: numpy_helper.to_array(onnx.load_tensor(f"{data}/output_{k}.pb"))
        for k, o in enumerate(model.graph.output)}
frozen = {n: v for n, v in ins.items() if v.dtype.kind in "iub" or n in extra}
assert frozen, "nothing to freeze"
other = {n: (v + 1).astype(v.dtype) if v.dtype != bool else ~v for n, v in frozen.items()}
np.savez(f"{out}_all.npz", **ins)
np.savez(f"{out}_frozen.npz", **frozen)
np.savez(f"{out}_other.npz", **{**ins, **other})
np.savez(f"{out}_ref.npz", **outs)
print(" ".join(frozen))
