#!/bin/sh
# `mlc run`'s .npz inputs and outputs (make_run_io_models.py): bfloat16 read from and written as float32,
# graph outputs named as in the ONNX model whatever produces them (a constant If branch, Dropout's mask, an
# input, one value under two names), and bfloat16 values bound with --freeze-inputs from float32.
# usage: test_run_io.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/run_io
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_run_io_models.py" "$dir"
for m in $(cat "$dir/models.txt"); do
  echo "== $m"
  freeze=
  [ -f "$dir/${m}_freeze.npz" ] && freeze="--freeze-inputs $dir/${m}_freeze.npz"
  # shellcheck disable=SC2086
  "$mlc" compile "$dir/$m.onnx" $freeze --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 0
  /usr/bin/python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[1]).files, np.load(sys.argv[2]).files
sys.exit(0 if a == b else print('FAIL: outputs', a, 'want', b) or 1)" "$dir/${m}_out.npz" "$dir/${m}_ref.npz"
done
echo "run_io: all passed"
