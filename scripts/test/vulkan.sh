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
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo

need=()
for p in mesa-vulkan-drivers libvulkan-dev glslc spirv-headers; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "vulkan: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Debian 12's Vulkan headers (1.3.239) lack VK_EXT_layer_settings, which this
# llama.cpp's Vulkan backend uses. Take only the headers of Debian 13's
# libvulkan-dev (1.4) and put them ahead of the system ones; the loader
# library stays Debian 12's.
hdr="$HOME/.cache/dyno/tools/vulkan-headers"
if ! grep -qs LayerSettingEXT "$hdr/include/vulkan/vulkan_structs.hpp" &&
  ! grep -qs LayerSettingEXT /usr/include/vulkan/vulkan_structs.hpp; then
  echo "vulkan: fetching newer Vulkan headers from Debian 13" >&2
  tmp=$(mktemp -d)
  mirror=http://deb.debian.org/debian
  curl -sSfL "$mirror/dists/trixie/main/binary-amd64/Packages.xz" -o "$tmp/Packages.xz"
  file=$(xz -dc "$tmp/Packages.xz" | awk '/^Package: libvulkan-dev$/{p=1} p&&/^Filename:/{print $2; exit}')
  curl -sSfL "$mirror/$file" -o "$tmp/vk.deb"
  dpkg -x "$tmp/vk.deb" "$tmp/x"
  mkdir -p "$hdr"
  rm -rf "$hdr/include"
  cp -r "$tmp/x/usr/include" "$hdr/include"
  rm -rf "$tmp"
fi
[ -d "$hdr/include" ] && export CXXFLAGS="${CXXFLAGS:-} -I$hdr/include"

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
