//! The Dyno desktop app. Its executable is also its own benchmark worker:
//! the core starts workers from the running executable with `worker`, so a
//! crash in llama.cpp takes down one worker, never the app.

// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    if std::env::args_os().nth(1).is_some_and(|a| a == "worker") {
        std::process::exit(dyno::cli::entry(std::env::args_os()));
    }
    dyno::cli::init_logging(false);
    dyno_app::run();
}
