#!/bin/sh
# mlc tune end to end on models/cnn_small.onnx, bounded (a few trials per task): each tuner writes valid
# records, a resumed run measures nothing twice, compiling with the records gives the untuned outputs,
# a time budget stops the run in time, configs and a default schedule that time out are recorded without
# stopping it, a replay of the records reproduces their best, the xgb tuner starts next to the default config
# and learns from earlier tasks of the same template (transfer learning), shard files merge into one best
# record per task, and 3-D convs (conv3d_packed.x86, both forms) tune and compile with their records.
# usage: test_tune.sh MLC BUILD_DIR SOURCE_DIR
set -u
mlc=$1 dir=$2/tune src=$3
m=$src/models/cnn_small.onnx
rm -rf "$dir" && mkdir -p "$dir"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
opts="--number 1 --repeat 1 --parallel 2 --timeout 20 --seed 7 --remeasure 0"

"$mlc" tune "$m" --output "$dir/r.json" --trials 0 > "$dir/tasks.txt" || fail "task listing"
grep -q "conv2d" "$dir/tasks.txt" && grep -q "dense" "$dir/tasks.txt" || fail "tasks: $(cat "$dir/tasks.txt")"
ntasks=$(grep -c "^  task " "$dir/tasks.txt")
[ "$ntasks" -ge 4 ] || fail "$ntasks tasks"
"$mlc" tune "$m" --output "$dir/random.json" --tuner random --trials 2 --plot "$dir/curves.svg" $opts --json \
  > "$dir/random.out" || fail "tune random"
"$mlc" tune "$m" --output "$dir/shard0.json" --tuner grid --trials 2 --task-shard 0/2 $opts --json \
  > "$dir/shard0.out" || fail "tune grid"
"$mlc" tune "$m" --output "$dir/shard1.json" --tuner ga --trials 2 --task-shard 1/2 $opts --json \
  > "$dir/shard1.out" || fail "tune ga"
"$mlc" tune "$m" --output "$dir/xgb.json" --tuner xgb --trials 10 --task-shard 3/4 $opts --json > "$dir/xgb.out" ||
  fail "tune xgb"
grep -q "<svg" "$dir/curves.svg" || fail "no plot"

/usr/bin/python3 - "$dir" "$ntasks" <<'PY' || fails=$((fails + 1))
import json, sys
d, ntasks = sys.argv[1], int(sys.argv[2])
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
def summary(name):
    return [t for t in json.loads(open(d + "/" + name).read())["tasks"] if t["tuned"]]
def trials_ok(name, tuned):
    # 2 trials per task (the default and one more), fewer only where the rest of its space are twins of those
    # measured (configs whose kernel is the same: not measured or logged); one record per trial
    s = summary(name + ".out")
    assert len(s) == tuned and all(t["trials"] == 2 or t["trials"] + t["twins"] == t["space_size"] for t in s), s
    assert len(load(name + ".json")) == sum(t["trials"] for t in s), s
    return s
r = load("random.json")
tasks = {(x["input"][1], json.dumps(x["input"][2])) for x in r}
assert len(tasks) == ntasks, len(tasks)
trials_ok("random", ntasks)
trials_ok("shard0", (ntasks + 1) // 2)
trials_ok("shard1", ntasks // 2)
x = load("xgb.json")  # 10 trials, or fewer when the task's whole space is smaller: each config once
assert 1 <= len(x) <= 10 and len({r["config"]["index"] for r in x}) == len(x), len(x)
o = json.loads(open(d + "/xgb.out").read())
assert o["command"] == "tune" and o["status"] == "ok" and sum(t["tuned"] for t in o["tasks"]) == 1, o
# xgb without a model yet (nothing transferred): the default, then its neighbours (one knob changed), then
# random configs once the neighbours are all visited
t = [t for t in o["tasks"] if t["tuned"]][0]
assert t["transferred"] == 0 and x[0]["config"]["index"] == t["default_index"], (t, x[0])
def knobs_changed(r):
    return sum(a != b for a, b in zip(r["config"]["entity"], x[0]["config"]["entity"]))
near = [knobs_changed(r) == 1 for r in x[1:9]]
assert near and near[0] and near == sorted(near, reverse=True), [r["config"]["entity"] for r in x]
print("ok   records of every tuner; xgb's first batch: %d neighbours of the default" % sum(near))
PY

# resume: everything asked for is measured already
before=$(wc -l < "$dir/random.json")
"$mlc" tune "$m" --output "$dir/random.json" --tuning-records "$dir/random.json" --tuner random --trials 2 $opts \
  > "$dir/resume.txt" 2>&1 || fail "resume"
[ "$(wc -l < "$dir/random.json")" = "$before" ] || fail "resume measured again"
grep -q "2 resumed" "$dir/resume.txt" || fail "resume: $(cat "$dir/resume.txt")"

# replay: the same tuner and seed on the recorded costs proposes the same configs, so each task's best is the
# best recorded; nothing is measured or written
"$mlc" tune "$m" --replay "$dir/random.json" --tuner random --trials 2 --seed 7 --json > "$dir/replay.out" ||
  fail "replay"
/usr/bin/python3 - "$dir" <<'PY' || fails=$((fails + 1))
import json, sys
d = sys.argv[1]
o = json.loads(open(d + "/replay.out").read())
run = {t["index"]: t for t in json.loads(open(d + "/random.out").read())["tasks"]}
assert o["replay"] and o["output"] is None, o
best = {}
for l in open(d + "/random.json"):
    r = json.loads(l)
    if r["result"][1] == 0:
        k = (r["input"][1], json.dumps(r["input"][2]))
        best[k] = min(best.get(k, 1e9), min(r["result"][0]))
for t in o["tasks"]:
    want = t["flops"] / best[(t["name"], json.dumps(t["args"]))] * 1e-9
    n = run[t["index"]]["trials"]  # 2, or 1 where the other config is a twin of the default
    assert t["tuned"] and t["trials"] == n, t
    assert abs(t["best_gflops"] - want) <= 1e-3 * want + 1e-3, (t, want)
    assert len(t["best_gflops_curve"]) == n and t["best_gflops_curve"][-1] == t["best_gflops"], t
print("ok   replay")
PY

# compile with the records: every task uses one, and the outputs match the untuned package
"$mlc" compile "$m" --output "$dir/plain.tar" >/dev/null || fail "compile"
"$mlc" compile "$m" --output "$dir/tuned.tar" --tuning-records "$dir/random.json" 2> "$dir/apply.txt" >/dev/null ||
  fail "compile --tuning-records"
[ "$(grep -c "tuned config" "$dir/apply.txt")" = "$ntasks" ] || fail "records not applied: $(cat "$dir/apply.txt")"
"$mlc" run "$dir/plain.tar" --outputs "$dir/plain.npz" >/dev/null || fail "run plain"
"$mlc" run "$dir/tuned.tar" --outputs "$dir/tuned.npz" >/dev/null || fail "run tuned"
/usr/bin/python3 "$src/tests/cli/compare_npz.py" "$dir/tuned.npz" "$dir/plain.npz" >/dev/null || fail "tuned outputs differ"
# a config measured again counts by its latest measurement, and such confirmed configs (mlc tune --remeasure:
# the best few and the default, measured again at the end of a task) win over the lowest single measurement,
# which among many noisy ones is biased low: X first 0.001 ms then 1 ms, Y 0.5 ms twice, Z 0.0001 ms once -> Y
/usr/bin/python3 - "$dir" <<'PY' || fail "confirmed records"
import json, sys
d = sys.argv[1]
recs = [json.loads(l) for l in open(d + "/xgb.json") if l.strip()]
assert len(recs) >= 3, len(recs)
x, y, z = recs[:3]
out = []
for r, cost in ((x, 1e-6), (y, 5e-4), (z, 1e-7), (x, 1e-3), (y, 5e-4)):
    r = json.loads(json.dumps(r))
    r["result"][0] = [cost]
    out.append(json.dumps(r))
open(d + "/confirmed.json", "w").write("\n".join(out) + "\n")
open(d + "/confirmed.want", "w").write("tuned config #%d (0.5000 ms" % y["config"]["index"])
PY
"$mlc" compile "$m" --output "$dir/confirmed.tar" --tuning-records "$dir/confirmed.json" 2> "$dir/confirmed.txt" \
  >/dev/null || fail "compile confirmed"
grep -qF "$(cat "$dir/confirmed.want")" "$dir/confirmed.txt" || fail "confirmed pick: $(cat "$dir/confirmed.txt")"
# records of another target are ignored with a note
sed 's/"llvm"/"llvm -mcpu=other"/' "$dir/random.json" > "$dir/other.json"
"$mlc" compile "$m" --output "$dir/o.tar" --tuning-records "$dir/other.json" 2> "$dir/other.txt" >/dev/null ||
  fail "compile other target"
grep -q "other targets" "$dir/other.txt" && ! grep -q "tuned config" "$dir/other.txt" || fail "other target applied"

# --time-budget: configs slowed to >= 0.1 s each, far more of them than fit in 3 s; the run stops in time
# (a batch in flight and the final re-measurements may run over a little), its records are valid, and it
# says which tasks its time ran out on
start=$(date +%s)
"$mlc" tune "$m" --output "$dir/budget.json" --time-budget 3 --number 1 --repeat 1 --min-repeat-ms 100 --parallel 2 \
  --timeout 20 --seed 7 --json > "$dir/budget.out" || fail "tune --time-budget"
took=$(($(date +%s) - start))
[ "$took" -le 8 ] || fail "--time-budget 3 took $took s"
/usr/bin/python3 - "$dir" <<'PY' || fails=$((fails + 1))
import json, sys
d = sys.argv[1]
o = json.loads(open(d + "/budget.out").read())
assert o["status"] == "ok" and o["time_budget_s"] == 3 and o["elapsed_s"] < 7, o
tuned = [t for t in o["tasks"] if t["tuned"]]
assert any(t.get("out_of_time") for t in tuned) or any(t.get("skipped") for t in o["tasks"]), o
assert all(t["trials"] <= t["space_size"] for t in tuned), o
recs = [json.loads(l) for l in open(d + "/budget.json") if l.strip()]
assert recs and all(r["result"][1] == 0 and min(r["result"][0]) > 0 for r in recs), recs
print("ok   --time-budget: %.1f s, %d records" % (o["elapsed_s"], len(recs)))
PY

# every measurement times out (each repeat must last 5 s, a run may take 1 s), the default schedule's too:
# the run goes on, records the error numbers, reports the default as unknown, and exits 0
"$mlc" tune "$m" --output "$dir/timeout.json" --tuner random --trials 2 --task-shard 0/6 --number 1 --repeat 1 \
  --min-repeat-ms 5000 --timeout 1 --parallel 2 --seed 7 --json > "$dir/timeout.out" || fail "tune with timeouts"
/usr/bin/python3 - "$dir" <<'PY' || fails=$((fails + 1))
import json, sys
d = sys.argv[1]
o = json.loads(open(d + "/timeout.out").read())
t = [t for t in o["tasks"] if t["tuned"]]
assert len(t) == 1 and t[0]["default_gflops"] is None and t[0]["default_error"] == 7, o
assert t[0]["trials"] == 2 and t[0]["errors"] == 2 and t[0]["best_gflops"] == 0, o
recs = [json.loads(l) for l in open(d + "/timeout.json") if l.strip()]
assert len(recs) == 2 and all(r["result"][1] == 7 for r in recs), recs
print("ok   timeouts recorded, default unknown")
PY

# transfer learning: every config of task 0 (conv2d_packed.x86) and task 1 (the same template) measured, with the
# cache flush off (the other timing path); the xgb tuner replayed on them learns from task 0's measurements
# when it tunes task 1 with --transfer-learning on, from none with off; both find each task's best (a config
# replays its twin's record)
"$mlc" tune "$m" --output "$dir/all.json" --tuner grid --trials 64 --task-shard 0/1 --cache-flush off $opts \
  --json > "$dir/all.out" || fail "tune --cache-flush off"
for tl in on off; do
  "$mlc" tune "$m" --replay "$dir/all.json" --tuner xgb --trials 64 --seed 3 --transfer-learning $tl --json \
    > "$dir/tl_$tl.out" || fail "replay --transfer-learning $tl"
done
/usr/bin/python3 - "$dir" <<'PY' || fails=$((fails + 1))
import json, sys
d = sys.argv[1]
on, off, full = (json.loads(open(d + "/%s.out" % n).read())["tasks"] for n in ("tl_on", "tl_off", "all"))
assert on[1]["name"] == on[0]["name"] == "conv2d_packed.x86" and on[2]["name"] != on[1]["name"], on
assert on[0]["transferred"] == 0 and on[1]["transferred"] == full[0]["trials"] >= 8, on
# the grid visited every config; those whose kernel is one measured already (prefetch where the loop order is
# not 0) are twins, neither measured nor logged
recs = [json.loads(l) for l in open(d + "/all.json")]
for t in full:
    mine = [r for r in recs if r["input"][1] == t["name"] and r["input"][2] == t["args"]]
    assert t["trials"] + t["twins"] == t["space_size"] and len(mine) == t["trials"], t
    assert len({r["config"]["index"] for r in mine}) == len(mine), t
assert full[0]["twins"] > 0, full[0]
assert all(t["transferred"] == 0 for t in off), off
for a, b, f in zip(on, off, full):
    assert a["best_gflops"] == b["best_gflops"] and abs(a["best_gflops"] - f["best_gflops"]) <= 1e-3 * f["best_gflops"], (a, b, f)
print("ok   transfer learning: task 1 learned from %d measurements of task 0" % on[1]["transferred"])
PY
for bad in "--cache-flush sometimes" "--transfer-learning maybe"; do
  "$mlc" tune "$m" --output "$dir/bad.json" $bad > "$dir/bad.txt" 2>&1 && fail "accepted $bad"
  grep -q "expected on or off" "$dir/bad.txt" || fail "$bad: $(cat "$dir/bad.txt")"
done

# merge the two shards: one best record per task
"$mlc" records merge "$dir/shard0.json" "$dir/shard1.json" -o "$dir/merged.json" >/dev/null || fail "merge"
[ "$(wc -l < "$dir/merged.json")" -le "$ntasks" ] && [ "$(wc -l < "$dir/merged.json")" -ge 1 ] || fail "merged lines"
"$mlc" compile "$m" --output "$dir/merged.tar" --tuning-records "$dir/merged.json" >/dev/null 2>&1 ||
  fail "compile merged"

# 3-D convs: R(2+1)D's (1, 3, 3) spatial conv (direct form) and (3, 1, 1) temporal conv (temporal form) are
# conv3d_packed.x86 tasks; their tuned configs compile and give the untuned outputs
/usr/bin/python3 - "$dir/c3d.onnx" "$dir/c3d_in.npz" <<'PY' || fail "conv3d model"
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
r = np.random.default_rng(3)
w1 = numpy_helper.from_array((r.standard_normal((32, 16, 1, 3, 3)) / 12).astype(np.float32), "w1")
w2 = numpy_helper.from_array((r.standard_normal((16, 32, 3, 1, 1)) / 10).astype(np.float32), "w2")
nodes = [helper.make_node("Conv", ["x", "w1"], ["s"], pads=[0, 1, 1, 0, 1, 1]), helper.make_node("Relu", ["s"], ["sr"]),
         helper.make_node("Conv", ["sr", "w2"], ["y"], pads=[1, 0, 0, 1, 0, 0])]
g = helper.make_graph(nodes, "c3d", [helper.make_tensor_value_info("x", T.FLOAT, [1, 16, 4, 8, 8])],
                      [helper.make_tensor_value_info("y", T.FLOAT, None)], [w1, w2])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
np.savez(sys.argv[2], x=r.standard_normal((1, 16, 4, 8, 8)).astype(np.float32))
PY
"$mlc" tune "$dir/c3d.onnx" --output "$dir/c3d.json" --tuner random --trials 4 $opts > "$dir/c3d_tune.txt" 2>&1 ||
  fail "tune conv3d"
[ "$(grep -c "conv3d_packed.x86: default" "$dir/c3d_tune.txt")" = 2 ] || fail "conv3d tasks: $(cat "$dir/c3d_tune.txt")"
"$mlc" compile "$dir/c3d.onnx" --output "$dir/c3d.tar" > "$dir/c3d_plain.txt" 2>&1 || fail "compile conv3d"
"$mlc" compile "$dir/c3d.onnx" --output "$dir/c3d_tuned.tar" --tuning-records "$dir/c3d.json" > "$dir/c3d_c.txt" 2>&1 ||
  fail "compile conv3d with records"
[ "$(grep -c "conv3d_packed.x86.*tuned config" "$dir/c3d_c.txt")" = 2 ] || fail "conv3d records: $(cat "$dir/c3d_c.txt")"
"$mlc" run "$dir/c3d.tar" --inputs "$dir/c3d_in.npz" --outputs "$dir/c3d_out.npz" >/dev/null &&
  "$mlc" run "$dir/c3d_tuned.tar" --inputs "$dir/c3d_in.npz" --outputs "$dir/c3d_tuned_out.npz" >/dev/null &&
  /usr/bin/python3 "$src/tests/cli/compare_npz.py" "$dir/c3d_tuned_out.npz" "$dir/c3d_out.npz" --tol 1e-5 >/dev/null ||
  fail "conv3d tuned outputs"

echo "$fails failed"
[ $fails = 0 ]
