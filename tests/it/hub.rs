//! The hub commands against a fake Hugging Face Hub on 127.0.0.1 that speaks
//! the real routes and headers (tests/fixtures/fake_hub.rs), serving the real
//! test model: search, listing by level, a pull cut mid-body and resumed with
//! a ranged request, corrupted bytes, 404s, a gated repo, split files, the
//! cache layout, and `dyno sweep --repo`. Then discovery of models already on
//! disk in fake LM Studio and Ollama trees.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::fake_hub::{Body, FakeHub, RepoSpec};

const REPO: &str = "org/tiny-GGUF";
const Q41: &str = "tiny-Q4_1.gguf";
const TOKEN: &str = "hf_fake_secret_token_123";

fn hub() -> FakeHub {
    FakeHub::start(vec![
        RepoSpec {
            id: REPO.into(),
            files: vec![
                ("README.md".into(), Body::Bytes(b"# tiny".to_vec())),
                (Q41.into(), Body::File(model(SMOL))),
                (
                    "tiny-F16-00001-of-00002.gguf".into(),
                    Body::Bytes(vec![1u8; 3000]),
                ),
                (
                    "tiny-F16-00002-of-00002.gguf".into(),
                    Body::Bytes(vec![2u8; 2000]),
                ),
                ("mmproj-tiny-f16.gguf".into(), Body::Bytes(vec![3u8; 100])),
                ("tiny.imatrix.gguf".into(), Body::Bytes(vec![4u8; 50])),
            ],
            gated_token: None,
            downloads: 500,
            likes: 7,
        },
        RepoSpec {
            id: "org/other-GGUF".into(),
            files: vec![("other-Q8_0.gguf".into(), Body::Bytes(vec![5u8; 10]))],
            gated_token: None,
            downloads: 900,
            likes: 1,
        },
        RepoSpec {
            id: "corp/gated-GGUF".into(),
            files: vec![("gated-Q4_0.gguf".into(), Body::Bytes(vec![6u8; 4096]))],
            gated_token: Some(TOKEN.into()),
            downloads: 10,
            likes: 0,
        },
    ])
}

fn repo_dir(s: &Scratch) -> PathBuf {
    s.path("hf").join("hub").join("models--org--tiny-GGUF")
}

#[test]
fn search_and_ls_group_levels_split_parts_and_extras() {
    let (s, hub) = (Scratch::new(), hub());
    let o = run(s.hub_dyno(&hub.url), &["hub", "search", "gguf", "--json"]);
    assert_code(&o, 0);
    let ids: Vec<String> = json(&o)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids[0], "org/other-GGUF", "most downloaded first: {ids:?}");
    assert!(ids.contains(&REPO.to_string()));
    let q = hub.requests();
    let search = q.iter().find(|r| r.path == "/api/models").unwrap();
    assert!(search.query.contains("filter=gguf"), "{search:?}");

    let o = run(s.hub_dyno(&hub.url), &["hub", "ls", REPO, "--json"]);
    assert_code(&o, 0);
    let l = json(&o);
    assert_eq!(l["commit"], hub.commit(REPO));
    let levels = l["levels"].as_array().unwrap();
    let names: Vec<&str> = levels
        .iter()
        .map(|v| v["level"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["F16", "Q4_1"], "a split model is one level");
    assert_eq!(levels[0]["files"].as_array().unwrap().len(), 2);
    assert_eq!(levels[0]["size_bytes"], 5000);
    assert_eq!(levels[1]["fit"], "ram");
    assert_eq!(l["mmproj"].as_array().unwrap().len(), 1);
    assert_eq!(l["imatrix"].as_array().unwrap().len(), 1);
    let o = run(s.hub_dyno(&hub.url), &["hub", "ls", REPO]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("fits in RAM"), "{}", stdout(&o));
    assert!(stdout(&o).contains("(2 parts)"), "{}", stdout(&o));
}

#[test]
fn a_pull_cut_mid_body_resumes_with_a_range_and_lands_in_the_hf_cache() {
    let (s, hub) = (Scratch::new(), hub());
    let size = std::fs::metadata(model(SMOL)).unwrap().len();
    hub.cut_next_get(REPO, Q41, 20 << 20);
    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "q4_1"],
    );
    assert_code(&o, 1);
    assert!(
        stderr(&o).contains("interrupted") && stderr(&o).contains("resume"),
        "{}",
        stderr(&o)
    );
    let sha = hub.sha256(REPO, Q41);
    let blob = repo_dir(&s).join("blobs").join(&sha);
    let partial = PathBuf::from(format!("{}.incomplete", blob.display()));
    let kept = std::fs::metadata(&partial).expect("partial kept").len();
    assert!(kept > 0 && kept < size, "{kept}");
    assert!(!blob.exists(), "an incomplete file never counts as present");

    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "Q4_1", "--json"],
    );
    assert_code(&o, 0);
    let ranged: Vec<_> = hub
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(Q41) && r.range.is_some())
        .collect();
    assert_eq!(ranged.len(), 1, "one ranged request");
    assert_eq!(
        ranged[0].range.as_deref(),
        Some(format!("bytes={kept}-").as_str())
    );
    let p = json(&o);
    assert_eq!(p["files"][0]["resumed_from"].as_u64(), Some(kept));
    assert_eq!(
        p["files"][0]["downloaded_bytes"].as_u64(),
        Some(size - kept)
    );

    // The Python client's layout: blob by sha256, a relative link in the
    // snapshot, refs/main naming the commit.
    let commit = hub.commit(REPO);
    assert_eq!(std::fs::metadata(&blob).unwrap().len(), size);
    assert!(!partial.exists());
    let link = repo_dir(&s).join("snapshots").join(&commit).join(Q41);
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("../../blobs").join(&sha)
    );
    assert_eq!(
        std::fs::read_to_string(repo_dir(&s).join("refs").join("main")).unwrap(),
        commit
    );
    assert_eq!(dyno::model::sha256_file(&link).unwrap(), sha);

    // Pulling again downloads nothing.
    let before = hub.requests().len();
    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "q4_1"],
    );
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("already in the cache"),
        "{}",
        stdout(&o)
    );
    assert!(!hub.requests()[before..]
        .iter()
        .any(|r| r.path.contains("/resolve/")));

    // Both attempts are recorded.
    let (rt, store) = store(&s.db());
    let d = rt.block_on(store.downloads(10)).unwrap();
    let statuses: Vec<&str> = d.iter().map(|x| x.2.as_str()).collect();
    assert_eq!(statuses, ["ok", "ok", "failed"], "{d:?}");
    assert_eq!(d[1].3, Some(kept as i64));

    // The downloaded model is found on disk and sweeps straight from the repo.
    let o = run(s.hub_dyno(&hub.url), &["models", "--json"]);
    assert_code(&o, 0);
    let m = json(&o);
    let hf = m
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["origin"] == "hf-cache")
        .expect("found in the HF cache");
    assert_eq!(hf["name"], format!("{REPO}/{Q41}"));
    assert_eq!(hf["quant"], "Q4_1");
    let o = run(
        s.hub_dyno(&hub.url),
        &[
            "sweep",
            "--repo",
            REPO,
            "--levels",
            "q4_1",
            "--no-quality",
            "-p",
            "16",
            "-n",
            "4",
            "-r",
            "1",
            "--json",
        ],
    );
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["runs"][0]["status"], "ok");
    assert_eq!(j["runs"][0]["model"]["quant"], "Q4_1");
    assert_eq!(j["sweep"]["source_kind"], "repo");
}

#[test]
fn corrupted_bytes_are_deleted_and_never_used() {
    let (s, hub) = (Scratch::new(), hub());
    hub.set_corrupt(REPO, Q41, true);
    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "q4_1"],
    );
    assert_code(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains("sha256 mismatch") && err.contains("deleted"),
        "{err}"
    );
    let blobs = repo_dir(&s).join("blobs");
    let left: Vec<_> = std::fs::read_dir(&blobs).unwrap().flatten().collect();
    assert!(left.is_empty(), "nothing kept: {left:?}");
    assert!(!repo_dir(&s).join("snapshots").exists());

    hub.set_corrupt(REPO, Q41, false);
    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "q4_1"],
    );
    assert_code(&o, 0);
}

#[test]
fn errors_name_the_repo_the_file_the_gate_and_the_network() {
    let (s, hub) = (Scratch::new(), hub());
    let o = run(s.hub_dyno(&hub.url), &["hub", "ls", "org/missing-GGUF"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("org/missing-GGUF"), "{}", stderr(&o));

    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--file", "nope.gguf"],
    );
    assert_code(&o, 2);
    assert!(stderr(&o).contains("nope.gguf"), "{}", stderr(&o));

    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "Q9_9"],
    );
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("Q4_1"),
        "names what there is: {}",
        stderr(&o)
    );

    // Gated: the message names the repo and how to give a token.
    let o = run(s.hub_dyno(&hub.url), &["hub", "pull", "corp/gated-GGUF"]);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("corp/gated-GGUF") && err.contains("gated"),
        "{err}"
    );
    assert!(err.contains("HF_TOKEN"), "{err}");

    // With the token in $HF_HOME/token it downloads; the token is sent as a
    // bearer header and written nowhere.
    std::fs::create_dir_all(s.path("hf")).unwrap();
    std::fs::write(s.path("hf").join("token"), format!("{TOKEN}\n")).unwrap();
    // With every log line on (HTTP client included), still no token.
    let mut c = s.hub_dyno(&hub.url);
    c.env("DYNO_LOG", "trace");
    let o = run(c, &["hub", "pull", "corp/gated-GGUF", "--json"]);
    assert_code(&o, 0);
    assert!(hub
        .requests()
        .iter()
        .any(|r| r.authorization.as_deref() == Some(format!("Bearer {TOKEN}").as_str())));
    assert!(!stderr(&o).contains(TOKEN) && !stdout(&o).contains(TOKEN));
    for f in ["dyno.db", "dyno.db-wal"] {
        if let Ok(bytes) = std::fs::read(s.path(f)) {
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains(TOKEN), "the token reached {f}");
        }
    }
    // HF_TOKEN wins over the file, and a wrong one is refused by name.
    let o = run(
        {
            let mut c = s.hub_dyno(&hub.url);
            c.env("HF_TOKEN", "hf_wrong");
            c
        },
        &["hub", "ls", "corp/gated-GGUF"],
    );
    assert_code(&o, 2);
    assert!(stderr(&o).contains("no access"), "{}", stderr(&o));

    // Nothing listens on port 9: a network error says so.
    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "--endpoint", "http://127.0.0.1:9", "ls", REPO],
    );
    assert_code(&o, 1);
    assert!(stderr(&o).contains("network error"), "{}", stderr(&o));
}

#[test]
fn split_models_download_whole() {
    let (s, hub) = (Scratch::new(), hub());
    let o = run(
        s.hub_dyno(&hub.url),
        &[
            "hub",
            "pull",
            REPO,
            "--file",
            "tiny-F16-00002-of-00002.gguf",
            "--json",
        ],
    );
    assert_code(&o, 0);
    let files = json(&o)["files"].as_array().unwrap().clone();
    assert_eq!(files.len(), 2, "both parts");
    let snap = repo_dir(&s).join("snapshots").join(hub.commit(REPO));
    for part in [
        "tiny-F16-00001-of-00002.gguf",
        "tiny-F16-00002-of-00002.gguf",
    ] {
        assert!(snap.join(part).is_file(), "{part}");
    }
}

#[test]
fn models_on_disk_are_found_in_lm_studio_ollama_and_added_folders() {
    let s = Scratch::new();
    let home = s.path("home");
    let smol = model(SMOL);
    let sha = dyno::model::sha256_file(&smol).unwrap();
    // LM Studio: publisher/repo/file.
    let lms = home.join(".lmstudio/models/pub/tiny-GGUF");
    std::fs::create_dir_all(&lms).unwrap();
    std::os::unix::fs::symlink(&smol, lms.join("tiny-Q4_1.gguf")).unwrap();
    // Ollama: a manifest naming the model layer's blob.
    let ollama = home.join(".ollama/models");
    let man = ollama.join("manifests/registry.ollama.ai/library/smollm2");
    std::fs::create_dir_all(&man).unwrap();
    std::fs::create_dir_all(ollama.join("blobs")).unwrap();
    std::os::unix::fs::symlink(&smol, ollama.join(format!("blobs/sha256-{sha}"))).unwrap();
    std::fs::write(
        man.join("135m"),
        format!(
            r#"{{"schemaVersion":2,"layers":[{{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:00","size":1}},{{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:{sha}","size":1}}]}}"#
        ),
    )
    .unwrap();
    // A folder of the user's, with the gemma model and a broken file.
    let mine = s.path("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::os::unix::fs::symlink(model(GEMMA), mine.join(GEMMA)).unwrap();
    std::fs::write(mine.join("broken.gguf"), b"not a model").unwrap();

    let env = |c: &mut Command| {
        c.env("HOME", &home)
            .env("HF_HOME", s.path("hf"))
            .env_remove("HF_HUB_CACHE")
            .env_remove("OLLAMA_MODELS")
            .env_remove("XDG_CACHE_HOME");
    };
    let mut add = s.dyno();
    env(&mut add);
    let o = add
        .args(["models", "add", mine.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let mut list = s.dyno();
    env(&mut list);
    let o = list.args(["models", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let all = json(&o);
    let by = |origin: &str| -> Vec<serde_json::Value> {
        all.as_array()
            .unwrap()
            .iter()
            .filter(|m| m["origin"] == origin)
            .cloned()
            .collect()
    };
    let l = by("lm-studio");
    assert_eq!(l.len(), 1, "{all}");
    assert_eq!(l[0]["name"], "pub/tiny-GGUF/tiny-Q4_1.gguf");
    assert_eq!(l[0]["arch"], "llama");
    let o = by("ollama");
    assert_eq!(o.len(), 1, "{all}");
    assert_eq!(o[0]["name"], "smollm2:135m");
    assert_eq!(o[0]["quant"], "Q4_1");
    let f = by("folder");
    assert_eq!(f.len(), 2, "{all}");
    let gemma = f.iter().find(|m| m["name"] == GEMMA).unwrap();
    assert_eq!(gemma["quant"], "Q4_K_M");
    assert_eq!(gemma["fit"], "ram");
    let broken = f.iter().find(|m| m["name"] == "broken.gguf").unwrap();
    assert!(
        broken["error"].as_str().unwrap().contains("not a GGUF"),
        "{broken}"
    );
}

#[test]
fn a_listing_with_a_path_that_leaves_the_cache_is_refused() {
    let s = Scratch::new();
    let hub = FakeHub::start(vec![RepoSpec {
        id: "evil/escape-GGUF".into(),
        files: vec![(
            "../../../../escape-Q4_0.gguf".into(),
            Body::Bytes(vec![7u8; 64]),
        )],
        gated_token: None,
        downloads: 1,
        likes: 0,
    }]);
    let o = run(s.hub_dyno(&hub.url), &["hub", "pull", "evil/escape-GGUF"]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("unsafe path"), "{}", stderr(&o));
    assert!(!s.path("escape-Q4_0.gguf").exists());
    let hf = s.path("hf");
    assert!(
        !hf.exists() || std::fs::read_dir(hf.join("hub")).map_or(true, |mut d| d.next().is_none()),
        "nothing was written"
    );
}

#[test]
fn a_download_that_fills_the_disk_says_so_and_leaves_nothing_half_written() {
    let (s, hub) = (Scratch::new(), hub());
    // 20 MiB of room for a 98 MB model.
    let mut c = s.hub_dyno(&hub.url);
    c.args(["hub", "pull", REPO, "--quant", "q4_1"]);
    let (o, left) = on_small_disk(&c, &s.path("hf"), "20m");
    assert_code(&o, 1);
    let err = stderr(&o);
    let err = err.trim_end().lines().last().unwrap();
    assert!(err.starts_with("error: "), "one error line: {err}");
    assert!(
        err.contains("the disk is full") && err.contains("partial download was removed"),
        "{err}"
    );
    let sha = hub.sha256(REPO, Q41);
    // Lock files stay, as the Python client leaves them; they hold no data.
    for p in left.iter().filter(|p| !p.contains("/.locks/")) {
        assert!(
            !p.contains(&sha) && !p.ends_with(".incomplete") && !p.ends_with(".gguf"),
            "{p} was left behind: {left:?}"
        );
    }
    // The database is unharmed and the next pull (with room) works.
    let (rt, store) = store(&s.db());
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
    rt.block_on(store.close());
    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "q4_1"],
    );
    assert_code(&o, 0);
}

#[test]
fn an_unknown_level_is_refused_with_the_levels_the_repo_has() {
    let (s, hub) = (Scratch::new(), hub());
    let o = run(
        s.hub_dyno(&hub.url),
        &["hub", "pull", REPO, "--quant", "q9_z"],
    );
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("q9_z") && err.contains("Q4_1") && err.contains("F16"),
        "{err}"
    );
    assert!(
        !hub.requests().iter().any(|r| r.path.contains("/resolve/")),
        "no file was requested"
    );
}
