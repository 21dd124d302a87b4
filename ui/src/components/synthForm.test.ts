// @vitest-environment jsdom
// "Synthetic model…" is `dyno synth --like FILE --shape S --type T` by
// clicks: the form sends what was chosen, shows the dry run's size, and
// offers the benchmark picker for the written file.
import { flushSync, mount, tick, unmount } from "svelte";
import { describe, expect, it, vi } from "vitest";

const synthFile = vi.fn();
vi.mock("../api", () => ({
  synthOptions: vi.fn(async () => ({
    shapes: [{ name: "llama-3.2-1b", arch: "llama" }, { name: "llama-3.1-8b", arch: "llama" }],
    levels: ["Q8_0", "Q4_K_M", "Q4_0"],
  })),
  synthFile: (input: unknown) => synthFile(input),
  pickTemplateFile: vi.fn(async () => "/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
  pickSynthPath: vi.fn(async (p: string) => `/out/${p}`),
  presetEstimates: vi.fn(async () => []),
}));
const { default: SynthForm } = await import("./SynthForm.svelte");

const settle = async () => {
  for (let i = 0; i < 5; i++) {
    await tick();
    await Promise.resolve();
  }
  flushSync();
};
const outcome = (dry: boolean) => ({
  source: "/models/SmolLM2-135M-Instruct.Q4_1.gguf", header_bytes_fetched: 0,
  path: "/out/SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf", arch: "llama", seed: 1,
  shape: "llama-3.1-8b Q4_K_M", n_params: 8.03e9, weight_bytes: 4.58 * 2 ** 30, file_bytes: 4.6 * 2 ** 30,
  stats: dry ? null : { header_bytes: 1, file_bytes: 1, tensors: 292, quantise_s: 3, write_s: 14 },
});

describe("SynthForm", () => {
  it("sends the template, shape, level and path chosen, checks the size, then writes and offers Benchmark…", async () => {
    const target = document.createElement("div");
    document.body.append(target);
    const c = mount(SynthForm, { target, props: { onclose: () => {} } });
    await settle();
    const q = (id: string) => target.querySelector(`[data-testid="${id}"]`) as HTMLElement;
    const shapes = [...q("synth-shape").querySelectorAll("option")].map((o) => o.textContent);
    expect(shapes).toEqual(["its own shape (a twin)", "llama-3.2-1b (llama)", "llama-3.1-8b (llama)"]);
    expect((q("synth-write") as HTMLButtonElement).disabled).toBe(true);

    q("synth-choose").click();
    await settle();
    expect((q("synth-like") as HTMLInputElement).value).toBe("/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    const pick = (id: string, v: string) => {
      const el = q(id) as HTMLSelectElement;
      el.value = v;
      el.dispatchEvent(new Event("change"));
    };
    pick("synth-shape", "llama-3.1-8b");
    pick("synth-level", "Q4_K_M");
    q("synth-save-as").click();
    await settle();
    expect((q("synth-out") as HTMLInputElement).value).toBe("/out/SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf");

    synthFile.mockResolvedValueOnce(outcome(true));
    q("synth-check").click();
    await settle();
    expect(synthFile).toHaveBeenLastCalledWith({
      like: "/models/SmolLM2-135M-Instruct.Q4_1.gguf", shape: "llama-3.1-8b", level: "Q4_K_M",
      out: "/out/SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf", dry_run: true,
    });
    expect(q("synth-checked").textContent).toBe("Would write llama, llama-3.1-8b Q4_K_M: 8.03B parameters, 4.58 GiB of weights (4.60 GiB file).");

    synthFile.mockResolvedValueOnce(outcome(false));
    q("synth-write").click();
    await settle();
    expect(synthFile.mock.lastCall![0].dry_run).toBe(false);
    expect(q("synth-written").textContent).toContain("to /out/SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf.");
    q("synth-form-benchmark").click();
    await settle();
    expect(target.querySelector(".synth")!.textContent).toContain("SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf");
    unmount(c);
  });

  it("shows the backend's refusal and writes nothing", async () => {
    const target = document.createElement("div");
    document.body.append(target);
    const c = mount(SynthForm, { target, props: { onclose: () => {} } });
    await settle();
    const q = (id: string) => target.querySelector(`[data-testid="${id}"]`) as HTMLElement;
    const like = q("synth-like") as HTMLInputElement;
    like.value = "/models/gemma.gguf";
    like.dispatchEvent(new Event("input"));
    await settle();
    synthFile.mockRejectedValueOnce({ code: "bad_input", message: "--shape llama-3.1-8b is a llama shape; give a llama file" });
    q("synth-write").click();
    await settle();
    expect(target.textContent).toContain("give a llama file");
    expect(q("synth-written")).toBeNull();
    unmount(c);
  });
});
