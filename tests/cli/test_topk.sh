#!/bin/sh
# TopK end to end: each model of make_topk_models.py compiles to the form its name says (select_*: the selection
# extern, sort_*: the merge-sort extern, rank_*: the ranking form) and `mlc run` gives exactly the stable numpy
# reference, values and indices, at 1 and 2 threads.
# usage: test_topk.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/topk
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_topk_models.py" "$dir"
for m in $(cat "$dir/models.txt"); do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --output "$dir/$m.tar" --dump-ir "$dir/$m.d" >/dev/null
  case $m in
  sort_*) grep -q "topk_merge" "$dir/$m.d/30_tir.txt" && ! grep -q "topk_kept" "$dir/$m.d/30_tir.txt" ||
    { echo "FAIL $m: not the merge-sort extern"; exit 1; } ;;
  select_*) grep -q "topk_kept" "$dir/$m.d/30_tir.txt" || { echo "FAIL $m: not the selection extern"; exit 1; } ;;
  *) grep -q "topk_rank" "$dir/$m.d/20_schedules.txt" || { echo "FAIL $m: not the ranking form"; exit 1; } ;;
  esac
  for t in 1 2; do
    "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_in.npz" --outputs "$dir/${m}_out$t.npz" --threads $t >/dev/null
    /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out$t.npz" "$dir/${m}_ref.npz" --tol 0
  done
done
echo "topk: all passed"
