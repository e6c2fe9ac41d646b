#!/bin/sh
# Compile time and 1-thread run time of every export_zoo.py model (first opset) against torch at 1 thread.
# usage: models/time_zoo.sh MLC OUT_DIR   prints: model, compile s, mlc ms (median of 20), torch ms, ratio
set -eu
mlc=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
/usr/bin/python3 "$here/export_zoo.py" "$dir" --small --time >/dev/null
printf '%-20s %9s %9s %9s %7s\n' model compile_s mlc_ms torch_ms ratio
while read -r m tol extra; do
  base=${m%_o*}
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar" $extra >/dev/null
  t1=$(date +%s.%N)
  ms=$("$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --repeat 20 --threads 1 --print-time 2>&1 |
       tail -1 | awk '{print $2}')
  tm=$(cat "$dir/${base}_torch_ms.txt")
  printf '%-20s %9.2f %9.3f %9.3f %7.2f\n' "$m" "$(echo "$t1 - $t0" | bc)" "$ms" "$tm" "$(echo "$ms / $tm" | bc -l)"
done < "$dir/models.txt"
