#!/usr/bin/env bash
# Build llama.cpp's CPU backend once per CPU generation (libggml-cpu-x64.so,
# -sse42, -sandybridge, -haswell, -skylakex, -icelake, -alderlake,
# -sapphirerapids, ...) for this llama.cpp build, as llama.cpp's own releases
# ship it: Dyno with `--features dynamic-backends` (GGML_CPU_ALL_VARIANTS) in
# its own target folder, whose build script stages the modules with their
# sha256 in dyno-backends.txt. The modules and their lines of that list are
# copied to ~/.cache/dyno/cpu-variants/<llama-cpp-sys-2 version>/, whose path
# is the last line printed; scripts/package/package.sh then ships them in
# place of the single x86-64-v3 module, and Dyno loads the one that scores
# best on the user's processor (AVX-512 and AMX kernels where there are
# some), as `dyno hw` shows.
#
# The build every other script makes has one CPU module, for x86-64-v3: the
# CPU backend compiled 14 times is too long for CI. About 25 minutes on 2
# cores the first time; seconds once built.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
export CARGO_TARGET_DIR="$HOME/.cache/dyno/target-cpu-variants"
sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
dest="$HOME/.cache/dyno/cpu-variants/$sys_version"
cargo build --release -p dyno --features dynamic-backends >&2
rel="$CARGO_TARGET_DIR/release"
variants=$(grep -v '^#' "$rel/dyno-backends.txt" | awk '{print $2}' | grep '^libggml-cpu-.*\.so$' || true)
[ -n "$variants" ] || { echo "build-cpu-variants: the build staged no libggml-cpu-*.so; see $rel/dyno-backends.txt" >&2; exit 1; }
rm -rf "$dest.part" && mkdir -p "$dest.part"
for m in $variants; do cp "$rel/$m" "$dest.part/"; done
{ grep '^#' "$rel/dyno-backends.txt"; grep '  libggml-cpu-.*\.so$' "$rel/dyno-backends.txt"; } >"$dest.part/dyno-backends.txt"
(cd "$dest.part" && sha256sum -c --quiet <(grep -v '^#' dyno-backends.txt)) >&2
rm -rf "$dest" && mv "$dest.part" "$dest"
echo "build-cpu-variants: $(echo "$variants" | wc -w) modules, $(du -sh "$dest" | cut -f1)" >&2
echo "$dest"
