import { describe, expect, it } from "vitest";
import sweepFiles from "../fixtures/sweep-files.json";
import type { SweepDoc } from "../types";
import { meaningOf, replySeconds, wordsPerSecond } from "./meaning";

const wtm = (sweepFiles as unknown as SweepDoc).runs[0].what_this_means!;

describe("what this means", () => {
  it("recomputes the backend's reply time and words per second", () => {
    expect(replySeconds(500, wtm.tokens_per_word, wtm.decode_tokens_per_s, wtm.ttft_ms)).toBeCloseTo(
      wtm.reply_500_words_s!,
      6,
    );
    expect(wordsPerSecond(wtm.decode_tokens_per_s, wtm.tokens_per_word)).toBeCloseTo(wtm.words_per_s, 6);
  });
  it("has no answer without a decode rate", () => {
    expect(replySeconds(500, 1.3, 0, 100)).toBeNull();
    expect(meaningOf(null)).toBeNull();
  });
  it("phrases it for a reader", () => {
    const m = meaningOf(wtm)!;
    expect(m.withTtft).toBe(true);
    expect(m.sentence).toContain("words per second");
    expect(m.sentence).toContain("500-word reply takes 10.7 s");
  });
  it("counts a reply without TTFT as decode time only", () => {
    const m = meaningOf({ ...wtm, ttft_ms: null, reply_500_words_s: 10 })!;
    expect(m.withTtft).toBe(false);
    expect(m.sentence).not.toContain("first token");
  });
});
