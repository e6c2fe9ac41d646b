#!/usr/bin/env python3
"""make_sequence_models.py DIR: ONNX models built on sequence ops (SequenceEmpty / Construct / Insert / At /
Erase / Length, SplitToSequence in its three forms, ConcatFromSequence with and without new_axis, a sequence
carried through a Loop as torch exports repeat_interleave, SequenceMap over a sequence-typed graph input into
sequence-typed graph outputs, an optional graph input present and empty), each with an input (NAME_inputs.npz) and a numpy
reference (NAME_ref.npz) following the ONNX operator definitions. Used by tests/cli/test_zoo.sh; the names are
listed in DIR/sequence_models.txt as the zoo lists its own (NAME TOL)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(5)
names = []


def const(name, v):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(v), name))


def save(name, nodes, inputs, outputs, feeds, refs, opset=13):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                                        for k, v in inputs.items()],
                          [helper.make_tensor_value_info(k, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], v.shape)
                           for k, v in refs.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{name}.onnx")
    np.savez(f"{out}/{name}_inputs.npz", **feeds)
    np.savez(f"{out}/{name}_ref.npz", **refs)
    names.append(name)


x = rng.standard_normal((2, 5, 3)).astype(np.float32)
y = rng.standard_normal((2, 2, 3)).astype(np.float32)
# split forms: none (pieces of 1, squeezed with keepdims 0), a scalar (2, 2, 1), a vector (1, 4)
nodes = [
    helper.make_node("SplitToSequence", ["x"], ["s1"], axis=1, keepdims=0),
    helper.make_node("ConcatFromSequence", ["s1"], ["o1"], axis=-1, new_axis=1),  # stacks back along a new last axis
    const("two", np.int64(2)),
    helper.make_node("SplitToSequence", ["x", "two"], ["s2"], axis=1),
    const("m1", np.int64(-1)),
    helper.make_node("SequenceAt", ["s2", "m1"], ["o2"]),
    helper.make_node("SequenceLength", ["s2"], ["o3"]),
    const("sizes", np.array([1, 4], np.int64)),
    helper.make_node("SplitToSequence", ["x", "sizes"], ["s3"], axis=-2),
    helper.make_node("SequenceInsert", ["s3", "y"], ["s4"]),             # at the end: [1, 4, y]
    const("zero", np.int64(0)),
    helper.make_node("SequenceInsert", ["s4", "y", "zero"], ["s5"]),     # at the front: [y, 1, 4, y]
    const("one", np.int64(1)),
    helper.make_node("SequenceErase", ["s5", "one"], ["s6"]),            # [y, 4, y]
    helper.make_node("SequenceErase", ["s6"], ["s7"]),                   # [y, 4]
    helper.make_node("ConcatFromSequence", ["s7"], ["o4"], axis=1),
    helper.make_node("SequenceConstruct", ["x", "x"], ["s8"]),
    helper.make_node("Identity", ["s8"], ["s9"]),
    helper.make_node("ConcatFromSequence", ["s9"], ["o5"], axis=0, new_axis=1),
]
save("seq_ops", nodes, {"x": x, "y": y}, None, {"x": x, "y": y},
     {"o1": np.stack([x[:, i] for i in range(5)], -1), "o2": x[:, 4:5], "o3": np.array(3, np.int64),
      "o4": np.concatenate([y, x[:, 1:5]], 1), "o5": np.stack([x, x], 0)})

# a Loop carrying a sequence, as torch writes repeat_interleave under dynamic axes: item i of x along axis 1,
# repeated reps[i] times, inserted into the carried sequence; concatenated after the loop
reps = np.array([2, 1, 3, 1, 2], np.int64)
body = helper.make_graph(
    [helper.make_node("SequenceAt", ["xs", "i"], ["xi"]),
     helper.make_node("SequenceAt", ["rs", "i"], ["ri"]),
     const("shape_head", np.array([2], np.int64)),
     const("shape_tail", np.array([3], np.int64)),
     helper.make_node("Concat", ["shape_head", "ri", "shape_tail"], ["shp"], axis=0),
     helper.make_node("Expand", ["xi", "shp"], ["xe"]),
     helper.make_node("SequenceInsert", ["acc", "xe"], ["acc2"]),
     helper.make_node("Identity", ["cond"], ["cond2"])],
    "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
             helper.make_tensor_sequence_value_info("acc", TensorProto.FLOAT, None)],
    [helper.make_tensor_value_info("cond2", TensorProto.BOOL, []),
     helper.make_tensor_sequence_value_info("acc2", TensorProto.FLOAT, None)])
nodes = [
    helper.make_node("SplitToSequence", ["x"], ["xs"], axis=1),
    const("reps", reps),
    const("ones", np.ones(5, np.int64)),
    helper.make_node("SplitToSequence", ["reps", "ones"], ["rs"]),
    helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
    const("trip", np.int64(5)),
    const("true", np.bool_(True)),
    helper.make_node("Loop", ["trip", "true", "empty"], ["seq"], body=body),
    helper.make_node("ConcatFromSequence", ["seq"], ["o"], axis=1),
]
save("seq_loop", nodes, {"x": x}, None, {"x": x}, {"o": np.repeat(x, reps, axis=1)})

# sequence-typed graph input and outputs: the items of input xs are the package's inputs xs.0, xs.1, xs.2 (their
# shapes from --input-shapes), those of outputs ys / zs its outputs ys.0, ... ; SequenceMap maps a body over
# xs with the tensor b
items = [rng.standard_normal(sh).astype(np.float32) for sh in ((2, 3), (4, 3), (1, 3))]
b = rng.standard_normal(3).astype(np.float32)
body = helper.make_graph(
    [helper.make_node("Add", ["xi", "bb"], ["s"]), helper.make_node("Relu", ["s"], ["yi"]),
     const("axes0", np.array([0], np.int64)), helper.make_node("ReduceSum", ["xi", "axes0"], ["zi"], keepdims=0)],
    "map_body", [helper.make_tensor_value_info("xi", TensorProto.FLOAT, ["n", 3]),
                 helper.make_tensor_value_info("bb", TensorProto.FLOAT, [3])],
    [helper.make_tensor_value_info("yi", TensorProto.FLOAT, None),
     helper.make_tensor_value_info("zi", TensorProto.FLOAT, None)])
g = helper.make_graph(
    [helper.make_node("SequenceMap", ["xs", "b"], ["ys", "zs"], body=body),
     helper.make_node("SequenceLength", ["xs"], ["n"])], "seq_io",
    [helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, ["n", 3]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
    [helper.make_tensor_sequence_value_info("ys", TensorProto.FLOAT, None),
     helper.make_tensor_sequence_value_info("zs", TensorProto.FLOAT, None),
     helper.make_tensor_value_info("n", TensorProto.INT64, [])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, f"{out}/seq_io.onnx")
np.savez(f"{out}/seq_io_inputs.npz", b=b, **{f"xs.{i}": v for i, v in enumerate(items)})
refs = {f"ys.{i}": np.maximum(v + b, 0) for i, v in enumerate(items)}
refs.update({f"zs.{i}": v.sum(0) for i, v in enumerate(items)})
np.savez(f"{out}/seq_io_ref.npz", n=np.int64(len(items)), **refs)

# an optional-typed graph input o: present (a tensor input o) or empty (--input-shapes o:none, no input); the If
# on OptionalHasElement is resolved at compile time
xo = rng.standard_normal(3).astype(np.float32)
ov = rng.standard_normal(3).astype(np.float32)
then_b = helper.make_graph([helper.make_node("OptionalGetElement", ["o"], ["v"]), helper.make_node("Add", ["v", "x"], ["r1"])],
                           "then", [], [helper.make_tensor_value_info("r1", TensorProto.FLOAT, [3])])
else_b = helper.make_graph([helper.make_node("Neg", ["x"], ["r2"])], "else", [],
                           [helper.make_tensor_value_info("r2", TensorProto.FLOAT, [3])])
g = helper.make_graph(
    [helper.make_node("OptionalHasElement", ["o"], ["has"]),
     helper.make_node("If", ["has"], ["y"], then_branch=then_b, else_branch=else_b)], "opt_io",
    [helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
m.ir_version = 8
for case, feeds, ref in (("some", {"o": ov, "x": xo}, ov + xo), ("none", {"x": xo}, -xo)):
    onnx.save(m, f"{out}/opt_io_{case}.onnx")
    np.savez(f"{out}/opt_io_{case}_inputs.npz", **feeds)
    np.savez(f"{out}/opt_io_{case}_ref.npz", y=ref)

with open(f"{out}/sequence_models.txt", "w") as f:
    f.write("opt_io_some 1e-6\nopt_io_none 1e-6 --input-shapes o:none\n")
    f.write("".join(f"{n} 1e-6\n" for n in names))
    f.write("seq_io 1e-6 --input-shapes xs.0:[2,3],xs.1:[4,3],xs.2:[1,3]\n")
