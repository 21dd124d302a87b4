// @vitest-environment jsdom
// Svelte 5 drops the whitespace at the start of a block, so "text (n%)"
// written as `{text}{#if …} (n%){/if}` read "(3 tests)(67%)". The bar's
// label keeps its space.
import { flushSync, mount, unmount } from "svelte";
import { describe, expect, it } from "vitest";
import ProgressBar from "./ProgressBar.svelte";

describe("ProgressBar", () => {
  it("keeps the space between its text and its percentage", () => {
    const target = document.createElement("div");
    const c = mount(ProgressBar, { target, props: { label: "Level Q4_1", value: { done: 2, total: 3 }, text: "(3 tests)", testid: "bar" } });
    flushSync();
    expect(target.querySelector(".progress-label .muted")!.textContent!.trim()).toBe("(3 tests) (67%)");
    unmount(c);
  });
});
