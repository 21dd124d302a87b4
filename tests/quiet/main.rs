//! Tests that need the machine to themselves: they start busy programs on
//! purpose and check that Dyno sees them, names them and separates them
//! from a clean run. In the `it` binary the other tests' `dyno` processes
//! would be "other programs" too, so these live in a binary of their own
//! (cargo runs test binaries one after another) and take [`quiet`] so they
//! do not overlap each other either.

#[path = "../it/common.rs"]
#[allow(dead_code)]
mod common;

/// OpenMP's default wait (see `tests/it/main.rs`): these tests compare
/// speeds, and run one at a time.
pub const OMP_WAIT_POLICY: Option<&str> = None;

mod disturbance;
mod sustain;
mod synth;

use std::sync::{Mutex, MutexGuard};

static QUIET: Mutex<()> = Mutex::new(());

/// Hold the machine for one test; a test that failed while holding it
/// leaves it usable.
pub fn quiet() -> MutexGuard<'static, ()> {
    QUIET.lock().unwrap_or_else(|p| p.into_inner())
}
