//! Disturbed runs, end to end on the real model: a program that starts
//! burning a core while Dyno times decode must flag the result, by name, in
//! the JSON, the table and the stored run; `--retry-disturbed` measures the
//! flagged test again as a run of its own and keeps the first.
//!
//! A clean run must come out unflagged, and Dyno must never blame its own
//! processes. The false-positive rate over 20 clean runs is a benchmark in
//! docs/method.md (`scripts/bench/disturbance-fp.sh`).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;
use crate::quiet;
use serde_json::Value;

/// A busy loop under a name of its own (`/bin/sh` copied as `dyno-hog`), so
/// the disturbance can be checked to name it.
pub struct Hog {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Hog {
    pub fn start() -> Hog {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("dyno-hog");
        std::fs::copy("/bin/sh", &exe).unwrap();
        let mut cmd = Command::new(&exe);
        cmd.args(["-c", "while :; do :; done"]).stdin(Stdio::null());
        // Dies with the test process however that ends: a hog left behind
        // by an interrupted run would disturb every run after it.
        // SAFETY: prctl in the forked child before exec allocates nothing
        // and takes no lock, as a pre_exec closure must.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().expect("the hog starts");
        Hog { child, _dir: dir }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `dyno bench` with `opts`, starting the hog once the run's first
/// test has begun (its result row exists) and keeping it busy to the end.
/// On the run's signal, not after a fixed delay: a fast machine could
/// finish before a delay ends, a slow one still be loading.
fn bench_with_hog(s: &Scratch, opts: &str) -> (std::process::Output, Value) {
    let mut c = s.dyno();
    c.args(argv(&format!("bench SMOL {opts} --json")))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("dyno runs");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the first test never began"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "dyno ended before its first test began"
        );
        if s.db().exists() {
            let (rt, store) = store(&s.db());
            let began = rt.block_on(async {
                match store.runs(1).await.unwrap().first() {
                    Some(r) => !store.results(r.id).await.unwrap().is_empty(),
                    None => false,
                }
            });
            rt.block_on(store.close());
            if began {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let hog = Hog::start();
    let out = child.wait_with_output().expect("dyno ends");
    drop(hog);
    assert_code(&out, 0);
    let j = json(&out);
    (out, j)
}

fn disturbed_names(r: &Value) -> Vec<String> {
    r["disturbance"]["processes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| p["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_program_started_mid_run_flags_the_result_and_is_named() {
    let _q = quiet();
    let s = Scratch::new();
    // tg256 × 6 takes several seconds here; the hog starts as the test
    // begins (its warm-up), and runs through the timed phase.
    let (_, j) = bench_with_hog(&s, "-p 0 -n 256 -r 6 -t 2");
    let r = &j["runs"][0]["results"][0];
    assert_eq!(r["disturbed"], true, "{}", r["disturbance"]);
    let d = &r["disturbance"];
    assert!(
        d["others_cpu_cores"].as_f64().unwrap() > 0.2,
        "the hog ran for part of the timed phase: {d}"
    );
    assert_eq!(d["cores_in_use"], 2);
    assert!(
        disturbed_names(r).iter().any(|n| n == "dyno-hog"),
        "the competing program is named: {d}"
    );
    let reasons: Vec<&str> = d["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(
        reasons.iter().any(|x| x.contains("other processes used")),
        "{reasons:?}"
    );

    // The stored run says the same when read back, and the table marks it.
    let run_id = j["runs"][0]["run_id"].as_i64().unwrap().to_string();
    let shown = json(&s.run(&["show", &run_id, "--json"]));
    assert_eq!(shown["runs"][0]["results"][0]["disturbed"], true);
    let table = stdout(&s.run(&["show", &run_id]));
    assert!(table.contains("tg256 (disturbed)"), "{table}");
    assert!(
        table.contains("Disturbed (the machine was not quiet"),
        "{table}"
    );
    assert!(table.contains("dyno-hog"), "{table}");
    // So does an export, which carries the flag to whoever reads it.
    let md = stdout(&s.run(&["export", &run_id, "--format", "json"]));
    let exported: Value = serde_json::from_str(&md).unwrap();
    assert_eq!(exported["runs"][0]["results"][0]["disturbed"], true);
}

#[test]
fn retry_disturbed_measures_the_flagged_test_again_and_keeps_the_first() {
    let _q = quiet();
    let s = Scratch::new();
    // The hog runs through the first run only: it is stopped before the
    // retry can start, unless the retry comes so fast that it overlaps.
    let mut c = s.dyno();
    c.args(argv(
        "bench SMOL -p 0 -n 128 -r 4 -t 2 --retry-disturbed 2 --json",
    ))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let hog = Hog::start();
    let child = c.spawn().expect("dyno runs");
    let pid = child.id();
    // Stop the hog once the first run is stored (its result finished).
    let db = s.db();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut hog = Some(hog);
    while std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        if first_result_finished(&db) {
            hog.take();
            break;
        }
    }
    drop(hog);
    let out = child.wait_with_output().expect("dyno ends");
    assert_code(&out, 0);
    let j = json(&out);
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs[0]["results"][0]["disturbed"], true, "pid {pid}");
    assert!(
        runs.len() >= 2 && runs.len() <= 3,
        "the flagged test was measured again, at most twice: {} runs",
        runs.len()
    );
    for r in &runs[1..] {
        let tests: Vec<&str> = r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["test"].as_str().unwrap())
            .collect();
        assert_eq!(tests, ["tg128"], "only the flagged test is repeated");
    }
    assert!(
        stderr(&out).contains("re-measuring 1 disturbed test (attempt 1 of 2)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_clean_run_is_not_flagged_and_dyno_never_blames_itself() {
    let _q = quiet();
    // A shared machine has moments of noise of its own: of three clean
    // runs at least one must come out with no program or steal to blame,
    // and none may name the measuring worker as the disturbance. The process
    // that hosts it (here the CLI) counts like any other program, under its
    // own label, because its work beside the test (telemetry, storage) takes
    // the same cores. A spread of the repetitions past 10% is the host's own
    // noise, which this test cannot control: on 2026-11-27 this machine's
    // single repetitions varied by ±10% with nothing else running, and all
    // three runs were flagged for spread alone, with others at 0.01 cores.
    // Steal is the host's too: later that day the hypervisor took 6.5–14%
    // of this VM's CPU through a whole CI run, and Dyno rightly flagged all
    // three runs for it. So a run counts as clean here unless a program on
    // this machine is blamed; the steal and spread verdicts have tests of
    // their own.
    let mut clean = 0;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let s = Scratch::new();
        let j = json(&s.bench("-p 64 -n 32 -r 5 -t 2 --json"));
        for r in j["runs"][0]["results"].as_array().unwrap() {
            let names = disturbed_names(r);
            assert!(
                names
                    .iter()
                    .filter(|n| n.starts_with("dyno"))
                    .all(|n| n.ends_with(dyno::telemetry::disturbance::HOST_SUFFIX)),
                "Dyno counted its measuring worker as another program: {}",
                r["disturbance"]
            );
            assert!(
                r["disturbance"].is_object(),
                "every test with telemetry on is judged: {r}"
            );
        }
        // Flagged for a program on this machine, not only for the host's
        // noise: the spread of its repetitions, or steal.
        let blamed = |r: &&Value| {
            r["disturbance"]["reasons"].as_array().is_some_and(|v| {
                v.iter().any(|x| {
                    let x = x.as_str().unwrap_or("");
                    !x.contains("spread") && !x.contains("(steal)")
                })
            })
        };
        let flagged: Vec<&Value> = j["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["disturbed"] == true)
            .filter(blamed)
            .collect();
        if flagged.is_empty() {
            clean += 1;
            break;
        }
        seen.extend(flagged.iter().map(|r| r["disturbance"].to_string()));
    }
    assert!(
        clean >= 1,
        "three clean runs were all blamed on other programs: {seen:?}"
    );
}

/// True once the database holds a result with its status set.
fn first_result_finished(db: &std::path::Path) -> bool {
    if !db.exists() {
        return false;
    }
    let (rt, store) = store(db);
    let done = rt.block_on(async {
        let runs = store.runs(10).await.unwrap_or_default();
        for r in runs {
            if let Ok(rs) = store.results(r.id).await {
                if rs
                    .iter()
                    .any(|x| x.status == dyno::vocab::status::ResultStatus::Ok)
                {
                    return true;
                }
            }
        }
        false
    });
    rt.block_on(store.close());
    done
}
