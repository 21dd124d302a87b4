#!/usr/bin/env bash
# The GPU kit's layout, checked on a machine without a GPU (CI): the kit is
# packed without the CUDA module (building it takes an hour here; it is
# checked on a GPU machine), with a fake CUDA module beside the real ones
# that links a CUDA runtime this machine does not have. The check then runs
# from the kit's folder as it would on a GPU machine, and must show:
#   - the modules load from the kit's folder, not from the build's;
#   - the CUDA module is listed as not loaded, with the missing runtime named;
#   - no CUDA device, said plainly, and the CPU measured against llama-bench
#     loading the same CPU module (pp128 and tg32 here, with their ratio:
#     shorter than the check's pp512 and tg128 on a GPU, since this checks
#     the kit's layout and paths, not the figures);
#   - a synthetic shape written by the kit's dyno and measured by both;
#   - a real model against its synthetic twin (one round of llama-bench);
#   - the prefill of the first model, free and pinned to the same CPUs;
#   - a mixture of experts with --n-cpu-moe against llama-bench's -ncmoe;
#   - the first model through a local dyno rpc-server against llama-bench --rpc.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/env.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kit="$work/gpu-kit"
KIT_DIR="$kit" KIT_CUDA=0 bash scripts/gpu/kit.sh >/dev/null

# A module that needs libcudart.so.13, listed for this build like a real one.
echo 'int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }' >"$work/rt.c"
echo 'int cudaRuntimeGetVersion(int *); int probe(void) { int v; return cudaRuntimeGetVersion(&v); }' >"$work/m.c"
cc -shared -fPIC -Wl,-soname,libcudart.so.13 -o "$work/libcudart.so.13" "$work/rt.c"
cc -shared -fPIC -o "$kit/libggml-cuda.so" "$work/m.c" -Wl,--no-as-needed "$work/libcudart.so.13"
rm "$work/libcudart.so.13"
(cd "$kit" && sha256sum libggml-cuda.so) >>"$kit/dyno-backends.txt"

out="$work/out"
# One synthetic shape (an 8B model's kind, one narrow layer) written from the
# SmolLM2 header by the kit's dyno, as the 1B and 8B ones are on a GPU.
HOME="$work/home" OUT="$out" CHECK_MODELS="$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" \
  CHECK_SHAPES="llama-3.1-8b,layers=1,embd=256,ff=512,heads=4,heads_kv=2:Q4_0 layers=2,embd=256,ff=512,heads=4,heads_kv=2,experts=4:Q4_0" \
  CHECK_NCMOE=0,1 CHECK_NCMOE_PAIRS=1 CHECK_NCMOE_REPS=2 CHECK_RPC_PAIRS=1 \
  CHECK_TWINS="$DYNO_TEST_MODELS/SmolLM2-135M-Instruct.Q4_1.gguf" CHECK_TWIN_ROUNDS=1 \
  CHECK_SYNTH_DIR="$work/shapes" CHECK_PROMPT=128 CHECK_GEN=32 CHECK_REPS=2 CHECK_PAIRS=1 CHECK_PIN_ROUNDS=1 CHECK_PIN_REPS=2 \
  bash "$kit/check.sh" >/dev/null
python3 - "$out/report.json" "$kit" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
kit = sys.argv[2]
assert r["modules_dir"] == kit and r["modules_source"] == "DYNO_BACKEND_DIR", (r["modules_dir"], kit)
mods = {m["file"]: m for m in r["modules"]}
cuda = mods["libggml-cuda.so"]
assert not cuda["loaded"] and cuda["reason"].startswith("libcudart.so.13 not found"), cuda
cpu = [m for m in r["modules"] if m["backend"] == "CPU" and m["loaded"]]
assert len(cpu) == 1, r["modules"]
assert any("no CUDA device" in line for line in r["log"]), r["log"]
rows = {(x["backend"], x["test"]): x for x in r["results"] if not x["model"].startswith("synthetic-")}
for test in ("pp128", "tg32"):
    row = rows[("CPU", test)]
    assert row["dyno_tokens_per_s"] > 0 and row["llama_bench_tokens_per_s"] > 0, row
    assert 0.5 < row["ratio"]["mean"] < 2.0, row
    assert any(m.startswith("CPU ") for m in row["modules"]), row
synth = [x for x in r["results"] if x["model"].startswith("synthetic-llama-3.1-8b")]
assert {x["test"] for x in synth} == {"pp128", "tg32"}, r["results"]
assert all(x["dyno_tokens_per_s"] > 0 and x["llama_bench_tokens_per_s"] > 0 for x in synth), synth
twins = {x["test"]: x for x in r["twins"] if x["backend"] == "CPU"}
assert set(twins) == {"pp128", "tg32"}, r["twins"]
assert all(x["real_tokens_per_s"] > 0 and x["twin_tokens_per_s"] > 0 for x in twins.values()), twins
moe = {(x["n_cpu_moe"], x["test"]): x for x in r["n_cpu_moe"]}
assert set(moe) == {(n, t) for n in (0, 1) for t in ("pp128", "tg32")}, r["n_cpu_moe"]
assert moe[(1, "tg32")]["tensors_overridden"] == 3 and moe[(0, "tg32")]["tensors_overridden"] is None, moe
assert all(x["dyno_tokens_per_s"] > 0 and x["llama_bench_tokens_per_s"] > 0 for x in moe.values()), moe
rpc = {x["test"]: x for x in r["rpc"]}
assert set(rpc) == {"pp128", "tg32"}, r["rpc"]
assert all(x["backend"] == "RPC" and x["rpc_weight_bytes"] > 0 and x["llama_bench_tokens_per_s"] > 0 for x in rpc.values()), rpc
pin = r["pinned_prefill"]
assert set(pin["programs"]) == {"llama-bench", "Dyno", "llama-bench pinned", "Dyno pinned"}, pin
assert all(p["mean"] > 0 for p in pin["programs"].values()), pin
assert pin["ratios"]["Dyno ÷ llama-bench, both pinned"]["mean"] > 0, pin
assert r["vulkan_probe"] and "loader:" in r["vulkan_probe"], r["vulkan_probe"]
print("gpu-kit: modules from the kit, CUDA refused with its reason, a synthetic 8B-kind shape measured, CPU against llama-bench:",
      ", ".join(f"{t} {rows[('CPU', t)]['ratio']['mean']:.3f}" for t in ("pp128", "tg32")))
PY
