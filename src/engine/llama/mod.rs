//! Thin RAII wrappers over the llama.cpp C API.
//!
//! llama-cpp-2's safe `LlamaContext` hides the raw context pointer, and the
//! timed path needs calls it does not wrap (`llama_attach_threadpool`,
//! `llama_memory_clear`, sequence state), so the measurement loop talks to
//! llama-cpp-sys-2 directly, exactly as llama-bench talks to llama.h. These
//! wrappers keep the unsafe surface to this one folder, one file per thing
//! llama.cpp hands out:
//!
//! - [`model`]: a loaded model ([`Model`]) and what its load asks for.
//! - [`context`]: a context with its thread pool ([`Context`]), where decoding
//!   happens.
//! - [`batch`]: a multi-sequence batch ([`Batch`]).
//! - [`fit`]: llama.cpp's `--fit`, which picks the offload for a context.
//! - [`backend`]: what this build of llama.cpp has (devices, versions).
//! - [`quantize`]: llama.cpp's quantizer.
//! - [`codec`]: ggml's quantisers on plain buffers, for synthetic weights.
//! - [`routing`]: which experts a mixture-of-experts model's routers choose.
//!
//! Every `unsafe` block carries a `// SAFETY:` comment (Cargo denies
//! `clippy::undocumented_unsafe_blocks`). The invariants they lean on:
//!
//! - A [`Model`] holds the non-null pointer of a successful load and frees
//!   it once, in `Drop`. A [`Context`] borrows its model (`'m`), so the model
//!   outlives every context made from it.
//! - Each wrapper owns its llama.cpp object outright and is neither `Send`
//!   nor `Sync` (it holds raw pointers), so one thread uses it at a time.
//!   Calls that can rewrite or move llama.cpp's buffers (decode, cache clear,
//!   state restore) take `&mut self`.
//! - Pointers into llama.cpp's buffers (logits) are handed out as slices that
//!   borrow the wrapper, so they cannot outlive the next call that rewrites
//!   those buffers.

mod backend;
mod batch;
mod codec;
mod context;
mod fit;
mod model;
mod quantize;
mod routing;

use llama_cpp_sys_2 as sys;

pub(crate) use backend::{device_info, owned_string};
pub use backend::{devices, ggml_version, supports_gpu_offload, system_info};
pub use batch::Batch;
pub use codec::Ggml;
pub use context::Context;
pub use fit::FitRequest;
pub use model::{LoadOptions, Model};
pub use quantize::quantize;
pub use routing::routing;

use crate::vocab::CacheType;

pub type Token = sys::llama_token;

/// ggml's type for a KV cache type name; `None` for one llama.cpp refuses
/// (the plan checks `--ctk` against the same [`CacheType`] list first).
fn ggml_type_of(cache_type: &str) -> Option<sys::ggml_type> {
    Some(match CacheType::parse(cache_type)? {
        CacheType::F32 => sys::GGML_TYPE_F32,
        CacheType::F16 => sys::GGML_TYPE_F16,
        CacheType::Bf16 => sys::GGML_TYPE_BF16,
        CacheType::Q8_0 => sys::GGML_TYPE_Q8_0,
        CacheType::Q4_0 => sys::GGML_TYPE_Q4_0,
        CacheType::Q4_1 => sys::GGML_TYPE_Q4_1,
        CacheType::Iq4Nl => sys::GGML_TYPE_IQ4_NL,
        CacheType::Q5_0 => sys::GGML_TYPE_Q5_0,
        CacheType::Q5_1 => sys::GGML_TYPE_Q5_1,
    })
}
