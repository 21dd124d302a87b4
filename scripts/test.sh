#!/usr/bin/env bash
# The test suite: the UI's type check and unit tests, Rust unit tests,
# integration tests that run the real dyno binary through real llama.cpp on
# the PyPI test models, and the end-to-end test of the real desktop app.
# Everything is built in release and for the whole workspace, so llama.cpp is
# compiled once (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/fetch-test-models.sh "$DYNO_TEST_MODELS"
# The app embeds the built UI, so the UI is built before any cargo step.
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run check && npm test && npm run build)
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -- -D warnings
cargo test --release --workspace
bash scripts/e2e.sh
