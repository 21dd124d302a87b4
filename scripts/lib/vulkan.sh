# shellcheck shell=bash
# Sourced by scripts/test/vulkan.sh and scripts/gpu/build-vulkan.sh: what a
# build of llama.cpp's Vulkan backend needs on Debian 12, installed once.
#
# Debian's Vulkan loader, glslc and SPIR-V headers, and Mesa's drivers
# (lavapipe, the software one the tests run on). Debian 12's Vulkan headers
# (1.3.239) lack VK_EXT_layer_settings, which this llama.cpp's Vulkan backend
# uses: only the headers of Debian 13's libvulkan-dev are taken and put ahead
# of the system ones (CXXFLAGS); the loader library stays Debian 12's.
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
  # awk reads to the end: an early exit would kill xz with SIGPIPE, which
  # pipefail turns into a failure of the whole script.
  file=$(xz -dc "$tmp/Packages.xz" | awk '/^Package: libvulkan-dev$/{p=1} p&&!done&&/^Filename:/{print $2; done=1}')
  curl -sSfL "$mirror/$file" -o "$tmp/vk.deb"
  dpkg -x "$tmp/vk.deb" "$tmp/x"
  mkdir -p "$hdr"
  rm -rf "$hdr/include"
  cp -r "$tmp/x/usr/include" "$hdr/include"
  rm -rf "$tmp"
fi
[ -d "$hdr/include" ] && export CXXFLAGS="${CXXFLAGS:-} -I$hdr/include"

