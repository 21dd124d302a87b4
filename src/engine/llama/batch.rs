//! A multi-sequence batch (`llama_batch_init`): the parallel test and the
//! quality pass fill one entry per (token, position, sequence) and decode it
//! through [`super::Context::decode_batch`].

use llama_cpp_sys_2 as sys;

use super::Token;

/// A batch of at most `capacity` entries, each in one sequence. Freed on
/// drop.
pub struct Batch {
    raw: sys::llama_batch,
    /// Entries llama.cpp allocated; `push` refuses to write past them.
    capacity: usize,
}

impl Batch {
    /// A batch of `capacity` entries for up to `n_seq` sequences.
    pub fn new(capacity: usize, n_seq: i32) -> Batch {
        // `push` writes one sequence id per entry and trusts `capacity`, so
        // both must be what llama.cpp really allocates: at least one id per
        // entry, and a count that survives the conversion to C's int.
        let capacity = capacity.min(i32::MAX as usize);
        // SAFETY: plain integers in; llama.cpp mallocs `capacity` tokens,
        // positions, logit flags and sequence-id arrays of `n_seq` ids each,
        // plus the null that ends the id arrays for `llama_batch_free`.
        let raw = unsafe { sys::llama_batch_init(capacity as i32, 0, n_seq.max(1)) };
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

    /// Add one entry: `token` at `pos` in sequence `seq`, with its logits
    /// kept when `logits`.
    pub fn push(&mut self, token: Token, pos: i32, seq: i32, logits: bool) {
        let i = self.raw.n_tokens as usize;
        assert!(i < self.capacity, "batch overflow");
        // SAFETY: `i < capacity` (just asserted), and llama_batch_init
        // allocated `capacity` entries in each array and at least one id in
        // entry `i`'s sequence-id array (`new` asks for n_seq >= 1). Only
        // this batch holds these pointers.
        unsafe {
            *self.raw.token.add(i) = token;
            *self.raw.pos.add(i) = pos;
            *self.raw.n_seq_id.add(i) = 1;
            *(*self.raw.seq_id.add(i)) = seq;
            *self.raw.logits.add(i) = logits as i8;
        }
        self.raw.n_tokens += 1;
    }

    /// The batch as llama_decode takes it (a struct of pointers into the
    /// arrays this batch owns, valid while it lives).
    pub(super) fn raw(&self) -> sys::llama_batch {
        self.raw
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        // SAFETY: `raw` came from llama_batch_init and its array pointers were
        // never replaced (only `n_tokens` changes), so llama_batch_free
        // releases exactly what was allocated, once.
        unsafe { sys::llama_batch_free(self.raw) }
    }
}
