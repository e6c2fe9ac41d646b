#!/bin/sh
# Tunes a model with `mlc tune --time-budget` and reports what it bought:
#   - per task: the default schedule's and the tuned config's time and GFLOP/s (both measured again at the end
#     of the task, one after the other, so they see the same load; the cost of a config is its fastest repeat);
#   - the whole model: the default package, the tuned package and ONNX Runtime, at each thread count (medians
#     of ROUNDS rounds, the three runners alternating within a round; outputs checked against ORT's);
#   - optionally xgb against random at equal trials: per task, how many trials xgb took to reach the best
#     config random found in K trials (K per task for both, same seed).
# usage: bench/tune.sh MODEL [--minutes N] [--threads 1,2] [--tuner xgb] [--compare-trials K] [--rounds R]
#                      [--runs N] [--tune-threads N] [--out DIR] [--mlc PATH] [--report-only]
#   MODEL             a .onnx file, or a name of /tmp/benchmodels/NAME.onnx (/work/shared/bench/gen_models.py)
#   --minutes N       the tuning time budget of the whole model (default 10; may be fractional)
#   --threads LIST    thread counts of the whole-model timing (default 1,2)
#   --tune-threads N  threads of each kernel while tuning (default 1: least disturbed on a shared machine)
#   --compare-trials K  xgb against random with K trials per task each (default 0: skipped)
#   --rounds R, --runs N  whole-model timing: R rounds of N runs each (defaults 5 and 20)
#   --report-only     reuse OUT's records and tuning output (re-time the model only)
# Writes OUT (default /tmp/tune_MODEL): tuned.json (records), tune.out (mlc tune --json), report.txt, report.json.
# Exit status: 0, or 1 when a step fails or the tuned model's outputs disagree with ORT's.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
peer=$root/../shared/bench
model=${1:?usage: bench/tune.sh MODEL [--minutes N] ...}
shift
minutes=10 threads=1,2 tuner=xgb cmp=0 rounds=5 runs=20 tune_threads=1 out= mlc=$root/build/mlc report_only=0
while [ $# -gt 0 ]; do
  case $1 in
  --minutes) minutes=$2; shift ;;
  --threads) threads=$2; shift ;;
  --tune-threads) tune_threads=$2; shift ;;
  --tuner) tuner=$2; shift ;;
  --compare-trials) cmp=$2; shift ;;
  --rounds) rounds=$2; shift ;;
  --runs) runs=$2; shift ;;
  --out) out=$2; shift ;;
  --mlc) mlc=$2; shift ;;
  --report-only) report_only=1 ;;
  *) echo "bench/tune.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
case $model in
*.onnx) name=$(basename "$model" .onnx) ;;
*) name=$model model=/tmp/benchmodels/$model.onnx ;;
esac
[ -f "$model" ] || { echo "no $model: /usr/bin/python3 $peer/gen_models.py /tmp/benchmodels --only $name" >&2; exit 1; }
out=${out:-/tmp/tune_$name}
mkdir -p "$out"
budget=$(/usr/bin/python3 -c "import sys; print(max(1, round(float(sys.argv[1]) * 60)))" "$minutes")
log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }

if [ $report_only = 0 ]; then
  rm -f "$out/tuned.json"
  log "tuning $name with $tuner for $budget s"
  "$mlc" tune "$model" --tuner "$tuner" --time-budget "$budget" --threads "$tune_threads" --seed 1 \
    --output "$out/tuned.json" --plot "$out/curves.svg" --json > "$out/tune.out"
  log "tuned: $(/usr/bin/python3 -c 'import json,sys; print("%.0f s" % json.load(open(sys.argv[1]))["elapsed_s"])' "$out/tune.out")"
  if [ "$cmp" -gt 0 ]; then
    for t in random xgb; do
      rm -f "$out/cmp_$t.json"
      log "$t, $cmp trials per task"
      "$mlc" tune "$model" --tuner "$t" --trials "$cmp" --remeasure 0 --threads "$tune_threads" --seed 1 \
        --output "$out/cmp_$t.json" --json > "$out/cmp_$t.out"
    done
  fi
fi

log "compiling the default and the tuned package"
"$mlc" compile "$model" --output "$out/default.tar" > /dev/null
"$mlc" compile "$model" --tuning-records "$out/tuned.json" --output "$out/tuned.tar" > /dev/null 2> "$out/apply.txt"
# ORT makes the random inputs (fixed seed) once; every runner reads them
/usr/bin/python3 "$peer/ort_ref.py" "$model" --outputs "$out/ort.npz" --runs 1 > /dev/null

log "timing the model (threads $threads, $rounds rounds of $runs runs)"
/usr/bin/python3 - "$mlc" "$peer" "$model" "$out" "$threads" "$rounds" "$runs" "$cmp" <<'PY'
import json, os, subprocess, sys
import numpy as np

mlc, peer, model, out, threads, rounds, runs, cmp = sys.argv[1:]
threads, rounds, runs, cmp = [int(t) for t in threads.split(",")], int(rounds), int(runs), int(cmp)
lines, report = [], {"model": model, "load_before": os.getloadavg()[0]}

def say(s=""):
    print(s)
    lines.append(s)

def last_json(text):
    return json.loads([l for l in text.splitlines() if l.startswith("{")][-1])

def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), r.stderr))
    return r.stdout

# ---- per task (from mlc tune --json)
tune = json.load(open(out + "/tune.out"))
say("mlc tune %s: tuner %s, %d s budget, %.0f s taken, target %s" %
    (os.path.basename(model), tune["tuner"], tune["time_budget_s"], tune["elapsed_s"], tune["target"]))
say("%-4s %-20s %-34s %5s %6s %9s %9s %8s %8s %7s" % ("task", "template", "output", "grps", "trials", "default ms",
                                                     "tuned ms", "def GF/s", "tun GF/s", "speedup"))
tot_d = tot_t = 0.0
report["tasks"] = []
for t in tune["tasks"]:
    if not t["tuned"]:
        say("%-4d %-20s not tuned%s" % (t["index"], t["name"], " (" + t["skipped"] + ")" if "skipped" in t else ""))
        continue
    d, b, g = t["default_ms"], t["best_ms"] or None, t["groups"]
    if d is not None and b:
        tot_d += d * g
        tot_t += min(b, d) * g
    shape = "x".join(str(x) for x in t["args"][-1][1])
    fmt = lambda v, f: f % v if v else "unknown"
    say("%-4d %-20s %-34s %5d %6d %9s %9s %8s %8s %7s" % (
        t["index"], t["name"], shape, g, t["trials"], fmt(d, "%.3f"), fmt(b, "%.3f"), fmt(t["default_gflops"], "%.1f"),
        fmt(t["best_gflops"], "%.1f"), "%.2fx" % (d / b) if d and b else "-"))
    report["tasks"].append(t)
if tot_t > 0:
    say("tuned tasks, x groups: default %.2f ms -> tuned %.2f ms (%.2fx)" % (tot_d, tot_t, tot_d / tot_t))
report["task_sum_ms"] = {"default": tot_d, "tuned": tot_t}

# ---- xgb against random at equal trials
if cmp > 0 and os.path.exists(out + "/cmp_xgb.json"):
    def by_task(path):
        tasks = {}
        for l in open(path):
            if l.strip():
                r = json.loads(l)
                k = (r["input"][1], json.dumps(r["input"][2]), json.dumps(r["input"][3], sort_keys=True))
                c = min(r["result"][0]) if r["result"][1] == 0 else float("inf")
                tasks.setdefault(k, []).append(c)
        return tasks
    rnd, xgb = by_task(out + "/cmp_random.json"), by_task(out + "/cmp_xgb.json")
    say()
    say("xgb against random, %d trials per task each: trials xgb needed to reach random's best (within 2%%)" % cmp)
    ratios = []
    for k, rc in rnd.items():
        xc = xgb.get(k)
        best = min(rc)
        if not xc or best == float("inf"):
            continue
        reach, cur = None, float("inf")
        for i, c in enumerate(xc):
            cur = min(cur, c)
            if cur <= best * 1.02:
                reach = i + 1
                break
        n = len(rc)
        ratios.append((reach or 2 * n) / n)
        say("  %-20s %-34s random best %.3f ms in %d, xgb best %.3f ms, reached at trial %s" %
            (k[0], "x".join(str(x) for x in json.loads(k[1])[-1][1]), best * 1e3, n, min(xc) * 1e3,
             reach if reach else "never"))
    if ratios:
        half = sum(r <= 0.5 for r in ratios)
        say("  xgb reached random's best in at most half the trials on %d of %d tasks (median ratio %.2f)" %
            (half, len(ratios), float(np.median(ratios))))
        report["xgb_vs_random"] = {"trials": cmp, "ratios": ratios}

# ---- the whole model
inputs = out + "/ort_inputs.npz"
ort_out = out + "/ort.npz"
times = {t: {"default": [], "tuned": [], "ort": []} for t in threads}
for r in range(rounds):
    for t in threads:
        for kind in ("default", "tuned"):
            o = last_json(run([mlc, "run", "%s/%s.tar" % (out, kind), "--inputs", inputs, "--outputs",
                               "%s/%s_%d.npz" % (out, kind, t), "--repeat", str(runs), "--threads", str(t), "--json"]))
            times[t][kind].append(o["median_ms"])
        o = last_json(run(["/usr/bin/python3", peer + "/ort_ref.py", model, "--inputs", inputs, "--outputs", ort_out,
                           "--threads", str(t), "--runs", str(runs), "--json"]))
        times[t]["ort"].append(o["median_ms"])

def rel_l2(a, b):
    num = sum(float(np.sum((a[k].astype(np.float64) - b[k].astype(np.float64)) ** 2)) for k in b.files)
    den = sum(float(np.sum(b[k].astype(np.float64) ** 2)) for k in b.files)
    return (num / den) ** 0.5 if den > 0 else num ** 0.5

bad = 0
say()
say("whole model (median of %d rounds x %d runs; load average %.1f -> %.1f)" %
    (rounds, runs, report["load_before"], os.getloadavg()[0]))
say("%-8s %11s %11s %9s %8s %11s %10s" % ("threads", "default ms", "tuned ms", "ORT ms", "speedup", "tuned/ORT",
                                          "rel L2"))
report["model"] = {}
for t in threads:
    m = {k: float(np.median(v)) for k, v in times[t].items()}
    ort = np.load(ort_out)
    err = max(rel_l2(np.load("%s/%s_%d.npz" % (out, k, t)), ort) for k in ("default", "tuned"))
    bad += not err < 1e-4
    say("%-8d %11.2f %11.2f %9.2f %7.2fx %11.2f %10.2e" % (t, m["default"], m["tuned"], m["ort"],
                                                            m["default"] / m["tuned"], m["tuned"] / m["ort"], err))
    report["model"][t] = dict(m, rel_l2=err, samples=times[t])
open(out + "/report.txt", "w").write("\n".join(lines) + "\n")
json.dump(report, open(out + "/report.json", "w"), indent=1)
if bad:
    sys.exit("outputs disagree with ONNX Runtime's")
PY
