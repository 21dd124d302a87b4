//! The `dyno` binary: logging set-up, then the CLI. Errors are printed as one
//! line naming what failed and what to do, with exit code 2 for bad input
//! and 1 for a failure while running.

use clap::Parser;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

fn init_logging(worker: bool) {
    // Everything goes to stderr: stdout carries tables, JSON, and in the
    // worker the event protocol. llama.cpp's own logs arrive through tracing.
    let filter = EnvFilter::try_from_env("DYNO_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(filter);
    let registry = tracing_subscriber::registry().with(fmt);
    if worker {
        // The worker also keeps llama.cpp's last warnings to explain failures.
        registry.with(dyno::engine::CaptureLayer).init();
    } else {
        registry.init();
    }
}

fn main() {
    let cli = dyno::cli::args::Cli::parse();
    init_logging(matches!(
        cli.command,
        dyno::cli::args::Command::Worker { .. }
    ));
    let code = match dyno::cli::main(cli) {
        Ok(code) => code,
        Err(e) => {
            let mut msg = format!("error: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                // thiserror messages already embed their source; print only new text.
                let text = s.to_string();
                if !msg.contains(&text) {
                    msg.push_str(&format!(": {text}"));
                }
                source = s.source();
            }
            eprintln!("{msg}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
