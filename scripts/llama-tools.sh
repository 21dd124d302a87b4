# Sourced by the comparison scripts: builds llama.cpp's own tools
# (llama-bench, llama-quantize) from the llama.cpp source inside the
# llama-cpp-sys-2 crate package that Dyno itself compiles (found through
# Cargo.lock), with the CMake options that crate's build script uses
# (Release, GGML_NATIVE, OpenMP, static libraries), so both sides of a
# comparison run the same llama.cpp.
#
# The crate package leaves out the tools' own source files, so point
# LLAMA_BENCH_SRC at a tools/llama-bench folder and LLAMA_QUANTIZE_SRC at a
# tools/quantize folder from the llama.cpp release the crate pins; nothing
# here guesses.
#
# After sourcing: `llama_tool llama-bench` (or llama-quantize) prints the
# binary's path, building it first if needed.

sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
crate_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version" 2>/dev/null | head -n 1)
if [ -z "$crate_src" ]; then
  cargo fetch >/dev/null
  crate_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version" | head -n 1)
fi
llama_src="$crate_src/llama.cpp"
tools_build="$CARGO_TARGET_DIR/llama-bench-$sys_version"

# The tool's source folder, from its variable, checked.
_tool_src() {
  local var=$1 file=$2 dir
  dir="${!var:-}"
  if [ -z "$dir" ] || [ ! -f "$dir/$file" ] || [ ! -f "$dir/CMakeLists.txt" ]; then
    echo "llama-tools: set $var to a folder with $file and CMakeLists.txt from the llama.cpp release" >&2
    echo "  that llama-cpp-sys-2 $sys_version pins ($(grep -m1 'set(LLAMA_VERSION' "$llama_src/CMakeLists.txt" 2>/dev/null || echo '?')); its package omits them." >&2
    return 2
  fi
  echo "$dir"
}

llama_tool() {
  local name=$1 var file sub
  case "$name" in
    llama-bench) var=LLAMA_BENCH_SRC; file=llama-bench.cpp; sub=llama-bench ;;
    llama-quantize) var=LLAMA_QUANTIZE_SRC; file=quantize.cpp; sub=quantize ;;
    *) echo "llama-tools: unknown tool $name" >&2; return 2 ;;
  esac
  local src
  src=$(_tool_src "$var" "$file") || return 2
  local bin="$tools_build/out/$sub/$name"
  if [ ! -x "$bin" ]; then
    mkdir -p "$tools_build/wrapper"
    # A small project: the crate's llama.cpp plus each tool's own CMake file.
    {
      echo "cmake_minimum_required(VERSION 3.14)"
      echo "project(dyno_llama_tools C CXX)"
      echo "add_subdirectory(\"$llama_src\" llama.cpp)"
      [ -n "${LLAMA_BENCH_SRC:-}" ] && echo "add_subdirectory(\"$LLAMA_BENCH_SRC\" llama-bench)"
      [ -n "${LLAMA_QUANTIZE_SRC:-}" ] && echo "add_subdirectory(\"$LLAMA_QUANTIZE_SRC\" quantize)"
    } > "$tools_build/wrapper/CMakeLists.txt"
    echo "llama-tools: building $name from $llama_src (about 10 minutes on 2 cores the first time)" >&2
    local flags="-ffunction-sections -fdata-sections -fPIC -m64"
    cmake -S "$tools_build/wrapper" -B "$tools_build/out" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
      -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_APP=OFF >"$tools_build/cmake.log"
    cmake --build "$tools_build/out" --target "$name" -j "$(nproc)" >>"$tools_build/cmake.log"
  fi
  echo "$bin"
}
