//! Quality figures of a model on the bundled text, as the worker measures
//! them and the store and reports carry them.

use serde::{Deserialize, Serialize};

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
