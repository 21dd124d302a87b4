//! llama.cpp's own quantizer, the code behind llama-quantize. The worker
//! runs it for `crate::quantize` so a crash in it, like a crash in a
//! benchmark, takes down only the worker.

use std::ffi::CString;
use std::path::Path;

use llama_cpp_sys_2 as sys;

use crate::engine::{last_errors, EngineError};

/// Quantize `input` into `output` as type `ftype` (a `llama_ftype`) with
/// llama.cpp's own quantizer, the code behind llama-quantize. Blocks until
/// done. `allow_requantize` lets an already quantised input through.
pub fn quantize(
    input: &Path,
    output: &Path,
    ftype: u32,
    n_threads: u32,
    allow_requantize: bool,
) -> Result<(), EngineError> {
    let c = |p: &Path| {
        CString::new(p.to_string_lossy().as_bytes())
            .map_err(|_| EngineError::Context(format!("{} contains a NUL byte", p.display())))
    };
    let (inp, out) = (c(input)?, c(output)?);
    // SAFETY: the default params are plain data whose optional tables
    // (imatrix, KV and tensor overrides, pruned layers) are null, and only scalars are
    // changed; both paths are NUL-terminated CStrings and `p` a local, all
    // alive until the call returns.
    let rc = unsafe {
        let mut p = sys::llama_model_quantize_default_params();
        p.nthread = n_threads.min(i32::MAX as u32) as i32;
        p.ftype = ftype as sys::llama_ftype;
        p.allow_requantize = allow_requantize;
        sys::llama_model_quantize(inp.as_ptr(), out.as_ptr(), &p)
    };
    if rc != 0 {
        let why = last_errors();
        return Err(EngineError::Context(if why.is_empty() {
            format!("llama_model_quantize failed with code {rc}")
        } else {
            why
        }));
    }
    Ok(())
}
