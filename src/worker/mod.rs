//! The worker process. The parent spawns its own executable with the hidden
//! `worker` subcommand, one worker per model load, and talks JSON lines over
//! its stdin and stdout (see [`protocol`]). A crash, abort, out-of-memory
//! kill or hang in llama.cpp ends only the worker; the parent records it and
//! goes on.

pub mod client;
pub mod fault;
pub mod protocol;
pub mod server;
