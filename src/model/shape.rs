//! What a model costs per token, from its header alone: the bytes a decode
//! step reads and the arithmetic a prompt token needs.
//!
//! The speed prediction (`crate::predict`) divides these by rates fitted on
//! this machine, so they must count what llama.cpp actually touches, not
//! what the file holds:
//! - a decode step reads every weight once, except the token embedding, of
//!   which it reads one row (unless the output layer is tied to it, when the
//!   whole matrix is read for the logits);
//! - a mixture of experts reads only the experts it routes to, on average
//!   `expert_used_count ÷ expert_count` of each expert tensor;
//! - a prompt token costs two operations per weight of the layers' matrices.
//!   llama-bench's prompt test asks for the logits of the last token only, so
//!   the output layer is left out; attention over the context is added.

use serde::{Deserialize, Serialize};

use super::gguf::{ggml_type_name, Header};
use super::quant;
use crate::vocab::MemoryProfile;

/// A model's costs per token and the facts they come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModelShape {
    pub arch: String,
    /// The quantisation level the file says it is (`general.file_type`).
    pub quant: String,
    pub n_params: u64,
    /// Parameters used per token: all of them for a dense model, the shared
    /// weights plus the routed experts' share for a mixture of experts.
    pub n_active_params: u64,
    pub n_layers: u64,
    pub n_embd: u64,
    pub n_vocab: u64,
    /// Experts per MoE layer and those used per token (0 for a dense model).
    pub n_expert: u64,
    pub n_expert_used: u64,
    pub context_length: Option<u64>,
    /// Bytes of all tensor data.
    pub weight_bytes: u64,
    /// Weight bytes one decode step reads (see the module's rules).
    pub decode_bytes_per_token: u64,
    /// K and V elements one token adds to the cache, over all layers: the
    /// cache a decode step reads grows by this per token of context.
    pub kv_elements_per_token: u64,
    /// Multiply-adds ×2 of the layers' matrices for one prompt token.
    pub prefill_flops_per_token: u64,
    /// Query width over all layers, for attention's cost per context token.
    pub attn_width: u64,
    /// Bytes per tensor type, largest first ("Q4_K", bytes).
    pub tensor_types: Vec<(String, u64)>,
    /// Weights one decode step reads, per tensor type (elements, by the
    /// same rules as `decode_bytes_per_token`). On a CPU a decode step costs
    /// per element of each type more than per byte: unpacking a K-quant
    /// takes longer than reading it, so the speed model fits a cost per
    /// element of each type.
    #[serde(default)]
    pub decode_elements: Vec<(String, u64)>,
}

fn is_expert(name: &str) -> bool {
    // `ffn_up_exps`, `ffn_gate_up_exps`…; shared experts (`_shexp`) are
    // always used and count in full.
    name.contains("_exps.")
}

impl ModelShape {
    pub fn of(h: &Header) -> ModelShape {
        let arch = h
            .get_str("general.architecture")
            .unwrap_or_default()
            .to_string();
        let meta = |key: &str| h.get_u64(&format!("{arch}.{key}"));
        let mem = MemoryProfile::of(h);
        let n_expert = meta("expert_count").unwrap_or(0);
        let n_expert_used = meta("expert_used_count").unwrap_or(0).min(n_expert);
        // The share of an expert tensor one token uses.
        let routed = |n: u64| -> u64 {
            if n_expert > 0 {
                ((n as u128 * n_expert_used as u128) / n_expert as u128) as u64
            } else {
                n
            }
        };
        let tied = !h.tensors.iter().any(|t| t.name == "output.weight");
        let mut n_params = 0u64;
        let mut n_active = 0u64;
        let mut decode_bytes = 0u64;
        let mut matmul_params = 0u64;
        let mut attn_width = 0u64;
        let mut types = std::collections::BTreeMap::<&str, u64>::new();
        let mut decode_types = std::collections::BTreeMap::<&str, u64>::new();
        for t in &h.tensors {
            n_params = n_params.saturating_add(t.n_elements);
            *types.entry(ggml_type_name(t.ggml_type)).or_default() += t.n_bytes;
            let (elems, bytes) = if is_expert(&t.name) {
                (routed(t.n_elements), routed(t.n_bytes))
            } else {
                (t.n_elements, t.n_bytes)
            };
            n_active = n_active.saturating_add(elems);
            let embedding = t.name == "token_embd.weight";
            // One row per token of an embedding the output does not share.
            let rows = match (embedding, tied) {
                (true, false) => t.dims.get(1).copied().unwrap_or(1).max(1),
                _ => 1,
            };
            decode_bytes = decode_bytes.saturating_add(bytes / rows);
            *decode_types.entry(ggml_type_name(t.ggml_type)).or_default() += elems / rows;
            if t.name.starts_with("blk.") && t.dims.len() >= 2 {
                matmul_params = matmul_params.saturating_add(elems);
            }
            if t.name.starts_with("blk.") && t.name.ends_with("attn_q.weight") {
                attn_width += t.dims.get(1).copied().unwrap_or(0);
            }
        }
        if attn_width == 0 {
            attn_width = mem.n_embd.saturating_mul(mem.n_layers);
        }
        let mut tensor_types: Vec<(String, u64)> =
            types.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        tensor_types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let context_length = meta("context_length");
        let quant = match h.get_u64("general.file_type") {
            Some(ft) => quant::ftype_name(ft as u32)
                .map(str::to_string)
                .unwrap_or_else(|| format!("ftype {ft}")),
            None => quant::guess_from_tensors(&h.tensors),
        };
        ModelShape {
            arch,
            quant,
            n_params,
            n_active_params: n_active,
            n_layers: mem.n_layers,
            n_embd: mem.n_embd,
            n_vocab: mem.n_vocab,
            n_expert,
            n_expert_used,
            context_length,
            weight_bytes: mem.weight_bytes,
            decode_bytes_per_token: decode_bytes,
            kv_elements_per_token: mem.kv_elements_per_token,
            prefill_flops_per_token: matmul_params.saturating_mul(2),
            attn_width,
            tensor_types,
            decode_elements: decode_types
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }

    /// Bytes one decode step reads with `depth` tokens already in an f16
    /// cache: the weights plus the cache.
    pub fn decode_bytes_at(&self, depth: u64) -> f64 {
        self.decode_bytes_per_token as f64 + self.kv_elements_per_token as f64 * 2.0 * depth as f64
    }

    /// Operations per token of a prompt of `n_prompt` tokens after `depth`:
    /// the matrices, plus QK and AV over the context each token sees (on
    /// average `depth + n_prompt / 2`).
    pub fn prefill_flops_at(&self, n_prompt: u64, depth: u64) -> f64 {
        let ctx = depth as f64 + n_prompt as f64 / 2.0;
        self.prefill_flops_per_token as f64 + 4.0 * self.attn_width as f64 * ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::gguf::{Header, TensorInfo, Value};
    use std::collections::BTreeMap;

    fn t(name: &str, dims: &[u64], ggml_type: u32) -> TensorInfo {
        let n: u64 = dims.iter().product();
        let (block, bytes) = crate::model::gguf::ggml_type_block(ggml_type).unwrap();
        TensorInfo {
            name: name.into(),
            dims: dims.to_vec(),
            ggml_type,
            offset: 0,
            n_elements: n,
            n_bytes: n / block * bytes,
        }
    }

    fn header(meta: &[(&str, Value)], tensors: Vec<TensorInfo>) -> Header {
        let mut metadata = BTreeMap::new();
        metadata.insert(
            "general.architecture".to_string(),
            Value::Str("llama".into()),
        );
        for (k, v) in meta {
            metadata.insert(k.to_string(), v.clone());
        }
        Header {
            version: 3,
            metadata,
            tensors,
            alignment: 32,
            data_offset: 0,
            file_size: 0,
        }
    }

    #[test]
    fn a_tied_embedding_is_read_whole_and_an_untied_one_a_row_at_a_time() {
        let layers = || {
            vec![
                t("blk.0.attn_q.weight", &[64, 64], 1),
                t("blk.0.attn_norm.weight", &[64], 0),
            ]
        };
        let mut tied = layers();
        tied.push(t("token_embd.weight", &[64, 1000], 1));
        let tied = ModelShape::of(&header(&[("llama.block_count", Value::U64(1))], tied));
        // 64×64×2 + 64×4 + 64×1000×2
        assert_eq!(tied.decode_bytes_per_token, 8192 + 256 + 128_000);
        let mut untied = layers();
        untied.push(t("token_embd.weight", &[64, 1000], 1));
        untied.push(t("output.weight", &[64, 1000], 1));
        let untied = ModelShape::of(&header(&[("llama.block_count", Value::U64(1))], untied));
        assert_eq!(untied.decode_bytes_per_token, 8192 + 256 + 128 + 128_000);
        // Only the layers' matrices cost arithmetic per prompt token.
        assert_eq!(tied.prefill_flops_per_token, 2 * 64 * 64);
        assert_eq!(tied.attn_width, 64);
        assert_eq!(tied.tensor_types[0], ("F16".to_string(), 8192 + 128_000));
        assert_eq!(
            tied.decode_elements,
            [("F16".to_string(), 4096 + 64_000), ("F32".to_string(), 64)]
        );
        assert_eq!(
            untied.decode_elements[0],
            ("F16".to_string(), 4096 + 64 + 64_000)
        );
    }

    #[test]
    fn a_mixture_of_experts_reads_only_the_experts_it_uses() {
        let h = header(
            &[
                ("llama.block_count", Value::U64(1)),
                ("llama.expert_count", Value::U64(8)),
                ("llama.expert_used_count", Value::U64(2)),
            ],
            vec![
                t("blk.0.ffn_up_exps.weight", &[64, 128, 8], 1),
                t("blk.0.ffn_up_shexp.weight", &[64, 128], 1),
                t("token_embd.weight", &[64, 100], 1),
                t("output.weight", &[64, 100], 1),
            ],
        );
        let s = ModelShape::of(&h);
        assert_eq!(s.n_params, 64 * 128 * 8 + 64 * 128 + 2 * 6400);
        assert_eq!(s.n_active_params, 64 * 128 * 2 + 64 * 128 + 2 * 6400);
        let expert_bytes = 64 * 128 * 2 * 2;
        let shared = 64 * 128 * 2;
        assert_eq!(
            s.decode_bytes_per_token,
            expert_bytes + shared + 128 + 12_800
        );
        assert_eq!(s.prefill_flops_per_token, 2 * (64 * 128 * 2 + 64 * 128));
        assert_eq!((s.n_expert, s.n_expert_used), (8, 2));
    }

    #[test]
    fn context_adds_cache_reads_and_attention() {
        let h = header(
            &[("llama.block_count", Value::U64(1))],
            vec![
                t("blk.0.attn_q.weight", &[64, 64], 1),
                t("blk.0.attn_k.weight", &[64, 16], 1),
                t("blk.0.attn_v.weight", &[64, 16], 1),
                t("blk.0.attn_output.weight", &[64, 64], 1),
            ],
        );
        let s = ModelShape::of(&h);
        assert_eq!(s.kv_elements_per_token, 32);
        assert_eq!(
            s.decode_bytes_at(100) - s.decode_bytes_at(0),
            32.0 * 2.0 * 100.0
        );
        assert_eq!(
            s.prefill_flops_at(512, 0) - s.prefill_flops_at(0, 0),
            4.0 * 64.0 * 256.0
        );
    }
}
