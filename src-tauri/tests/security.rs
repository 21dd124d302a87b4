//! The app's security settings, read from the files Tauri builds it from, so
//! a later change that widens them fails here rather than in a review:
//! capabilities list nothing beyond the app's own commands, the native
//! Open and Save dialogs and window events, the CSP allows
//! only the app's own origin and IPC, no script or stylesheet comes from the
//! network, and nothing in the shell starts a process from user input.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn capabilities_grant_only_the_dialogs_and_window_events() {
    let dir = root().join("capabilities");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one capability file: {files:?}");
    let cap = read_json(&files[0].path());
    assert_eq!(cap["windows"], serde_json::json!(["main"]));
    // Open and Save dialogs (paths are picked, not typed) and listening to
    // the window's drag-and-drop; no message boxes, no file system access.
    assert_eq!(
        cap["permissions"],
        serde_json::json!([
            "core:event:allow-listen",
            "core:event:allow-unlisten",
            "dialog:allow-open",
            "dialog:allow-save"
        ]),
        "the UI needs Dyno's own commands, the two dialogs and window events"
    );
    assert!(
        cap.get("remote").is_none(),
        "no remote URL may call the app"
    );
    // One plugin crate, the dialog: no shell, fs, http, opener, ...
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let plugins: Vec<&str> = manifest
        .lines()
        .filter(|l| l.trim_start().starts_with("tauri-plugin"))
        .collect();
    assert_eq!(plugins.len(), 1, "{plugins:?}");
    assert!(plugins[0].starts_with("tauri-plugin-dialog"), "{plugins:?}");
}

#[test]
fn the_csp_allows_only_the_app_itself_and_ipc() {
    let conf = read_json(&root().join("tauri.conf.json"));
    assert_eq!(conf["app"]["withGlobalTauri"], false);
    let sec = &conf["app"]["security"];
    assert!(sec.get("dangerousDisableAssetCspModification").is_none());
    assert!(sec.get("dangerousRemoteDomainIpcAccess").is_none());
    let csp = sec["csp"].as_object().expect("a CSP is set");
    assert_eq!(csp["default-src"], "'self'");
    assert_eq!(csp["script-src"], "'self'", "no inline or remote script");
    assert_eq!(csp["object-src"], "'none'");
    assert_eq!(csp["frame-ancestors"], "'none'");
    for (directive, sources) in csp {
        let sources = sources.as_str().unwrap();
        for s in sources.split_whitespace() {
            let allowed = s.starts_with('\'')
                || matches!(s, "data:" | "blob:" | "ipc:" | "http://ipc.localhost");
            assert!(allowed, "{directive} allows {s}: only the app and IPC");
        }
    }
    // The window loads the bundled UI, never a URL.
    for w in conf["app"]["windows"].as_array().unwrap() {
        assert!(w.get("url").is_none(), "{w}");
    }
}

#[test]
fn the_ui_loads_nothing_from_the_network() {
    let ui = root().join("../ui");
    let index = std::fs::read_to_string(ui.join("index.html")).unwrap();
    let mut sources = vec![("index.html".to_string(), index)];
    let mut stack = vec![ui.join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .is_some_and(|x| ["ts", "svelte", "css", "html"].contains(&x.to_str().unwrap()))
            {
                sources.push((
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                ));
            }
        }
    }
    assert!(sources.len() > 5, "the UI sources were found");
    for (name, text) in &sources {
        for bad in [
            "<script src=\"http",
            "@import url(http",
            "fetch(\"http",
            "fetch('http",
        ] {
            assert!(!text.contains(bad), "{name} loads remote content: {bad}");
        }
    }
    // Only api.ts reaches the backend.
    for (name, text) in &sources {
        if !name.ends_with("api.ts") {
            assert!(
                !text.contains("@tauri-apps/api/core"),
                "{name} calls the backend directly"
            );
        }
    }
}

#[test]
fn the_shell_starts_no_process_and_no_shell() {
    // The app's only child processes are its own workers, started by the
    // core with the app's own executable; the shell itself spawns nothing.
    for e in std::fs::read_dir(root().join("src")).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        for bad in ["Command::new", "\"sh\"", "\"bash\"", "\"cmd.exe\""] {
            assert!(!text.contains(bad), "{} contains {bad}", e.path().display());
        }
    }
}
