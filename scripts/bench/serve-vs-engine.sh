#!/usr/bin/env bash
# What a server costs over the engine underneath it, for each test model:
# starts llama-server (built against the llama.cpp Dyno compiles) on the
# model, runs `dyno serve-bench --engine` with the same plan, and prints the
# server ÷ engine ratios for prefill, decode and TTFT at concurrency 1.
#
# Usage: scripts/bench/serve-vs-engine.sh [MODEL.gguf ...]   (default: both test models)
# Settings: THREADS (2), PP (128), TG (32), RUNS (8 requests), PORT (18941), DYNO_BIN.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
THREADS="${THREADS:-2}"
PP="${PP:-128}"
TG="${TG:-32}"
RUNS="${RUNS:-8}"
PORT="${PORT:-18941}"
if [ $# -eq 0 ]; then
  bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS" >/dev/null
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" "$DYNO_TEST_MODELS/gemma-3-270m-q4_k_m.gguf"
fi
server=$(bash scripts/lib/llama-server.sh)
if [ -z "${DYNO_BIN:-}" ]; then build_dyno; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"
out="$(mktemp -d)"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true' EXIT
for model in "$@"; do
  name=$(basename "$model" .gguf)
  "$server" -m "$model" -t "$THREADS" -c 4096 -np 1 --host 127.0.0.1 --port "$PORT" >"$out/$name.server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    sleep 0.5
  done
  "$dyno" --db "$out/dyno.db" serve-bench "http://127.0.0.1:$PORT" -p "$PP" -n "$TG" -c 1 -r "$RUNS" \
    --engine "$model" --engine-threads "$THREADS" --json >"$out/$name.json" 2>"$out/$name.log"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  python3 - "$out/$name.json" "$name" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def f(v, fmt):
    return "-" if v is None else format(v, fmt)
for r in d.get("engine_comparison") or []:
    print(f"{sys.argv[2]} {r['test']}: prefill {f(r['server_prefill_tokens_per_s'], '.1f')} / {f(r['engine_prefill_tokens_per_s'], '.1f')} t/s = {f(r['prefill_ratio'], '.3f')}; "
          f"decode {f(r['server_decode_tokens_per_s'], '.1f')} / {f(r['engine_decode_tokens_per_s'], '.1f')} t/s = {f(r['decode_ratio'], '.3f')}; "
          f"TTFT {f(r['server_ttft_ms'], '.1f')} / {f(r['engine_ttft_ms'], '.1f')} ms = {f(r['ttft_ratio'], '.3f')} (server ÷ engine)")
PY
done
echo "files: $out" >&2
