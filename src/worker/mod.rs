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
/// explain a failure. [`init_logging`] installs it in a worker; it is named
/// here because only the worker may reach into the engine.
pub use crate::engine::CaptureLayer;

/// The worker's own entry, for each executable that is its own worker (the
/// `dyno` CLI and the app): `EXE worker` serves one model load over stdin and
/// stdout, `EXE worker --probe` reports llama.cpp's build and devices.
/// `None` when `args` ask for anything else, so the front end goes on.
/// Before any front end parses its command line: a worker needs none of it.
pub fn entry(args: &[std::ffi::OsString]) -> Option<i32> {
    if args.get(1).is_none_or(|a| a != "worker") {
        return None;
    }
    let probe = match &args[2..] {
        [] => false,
        [p] if p == "--probe" => true,
        _ => return None,
    };
    init_logging(true);
    Some(if probe {
        server::probe()
    } else {
        server::main()
    })
}

/// Log to stderr at `DYNO_LOG`'s level (default `warn`). A worker also keeps
/// llama.cpp's last warnings ([`CaptureLayer`]) to explain a failure, and
/// never colours its lines: they end up in stored error messages, and the
/// app shows them as text. A second call keeps the first set-up.
pub fn init_logging(worker: bool) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = EnvFilter::try_from_env("DYNO_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        // Colour codes only for a person at a terminal.
        .with_ansi(!worker && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let registry = tracing_subscriber::registry().with(fmt);
    let done = if worker {
        registry.with(CaptureLayer).try_init()
    } else {
        registry.try_init()
    };
    // A second initialisation (the app's own) keeps the first.
    let _ = done;
}
