#!/bin/sh
# The NCHW[x]c block of a packed conv from the tuning records (knob tile_oc of conv2d_packed.x86, applied by
# AlterOpLayout through src/autotvm/conv_block.c): a record for the first conv's workload with tile_oc 8
# changes that conv's weight block (and its NCHWc output block) from 16 to 8 in the printed graph, leaves the
# other conv at 16, and the outputs stay those of the untuned compile. The record describes the conv in the
# layout tuning saw (NCHWc data of block 16, out_block 16), which the match must see through.
# usage: test_conv_block.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/conv_block
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL $*"; exit 1; }
/usr/bin/python3 - "$dir" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
d = sys.argv[1]
rng = np.random.default_rng(1)
def const(name, shape): return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
g = helper.make_graph([
    helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
    helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])],
    "conv_block", [helper.make_tensor_value_info("x", T.FLOAT, [1, 16, 20, 20])],
    [helper.make_tensor_value_info("y", T.FLOAT, [1, 32, 5, 5])], [const("w1", [32, 16, 3, 3]), const("w2", [32, 32, 3, 3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/m.onnx")
np.savez(d + "/in.npz", x=rng.standard_normal((1, 16, 20, 20)).astype(np.float32))
PY
# conv2 reads conv1's NCHWc output: in the tuned graph its data is [1, 2, 10, 10, 16] with out_block 16 on
# conv1 (weight [2, 16, 3, 3, 16]); the record names conv2's workload that way, with tile_oc 8
cat > "$dir/records.json" <<'R'
{"input":["llvm","conv2d_packed.x86",[["TENSOR",[1,2,10,10,16],"float32"],["TENSOR",[2,2,3,3,16,16],"float32"],["TENSOR",[1,32,5,5],"float32"]],{"op":"nn.conv2d_packed","strides":[2,2],"dilation":[1,1],"padding":[1,1,1,1],"groups":1,"data_block":16}],"config":{"index":0,"entity":[["tile_ow",5],["tile_ic",2],["tile_oc",8]]},"result":[[1e-05],0,0.1,1796236643.8],"version":0.2}
R
"$mlc" compile "$dir/m.onnx" --output "$dir/plain.tar" --dump-ir "$dir/plain.d" >/dev/null 2>&1 || fail "compile"
"$mlc" compile "$dir/m.onnx" --output "$dir/tuned.tar" --tuning-records "$dir/records.json" --dump-ir "$dir/tuned.d" \
  >/dev/null 2>"$dir/apply.txt" || fail "compile --tuning-records: $(cat "$dir/apply.txt")"
plain=$(ls "$dir/plain.d/"*_after_DeadCodeElim.txt | tail -1) tuned=$(ls "$dir/tuned.d/"*_after_DeadCodeElim.txt | tail -1)
grep -c "nn.conv2d_packed" "$plain" | grep -qx 2 || fail "the plain graph has not two packed convs"
# untuned: both convs in blocks of 16
grep -q "(2, 16, 3, 3, 16), float32" "$plain" && grep -q "(2, 2, 3, 3, 16, 16), float32" "$plain" || fail "untuned blocks: $(cat "$plain")"
# tuned: conv1 keeps 16 (its NCHWc output now [1, 2, 10, 10, 16]), conv2's weight is in blocks of 8
grep -q "(2, 16, 3, 3, 16), float32" "$tuned" || fail "conv1 changed: $(cat "$tuned")"
grep -q "(4, 2, 3, 3, 16, 8), float32" "$tuned" || fail "conv2 not in blocks of 8: $(cat "$tuned")"
echo "ok   tile_oc 8 from the record: conv2's weight [4, 2, 3, 3, 16, 8]"
"$mlc" run "$dir/plain.tar" --inputs "$dir/in.npz" --outputs "$dir/plain.npz" >/dev/null
"$mlc" run "$dir/tuned.tar" --inputs "$dir/in.npz" --outputs "$dir/tuned.npz" >/dev/null
/usr/bin/python3 "$here/compare_npz.py" "$dir/tuned.npz" "$dir/plain.npz" --tol 1e-5
