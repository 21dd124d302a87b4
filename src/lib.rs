//! Dyno: a dynamometer for local language models.
//!
//! The core library behind the `dyno` CLI and the desktop app. It reads GGUF
//! models, runs llama.cpp in worker processes with llama-bench's method, keeps
//! every sample in SQLite and reports figures with the conditions they were
//! measured under. All logic lives here so the CLI, the app and the tests
//! share one implementation.
//!
//! # Layers
//!
//! The modules form a stack. Each may use the modules listed before it and
//! none listed after it, so a newcomer can read the crate from the bottom
//! up and change a module knowing what can depend on it. The `layers` test
//! reads this list and fails on a `crate::` path that points upward, and on
//! a module missing from it.
//!
//! 1. `error`, `units`, `vocab`: the vocabulary. Errors, human formatting,
//!    and the nouns every layer passes along (tests, parameters, samples,
//!    devices, statuses). They use nothing else in Dyno.
//! 2. `machine`, `telemetry`, `model`, `quality`: readers. Facts about this
//!    machine, model files and the bundled text, with no process or database
//!    of their own.
//! 3. `engine`, `worker`: llama.cpp, and the process boundary around it. The
//!    engine runs only inside a worker process, so `worker` alone may use it.
//! 4. `store`: every SQL statement, over the vocabulary and the readers.
//! 5. `quantize`, `hub`, `predict`, `bench`, `serve`, `report`: the tasks.
//!    Making models, fetching them, predicting their speed before they are
//!    run, measuring them in-process or behind a server, and presenting what
//!    was measured.
//! 6. `app`: the use cases, with typed inputs and outputs, shared by the two
//!    front ends.
//! 7. `cli`: the command line (the desktop app, `src-tauri/`, is the other
//!    front end and calls `app`).
//!
//! `docs/ARCHITECTURE.md` draws the same stack with the reasons for it.

pub mod app;
pub mod bench;
pub mod cli;
pub mod engine;
pub mod error;
pub mod hub;
pub mod machine;
pub mod model;
pub mod predict;
pub mod quality;
pub mod quantize;
pub mod report;
pub mod serve;
pub mod store;
pub mod telemetry;
pub mod units;
pub mod vocab;
pub mod worker;

pub use error::{DynoError, Result};

#[cfg(test)]
mod layers;
