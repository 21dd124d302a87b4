#!/usr/bin/env bash
# Build the Linux desktop bundle: a .deb of the app (src-tauri) with the UI
# inside. tauri-cli is installed once into ~/.cache/dyno/tools (a cold
# install compiles for about 25 minutes on 2 cores, which is why CI does not
# run this). The AppImage is left out by default: its bundler downloads
# linuxdeploy from GitHub; pass `appimage` (or `deb,appimage`) where GitHub
# is reachable.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
bundles="${1:-deb}"
tools="$HOME/.cache/dyno/tools"
if [ ! -x "$tools/bin/cargo-tauri" ]; then
  cargo install --locked --root "$tools" tauri-cli --version "^2"
fi
[ -d ui/node_modules ] || (cd ui && npm ci --no-audit --no-fund)
(cd src-tauri && "$tools/bin/cargo-tauri" build --bundles "$bundles")
ls -l "$CARGO_TARGET_DIR"/release/bundle/deb/*.deb
