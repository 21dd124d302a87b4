//! Which experts a mixture-of-experts model's router picks, layer by layer,
//! while it decodes random tokens one at a time (llama-bench's tg).
//!
//! A synthetic MoE file is only as good as its routers: if made-up router
//! weights sent every token to the same few experts, its decode would read
//! fewer expert matrices than a trained model's and measure too fast. So
//! `dyno synth` decodes the file it wrote and counts, for each layer, the
//! experts that were chosen at least once. The choice is read from
//! llama.cpp's own graph through its eval callback: the `ffn_moe_topk-N`
//! tensor (layer N) holds each token's chosen expert ids. The counts also
//! say how evenly the tokens spread (`dyno synth --routing` reads them from
//! any mixture, so a twin can be set beside its real file).

use std::collections::BTreeMap;
use std::ffi::{c_void, CStr};
use std::time::{Duration, Instant};

use llama_cpp_sys_2 as sys;

use super::{Context, Model, Token};
use crate::engine::EngineError;
use crate::model::synth::Routing;
use crate::vocab::ContextParams;

/// What the callback has seen: for each layer with experts, how many tokens
/// chose each expert (dense layers, as some models lead with, never appear).
struct Seen {
    n_expert: usize,
    chosen: BTreeMap<usize, Vec<u32>>,
}

impl Seen {
    /// Mark the ids in `t`, an I32 tensor of [chosen, tokens] whose rows may
    /// be a view into a longer sorted list (so rows are `nb[1]` apart).
    ///
    /// # Safety
    /// `t` must be a live, computed tensor of the graph llama.cpp is
    /// evaluating, as the eval callback receives it.
    unsafe fn mark(&mut self, layer: usize, t: *mut sys::ggml_tensor) {
        // SAFETY: `t` is live and computed (the caller's contract); ggml
        // copies `ggml_nbytes(t)` bytes from where its data starts, on
        // whichever backend holds it, into `buf`, which holds that many.
        let (buf, ne, nb) = unsafe {
            let n = sys::ggml_nbytes(t);
            let mut buf = vec![0u8; n];
            sys::ggml_backend_tensor_get(t, buf.as_mut_ptr().cast::<c_void>(), 0, n);
            (buf, (*t).ne, (*t).nb)
        };
        let chosen = self
            .chosen
            .entry(layer)
            .or_insert_with(|| vec![0; self.n_expert]);
        for token in 0..ne[1].max(0) as usize {
            for k in 0..ne[0].max(0) as usize {
                let at = token * nb[1] + k * nb[0];
                let Some(id) = buf.get(at..at + 4) else {
                    continue;
                };
                let id = i32::from_ne_bytes(id.try_into().expect("4 bytes"));
                if let Some(slot) = usize::try_from(id).ok().and_then(|i| chosen.get_mut(i)) {
                    *slot += 1;
                }
            }
        }
    }
}

/// The layer of an `ffn_moe_topk-N` tensor.
fn topk_layer(t: *const sys::ggml_tensor) -> Option<usize> {
    // SAFETY: ggml keeps every tensor's name NUL-terminated within its
    // fixed-size array, and `t` is live for the callback.
    let name = unsafe { CStr::from_ptr((*t).name.as_ptr()) };
    name.to_str()
        .ok()?
        .strip_prefix("ffn_moe_topk-")?
        .parse()
        .ok()
}

/// llama.cpp's eval callback: asked first whether a tensor is wanted, then
/// called with it once computed. Returning true lets the graph go on.
unsafe extern "C" fn observe(t: *mut sys::ggml_tensor, ask: bool, data: *mut c_void) -> bool {
    let Some(layer) = topk_layer(t) else {
        return !ask;
    };
    if !ask {
        // SAFETY: `data` is the `Seen` that `routing` owns and keeps alive
        // (and touches nowhere else) while its context exists; llama.cpp
        // calls back on the decoding thread only.
        let seen = unsafe { &mut *data.cast::<Seen>() };
        // SAFETY: llama.cpp hands over a computed tensor of its graph.
        unsafe { seen.mark(layer, t) };
    }
    true
}

/// Decode `n_tokens` random tokens one at a time (stopping early after
/// `budget`) and count the tokens each layer's router gave each expert.
pub fn routing(
    model: &Model,
    p: &ContextParams,
    n_expert: u32,
    n_used: u32,
    n_tokens: u32,
    seed: u64,
    budget: Duration,
) -> Result<Routing, EngineError> {
    let mut seen = Box::new(Seen {
        n_expert: n_expert as usize,
        chosen: BTreeMap::new(),
    });
    let data: *mut Seen = &mut *seen;
    // SAFETY: `observe` matches ggml's callback type; `data` points to the
    // boxed `Seen`, which outlives the context (dropped at the end of this
    // function, after `ctx`), and nothing else uses it meanwhile.
    let mut ctx =
        unsafe { Context::observed(model, p, n_tokens + 8, Some(observe), data.cast::<c_void>())? };
    let n_vocab = model.n_vocab().max(1) as u64;
    let mut state = seed | 1;
    let started = Instant::now();
    let mut decoded = 0;
    while decoded < n_tokens && (decoded == 0 || started.elapsed() < budget) {
        // xorshift64: the tokens only need to differ, as llama-bench's do.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut token = [(state % n_vocab) as Token];
        ctx.decode_one_seq(&mut token)?;
        decoded += 1;
    }
    ctx.synchronize();
    drop(ctx);
    Ok(Routing::from_counts(
        n_expert,
        n_used,
        decoded,
        seen.chosen.into_values().collect(),
    ))
}
