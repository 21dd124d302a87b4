//! A blob already in the Hugging Face cache counts only once its sha256
//! matches: one of the right size but the wrong bytes (a corrupt copy, a
//! disk error, another tool's half-finished work) is found out the first
//! time Dyno meets it and downloaded again, and a blob that changed after it
//! was checked is checked again.

use std::path::PathBuf;
use std::process::Output;

use crate::common::*;
use crate::fake_hub::{Body, FakeHub, RepoSpec};

const REPO: &str = "org/k2-GGUF";
const FILE: &str = "k2-Q8_0.gguf";

fn good_bytes() -> Vec<u8> {
    (0..64 * 1024u32).map(|i| (i * 7 % 251) as u8).collect()
}

fn hub() -> FakeHub {
    FakeHub::start(vec![RepoSpec {
        id: REPO.into(),
        files: vec![(FILE.into(), Body::Bytes(good_bytes()))],
        gated_token: None,
        downloads: 1,
        likes: 0,
    }])
}

fn pull(s: &Scratch, hub: &FakeHub) -> Output {
    run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--file", FILE, "--json"],
    )
}

fn blob(s: &Scratch, hub: &FakeHub) -> PathBuf {
    s.path("hf")
        .join("hub")
        .join("models--org--k2-GGUF")
        .join("blobs")
        .join(hub.sha256(REPO, FILE))
}

/// GETs of the file's bytes since request number `from`.
fn downloads(hub: &FakeHub, from: usize) -> usize {
    hub.requests()[from..]
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/resolve/"))
        .count()
}

#[test]
fn a_same_size_corrupt_blob_in_the_cache_is_found_and_replaced() {
    let (s, hub) = (Scratch::new(), hub());
    let blob = blob(&s, &hub);
    std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
    let mut bad = good_bytes();
    bad[1000] ^= 0xff;
    std::fs::write(&blob, &bad).unwrap();

    let o = pull(&s, &hub);
    assert_code(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("did not match its sha256") && err.contains(FILE),
        "the corrupt copy is reported: {err}"
    );
    assert_eq!(downloads(&hub, 0), 1, "downloaded again");
    assert_eq!(json(&o)["files"][0]["already_present"], false);
    assert_eq!(std::fs::read(&blob).unwrap(), good_bytes());
    let link = s
        .path("hf")
        .join("hub")
        .join("models--org--k2-GGUF")
        .join("snapshots")
        .join(hub.commit(REPO))
        .join(FILE);
    assert_eq!(std::fs::read(&link).unwrap(), good_bytes());

    // Verified now: the next pull neither downloads nor hashes it again.
    let before = hub.requests().len();
    let o = pull(&s, &hub);
    assert_code(&o, 0);
    assert_eq!(json(&o)["files"][0]["already_present"], true);
    assert_eq!(downloads(&hub, before), 0);
}

#[test]
fn a_good_blob_from_another_client_is_hashed_once_and_again_when_it_changes() {
    let (s, hub) = (Scratch::new(), hub());
    let blob = blob(&s, &hub);
    std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
    std::fs::write(&blob, good_bytes()).unwrap();

    let o = pull(&s, &hub);
    assert_code(&o, 0);
    assert_eq!(json(&o)["files"][0]["already_present"], true);
    assert_eq!(downloads(&hub, 0), 0, "a good copy is kept");

    // Rewritten in place after it was checked, same size: checked again.
    let mut bad = good_bytes();
    bad[7] ^= 1;
    std::fs::write(&blob, &bad).unwrap();
    let f = std::fs::File::options().write(true).open(&blob).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    let before = hub.requests().len();
    let o = pull(&s, &hub);
    assert_code(&o, 0);
    assert_eq!(downloads(&hub, before), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read(&blob).unwrap(), good_bytes());
}
