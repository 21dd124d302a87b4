#!/usr/bin/env bash
# Build llama.cpp's Vulkan backend module (libggml-vulkan.so) for this
# llama.cpp build, on a machine with or without a GPU: Dyno with
# `--features vulkan` in its own target folder (as scripts/test/vulkan.sh
# builds it), whose build script stages the module with its sha256 in
# dyno-backends.txt. The module and that list are copied to
# ~/.cache/dyno/vulkan/<llama-cpp-sys-2 version>/, whose path is the last line
# printed; scripts/gpu/kit.sh adds it to the kit (KIT_VULKAN=1).
#
# About 20 minutes on 2 cores the first time (llama.cpp again, with a few
# hundred Vulkan shaders); seconds once built.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
export CARGO_TARGET_DIR="$HOME/.cache/dyno/target-vulkan"
. scripts/lib/vulkan.sh
sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
dest="$HOME/.cache/dyno/vulkan/$sys_version"
cargo build --release -p dyno --features vulkan >&2
rel="$CARGO_TARGET_DIR/release"
mkdir -p "$dest"
cp "$rel/libggml-vulkan.so" "$dest/"
{ grep '^#' "$rel/dyno-backends.txt"; grep '  libggml-vulkan.so$' "$rel/dyno-backends.txt"; } >"$dest/dyno-backends.txt"
(cd "$dest" && sha256sum -c --quiet <(grep -v '^#' dyno-backends.txt)) >&2
echo "$dest"
