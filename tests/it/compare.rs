//! `dyno compare` accounts for every result on both sides: runs of a sweep
//! measured under several configurations are each compared with their own
//! counterpart (not only the first per level), a run meets the sweep level
//! of its own quant, and whatever has no counterpart is named with why.

use crate::common::*;

fn sweep(s: &Scratch, extra: &str) -> String {
    let o = s.run_line(&format!(
        "sweep --files SMOL -p 16 -n 4 -r 2 --no-quality --json {extra}"
    ));
    assert_code(&o, 0);
    format!("sweep:{}", json(&o)["sweep_id"])
}

#[test]
fn every_configuration_of_a_sweep_is_compared_with_its_own() {
    let s = Scratch::new();
    let a = sweep(&s, "-t 1,2");
    let o = s.run(&["compare", &a, &a, "--json"]);
    assert_code(&o, 0);
    let c = json(&o);
    let tests = c["tests"].as_array().unwrap();
    // 2 thread counts × (pp16, tg4, pp16+tg4 prefill and decode halves).
    let per_config = tests
        .iter()
        .filter(|t| t["conditions"].as_str().unwrap().starts_with("threads 1,"))
        .count();
    assert!(per_config >= 2, "{c}");
    assert_eq!(tests.len(), 2 * per_config, "both configurations: {c}");
    for t in tests {
        assert_eq!(t["differs"], serde_json::json!([]), "like for like: {t}");
        assert_eq!(t["level"], "Q4_1");
        assert!((f(&t["ratio"]) - 1.0).abs() < 1e-12);
    }
    assert_eq!(c["unmatched"], serde_json::json!([]));
}

#[test]
fn a_run_meets_its_own_level_of_a_sweep_and_the_rest_is_named() {
    let s = Scratch::new();
    // A sweep of the Q4_1 file and a Q8_0 made from it.
    let o = s.run_line("sweep --from SMOL --levels Q4_1,Q8_0 -p 16 -n 4 -r 2 --no-quality --json");
    assert_code(&o, 0);
    let sw = format!("sweep:{}", json(&o)["sweep_id"]);
    let o = s.bench("-p 16 -n 4 -r 2 --json");
    assert_code(&o, 0);
    let run = json(&o)["runs"][0]["run_id"].to_string();
    let o = s.run(&["compare", &run, &sw, "--json"]);
    assert_code(&o, 0);
    let c = json(&o);
    let tests = c["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "pp16 and tg4 at Q4_1: {c}");
    assert!(tests.iter().all(|t| t["level"] == "Q4_1"), "{c}");
    let unmatched = c["unmatched"].as_array().unwrap();
    // Q8_0's tests and Q4_1's pp16+tg4 (the sweep adds it; the run has none).
    assert!(unmatched.iter().all(|u| u["side"] == "B"), "{c}");
    let q8: Vec<_> = unmatched.iter().filter(|u| u["level"] == "Q8_0").collect();
    assert!(q8.len() >= 2, "{c}");
    assert!(
        q8[0]["reason"].as_str().unwrap().starts_with("A has no "),
        "{c}"
    );
    let o = s.run(&["compare", &run, &sw]);
    assert!(stdout(&o).contains("only in B: tg4 Q8_0"), "{}", stdout(&o));
}
