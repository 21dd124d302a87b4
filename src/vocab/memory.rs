//! The memory profile of a model: what its GGUF header says about the memory
//! it needs. The parent reads it once and the worker checks each test's
//! context against it, so it travels in the worker protocol; reading it from
//! a header and the arithmetic over it live in [`crate::model::memory`].

/// What the header says about memory.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemoryProfile {
    pub weight_bytes: u64,
    pub n_layers: u64,
    /// K plus V elements one token adds to the cache, over all layers.
    pub kv_elements_per_token: u64,
    pub n_embd: u64,
    pub n_vocab: u64,
    pub n_ff: u64,
    pub n_head: u64,
}
