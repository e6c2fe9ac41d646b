#!/usr/bin/env python3
"""make_topk_models.py DIR: TopK models with many equal values, each with its input (NAME_in.npz) and the
stable numpy reference (NAME_ref.npz: the k best along the axis, equal values in index order, as the ONNX
reference orders them). On CPU (src/topi/sort.c), rows longer than 64 take an extern: the selection one when
k <= n / 4 and the keys have at most 32 bits (select_*: a 3234-long row as SSDlite's anchors, smallest along a
middle axis, float16, ties with -0 and +0, a non-last axis, int32, uint8 with k = n / 4, an ascending row
where every element enters the candidate buffer, uint32 above 2^31), else the merge sort (sort_*: k = n / 2,
int64 keys too wide to pack, k = n, k = 0); shorter rows the ranking form (rank_*: a 40-long row).
Names one per line in DIR/models.txt (tests/cli/test_topk.sh)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(1)
names = []
# ties everywhere, and zeros of both signs (equal: index order decides)
sel_f32 = np.round(rng.standard_normal((2, 5000)) * 4).astype(np.float32)
sel_f32[:, ::7] = -0.0
cases = [("select_ssdlite_3234", np.round(rng.standard_normal((3, 3234)) * 4).astype(np.float32), 300, -1, 1),
         ("select_smallest_mid_axis", np.round(rng.standard_normal((2, 500, 3)) * 3).astype(np.float32), 17, 1, 0),
         ("sort_largest_half", np.round(rng.standard_normal((2, 3234)) * 4).astype(np.float32), 1617, -1, 1),
         ("sort_int64_all", rng.integers(-5, 5, (4, 129)).astype(np.int64), 129, 1, 1),
         ("sort_k0", rng.standard_normal((2, 100)).astype(np.float32), 0, 1, 1),
         ("select_float16_257", np.round(rng.standard_normal((2, 257)) * 8).astype(np.float16), 31, 1, 1),
         ("rank_short_row", np.round(rng.standard_normal((5, 40)) * 2).astype(np.float32), 7, 1, 0),
         ("select_largest_ties", sel_f32, 100, 1, 1),
         ("select_smallest_axis0", np.round(rng.standard_normal((3000, 3)) * 3).astype(np.float32), 50, 0, 0),
         ("select_int32", rng.integers(-3, 4, (3, 1000)).astype(np.int32), 200, 1, 1),
         ("select_uint8_quarter", rng.integers(0, 6, (2, 400)).astype(np.uint8), 100, 1, 0),
         ("select_float16", np.round(rng.standard_normal((1, 2000)) * 6).astype(np.float16), 64, 1, 1),
         ("select_ascending", np.arange(4000, dtype=np.float32)[None], 500, 1, 1),
         ("select_uint32", rng.integers(0, 2**32, (2, 700), dtype=np.uint32), 33, 1, 1)]
for name, x, k, axis, largest in cases:
    dt = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[x.dtype]
    vs = list(x.shape)
    vs[axis] = k
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest, sorted=1)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", dt, list(x.shape))],
                          [helper.make_tensor_value_info("v", dt, vs), helper.make_tensor_value_info("i", T.INT64, vs)],
                          [numpy_helper.from_array(np.array([k], np.int64), "k")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
    order = np.argsort(-x.astype(np.float64) if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    np.savez(f"{out}/{name}_in.npz", x=x)
    np.savez(f"{out}/{name}_ref.npz", v=np.take_along_axis(x, idx, axis=axis), i=idx.astype(np.int64))
    names.append(name)
with open(f"{out}/models.txt", "w") as f:
    f.write("\n".join(names) + "\n")
