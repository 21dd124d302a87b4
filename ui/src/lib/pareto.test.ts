import { describe, expect, it } from "vitest";
import ladder from "../fixtures/sweep-ladder.json";
import type { SweepDoc } from "../types";
import { paretoFrontier } from "./pareto";
import { levelRows } from "./sweepData";

type P = { id: string; x: number | null; y: number | null };
const ids = (ps: P[]) => ps.map((p) => p.id);
const front = (ps: P[]) =>
  paretoFrontier(
    ps,
    (p) => p.x,
    (p) => p.y,
  );

describe("paretoFrontier", () => {
  it("keeps the points no other beats on both axes, sorted by x", () => {
    const ps: P[] = [
      { id: "a", x: 0, y: 50 },
      { id: "b", x: 1, y: 80 },
      { id: "c", x: 2, y: 70 }, // slower than b at a higher x
      { id: "d", x: 3, y: 120 },
    ];
    expect(ids(front(ps))).toEqual(["a", "b", "d"]);
  });
  it("drops points with missing coordinates and handles empty input", () => {
    expect(ids(front([{ id: "a", x: null, y: 1 }, { id: "b", x: 1, y: 2 }]))).toEqual(["b"]);
    expect(front([])).toEqual([]);
  });
  it("keeps the faster of two points at the same x, and exact ties", () => {
    expect(ids(front([{ id: "a", x: 1, y: 1 }, { id: "b", x: 1, y: 2 }]))).toEqual(["b"]);
    expect(ids(front([{ id: "a", x: 1, y: 2 }, { id: "b", x: 1, y: 2 }]))).toEqual(["a", "b"]);
  });
  it("agrees with the backend's pareto flags on a real sweep (tg against KLD)", () => {
    const rows = levelRows(ladder as unknown as SweepDoc);
    const mine = paretoFrontier(
      rows,
      (r) => r.kld,
      (r) => r.tg?.mean ?? null,
    ).map((r) => r.level);
    const backend = rows.filter((r) => r.pareto).map((r) => r.level);
    expect(mine.sort()).toEqual(backend.sort());
  });
});
