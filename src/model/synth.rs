//! Synthetic weights: a model file with a real model's header and tensor
//! layout, byte for byte but for Dyno's `dyno.synthetic.*` label (which
//! llama.cpp ignores, and which makes every report say the figures are
//! synthetic), and made-up tensor data of each tensor's own type.
//!
//! Why the data cannot simply be zeros (docs/method.md, "Synthetic weights",
//! has the measurements): on the CPU ggml converts every block's f16 scale to
//! f32 through a 256 KiB lookup table (`ggml_table_f32_f16`; x86 builds take
//! the table even where F16C could convert). How much of that table a decode
//! step touches depends on how the scales are spread, and the weights' and
//! activations' scales are spread as their values are. Random bytes touch all
//! of it and decode up to 14% slower than the real file; with the table
//! replaced by F16C they decode exactly as fast.
//!
//! So the values follow trained models' statistics: per tensor, normal values
//! whose scale varies per tensor, per row and per column as trained ones do
//! (log-normal), and normalisation gains spread per channel and per layer as
//! trained gains are, since those spread the activations' scales (`draw_for`,
//! measured with `dyno synth --stats` on the test models). The quantised
//! bytes come from ggml's own quantisers, so every block is valid (finite
//! scales, in-range indices) and its scales are those llama.cpp itself would
//! write for such values.
//!
//! Cost: quantising a whole 8B model would take minutes on two cores, so each
//! tensor quantises a pool of rows once (`POOL_ROWS`) and the file repeats the
//! pool, every copy after the first with its rows rescaled to fresh row
//! factors ([`Pool`] says why). A decode step streams every row from memory
//! either way; what the speed depends on, how widely the scales spread
//! over ggml's f16 table, is then the tensor's, not the pool's.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::gguf::{self, ggml_type_block, ggml_type_name, Header, TensorInfo};
use super::reshape::{self, ShapeRequest};

/// Rows each tensor's pool holds: enough distinct blocks that their scales
/// cover the tensor's spread (a 2048-wide Q4_1 row has 64 blocks, so a pool
/// has 16k scales), few enough that an 8B model's pools quantise in seconds.
const POOL_ROWS: usize = 256;
/// At most this many values a pool: a 14336-wide row of an 8B model's
/// feed-forward gets 18 rows (over 8,000 blocks), which keeps the pools of an
/// 8B model to a few seconds of quantising.
const POOL_VALUES: usize = 1 << 18;

/// A tensor's part in the model, by its GGUF name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    TokenEmbd,
    Output,
    /// A normalisation's weight (1-D): a gain around a trained value.
    Norm,
    /// A bias, or any other 1-D tensor.
    Bias,
    AttnQ,
    AttnK,
    AttnV,
    AttnOut,
    FfnUp,
    FfnGate,
    FfnDown,
    /// A mixture of experts' router (`ffn_gate_inp`).
    Router,
    Other,
}

impl Role {
    pub fn of(name: &str, n_dims: usize) -> Role {
        let base = name.strip_suffix(".weight").unwrap_or(name);
        let last = base.rsplit('.').next().unwrap_or(base);
        if name.ends_with(".bias") {
            return Role::Bias;
        }
        if last.contains("norm") {
            return Role::Norm;
        }
        match last {
            "token_embd" => Role::TokenEmbd,
            "output" => Role::Output,
            "attn_q" => Role::AttnQ,
            "attn_k" => Role::AttnK,
            "attn_v" => Role::AttnV,
            "attn_output" => Role::AttnOut,
            "ffn_gate_inp" => Role::Router,
            l if l.starts_with("ffn_up") => Role::FfnUp,
            l if l.starts_with("ffn_gate") => Role::FfnGate,
            l if l.starts_with("ffn_down") => Role::FfnDown,
            _ if n_dims <= 1 => Role::Bias,
            _ => Role::Other,
        }
    }
}

/// How one role's values are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Draw {
    /// A matrix: normal values with standard deviation 1/√(input width)
    /// (the usual initialisation; trained models differ in magnitude, which
    /// mostly moves the scales along the f16 table without spreading them,
    /// except where small scales fall below f16's normal range: SmolLM2's
    /// weights are 3-7 times larger, and its twin's Q6_K scales, about a
    /// 4,000th of a block's largest value, are subnormal and touch fewer
    /// table lines, docs/method.md "Tails within rows"), times
    /// log-normal factors per tensor, per row and per column whose
    /// spreads (standard deviations of their natural logs) are given, and
    /// one value in `outlier_every` (on average, at random places) times
    /// [`OUTLIER`].
    ///
    /// Why the outliers: with row and column factors divided out, trained
    /// values are not normal. Their largest magnitude per 256 values (what a
    /// K-quant's f16 scale follows) spreads 0.21 to 0.30 in log2 against a
    /// normal draw's 0.16, and per 32 values 0.29 to 0.38 against 0.27
    /// (SmolLM2 and gemma-3, docs/method.md "Tails within rows"). A normal
    /// draw with rare larger values matches both; a heavier tail on every
    /// value (Student's t, a log-normal factor per value or per block)
    /// spreads the 32-value maxima too far before the 256-value ones are
    /// reached.
    Matrix {
        tensor: f32,
        row: f32,
        col: f32,
        outlier_every: u32,
    },
    /// A normalisation's gains: log-normal per channel around a per-tensor
    /// level, itself log-normal. Trained gains vary that much (a channel
    /// can weigh ten times another, a layer's level ten times another's),
    /// and they decide how widely the activations' scales spread.
    Gains { tensor: f32, channel: f32 },
    /// Biases: small normal values.
    Small(f32),
}

/// Per role, from `dyno synth --stats` on SmolLM2-135M Q4_1 and
/// gemma-3-270m Q4_K_M (docs/method.md has the table): each spread is about
/// the mean of the two models'.
fn draw_for(role: Role) -> Draw {
    let m = |row, col, outlier_every| Draw::Matrix {
        tensor: 0.15,
        row,
        col,
        outlier_every,
    };
    match role {
        Role::TokenEmbd | Role::Output => m(0.1, 0.45, 512),
        Role::Norm => Draw::Gains {
            tensor: 1.1,
            channel: 0.8,
        },
        Role::Bias => Draw::Small(0.05),
        Role::AttnQ => m(0.42, 0.1, 512),
        Role::AttnK => m(0.36, 0.1, 512),
        Role::AttnV => m(0.1, 0.1, 512),
        Role::AttnOut => m(0.2, 0.3, 256),
        Role::FfnUp => m(0.12, 0.1, 256),
        Role::FfnDown => m(0.12, 0.15, 256),
        Role::FfnGate => m(0.22, 0.1, 256),
        Role::Router | Role::Other => m(0.2, 0.1, 512),
    }
}

/// How much larger an outlier is than the normal value it replaces
/// ([`Draw::Matrix`] says why there are outliers).
const OUTLIER: f32 = 2.5;

/// A small, seedable generator (SplitMix64): the same seed writes the same
/// file, and Dyno needs no random-number crate for it.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f32 {
        let (u, v) = (self.unit(), self.unit());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
}

/// The types Dyno can write valid data for: those ggml quantises
/// (`ggml_quantize_chunk` aborts the process on any other, so this list is
/// checked first) and the plain float types.
pub fn can_synthesise(t: u32) -> bool {
    matches!(
        t,
        0 | 1 | 2 | 3 | 6 | 7 | 8 | 10..=14 | 16..=23 | 29 | 30 | 34 | 35 | 39
    )
}

/// Why a header cannot be synthesised, before anything is written.
pub fn check(h: &Header) -> Result<(), String> {
    let arch = h.get_str("general.architecture").unwrap_or_default();
    if arch.is_empty() {
        return Err("the header names no architecture (general.architecture); llama.cpp could not load it either".into());
    }
    for t in &h.tensors {
        if !can_synthesise(t.ggml_type) {
            return Err(format!(
                "tensor {} is of type {} ({}), which Dyno cannot write synthetic data for; measure the real file instead",
                t.name,
                ggml_type_name(t.ggml_type),
                t.ggml_type
            ));
        }
        let end = h
            .data_offset
            .checked_add(t.offset)
            .and_then(|o| o.checked_add(t.n_bytes));
        if end.is_none_or(|e| e > h.file_size) {
            return Err(format!(
                "tensor {} ends past the end of the file ({} bytes): the header claims more data than the file has",
                t.name, h.file_size
            ));
        }
    }
    Ok(())
}

/// The header of a `.gguf-header` file: the front of a GGUF file, at least
/// its whole header (what the hub header cache holds, or `head -c 4M
/// model.gguf`), so a template can travel without its weights. The file
/// it came from is taken to end with its last tensor.
fn header_of_prefix(like: &Path) -> Result<Header, PrepareError> {
    let f = File::open(like).map_err(|e| PrepareError::Read(gguf::GgufError::Io(e.to_string())))?;
    let mut h = gguf::read_header_from(f, 1 << 50).map_err(|e| {
        PrepareError::Refused(format!(
            "{} does not hold a whole GGUF header ({e}); take more of the file (head -c 8M model.gguf)",
            like.display()
        ))
    })?;
    h.file_size = h.data_offset
        + h.tensors
            .iter()
            .map(|t| t.offset + t.n_bytes)
            .max()
            .unwrap_or(0);
    Ok(h)
}

/// The header a synthetic file gets, ready to write.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The bytes up to the data section: `like`'s own, or resized.
    pub header_bytes: Vec<u8>,
    pub header: Header,
    /// What the resized file is (`llama-3.1-8b,layers=4`), if it was resized.
    pub shape_label: Option<String>,
}

/// Why no header could be prepared.
#[derive(Debug)]
pub enum PrepareError {
    /// `like` could not be read as a GGUF file.
    Read(gguf::GgufError),
    /// It was read, and cannot be synthesised or resized as asked.
    Refused(String),
}

/// `like`'s header, resized to `shape` if given, checked for what Dyno can
/// write. The parent calls it to refuse early and the worker to write, so
/// both see the same header.
///
/// `like_size`: `like` holds only the front of a file of this many bytes (a
/// header fetched from the hub); the header is read as that file's.
pub fn prepare(
    like: &Path,
    like_size: Option<u64>,
    shape: Option<&ShapeRequest>,
    origin: &reshape::Origin,
) -> Result<Prepared, PrepareError> {
    let header_only = like.extension().is_some_and(|e| e == "gguf-header");
    let (mut header_bytes, mut h) = if header_only && like_size.is_none() {
        let h = header_of_prefix(like)?;
        (gguf::front_bytes(like, &h).map_err(PrepareError::Read)?, h)
    } else {
        gguf::read_front(like, like_size).map_err(PrepareError::Read)?
    };
    // The first file of a split model stands for all of its parts, joined
    // as one file's header (`reshape::join_parts` says why).
    if like_size.is_none() && !header_only {
        let files = gguf::split_files(like, &h).map_err(PrepareError::Read)?;
        if files.len() > 1 {
            let mut parts = vec![(header_bytes, h)];
            for p in &files[1..] {
                parts.push(gguf::read_part_front(p).map_err(PrepareError::Read)?);
            }
            (header_bytes, h) = reshape::join_parts(&parts).map_err(PrepareError::Refused)?;
        }
    }
    check(&h).map_err(PrepareError::Refused)?;
    let Some(req) = shape else {
        let (header_bytes, header) =
            reshape::label_twin(&header_bytes, &h, origin).map_err(PrepareError::Refused)?;
        return Ok(Prepared {
            header_bytes,
            header,
            shape_label: None,
        });
    };
    let arch = h.get_str("general.architecture").unwrap_or_default();
    let base = reshape::Shape::of(&h).map_err(PrepareError::Refused)?;
    let (target, mut label) =
        reshape::parse_shape(&req.spec, arch, base).map_err(PrepareError::Refused)?;
    if label.is_empty() {
        label = "same shape".into();
    }
    let level = req
        .level
        .as_deref()
        .map(reshape::level)
        .transpose()
        .map_err(PrepareError::Refused)?;
    if let Some(l) = &level {
        label = format!("{label} {}", l.name);
    }
    let (bytes, header) =
        reshape::reshape(&header_bytes, &h, &target, level.as_ref(), &label, origin)
            .map_err(PrepareError::Refused)?;
    check(&header).map_err(PrepareError::Refused)?;
    Ok(Prepared {
        header_bytes: bytes,
        header,
        shape_label: Some(label),
    })
}

/// Draw `rows` rows of `n` values for a tensor of `role` whose rows are `n`
/// wide. A matrix's draw also returns its rows' spread and each row's log
/// factor, so that the file's later copies of the pool can take fresh rows
/// ([`Pool::row_copy`]).
fn draw_rows(rng: &mut Rng, role: Role, rows: usize, n: usize) -> (Vec<f32>, Option<RowFactors>) {
    let lognormal = |s: f32, rng: &mut Rng| (s * rng.normal()).exp();
    let mut v = Vec::with_capacity(rows * n);
    let mut factors = None;
    match draw_for(role) {
        Draw::Matrix {
            tensor,
            row,
            col,
            outlier_every,
        } => {
            let sigma = lognormal(tensor, rng) / (n.max(1) as f32).sqrt();
            let cols: Vec<f32> = (0..n).map(|_| lognormal(col, rng)).collect();
            let mut logs = Vec::with_capacity(rows);
            for _ in 0..rows {
                let log = row * rng.normal();
                logs.push(log);
                let row_sigma = sigma * log.exp();
                v.extend(cols.iter().map(|c| row_sigma * c * rng.normal()));
            }
            scatter_outliers(&mut v, outlier_every, rng);
            factors = Some(RowFactors { spread: row, logs });
        }
        Draw::Gains { tensor, channel } => {
            let level = lognormal(tensor, rng);
            v.extend((0..rows * n).map(|_| level * lognormal(channel, rng)));
        }
        Draw::Small(sigma) => v.extend((0..rows * n).map(|_| sigma * rng.normal())),
    }
    (v, factors)
}

/// Multiply one value in `every` (on average; each value independently) by
/// [`OUTLIER`]. The places are drawn as the gaps between them (geometric),
/// one draw an outlier rather than one a value, so an 8B model's pools cost
/// no more to draw.
fn scatter_outliers(v: &mut [f32], every: u32, rng: &mut Rng) {
    let keep = 1.0 - 1.0 / every.max(2) as f64;
    let mut at = 0usize;
    loop {
        at += (rng.unit().ln() / keep.ln()) as usize;
        let Some(x) = v.get_mut(at) else { break };
        *x *= OUTLIER;
        at += 1;
    }
}

/// The natural logs of a pool's row factors, and the spread they were drawn
/// with.
struct RowFactors {
    spread: f32,
    logs: Vec<f32>,
}

/// Byte offsets, within one block of type `t`, of the f16 fields that scale
/// the whole block (ggml-common.h): multiplying them all by `r` multiplies
/// every value the block decodes to by `r`. Empty for the float types, whose
/// values the CPU converts without the table, and for the types with no such
/// field (IQ1_M, MXFP4's and NVFP4's 8-bit scales).
fn f16_scale_fields(t: u32) -> &'static [usize] {
    match t {
        2 | 6 | 8 | 16..=23 => &[0],
        3 | 7 | 12 | 13 => &[0, 2],
        10 => &[80, 82],
        11 => &[108],
        14 => &[208],
        34 => &[52],
        35 => &[64],
        _ => &[],
    }
}

/// One tensor's encoded rows, which the file repeats.
///
/// Why each copy after the first gets fresh row factors: with the pool
/// repeated as it is, a large tensor's block scales are only the pool's few
/// thousand, which reach less far into their distribution's tails than a
/// whole tensor's. They touch fewer lines of ggml's f16 table (SmolLM2's
/// `token_embd`: 173 against the real file's 274), and a twin
/// so written decoded 2.6% faster than SmolLM2's real file at one thread
/// (docs/method.md, "Synthetic weights"), while a twin whose every row was
/// drawn and quantised measured like the real file. Quantising every row
/// would cost an 8B model minutes; rescaling the scales of a copied row, to
/// the row factor a fresh draw would have given it, costs a multiply a
/// block. Quantisation is scale-equivariant, so the copy is what quantising
/// the rescaled row gives, up to the f16 rounding of its scales.
struct Pool {
    bytes: Vec<u8>,
    row_bytes: usize,
    block_bytes: usize,
    fields: &'static [usize],
    factors: Option<RowFactors>,
}

impl Pool {
    /// The pool again, each row rescaled to a freshly drawn row factor,
    /// made in `buf` (reused from copy to copy, so a tensor of thousands of
    /// copies allocates once). The pool itself where there is nothing to
    /// rescale.
    fn row_copy<'a>(&'a self, rng: &mut Rng, buf: &'a mut Vec<u8>) -> &'a [u8] {
        let Some(factors) = self.factors.as_ref().filter(|_| !self.fields.is_empty()) else {
            return &self.bytes;
        };
        buf.clear();
        buf.extend_from_slice(&self.bytes);
        for (row, old) in buf.chunks_exact_mut(self.row_bytes).zip(&factors.logs) {
            let r = (factors.spread * rng.normal() - old).exp();
            for block in row.chunks_exact_mut(self.block_bytes) {
                for &at in self.fields {
                    let field = &mut block[at..at + 2];
                    let x = half::f16::from_le_bytes([field[0], field[1]]).to_f32() * r;
                    field.copy_from_slice(&half::f16::from_f32(x).to_le_bytes());
                }
            }
        }
        buf
    }
}

fn f32_to_bf16(x: f32) -> u16 {
    // Round to nearest even; the drawn values are finite.
    let b = x.to_bits();
    ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
}

/// Turns drawn values into a type's bytes and back. The quantisers are
/// ggml's (`crate::engine`'s `Ggml`), which can abort the process, so they
/// run in a worker; this module only draws values and lays out the file.
pub trait Codec {
    /// `rows` × `n` values as `rows` rows of type `t` (one that
    /// [`can_synthesise`] accepts).
    fn quantise(&self, t: u32, values: &[f32], rows: usize, n: usize) -> Vec<u8>;
    /// A whole tensor of `n` elements of type `t` as floats.
    fn dequantise(&self, t: u32, raw: &[u8], n: usize) -> Vec<f32>;
}

/// Encode `rows` × `n` values as type `t`: F32 and BF16 here, the rest
/// (F16 included) by the codec.
fn encode(codec: &dyn Codec, t: u32, values: &[f32], rows: usize, n: usize) -> Vec<u8> {
    match t {
        0 => values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        30 => values
            .iter()
            .flat_map(|&x| f32_to_bf16(x).to_le_bytes())
            .collect(),
        _ => codec.quantise(t, values, rows, n),
    }
}

/// Bytes of one row of `n` elements of type `t`.
pub fn row_bytes(t: u32, n: u64) -> u64 {
    let (block, bytes) = ggml_type_block(t).unwrap_or((1, 1));
    n / block * bytes
}

/// One tensor's pool of encoded rows, repeated over the tensor.
fn tensor_pool(codec: &dyn Codec, rng: &mut Rng, t: &TensorInfo) -> Pool {
    let n = t.dims.first().copied().unwrap_or(1).max(1) as usize;
    let total_rows = (t.n_elements / n as u64).max(1) as usize;
    let rows = total_rows.min(POOL_ROWS).min((POOL_VALUES / n).max(8));
    let role = Role::of(&t.name, t.dims.len());
    let (values, factors) = draw_rows(rng, role, rows, n);
    let bytes = encode(codec, t.ggml_type, &values, rows, n);
    Pool {
        row_bytes: bytes.len() / rows,
        block_bytes: ggml_type_block(t.ggml_type).map_or(1, |(_, b)| b as usize),
        fields: f16_scale_fields(t.ggml_type),
        bytes,
        factors,
    }
}

/// What writing a synthetic file cost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SynthStats {
    pub header_bytes: u64,
    pub file_bytes: u64,
    pub tensors: u64,
    /// Seconds spent drawing and quantising the pools.
    pub quantise_s: f64,
    /// Seconds spent writing (and flushing) the file.
    pub write_s: f64,
    /// For a mixture of experts: how widely its routers spread a decode
    /// over the experts (absent for a dense model, or one too large to
    /// decode here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub routing: Option<Routing>,
}

/// Which experts a mixture-of-experts model's routers chose while it decoded
/// random tokens one at a time, as llama-bench's tg does. Made-up routers
/// that sent every token to the same few experts would read fewer weights
/// per token than trained ones and decode too fast.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Routing {
    /// Experts per layer, and how many each token uses.
    pub n_expert: u32,
    pub n_used: u32,
    /// Tokens decoded (fewer than asked when the time ran out).
    pub tokens: u32,
    /// For each layer with experts, in order: how many of them were chosen
    /// at least once.
    pub per_layer: Vec<u32>,
    /// For each layer with experts, in order: how many tokens chose each
    /// expert. Reaching every expert is not the same as spreading evenly,
    /// and a router that favours a few lets their weights stay in cache.
    #[serde(default)]
    pub counts: Vec<Vec<u32>>,
    /// The busiest expert's tokens over an even share (tokens × used ÷
    /// experts), averaged over the layers: 1 is perfectly even.
    #[serde(default)]
    pub busiest: f64,
    /// What `busiest` comes to for a router that picks uniformly at random
    /// over as many tokens: chance alone makes some expert busier than its
    /// share, the more so the fewer the tokens.
    #[serde(default)]
    pub busiest_even: f64,
}

impl Routing {
    /// From each layer's count of tokens per expert.
    pub fn from_counts(n_expert: u32, n_used: u32, tokens: u32, counts: Vec<Vec<u32>>) -> Routing {
        let per_layer = counts
            .iter()
            .map(|l| l.iter().filter(|&&c| c > 0).count() as u32)
            .collect();
        Routing {
            n_expert,
            n_used,
            tokens,
            per_layer,
            busiest: mean_busiest(&counts, n_expert, n_used, tokens),
            busiest_even: busiest_when_even(n_expert, n_used, tokens),
            counts,
        }
    }

    /// The fewest experts any layer reached.
    pub fn min_reached(&self) -> u32 {
        self.per_layer.iter().copied().min().unwrap_or(0)
    }

    /// "a 64-token decode reached 8 of the 8 experts in every layer (2 per
    /// token); the busiest expert took 1.50× an even share (1.33× for a
    /// router picking at random)", the second half only where the counts
    /// are known (stats written before they were kept have none).
    pub fn describe(&self) -> String {
        let max = self.per_layer.iter().copied().max().unwrap_or(0);
        let min = self.min_reached();
        let reached = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        let mut s = format!(
            "a {}-token decode reached {reached} of the {} experts in every layer ({} per token)",
            self.tokens, self.n_expert, self.n_used
        );
        if self.busiest > 0.0 {
            s += &format!(
                "; the busiest expert took {:.2}× an even share ({:.2}× for a router picking at random)",
                self.busiest, self.busiest_even
            );
        }
        s
    }
}

/// Each layer's busiest expert's count over an even share, averaged over
/// the layers (0 with no layers or no tokens).
fn mean_busiest(counts: &[Vec<u32>], n_expert: u32, n_used: u32, tokens: u32) -> f64 {
    let even = f64::from(tokens) * f64::from(n_used) / f64::from(n_expert.max(1));
    if counts.is_empty() || even <= 0.0 {
        return 0.0;
    }
    let sum: f64 = counts
        .iter()
        .map(|l| f64::from(l.iter().copied().max().unwrap_or(0)) / even)
        .sum();
    sum / counts.len() as f64
}

/// The expected `mean_busiest` of a router that gives each token `n_used`
/// distinct experts uniformly at random, by simulation with a fixed seed (so
/// the same figures print the same).
pub fn busiest_when_even(n_expert: u32, n_used: u32, tokens: u32) -> f64 {
    let (n, k) = (n_expert as usize, n_used.min(n_expert) as usize);
    if n == 0 || k == 0 || tokens == 0 {
        return 0.0;
    }
    const TRIALS: usize = 400;
    let mut rng = Rng::new(0x5eed);
    let mut layers = Vec::with_capacity(TRIALS);
    let mut ids: Vec<usize> = (0..n).collect();
    for _ in 0..TRIALS {
        let mut c = vec![0u32; n];
        for _ in 0..tokens {
            // The first k of a partial Fisher-Yates shuffle: k distinct experts.
            for i in 0..k {
                let j = i + (rng.next_u64() % (n - i) as u64) as usize;
                ids.swap(i, j);
                c[ids[i]] += 1;
            }
        }
        layers.push(c);
    }
    mean_busiest(&layers, n_expert, n_used, tokens)
}

/// Write `h`'s tensors as synthetic data after `header_bytes` (the source's
/// bytes up to its data section) into `out`, from its start: a new file, or
/// one holding only the header that was checked. `progress` hears bytes written and the total.
pub fn write(
    header_bytes: &[u8],
    h: &Header,
    out: &mut File,
    seed: u64,
    codec: &dyn Codec,
    mut progress: impl FnMut(u64, u64),
) -> std::io::Result<SynthStats> {
    assert_eq!(header_bytes.len() as u64, h.data_offset);
    let mut order: Vec<&TensorInfo> = h.tensors.iter().collect();
    order.sort_by_key(|t| t.offset);
    let mut rng = Rng::new(seed);
    let mut quantise_s = 0.0;
    let started = Instant::now();
    let mut w = BufWriter::with_capacity(8 << 20, &mut *out);
    w.write_all(header_bytes)?;
    let mut pos = h.data_offset;
    let total = h.file_size;
    let mut scratch = Vec::new();
    for t in order {
        let start = h.data_offset + t.offset;
        if start > pos {
            // Alignment padding, written as the real file has it: zeros.
            write_zeros(&mut w, start - pos)?;
            pos = start;
        }
        let q = Instant::now();
        let pool = tensor_pool(codec, &mut rng, t);
        quantise_s += q.elapsed().as_secs_f64();
        let mut left = t.n_bytes;
        let mut copy: &[u8] = &pool.bytes;
        while left > 0 {
            let k = left.min(copy.len() as u64) as usize;
            w.write_all(&copy[..k])?;
            left -= k as u64;
            pos += k as u64;
            progress(pos, total);
            if left > 0 {
                let q = Instant::now();
                copy = pool.row_copy(&mut rng, &mut scratch);
                quantise_s += q.elapsed().as_secs_f64();
            }
        }
    }
    if total > pos {
        write_zeros(&mut w, total - pos)?;
    }
    w.flush()?;
    drop(w);
    out.sync_all()?;
    progress(total, total);
    Ok(SynthStats {
        header_bytes: h.data_offset,
        file_bytes: total,
        tensors: h.tensors.len() as u64,
        quantise_s,
        write_s: started.elapsed().as_secs_f64() - quantise_s,
        routing: None,
    })
}

fn write_zeros(w: &mut impl Write, mut n: u64) -> std::io::Result<()> {
    let zeros = [0u8; 4096];
    while n > 0 {
        let k = n.min(zeros.len() as u64) as usize;
        w.write_all(&zeros[..k])?;
        n -= k as u64;
    }
    Ok(())
}

/// One tensor's value statistics, for the table above and for checking a
/// synthetic file against its source.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TensorStat {
    pub name: String,
    pub role: Role,
    pub ggml_type: String,
    pub dims: Vec<u64>,
    pub mean: f64,
    pub std: f64,
    /// `std` × √(row width), the table's `gain` (matrices only).
    pub gain: f64,
    /// Standard deviation of ln(row RMS).
    pub row_spread: f64,
    /// Standard deviation of log2 of the blocks' largest magnitude (32
    /// values a block): how widely the quantised scales spread.
    pub block_scale_spread: f64,
    /// The same over 256 values, a K-quant's super-block, whose f16 scale
    /// follows the largest of its 256 values; rare large values within the
    /// rows widen it more than the 32-value spread.
    pub superblock_scale_spread: f64,
    /// How many 64-byte lines of ggml's f16 table the blocks' first f16
    /// scale (`d`) touches: what decides the table's misses on the CPU
    /// (docs/method.md, "Synthetic weights"). 0 for a type without one.
    pub scale_table_lines: u64,
}

/// The distinct 64-byte lines of ggml's f16-to-f32 table (16 entries of 4
/// bytes a line) that the first f16 scale of `raw`'s blocks looks up.
fn scale_table_lines(t: u32, raw: &[u8]) -> u64 {
    let (Some(&at), Some((_, bytes))) = (f16_scale_fields(t).first(), ggml_type_block(t)) else {
        return 0;
    };
    let mut seen = vec![false; 1 << 12];
    for block in raw.chunks_exact(bytes as usize) {
        seen[(u16::from_le_bytes([block[at], block[at + 1]]) >> 4) as usize] = true;
    }
    seen.iter().filter(|&&x| x).count() as u64
}

/// Dequantise every tensor of the file at `path` and describe its values.
/// Reads the whole file: a tool for calibration and tests, not for hub
/// headers.
pub fn measure(path: &Path, h: &Header, codec: &dyn Codec) -> std::io::Result<Vec<TensorStat>> {
    let mut f = File::open(path)?;
    let mut stats = Vec::new();
    for t in &h.tensors {
        if !can_synthesise(t.ggml_type) {
            continue;
        }
        let mut raw = vec![0u8; t.n_bytes as usize];
        f.seek(SeekFrom::Start(h.data_offset + t.offset))?;
        f.read_exact(&mut raw)?;
        let values = codec.dequantise(t.ggml_type, &raw, t.n_elements as usize);
        let n = t.dims.first().copied().unwrap_or(1).max(1) as usize;
        stats.push(describe(t, &values, n, &raw));
    }
    Ok(stats)
}

fn mean_std(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut n, mut s, mut s2) = (0f64, 0f64, 0f64);
    for x in xs {
        n += 1.0;
        s += x;
        s2 += x * x;
    }
    if n == 0.0 {
        return (0.0, 0.0);
    }
    let m = s / n;
    (m, (s2 / n - m * m).max(0.0).sqrt())
}

/// `t`'s statistics from its values `v` (rows of `n`) and its stored bytes
/// `raw` (where the f16 scales are).
fn describe(t: &TensorInfo, v: &[f32], n: usize, raw: &[u8]) -> TensorStat {
    let (mean, std) = mean_std(v.iter().map(|&x| x as f64));
    let rows: Vec<f64> = v
        .chunks(n)
        .map(|r| (r.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / r.len() as f64).sqrt())
        .filter(|&r| r > 0.0)
        .map(f64::ln)
        .collect();
    let (_, row_spread) = mean_std(rows.into_iter());
    let spread_of_maxima = |size: usize| {
        let maxima = v
            .chunks(size)
            .map(|b| b.iter().fold(0f32, |m, &x| m.max(x.abs())) as f64)
            .filter(|&m| m > 0.0)
            .map(f64::log2);
        mean_std(maxima).1
    };
    let matrix = t.dims.len() >= 2;
    TensorStat {
        name: t.name.clone(),
        role: Role::of(&t.name, t.dims.len()),
        ggml_type: ggml_type_name(t.ggml_type).to_string(),
        dims: t.dims.clone(),
        mean,
        std,
        gain: if matrix { std * (n as f64).sqrt() } else { 0.0 },
        row_spread: if matrix { row_spread } else { 0.0 },
        block_scale_spread: spread_of_maxima(32),
        superblock_scale_spread: spread_of_maxima(256),
        scale_table_lines: scale_table_lines(t.ggml_type, raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_llama_cpp_names() {
        assert_eq!(Role::of("blk.3.attn_q.weight", 2), Role::AttnQ);
        assert_eq!(Role::of("blk.3.attn_q_norm.weight", 1), Role::Norm);
        assert_eq!(Role::of("blk.0.ffn_gate_exps.weight", 3), Role::FfnGate);
        assert_eq!(Role::of("blk.0.ffn_gate_inp.weight", 2), Role::Router);
        assert_eq!(Role::of("blk.0.ffn_down_shexp.weight", 2), Role::FfnDown);
        assert_eq!(Role::of("output_norm.weight", 1), Role::Norm);
        assert_eq!(Role::of("token_embd.weight", 2), Role::TokenEmbd);
        assert_eq!(Role::of("blk.1.attn_q.bias", 1), Role::Bias);
    }

    #[test]
    fn draws_are_seeded_with_unit_variance() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<f32> = (0..200_000).map(|_| a.normal()).collect();
        assert!(xs
            .iter()
            .take(100)
            .zip((0..100).map(|_| b.normal()))
            .all(|(x, y)| *x == y));
        let (m, s) = mean_std(xs.iter().map(|&x| x as f64));
        assert!(m.abs() < 0.02 && (s - 1.0).abs() < 0.02, "mean {m} std {s}");
    }

    #[test]
    fn routing_measures_the_busiest_expert_against_chance() {
        // Even to the token: 64 tokens × 2 experts over 8 is 16 each.
        let even = Routing::from_counts(8, 2, 64, vec![vec![16; 8], vec![16; 8]]);
        assert_eq!(even.per_layer, vec![8, 8]);
        assert!((even.busiest - 1.0).abs() < 1e-9);
        // A router that always picks the same two: every token's weights
        // are the same, so it would decode too fast.
        let mut same = vec![0; 8];
        same[..2].fill(64);
        let stuck = Routing::from_counts(8, 2, 64, vec![same]);
        assert_eq!(stuck.per_layer, vec![2]);
        assert!((stuck.busiest - 4.0).abs() < 1e-9);
        // Chance alone makes some expert busier than its share over few
        // tokens, and hardly at all over many; the figure is seeded.
        let few = busiest_when_even(8, 2, 64);
        assert!(few > 1.2 && few < 1.8, "{few}");
        assert_eq!(few, busiest_when_even(8, 2, 64));
        let many = busiest_when_even(8, 2, 20_000);
        assert!(many > 1.0 && many < 1.04, "{many}");
        assert!(
            stuck.describe().contains("4.00× an even share"),
            "{}",
            stuck.describe()
        );
    }

    #[test]
    fn outliers_are_one_value_in_every_n_at_random_places() {
        let mut v = vec![1.0f32; 1 << 20];
        scatter_outliers(&mut v, 256, &mut Rng::new(5));
        let places: Vec<usize> = (0..v.len()).filter(|&i| v[i] != 1.0).collect();
        assert!(places.iter().all(|&i| v[i] == OUTLIER));
        // 4,096 expected; the binomial's standard deviation is 64.
        assert!(
            (places.len() as i64 - 4096).abs() < 260,
            "{} outliers",
            places.len()
        );
        // Independent places: the gaps spread like a geometric
        // distribution's (standard deviation about the mean), not evenly.
        let gaps: Vec<f64> = places.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let (mean, sd) = mean_std(gaps.iter().copied());
        assert!((sd / mean - 1.0).abs() < 0.1, "gaps {mean} ± {sd}");
        let mut w = vec![1.0f32; 1 << 20];
        scatter_outliers(&mut w, 256, &mut Rng::new(5));
        assert!(v == w, "seeded");
    }

    #[test]
    fn scale_fields_lie_inside_their_blocks() {
        for t in (0..64).filter(|&t| can_synthesise(t)) {
            let (_, bytes) = ggml_type_block(t).unwrap();
            for &at in f16_scale_fields(t) {
                assert!(at + 2 <= bytes as usize, "type {t}: field at {at}");
            }
            // Every quantised type but IQ1_M and MXFP4 (no f16 scale) has one.
            let none = matches!(t, 0 | 1 | 30 | 29 | 39);
            assert_eq!(f16_scale_fields(t).is_empty(), none, "type {t}");
        }
    }

    /// A pool of Q8_0 rows (an f16 scale, then 32 quants, a block): each
    /// copy gives every row one fresh factor, the same for all its blocks,
    /// and leaves the quants as they are.
    #[test]
    fn a_copy_rescales_each_row_by_one_fresh_factor() {
        let (rows, blocks) = (64, 3);
        let mut bytes = Vec::new();
        for r in 0..rows {
            for b in 0..blocks {
                let d = 0.01 * (1.0 + 0.1 * b as f32);
                bytes.extend(half::f16::from_f32(d).to_le_bytes());
                bytes.extend((0..32).map(|i| (i * 7 + r + b) as u8));
            }
        }
        let pool = Pool {
            row_bytes: 34 * blocks,
            block_bytes: 34,
            fields: f16_scale_fields(8),
            factors: Some(RowFactors {
                spread: 0.4,
                logs: vec![0.0; rows],
            }),
            bytes,
        };
        let scale = |raw: &[u8], block: usize| {
            half::f16::from_le_bytes([raw[34 * block], raw[34 * block + 1]]).to_f32()
        };
        let mut buf = Vec::new();
        let copy = pool.row_copy(&mut Rng::new(3), &mut buf).to_vec();
        let mut logs = Vec::new();
        for (new, old) in copy
            .chunks(pool.row_bytes)
            .zip(pool.bytes.chunks(pool.row_bytes))
        {
            let ratios: Vec<f32> = (0..blocks).map(|b| scale(new, b) / scale(old, b)).collect();
            for r in &ratios {
                assert!(
                    (r / ratios[0] - 1.0).abs() < 2e-3,
                    "one factor a row: {ratios:?}"
                );
            }
            for b in 0..blocks {
                assert_eq!(new[34 * b + 2..34 * (b + 1)], old[34 * b + 2..34 * (b + 1)]);
            }
            logs.push(ratios[0].ln() as f64);
        }
        // Fresh factors, spread as the rows were drawn.
        let (_, spread) = mean_std(logs.iter().copied());
        assert!((spread - 0.4).abs() < 0.12, "spread {spread}");
        assert!(copy == pool.row_copy(&mut Rng::new(3), &mut buf), "seeded");
        // A pool with nothing to rescale is copied as it is.
        let plain = Pool {
            factors: None,
            ..pool
        };
        let mut unused = Vec::new();
        assert!(std::ptr::eq(
            plain.row_copy(&mut Rng::new(3), &mut unused),
            &plain.bytes[..]
        ));
        assert!(unused.is_empty());
    }

    #[test]
    fn table_lines_count_the_lines_the_scales_look_up() {
        // Q8_0 blocks whose scales are 1.0, the next f16 after it (the same
        // 16-entry line) and 2.0 (another line).
        let raw: Vec<u8> = [0x3C00u16, 0x3C01, 0x4000]
            .iter()
            .flat_map(|d| d.to_le_bytes().into_iter().chain([0u8; 32]))
            .collect();
        assert_eq!(scale_table_lines(8, &raw), 2);
        assert_eq!(scale_table_lines(0, &raw), 0, "F32 has no scale");
    }

    #[test]
    fn bf16_rounds_to_nearest() {
        assert_eq!(f32_to_bf16(1.0), 0x3F80);
        assert_eq!(f32_to_bf16(-2.0), 0xC000);
        assert_eq!(
            f32::from_bits((f32_to_bf16(0.1) as u32) << 16),
            0.100_097_656
        );
    }
}
