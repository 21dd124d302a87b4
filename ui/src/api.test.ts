// @vitest-environment jsdom
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { afterEach, describe, expect, it } from "vitest";
import * as api from "./api";

afterEach(() => clearMocks());

describe("toApiError", () => {
  it("keeps the backend's {code, message}", () => {
    expect(api.toApiError({ code: "not_found", message: "no run 9" })).toEqual({ code: "not_found", message: "no run 9" });
  });
  it("normalises strings, JSON strings, Errors, unknown codes and anything else", () => {
    expect(api.toApiError("boom")).toEqual({ code: "internal", message: "boom" });
    expect(api.toApiError('{"code":"busy","message":"a job runs"}')).toEqual({ code: "busy", message: "a job runs" });
    expect(api.toApiError(new Error("ipc down"))).toEqual({ code: "internal", message: "ipc down" });
    expect(api.toApiError({ code: "weird", message: "m" })).toEqual({ code: "internal", message: "m" });
    expect(api.toApiError({ code: "failed", message: "disk full" })).toEqual({ code: "failed", message: "disk full" });
    expect(api.toApiError(42).message).toContain("42");
    expect(api.toApiError(undefined).code).toBe("internal");
  });
});

describe("commands", () => {
  it("reject with a readable error outside the app", async () => {
    await expect(api.hw()).rejects.toMatchObject({ code: "internal", message: expect.stringContaining("Dyno app") });
  });

  it("pass camelCase arguments and normalise rejections", async () => {
    const seen: [string, unknown][] = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args]);
      if (cmd === "run") throw { code: "not_found", message: "No run 99; `dyno runs` lists them." };
      if (cmd === "compare") return { a: "1", b: "sweep:2", tests: [], unmatched: [] };
      return null;
    });
    await expect(api.run(99)).rejects.toEqual({ code: "not_found", message: "No run 99; `dyno runs` lists them." });
    await expect(api.compare("1", "sweep:2")).resolves.toMatchObject({ b: "sweep:2" });
    await api.exportCard("sweep:2", "png", "/tmp/x.png");
    await api.addModelPlace("/data/LLM Models");
    await api.removeModelPlace("/data/LLM Models");
    await api.modelPlaces();
    await api.exportText("12", "md");
    await api.resultList(1000);
    await api.resultList();
    expect(seen).toContainEqual(["compare", { a: "1", b: "sweep:2" }]);
    expect(seen).toContainEqual(["export_card", { target: "sweep:2", format: "png", path: "/tmp/x.png", overwrite: false }]);
    expect(seen).toContainEqual(["export_text", { target: "12", format: "md" }]);
    expect(seen).toContainEqual(["add_model_place", { path: "/data/LLM Models" }]);
    expect(seen).toContainEqual(["remove_model_place", { path: "/data/LLM Models" }]);
    expect(seen).toContainEqual(["model_places", {}]);
    expect(seen).toContainEqual(["result_list", { limit: 1000 }]);
    expect(seen).toContainEqual(["result_list", {}]);
  });

  it("start_sweep sends the spec, the job id and a channel", async () => {
    let got: Record<string, unknown> = {};
    mockIPC((cmd, args) => {
      if (cmd === "start_sweep") got = args as Record<string, unknown>;
      return { sweep_id: 1 };
    });
    const spec = { source: { kind: "files" as const, files: ["/m/a.gguf"] }, prompt: 128, gen: 32, reps: 2, quality: false, fresh: true };
    await api.startSweep(spec, "job-7", () => {});
    expect(got.spec).toEqual(spec);
    expect(got.jobId).toBe("job-7");
    expect(got.onEvent).toBeDefined();
  });

  it("team commands send the URL as given, a channel for the sync, and vsTeam only when asked", async () => {
    const seen: [string, Record<string, unknown>][] = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args as Record<string, unknown>]);
      return cmd === "card_svg" ? "<svg/>" : {};
    });
    const request = { url: "postgres://bob:pw@h/dyno", with_telemetry: false, push_only: false };
    await api.teamStatus();
    await api.saveTeamUrl("postgres://bob@h/dyno");
    await api.teamSync(request, "sync-3", () => {});
    await api.teamMachines("postgres://bob:pw@h/dyno", { model: null, quant: "Q4_1", backend: null, dyno_version: null });
    await api.cardSvg("12");
    await api.cardSvg("12", "postgres://bob:pw@h/dyno");
    await api.exportCard("12", "png", "/tmp/x.png", true, "postgres://bob:pw@h/dyno");
    expect(seen).toContainEqual(["team_status", {}]);
    expect(seen).toContainEqual(["save_team_url", { url: "postgres://bob@h/dyno" }]);
    const sync = seen.find(([c]) => c === "team_sync")![1];
    expect(sync.request).toEqual(request);
    expect(sync.jobId).toBe("sync-3");
    expect(sync.onProgress).toBeDefined();
    expect(seen).toContainEqual(["team_machines", { url: "postgres://bob:pw@h/dyno", query: { model: null, quant: "Q4_1", backend: null, dyno_version: null } }]);
    const cards = seen.filter(([c]) => c === "card_svg").map(([, a]) => a);
    expect(cards).toEqual([{ target: "12" }, { target: "12", vsTeam: "postgres://bob:pw@h/dyno" }]);
    expect(seen).toContainEqual(["export_card", { target: "12", format: "png", path: "/tmp/x.png", overwrite: true, vsTeam: "postgres://bob:pw@h/dyno" }]);
  });
});
