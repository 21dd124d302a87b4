# Sourced by the scripts: one target directory and one model cache outside
# the clone, so a fresh clone on the same machine reuses the llama.cpp build
# (about 9 minutes on 2 cores) and the downloaded test models.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/dyno/target}"
export DYNO_TEST_MODELS="${DYNO_TEST_MODELS:-$HOME/.cache/dyno/models}"

# Build Dyno the one way every script does: the whole workspace (the CLI and
# the app) in release. The root package built alone resolves its build
# dependencies' features without the app's, which gives llama-cpp-sys-2
# another hash, so llama.cpp would compile a second time (about 10 minutes);
# the workspace build reuses the one the tests and CI made. The app embeds
# ui/dist, so the UI is built first when it is missing.
build_dyno() {
  if [ ! -f ui/dist/index.html ]; then
    (cd ui && npm ci --no-audit --no-fund && npm run build) >&2
  fi
  cargo build --release --workspace >&2
}

# The one build the test suite, the end-to-end test and CI's check of the GPU
# kit share: the whole workspace in release with every target (so the
# dev-dependencies' features are resolved as `cargo test` resolves them) and
# the `test-faults` feature, which compiles in the fault injection the crash
# tests drive (DYNO_TEST_FAULT; inert unless that variable is set). After
# `cargo test "${dyno_test_build[@]}"` a `build_for_tests` compiles nothing,
# so Dyno is compiled once per CI run, not once per feature set (each costs
# several minutes on 2 cores). Shipped builds never have the feature
# (scripts/test.sh checks the feature set and lints the build without it).
dyno_test_build=(--release --workspace --all-targets --features dyno/test-faults)
build_for_tests() {
  if [ ! -f ui/dist/index.html ]; then
    (cd ui && npm ci --no-audit --no-fund && npm run build) >&2
  fi
  cargo build "${dyno_test_build[@]}" >&2
}
