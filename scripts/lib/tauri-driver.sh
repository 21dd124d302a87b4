#!/usr/bin/env bash
# Print the path of tauri-driver (the WebDriver proxy the end-to-end test
# drives the app through), installing it first when missing: once per
# machine, next to the build cache, from crates.io with its lock file.
# Built in the dev profile: it only forwards WebDriver requests, and that
# build took 29 s on 2 cores against a release build's 47 s. The test
# suite starts it in the background while the UI's steps leave a core idle;
# runs at once wait for each other (flock).
set -euo pipefail
tools="${DYNO_TOOLS_DIR:-$HOME/.cache/dyno/tools}"
mkdir -p "$tools"
exec 9>"$tools/.tauri-driver.lock"
if command -v flock >/dev/null; then
  flock 9
fi
if [ ! -x "$tools/bin/tauri-driver" ]; then
  # Its own target folder: not Dyno's, whose release build it must not touch.
  CARGO_TARGET_DIR="$tools/tauri-driver-target" \
    cargo install --locked --debug --root "$tools" tauri-driver >&2
  rm -rf "$tools/tauri-driver-target"
fi
echo "$tools/bin/tauri-driver"
