//! Quality figures of a model on the bundled text, as the worker measures
//! them and the store and reports carry them.

use serde::{Deserialize, Serialize};

/// Tokens of the bundled text a sweep evaluates by default.
pub const DEFAULT_TOKENS: u32 = 2048;
/// Top-k kept per position in the reference file (see `quality`'s module
/// documentation for the error this leaves).
pub const DEFAULT_TOPK: u32 = 1024;

/// Quality figures of one model on the bundled text.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualityFigures {
    pub n_positions: u64,
    pub ppl: f64,
    /// `None` for the reference itself.
    pub kld_mean: Option<f64>,
    pub kld_p99: Option<f64>,
    pub top1_agreement: Option<f64>,
}
