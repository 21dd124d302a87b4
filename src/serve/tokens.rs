//! Token counts from the model's own tokenizer, for servers that report
//! none (no `usage`, no native timings). Counting content chunks instead
//! undercounts whenever a chunk holds more than one token, and gives no
//! prompt count at all, so with the GGUF the server runs at hand Dyno
//! counts the text itself.
//!
//! llama.cpp runs only in a worker process, so the count is a short worker
//! task: the model is memory-mapped on the CPU and only its vocabulary is
//! read. The prompt is counted as sent, so through `/v1/chat/completions`
//! the chat template's tokens are missing from it; the figure says so by
//! its source.

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::error::{DynoError, Result};
use crate::worker::client::{self, Cancel, WorkerOptions};
use crate::worker::protocol::{Event, TokenizePlan, WorkerRequest};

/// The token count of each of `texts` with `model`'s tokenizer, in order.
pub async fn count(model: &Path, texts: Vec<String>, cancel: &Cancel) -> Result<Vec<u64>> {
    let want = texts.len();
    let opts = WorkerOptions::current(Duration::from_secs(120))
        .map_err(|e| DynoError::io("cannot find Dyno's executable to start a worker", e))?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let plan = WorkerRequest::Tokenize(TokenizePlan {
        model_path: model.to_path_buf(),
        texts,
    });
    let handle = tokio::spawn(client::run(plan, opts, cancel.clone(), tx));
    let mut counts = None;
    while let Some(ev) = rx.recv().await {
        if let Event::Tokens { counts: c } = ev {
            counts = Some(c);
        }
    }
    let ended = handle
        .await
        .map_err(|e| DynoError::Internal(format!("the tokenizer task failed: {e}")))?;
    let failed = |why: String| {
        DynoError::BadInput(format!(
            "could not count tokens with {}: {why}",
            model.display()
        ))
    };
    if let Some(f) = ended.failure("tokenizer") {
        return Err(failed(f.message));
    }
    match counts {
        Some(c) if c.len() == want => Ok(c),
        _ => Err(failed("the worker gave no counts".into())),
    }
}
