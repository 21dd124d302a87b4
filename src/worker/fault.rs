//! Test-only fault injection, so the suite can prove the parent survives a
//! real crash, abort or hang of the worker.
//!
//! Set `DYNO_TEST_FAULT` to `ACTION@POINT`, where ACTION is `abort`
//! (SIGABRT, as a failed GGML_ASSERT does), `segv` (SIGSEGV), `kill`
//! (SIGKILL, as the out-of-memory killer sends), `hang` (sleep forever) or
//! `exit` (exit code 7), and POINT is `load` (before the model loads),
//! `load:TEXT` (before loading a model whose file name contains TEXT) or
//! `job:N` (before job N) or `sample:N:R` (after repetition R of job N,
//! counted from 0, has been sent). Several faults can be separated by commas. Only
//! the worker reads it; an unset variable costs one lookup.
//!
//! With `DYNO_TEST_FAULT_ONCE=PATH` a fault fires only while PATH does not
//! exist, and creates it as it fires: the worker that replaces a crashed one
//! then runs clean, so a test can watch the benchmark carry on.
//!
//! All of this is compiled only with the `test-faults` cargo feature, which
//! the test script turns on (`scripts/test.sh`). Shipped builds, the app
//! included, have no way for an environment variable to abort a worker or
//! create a file: there `point` is empty.

#[cfg(feature = "test-faults")]
use std::time::Duration;

pub const ENV: &str = "DYNO_TEST_FAULT";
pub const ONCE_ENV: &str = "DYNO_TEST_FAULT_ONCE";

/// False when the once-marker exists already; creates it otherwise.
#[cfg(feature = "test-faults")]
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

/// Without the `test-faults` feature: nothing, whatever the environment says.
#[cfg(not(feature = "test-faults"))]
#[inline(always)]
pub fn point(_point: &str) {}

/// Trigger the fault configured for `point`, if any.
#[cfg(feature = "test-faults")]
pub fn point(point: &str) {
    let Ok(spec) = std::env::var(ENV) else { return };
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
