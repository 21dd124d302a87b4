#!/usr/bin/env python3
"""Write report.json and report.md from the raw files of scripts/gpu/check.sh.

Each Dyno figure is set against llama-bench's on the same model, module,
device and layers, from pairs run alternately: the ratio of each pair, then
their mean with an interval of two standard errors (a t quantile for few
pairs), so "within 2%" can be read off. Prefill and decode stay apart; TTFT
and energy are reported as what they are, never blended into a rate.

Usage: check-report.py OUT_DIR ELAPSED_S
"""

import glob
import json
import math
import os
import re
import statistics
import sys

# Two-sided 95% t quantiles for n-1 degrees of freedom (n pairs).
T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def dyno_rates(doc):
    """{test: (t/s mean, result)} of the first run of a `dyno bench --json`."""
    out = {}
    for run in (doc or {}).get("runs", [])[:1]:
        for r in run.get("results", []):
            if r.get("status") == "ok" and r.get("mean_tokens_per_s"):
                out[r["test"]] = (r["mean_tokens_per_s"], r, run)
    return out


def lb_rates(doc):
    """{test: t/s} of a llama-bench `-o json` array."""
    out = {}
    for r in doc or []:
        n_p, n_g = r.get("n_prompt", 0), r.get("n_gen", 0)
        test = f"pp{n_p}" if n_g == 0 else f"tg{n_g}" if n_p == 0 else f"pp{n_p}+tg{n_g}"
        out[test] = r.get("avg_ts")
    return out


def rounds(raw, prefix):
    """(path, model, backend) of each round's file `PREFIX-MODEL-BACKEND-N.json`."""
    for path in sorted(glob.glob(os.path.join(raw, f"{prefix}-*.json"))):
        m = re.match(rf"{prefix}-(.+)-(CUDA|Vulkan|CPU)-(\d+)\.json$", os.path.basename(path))
        if m:
            yield path, m.group(1), m.group(2)


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def pp_samples(doc):
    """The pp512 repetitions (t/s) of one llama-bench or `dyno bench` JSON."""
    if isinstance(doc, list):
        return next((r.get("samples_ts") for r in doc if r.get("n_prompt") == 512 and r.get("n_gen") == 0), None)
    for run in (doc or {}).get("runs", [])[:1]:
        for r in run.get("results", []):
            if r.get("test") == "pp512" and r.get("status") == "ok":
                return r.get("samples_tokens_per_s")
    return None


def expert_placement(raw):
    """check.sh's --n-cpu-moe part: per placement and test, Dyno against
    llama-bench pair by pair, with what llama.cpp reported placing."""
    rows = {}
    for path in sorted(glob.glob(os.path.join(raw, "ncmoe-dyno-*.json"))):
        doc = load(path) or {}
        lb = load(path.replace("ncmoe-dyno-", "ncmoe-lb-")) or []
        for run in doc.get("runs", []):
            n = (run.get("config") or {}).get("n_cpu_moe") or 0
            off = run.get("offload") or {}
            gpu = sum(b["bytes"] for b in off.get("buffers", []) if not b["name"].startswith("CPU") and not b["name"].endswith("_Host"))
            for test, (rate, _, _) in dyno_rates({"runs": [run]}).items():
                theirs = lb_rates([r for r in lb if (r.get("n_cpu_moe") or 0) == n]).get(test)
                row = rows.setdefault((n, test), {"model": (run.get("model") or {}).get("file_name") or "", "n_cpu_moe": n,
                                                  "test": test, "dyno": [], "lb": [], "ratios": [],
                                                  "tensors_overridden": off.get("tensors_overridden"),
                                                  "gpu_weight_bytes": gpu or None})
                row["dyno"].append(rate)
                if theirs:
                    row["lb"].append(theirs)
                    row["ratios"].append(rate / theirs)
    out = []
    for (_, _), r in sorted(rows.items()):
        out.append({k: r[k] for k in ("model", "n_cpu_moe", "test", "tensors_overridden", "gpu_weight_bytes")}
                   | {"dyno_tokens_per_s": statistics.fmean(r["dyno"]),
                      "llama_bench_tokens_per_s": statistics.fmean(r["lb"]) if r["lb"] else None,
                      "ratio": interval(r["ratios"])})
    return out or None


def over_rpc(raw):
    """check.sh's RPC part: the first model through a local rpc-server, Dyno
    against llama-bench pair by pair, with where llama.cpp put the weights."""
    rows = {}
    for path in sorted(glob.glob(os.path.join(raw, "rpc-dyno-*.json"))):
        doc = load(path) or {}
        lb = lb_rates(load(path.replace("rpc-dyno-", "rpc-lb-")) or [])
        for run in doc.get("runs", [])[:1]:
            off = run.get("offload") or {}
            remote = sum(b["bytes"] for b in off.get("buffers", []) if b["name"].startswith("RPC"))
            for test, (rate, _, _) in dyno_rates({"runs": [run]}).items():
                row = rows.setdefault(test, {"model": (run.get("model") or {}).get("file_name") or "", "test": test,
                                             "backend": run.get("backend"), "dyno": [], "lb": [], "ratios": [],
                                             "rpc_weight_bytes": remote or None})
                row["dyno"].append(rate)
                if lb.get(test):
                    row["lb"].append(lb[test])
                    row["ratios"].append(rate / lb[test])
    return [{k: r[k] for k in ("model", "test", "backend", "rpc_weight_bytes")}
            | {"dyno_tokens_per_s": statistics.fmean(r["dyno"]),
               "llama_bench_tokens_per_s": statistics.fmean(r["lb"]) if r["lb"] else None,
               "ratio": interval(r["ratios"])}
            for _, r in sorted(rows.items())] or None


def pinned_prefill(raw):
    """check.sh's pinned prefill: per program its process means, and per round
    Dyno ÷ llama-bench free and pinned, and pinned ÷ free for each."""
    meta = load(os.path.join(raw, "pin.json"))
    if not meta:
        return None
    by = {}
    for path in glob.glob(os.path.join(raw, "pin-*-*.json")):
        m = re.match(r"pin-(lb|dyno|lb-pin|dyno-pin)-(\d+)\.json$", os.path.basename(path))
        xs = pp_samples(load(path)) if m else None
        if xs:
            by.setdefault(m.group(1), {})[int(m.group(2))] = xs
    programs = {}
    for who in ("lb", "dyno", "lb-pin", "dyno-pin"):
        means = [statistics.fmean(xs) for xs in by.get(who, {}).values()]
        if means:
            programs[who] = {"n": len(means), "mean": statistics.fmean(means), "min": min(means), "max": max(means),
                             "first_mean": statistics.fmean(xs[0] for xs in by[who].values())}

    def ratio(a, b):
        rs = [statistics.fmean(by[a][i]) / statistics.fmean(by[b][i])
              for i in sorted(set(by.get(a, {})) & set(by.get(b, {})))]
        return interval(rs)
    names = {"llama-bench" if w == "lb" else "llama-bench pinned" if w == "lb-pin" else
             "Dyno" if w == "dyno" else "Dyno pinned": p for w, p in programs.items()}
    return dict(meta, programs=names, ratios={
        "Dyno ÷ llama-bench, free": ratio("dyno", "lb"),
        "Dyno ÷ llama-bench, both pinned": ratio("dyno-pin", "lb-pin"),
        "llama-bench pinned ÷ free": ratio("lb-pin", "lb"),
        "Dyno pinned ÷ free": ratio("dyno-pin", "dyno"),
    })


def interval(ratios):
    if not ratios:
        return None
    m = statistics.fmean(ratios)
    if len(ratios) < 2:
        return {"mean": m, "half_width": None, "n": 1}
    se = statistics.stdev(ratios) / math.sqrt(len(ratios))
    return {"mean": m, "half_width": T95.get(len(ratios), 2.0) * se, "n": len(ratios)}


def main():
    out, elapsed = sys.argv[1], float(sys.argv[2])
    raw = os.path.join(out, "raw")
    hw = load(os.path.join(raw, "hw.json")) or {}
    llama = hw.get("llama_cpp") or {}
    modules = (llama.get("modules") or {}).get("modules") or []
    gpus = hw.get("gpus") or []
    bandwidth = {g["name"]: g.get("theoretical_bandwidth_bytes_per_s") for g in gpus}

    membw = load(os.path.join(raw, "membw.json")) or {}
    measured_bw = membw.get("read_bytes_per_s_best") if not membw.get("error") else None

    pairs = {}
    for path, model, backend in rounds(raw, "dyno"):
        d = dyno_rates(load(path))
        lb = lb_rates(load(path.replace("/dyno-", "/lb-")))
        for test, (rate, result, run) in d.items():
            key = (model, backend, test)
            p = pairs.setdefault(key, {"dyno": [], "llama_bench": [], "ratios": [], "result": result, "run": run})
            p["dyno"].append(rate)
            if lb.get(test):
                p["llama_bench"].append(lb[test])
                p["ratios"].append(rate / lb[test])

    rows = []
    for (model, backend, test), p in sorted(pairs.items()):
        r, run = p["result"], p["run"]
        tel = (r.get("telemetry") or {})
        energy = tel.get("energy") or {}
        window = tel.get("during_timed") or {}
        weights = (run.get("model") or {}).get("weight_bytes")
        dyno_mean = statistics.fmean(p["dyno"])
        roofline = roofline_measured = None
        # A mixture reads only its routed experts per token, which the run
        # document does not say: no roofline for it rather than a wrong one.
        mixture = "experts" in model
        if backend != "CPU" and test.startswith("tg") and weights and gpus and not mixture:
            bw = next((b for b in bandwidth.values() if b), None)
            if bw:
                roofline = weights * dyno_mean / bw
            if measured_bw:
                roofline_measured = weights * dyno_mean / measured_bw
        mods = run.get("backend_modules") or []
        rows.append({
            "model": model,
            "quant": (run.get("model") or {}).get("quant"),
            "backend": backend,
            "test": test,
            "n_gpu_layers": (run.get("config") or {}).get("n_gpu_layers"),
            "dyno_tokens_per_s": dyno_mean,
            "llama_bench_tokens_per_s": statistics.fmean(p["llama_bench"]) if p["llama_bench"] else None,
            "ratio": interval(p["ratios"]),
            "tokens_per_j": energy.get("tokens_per_j"),
            "joules_per_token": (1 / energy["tokens_per_j"]) if energy.get("tokens_per_j") else None,
            "gpu_power_mean_w": window.get("gpu_power_mean_w"),
            "gpu_temp_max_c": window.get("gpu_temp_max_c"),
            "gpu_sm_clock_mean_mhz": window.get("gpu_sm_clock_mean_mhz"),
            "roofline_of_device_bandwidth": roofline,
            "roofline_of_measured_bandwidth": roofline_measured,
            "modules": [f"{x.get('backend')} {x.get('file')} {(x.get('sha256') or '')[:12]}" for x in mods],
        })

    extra = {}
    for name in ("offload", "fit", "no-telemetry", "sustain"):
        doc = load(os.path.join(raw, f"{name}.json"))
        if doc:
            extra[name] = [
                {"n_gpu_layers": (run.get("config") or {}).get("n_gpu_layers"),
                 "n_gpu_layers_requested": (run.get("config") or {}).get("n_gpu_layers_requested"),
                 "status": run.get("status"),
                 "sustained": next((r.get("sustained") for r in run.get("results", []) if r.get("sustained")), None),
                 "during_timed": next(((r.get("telemetry") or {}).get("during_timed") for r in run.get("results", [])), None),
                 "rates": {t: v[0] for t, v in dyno_rates({"runs": [run]}).items()},
                 "error": run.get("error")}
                for run in doc.get("runs", [])
            ]
    # Real against synthetic twin: per round, twin ÷ real from one
    # llama-bench process that ran both.
    twins = {}
    for path, name, backend in rounds(raw, "twin"):
        by_file = {}
        for r in load(path) or []:
            which = "twin" if r.get("model_filename", "").endswith(".twin.gguf") else "real"
            by_file.setdefault(which, []).append(r)
        for test, real_rate in lb_rates(by_file.get("real")).items():
            twin_rate = lb_rates(by_file.get("twin")).get(test)
            if real_rate and twin_rate:
                t = twins.setdefault((name, backend, test), {"real": [], "twin": [], "ratios": []})
                t["real"].append(real_rate)
                t["twin"].append(twin_rate)
                t["ratios"].append(twin_rate / real_rate)
    twin_rows = [{"model": n, "backend": b, "test": t,
                  "real_tokens_per_s": statistics.fmean(v["real"]),
                  "twin_tokens_per_s": statistics.fmean(v["twin"]),
                  "twin_over_real": interval(v["ratios"])}
                 for (n, b, t), v in sorted(twins.items())]
    pinned = pinned_prefill(raw)
    ncmoe = expert_placement(raw)
    rpc = over_rpc(raw)
    log = open(os.path.join(raw, "log.txt")).read().splitlines() if os.path.exists(os.path.join(raw, "log.txt")) else []
    report = {
        "elapsed_s": elapsed,
        "gpus": gpus,
        "llama_cpp_build": llama.get("build"),
        "modules_dir": (llama.get("modules") or {}).get("dir"),
        "modules_source": (llama.get("modules") or {}).get("source"),
        "modules": [{k: m.get(k) for k in ("file", "backend", "loaded", "reason", "runtime", "sha256", "devices")} for m in modules],
        "results": rows,
        "extra": extra,
        "twins": twin_rows,
        "measured_bandwidth": membw or None,
        "gpu_place": load(os.path.join(raw, "gpu-place.json")),
        "vulkan_probe": read_text(os.path.join(raw, "vulkan-probe.txt")),
        "pinned_prefill": pinned,
        "n_cpu_moe": ncmoe,
        "rpc": rpc,
        "log": log,
    }
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=2)

    md = ["# Dyno GPU check", ""]
    md.append(f"Ran in {elapsed:.0f} s. llama.cpp: {llama.get('build') or '?'}.")
    md.append("")
    if gpus:
        for g in gpus:
            bw = g.get("theoretical_bandwidth_bytes_per_s")
            md.append(f"- GPU {g.get('name')} · driver {g.get('driver')} · "
                      f"{(g.get('memory_total_bytes') or 0) / 2**30:.0f} GiB · "
                      f"{(bw or 0) / 1e9:.0f} GB/s theoretical")
    else:
        md.append("- no GPU found through NVML")
    if membw.get("error"):
        md.append(f"- measured bandwidth: dyno-membw failed: {membw['error']}")
    elif measured_bw:
        theo = next((b for b in bandwidth.values() if b), None)
        md.append(f"- measured bandwidth (dyno-membw, {membw.get('buffer_bytes', 0) / 2**30:.0f} GiB buffer, "
                  f"{membw.get('passes')} passes): streaming read {measured_bw / 1e9:.0f} GB/s best, "
                  f"{membw.get('read_bytes_per_s_median', 0) / 1e9:.0f} median"
                  + (f" ({measured_bw / theo:.0%} of theoretical)" if theo else "")
                  + f"; device-to-device copy {membw.get('copy_bytes_per_s_best', 0) / 1e9:.0f} GB/s (read + write)")
    place = load(os.path.join(raw, "gpu-place.json")) or {}
    if place.get("pci_bus_id"):
        md.append(f"- GPU at {place['pci_bus_id']}, NUMA node {place.get('numa_node') or '?'}, "
                  f"local CPUs {place.get('local_cpus') or '?'}")
    probe = read_text(os.path.join(raw, "vulkan-probe.txt"))
    if probe:
        md.append("- Vulkan on this machine: " + "; ".join(line for line in probe.splitlines() if line.strip()))
    mdir = (llama.get("modules") or {}).get("dir")
    md += ["", "## Backend modules", "", f"From {mdir} ({(llama.get('modules') or {}).get('source')}).", "",
           "| module | backend | state | devices |", "|---|---|---|---|"]
    for m in modules:
        state = "loaded" if m.get("loaded") and not m.get("reason") else (
            f"loaded: {m.get('reason')}" if m.get("loaded") else f"not loaded: {m.get('reason')}")
        devs = ", ".join(f"{d['name']} ({d['memory_free_bytes'] / 2**30:.1f} of {d['memory_total_bytes'] / 2**30:.1f} GiB free)"
                         for d in m.get("devices", []))
        md.append(f"| {m.get('file')} | {m.get('backend')} | {state} | {devs or '-'} |")
    md += ["", "## Dyno against llama-bench (same build, modules, model and settings)", "",
           "| model | backend | ngl | test | Dyno t/s | llama-bench t/s | Dyno ÷ llama-bench | J/token | GPU W | SM MHz | GPU °C | roofline (theoretical) | roofline (measured) |",
           "|---|---|--:|---|--:|--:|---|--:|--:|--:|--:|--:|--:|"]
    if any(r["model"].startswith("synthetic-") for r in rows):
        md[-2:-2] = ["Models named synthetic-… were written on this machine by `dyno synth --shape` from a small "
                     "model's header: real shapes, synthetic weights. On a CPU such files decode within the noise "
                     "of their real models (docs/method.md); on a GPU that is not yet shown, so their figures are "
                     "the shape's speed, not a particular model's.", ""]
    for r in rows:
        ratio = r["ratio"]
        rtxt = "-" if not ratio else (f"{ratio['mean']:.3f}" + (f" ± {ratio['half_width']:.3f} (n={ratio['n']})" if ratio["half_width"] else " (n=1)"))
        fmt = lambda v, f: "-" if v is None else f.format(v)
        md.append(f"| {r['model']} | {r['backend']} | {fmt(r['n_gpu_layers'], '{}')} | {r['test']} | "
                  f"{r['dyno_tokens_per_s']:.1f} | {fmt(r['llama_bench_tokens_per_s'], '{:.1f}')} | {rtxt} | "
                  f"{fmt(r['joules_per_token'], '{:.3f}')} | {fmt(r['gpu_power_mean_w'], '{:.0f}')} | "
                  f"{fmt(r['gpu_sm_clock_mean_mhz'], '{:.0f}')} | {fmt(r['gpu_temp_max_c'], '{:.0f}')} | "
                  f"{fmt(r['roofline_of_device_bandwidth'], '{:.0%}')} | "
                  f"{fmt(r['roofline_of_measured_bandwidth'], '{:.0%}')} |")
    if ncmoe:
        md += ["", "## A mixture of experts with its experts partly on the CPU (--n-cpu-moe)", "",
               "Dyno's `--n-cpu-moe` and llama-bench's `-ncmoe` on the same file, alternating, 3 repetitions; "
               "the GPU's weight buffer and the tensors llama.cpp placed by the override are from Dyno's runs.", "",
               "| model | n_cpu_moe | test | Dyno t/s | llama-bench t/s | Dyno ÷ llama-bench | tensors placed | GPU weights |",
               "|---|--:|---|--:|--:|---|--:|--:|"]
        for r in ncmoe:
            i = r["ratio"]
            itxt = "-" if not i else f"{i['mean']:.3f}" + (f" ± {i['half_width']:.3f}" if i["half_width"] else "") + f" (n={i['n']})"
            lbt = "-" if r["llama_bench_tokens_per_s"] is None else f"{r['llama_bench_tokens_per_s']:.1f}"
            gpu = "-" if r["gpu_weight_bytes"] is None else f"{r['gpu_weight_bytes'] / 2**30:.2f} GiB"
            md.append(f"| {r['model']} | {r['n_cpu_moe']} | {r['test']} | {r['dyno_tokens_per_s']:.1f} | {lbt} | {itxt} | "
                      f"{r['tensors_overridden'] if r['tensors_overridden'] is not None else '-'} | {gpu} |")
    if rpc:
        md += ["", "## Over RPC on this machine (a local dyno rpc-server lending the device)", "",
               "Dyno's `--rpc` and llama-bench's `--rpc` through the same server on 127.0.0.1, `--device RPC0`, "
               "alternating; set against the direct figures above, the cost of RPC with no network between.", "",
               "| model | test | backend | Dyno t/s | llama-bench t/s | Dyno ÷ llama-bench | weights on the server |",
               "|---|---|---|--:|--:|---|--:|"]
        for r in rpc:
            i = r["ratio"]
            itxt = "-" if not i else f"{i['mean']:.3f}" + (f" ± {i['half_width']:.3f}" if i["half_width"] else "") + f" (n={i['n']})"
            lbt = "-" if r["llama_bench_tokens_per_s"] is None else f"{r['llama_bench_tokens_per_s']:.1f}"
            w = "-" if r["rpc_weight_bytes"] is None else f"{r['rpc_weight_bytes'] / 2**20:.1f} MiB"
            md.append(f"| {r['model']} | {r['test']} | {r['backend']} | {r['dyno_tokens_per_s']:.1f} | {lbt} | {itxt} | {w} |")
    if pinned:
        md += ["", "## Prefill, pinned and free", "",
               f"`{pinned['model']}` pp512 on {pinned['device']}, {pinned['reps']} repetitions a process, "
               f"{pinned['threads']} threads in every process; pinned = `taskset -c {pinned['cpus']}` "
               f"(NUMA node {pinned.get('numa_node') or '?'}). One process of each kind per round, the order "
               "turned each round. Process means show whether the rate has modes; the ratios are per round.", "",
               "| process | rounds | mean t/s | lowest process | highest process | first repetition |",
               "|---|--:|--:|--:|--:|--:|"]
        for who, p in pinned["programs"].items():
            md.append(f"| {who} | {p['n']} | {p['mean']:.0f} | {p['min']:.0f} | {p['max']:.0f} | {p['first_mean']:.0f} |")
        md.append("")
        for name, iv in pinned["ratios"].items():
            if iv:
                md.append(f"- {name}: {iv['mean']:.3f}" + (f" ± {iv['half_width']:.3f}" if iv["half_width"] else "") + f" (n={iv['n']})")
    if twin_rows:
        md += ["", "## Real weights against their synthetic twin (llama-bench, same process, order swapped each round)", "",
               "| model | backend | test | real t/s | twin t/s | twin ÷ real |", "|---|---|---|--:|--:|---|"]
        for r in twin_rows:
            i = r["twin_over_real"]
            itxt = f"{i['mean']:.3f}" + (f" ± {i['half_width']:.3f} (n={i['n']})" if i["half_width"] else " (n=1)")
            md.append(f"| {r['model']} | {r['backend']} | {r['test']} | {r['real_tokens_per_s']:.1f} | "
                      f"{r['twin_tokens_per_s']:.1f} | {itxt} |")
    for name, runs in extra.items():
        md += ["", f"## {name}", ""]
        for run in runs:
            rates = ", ".join(f"{t} {v:.1f} t/s" for t, v in run["rates"].items())
            asked = run.get("n_gpu_layers_requested")
            ngl = f"{asked} (all {run['n_gpu_layers']} layers)" if asked not in (None, run["n_gpu_layers"]) else run["n_gpu_layers"]
            md.append(f"- ngl {ngl}: {run['status']}; {rates or run.get('error') or '-'}")
            s, w = run.get("sustained"), run.get("during_timed") or {}
            if s:
                drop = s.get("drop_pct")
                md.append(f"  - {s.get('duration_s', 0):.0f} s: burst {s.get('burst_tokens_per_s') or 0:.1f} t/s, "
                          f"sustained {s.get('sustained_tokens_per_s') or 0:.1f} t/s"
                          + (f", drop {drop:.1f}%" if drop is not None else "")
                          + (f" ({s['cause']})" if s.get("cause") else "")
                          + f"; GPU {w.get('gpu_power_mean_w') or 0:.0f} W mean, {w.get('gpu_temp_max_c') or 0:.0f} °C max, "
                          f"SM {w.get('gpu_sm_clock_mean_mhz') or 0:.0f} MHz mean, throttle reasons {w.get('gpu_throttle_reasons')}")
    md += ["", "## Log", ""] + [f"- {line}" for line in log]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(os.path.join(out, "report.md"))


if __name__ == "__main__":
    main()
