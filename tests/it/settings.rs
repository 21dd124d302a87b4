//! Settings against the fake hub (tests/fixtures/fake_hub.rs), through the
//! real `dyno` binary: the saved endpoint is used, an environment variable
//! still wins and the answer says so; the token is saved in
//! huggingface_hub's token file (private to the user), never in the
//! database, and shown only masked; Test connection names the token's user;
//! and a cancelled download's partial file is discarded, so the next pull
//! starts from the beginning.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::*;
use crate::fake_hub::{Body, FakeHub, RepoSpec};

const REPO: &str = "org/tiny-GGUF";
const FILE: &str = "tiny-Q8_0.gguf";
const TOKEN: &str = "hf_settings_secret_token_7Qz9";

fn hub() -> FakeHub {
    FakeHub::start(vec![RepoSpec {
        id: REPO.into(),
        files: vec![(FILE.into(), Body::Bytes(vec![7u8; 3 << 20]))],
        gated_token: None,
        downloads: 3,
        likes: 0,
    }])
}

/// `dyno` with a private HOME and HF home, and no ambient endpoint or token.
fn dyno(s: &Scratch) -> Command {
    let mut c = s.dyno();
    c.env("HOME", s.path("home"))
        .env("HF_HOME", s.path("hf"))
        .env_remove("HF_ENDPOINT")
        .env_remove("HF_TOKEN")
        .env_remove("HUGGING_FACE_HUB_TOKEN")
        .env_remove("HF_TOKEN_PATH")
        .env_remove("HF_HUB_CACHE")
        .env_remove("XDG_CACHE_HOME");
    c
}

fn settings(s: &Scratch) -> serde_json::Value {
    let o = run(dyno(s), &["settings", "--json"]);
    assert_code(&o, 0);
    json(&o)
}

fn searched(hub: &FakeHub) -> usize {
    hub.requests()
        .iter()
        .filter(|r| r.path == "/api/models")
        .count()
}

#[test]
fn the_saved_endpoint_is_used_and_hf_endpoint_still_wins() {
    let (s, saved, env) = (Scratch::new(), hub(), hub());
    let st = settings(&s);
    assert_eq!(st["endpoint"], "https://huggingface.co");
    assert_eq!(st["endpoint_source"], "default");

    // Typed with a trailing slash: saved without it.
    let o = run(
        dyno(&s),
        &[
            "settings",
            "set",
            "hub.endpoint",
            &format!("{}/", saved.url),
        ],
    );
    assert_code(&o, 0);
    let st = settings(&s);
    assert_eq!(st["endpoint"], saved.url.as_str());
    assert_eq!(st["endpoint_source"], "saved");

    let o = run(dyno(&s), &["hub", "search", "tiny", "--json"]);
    assert_code(&o, 0);
    assert_eq!(json(&o)[0]["id"], REPO);
    assert_eq!(searched(&saved), 1, "the search went to the saved endpoint");

    // HF_ENDPOINT for one session beats the saved endpoint, and Settings
    // says so rather than pretending the saved one is in use.
    let mut c = dyno(&s);
    c.env("HF_ENDPOINT", &env.url);
    let o = run(c, &["hub", "search", "tiny", "--json"]);
    assert_code(&o, 0);
    assert_eq!((searched(&saved), searched(&env)), (1, 1));
    let mut c = dyno(&s);
    c.env("HF_ENDPOINT", &env.url);
    let o = run(c, &["settings"]);
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("HF_ENDPOINT is set and wins"),
        "{}",
        stdout(&o)
    );

    let o = run(dyno(&s), &["settings", "unset", "hub.endpoint"]);
    assert_code(&o, 0);
    let st = settings(&s);
    assert_eq!(st["endpoint_source"], "default");
    assert!(st["saved_endpoint"].is_null());
}

#[test]
fn a_bad_endpoint_or_key_is_refused_with_what_to_type() {
    let s = Scratch::new();
    for bad in [
        "ftp://mirror.example",
        "huggingface.co",
        "http://user:pw@host/",
    ] {
        let o = run(dyno(&s), &["settings", "set", "hub.endpoint", bad]);
        assert_code(&o, 2);
        assert!(stderr(&o).contains("not a hub address"), "{}", stderr(&o));
    }
    assert_eq!(settings(&s)["endpoint_source"], "default", "nothing saved");
    let o = run(dyno(&s), &["settings", "set", "hub.token", "x"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("dyno hub login"), "{}", stderr(&o));
}

#[test]
fn the_token_goes_to_the_token_file_never_the_database() {
    let (s, hub) = (Scratch::new(), hub());
    let o = run(dyno(&s), &["settings", "set", "hub.endpoint", &hub.url]);
    assert_code(&o, 0);
    // A link planted where an older Dyno wrote its temporary token file
    // must not carry the token elsewhere, nor become the token file.
    #[cfg(unix)]
    let victim = {
        std::fs::create_dir_all(s.path("hf")).unwrap();
        let victim = s.path("victim");
        std::fs::write(&victim, "untouched").unwrap();
        std::os::unix::fs::symlink(&victim, s.path("hf").join("token.dyno-tmp")).unwrap();
        victim
    };
    let mut c = dyno(&s);
    c.args(["hub", "login"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("dyno runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("  {TOKEN}\n").as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 0);
    assert!(!stdout(&o).contains(TOKEN), "{}", stdout(&o));

    let file: PathBuf = s.path("hf").join("token");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), TOKEN);
    #[cfg(unix)]
    {
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert!(!std::fs::symlink_metadata(&file).unwrap().is_symlink());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "only the user reads the token");
    }
    let st = settings(&s);
    assert_eq!(st["token"]["present"], true);
    assert_eq!(st["token"]["source"], "file");
    assert_eq!(st["token"]["masked"], "hf_…7Qz9");
    assert!(!st.to_string().contains(TOKEN), "{st}");
    // Not in the database, its WAL or anything else beside it.
    for e in std::fs::read_dir(s.dir.path()).unwrap().flatten() {
        if e.path().is_file() {
            let bytes = std::fs::read(e.path()).unwrap();
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "the token is in {}",
                e.path().display()
            );
        }
    }

    // Test connection: the search, then whose token it is.
    let o = run(dyno(&s), &["settings", "check", "--json"]);
    assert_code(&o, 0);
    let c = json(&o);
    assert_eq!(c["reachable"], true);
    assert_eq!(c["user"], "user-7Qz9");
    let who = hub
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/whoami-v2")
        .expect("asked whose token it is");
    assert_eq!(
        who.authorization.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );

    let o = run(dyno(&s), &["hub", "logout"]);
    assert_code(&o, 0);
    assert!(!file.exists());
    assert_eq!(settings(&s)["token"]["present"], false);
}

#[test]
fn an_unreachable_hub_is_an_answer_not_a_crash() {
    let s = Scratch::new();
    // A port nothing listens on: bound, then closed.
    let port = free_port();
    let o = run(
        dyno(&s),
        &[
            "settings",
            "set",
            "hub.endpoint",
            &format!("http://127.0.0.1:{port}"),
        ],
    );
    assert_code(&o, 0);
    let o = run(dyno(&s), &["settings", "check", "--json"]);
    assert_code(&o, 1);
    let c = json(&o);
    assert_eq!(c["reachable"], false);
    assert!(
        c["message"].as_str().unwrap().contains("could not reach"),
        "{c}"
    );
}

#[test]
fn discard_deletes_a_cancelled_download_so_the_next_pull_starts_afresh() {
    let (s, hub) = (Scratch::new(), hub());
    let mut c = dyno(&s);
    c.env("HF_ENDPOINT", &hub.url);
    hub.cut_next_get(REPO, FILE, 1 << 20);
    let o = run(c, &["hub", "pull", REPO, "--file", FILE]);
    assert_code(&o, 1);
    let sha = hub.sha256(REPO, FILE);
    let blobs = s.path("hf").join("hub/models--org--tiny-GGUF/blobs");
    let partial = blobs.join(format!("{sha}.incomplete"));
    let kept = std::fs::metadata(&partial).expect("partial kept").len();
    assert!(kept > 0);
    // The listing says what of the level is here, without a request per file.
    let listed = |s: &Scratch| {
        let mut c = dyno(s);
        c.env("HF_ENDPOINT", &hub.url);
        let o = run(c, &["hub", "ls", REPO, "--json"]);
        assert_code(&o, 0);
        json(&o)["levels"][0].clone()
    };
    let l = listed(&s);
    assert_eq!(l["partial_bytes"].as_u64(), Some(kept));
    assert!(l["local_path"].is_null(), "{l}");

    let o = run(
        dyno(&s),
        &["hub", "discard", REPO, "--file", FILE, "--json"],
    );
    assert_code(&o, 0);
    assert_eq!(json(&o)["freed_bytes"].as_u64(), Some(kept));
    assert!(!partial.exists(), "the partial file is gone");
    assert_eq!(listed(&s)["partial_bytes"].as_u64(), Some(0));
    // Twice is fine: nothing is left to delete.
    let o = run(
        dyno(&s),
        &["hub", "discard", REPO, "--file", FILE, "--json"],
    );
    assert_code(&o, 0);
    assert_eq!(json(&o)["freed_bytes"].as_u64(), Some(0));

    let mut c = dyno(&s);
    c.env("HF_ENDPOINT", &hub.url);
    let o = run(c, &["hub", "pull", REPO, "--file", FILE, "--json"]);
    assert_code(&o, 0);
    let p = json(&o);
    assert_eq!(p["files"][0]["resumed_from"].as_u64(), Some(0));
    assert!(blobs.join(&sha).is_file());
    let l = listed(&s);
    let here = PathBuf::from(l["local_path"].as_str().expect("in the cache now"));
    assert!(here.ends_with(FILE) && here.is_file(), "{l}");
    assert_eq!(l["partial_bytes"].as_u64(), Some(0));

    // A complete download has nothing partial to discard, and a file Dyno
    // never downloaded cannot be named to delete anything.
    let o = run(
        dyno(&s),
        &["hub", "discard", REPO, "--file", FILE, "--json"],
    );
    assert_code(&o, 0);
    assert_eq!(json(&o)["freed_bytes"].as_u64(), Some(0));
    assert!(blobs.join(&sha).is_file(), "the finished blob stays");
    let o = run(
        dyno(&s),
        &["hub", "discard", REPO, "--file", "../../etc/passwd"],
    );
    assert_code(&o, 2);
}
