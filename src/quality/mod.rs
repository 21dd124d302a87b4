//! Quality of a quantisation level: perplexity, KL divergence and top-1
//! agreement against the sweep's highest-precision level, on a bundled real
//! English text (`data/quality/`, see its SOURCE.md).
//!
//! # Method
//! The text is tokenized once per model (the levels of one model share a
//! tokenizer; a hash of the token ids proves it) and cut into chunks of
//! `chunk_tokens`. Each chunk is evaluated from an empty KV cache with BOS
//! first, and, as llama-perplexity does, only the second half of each chunk
//! is scored, so every scored token has at least half a chunk of context.
//!
//! # Bounded memory
//! llama-perplexity's KLD mode stores the reference's whole log-probability
//! vector for every position (n_vocab × 2 bytes each: GiBs for long texts
//! and big vocabularies). Dyno keeps, per scored position, only the
//! reference's top-k tokens with their log-probabilities and the log of the
//! probability mass left outside them. The KL divergence of a level is then
//! computed over k + 1 bins, the k tokens and "everything else":
//!
//! `KL ≈ Σ_top-k p_i (log p_i − log q_i) + p_rest (log p_rest − log q_rest)`
//!
//! Merging tokens into one bin can only lose information, so this is a lower
//! bound of the exact divergence (the log-sum inequality), and the gap is the
//! divergence inside the rest bin, weighted by its mass. With k = 0 Dyno keeps
//! the whole vocabulary and the figure is exact (hidden option
//! `--quality-topk 0`). Measured on SmolLM2-135M (Q4_0 and Q8_0 against
//! Q4_1, 2048 tokens), the top-k figure falls short of the exact one by
//! 13% at k = 64, 5% at k = 256 and 1.8% at k = 1024, hence the default of
//! 1024. Its reference file for 2048 tokens (1020 scored positions) is 8.4 MB,
//! against about 100 MB (2 bytes × 49152 × 1020) in llama-perplexity's format
//! and 535 MB for a 262144-entry vocabulary such as Gemma 3's.
//!
//! The level's side never stores anything: its logits are turned into
//! log-probabilities position by position and folded into running sums.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use crate::error::{DynoError, Result};

/// The bundled text: public domain, see `data/quality/SOURCE.md`.
pub const TEXT: &str = include_str!("../../data/quality/alice.txt");
/// sha256 of [`TEXT`], hex: part of every stored quality key, so figures
/// scored on another text are never mistaken for these.
pub fn text_sha256() -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(TEXT.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where the text came from, stored with every quality figure.
pub const TEXT_SOURCE: &str = "Alice's Adventures in Wonderland (Lewis Carroll, public domain)";

/// Default evaluation: a few chunks of 512 tokens.
pub const CHUNK_TOKENS: u32 = 512;
/// The default length and top-k live with the sweep's settings, which
/// default to them.
pub use crate::vocab::quality::{DEFAULT_TOKENS, DEFAULT_TOPK};

/// Number of chunks for a requested number of tokens (at least one).
pub fn n_chunks(tokens: u32) -> u32 {
    tokens.div_ceil(CHUNK_TOKENS).max(1)
}

const MAGIC: &[u8; 8] = b"DYNOREF1";

/// Header of a reference file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefHeader {
    pub n_vocab: u32,
    /// Entries kept per position (n_vocab when exact).
    pub topk: u32,
    pub n_positions: u32,
    /// FNV-1a of the evaluated token ids: a level tokenizing the text
    /// differently is a different model.
    pub tokens_hash: u64,
}

/// FNV-1a over token ids, to check two models saw the same tokens.
pub fn hash_tokens(tokens: &[i32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for t in tokens {
        for b in t.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// In place: logits → natural-log probabilities. Returns the log-sum-exp.
pub fn log_softmax(logits: &[f32], out: &mut Vec<f32>) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    let lse = f64::from(max) + sum.ln();
    out.clear();
    out.extend(logits.iter().map(|&l| (f64::from(l) - lse) as f32));
    lse
}

/// One scored position of the reference: top-k (token, log p) in falling
/// order, and log of the probability mass outside them.
#[derive(Debug, Clone, PartialEq)]
pub struct RefRow {
    pub top: Vec<(i32, f32)>,
    pub rest_logp: f32,
}

impl RefRow {
    /// The top `k` of `logp` (k = 0 or ≥ n_vocab: all of it). `scratch` is
    /// reused between calls to avoid an allocation per position.
    pub fn from_logprobs(logp: &[f32], k: u32, scratch: &mut Vec<i32>) -> RefRow {
        let n = logp.len();
        let k = if k == 0 { n } else { (k as usize).min(n) };
        scratch.clear();
        scratch.extend(0..n as i32);
        let by_p = |a: &i32, b: &i32| logp[*b as usize].total_cmp(&logp[*a as usize]);
        if k < n {
            scratch.select_nth_unstable_by(k, by_p);
        }
        let top = &mut scratch[..k];
        top.sort_unstable_by(by_p);
        let kept: f64 = top.iter().map(|&i| f64::from(logp[i as usize]).exp()).sum();
        RefRow {
            top: top.iter().map(|&i| (i, logp[i as usize])).collect(),
            rest_logp: rest_log(kept) as f32,
        }
    }

    /// KL(reference ‖ level) over the top-k bins plus the rest bin, with the
    /// level's log-probabilities `q` over the whole vocabulary.
    pub fn kld(&self, q: &[f32]) -> f64 {
        let mut kl = 0.0;
        let mut q_kept = 0.0;
        for &(id, lp) in &self.top {
            let lq = f64::from(q[id as usize]);
            let lp = f64::from(lp);
            kl += lp.exp() * (lp - lq);
            q_kept += lq.exp();
        }
        let lp_rest = f64::from(self.rest_logp);
        if lp_rest.is_finite() {
            // The level may put (rounded) all its mass on the k tokens.
            let lq_rest = (1.0 - q_kept).max(1e-30).ln();
            kl += lp_rest.exp() * (lp_rest - lq_rest);
        }
        // Rounding can leave a hair below zero for identical distributions.
        kl.max(0.0)
    }

    /// The reference's most likely token.
    pub fn argmax(&self) -> i32 {
        self.top.first().map(|t| t.0).unwrap_or(-1)
    }
}

/// log(1 − kept); −∞ marks an empty rest bin (all of the vocabulary kept),
/// whose term is then left out.
fn rest_log(kept: f64) -> f64 {
    let rest = 1.0 - kept;
    if rest <= 0.0 {
        f64::NEG_INFINITY
    } else {
        rest.max(1e-30).ln()
    }
}

/// Writes a reference file: header, then rows of (rest, k × (id, logp)).
pub struct RefWriter {
    out: BufWriter<std::fs::File>,
    header: RefHeader,
    written: u32,
}

impl RefWriter {
    pub fn create(path: &Path, header: RefHeader) -> std::io::Result<RefWriter> {
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        out.write_all(MAGIC)?;
        for v in [header.n_vocab, header.topk, header.n_positions] {
            out.write_all(&v.to_le_bytes())?;
        }
        out.write_all(&header.tokens_hash.to_le_bytes())?;
        Ok(RefWriter {
            out,
            header,
            written: 0,
        })
    }

    pub fn push(&mut self, row: &RefRow) -> std::io::Result<()> {
        assert_eq!(row.top.len(), self.header.topk as usize, "row width");
        self.out.write_all(&row.rest_logp.to_le_bytes())?;
        for &(id, lp) in &row.top {
            self.out.write_all(&id.to_le_bytes())?;
            self.out.write_all(&lp.to_le_bytes())?;
        }
        self.written += 1;
        Ok(())
    }

    /// Flush and sync; fails if fewer rows than announced were written.
    pub fn finish(mut self) -> std::io::Result<()> {
        if self.written != self.header.n_positions {
            return Err(std::io::Error::other(format!(
                "reference has {} rows, header says {}",
                self.written, self.header.n_positions
            )));
        }
        self.out.flush()?;
        self.out.get_ref().sync_all()
    }
}

/// Reads a reference file row by row.
pub struct RefReader {
    input: BufReader<std::fs::File>,
    pub header: RefHeader,
    read: u32,
}

impl RefReader {
    pub fn open(path: &Path) -> Result<RefReader> {
        let bad = |why: String| {
            DynoError::BadInput(format!(
                "quality reference {} is unusable ({why}); delete it and run again",
                path.display()
            ))
        };
        let f = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
        let mut input = BufReader::new(f);
        let mut magic = [0u8; 8];
        input
            .read_exact(&mut magic)
            .map_err(|e| bad(e.to_string()))?;
        if &magic != MAGIC {
            return Err(bad("not a Dyno reference file".into()));
        }
        let mut u32s = [0u32; 3];
        for v in &mut u32s {
            let mut b = [0u8; 4];
            input.read_exact(&mut b).map_err(|e| bad(e.to_string()))?;
            *v = u32::from_le_bytes(b);
        }
        let mut b = [0u8; 8];
        input.read_exact(&mut b).map_err(|e| bad(e.to_string()))?;
        let header = RefHeader {
            n_vocab: u32s[0],
            topk: u32s[1],
            n_positions: u32s[2],
            tokens_hash: u64::from_le_bytes(b),
        };
        let want = 28 + u64::from(header.n_positions) * (4 + 8 * u64::from(header.topk));
        let have = input
            .get_ref()
            .metadata()
            .map_err(|e| bad(e.to_string()))?
            .len();
        if have != want || header.topk == 0 || header.topk > header.n_vocab {
            return Err(bad(format!("size {have} bytes, expected {want}")));
        }
        Ok(RefReader {
            input,
            header,
            read: 0,
        })
    }

    /// The next row, reusing `row`'s buffer.
    pub fn next_row(&mut self, row: &mut RefRow) -> std::io::Result<bool> {
        if self.read == self.header.n_positions {
            return Ok(false);
        }
        let mut b4 = [0u8; 4];
        self.input.read_exact(&mut b4)?;
        row.rest_logp = f32::from_le_bytes(b4);
        row.top.clear();
        for _ in 0..self.header.topk {
            self.input.read_exact(&mut b4)?;
            let id = i32::from_le_bytes(b4);
            self.input.read_exact(&mut b4)?;
            let lp = f32::from_le_bytes(b4);
            // A damaged file must not index outside the vocabulary.
            if id < 0 || id as u32 >= self.header.n_vocab || lp.is_nan() || lp > 0.0 {
                return Err(std::io::Error::other(format!(
                    "damaged row {} (token {id}, log-probability {lp}); delete the reference file and run again",
                    self.read
                )));
            }
            row.top.push((id, lp));
        }
        self.read += 1;
        Ok(true)
    }
}

/// Running sums of one model's pass over the text.
#[derive(Debug, Default)]
pub struct Tally {
    nll_sum: f64,
    n: u64,
    klds: Vec<f32>,
    top1_hits: u64,
}

impl Tally {
    /// Add one scored position: the log-probability the model gave the true
    /// next token, and against a reference its KLD and whether the argmaxes
    /// agree.
    pub fn add(&mut self, logp_true: f32, vs_ref: Option<(f64, bool)>) {
        self.nll_sum -= f64::from(logp_true);
        self.n += 1;
        if let Some((kld, same_top)) = vs_ref {
            self.klds.push(kld as f32);
            self.top1_hits += u64::from(same_top);
        }
    }

    pub fn figures(&self) -> crate::vocab::QualityFigures {
        let compared = !self.klds.is_empty();
        let n = self.n.max(1) as f64;
        crate::vocab::QualityFigures {
            n_positions: self.n,
            ppl: (self.nll_sum / n).exp(),
            kld_mean: compared.then(|| self.klds.iter().map(|&k| f64::from(k)).sum::<f64>() / n),
            kld_p99: compared.then(|| percentile(&self.klds, 0.99)),
            top1_agreement: compared.then(|| self.top1_hits as f64 / n),
        }
    }
}

/// The `q` quantile by linear interpolation between closest ranks.
pub fn percentile(values: &[f32], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v: Vec<f32> = values.to_vec();
    v.sort_unstable_by(f32::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    f64::from(v[lo]) * (1.0 - frac) + f64::from(v[hi]) * frac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logp(logits: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        log_softmax(logits, &mut out);
        out
    }

    fn exact_kl(p: &[f32], q: &[f32]) -> f64 {
        p.iter()
            .zip(q)
            .map(|(&a, &b)| f64::from(a).exp() * (f64::from(a) - f64::from(b)))
            .sum()
    }

    #[test]
    fn log_softmax_normalises() {
        let lp = logp(&[1.0, 2.0, 3.0, -50.0]);
        let total: f64 = lp.iter().map(|&x| f64::from(x).exp()).sum();
        assert!((total - 1.0).abs() < 1e-6);
        assert!(lp[2] > lp[1] && lp[1] > lp[0]);
    }

    #[test]
    fn full_vocabulary_gives_the_exact_divergence_and_top_k_a_lower_bound() {
        let p = logp(&[3.0, 1.0, 0.5, 0.2, -1.0, -2.0, 0.0, 1.5]);
        let q = logp(&[2.5, 1.2, 0.1, 0.9, -0.5, -2.5, 0.3, 1.0]);
        let mut scratch = Vec::new();
        let exact = exact_kl(&p, &q);
        let full = RefRow::from_logprobs(&p, 0, &mut scratch);
        assert!((full.kld(&q) - exact).abs() < 1e-6, "k = all is exact");
        let mut last = 0.0;
        for k in 1..8 {
            let approx = RefRow::from_logprobs(&p, k, &mut scratch).kld(&q);
            assert!(approx <= exact + 1e-9, "k={k}: {approx} > {exact}");
            assert!(approx + 1e-9 >= last, "more bins never lose divergence");
            last = approx;
        }
        assert_eq!(full.argmax(), 0);
        assert_eq!(RefRow::from_logprobs(&p, 3, &mut scratch).top[1].0, 7);
    }

    #[test]
    fn identical_distributions_have_zero_divergence() {
        let p = logp(&[0.3, -1.0, 2.0, 0.0]);
        let mut s = Vec::new();
        for k in [1, 2, 4] {
            assert!(RefRow::from_logprobs(&p, k, &mut s).kld(&p) < 1e-7);
        }
    }

    #[test]
    fn reference_files_round_trip_and_reject_damage() {
        let dir = std::env::temp_dir().join(format!("dyno-ref-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.bin");
        let h = RefHeader {
            n_vocab: 5,
            topk: 2,
            n_positions: 2,
            tokens_hash: hash_tokens(&[1, 2, 3]),
        };
        let mut s = Vec::new();
        let rows = [
            RefRow::from_logprobs(&logp(&[1.0, 2.0, 0.0, 0.0, 0.0]), 2, &mut s),
            RefRow::from_logprobs(&logp(&[0.0, 0.0, 0.0, 5.0, 1.0]), 2, &mut s),
        ];
        let mut w = RefWriter::create(&path, h).unwrap();
        for r in &rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
        let mut r = RefReader::open(&path).unwrap();
        assert_eq!(r.header, h);
        let mut row = RefRow {
            top: vec![],
            rest_logp: 0.0,
        };
        for want in &rows {
            assert!(r.next_row(&mut row).unwrap());
            assert_eq!(&row, want);
        }
        assert!(!r.next_row(&mut row).unwrap());
        // A truncated file is refused with the fix in the message.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let e = RefReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("delete it"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tally_reports_perplexity_divergence_and_agreement() {
        let mut t = Tally::default();
        t.add((0.5f32).ln(), Some((0.1, true)));
        t.add((0.25f32).ln(), Some((0.3, false)));
        let f = t.figures();
        assert_eq!(f.n_positions, 2);
        // exp(mean(-ln 0.5, -ln 0.25)) = sqrt(2 * 4)
        assert!((f.ppl - 8f64.sqrt()).abs() < 1e-5);
        assert!((f.kld_mean.unwrap() - 0.2).abs() < 1e-6);
        assert_eq!(f.top1_agreement, Some(0.5));
        let mut r = Tally::default();
        r.add(-1.0, None);
        assert_eq!(
            r.figures().kld_mean,
            None,
            "the reference has no divergence"
        );
    }

    #[test]
    fn percentile_interpolates() {
        let v: Vec<f32> = (0..=100).map(|i| i as f32).collect();
        assert!((percentile(&v, 0.99) - 99.0).abs() < 1e-9);
        assert!((percentile(&[1.0, 2.0], 0.5) - 1.5).abs() < 1e-9);
    }

    #[test]
    fn the_bundled_text_is_there() {
        assert!(TEXT.starts_with("ALICE'S ADVENTURES IN WONDERLAND"));
        assert!(TEXT.len() > 100_000);
        assert_eq!(n_chunks(2048), 4);
        assert_eq!(n_chunks(1), 1);
    }
}
