//! What a level costs in quality, before it is measured.
//!
//! A KLD measured by a sweep on this very file (matched by sha256) is the
//! answer when there is one. Otherwise Dyno gives llama.cpp's published table
//! (`tools/perplexity/README.md`, Llama 3 8B against its F16), labelled as a
//! figure from another model: quantisation hurts models differently, small
//! models more, so it shows the order of things, not this model's loss.

use serde::{Deserialize, Serialize};

use crate::quantize::nominal_bpw;

/// Mean KLD against F16 for Llama 3 8B, from llama.cpp's perplexity README.
const LLAMA3_8B_KLD: [(&str, f64); 6] = [
    ("Q8_0", 0.0014),
    ("Q6_K", 0.0055),
    ("Q5_K_M", 0.011),
    ("Q4_K_M", 0.031),
    ("Q3_K_M", 0.10),
    ("Q2_K", 0.45),
];

/// A level's expected quality loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "PredictedQuality"))]
pub struct QualityGuess {
    /// Mean KL divergence against the most precise level (nats per token).
    pub kld: f64,
    /// "measured" (a sweep of this file), "prior" (the published table), or
    /// "prior_interpolated" (between the table's rows by bits per weight).
    pub source: String,
    /// The loss in a word: negligible, very small, small, noticeable, large.
    pub words: String,
    /// Where the figure comes from, in full.
    pub note: String,
}

/// Words for a KLD, thresholds at the table's steps.
pub fn words(kld: f64) -> &'static str {
    if kld < 0.005 {
        "negligible"
    } else if kld < 0.02 {
        "very small"
    } else if kld < 0.06 {
        "small"
    } else if kld < 0.2 {
        "noticeable"
    } else {
        "large"
    }
}

/// The measured KLD of this file, else the prior for its level.
pub fn guess(level: &str, measured: Option<f64>) -> QualityGuess {
    if let Some(k) = measured {
        return QualityGuess {
            kld: k,
            source: "measured".into(),
            words: words(k).into(),
            note: "measured by a sweep of this file on the bundled text".into(),
        };
    }
    let up = level.to_ascii_uppercase();
    if matches!(up.as_str(), "F32" | "F16" | "BF16") {
        return QualityGuess {
            kld: 0.0,
            source: "prior".into(),
            words: words(0.0).into(),
            note: "full precision: the reference every level is measured against".into(),
        };
    }
    let from = "Llama 3 8B in llama.cpp's tools/perplexity/README.md, another model";
    if let Some(&(_, k)) = LLAMA3_8B_KLD.iter().find(|(l, _)| *l == up) {
        return QualityGuess {
            kld: k,
            source: "prior".into(),
            words: words(k).into(),
            note: format!("prior: {up} on {from}"),
        };
    }
    // Between the table's rows, log-linear in bits per weight; beyond its
    // ends, the nearest row's slope carries on.
    let bpw = nominal_bpw(&up);
    let mut rows: Vec<(f64, f64)> = LLAMA3_8B_KLD
        .iter()
        .map(|(l, k)| (nominal_bpw(l), k.ln()))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let seg = rows
        .windows(2)
        .find(|w| bpw <= w[1].0)
        .unwrap_or(&rows[rows.len() - 2..]);
    let (x0, y0, x1, y1) = (seg[0].0, seg[0].1, seg[1].0, seg[1].1);
    let k = (y0 + (bpw - x0) * (y1 - y0) / (x1 - x0)).exp();
    QualityGuess {
        kld: k,
        source: "prior_interpolated".into(),
        words: words(k).into(),
        note: format!("prior: interpolated by bits per weight ({bpw}) between rows for {from}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_then_interpolation_then_measurement() {
        let q4 = guess("Q4_K_M", None);
        assert_eq!((q4.kld, q4.source.as_str()), (0.031, "prior"));
        assert_eq!(q4.words, "small");
        assert!(q4.note.contains("another model"));
        // Q4_0 (4.5 bpw) lies between Q3_K_M (3.91) and Q4_K_M (4.85).
        let q40 = guess("q4_0", None);
        assert_eq!(q40.source, "prior_interpolated");
        assert!(q40.kld > 0.031 && q40.kld < 0.10, "{}", q40.kld);
        // IQ2_XXS is below the table: worse than Q2_K.
        assert!(guess("IQ2_XXS", None).kld > 0.45);
        assert_eq!(guess("F16", None).kld, 0.0);
        let m = guess("Q4_K_M", Some(0.08));
        assert_eq!((m.kld, m.source.as_str()), (0.08, "measured"));
        assert_eq!(m.words, "noticeable");
    }
}
