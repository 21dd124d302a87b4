//! The timed tests, following llama-bench's method.
//!
//! - pp N: KV cache cleared, then N tokens (BOS first when the vocabulary
//!   adds one, then random ids) decoded in chunks of `n_batch`, with one
//!   synchronize at the end.
//! - tg N: one token per decode, synchronize after each.
//! - The clock starts after the cache clear and any depth prefill and stops
//!   after the last synchronize. Model loading and context creation are
//!   outside it.
//! - Warm-up: one untimed pp of the test's prompt length and one decoded
//!   token, then the repetitions.
//!
//! Dyno adds the `PromptGen` split (prefill and decode timed apart, plus time
//! to first token) and `Parallel` decode (several sequences per batch).

use std::time::Instant;

use super::llama::{Batch, Context, Model, Token};
use super::EngineError;
use crate::vocab::{Job, Sample, TestKind, TestSpec};

/// xorshift64*: a tiny deterministic generator for token ids. The ids only
/// need to be valid and not repeat trivially; their values do not change the
/// work a dense model does.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn token(&mut self, n_vocab: i32) -> Token {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n_vocab.max(1) as u64) as Token
    }
}

/// Prefill `n` tokens of sequence 0 in chunks of `n_batch`, then synchronize.
fn prompt(
    ctx: &mut Context,
    model: &Model,
    n: u32,
    n_batch: u32,
    rng: &mut Rng,
) -> Result<(), EngineError> {
    let n_vocab = model.n_vocab();
    let mut tokens: Vec<Token> = vec![0; n_batch.max(1) as usize];
    let mut done = 0u32;
    while done < n {
        let k = (n - done).min(n_batch.max(1)) as usize;
        tokens[0] = if done == 0 {
            model.first_token(rng.token(n_vocab))
        } else {
            rng.token(n_vocab)
        };
        for t in tokens.iter_mut().take(k).skip(1) {
            *t = rng.token(n_vocab);
        }
        ctx.decode_one_seq(&mut tokens[..k])?;
        done += k as u32;
    }
    ctx.synchronize();
    Ok(())
}

/// Decode `n` single tokens of sequence 0, synchronizing after each.
fn gen(
    ctx: &mut Context,
    model: &Model,
    n: u32,
    first: Option<Token>,
    rng: &mut Rng,
) -> Result<(), EngineError> {
    let n_vocab = model.n_vocab();
    let mut token = first.unwrap_or_else(|| model.first_token(rng.token(n_vocab)));
    for _ in 0..n {
        ctx.decode_one_seq(std::slice::from_mut(&mut token))?;
        ctx.synchronize();
        token = rng.token(n_vocab);
    }
    Ok(())
}

fn argmax(logits: &[f32]) -> Option<Token> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &x) in logits.iter().enumerate() {
        if !x.is_finite() {
            return None;
        }
        if best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    best.map(|(i, _)| i as Token)
}

/// Refuse to time a model whose output is garbage: corrupt weights (or a
/// broken kernel) give NaN or infinite logits, and a speed measured on them
/// means nothing. Checked outside the timed region.
fn check_logits(ctx: &Context) -> Result<(), EngineError> {
    let logits = ctx.logits(-1);
    if logits.is_empty() || logits.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(EngineError::NonFinite)
    }
}

fn elapsed_ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

/// State of a prefilled depth, reused across repetitions as llama-bench does
/// so a deep test does not redo the same prefill five times.
#[derive(Default)]
pub struct DepthCache {
    depth: u32,
    state: Vec<u8>,
}

/// How many timed repetitions a job gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reps {
    /// A fixed count, as llama-bench's `-r`.
    Count(u32),
    /// Back to back until this much time has passed since the timing began
    /// (`--sustain`): the repetition under way when it runs out finishes.
    For(std::time::Duration),
}

/// Run one job: create its context, warm up, then its timed repetitions,
/// calling `on_timed` when the warm-up is over and handing each sample to
/// `on_sample` as soon as it exists.
#[allow(clippy::too_many_arguments)]
pub fn run_job(
    model: &Model,
    job: &Job,
    reps: Reps,
    warmup: bool,
    cache: &mut DepthCache,
    rng: &mut Rng,
    on_timed: impl FnOnce(),
    mut on_sample: impl FnMut(u32, Sample),
) -> Result<(), EngineError> {
    let t = &job.test;
    let n_seq = if t.kind == TestKind::Parallel {
        t.n_parallel.max(1)
    } else {
        1
    };
    let n_ctx = t.llama_n_ctx().map_err(EngineError::Context)?;
    let mut ctx = Context::new(model, &job.ctx, n_ctx, n_seq)?;
    let n_batch = job.ctx.n_batch;
    ctx.clear();

    if warmup {
        warm_up(&mut ctx, model, t, n_batch, rng)?;
    }

    on_timed();
    let started = Instant::now();
    let more = |rep: u32| match reps {
        Reps::Count(n) => rep < n,
        Reps::For(d) => rep < u32::MAX && started.elapsed() < d,
    };
    let mut rep = 0;
    while more(rep) {
        ctx.clear();
        if t.n_depth > 0 {
            fill_depth(&mut ctx, model, t.n_depth, n_batch, cache, rng)?;
        }
        let sample = timed_sample(&mut ctx, model, t, n_seq, n_batch, rng)?;
        if rep == 0 && !warmup {
            // No warm-up looked at the output: check it once here, before
            // the first figure is reported.
            check_logits(&ctx)?;
        }
        on_sample(rep, sample);
        rep += 1;
    }
    Ok(())
}

/// One untimed pp of the test's prompt length and one decoded token, then a
/// look at the output (see [`check_logits`]).
fn warm_up(
    ctx: &mut Context,
    model: &Model,
    t: &TestSpec,
    n_batch: u32,
    rng: &mut Rng,
) -> Result<(), EngineError> {
    if t.n_prompt > 0 {
        prompt(ctx, model, t.n_prompt, n_batch, rng)?;
    }
    if t.n_gen > 0 {
        gen(ctx, model, 1, None, rng)?;
    }
    check_logits(ctx)
}

/// Bring sequence 0 to `depth` tokens before the clock starts: restored
/// from `cache` when it holds that depth, else prefilled and saved there.
fn fill_depth(
    ctx: &mut Context,
    model: &Model,
    depth: u32,
    n_batch: u32,
    cache: &mut DepthCache,
    rng: &mut Rng,
) -> Result<(), EngineError> {
    let cached = cache.depth == depth && !cache.state.is_empty() && ctx.restore_seq0(&cache.state);
    if !cached {
        prompt(ctx, model, depth, n_batch, rng)?;
        cache.depth = depth;
        cache.state = ctx.save_seq0();
    }
    Ok(())
}

/// One timed repetition of the test, from a cache already cleared (and
/// filled to the test's depth). Only llama.cpp's work (and, for TTFT, the
/// greedy pick of the first token) lies between a clock's start and stop:
/// keep allocation, logging and checks out of them, or the figures stop
/// agreeing with llama-bench's.
fn timed_sample(
    ctx: &mut Context,
    model: &Model,
    t: &TestSpec,
    n_seq: u32,
    n_batch: u32,
    rng: &mut Rng,
) -> Result<Sample, EngineError> {
    Ok(match t.kind {
        TestKind::Prompt => {
            let t0 = Instant::now();
            prompt(ctx, model, t.n_prompt, n_batch, rng)?;
            let ns = elapsed_ns(t0);
            Sample {
                total_ns: ns,
                prompt_ns: Some(ns),
                gen_ns: None,
                ttft_ns: None,
            }
        }
        TestKind::Gen => {
            let t0 = Instant::now();
            gen(ctx, model, t.n_gen, None, rng)?;
            let ns = elapsed_ns(t0);
            Sample {
                total_ns: ns,
                prompt_ns: None,
                gen_ns: Some(ns),
                ttft_ns: None,
            }
        }
        TestKind::PromptGen => {
            let t0 = Instant::now();
            prompt(ctx, model, t.n_prompt, n_batch, rng)?;
            let prompt_ns = elapsed_ns(t0);
            // The first token comes from the prefill's logits: sampling it
            // (greedy here) ends the time to first token.
            let first = argmax(ctx.logits(-1));
            let ttft_ns = elapsed_ns(t0);
            let first = first.ok_or(EngineError::NonFinite)?;
            let t1 = Instant::now();
            gen(ctx, model, t.n_gen, Some(first), rng)?;
            let gen_ns = elapsed_ns(t1);
            Sample {
                total_ns: elapsed_ns(t0),
                prompt_ns: Some(prompt_ns),
                gen_ns: Some(gen_ns),
                ttft_ns: Some(ttft_ns),
            }
        }
        TestKind::Parallel => parallel(ctx, model, t.n_prompt, t.n_gen, n_seq, n_batch, rng)?,
    })
}

/// `n_seq` sequences: prefill `n_prompt` tokens each (all sequences in one
/// logical batch, split into chunks of `n_batch`), then `n_gen` steps that
/// each decode one token per sequence, as llama-batched-bench does. A step
/// is split into chunks of `n_batch` too: with more sequences than that,
/// one llama_decode would fail llama.cpp's `n_tokens_all <= n_batch` assert
/// and abort the worker.
fn parallel(
    ctx: &mut Context,
    model: &Model,
    n_prompt: u32,
    n_gen: u32,
    n_seq: u32,
    n_batch: u32,
    rng: &mut Rng,
) -> Result<Sample, EngineError> {
    let n_vocab = model.n_vocab();
    let n_batch = n_batch.max(1) as usize;
    let mut batch = Batch::new(n_batch, n_seq as i32);
    let t0 = Instant::now();
    let mut prompt_ns = None;
    if n_prompt > 0 {
        for s in 0..n_seq {
            for p in 0..n_prompt {
                let tok = if p == 0 {
                    model.first_token(rng.token(n_vocab))
                } else {
                    rng.token(n_vocab)
                };
                push_chunked(
                    ctx,
                    &mut batch,
                    n_batch,
                    tok,
                    p as i32,
                    s as i32,
                    p == n_prompt - 1,
                )?;
            }
        }
        flush(ctx, &mut batch)?;
        ctx.synchronize();
        prompt_ns = Some(elapsed_ns(t0));
    }
    let t1 = Instant::now();
    for step in 0..n_gen {
        let pos = (n_prompt + step) as i32;
        for s in 0..n_seq {
            let tok = if pos == 0 {
                model.first_token(rng.token(n_vocab))
            } else {
                rng.token(n_vocab)
            };
            push_chunked(ctx, &mut batch, n_batch, tok, pos, s as i32, true)?;
        }
        flush(ctx, &mut batch)?;
        ctx.synchronize();
    }
    let gen_ns = elapsed_ns(t1);
    Ok(Sample {
        total_ns: elapsed_ns(t0),
        prompt_ns,
        gen_ns: Some(gen_ns),
        ttft_ns: None,
    })
}

/// Add one token to `batch`, decoding what it holds first when it already
/// has `n_batch` tokens, so no llama_decode gets more than `n_batch`.
#[allow(clippy::too_many_arguments)]
fn push_chunked(
    ctx: &mut Context,
    batch: &mut Batch,
    n_batch: usize,
    tok: Token,
    pos: i32,
    seq: i32,
    logits: bool,
) -> Result<(), EngineError> {
    if batch.len() >= n_batch {
        flush(ctx, batch)?;
    }
    batch.push(tok, pos, seq, logits);
    Ok(())
}

/// Decode what `batch` holds, if anything, and empty it.
fn flush(ctx: &mut Context, batch: &mut Batch) -> Result<(), EngineError> {
    if !batch.is_empty() {
        ctx.decode_batch(batch)?;
        batch.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_stays_in_vocab_and_varies() {
        let mut r = Rng::new(7);
        let ids: Vec<Token> = (0..1000).map(|_| r.token(49152)).collect();
        assert!(ids.iter().all(|&t| (0..49152).contains(&t)));
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert!(distinct.len() > 900);
    }

    #[test]
    fn argmax_refuses_non_finite_logits() {
        assert_eq!(argmax(&[0.1, 3.0, -1.0]), Some(1));
        assert_eq!(argmax(&[0.1, f32::NAN]), None);
    }
}
