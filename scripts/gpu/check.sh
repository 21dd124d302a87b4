#!/usr/bin/env bash
# The GPU check: one command, run on a GPU machine from the folder that holds
# the kit (scripts/gpu/kit.sh), that measures what Dyno has never measured
# there and writes report.md and report.json into $OUT (default ./check-out).
#
# A GPU machine is lent rarely and for minutes, so everything it needs is in
# the kit: Dyno and llama-bench built from the same llama.cpp, loading the
# very same backend modules from the kit's folder (CPU, and CUDA and Vulkan
# when the kit has them), so the two agree or disagree about the same code.
#
# What it runs, each part only where it can (a CPU-only machine reports "no
# CUDA device" with the module's own reason, and measures the CPU):
#   1. dyno hw --json: NVML's GPUs, driver, memory, bandwidth; every module,
#      loaded or why not, with its devices.
#   2. per model in the kit's models/ (or CHECK_MODELS), and per synthetic
#      shape (CHECK_SHAPES, on a GPU by default Llama 3.2 1B at Q4_K_M and
#      Q8_0, a 64-expert mixture of its width and Llama 3.1 8B at Q4_K_M,
#      written there by dyno synth; the first H100 check ran Q4_0), per
#      backend (CUDA at
#      --ngl 99, Vulkan at --ngl 99, CPU at --ngl 0): dyno bench and
#      llama-bench on pp512 and tg128 (CHECK_REPS repetitions), alternating
#      CHECK_PAIRS times, with Dyno ÷ llama-bench and its interval.
#   3. on the first GPU: its measured read bandwidth (dyno-membw, first);
#      a mixture of experts with --n-cpu-moe 0,8,16 against llama-bench's;
#      the first model's prefill with both programs pinned to the GPU's
#      NUMA-local CPUs and not; the first model over RPC (a local
#      dyno rpc-server lending the GPU) against llama-bench --rpc; an offload
#      sweep (--ngl 0,8,16,24,99) and --fit; telemetry on against off;
#      --sustain on the largest model.
#   4. report.md and report.json: each figure with its conditions, energy per
#      token and the roofline where the run recorded them.
#
# Usage: bash check.sh [KIT_DIR]   (KIT_DIR: this script's folder by default)
# Settings: OUT, CHECK_MODELS (space-separated GGUF paths), CHECK_TWINS (real
# GGUF files to measure against their synthetic twins), CHECK_SHAPES
# (space-separated SHAPE:TYPE, "" for none), CHECK_SYNTH_DIR, CHECK_PAIRS (3 on
# a GPU, 1 on the CPU), CHECK_REPS (5), CHECK_PROMPT and CHECK_GEN (512 and
# 128: the tests' lengths; the pinned prefill is always pp512),
# CHECK_PIN_ROUNDS (6 on a GPU, 0 on the CPU), CHECK_PIN_REPS (10),
# CHECK_RPC_PAIRS (2 on a GPU, 0 on the CPU), CHECK_SKIP (parts not to run,
# below), CHECK_BUDGET_S (420: later parts are skipped, and say so, once the
# check has run this long).
set -uo pipefail
kit=$(cd "${1:-$(dirname "$0")}" && pwd)
out="${OUT:-$PWD/check-out}"
mkdir -p "$out/raw"
reps="${CHECK_REPS:-5}"
# The tests' lengths: llama-bench's defaults, pp512 and tg128. CI's check on
# a CPU shortens them (it checks the kit's layout, not the figures).
prompt="${CHECK_PROMPT:-512}"
gen="${CHECK_GEN:-128}"
budget="${CHECK_BUDGET_S:-420}"
start=$(date +%s)
log() { echo "check: $*" >&2; echo "$*" >>"$out/raw/log.txt"; }
elapsed() { echo $(($(date +%s) - start)); }
in_budget() { [ "$(elapsed)" -lt "$budget" ]; }
# CHECK_SKIP: parts not to run, space-separated, for a loan spent on what an
# earlier check did not measure: cpu (the CPU pairs beside a GPU), pin,
# ncmoe, rpc, offload (and --fit), telemetry, sustain.
skipped() {
  case " ${CHECK_SKIP:-} " in *" $1 "*) log "skipped $1: CHECK_SKIP"; return 0 ;; esac
  return 1
}

# The kit's own modules, libraries and database; nothing of the machine's.
export DYNO_BACKEND_DIR="$kit"
export DYNO_DB="$out/dyno.db"
export LD_LIBRARY_PATH="$kit${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The kit's Vulkan loader and GL dispatch libraries, each only where the
# machine has none of its own (linked into a folder of their own, since
# LD_LIBRARY_PATH is searched before the system's libraries).
vk_loader="system"
if [ -d "$kit/vulkan-loader" ]; then
  vk_libs=$(mktemp -d)
  trap 'rm -rf "$vk_libs"' EXIT
  for lib in "$kit"/vulkan-loader/*.so*; do
    [ -e "$lib" ] || continue
    ldconfig -p 2>/dev/null | grep -qE "^[[:space:]]$(basename "$lib") " || ln -s "$lib" "$vk_libs/"
  done
  if [ -n "$(ls "$vk_libs")" ]; then
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$vk_libs"
    vk_loader="the kit's $(ls "$vk_libs" | tr '\n' ' ')"
  fi
fi
# NVIDIA's container runtime may mount the driver under /usr/local/nvidia
# with its Vulkan ICD file there, where the loader does not look (the lent
# H200 machines are such); a VK_DRIVER_FILES set by the caller wins.
nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -e "$nv_icd" ]; then
  export VK_DRIVER_FILES="$nv_icd"
  # The library it names (libGLX_nvidia.so.0) lies beside the driver's
  # others there, which the loader finds only through the library path.
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
  done
fi
dyno="$kit/dyno"
bench="$kit/llama-bench"
[ -x "$dyno" ] || { log "no dyno in $kit; build the kit with scripts/gpu/kit.sh"; exit 2; }

log "kit $kit; output $out"
"$dyno" hw --json >"$out/raw/hw.json" 2>"$out/raw/hw.err" || log "dyno hw failed: $(tail -n 3 "$out/raw/hw.err")"
"$dyno" --version >"$out/raw/version.txt" 2>&1 || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv >"$out/raw/nvidia-smi.csv" 2>&1 || true

# Where the GPU sits: its NUMA node and the CPUs local to it (sysfs, from the
# bus id nvidia-smi gives), and the machine's CPU layout, for the pinned
# prefill below and for the report.
lscpu >"$out/raw/lscpu.txt" 2>&1 || true
gpu_node="" gpu_cpus=""
bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -n 1 | tr 'A-F' 'a-f')
[[ "$bus" =~ ^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$ ]] || bus=""
if [ -n "$bus" ]; then
  sys="/sys/bus/pci/devices/${bus: -12}"
  gpu_node=$(cat "$sys/numa_node" 2>/dev/null || true)
  gpu_cpus=$(cat "$sys/local_cpulist" 2>/dev/null || true)
fi
echo "{\"pci_bus_id\": \"$bus\", \"numa_node\": \"$gpu_node\", \"local_cpus\": \"$gpu_cpus\"}" >"$out/raw/gpu-place.json"

# Whether this machine could run the Vulkan module at all: a loader and an
# ICD for its GPU (a container given only NVIDIA's compute libraries has
# neither), so the report can say why Vulkan was not measured.
{
  for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d; do echo "$d: $(ls "$d" 2>/dev/null | tr '\n' ' ')"; done
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-}"
  echo "loader: $(ldconfig -p 2>/dev/null | grep -o 'libvulkan.so[^ ]*' | sort -u | tr '\n' ' ')(used: $vk_loader)"
  # What an NVIDIA ICD needs from the driver: its JSON names the library,
  # which the container has only when given the graphics capability.
  for j in /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/nvidia/share/vulkan/icd.d/*.json; do
    [ -e "$j" ] && echo "$j -> $(grep -o '"library_path"[^,]*' "$j" | tr -d '" ')"
  done
  echo "driver graphics libraries: $(ldconfig -p 2>/dev/null | grep -oE 'lib(GLX_nvidia|nvidia-glvkspirv|nvidia-gpucomp|EGL_nvidia)\.so[^ ]*' | sort -u | tr '\n' ' ')"
  echo "NVIDIA_DRIVER_CAPABILITIES=${NVIDIA_DRIVER_CAPABILITIES:-}"
  echo "driver folder: $(ls /usr/local/nvidia/lib64 2>/dev/null | grep -E 'GLX|EGL|vulkan|glvk' | tr '\n' ' ')"
  # The loader's own account of each driver it tried: the reason a Vulkan
  # device is missing, where the module says only that it has none.
  if [ -e "$kit/libggml-vulkan.so" ]; then
    echo "loader's errors and warnings:"
    VK_LOADER_DEBUG=error,warn "$dyno" hw --json 2>&1 >/dev/null | grep -v '^dyno' | head -n 20
  fi
} >"$out/raw/vulkan-probe.txt" 2>&1

# The devices each backend gave, from Dyno's own report of its modules.
devices_of() {
  python3 - "$out/raw/hw.json" "$1" <<'EOF'
import json, sys
hw = json.load(open(sys.argv[1]))
mods = ((hw.get("llama_cpp") or {}).get("modules") or {}).get("modules") or []
names = [d["name"] for m in mods if m.get("loaded") and m.get("backend") == sys.argv[2] for d in m.get("devices", [])]
print(" ".join(names))
EOF
}
cuda=$(devices_of CUDA | awk '{print $1}')
vulkan=$(devices_of Vulkan | awk '{print $1}')
[ -n "$cuda" ] && log "CUDA device $cuda" || log "no CUDA device (dyno hw --json says why, per module)"
[ -n "$vulkan" ] && log "Vulkan device $vulkan" || log "no Vulkan device"

# The GPU's streaming read bandwidth, measured before anything else runs on
# it (dyno-membw, from the kit), for a roofline against what a kernel can
# reach rather than NVML's theoretical figure.
if [ -n "$cuda" ] && [ -x "$kit/dyno-membw" ]; then
  "$kit/dyno-membw" >"$out/raw/membw.json" 2>"$out/raw/membw.err" \
    && log "measured bandwidth: $(cat "$out/raw/membw.json")" \
    || log "dyno-membw failed: $(cat "$out/raw/membw.json" "$out/raw/membw.err" | tail -n 2)"
fi

models=()
if [ -n "${CHECK_MODELS:-}" ]; then
  read -r -a models <<<"$CHECK_MODELS"
else
  for m in "$kit"/models/*.gguf; do [ -e "$m" ] && models+=("$m"); done
fi
[ ${#models[@]} -gt 0 ] || log "no models: put GGUF files in $kit/models or name them in CHECK_MODELS"

# Models too big to carry, written here with synthetic weights from the
# header of a small model of the same architecture (dyno synth --shape; the
# template is the kit's templates/, headers carried without their weights,
# else the first llama model of the list, else Dyno's built-in llama header,
# which gives the same tensor list and data). On a GPU the default is
# the 1B and 8B shapes that GPU figures are usually quoted for; on a CPU
# nothing unless CHECK_SHAPES asks. Each entry is SHAPE:TYPE. The files go to
# CHECK_SYNTH_DIR (not $OUT, which comes back to the caller).
shapes="${CHECK_SHAPES-}"
# The mixture is OLMoE-1B-7B's layout in llama's architecture (64 experts of
# 1024 rows, 8 per token: 6.9 B parameters, about 1.3 B read per token); the
# 8B comes last, as --sustain takes the last model.
[ -z "${CHECK_SHAPES+x}" ] && [ -n "$cuda$vulkan" ] &&
  shapes="llama-3.2-1b:Q4_K_M llama-3.2-1b:Q8_0 llama-3.2-1b,ff=1024,experts=64,experts_used=8:Q4_K_M llama-3.1-8b:Q4_K_M"
synth_dir="${CHECK_SYNTH_DIR:-${TMPDIR:-/tmp}/dyno-check-shapes}"
template=""
for m in "$kit"/templates/*.gguf-header "${models[@]}"; do
  [ -e "$m" ] || continue
  # The kit's templates are headers only (of SmolLM2, a llama model).
  case "$m" in *.gguf-header) template=$m; break ;; esac
  if "$dyno" inspect --json "$m" 2>/dev/null | grep -q '"arch": "llama"'; then template=$m; break; fi
done
like=() from="Dyno's built-in llama header"
[ -n "$template" ] && like=(--like "$template") from=$(basename "$template")
for entry in $shapes; do
  mkdir -p "$synth_dir"
  shape=${entry%%:*} type=${entry##*:}
  file="$synth_dir/synthetic-$(echo "$shape-$type" | tr ',=' '__').gguf"
  if "$dyno" synth "${like[@]}" --shape "$shape" --type "$type" -o "$file" --force --json \
    >"$out/raw/synth-$(basename "$file" .gguf).json" 2>"$out/raw/synth.err"; then
    log "synthetic $shape $type written from $from"
    models+=("$file")
  else
    log "dyno synth $shape $type failed: $(tail -n 2 "$out/raw/synth.err")"
  fi
done

# One measurement pair: Dyno then llama-bench, or the other way round, on
# the same model, device and layers. Each writes its JSON under raw/.
pair() {
  local model=$1 label=$2 dev=$3 ngl=$4 i=$5 tag
  tag="$(basename "$model" .gguf)-$label-$i"
  local d=("$dyno" bench "$model" -p "$prompt" -n "$gen" -r "$reps" --ngl "$ngl" --device "$dev" --json)
  local b=("$bench" -m "$model" -p "$prompt" -n "$gen" -r "$reps" -ngl "$ngl" -dev "$dev" -o json)
  if [ $((i % 2)) -eq 0 ]; then
    "${d[@]}" >"$out/raw/dyno-$tag.json" 2>"$out/raw/dyno-$tag.err" || log "dyno $tag failed"
    "${b[@]}" >"$out/raw/lb-$tag.json" 2>"$out/raw/lb-$tag.err" || log "llama-bench $tag failed"
  else
    "${b[@]}" >"$out/raw/lb-$tag.json" 2>"$out/raw/lb-$tag.err" || log "llama-bench $tag failed"
    "${d[@]}" >"$out/raw/dyno-$tag.json" 2>"$out/raw/dyno-$tag.err" || log "dyno $tag failed"
  fi
}

for model in "${models[@]}"; do
  for spec in "CUDA:$cuda:99" "Vulkan:$vulkan:99" "CPU:none:0"; do
    IFS=: read -r label dev ngl <<<"$spec"
    [ -n "$dev" ] || continue
    # Beside a GPU the CPU is a reference, measured on the first model only:
    # an 8B model's CPU pair alone would take minutes of a short loan.
    [ "$label" = CPU ] && [ -n "$cuda$vulkan" ] && [ "$model" != "${models[0]}" ] && continue
    [ "$label" = CPU ] && [ -n "$cuda$vulkan" ] && skipped cpu && continue
    pairs="${CHECK_PAIRS:-3}"
    [ "$label" = CPU ] && [ -n "$cuda$vulkan" ] && pairs="${CHECK_PAIRS:-1}"
    for i in $(seq 1 "$pairs"); do
      in_budget || { log "skipped $label pairs of $(basename "$model") from pair $i: past the ${budget}s budget"; break; }
      log "$(basename "$model") on $label ($dev, ngl $ngl), pair $i of $pairs"
      pair "$model" "$label" "$dev" "$ngl" "$i"
    done
  done
done

# Real against synthetic ([Q]; [P] item 7): each CHECK_TWINS file and its
# twin, written here by `dyno synth --like` (the same header, tensor for
# tensor, with made-up values of each tensor's own type), measured by
# llama-bench in one process each round, the order swapped every round, on
# each device. The synthetic shapes' figures above stand for real models only
# as far as this ratio is 1. CHECK_TWIN_ROUNDS (6 on a GPU, 3 on the CPU).
for real in ${CHECK_TWINS:-}; do
  mkdir -p "$synth_dir"
  name=$(basename "$real" .gguf)
  twin="$synth_dir/$name.twin.gguf"
  if ! "$dyno" synth --like "$real" -o "$twin" --force --json >"$out/raw/synth-twin-$name.json" 2>"$out/raw/synth.err"; then
    log "the twin of $name failed: $(tail -n 2 "$out/raw/synth.err")"
    continue
  fi
  for spec in "CUDA:$cuda:99" "Vulkan:$vulkan:99" "CPU:none:0"; do
    IFS=: read -r label dev ngl <<<"$spec"
    [ -n "$dev" ] || continue
    rounds="${CHECK_TWIN_ROUNDS:-6}"
    [ "$label" = CPU ] && rounds="${CHECK_TWIN_ROUNDS:-3}"
    for i in $(seq 1 "$rounds"); do
      in_budget || { log "skipped $label twin rounds of $name from round $i: past the ${budget}s budget"; break; }
      log "$name against its twin on $label, round $i of $rounds"
      first=$real second=$twin
      [ $((i % 2)) -eq 0 ] && first=$twin second=$real
      "$bench" -m "$first" -m "$second" -p "$prompt" -n "$gen" -r "$reps" -ngl "$ngl" -dev "$dev" -o json \
        >"$out/raw/twin-$name-$label-$i.json" 2>"$out/raw/twin-$name-$label-$i.err" || log "twin round $label $i failed"
    done
  done
done

gpu_dev="${cuda:-$vulkan}"

# Prefill of the first model, pinned and not: the first H100 check found
# pp512 of a 1B model (12 ms a repetition) in two modes, about 40 000 and
# 46 000 t/s, each holding for a whole process of either program. This
# rotates four processes per round, llama-bench and Dyno, each once free and
# once pinned (taskset) to the same CPUs near the GPU (the first half of its
# NUMA node's local CPUs, at most 8; on a CPU-only machine, of this
# process's), all with that many threads, pp512 only. Pinning both to the
# same CPUs either removes the modes or shows they are not placement.
# CHECK_PIN_ROUNDS (6 on a GPU, 0 on the CPU), CHECK_PIN_REPS (10).
pin_rounds="${CHECK_PIN_ROUNDS:-0}"
[ -z "${CHECK_PIN_ROUNDS:-}" ] && [ -n "$gpu_dev" ] && pin_rounds=6
if [ "$pin_rounds" -gt 0 ] && [ ${#models[@]} -gt 0 ] && command -v taskset >/dev/null && ! skipped pin; then
  pin=$(python3 -c '
import os, sys
spec, cpus = sys.argv[1], []
for part in filter(None, spec.split(",")):
    a, _, b = part.partition("-")
    cpus += range(int(a), int(b or a) + 1)
# sysfs lists the CPUs near the GPU on the host; a container may be allowed
# only some of them.
allowed = os.sched_getaffinity(0)
cpus = [c for c in cpus if c in allowed] or sorted(allowed)
print(",".join(map(str, cpus[: max(1, min(8, len(cpus) // 2))])))' "$gpu_cpus")
  nthreads=$(($(tr -cd ',' <<<"$pin" | wc -c) + 1))
  pdev="${gpu_dev:-none}" pngl=99
  [ -n "$gpu_dev" ] || pngl=0
  preps="${CHECK_PIN_REPS:-10}"
  echo "{\"cpus\": \"$pin\", \"threads\": $nthreads, \"numa_node\": \"$gpu_node\", \"model\": \"$(basename "${models[0]}" .gguf)\", \"device\": \"$pdev\", \"reps\": $preps}" >"$out/raw/pin.json"
  pin_run() {
    local who=$1 i=$2 pre=()
    case $who in *-pin) pre=(taskset -c "$pin") ;; esac
    case $who in
      lb*) "${pre[@]}" "$bench" -m "${models[0]}" -p 512 -n 0 -r "$preps" -t "$nthreads" -ngl "$pngl" -dev "$pdev" -o json ;;
      dyno*) "${pre[@]}" "$dyno" bench "${models[0]}" -p 512 -n 0 -r "$preps" -t "$nthreads" --ngl "$pngl" --device "$pdev" --json ;;
    esac >"$out/raw/pin-$who-$i.json" 2>"$out/raw/pin-$who-$i.err" || log "pinned prefill: $who round $i failed"
  }
  for i in $(seq 1 "$pin_rounds"); do
    in_budget || { log "skipped the pinned prefill from round $i: past the ${budget}s budget"; break; }
    log "prefill of $(basename "${models[0]}") on $pdev, free and pinned to CPUs $pin (node ${gpu_node:-?}), round $i of $pin_rounds"
    case $((i % 4)) in
      0) order="lb dyno lb-pin dyno-pin" ;; 1) order="dyno-pin lb dyno lb-pin" ;;
      2) order="lb-pin dyno-pin lb dyno" ;; 3) order="dyno lb-pin dyno-pin lb" ;;
    esac
    for who in $order; do pin_run "$who" "$i"; done
  done
fi

# A mixture of experts with its experts partly on the CPU (--n-cpu-moe, as
# llama-bench's -ncmoe): Dyno's sweep against llama-bench's, alternating,
# on the first mixture among the models (the synthetic shapes' has 16
# layers: all experts on the GPU, half, none). Dyno's runs also record how
# many tensors llama.cpp placed by the override, and its weight buffers.
moe=""
for m in "${models[@]}"; do case "$(basename "$m")" in *experts*) moe=$m; break ;; esac; done
# On a CPU it runs only when CHECK_NCMOE names the placements (CI's kit
# test), at --ngl 0, where it checks the parts, not a GPU's speed.
if [ -n "$moe" ] && { [ -n "$gpu_dev" ] || [ -n "${CHECK_NCMOE:-}" ]; } && ! skipped ncmoe; then
  ncmoe="${CHECK_NCMOE:-0,8,16}"
  mdev="${gpu_dev:-none}" mngl=99
  [ -n "$gpu_dev" ] || mngl=0
  for i in $(seq 1 "${CHECK_NCMOE_PAIRS:-2}"); do
    in_budget || { log "skipped --n-cpu-moe from pair $i: past the ${budget}s budget"; break; }
    log "--n-cpu-moe $ncmoe on $(basename "$moe"), pair $i"
    d=("$dyno" bench "$moe" -p "$prompt" -n "$gen" -r "${CHECK_NCMOE_REPS:-3}" --ngl "$mngl" --n-cpu-moe "$ncmoe" --device "$mdev" --json)
    b=("$bench" -m "$moe" -p "$prompt" -n "$gen" -r "${CHECK_NCMOE_REPS:-3}" -ngl "$mngl" -ncmoe "$ncmoe" -dev "$mdev" -o json)
    if [ $((i % 2)) -eq 1 ]; then
      "${d[@]}" >"$out/raw/ncmoe-dyno-$i.json" 2>"$out/raw/ncmoe-dyno-$i.err" || log "dyno --n-cpu-moe pair $i failed"
      "${b[@]}" >"$out/raw/ncmoe-lb-$i.json" 2>"$out/raw/ncmoe-lb-$i.err" || log "llama-bench -ncmoe pair $i failed"
    else
      "${b[@]}" >"$out/raw/ncmoe-lb-$i.json" 2>"$out/raw/ncmoe-lb-$i.err" || log "llama-bench -ncmoe pair $i failed"
      "${d[@]}" >"$out/raw/ncmoe-dyno-$i.json" 2>"$out/raw/ncmoe-dyno-$i.err" || log "dyno --n-cpu-moe pair $i failed"
    fi
  done
fi

# The GPU lent over llama.cpp's RPC backend, on this same machine: a
# `dyno rpc-server` serving it on 127.0.0.1, and the first model measured
# through it (--rpc, --device RPC0) by Dyno and by llama-bench, alternating,
# beside the direct figures above: what RPC costs with no network between,
# and whether the two programs agree over it. On a CPU it runs only when
# CHECK_RPC_PAIRS is set (CI's kit test), lending the CPU.
rpc_pairs="${CHECK_RPC_PAIRS:-}"
[ -z "$rpc_pairs" ] && [ -n "$gpu_dev" ] && rpc_pairs=2
if [ "${rpc_pairs:-0}" -gt 0 ] && [ ${#models[@]} -gt 0 ] && ! skipped rpc; then
  rpc_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  lend=(--device "${gpu_dev:-CPU}")
  "$dyno" rpc-server --port "$rpc_port" "${lend[@]}" --json >"$out/raw/rpc-server.json" 2>"$out/raw/rpc-server.err" &
  rpc_pid=$!
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$rpc_port") 2>/dev/null && break
    sleep 0.1
  done
  ep="127.0.0.1:$rpc_port"
  for i in $(seq 1 "$rpc_pairs"); do
    in_budget || { log "skipped RPC from pair $i: past the ${budget}s budget"; break; }
    log "$(basename "${models[0]}") over RPC ($ep lending ${gpu_dev:-CPU}), pair $i of $rpc_pairs"
    d=("$dyno" bench "${models[0]}" -p "$prompt" -n "$gen" -r "$reps" --ngl 99 --rpc "$ep" --device RPC0 --json)
    b=("$bench" -m "${models[0]}" -p "$prompt" -n "$gen" -r "$reps" -ngl 99 --rpc "$ep" -dev RPC0 -o json)
    if [ $((i % 2)) -eq 1 ]; then
      "${d[@]}" >"$out/raw/rpc-dyno-$i.json" 2>"$out/raw/rpc-dyno-$i.err" || log "dyno --rpc pair $i failed"
      "${b[@]}" >"$out/raw/rpc-lb-$i.json" 2>"$out/raw/rpc-lb-$i.err" || log "llama-bench --rpc pair $i failed"
    else
      "${b[@]}" >"$out/raw/rpc-lb-$i.json" 2>"$out/raw/rpc-lb-$i.err" || log "llama-bench --rpc pair $i failed"
      "${d[@]}" >"$out/raw/rpc-dyno-$i.json" 2>"$out/raw/rpc-dyno-$i.err" || log "dyno --rpc pair $i failed"
    fi
  done
  kill "$rpc_pid" 2>/dev/null
  wait "$rpc_pid" 2>/dev/null
fi

if [ -n "$gpu_dev" ] && [ ${#models[@]} -gt 0 ]; then
  small="${models[0]}" large="${models[${#models[@]}-1]}"
  if skipped offload; then :
  elif in_budget; then
    log "offload sweep and --fit on $gpu_dev"
    "$dyno" bench "$small" -p "$prompt" -n "$gen" -r 3 --ngl 0,8,16,24,99 --device "$gpu_dev" --json \
      >"$out/raw/offload.json" 2>"$out/raw/offload.err" || log "offload sweep failed"
    "$dyno" bench "$small" -p "$prompt" -n "$gen" -r 3 --fit --device "$gpu_dev" --json \
      >"$out/raw/fit.json" 2>"$out/raw/fit.err" || log "--fit failed"
  else log "skipped the offload sweep and --fit: past the budget"; fi
  if skipped telemetry; then :
  elif in_budget; then
    log "telemetry off, for its overhead"
    "$dyno" bench "$small" -p "$prompt" -n "$gen" -r "$reps" --ngl 99 --device "$gpu_dev" --no-telemetry --json \
      >"$out/raw/no-telemetry.json" 2>"$out/raw/no-telemetry.err" || log "telemetry-off run failed"
  else log "skipped the telemetry overhead: past the budget"; fi
  if skipped sustain; then :
  elif in_budget; then
    log "--sustain 1 on $(basename "$large")"
    # --sustain picks its own short decode test (tg32, back to back for the
    # whole minute); -p and -n are refused beside it.
    "$dyno" bench "$large" --ngl 99 --device "$gpu_dev" --sustain 1 --json \
      >"$out/raw/sustain.json" 2>"$out/raw/sustain.err" || log "--sustain failed"
  else log "skipped --sustain: past the budget"; fi
fi

log "writing the report after $(elapsed)s"
if ! command -v python3 >/dev/null; then
  log "no python3 here: the raw JSON files in $out/raw are the report"
  exit 0
fi
python3 "$kit/check-report.py" "$out" "$(elapsed)"
