#!/usr/bin/env bash
# Build Dyno's Linux packages from the release build the tests run:
#
#   dist/dyno_<version>_amd64.deb            apt install ./dyno_*.deb
#   dist/dyno-<version>-linux-x86_64.tar.gz  unpack anywhere, run ./dyno-app
#
# Both hold the same folder (/usr/lib/dyno in the .deb): the app (dyno-app),
# the CLI (dyno), llama.cpp's libraries and its backend modules, which Dyno
# loads from the executable's own folder (docs/cli.md, "Backend modules").
# The .deb adds /usr/bin/dyno and /usr/bin/dyno-app, a desktop entry and
# icons, and declares what it needs from Debian (WebKitGTK and the rest)
# from the binaries themselves (dpkg-shlibdeps), so `apt install` on a
# clean system pulls what is missing.
#
# The modules are llama.cpp's CPU backend once per CPU generation
# (scripts/package/build-cpu-variants.sh) and its Vulkan backend
# (scripts/gpu/build-vulkan.sh), each built here first if this machine has
# not cached it for this llama.cpp build (about 11 and 20 minutes on 2
# cores), plus the CUDA module where scripts/gpu/build-cuda.sh has cached it.
# PACKAGE_CPU_VARIANTS=0 keeps the build's single x86-64-v3 CPU module;
# PACKAGE_VULKAN=0 or PACKAGE_CUDA=0 leaves those out; PACKAGE_BUILD_MODULES=0
# takes only what is cached (the test suite's install test, which checks
# the package and not the modules, and must fit CI's time). The CUDA module
# bundles no CUDA runtime: it needs the NVIDIA driver, libcudart.so.13 and
# libcublas.so.13 on the user's machine, and `dyno hw` says which are
# missing.
#
# Why not `cargo tauri build`: its bundler would compile a second app (with
# tauri-cli, a 25-minute install on 2 cores) and copy only the executable,
# not the libraries and modules beside it. The binaries here are the ones the
# tests and the end-to-end test ran.
#
# The build is for x86-64-v3 (.cargo/config.toml), like every build of this
# project: a CPU from before Haswell (2013) or Excavator cannot run it.
#
# Usage: bash scripts/package/package.sh   (DIST: the output folder, ./dist)
# Prints the two packages' paths.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
dist="${DIST:-$PWD/dist}"
log() { echo "package: $*" >&2; }

# dpkg-shlibdeps (dpkg-dev) reads the dependencies; file tells ELF files.
for tool in dpkg-shlibdeps file; do
  command -v "$tool" >/dev/null || { log "$tool is missing: sudo apt-get install dpkg-dev file"; exit 2; }
done

version=$(awk -F'"' '/^\[workspace.package\]/{p=1} p&&/^version *=/{print $2; exit}' Cargo.toml)
[ -n "$version" ] || { log "no version in Cargo.toml's [workspace.package]"; exit 1; }
arch=$(dpkg --print-architecture)

[ -f ui/dist/index.html ] || (cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build) >&2
cargo build --release --workspace >&2
rel="$CARGO_TARGET_DIR/release"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
lib="$stage/deb/usr/lib/dyno"
mkdir -p "$lib"
# Symbols stripped: a package is for running, and they are most of the size.
for b in dyno dyno-app; do strip --strip-unneeded -o "$lib/$b" "$rel/$b"; done
. scripts/lib/modules.sh
copy_build_modules "$rel" "$lib"

# A module built apart joins only when its list names this llama.cpp build;
# one not built here, or of another build, is left out (and said so).
sys_version=$(awk '/^name = "llama-cpp-sys-2"/{getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock)
add_module() { add_modules "$1" "$lib" || true; }
variants="$HOME/.cache/dyno/cpu-variants/$sys_version"
vulkan="$HOME/.cache/dyno/vulkan/$sys_version"
# A release carries every module a user's machine may need, so what is not
# cached is built now, in its own target folder (the scripts say why).
if [ "${PACKAGE_BUILD_MODULES:-1}" != 0 ]; then
  if [ "${PACKAGE_CPU_VARIANTS:-1}" != 0 ] && [ ! -f "$variants/dyno-backends.txt" ]; then
    log "building the CPU variant modules (about 11 minutes on 2 cores)"
    bash scripts/package/build-cpu-variants.sh >/dev/null
  fi
  if [ "${PACKAGE_VULKAN:-1}" != 0 ] && [ ! -f "$vulkan/dyno-backends.txt" ]; then
    log "building the Vulkan module (about 20 minutes on 2 cores)"
    bash scripts/gpu/build-vulkan.sh >/dev/null
  fi
fi
# The CPU backend once per CPU generation, where
# scripts/package/build-cpu-variants.sh has built it for this llama.cpp
# build: it replaces the single x86-64-v3 module, so no two CPU modules of
# equal score compete (PACKAGE_CPU_VARIANTS=0 keeps the single one).
if [ "${PACKAGE_CPU_VARIANTS:-1}" != 0 ] && [ -d "$variants" ] && add_modules "$variants" "$lib"; then
  rm -f "$lib/libggml-cpu.so"
  sed -i '/  libggml-cpu\.so$/d' "$lib/dyno-backends.txt"
  log "CPU variants: $(ls "$lib" | grep -c '^libggml-cpu-') modules in place of libggml-cpu.so"
fi
[ "${PACKAGE_VULKAN:-1}" = 0 ] || add_module "$vulkan"
if [ "${PACKAGE_CUDA:-1}" != 0 ]; then
  for d in "$HOME/.cache/dyno/cuda/$sys_version"-sm*; do [ -d "$d" ] && add_module "$d"; done
fi

# What the .deb adds around that folder.
deb="$stage/deb"
mkdir -p "$deb/usr/bin" "$deb/usr/share/applications" "$deb/usr/share/doc/dyno" "$deb/DEBIAN"
ln -s ../lib/dyno/dyno "$deb/usr/bin/dyno"
ln -s ../lib/dyno/dyno-app "$deb/usr/bin/dyno-app"
for size in 32x32 128x128 256x256; do
  src="icons/$size.png"
  [ "$size" = 256x256 ] && src="icons/128x128@2x.png"
  install -Dm644 "$src" "$deb/usr/share/icons/hicolor/$size/apps/dyno.png"
done
cat >"$deb/usr/share/applications/dyno.desktop" <<EOF
[Desktop Entry]
Type=Application
Name=Dyno
GenericName=Language model benchmark
Comment=Measure how fast local language models run on this machine
Exec=dyno-app
Icon=dyno
Terminal=false
Categories=Development;
Keywords=llm;gguf;llama.cpp;benchmark;tokens;
EOF
cp README.md "$deb/usr/share/doc/dyno/"
license=$(awk -F'"' '/^\[workspace.package\]/{p=1} p&&/^license *=/{print $2; exit}' Cargo.toml)
printf 'Dyno %s\nLicense: %s\nIt includes llama.cpp and ggml (MIT License, the ggml authors).\n' \
  "$version" "${license:-see README}" >"$deb/usr/share/doc/dyno/copyright"

# Dependencies from the binaries themselves. The CUDA module is left out of
# this: its runtime is NVIDIA's, not a Debian package, and it is optional.
shl=$(mktemp -d)
mkdir -p "$shl/debian"
printf 'Source: dyno\n\nPackage: dyno\nArchitecture: any\n' >"$shl/debian/control"
elfs=()
for f in "$lib"/*; do
  case $f in *libggml-cuda.so) continue ;; esac
  file -b "$f" | grep -q '^ELF' && elfs+=("$f")
done
depends=$(cd "$shl" && LD_LIBRARY_PATH="$lib" dpkg-shlibdeps -O -l"$lib" "${elfs[@]}" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
rm -rf "$shl"
[ -n "$depends" ] || { log "dpkg-shlibdeps found no dependencies"; exit 1; }
size_kb=$(du -sk "$deb/usr" | cut -f1)
homepage=$(awk -F'"' '/^\[workspace.package\]/{p=1} p&&/^repository *=/{print $2; exit}' Cargo.toml)
cat >"$deb/DEBIAN/control" <<EOF
Package: dyno
Version: $version
Architecture: $arch
Maintainer: Dyno developers <dyno@localhost>
Installed-Size: $size_kb
Depends: $depends
Suggests: nvidia-driver
Section: devel
Priority: optional
Homepage: $homepage
Description: measure how fast local language models run on this machine
 Dyno measures prefill and decode tokens per second, time to first token,
 memory and energy of GGUF models through llama.cpp, with the conditions of
 every figure, and keeps them in SQLite. A desktop app (dyno-app) and a
 command line (dyno) do the same.
 .
 GPU support is loaded as llama.cpp backend modules from /usr/lib/dyno:
 Vulkan when the package carries its module, CUDA when it carries the CUDA
 module and the machine has NVIDIA's driver and CUDA 13 runtime.
 "dyno hw" lists each module, loaded or why not.
EOF

mkdir -p "$dist"
out_deb="$dist/dyno_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$deb" "$out_deb" >&2

# The portable archive: the same folder, with the desktop entry and an icon.
name="dyno-$version-linux-x86_64"
mkdir -p "$stage/tar/$name"
cp -a "$lib/." "$stage/tar/$name/"
cp icons/128x128.png "$stage/tar/$name/dyno.png"
sed 's|^Exec=.*|Exec=dyno-app|; s|^Icon=.*|Icon=dyno|' "$deb/usr/share/applications/dyno.desktop" >"$stage/tar/$name/dyno.desktop"
cp README.md "$stage/tar/$name/"
out_tar="$dist/$name.tar.gz"
tar -C "$stage/tar" --owner=0 --group=0 -czf "$out_tar" "$name"

for p in "$out_deb" "$out_tar"; do log "$(du -h "$p" | cut -f1) $p"; done
echo "$out_deb"
echo "$out_tar"
