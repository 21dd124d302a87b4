//! No export carries the folders a model sits in, even when they are outside
//! the home directory and their names hold spaces ("/data/LLM Models/…"):
//! typed path fields keep the file name, and paths in free text (errors)
//! lose their directories, Windows paths included.

use crate::common::*;

/// Every format, of `target`.
fn exports(s: &Scratch, target: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for format in ["md", "csv", "json", "llama-bench-json", "svg"] {
        let file = s.path(&format!(
            "{}.{}",
            target.replace(':', "-"),
            if format == "llama-bench-json" {
                "json".to_string()
            } else {
                format.to_string()
            }
        ));
        let o = s
            .dyno()
            .args(["export", target, "--format", format, "--force", "-o"])
            .arg(&file)
            .output()
            .unwrap();
        assert_code(&o, 0);
        out.push((
            format!("{target} {format}"),
            std::fs::read_to_string(&file).unwrap(),
        ));
    }
    out
}

/// Write `error` into every error column of the database, as a failure
/// naming the model's path would.
fn store_errors(db: &std::path::Path, error: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let url = format!("sqlite://{}", db.display());
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        for sql in [
            "UPDATE runs SET status = 'failed', error = ?",
            "UPDATE results SET error = ?",
            "UPDATE sweep_levels SET error = ?, quality_error = ?1",
        ] {
            sqlx::query(sql).bind(error).execute(&pool).await.unwrap();
        }
        pool.close().await;
    });
}

#[test]
fn exports_keep_no_folders_of_paths_with_spaces() {
    let s = Scratch::new();
    let dir = s.path("LLM Models");
    std::fs::create_dir_all(&dir).unwrap();
    let m = dir.join("smol copy.gguf");
    std::fs::copy(model(SMOL), &m).unwrap();
    let m = m.to_str().unwrap();
    let small = ["-p", "8", "-n", "2", "-r", "1", "--no-telemetry"];

    let o = s.run(&[&["bench", m][..], &small, &["--json"]].concat());
    assert_code(&o, 0);
    let run_id = json(&o)["runs"][0]["run_id"].to_string();
    let o = s.run(
        &[
            &["sweep", "--files", m, "--no-quality"][..],
            &small,
            &["--json"],
        ]
        .concat(),
    );
    assert_code(&o, 0);
    let sweep = format!("sweep:{}", json(&o)["sweep_id"]);

    let tmp = s.dir.path().to_str().unwrap().to_string();
    store_errors(
        &s.db(),
        &format!(
            "cannot read {m}: gone; also C:\\Users\\zqxuser\\LLM Models\\a b.gguf and \\\\fileserver7\\modelshare\\LLM Models\\c.gguf"
        ),
    );

    let tmp_name = s.dir.path().file_name().unwrap().to_str().unwrap();
    let mut all = exports(&s, &run_id);
    all.extend(exports(&s, &sweep));
    for (what, text) in &all {
        for leak in [
            tmp.as_str(),
            tmp_name,
            "LLM Models",
            "zqxuser",
            "fileserver7",
            "modelshare",
        ] {
            assert!(!text.contains(leak), "{what} holds {leak:?}:\n{text}");
        }
    }
    // The model is still named, and the error still says what happened.
    let (_, doc) = all.iter().find(|(w, _)| w.ends_with(" json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(doc).unwrap();
    assert_eq!(doc["runs"][0]["model"]["path"], "smol copy.gguf");
    assert_eq!(
        doc["runs"][0]["error"],
        "cannot read smol copy.gguf: gone; also a b.gguf and c.gguf"
    );
}
