#!/bin/sh
# mlc against torch on the recurrent layers of bench/rnn_layers.py (run that first): each layer is compiled,
# checked against torch's output and timed at 1 and 2 threads (median and minimum of 10: the minimum is the
# steadier number on a busy machine).
# usage: bench/rnn_layers.sh MLC DIR   prints: layer, mlc ms 1t / 2t (median/min), torch ms 1t / 2t (median)
set -eu
mlc=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
printf '%-14s %15s %15s %9s %9s\n' layer mlc_1t mlc_2t torch_1t torch_2t
while read -r m t1 t2; do
  "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar" >/dev/null
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz" >/dev/null
  /usr/bin/python3 "$here/../tests/cli/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol 1e-4 --l2 \
    >/dev/null || echo "$m: differs from torch"
  ms1=$("$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --repeat 10 --threads 1 --print-time 2>&1 |
        tail -1 | awk '{printf "%.2f/%.2f", $2, $4}')
  ms2=$("$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --repeat 10 --threads 2 --print-time 2>&1 |
        tail -1 | awk '{printf "%.2f/%.2f", $2, $4}')
  printf '%-14s %15s %15s %9.2f %9.2f\n' "$m" "$ms1" "$ms2" "$t1" "$t2"
done < "$dir/layers.txt"
