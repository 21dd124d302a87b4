//! A loaded model: what its load asks of llama.cpp (devices, split, mmap,
//! offload or fit) and the read-only questions the rest of the engine asks
//! it (vocabulary, size, tokenizing).

use std::ffi::CString;
use std::path::Path;
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use super::fit::{fit, FitRequest};
use super::Token;
use crate::engine::{last_errors, load_allocated, start_load_report, EngineError};
use crate::vocab::{expert_tensors_of_layer, FitChoice, SplitMode, TensorOverride};

/// A loaded model. Freed on drop.
pub struct Model {
    /// From a successful `llama_model_load_from_file`; freed only in `Drop`.
    ptr: NonNull<sys::llama_model>,
}

/// What a model load asks of llama.cpp, with "auto" already decided.
pub struct LoadOptions<'a> {
    pub n_gpu_layers: u32,
    /// `None` leaves the choice to llama.cpp (its "auto" load mode,
    /// llama-bench's default), `Some(true)` maps the file, `Some(false)`
    /// reads it into memory.
    pub use_mmap: Option<bool>,
    pub split_mode: SplitMode,
    pub main_gpu: u32,
    /// Device names; `None` for every device llama.cpp sees.
    pub devices: Option<&'a [String]>,
    /// `Some`: let llama.cpp's fit choose the offload for this context,
    /// leaving the margin free on each device; `n_gpu_layers` is then ignored.
    pub fit: Option<FitRequest<'a>>,
    /// Keep the experts of the first N layers on the CPU (`--n-cpu-moe`).
    pub n_cpu_moe: u32,
    /// Tensor placement overrides (`-ot`), before the `n_cpu_moe` ones.
    pub overrides: &'a [TensorOverride],
}

/// A buffer type by name, as `llama-bench -ot` looks it up: among the
/// buffer types of the devices llama.cpp has ("CPU", "CUDA0", "Vulkan0").
/// An unknown name is the user's mistake, so the error lists the names.
fn resolve_buffer(name: &str) -> Result<sys::ggml_backend_buffer_type_t, EngineError> {
    let mut known = Vec::new();
    // SAFETY: the registry's device count and devices live for the process;
    // `ggml_backend_dev_buffer_type` returns a buffer type the device owns
    // (or null), and its name is a NUL-terminated string it owns.
    unsafe {
        for i in 0..sys::ggml_backend_dev_count() {
            let buft = sys::ggml_backend_dev_buffer_type(sys::ggml_backend_dev_get(i));
            if buft.is_null() {
                continue;
            }
            let n = std::ffi::CStr::from_ptr(sys::ggml_backend_buft_name(buft)).to_string_lossy();
            if n == name {
                return Ok(buft);
            }
            known.push(n.into_owned());
        }
    }
    Err(EngineError::Override(format!(
        "no buffer type named '{name}' for --override-tensor; this build has {} (see dyno hw)",
        known.join(", ")
    )))
}

/// The override array llama.cpp reads (null-pattern-terminated), with the
/// pattern strings it points into; both must outlive the load.
fn overrides(
    o: &LoadOptions<'_>,
) -> Result<(Vec<CString>, Vec<sys::llama_model_tensor_buft_override>), EngineError> {
    let mut patterns = Vec::new();
    let mut bufts = Vec::new();
    for ov in o.overrides {
        patterns.push(CString::new(ov.pattern.as_bytes()).map_err(|_| {
            EngineError::Override(format!("the pattern '{}' contains a NUL byte", ov.pattern))
        })?);
        bufts.push(resolve_buffer(&ov.buffer)?);
    }
    for layer in 0..o.n_cpu_moe {
        patterns.push(CString::new(expert_tensors_of_layer(layer)).expect("no NUL in the pattern"));
        // SAFETY: no arguments; the host buffer type lives for the process.
        bufts.push(unsafe { sys::ggml_backend_cpu_buffer_type() });
    }
    let mut list: Vec<sys::llama_model_tensor_buft_override> = patterns
        .iter()
        .zip(bufts)
        .map(|(p, buft)| sys::llama_model_tensor_buft_override {
            pattern: p.as_ptr(),
            buft,
        })
        .collect();
    list.push(sys::llama_model_tensor_buft_override {
        pattern: std::ptr::null(),
        buft: std::ptr::null_mut(),
    });
    Ok((patterns, list))
}

/// The first `--override-tensor` pattern that is not a regular expression,
/// in words. llama.cpp compiles the patterns only as it creates tensors and
/// then fails the whole load with the compiler's bare message, so after a
/// load that failed before any weight buffer was allocated each pattern is
/// checked here, to name the one at fault. The check uses Rust's syntax;
/// the forms ECMAScript takes and Rust does not (look-around,
/// back-references) are let through, so a pattern llama.cpp accepts is not
/// blamed for another failure.
fn bad_pattern(overrides: &[TensorOverride]) -> Option<String> {
    use regex_syntax::ast::ErrorKind;
    overrides.iter().find_map(|ov| {
        regex_syntax::Parser::new()
            .parse(&ov.pattern)
            .err()
            .filter(|e| {
                !matches!(e, regex_syntax::Error::Parse(p)
                    if matches!(p.kind(), ErrorKind::UnsupportedLookAround | ErrorKind::UnsupportedBackreference))
            })
            .map(|e| {
                let first = e.to_string().lines().last().unwrap_or("").trim().to_string();
                format!(
                    "'{}' in --override-tensor is not a regular expression ({first}); \
                     write PATTERN=BUFFER with an ECMAScript pattern, e.g. 'blk\\.[0-9]+\\.ffn_.*_exps=CPU'",
                    ov.pattern
                )
            })
    })
}

/// Look devices up by name, as `llama-bench -dev` does. An unknown name is
/// the user's mistake, so the error lists the names that exist.
fn resolve_devices(names: &[String]) -> Result<Vec<sys::ggml_backend_dev_t>, EngineError> {
    names
        .iter()
        .map(|n| {
            let c = CString::new(n.as_bytes())
                .map_err(|_| EngineError::Device(format!("bad device name '{n}'")))?;
            // SAFETY: `c` is NUL-terminated and outlives the call, which only
            // reads it; the result is a device the registry owns for the
            // process's lifetime, or null.
            let dev = unsafe { sys::ggml_backend_dev_by_name(c.as_ptr()) };
            if dev.is_null() {
                let known: Vec<String> = super::devices().into_iter().map(|d| d.name).collect();
                Err(EngineError::Device(format!(
                    "no backend device named '{n}'; this build sees {} (see dyno hw)",
                    known.join(", ")
                )))
            } else {
                Ok(dev)
            }
        })
        .collect()
}

impl Model {
    /// Load a model. Returns it with what llama.cpp's fit chose, when asked
    /// to fit.
    pub fn load(
        path: &Path,
        o: &LoadOptions<'_>,
    ) -> Result<(Model, Option<FitChoice>), EngineError> {
        let c_path = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| EngineError::Load("the path contains a NUL byte".into()))?;
        // llama.cpp reads `devices` as a null-terminated array; it must live
        // until the load returns. An empty list means "no GPU at all".
        let mut devs = match o.devices {
            Some(names) => resolve_devices(names)?,
            None => Vec::new(),
        };
        devs.push(std::ptr::null_mut());
        // SAFETY: no arguments; returns plain data whose pointers are null.
        let mut p = unsafe { sys::llama_model_default_params() };
        if o.devices.is_some() {
            p.devices = devs.as_mut_ptr();
        }
        p.split_mode = match o.split_mode {
            SplitMode::None => sys::LLAMA_SPLIT_MODE_NONE,
            SplitMode::Layer => sys::LLAMA_SPLIT_MODE_LAYER,
            SplitMode::Row => sys::LLAMA_SPLIT_MODE_ROW,
        };
        p.main_gpu = o.main_gpu.min(i32::MAX as u32) as i32;
        p.load_mode = match o.use_mmap {
            None => sys::LLAMA_LOAD_MODE_AUTO,
            Some(true) => sys::LLAMA_LOAD_MODE_MMAP,
            Some(false) => sys::LLAMA_LOAD_MODE_NONE,
        };
        // Buffers the fit writes into; they must outlive the load too.
        let mut split: Vec<f32> = Vec::new();
        let mut fit_overrides: Vec<sys::llama_model_tensor_buft_override> = Vec::new();
        // The user's overrides, and the patterns they point into.
        let (_patterns, user_overrides) = overrides(o)?;
        let fit = match &o.fit {
            Some(f) => Some(fit(&c_path, &mut p, f, &mut split, &mut fit_overrides)?),
            None => {
                p.n_gpu_layers = o.n_gpu_layers.min(i32::MAX as u32) as i32;
                if user_overrides.len() > 1 {
                    p.tensor_buft_overrides = user_overrides.as_ptr();
                }
                None
            }
        };
        // Only the real load's report counts, not anything the fit logged.
        start_load_report();
        // SAFETY: `c_path` is NUL-terminated. Every pointer in `p` is null or
        // points into a local of this function that is alive and unchanged
        // until the call returns: `devs` (null-terminated), `split` and
        // `fit_overrides` as the fit sized them (null-pattern-terminated),
        // or `user_overrides` (null-pattern-terminated) and `_patterns`, the
        // strings its entries point into.
        // llama.cpp reads them only during the load and copies what it keeps.
        let ptr = unsafe { sys::llama_model_load_from_file(c_path.as_ptr(), p) };
        let model = NonNull::new(ptr).map(|ptr| Model { ptr }).ok_or_else(|| {
            let why = last_errors();
            // Patterns are compiled while tensors are created, before any
            // weight buffer: a later failure is never theirs.
            let bad = (!why.contains("unknown model architecture") && !load_allocated())
                .then(|| bad_pattern(o.overrides))
                .flatten();
            if let Some(bad) = bad {
                EngineError::Override(format!(
                    "{bad}; llama.cpp said: {}",
                    if why.is_empty() { "nothing" } else { &why }
                ))
            } else if why.contains("unknown model architecture") {
                EngineError::UnsupportedArch(why)
            } else {
                EngineError::Load(if why.is_empty() {
                    "llama.cpp returned no model".into()
                } else {
                    why
                })
            }
        })?;
        Ok((model, fit))
    }

    /// Whether this llama.cpp build accepts `path`'s header: its
    /// architecture, hyperparameters and vocabulary, loaded vocab-only so no
    /// tensor is read. The synthesiser asks before it writes gigabytes of
    /// weights under a header that a load would refuse.
    pub fn check_header(path: &Path) -> Result<(), EngineError> {
        let c_path = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| EngineError::Load("the path contains a NUL byte".into()))?;
        // SAFETY: no arguments; returns plain data whose pointers are null.
        let mut p = unsafe { sys::llama_model_default_params() };
        p.vocab_only = true;
        p.n_gpu_layers = 0;
        let _ = last_errors();
        // SAFETY: `c_path` is NUL-terminated and every pointer in `p` is
        // null, as the defaults leave them.
        let ptr = unsafe { sys::llama_model_load_from_file(c_path.as_ptr(), p) };
        match NonNull::new(ptr) {
            Some(ptr) => {
                drop(Model { ptr });
                Ok(())
            }
            None => {
                let why = last_errors();
                Err(if why.contains("unknown model architecture") {
                    EngineError::UnsupportedArch(why)
                } else if why.is_empty() {
                    EngineError::Load("llama.cpp returned no model".into())
                } else {
                    EngineError::Load(why)
                })
            }
        }
    }

    /// The model for llama.cpp calls that take one; valid while `self` is.
    pub(super) fn as_ptr(&self) -> *mut sys::llama_model {
        self.ptr.as_ptr()
    }

    /// The model's vocabulary, which the model owns: valid while `self` is.
    fn vocab(&self) -> *const sys::llama_vocab {
        // SAFETY: the model is alive for &self (freed only in Drop).
        unsafe { sys::llama_model_get_vocab(self.ptr.as_ptr()) }
    }

    pub fn n_vocab(&self) -> i32 {
        // SAFETY: a vocabulary of a live model (see `vocab`), only read.
        unsafe { sys::llama_vocab_n_tokens(self.vocab()) }
    }

    /// The token a sequence starts with, as llama-bench picks it: BOS when
    /// the vocabulary adds one, otherwise `fallback`.
    pub fn first_token(&self, fallback: Token) -> Token {
        // SAFETY: two reads of a live model's vocabulary (see `vocab`).
        unsafe {
            if sys::llama_vocab_get_add_bos(self.vocab()) {
                sys::llama_vocab_bos(self.vocab())
            } else {
                fallback
            }
        }
    }

    pub fn desc(&self) -> String {
        let mut buf = [0u8; 256];
        // SAFETY: a live model; llama.cpp formats with snprintf into `buf`,
        // writing at most `buf.len()` bytes, NUL included.
        let n =
            unsafe { sys::llama_model_desc(self.ptr.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        // snprintf returns the length it wanted, which a long name exceeds.
        String::from_utf8_lossy(&buf[..n.clamp(0, buf.len() as i32 - 1) as usize]).into_owned()
    }

    pub fn size_bytes(&self) -> u64 {
        // SAFETY: a read of a live model (freed only in Drop).
        unsafe { sys::llama_model_size(self.ptr.as_ptr()) }
    }

    pub fn n_params(&self) -> u64 {
        // SAFETY: a read of a live model (freed only in Drop).
        unsafe { sys::llama_model_n_params(self.ptr.as_ptr()) }
    }

    pub fn n_layer(&self) -> u32 {
        // SAFETY: a read of a live model (freed only in Drop).
        unsafe { sys::llama_model_n_layer(self.ptr.as_ptr()).max(0) as u32 }
    }

    /// Tokenize `text` as llama-perplexity does: special tokens added (BOS
    /// when the vocabulary wants one), special strings in the text left as
    /// plain text.
    pub fn tokenize(&self, text: &str) -> Result<Vec<Token>, EngineError> {
        self.tokenize_with(text, true)
    }

    /// How many tokens `text` is as plain text: nothing added, as a server
    /// counts the text it generated (for a server that reports no counts).
    pub fn count_tokens(&self, text: &str) -> Result<usize, EngineError> {
        Ok(self.tokenize_with(text, false)?.len())
    }

    fn tokenize_with(&self, text: &str, add_special: bool) -> Result<Vec<Token>, EngineError> {
        let len = i32::try_from(text.len())
            .map_err(|_| EngineError::Context("text too long to tokenize".into()))?;
        // More tokens than bytes plus BOS/EOS cannot come out.
        let mut out: Vec<Token> = vec![0; text.len() + 2];
        let capacity = out.len().min(i32::MAX as usize) as i32;
        // SAFETY: a live model's vocabulary; llama.cpp reads `len` bytes of
        // `text` (no NUL needed) and writes at most `capacity` tokens, which
        // is no more than `out` holds.
        let n = unsafe {
            sys::llama_tokenize(
                self.vocab(),
                text.as_ptr().cast(),
                len,
                out.as_mut_ptr(),
                capacity,
                add_special,
                false,
            )
        };
        if n < 0 {
            return Err(EngineError::Context(format!(
                "tokenizing needs {} tokens, more than the buffer",
                -n
            )));
        }
        out.truncate(n as usize);
        Ok(out)
    }

    /// Whether sequences start with BOS, and which token that is.
    pub fn bos(&self) -> Option<Token> {
        // SAFETY: two reads of a live model's vocabulary (see `vocab`).
        unsafe {
            sys::llama_vocab_get_add_bos(self.vocab()).then(|| sys::llama_vocab_bos(self.vocab()))
        }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a successful load and is freed only
        // here, once. No context is left: each borrows the model ('m), so all
        // were dropped first.
        unsafe { sys::llama_model_free(self.ptr.as_ptr()) }
    }
}
