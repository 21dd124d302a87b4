//! The presets every button and command share: a preset is one plan (so runs
//! of one preset compare), it cannot be mixed with the options it replaces,
//! and `dyno presets` says what each measures and how long it should take,
//! learning the time from this machine's stored runs.

use crate::common::*;

#[test]
fn a_preset_runs_its_plan_and_estimates_learn_from_stored_runs() {
    let s = Scratch::new();
    let smol = model(SMOL);
    let smol = smol.to_str().unwrap();

    let o = s.run(&["presets", smol, "--json"]);
    assert_code(&o, 0);
    let before = json(&o);
    let names: Vec<&str> = before
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["plan"]["preset"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["quick", "standard", "thorough"]);
    assert_eq!(before[0]["basis"], "prior", "{before}");
    assert_eq!(
        before[1]["tests"],
        serde_json::json!(["pp512", "tg128", "pp512+tg128"])
    );
    for e in before.as_array().unwrap() {
        let (lo, mid, hi) = (
            f(&e["seconds_low"]),
            f(&e["seconds"]),
            f(&e["seconds_high"]),
        );
        assert!(0.0 < lo && lo < mid && mid < hi, "{e}");
    }

    let o = s.bench("--preset quick --json");
    assert_code(&o, 0);
    let run = &json(&o)["runs"][0];
    let tests: Vec<(&str, u64)> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["test"].as_str().unwrap(), r["reps"].as_u64().unwrap()))
        .collect();
    assert_eq!(tests, [("pp128", 3), ("tg32", 3), ("pp128+tg32", 3)]);

    // Now the estimate rests on the run just stored.
    let o = s.run(&["presets", smol, "--json"]);
    let after = json(&o);
    assert_eq!(after[0]["basis"], "stored_runs", "{after}");
    assert_eq!(after[0]["runs_used"], 1);
    let o = s.run(&["presets", smol]);
    assert!(
        stdout(&o).contains("estimated from 1 stored run(s) on this machine"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_preset_cannot_be_mixed_with_the_options_it_sets() {
    let s = Scratch::new();
    for extra in ["-p 64", "-r 2", "-n 8"] {
        let o = s.bench(&format!("--preset quick {extra}"));
        assert_code(&o, 2);
        assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    }
    let o = s.run(&["presets", "/no/such/model.gguf"]);
    assert_code(&o, 2);
}
