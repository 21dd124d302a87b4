# shellcheck shell=bash
# Sourced by the comparison scripts (and by scripts/lib/llama-server.sh):
# builds llama.cpp's own tools (llama-bench, llama-quantize,
# llama-perplexity, llama-server) against the llama.cpp source inside the
# llama-cpp-sys-2 crate package that Dyno itself compiles (found through
# Cargo.lock).
#
# llama-bench, llama-quantize and llama-perplexity are built with a static
# llama.cpp of their own, with the CMake options that crate's build script
# uses here (Release, the CPU target .cargo/config.toml asks for, OpenMP), so
# both sides of a comparison run the same llama.cpp code, each built as its
# project ships it. No OpenSSL: the tools are given local model files only,
# never a download.
#
# llama-server is linked against Dyno's own release build of that llama.cpp
# (its shared libraries and CPU module, see _llama_server below), so only
# libmtmd and the server are compiled. It is built without its web UI (the
# sdist ships no built one; building it needs npm), so it serves the API
# only. The sdist's server is a little older than the crate's common/ and
# mtmd: two calls changed since, and a header forced into its compilation
# (_server_compat below) adapts them, leaving the sdist's files as they are.
#
# The crate package leaves out the tools' own source files. Each comes from
# its variable when set (LLAMA_BENCH_SRC: a tools/llama-bench folder,
# LLAMA_QUANTIZE_SRC: tools/quantize, LLAMA_PERPLEXITY_SRC: tools/perplexity,
# LLAMA_SERVER_SRC: tools/server, with tools/ui's ui.h.in and ui.cpp.in
# beside it in ../ui); an unset one is taken from the llama-cpp-python sdist
# on PyPI, fetched and verified once per machine by
# scripts/bench/fetch-llama-tools-src.sh. Before the first build the sdist's
# include/llama.h is compared with the crate's: they may differ only in the
# session-state versions, else the tools are refused.
#
# Builds go to $DYNO_TOOLS_DIR/build/llama-cpp-sys-2-VERSION (DYNO_TOOLS_DIR
# defaults to ~/.cache/dyno/tools), the server's in its server/ folder: about
# 10 minutes on 2 cores the first time for the static tools, 3 for the
# server, seconds afterwards.
#
# After sourcing: `llama_tool llama-bench` (or llama-quantize,
# llama-perplexity, llama-server, llama-bench-linked: llama-bench on Dyno's
# own libraries and modules, see _llama_bench_linked) prints the binary's path, building it first
# if needed. Two runs at once must not share a build folder (see
# scripts/lib/llama-server.sh, which takes a lock).

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
  [ -n "${LLAMA_BENCH_SRC:-}" ] && [ -n "${LLAMA_QUANTIZE_SRC:-}" ] && [ -n "${LLAMA_PERPLEXITY_SRC:-}" ] \
    && [ -n "${LLAMA_SERVER_SRC:-}" ] && return 0
  local dir
  dir=$(bash scripts/bench/fetch-llama-tools-src.sh) || return 2
  # The tools call llama.h's API; compiled against another one they could
  # build and still measure something else.
  if ! diff <(grep -v 'define LLAMA_SESSION_VERSION\|define LLAMA_STATE_SEQ_VERSION' "$dir/llama.h") \
            <(grep -v 'define LLAMA_SESSION_VERSION\|define LLAMA_STATE_SEQ_VERSION' "$llama_src/include/llama.h") >/dev/null; then
    echo "llama-tools: $dir/llama.h differs from llama-cpp-sys-2 $sys_version's beyond the session versions;" >&2
    echo "  pick a llama-cpp-python release that vendors the same llama.h (LLAMA_CPP_PYTHON_VERSION and" >&2
    echo "  LLAMA_CPP_PYTHON_SHA256), or set LLAMA_BENCH_SRC, LLAMA_QUANTIZE_SRC, LLAMA_PERPLEXITY_SRC and LLAMA_SERVER_SRC." >&2
    return 2
  fi
  LLAMA_BENCH_SRC="${LLAMA_BENCH_SRC:-$dir/llama-bench}"
  LLAMA_QUANTIZE_SRC="${LLAMA_QUANTIZE_SRC:-$dir/quantize}"
  LLAMA_PERPLEXITY_SRC="${LLAMA_PERPLEXITY_SRC:-$dir/perplexity}"
  LLAMA_SERVER_SRC="${LLAMA_SERVER_SRC:-$dir/server}"
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

# A header forced into the compilation of the server's sources: shims for the
# calls whose signatures differ between the server's llama.cpp and the
# crate's. Each shim is written only when the server needs it and the crate
# lacks it, so a server folder from the crate's own llama.cpp compiles as is.
_server_compat() {
  local server=$1
  echo "// Written by scripts/bench/llama-tools.sh: adapts $server"
  echo "// to the common/ and tools/mtmd of $llama_src."
  echo "#pragma once"
  echo "#ifdef __cplusplus"
  # Removed from common/ in the crate's llama.cpp; the server's MCP config reader calls it.
  if grep -q 'fs_open_ifstream' "$server"/*.cpp && ! grep -q 'fs_open_ifstream' "$llama_src/common/common.h"; then
    printf '%s\n' '#include <fstream>' '#include <string>' \
      'inline std::ifstream fs_open_ifstream(const std::string & fname, std::ios_base::openmode mode) {' \
      '    return std::ifstream(fname, mode);' '}'
  fi
  # The crate's mtmd_get_memory_usage returns a struct holding the per-device
  # map the server's version expects; the macro follows mtmd.h's own
  # include, so only the server's calls are renamed.
  if grep -q 'mtmd_get_memory_usage' "$server"/*.cpp && ! grep -q 'backend_mem_usage' "$server"/*.cpp \
     && grep -q 'struct mtmd_memory_usage mtmd_get_memory_usage' "$llama_src/tools/mtmd/mtmd.h"; then
    printf '%s\n' '#include <cstddef>' '#include <map>' '#include "mtmd.h"' \
      'inline std::map<ggml_backend_dev_t, size_t> dyno_mtmd_get_memory_usage(const char * fname, struct mtmd_context_params params) {' \
      '    return mtmd_get_memory_usage(fname, params).backend_mem_usage;' '}' \
      '#define mtmd_get_memory_usage dyno_mtmd_get_memory_usage'
  fi
  echo "#endif"
}

llama_tool() {
  local name=$1 var file
  case "$name" in
    llama-bench) var=LLAMA_BENCH_SRC; file=llama-bench.cpp ;;
    llama-quantize) var=LLAMA_QUANTIZE_SRC; file=quantize.cpp ;;
    llama-perplexity) var=LLAMA_PERPLEXITY_SRC; file=perplexity.cpp ;;
    llama-server) var=LLAMA_SERVER_SRC; file=server.cpp ;;
    llama-bench-linked) var=LLAMA_BENCH_SRC; file=llama-bench.cpp ;;
    *) echo "llama-tools: unknown tool $name" >&2; return 2 ;;
  esac
  _tools_sources || return 2
  _tool_src "$var" "$file" >/dev/null || return 2
  if [ "$name" = llama-server ]; then
    _llama_server
    return
  fi
  if [ "$name" = llama-bench-linked ]; then
    _llama_bench_linked
    return
  fi
  local bench quantize perplexity
  bench=$(_tool_src LLAMA_BENCH_SRC llama-bench.cpp) || return 2
  quantize=$(_tool_src LLAMA_QUANTIZE_SRC quantize.cpp) || return 2
  perplexity=$(_tool_src LLAMA_PERPLEXITY_SRC perplexity.cpp) || return 2
  # The CPU target of .cargo/config.toml (x86-64-v3), as llama-cpp-sys-2
  # passes it to Dyno's llama.cpp: -march, and the ggml options it maps the
  # target's features to. Elsewhere, the machine's own CPU.
  local flags cpu=(-DGGML_NATIVE=ON)
  flags=$(_tool_cflags)
  if [ "$(uname -m)" = x86_64 ]; then
    cpu=(-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  fi
  local options=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags"
    "${cpu[@]}" -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
    -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_MTMD=OFF)
  # A small project: the crate's llama.cpp plus each tool's own CMake file.
  # Rewritten only when it or the options change, so a second run reuses the
  # build.
  local wrapper
  wrapper=$(printf '%s\n' "cmake_minimum_required(VERSION 3.14)" "project(dyno_llama_tools C CXX)" \
    "add_subdirectory(\"$llama_src\" llama.cpp)" "add_subdirectory(\"$bench\" llama-bench)" \
    "add_subdirectory(\"$quantize\" quantize)" "add_subdirectory(\"$perplexity\" perplexity)")
  _cmake_build "$tools_build" "$name" "$wrapper" "${options[@]}"
}

# Compiler flags for the tools: the x86-64-v3 target Dyno's llama.cpp is
# built for (see .cargo/config.toml), position-independent.
_tool_cflags() {
  local flags="-ffunction-sections -fdata-sections -fPIC -m64"
  [ "$(uname -m)" = x86_64 ] && flags="$flags -march=x86-64-v3"
  echo "$flags"
}

# Configure (when the wrapper project or its options changed) and build one
# target of a wrapper project in DIR/wrapper, into DIR/out; print the
# binary's path.
_cmake_build() {
  local dir=$1 name=$2 wrapper=$3
  shift 3
  local options=("$@")
  mkdir -p "$dir/wrapper"
  wrapper=$(printf '%s\n' "$wrapper" "# options: ${options[*]}")
  if [ "$(cat "$dir/wrapper/CMakeLists.txt" 2>/dev/null)" != "$wrapper" ] \
     || [ ! -f "$dir/out/CMakeCache.txt" ]; then
    echo "$wrapper" >"$dir/wrapper/CMakeLists.txt"
    if ! cmake -S "$dir/wrapper" -B "$dir/out" "${options[@]}" >"$dir/cmake.log" 2>&1; then
      tail -n 20 "$dir/cmake.log" >&2
      echo "llama-tools: configuring failed; the whole log is $dir/cmake.log" >&2
      rm -f "$dir/wrapper/CMakeLists.txt"
      return 1
    fi
  fi
  local bin
  bin=$(find "$dir/out" -type f -name "$name" -perm -u+x -print -quit 2>/dev/null)
  [ -n "$bin" ] || echo "llama-tools: building $name from $llama_src (minutes on 2 cores the first time; log: $dir/build.log)" >&2
  # Incremental: a no-op in seconds when nothing changed.
  if ! cmake --build "$dir/out" --target "$name" -j "$(nproc)" >"$dir/build.log" 2>&1; then
    grep -m 20 -E 'error|Error' "$dir/build.log" >&2 || tail -n 20 "$dir/build.log" >&2
    echo "llama-tools: building $name failed; the whole log is $dir/build.log" >&2
    return 1
  fi
  bin=$(find "$dir/out" -type f -name "$name" -perm -u+x -print -quit)
  [ -n "$bin" ] || { echo "llama-tools: the build made no $name binary (see $dir/build.log)" >&2; return 1; }
  echo "$bin"
}

# Copy Dyno's own llama.cpp libraries and backend modules into BIN_DIR, for
# the tools linked against them (llama-server, the linked llama-bench): the
# release build's libllama, libggml, libggml-base, libllama-common and every
# module its dyno-backends.txt lists, from DYNO_LLAMA_LIBS, else
# $CARGO_TARGET_DIR/release, which must be of this crate version.
_stage_dyno_libs() {
  local bin_dir=$1
  local libs="${DYNO_LLAMA_LIBS:-${CARGO_TARGET_DIR:-$HOME/.cache/dyno/target}/release}"
  local f name
  for f in dyno-backends.txt libllama.so.0 libggml.so.0 libggml-base.so.0 libllama-common.so.0; do
    if [ ! -f "$libs/$f" ]; then
      echo "llama-tools: $libs has no $f: the linked tools use Dyno's own llama.cpp libraries;" >&2
      echo "  build them first (cargo build --release --workspace), or point DYNO_LLAMA_LIBS at a folder that has them." >&2
      return 2
    fi
  done
  if [ "$(grep '^# build:' "$libs/dyno-backends.txt")" != "# build: llama-cpp-sys-2 $sys_version" ]; then
    echo "llama-tools: the libraries in $libs are of $(grep '^# build:' "$libs/dyno-backends.txt" | cut -c10-)," >&2
    echo "  not of llama-cpp-sys-2 $sys_version (Cargo.lock); rebuild them (cargo build --release --workspace)." >&2
    return 2
  fi
  mkdir -p "$bin_dir"
  # Copied through a temporary name and renamed, and only when changed, so a
  # tool already running keeps the file it mapped.
  for name in libllama.so.0 libggml.so.0 libggml-base.so.0 libllama-common.so.0 dyno-backends.txt \
              $(grep -v '^#' "$libs/dyno-backends.txt" | awk '{print $2}'); do
    cmp -s "$libs/$name" "$bin_dir/$name" && continue
    cp "$libs/$name" "$bin_dir/.$name.tmp" && mv -f "$bin_dir/.$name.tmp" "$bin_dir/$name"
  done
}

# llama-bench linked against Dyno's own llama.cpp libraries and loading the
# very modules Dyno loads (CPU, RPC), beside llama-server in the same
# folder: the comparison for what the static llama-bench cannot do, such as
# `--rpc` (the static build has no RPC backend). Only llama-bench's two
# source files are compiled (under a minute), with the crate's headers.
_llama_bench_linked() {
  local bench bin_dir="$tools_build/server/out/bin"
  bench=$(_tool_src LLAMA_BENCH_SRC llama-bench.cpp) || return 2
  _stage_dyno_libs "$bin_dir" || return 2
  local out="$bin_dir/llama-bench" flags
  flags=$(_tool_cflags)
  if [ -x "$out" ] && [ "$out" -nt "$bench/llama-bench.cpp" ] && [ "$out" -nt "$bin_dir/libllama.so.0" ]; then
    echo "$out"
    return 0
  fi
  echo "llama-tools: compiling llama-bench against Dyno's libraries in $bin_dir" >&2
  # shellcheck disable=SC2086
  if ! c++ -std=c++17 -O3 $flags -DNDEBUG \
      -I "$llama_src/include" -I "$llama_src/ggml/include" -I "$llama_src/common" -I "$bench" \
      "$bench/main.cpp" "$bench/llama-bench.cpp" -o "$bin_dir/.llama-bench.tmp" \
      -L "$bin_dir" -l:libllama.so.0 -l:libggml.so.0 -l:libggml-base.so.0 -l:libllama-common.so.0 \
      -Wl,-rpath,'$ORIGIN' -Wl,--allow-shlib-undefined -lpthread >"$tools_build/llama-bench-linked.log" 2>&1; then
    grep -m 20 error "$tools_build/llama-bench-linked.log" >&2 || tail -n 20 "$tools_build/llama-bench-linked.log" >&2
    echo "llama-tools: compiling the linked llama-bench failed; the log is $tools_build/llama-bench-linked.log" >&2
    return 1
  fi
  mv -f "$bin_dir/.llama-bench.tmp" "$out"
  echo "$out"
}

# llama-server, linked against Dyno's own llama.cpp libraries: the release
# build's libllama, libggml, libggml-base and libllama-common (which holds
# cpp-httplib, with TLS when that build found OpenSSL), with the CPU backend
# module beside it. So the server runs the very library code Dyno measures
# with, and only the server and libmtmd are compiled here (about 4 minutes
# on 2 cores instead of 12 for a whole second llama.cpp). The libraries are
# copied next to the binary, so a later rebuild of Dyno never changes a
# server under a running test; they come from DYNO_LLAMA_LIBS, else
# $CARGO_TARGET_DIR/release, and must list this crate version in their
# dyno-backends.txt.
_llama_server() {
  local server ui
  server=$(_tool_src LLAMA_SERVER_SRC server.cpp) || return 2
  ui=$(cd "$server/../ui" 2>/dev/null && pwd) || ui="$server/../ui"
  if [ ! -f "$ui/ui.h.in" ] || [ ! -f "$ui/ui.cpp.in" ]; then
    echo "llama-tools: no ui.h.in and ui.cpp.in in $ui (tools/ui beside LLAMA_SERVER_SRC=$server);" >&2
    echo "  llama-server's CMake file needs the library they make." >&2
    return 2
  fi
  local dir="$tools_build/server"
  local bin_dir="$dir/out/bin"
  mkdir -p "$dir/wrapper"
  _stage_dyno_libs "$bin_dir" || return 2
  # Written only when it changes: a new file would recompile the server.
  local compat
  compat=$(_server_compat "$server")
  [ "$(cat "$dir/wrapper/dyno-server-compat.h" 2>/dev/null)" = "$compat" ] \
    || echo "$compat" >"$dir/wrapper/dyno-server-compat.h"
  # What the libraries were built with and the headers must agree on:
  # cpp-httplib's TLS support changes its classes, and LLAMA_SUBPROCESS
  # common's.
  local ssl=OFF subprocess=OFF
  readelf -d "$bin_dir/libllama-common.so.0" | grep -q 'NEEDED.*libssl' && ssl=ON
  nm -D --defined-only "$bin_dir/libllama-common.so.0" | grep -q 'subprocess' && subprocess=ON
  local flags
  flags=$(_tool_cflags)
  local options=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DBUILD_SHARED_LIBS=OFF)
  # The libraries as imported targets under the names llama.cpp's CMake
  # files link (llama, ggml, llama-common, cpp-httplib); the header-only and
  # small vendored libraries libmtmd needs; libmtmd; a web UI library with
  # no assets made from tools/ui's templates, as tools/ui's own CMake file
  # does when it finds none (that one needs scripts/ from a whole llama.cpp
  # checkout); and the server's own CMake file.
  local wrapper
  wrapper=$(printf '%s\n' "cmake_minimum_required(VERSION 3.14)" "project(dyno_llama_server C CXX)" \
    "find_package(Threads REQUIRED)" \
    "set(CMAKE_RUNTIME_OUTPUT_DIRECTORY \"$bin_dir\")" \
    "function(llama_add_compile_flags)" "endfunction()" \
    "function(license_add_file)" "endfunction()" \
    "set(LLAMA_VERSION_BASE 0.0.0)" "set(LLAMA_VERSION_MAJOR 0)" \
    "set(LLAMA_SUBPROCESS $subprocess)" "set(MTMD_VIDEO OFF CACHE BOOL \"\" FORCE)" \
    "foreach(v hash miniaudio nlohmann sheredom stb)" \
    "  add_subdirectory(\"$llama_src/vendor/\${v}\" vendor/\${v})" "endforeach()" \
    "add_library(ggml-base SHARED IMPORTED)" \
    "set_target_properties(ggml-base PROPERTIES IMPORTED_LOCATION \"$bin_dir/libggml-base.so.0\" INTERFACE_INCLUDE_DIRECTORIES \"$llama_src/ggml/include\")" \
    "add_library(ggml SHARED IMPORTED)" \
    "set_target_properties(ggml PROPERTIES IMPORTED_LOCATION \"$bin_dir/libggml.so.0\" INTERFACE_LINK_LIBRARIES ggml-base)" \
    "add_library(llama SHARED IMPORTED)" \
    "set_target_properties(llama PROPERTIES IMPORTED_LOCATION \"$bin_dir/libllama.so.0\" INTERFACE_INCLUDE_DIRECTORIES \"$llama_src/include\" INTERFACE_LINK_LIBRARIES ggml)" \
    "add_library(llama-common SHARED IMPORTED)" \
    "set_target_properties(llama-common PROPERTIES IMPORTED_LOCATION \"$bin_dir/libllama-common.so.0\" INTERFACE_INCLUDE_DIRECTORIES \"$llama_src/common\" INTERFACE_LINK_LIBRARIES \"llama;vendor::nlohmann;vendor::sheredom;Threads::Threads\")" \
    "if($subprocess)" "  set_property(TARGET llama-common PROPERTY INTERFACE_COMPILE_DEFINITIONS LLAMA_SUBPROCESS)" "endif()" \
    "add_library(cpp-httplib INTERFACE)" \
    "target_include_directories(cpp-httplib INTERFACE \"$llama_src/vendor\")" \
    "target_link_libraries(cpp-httplib INTERFACE llama-common)" \
    "if($ssl)" "  target_compile_definitions(cpp-httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT)" \
    "  target_link_libraries(cpp-httplib INTERFACE ssl crypto)" "endif()" \
    "add_subdirectory(\"$llama_src/tools/mtmd\" mtmd)" \
    "set(N_ASSETS 0)" "set(ASSET_ARRAYS \"\")" "set(ASSET_TABLE \"\")" "set(USE_GZIP false)" \
    "configure_file(\"$ui/ui.h.in\" llama-ui/ui.h @ONLY)" \
    "configure_file(\"$ui/ui.cpp.in\" llama-ui/ui.cpp @ONLY)" \
    "add_library(llama-ui STATIC \"\${CMAKE_CURRENT_BINARY_DIR}/llama-ui/ui.cpp\")" \
    "target_include_directories(llama-ui PUBLIC \"\${CMAKE_CURRENT_BINARY_DIR}/llama-ui\")" \
    "target_compile_features(llama-ui PRIVATE cxx_std_17)" \
    "add_custom_target(llama-ui-assets)" \
    "add_subdirectory(\"$server\" server)" \
    "target_compile_options(server-context PRIVATE -include \"\${CMAKE_CURRENT_SOURCE_DIR}/dyno-server-compat.h\")")
  _cmake_build "$dir" llama-server "$wrapper" "${options[@]}" >/dev/null || return 1
  [ -x "$bin_dir/llama-server" ] || { echo "llama-tools: the build made no $bin_dir/llama-server (see $dir/build.log)" >&2; return 1; }
  echo "$bin_dir/llama-server"
}
