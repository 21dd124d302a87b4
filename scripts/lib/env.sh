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
