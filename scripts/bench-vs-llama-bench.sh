#!/usr/bin/env bash
# Compare Dyno's timings with llama-bench's on the same llama.cpp source,
# model and settings, and print the ratio Dyno / llama-bench.
#
# llama-bench is built from the llama.cpp source inside the llama-cpp-sys-2
# crate package that Dyno itself compiles (found through Cargo.lock), with the
# same CMake options that crate's build script uses (Release, GGML_NATIVE,
# OpenMP, static libraries). The crate package leaves out llama-bench's own
# source files, so point LLAMA_BENCH_SRC at a tools/llama-bench folder
# (llama-bench.cpp, main.cpp, CMakeLists.txt) from the llama.cpp release the
# crate pins; the script refuses to guess.
#
# The two programs run alternately, ROUNDS times each, so drift in the
# machine (heat, frequency, other load) hits both equally.
#
# Usage: LLAMA_BENCH_SRC=DIR scripts/bench-vs-llama-bench.sh [MODEL.gguf ...]
#   (default models: the two PyPI test models)
# Settings: THREADS (2), REPS (5), ROUNDS (3), N_PROMPT (512), N_GEN (128).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

THREADS="${THREADS:-2}"
REPS="${REPS:-5}"
ROUNDS="${ROUNDS:-3}"
N_PROMPT="${N_PROMPT:-512}"
N_GEN="${N_GEN:-128}"

if [ $# -eq 0 ]; then
  bash scripts/fetch-test-models.sh "$DYNO_TEST_MODELS"
  set -- "$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" "$DYNO_TEST_MODELS/gemma-3-270m-q4_k_m.gguf"
fi

sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
crate_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version" 2>/dev/null | head -n 1)
if [ -z "$crate_src" ]; then
  cargo fetch >/dev/null
  crate_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$sys_version" | head -n 1)
fi
llama_src="$crate_src/llama.cpp"

bench_src="${LLAMA_BENCH_SRC:-$llama_src/tools/llama-bench}"
if [ ! -f "$bench_src/llama-bench.cpp" ] || [ ! -f "$bench_src/CMakeLists.txt" ]; then
  echo "bench-vs-llama-bench: $bench_src has no llama-bench.cpp and CMakeLists.txt." >&2
  echo "  The llama-cpp-sys-2 $sys_version package omits them; set LLAMA_BENCH_SRC to tools/llama-bench" >&2
  echo "  of the llama.cpp release that package pins (llama.cpp $(grep -m1 'set(LLAMA_VERSION' "$llama_src/CMakeLists.txt" 2>/dev/null || echo '?'))." >&2
  exit 2
fi

build="$CARGO_TARGET_DIR/llama-bench-$sys_version"
mkdir -p "$build/wrapper"
# A two-line project: the crate's llama.cpp plus llama-bench's own CMake file.
cat > "$build/wrapper/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.14)
project(dyno_llama_bench C CXX)
add_subdirectory("$llama_src" llama.cpp)
add_subdirectory("$bench_src" llama-bench)
CMAKE
if [ ! -x "$build/out/llama-bench/llama-bench" ]; then
  echo "bench-vs-llama-bench: building llama-bench from $llama_src (about 10 minutes on 2 cores)" >&2
  flags="-ffunction-sections -fdata-sections -fPIC -m64"
  cmake -S "$build/wrapper" -B "$build/out" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_APP=OFF >"$build/cmake.log"
  cmake --build "$build/out" --target llama-bench -j "$(nproc)" >>"$build/cmake.log"
fi
llama_bench="$build/out/llama-bench/llama-bench"

cargo build --release >/dev/null
dyno="$CARGO_TARGET_DIR/release/dyno"
db="$(mktemp -d)/compare.db"
out="$(mktemp -d)"

echo "llama-cpp-sys-2 $sys_version · threads $THREADS · reps $REPS · rounds $ROUNDS · pp$N_PROMPT tg$N_GEN" >&2
for model in "$@"; do
  for round in $(seq 1 "$ROUNDS"); do
    echo "  $(basename "$model") round $round: dyno" >&2
    "$dyno" --db "$db" bench "$model" -p "$N_PROMPT" -n "$N_GEN" -r "$REPS" -t "$THREADS" --json \
      >"$out/dyno-$(basename "$model")-$round.json" 2>/dev/null
    echo "  $(basename "$model") round $round: llama-bench" >&2
    "$llama_bench" -m "$model" -p "$N_PROMPT" -n "$N_GEN" -r "$REPS" -t "$THREADS" -o json \
      >"$out/lb-$(basename "$model")-$round.json" 2>/dev/null
  done
done

python3 - "$out" "$@" <<'PY'
import json, os, statistics, sys
out, models = sys.argv[1], sys.argv[2:]
print(f"| model | test | dyno t/s | llama-bench t/s | dyno / llama-bench |")
print(f"| ----- | ---- | -------: | --------------: | -----------------: |")
for m in models:
    name = os.path.basename(m)
    dy, lb = {}, {}
    for f in sorted(os.listdir(out)):
        path = os.path.join(out, f)
        if f.startswith("dyno-" + name):
            for r in json.load(open(path))["runs"][0]["results"]:
                dy.setdefault(r["test"], []).extend(r["samples_tokens_per_s"])
        elif f.startswith("lb-" + name):
            for r in json.load(open(path)):
                test = f"pp{r['n_prompt']}" if r["n_gen"] == 0 else f"tg{r['n_gen']}"
                lb.setdefault(test, []).extend(r["samples_ts"])
    for test in dy:
        if test not in lb:
            continue
        d, l = statistics.mean(dy[test]), statistics.mean(lb[test])
        print(f"| {name} | {test} | {d:.2f} ± {statistics.stdev(dy[test]):.2f} | "
              f"{l:.2f} ± {statistics.stdev(lb[test]):.2f} | {d / l:.4f} |")
PY
