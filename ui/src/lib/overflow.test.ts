import { describe, expect, it } from "vitest";
import { hiddenSides } from "./overflow";

describe("hiddenSides", () => {
  it("says which side of a wide table is out of view", () => {
    expect(hiddenSides(0, 800, 800)).toEqual({ left: false, right: false });
    expect(hiddenSides(0, 800, 1200)).toEqual({ left: false, right: true });
    expect(hiddenSides(200, 800, 1200)).toEqual({ left: true, right: true });
    expect(hiddenSides(400, 800, 1200)).toEqual({ left: true, right: false });
  });
});
