//! The llama.cpp side of a quality pass: tokenize the bundled text, evaluate
//! it chunk by chunk and hand each scored position's logits to the caller.
//! The maths lives in `crate::quality`, which is pure and runs anywhere.

use super::llama::{Batch, Context, Model, Token};
use super::EngineError;
use crate::vocab::{ContextParams, FlashAttn};

/// Positions decoded per batch in the scored half of a chunk. llama.cpp
/// keeps an output row of n_vocab floats per position of a batch, so this
/// bounds that buffer (64 × 262144 × 4 bytes = 64 MiB for a Gemma 3
/// vocabulary) however long the chunk is.
const SCORED_BATCH: usize = 64;

/// The first `n_chunks × chunk` tokens of the text, or an error saying how
/// many the text holds for this tokenizer.
pub fn tokens(model: &Model, chunk: u32, n_chunks: u32) -> Result<Vec<Token>, EngineError> {
    let mut t = model.tokenize(crate::quality::TEXT)?;
    let need = chunk as usize * n_chunks as usize;
    if t.len() < need {
        let max = t.len() / chunk as usize * chunk as usize;
        return Err(EngineError::Context(format!(
            "the quality text is {} tokens for this model, fewer than the {need} asked; use --quality-tokens {max} or less",
            t.len()
        )));
    }
    t.truncate(need);
    if let Some(bos) = model.bos() {
        // Every chunk starts from BOS, as llama-perplexity evaluates it.
        for c in t.chunks_mut(chunk as usize) {
            c[0] = bos;
        }
    }
    Ok(t)
}

/// Scored positions per chunk: the second half, each predicting the next token.
pub fn scored_per_chunk(chunk: u32) -> u32 {
    chunk - 1 - chunk / 2
}

/// The context a quality pass evaluates each chunk in.
pub fn chunk_context(n_threads: u32, chunk: u32) -> ContextParams {
    ContextParams {
        n_threads,
        n_batch: chunk,
        n_ubatch: chunk.min(512),
        flash_attn: FlashAttn::Auto,
        cache_type: "f16".into(),
        no_kv_offload: false,
    }
}

/// Evaluate `tokens` in chunks of `chunk` from an empty cache each. For every
/// position of a chunk's second half, `on_pos(logits, next_token)` gets the
/// logits that predict the next token; `on_chunk(done)` follows each chunk.
pub fn evaluate(
    model: &Model,
    n_threads: u32,
    tokens: &[Token],
    chunk: u32,
    mut on_pos: impl FnMut(&[f32], Token) -> Result<(), EngineError>,
    mut on_chunk: impl FnMut(u64),
) -> Result<(), EngineError> {
    let params = chunk_context(n_threads, chunk);
    let mut ctx = Context::new(model, &params, chunk, 1)?;
    let first = (chunk / 2) as usize;
    let mut batch = Batch::new(SCORED_BATCH, 1);
    for (ci, c) in tokens.chunks(chunk as usize).enumerate() {
        ctx.clear();
        let mut head = c[..first].to_vec();
        ctx.decode_one_seq(&mut head)?;
        let last = c.len() - 1;
        let mut start = first;
        while start < last {
            let end = (start + SCORED_BATCH).min(last);
            batch.clear();
            for (j, &tok) in c.iter().enumerate().take(end).skip(start) {
                batch.push(tok, j as i32, 0, true);
            }
            ctx.decode_batch(&mut batch)?;
            for j in start..end {
                let logits = ctx.logits((j - start) as i32);
                if logits.iter().any(|x| !x.is_finite()) {
                    return Err(EngineError::NonFinite);
                }
                on_pos(logits, c[j + 1])?;
            }
            start = end;
        }
        on_chunk(ci as u64 + 1);
    }
    Ok(())
}
