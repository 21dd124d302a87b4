# shellcheck shell=bash
# Sourced by the comparison scripts: builds llama.cpp's own tools
# (llama-bench, llama-quantize, llama-perplexity) against the llama.cpp
# source inside the llama-cpp-sys-2 crate package that Dyno itself compiles
# (found through Cargo.lock), with the CMake options that crate's build
# script uses here (Release, GGML_NATIVE as .cargo/config.toml asks, OpenMP,
# static libraries), so both sides of a comparison run the same llama.cpp.
#
# The crate package leaves out the tools' own source files. Each comes from
# its variable when set (LLAMA_BENCH_SRC: a tools/llama-bench folder,
# LLAMA_QUANTIZE_SRC: tools/quantize, LLAMA_PERPLEXITY_SRC: tools/perplexity);
# an unset one is taken from the llama-cpp-python sdist on PyPI, fetched and
# verified once per machine by scripts/bench/fetch-llama-tools-src.sh. Before the
# first build the sdist's include/llama.h is compared with the crate's: they
# may differ only in the session-state versions, else the tools are refused.
#
# Builds go to $DYNO_TOOLS_DIR/build/llama-cpp-sys-2-VERSION (DYNO_TOOLS_DIR
# defaults to ~/.cache/dyno/tools): about 10 minutes on 2 cores the first
# time, seconds afterwards.
#
# After sourcing: `llama_tool llama-bench` (or llama-quantize,
# llama-perplexity) prints the binary's path, building it first if needed.

sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
_crate_src() {
  local d
  for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version"; do
    [ -d "$d/llama.cpp" ] && { echo "$d"; return 0; }
  done
  return 1
}
crate_src=$(_crate_src) || { cargo fetch >/dev/null; crate_src=$(_crate_src); } || {
  echo "llama-tools: no llama-cpp-sys-2 $sys_version source under ${CARGO_HOME:-$HOME/.cargo}/registry/src even after cargo fetch" >&2
  return 1
}
llama_src="$crate_src/llama.cpp"
tools_build="${DYNO_TOOLS_DIR:-$HOME/.cache/dyno/tools}/build/llama-cpp-sys-2-$sys_version"

# Fill the unset source variables from the cached sdist (fetched if needed).
_tools_sources() {
  [ -n "${LLAMA_BENCH_SRC:-}" ] && [ -n "${LLAMA_QUANTIZE_SRC:-}" ] && [ -n "${LLAMA_PERPLEXITY_SRC:-}" ] && return 0
  local dir
  dir=$(bash scripts/bench/fetch-llama-tools-src.sh) || return 2
  # The tools call llama.h's API; compiled against another one they could
  # build and still measure something else.
  if ! diff <(grep -v 'define LLAMA_SESSION_VERSION\|define LLAMA_STATE_SEQ_VERSION' "$dir/llama.h") \
            <(grep -v 'define LLAMA_SESSION_VERSION\|define LLAMA_STATE_SEQ_VERSION' "$llama_src/include/llama.h") >/dev/null; then
    echo "llama-tools: $dir/llama.h differs from llama-cpp-sys-2 $sys_version's beyond the session versions;" >&2
    echo "  pick a llama-cpp-python release that vendors the same llama.h (LLAMA_CPP_PYTHON_VERSION and" >&2
    echo "  LLAMA_CPP_PYTHON_SHA256), or set LLAMA_BENCH_SRC, LLAMA_QUANTIZE_SRC and LLAMA_PERPLEXITY_SRC." >&2
    return 2
  fi
  LLAMA_BENCH_SRC="${LLAMA_BENCH_SRC:-$dir/llama-bench}"
  LLAMA_QUANTIZE_SRC="${LLAMA_QUANTIZE_SRC:-$dir/quantize}"
  LLAMA_PERPLEXITY_SRC="${LLAMA_PERPLEXITY_SRC:-$dir/perplexity}"
}

# The tool's source folder, from its variable, checked.
_tool_src() {
  local var=$1 file=$2 dir
  dir="${!var:-}"
  if [ -z "$dir" ] || [ ! -f "$dir/$file" ] || [ ! -f "$dir/CMakeLists.txt" ]; then
    echo "llama-tools: $var=${dir:-(unset)} has no $file and CMakeLists.txt; point it at that tool's folder" >&2
    echo "  from llama.cpp, or unset it to use the llama-cpp-python sdist's (scripts/bench/fetch-llama-tools-src.sh)." >&2
    return 2
  fi
  echo "$dir"
}

llama_tool() {
  local name=$1 var file
  case "$name" in
    llama-bench) var=LLAMA_BENCH_SRC; file=llama-bench.cpp ;;
    llama-quantize) var=LLAMA_QUANTIZE_SRC; file=quantize.cpp ;;
    llama-perplexity) var=LLAMA_PERPLEXITY_SRC; file=perplexity.cpp ;;
    *) echo "llama-tools: unknown tool $name" >&2; return 2 ;;
  esac
  _tools_sources || return 2
  _tool_src "$var" "$file" >/dev/null || return 2
  local bench quantize perplexity
  bench=$(_tool_src LLAMA_BENCH_SRC llama-bench.cpp) || return 2
  quantize=$(_tool_src LLAMA_QUANTIZE_SRC quantize.cpp) || return 2
  perplexity=$(_tool_src LLAMA_PERPLEXITY_SRC perplexity.cpp) || return 2
  # A small project: the crate's llama.cpp plus each tool's own CMake file.
  # Rewritten only when it changes, so a second run reuses the build.
  local wrapper
  wrapper=$(printf '%s\n' "cmake_minimum_required(VERSION 3.14)" "project(dyno_llama_tools C CXX)" \
    "add_subdirectory(\"$llama_src\" llama.cpp)" "add_subdirectory(\"$bench\" llama-bench)" \
    "add_subdirectory(\"$quantize\" quantize)" "add_subdirectory(\"$perplexity\" perplexity)")
  mkdir -p "$tools_build/wrapper"
  if [ "$(cat "$tools_build/wrapper/CMakeLists.txt" 2>/dev/null)" != "$wrapper" ] \
     || [ ! -f "$tools_build/out/CMakeCache.txt" ]; then
    echo "$wrapper" >"$tools_build/wrapper/CMakeLists.txt"
    local flags="-ffunction-sections -fdata-sections -fPIC -m64"
    if ! cmake -S "$tools_build/wrapper" -B "$tools_build/out" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
      -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_APP=OFF >"$tools_build/cmake.log" 2>&1; then
      tail -n 20 "$tools_build/cmake.log" >&2
      echo "llama-tools: configuring failed; the whole log is $tools_build/cmake.log" >&2
      rm -f "$tools_build/wrapper/CMakeLists.txt"
      return 1
    fi
  fi
  local bin
  bin=$(find "$tools_build/out" -type f -name "$name" -perm -u+x -print -quit 2>/dev/null)
  [ -n "$bin" ] || echo "llama-tools: building $name from $llama_src (about 10 minutes on 2 cores the first time; log: $tools_build/build.log)" >&2
  # Incremental: a no-op in seconds when nothing changed.
  if ! cmake --build "$tools_build/out" --target "$name" -j "$(nproc)" >"$tools_build/build.log" 2>&1; then
    grep -m 20 -E 'error|Error' "$tools_build/build.log" >&2 || tail -n 20 "$tools_build/build.log" >&2
    echo "llama-tools: building $name failed; the whole log is $tools_build/build.log" >&2
    return 1
  fi
  bin=$(find "$tools_build/out" -type f -name "$name" -perm -u+x -print -quit)
  [ -n "$bin" ] || { echo "llama-tools: the build made no $name binary (see $tools_build/build.log)" >&2; return 1; }
  echo "$bin"
}
