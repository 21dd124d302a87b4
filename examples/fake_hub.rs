//! Serve local files as one repo of a fake Hugging Face Hub, e.g. to compare
//! Dyno's download speed with curl's on loopback, or for the app's
//! end-to-end test (scripts/test/e2e.sh), which cuts the first download of each
//! file short to check that the app resumes it.
//!
//! Run: cargo run --release --example fake_hub -- [--cut-first-get BYTES] REPO_ID FILE [FILE...]
//! Prints the base URL on the first line, then serves until killed.

#[path = "../tests/fixtures/fake_hub.rs"]
mod fake_hub;

use std::io::Write;
use std::path::PathBuf;

use fake_hub::{Body, FakeHub, RepoSpec};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut cut = None;
    if args.first().map(String::as_str) == Some("--cut-first-get") && args.len() > 1 {
        cut = Some(
            args[1]
                .parse::<u64>()
                .expect("--cut-first-get takes a byte count"),
        );
        args.drain(..2);
    }
    if args.len() < 2 {
        eprintln!("usage: fake_hub [--cut-first-get BYTES] REPO_ID FILE [FILE...]");
        std::process::exit(2);
    }
    let files = args[1..]
        .iter()
        .map(|f| {
            let p = PathBuf::from(f);
            let name = p
                .file_name()
                .expect("FILE has no file name")
                .to_string_lossy()
                .into_owned();
            (name, Body::File(p))
        })
        .collect();
    let names: Vec<String> = args[1..]
        .iter()
        .map(|f| {
            PathBuf::from(f)
                .file_name()
                .expect("FILE has no file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let hub = FakeHub::start(vec![RepoSpec {
        id: args[0].clone(),
        files,
        gated_token: None,
        downloads: 0,
        likes: 0,
    }]);
    if let Some(bytes) = cut {
        for n in &names {
            hub.cut_next_get(&args[0], n, bytes);
        }
    }
    println!("{}", hub.url);
    std::io::stdout().flush().expect("flush stdout");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
