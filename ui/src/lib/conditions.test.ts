import { describe, expect, it } from "vitest";
import sweepFiles from "../fixtures/sweep-files.json";
import type { Run, SweepDoc } from "../types";
import { offloadText, powerText, runConditions } from "./conditions";

// A real run document (from `dyno show-sweep --json`), then offload variants of it.
const base = (sweepFiles as unknown as SweepDoc).runs[0] as Run;

describe("offload condition", () => {
  it("says CPU only for a run from before Dyno recorded offload", () => {
    const run: Run = { ...base, offload: null, config: { ...base.config, n_gpu_layers: 0 } };
    expect(offloadText(run)).toBe("CPU only");
    expect(runConditions(run).map((c) => c.label)).toContain("offload");
  });

  it("uses llama.cpp's count and names the devices holding weights, not host buffers", () => {
    const run: Run = {
      ...base,
      config: { ...base.config, n_gpu_layers: 31, no_kv_offload: true, split_mode: "row", devices: ["Vulkan0"] },
      offload: {
        layers_offloaded: 31,
        layers_total: 31,
        buffers: [
          { name: "Vulkan0", bytes: 90_000_000 },
          { name: "Vulkan_Host", bytes: 8_000_000 },
          { name: "CPU_Mapped", bytes: 8_000_000 },
        ],
        devices: ["Vulkan0"],
        fit: { margin_mib: 512, n_gpu_layers: 31, tensor_split: [], overrides: [] },
      },
    };
    expect(offloadText(run)).toBe(
      "31/31 layers on GPU · weights on Vulkan0 · fit (512 MiB margin) · devices Vulkan0 · split row · KV on CPU",
    );
  });
});

describe("expert placement", () => {
  it("says which experts and tensors were kept off the GPU", () => {
    const run: Run = {
      ...base,
      config: { ...base.config, n_gpu_layers: 99, n_cpu_moe: 8, tensor_overrides: "attn_q=CPU" },
      offload: { layers_offloaded: 17, layers_total: 17, buffers: [], devices: null, fit: null, tensors_overridden: 26 },
    };
    expect(offloadText(run)).toBe("17/17 layers on GPU · experts of 8 layers on CPU · tensors attn_q=CPU · 26 tensors placed by override");
  });
});

describe("RPC servers", () => {
  it("names each server and the memory its devices offered", () => {
    const gib = 1024 ** 3;
    const dev = (name: string) => ({ name, description: "", kind: "gpu", memory_total_bytes: 24 * gib, memory_free_bytes: 20 * gib });
    const run: Run = {
      ...base,
      config: { ...base.config, n_gpu_layers: 31, rpc: ["10.0.0.2:50052", "10.0.0.3:50052"] },
      offload: {
        layers_offloaded: 31, layers_total: 31, buffers: [], devices: null, fit: null,
        rpc: [{ endpoint: "10.0.0.2:50052", devices: [dev("RPC0")] }, { endpoint: "10.0.0.3:50052", devices: [dev("RPC1")] }],
      },
    };
    expect(offloadText(run)).toBe(
      "31/31 layers offloaded · RPC server 10.0.0.2:50052 (RPC0 20.00 GiB free) · RPC server 10.0.0.3:50052 (RPC1 20.00 GiB free)",
    );
  });
});

describe("power condition", () => {
  it("reads as the CLI writes it, and says when nothing was reported", () => {
    const run: Run = {
      ...base,
      power: { source: "battery", battery_pct: 54, governor: "powersave", platform_profile: "low-power" },
    };
    expect(powerText(run.power)).toBe("on battery (54%) · governor powersave · profile low-power");
    expect(runConditions(run).find((c) => c.label === "power")?.value).toBe(
      "on battery (54%) · governor powersave · profile low-power",
    );
    expect(powerText({ source: "ac", battery_pct: 80, governor: null, platform_profile: null })).toBe("on AC");
    const old: Run = { ...base, power: null };
    expect(runConditions(old).find((c) => c.label === "power")?.value).toBe("not reported");
  });
});
