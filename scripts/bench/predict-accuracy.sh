#!/usr/bin/env bash
# Issue M's target: calibrate Dyno's speed model on one test model's
# quantisation ladder, then predict the other model's ladder before it is
# measured, both ways round. Also the memory estimate against the peak RSS
# the runs measured, and `dyno predict --accuracy` over each sweep (each run's
# prediction was made before it ran, from the levels measured before it).
#
# Each model is quantised locally into the standard ladder and swept into
# its own database (pp512, tg128, REPS repetitions, no quality). Then, for
# every level file of model B, `dyno predict FILE` runs against a copy of
# model A's database, which has never seen B, and the prediction is held
# against what B's sweep measured.
#
# Usage: scripts/bench/predict-accuracy.sh   (on an otherwise idle machine)
# Settings: THREADS (2), REPS (3), LEVELS, DYNO_BIN, OUT (a folder to keep).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
THREADS="${THREADS:-2}"
REPS="${REPS:-3}"
LEVELS="${LEVELS:-F16,Q8_0,Q6_K,Q5_K_M,Q4_K_M,Q3_K_M,Q2_K}"
bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS" >/dev/null
if [ -z "${DYNO_BIN:-}" ]; then build_dyno; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"
out="${OUT:-$(mktemp -d)}"
mkdir -p "$out"
echo "working in $out" >&2

sweep() { # name file
  if [ ! -s "$out/$1.json" ]; then
    "$dyno" --db "$out/$1.db" sweep --from "$2" --levels "$LEVELS" --no-quality \
      -p 512 -n 128 -r "$REPS" -t "$THREADS" --json >"$out/$1.json"
  fi
}
sweep smol "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
sweep gemma "$DYNO_TEST_MODELS/gemma-3-270m-q4_k_m.gguf"

predict_with() { # calibration-db target-sweep-json out-json
  cp "$out/$1.db" "$out/calib.db"
  rm -f "$out/calib.db-wal" "$out/calib.db-shm"
  python3 - "$out/$2.json" <<'PY' | while read -r path; do
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print(r["model"]["path"])
PY
    "$dyno" --db "$out/calib.db" predict "$path" -t "$THREADS" -p 512 -n 128 --json
  done >"$out/$3.jsonl"
}
predict_with smol gemma gemma-from-smol
predict_with gemma smol smol-from-gemma
"$dyno" --db "$out/smol.db" predict --accuracy --json >"$out/smol-accuracy.json"
"$dyno" --db "$out/gemma.db" predict --accuracy --json >"$out/gemma-accuracy.json"

python3 - "$out" <<'PY'
import json, sys, statistics
out = sys.argv[1]

def decoder(f):
    d = json.JSONDecoder(); s = open(f).read(); i = 0; docs = []
    while i < len(s):
        while i < len(s) and s[i].isspace(): i += 1
        if i >= len(s): break
        o, i = d.raw_decode(s, i); docs.append(o)
    return docs

def measured(name):
    m = {}
    for r in json.load(open(f"{out}/{name}.json"))["runs"]:
        row = {"quant": r["model"]["quant"], "rss": r.get("peak_rss_bytes")}
        for t in r["results"]:
            if t["status"] == "ok" and t["kind"] == "prompt": row["pp"] = t["mean_tokens_per_s"]
            if t["status"] == "ok" and t["kind"] == "gen": row["tg"] = t["mean_tokens_per_s"]
        m[r["model"]["path"]] = row
    return m

def q(v, p):
    v = sorted(v); k = p * (len(v) - 1); lo = int(k); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)

for calib, target in (("smol", "gemma"), ("gemma", "smol")):
    meas = measured(target)
    preds = decoder(f"{out}/{target}-from-{calib}.jsonl")
    print(f"\n## calibrated on {calib}, predicting {target} (pp512, tg128)\n")
    print("| level | prefill predicted (80%) | measured | ratio | decode predicted (80%) | measured | ratio | memory est. / peak RSS |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    errs = {"pp": [], "tg": []}; inside = {"pp": 0, "tg": 0}; mem = []
    for doc in preds:
        p = doc["levels"][0]["prediction"]
        m = meas[doc["target"]]
        cells = [p["level"]]
        for key, ph in (("pp", "prefill"), ("tg", "decode")):
            e = p[ph]; r = e["tokens_per_s"] / m[key]
            errs[key].append(abs(r - 1)); inside[key] += e["low"] <= m[key] <= e["high"]
            cells += [f"{e['tokens_per_s']:.1f} ({e['low']:.1f}–{e['high']:.1f})", f"{m[key]:.1f}", f"{r:.3f}"]
        if m["rss"]:
            mem.append(p["memory"]["total_bytes"] / m["rss"])
            cells.append(f"{mem[-1]:.2f}")
        else:
            cells.append("-")
        print("| " + " | ".join(cells) + " |")
    n = len(preds)
    for key, ph in (("pp", "prefill"), ("tg", "decode")):
        print(f"\n{ph}: median |pred/meas-1| {100*q(errs[key], .5):.1f}%, p90 {100*q(errs[key], .9):.1f}%, "
              f"inside the 80% interval {inside[key]}/{n}")
    if mem:
        print(f"memory estimate / peak RSS: median {statistics.median(mem):.2f}, min {min(mem):.2f}, max {max(mem):.2f}")
for name in ("smol", "gemma"):
    a = json.load(open(f"{out}/{name}-accuracy.json"))
    print(f"\n`dyno predict --accuracy` over the {name} sweep (each run predicted from the levels before it):")
    for p in a["phases"]:
        print(f"  {p['phase']}: n={p['n']} median {100*p['median_abs_error']:.1f}% p90 {100*p['p90_abs_error']:.1f}% "
              f"inside {100*p['within_interval']:.0f}%")
PY
