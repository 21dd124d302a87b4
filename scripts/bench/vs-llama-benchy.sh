#!/usr/bin/env bash
# Compare `dyno serve-bench` with llama-benchy 0.4.0 (PyPI), the reference
# for server benchmarks, on one llama-server and model, and measure Dyno's
# own CPU use as a client at concurrency 8.
#
# Both clients take turns (ABBA) against the same llama-server, ROUNDS times
# each, so drift in the machine hits both alike; each round gives a ratio
# Dyno ÷ llama-benchy for prefill and decode, summarised with a 95%
# confidence interval.
#
# What each calls what (both at concurrency 1, unique prompts, no prompt
# cache, exactly TG tokens generated):
# - prefill: Dyno, prompt tokens ÷ time to the first content token; llama-benchy,
#   prompt tokens ÷ (time to the first response chunk − the mean latency of
#   GET /v1/models). Both take the prompt count from the server's `usage`.
# - decode: Dyno, (tokens − 1) ÷ (end of stream − first content token);
#   llama-benchy, tokens after the first ÷ (last content chunk − first).
# - TTFT: Dyno's is to the first content token, latency included;
#   llama-benchy's e2e_ttft is the same span, its ttfr ends at the first
#   chunk of any kind.
#
# llama-benchy needs a tokenizer and a book from the network; here the
# tokenizer is built from the GGUF's own vocabulary (a GPT-2-style BPE such
# as SmolLM2's) and the book is the bundled Alice text, served on loopback.
#
# Usage: scripts/bench/vs-llama-benchy.sh [MODEL.gguf]   (default: SmolLM2)
# Settings: THREADS (2), PP (256), TG (64), RUNS (8 requests per test),
# ROUNDS (4), PORT (18931), DYNO_BIN, OVERHEAD_REQUESTS (32; 0 skips the
# client-overhead measurement).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh

THREADS="${THREADS:-2}"
PP="${PP:-256}"
TG="${TG:-64}"
RUNS="${RUNS:-8}"
ROUNDS="${ROUNDS:-4}"
PORT="${PORT:-18931}"
OVERHEAD_REQUESTS="${OVERHEAD_REQUESTS:-32}"

if [ $# -eq 0 ]; then
  bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
model="$1"

server=$(bash scripts/lib/llama-server.sh)
if [ -z "${DYNO_BIN:-}" ]; then cargo build --release >/dev/null; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"

venv="${DYNO_TOOLS_DIR:-$HOME/.cache/dyno/tools}/llama-benchy-0.4.0"
if [ ! -x "$venv/bin/llama-benchy" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q llama-benchy==0.4.0 gguf tokenizers
fi

out="$(mktemp -d)"
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
pids=()
trap cleanup EXIT

# A tokenizer.json from the GGUF's vocabulary and merges.
"$venv/bin/python" - "$model" "$out/tokenizer.json" <<'EOF'
import sys
from gguf import GGUFReader
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
r = GGUFReader(sys.argv[1])
def strings(name):
    f = r.fields[name]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
tokens = strings("tokenizer.ggml.tokens")
merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
t = Tokenizer(models.BPE(vocab={s: i for i, s in enumerate(tokens)}, merges=merges))
t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
t.decoder = decoders.ByteLevel()
t.save(sys.argv[2])
EOF

book_port=$((PORT + 1))
(cd data/quality && exec python3 -m http.server "$book_port" --bind 127.0.0.1 >/dev/null 2>&1) &
pids+=($!)
"$server" -m "$model" -t "$THREADS" -c 4096 -np 1 --host 127.0.0.1 --port "$PORT" >"$out/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { echo "llama-server did not start; see $out/server.log" >&2; exit 1; }

echo "model $(basename "$model") · threads $THREADS · pp$PP tg$TG · $RUNS requests per test · $ROUNDS rounds (ABBA)" >&2
run_benchy() {
  HOME="$out/home" "$venv/bin/llama-benchy" --base-url "http://127.0.0.1:$PORT/v1" --model m \
    --tokenizer "$out/tokenizer.json" --book-url "http://127.0.0.1:$book_port/alice.txt" \
    --pp "$PP" --tg "$TG" --runs "$RUNS" --no-cache --exact-tg --skip-coherence \
    --format json --save-result "$out/benchy-$1.json" >"$out/benchy-$1.log" 2>&1
}
run_dyno() {
  "$dyno" --db "$out/dyno.db" serve-bench "http://127.0.0.1:$PORT" -p "$PP" -n "$TG" -r "$RUNS" --json \
    >"$out/dyno-$1.json" 2>"$out/dyno-$1.log"
}
for i in $(seq 1 "$ROUNDS"); do
  if [ $((i % 2)) -eq 1 ]; then run_dyno "$i"; run_benchy "$i"; else run_benchy "$i"; run_dyno "$i"; fi
done

python3 - "$out" "$ROUNDS" <<'EOF'
import json, math, statistics as st, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def benchy(i):
    b = json.load(open(f"{out}/benchy-{i}.json"))["benchmarks"][0]
    return b["pp_throughput"]["mean"], b["tg_throughput"]["mean"], b["e2e_ttft"]["mean"], len(b["e2e_ttft"]["values"])
def dyno(i):
    d = json.load(open(f"{out}/dyno-{i}.json"))
    s = d["results"][0]["summary"]
    return (s["prefill_tokens_per_s"]["mean"], s["decode_tokens_per_s"]["mean"], s["ttft_ms"]["mean"], s["ok"])
rows = [(dyno(i), benchy(i)) for i in range(1, rounds + 1)]
def ci(xs):
    m = st.mean(xs)
    if len(xs) < 2: return m, float("nan")
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36}.get(len(xs) - 1, 2.0)
    return m, t * st.stdev(xs) / math.sqrt(len(xs))
print("| round | dyno pp t/s | benchy pp t/s | dyno tg t/s | benchy tg t/s | dyno TTFT ms | benchy e2e_ttft ms | dyno ok | benchy ok |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for i, (d, b) in enumerate(rows, 1):
    print(f"| {i} | {d[0]:.1f} | {b[0]:.1f} | {d[1]:.1f} | {b[1]:.1f} | {d[2]:.1f} | {b[2]:.1f} | {d[3]} | {b[3]} |")
for k, name in [(0, "prefill"), (1, "decode"), (2, "TTFT")]:
    m, h = ci([d[k] / b[k] for d, b in rows])
    print(f"{name}: dyno / llama-benchy = {m:.4f} ± {h:.4f} (95% CI over {len(rows)} rounds)")
# Pooled over every request of every round: the ratio of the two means with
# a 95% interval from their standard errors (delta method), which a shared
# machine's round-to-round drift does not widen as much as per-round ratios.
def dyno_requests(i):
    out = []
    for s in json.load(open(f"{out_dir}/dyno-{i}.json"))["results"][0]["samples"]:
        if s.get("error_code") or not s.get("ttft_ms"):
            continue
        n = s["completion_tokens"]
        pp = (s["prompt_tokens"] - (s.get("cached_tokens") or 0)) / (s["ttft_ms"] / 1e3)
        tg = (n - 1) / ((s["e2e_ms"] - s["ttft_ms"]) / 1e3)
        out.append((pp, tg))
    return out
def benchy_requests(i):
    b = json.load(open(f"{out_dir}/benchy-{i}.json"))["benchmarks"][0]
    return list(zip(b["pp_throughput"]["values"], b["tg_throughput"]["values"]))
out_dir = out
D = [x for i in range(1, rounds + 1) for x in dyno_requests(i)]
B = [x for i in range(1, rounds + 1) for x in benchy_requests(i)]
for k, name in [(0, "prefill"), (1, "decode")]:
    a, b = [x[k] for x in D], [x[k] for x in B]
    ma, mb = st.mean(a), st.mean(b)
    r = ma / mb
    se = r * math.sqrt((st.stdev(a) / ma) ** 2 / len(a) + (st.stdev(b) / mb) ** 2 / len(b))
    print(f"{name}, pooled: dyno {ma:.1f} t/s over {len(a)} requests, llama-benchy {mb:.1f} t/s over {len(b)}: ratio {r:.4f} ± {1.96 * se:.4f} (95%)")
EOF

if [ "$OVERHEAD_REQUESTS" -gt 0 ]; then
  # Dyno's own CPU as a client at concurrency 8: its user+system time over
  # its wall time, from the kernel's accounting of the whole process.
  python3 - "$dyno" "$out" "$PORT" "$OVERHEAD_REQUESTS" <<'EOF'
import resource, subprocess, sys, time
dyno, out, port, n = sys.argv[1:]
t0 = time.monotonic()
with open(f"{out}/overhead.json", "w") as f:
    subprocess.run([dyno, "--db", f"{out}/dyno.db", "serve-bench", f"http://127.0.0.1:{port}",
                    "-p", "64", "-n", "128", "-c", "8", "-r", n, "--json"],
                   stdout=f, stderr=subprocess.DEVNULL, check=True)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
print(f"client CPU at concurrency 8: {cpu:.2f} s over {wall:.1f} s wall = {100 * cpu / wall:.2f}% of one core")
EOF
fi
echo "files: $out" >&2
