#!/bin/sh
# Tunes ResNet-18 for a bounded time and reports default vs tuned per task and for the whole model, and xgb vs
# random at equal trials.
# usage: bench/tune_resnet18.sh [MLC] [MODEL.onnx] [TRIALS] [OUT_DIR]
#   MLC      the mlc binary (default: build/mlc)
#   MODEL    default /tmp/benchmodels/resnet18.onnx (bench generator: /work/shared/bench/gen_models.py)
#   TRIALS   trials per task for each tuner (default 32; the time bound is about TRIALS x tasks x 1 s per tuner)
# Environment: TARGET (default "llvm"), THREADS (default 1), REPEAT (model timing repeats, default 20),
#   TIMEOUT (seconds per build / per repeat of a config, default 30).
set -eu
mlc=${1:-build/mlc}
model=${2:-/tmp/benchmodels/resnet18.onnx}
trials=${3:-32}
out=${4:-/tmp/tune_resnet18}
target=${TARGET:-llvm}
threads=${THREADS:-1}
repeat=${REPEAT:-20}
timeout=${TIMEOUT:-30}
mkdir -p "$out"
[ -f "$model" ] || { echo "no $model: /usr/bin/python3 /work/shared/bench/gen_models.py /tmp/benchmodels --only resnet18"; exit 1; }

for tuner in xgb random; do
  rm -f "$out/$tuner.json"
  start=$(date +%s)
  "$mlc" tune "$model" --target "$target" --tuner "$tuner" --trials "$trials" --threads "$threads" --seed 1 \
    --timeout "$timeout" \
    --output "$out/$tuner.json" --plot "$out/$tuner.svg" --json > "$out/$tuner.out"
  echo "$tuner: $(($(date +%s) - start)) s of tuning, records in $out/$tuner.json, curves in $out/$tuner.svg"
done

# per task: default and best GFLOP/s of each tuner at equal trials
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
res = {t: json.loads(open("%s/%s.out" % (d, t)).read()) for t in ("xgb", "random")}
print("%-4s %-20s %10s %10s %10s" % ("task", "template", "default", "xgb", "random"))
tot = {"default": 0.0, "xgb": 0.0, "random": 0.0}
for tx, tr in zip(res["xgb"]["tasks"], res["random"]["tasks"]):
    if not tx.get("tuned"):
        continue
    fl = tx["flops"]
    g = {"default": tx["default_gflops"], "xgb": tx["best_gflops"], "random": tr.get("best_gflops", 0)}
    for k in tot:  # a task without a valid config compiles with the default schedule
        gk = g[k] if g[k] > 0 else g["default"]
        if gk > 0:
            tot[k] += fl / (gk * 1e9)
    print("%-4d %-20s %10.2f %10.2f %10.2f  GFLOP/s" % (tx["index"], tx["name"], g["default"], g["xgb"], g["random"]))
print("sum of tuned task times (one group each): default %.3f ms, xgb %.3f ms, random %.3f ms"
      % (tot["default"] * 1e3, tot["xgb"] * 1e3, tot["random"] * 1e3))
PY

# the whole model, default vs tuned
time_of() { "$mlc" run "$1" --repeat "$repeat" --threads "$threads" --json |
  /usr/bin/python3 -c 'import json,sys; print("%.2f" % json.loads(sys.stdin.read())["median_ms"])'; }
"$mlc" compile "$model" --target "$target" --output "$out/default.tar" > /dev/null
echo "model default: $(time_of "$out/default.tar") ms"
for tuner in xgb random; do
  "$mlc" compile "$model" --target "$target" --tuning-records "$out/$tuner.json" --output "$out/$tuner.tar" \
    > /dev/null 2> "$out/$tuner.apply.txt"
  echo "model tuned ($tuner): $(time_of "$out/$tuner.tar") ms ($(grep -c 'tuned config' "$out/$tuner.apply.txt") tasks with records)"
done
