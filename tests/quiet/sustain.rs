//! `--sustain` on the real decode loop: a quiet stretch, then two busy
//! programs that take the cores part way through. The summary must find
//! the drop near when they started, put it down to other programs by name,
//! and keep the rate series, stored and exported.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::disturbance::Hog;
use crate::quiet;

#[test]
fn load_started_part_way_is_found_as_the_drop_and_named() {
    let _q = quiet();
    let s = Scratch::new();
    let mut c = s.dyno();
    // 30 s of tg32 repetitions on both cores.
    c.args(argv("bench SMOL --sustain 0.5 -t 2 --json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().expect("dyno runs");
    // Wait until timing has begun (the first repetition is stored), then
    // give the quiet stretch 12 s before the load starts.
    let db = s.db();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && !timing_began(&db) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let began = Instant::now();
    std::thread::sleep(Duration::from_secs(12));
    let hogs = [Hog::start(), Hog::start()];
    let load_at = began.elapsed().as_secs_f64();
    let out = child.wait_with_output().expect("dyno ends");
    drop(hogs);
    assert_code(&out, 0);
    let j = json(&out);
    let r = &j["runs"][0]["results"][0];
    assert_eq!(r["test"], "tg32");
    assert_eq!(j["runs"][0]["config"]["sustain_s"], 30);
    let sus = &r["sustained"];
    let series = sus["series"].as_array().expect("a rate series");
    // A point a second while quiet; under load one repetition can take
    // longer than a second and is a point of its own.
    assert!(series.len() >= 12, "points over 30 s: {}", series.len());
    let burst = f(&sus["burst_tokens_per_s"]);
    let kept = f(&sus["sustained_tokens_per_s"]);
    assert!(
        kept < burst * 0.85,
        "two busy programs on two cores slow decode: burst {burst}, sustained {kept}"
    );
    let t = f(&sus["time_to_drop_s"]);
    assert!(
        (load_at - 5.0..=load_at + 5.0).contains(&t),
        "the drop at {t:.1} s is near the load's start at {load_at:.1} s: {sus}"
    );
    let cause = sus["cause"].as_str().unwrap();
    assert!(
        cause == "contention" || cause == "both",
        "other programs explain it: {sus}"
    );
    let reasons = sus["reasons"].to_string();
    assert!(
        reasons.contains("dyno-hog"),
        "the programs are named: {reasons}"
    );
    // The points after the load carry the others' CPU beside the rate. The
    // last one is wholly under load (the programs stop after the run): a
    // fixed index from the end is not, because under load a repetition can
    // take seconds and be a point of its own (a CI run on a slow host had
    // two points in the 17 s after the load began, so the third from last
    // was before it).
    let late = series.last().unwrap();
    assert!(f(&late["t_s"]) > load_at, "{late}");
    assert!(f(&late["others_cpu_cores"]) > 0.5, "{late}");

    // Stored and shown: the table says the same in words.
    let id = j["runs"][0]["run_id"].as_i64().unwrap().to_string();
    let table = stdout(&s.run(&["show", &id]));
    assert!(table.contains("Sustained decode, run"), "{table}");
    assert!(table.contains("cause: other programs"), "{table}");
    assert!(
        table.contains("sustain 30 s"),
        "the conditions say how long: {table}"
    );
}

#[test]
fn a_sustained_plan_refuses_test_lengths_and_a_zero_length() {
    let _q = quiet();
    let s = Scratch::new();
    let o = s.bench("--sustain 1 -p 64");
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--sustain"), "{}", stderr(&o));
    let o = s.bench("--sustain 0");
    assert_code(&o, 2);
    assert!(stderr(&o).contains("minutes above 0"), "{}", stderr(&o));
}

/// True once a repetition of the first result is stored.
fn timing_began(db: &std::path::Path) -> bool {
    if !db.exists() {
        return false;
    }
    let (rt, store) = store(db);
    let began = rt.block_on(async {
        for r in store.runs(10).await.unwrap_or_default() {
            if let Ok(rs) = store.results(r.id).await {
                if rs
                    .iter()
                    .any(|x| x.samples.as_ref().is_some_and(|s| !s.is_empty()))
                {
                    return true;
                }
            }
        }
        false
    });
    rt.block_on(store.close());
    began
}
