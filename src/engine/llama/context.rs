//! A context: where a model is decoded. Each test gets a fresh one with its
//! own CPU thread pool, made with the same parameters the fit sizes the
//! offload around. The timed loop calls these methods, so they are thin:
//! one llama.cpp call each, nothing allocated, nothing logged.

use std::marker::PhantomData;
use std::ptr::NonNull;

use llama_cpp_sys_2 as sys;

use super::{ggml_type_of, Batch, Model, Token};
use crate::engine::{last_errors, EngineError};
use crate::vocab::{ContextParams, FlashAttn};

/// A context with its own CPU threadpool, as llama-bench sets one up for each
/// test (default polling, normal priority). Dropped context first, then pool.
pub struct Context<'m> {
    /// From a successful `llama_init_from_model`; freed only in `Drop`.
    ptr: NonNull<sys::llama_context>,
    /// Attached to `ptr`; freed in `Drop` after it.
    pool: Option<NonNull<sys::ggml_threadpool>>,
    n_threads: i32,
    /// The model's vocabulary size: the length of each logits row.
    n_vocab: i32,
    _model: PhantomData<&'m Model>,
}

type PoolNew = unsafe extern "C" fn(*mut sys::ggml_threadpool_params) -> *mut sys::ggml_threadpool;
type PoolFree = unsafe extern "C" fn(*mut sys::ggml_threadpool);

/// ggml's thread pool functions. They live in the CPU backend, which is a
/// loaded module where backends are loadable (the registry hands them out,
/// as llama-bench gets them) and is registered the same way where it is
/// linked in. `None`: no CPU backend, so llama.cpp keeps its own threads.
fn pool_fns() -> Option<(PoolNew, PoolFree)> {
    // SAFETY: the name is a NUL-terminated literal; the result is a
    // registry-owned backend (alive for the process) or null.
    let reg = unsafe { sys::ggml_backend_reg_by_name(c"CPU".as_ptr()) };
    if reg.is_null() {
        return None;
    }
    // SAFETY: a live backend and NUL-terminated literals; each result is the
    // address of the named function or null.
    let (new, free) = unsafe {
        (
            sys::ggml_backend_reg_get_proc_address(reg, c"ggml_threadpool_new".as_ptr()),
            sys::ggml_backend_reg_get_proc_address(reg, c"ggml_threadpool_free".as_ptr()),
        )
    };
    if new.is_null() || free.is_null() {
        return None;
    }
    // SAFETY: both are non-null addresses of ggml's `ggml_threadpool_new`
    // and `ggml_threadpool_free`, whose C signatures `PoolNew` and
    // `PoolFree` state exactly; the module stays loaded for the process.
    Some(unsafe {
        (
            std::mem::transmute::<*mut std::ffi::c_void, PoolNew>(new),
            std::mem::transmute::<*mut std::ffi::c_void, PoolFree>(free),
        )
    })
}

/// llama.cpp's context parameters for a test: the same for the timed
/// context and for the fit that sizes the offload around it.
pub(super) fn context_params(
    p: &ContextParams,
    n_ctx: u32,
    n_seq: u32,
) -> Result<sys::llama_context_params, EngineError> {
    let cache = ggml_type_of(&p.cache_type)
        .ok_or_else(|| EngineError::Context(format!("unknown KV cache type '{}'", p.cache_type)))?;
    let n_threads = p.n_threads.min(i32::MAX as u32) as i32;
    // SAFETY: no arguments; returns plain data whose pointers (callbacks)
    // are null.
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
        Self::make(model, context_params(p, n_ctx, n_seq)?, n_ctx)
    }

    /// A context of one sequence whose graph evaluation calls `cb` with
    /// `data` (llama.cpp's eval callback), to read what a decode computed.
    /// Never for a timed test: a callback splits the graph where it looks.
    ///
    /// # Safety
    /// `cb` must be safe to call with `data` for as long as the context
    /// lives, from the thread that decodes; `data` must stay valid that long.
    pub(super) unsafe fn observed(
        model: &'m Model,
        p: &ContextParams,
        n_ctx: u32,
        cb: sys::ggml_backend_sched_eval_callback,
        data: *mut std::ffi::c_void,
    ) -> Result<Self, EngineError> {
        let mut c = context_params(p, n_ctx, 1)?;
        c.cb_eval = cb;
        c.cb_eval_user_data = data;
        Self::make(model, c, n_ctx)
    }

    fn make(
        model: &'m Model,
        c: sys::llama_context_params,
        n_ctx: u32,
    ) -> Result<Self, EngineError> {
        let n_threads = c.n_threads;
        // SAFETY: a live model and plain-data params whose callbacks are null
        // or, from `observed`, valid for the context's life (its caller's
        // contract). The context keeps a reference to the model; the 'm
        // borrow keeps the model alive until the context is dropped.
        let ptr = unsafe { sys::llama_init_from_model(model.as_ptr(), c) };
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
            n_vocab: model.n_vocab(),
            _model: PhantomData,
        };
        // SAFETY: returns plain data (the pool's settings).
        let mut tpp = unsafe { sys::ggml_threadpool_params_default(n_threads) };
        let pool = match pool_fns() {
            // SAFETY: `new` is ggml_threadpool_new (see `pool_fns`); it reads
            // `tpp`, a local alive for the call.
            Some((new, _)) => unsafe { new(&mut tpp) },
            None => std::ptr::null_mut(),
        };
        if let Some(pool) = NonNull::new(pool) {
            // SAFETY: a live context and pool. llama.cpp keeps the pool
            // pointer, so `Drop` frees the context before the pool.
            unsafe {
                sys::llama_attach_threadpool(ctx.ptr.as_ptr(), pool.as_ptr(), std::ptr::null_mut())
            };
            ctx.pool = Some(pool);
        }
        Ok(ctx)
    }

    /// Forget everything in the KV cache (llama-bench does this before each
    /// repetition).
    pub fn clear(&mut self) {
        // SAFETY: a live context, used by this thread alone (&mut self); its
        // memory module is owned by the context.
        unsafe {
            sys::llama_set_n_threads(self.ptr.as_ptr(), self.n_threads, self.n_threads);
            sys::llama_memory_clear(sys::llama_get_memory(self.ptr.as_ptr()), false);
        }
    }

    /// Decode `tokens` as one batch of sequence 0 at the next positions.
    pub fn decode_one_seq(&mut self, tokens: &mut [Token]) -> Result<(), EngineError> {
        // SAFETY: llama_batch_get_one makes a batch that points into
        // `tokens` without copying, and `tokens` stays borrowed until
        // llama_decode returns; llama.cpp rejects a count it cannot take with
        // an error code. A live context, this thread's alone (&mut self).
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
        // SAFETY: `batch` owns arrays holding its `n_tokens` entries (each
        // written by `push`) and stays borrowed for the call; llama.cpp
        // checks sequence ids and positions and answers bad ones with an
        // error code. A live context, this thread's alone (&mut self).
        let rc = unsafe { sys::llama_decode(self.ptr.as_ptr(), batch.raw()) };
        if rc != 0 {
            return Err(EngineError::Decode(rc));
        }
        Ok(())
    }

    pub fn synchronize(&mut self) {
        // SAFETY: a live context, this thread's alone (&mut self).
        unsafe { sys::llama_synchronize(self.ptr.as_ptr()) }
    }

    /// Logits of output row `i` of the last decode, or of the last row for
    /// -1; empty when llama.cpp has no such row.
    pub fn logits(&self, i: i32) -> &[f32] {
        // SAFETY: a live context. llama.cpp returns null for a row it does
        // not have, else a pointer to that row of its logits buffer, which
        // holds n_vocab floats per row (the model's vocabulary size, read
        // into `n_vocab` when the context was made). The buffer is
        // reallocated or rewritten only by a decode, a clear or a state
        // restore, which take &mut self and so cannot run while the slice
        // (which borrows self) lives. The row reordering llama.cpp may do on
        // this call happens before the first slice after a decode exists.
        unsafe {
            let p = sys::llama_get_logits_ith(self.ptr.as_ptr(), i);
            if p.is_null() {
                return &[];
            }
            std::slice::from_raw_parts(p, self.n_vocab as usize)
        }
    }

    /// Snapshot of sequence 0, to restore a prefilled depth without redoing it.
    pub fn save_seq0(&mut self) -> Vec<u8> {
        // SAFETY: a live context, this thread's alone (&mut self); llama.cpp
        // writes at most `n` bytes into `buf`, which holds `n`, and returns
        // how many it wrote.
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
        // SAFETY: a live context, this thread's alone (&mut self); llama.cpp
        // reads at most `state.len()` bytes of `state`, checking each read
        // against that length, and refuses (returns 0) a snapshot that does
        // not fit this context.
        unsafe {
            sys::llama_state_seq_set_data(self.ptr.as_ptr(), state.as_ptr(), state.len(), 0) != 0
        }
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // SAFETY: the context came from a successful llama_init_from_model
        // and is freed only here, once. The pool came from the `new` that
        // `pool_fns` pairs with this `free`, and is freed after the only
        // context that used it is gone.
        unsafe {
            sys::llama_free(self.ptr.as_ptr());
            if let (Some(pool), Some((_, free))) = (self.pool, pool_fns()) {
                free(pool.as_ptr());
            }
        }
    }
}
