#!/usr/bin/env bash
# Pack the GPU kit: one folder (gpu-kit/ in the repository, ignored by git,
# so the device tool can carry it to a GPU machine) with everything
# scripts/gpu/check.sh needs there, where nothing can be built or fetched:
#
#   dyno                 the release CLI, built as always (.cargo/config.toml:
#                        x86-64-v3, llama.cpp as shared libraries with
#                        loadable backends), so it runs on the GPU machine's CPU
#   lib*.so.0            llama.cpp's libraries of that build
#   libggml-cpu.so       the CPU module of that build
#   libggml-cuda.so      the CUDA module for sm_90 (scripts/gpu/build-cuda.sh),
#                        unless KIT_CUDA=0
#   libggml-rpc.so       the RPC module of that build (every build has it)
#   libggml-vulkan.so    the Vulkan module, when scripts/gpu/build-vulkan.sh
#                        has built one (KIT_VULKAN=1 builds it: ~20 minutes),
#                        and vulkan-loader/ beside it (the Vulkan loader
#                        and the GL dispatch libraries NVIDIA's driver needs)
#   dyno-membw           a kernel that measures the GPU's read bandwidth
#                        (membw.cu), with the CUDA module
#   dyno-backends.txt    every module's sha256 for this llama.cpp build
#   llama-bench          llama.cpp's own, compiled against the same headers
#                        and linked to the same libraries, so it loads the
#                        very same modules from the same folder
#   check.sh, check-report.py, cpu-decode.sh, prefill-parts.sh
#   models/              KIT_MODELS (space-separated GGUF files), if any
#   templates/           the front 4 MiB (the whole header) of each of
#                        KIT_TEMPLATES (default: the SmolLM2 test model), as
#                        .gguf-header files: dyno synth --shape writes the 1B
#                        and 8B models from them on the GPU machine, with no
#                        weights carried
#
# The kit must stay within 60 MiB (the device tool carries 64 MiB): when the
# folder is larger it is also packed as gpu-kit.tar.xz, and the check is run
# as `tar xJf gpu-kit.tar.xz && bash gpu-kit/check.sh`. The script prints
# the sizes and fails when even the archive is over.
#
# Time on 2 cores: the CUDA module is the long part (see build-cuda.sh and
# docs/method.md); everything else reuses the release build and takes a
# minute or two.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
kit="${KIT_DIR:-$PWD/gpu-kit}"
limit=$((60 * 1024 * 1024))
log() { echo "kit: $*" >&2; }

# The whole workspace, as the tests and the app build it, so llama.cpp is
# compiled once for all of them (the app embeds the built UI).
[ -f ui/dist/index.html ] || (cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build) >&2
cargo build --release --workspace >&2
rel="$CARGO_TARGET_DIR/release"
rm -rf "$kit"
mkdir -p "$kit/models"
# Symbols stripped: a GPU machine runs the kit, nobody debugs it there, and
# the carry limit is tight.
strip --strip-unneeded -o "$kit/dyno" "$rel/dyno"
# The libraries, the modules the build's list names, and the list; a module
# built apart (CUDA, Vulkan) joins only when its own list names the same
# llama.cpp build (add_module).
. scripts/lib/modules.sh
copy_build_modules "$rel" "$kit"
add_module() { add_modules "$1" "$kit"; }
if [ "${KIT_CUDA:-1}" != 0 ]; then
  cuda_dir=$(CUDA_ARCHS="${CUDA_ARCHS:-90}" bash scripts/gpu/build-cuda.sh | tail -n 1)
  add_module "$cuda_dir"
  # dyno-membw (membw.cu): the device's streaming read bandwidth, measured,
  # for the roofline. Compiled with the nvcc of the module's own toolkit, for
  # the same architectures; it needs the same CUDA runtime there.
  tk_version=$(sed -n 's/^cuda-toolkit: //p' "$cuda_dir/build-info.txt")
  nvcc="$HOME/.cache/dyno/cuda/toolkit-$tk_version/root/bin/nvcc"
  gencode=()
  IFS=';' read -ra _archs <<<"$(echo "${CUDA_ARCHS:-90}" | tr ', ' ';;')"
  for a in "${_archs[@]}"; do
    a=${a%%-*}
    [ -n "$a" ] && gencode+=(-gencode "arch=compute_$a,code=sm_$a")
  done
  if "$nvcc" -O3 "${gencode[@]}" -cudart shared -o "$kit/dyno-membw" scripts/gpu/membw.cu >&2; then
    strip --strip-unneeded "$kit/dyno-membw"
  else
    log "dyno-membw not built: the check's roofline then uses NVML's theoretical bandwidth only"
  fi
fi
if [ "${KIT_VULKAN:-0}" != 0 ] || [ -n "${KIT_VULKAN_DIR:-}" ]; then
  add_module "${KIT_VULKAN_DIR:-$(bash scripts/gpu/build-vulkan.sh | tail -n 1)}"
  # The Vulkan loader (Debian's libvulkan.so.1, half a megabyte) and the
  # GL vendor-neutral dispatch libraries NVIDIA's Vulkan driver
  # (libGLX_nvidia.so.0) links against: a GPU machine set up for CUDA may
  # have the driver's ICD but no loader, as the H100 machines had.
  # check.sh uses each only where the machine has none of its own, so a
  # system library always wins.
  mkdir -p "$kit/vulkan-loader"
  for lib in libvulkan.so.1 libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libOpenGL.so.0; do
    found=$(ldconfig -p | awk -v l="$lib" '!f && $1 == l && /x86-64/ {print $NF; f=1}')
    if [ -n "$found" ]; then
      cp -L "$found" "$kit/vulkan-loader/$lib"
    else
      log "no $lib on this machine to carry: the check uses the GPU machine's, if any"
    fi
  done
fi

# llama-bench against Dyno's own llama.cpp: the crate's headers, Dyno's
# libraries. Its source comes from the llama-cpp-python sdist, as for
# scripts/bench/llama-tools.sh.
# llama-tools.sh finds the crate's llama.cpp tree ($llama_src), as for the
# other tools.
. scripts/bench/llama-tools.sh
bench_src="$(bash scripts/bench/fetch-llama-tools-src.sh)/llama-bench"
log "compiling llama-bench against $llama_src"
g++ -std=c++17 -O3 -march=x86-64-v3 -DNDEBUG \
  -I "$llama_src/include" -I "$llama_src/ggml/include" -I "$llama_src/common" -I "$bench_src" \
  "$bench_src/main.cpp" "$bench_src/llama-bench.cpp" -o "$kit/llama-bench" \
  -L "$kit" -l:libllama.so.0 -l:libggml.so.0 -l:libggml-base.so.0 -l:libllama-common.so.0 \
  -Wl,-rpath,'$ORIGIN' -Wl,--allow-shlib-undefined -lpthread
strip --strip-unneeded "$kit/llama-bench"

cp scripts/gpu/check.sh scripts/gpu/check-report.py scripts/gpu/cpu-decode.sh scripts/gpu/prefill-parts.sh "$kit/"
for m in ${KIT_MODELS:-}; do cp "$m" "$kit/models/"; done
mkdir -p "$kit/templates"
for m in ${KIT_TEMPLATES-$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf}; do
  head -c 4M "$m" >"$kit/templates/$(basename "$m" .gguf).gguf-header"
done

size=$(du -sb "$kit" | cut -f1)
log "folder: $((size / 1024 / 1024)) MiB ($kit)"
du -b "$kit"/* | sort -n | tail -n 6 | awk '{printf "kit:   %6.1f MiB  %s\n", $1/1048576, $2}' >&2
if [ "$size" -gt "$limit" ]; then
  tar -C "$(dirname "$kit")" -cJf "$kit.tar.xz" "$(basename "$kit")"
  packed=$(stat -c %s "$kit.tar.xz")
  log "packed: $((packed / 1024 / 1024)) MiB ($kit.tar.xz)"
  [ "$packed" -le "$limit" ] || { log "the kit is over 60 MiB even packed"; exit 1; }
  echo "$kit.tar.xz"
else
  rm -f "$kit.tar.xz"
  echo "$kit"
fi
