#!/usr/bin/env bash
# Compare Dyno's timings with llama-bench's on the same llama.cpp source,
# model and settings, and print the ratio Dyno / llama-bench.
#
# llama-bench is built by scripts/bench/llama-tools.sh against the llama.cpp source
# Dyno itself compiles. Its own source comes from LLAMA_BENCH_SRC when set (a
# tools/llama-bench folder), else from the llama-cpp-python sdist on PyPI,
# fetched, verified and built once per machine (about 10 minutes the first
# time on 2 cores).
#
# The two programs run alternately (ABBA), ROUNDS times each, so drift in
# the machine (heat, frequency, other load) hits both equally; the ratio is
# taken per round and summarised twice: the mean of the rounds with a 95%
# confidence interval, and the median round with a distribution-free 95%
# interval, which a single stalled round does not move.
#
# Usage: scripts/bench/vs-llama-bench.sh [--short] [MODEL.gguf ...]
#   (default models: the two PyPI test models)
#
# --short is the check to run after any change to the engine, the worker,
# telemetry or the recorder (docs/method.md, "Fidelity"): 6 rounds of 3
# repetitions per model, a few minutes in all. Like the full run it prints
# each ratio with its 95% interval; it then exits 1 when an interval lies
# wholly outside 0.98-1.02 (Dyno more than 2% off llama-bench), and 0 when
# every interval reaches into that band. On a noisy machine the intervals
# are wide and the check passes for want of evidence: it catches a real
# gap, and a full run (more rounds) resolves a small one. TOLERANCE (0.02)
# sets the band.
# Settings: THREADS (2), REPS (5), ROUNDS (8), N_PROMPT (512), N_GEN (128),
# DYNO_FLAGS (extra options for dyno bench, e.g. --no-telemetry), DYNO_BIN (a
# dyno binary to use instead of building one with cargo), LLAMA_BENCH_SRC.
# HOLD_SAMPLES=1 adds a third program to the rotation: dyno holding each
# test's repetitions until the test ends (DYNO_HOLD_SAMPLES=1) instead of
# committing each as it arrives, and prints what holding them changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh

SHORT=0
if [ "${1:-}" = --short ]; then
  SHORT=1
  shift
fi
THREADS="${THREADS:-2}"
if [ "$SHORT" = 1 ]; then
  REPS="${REPS:-3}"
  ROUNDS="${ROUNDS:-6}"
else
  REPS="${REPS:-5}"
  ROUNDS="${ROUNDS:-8}"
fi
TOLERANCE="${TOLERANCE:-0.02}"
N_PROMPT="${N_PROMPT:-512}"
N_GEN="${N_GEN:-128}"
DYNO_FLAGS="${DYNO_FLAGS:-}"

if [ $# -eq 0 ]; then
  bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" "$DYNO_TEST_MODELS/gemma-3-270m-q4_k_m.gguf"
fi

. scripts/bench/llama-tools.sh
llama_bench=$(llama_tool llama-bench)

if [ -z "${DYNO_BIN:-}" ]; then build_dyno; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"
out="$(mktemp -d)"
db="$out/compare.db"

echo "llama-cpp-sys-2 $sys_version · threads $THREADS · reps $REPS · rounds $ROUNDS · pp$N_PROMPT tg$N_GEN" >&2
run_dyno() {
  # shellcheck disable=SC2086 # DYNO_FLAGS is a list of options
  "$dyno" --db "$db" bench "$1" -p "$N_PROMPT" -n "$N_GEN" -r "$REPS" -t "$THREADS" $DYNO_FLAGS --json \
    >"$out/dyno-$(basename "$1")-$2.json" 2>/dev/null
}
run_held() {
  # shellcheck disable=SC2086 # DYNO_FLAGS is a list of options
  DYNO_HOLD_SAMPLES=1 "$dyno" --db "$db" bench "$1" -p "$N_PROMPT" -n "$N_GEN" -r "$REPS" -t "$THREADS" $DYNO_FLAGS --json \
    >"$out/held-$(basename "$1")-$2.json" 2>/dev/null
}
run_lb() {
  "$llama_bench" -m "$1" -p "$N_PROMPT" -n "$N_GEN" -r "$REPS" -t "$THREADS" -o json \
    >"$out/lb-$(basename "$1")-$2.json" 2>/dev/null
}
for model in "$@"; do
  for round in $(seq 1 "$ROUNDS"); do
    echo "  $(basename "$model") round $round/$ROUNDS" >&2
    # The order rotates each round (ABBA for two programs), so no program
    # always gets the first (or warmer) slot.
    progs=(run_dyno run_lb)
    [ "${HOLD_SAMPLES:-0}" = 1 ] && progs+=(run_held)
    n=${#progs[@]}
    for k in $(seq 0 $((n - 1))); do
      if [ "$n" = 2 ]; then i=$(( (round + k + 1) % 2 )); else i=$(( (round + k) % n )); fi
      "${progs[$i]}" "$model" "$round"
    done
  done
done

status=0
python3 - "$out" "$ROUNDS" "${HOLD_SAMPLES:-0}" "$TOLERANCE" "$@" <<'PY' || status=$?
# The machine's speed drifts between rounds (frequency, neighbours on a
# shared host), so compare each round's pair of means and summarise the
# per-round ratios, rather than pooling samples from different rounds.
import json, math, os, statistics, sys
out, rounds, held, tol, models = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", float(sys.argv[4]), sys.argv[5:]
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]
print("| model | test | dyno t/s | llama-bench t/s | dyno / llama-bench (mean of rounds ± 95% CI) | median of rounds [95% CI] | per-round range | rounds |")
print("| ----- | ---- | -------: | --------------: | -------------------------------------------: | ------------------------: | --------------: | -----: |")
def dyno_rates(path):
    return {x["test"]: x["samples_tokens_per_s"] for x in json.load(open(path))["runs"][0]["results"]}

def interval(q):
    ci = T975[min(len(q) - 2, len(T975) - 1)] * statistics.stdev(q) / math.sqrt(len(q)) if len(q) > 1 else float("nan")
    return statistics.mean(q), ci

def median_interval(q):
    # Distribution-free: the order statistics whose ranks the binomial
    # (n, 1/2) puts 2.5% outside on each side. This host switches between
    # two speeds and now and then stalls one program for a round, which
    # pulls the mean of ratios; the median keeps to the typical round.
    n, x = len(q), sorted(q)
    k = 0
    while sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= 0.025:
        k += 1
    med = statistics.median(x)
    return (med, x[k - 1], x[n - k]) if k >= 1 else (med, float("nan"), float("nan"))

def summary(q, with_median=False):
    m, ci = interval(q)
    med = ""
    if with_median:
        md, lo, hi = median_interval(q)
        med = f" {md:.4f} [{lo:.3f}, {hi:.3f}] |"
    return f"{m:.4f} ± {ci:.4f} |{med} {min(q):.3f} – {max(q):.3f} | {len(q)}"

# A ratio is off when its whole interval lies outside 1 ± tol.
off = []

costs = []
for m in models:
    name = os.path.basename(m)
    ratios, dy_all, lb_all, held_ratios = {}, {}, {}, {}
    for r in range(1, rounds + 1):
        dy = dyno_rates(f"{out}/dyno-{name}-{r}.json")
        lb = {(f"pp{x['n_prompt']}" if x["n_gen"] == 0 else f"tg{x['n_gen']}"): x["samples_ts"]
              for x in json.load(open(f"{out}/lb-{name}-{r}.json"))}
        for test in dy.keys() & lb.keys():
            ratios.setdefault(test, []).append(statistics.mean(dy[test]) / statistics.mean(lb[test]))
            dy_all.setdefault(test, []).extend(dy[test])
            lb_all.setdefault(test, []).extend(lb[test])
        if held:
            hd = dyno_rates(f"{out}/held-{name}-{r}.json")
            for test in dy.keys() & hd.keys():
                held_ratios.setdefault(test, []).append(statistics.mean(hd[test]) / statistics.mean(dy[test]))
    for test in sorted(ratios, key=lambda t: (t[:2] != "pp", t)):
        print(f"| {name} | {test} | {statistics.mean(dy_all[test]):.2f} | {statistics.mean(lb_all[test]):.2f} | {summary(ratios[test], True)} |")
        m, ci = interval(ratios[test])
        if m - ci > 1 + tol or m + ci < 1 - tol:
            off.append(f"{name} {test}: {m:.3f} ± {ci:.3f}")
    for test in sorted(held_ratios, key=lambda t: (t[:2] != "pp", t)):
        costs.append(f"| {name} | {test} | {summary(held_ratios[test])} |")
if costs:
    print()
    print("Holding each test's repetitions until it ends, against committing each as it arrives (the default): t/s ratio")
    print()
    print("| model | test | held / each (mean of rounds ± 95% CI) | per-round range | rounds |")
    print("| ----- | ---- | ---------------------------------------------: | --------------: | -----: |")
    print("\n".join(costs))
print()
if off:
    print(f"OFF: Dyno differs from llama-bench by more than {tol:.0%} (the whole interval is outside): " + "; ".join(off))
    sys.exit(1)
print(f"ok: every interval reaches within {tol:.0%} of llama-bench")
PY
echo "raw results (JSON per program, model and round): $out" >&2
exit "$status"
