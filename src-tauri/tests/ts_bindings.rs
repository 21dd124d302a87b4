//! ui/src/bindings/ must be exactly what the Rust types generate: the UI's
//! types are the backend's, and CI fails here when someone changes one side
//! only. With DYNO_WRITE_BINDINGS=1 the test writes them instead.

mod bindings;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const REGENERATE: &str =
    "DYNO_WRITE_BINDINGS=1 cargo test --release -p dyno-app --test ts_bindings";

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn ui_bindings_match_the_rust_types() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/bindings");
    if std::env::var_os("DYNO_WRITE_BINDINGS").is_some() {
        // Written afresh, so a type that is gone leaves no file behind.
        let _ = std::fs::remove_dir_all(&committed);
        bindings::export(&committed).expect("the bindings are written");
        return;
    }
    let fresh: PathBuf =
        std::env::temp_dir().join(format!("dyno-ts-bindings-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    bindings::export(&fresh).expect("the bindings are generated");
    let (want, have) = (files(&fresh), files(&committed));
    let mut drift = Vec::new();
    for f in want.difference(&have) {
        drift.push(format!("ui/src/bindings/{f} is missing"));
    }
    for f in have.difference(&want) {
        drift.push(format!("ui/src/bindings/{f} is no longer generated"));
    }
    for f in want.intersection(&have) {
        let a = std::fs::read(fresh.join(f)).unwrap();
        let b = std::fs::read(committed.join(f)).unwrap();
        if a != b {
            drift.push(format!("ui/src/bindings/{f} differs from the Rust type"));
        }
    }
    let _ = std::fs::remove_dir_all(&fresh);
    assert!(
        drift.is_empty(),
        "the UI's generated types drifted from the Rust types:\n  {}\nregenerate them with `{REGENERATE}`, then fix what `cd ui && npm run check` reports",
        drift.join("\n  ")
    );
}
