#!/usr/bin/env bash
# Dyno against llama-bench through the same RPC server, alternating: one
# `dyno rpc-server` on 127.0.0.1 lending this machine's CPU (RPC_THREADS
# threads), and pp512/tg128 of MODEL measured over it by `dyno bench --rpc`
# and by llama-bench --rpc (linked against Dyno's own libraries and RPC
# module, scripts/lib/llama-server.sh llama-bench-linked), PAIRS pairs with
# the order swapped each pair. Prints Dyno ÷ llama-bench per test with a 95%
# interval, and the same figures without RPC (--ngl 0, same threads) for
# what RPC costs with no network between.
#
#   bash scripts/bench/rpc-vs-llama-bench.sh [MODEL]   (default: SmolLM2)
# Settings: PAIRS (6), REPS (5), THREADS (1: the client's), RPC_THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
model="${1:-$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf}"
pairs="${PAIRS:-6}" reps="${REPS:-5}" t="${THREADS:-1}"
build_dyno
dyno="$CARGO_TARGET_DIR/release/dyno"
lb=$(bash scripts/lib/llama-server.sh llama-bench-linked)
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$dyno" rpc-server --port "$port" -t "${RPC_THREADS:-1}" --json >"$work/server.json" 2>"$work/server.err" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.1; done
ep="127.0.0.1:$port"
for i in $(seq 1 "$pairs"); do
  for mode in rpc local; do
    if [ $mode = rpc ]; then
      d=("$dyno" --db "$work/d.db" bench "$model" -p 512 -n 128 -r "$reps" -t "$t" --rpc "$ep" --json)
      b=("$lb" -m "$model" -p 512 -n 128 -r "$reps" -t "$t" --rpc "$ep" -o json)
    else
      d=("$dyno" --db "$work/d.db" bench "$model" -p 512 -n 128 -r "$reps" -t "$t" --ngl 0 --json)
      b=("$lb" -m "$model" -p 512 -n 128 -r "$reps" -t "$t" -ngl 0 -o json)
    fi
    if [ $((i % 2)) -eq 1 ]; then
      "${d[@]}" >"$work/dyno-$mode-$i.json" 2>/dev/null; "${b[@]}" >"$work/lb-$mode-$i.json" 2>/dev/null
    else
      "${b[@]}" >"$work/lb-$mode-$i.json" 2>/dev/null; "${d[@]}" >"$work/dyno-$mode-$i.json" 2>/dev/null
    fi
    echo "rpc-vs-llama-bench: pair $i $mode done" >&2
  done
done
python3 - "$work" "$pairs" <<'PY'
import json, math, statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}
def ci(v):
    m = statistics.fmean(v)
    h = T95.get(len(v), 2.0) * statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{m:.3f} ± {h:.3f}"
print("| mode | test | Dyno t/s | llama-bench t/s | Dyno ÷ llama-bench (95%) |")
print("|---|---|--:|--:|---|")
for mode in ("rpc", "local"):
    for k, test in enumerate(("pp512", "tg128")):
        d = [json.load(open(f"{work}/dyno-{mode}-{i}.json"))["runs"][0]["results"][k]["mean_tokens_per_s"] for i in range(1, pairs + 1)]
        b = [json.load(open(f"{work}/lb-{mode}-{i}.json"))[k]["avg_ts"] for i in range(1, pairs + 1)]
        print(f"| {'over RPC' if mode == 'rpc' else 'direct'} | {test} | {statistics.fmean(d):.1f} | {statistics.fmean(b):.1f} | {ci([x / y for x, y in zip(d, b)])} |")
PY
