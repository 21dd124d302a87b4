#!/usr/bin/env bash
# Fetch the sources of llama.cpp's own tools (llama-bench, quantize,
# perplexity, server) for scripts/bench/llama-tools.sh, and print the folder
# that holds them (one subfolder per tool).
#
# Why from PyPI: the llama-cpp-sys-2 crate package ships llama.cpp's library
# and common code but only the READMEs of its tools, and on this project's
# machines the network reaches package registries only. The llama-cpp-python
# sdist vendors a whole llama.cpp; scripts/bench/llama-tools.sh compiles just its
# three tool folders against the crate's own llama.cpp tree, so both sides of
# a comparison run the library Dyno runs. The sdist's llama.cpp is an older
# snapshot than the crate's (LLAMA_VERSION 0.5 against 0.6, with many
# library changes), but its public header include/llama.h differs only in the
# session-state versions, which scripts/bench/llama-tools.sh checks before it
# builds.
#
# llama-server needs more than its own folder: tools/ui's two templates for
# the embedded web UI's source files (the sdist ships no built web UI, and
# llama-tools.sh embeds none). Everything else it uses (common/, tools/mtmd,
# vendor/cpp-httplib, vendor/nlohmann) is in the crate's tree, and is taken
# from there.
#
# The sdist is checked against a pinned sha256, the folders must hold their
# CMakeLists.txt and sources, and the result is cached once per machine: a
# second run only prints the folder.
#
# Usage: scripts/bench/fetch-llama-tools-src.sh   (prints DIR; DIR/llama-bench,
#   DIR/quantize, DIR/perplexity, DIR/server, DIR/ui, DIR/llama.h, DIR/SOURCE)
# Settings: DYNO_TOOLS_DIR (~/.cache/dyno/tools; sources go under its src/),
# LLAMA_CPP_PYTHON_VERSION (0.3.36) with LLAMA_CPP_PYTHON_SHA256 (required for
# any other version: the sha256 of its .tar.gz on PyPI).
set -euo pipefail

version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
case "$version" in
  0.3.36) want_sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e ;;
  *) want_sha="${LLAMA_CPP_PYTHON_SHA256:?fetch-llama-tools-src: set LLAMA_CPP_PYTHON_SHA256 to the sha256 of llama_cpp_python-$version.tar.gz (PyPI lists it under Download files)}" ;;
esac
tools_dir="${DYNO_TOOLS_DIR:-$HOME/.cache/dyno/tools}"
dest="$tools_dir/src/llama-cpp-python-$version"
expected=(llama-bench/CMakeLists.txt llama-bench/llama-bench.cpp llama-bench/main.cpp
          quantize/CMakeLists.txt quantize/quantize.cpp quantize/main.cpp
          perplexity/CMakeLists.txt perplexity/perplexity.cpp perplexity/main.cpp
          server/CMakeLists.txt server/main.cpp server/server.cpp server/server-context.cpp
          server/server-http.cpp server/server-models.cpp server/server-task.cpp server/server-common.cpp
          ui/ui.h.in ui/ui.cpp.in llama.h)

complete() {
  local f
  for f in "${expected[@]}"; do [ -f "$1/$f" ] || return 1; done
}

if complete "$dest"; then
  echo "$dest"
  exit 0
fi

mkdir -p "$tools_dir/src"
tmp=$(mktemp -d "$tools_dir/src/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetch-llama-tools-src: downloading the llama-cpp-python $version sdist from PyPI (77 MB)" >&2
# pip reads an sdist's metadata through its build backend (scikit-build-core),
# which it installs in an isolated environment; where that is not possible, a
# locally installed scikit-build-core does the same job.
download() { python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$tmp" "$@" >&2; }
if ! download; then
  if python3 -c 'import scikit_build_core' 2>/dev/null && download --no-build-isolation; then
    :
  else
    echo "fetch-llama-tools-src: pip could not download llama-cpp-python==$version." >&2
    echo "  If it could not read the sdist's metadata, run 'python3 -m pip install scikit-build-core' and try again;" >&2
    echo "  or set LLAMA_BENCH_SRC, LLAMA_QUANTIZE_SRC, LLAMA_PERPLEXITY_SRC and LLAMA_SERVER_SRC to llama.cpp tool folders yourself." >&2
    exit 1
  fi
fi

sdist="$tmp/llama_cpp_python-$version.tar.gz"
if [ ! -f "$sdist" ]; then
  echo "fetch-llama-tools-src: pip saved no $(basename "$sdist") (it may have picked a wheel); files in $tmp:" >&2
  ls "$tmp" >&2
  exit 1
fi
have_sha=$(sha256sum "$sdist" | cut -d' ' -f1)
echo "fetch-llama-tools-src: $(basename "$sdist") sha256 $have_sha" >&2
if [ "$have_sha" != "$want_sha" ]; then
  echo "fetch-llama-tools-src: sha256 mismatch: expected $want_sha; refusing to use it." >&2
  exit 1
fi

vendor="llama_cpp_python-$version/vendor/llama.cpp"
mkdir -p "$tmp/out"
# The server's Python tests and benchmark scripts are left out.
tar -xzf "$sdist" -C "$tmp/out" --strip-components=4 \
  --exclude="$vendor/tools/server/tests" --exclude="$vendor/tools/server/bench" \
  "$vendor/tools/llama-bench" "$vendor/tools/quantize" "$vendor/tools/perplexity" "$vendor/tools/server" \
  "$vendor/tools/ui/ui.h.in" "$vendor/tools/ui/ui.cpp.in"
tar -xzf "$sdist" -C "$tmp/out" --strip-components=4 "$vendor/include/llama.h"
if ! complete "$tmp/out"; then
  echo "fetch-llama-tools-src: the sdist lacks some of: ${expected[*]} (under $vendor/tools); it is not usable here." >&2
  exit 1
fi
printf 'llama-cpp-python %s sdist from PyPI\nsha256 %s\nfolders %s/tools/{llama-bench,quantize,perplexity,server}\n(server without tests/ and bench/), %s/tools/ui/ui.{h,cpp}.in and %s/include/llama.h\n' \
  "$version" "$have_sha" "$vendor" "$vendor" "$vendor" >"$tmp/out/SOURCE"
# A rename is atomic: a concurrent run either finds the whole folder or none.
rm -rf "$dest"
mv "$tmp/out" "$dest"
echo "$dest"
