#!/usr/bin/env bash
# Wall time of a local quantisation sweep, `dyno sweep --from BASE`, against
# the same work done by hand with llama.cpp's own tools built from the same
# source: llama-quantize into each level, then llama-bench on each file.
#
# Both sides quantize from scratch (an empty Dyno cache each round) and run
# pp512 and tg128 with 5 repetitions on THREADS threads; Dyno runs without
# quality and without its extra pp+tg test so the work is the same. The two
# alternate (ABBA) for ROUNDS rounds. Then one more Dyno sweep with quality
# (default 2048 tokens) gives the time quality adds and its peak memory.
#
# Usage: LLAMA_BENCH_SRC=DIR LLAMA_QUANTIZE_SRC=DIR scripts/bench-sweep-vs-manual.sh [BASE.gguf]
#   (default base: the SmolLM2 test model; see scripts/llama-tools.sh)
# Settings: THREADS (2), REPS (5), ROUNDS (2), LEVELS (the default ladder).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

THREADS="${THREADS:-2}"
REPS="${REPS:-5}"
ROUNDS="${ROUNDS:-2}"
LEVELS="${LEVELS:-F16,Q8_0,Q6_K,Q5_K_M,Q4_K_M,Q3_K_M,Q2_K}"

if [ $# -eq 0 ]; then
  bash scripts/fetch-test-models.sh "$DYNO_TEST_MODELS"
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
base=$1

. scripts/llama-tools.sh
llama_bench=$(llama_tool llama-bench)
llama_quantize=$(llama_tool llama-quantize)
cargo build --release >/dev/null
dyno="$CARGO_TARGET_DIR/release/dyno"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/sweep.db"
# Measure the memory bandwidth once, outside the timed sweeps.
"$dyno" --db "$db" hw >/dev/null

now() { date +%s%N; }
# Milliseconds since a now() reading.
since() { echo $((($(now) - $1) / 1000000)); }
run_dyno() {
  rm -rf "$work/cache"
  local t0; t0=$(now)
  DYNO_CACHE_DIR="$work/cache" "$dyno" --db "$db" sweep --from "$base" --levels "$LEVELS" \
    -p 512 -n 128 --pg 0,0 -r "$REPS" -t "$THREADS" --no-quality --fresh >"$work/dyno-$1.txt" 2>/dev/null
  since "$t0"
}
run_manual() {
  rm -rf "$work/manual"; mkdir -p "$work/manual"
  local t0; t0=$(now)
  for level in ${LEVELS//,/ }; do
    "$llama_quantize" --allow-requantize "$base" "$work/manual/$level.gguf" "$level" "$THREADS" >/dev/null 2>&1
    "$llama_bench" -m "$work/manual/$level.gguf" -p 512 -n 128 -r "$REPS" -t "$THREADS" -o json \
      >"$work/manual/$level.json" 2>/dev/null
  done
  since "$t0"
}

echo "base $(basename "$base") · levels $LEVELS · threads $THREADS · reps $REPS · rounds $ROUNDS" >&2
dyno_times=(); manual_times=()
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then
    d=$(run_dyno "$round"); m=$(run_manual)
  else
    m=$(run_manual); d=$(run_dyno "$round")
  fi
  echo "  round $round: dyno ${d} ms, manual ${m} ms" >&2
  dyno_times+=("$d"); manual_times+=("$m")
done

rm -rf "$work/cache"
t0=$(now)
DYNO_CACHE_DIR="$work/cache" "$dyno" --db "$db" sweep --from "$base" --levels "$LEVELS" \
  -p 512 -n 128 --pg 0,0 -r "$REPS" -t "$THREADS" --fresh >"$work/quality.txt" 2>/dev/null
quality_total=$(since "$t0")

python3 - "$db" "$quality_total" "${dyno_times[*]}" "${manual_times[*]}" <<'PY'
import sqlite3, statistics, sys
db, q_total = sys.argv[1], float(sys.argv[2]) / 1e3
dyno = [float(x) / 1e3 for x in sys.argv[3].split()]
manual = [float(x) / 1e3 for x in sys.argv[4].split()]
ratios = [d / m for d, m in zip(dyno, manual)]
con = sqlite3.connect(db)
rows = con.execute("SELECT elapsed_ms, peak_rss_bytes FROM quality ORDER BY id DESC").fetchall()
print("| work | wall time (s) |")
print("| ---- | ------------: |")
print(f"| dyno sweep, no quality (mean of {len(dyno)}) | {statistics.mean(dyno):.1f} |")
print(f"| llama-quantize + llama-bench by hand (mean of {len(manual)}) | {statistics.mean(manual):.1f} |")
print(f"| ratio dyno / manual, per round | {', '.join(f'{r:.3f}' for r in ratios)} (mean {statistics.mean(ratios):.3f}) |")
print(f"| dyno sweep with quality | {q_total:.1f} (quality adds {q_total - statistics.mean(dyno):.1f}, "
      f"{(q_total - statistics.mean(dyno)) / statistics.mean(dyno) * 100:.0f}% of the speed sweep) |")
if rows:
    peak = max(r[1] or 0 for r in rows)
    total_q = sum(r[0] or 0 for r in rows) / 1e3
    print(f"| quality passes ({len(rows)} workers) | {total_q:.1f} s of worker time, peak RSS {peak / 2**20:.0f} MiB |")
PY
