#!/usr/bin/env bash
# Print the path of a llama-server binary built from llama.cpp's tools/server
# and linked against the llama.cpp libraries Dyno's release build made (the
# llama-cpp-sys-2 crate's, found through Cargo.lock), for tests and CI that
# need a real llama-server. Those libraries are built first when missing or
# of another crate version (`cargo build --release --workspace`).
#
# The build is scripts/bench/llama-tools.sh's: the server's sources come from
# the llama-cpp-python sdist on PyPI (pinned sha256), or from LLAMA_SERVER_SRC
# (a tools/server folder with tools/ui beside it); the build is cached under
# $DYNO_TOOLS_DIR (~/.cache/dyno/tools), once per machine and crate version.
# The first run compiles libmtmd and the server, about 3 minutes on 2 cores;
# later runs only check that the build is up to date (about a second).
#
# Usage: bash scripts/lib/llama-server.sh   (prints the binary's path)
#        bash scripts/lib/llama-server.sh llama-bench-linked
#   prints instead the path of llama-bench linked the same way, beside the
#   server, loading Dyno's modules (its RPC module, for `--rpc` comparisons).
# Exits non-zero, with the reason on stderr, when it cannot build one.
# Runs at once are safe: they wait for each other's build (flock).
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() {
  echo "llama-server.sh: $*" >&2
  exit 1
}

command -v cmake >/dev/null || fail "cmake is not installed (scripts/setup.sh installs it)"
command -v c++ >/dev/null || fail "no C++ compiler (c++) is installed (scripts/setup.sh installs one)"

tools_dir="${DYNO_TOOLS_DIR:-$HOME/.cache/dyno/tools}"
mkdir -p "$tools_dir"
# The build folder is shared: two builds in it at once would corrupt it.
exec 9>"$tools_dir/.build.lock"
if command -v flock >/dev/null; then
  flock 9
fi

. scripts/lib/env.sh
# llama-tools.sh fails with its own message; this one says what failed.
. scripts/bench/llama-tools.sh || fail "could not locate the llama-cpp-sys-2 source (see above)"
# The server links the release build's libraries of this llama.cpp.
if ! grep -qx "# build: llama-cpp-sys-2 $sys_version" "$CARGO_TARGET_DIR/release/dyno-backends.txt" 2>/dev/null \
   || [ ! -f "$CARGO_TARGET_DIR/release/libllama-common.so.0" ]; then
  echo "llama-server.sh: building Dyno's llama.cpp libraries first (cargo build --release --workspace)" >&2
  build_dyno || fail "could not build Dyno's release build, whose libraries the server links"
fi
tool="${1:-llama-server}"
case "$tool" in
  llama-server | llama-bench-linked) ;;
  *) fail "unknown tool '$tool': llama-server or llama-bench-linked" ;;
esac
bin=$(llama_tool "$tool") || fail "could not build $tool (see above)"
[ -x "$bin" ] || fail "the build reported $bin, which is not an executable"
echo "$bin"
