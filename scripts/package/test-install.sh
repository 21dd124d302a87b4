#!/usr/bin/env bash
# Install Dyno's .deb on a clean Debian root, not on the build machine, and
# use it there as a user would:
#
#   1. a minimal Debian 12 root (debootstrap, minbase), made once and kept as
#      a tarball in ~/.cache/dyno/package; every run unpacks a fresh copy
#   2. apt install ./dyno_*.deb inside it: apt pulls what the package
#      declares (WebKitGTK and the rest) from Debian's mirror; timed
#   3. the app started under Xvfb there, with nothing measured yet, alive
#      after its first screen, and a screenshot of that screen
#      (OUT/installed-first-screen.png)
#   4. dyno --version, dyno hw --json and dyno bench on SmolLM2 there
#   5. apt remove dyno: the program is gone, the user's database stays
#
# It needs root (chroot and mounts) and Debian's mirror. What it measured is
# printed and written to OUT/test-install.json.
#
# Usage: bash scripts/package/test-install.sh [DEB]  (default: builds it
#        with scripts/package/package.sh)
# Settings: OUT (./dist/test-install), SUITE (bookworm),
#           MIRROR (http://deb.debian.org/debian), KEEP_ROOT=1 keeps the root
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
log() { echo "test-install: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root (chroot and mounts): run it with sudo"; exit 2; }
out="${OUT:-$PWD/dist/test-install}"
suite="${SUITE:-bookworm}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
mkdir -p "$out"

deb="${1:-$(bash scripts/package/package.sh | head -n 1)}"
[ -f "$deb" ] || { log "no package at $deb"; exit 2; }
model="$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$model" ] || bash scripts/lib/fetch-test-models.sh >&2

# 1. The clean root, made once.
cache="$HOME/.cache/dyno/package"
base="$cache/$suite-minbase.tar"
if [ ! -f "$base" ]; then
  command -v debootstrap >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  }
  log "making a minimal $suite root with debootstrap (once; a few minutes)"
  mkdir -p "$cache"
  tmp=$(mktemp -d)
  debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { log "debootstrap failed: $(tail -n 3 "$cache/debootstrap.log")"; rm -rf "$tmp"; exit 1; }
  rm -rf "$tmp/var/cache/apt/archives"/*.deb
  tar -C "$tmp" -cf "$base.part" . && mv "$base.part" "$base"
  rm -rf "$tmp"
fi

root=$(mktemp -d /tmp/dyno-clean-root.XXXXXX)
cleanup() {
  # Anything the app left running inside, then the mounts, then the root.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  sleep 1
  for m in dev/shm dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
  [ "${KEEP_ROOT:-0}" = 1 ] && log "root kept at $root" || rm -rf "$root"
}
trap cleanup EXIT
tar -C "$root" -xf "$base"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs shm "$root/dev/shm"
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 "$@"; }

# 2. Install, timed.
cp "$deb" "$root/tmp/"
cp "$model" "$root/tmp/smollm2.gguf"
log "apt install ./$(basename "$deb") in the clean root"
in_root apt-get update -qq >&2
t0=$(date +%s.%N)
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "/tmp/$(basename "$deb")" >"$out/apt-install.log" 2>&1 ||
  { log "apt install failed: $(tail -n 5 "$out/apt-install.log")"; exit 1; }
t1=$(date +%s.%N)
install_s=$(echo "$t1 - $t0" | bc)
pulled=$(grep -c '^Setting up ' "$out/apt-install.log" || true)
log "installed in ${install_s}s, with $pulled packages set up"

# 3. The app, its first screen: started before anything is measured, as a
# new user starts it. Xvfb and xwd from Debian, inside the root.
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends xvfb x11-apps >/dev/null 2>&1
in_root sh -c 'Xvfb :71 -screen 0 1280x820x24 -nolisten tcp >/tmp/xvfb.log 2>&1 &
  sleep 2
  DISPLAY=:71 XDG_RUNTIME_DIR=/tmp dyno-app >/tmp/app.log 2>&1 &
  echo $! >/tmp/app.pid
  sleep "${APP_WAIT_S:-20}"
  DISPLAY=:71 xwd -root -silent >/tmp/first-screen.xwd'
app_alive=false
kill -0 "$(cat "$root/tmp/app.pid")" 2>/dev/null && in_root sh -c 'kill -0 "$(cat /tmp/app.pid)"' && app_alive=true
cp "$root/tmp/app.log" "$out/app.log"
command -v xwdtopnm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq netpbm >/dev/null
xwdtopnm "$root/tmp/first-screen.xwd" 2>/dev/null | ppmtoppm >"$out/first-screen.ppm"
pnmtopng "$out/first-screen.ppm" >"$out/installed-first-screen.png" 2>/dev/null
# How many colours the screen holds: a window that drew nothing is one or two.
colours=$(python3 - "$out/first-screen.ppm" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
# P6 header: magic, width, height, maxval, then one whitespace byte.
fields, pos = [], 0
while len(fields) < 4:
    while data[pos:pos + 1].isspace(): pos += 1
    end = pos
    while not data[end:end + 1].isspace(): end += 1
    fields.append(data[pos:end]); pos = end
pixels = data[pos + 1:]
print(len({pixels[i:i + 3] for i in range(0, len(pixels), 3)}))
PY
)
rm -f "$out/first-screen.ppm"
log "app alive after its first screen: $app_alive; the screenshot has $colours colours"
in_root sh -c 'kill "$(cat /tmp/app.pid)"; sleep 1; pkill Xvfb' || true

# 4. The CLI, from the PATH the package put it on.
in_root dyno --version | tee "$out/version.txt" >&2
in_root dyno hw --json >"$out/hw.json"
in_root dyno bench /tmp/smollm2.gguf -p 64 -n 16 -r 2 --json >"$out/bench.json" 2>"$out/bench.err" ||
  { log "dyno bench failed: $(tail -n 5 "$out/bench.err")"; exit 1; }

# 5. Remove: the program goes, the user's data stays.
in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq dyno >"$out/apt-remove.log" 2>&1
gone=true
for f in /usr/bin/dyno /usr/bin/dyno-app /usr/lib/dyno; do [ -e "$root$f" ] && gone=false; done
db_kept=false
[ -s "$root/root/.local/share/dyno/dyno.db" ] && db_kept=true

python3 - "$out" "$deb" "$install_s" "$pulled" "$app_alive" "$colours" "$gone" "$db_kept" "$suite" <<'PY'
import json, os, sys
out, deb, install_s, pulled, alive, colours, gone, kept, suite = sys.argv[1:]
bench = json.load(open(f"{out}/bench.json"))
hw = json.load(open(f"{out}/hw.json"))
run = bench["runs"][0]
rates = {r["test"]: r.get("mean_tokens_per_s") for r in run["results"]}
report = {
    "suite": suite,
    "deb": os.path.basename(deb),
    "deb_bytes": os.path.getsize(deb),
    "install_s": round(float(install_s), 1),
    "packages_set_up": int(pulled),
    "version": open(f"{out}/version.txt").read().strip(),
    "modules": [
        {"file": m.get("file"), "loaded": m.get("loaded"), "why_not": m.get("reason")}
        for m in ((hw.get("llama_cpp") or {}).get("modules") or {}).get("modules") or []
    ],
    "bench": rates,
    "app_alive": alive == "true",
    "screenshot_colours": int(colours),
    "removed": gone == "true",
    "database_kept": kept == "true",
}
json.dump(report, open(f"{out}/test-install.json", "w"), indent=2)
print(json.dumps(report, indent=2))
ok = report["app_alive"] and report["screenshot_colours"] > 16 and report["removed"] and report["database_kept"] \
    and all(v and v > 0 for v in rates.values())
sys.exit(0 if ok else 1)
PY
