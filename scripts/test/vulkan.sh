#!/usr/bin/env bash
# GPU offload without a GPU: build Dyno with llama.cpp's Vulkan backend and
# run it on Mesa's software Vulkan driver (lavapipe), which runs on the CPU.
# Layers then really go to a Vulkan device, so the offload tests
# (tests/it/offload.rs, module `vulkan`) check llama.cpp's own report that they
# did, and an offload sweep gives real numbers.
#
# Separate from CI (scripts/test.sh): it compiles llama.cpp a second time,
# with a few hundred Vulkan shaders (18 minutes on 2 cores), and lavapipe
# is slow: the tests take about 10 minutes more.
#
#   bash scripts/test/vulkan.sh          build, test, then an offload sweep
#   bash scripts/test/vulkan.sh test     build and test only
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
# Its own target directory: the Vulkan build of llama.cpp must not replace
# the CPU one that CI caches.
export CARGO_TARGET_DIR="$HOME/.cache/dyno/target-vulkan"
. scripts/lib/vulkan.sh

bash scripts/lib/fetch-test-models.sh "$DYNO_TEST_MODELS"
# llama.cpp's Vulkan backend skips CPU-type devices such as lavapipe unless
# they are named; make lavapipe the only driver and name it.
export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
export GGML_VK_VISIBLE_DEVICES=0

cargo test --release -p dyno --features vulkan --test it -- --test-threads=1 offload::
[ "${1:-}" = test ] && exit 0

dyno="$CARGO_TARGET_DIR/release/dyno"
db=$(mktemp -d)/vulkan.db
"$dyno" --db "$db" hw
smol="$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
echo
echo "offload sweep on lavapipe (software Vulkan on this CPU): $smol"
# lavapipe is slow (a software GPU on 2 cores): short tests keep this to minutes.
"$dyno" --db "$db" bench "$smol" -p 32 -n 16 -r 3 --ngl 0,10,20,31
last=$("$dyno" --db "$db" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["run_id"])')
"$dyno" --db "$db" show "$last" | sed -n 1,6p
