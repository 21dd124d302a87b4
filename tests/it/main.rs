//! Dyno's integration tests, one module per subject, built as one binary:
//! each test binary links the whole of llama.cpp, so twenty of them cost
//! minutes of linking where one costs seconds.
//!
//! Most tests run the real `dyno` binary on the real test models through
//! the helpers in `common` (each test with its own scratch folder and
//! database, so they run in parallel; nothing here may change this
//! process's environment or current directory). The hub tests talk to the
//! fake Hugging Face Hub in tests/fixtures/fake_hub.rs.
//!
//! Run one subject with a filter: `cargo test --release --workspace --test it
//! sweep::`.

mod common;

/// How the `dyno` processes these tests start make llama.cpp's threads
/// wait at its barriers (`OMP_WAIT_POLICY`, passed on by
/// [`common::Scratch::dyno`]). Two tests run at once on two cores, each
/// with a thread per core, and OpenMP's threads spin while they wait: a
/// spinning thread holds the core its partner needs, so a 6 s test took
/// 139 s and the suite 577 s. Sleeping instead, the suite takes 296 s.
/// These tests check what Dyno does, not its speed; the quiet tests, which
/// compare speeds, keep OpenMP's default, as llama-bench runs with it.
pub const OMP_WAIT_POLICY: Option<&str> = Some("PASSIVE");
#[path = "../fixtures/fake_hub.rs"]
mod fake_hub;
#[path = "../fixtures/fake_openai.rs"]
mod fake_openai;

mod bench_cli;
mod compare;
mod errors;
mod export;
mod export_paths;
mod export_snapshots;
// These drive real worker crashes through DYNO_TEST_FAULT.
mod faults;
mod hub;
mod hub_cache;
mod hub_urls;
mod import;
mod list;
mod modules;
mod offload;
mod places;
mod predict;
mod presets;
mod rpc;
mod serve;
mod serve_card;
mod serve_compare;
mod serve_llama;
mod settings;
mod store_path;
mod sweep;
mod synth;
mod team;
mod telemetry;
mod upgrade;
