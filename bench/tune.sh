#!/bin/sh
# Tunes a model with `mlc tune --time-budget` and reports what it bought:
#   - per task: the default schedule's and the tuned config's time and GFLOP/s (both measured again at the end
#     of the task, one after the other, so they see the same load; the cost of a config is its fastest repeat,
#     each run with the kernel's weights flushed from the caches, as in the model: mlc tune's --cache-flush);
#   - the whole model: the default package, the tuned package and ONNX Runtime, at each thread count (medians
#     of ROUNDS rounds, the three runners alternating within a round; outputs checked against ORT's);
#   - optionally xgb against random at equal trials: per task, how many trials xgb takes to reach the best
#     config random finds in K trials. Both replay the costs the tuning run recorded (`mlc tune --replay`,
#     seeds 1-5): on a shared machine live runs would mostly compare the noise of two different moments. The
#     tuning run measures whole spaces when they are small enough; the coverage is reported per task.
# usage: bench/tune.sh MODEL [--minutes N] [--threads 1,2] [--tuner xgb] [--compare-trials K] [--rounds R]
#                      [--runs N] [--tune-threads N] [--out DIR] [--mlc PATH] [--report-only]
#   MODEL             a .onnx file, or a name of /tmp/benchmodels/NAME.onnx (/work/shared/bench/gen_models.py)
#   --minutes N       the tuning time budget of the whole model (default 10; may be fractional)
#   --threads LIST    thread counts of the whole-model timing (default 1,2)
#   --tune-threads N  threads of each kernel while tuning (default 1: least disturbed on a shared machine)
#   --repeat N, --min-repeat-ms MS  mlc tune's timing of a config (defaults 5 and 10: the fastest of 5 repeats
#                     of at least 10 ms each)
#   --compare-trials K  xgb against random at K trials per task (replayed, seconds; default 0: skipped)
#   --rounds R, --runs N  whole-model timing: R rounds of N runs each (defaults 5 and 20)
#   --report-only     reuse OUT's records and tuning output (re-time the model only)
#   --tune-only       tune, then stop (time the model later with --report-only, e.g. once the machine is quiet)
# Writes OUT (default /tmp/tune_MODEL): tuned.json (records), tune.out (mlc tune --json), report.txt, report.json.
# Exit status: 0, or 1 when a step fails or the tuned model's outputs disagree with ORT's.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
peer=$root/../shared/bench
model=${1:?usage: bench/tune.sh MODEL [--minutes N] ...}
shift
minutes=10 threads=1,2 tuner=xgb cmp=0 rounds=5 runs=20 tune_threads=1 out= mlc=$root/build/mlc report_only=0
repeat=5 min_ms=10 tune_only=0
while [ $# -gt 0 ]; do
  case $1 in
  --minutes) minutes=$2; shift ;;
  --threads) threads=$2; shift ;;
  --tune-threads) tune_threads=$2; shift ;;
  --repeat) repeat=$2; shift ;;
  --min-repeat-ms) min_ms=$2; shift ;;
  --tuner) tuner=$2; shift ;;
  --compare-trials) cmp=$2; shift ;;
  --rounds) rounds=$2; shift ;;
  --runs) runs=$2; shift ;;
  --out) out=$2; shift ;;
  --mlc) mlc=$2; shift ;;
  --report-only) report_only=1 ;;
  --tune-only) tune_only=1 ;;
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
    --repeat "$repeat" --min-repeat-ms "$min_ms" --remeasure 3 \
    --output "$out/tuned.json" --plot "$out/curves.svg" --json > "$out/tune.out"
  log "tuned: $(/usr/bin/python3 -c 'import json,sys; print("%.0f s" % json.load(open(sys.argv[1]))["elapsed_s"])' "$out/tune.out")"
fi
if [ "$cmp" -gt 0 ]; then
  log "xgb and random replayed on the recorded costs, seeds 1-5"
  for t in random xgb; do
    for s in 1 2 3 4 5; do
      "$mlc" tune "$model" --replay "$out/tuned.json" --tuner "$t" --trials 100000 --seed "$s" --json \
        > "$out/replay_${t}_$s.out" 2> /dev/null
    done
  done
fi
[ $tune_only = 0 ] || exit 0

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

# ---- xgb against random at equal trials, replayed on the recorded costs
if cmp > 0 and os.path.exists(out + "/replay_xgb_1.out"):
    covered = {}
    for l in open(out + "/tuned.json"):
        if l.strip():
            r = json.loads(l)
            covered.setdefault((r["input"][1], json.dumps(r["input"][2])), set()).add(r["config"]["index"])
    curves = {}
    for tn in ("random", "xgb"):
        for s in range(1, 6):
            for t in json.load(open("%s/replay_%s_%d.out" % (out, tn, s)))["tasks"]:
                if t["tuned"] and t["best_gflops_curve"]:
                    curves.setdefault(t["index"], [t, {}])[1].setdefault(tn, []).append(t["best_gflops_curve"])
    say()
    say("xgb against random at %d trials per task (or the whole space when smaller), replayed on the recorded costs,"
        " seeds 1-5:" % cmp)
    say("trials xgb needs to reach random's best, as a share of random's trials (mean over the seeds)")
    ratios, trivial = [], 0
    for i, (t, c) in sorted(curves.items()):
        n = t["space_size"]
        k = min(cmp, n)
        rs = []
        for rc, xc in zip(c.get("random", []), c.get("xgb", [])):
            if len(rc) < k or rc[k - 1] <= 0:
                continue
            reach = next((j + 1 for j, g in enumerate(xc) if g >= rc[k - 1] * 0.999), len(xc) + 1)
            rs.append(reach / k)
        if not rs:
            continue
        cov = len(covered.get((t["name"], json.dumps(t["args"])), ()))
        # every run measures the default first: when nothing beats it, both tuners "reach" it at trial 1
        default_best = all(rc[k - 1] <= rc[0] for rc in c.get("random", []))
        trivial += default_best
        if not default_best:
            ratios.append(float(np.mean(rs)))
        say("  task %-3d %-20s space %4d (%3d recorded)  k %3d  xgb/random trials %s" % (
            i, t["name"], n, cov, k, "- (nothing beats the default, trial 1 of both)" if default_best else
            "%.2f" % ratios[-1]))
    if ratios:
        say("  tasks where random beats the default: mean %.2f, xgb within half of random's trials on %d of %d"
            " (%d tasks: the default is the best random finds)" %
            (float(np.mean(ratios)), sum(r <= 0.5 for r in ratios), len(ratios), trivial))
    report["xgb_vs_random"] = {"trials": cmp, "ratios": ratios, "default_best_tasks": trivial}

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
