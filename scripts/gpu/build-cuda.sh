#!/usr/bin/env bash
# Dyno's own build has no CUDA: it is built here, where there is neither a
# GPU nor a CUDA install, with llama.cpp's backends as loadable modules
# (.cargo/config.toml: GGML_BACKEND_DL, shared libraries). This script builds
# the one module a GPU machine adds, libggml-cuda.so, from the same llama.cpp
# sources (the llama-cpp-sys-2 crate package that Cargo.lock names) and with
# options compatible with that build (GGML_BACKEND_DL, shared libraries,
# GGML_NATIVE=OFF, OpenMP, Release), so Dyno can dlopen it next to its own
# libggml-base.so.0. Only the CUDA target is built: none of the CPU options
# here reach it.
#
# CUDA comes from NVIDIA's PyPI wheels (the cuda-toolkit meta package, whose
# extras pin matching nvcc, nvvm, crt, cudart, cccl and cublas versions),
# installed with pip into a private prefix under the cache, never
# system-wide. The wheels are not laid out as a toolkit: a toolkit root is
# assembled beside them out of symlinks (nvcc takes its root from the folder
# it is called from, so bin/ holds a link to each file), with the unversioned
# libcudart.so, libcublas.so and libcublasLt.so the linker looks for.
# The wheels ship no libcuda.so (the driver, only on a GPU machine), so a stub
# is built, as NVIDIA's own lib/stubs/libcuda.so is: every function cuda.h
# declares, as an empty function, in a library whose soname is libcuda.so.1.
# Linking against it records the dependency on the driver (NEEDED
# libcuda.so.1), which leaving its symbols unresolved would not. The module
# has no RUNPATH (so it can never find the stub) and bundles no CUDA library
# (the CUDA runtime is linked shared, not CMake's default static one): at run
# time it needs libcuda.so.1, libcudart.so.13, libcublas.so.13 and (through
# it) libcublasLt.so.13 from the GPU machine, checked with readelf.
#
#   bash scripts/gpu/build-cuda.sh                  default architectures
#   CUDA_ARCHS=90 bash scripts/gpu/build-cuda.sh    H100/H200 only
#
# CUDA_ARCHS: a ;-separated list of compute capabilities, default
# 75;80;86;89;90;120 (Turing to Blackwell). Each plain number is built as
# real device code only (NN-real), which keeps the module small; a number
# with a suffix (90-virtual, 90a-real) is passed to CMake as it is. llama.cpp
# turns 12x into 12xa itself. CUDA_TOOLKIT_VERSION picks the cuda-toolkit
# wheel release (default 13.0.3.0: CUDA 13.0, which any 580 or newer driver
# runs).
#
# Writes ~/.cache/dyno/cuda/<llama-cpp-sys-2 version>-sm<archs joined by _>/:
# libggml-cuda.so, dyno-backends.txt (sha256sum's format) and
# build-info.txt. The wheels (1.1 GB installed, half a minute to fetch) go to
# ~/.cache/dyno/cuda/toolkit-<version>/, the build folder to
# ~/.cache/dyno/cuda/build/. On 2 cores one architecture takes about
# one hour (see build-info.txt); each further one adds most of that again.
# A second run with the same inputs prints the folder in seconds.
#
# The last line of stdout is the folder holding the module; everything else
# goes to stderr. The compiler runs under nice -n 19, with
# CMAKE_BUILD_PARALLEL_LEVEL (default: the number of cores) jobs.
# Needs cmake, g++, python3 with pip, and PyPI access.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { echo "build-cuda: $*" >&2; }
die() { log "$*"; exit 1; }

# --- inputs --------------------------------------------------------------
sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
[ -n "$sys_version" ] || die "no llama-cpp-sys-2 in Cargo.lock"
toolkit_version="${CUDA_TOOLKIT_VERSION:-13.0.3.0}"

archs_in=$(echo "${CUDA_ARCHS:-75;80;86;89;90;120}" | tr ', ' ';;' | tr -s ';' | sed 's/^;//; s/;$//')
[ -n "$archs_in" ] || die "CUDA_ARCHS is empty"
cmake_archs=()
IFS=';' read -ra _archs <<<"$archs_in"
for a in "${_archs[@]}"; do
  if [[ "$a" =~ ^[0-9]+[af]?$ ]]; then
    cmake_archs+=("$a-real")
  elif [[ "$a" =~ ^[0-9]+[af]?-(real|virtual)$ ]]; then
    cmake_archs+=("$a")
  else
    die "CUDA_ARCHS: '$a' is not a compute capability such as 90, 120 or 90-virtual"
  fi
done
cmake_archs_str=$(IFS=';'; echo "${cmake_archs[*]}")
key="$sys_version-sm$(echo "$archs_in" | tr ';' '_')"

cache="$HOME/.cache/dyno/cuda"
out="$cache/$key"
build="$cache/build/$key"
tk="$cache/toolkit-$toolkit_version"
wheels="$tk/wheels"
root="$tk/root"

# --- cache hit -------------------------------------------------------------
cached() {
  [ -f "$out/libggml-cuda.so" ] && [ -f "$out/dyno-backends.txt" ] && [ -f "$out/build-info.txt" ] \
    && grep -qx "cuda-toolkit: $toolkit_version" "$out/build-info.txt" \
    && (cd "$out" && grep -v '^#' dyno-backends.txt | sha256sum -c --quiet --status -)
}
if cached; then
  log "cached: $out"
  echo "$out"
  exit 0
fi

mkdir -p "$cache/build"
# One build per folder at a time; a second run waits, then finds the result.
exec 9>"$cache/build/$key.lock"
if ! flock -n 9; then
  log "another build of $key is running; waiting for it"
  flock 9
fi
if cached; then
  echo "$out"
  exit 0
fi

for tool in cmake g++ gcc python3 readelf sha256sum; do
  command -v "$tool" >/dev/null || die "needs $tool"
done

# --- llama.cpp sources -----------------------------------------------------
crate_src() {
  local d
  for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version"; do
    [ -d "$d/llama.cpp/ggml/src/ggml-cuda" ] && { echo "$d"; return 0; }
  done
  return 1
}
src=$(crate_src) || { log "unpacking the crates (cargo fetch)"; cargo fetch >/dev/null; src=$(crate_src); } \
  || die "no llama-cpp-sys-2 $sys_version source under ${CARGO_HOME:-$HOME/.cargo}/registry/src even after cargo fetch"
llama_src="$src/llama.cpp"

# --- CUDA from PyPI ----------------------------------------------------------
if [ ! -f "$wheels/.complete" ]; then
  log "installing CUDA wheels (cuda-toolkit $toolkit_version: nvcc, nvvm, crt, cudart, cccl, cublas) into $wheels"
  t0=$(date +%s)
  rm -rf "$wheels.tmp"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location --no-compile \
    --root-user-action=ignore --target "$wheels.tmp" \
    "cuda-toolkit[nvcc,nvvm,crt,cudart,cccl,cublas]==$toolkit_version" >&2
  rm -rf "$wheels"
  mv "$wheels.tmp" "$wheels"
  touch "$wheels/.complete"
  log "wheels installed in $(( $(date +%s) - t0 )) s"
fi
cu=$(find "$wheels/nvidia" -mindepth 1 -maxdepth 1 -type d -name 'cu1*' | head -n 1)
[ -n "$cu" ] && [ -x "$cu/bin/nvcc" ] || die "the wheels in $wheels have no nvidia/cu*/bin/nvcc"

# The toolkit root CMake sees: symlinks into the wheels, plus what they lack.
if [ ! -f "$root/.complete" ]; then
  log "assembling a CUDA toolkit root in $root"
  rm -rf "$root"
  mkdir -p "$root/bin" "$root/lib/stubs"
  # nvcc takes TOP (include/, nvvm/, lib/) from the folder it was called
  # from, so bin/ holds links to each file rather than being one.
  for f in "$cu"/bin/*; do ln -s "$f" "$root/bin/"; done
  ln -s "$cu/include" "$root/include"
  ln -s "$cu/nvvm" "$root/nvvm"
  for f in "$cu"/lib/*; do ln -s "$f" "$root/lib/"; done
  # Unversioned names for the linker: libcudart.so -> libcudart.so.13 ...
  for f in "$cu"/lib/lib*.so.*; do
    base=$(basename "$f")
    case "$base" in *.alt.so.*|*builtins*) continue ;; esac
    ln -sf "$base" "$root/lib/${base%%.so.*}.so"
  done
  ln -s lib "$root/lib64"
  # The driver stub: each cu* function cuda.h declares (after its macros
  # have mapped the names to their current versions, cuMemGetInfo_v2 ...).
  gcc -E -P -x c -I "$cu/include" "$cu/include/cuda.h" \
    | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | sed 's/[[:space:]]*($//' | sort -u \
    | sed 's/.*/void &(void) {}/' >"$root/lib/stubs/libcuda-stub.c"
  [ "$(wc -l <"$root/lib/stubs/libcuda-stub.c")" -gt 100 ] || die "found too few driver functions in cuda.h for the stub"
  gcc -shared -fPIC -O0 -Wl,-soname,libcuda.so.1 -o "$root/lib/stubs/libcuda.so" "$root/lib/stubs/libcuda-stub.c"
  touch "$root/.complete"
fi
nvcc_version=$("$root/bin/nvcc" --version | grep -m1 'release')
wheel_versions=$(python3 -m pip list --disable-pip-version-check --path "$wheels" --format freeze 2>/dev/null \
  | grep -iE '^(nvidia-|cuda-toolkit)' | tr '\n' ' ')

# --- configure and build ---------------------------------------------------
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
options=(
  -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_C_FLAGS="-ffunction-sections -fdata-sections -fPIC -m64"
  -DCMAKE_CXX_FLAGS="-ffunction-sections -fdata-sections -fPIC -m64"
  -DCMAKE_CUDA_COMPILER="$root/bin/nvcc"
  -DCUDAToolkit_ROOT="$root"
  -DCMAKE_CUDA_ARCHITECTURES="$cmake_archs_str"
  # CMake links nvcc targets with the static CUDA runtime by default.
  -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared
  # No RUNPATH into this machine's cache (nor its libcuda stub): the GPU
  # machine's loader finds the CUDA libraries, and Dyno has already loaded
  # libggml-base.so.0 when it opens the module.
  -DCMAKE_SKIP_BUILD_RPATH=ON
  -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF
  -DGGML_OPENMP=ON -DGGML_CUDA=ON -DGGML_CUDA_NCCL=OFF
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_APP=OFF
)
mkdir -p "$build"
t0=$(date +%s)
log "configuring llama.cpp from $llama_src (CMAKE_CUDA_ARCHITECTURES=$cmake_archs_str; log: $build/cmake.log)"
if ! cmake -S "$llama_src" -B "$build/out" "${options[@]}" >"$build/cmake.log" 2>&1; then
  tail -n 30 "$build/cmake.log" >&2
  die "configuring failed; the whole log is $build/cmake.log"
fi
log "building target ggml-cuda with $CMAKE_BUILD_PARALLEL_LEVEL jobs under nice -n 19 (log: $build/build.log)"
if ! nice -n 19 cmake --build "$build/out" --target ggml-cuda >"$build/build.log" 2>&1; then
  grep -m 20 -E 'error|Error' "$build/build.log" >&2 || tail -n 30 "$build/build.log" >&2
  die "building failed; the whole log is $build/build.log"
fi
wall=$(( $(date +%s) - t0 ))
module=$(find "$build/out" -name libggml-cuda.so -type f -print -quit)
[ -n "$module" ] || die "the build made no libggml-cuda.so (see $build/build.log)"

# --- checks ------------------------------------------------------------------
needed=$(readelf -d "$module" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
needed_line=$(tr '\n' ' ' <<<"$needed" | sed 's/ $//')
for lib in libcuda.so.1 libcudart.so.13 libcublas.so.13 libggml-base.so.0; do
  grep -qx "$lib" <<<"$needed" || die "$module does not need $lib; it needs: $needed_line"
done
# The module calls no cuBLASLt function itself, so a linker that drops unused
# libraries (--as-needed, this gcc's default, as Ubuntu's) leaves it out of
# the list; libcublas.so.13 needs it, so it is loaded all the same.
if grep -qx libcublasLt.so.13 <<<"$needed"; then
  lt="libcublasLt.so.13: needed by the module"
elif readelf -d "$root/lib/libcublas.so.13" | grep -q '(NEEDED).*\[libcublasLt.so.13\]'; then
  lt="libcublasLt.so.13: needed through libcublas.so.13"
else
  die "neither $module nor libcublas.so.13 needs libcublasLt.so.13"
fi
if readelf -d "$module" | grep -qE '\((RPATH|RUNPATH)\)'; then
  die "$module has an RPATH or RUNPATH: $(readelf -d "$module" | grep -E 'R(UN)?PATH')"
fi
# Bundled CUDA runtime or cuBLAS code would show as their entry points defined here.
if readelf -W -s "$module" | awk '$7 != "UND"' | grep -qE ' (cudaMalloc|cublasCreate_v2|cuInit)(@|$)'; then
  die "$module defines CUDA runtime, cuBLAS or driver functions itself: it bundles a CUDA library"
fi

# --- result ------------------------------------------------------------------
size=$(stat -c %s "$module")
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cp "$module" "$out.tmp/libggml-cuda.so"
{
  echo "# llama.cpp backend modules for Dyno: sha256, two spaces, file name"
  echo "# build: llama-cpp-sys-2 $sys_version"
  (cd "$out.tmp" && sha256sum libggml-cuda.so)
} >"$out.tmp/dyno-backends.txt"
{
  echo "module: libggml-cuda.so"
  echo "llama-cpp-sys-2: $sys_version"
  echo "cuda archs: $archs_in"
  echo "CMAKE_CUDA_ARCHITECTURES: $cmake_archs_str"
  echo "cuda-toolkit: $toolkit_version"
  echo "wheels: $wheel_versions"
  echo "nvcc: $nvcc_version"
  echo "host compiler: $(g++ --version | head -n 1)"
  echo "build wall time: $wall s (configure and compile, $CMAKE_BUILD_PARALLEL_LEVEL jobs on $(nproc) cores, $(uname -m))"
  echo "size: $size bytes ($(( (size + 524288) / 1048576 )) MiB)"
  echo "needed: $needed_line"
  echo "$lt"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$out.tmp/build-info.txt"
rm -rf "$out"
mv "$out.tmp" "$out"
sed 's/^/build-cuda:   /' "$out/build-info.txt" >&2
echo "$out"
