// @vitest-environment jsdom
// "Synthetic model…" is `dyno synth --like FILE --shape S --type T` by
// clicks: the form sends what was chosen, shows the dry run's size, and
// offers the benchmark picker for the written file.
import { flushSync, mount, tick, unmount } from "svelte";
import { describe, expect, it, vi } from "vitest";

const synthFile = vi.fn();
const cancel = vi.fn(async (_jobId: string) => true);
const synthName = vi.fn(async (_input: unknown) => "SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf");
vi.mock("../api", () => ({
  synthOptions: vi.fn(async () => ({
    shapes: [{ name: "llama-3.2-1b", arch: "llama" }, { name: "llama-3.1-8b", arch: "llama" }, { name: "gemma-3-1b", arch: "gemma3" }],
    levels: ["Q8_0", "Q4_K_M", "Q4_0"],
    builtin_shapes: ["llama-3.2-1b", "llama-3.1-8b"],
  })),
  synthFile: (input: unknown, jobId: string, onEvent: (e: unknown) => void) => synthFile(input, jobId, onEvent),
  newJobId: (p: string) => `${p}-1`,
  cancel: (jobId: string) => cancel(jobId),
  pickTemplateFile: vi.fn(async () => "/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
  pickSynthPath: vi.fn(async (p: string) => `/out/${p}`),
  // The backend names the file (app::synth::suggested_name, tested in Rust).
  synthName: (input: unknown) => synthName(input),
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
    const shapes = () => [...q("synth-shape").querySelectorAll("option")].map((o) => o.textContent);
    // No template yet: Dyno's built-in llama header, which needs a llama shape.
    expect(shapes()).toEqual(["choose a shape", "llama-3.2-1b (llama)", "llama-3.1-8b (llama)"]);
    expect((q("synth-write") as HTMLButtonElement).disabled).toBe(true);

    q("synth-choose").click();
    await settle();
    // A template file: its twin, or any shape (one of another architecture is refused with the reason).
    expect(shapes()).toEqual(["its own shape (a twin)", "llama-3.2-1b (llama)", "llama-3.1-8b (llama)", "gemma-3-1b (gemma3)"]);
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
    expect(synthName.mock.lastCall![0]).toMatchObject({ like: "/models/SmolLM2-135M-Instruct.Q4_1.gguf", shape: "llama-3.1-8b", level: "Q4_K_M" });
    expect((q("synth-out") as HTMLInputElement).value).toBe("/out/SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf");

    synthFile.mockResolvedValueOnce(outcome(true));
    q("synth-check").click();
    await settle();
    // The dialog asked before replacing, so the file it named may be replaced.
    expect(synthFile.mock.lastCall![0]).toEqual({
      like: "/models/SmolLM2-135M-Instruct.Q4_1.gguf", shape: "llama-3.1-8b", level: "Q4_K_M",
      out: "/out/SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf", replace: true, dry_run: true,
    });
    expect(q("synth-checked").textContent).toBe("Would write llama, llama-3.1-8b Q4_K_M: 8.03 B parameters, 4.58 GiB of weights (4.60 GiB file).");

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

  it("shows the bytes written while it writes, cancels on request, and never replaces a path typed by hand", async () => {
    const target = document.createElement("div");
    document.body.append(target);
    const c = mount(SynthForm, { target, props: { onclose: () => {} } });
    await settle();
    const q = (id: string) => target.querySelector(`[data-testid="${id}"]`) as HTMLElement;
    const type = (id: string, v: string) => {
      const el = q(id) as HTMLInputElement;
      el.value = v;
      el.dispatchEvent(new Event("input"));
    };
    type("synth-like", "/models/smol.gguf");
    type("synth-out", "/data/mine.gguf");
    await settle();
    let fail: (e: unknown) => void = () => {};
    synthFile.mockImplementationOnce((_input, _id, onEvent: (e: unknown) => void) => {
      onEvent({ kind: "quantize_progress", done: 2 * 2 ** 30, total: 4 * 2 ** 30 });
      return new Promise((_, reject) => (fail = reject));
    });
    q("synth-write").click();
    await settle();
    expect(synthFile.mock.lastCall![0]).toMatchObject({ out: "/data/mine.gguf", replace: false, dry_run: false, shape: undefined });
    expect(q("synth-progress").textContent).toContain("2.00 GiB / 4.00 GiB (50%)");
    q("synth-cancel").click();
    expect(cancel).toHaveBeenCalledWith("synth-1");
    fail({ code: "bad_input", message: "writing /data/mine.gguf: cancelled; nothing was kept" });
    await settle();
    expect(q("synth-progress")).toBeNull();
    expect(target.textContent).toContain("nothing was kept");
    unmount(c);
  });

  it("sends key=value changes after the named shape, as --shape takes them", async () => {
    const target = document.createElement("div");
    document.body.append(target);
    const c = mount(SynthForm, { target, props: { onclose: () => {} } });
    await settle();
    const q = (id: string) => target.querySelector(`[data-testid="${id}"]`) as HTMLElement;
    const type = (id: string, v: string) => {
      const el = q(id) as HTMLInputElement;
      el.value = v;
      el.dispatchEvent(new Event("input"));
    };
    type("synth-like", "/models/smol.gguf");
    const shape = q("synth-shape") as HTMLSelectElement;
    shape.value = "llama-3.2-1b";
    shape.dispatchEvent(new Event("change"));
    type("synth-changes", " ff=1024,experts=64,experts_used=8 ");
    await settle();
    synthFile.mockResolvedValueOnce(outcome(true));
    q("synth-check").click();
    await settle();
    expect(synthFile.mock.lastCall![0]).toMatchObject({ shape: "llama-3.2-1b,ff=1024,experts=64,experts_used=8", dry_run: true });
    // Changes alone apply to the template's own shape.
    shape.value = "";
    shape.dispatchEvent(new Event("change"));
    type("synth-changes", "layers=2");
    await settle();
    synthFile.mockResolvedValueOnce(outcome(true));
    q("synth-check").click();
    await settle();
    expect(synthFile.mock.lastCall![0]).toMatchObject({ shape: "layers=2" });
    unmount(c);
  });

  it("writes a llama shape from Dyno's built-in header when no template is given", async () => {
    const target = document.createElement("div");
    document.body.append(target);
    const c = mount(SynthForm, { target, props: { onclose: () => {} } });
    await settle();
    const q = (id: string) => target.querySelector(`[data-testid="${id}"]`) as HTMLElement;
    const shape = q("synth-shape") as HTMLSelectElement;
    shape.value = "llama-3.1-8b";
    shape.dispatchEvent(new Event("change"));
    await settle();
    expect((q("synth-check") as HTMLButtonElement).disabled).toBe(false);
    synthFile.mockResolvedValueOnce(outcome(true));
    q("synth-check").click();
    await settle();
    expect(synthFile.mock.lastCall![0]).toMatchObject({ like: "", shape: "llama-3.1-8b", dry_run: true });
    // A gemma template typed, then cleared: a gemma shape cannot stay chosen.
    const like = q("synth-like") as HTMLInputElement;
    like.value = "/models/gemma.gguf";
    like.dispatchEvent(new Event("input"));
    await settle();
    shape.value = "gemma-3-1b";
    shape.dispatchEvent(new Event("change"));
    like.value = "";
    like.dispatchEvent(new Event("input"));
    await settle();
    expect(shape.value).toBe("");
    expect((q("synth-check") as HTMLButtonElement).disabled).toBe(true);
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
