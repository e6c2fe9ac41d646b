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
expect 3 "dyn_reshape.onnx" "'compress'" "reshape_by_n_plus_1" "run-time length" -- \
  "$mlc" compile "$dir/dyn_reshape.onnx" --output "$dir/t.tar"
expect 2 "short_raw.onnx" "'w'" -- "$mlc" compile "$dir/short_raw.onnx" --output "$dir/t.tar"
expect 2 "escape.onnx" "'w'" -- "$mlc" compile "$dir/escape.onnx" --output "$dir/t.tar"
expect 2 "does_not_exist.onnx" -- "$mlc" load "$dir/does_not_exist.onnx"
expect 2 "tree_cycle.onnx" "'forest'" "TreeEnsemble, opset 5" "cycle" -- \
  "$mlc" compile "$dir/tree_cycle.onnx" --output "$dir/t.tar"
expect 2 "tree_child.onnx" "'forest'" "out of range" -- "$mlc" compile "$dir/tree_child.onnx" --output "$dir/t.tar"
expect 3 "tfidf_idf_shared.onnx" "'tfidf'" "TfIdfVectorizer, opset 13" "sharing an output column" -- \
  "$mlc" compile "$dir/tfidf_idf_shared.onnx" --output "$dir/t.tar"
expect 2 "tfidf_bad_pool.onnx" "'tfidf'" "does not split pool_int64s" -- \
  "$mlc" compile "$dir/tfidf_bad_pool.onnx" --output "$dir/t.tar"
expect 2 "seq_input.onnx" "input 'xs' is a sequence" "--input-shapes xs.0:" -- \
  "$mlc" compile "$dir/seq_input.onnx" --output "$dir/t.tar"
expect 1 "seq_input.onnx" "xs:[] makes it empty" -- \
  "$mlc" compile "$dir/seq_input.onnx" --output "$dir/t.tar" --input-shapes "xs:[],xs.0:[2]"
expect 1 "seq_input.onnx" "'xs.x', which is not an input" -- \
  "$mlc" compile "$dir/seq_input.onnx" --output "$dir/t.tar" --input-shapes "xs.x:[2]"
expect 3 "gradient_matmul.onnx" "'grad'" "cannot differentiate through node 'mm'" -- \
  "$mlc" compile "$dir/gradient_matmul.onnx" --output "$dir/t.tar"
expect 3 "tree_binary.onnx" "'clf'" "2 classes is not supported" -- \
  "$mlc" compile "$dir/tree_binary.onnx" --output "$dir/t.tar"
expect 3 "attention_past.onnx" "'attn'" "KV cache" -- "$mlc" compile "$dir/attention_past.onnx" --output "$dir/t.tar"
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
# a package whose mod.json has a malformed data-dependent output record: refused when loading
"$mlc" compile "$dir/dyn.onnx" --output "$dir/dyn.tar" >/dev/null || { echo "FAIL dyn.onnx does not compile"; exit 1; }
expect 0 -- "$mlc" run "$dir/dyn.tar" --inputs "$dir/good_inputs.npz" --outputs "$dir/dyn_out.npz"
# retar DST FROM TO: dyn.tar with FROM replaced by TO in mod.json (FROM must be there)
retar() {
  /usr/bin/python3 - "$dir/dyn.tar" "$dir/$1" "$2" "$3" <<'PY' || { echo "FAIL cannot rewrite $1"; fails=$((fails + 1)); }
import io, sys, tarfile
src, dst, old, new = sys.argv[1:]
with tarfile.open(src) as t:
    files = [(m.name, t.extractfile(m).read()) for m in t.getmembers()]
with tarfile.open(dst, "w", format=tarfile.USTAR_FORMAT) as t:
    for name, data in files:
        if name == "mod.json":
            assert old.encode() in data, old
            data = data.replace(old.encode(), new.encode())
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
PY
}
retar dyn_axis.tar '"axis":1' '"axis":5'
expect 2 "dyn_axis.tar" "mod.json: plan: dynamic record 0: axis 5 out of range for output 'nz' of rank 2" -- \
  "$mlc" run "$dir/dyn_axis.tar" --inputs "$dir/good_inputs.npz" --outputs "$dir/o.npz"
retar dyn_extent.tar '"extent":2' '"extent":0'
expect 2 "dynamic record 0: extent tensor 'x' is not a one-element int64 activation" -- \
  "$mlc" run "$dir/dyn_extent.tar" --inputs "$dir/good_inputs.npz" --outputs "$dir/o.npz"
retar dyn_output.tar '"output":0' '"output":3'
expect 2 "dynamic 0: \"output\" = 3 out of range" -- "$mlc" run "$dir/dyn_output.tar"
retar dyn_version.tar '"version":2' '"version":1'
expect 2 "\"dynamic\" needs version 2" -- "$mlc" run "$dir/dyn_version.tar"
retar dyn_missing.tar '"dynamic":[{"output":0,"axis":1,"extent":2}]' '"other":[]'
expect 2 "missing \"dynamic\"" -- "$mlc" run "$dir/dyn_missing.tar"
[ -e "$dir/o.npz" ] && { echo "FAIL a refused package left $dir/o.npz"; fails=$((fails + 1)); }
expect 1 -- "$mlc" compile
expect 1 "--opt-level" -- "$mlc" compile "$dir/good.onnx" --opt-level 9
expect 1 "--output" -- "$mlc" tune "$dir/good.onnx"

echo "$fails failed"
[ $fails = 0 ]
