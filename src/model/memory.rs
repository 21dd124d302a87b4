//! Will it fit? An estimate of what a model and each test's context need,
//! checked against free memory before anything is loaded.
//!
//! Loading a model that does not fit does not fail cleanly: the machine
//! swaps until the benchmark measures the disk, or the kernel's OOM killer
//! ends the worker (and sometimes something else). So Dyno refuses up front,
//! with the numbers, and says what to change. The estimate comes from the
//! GGUF header alone: the weights' bytes, the K and V projections' widths
//! (which give the KV cache per token, whatever the architecture calls its
//! head counts) and the vocabulary and feed-forward widths (which dominate
//! llama.cpp's compute buffers). It errs on the large side; `--no-memory-check`
//! skips it.

use std::path::Path;

use super::gguf::{self, Header};
use crate::error::GgufError;
use crate::units::human_bytes;
use crate::vocab::MemoryProfile;
use crate::vocab::{CacheType, ContextParams, FlashAttn, TestSpec};

/// Environment variable that caps the memory Dyno may plan to use, for a
/// shared machine (and for tests that need a small machine). Bytes, or with
/// a K, M, G or T suffix (powers of 1024).
pub const LIMIT_ENV: &str = "DYNO_MEMORY_LIMIT";

/// Bytes per element of a KV cache type; an unknown name (refused by the
/// plan before it gets here) counts as f16.
fn cache_type_bytes(t: &str) -> f64 {
    CacheType::parse(t).map_or(2.0, CacheType::bytes_per_element)
}

impl MemoryProfile {
    pub fn read(path: &Path) -> Result<MemoryProfile, GgufError> {
        Ok(MemoryProfile::of(&gguf::read_model_header(path)?))
    }

    pub fn of(h: &Header) -> MemoryProfile {
        let tensor = |name: &str| h.tensors.iter().find(|t| t.name == name);
        let dim = |name: &str, i: usize| tensor(name).and_then(|t| t.dims.get(i).copied());
        let arch = h.get_str("general.architecture").unwrap_or_default();
        let meta = |key: &str| h.get_u64(&format!("{arch}.{key}"));
        // A layer has tensors, so a claimed count above the tensor count is
        // a corrupt header; capping it keeps every loop below bounded.
        let n_layers = meta("block_count").unwrap_or(0).min(h.tensors.len() as u64);
        let n_embd = meta("embedding_length")
            .or_else(|| dim("token_embd.weight", 0))
            .unwrap_or(0);
        let n_head = meta("attention.head_count").unwrap_or(1).max(1);
        // The K and V projections' output widths are the cache's per-token
        // widths, layer by layer (grouped-query attention, per-layer head
        // counts and layers without attention all come out right).
        let mut kv = 0;
        for l in 0..n_layers {
            let k = dim(&format!("blk.{l}.attn_k.weight"), 1);
            let v = dim(&format!("blk.{l}.attn_v.weight"), 1);
            kv += match (k, v) {
                (Some(k), Some(v)) => k.saturating_add(v),
                // Fused QKV or another layout: assume full multi-head
                // attention, the widest the cache can be.
                _ if tensor(&format!("blk.{l}.attn_qkv.weight")).is_some()
                    || tensor(&format!("blk.{l}.attn_output.weight")).is_some() =>
                {
                    n_embd.saturating_mul(2)
                }
                _ => 0,
            };
        }
        MemoryProfile {
            weight_bytes: h.tensors.iter().fold(0, |a, t| a.saturating_add(t.n_bytes)),
            n_layers,
            kv_elements_per_token: kv,
            n_embd,
            n_vocab: meta("vocab_size")
                .or_else(|| dim("token_embd.weight", 1))
                .unwrap_or(0),
            n_ff: dim("blk.0.ffn_up.weight", 1)
                .or_else(|| meta("feed_forward_length"))
                .unwrap_or(4 * n_embd),
            n_head,
        }
    }

    /// Memory to load the model: its weights plus what llama.cpp and the
    /// worker need around them.
    pub fn load_bytes(&self) -> u64 {
        self.weight_bytes
            .saturating_add(self.weight_bytes / 20)
            .saturating_add(64 << 20)
    }

    /// KV cache bytes for `n_ctx` tokens.
    pub fn kv_bytes(&self, n_ctx: u64, cache_type: &str) -> u64 {
        (self.kv_elements_per_token as f64 * n_ctx as f64 * cache_type_bytes(cache_type)) as u64
    }

    /// llama.cpp's compute buffers for one micro-batch: the logits, the
    /// feed-forward and other activations, and, with flash attention off,
    /// the attention scores over the whole context. `auto` counts as on:
    /// llama.cpp turns it on wherever the backend has it (the CPU does).
    pub fn compute_bytes(&self, n_ctx: u64, ctx: &ContextParams) -> u64 {
        // In f64: the widths come from the file, and a corrupt one must not
        // overflow (a float-to-int cast saturates).
        let ub = u64::from(ctx.n_ubatch.max(1)).min(n_ctx.max(1)) as f64;
        let widths = self.n_vocab as f64 + 3.0 * self.n_ff as f64 + 8.0 * self.n_embd as f64;
        let activations = ub * widths * 4.0;
        let scores = if ctx.flash_attn == FlashAttn::Off {
            ub * n_ctx as f64 * self.n_head as f64 * 4.0
        } else {
            0.0
        };
        (activations + scores) as u64
    }

    /// Memory one test's context needs on top of the loaded model.
    pub fn context_bytes(&self, test: &TestSpec, ctx: &ContextParams) -> (u64, u64) {
        let n_ctx = test.n_ctx();
        (
            self.kv_bytes(n_ctx, &ctx.cache_type),
            self.compute_bytes(n_ctx, ctx),
        )
    }

    /// Why the model cannot be loaded into `budget`, or `None` when it fits.
    pub fn refuse_load(&self, file: &str, budget: &Budget) -> Option<String> {
        let need = self.load_bytes();
        (need > budget.bytes).then(|| {
            format!(
                "{file} needs about {} of memory to load (weights {} plus llama.cpp's own) but {} {}; \
                 close other programs, pick a smaller level, or pass --no-memory-check to try anyway",
                human_bytes(need),
                human_bytes(self.weight_bytes),
                human_bytes(budget.bytes),
                budget.says(),
            )
        })
    }

    /// Why one test's context cannot be made with `left` bytes to spare once
    /// the model is loaded, or `None` when it fits.
    pub fn refuse_context(
        &self,
        test: &TestSpec,
        ctx: &ContextParams,
        left: u64,
    ) -> Option<String> {
        let (kv, compute) = self.context_bytes(test, ctx);
        (kv.saturating_add(compute) > left).then(|| {
            format!(
                "its context of {} tokens needs about {} (KV cache {} at {}, compute buffers {}) \
                 but about {} is left after the weights; use shorter tests (-p, -n, -d), a smaller \
                 KV cache type (--ctk q8_0), or --no-memory-check to try anyway",
                test.n_ctx(),
                human_bytes(kv.saturating_add(compute)),
                human_bytes(kv),
                ctx.cache_type,
                human_bytes(compute),
                human_bytes(left),
            )
        })
    }

    /// GPU memory that offloading `ngl` layers takes: that share of the
    /// weights and of the KV cache, plus the compute buffers.
    pub fn gpu_bytes(&self, ngl: u64, kv: u64, compute: u64) -> u64 {
        let layers = self.n_layers.max(1);
        // llama.cpp counts the output layer as one more offloadable layer.
        let w = self.weight_bytes as f64 * ngl.min(layers + 1) as f64 / (layers + 1) as f64;
        let k = kv as f64 * ngl.min(layers) as f64 / layers as f64;
        (w as u64).saturating_add(k as u64).saturating_add(compute)
    }

    /// The most layers that fit in `free` bytes of GPU memory.
    pub fn layers_that_fit(&self, free: u64, kv: u64, compute: u64) -> u64 {
        (0..=self.n_layers + 1)
            .rev()
            .find(|&n| self.gpu_bytes(n, kv, compute) <= free)
            .unwrap_or(0)
    }
}

/// How much memory a benchmark may plan to use, and where that figure came
/// from (so a refusal can say).
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub bytes: u64,
    pub source: BudgetSource,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetSource {
    /// The memory the kernel says is available (free plus reclaimable cache).
    Available,
    /// The free part of this process's cgroup (a container's limit).
    Cgroup,
    /// The user's cap in `DYNO_MEMORY_LIMIT`.
    Limit,
}

impl Budget {
    fn says(&self) -> &'static str {
        match self.source {
            BudgetSource::Available => "is available",
            BudgetSource::Cgroup => "is free under this container's memory limit",
            BudgetSource::Limit => "is allowed by DYNO_MEMORY_LIMIT",
        }
    }

    /// The smallest of available memory, the cgroup's free memory and the
    /// user's cap.
    pub fn now() -> Result<Budget, String> {
        use sysinfo::{MemoryRefreshKind, RefreshKind, System};
        let sys = System::new_with_specifics(
            RefreshKind::nothing().with_memory(MemoryRefreshKind::nothing().with_ram()),
        );
        let mut b = Budget {
            bytes: sys.available_memory(),
            source: BudgetSource::Available,
        };
        if let Some(c) = sys.cgroup_limits() {
            if c.free_memory < b.bytes {
                b = Budget {
                    bytes: c.free_memory,
                    source: BudgetSource::Cgroup,
                };
            }
        }
        if let Some(v) = std::env::var_os(LIMIT_ENV) {
            let v = v.to_string_lossy();
            let cap = parse_size(&v).ok_or_else(|| {
                format!("{LIMIT_ENV}={v} is not a size; give bytes or a number with K, M, G or T")
            })?;
            if cap < b.bytes {
                b = Budget {
                    bytes: cap,
                    source: BudgetSource::Limit,
                };
            }
        }
        Ok(b)
    }
}

/// "512M", "1.5G", "1048576" → bytes (K, M, G, T are powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return None,
            };
            (&s[..i], (1u64 << shift) as f64)
        }
        _ => (s, 1.0),
    };
    let n: f64 = num.trim().parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some((n * mult) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::TestKind;

    fn profile() -> MemoryProfile {
        // Shaped like SmolLM2-135M: 30 layers, 3 KV heads of 64 for K and V.
        MemoryProfile {
            weight_bytes: 98_000_000,
            n_layers: 30,
            kv_elements_per_token: 30 * (192 + 192),
            n_embd: 576,
            n_vocab: 49_152,
            n_ff: 1536,
            n_head: 9,
        }
    }

    fn ctx(fa: FlashAttn, cache: &str) -> ContextParams {
        ContextParams {
            n_threads: 2,
            n_batch: 2048,
            n_ubatch: 512,
            flash_attn: fa,
            cache_type: cache.into(),
            no_kv_offload: false,
        }
    }

    fn test(n_prompt: u32, n_depth: u32) -> TestSpec {
        TestSpec {
            kind: TestKind::Prompt,
            n_prompt,
            n_gen: 0,
            n_depth,
            n_parallel: 1,
        }
    }

    #[test]
    fn kv_cache_scales_with_context_and_type() {
        let p = profile();
        // 11,520 elements a token at 2 bytes: 23,040 bytes a token.
        assert_eq!(p.kv_bytes(1000, "f16"), 23_040_000);
        assert_eq!(p.kv_bytes(1000, "q8_0"), 12_240_000);
        let (kv, _) = p.context_bytes(&test(512, 10_000_000), &ctx(FlashAttn::Auto, "f16"));
        assert!(kv > 200 << 30, "a 10M-token depth needs hundreds of GiB");
    }

    #[test]
    fn flash_attention_drops_the_score_matrix() {
        let p = profile();
        let t = test(4096, 0);
        let off = p.compute_bytes(4096, &ctx(FlashAttn::Off, "f16"));
        let on = p.compute_bytes(4096, &ctx(FlashAttn::On, "f16"));
        assert_eq!(off - on, 512 * 4096 * 9 * 4);
        assert!(p
            .refuse_context(&t, &ctx(FlashAttn::On, "f16"), 1 << 30)
            .is_none());
        let why = p
            .refuse_context(&t, &ctx(FlashAttn::Off, "f16"), 1 << 20)
            .unwrap();
        assert!(
            why.contains("4096 tokens") && why.contains("--ctk"),
            "{why}"
        );
    }

    #[test]
    fn load_refusal_names_the_file_the_need_and_the_way_out() {
        let p = profile();
        let small = Budget {
            bytes: 64 << 20,
            source: BudgetSource::Limit,
        };
        let why = p.refuse_load("m.gguf", &small).unwrap();
        assert!(why.starts_with("m.gguf needs about"), "{why}");
        assert!(why.contains("DYNO_MEMORY_LIMIT") && why.contains("--no-memory-check"));
        let big = Budget {
            bytes: 1 << 30,
            source: BudgetSource::Available,
        };
        assert!(p.refuse_load("m.gguf", &big).is_none());
    }

    #[test]
    fn partial_offload_is_the_most_layers_that_fit() {
        let p = profile();
        let all = p.gpu_bytes(99, 0, 0);
        assert_eq!(all, p.weight_bytes, "all layers and the output");
        let half = p.layers_that_fit(p.weight_bytes / 2, 0, 0);
        assert!((14..=16).contains(&half), "{half}");
        assert!(p.gpu_bytes(half, 0, 0) <= p.weight_bytes / 2);
        assert!(p.gpu_bytes(half + 1, 0, 0) > p.weight_bytes / 2);
        assert_eq!(p.layers_that_fit(0, 0, 0), 0);
    }

    #[test]
    fn absurd_header_counts_neither_loop_nor_overflow() {
        use crate::model::gguf::{TensorInfo, Value};
        let mut metadata = std::collections::BTreeMap::new();
        metadata.insert("general.architecture".into(), Value::Str("llama".into()));
        metadata.insert("llama.block_count".into(), Value::U64(1 << 60));
        metadata.insert("llama.embedding_length".into(), Value::U64(u64::MAX));
        let t = |name: &str, dims: Vec<u64>| TensorInfo {
            name: name.into(),
            dims,
            ggml_type: 0,
            offset: 0,
            n_elements: 1 << 61,
            n_bytes: u64::MAX / 2,
        };
        let h = Header {
            version: 3,
            metadata,
            tensors: vec![
                t("blk.0.attn_k.weight", vec![1, u64::MAX]),
                t("blk.0.attn_v.weight", vec![1, u64::MAX]),
                t("blk.0.ffn_up.weight", vec![1, u64::MAX]),
            ],
            alignment: 32,
            data_offset: 0,
            file_size: 0,
        };
        let p = MemoryProfile::of(&h);
        assert_eq!(p.n_layers, 3, "capped at the tensor count");
        assert_eq!(p.weight_bytes, u64::MAX);
        assert_eq!(p.load_bytes(), u64::MAX);
        let c = ctx(FlashAttn::Off, "f16");
        let (kv, compute) = p.context_bytes(&test(512, 0), &c);
        assert_eq!((kv, compute), (u64::MAX, u64::MAX));
        assert!(p.refuse_context(&test(512, 0), &c, 1 << 40).is_some());
        assert_eq!(p.layers_that_fit(1 << 30, kv, compute), 0);
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("1.5g"), Some(3 << 29));
        assert_eq!(parse_size("2T"), Some(2 << 40));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("-1G"), None);
        assert_eq!(parse_size(""), None);
    }
}
