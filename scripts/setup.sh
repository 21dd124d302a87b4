#!/usr/bin/env bash
# Install what a fresh Debian machine lacks to build Dyno: a C/C++ toolchain
# and cmake for llama.cpp, libclang for bindgen, unzip for the test models,
# WebKitGTK and GTK for the desktop app, and WebKitWebDriver and Xvfb for its
# end-to-end test, PostgreSQL (a private server the team-store tests start
# on their own port and folder; never the system service), openssl for
# its TLS certificate, and stunnel4 (a TLS proxy the server-benchmark test
# puts in front of llama-server, as a remote https server would be), and for
# the install test dpkg-dev and file (to make the .deb), debootstrap (its
# clean Debian root), netpbm and bc (its screenshot and timing). Rust
# (cargo), Node.js (npm) and python3 are expected to be there already.
# Idempotent: packages already installed are not touched.
set -euo pipefail
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
wanted=(build-essential cmake clang libclang-dev pkg-config unzip
  libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libsoup-3.0-dev
  webkit2gtk-driver xvfb postgresql openssl stunnel4
  dpkg-dev file debootstrap netpbm bc)
# pip may come from a Python outside Debian (pyenv); only then is it needed.
python3 -m pip --version >/dev/null 2>&1 || wanted+=(python3-pip)
# A venv for the workflow linter (scripts/test/lint-workflows.sh).
python3 -c 'import ensurepip' >/dev/null 2>&1 || wanted+=(python3-venv)
need=()
for p in "${wanted[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  # Debian starts a newly installed PostgreSQL as a system service; Dyno's
  # tests start their own server, so forbid service starts while installing
  # (policy-rc.d exit 101), unless the machine already has such a policy.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  [ -z "$policy" ] || $sudo rm -f "$policy"
fi
command -v cargo >/dev/null || { echo "setup: cargo is missing; install Rust from https://rustup.rs" >&2; exit 1; }
command -v npm >/dev/null || { echo "setup: npm is missing; install Node.js 20 or newer (https://nodejs.org)" >&2; exit 1; }
