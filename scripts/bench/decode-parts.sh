#!/usr/bin/env bash
# Where Dyno's decode figure parts from llama-bench's: four programs on the
# same decode test, rotated each round so none always runs first:
#   lb     llama-bench (scripts/bench/llama-tools.sh, same llama.cpp source)
#   alone  Dyno's worker with no parent beside it (scripts/bench/lib/worker-alone.py)
#   dyno   `dyno bench` as users run it (telemetry on, each repetition stored)
#   quiet  `dyno bench --no-telemetry` holding its repetitions (DYNO_HOLD_SAMPLES=1)
# and prints each one's per-round ratio to llama-bench with a 95% interval.
# alone ÷ lb is the worker's own difference; dyno ÷ alone what the parent's
# work beside it costs. docs/method.md ("Fidelity") reports a run.
#
# Usage: scripts/bench/decode-parts.sh [MODEL.gguf]   (default: SmolLM2-135M Q4_1)
# Settings: ROUNDS (30), REPS (3), N_GEN (128), THREADS (2), DYNO_BIN.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
ROUNDS="${ROUNDS:-30}"
REPS="${REPS:-3}"
N_GEN="${N_GEN:-128}"
THREADS="${THREADS:-2}"
if [ $# -eq 0 ]; then
  bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
model=$1
. scripts/bench/llama-tools.sh
llama_bench=$(llama_tool llama-bench)
if [ -z "${DYNO_BIN:-}" ]; then cargo build --release >/dev/null; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"
out="$(mktemp -d)"
rates() { python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({x['test']: x['samples_tokens_per_s'] for x in d['runs'][0]['results']}))"; }
run() {
  case $1 in
    lb) "$llama_bench" -m "$model" -p 0 -n "$N_GEN" -r "$REPS" -t "$THREADS" -o json 2>/dev/null \
          | python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'tg'+str(x['n_gen']): x['samples_ts'] for x in d}))" ;;
    alone) python3 scripts/bench/lib/worker-alone.py "$dyno" "$model" "$N_GEN" "$THREADS" "$REPS" ;;
    dyno) "$dyno" --db "$out/d.db" bench "$model" -p 0 -n "$N_GEN" -r "$REPS" -t "$THREADS" --json 2>/dev/null | rates ;;
    quiet) DYNO_HOLD_SAMPLES=1 "$dyno" --db "$out/d.db" bench "$model" -p 0 -n "$N_GEN" -r "$REPS" -t "$THREADS" \
             --no-telemetry --json 2>/dev/null | rates ;;
  esac
}
progs=(lb alone dyno quiet)
echo "$(basename "$model") tg$N_GEN · threads $THREADS · reps $REPS · rounds $ROUNDS" >&2
for r in $(seq 1 "$ROUNDS"); do
  for k in 0 1 2 3; do
    p=${progs[$(( (r + k) % 4 ))]}
    run "$p" >"$out/$p-$r.json"
  done
  echo "  round $r/$ROUNDS" >&2
done
python3 - "$out" "$ROUNDS" "tg$N_GEN" "${progs[@]}" <<'PY'
import json, math, statistics, sys
out, rounds, test, progs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]
d = {p: [statistics.mean(json.load(open(f"{out}/{p}-{r}.json"))[test]) for r in range(1, rounds + 1)] for p in progs}
print(f"| program | {test} t/s (mean of rounds) | ÷ llama-bench (mean of rounds ± 95% CI) | rounds lower |")
print("| --- | ---: | ---: | ---: |")
for p in progs:
    q = [a / b for a, b in zip(d[p], d["lb"])]
    ci = T975[min(len(q) - 2, len(T975) - 1)] * statistics.stdev(q) / math.sqrt(len(q))
    print(f"| {p} | {statistics.mean(d[p]):.2f} | {statistics.mean(q):.4f} ± {ci:.4f} | {sum(x < 1 for x in q)} of {len(q)} |")
PY
echo "raw results: $out" >&2
