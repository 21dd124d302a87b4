#!/usr/bin/env bash
# How much does the evenness of a mixture's routing move its speed? Trained
# routers are trained towards an even load and never quite reach it; a
# synthetic mixture's routers are drawn, and spread tokens as the draw
# happens to. With no trained mixture among the test models, this bench
# bounds what the difference can do: it writes one synthetic mixture, then
# copies whose routers are balanced (each expert's router row rescaled by
# its load, in a few rounds, until a decode spreads as evenly as chance
# allows) or skewed (each row times exp(SKEW × a normal draw)), counts how
# each copy spreads a decode (`dyno synth --routing`), and times them all
# against the balanced one with llama-bench, alternating
# (scripts/bench/synth-vs-real.sh). A benchmark, never a timed test.
#
#   bash scripts/bench/moe-routing.sh
#   SKEWS="0.5" ROUNDS=4 ARGS="-p 0 -n 128 -r 2 -t 1" bash scripts/bench/moe-routing.sh
#
# Settings (environment): SHAPE (a `dyno synth --shape` of a mixture), TYPE
# (default Q4_K_M), SKEWS (default "0.5 1"), ROUNDS (default 6), ARGS
# (llama-bench's, default "-p 512 -n 128 -r 2 -t 1"), TOKENS (decoded to count
# the routing, default 512).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
build_dyno
dyno="$CARGO_TARGET_DIR/release/dyno"
rows="python3 scripts/bench/lib/router-rows.py"
shape=${SHAPE:-"layers=8,embd=1024,ff=768,heads=16,heads_kv=4,experts=64,experts_used=8"}
tokens=${TOKENS:-512}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

drawn="$work/drawn.gguf"
"$dyno" synth --like "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" --shape "$shape" \
  --type "${TYPE:-Q4_K_M}" -o "$drawn" >&2
balanced="$work/balanced.gguf"
cp "$drawn" "$balanced"
for _ in 1 2 3; do
  "$dyno" synth --routing "$tokens" --json --like "$balanced" > "$work/routing.json"
  $rows "$balanced" balance "$work/routing.json"
done
files=("$drawn")
for skew in ${SKEWS:-0.5 1}; do
  f="$work/skew-$skew.gguf"
  cp "$drawn" "$f"
  $rows "$f" skew "$skew"
  files+=("$f")
done
for f in "$balanced" "${files[@]}"; do
  printf '%s: ' "$(basename "$f" .gguf)"
  "$dyno" synth --routing "$tokens" --like "$f"
done
MODELS="$balanced" EXTRA="${files[*]}" TWIN=0 ROUNDS="${ROUNDS:-6}" \
  ARGS="${ARGS:--p 512 -n 128 -r 2 -t 1}" bash scripts/bench/synth-vs-real.sh
