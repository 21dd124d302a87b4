//! `dyno sweep` on the real SmolLM2 model through real llama.cpp: local
//! quantisation, quality against the reference, resume, a failing level,
//! and cancel cleaning up partial files.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::common::*;

/// `dyno sweep` with a small plan (the test is about the sweep, not the
/// timings), then `extra`.
fn sweep_args(extra: &str) -> Vec<OsString> {
    argv(&format!("sweep -p 32 -n 8 -r 1 -t 2 {extra}"))
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_local_sweep_quantises_measures_and_kld_grows_as_bits_drop() {
    let s = Scratch::new();
    let cache = s.path("cache");
    let o = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .args(sweep_args(
            "--from SMOL --levels q4_0,F16,q8_0 --quality-tokens 512 --json",
        ))
        .output()
        .unwrap();
    assert_code(&o, 0);
    // The base is Q4_1: the requantising warning names what quality means.
    assert!(
        stderr(&o).contains("already quantised (Q4_1)"),
        "{}",
        stderr(&o)
    );
    let j = json(&o);
    assert!(j["sweep_id"].as_i64().unwrap() > 0);
    let levels: Vec<&str> = j["sweep"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["F16", "Q8_0", "Q4_0"], "highest precision first");
    assert_eq!(j["runs"].as_array().unwrap().len(), 3);
    let mut klds = Vec::new();
    for q in ["F16", "Q8_0", "Q4_0"] {
        let r = run_of(&j, q);
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["sweep_id"], j["sweep_id"]);
        let tests: Vec<&str> = r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["test"].as_str().unwrap())
            .collect();
        assert_eq!(
            tests,
            ["pp32", "tg8", "pp32+tg8"],
            "default plan adds pp+tg"
        );
        let qual = &r["quality"];
        assert!(
            f(&qual["ppl"]) > 1.0 && f(&qual["ppl"]).is_finite(),
            "{qual}"
        );
        assert_eq!(qual["n_positions"], 255);
        assert_eq!(
            qual["is_reference"], false,
            "the Q4_1 base is the reference"
        );
        klds.push((
            f(&qual["kld_mean"]),
            f(&qual["kld_p99"]),
            f(&qual["top1_agreement"]),
        ));
    }
    assert!(
        klds[0].0 < klds[1].0 && klds[1].0 < klds[2].0,
        "KLD must grow as the bits drop: {klds:?}"
    );
    assert!(
        klds.iter().all(|k| k.1 >= k.0),
        "p99 is at least the mean: {klds:?}"
    );
    assert!(klds[2].2 < klds[0].2, "top-1 agreement falls: {klds:?}");
    // Quantised files are cached under the base's sha256, complete.
    let sha = run_of(&j, "F16")["quality"]["reference_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let cached = files_under(&cache.join("quantized").join(&sha));
    assert_eq!(cached.len(), 3, "{cached:?}");
    assert!(cached.iter().all(|p| p.extension().unwrap() == "gguf"));
    assert!(j["sweep"]["recommendation"].as_str().is_some());

    // The table says the same, with the frontier marked.
    let t = s.run(&["show-sweep", &j["sweep_id"].to_string()]);
    assert_code(&t, 0);
    let table = stdout(&t);
    assert!(table.contains("| Q4_0 |") && table.contains("★"), "{table}");

    // The result card shows every level, the recommendation and the conditions.
    let card = check_card(&s, &format!("sweep:{}", j["sweep_id"]), || s.dyno());
    for text in [
        "F16",
        "Q8_0",
        "Q4_0",
        "PREFILL pp32",
        "DECODE tg8",
        "threads 2",
    ] {
        assert!(card.contains(text), "{text} missing from the card");
    }
    let rec = j["sweep"]["recommendation"].as_str().unwrap();
    let rec_level = rec.split(':').next().unwrap();
    assert!(card.contains(&format!("→ {rec_level}:")), "{card}");

    // The top-k method is a lower bound of the exact divergence, and close.
    let exact = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .args(sweep_args(
            "--from SMOL --levels q4_0 --quality-tokens 512 --quality-topk 0 --json",
        ))
        .output()
        .unwrap();
    assert_code(&exact, 0);
    assert!(
        stderr(&exact).contains("from the cache"),
        "{}",
        stderr(&exact)
    );
    let e = f(&run_of(&json(&exact), "Q4_0")["quality"]["kld_mean"]);
    assert!(
        klds[2].0 <= e * (1.0 + 1e-4),
        "top-k {} vs exact {e}",
        klds[2].0
    );
    assert!(
        klds[2].0 > 0.95 * e,
        "the default top-k is within 5% of exact: {} vs {e}",
        klds[2].0
    );
}

// The tests that crash a worker or the quantizer do it through
// DYNO_TEST_FAULT (worker::fault).
#[test]
fn running_a_sweep_again_skips_levels_already_measured() {
    let s = Scratch::new();
    let cache = s.path("cache");
    let args = sweep_args("--from SMOL --levels q8_0,q4_0 --no-quality --json");
    // The first worker to load a model crashes: Q8_0 fails, Q4_0 runs.
    let first = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .env("DYNO_TEST_FAULT", "abort@load")
        .env("DYNO_TEST_FAULT_ONCE", s.path("fired"))
        .args(&args)
        .output()
        .unwrap();
    assert_code(&first, 1);
    let a = json(&first);
    let id = a["sweep_id"].as_i64().unwrap();
    assert_eq!(run_of(&a, "Q8_0")["status"], "failed");
    assert_eq!(run_of(&a, "Q4_0")["status"], "ok");
    let q4_run = run_of(&a, "Q4_0")["run_id"].as_i64().unwrap();

    let again = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .args(&args)
        .output()
        .unwrap();
    assert_code(&again, 0);
    let err = stderr(&again);
    assert!(err.contains(&format!("resuming sweep {id}")), "{err}");
    assert!(err.contains("Q4_0 skipped: already measured"), "{err}");
    let b = json(&again);
    assert_eq!(b["sweep_id"].as_i64(), Some(id), "same sweep");
    assert_eq!(
        run_of(&b, "Q8_0")["status"],
        "ok",
        "the failed level ran again"
    );
    assert_eq!(
        run_of(&b, "Q4_0")["run_id"].as_i64(),
        Some(q4_run),
        "the finished level was not measured again"
    );
    assert_eq!(
        b["runs"].as_array().unwrap().len(),
        2,
        "earlier attempts are not shown"
    );

    // --resume ID does the same with the stored plan; nothing is left to do.
    let resumed = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .args(["sweep", "--resume", &id.to_string(), "--json"])
        .output()
        .unwrap();
    assert_code(&resumed, 0);
    assert_eq!(
        stderr(&resumed)
            .matches("skipped: already measured")
            .count(),
        2
    );
    let list = s.run(&["sweeps", "--json"]);
    assert_code(&list, 0);
    assert_eq!(json(&list).as_array().unwrap().len(), 1);
    assert!(json(&list)[0]["sweep"]["spec"]["source"]["from"].is_string());

    // A spec damaged on disk (or written by an older Dyno) cannot be
    // resumed, and says so; the sweep and its runs still show.
    sql(
        &s.db(),
        &format!("UPDATE sweeps SET args_json = '{{\"source\": 1}}' WHERE id = {id}"),
    );
    let resumed = s.run(&["sweep", "--resume", &id.to_string()]);
    assert_code(&resumed, 2);
    assert!(
        stderr(&resumed).contains(&format!(
            "sweep {id} was stored by another Dyno version and cannot be resumed; run it afresh"
        )),
        "{}",
        stderr(&resumed)
    );
    let list = s.run(&["sweeps", "--json"]);
    assert_code(&list, 0);
    let listed = &json(&list)[0];
    assert!(listed["sweep"]["spec"].is_null(), "{listed}");
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn a_corrupt_file_among_the_levels_fails_alone() {
    let s = Scratch::new();
    let smol = model(SMOL);
    // A download cut short: the header survives, the tensor data does not.
    let bytes = std::fs::read(&smol).unwrap();
    let cut = s.path("SmolLM2-cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let o = s.run(&[
        "sweep",
        "-p",
        "32",
        "-n",
        "8",
        "-r",
        "1",
        "--no-quality",
        "--files",
        cut.to_str().unwrap(),
        smol.to_str().unwrap(),
        "--json",
    ]);
    assert_code(&o, 1);
    let j = json(&o);
    let levels = j["sweep"]["levels"].as_array().unwrap();
    let bad = levels
        .iter()
        .find(|l| l["status"] == "failed")
        .expect("a failed level");
    assert_eq!(bad["error_code"], "bad_file");
    assert!(
        bad["error"].as_str().unwrap().contains("truncated"),
        "{bad}"
    );
    assert_eq!(
        run_of(&j, "Q4_1")["status"],
        "ok",
        "the good level still ran"
    );
    assert!(
        stderr(&o).contains("1 of 2 level(s) failed"),
        "{}",
        stderr(&o)
    );
    // The card says why the bad level has no bars.
    let card = check_card(&s, &format!("sweep:{}", j["sweep_id"]), || s.dyno());
    assert!(card.contains("failed: "), "{card}");
}

#[test]
fn a_failed_or_cancelled_quantisation_leaves_no_partial_file() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let s = Scratch::new();
    let cache = s.path("cache");
    // The quantizer dies after writing: that level fails, its half-made
    // file is deleted, and the next level is made and measured.
    let o = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .env("DYNO_TEST_FAULT", "abort@quantized")
        .env("DYNO_TEST_FAULT_ONCE", s.path("fired"))
        .args(sweep_args(
            "--from SMOL --levels q8_0,q4_0 --no-quality --json",
        ))
        .output()
        .unwrap();
    assert_code(&o, 1);
    let j = json(&o);
    let q8 = &j["sweep"]["levels"][0];
    assert_eq!(q8["level"], "Q8_0");
    assert_eq!(q8["status"], "failed");
    assert_eq!(q8["error_code"], "crashed");
    assert_eq!(run_of(&j, "Q4_0")["status"], "ok");
    let files = files_under(&cache);
    assert_eq!(files.len(), 1, "only the finished Q4_0: {files:?}");

    // Ctrl-C while the quantizer is busy: exit 130, nothing half-made left.
    let cache2 = s.path("cache2");
    let child = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache2)
        .env("DYNO_TEST_FAULT", "hang@quantized")
        .args(sweep_args("--from SMOL --levels q8_0 --no-quality"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let partial = files_under(&cache2)
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".partial"));
        if partial {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no partial file appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill takes plain integers and touches no memory of ours; the
    // child is still ours to wait for, so its pid cannot have been reused.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("--resume"), "{}", stderr(&out));
    let left = files_under(&cache2);
    assert!(left.is_empty(), "cancel left files behind: {left:?}");
    let list = s.run(&["sweeps", "--json"]);
    let sweeps = json(&list);
    let cancelled = sweeps
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["sweep"]["status"] == "cancelled")
        .expect("the cancelled sweep is listed");
    assert_eq!(cancelled["sweep"]["levels"][0]["status"], "cancelled");
}

#[test]
fn a_level_the_disk_has_no_room_for_fails_alone_with_nothing_half_made() {
    let s = Scratch::new();
    let cache = s.path("cache");
    let mut c = s.dyno();
    c.env("DYNO_CACHE_DIR", &cache).args(sweep_args(
        "--from SMOL --levels q8_0,q4_1 --no-quality --json",
    ));
    // Q8_0 of SmolLM2 is about 140 MB; the cache gets 40 MiB.
    let (o, left) = on_small_disk(&c, &cache, "40m");
    assert_code(&o, 1);
    let j = json(&o);
    let q8 = j["sweep"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["level"] == "Q8_0")
        .expect("a Q8_0 level");
    assert_eq!(q8["status"], "failed", "{q8}");
    assert_eq!(q8["error_code"], "disk_full", "{q8}");
    let why = q8["error"].as_str().unwrap();
    assert!(
        why.contains("not enough disk space") && why.contains("DYNO_CACHE_DIR"),
        "{why}"
    );
    assert_eq!(run_of(&j, "Q4_1")["status"], "ok", "the other level ran");
    assert!(
        left.iter()
            .all(|p| !p.ends_with(".gguf") && !p.ends_with(".partial")),
        "nothing half-made: {left:?}"
    );
}
