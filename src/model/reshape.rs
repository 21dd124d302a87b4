//! A GGUF header of another size: a real model's header (its architecture,
//! tokenizer and settings) rewritten for more or fewer layers, a wider or
//! narrower model, a larger vocabulary, or one tensor type throughout.
//!
//! Why: a model's speed is mostly its shape, and the shapes people run (an
//! 8B model on a GPU, say) cannot be carried to every machine Dyno measures
//! on. With the header of a small model of the same architecture, Dyno can
//! write a file of the 8B model's shape with synthetic weights
//! ([`super::synth`]) and measure it where it is needed, in seconds and
//! without a download.
//!
//! What is rewritten, and nothing else:
//! - the shape keys of the architecture (`<arch>.embedding_length`,
//!   `block_count`, `feed_forward_length`, `attention.head_count`,
//!   `attention.head_count_kv`, and where present `attention.key_length`,
//!   `attention.value_length`, `rope.dimension_count`, `vocab_size`,
//!   `context_length`), `general.name` and, with a type, `general.file_type`;
//! - the tokenizer's arrays, padded with tokens that no text produces when
//!   the vocabulary grows (the embedding and output matrices grow with it,
//!   which is what costs time);
//! - the tensor list: layer 0's tensors repeated for every layer, each
//!   dimension resized by what it is (the model width, the feed-forward
//!   width, the query or key-value width, the head size, the vocabulary),
//!   and an output matrix added or dropped as the shape ties it to the
//!   embedding or not;
//! - `dyno.synthetic.*` keys that say the file is synthetic and of what.
//!
//! Models whose layers differ from each other (per-layer arrays in the
//! metadata, tensors that only some layers have) are refused: resizing them
//! needs rules of their own.

use std::collections::HashMap;

use super::gguf::{ggml_type_block, ggml_type_name, read_header_from, Header, Value};

/// The numbers that fix a transformer's tensor shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shape {
    pub embd: u64,
    pub layers: u64,
    pub ff: u64,
    pub heads: u64,
    pub heads_kv: u64,
    pub head_dim: u64,
    pub vocab: u64,
    pub context: u64,
    /// The output layer reuses the token embedding (no `output.weight`).
    pub tied: bool,
    /// Experts per layer for a mixture of experts (`ffn_*_exps` tensors of
    /// `ff` rows each, and a router), 0 for a dense model.
    #[serde(default)]
    pub experts: u64,
    /// Experts each token is routed to.
    #[serde(default)]
    pub experts_used: u64,
}

/// A named shape: the sizes of a released model, for the architecture that
/// model has.
pub struct Preset {
    pub name: &'static str,
    pub arch: &'static str,
    pub shape: Shape,
}

/// One row of the preset table, in config.json's order.
#[allow(clippy::too_many_arguments)]
const fn shape(
    embd: u64,
    layers: u64,
    ff: u64,
    heads: u64,
    heads_kv: u64,
    head_dim: u64,
    vocab: u64,
    context: u64,
    tied: bool,
) -> Shape {
    Shape {
        embd,
        layers,
        ff,
        heads,
        heads_kv,
        head_dim,
        vocab,
        context,
        tied,
        experts: 0,
        experts_used: 0,
    }
}

/// A mixture of experts: `dense` with `experts` experts per layer, of which
/// `used` take each token.
const fn moe(dense: Shape, experts: u64, used: u64) -> Shape {
    Shape {
        experts,
        experts_used: used,
        ..dense
    }
}

/// The shapes Dyno knows by name, from each model's published
/// configuration (config.json on its hub page).
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "smollm2-360m",
        arch: "llama",
        shape: shape(960, 32, 2560, 15, 5, 64, 49152, 8192, true),
    },
    Preset {
        name: "smollm2-1.7b",
        arch: "llama",
        shape: shape(2048, 24, 8192, 32, 32, 64, 49152, 8192, true),
    },
    Preset {
        name: "llama-3.2-1b",
        arch: "llama",
        shape: shape(2048, 16, 8192, 32, 8, 64, 128256, 131072, true),
    },
    Preset {
        name: "llama-3.2-3b",
        arch: "llama",
        shape: shape(3072, 28, 8192, 24, 8, 128, 128256, 131072, true),
    },
    Preset {
        name: "llama-2-7b",
        arch: "llama",
        shape: shape(4096, 32, 11008, 32, 32, 128, 32000, 4096, false),
    },
    Preset {
        name: "llama-3.1-8b",
        arch: "llama",
        shape: shape(4096, 32, 14336, 32, 8, 128, 128256, 131072, false),
    },
    Preset {
        name: "mixtral-8x7b",
        arch: "llama",
        shape: moe(
            shape(4096, 32, 14336, 32, 8, 128, 32000, 32768, false),
            8,
            2,
        ),
    },
    Preset {
        name: "llama-3.3-70b",
        arch: "llama",
        shape: shape(8192, 80, 28672, 64, 8, 128, 128256, 131072, false),
    },
    Preset {
        name: "gemma-3-1b",
        arch: "gemma3",
        shape: shape(1152, 26, 6912, 4, 1, 256, 262144, 32768, true),
    },
    Preset {
        name: "gemma-3-4b",
        arch: "gemma3",
        shape: shape(2560, 34, 10240, 8, 4, 256, 262208, 131072, true),
    },
    Preset {
        name: "gemma-3-12b",
        arch: "gemma3",
        shape: shape(3840, 48, 15360, 16, 8, 256, 262208, 131072, true),
    },
];

/// A `--type` level: the types llama-quantize gives a model's tensors at
/// that level, so a synthetic file is labelled truthfully.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub name: &'static str,
    /// The type of most matrices.
    pub base: u32,
    /// `general.file_type` (llama_ftype), which llama.cpp names the level by.
    pub ftype: u32,
    mix: Mix,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mix {
    /// Every matrix of the base type (the output layer apart).
    Uniform,
    /// A K-quant level's mixture: llama-quantize gives some tensors more
    /// bits by role and depth, each level by rules of its own
    /// ([`Level::matrix_type`]).
    K,
}

const Q2_K: u32 = 10;
const Q3_K: u32 = 11;
const Q4_K: u32 = 12;
const Q5_K: u32 = 13;
const Q6_K: u32 = 14;
const Q8_0: u32 = 8;

const fn level_of(name: &'static str, base: u32, ftype: u32, mix: Mix) -> Level {
    Level {
        name,
        base,
        ftype,
        mix,
    }
}

/// The levels `--type` accepts, with llama-quantize's `llama_ftype` numbers.
/// The IQ levels need an importance matrix and rules of their own, and are
/// left out rather than labelled wrongly.
const LEVELS: &[Level] = &[
    level_of("F32", 0, 0, Mix::Uniform),
    level_of("F16", 1, 1, Mix::Uniform),
    level_of("BF16", 30, 32, Mix::Uniform),
    level_of("Q8_0", Q8_0, 7, Mix::Uniform),
    level_of("Q6_K", Q6_K, 18, Mix::Uniform),
    level_of("Q5_K_M", Q5_K, 17, Mix::K),
    level_of("Q5_K_S", Q5_K, 16, Mix::K),
    level_of("Q5_1", 7, 9, Mix::Uniform),
    level_of("Q5_0", 6, 8, Mix::Uniform),
    level_of("Q4_K_M", Q4_K, 15, Mix::K),
    level_of("Q4_K_S", Q4_K, 14, Mix::K),
    level_of("Q4_1", 3, 3, Mix::Uniform),
    level_of("Q4_0", 2, 2, Mix::Uniform),
    level_of("Q3_K_L", Q3_K, 13, Mix::K),
    level_of("Q3_K_M", Q3_K, 12, Mix::K),
    level_of("Q3_K_S", Q3_K, 11, Mix::K),
    level_of("Q2_K", Q2_K, 10, Mix::K),
];

/// The names `--type` accepts, in the order of [`LEVELS`] (most bits first).
pub fn level_names() -> Vec<&'static str> {
    LEVELS.iter().map(|l| l.name).collect()
}

/// The level of a `--type` name.
pub fn level(name: &str) -> Result<Level, String> {
    LEVELS
        .iter()
        .find(|l| l.name.eq_ignore_ascii_case(name))
        .copied()
        .ok_or_else(|| {
            format!(
                "--type {name}: Dyno writes only the levels whose types it knows as llama-quantize writes them; choose one of {}",
                LEVELS.iter().map(|l| l.name).collect::<Vec<_>>().join(", ")
            )
        })
}

/// Whether layer `i` of `n` is one of those a "_M" level gives more bits:
/// the first and last eighth, and every third layer between.
fn more_bits(i: u64, n: u64) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// The layer index in a tensor name `blk.N.…`.
fn layer_index(name: &str) -> Option<u64> {
    name.strip_prefix("blk.")?.split('.').next()?.parse().ok()
}

impl Level {
    /// The type of matrix `name`, whose rows hold `row` values, in a model
    /// of `n_layers` layers with `experts` experts per layer (0: dense) and
    /// `gqa` query heads per KV head; `output` when it is the output layer
    /// (or the embedding doubling as it). These are llama-quantize's rules
    /// (`llama_tensor_get_type` in llama.cpp's `llama-quant.cpp`) for the
    /// levels Dyno writes, so a synthetic file has the real level's size
    /// and types; `it`'s `a_k_level_has_the_types_llama_quantize_gives`
    /// holds them to llama.cpp's own quantizer.
    fn matrix_type(
        &self,
        name: &str,
        row: u64,
        output: bool,
        n_layers: u64,
        experts: u64,
        gqa: u64,
    ) -> u32 {
        let below_q8 = !matches!(self.base, 0 | 1 | 30 | Q8_0);
        let quantized = !matches!(self.base, 0 | 1 | 30);
        let is = |part: &str| name.ends_with(&format!(".{part}.weight"));
        // A layer's place: attn_v and ffn_down are counted in file order,
        // one per layer, so the count is the layer's index.
        let i = layer_index(name).unwrap_or(0);
        let more = more_bits(i, n_layers);
        let k = self.mix == Mix::K;
        let t = if output && below_q8 {
            // The output layer is Q6_K at every level below Q8_0.
            Q6_K
        } else if experts == 8 && quantized && (is("attn_k") || is("attn_v")) {
            // llama-quantize's rule for 8-expert models (Mixtral's shape):
            // their attention is a small share of the file, so K and V
            // take Q8_0 at every quantised level.
            Q8_0
        } else if k && is("attn_v") {
            let t = match self.name {
                "Q2_K" if gqa >= 4 => Q4_K,
                "Q2_K" => Q3_K,
                "Q3_K_M" if i < 2 => Q5_K,
                "Q3_K_M" => Q4_K,
                "Q3_K_L" => Q5_K,
                "Q4_K_M" | "Q5_K_M" if more => Q6_K,
                "Q4_K_S" if i < 4 => Q5_K,
                _ => self.base,
            };
            // A 70B model (80 layers with grouped KV heads) shares each V
            // among 8 heads, so V is small and llama-quantize gives it more.
            if n_layers == 80 && gqa > 1 && matches!(t, Q3_K | Q4_K) {
                Q5_K
            } else {
                t
            }
        } else if k && (is("ffn_down") || is("ffn_down_exps")) {
            match self.name {
                "Q2_K" => Q3_K,
                "Q3_K_M" if i < n_layers / 16 => Q5_K,
                "Q3_K_M" => Q4_K,
                "Q3_K_L" => Q5_K,
                "Q4_K_M" | "Q5_K_M" if more => Q6_K,
                "Q4_K_S" if i < n_layers / 8 => Q5_K,
                _ => self.base,
            }
        } else if k && is("attn_output") {
            match (self.name, experts == 8) {
                ("Q2_K" | "Q3_K_S" | "Q3_K_M" | "Q4_K_S" | "Q4_K_M", true) => Q5_K,
                ("Q2_K", false) => Q3_K,
                ("Q3_K_M", false) => Q4_K,
                ("Q3_K_L", false) => Q5_K,
                _ => self.base,
            }
        } else if k && is("attn_qkv") {
            match self.name {
                "Q3_K_M" | "Q3_K_L" => Q4_K,
                "Q4_K_M" => Q5_K,
                "Q5_K_M" => Q6_K,
                _ => self.base,
            }
        } else {
            self.base
        };
        // K-quant blocks are 256 wide: a narrower row falls back as
        // llama-quantize falls back.
        if row.is_multiple_of(256) {
            return t;
        }
        match t {
            Q2_K | Q3_K => 2,
            Q4_K => 6,
            Q5_K => 7,
            Q6_K => Q8_0,
            t => t,
        }
    }
}

/// The request: a preset's name, `key=value` pairs over the template's own
/// shape, or both (`llama-3.1-8b,layers=4`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShapeRequest {
    pub spec: String,
    /// A `--type` level's name ([`level`]); the template's own types when
    /// absent.
    pub level: Option<String>,
}

impl Shape {
    /// The template's own shape, from its header.
    pub fn of(h: &Header) -> Result<Shape, String> {
        let arch = h.get_str("general.architecture").unwrap_or_default();
        let key = |k: &str| format!("{arch}.{k}");
        let num = |k: &str| -> Result<u64, String> {
            match h.metadata.get(&key(k)) {
                Some(Value::Array { .. }) => Err(format!(
                    "{} differs from layer to layer in this model; Dyno resizes only models whose layers are alike",
                    key(k)
                )),
                Some(v) => v.as_u64().ok_or_else(|| format!("{} is not a number", key(k))),
                None => Err(format!(
                    "the header has no {}; Dyno cannot tell this model's shape",
                    key(k)
                )),
            }
        };
        let embd = num("embedding_length")?;
        let heads = num("attention.head_count")?;
        let head_dim = match h.get_u64(&key("attention.key_length")) {
            Some(d) => d,
            None if heads > 0 => embd / heads,
            None => return Err("attention.head_count is 0".into()),
        };
        let vocab = match h.metadata.get("tokenizer.ggml.tokens") {
            Some(Value::Array { len, .. }) => *len,
            _ => return Err("the header has no tokenizer.ggml.tokens".into()),
        };
        Ok(Shape {
            embd,
            layers: num("block_count")?,
            ff: num("feed_forward_length")?,
            heads,
            heads_kv: h.get_u64(&key("attention.head_count_kv")).unwrap_or(heads),
            head_dim,
            vocab,
            context: h.get_u64(&key("context_length")).unwrap_or(4096),
            tied: !h.tensors.iter().any(|t| t.name == "output.weight"),
            experts: h.get_u64(&key("expert_count")).unwrap_or(0),
            experts_used: h.get_u64(&key("expert_used_count")).unwrap_or(0),
        })
    }

    /// Parameters of a transformer of this shape (what llama.cpp reports as
    /// the model's size in parameters), norms included; a mixture of experts
    /// counts every expert and its router.
    pub fn n_params(&self) -> u64 {
        let (q, kv) = (self.heads * self.head_dim, self.heads_kv * self.head_dim);
        let ffn = 3 * self.embd * self.ff * self.experts.max(1) + self.embd * self.experts;
        let layer = self.embd * (2 * q + 2 * kv) + ffn + 2 * self.embd;
        let embed = self.embd * self.vocab * if self.tied { 1 } else { 2 };
        self.layers * layer + embed + self.embd
    }
}

/// `spec` applied to `base` (the template's shape): a preset for `arch` by
/// name, then `key=value` pairs.
pub fn parse_shape(spec: &str, arch: &str, base: Shape) -> Result<(Shape, String), String> {
    let mut s = base;
    let mut label = Vec::new();
    let (mut head_dim_given, mut from_preset) = (false, false);
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((k, v)) = part.split_once('=') {
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim();
            set_key(&mut s, &k, v)?;
            head_dim_given |= k == "head_dim";
            label.push(format!("{k}={v}"));
        } else {
            let p = preset(part, arch)?;
            s = p.shape;
            from_preset = true;
            label.push(p.name.to_string());
        }
    }
    // A head size that the template derives from its width and heads
    // follows them, unless it was given.
    let derived = base.heads > 0 && base.head_dim * base.heads == base.embd;
    if derived && !head_dim_given && !from_preset {
        if !s.embd.is_multiple_of(s.heads) {
            return Err(format!(
                "a width of {} does not split into {} heads; give heads= or head_dim=",
                s.embd, s.heads
            ));
        }
        s.head_dim = s.embd / s.heads;
    }
    check_shape(&mut s, arch, &base)?;
    Ok((s, label.join(",")))
}

/// Sets one `key=value` of a shape.
fn set_key(s: &mut Shape, k: &str, v: &str) -> Result<(), String> {
    if k == "tied" {
        s.tied = match v {
            "true" | "yes" | "1" => true,
            "false" | "no" | "0" => false,
            _ => return Err(format!("tied={v}: say true or false")),
        };
        return Ok(());
    }
    let n: u64 = v
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{k}={v}: not a positive whole number"))?;
    match k {
        "embd" => s.embd = n,
        "layers" => s.layers = n,
        "ff" => s.ff = n,
        "heads" => s.heads = n,
        "heads_kv" | "kv_heads" => s.heads_kv = n,
        "head_dim" => s.head_dim = n,
        "vocab" => s.vocab = n,
        "context" => s.context = n,
        "experts" => s.experts = n,
        "experts_used" => s.experts_used = n,
        _ => {
            return Err(format!(
                "{k}: not a shape key; use embd, layers, ff, heads, heads_kv, head_dim, vocab, context, experts, experts_used or tied"
            ))
        }
    }
    Ok(())
}

/// A named shape, refused when the template is of another architecture.
fn preset(part: &str, arch: &str) -> Result<&'static Preset, String> {
    let p = PRESETS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(part))
        .ok_or_else(|| {
            format!(
                "{part}: no such shape; Dyno knows {}, or give key=value pairs such as layers=8,embd=1024",
                PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            )
        })?;
    if p.arch != arch {
        let fit: Vec<&str> = PRESETS
            .iter()
            .filter(|p| p.arch == arch)
            .map(|p| p.name)
            .collect();
        return Err(format!(
            "{part} is a {} model and the template is {arch}: give a {} file as --like{}",
            p.arch,
            p.arch,
            if fit.is_empty() {
                String::new()
            } else {
                format!(", or use a {arch} shape: {}", fit.join(", "))
            }
        ));
    }
    Ok(p)
}

/// Checks a shape llama.cpp could load, and gives a mixture its default
/// count of experts per token.
fn check_shape(s: &mut Shape, arch: &str, base: &Shape) -> Result<(), String> {
    if !s.heads.is_multiple_of(s.heads_kv) {
        return Err(format!(
            "{} heads cannot share {} key-value heads evenly",
            s.heads, s.heads_kv
        ));
    }
    // Experts without a count of experts per token take two, as most
    // mixtures do. Only llama's layout is written (Mixtral's tensors in
    // llama.cpp's llama architecture); other architectures name and route
    // their experts their own way.
    if s.experts > 0 && s.experts != base.experts && arch != "llama" {
        return Err(format!(
            "experts= makes a mixture in llama's layout; the template is {arch}: give a llama file (SmolLM2's header)"
        ));
    }
    // llama.cpp's LLAMA_MAX_EXPERTS: more aborts the load.
    if s.experts > 1024 {
        return Err(format!(
            "experts={}: llama.cpp loads at most 1024 experts",
            s.experts
        ));
    }
    if s.experts > 0 && s.experts_used == 0 {
        s.experts_used = s.experts.min(2);
    }
    if s.experts_used > s.experts {
        return Err(if s.experts == 0 {
            format!(
                "experts_used={} needs experts= (this shape is dense)",
                s.experts_used
            )
        } else {
            format!(
                "experts_used={} is more than the {} experts there are",
                s.experts_used, s.experts
            )
        });
    }
    Ok(())
}

/// What a tensor dimension measures, to resize it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Dim {
    Embd,
    Ff,
    Q,
    Kv,
    Head,
    Vocab,
    /// A mixture's experts: known by name only (a count such as 8 could be
    /// anything by size).
    Experts,
}

impl Dim {
    fn size(self, s: &Shape) -> u64 {
        match self {
            Dim::Embd => s.embd,
            Dim::Ff => s.ff,
            Dim::Q => s.heads * s.head_dim,
            Dim::Kv => s.heads_kv * s.head_dim,
            Dim::Head => s.head_dim,
            Dim::Vocab => s.vocab,
            Dim::Experts => s.experts,
        }
    }
    const ALL: [Dim; 6] = [Dim::Embd, Dim::Ff, Dim::Q, Dim::Kv, Dim::Head, Dim::Vocab];
}

/// What each dimension of a tensor measures, by its name (as llama.cpp
/// names them), checked against the template's sizes. `None` for a
/// dimension that measures none of them (it keeps its size).
fn dims_of(name: &str, dims: &[u64], base: &Shape) -> Result<Vec<Option<Dim>>, String> {
    let base_name = name
        .strip_suffix(".weight")
        .or_else(|| name.strip_suffix(".bias"))
        .unwrap_or(name);
    let last = base_name.rsplit('.').next().unwrap_or(base_name);
    use Dim::*;
    let by_name: Option<&[Dim]> = match last {
        "token_embd" | "output" => Some(&[Embd, Vocab]),
        "attn_q" => Some(if name.ends_with(".bias") {
            &[Q]
        } else {
            &[Embd, Q]
        }),
        "attn_k" | "attn_v" => Some(if name.ends_with(".bias") {
            &[Kv]
        } else {
            &[Embd, Kv]
        }),
        "attn_output" => Some(if name.ends_with(".bias") {
            &[Embd]
        } else {
            &[Q, Embd]
        }),
        "ffn_up" | "ffn_gate" => Some(if name.ends_with(".bias") {
            &[Ff]
        } else {
            &[Embd, Ff]
        }),
        "ffn_down" => Some(if name.ends_with(".bias") {
            &[Embd]
        } else {
            &[Ff, Embd]
        }),
        "ffn_up_exps" | "ffn_gate_exps" => Some(&[Embd, Ff, Experts]),
        "ffn_down_exps" => Some(&[Ff, Embd, Experts]),
        "ffn_gate_inp" => Some(&[Embd, Experts]),
        "attn_q_norm" | "attn_k_norm" => Some(&[Head]),
        l if l.contains("norm") && dims.len() == 1 => Some(&[Embd]),
        _ => None,
    };
    if let Some(want) = by_name {
        if want.len() == dims.len() && want.iter().zip(dims).all(|(d, &n)| d.size(base) == n) {
            return Ok(want.iter().map(|&d| Some(d)).collect());
        }
    }
    // Anything else: by size, when the size says unambiguously what it is.
    dims.iter()
        .map(|&n| {
            let hits: Vec<Dim> = Dim::ALL
                .into_iter()
                .filter(|d| d.size(base) == n)
                .collect();
            match hits.as_slice() {
                [] => Ok(None),
                [d] => Ok(Some(*d)),
                _ => Err(format!(
                    "tensor {name}: a dimension of {n} could be any of {hits:?} in this model, so Dyno cannot resize it"
                )),
            }
        })
        .collect()
}

/// Read one GGUF metadata entry's raw bytes: returns (key, type, the value's
/// bytes, bytes used).
fn raw_kv(b: &[u8]) -> Option<(String, u32, &[u8], usize)> {
    let rd_u64 =
        |o: usize| -> Option<u64> { Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?)) };
    let rd_u32 =
        |o: usize| -> Option<u32> { Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?)) };
    let klen = rd_u64(0)? as usize;
    let key = String::from_utf8(b.get(8..8usize.checked_add(klen)?)?.to_vec()).ok()?;
    let t = rd_u32(8 + klen)?;
    let start = 12 + klen;
    let len = value_len(&b[start.min(b.len())..], t)?;
    Some((key, t, b.get(start..start + len)?, start + len))
}

/// Bytes one value of type `t` takes at the start of `b`.
fn value_len(b: &[u8], t: u32) -> Option<usize> {
    let fixed = |t: u32| -> Option<usize> {
        Some(match t {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            _ => return None,
        })
    };
    match t {
        8 => {
            let n = u64::from_le_bytes(b.get(0..8)?.try_into().ok()?) as usize;
            8usize.checked_add(n).filter(|&e| e <= b.len())
        }
        9 => {
            let et = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
            let n = u64::from_le_bytes(b.get(4..12)?.try_into().ok()?) as usize;
            let mut o = 12usize;
            if let Some(w) = fixed(et) {
                o = o.checked_add(n.checked_mul(w)?)?;
            } else {
                for _ in 0..n {
                    o = o.checked_add(value_len(b.get(o..)?, et)?)?;
                }
            }
            (o <= b.len()).then_some(o)
        }
        _ => fixed(t),
    }
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A number written in the type the template used for it.
fn put_num(out: &mut Vec<u8>, t: u32, v: u64) {
    match t {
        0 | 1 => out.push(v as u8),
        2 | 3 => out.extend((v as u16).to_le_bytes()),
        4 | 5 => out.extend((v as u32).to_le_bytes()),
        _ => out.extend(v.to_le_bytes()),
    }
}

/// `blk.N.rest` as (N, rest).
fn layer_of(name: &str) -> Option<(u64, String)> {
    let rest = name.strip_prefix("blk.")?;
    let (i, tail) = rest.split_once('.')?;
    Some((i.parse().ok()?, tail.to_string()))
}

/// Refuse a template whose layers differ: layer 0 stands for all of them.
fn check_layers_alike(h: &Header, base: &Shape) -> Result<(), String> {
    // Per-layer arrays in the metadata mean layers that differ.
    for (k, v) in &h.metadata {
        if let Value::Array { len, .. } = v {
            if !k.starts_with("tokenizer.") && *len == base.layers {
                return Err(format!(
                    "{k} gives a value per layer; Dyno resizes only models whose layers are alike"
                ));
            }
        }
    }
    // Layer 0 is the pattern, and every layer must have the same tensors.
    let mut per_layer: HashMap<u64, Vec<String>> = HashMap::new();
    for t in &h.tensors {
        if let Some((i, tail)) = layer_of(&t.name) {
            per_layer.entry(i).or_default().push(tail);
        }
    }
    let mut pattern = per_layer.get(&0).cloned().unwrap_or_default();
    pattern.sort();
    for (i, tails) in &per_layer {
        let mut tails = tails.clone();
        tails.sort();
        if tails != pattern {
            return Err(format!(
                "layer {i} has other tensors than layer 0; Dyno resizes only models whose layers are alike"
            ));
        }
    }
    Ok(())
}

/// One tensor of the resized header.
pub(super) struct Out {
    pub(super) name: String,
    pub(super) dims: Vec<u64>,
    pub(super) ggml_type: u32,
}

/// The header's bytes from its metadata (`n_kv` entries, already encoded)
/// and tensors, and the header they parse to (Dyno's own reader is the
/// check of the writer).
pub(super) fn assemble(
    kv: Vec<u8>,
    n_kv: u64,
    out_tensors: &[Out],
    alignment: u64,
) -> Result<(Vec<u8>, Header), String> {
    // Tensor infos with offsets laid out as llama.cpp's writer lays them.
    let mut bytes = Vec::with_capacity(kv.len() + out_tensors.len() * 64 + 64);
    bytes.extend(b"GGUF");
    bytes.extend(3u32.to_le_bytes());
    bytes.extend((out_tensors.len() as u64).to_le_bytes());
    bytes.extend(n_kv.to_le_bytes());
    bytes.extend(kv);
    let mut offset = 0u64;
    for t in out_tensors {
        put_str(&mut bytes, &t.name);
        bytes.extend((t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            bytes.extend(d.to_le_bytes());
        }
        bytes.extend(t.ggml_type.to_le_bytes());
        bytes.extend(offset.to_le_bytes());
        let (block, block_bytes) = ggml_type_block(t.ggml_type).unwrap_or((1, 1));
        let n: u64 = t.dims.iter().product();
        offset = (offset + n / block * block_bytes).div_ceil(alignment) * alignment;
    }
    bytes.resize(
        (bytes.len() as u64).div_ceil(alignment) as usize * alignment as usize,
        0,
    );
    // The last tensor's padding is not written: the file ends with its data.
    let last = out_tensors.last().map_or(0, |t| {
        let (block, block_bytes) = ggml_type_block(t.ggml_type).unwrap_or((1, 1));
        let n: u64 = t.dims.iter().product();
        let end = n / block * block_bytes;
        end.div_ceil(alignment) * alignment - end
    });
    let file_size = bytes.len() as u64 + offset - last;
    let parsed = read_header_from(std::io::Cursor::new(&bytes), file_size)
        .map_err(|e| format!("the rewritten header does not read back: {e}"))?;
    Ok((bytes, parsed))
}

/// The template's header with `target`'s shape (and `ggml_type` for every
/// matrix, if given): the header's bytes and the header they parse to.
/// `template` is the template's bytes up to its data section.
pub fn reshape(
    template: &[u8],
    h: &Header,
    target: &Shape,
    level: Option<&Level>,
    label: &str,
    origin: &Origin,
) -> Result<(Vec<u8>, Header), String> {
    let base = Shape::of(h)?;
    check_layers_alike(h, &base)?;
    let out_tensors = tensor_list(h, &base, target, level)?;
    let (kv, n_kv) = metadata(template, h, &base, target, level, label, origin)?;
    assemble(kv, n_kv, &out_tensors, h.alignment)
}

/// The tensor list of the reshaped header, in the template's order: layer
/// 0's tensors stand for every layer, resized to `target` and typed as
/// `level` (each layer taking the types of the template's layer at the same
/// depth), with an output layer added when an untied target grows from a
/// tied template. Refuses a row width the chosen type cannot hold.
fn tensor_list(
    h: &Header,
    base: &Shape,
    target: &Shape,
    level: Option<&Level>,
) -> Result<Vec<Out>, String> {
    if base.experts > 0 && target.experts == 0 {
        return Err(format!(
            "the template is a mixture of {} experts and the shape is dense: give experts= (or a dense template)",
            base.experts
        ));
    }
    let fit = Fit {
        types: h
            .tensors
            .iter()
            .map(|t| (t.name.as_str(), t.ggml_type))
            .collect(),
        base,
        target,
        level,
    };
    // The tensor list, in the template's order, layer 0 standing for all.
    let mut out_tensors: Vec<Out> = Vec::new();
    // A dense template made a mixture: each feed-forward matrix becomes
    // `experts` of them (llama.cpp's `ffn_*_exps`, one 3-D tensor), and
    // each layer gains a router, as llama.cpp's llama architecture loads
    // Mixtral's.
    let to_moe = base.experts == 0 && target.experts > 0;
    let mut routers_added = false;
    let mut embd_type = None;
    for t in &h.tensors {
        match layer_of(&t.name) {
            Some((0, tail)) => {
                let ffn = tail
                    .strip_suffix(".weight")
                    .filter(|m| matches!(*m, "ffn_up" | "ffn_gate" | "ffn_down"));
                if to_moe && tail.starts_with("ffn_") && tail.ends_with(".bias") {
                    return Err(format!(
                        "the template's feed-forward layers have biases ({tail}); Dyno makes experts only of bias-free ones"
                    ));
                }
                if to_moe && ffn.is_some() && !routers_added {
                    routers_added = true;
                    // The router stays F32 at every level: llama-quantize
                    // leaves ffn_gate_inp alone.
                    out_tensors.extend((0..target.layers).map(|i| Out {
                        name: format!("blk.{i}.ffn_gate_inp.weight"),
                        dims: vec![target.embd, target.experts],
                        ggml_type: 0,
                    }));
                }
                for i in 0..target.layers {
                    let own = fit.own_at(i, &tail, t.ggml_type);
                    let mut dims = fit.resize(&t.name, &t.dims)?;
                    let name = match (to_moe, ffn) {
                        (true, Some(m)) => {
                            dims.push(target.experts);
                            format!("blk.{i}.{m}_exps.weight")
                        }
                        _ => format!("blk.{i}.{tail}"),
                    };
                    out_tensors.push(Out {
                        ggml_type: fit.matrix_type(&name, &dims, own),
                        dims,
                        name,
                    });
                }
            }
            Some(_) => {}
            None if t.name == "output.weight" && target.tied => {}
            None => {
                if t.name == "token_embd.weight" {
                    embd_type = Some(t.ggml_type);
                }
                let dims = fit.resize(&t.name, &t.dims)?;
                out_tensors.push(Out {
                    ggml_type: fit.matrix_type(&t.name, &dims, t.ggml_type),
                    dims,
                    name: t.name.clone(),
                });
            }
        }
    }
    if !target.tied && base.tied {
        let own = embd_type.ok_or("the template has no token_embd.weight")?;
        let dims = vec![target.embd, target.vocab];
        out_tensors.push(Out {
            name: "output.weight".into(),
            ggml_type: fit.matrix_type("output.weight", &dims, own),
            dims,
        });
    }
    check_row_widths(&out_tensors)?;
    Ok(out_tensors)
}

/// How a template tensor is sized and typed in the reshaped header.
struct Fit<'a> {
    /// The template's tensor types by name.
    types: HashMap<&'a str, u32>,
    base: &'a Shape,
    target: &'a Shape,
    level: Option<&'a Level>,
}

impl Fit<'_> {
    /// The tensor's dimensions at the target shape.
    fn resize(&self, name: &str, dims: &[u64]) -> Result<Vec<u64>, String> {
        Ok(dims_of(name, dims, self.base)?
            .into_iter()
            .zip(dims)
            .map(|(d, &n)| d.map_or(n, |d| d.size(self.target)))
            .collect())
    }

    /// Layer `i`'s own type for a tensor: mixed levels (Q4_K_M and the like)
    /// give some layers more bits by their depth in the model, so the type
    /// comes from the template's layer at the same relative depth.
    fn own_at(&self, i: u64, tail: &str, default: u32) -> u32 {
        let j = i * self.base.layers / self.target.layers;
        self.types
            .get(format!("blk.{j}.{tail}").as_str())
            .copied()
            .unwrap_or(default)
    }

    /// The type at the asked level, or the tensor's own without one.
    fn matrix_type(&self, name: &str, dims: &[u64], own: u32) -> u32 {
        let Some(l) = self.level else { return own };
        // Routers keep their type, as llama-quantize leaves them.
        if dims.len() < 2 || name.contains(".ffn_gate_inp.") {
            return own;
        }
        let is_output =
            name == "output.weight" || (self.target.tied && name == "token_embd.weight");
        l.matrix_type(
            name,
            dims[0],
            is_output,
            self.target.layers,
            self.target.experts,
            self.target.heads / self.target.heads_kv.max(1),
        )
    }
}

/// Refuses a row width a tensor's type cannot hold in whole blocks.
fn check_row_widths(tensors: &[Out]) -> Result<(), String> {
    for t in tensors {
        let (block, _) = ggml_type_block(t.ggml_type).unwrap_or((1, 1));
        if !t.dims[0].is_multiple_of(block) {
            return Err(format!(
                "tensor {} would have rows of {} values, which {} cannot hold (blocks of {block}); choose another --type or width",
                t.name,
                t.dims[0],
                ggml_type_name(t.ggml_type)
            ));
        }
    }
    Ok(())
}

/// The reshaped header's metadata: the template's entries in order, shape
/// keys rewritten, token arrays fitted to the new vocabulary, and Dyno's
/// own `dyno.synthetic.*` entries added. Returns the bytes and their count.
fn metadata(
    template: &[u8],
    h: &Header,
    base: &Shape,
    target: &Shape,
    level: Option<&Level>,
    label: &str,
    origin: &Origin,
) -> Result<(Vec<u8>, u64), String> {
    let arch = h.get_str("general.architecture").unwrap_or_default();
    let mut kv: Vec<u8> = Vec::new();
    let mut n_kv = 0u64;
    let n_kv_in = u64::from_le_bytes(
        template
            .get(16..24)
            .and_then(|b| b.try_into().ok())
            .ok_or("the template's header is too short")?,
    );
    let mut pos = 24usize;
    let shape_key = |k: &str| -> Option<u64> {
        let rest = k.strip_prefix(arch)?.strip_prefix('.')?;
        Some(match rest {
            "embedding_length" => target.embd,
            "block_count" => target.layers,
            "feed_forward_length" => target.ff,
            "attention.head_count" => target.heads,
            "attention.head_count_kv" => target.heads_kv,
            "attention.key_length" | "attention.value_length" => target.head_dim,
            // Partial rotary embeddings (a rope narrower than the head) keep
            // their width.
            "rope.dimension_count" if h.get_u64(k) == Some(base.head_dim) => target.head_dim,
            "vocab_size" => target.vocab,
            "context_length" => target.context,
            "expert_count" => target.experts,
            "expert_used_count" => target.experts_used,
            _ => return None,
        })
    };
    check_special_tokens(h, target.vocab)?;
    let ftype = level.map(|l| l.ftype);
    for _ in 0..n_kv_in {
        let (key, t, val, used) =
            raw_kv(&template[pos..]).ok_or("the template's metadata could not be read")?;
        pos += used;
        if key.starts_with("dyno.synthetic.") {
            continue;
        }
        n_kv += 1;
        put_str(&mut kv, &key);
        kv.extend(t.to_le_bytes());
        if let (Some(v), true) = (shape_key(&key), t != 9) {
            put_num(&mut kv, t, v);
        } else if key == "general.name" && t == 8 {
            put_str(&mut kv, &format!("Synthetic {label}"));
        } else if let (Some(f), "general.file_type") = (ftype, key.as_str()) {
            put_num(&mut kv, t, f as u64);
        } else if t == 9 && target.vocab != base.vocab && key.starts_with("tokenizer.ggml.") {
            token_array(&mut kv, &key, val, base.vocab, target.vocab)?;
        } else {
            kv.extend(val);
        }
    }
    // A head size other than width ÷ heads must be stated, or llama.cpp
    // derives the wrong one.
    let stated = |k: &str| h.metadata.contains_key(&format!("{arch}.attention.{k}"));
    if target.heads * target.head_dim != target.embd {
        for k in ["key_length", "value_length"] {
            if !stated(k) {
                n_kv += 1;
                put_str(&mut kv, &format!("{arch}.attention.{k}"));
                kv.extend(4u32.to_le_bytes());
                kv.extend((target.head_dim as u32).to_le_bytes());
            }
        }
    }
    // A dense template made a mixture states its experts, unless it has
    // the keys already (rewritten above).
    if target.experts > 0 && base.experts == 0 {
        for (k, v) in [
            ("expert_count", target.experts),
            ("expert_used_count", target.experts_used),
        ] {
            if h.metadata.contains_key(&format!("{arch}.{k}")) {
                continue;
            }
            n_kv += 1;
            put_str(&mut kv, &format!("{arch}.{k}"));
            kv.extend(4u32.to_le_bytes());
            kv.extend((v as u32).to_le_bytes());
        }
    }
    n_kv += put_labels(
        &mut kv,
        label,
        h.get_str("general.name").unwrap_or(arch),
        origin,
    );
    Ok((kv, n_kv))
}

/// Append Dyno's `dyno.synthetic.*` entries (what shape, whose header, which
/// seed), which mark the file as synthetic wherever it goes; returns how
/// many were added.
fn put_labels(kv: &mut Vec<u8>, shape: &str, like: &str, origin: &Origin) -> u64 {
    let mut texts = vec![
        ("dyno.synthetic.shape", shape),
        ("dyno.synthetic.like", like),
    ];
    if let Some(source) = origin.source.as_deref() {
        texts.push(("dyno.synthetic.source", source));
    }
    for (key, value) in &texts {
        put_str(kv, key);
        kv.extend(8u32.to_le_bytes());
        put_str(kv, value);
    }
    put_str(kv, "dyno.synthetic.seed");
    kv.extend(10u32.to_le_bytes());
    kv.extend(origin.seed.to_le_bytes());
    texts.len() as u64 + 1
}

/// Where a synthetic file's header came from and how its values were
/// drawn, written into its `dyno.synthetic.*` label so that every figure
/// measured on it says which real file it stands in for.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Origin {
    /// The values' seed: the same seed writes the same bytes.
    pub seed: u64,
    /// The real file whose header this is, where Dyno knows it: a hub
    /// level's `OWNER/NAME/FILE` and its sha256, as the hub lists them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Origin {
    pub fn seed(seed: u64) -> Origin {
        Origin { seed, source: None }
    }
}

/// The `dyno.synthetic.shape` of a twin: the template's own shape and types.
pub const TWIN: &str = "twin";

/// A twin's header: the template's, byte for byte, with the
/// `dyno.synthetic.*` entries added after its metadata (any it had, from a
/// synthetic template, replaced). The tensor list, its offsets and every
/// key llama.cpp reads are untouched, so the twin measures as the template
/// does; the entries only say that its figures come from synthetic weights.
pub fn label_twin(
    template: &[u8],
    h: &Header,
    origin: &Origin,
) -> Result<(Vec<u8>, Header), String> {
    let bad = || "the template's header could not be read again to label it".to_string();
    let rd_u64 = |o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(template.get(o..o + 8)?.try_into().ok()?))
    };
    let n_tensors = rd_u64(8).ok_or_else(bad)?;
    let (mut kv, mut n_kv, mut pos) =
        kept_entries(template, |k| !k.starts_with("dyno.synthetic.")).ok_or_else(bad)?;
    // The tensor infos: name, dimensions, type and offset each.
    let infos_start = pos;
    for _ in 0..n_tensors {
        let name_len = rd_u64(pos).ok_or_else(bad)? as usize;
        pos = pos.checked_add(8 + name_len).ok_or_else(bad)?;
        let n_dims = template
            .get(pos..pos + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")))
            .ok_or_else(bad)? as usize;
        pos = pos
            .checked_add(4 + 8 * n_dims + 4 + 8)
            .filter(|&p| p <= template.len())
            .ok_or_else(bad)?;
    }
    let like = h
        .get_str("general.name")
        .or(h.get_str("general.architecture"))
        .unwrap_or("unknown")
        .to_string();
    n_kv += put_labels(&mut kv, TWIN, &like, origin);
    let mut bytes = Vec::with_capacity(template.len() + 128);
    bytes.extend(&template[..16]);
    bytes.extend(n_kv.to_le_bytes());
    bytes.extend(kv);
    bytes.extend(&template[infos_start..pos]);
    let align = h.alignment as usize;
    bytes.resize(bytes.len().div_ceil(align) * align, 0);
    let data_bytes = h.file_size.saturating_sub(h.data_offset);
    let parsed = read_header_from(
        std::io::Cursor::new(&bytes),
        bytes.len() as u64 + data_bytes,
    )
    .map_err(|e| format!("the labelled header does not read back: {e}"))?;
    Ok((bytes, parsed))
}

/// The metadata entries of `header` (a GGUF file's bytes up to its data)
/// whose keys `keep` accepts, copied byte for byte: their bytes, their
/// count, and where the tensor infos begin. `None` if they cannot be read.
fn kept_entries(header: &[u8], keep: impl Fn(&str) -> bool) -> Option<(Vec<u8>, u64, usize)> {
    let n_kv_in = u64::from_le_bytes(header.get(16..24)?.try_into().ok()?);
    let (mut kv, mut n_kv, mut pos) = (Vec::new(), 0u64, 24usize);
    for _ in 0..n_kv_in {
        let (key, _, _, used) = raw_kv(header.get(pos..)?)?;
        if keep(&key) {
            kv.extend(&header[pos..pos + used]);
            n_kv += 1;
        }
        pos += used;
    }
    Some((kv, n_kv, pos))
}

/// A split model's parts (`x-00001-of-00003.gguf` …, each given as its
/// bytes up to the data section and its parsed header) as one file's
/// header: the first part's metadata without the `split.*` keys, then every
/// part's tensors in order, laid out as one file lays them.
///
/// Why one file and not parts: a twin is measured, labelled, kept and
/// deleted as one file everywhere in Dyno, and llama.cpp maps each tensor
/// wherever it lies, so the same tensors (names, shapes, types, the
/// metadata llama.cpp reads) measure the same in one file as in three. The
/// `split.*` keys go because llama.cpp would look for the other files.
///
/// Refused: parts that are not the first one's count, or a tensor that two
/// parts both hold.
pub fn join_parts(parts: &[(Vec<u8>, Header)]) -> Result<(Vec<u8>, Header), String> {
    let (first, h0) = parts.first().ok_or("the level has no parts to join")?;
    let count = h0.get_u64("split.count").unwrap_or(1);
    if count != parts.len() as u64 {
        return Err(format!(
            "the level lists {} files but its first part says the model has {count}; the repo's files do not match",
            parts.len()
        ));
    }
    let bad = || "the first part's header could not be read again to join the parts".to_string();
    let (kv, n_kv, _) = kept_entries(first, |k| !k.starts_with("split.")).ok_or_else(bad)?;
    let mut seen = std::collections::HashSet::new();
    let mut tensors = Vec::new();
    for (_, h) in parts {
        for t in &h.tensors {
            if !seen.insert(t.name.as_str()) {
                return Err(format!(
                    "tensor {} is in two parts of the split model; its files are not one model",
                    t.name
                ));
            }
            tensors.push(Out {
                name: t.name.clone(),
                dims: t.dims.clone(),
                ggml_type: t.ggml_type,
            });
        }
    }
    assemble(kv, n_kv, &tensors, h0.alignment)
}

/// Special tokens (BOS, EOS, padding…) must stay inside a smaller
/// vocabulary, or llama.cpp refuses the file.
fn check_special_tokens(h: &Header, vocab: u64) -> Result<(), String> {
    for (k, v) in &h.metadata {
        let id = v
            .as_u64()
            .filter(|_| k.starts_with("tokenizer.ggml.") && k.ends_with("_token_id"));
        if let Some(id) = id.filter(|&id| id >= vocab) {
            return Err(format!(
                "{k} is token {id}, beyond a vocabulary of {vocab}; give a larger vocab="
            ));
        }
    }
    Ok(())
}

/// A per-token array (`tokenizer.ggml.*`) fitted to `vocab` tokens: cut to
/// the first ones, or grown with pad tokens no text can produce. An array
/// of another length is copied as it is.
fn token_array(
    kv: &mut Vec<u8>,
    key: &str,
    val: &[u8],
    base_vocab: u64,
    vocab: u64,
) -> Result<(), String> {
    let et = u32::from_le_bytes(val[0..4].try_into().expect("checked"));
    let n = u64::from_le_bytes(val[4..12].try_into().expect("checked"));
    if n != base_vocab {
        kv.extend(val);
        return Ok(());
    }
    kv.extend(et.to_le_bytes());
    kv.extend(vocab.to_le_bytes());
    if vocab < base_vocab {
        // The first `vocab` items: the special and byte tokens
        // come first in every vocabulary Dyno has met.
        let mut o = 12usize;
        for _ in 0..vocab {
            o += value_len(&val[o..], et).expect("the array was read once");
        }
        kv.extend(&val[12..o]);
        return Ok(());
    }
    kv.extend(&val[12..]);
    for i in 0..vocab - base_vocab {
        match (key, et) {
            // Tokens no text can produce: llama.cpp loads them as
            // ordinary tokens, and only their count matters.
            ("tokenizer.ggml.tokens", 8) => put_str(kv, &format!("<dyno_pad_{}>", base_vocab + i)),
            ("tokenizer.ggml.token_type", 4 | 5) => kv.extend(1u32.to_le_bytes()),
            ("tokenizer.ggml.scores", 6) => kv.extend(0f32.to_le_bytes()),
            _ => {
                return Err(format!(
                    "{key} has one entry per token and Dyno does not know how to extend it"
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part of a split model: `general.architecture` in the first part
    /// only, the `split.*` keys in each, and `tensors` (name, dims, type).
    fn part(no: u16, count: u16, total: i32, tensors: &[(&str, &[u64], u32)]) -> (Vec<u8>, Header) {
        let mut kv = Vec::new();
        let mut n_kv = 3;
        if no == 0 {
            put_str(&mut kv, "general.architecture");
            kv.extend(8u32.to_le_bytes());
            put_str(&mut kv, "llama");
            n_kv += 1;
        }
        for (k, v) in [("split.no", no), ("split.count", count)] {
            put_str(&mut kv, k);
            kv.extend(2u32.to_le_bytes());
            kv.extend(v.to_le_bytes());
        }
        put_str(&mut kv, "split.tensors.count");
        kv.extend(5u32.to_le_bytes());
        kv.extend(total.to_le_bytes());
        let outs: Vec<Out> = tensors
            .iter()
            .map(|(name, dims, t)| Out {
                name: name.to_string(),
                dims: dims.to_vec(),
                ggml_type: *t,
            })
            .collect();
        assemble(kv, n_kv, &outs, 32).unwrap()
    }

    #[test]
    fn a_split_models_parts_join_into_one_files_header() {
        let first = part(0, 2, 3, &[("a", &[8], 0), ("b", &[16], 0)]);
        let second = part(1, 2, 3, &[("c", &[32, 2], 8)]);
        let (bytes, h) = join_parts(&[first.clone(), second]).unwrap();
        assert_eq!(bytes.len() as u64, h.data_offset);
        // The first part's metadata, without the keys that point at files.
        assert_eq!(
            h.metadata.keys().collect::<Vec<_>>(),
            ["general.architecture"]
        );
        let tensors: Vec<_> = h
            .tensors
            .iter()
            .map(|t| (t.name.as_str(), t.offset, t.n_bytes))
            .collect();
        // F32 a (32 bytes) and b (64), then Q8_0 c: two 34-byte blocks.
        assert_eq!(tensors, [("a", 0, 32), ("b", 32, 64), ("c", 96, 68)]);
        assert_eq!(h.file_size, h.data_offset + 96 + 68);

        let e = join_parts(std::slice::from_ref(&first)).unwrap_err();
        assert!(e.contains("lists 1 files") && e.contains("has 2"), "{e}");
        let again = part(1, 2, 3, &[("a", &[8], 0)]);
        let e = join_parts(&[first, again]).unwrap_err();
        assert!(e.contains("tensor a is in two parts"), "{e}");
    }

    #[test]
    fn presets_have_their_published_parameter_counts() {
        // llama-bench prints these sizes ("llama 7B ... 6.74 B", "llama 8B
        // ... 8.03 B"): the shapes are the released models'.
        let p = |n: &str| PRESETS.iter().find(|p| p.name == n).unwrap().shape;
        let b = |s: Shape| (s.n_params() as f64 / 1e9 * 100.0).round() / 100.0;
        assert_eq!(b(p("llama-2-7b")), 6.74);
        assert_eq!(b(p("llama-3.1-8b")), 8.03);
        assert_eq!(b(p("llama-3.2-1b")), 1.24);
        assert_eq!(b(p("llama-3.2-3b")), 3.21);
        assert_eq!(b(p("llama-3.3-70b")), 70.55);
        // llama-bench: "llama 8x7B ... 46.70 B".
        assert_eq!(b(p("mixtral-8x7b")), 46.7);
    }

    #[test]
    fn experts_are_shape_keys_with_two_per_token_unless_given() {
        let base = shape(576, 30, 1536, 9, 3, 64, 49152, 8192, true);
        let (s, label) = parse_shape("experts=8", "llama", base).unwrap();
        assert_eq!((s.experts, s.experts_used), (8, 2));
        assert_eq!(label, "experts=8");
        let (s, _) = parse_shape("ff=512,experts=64,experts_used=8", "llama", base).unwrap();
        assert_eq!((s.ff, s.experts, s.experts_used), (512, 64, 8));
        let e = parse_shape("experts_used=2", "llama", base).unwrap_err();
        assert!(e.contains("needs experts="), "{e}");
        let e = parse_shape("experts=4,experts_used=6", "llama", base).unwrap_err();
        assert!(e.contains("more than the 4 experts"), "{e}");
        let e = parse_shape("experts=0", "llama", base).unwrap_err();
        assert!(e.contains("positive"), "{e}");
        let e = parse_shape("experts=8", "gemma3", base).unwrap_err();
        assert!(e.contains("give a llama file"), "{e}");
        let e = parse_shape("experts=2048", "llama", base).unwrap_err();
        assert!(e.contains("at most 1024"), "{e}");
    }

    #[test]
    fn shapes_parse_from_names_and_pairs() {
        let base = shape(576, 30, 1536, 9, 3, 64, 49152, 8192, true);
        let (s, label) = parse_shape("llama-3.1-8b,layers=4", "llama", base).unwrap();
        assert_eq!((s.embd, s.layers, s.tied), (4096, 4, false));
        assert_eq!(label, "llama-3.1-8b,layers=4");
        let (s, _) = parse_shape("layers=2,ff=768", "llama", base).unwrap();
        assert_eq!((s.layers, s.ff, s.embd), (2, 768, 576));
        let e = parse_shape("gemma-3-1b", "llama", base).unwrap_err();
        assert!(e.contains("give a gemma3 file"), "{e}");
        let e = parse_shape("llama-9b", "llama", base).unwrap_err();
        assert!(e.contains("llama-3.1-8b"), "{e}");
        assert!(parse_shape("layers=0", "llama", base).is_err());
        assert!(parse_shape("width=3", "llama", base).is_err());
        assert_eq!(
            parse_shape("vocab=100", "llama", base).unwrap().0.vocab,
            100
        );
        assert!(parse_shape("heads=9,heads_kv=2", "llama", base).is_err());
    }

    #[test]
    fn dimensions_are_known_by_name_then_by_size() {
        let base = shape(576, 30, 1536, 9, 3, 64, 49152, 8192, true);
        use Dim::*;
        let d = |n: &str, dims: &[u64]| dims_of(n, dims, &base).unwrap();
        assert_eq!(
            d("blk.0.attn_k.weight", &[576, 192]),
            [Some(Embd), Some(Kv)]
        );
        assert_eq!(
            d("blk.0.ffn_down.weight", &[1536, 576]),
            [Some(Ff), Some(Embd)]
        );
        assert_eq!(d("blk.0.attn_norm.weight", &[576]), [Some(Embd)]);
        assert_eq!(d("rope_freqs.weight", &[32]), [None]);
        // Gemma's key-value width can equal its head size: the name decides.
        let g = shape(640, 18, 2048, 4, 1, 256, 262144, 32768, true);
        assert_eq!(
            dims_of("blk.0.attn_k.weight", &[640, 256], &g).unwrap(),
            [Some(Embd), Some(Kv)]
        );
        assert_eq!(
            dims_of("blk.0.attn_k_norm.weight", &[256], &g).unwrap(),
            [Some(Head)]
        );
        assert!(dims_of("blk.0.mystery.weight", &[256], &g).is_err());
        // A mixture's expert dimension is known by name only.
        let m = Shape {
            experts: 8,
            experts_used: 2,
            ..base
        };
        assert_eq!(
            dims_of("blk.0.ffn_down_exps.weight", &[1536, 576, 8], &m).unwrap(),
            [Some(Ff), Some(Embd), Some(Experts)]
        );
        assert_eq!(
            dims_of("blk.0.ffn_gate_inp.weight", &[576, 8], &m).unwrap(),
            [Some(Embd), Some(Experts)]
        );
    }

    #[test]
    fn levels_are_those_whose_types_are_known() {
        assert_eq!(level("q4_0").map(|l| (l.base, l.ftype)), Ok((2, 2)));
        assert_eq!(level("F16").map(|l| l.base), Ok(1));
        assert_eq!(level("q4_k_m").map(|l| (l.base, l.ftype)), Ok((12, 15)));
        assert_eq!(level("Q3_K_M").map(|l| (l.base, l.ftype)), Ok((11, 12)));
        let e = level("IQ2_XS").unwrap_err();
        assert!(e.contains("Q4_K_M") && e.contains("Q2_K"), "{e}");
    }

    #[test]
    fn a_medium_k_level_gives_attn_v_and_ffn_down_more_bits_in_the_layers_llama_quantize_picks() {
        let l = level("Q4_K_M").unwrap();
        // 32 layers: the first 4, the last 4, and every third from 6.
        let picked: Vec<u64> = (0..32)
            .filter(|i| {
                l.matrix_type(&format!("blk.{i}.ffn_down.weight"), 14336, false, 32, 0, 4) == Q6_K
            })
            .collect();
        assert_eq!(
            picked,
            [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
        assert_eq!(
            l.matrix_type("blk.6.attn_v.weight", 4096, false, 32, 0, 4),
            Q6_K
        );
        assert_eq!(
            l.matrix_type("blk.5.attn_v.weight", 4096, false, 32, 0, 4),
            Q4_K
        );
        assert_eq!(
            l.matrix_type("blk.6.attn_q.weight", 4096, false, 32, 0, 4),
            Q4_K
        );
        assert_eq!(l.matrix_type("output.weight", 4096, true, 32, 0, 4), Q6_K);
        assert_eq!(
            l.matrix_type("token_embd.weight", 4096, false, 32, 0, 4),
            Q4_K
        );
        // Rows narrower than a K block fall back as llama-quantize's do.
        assert_eq!(
            l.matrix_type("blk.5.attn_q.weight", 576, false, 30, 0, 3),
            6
        );
        assert_eq!(
            l.matrix_type("blk.0.attn_v.weight", 576, false, 30, 0, 3),
            Q8_0
        );
        let q8 = level("Q8_0").unwrap();
        assert_eq!(q8.matrix_type("output.weight", 4096, true, 32, 0, 4), Q8_0);
    }

    #[test]
    fn an_eight_expert_model_gets_llama_quantize_s_attention_types() {
        let q4km = level("Q4_K_M").unwrap();
        for part in ["attn_k", "attn_v"] {
            let name = format!("blk.5.{part}.weight");
            assert_eq!(
                q4km.matrix_type(&name, 4096, false, 32, 8, 4),
                Q8_0,
                "{part}"
            );
            assert_eq!(
                level("Q4_0")
                    .unwrap()
                    .matrix_type(&name, 4096, false, 32, 8, 4),
                Q8_0
            );
        }
        assert_eq!(
            q4km.matrix_type("blk.5.attn_output.weight", 4096, false, 32, 8, 4),
            Q5_K
        );
        assert_eq!(
            q4km.matrix_type("blk.5.attn_q.weight", 4096, false, 32, 8, 4),
            Q4_K
        );
        // Only for eight experts, and only at quantised levels.
        assert_eq!(
            q4km.matrix_type("blk.5.attn_k.weight", 4096, false, 32, 64, 4),
            Q4_K
        );
        assert_eq!(
            q4km.matrix_type("blk.5.attn_output.weight", 4096, false, 32, 64, 4),
            Q4_K
        );
        let q5km = level("Q5_K_M").unwrap();
        assert_eq!(
            q5km.matrix_type("blk.5.attn_output.weight", 4096, false, 32, 8, 4),
            Q5_K
        );
        let f16 = level("F16").unwrap();
        assert_eq!(
            f16.matrix_type("blk.5.attn_k.weight", 4096, false, 32, 8, 4),
            1
        );
    }
}
