#!/usr/bin/env bash
# What the telemetry sampler costs: the same benchmark with the sampler on
# and off (--no-telemetry), alternating ABBA, ROUNDS times, and the ratio
# on/off of each round's mean, summarised with a 95% confidence interval.
#
# Usage: scripts/bench/telemetry-overhead.sh [MODEL.gguf]   (default: SmolLM2-135M)
# Settings: THREADS (2), REPS (5), ROUNDS (6), N_PROMPT (512), N_GEN (128).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
THREADS="${THREADS:-2}"; REPS="${REPS:-5}"; ROUNDS="${ROUNDS:-6}"
N_PROMPT="${N_PROMPT:-512}"; N_GEN="${N_GEN:-128}"
if [ $# -eq 0 ]; then
  bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
cargo build --release >/dev/null
dyno="$CARGO_TARGET_DIR/release/dyno"
out="$(mktemp -d)"
run() { # $1: on|off, $2: round
  local flag=""; [ "$1" = off ] && flag="--no-telemetry"
  "$dyno" --db "$out/overhead.db" bench "$MODEL" -p "$N_PROMPT" -n "$N_GEN" -r "$REPS" -t "$THREADS" \
    $flag --json >"$out/$1-$2.json" 2>/dev/null
}
MODEL="$1"
"$dyno" --db "$out/overhead.db" hw >/dev/null # measure the bandwidth outside the rounds
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round/$ROUNDS" >&2
  if [ $((round % 2)) = 1 ]; then run on "$round"; run off "$round"; else run off "$round"; run on "$round"; fi
done
python3 - "$out" "$ROUNDS" <<'PY'
import json, math, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145]
def means(path):
    return {r["test"]: r["mean_tokens_per_s"] for r in json.load(open(path))["runs"][0]["results"]}
ratios = {}
for i in range(1, rounds + 1):
    on, off = means(f"{out}/on-{i}.json"), means(f"{out}/off-{i}.json")
    for t in on:
        ratios.setdefault(t, []).append(on[t] / off[t])
print("| test | telemetry on / off (mean of rounds ± 95% CI) | rounds |")
print("| ---- | -------------------------------------------: | -----: |")
for t, q in ratios.items():
    ci = T975[min(len(q) - 2, len(T975) - 1)] * statistics.stdev(q) / math.sqrt(len(q)) if len(q) > 1 else float("nan")
    print(f"| {t} | {statistics.mean(q):.4f} ± {ci:.4f} | {len(q)} |")
PY
