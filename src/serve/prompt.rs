//! Prompts from real text.
//!
//! Random token ids would make a speculative-decoding or MTP server look
//! worse than it is (a draft model cannot guess noise), so prompts are cut
//! from the bundled quality text. Each request's prompt differs from every
//! other's from its first words (a tag with the run, test and request,
//! then the text from an offset of its own), so a server's prefix cache
//! cannot serve one request from another's prefill. In cached-prefix mode
//! the requests of a test share one context instead, and only the part
//! after it is new.

use crate::quality::TEXT;

/// Tokens per word before the server has said: a typical English figure
/// for BPE vocabularies, replaced by the server's own count after the
/// first request.
pub const DEFAULT_TOKENS_PER_WORD: f64 = 1.35;

/// Cuts prompts of about a given token count from the text.
///
/// A server counts more than the text: the chat template's own tokens (a
/// default system prompt can be dozens), and the request's tag. Two
/// warm-up requests of different lengths measure both the tokens per word
/// (the slope) and that fixed overhead (the intercept), so that a test
/// asking for 512 prompt tokens sends about 512 in all.
#[derive(Debug, Clone)]
pub struct Prompts {
    words: Vec<&'static str>,
    tokens_per_word: f64,
    /// Tokens the server adds to every prompt (template, tag).
    overhead: f64,
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts {
            words: TEXT.split_whitespace().collect(),
            tokens_per_word: DEFAULT_TOKENS_PER_WORD,
            overhead: 0.0,
        }
    }
}

impl Prompts {
    /// Learn the tokens per word and the fixed overhead from two prompts
    /// of different word counts, as (words, tokens the server counted).
    /// One usable point gives the slope alone.
    pub fn calibrate(&mut self, a: (usize, u64), b: Option<(usize, u64)>) {
        let (wa, ta) = (a.0 as f64, a.1 as f64);
        match b {
            Some((wb, tb)) if wb != a.0 && tb > a.1 => {
                let slope = (tb as f64 - ta) / (wb as f64 - wa);
                if (0.5..=4.0).contains(&slope) {
                    self.tokens_per_word = slope;
                    self.overhead = (ta - slope * wa).max(0.0);
                    return;
                }
            }
            _ => {}
        }
        if a.0 > 0 && a.1 > 0 {
            self.tokens_per_word = (ta / wa).clamp(0.5, 4.0);
        }
    }

    pub fn tokens_per_word(&self) -> f64 {
        self.tokens_per_word
    }

    pub fn overhead(&self) -> f64 {
        self.overhead
    }

    /// Words of text that make about `tokens` tokens of text alone.
    pub fn words_for(&self, tokens: u32) -> usize {
        ((tokens as f64 / self.tokens_per_word).round() as usize).max(1)
    }

    /// `n` words of the text from `offset` on (wrapping).
    fn words(&self, n: usize, offset: usize) -> String {
        (0..n)
            .map(|i| self.words[(offset + i) % self.words.len()])
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A prompt no other request shares a prefix with: the tag, then text
    /// from an offset that depends on the tag, about `tokens` tokens in all
    /// once the server adds its overhead.
    pub fn unique(&self, tag: &str, tokens: u32) -> String {
        let text_tokens = (tokens as f64 - self.overhead).max(1.0) as u32;
        self.tagged(tag, text_tokens)
    }

    /// The tag and about `tokens` tokens of text, with no overhead taken
    /// off: a part of a prompt, such as the new part after a shared context.
    pub fn tagged(&self, tag: &str, tokens: u32) -> String {
        let offset = tag
            .bytes()
            .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
        format!(
            "[{tag}] {}",
            self.words(self.words_for(tokens), offset % self.words.len())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_differ_from_the_first_word_and_scale_with_tokens() {
        let p = Prompts::default();
        let a = p.unique("r1 t0 q0", 256);
        let b = p.unique("r1 t0 q1", 256);
        assert_ne!(a.split_whitespace().next(), None);
        assert_ne!(a[..12], b[..12]);
        let words = a.split_whitespace().count();
        assert!((180..=200).contains(&words), "{words}");
    }

    #[test]
    fn calibration_learns_the_slope_and_the_template_overhead() {
        let mut p = Prompts::default();
        // 40 tokens of template, 1.5 tokens per word.
        p.calibrate((100, 190), Some((200, 340)));
        assert_eq!(p.tokens_per_word(), 1.5);
        assert_eq!(p.overhead(), 40.0);
        // 340 tokens in all: 300 of text, 200 words (plus the tag's).
        let words = p.unique("t", 340).split_whitespace().count();
        assert_eq!(words, 201);
        // One point: the slope alone.
        let mut q = Prompts::default();
        q.calibrate((100, 150), None);
        assert_eq!((q.tokens_per_word(), q.overhead()), (1.5, 0.0));
        q.calibrate((0, 10), Some((0, 10))); // nothing learnt from nothing
        assert_eq!(q.tokens_per_word(), 1.5);
    }
}
