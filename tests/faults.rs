//! The parent survives every way a worker can end, with real crashes: the
//! worker really aborts, segfaults, hangs, or loses its parent. The run is
//! recorded with the reason, what was measured is kept, and the benchmark
//! goes on.

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn smol_args(model: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "bench",
        model.to_str().unwrap(),
        "-p",
        "16",
        "-n",
        "4",
        "-r",
        "1",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[test]
fn abort_mid_run_fails_that_run_and_the_next_runs_on_a_fresh_worker() {
    let s = Scratch::new();
    let o = s
        .dyno()
        .env("DYNO_TEST_FAULT", "abort@job:1")
        .env("DYNO_TEST_FAULT_ONCE", s.path("fired"))
        .args(smol_args(&model(SMOL), &["-t", "1,2"]))
        .output()
        .unwrap();
    assert_code(&o, 1);
    let j = json(&o);
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{j}");
    let a = &runs[0];
    assert_eq!(a["status"], "failed");
    assert_eq!(a["error_code"], "crashed");
    assert!(
        a["error"].as_str().unwrap().contains("SIGABRT"),
        "{}",
        a["error"]
    );
    // pp16 finished before the abort and keeps its figure; tg4 died in flight.
    assert_eq!(a["results"][0]["status"], "ok");
    assert!(a["results"][0]["mean_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(a["results"][1]["status"], "failed");
    let b = &runs[1];
    assert_eq!(
        b["status"], "ok",
        "the second configuration ran on a new worker: {b}"
    );
    assert_eq!(b["config"]["n_threads"], 2);
    assert_eq!(b["results"].as_array().unwrap().len(), 2);
    assert!(stderr(&o).contains("failed"), "{}", stderr(&o));
}

#[test]
fn segfault_while_loading_fails_the_model_and_the_next_model_runs() {
    let s = Scratch::new();
    let o = s
        .dyno()
        .env("DYNO_TEST_FAULT", "segv@load")
        .env("DYNO_TEST_FAULT_ONCE", s.path("fired"))
        .args(smol_args(&model(SMOL), &[model(GEMMA).to_str().unwrap()]))
        .output()
        .unwrap();
    assert_code(&o, 1);
    let j = json(&o);
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["model"]["file_name"], SMOL);
    assert_eq!(runs[0]["status"], "failed");
    assert!(
        runs[0]["error"].as_str().unwrap().contains("SIGSEGV"),
        "{}",
        runs[0]["error"]
    );
    assert!(runs[0]["results"].as_array().unwrap().is_empty());
    assert_eq!(runs[1]["model"]["file_name"], GEMMA);
    assert_eq!(runs[1]["status"], "ok");
}

#[test]
fn a_hung_worker_is_killed_after_the_timeout() {
    let s = Scratch::new();
    let t0 = Instant::now();
    let o = s
        .dyno()
        .env("DYNO_TEST_FAULT", "hang@job:1")
        .args(smol_args(&model(SMOL), &["--timeout", "3"]))
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert!(t0.elapsed() < Duration::from_secs(60));
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error_code"], "timed_out");
    assert!(r["error"].as_str().unwrap().contains("--timeout"));
    assert_eq!(
        r["results"][0]["status"], "ok",
        "the test before the hang is kept"
    );
}

/// Worker processes started for this scratch database (found through the
/// DYNO_DB in their environment, so parallel tests do not see each other's).
fn workers_of(s: &Scratch) -> Vec<u32> {
    let needle = format!("DYNO_DB={}", s.db().display());
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let is_worker = cmd.split(|b| *b == 0).any(|a| a == b"worker");
        if is_worker && env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// Start a bench whose worker hangs before its second test, and wait until
/// the first test's result is committed.
// The child is handed to the caller, which waits for it.
#[allow(clippy::zombie_processes)]
fn start_hanging_bench(s: &Scratch) -> Child {
    let mut child = s
        .dyno()
        .env("DYNO_TEST_FAULT", "hang@job:1")
        .args(smol_args(&model(SMOL), &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the first test never finished");
        }
        if s.db().exists() {
            let (rt, store) = store(&s.db());
            let done = rt.block_on(async {
                let runs = store.runs(10).await.unwrap();
                match runs.first() {
                    Some(r) => store
                        .results(r.id)
                        .await
                        .unwrap()
                        .iter()
                        .any(|x| x.status == "ok"),
                    None => false,
                }
            });
            rt.block_on(store.close());
            if done && !workers_of(s).is_empty() {
                return child;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_gone(s: &Scratch) {
    let t0 = Instant::now();
    while !workers_of(s).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "worker outlived its parent: {:?}",
            workers_of(s)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_cancels_keeps_the_measured_test_and_leaves_no_worker() {
    let s = Scratch::new();
    let child = start_hanging_bench(&s);
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 130);
    wait_gone(&s);
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "cancelled");
    assert_eq!(r["results"][0]["status"], "ok");
    assert_eq!(r["results"][1]["status"], "cancelled");
}

#[test]
fn killing_the_parent_kills_the_worker_and_keeps_the_samples() {
    let s = Scratch::new();
    let mut child = start_hanging_bench(&s);
    child.kill().unwrap(); // SIGKILL: no handler runs in the parent
    child.wait().unwrap();
    wait_gone(&s);
    // The next Dyno marks the orphaned run as interrupted; samples stay.
    let o = s.run(&["runs", "--json"]);
    assert_code(&o, 0);
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error_code"], "interrupted");
    assert_eq!(r["results"][0]["status"], "ok");
    assert!(r["results"][0]["mean_tokens_per_s"].as_f64().unwrap() > 0.0);
    let (rt, store) = store(&s.db());
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
    rt.block_on(store.close());
}

#[test]
fn a_test_llama_cpp_refuses_fails_alone_and_the_run_goes_on() {
    // A depth of 10M tokens needs a KV cache of hundreds of GB: llama.cpp cannot
    // allocate the context and says so; the worker reports that test as
    // failed and runs the next one.
    let s = Scratch::new();
    let o = s
        .dyno()
        .args(smol_args(&model(SMOL), &["-d", "10000000,0"]))
        .output()
        .unwrap();
    assert_code(&o, 1);
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error_code"], "test_failed");
    let results = r["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|x| x["test"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pp16@d10000000", "tg4@d10000000", "pp16", "tg4"]);
    for x in &results[..2] {
        assert_eq!(x["status"], "failed");
        assert!(
            x["error"].as_str().unwrap().contains("context"),
            "{}",
            x["error"]
        );
    }
    for x in &results[2..] {
        assert_eq!(
            x["status"], "ok",
            "the worker went on after the failed tests"
        );
    }
}
