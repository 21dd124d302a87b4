import { describe, expect, it } from "vitest";
import { fileStem, runTarget, sweepTarget, targetId, targetKind } from "./target";

describe("targets", () => {
  it("are made and read in the backend's forms, and named as the CLI names their files", () => {
    expect(runTarget(12)).toBe("12");
    expect(sweepTarget(3)).toBe("sweep:3");
    expect(["12", "run:12", "sweep:3", "serve:2"].map((t) => targetKind(t as never))).toEqual(["run", "run", "sweep", "serve"]);
    expect(["12", "run:12", "sweep:3", "serve:2"].map((t) => fileStem(t as never))).toEqual(["run-12", "run-12", "sweep-3", "serve-2"]);
    expect(["12", "run:12", "sweep:3", "serve:2"].map((t) => targetId(t as never))).toEqual([12, 12, 3, 2]);
  });
});
