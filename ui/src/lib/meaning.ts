// "What this means": tokens are not words. The backend stores each run's
// tokens per word (measured with the model's own tokenizer) and derives words
// per second and the time to a 500-word reply; these helpers read or recompute
// the same figures so the UI can phrase them for a reader.

import type { Run, WhatThisMeans } from "../types";
import { fmtSeconds } from "./format";

/**
 * Seconds to a reply of `words` words: time to first token plus the reply's
 * tokens at the decode speed (as `reply_500_words_s` in the JSON).
 */
export function replySeconds(
  words: number,
  tokensPerWord: number,
  decodeTokensPerS: number,
  ttftMs: number | null,
): number | null {
  if (!(decodeTokensPerS > 0) || !(tokensPerWord > 0)) return null;
  return (ttftMs ?? 0) / 1000 + (words * tokensPerWord) / decodeTokensPerS;
}

/** Words per second from a decode rate. */
export function wordsPerSecond(decodeTokensPerS: number, tokensPerWord: number): number | null {
  if (!(decodeTokensPerS > 0) || !(tokensPerWord > 0)) return null;
  return decodeTokensPerS / tokensPerWord;
}

export interface Meaning {
  wordsPerS: number;
  reply500S: number;
  tokensPerWord: number;
  /** Whether the reply time includes a measured time to first token. */
  withTtft: boolean;
  /** One sentence for a reader. */
  sentence: string;
}

/** The reader's view of a run, or null when the run has no decode figure. */
export function meaningOf(w: WhatThisMeans | null | undefined): Meaning | null {
  if (!w || !(w.decode_tokens_per_s > 0) || !(w.tokens_per_word > 0)) return null;
  const wordsPerS = w.words_per_s ?? wordsPerSecond(w.decode_tokens_per_s, w.tokens_per_word)!;
  const reply500S = w.reply_500_words_s ?? replySeconds(500, w.tokens_per_word, w.decode_tokens_per_s, w.ttft_ms)!;
  const withTtft = w.ttft_ms != null;
  const sentence =
    `About ${wordsPerS.toFixed(wordsPerS < 10 ? 1 : 0)} words per second; a 500-word reply takes ` +
    `${fmtSeconds(reply500S)}${withTtft ? " including the time to first token" : ""} ` +
    `(${w.tokens_per_word.toFixed(2)} tokens per word with this model's tokenizer).`;
  return { wordsPerS, reply500S, tokensPerWord: w.tokens_per_word, withTtft, sentence };
}

export const runMeaning = (run: Run): Meaning | null => meaningOf(run.what_this_means);
