//! What is measured: a test, a run's configuration, and one repetition's
//! timings. These are the nouns of a benchmark, shared by the planner, the
//! worker that times them, the store that keeps them and the reports.

use serde::{Deserialize, Serialize};

use super::params::{ContextParams, ModelParams};

/// What a test times. Written as its snake_case word in JSON and in the
/// store's `results.kind`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Prefill of `n_prompt` tokens. The default only so that a result
    /// document can be built field by field; every stored result has a kind.
    #[default]
    Prompt,
    /// `n_gen` single-token decodes.
    Gen,
    /// Prefill then decode, timed per phase, with time to first token.
    PromptGen,
    /// `n_parallel` sequences: each prefills `n_prompt` tokens, then all
    /// decode `n_gen` tokens in lockstep, one batch per step.
    Parallel,
}

impl TestKind {
    pub const ALL: &'static [TestKind] = &[
        TestKind::Prompt,
        TestKind::Gen,
        TestKind::PromptGen,
        TestKind::Parallel,
    ];

    /// The word JSON and the store write.
    pub fn as_str(self) -> &'static str {
        match self {
            TestKind::Prompt => "prompt",
            TestKind::Gen => "gen",
            TestKind::PromptGen => "prompt_gen",
            TestKind::Parallel => "parallel",
        }
    }
}

/// A test kind this Dyno does not know, from a newer Dyno (a file imported,
/// a team run pulled): refused in words that name it and say what to do,
/// never taken for another kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTestKind(pub String);

impl std::fmt::Display for UnknownTestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known: Vec<&str> = TestKind::ALL.iter().map(|k| k.as_str()).collect();
        write!(
            f,
            "test kind '{}', which this Dyno does not know ({}); update Dyno to read it",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownTestKind {}

/// The store's `results.kind` column reads through this.
impl TryFrom<String> for TestKind {
    type Error = UnknownTestKind;

    fn try_from(word: String) -> Result<TestKind, UnknownTestKind> {
        TestKind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == word)
            .ok_or(UnknownTestKind(word))
    }
}

/// Read by hand so that an unknown kind is refused as [`UnknownTestKind`]
/// says.
impl<'de> Deserialize<'de> for TestKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TestKind, D::Error> {
        TestKind::try_from(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// One test, independent of its context parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSpec {
    pub kind: TestKind,
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub n_parallel: u32,
}

/// The largest context, in tokens, that Dyno asks llama.cpp for.
pub const MAX_N_CTX: u32 = (i32::MAX / 2) as u32;

impl TestSpec {
    /// The name llama-bench would print ("pp512", "tg128", "pp512+tg128"),
    /// with "@d4096" for a depth and "@npl4" for parallel sequences.
    pub fn name(&self) -> String {
        let base = match self.kind {
            TestKind::Prompt => format!("pp{}", self.n_prompt),
            TestKind::Gen => format!("tg{}", self.n_gen),
            TestKind::PromptGen => format!("pp{}+tg{}", self.n_prompt, self.n_gen),
            TestKind::Parallel => format!("pp{}+tg{}", self.n_prompt, self.n_gen),
        };
        let mut name = base;
        if self.n_depth > 0 {
            name.push_str(&format!("@d{}", self.n_depth));
        }
        if self.kind == TestKind::Parallel {
            name.push_str(&format!("@npl{}", self.n_parallel));
        }
        name
    }

    /// Context size the test needs, as llama-bench sizes it. Computed in u64
    /// (saturating) because lengths near `u32::MAX` would wrap in u32 into a
    /// small, wrong context.
    pub fn n_ctx(&self) -> u64 {
        let per_seq = u64::from(self.n_prompt) + u64::from(self.n_gen) + u64::from(self.n_depth);
        per_seq.saturating_mul(u64::from(self.n_parallel.max(1)))
    }

    /// [`Self::n_ctx`] as llama.cpp takes it, or why it cannot be made:
    /// llama.cpp's positions are int32, and Dyno keeps to half that range
    /// (as the plan check always has) for a margin.
    pub fn llama_n_ctx(&self) -> Result<u32, String> {
        let n_ctx = self.n_ctx();
        u32::try_from(n_ctx)
            .ok()
            .filter(|&n| n <= MAX_N_CTX)
            .ok_or_else(|| {
                format!(
                    "{} needs a context of {n_ctx} tokens, more than llama.cpp can address \
                     ({MAX_N_CTX}); use shorter tests (-p, -n, -d, --npp, --ntg) or fewer \
                     parallel sequences (--npl)",
                    self.name()
                )
            })
    }
}

/// One test with its context, as the worker runs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub test: TestSpec,
    pub ctx: ContextParams,
}

/// One model under one full configuration: a row of the `runs` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub model: ModelParams,
    pub ctx: ContextParams,
    pub reps: u32,
    pub warmup: bool,
    pub tests: Vec<TestSpec>,
    /// Each test repeated back to back for this many seconds instead of
    /// `reps` times (`--sustain`); absent for ordinary runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustain_s: Option<u32>,
}

impl RunConfig {
    /// The jobs this run hands a worker, in order.
    pub fn jobs(&self) -> impl Iterator<Item = Job> + '_ {
        self.tests.iter().map(|t| Job {
            test: t.clone(),
            ctx: self.ctx.clone(),
        })
    }
}

/// One repetition's timings. Times are wall-clock nanoseconds of the timed
/// region only; tokenization, sampling setup and model loading are outside.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The whole timed region (prefill plus decode), as llama-bench's sample.
    pub total_ns: u64,
    /// Prefill phase, when the test has one.
    pub prompt_ns: Option<u64>,
    /// Decode phase, when the test has one.
    pub gen_ns: Option<u64>,
    /// Prefill plus the first token, for `PromptGen` tests.
    pub ttft_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(n_prompt: u32, n_gen: u32, n_depth: u32, n_parallel: u32) -> TestSpec {
        TestSpec {
            kind: TestKind::Parallel,
            n_prompt,
            n_gen,
            n_depth,
            n_parallel,
        }
    }

    #[test]
    fn n_ctx_does_not_wrap_near_u32_max() {
        assert_eq!(spec(16, 8, 0, 4).n_ctx(), 96);
        assert_eq!(spec(u32::MAX, 1, 0, 1).n_ctx(), 1 << 32);
        assert_eq!(spec(1 << 31, 0, 0, 2).n_ctx(), 1 << 32);
        assert_eq!(
            spec(u32::MAX, u32::MAX, u32::MAX, 1).n_ctx(),
            3 * u64::from(u32::MAX)
        );
        // Past u64 it saturates rather than wraps.
        assert_eq!(
            spec(u32::MAX, u32::MAX, u32::MAX, u32::MAX).n_ctx(),
            u64::MAX
        );
    }

    #[test]
    fn llama_n_ctx_refuses_what_llama_cpp_cannot_address() {
        assert_eq!(spec(16, 8, 0, 4).llama_n_ctx(), Ok(96));
        let max = (i32::MAX / 2) as u32;
        assert_eq!(spec(max, 0, 0, 1).llama_n_ctx(), Ok(max));
        let e = spec(u32::MAX, 1, 0, 1).llama_n_ctx().unwrap_err();
        assert!(e.contains("4294967296 tokens"), "{e}");
        assert!(spec(max, 1, 0, 1).llama_n_ctx().is_err());
        assert!(spec(1 << 30, 1 << 30, 0, 2).llama_n_ctx().is_err());
    }
}
