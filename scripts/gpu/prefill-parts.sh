#!/usr/bin/env bash
# Prefill on a GPU, part by part. The GPU check (check.sh) found Dyno's pp512
# under llama-bench's on CUDA while tg128 agreed within 1%. This rotates
# three programs over the same synthetic 1B and 8B files, pp512 only:
# llama-bench, `dyno bench`, and `dyno bench --no-telemetry` (no NVML or
# /proc sampling in the parent while the worker times), the order turned
# each round, and prints each one's rate against llama-bench per round, with
# the first repetition apart from the rest.
#
# Usage: bash prefill-parts.sh [KIT_DIR]   (from the kit: scripts/gpu/kit.sh)
# Settings: OUT, ROUNDS (5), REPS (10).
set -uo pipefail
kit=$(cd "${1:-$(dirname "$0")}" && pwd)
out="${OUT:-$PWD/prefill-out}"
mkdir -p "$out/raw"
export DYNO_BACKEND_DIR="$kit" LD_LIBRARY_PATH="$kit${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DYNO_DB="$out/raw/dyno.db"
dir="${CHECK_SYNTH_DIR:-${TMPDIR:-/tmp}/dyno-check-shapes}"
mkdir -p "$dir"
rounds="${ROUNDS:-5}" reps="${REPS:-10}"
dev=none ngl=0
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && dev=CUDA0 ngl=99
shapes="${SHAPES:-llama-3.2-1b llama-3.1-8b}"
for s in $shapes; do
  f="$dir/synthetic-$s-Q4_0.gguf"
  [ -e "$f" ] || "$kit/dyno" synth --like "$(ls "$kit"/templates/*.gguf-header | head -n 1)" --shape "$s" --type Q4_0 -o "$f" --force >/dev/null
done
run() {
  local who=$1 s=$2 i=$3 f="$dir/synthetic-$2-Q4_0.gguf"
  case $who in
    lb) "$kit/llama-bench" -m "$f" -p 512 -n "${N_GEN:-0}" -r "$reps" -ngl "$ngl" -dev "$dev" -o json ;;
    dyno) "$kit/dyno" bench "$f" -p 512 -n "${N_GEN:-0}" -r "$reps" --ngl "$ngl" --device "$dev" --json ;;
    quiet) "$kit/dyno" bench "$f" -p 512 -n "${N_GEN:-0}" -r "$reps" --ngl "$ngl" --device "$dev" --no-telemetry --json ;;
  esac >"$out/raw/$who-$s-$i.json" 2>"$out/raw/$who-$s-$i.err" || echo "$who $s $i failed" >&2
}
for i in $(seq 1 "$rounds"); do
  case $((i % 3)) in 0) order="lb dyno quiet" ;; 1) order="dyno quiet lb" ;; 2) order="quiet lb dyno" ;; esac
  for s in $shapes; do for who in $order; do run "$who" "$s" "$i"; done; done
  echo "round $i of $rounds done" >&2
done
python3 - "$out" $shapes <<'PY' | tee "$out/prefill.md"
import json, math, statistics, sys, glob, os
out, shapes = sys.argv[1], sys.argv[2:]
def samples(path):
    try: d = json.load(open(path))
    except Exception: return None
    if isinstance(d, list):
        return [r["samples_ts"] for r in d if r.get("n_prompt") == 512][0]
    return [r["samples_tokens_per_s"] for r in d["runs"][0]["results"] if r["test"] == "pp512"][0]
def iv(xs):
    m = statistics.fmean(xs)
    h = 2 * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")
    return f"{m:.3f} ± {h:.3f} (n={len(xs)})"
print("| model | program | mean t/s | first rep | rest, mean | ÷ llama-bench (all) | ÷ llama-bench (rest) |")
print("|---|---|--:|--:|--:|---|---|")
for s in shapes:
    for who in ("lb", "dyno", "quiet"):
        allr, restr, means, firsts, rests = [], [], [], [], []
        for p in sorted(glob.glob(f"{out}/raw/{who}-{s}-*.json")):
            x = samples(p); b = samples(p.replace(f"/{who}-", "/lb-"))
            if not x or not b: continue
            means.append(statistics.fmean(x)); firsts.append(x[0]); rests.append(statistics.fmean(x[1:]))
            allr.append(statistics.fmean(x) / statistics.fmean(b)); restr.append(statistics.fmean(x[1:]) / statistics.fmean(b[1:]))
        if means:
            print(f"| {s} | {who} | {statistics.fmean(means):.0f} | {statistics.fmean(firsts):.0f} | {statistics.fmean(rests):.0f} | {iv(allr)} | {iv(restr)} |")
PY
