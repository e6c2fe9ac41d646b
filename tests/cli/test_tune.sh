#!/bin/sh
# mlc tune end to end on models/cnn_small.onnx, bounded (a few trials per task): each tuner writes valid
# records, a resumed run measures nothing twice, compiling with the records gives the untuned outputs,
# and shard files merge into one best record per task.
# usage: test_tune.sh MLC BUILD_DIR SOURCE_DIR
set -u
mlc=$1 dir=$2/tune src=$3
m=$src/models/cnn_small.onnx
rm -rf "$dir" && mkdir -p "$dir"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
opts="--number 1 --repeat 1 --parallel 2 --timeout 20 --seed 7"

"$mlc" tune "$m" --output "$dir/r.json" --trials 0 > "$dir/tasks.txt" || fail "task listing"
grep -q "conv2d" "$dir/tasks.txt" && grep -q "dense" "$dir/tasks.txt" || fail "tasks: $(cat "$dir/tasks.txt")"
"$mlc" tune "$m" --output "$dir/random.json" --tuner random --trials 2 --plot "$dir/curves.svg" $opts >/dev/null ||
  fail "tune random"
"$mlc" tune "$m" --output "$dir/shard0.json" --tuner grid --trials 2 --task-shard 0/2 $opts >/dev/null || fail "tune grid"
"$mlc" tune "$m" --output "$dir/shard1.json" --tuner ga --trials 2 --task-shard 1/2 $opts >/dev/null || fail "tune ga"
"$mlc" tune "$m" --output "$dir/xgb.json" --tuner xgb --trials 10 --task-shard 3/4 $opts --json > "$dir/xgb.out" ||
  fail "tune xgb"
grep -q "<svg" "$dir/curves.svg" || fail "no plot"

/usr/bin/python3 - "$dir" <<'PY' || fails=$((fails + 1))
import json, sys
d = sys.argv[1]
def load(name):
    recs = [json.loads(l) for l in open(d + "/" + name) if l.strip()]
    for r in recs:
        assert set(r) == {"input", "config", "result", "version"}, r
        tgt, task, args, kwargs = r["input"]
        assert tgt == "llvm" and task.endswith(".x86") and isinstance(args, list) and isinstance(kwargs, dict), r
        assert isinstance(r["config"]["index"], int) and all(len(e) == 2 for e in r["config"]["entity"]), r
        costs, err, allc, ts = r["result"]
        assert isinstance(costs, list) and isinstance(err, int) and allc >= 0 and ts > 1e9, r
        assert err != 0 or all(c > 0 for c in costs), r
    return recs
r = load("random.json")
tasks = {(x["input"][1], json.dumps(x["input"][2])) for x in r}
assert len(tasks) == 4 and len(r) == 8, (len(tasks), len(r))
assert len(load("shard0.json")) == 4 and len(load("shard1.json")) == 4
x = load("xgb.json")  # 10 trials, or fewer when the task's whole space is smaller: each config once
assert 1 <= len(x) <= 10 and len({r["config"]["index"] for r in x}) == len(x), len(x)
o = json.loads(open(d + "/xgb.out").read())
assert o["command"] == "tune" and o["status"] == "ok" and sum(t["tuned"] for t in o["tasks"]) == 1, o
print("ok   records of every tuner")
PY

# resume: everything asked for is measured already
before=$(wc -l < "$dir/random.json")
"$mlc" tune "$m" --output "$dir/random.json" --tuning-records "$dir/random.json" --tuner random --trials 2 $opts \
  > "$dir/resume.txt" 2>&1 || fail "resume"
[ "$(wc -l < "$dir/random.json")" = "$before" ] || fail "resume measured again"
grep -q "2 resumed" "$dir/resume.txt" || fail "resume: $(cat "$dir/resume.txt")"

# compile with the records: every task uses one, and the outputs match the untuned package
"$mlc" compile "$m" --output "$dir/plain.tar" >/dev/null || fail "compile"
"$mlc" compile "$m" --output "$dir/tuned.tar" --tuning-records "$dir/random.json" 2> "$dir/apply.txt" >/dev/null ||
  fail "compile --tuning-records"
[ "$(grep -c "tuned config" "$dir/apply.txt")" = 4 ] || fail "records not applied: $(cat "$dir/apply.txt")"
"$mlc" run "$dir/plain.tar" --outputs "$dir/plain.npz" >/dev/null || fail "run plain"
"$mlc" run "$dir/tuned.tar" --outputs "$dir/tuned.npz" >/dev/null || fail "run tuned"
/usr/bin/python3 "$src/tests/cli/compare_npz.py" "$dir/tuned.npz" "$dir/plain.npz" >/dev/null || fail "tuned outputs differ"
# records of another target are ignored with a note
sed 's/"llvm"/"llvm -mcpu=other"/' "$dir/random.json" > "$dir/other.json"
"$mlc" compile "$m" --output "$dir/o.tar" --tuning-records "$dir/other.json" 2> "$dir/other.txt" >/dev/null ||
  fail "compile other target"
grep -q "other targets" "$dir/other.txt" && ! grep -q "tuned config" "$dir/other.txt" || fail "other target applied"

# merge the two shards: one best record per task
"$mlc" records merge "$dir/shard0.json" "$dir/shard1.json" -o "$dir/merged.json" >/dev/null || fail "merge"
[ "$(wc -l < "$dir/merged.json")" -le 4 ] && [ "$(wc -l < "$dir/merged.json")" -ge 1 ] || fail "merged lines"
"$mlc" compile "$m" --output "$dir/merged.tar" --tuning-records "$dir/merged.json" >/dev/null 2>&1 ||
  fail "compile merged"

echo "$fails failed"
[ $fails = 0 ]
