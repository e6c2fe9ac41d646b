#!/bin/sh
# Bad input gets a one-line error naming the file and the node or input, a non-zero exit, and no output file.
# usage: test_bad_input.sh MLC BUILD_DIR
set -u
mlc=$1 dir=$2/bad
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_bad_models.py" "$dir" || exit 1
fails=0

# expect CODE PATTERN... -- COMMAND: the command exits with CODE and its stderr contains every PATTERN
expect() {
  code=$1
  shift
  pats=""
  while [ "$1" != "--" ]; do pats="$pats
$1"
    shift
  done
  shift
  "$@" >"$dir/out.txt" 2>"$dir/err.txt"
  got=$?
  ok=1
  [ "$got" = "$code" ] || ok=0
  echo "$pats" | while IFS= read -r p; do
    [ -z "$p" ] && continue
    grep -qF -- "$p" "$dir/err.txt" || { echo "  missing in stderr: $p"; exit 1; }
  done || ok=0
  if [ $ok = 1 ]; then echo "ok   $*"; else
    echo "FAIL $* (exit $got, want $code)"; sed 's/^/  stderr: /' "$dir/err.txt"; fails=$((fails + 1))
  fi
}

expect 2 "truncated.onnx" -- "$mlc" compile "$dir/truncated.onnx" --output "$dir/t.tar"
expect 2 "garbage.onnx" -- "$mlc" load "$dir/garbage.onnx"
expect 2 "cycle.onnx" "first" -- "$mlc" compile "$dir/cycle.onnx" --output "$dir/t.tar"
expect 2 "missing.onnx" "adder" "nowhere" -- "$mlc" compile "$dir/missing.onnx" --output "$dir/t.tar"
expect 3 "unsupported op 'FooOp'" "foo_node" "unsupported op 'BarOp'" "bar_node" -- "$mlc" load "$dir/unsupported.onnx"
expect 2 "short_raw.onnx" "'w'" -- "$mlc" compile "$dir/short_raw.onnx" --output "$dir/t.tar"
expect 2 "escape.onnx" "'w'" -- "$mlc" compile "$dir/escape.onnx" --output "$dir/t.tar"
expect 2 "does_not_exist.onnx" -- "$mlc" load "$dir/does_not_exist.onnx"
[ -e "$dir/t.tar" ] && { echo "FAIL a failed compile left $dir/t.tar"; fails=$((fails + 1)); }
ls "$dir" | grep -q '\.tmp\.' && { echo "FAIL a temporary file was left in $dir"; fails=$((fails + 1)); }

"$mlc" compile "$dir/good.onnx" --output "$dir/good.tar" >/dev/null || { echo "FAIL good.onnx does not compile"; exit 1; }
expect 0 -- "$mlc" run "$dir/good.tar" --inputs "$dir/good_inputs.npz" --outputs "$dir/good_out.npz"
expect 2 "'x'" "[1, 4]" -- "$mlc" run "$dir/good.tar" --inputs "$dir/wrong_shape.npz" --outputs "$dir/o.npz"
expect 2 "'x'" "float64" -- "$mlc" run "$dir/good.tar" --inputs "$dir/wrong_dtype.npz" --outputs "$dir/o.npz"
expect 2 "'x'" -- "$mlc" run "$dir/good.tar" --inputs "$dir/wrong_name.npz" --outputs "$dir/o.npz"
expect 2 "not_a_package.tar" -- "$mlc" run "$dir/not_a_package.tar"
expect 2 "nothere.npz" -- "$mlc" run "$dir/good.tar" --inputs "$dir/nothere.npz"
[ -e "$dir/o.npz" ] && { echo "FAIL a failed run left $dir/o.npz"; fails=$((fails + 1)); }
expect 1 -- "$mlc" compile
expect 1 "--opt-level" -- "$mlc" compile "$dir/good.onnx" --opt-level 9
expect 1 "--output" -- "$mlc" tune "$dir/good.onnx"

echo "$fails failed"
[ $fails = 0 ]
