#!/usr/bin/env bash
# How often Dyno flags a clean run as disturbed on this machine, and what
# re-measuring the flagged tests changes. Runs N (default 20) benchmarks of
# SmolLM2 back to back with nothing else started, each with
# --retry-disturbed 1, and reports per test: how many results were flagged
# (the false-positive rate when the machine was in fact quiet), the reasons,
# and the flagged figure against its re-measurement.
#
# Usage: scripts/bench/disturbance-fp.sh [N]   (run on an otherwise idle machine)
# Settings: THREADS (2), DYNO_BIN.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
N="${1:-20}"
THREADS="${THREADS:-2}"
bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS" >/dev/null
if [ -z "${DYNO_BIN:-}" ]; then cargo build --release >/dev/null; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"
out="$(mktemp -d)"
for i in $(seq 1 "$N"); do
  "$dyno" --db "$out/dyno.db" bench "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" \
    -p 512 -n 128 -r 5 -t "$THREADS" --retry-disturbed 1 --json >"$out/run-$i.json" 2>/dev/null
done
python3 - "$out" "$N" <<'PY'
import json, sys, collections
out, n = sys.argv[1], int(sys.argv[2])
flags = collections.Counter(); total = collections.Counter(); reasons = collections.Counter()
pairs = []
for i in range(1, n + 1):
    runs = json.load(open(f"{out}/run-{i}.json"))["runs"]
    first = runs[0]
    for r in first["results"]:
        total[r["test"]] += 1
        if r.get("disturbed"):
            flags[r["test"]] += 1
            for why in r["disturbance"]["reasons"]:
                reasons[why.split(" (")[0].split(":")[0][:60]] += 1
            again = [x for run in runs[1:] for x in run["results"] if x["test"] == r["test"]]
            if again:
                pairs.append((r["test"], r["mean_tokens_per_s"], again[0]["mean_tokens_per_s"], again[0].get("disturbed")))
print(f"{n} clean runs of SmolLM2 Q4_1 (pp512, tg128, 5 repetitions each):")
for t in total:
    print(f"  {t}: flagged {flags[t]} of {total[t]} ({100 * flags[t] / total[t]:.0f}%)")
for why, k in reasons.most_common():
    print(f"  reason: {why} ×{k}")
for t, a, b, d in pairs:
    print(f"  re-measured {t}: {a:.1f} → {b:.1f} t/s ({100 * (b / a - 1):+.1f}%){' still disturbed' if d else ''}")
PY
echo "files: $out" >&2
