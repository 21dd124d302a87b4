#!/usr/bin/env bash
# Install what a fresh Debian machine lacks to build Dyno: a C/C++ toolchain
# and cmake for llama.cpp, libclang for bindgen, unzip for the test models.
# Rust (cargo) and python3 are expected to be there already.
# Idempotent: packages already installed are not touched.
set -euo pipefail
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
wanted=(build-essential cmake clang libclang-dev pkg-config unzip)
# pip may come from a Python outside Debian (pyenv); only then is it needed.
python3 -m pip --version >/dev/null 2>&1 || wanted+=(python3-pip)
need=()
for p in "${wanted[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "setup: cargo is missing; install Rust from https://rustup.rs" >&2; exit 1; }
