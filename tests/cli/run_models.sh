#!/bin/sh
# Shared by the model-suite tests: GENERATOR.py writes models, their inputs and references into DIR and lists
# "name<TAB>tolerance" lines in DIR/models.txt; each model is compiled, run and compared with its reference
# (compare_npz.py: the largest error relative to the largest reference value).
# usage: run_models.sh MLC DIR GENERATOR.py
set -eu
mlc=$1 dir=$2 gen=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$gen" "$dir"
tab=$(printf '\t')
while IFS="$tab" read -r m tol; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol "$tol"
done <<EOF
$(sample <"$dir/models.txt")
EOF
