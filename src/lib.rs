//! Dyno: a dynamometer for local language models.
//!
//! The core library behind the `dyno` CLI and the desktop app. It reads GGUF
//! models, runs llama.cpp in worker processes with llama-bench's method, keeps
//! every sample in SQLite and reports figures with the conditions they were
//! measured under. All logic lives here so the CLI, the app and the tests
//! share one implementation.

pub mod app;
pub mod bench;
pub mod cli;
pub mod engine;
pub mod error;
pub mod hub;
pub mod machine;
pub mod model;
pub mod quality;
pub mod quantize;
pub mod report;
pub mod store;
pub mod telemetry;
pub mod vocab;
pub mod worker;

pub use error::{DynoError, Result};
