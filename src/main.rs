//! The `dyno` binary: everything is in the library's CLI entry, which the
//! desktop app's binary shares (it runs benchmarks in workers it starts
//! from its own executable, with the same `worker` entry).

fn main() {
    std::process::exit(dyno::cli::entry(std::env::args_os()));
}
