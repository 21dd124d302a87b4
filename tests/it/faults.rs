//! The parent survives every way a worker can end, with real crashes: the
//! worker really aborts, segfaults, hangs, or loses its parent. The run is
//! recorded with the reason, what was measured is kept, and the benchmark
//! goes on.

use std::ffi::OsString;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// A short bench of SmolLM2 (pp16 and tg4, one repetition each), then
/// `extra`.
fn smol_args(extra: &str) -> Vec<OsString> {
    argv(&format!("bench SMOL -p 16 -n 4 -r 1 --json {extra}"))
}

#[test]
fn abort_mid_run_fails_that_run_and_the_next_runs_on_a_fresh_worker() {
    let s = Scratch::new();
    let o = s
        .dyno()
        .env("DYNO_TEST_FAULT", "abort@job:1")
        .env("DYNO_TEST_FAULT_ONCE", s.path("fired"))
        .args(smol_args("-t 1,2"))
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
        .args(smol_args("GEMMA"))
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
        // Long enough that a healthy load or test on a busy 2-core machine
        // (the suite runs tests in parallel) is never taken for a hang.
        .args(smol_args("--timeout 15"))
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
        .args(smol_args(""))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let done = wait_for_results(s, &mut child, "the first test never finished", |r| {
        r.iter()
            .any(|x| x.status == dyno::vocab::status::ResultStatus::Ok)
            && !workers_of(s).is_empty()
    });
    assert!(done);
    child
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
    // SAFETY: kill takes plain integers and touches no memory of ours; the
    // child is still ours to wait for, so its pid cannot have been reused.
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
    // The next Dyno marks the orphaned run as interrupted; finished tests stay.
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

/// Whether a run's owner lives is asked of the lock it holds, not of a pid
/// and a host name: a pid is reused, a host is renamed (macOS does it on a
/// network change), and neither may stop a dead run from being closed or
/// close a live one.
#[test]
fn a_dead_owners_run_is_closed_though_its_pid_lives_and_the_host_was_renamed() {
    let s = Scratch::new();
    let mut dead = start_hanging_bench(&s);
    dead.kill().unwrap();
    dead.wait().unwrap();
    wait_gone(&s);
    // Its pid now belongs to a live process (this one), under another name.
    sql(
        &s.db(),
        &format!(
            "UPDATE runs SET owner_pid = {}, owner_host = 'before-rename'",
            std::process::id()
        ),
    );
    let live = start_hanging_bench(&s);
    // The newest run had a finished test already (the dead one's), so wait
    // for the live bench's own run to finish its first test and hang.
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the live bench never got going"
        );
        let (rt, store) = store(&s.db());
        let ready = rt.block_on(async {
            let runs = store.runs(10).await.unwrap();
            match runs.iter().find(|r| r.id == 2) {
                Some(r) => store
                    .results(r.id)
                    .await
                    .unwrap()
                    .iter()
                    .any(|x| x.status == dyno::vocab::status::ResultStatus::Ok),
                None => false,
            }
        });
        rt.block_on(store.close());
        if ready {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    sql(&s.db(), "UPDATE runs SET owner_host = 'before-rename'");
    // Any Dyno that opens the database closes what is orphaned.
    let o = s.run(&["runs", "--json"]);
    assert_code(&o, 0);
    let status = |s: &Scratch| {
        let (rt, store) = store(&s.db());
        let mut rows: Vec<(i64, String, Option<String>)> = rt
            .block_on(store.runs(10))
            .unwrap()
            .into_iter()
            .map(|r| {
                (
                    r.id,
                    r.status.to_string(),
                    r.error_code.map(|c| c.to_string()),
                )
            })
            .collect();
        rt.block_on(store.close());
        rows.sort();
        rows
    };
    let interrupted = Some("interrupted".to_string());
    assert_eq!(
        status(&s),
        [
            (1, "failed".into(), interrupted.clone()),
            (2, "running".into(), None),
        ],
        "the dead run is closed, the live one left alone"
    );
    let mut live = live;
    live.kill().unwrap();
    live.wait().unwrap();
    wait_gone(&s);
    let o = s.run(&["runs", "--json"]);
    assert_code(&o, 0);
    assert!(
        status(&s).iter().all(|r| r.2 == interrupted),
        "{:?}",
        status(&s)
    );
}

#[test]
fn a_kill_mid_test_keeps_its_repetitions_and_marks_it_interrupted() {
    // Each repetition is committed as it arrives: nothing measured is lost.
    let cut = killed_mid_test(false);
    assert_eq!(
        cut["samples_ns"].as_array().map(Vec::len),
        Some(1),
        "the repetition measured before the kill is kept: {cut}"
    );
    // Held until the test ends (DYNO_HOLD_SAMPLES=1), the test in progress
    // keeps none, and says so in the same way.
    let cut = killed_mid_test(true);
    assert_eq!(
        cut["samples_ns"].as_array().map(Vec::len).unwrap_or(0),
        0,
        "{cut}"
    );
}

/// Three repetitions per test; the worker stops for good after sending the
/// second test's first repetition, then the parent is killed. Returns that
/// test's result as the next Dyno reports it.
fn killed_mid_test(hold: bool) -> serde_json::Value {
    let s = Scratch::new();
    let mut cmd = s.dyno();
    if hold {
        cmd.env("DYNO_HOLD_SAMPLES", "1");
    }
    let mut child = cmd
        .env("DYNO_TEST_FAULT", "hang@sample:1:0")
        .args(argv("bench SMOL -p 16 -n 4 -r 3 --json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = wait_for_results(&s, &mut child, "the second test never started", |r| {
        r.len() >= 2
    });
    assert!(started, "dyno ended before its second test started");
    if hold {
        // Held repetitions never reach the database before the test ends, so
        // there is nothing to watch for: give the worker time to send it
        // (tg4 on SmolLM2 takes milliseconds), then kill.
        std::thread::sleep(Duration::from_secs(3));
    } else {
        // Kill once the repetition is committed, however loaded the machine:
        // a fixed sleep failed when the parallel tests starved this one.
        let committed = wait_for_results(&s, &mut child, "the repetition was never saved", |r| {
            r.get(1)
                .is_some_and(|t| t.samples.as_ref().is_some_and(|s| !s.is_empty()))
        });
        assert!(committed, "dyno ended before it saved the repetition");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    wait_gone(&s);
    let o = s.run(&["runs", "--json"]);
    assert_code(&o, 0);
    let r = &json(&o)["runs"][0];
    assert_eq!(r["error_code"], "interrupted");
    let first = &r["results"][0];
    assert_eq!(first["status"], "ok");
    assert_eq!(first["samples_ns"].as_array().unwrap().len(), 3);
    let cut = r["results"][1].clone();
    assert_eq!(cut["status"], "failed");
    assert!(
        cut["error"].as_str().unwrap().contains("interrupted"),
        "{cut}"
    );
    cut
}

#[test]
fn a_test_that_cannot_fit_fails_alone_and_the_run_goes_on() {
    // A depth of 10M tokens needs a KV cache of hundreds of GB. Dyno's memory
    // check refuses that test before llama.cpp is asked; with the check off,
    // llama.cpp cannot allocate the context and says so. Either way the
    // worker reports that test as failed and runs the next one.
    for (extra, says) in [
        ("-d 10000000,0", "KV cache"),
        ("-d 10000000,0 --no-memory-check", "context"),
    ] {
        a_test_fails_alone(extra, says);
    }
}

fn a_test_fails_alone(extra: &str, says: &str) {
    let s = Scratch::new();
    let o = s.dyno().args(smol_args(extra)).output().unwrap();
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
            x["error"].as_str().unwrap().contains(says),
            "{extra:?}: {}",
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

#[test]
fn a_model_too_big_for_free_memory_is_refused_before_loading() {
    // DYNO_MEMORY_LIMIT fakes a small machine: 100 MiB cannot hold SmolLM2's
    // 94 MiB of weights plus llama.cpp's own needs.
    let s = Scratch::new();
    let o = s
        .dyno()
        .env("DYNO_MEMORY_LIMIT", "100M")
        .args(smol_args(""))
        .output()
        .unwrap();
    assert_code(&o, 2);
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error_code"], "insufficient_memory");
    let why = r["error"].as_str().unwrap();
    for part in [
        "SmolLM2-135M-Instruct.Q4_1.gguf needs about",
        "100.00 MiB is allowed by DYNO_MEMORY_LIMIT",
        "--no-memory-check",
    ] {
        assert!(why.contains(part), "{part:?} in {why}");
    }
    assert!(
        r["results"].as_array().unwrap().is_empty(),
        "nothing was measured: {r}"
    );
    assert!(workers_of(&s).is_empty());

    // The way out works: the same limit with the check off loads and runs.
    let o = s
        .dyno()
        .env("DYNO_MEMORY_LIMIT", "100M")
        .args(smol_args("--no-memory-check"))
        .output()
        .unwrap();
    assert_code(&o, 0);

    // A limit that is not a size is refused by name.
    let o = s
        .dyno()
        .env("DYNO_MEMORY_LIMIT", "lots")
        .args(smol_args(""))
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(json(&o)["runs"][0]["error"]
        .as_str()
        .unwrap()
        .contains("DYNO_MEMORY_LIMIT=lots is not a size"));
    let (rt, store) = store(&s.db());
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
    rt.block_on(store.close());
}

/// `dyno sweep` over two levels quantised from SmolLM2, measured Q8_0 first.
fn sweep_args() -> Vec<OsString> {
    argv("sweep --from SMOL --levels q8_0,q4_0 --no-quality -p 16 -n 4 -r 1 --json")
}

#[test]
fn a_worker_killed_aborted_or_hung_mid_sweep_fails_that_level_and_the_sweep_goes_on() {
    // One quantisation cache for the three sweeps, so the levels are made once.
    let cache = tempfile::tempdir().unwrap();
    // Only the hang gets a short --timeout, as short as the single-run
    // hang test's: on a busy 2-core machine a healthy load can be silent
    // for seconds, never for 15, and every second of it is CI's wait.
    for (fault, timeout, code, says) in [
        ("kill@job:1", "600", "crashed", "SIGKILL"),
        ("abort@job:1", "600", "crashed", "SIGABRT"),
        ("hang@job:1", "15", "timed_out", "--timeout"),
    ] {
        let s = Scratch::new();
        let o = s
            .dyno()
            .env("DYNO_CACHE_DIR", cache.path())
            .env("DYNO_TEST_FAULT", fault)
            .env("DYNO_TEST_FAULT_ONCE", s.path("fired"))
            .args(sweep_args())
            .args(["--timeout", timeout])
            .output()
            .unwrap();
        assert_code(&o, 1);
        let j = json(&o);
        let bad = run_of(&j, "Q8_0");
        assert_eq!(bad["status"], "failed", "{fault}");
        assert_eq!(bad["error_code"], code, "{fault}");
        assert!(
            bad["error"].as_str().unwrap().contains(says),
            "{fault}: {}",
            bad["error"]
        );
        assert_eq!(
            bad["results"][0]["status"], "ok",
            "{fault}: the test before the fault is kept"
        );
        let good = run_of(&j, "Q4_0");
        assert_eq!(
            good["status"], "ok",
            "{fault}: the sweep went on: {}",
            good["error"]
        );
        assert!(stderr(&o).contains("1 of 2 level(s) failed"), "{fault}");
        assert!(workers_of(&s).is_empty(), "{fault}");
    }
}

#[test]
fn killing_the_parent_mid_sweep_keeps_the_levels_done_and_running_again_resumes() {
    let s = Scratch::new();
    let cache = s.path("cache");
    // Q8_0 is measured, then the Q4_0 worker hangs while loading; the parent
    // gets SIGKILL then, with no chance to clean up.
    let mut child = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .env("DYNO_TEST_FAULT", "hang@load:Q4_0")
        .args(sweep_args())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if t0.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("Q8_0 was never measured");
        }
        // The level, not only its run: on a busy machine the run is stored
        // ok a moment before the sweep records the level as done, and a kill
        // in between rightly measures the level again.
        let q8_done = s.db().exists() && {
            let (rt, store) = store(&s.db());
            let levels = rt.block_on(store.levels(1)).unwrap_or_default();
            rt.block_on(store.close());
            levels
                .iter()
                .any(|l| l.level == "Q8_0" && l.status == dyno::vocab::status::LevelStatus::Ok)
        };
        if q8_done && !workers_of(&s).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    wait_gone(&s);
    let (rt, store) = store(&s.db());
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
    rt.block_on(store.close());

    // Running the same sweep again resumes it: Q8_0 is kept, Q4_0 measured.
    let o = s
        .dyno()
        .env("DYNO_CACHE_DIR", &cache)
        .args(sweep_args())
        .output()
        .unwrap();
    assert_code(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("resuming sweep"), "{err}");
    assert!(err.contains("Q8_0 skipped: already measured"), "{err}");
    let j = json(&o);
    assert_eq!(run_of(&j, "Q8_0")["status"], "ok");
    assert_eq!(run_of(&j, "Q4_0")["status"], "ok");
}

#[test]
fn the_memory_estimate_reads_the_real_models_shape() {
    // SmolLM2-135M: 30 layers, 3 KV heads of 64 for K and for V, a vocabulary
    // of 49,152 and a feed-forward width of 1,536.
    let p = dyno::vocab::MemoryProfile::read(&model(SMOL)).unwrap();
    assert_eq!(p.n_layers, 30);
    assert_eq!(p.kv_elements_per_token, 30 * (3 * 64 + 3 * 64));
    assert_eq!(
        (p.n_embd, p.n_vocab, p.n_ff, p.n_head),
        (576, 49_152, 1536, 9)
    );
    let info = dyno::model::inspect(&model(SMOL)).unwrap();
    assert_eq!(p.weight_bytes, info.weight_bytes);
}
