//! Adding models by path, as the app's "Add a folder…", "Open a GGUF…" and
//! drag-and-drop do (they call the same `app::models` functions as these
//! commands): folders and single files, with spaces in their names and
//! outside HOME, refused with a reason when they are not usable, listed,
//! and removed again without touching the files. Also where exports may be
//! written: the right extension, and no file replaced without `--force`.

use std::process::Command;

use crate::common::*;

/// `dyno` that sees only the places added here, not this machine's caches.
fn isolated(s: &Scratch) -> impl Fn() -> Command + '_ {
    move || {
        let mut c = s.dyno();
        c.env("HOME", s.path("home"))
            .env("HF_HOME", s.path("hf"))
            .env_remove("HF_HUB_CACHE")
            .env_remove("OLLAMA_MODELS")
            .env_remove("XDG_CACHE_HOME");
        c
    }
}

fn models(dyno: &impl Fn() -> Command) -> Vec<serde_json::Value> {
    let o = dyno().args(["models", "--json"]).output().unwrap();
    assert_code(&o, 0);
    json(&o).as_array().unwrap().clone()
}

#[test]
fn a_folder_and_a_single_file_are_added_listed_and_removed() {
    let s = Scratch::new();
    let dyno = isolated(&s);
    // Outside HOME, with spaces, as people name their folders.
    let folder = s.path("LLM Models/gemma");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(model(GEMMA), folder.join(GEMMA)).unwrap();
    let loose = s.path("Some Downloads");
    std::fs::create_dir_all(&loose).unwrap();
    let file = loose.join("smol copy.gguf");
    std::fs::copy(model(SMOL), &file).unwrap();
    // A sibling the single file must not drag in.
    std::fs::copy(model(GEMMA), loose.join("other.gguf")).unwrap();

    assert!(models(&dyno).is_empty(), "an isolated HOME has no models");

    let o = dyno()
        .args(["models", "add", folder.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let added = json(&o);
    assert_eq!(added["added"], true);
    assert_eq!(added["place"]["kind"], "folder");
    assert_eq!(added["models"].as_array().unwrap().len(), 1, "{added}");
    assert_eq!(added["models"][0]["file_name"], GEMMA);
    assert_eq!(added["models"][0]["quant"], "Q4_K_M");

    let o = dyno()
        .args(["models", "add", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).starts_with("added ") && stdout(&o).contains("(1 model there now)"),
        "{}",
        stdout(&o)
    );
    // Adding the same file again is harmless and says so.
    let o = dyno()
        .args(["models", "add", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(
        stdout(&o).starts_with("already searched:"),
        "{}",
        stdout(&o)
    );

    let all = models(&dyno);
    let names: Vec<&str> = all
        .iter()
        .map(|m| m["file_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [GEMMA, "smol copy.gguf"], "{all:#?}");
    let smol = &all[1];
    assert_eq!(smol["origin"], "folder");
    assert_eq!(smol["quant"], "Q4_1");
    assert_eq!(smol["arch"], "llama");
    assert!(smol["model_name"].is_string(), "{smol}");

    let o = dyno().args(["models", "added", "--json"]).output().unwrap();
    assert_code(&o, 0);
    let places = json(&o);
    let kinds: Vec<(&str, &str)> = places
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["kind"].as_str().unwrap(), p["path"].as_str().unwrap()))
        .collect();
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).unwrap().display().to_string();
    assert_eq!(
        kinds,
        [
            ("folder", canon(&folder).as_str()),
            ("file", canon(&file).as_str())
        ]
    );

    // Removing forgets the place and keeps the file.
    let o = dyno()
        .args(["models", "remove", folder.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert!(folder.join(GEMMA).is_file());
    let names: Vec<String> = models(&dyno)
        .iter()
        .map(|m| m["file_name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["smol copy.gguf"]);
    let o = dyno()
        .args(["models", "remove", folder.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("dyno models added"), "{}", stderr(&o));

    // A place that vanished (an unplugged drive) is listed as missing and
    // can still be removed.
    let stored = canon(&file);
    std::fs::remove_file(&file).unwrap();
    let o = dyno().args(["models", "added", "--json"]).output().unwrap();
    assert_eq!(json(&o)[0]["kind"], "missing");
    let o = dyno().args(["models", "remove", &stored]).output().unwrap();
    assert_code(&o, 0);
    let o = dyno().args(["models", "added"]).output().unwrap();
    assert!(
        stdout(&o).starts_with("no folders or files added"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn unusable_places_are_refused_with_what_to_do() {
    let s = Scratch::new();
    let dyno = isolated(&s);
    let refuse = |path: &std::path::Path, says: &str| {
        let o = dyno()
            .args(["models", "add", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_code(&o, 2);
        assert!(
            stderr(&o).contains(says),
            "{}: {}",
            path.display(),
            stderr(&o)
        );
    };
    refuse(
        &s.path("no such folder"),
        "choose an existing folder or .gguf file",
    );
    let text = s.path("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    refuse(&text, "is not a .gguf file");
    // A truncated download: the header reader's reason, and the way out.
    let bytes = std::fs::read(model(SMOL)).unwrap();
    let cut = s.path("cut short.gguf");
    std::fs::write(&cut, &bytes[..4096]).unwrap();
    refuse(&cut, "is not a readable GGUF model");
    refuse(&cut, "download it again");
    let o = dyno().args(["models", "added", "--json"]).output().unwrap();
    assert_eq!(json(&o), serde_json::json!([]), "nothing was added");
}

#[test]
fn exports_need_the_formats_extension_and_force_to_replace() {
    let s = Scratch::new();
    let o = s.bench("-p 16 -n 4 -r 1 --json");
    assert_code(&o, 0);
    let id = json(&o)["runs"][0]["run_id"].to_string();

    let wrong = s.path("card.json");
    let o = s.run(&[
        "export",
        &id,
        "--format",
        "png",
        "-o",
        wrong.to_str().unwrap(),
    ]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("does not end in .png"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("card.png"), "{}", stderr(&o));
    assert!(!wrong.exists());

    let md = s.path("run.md");
    std::fs::write(&md, "someone's notes").unwrap();
    let o = s.run(&["export", &id, "--format", "md", "-o", md.to_str().unwrap()]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&md).unwrap(), "someone's notes");

    let o = s.run(&[
        "export",
        &id,
        "--format",
        "md",
        "-o",
        md.to_str().unwrap(),
        "--force",
    ]);
    assert_code(&o, 0);
    assert!(std::fs::read_to_string(&md).unwrap().contains("pp16"));
}
