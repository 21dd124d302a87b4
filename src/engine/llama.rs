//! Thin RAII wrappers over the llama.cpp C API.
//!
//! llama-cpp-2's safe `LlamaContext` hides the raw context pointer, and the
//! timed path needs calls it does not wrap (`llama_attach_threadpool`,
//! `llama_memory_clear`, sequence state), so the measurement loop talks to
//! llama-cpp-sys-2 directly, exactly as llama-bench talks to llama.h. These
//! wrappers keep the unsafe surface to this one file.

use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use super::{last_errors, EngineError};
use crate::worker::protocol::{ContextParams, Device, FitChoice, FlashAttn, SplitMode};

pub type Token = sys::llama_token;

/// A loaded model. Freed on drop.
pub struct Model {
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
}

/// The context the fit must leave room for: the largest test of the run.
pub struct FitRequest<'a> {
    pub margin_mib: u32,
    pub ctx: &'a ContextParams,
    pub n_ctx: u32,
    pub n_seq: u32,
}

/// Look devices up by name, as `llama-bench -dev` does. An unknown name is
/// the user's mistake, so the error lists the names that exist.
fn resolve_devices(names: &[String]) -> Result<Vec<sys::ggml_backend_dev_t>, EngineError> {
    names
        .iter()
        .map(|n| {
            let c = CString::new(n.as_bytes())
                .map_err(|_| EngineError::Device(format!("bad device name '{n}'")))?;
            // SAFETY: returns a registry-owned pointer or null.
            let dev = unsafe { sys::ggml_backend_dev_by_name(c.as_ptr()) };
            if dev.is_null() {
                let known: Vec<String> = devices().into_iter().map(|d| d.name).collect();
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
        // SAFETY: default params are plain data.
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
        let mut overrides: Vec<sys::llama_model_tensor_buft_override> = Vec::new();
        let fit = match &o.fit {
            Some(f) => Some(fit(&c_path, &mut p, f, &mut split, &mut overrides)?),
            None => {
                p.n_gpu_layers = o.n_gpu_layers.min(i32::MAX as u32) as i32;
                None
            }
        };
        // Only the real load's report counts, not anything the fit logged.
        super::start_load_report();
        // SAFETY: the path, device list and fit buffers outlive the call.
        let ptr = unsafe { sys::llama_model_load_from_file(c_path.as_ptr(), p) };
        let model = NonNull::new(ptr).map(|ptr| Model { ptr }).ok_or_else(|| {
            let why = last_errors();
            if why.contains("unknown model architecture") {
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

    fn vocab(&self) -> *const sys::llama_vocab {
        // SAFETY: the model is alive for &self.
        unsafe { sys::llama_model_get_vocab(self.ptr.as_ptr()) }
    }

    pub fn n_vocab(&self) -> i32 {
        unsafe { sys::llama_vocab_n_tokens(self.vocab()) }
    }

    /// The token a sequence starts with, as llama-bench picks it: BOS when
    /// the vocabulary adds one, otherwise `fallback`.
    pub fn first_token(&self, fallback: Token) -> Token {
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
        let n =
            unsafe { sys::llama_model_desc(self.ptr.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        String::from_utf8_lossy(&buf[..n.clamp(0, buf.len() as i32 - 1) as usize]).into_owned()
    }

    pub fn size_bytes(&self) -> u64 {
        unsafe { sys::llama_model_size(self.ptr.as_ptr()) }
    }

    pub fn n_params(&self) -> u64 {
        unsafe { sys::llama_model_n_params(self.ptr.as_ptr()) }
    }

    pub fn n_layer(&self) -> u32 {
        unsafe { sys::llama_model_n_layer(self.ptr.as_ptr()).max(0) as u32 }
    }

    /// Tokenize `text` as llama-perplexity does: special tokens added (BOS
    /// when the vocabulary wants one), special strings in the text left as
    /// plain text.
    pub fn tokenize(&self, text: &str) -> Result<Vec<Token>, EngineError> {
        let len = i32::try_from(text.len())
            .map_err(|_| EngineError::Context("text too long to tokenize".into()))?;
        // More tokens than bytes plus BOS/EOS cannot come out.
        let mut out: Vec<Token> = vec![0; text.len() + 2];
        // SAFETY: both buffers are valid for the lengths passed.
        let n = unsafe {
            sys::llama_tokenize(
                self.vocab(),
                text.as_ptr().cast(),
                len,
                out.as_mut_ptr(),
                out.len() as i32,
                true,
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
        unsafe {
            sys::llama_vocab_get_add_bos(self.vocab()).then(|| sys::llama_vocab_bos(self.vocab()))
        }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        unsafe { sys::llama_model_free(self.ptr.as_ptr()) }
    }
}

/// A context with its own CPU threadpool, as llama-bench sets one up for each
/// test (default polling, normal priority). Dropped context first, then pool.
pub struct Context<'m> {
    ptr: NonNull<sys::llama_context>,
    pool: Option<NonNull<sys::ggml_threadpool>>,
    n_threads: i32,
    _model: PhantomData<&'m Model>,
}

fn ggml_type_of(cache_type: &str) -> Option<sys::ggml_type> {
    Some(match cache_type.to_ascii_lowercase().as_str() {
        "f32" => sys::GGML_TYPE_F32,
        "f16" => sys::GGML_TYPE_F16,
        "bf16" => sys::GGML_TYPE_BF16,
        "q8_0" => sys::GGML_TYPE_Q8_0,
        "q4_0" => sys::GGML_TYPE_Q4_0,
        "q4_1" => sys::GGML_TYPE_Q4_1,
        "iq4_nl" => sys::GGML_TYPE_IQ4_NL,
        "q5_0" => sys::GGML_TYPE_Q5_0,
        "q5_1" => sys::GGML_TYPE_Q5_1,
        _ => return None,
    })
}

/// KV cache types llama.cpp accepts (the set llama-bench's `-ctk` takes).
pub fn is_cache_type(s: &str) -> bool {
    ggml_type_of(s).is_some()
}

type PoolNew = unsafe extern "C" fn(*mut sys::ggml_threadpool_params) -> *mut sys::ggml_threadpool;
type PoolFree = unsafe extern "C" fn(*mut sys::ggml_threadpool);

/// ggml's thread pool functions. They live in the CPU backend: linked in
/// by default, but a loaded module in a `dynamic-backends` build, where the
/// backend registry hands them out (as llama-bench gets them). `None`: no
/// CPU backend, so llama.cpp keeps its own threads.
#[cfg(not(feature = "dynamic-backends"))]
fn pool_fns() -> Option<(PoolNew, PoolFree)> {
    Some((sys::ggml_threadpool_new, sys::ggml_threadpool_free))
}

#[cfg(feature = "dynamic-backends")]
fn pool_fns() -> Option<(PoolNew, PoolFree)> {
    // SAFETY: the registry returns the addresses of these two functions,
    // whose C signatures the types above state, or null.
    unsafe {
        let reg = sys::ggml_backend_reg_by_name(c"CPU".as_ptr());
        if reg.is_null() {
            return None;
        }
        let new = sys::ggml_backend_reg_get_proc_address(reg, c"ggml_threadpool_new".as_ptr());
        let free = sys::ggml_backend_reg_get_proc_address(reg, c"ggml_threadpool_free".as_ptr());
        if new.is_null() || free.is_null() {
            return None;
        }
        Some((
            std::mem::transmute::<*mut std::ffi::c_void, PoolNew>(new),
            std::mem::transmute::<*mut std::ffi::c_void, PoolFree>(free),
        ))
    }
}

/// llama.cpp's context parameters for a test: the same for the timed
/// context and for the fit that sizes the offload around it.
fn context_params(
    p: &ContextParams,
    n_ctx: u32,
    n_seq: u32,
) -> Result<sys::llama_context_params, EngineError> {
    let cache = ggml_type_of(&p.cache_type)
        .ok_or_else(|| EngineError::Context(format!("unknown KV cache type '{}'", p.cache_type)))?;
    let n_threads = p.n_threads.min(i32::MAX as u32) as i32;
    // SAFETY: default params are plain data.
    let mut c = unsafe { sys::llama_context_default_params() };
    c.n_ctx = n_ctx;
    c.n_batch = p.n_batch;
    c.n_ubatch = p.n_ubatch;
    c.n_seq_max = n_seq.max(1);
    // llama.cpp reserves one output per sequence when it makes the context
    // and asserts that this fits in `n_outputs_max`, which defaults to
    // n_batch: more parallel sequences than -b would abort. Raise it only
    // then, so every other context is made exactly as before.
    if c.n_seq_max > p.n_batch {
        c.n_outputs_max = c.n_seq_max;
    }
    c.n_threads = n_threads;
    c.n_threads_batch = n_threads;
    c.type_k = cache;
    c.type_v = cache;
    c.flash_attn_type = match p.flash_attn {
        FlashAttn::Auto => sys::LLAMA_FLASH_ATTN_TYPE_AUTO,
        FlashAttn::On => sys::LLAMA_FLASH_ATTN_TYPE_ENABLED,
        FlashAttn::Off => sys::LLAMA_FLASH_ATTN_TYPE_DISABLED,
    };
    c.offload_kqv = !p.no_kv_offload;
    c.swa_full = false;
    Ok(c)
}

impl<'m> Context<'m> {
    pub fn new(
        model: &'m Model,
        p: &ContextParams,
        n_ctx: u32,
        n_seq: u32,
    ) -> Result<Self, EngineError> {
        let c = context_params(p, n_ctx, n_seq)?;
        let n_threads = c.n_threads;
        // SAFETY: plain data in, pointer out; the model outlives the context
        // through the 'm borrow.
        let ptr = unsafe { sys::llama_init_from_model(model.ptr.as_ptr(), c) };
        let ptr = NonNull::new(ptr).ok_or_else(|| {
            EngineError::Context(format!(
                "llama.cpp could not create a context of {n_ctx} tokens: {}",
                last_errors()
            ))
        })?;
        let mut ctx = Context {
            ptr,
            pool: None,
            n_threads,
            _model: PhantomData,
        };
        // SAFETY: the pool is freed in Drop after the context that uses it.
        unsafe {
            let mut tpp = sys::ggml_threadpool_params_default(n_threads);
            let pool = match pool_fns() {
                Some((new, _)) => new(&mut tpp),
                None => std::ptr::null_mut(),
            };
            if let Some(pool) = NonNull::new(pool) {
                sys::llama_attach_threadpool(ctx.ptr.as_ptr(), pool.as_ptr(), std::ptr::null_mut());
                ctx.pool = Some(pool);
            }
        }
        Ok(ctx)
    }

    /// Forget everything in the KV cache (llama-bench does this before each
    /// repetition).
    pub fn clear(&mut self) {
        unsafe {
            sys::llama_set_n_threads(self.ptr.as_ptr(), self.n_threads, self.n_threads);
            sys::llama_memory_clear(sys::llama_get_memory(self.ptr.as_ptr()), false);
        }
    }

    /// Decode `tokens` as one batch of sequence 0 at the next positions.
    pub fn decode_one_seq(&mut self, tokens: &mut [Token]) -> Result<(), EngineError> {
        let rc = unsafe {
            let batch = sys::llama_batch_get_one(tokens.as_mut_ptr(), tokens.len() as i32);
            sys::llama_decode(self.ptr.as_ptr(), batch)
        };
        if rc != 0 {
            return Err(EngineError::Decode(rc));
        }
        Ok(())
    }

    /// Decode a batch of (token, position, sequence, wants_logits) entries.
    pub fn decode_batch(&mut self, batch: &mut Batch) -> Result<(), EngineError> {
        let rc = unsafe { sys::llama_decode(self.ptr.as_ptr(), batch.raw) };
        if rc != 0 {
            return Err(EngineError::Decode(rc));
        }
        Ok(())
    }

    pub fn synchronize(&mut self) {
        unsafe { sys::llama_synchronize(self.ptr.as_ptr()) }
    }

    /// Logits of output row `i` of the last decode, or of the last row for -1.
    pub fn logits(&self, i: i32, n_vocab: i32) -> &[f32] {
        unsafe {
            let p = sys::llama_get_logits_ith(self.ptr.as_ptr(), i);
            if p.is_null() {
                return &[];
            }
            std::slice::from_raw_parts(p, n_vocab as usize)
        }
    }

    /// Snapshot of sequence 0, to restore a prefilled depth without redoing it.
    pub fn save_seq0(&mut self) -> Vec<u8> {
        unsafe {
            let n = sys::llama_state_seq_get_size(self.ptr.as_ptr(), 0);
            let mut buf = vec![0u8; n];
            let written = sys::llama_state_seq_get_data(self.ptr.as_ptr(), buf.as_mut_ptr(), n, 0);
            buf.truncate(written);
            buf
        }
    }

    /// Restore a snapshot from [`save_seq0`]; false when llama.cpp refused it.
    pub fn restore_seq0(&mut self, state: &[u8]) -> bool {
        unsafe {
            sys::llama_state_seq_set_data(self.ptr.as_ptr(), state.as_ptr(), state.len(), 0) != 0
        }
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        unsafe {
            sys::llama_free(self.ptr.as_ptr());
            if let (Some(pool), Some((_, free))) = (self.pool, pool_fns()) {
                free(pool.as_ptr());
            }
        }
    }
}

/// A multi-sequence batch (llama_batch_init), freed on drop.
pub struct Batch {
    raw: sys::llama_batch,
    capacity: usize,
}

impl Batch {
    pub fn new(capacity: usize, n_seq: i32) -> Batch {
        let raw = unsafe { sys::llama_batch_init(capacity as i32, 0, n_seq) };
        Batch { raw, capacity }
    }

    pub fn clear(&mut self) {
        self.raw.n_tokens = 0;
    }

    pub fn len(&self) -> usize {
        self.raw.n_tokens as usize
    }

    pub fn is_empty(&self) -> bool {
        self.raw.n_tokens == 0
    }

    pub fn push(&mut self, token: Token, pos: i32, seq: i32, logits: bool) {
        let i = self.raw.n_tokens as usize;
        assert!(i < self.capacity, "batch overflow");
        // SAFETY: llama_batch_init allocated `capacity` entries and one
        // sequence slot per entry.
        unsafe {
            *self.raw.token.add(i) = token;
            *self.raw.pos.add(i) = pos;
            *self.raw.n_seq_id.add(i) = 1;
            *(*self.raw.seq_id.add(i)) = seq;
            *self.raw.logits.add(i) = logits as i8;
        }
        self.raw.n_tokens += 1;
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        unsafe { sys::llama_batch_free(self.raw) }
    }
}

/// Run llama.cpp's fit (the code behind `llama-bench -fitt`) on `p` for
/// the context in `f`: it sets the layers to offload, the split across
/// devices and any tensors kept in host memory, writing into `split` and
/// `overrides`, which `p` then points at.
fn fit(
    path: &CStr,
    p: &mut sys::llama_model_params,
    f: &FitRequest<'_>,
    split: &mut Vec<f32>,
    overrides: &mut Vec<sys::llama_model_tensor_buft_override>,
) -> Result<FitChoice, EngineError> {
    // SAFETY: plain queries of compile-time limits.
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
    // SAFETY: every buffer has the length llama.cpp documents (max devices,
    // max overrides + 1) and outlives the call.
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
        // SAFETY: fit's patterns are static NUL-terminated strings.
        .map(|o| {
            unsafe { CStr::from_ptr(o.pattern) }
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let used = split.iter().rposition(|&v| v > 0.0).map_or(0, |i| i + 1);
    Ok(FitChoice {
        margin_mib: f.margin_mib,
        n_gpu_layers: p.n_gpu_layers,
        tensor_split: split[..used].to_vec(),
        overrides: patterns,
    })
}

/// llama.cpp's backend devices, as `llama-bench --list-devices` shows them.
pub fn devices() -> Vec<Device> {
    let mut out = Vec::new();
    unsafe {
        for i in 0..sys::ggml_backend_dev_count() {
            let dev = sys::ggml_backend_dev_get(i);
            if dev.is_null() {
                continue;
            }
            let s = |p: *const std::os::raw::c_char| {
                if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            let kind = match sys::ggml_backend_dev_type(dev) {
                sys::GGML_BACKEND_DEVICE_TYPE_CPU => "cpu",
                sys::GGML_BACKEND_DEVICE_TYPE_GPU => "gpu",
                sys::GGML_BACKEND_DEVICE_TYPE_IGPU => "igpu",
                _ => "accel",
            };
            let (mut free, mut total) = (0usize, 0usize);
            sys::ggml_backend_dev_memory(dev, &mut free, &mut total);
            out.push(Device {
                name: s(sys::ggml_backend_dev_name(dev)),
                description: s(sys::ggml_backend_dev_description(dev)),
                kind: kind.to_string(),
                memory_total_bytes: total as u64,
                memory_free_bytes: free as u64,
            });
        }
    }
    out
}

pub fn supports_gpu_offload() -> bool {
    unsafe { sys::llama_supports_gpu_offload() }
}

pub fn system_info() -> String {
    unsafe {
        CStr::from_ptr(sys::llama_print_system_info())
            .to_string_lossy()
            .trim()
            .to_string()
    }
}

pub fn ggml_version() -> String {
    unsafe {
        format!(
            "ggml {} ({})",
            CStr::from_ptr(sys::ggml_version()).to_string_lossy(),
            CStr::from_ptr(sys::ggml_commit()).to_string_lossy()
        )
    }
}

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
    // SAFETY: default params are plain data with null pointers for the
    // optional tables; the paths outlive the call.
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
