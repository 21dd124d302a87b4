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

# A target folder whose llama.cpp was built before .cargo/config.toml asked
# for the RPC module (GGML_RPC) has no libggml-rpc.so, and cargo would not
# notice: llama-cpp-sys-2's build script reruns only for variables it saw
# set, and its CMake step configures only once. Its fingerprint and CMake
# cache go, so the next build reconfigures llama.cpp in place (a few
# minutes: the objects already built are kept). Also cleared every time:
# the dangling links llama-cpp-sys-2 leaves in deps/ and examples/ (hard
# links of symlinks), on which its build script fails with "File exists"
# whenever it reruns.
_dyno_release="$CARGO_TARGET_DIR/release"
if [ -f "$_dyno_release/libggml-cpu.so" ] && [ ! -f "$_dyno_release/libggml-rpc.so" ]; then
  echo "env: the llama.cpp build in $CARGO_TARGET_DIR predates its RPC module; the next build reconfigures it" >&2
  rm -f "$_dyno_release"/build/llama-cpp-sys-2-*/out/build/CMakeCache.txt
  rm -rf "$_dyno_release"/.fingerprint/llama-cpp-sys-2-*
fi
find "$_dyno_release/deps" "$_dyno_release/examples" -maxdepth 1 -name 'lib*.so' -xtype l -delete 2>/dev/null || true
unset _dyno_release
