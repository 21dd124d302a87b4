//! Issue K2 and K3 against the fake hub (tests/fixtures/fake_hub.rs): the
//! token goes to the configured endpoint only, never to a host a listing's
//! `Link` header names; and a file name with URL characters is fetched by
//! its percent-encoded URL.

use std::process::Command;

use crate::common::*;
use crate::fake_hub::{Body, FakeHub, RepoSpec};

const TOKEN: &str = "hf_k_secret_token_456";
const GATED: &str = "corp/gated-GGUF";

fn repo(id: &str, files: Vec<(&str, Vec<u8>)>, gated: bool) -> RepoSpec {
    RepoSpec {
        id: id.into(),
        files: files
            .into_iter()
            .map(|(p, b)| (p.to_string(), Body::Bytes(b)))
            .collect(),
        gated_token: gated.then(|| TOKEN.to_string()),
        downloads: 1,
        likes: 0,
    }
}

/// `dyno` with the fake hub as endpoint and `token` as HF_TOKEN.
fn dyno(s: &Scratch, hub: &FakeHub, token: Option<&str>) -> Command {
    let mut c = s.hub_dyno(&hub.url);
    if let Some(t) = token {
        c.env("HF_TOKEN", t);
    }
    c
}

#[test]
fn the_token_never_follows_a_listing_link_to_another_host() {
    let s = Scratch::new();
    let hub = FakeHub::start(vec![repo(
        GATED,
        vec![("g-Q4_0.gguf", vec![6u8; 64])],
        true,
    )]);
    // Another server: same host, other port, so another origin. It records
    // every request with its Authorization header.
    let thief = FakeHub::start(vec![]);
    let commit = hub.commit(GATED);
    hub.link_next_tree_page(
        GATED,
        &format!(
            "{}/api/models/{GATED}/tree/{commit}?recursive=true&cursor=2",
            thief.url
        ),
    );
    let o = run(dyno(&s, &hub, Some(TOKEN)), &["hub", "ls", GATED, "--json"]);
    assert_code(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(&thief.url) && err.contains("HF_ENDPOINT"),
        "the error names the other server and the fix: {err}"
    );
    assert!(!err.contains(TOKEN), "{err}");
    let leaked: Vec<_> = thief
        .requests()
        .into_iter()
        .filter(|r| r.authorization.is_some())
        .collect();
    assert!(
        leaked.is_empty(),
        "the token reached another host: {leaked:?}"
    );
    assert!(thief.requests().is_empty(), "{:?}", thief.requests());

    // A next page on the endpoint itself is followed, with the token (the
    // gated repo answers 401 without it).
    hub.link_next_tree_page(
        GATED,
        &format!(
            "{}/api/models/{GATED}/tree/{commit}?recursive=true&cursor=2",
            hub.url
        ),
    );
    let o = run(dyno(&s, &hub, Some(TOKEN)), &["hub", "ls", GATED, "--json"]);
    assert_code(&o, 0);
    let pages: Vec<_> = hub
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/tree/") && r.query.contains("cursor=2"))
        .collect();
    assert_eq!(pages.len(), 1, "{pages:?}");
    assert_eq!(
        pages[0].authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[test]
fn a_file_name_with_url_characters_is_fetched_by_its_encoded_url() {
    const REPO: &str = "org/odd-GGUF";
    const NAME: &str = "odd name#1-Q4_0.gguf";
    let s = Scratch::new();
    let hub = FakeHub::start(vec![repo(REPO, vec![(NAME, vec![9u8; 256])], false)]);
    let o = run(
        dyno(&s, &hub, None),
        &["hub", "pull", REPO, "--file", NAME, "--json"],
    );
    assert_code(&o, 0);
    let gets: Vec<_> = hub
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path.contains("/resolve/"))
        .collect();
    assert_eq!(gets.len(), 1, "{gets:?}");
    assert!(
        gets[0].path.ends_with("/odd%20name%231-Q4_0.gguf"),
        "{:?}",
        gets[0]
    );
    let sha = hub.sha256(REPO, NAME);
    let snapshot = s
        .path("hf")
        .join("hub")
        .join("models--org--odd-GGUF")
        .join("snapshots")
        .join(hub.commit(REPO))
        .join(NAME);
    assert_eq!(dyno::model::sha256_file(&snapshot).unwrap(), sha);
}

#[test]
fn a_listing_with_a_windows_drive_name_is_refused() {
    const REPO: &str = "evil/drive-GGUF";
    let s = Scratch::new();
    let hub = FakeHub::start(vec![repo(
        REPO,
        vec![("C:x-Q4_0.gguf", vec![7u8; 64])],
        false,
    )]);
    let o = run(dyno(&s, &hub, None), &["hub", "pull", REPO]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("unsafe path"), "{}", stderr(&o));
    assert!(
        !hub.requests().iter().any(|r| r.path.contains("/resolve/")),
        "nothing was downloaded"
    );
}
