//! The Dyno desktop app. Its executable is also its own benchmark worker:
//! the core starts workers from the running executable with `worker`, so a
//! crash in llama.cpp takes down one worker, never the app.

// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Its own benchmark worker.
    if let Some(code) = dyno::worker::entry(&args) {
        std::process::exit(code);
    }
    // The RPC server Settings starts: `dyno rpc-server`'s flags, parsed and
    // checked as the CLI does.
    if args.get(1).is_some_and(|a| a == "rpc-server") {
        std::process::exit(dyno::cli::entry(args));
    }
    dyno::worker::init_logging(false);
    quiet_webview();
    dyno_app::run();
}

/// Paint the UI without WebKitGTK's accelerated compositing, unless the user
/// set `WEBKIT_DISABLE_COMPOSITING_MODE` themselves (`=0` keeps it).
///
/// A benchmark's UI should leave the machine to the benchmark. Composited, the
/// webview draws every frame through GL: on the GPU being measured, or, on a
/// machine without one, through Mesa's software rasterizer on the CPU. There,
/// one repaint of the Sweep view cost about 70 ms of CPU on two extra threads,
/// and decode measured from the app came out 13–23% below the CLI's. Painted
/// on the CPU, a repaint costs a few milliseconds and the figures agree
/// (`bash scripts/test/e2e.sh bench`).
fn quiet_webview() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        // Before GTK or any other thread starts, so nothing reads the
        // environment concurrently.
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
}
