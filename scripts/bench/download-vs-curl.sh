#!/usr/bin/env bash
# Download throughput of `dyno hub pull` against curl, over loopback, from the
# same fake hub server (tests/fixtures/fake_hub.rs, run as an example binary)
# serving the same file. Both write to the same file system; Dyno also hashes
# the bytes (sha256) as they stream, fsyncs, and lays out the HF cache.
#
# Usage: scripts/bench/download-vs-curl.sh [FILE]   (default: the 253 MB gemma test model)
# Settings: ROUNDS (5).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
ROUNDS="${ROUNDS:-5}"
if [ $# -eq 0 ]; then
  bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS" >/dev/null
  set -- "$DYNO_TEST_MODELS/gemma-3-270m-q4_k_m.gguf"
fi
file=$1
name=$(basename "$file")
size=$(stat -c %s "$file")
cargo build --release --example fake_hub >/dev/null 2>&1
cargo build --release >/dev/null 2>&1
dyno="$CARGO_TARGET_DIR/release/dyno"
work=$(mktemp -d)
"$CARGO_TARGET_DIR/release/examples/fake_hub" bench/model-GGUF "$file" >"$work/url" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(head -n 1 "$work/url")

now() { date +%s%N; }
dyno_ms=(); curl_ms=()
for round in $(seq 1 "$ROUNDS"); do
  rm -rf "$work/hf" "$work/curl.out"
  t0=$(now)
  HF_HOME="$work/hf" HF_ENDPOINT="$url" "$dyno" --db "$work/d.db" hub pull bench/model-GGUF --file "$name" >/dev/null 2>&1
  d=$((($(now) - t0) / 1000000))
  t0=$(now)
  curl -sf -o "$work/curl.out" "$url/bench/model-GGUF/resolve/main/$name"
  c=$((($(now) - t0) / 1000000))
  echo "  round $round: dyno ${d} ms, curl ${c} ms" >&2
  dyno_ms+=("$d"); curl_ms+=("$c")
done
python3 - "$size" "${dyno_ms[*]}" "${curl_ms[*]}" <<'PY'
import statistics, sys
size = int(sys.argv[1])
d = [int(x) / 1e3 for x in sys.argv[2].split()]
c = [int(x) / 1e3 for x in sys.argv[3].split()]
rate = lambda t: size / t / 1e6
print(f"file: {size} bytes ({size / 2**20:.1f} MiB), {len(d)} rounds, dyno then curl each round")
print("| tool | median time (s) | median MB/s |")
print("| ---- | --------------: | ----------: |")
print(f"| dyno hub pull (incl. repo listing, sha256, fsync) | {statistics.median(d):.3f} | {rate(statistics.median(d)):.0f} |")
print(f"| curl -o | {statistics.median(c):.3f} | {rate(statistics.median(c)):.0f} |")
print(f"dyno / curl rate: {statistics.median(c) / statistics.median(d):.2f} (per round: "
      + ", ".join(f"{ci / di:.2f}" for di, ci in zip(d, c)) + ")")
PY
