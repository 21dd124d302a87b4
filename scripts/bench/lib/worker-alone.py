"""Run `dyno worker` alone, with no parent process doing anything beside it,
on one decode test, and print {"tgN": [t/s per repetition]} as JSON.

Used by scripts/bench/decode-parts.sh to tell the worker's own speed from
what the parent (telemetry, storage) costs it. The plan is the one `dyno
bench -p 0 -n N -t T -r R` sends its worker (src/worker/protocol.rs).
"""
import json
import subprocess
import sys

exe, model, n_gen, threads, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ctx = {"n_threads": threads, "n_batch": 2048, "n_ubatch": 512, "flash_attn": "auto",
       "cache_type": "f16", "no_kv_offload": False}
plan = {
    "task": "bench",
    "model_path": model,
    "model": {"n_gpu_layers": None, "use_mmap": None, "split_mode": "layer", "main_gpu": 0,
              "devices": None, "fit_margin_mib": None},
    "jobs": [{"test": {"kind": "gen", "n_prompt": 0, "n_gen": n_gen, "n_depth": 0, "n_parallel": 1},
              "ctx": ctx}],
    "reps": reps,
    "warmup": True,
}
# stdin stays open until the end: the worker exits when it closes.
p = subprocess.Popen([exe, "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
p.stdin.write(json.dumps(plan) + "\n")
p.stdin.flush()
rates = []
for line in p.stdout:
    e = json.loads(line)
    if e.get("event") == "sample":
        rates.append(n_gen / (e["sample"]["total_ns"] / 1e9))
    elif e.get("event") in ("done", "fatal"):
        if e["event"] == "fatal":
            sys.exit(f"worker-alone: {e.get('message')}")
        break
p.stdin.close()
p.wait()
print(json.dumps({f"tg{n_gen}": rates}))
