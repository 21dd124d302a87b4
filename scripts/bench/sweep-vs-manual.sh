#!/usr/bin/env bash
# `dyno sweep --from BASE` against the same work done by hand with llama.cpp's
# own tools, built by scripts/bench/llama-tools.sh from the llama.cpp source Dyno
# compiles (their own sources come from LLAMA_BENCH_SRC, LLAMA_QUANTIZE_SRC
# and LLAMA_PERPLEXITY_SRC when set, else from the llama-cpp-python sdist on
# PyPI, fetched and built once per machine). Two checks:
#
# Speed. Wall time of the sweep against llama-quantize into each level, then
# llama-bench on each file. Both sides quantize from scratch (an empty Dyno
# cache each round) and run pp512 and tg128 with REPS repetitions on THREADS
# threads; Dyno runs without quality and without its extra pp+tg test so the
# work is the same. The two alternate (ABBA) for ROUNDS rounds. Then one more
# Dyno sweep with quality gives the time quality adds and its peak memory.
#
# Quality. That last sweep's perplexity, KL divergence, its 99th percentile
# and top-1 agreement per level, against `llama-perplexity
# --kl-divergence-base` on BASE then `--kl-divergence` on each level. Like for
# like: the same text (data/quality/alice.txt, the file Dyno embeds), the
# same first QUALITY_TOKENS tokens cut into chunks of 512, each evaluated from
# an empty cache with BOS first and its second half scored; the same
# reference (BASE: a --from sweep measures every level against its input);
# the same level files (the ones Dyno's sweep quantized); the same threads
# and f16 KV cache; one chunk at a time (-b 512). The script checks that both
# saw the same tokens (a hash of llama-perplexity's tokens against the one in
# Dyno's reference file). What still differs, by design of each tool:
#  - Dyno keeps the reference's top QUALITY_TOPK log-probabilities per
#    position plus one bin for the rest, so its KLD is a lower bound of the
#    exact one (QUALITY_TOPK=0 keeps the whole vocabulary: exact).
#    llama-perplexity keeps every token within 16 nats of the most likely,
#    each rounded to 16 bits, and drops the terms below.
#  - Dyno decodes a chunk's unscored first half in one batch and the scored
#    half in batches of 64; llama-perplexity decodes all 512 in one batch.
#    Different batch shapes take different matrix kernels, so logits differ
#    in their last bits.
#  - Top-1: llama-perplexity takes the reference's argmax from its rounded
#    log-probabilities, Dyno from the exact ones.
#
# Usage: scripts/bench/sweep-vs-manual.sh [BASE.gguf]
#   (default base: the SmolLM2 test model)
# Settings: THREADS (2), REPS (5), ROUNDS (2; 0 runs the quality check only),
# LEVELS (the default ladder), QUALITY_TOKENS (2048), QUALITY_TOPK (1024,
# Dyno's default; 0 for the exact KLD), DYNO_BIN (a dyno binary to use instead
# of building one with cargo).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh

THREADS="${THREADS:-2}"
REPS="${REPS:-5}"
ROUNDS="${ROUNDS:-2}"
LEVELS="${LEVELS:-F16,Q8_0,Q6_K,Q5_K_M,Q4_K_M,Q3_K_M,Q2_K}"
QUALITY_TOKENS="${QUALITY_TOKENS:-2048}"
QUALITY_TOPK="${QUALITY_TOPK:-1024}"

if [ $# -eq 0 ]; then
  bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
base=$1

. scripts/bench/llama-tools.sh
llama_bench=$(llama_tool llama-bench)
llama_quantize=$(llama_tool llama-quantize)
llama_perplexity=$(llama_tool llama-perplexity)
if [ -z "${DYNO_BIN:-}" ]; then cargo build --release >/dev/null; fi
dyno="${DYNO_BIN:-$CARGO_TARGET_DIR/release/dyno}"
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

echo "  dyno sweep with quality ($QUALITY_TOKENS tokens, top-k $QUALITY_TOPK)" >&2
rm -rf "$work/cache"
t0=$(now)
DYNO_CACHE_DIR="$work/cache" "$dyno" --db "$db" sweep --from "$base" --levels "$LEVELS" \
  -p 512 -n 128 --pg 0,0 -r "$REPS" -t "$THREADS" --fresh \
  --quality-tokens "$QUALITY_TOKENS" --quality-topk "$QUALITY_TOPK" >"$work/quality.txt" 2>"$work/quality.err" \
  || { tail -n 20 "$work/quality.err" >&2; echo "the dyno sweep with quality failed" >&2; exit 1; }
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
if dyno:
    print(f"| dyno sweep, no quality (mean of {len(dyno)}) | {statistics.mean(dyno):.1f} |")
    print(f"| llama-quantize + llama-bench by hand (mean of {len(manual)}) | {statistics.mean(manual):.1f} |")
    print(f"| ratio dyno / manual, per round | {', '.join(f'{r:.3f}' for r in ratios)} (mean {statistics.mean(ratios):.3f}) |")
    print(f"| dyno sweep with quality | {q_total:.1f} (quality adds {q_total - statistics.mean(dyno):.1f}, "
          f"{(q_total - statistics.mean(dyno)) / statistics.mean(dyno) * 100:.0f}% of the speed sweep) |")
else:
    print(f"| dyno sweep with quality (no speed rounds to compare) | {q_total:.1f} |")
if rows:
    peak = max(r[1] or 0 for r in rows)
    total_q = sum(r[0] or 0 for r in rows) / 1e3
    print(f"| quality passes ({len(rows)} workers) | {total_q:.1f} s of worker time, peak RSS {peak / 2**20:.0f} MiB |")
PY

echo "  llama-perplexity on the same text, reference and level files" >&2
python3 - "$db" "$base" "$llama_perplexity" "$THREADS" "$QUALITY_TOKENS" "$QUALITY_TOPK" "$work" <<'PY'
# Runs llama-perplexity on the reference, then each level Dyno's sweep made,
# and prints both tools' figures side by side.
import glob, os, re, sqlite3, struct, subprocess, sys
db, base, lp, threads, tokens, topk, work = sys.argv[1:8]
chunk = 512
n_chunks = max(1, -(-int(tokens) // chunk))
con = sqlite3.connect(db)
sweep_id, ref_sha = con.execute(
    "SELECT id, reference_sha256 FROM sweeps WHERE reference_sha256 IS NOT NULL ORDER BY id DESC LIMIT 1").fetchone()
def dyno_quality(sha):
    return con.execute(
        "SELECT ppl, kld_mean, kld_p99, top1_agreement, n_positions FROM quality WHERE model_sha256 = ? "
        "AND reference_sha256 = ? AND n_chunks = ? AND topk = ?", (sha, ref_sha, n_chunks, int(topk))).fetchone()
levels = con.execute(
    "SELECT sl.level, sl.path, m.sha256 FROM sweep_levels sl JOIN models m ON m.id = sl.model_id "
    "WHERE sl.sweep_id = ? AND sl.status = 'ok' ORDER BY sl.position", (sweep_id,)).fetchall()

kld_base = os.path.join(work, "reference.kld")
def run(args, log):
    with open(log, "w") as f:
        r = subprocess.run([lp, "-c", str(chunk), "-b", str(chunk), "-t", threads, "--chunks", str(n_chunks)] + args,
                           stdout=f, stderr=subprocess.STDOUT)
    text = open(log).read()
    if r.returncode != 0:
        sys.exit(f"llama-perplexity failed ({' '.join(args)}); its output:\n{text[-3000:]}")
    return text
def num(pattern, text):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else float("nan")

text = run(["-m", base, "-f", "data/quality/alice.txt", "--kl-divergence-base", kld_base], os.path.join(work, "lp-reference.log"))
lp_ref_ppl = num(r"Final estimate: PPL = ([0-9.]+)", text)

# Same tokens? Dyno hashes (FNV-1a) its token ids after setting each chunk's
# first to BOS (when the model adds one); llama-perplexity's file holds the
# ids as tokenized, BOS only at the very start.
def fnv(ids):
    h = 0xcbf29ce484222325
    for t in ids:
        for b in struct.pack("<i", t):
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
with open(kld_base, "rb") as f:
    magic, n_ctx, n_vocab, n_chunk = struct.unpack("<8sIii", f.read(20))
    ids = list(struct.unpack(f"<{n_ctx * n_chunk}i", f.read(4 * n_ctx * n_chunk)))
with_bos = [ids[0] if i % n_ctx == 0 else t for i, t in enumerate(ids)]
ref_files = glob.glob(os.path.join(work, "cache", "quality", f"{ref_sha}-*.ref"))
if ref_files:
    with open(ref_files[0], "rb") as f:
        dyno_hash = struct.unpack("<8sIIIQ", f.read(28))[4]
    same = dyno_hash in (fnv(ids), fnv(with_bos))
    print(f"\ntokens: {n_chunk} chunks × {n_ctx}, n_vocab {n_vocab}; "
          f"{'the same ids on both sides' if same else 'DIFFERENT ids: the figures below do not compare'}")
else:
    print("\ntokens: no Dyno reference file found, so the token ids were not compared")

print()
print("| level | PPL dyno | PPL llama-perplexity | ratio | KLD dyno | KLD llama-perplexity | ratio "
      "| KLD p99 dyno | KLD p99 llama-perplexity | top-1 dyno | top-1 llama-perplexity |")
print("| ----- | -------: | -------------------: | ----: | -------: | -------------------: | ----: "
      "| -----------: | -----------------------: | ---------: | ---------------------: |")
ref = dyno_quality(ref_sha)
if ref:
    print(f"| {os.path.basename(base)} (reference) | {ref[0]:.4f} | {lp_ref_ppl:.4f} | {ref[0] / lp_ref_ppl:.4f} "
          "| – | – | – | – | – | – | – |")
for level, path, sha in levels:
    if sha == ref_sha:
        continue
    d = dyno_quality(sha)
    t = run(["-m", path, "--kl-divergence-base", kld_base, "--kl-divergence"], os.path.join(work, f"lp-{level}.log"))
    ppl = num(r"Mean PPL\(Q\)\s*:\s*([0-9.]+)", t)
    kld = num(r"Mean\s+KLD:\s*([0-9.]+)", t)
    p99 = num(r"99\.0%\s+KLD:\s*([0-9.]+)", t)
    top = num(r"Same top p:\s*([0-9.]+)", t) / 100
    if d is None:
        print(f"| {level} | – | {ppl:.4f} | – | – | {kld:.6f} | – | – | {p99:.6f} | – | {top:.4f} |")
        continue
    print(f"| {level} | {d[0]:.4f} | {ppl:.4f} | {d[0] / ppl:.4f} | {d[1]:.6f} | {kld:.6f} | "
          f"{d[1] / kld if kld else float('nan'):.4f} | {d[2]:.6f} | {p99:.6f} | {d[3]:.4f} | {top:.4f} |", flush=True)
PY
