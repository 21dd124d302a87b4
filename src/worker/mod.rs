//! The worker process. The parent spawns its own executable with the hidden
//! `worker` subcommand, one worker per model load, and talks JSON lines over
//! its stdin and stdout (see [`protocol`]). A crash, abort, out-of-memory
//! kill or hang in llama.cpp ends only the worker; the parent records it and
//! goes on.

pub mod client;
pub mod fault;
pub mod protocol;
pub mod server;

/// The worker process's log layer: it keeps llama.cpp's last warnings to
/// explain a failure. The CLI installs it when it starts as a worker; it is
/// named here because only the worker may reach into the engine.
pub use crate::engine::CaptureLayer;
