#!/bin/sh
# Absurd models get a clean error (or import fine), never a crash or a hang: dims whose product overflows,
# negative and zero dims, raw_data shorter than the shape, 10^6 nodes (generated here), If nested thousands
# deep, external data escaping the model's folder (refused); then every file in tests/fuzz/regressions/
# (inputs that once crashed the importer) must fail cleanly.
# usage: test_absurd.sh MLC BUILD_DIR
set -u
mlc=$1 dir=$2/absurd
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_absurd_models.py" "$dir" || exit 1
fails=0
# expect CODES FILE [PATTERN]: `mlc load FILE` exits with one of CODES (space-separated) within 300 s
expect() {
  timeout 300 "$mlc" load "$2" >/dev/null 2>"$dir/err.txt"
  got=$?
  case " $1 " in
  *" $got "*) if [ -n "${3:-}" ] && ! grep -qF -- "$3" "$dir/err.txt"; then
      echo "FAIL $2: stderr lacks '$3'"; cat "$dir/err.txt"; fails=$((fails + 1))
    else echo "ok   $(basename "$2") (exit $got)"; fi ;;
  *) echo "FAIL $2: exit $got, want one of $1"; head -c 600 "$dir/err.txt"; fails=$((fails + 1)) ;;
  esac
}
expect 2 "$dir/overflow_init.onnx" "'w'"
expect 2 "$dir/overflow_input.onnx" "'x'"
expect 2 "$dir/negative_init.onnx" "negative"
expect 2 "$dir/negative_input.onnx" "negative"
expect "0 2 3" "$dir/zero_dims.onnx"
expect 2 "$dir/short_raw.onnx" "raw_data"
expect 2 "$dir/escape_rel.onnx" "escapes"
expect 2 "$dir/escape_abs.onnx" "absolute"
expect "0 2 3" "$dir/many_nodes.onnx"
expect 2 "$dir/nested_if.onnx" "nest"
for f in "$here"/regressions/*; do
  [ -e "$f" ] && expect "2 3" "$f"
done
echo "$fails failed"
[ $fails = 0 ]
