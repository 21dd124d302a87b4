//! Fault injection for the tests, so the suite can prove the parent survives a
//! real crash, abort or hang of the worker.
//!
//! Set `DYNO_TEST_FAULT` to `ACTION@POINT`, where ACTION is `abort`
//! (SIGABRT, as a failed GGML_ASSERT does), `segv` (SIGSEGV), `kill`
//! (SIGKILL, as the out-of-memory killer sends), `hang` (sleep forever) or
//! `exit` (exit code 7), and POINT is `load` (before the model loads),
//! `load:TEXT` (before loading a model whose file name contains TEXT) or
//! `job:N` (before job N) or `sample:N:R` (after repetition R of job N,
//! counted from 0, has been sent). Several faults can be separated by commas. Only
//! the worker reads it, once.
//!
//! With `DYNO_TEST_FAULT_ONCE=PATH` a fault fires only while PATH does not
//! exist, and creates it as it fires: the worker that replaces a crashed one
//! then runs clean, so a test can watch the benchmark carry on.
//!
//! A test hook, not a setting: it is documented for developers only
//! (docs/development.md), and the worker logs a warning whenever it acts.
//! It is in every build, shipped ones included, because compiling it only
//! into the tests' build made CI compile Dyno and the app twice, once per
//! feature set (about 7 minutes on 2 cores), and the build the tests
//! checked was not the build users run. Unset, it costs one environment
//! lookup per worker, and a point no more than a check of that.

use std::time::Duration;

pub const ENV: &str = "DYNO_TEST_FAULT";
pub const ONCE_ENV: &str = "DYNO_TEST_FAULT_ONCE";

/// False when the once-marker exists already; creates it otherwise.
fn first_time() -> bool {
    match std::env::var_os(ONCE_ENV) {
        None => true,
        Some(p) => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .is_ok(),
    }
}

/// The variable as the worker started with it.
fn spec() -> Option<&'static str> {
    static SPEC: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    SPEC.get_or_init(|| std::env::var(ENV).ok()).as_deref()
}

/// Trigger the fault configured for `point`, if any.
pub fn point(point: &str) {
    let Some(spec) = spec() else { return };
    for f in spec.split(',') {
        let Some((action, at)) = f.trim().split_once('@') else {
            continue;
        };
        // "load:TEXT" matches the point "load:FILE" when FILE contains TEXT.
        let hit = at == point
            || at
                .strip_prefix("load:")
                .zip(point.strip_prefix("load:"))
                .is_some_and(|(text, file)| file.contains(text));
        if !hit || !first_time() {
            continue;
        }
        tracing::warn!("{ENV}: injecting {action} at {point}");
        match action {
            "abort" => std::process::abort(),
            // Rust's own SIGSEGV handler (stack-overflow detection) would
            // swallow a raised signal, so restore the default action first:
            // the process then dies exactly as on a bad memory access.
            // SAFETY: resetting a signal's action and raising it touch no
            // memory of ours; the process dies on the spot, as it means to.
            "segv" => unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            },
            // SAFETY: raise touches no memory of ours; SIGKILL ends the
            // process at once, as it means to.
            "kill" => unsafe {
                libc::raise(libc::SIGKILL);
            },
            "hang" => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            "exit" => std::process::exit(7),
            _ => {}
        }
    }
}
