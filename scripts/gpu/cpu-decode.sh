#!/usr/bin/env bash
# Decode on the CPU of a many-core machine, part by part. The GPU check on
# an H100 machine (16 cores) found Dyno's CPU tg128 well under llama-bench's
# (0.72, one pair), where on 2 cores they agree. This rotates processes a
# round over the same synthetic file, --ngl 0, tg128 only: llama-bench and
# Dyno at every core's thread, Dyno without telemetry (no sampling in the
# parent while the worker times), Dyno with one part of the sampler's
# reading left out each (DYNO_TELEMETRY_SKIP: the GPU's NVML calls, the
# temperatures, the CPU's use and clocks), and both at one thread fewer
# than the cores, so the parent has a core of its own. It prints each one's
# mean and its rate against llama-bench at all cores, round by round, and
# the sampler's own cost per reading, part by part, from Dyno's log.
#
# Usage: bash cpu-decode.sh [KIT_DIR]   (from the kit: scripts/gpu/kit.sh)
# Settings: OUT, ROUNDS (4), REPS (3), SHAPE (llama-3.2-1b), TYPE (Q4_K_M).
set -uo pipefail
kit=$(cd "${1:-$(dirname "$0")}" && pwd)
out="${OUT:-$PWD/cpu-decode-out}"
mkdir -p "$out/raw"
export DYNO_BACKEND_DIR="$kit" LD_LIBRARY_PATH="$kit${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DYNO_DB="$out/raw/dyno.db"
dir="${CHECK_SYNTH_DIR:-${TMPDIR:-/tmp}/dyno-check-shapes}"
mkdir -p "$dir"
shape="${SHAPE:-llama-3.2-1b}" type="${TYPE:-Q4_K_M}"
f="$dir/synthetic-$shape-$type.gguf"
[ -e "$f" ] || "$kit/dyno" synth --like "$(ls "$kit"/templates/*.gguf-header | head -n 1)" --shape "$shape" --type "$type" -o "$f" --force >/dev/null
n=$(nproc)
rounds="${ROUNDS:-4}" reps="${REPS:-3}"
run() {
  local who=$1 i=$2 t=$n
  case $who in *-less) t=$((n - 1)) ;; esac
  case $who in
    lb*) "$kit/llama-bench" -m "$f" -p 0 -n 128 -r "$reps" -t "$t" -ngl 0 -dev none -o json ;;
    quiet) "$kit/dyno" bench "$f" -p 0 -n 128 -r "$reps" -t "$t" --ngl 0 --device none --no-telemetry --json ;;
    no-*) DYNO_LOG=dyno=debug DYNO_TELEMETRY_SKIP=${who#no-} "$kit/dyno" bench "$f" -p 0 -n 128 -r "$reps" -t "$t" --ngl 0 --device none --json ;;
    dyno*) DYNO_LOG=dyno=debug "$kit/dyno" bench "$f" -p 0 -n 128 -r "$reps" -t "$t" --ngl 0 --device none --json ;;
  esac >"$out/raw/$who-$i.json" 2>"$out/raw/$who-$i.err" || echo "$who $i failed" >&2
}
progs=(${PROGS:-lb dyno quiet no-gpu no-temperature no-cpu lb-less dyno-less})
np=${#progs[@]}
for i in $(seq 1 "$rounds"); do
  # Turn the order each round, so no program always follows another.
  for k in $(seq 0 $((np - 1))); do run "${progs[$(((k + i) % np))]}" "$i"; done
  echo "round $i of $rounds done" >&2
done
python3 - "$out" "$n" <<'PY' | tee "$out/cpu-decode.md"
import glob, json, math, os, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def rate(path):
    try: d = json.load(open(path))
    except Exception: return None
    if isinstance(d, list):
        return next((r["avg_ts"] for r in d if r.get("n_gen") == 128), None)
    for r in d["runs"][0]["results"]:
        if r["test"] == "tg128" and r.get("mean_tokens_per_s"):
            return r["mean_tokens_per_s"]
def iv(xs):
    if len(xs) < 2: return f"{xs[0]:.3f} (n=1)" if xs else "-"
    m = statistics.fmean(xs); h = 2 * statistics.stdev(xs) / math.sqrt(len(xs))
    return f"{m:.3f} ± {h:.3f} (n={len(xs)})"
names = {"lb": f"llama-bench -t {n}", "dyno": f"Dyno -t {n}", "quiet": f"Dyno -t {n} --no-telemetry",
         "no-gpu": f"Dyno -t {n}, no NVML readings", "no-temperature": f"Dyno -t {n}, no temperatures",
         "no-cpu": f"Dyno -t {n}, no CPU use or clocks",
         "lb-less": f"llama-bench -t {n-1}", "dyno-less": f"Dyno -t {n-1}"}
print(f"| process | tg128 t/s, mean of rounds | ÷ llama-bench -t {n}, per round |")
print("|---|--:|---|")
for who, name in names.items():
    xs, rs = [], []
    for p in sorted(glob.glob(f"{out}/raw/{who}-[0-9]*.json")):
        x = rate(p); b = rate(p.replace(f"/{who}-", "/lb-"))
        if x: xs.append(x)
        if x and b: rs.append(x / b)
    if xs: print(f"| {name} | {statistics.fmean(xs):.1f} | {iv(rs)} |")
print()
print("The sampler's cost per reading (ms), from Dyno's log:")
import re
for p in sorted(glob.glob(f"{out}/raw/dyno-[0-9]*.err")) + sorted(glob.glob(f"{out}/raw/no-*.err")):
    for line in open(p, errors="replace"):
        m = re.search(r"telemetry sampler: (.*)", line)
        if m: print(f"- {os.path.basename(p)}: {m.group(1)}")
PY
