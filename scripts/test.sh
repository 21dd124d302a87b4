#!/usr/bin/env bash
# The test suite: the UI's type check and unit tests, Rust unit tests,
# integration tests that run the real dyno binary through real llama.cpp on
# the PyPI test models, and the end-to-end test of the real desktop app.
# Everything is built in release and for the whole workspace, so llama.cpp is
# compiled once (see docs/development.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/env.sh
# Each step's start, in seconds since the suite began: where CI's time goes.
step() { echo "test: [$SECONDS s] $*" >&2; }
# llama.cpp's tool sources (the llama-cpp-python sdist, 77 MB, and pip's
# build back end to read its metadata) are only downloading: fetched while
# the UI and clippy steps compile, instead of holding up the llama-server
# step (108 s on a fresh machine). Its output is kept for that step, which
# fetches again, and says why, if this failed.
prefetch_log=$(mktemp)
bash scripts/bench/fetch-llama-tools-src.sh >"$prefetch_log" 2>&1 &
prefetch=$!
# tauri-driver for the end-to-end step, compiled (about 30 s on 2 cores) while
# the models download and the UI's steps leave a core idle, at low priority.
driver_log=$(mktemp)
nice -n 10 bash scripts/lib/tauri-driver.sh >"$driver_log" 2>&1 &
driver=$!
step "test models"
bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
# A private PostgreSQL for the team-store tests (tests/it/team.rs) and the
# app's Team journey: its own port and data folder, TLS and a password
# required, stopped when the tests end.
pg_dir=$(mktemp -d)
eval "$(bash scripts/lib/postgres.sh start "$pg_dir")"
trap 'bash scripts/lib/postgres.sh stop "$pg_dir"; rm -rf "$pg_dir" "$prefetch_log" "$driver_log"' EXIT
# The app embeds the built UI, so the UI is built before any cargo step.
step "UI: install, check, unit tests, build"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run check && npm test && npm run build)
step "fmt and clippy"
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -- -D warnings
# The release workflow cannot run here; its form is checked.
bash scripts/test/lint-workflows.sh
# A real llama-server for the server-benchmark tests (tests/it/serve_llama.rs)
# and the app's Servers journey, built once per machine against the llama.cpp
# libraries the clippy step just built (so after it: only the server and
# libmtmd are compiled, about 3 minutes the first time).
step "llama-server"
wait "$prefetch" || { echo "test: fetching llama.cpp's tool sources in the background failed:" >&2; cat "$prefetch_log" >&2; }
DYNO_LLAMA_SERVER=$(bash scripts/lib/llama-server.sh)
export DYNO_LLAMA_SERVER
# Every target (the app's binary and the fake hub example the end-to-end
# test runs included) with the features `cargo build --release --workspace`
# resolves, so the end-to-end test, the GPU kit's check and a demo after
# the tests compile nothing more. No doc tests: there are none.
step "cargo test (unit, quiet, it)"
cargo test --release --workspace --all-targets
step "end-to-end"
wait "$driver" || { echo "test: installing tauri-driver in the background failed (e2e.sh tries again):" >&2; cat "$driver_log" >&2; }
bash scripts/test/e2e.sh
# The GPU kit's layout on this CPU-only machine: modules from the kit's
# folder, a CUDA module refused with its reason, the CPU against llama-bench.
step "GPU kit"
bash scripts/test/gpu-kit.sh
# The .deb, installed on a clean Debian root and used there as a user would
# (scripts/package/test-install.sh, which prints what it measured). The
# package is made as this user from the binaries the tests ran, so nothing
# compiles; the install needs root for chroot and mounts. Without root or
# sudo it says so and is skipped, as on a developer's machine.
step "install test"
install_out=$(mktemp -d)
# The package from what is built and cached: building the Vulkan and CPU
# variant modules a release carries would take CI half an hour more.
export PACKAGE_BUILD_MODULES=0
if [ "$(id -u)" = 0 ]; then
  OUT="$install_out" bash scripts/package/test-install.sh
elif sudo -n true 2>/dev/null; then
  deb=$(bash scripts/package/package.sh | head -n 1)
  sudo -n env "PATH=$PATH" "DYNO_TEST_MODELS=$DYNO_TEST_MODELS" "OUT=$install_out" \
    bash scripts/package/test-install.sh "$deb"
else
  echo "test: install test skipped: it needs root (chroot and mounts); run sudo bash scripts/package/test-install.sh" >&2
fi
step "done"
