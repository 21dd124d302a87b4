// The conditions a figure was measured under. A figure means nothing without
// them, so every view that shows a rate shows these next to it.

import { fmtBytes } from "./format";
import type { Machine, Run } from "../types";

export interface Condition {
  label: string;
  value: string;
}

function tests(run: Run): string {
  const ps = new Set<number>();
  const ns = new Set<number>();
  for (const r of run.results) {
    if (r.n_prompt > 0) ps.add(r.n_prompt);
    if (r.n_gen > 0) ns.add(r.n_gen);
  }
  const list = (s: Set<number>) => (s.size ? [...s].sort((a, b) => a - b).join(",") : "–");
  return `p ${list(ps)} / n ${list(ns)}`;
}

function mmap(v: boolean | null): string {
  return v === null ? "auto" : v ? "on" : "off";
}

/**
 * Where the model sat: llama.cpp's own count of layers on the GPU and the
 * devices holding the weights, then any offload setting off its default.
 */
export function offloadText(run: Run): string {
  const c = run.config;
  const o = run.offload;
  const parts: string[] = [];
  const servers = o?.rpc ?? [];
  if (o && o.layers_offloaded != null && o.layers_total != null) {
    parts.push(`${o.layers_offloaded}/${o.layers_total} layers ${servers.length ? "offloaded" : "on GPU"}`);
  } else {
    parts.push((c.n_gpu_layers ?? 0) > 0 ? `${c.n_gpu_layers} layers on GPU` : "CPU only");
  }
  const devices = (o?.buffers ?? []).filter((b) => b.bytes > 0 && !b.name.startsWith("CPU") && !b.name.endsWith("_Host")).map((b) => b.name);
  if (devices.length) parts.push(`weights on ${devices.join(", ")}`);
  if (o?.fit) parts.push(`fit (${o.fit.margin_mib} MiB margin)`);
  if (c.devices) parts.push(`devices ${c.devices.length ? c.devices.join("/") : "none"}`);
  if (c.split_mode && c.split_mode !== "layer") parts.push(`split ${c.split_mode}`);
  if (c.no_kv_offload) parts.push("KV on CPU");
  if (c.n_cpu_moe) parts.push(`experts of ${c.n_cpu_moe} layers on CPU`);
  if (c.tensor_overrides) parts.push(`tensors ${c.tensor_overrides}`);
  if (o?.tensors_overridden) parts.push(`${o.tensors_overridden} tensors placed by override`);
  // Other machines lent devices: which, and how much memory each offered.
  for (const s of servers) {
    const devs = s.devices.map((d) => `${d.name} ${fmtBytes(d.memory_free_bytes)} free`).join(", ");
    parts.push(`RPC server ${s.endpoint}${devs ? ` (${devs})` : ""}`);
  }
  if (!servers.length && c.rpc?.length) parts.push(`RPC servers ${c.rpc.join(", ")}`);
  return parts.join(" · ");
}

/** The conditions of one run, in a fixed order. */
/**
 * AC or battery, the CPU governor and the platform profile, as the Rust
 * side's `PowerState::describe` writes them; "" when none was readable.
 */
export function powerText(p: Run["power"] | undefined): string {
  if (!p) return "";
  const parts: string[] = [];
  if (p.source === "battery") parts.push(p.battery_pct != null ? `on battery (${p.battery_pct}%)` : "on battery");
  else if (p.source === "ac") parts.push("on AC");
  if (p.governor) parts.push(`governor ${p.governor}`);
  if (p.platform_profile) parts.push(`profile ${p.platform_profile}`);
  return parts.join(" · ");
}

export function runConditions(run: Run, machine?: Machine | null): Condition[] {
  const c = run.config;
  const ngl =
    c.n_gpu_layers_requested === null ? `${c.n_gpu_layers} (auto)` : String(c.n_gpu_layers);
  const out: Condition[] = [
    { label: "threads", value: String(c.n_threads) },
    { label: "ngl", value: ngl },
    { label: "batch", value: `${c.n_batch} / ub ${c.n_ubatch}` },
    { label: "tests", value: tests(run) },
    { label: "reps", value: `${c.reps}${c.warmup ? " + warm-up" : ""}` },
    { label: "flash attn", value: c.flash_attn },
    { label: "KV type", value: c.cache_type },
    { label: "mmap", value: mmap(c.use_mmap) },
    { label: "offload", value: offloadText(run) },
    { label: "backend", value: run.backend ?? "" },
    { label: "build", value: run.llama_cpp_build ?? "" },
    { label: "power", value: powerText(run.power) || "not reported" },
  ];
  if (machine) out.push({ label: "machine", value: `${machine.cpu}, ${machine.cores} cores` });
  return out;
}

/**
 * The conditions shared by every run of a sweep (they run the same plan);
 * a condition that differs between runs shows each value once, joined by " | ".
 */
export function sharedConditions(runs: Run[], machine?: Machine | null): Condition[] {
  if (runs.length === 0) return [];
  const per = runs.map((r) => runConditions(r, machine));
  return per[0].map((c, i) => {
    const values = [...new Set(per.map((p) => p[i]?.value ?? "–"))];
    return { label: c.label, value: values.join(" | ") };
  });
}
