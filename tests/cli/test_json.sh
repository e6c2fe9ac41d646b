#!/bin/sh
# --json and exit codes, as a build script sees them: every command run with --json prints exactly one line on
# stdout, a JSON object whose "command" names it and whose "status" is "ok" (exit 0) or "error" with
# "exit_code" equal to the process's exit code: 0 ok, 1 usage, 2 invalid model or input, 3 unsupported.
# usage: test_json.sh MLC BUILD_DIR SOURCE_DIR
set -u
mlc=$1 dir=$2/json src=$3
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$src/tests/cli/make_bad_models.py" "$dir" >/dev/null || exit 1
fails=0

# check CODE COMMAND ARGS...: exit code CODE and one JSON line with the right command/status/exit_code
check() {
  code=$1
  shift
  cmd=$2
  "$@" >"$dir/out.txt" 2>"$dir/err.txt"
  got=$?
  if [ "$got" != "$code" ]; then
    echo "FAIL $* (exit $got, want $code)"; sed 's/^/  /' "$dir/err.txt"; fails=$((fails + 1)); return
  fi
  if ! /usr/bin/python3 - "$dir/out.txt" "$cmd" "$code" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, "expected one line, got %d" % len(lines)
o = json.loads(lines[0])
assert o["command"] == sys.argv[2], o
code = int(sys.argv[3])
if code == 0:
    assert o["status"] == "ok", o
else:
    assert o["status"] == "error" and o["exit_code"] == code and o["error"], o
PY
  then echo "FAIL $* (bad JSON)"; cat "$dir/out.txt"; fails=$((fails + 1)); return; fi
  echo "ok   $*"
}

m=$src/models/cnn_small.onnx
check 0 "$mlc" load "$m" --json
check 0 "$mlc" compile "$m" --output "$dir/m.tar" --json
check 0 "$mlc" run "$dir/m.tar" --json --print-top 3 --profile
check 1 "$mlc" load --json
check 1 "$mlc" compile "$m" --json --opt-level 9
check 1 "$mlc" compile "$m" --json --output-format zip
check 1 "$mlc" run "$dir/m.tar" --json --repeat 0
check 1 "$mlc" tune --json
check 2 "$mlc" load "$dir/garbage.onnx" --json
check 2 "$mlc" compile "$dir/truncated.onnx" --output "$dir/t.tar" --json
check 2 "$mlc" run "$dir/nothere.tar" --json
check 2 "$mlc" run "$dir/m.tar" --inputs "$dir/wrong_shape.npz" --json
check 3 "$mlc" load "$dir/unsupported.onnx" --json
check 3 "$mlc" compile "$dir/unsupported.onnx" --json --output "$dir/t.tar"
check 3 "$mlc" run "$dir/m.tar" --device cuda --json
check 0 "$mlc" tune "$m" --json --trials 0 --output "$dir/r.json"
check 1 "$mlc" tune "$m" --json
check 3 "$mlc" tune "$m" --json --target cuda --output "$dir/r.json"
# the profile object has stable fields
"$mlc" run "$dir/m.tar" --json --profile --profile-trace "$dir/trace.json" > "$dir/prof.txt" || fails=$((fails + 1))
/usr/bin/python3 - "$dir/prof.txt" "$dir/trace.json" <<'PY' || fails=$((fails + 1))
import json, sys
o = json.loads(open(sys.argv[1]).read())
for k in o["profile"]:
    assert set(["kernel", "ops", "calls", "total_ms", "mean_ms", "share", "flops"]) <= set(k), k
assert any("gflops" in k for k in o["profile"]), "no kernel has a GFLOP/s figure"
t = json.load(open(sys.argv[2]))
ev = [e for e in t["traceEvents"] if e.get("cat") == "kernel"]
assert ev and all(e["ph"] == "X" and e["dur"] >= 0 and "ts" in e for e in ev), "bad trace"
print("ok   profile JSON and Chrome trace")
PY
echo "$fails failed"
[ $fails = 0 ]
