//! llama.cpp's fit (`--fit`, llama-bench's `-fitt`): before a load, pick the
//! layers to offload, the split across devices and the tensors kept in host
//! memory so that the largest test of the run fits, leaving a margin free on
//! each device. Its trial loads happen inside llama.cpp; the choice comes
//! back as model parameters and is reported as a [`FitChoice`].

use std::ffi::CStr;

use llama_cpp_sys_2 as sys;

use super::backend::owned_string;
use super::context::context_params;
use crate::engine::{last_errors, EngineError};
use crate::vocab::{ContextParams, FitChoice};

/// The context the fit must leave room for: the largest test of the run.
pub struct FitRequest<'a> {
    pub margin_mib: u32,
    pub ctx: &'a ContextParams,
    pub n_ctx: u32,
    pub n_seq: u32,
}

/// Run llama.cpp's fit (the code behind `llama-bench -fitt`) on `p` for
/// the context in `f`: it sets the layers to offload, the split across
/// devices and any tensors kept in host memory, writing into `split` and
/// `overrides`, which `p` then points at.
pub(super) fn fit(
    path: &CStr,
    p: &mut sys::llama_model_params,
    f: &FitRequest<'_>,
    split: &mut Vec<f32>,
    overrides: &mut Vec<sys::llama_model_tensor_buft_override>,
) -> Result<FitChoice, EngineError> {
    // SAFETY: no arguments; both return compile-time limits.
    let (max_dev, max_ovr) = unsafe {
        (
            sys::llama_max_devices(),
            sys::llama_max_tensor_buft_overrides(),
        )
    };
    split.clear();
    split.resize(max_dev, 0.0);
    let empty = sys::llama_model_tensor_buft_override {
        pattern: std::ptr::null(),
        buft: std::ptr::null_mut(),
    };
    overrides.clear();
    overrides.resize(max_ovr + 1, empty);
    let mut margins = vec![f.margin_mib as usize * 1024 * 1024; max_dev];
    let mut c = context_params(f.ctx, f.n_ctx, f.n_seq)?;
    // The fit changes only parameters still at their defaults: -1 layers,
    // no split, no overrides.
    p.n_gpu_layers = -1;
    p.tensor_split = std::ptr::null();
    p.tensor_buft_overrides = std::ptr::null();
    // SAFETY: `path` is NUL-terminated; `p` and `c` are valid params whose
    // pointers are null or (`p.devices`) a null-terminated list the caller
    // keeps alive. The three buffers have the lengths llama.cpp requires
    // (max devices for the split and the margins, max overrides for the
    // overrides, plus one null entry that always ends the list) and outlive
    // the call. The fit swaps llama.cpp's global logger while it runs, which
    // races with nothing: in a worker only the main thread calls llama.cpp.
    let status = unsafe {
        sys::llama_rs_fit_params(
            path.as_ptr(),
            p,
            &mut c,
            split.as_mut_ptr(),
            overrides.as_mut_ptr(),
            margins.as_mut_ptr(),
            f.n_ctx,
            std::ptr::null(),
            // Its trial loads would otherwise log "model buffer size" lines
            // that read as the real load's (llama.cpp's own callers do this).
            sys::GGML_LOG_LEVEL_ERROR,
        )
    };
    if status != 0 {
        let why = last_errors();
        return Err(EngineError::Load(format!(
            "llama.cpp's fit found no offload that leaves {} MiB free on each device{}; \
             try a smaller --fit margin, --ngl with fewer layers, or a smaller level",
            f.margin_mib,
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({why})")
            }
        )));
    }
    p.tensor_split = split.as_ptr();
    p.tensor_buft_overrides = overrides.as_ptr();
    let patterns = overrides
        .iter()
        .take_while(|o| !o.pattern.is_null())
        // SAFETY: the fit writes patterns that are NUL-terminated strings in
        // its own function-local statics, alive for the process.
        .map(|o| unsafe { owned_string(o.pattern) })
        .collect();
    let used = split.iter().rposition(|&v| v > 0.0).map_or(0, |i| i + 1);
    Ok(FitChoice {
        margin_mib: f.margin_mib,
        n_gpu_layers: p.n_gpu_layers,
        tensor_split: split[..used].to_vec(),
        overrides: patterns,
    })
}
