//! What Dyno predicted for a run before measuring it.
//!
//! The prediction is stored on the run (`runs.prediction_json`) and shown
//! beside what was measured. The types live here, below the store, so that
//! the store reads the column back as a [`RunPrediction`] and no layer above
//! it parses text; how a prediction is made is `predict`'s.

use serde::{Deserialize, Serialize};

/// Prefill (prompt processing) or decode (generation): never blended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", ts(rename = "PredictPhase"))]
pub enum Phase {
    Prefill,
    Decode,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
}

/// A predicted rate with its interval, in tokens per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "PredictedRate"))]
pub struct Estimate {
    pub tokens_per_s: f64,
    /// About an 80% interval: the fit's own scatter widened for what a new
    /// model or level adds (see `predict::speed::predict_rate`).
    pub low: f64,
    pub high: f64,
}

/// What a prediction rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Basis {
    /// "machine" when fitted on this machine's runs, "prior" otherwise.
    pub source: String,
    /// Stored runs the fit used.
    pub runs: usize,
    /// Distinct model files among them.
    pub models: usize,
    /// Whether runs of the same level were among them.
    pub level_seen: bool,
    /// Whether runs of this very file were among them.
    pub model_seen: bool,
    /// Those runs were of its twin (its header with synthetic weights,
    /// `--shape-only`), not of the file itself.
    #[serde(default)]
    pub by_shape: bool,
    /// In words: "from 12 runs of 2 models on this machine".
    pub text: String,
}

/// One test of a run, predicted before it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TestPrediction {
    /// The test's name, as its result is stored ("pp512", "tg128").
    pub test: String,
    pub phase: Phase,
    pub estimate: Estimate,
    pub basis: Basis,
}

/// What Dyno predicted for a run before measuring it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunPrediction {
    pub made_at: String,
    pub tests: Vec<TestPrediction>,
    /// The memory estimate at the run's largest context.
    pub memory_bytes: u64,
}

impl RunPrediction {
    pub fn for_test(&self, test: &str) -> Option<&TestPrediction> {
        self.tests.iter().find(|t| t.test == test)
    }
}
