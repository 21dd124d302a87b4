//! Telemetry, the hardware inventory and the roofline, end to end on the
//! real model. This machine has no GPU and (usually) no readable RAPL, so
//! those fields must come back null with the reason, never as an error.

use crate::common::*;
use serde_json::Value;

fn bench(s: &Scratch, extra: &str) -> Value {
    let o = s.bench(&format!("-p 64 -n 16 -r 3 --json {extra}"));
    assert_code(&o, 0);
    json(&o)
}

#[test]
fn every_run_carries_telemetry_and_decode_carries_the_roofline() {
    let s = Scratch::new();
    let j = bench(&s, "");
    let bw = j["machine"]["memory_bandwidth_bytes_per_s"]
        .as_f64()
        .unwrap();
    assert!(bw > 1e8, "a measured bandwidth, not a placeholder: {bw}");
    let r = &j["runs"][0];
    let t = &r["telemetry"];
    assert!(t["samples"].as_u64().unwrap() >= 3, "{t}");
    assert!(
        t["rss_peak_bytes"].as_u64().unwrap() > 50 << 20,
        "the worker's RSS is sampled: {t}"
    );
    assert!(t["cpu_util_mean_pct"].as_f64().unwrap() > 0.0);
    let unavailable = t["unavailable"].as_array().unwrap();
    if t["energy_j"].is_null() {
        assert!(t["tokens_per_j"].is_null());
        assert!(!unavailable.is_empty(), "a missing energy figure says why");
    } else {
        assert!(t["tokens_per_j"].as_f64().unwrap() > 0.0);
    }
    if unavailable
        .iter()
        .any(|u| u.as_str().unwrap().contains("GPU"))
    {
        assert!(t["vram_peak_bytes"].is_null() && t["throttled"].is_null());
    }

    let weight_bytes = r["model"]["weight_bytes"].as_f64().unwrap();
    // The bandwidth as `dyno hw` reports it, a command of its own.
    let hw = s.run(&["hw", "--json"]);
    assert_code(&hw, 0);
    let hw_bw = json(&hw)["memory_bandwidth_bytes_per_s"].as_f64().unwrap();
    assert_eq!(hw_bw, bw, "the run's machine is the one `dyno hw` measured");
    for x in r["results"].as_array().unwrap() {
        let during = &x["telemetry"]["during_timed"];
        // A timed region of three sampling intervals cannot miss every reading.
        let timed_ns: f64 = x["samples_ns"].as_array().unwrap().iter().map(f).sum();
        if timed_ns >= 0.3e9 {
            assert!(
                during["samples"].as_u64().unwrap() >= 1,
                "{}: {during}",
                x["test"]
            );
        }
        match x["test"].as_str().unwrap() {
            "tg16" => {
                // From the raw repetitions (llama-bench's samples_ns: 16
                // tokens each), not the figures derived from them: the bytes
                // a decode reads per second lie within the repetitions'
                // rates times the weight bytes, and the roofline puts them
                // against the bandwidth `dyno hw` measured.
                let rates: Vec<f64> = x["samples_ns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|ns| 16.0 / (f(ns) / 1e9))
                    .collect();
                let lo = rates.iter().cloned().fold(f64::MAX, f64::min);
                let hi = rates.iter().cloned().fold(f64::MIN, f64::max);
                let bytes = x["decode_bytes_per_s"].as_f64().unwrap();
                assert!(
                    bytes >= weight_bytes * lo * 0.999 && bytes <= weight_bytes * hi * 1.001,
                    "{bytes} B/s outside {lo}..{hi} t/s × {weight_bytes} B"
                );
                let pct = x["roofline_pct"].as_f64().unwrap();
                assert!(
                    pct > 0.0 && (pct - bytes / hw_bw * 100.0).abs() < 1e-6 * pct,
                    "{pct}% of {hw_bw}"
                );
            }
            _ => assert!(
                x["roofline_pct"].is_null(),
                "prefill has no decode roofline"
            ),
        }
    }

    // Readings are in the database, tagged with phase and test.
    let (rt, store) = store(&s.db());
    let run_id = r["run_id"].as_i64().unwrap();
    let rows = rt.block_on(store.telemetry(run_id)).unwrap();
    // The timeline the app draws: the same readings in order, thinned to a
    // bounded count, with the CPU and the worker's memory.
    let line = rt
        .block_on(dyno::report::telemetry::timeline(&store, run_id))
        .unwrap();
    rt.block_on(store.close());
    assert!(!line.is_empty() && line.len() <= dyno::report::telemetry::TIMELINE_POINTS);
    assert!(line.len() <= rows.len());
    assert!(line.windows(2).all(|w| w[1].t_s >= w[0].t_s));
    assert!(line.iter().any(|p| p.phase == "timed"));
    assert!(line
        .iter()
        .any(|p| p.cpu_pct.is_some() && p.rss_bytes.is_some()));
    // The CLI prints the same timeline.
    let o = s.run(&["show", &run_id.to_string(), "--timeline"]);
    assert_code(&o, 0);
    let cli = json(&o);
    assert_eq!(cli["run_id"], run_id);
    // The same readings: times to within float parsing (serde_json's default
    // parser may be one unit in the last place off) and the same phases.
    let pts = cli["points"].as_array().unwrap();
    assert_eq!(pts.len(), line.len(), "the app's command and the CLI agree");
    for (c, p) in pts.iter().zip(&line) {
        assert!((c["t_s"].as_f64().unwrap() - p.t_s).abs() < 1e-9);
        assert_eq!(c["phase"], p.phase.as_str());
    }
    let phases: std::collections::BTreeSet<&str> =
        rows.iter().map(|(_, x)| x.phase.as_str()).collect();
    assert!(
        phases.contains("timed") && phases.contains("warmup"),
        "{phases:?}"
    );
    assert!(rows
        .iter()
        .filter(|(_, x)| x.phase.as_str() == "timed")
        .all(|(id, _)| id.is_some()));
    assert!(rows.windows(2).all(|w| w[1].1.t_ms >= w[0].1.t_ms));

    let o = s.bench("-p 16 -n 4 -r 1");
    assert_code(&o, 0);
    assert!(
        stdout(&o).lines().next().unwrap().contains("roofline"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn telemetry_can_be_switched_off() {
    let s = Scratch::new();
    let j = bench(&s, "--no-telemetry");
    let r = &j["runs"][0];
    assert!(r["telemetry"].is_null());
    assert!(r["results"][0]["telemetry"].is_null());
    let (rt, store) = store(&s.db());
    assert!(rt
        .block_on(store.telemetry(r["run_id"].as_i64().unwrap()))
        .unwrap()
        .is_empty());
    assert!(rt
        .block_on(dyno::report::telemetry::timeline(
            &store,
            r["run_id"].as_i64().unwrap()
        ))
        .unwrap()
        .is_empty());
    rt.block_on(store.close());
}

#[test]
fn hw_reports_the_machine_and_caches_its_bandwidth() {
    let s = Scratch::new();
    let o = s.run(&["hw", "--json"]);
    assert_code(&o, 0);
    let h = json(&o);
    assert!(!h["cpu"].as_str().unwrap().is_empty());
    assert!(h["cores"].as_u64().unwrap() >= 1);
    assert!(h["memory_bytes"].as_u64().unwrap() > 1 << 30);
    assert!(h["memory_bandwidth_bytes_per_s"].as_f64().unwrap() > 1e8);
    assert!(h["gpus"].is_array());
    assert!(h["llama_cpp"]["build"]
        .as_str()
        .unwrap()
        .contains("llama-cpp-sys-2"));
    assert!(
        !h["llama_cpp"]["devices"].as_array().unwrap().is_empty(),
        "llama.cpp sees at least the CPU"
    );
    let at = h["bandwidth_measured_at"].clone();

    let again = json(&s.run(&["hw", "--json"]));
    assert_eq!(
        again["bandwidth_measured_at"], at,
        "the stored figure is reused"
    );
    assert_eq!(
        again["memory_bandwidth_bytes_per_s"],
        h["memory_bandwidth_bytes_per_s"]
    );
    let fresh = json(&s.run(&["hw", "--json", "--remeasure"]));
    assert_ne!(
        fresh["bandwidth_measured_at"], at,
        "--remeasure measures again"
    );

    let o = s.run(&["hw"]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("memory bandwidth"), "{}", stdout(&o));
}

#[test]
fn cooldown_waits_before_the_second_load_and_records_how_it_ended() {
    let s = Scratch::new();
    // Two models are two workers: the idle state is read before the first
    // load, and the wait comes before the second.
    let o = s.run_line("bench SMOL GEMMA -p 16 -n 4 -r 1 -t 2 --cooldown=3 --json");
    assert_code(&o, 0);
    let j = json(&o);
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(
        runs[0].get("cooldown").is_none(),
        "no wait before the first load"
    );
    let c = &runs[1]["cooldown"];
    assert_eq!(c["limit_s"], 3, "{c}");
    let end = c["end"].as_str().unwrap();
    assert!(
        ["settled", "time_limit", "nothing_to_read"].contains(&end),
        "{c}"
    );
    assert!(f(&c["waited_ms"]) <= 4000.0, "the limit holds: {c}");
    // The idle state is what this machine exposes: a clock at least, here.
    if end != "nothing_to_read" {
        assert!(
            c["idle"]
                .as_object()
                .unwrap()
                .values()
                .any(|v| !v.is_null()),
            "{c}"
        );
    }
    let id = runs[1]["run_id"].as_i64().unwrap().to_string();
    let table = stdout(&s.run(&["show", &id]));
    assert!(table.contains("cool-down:"), "{table}");
}
