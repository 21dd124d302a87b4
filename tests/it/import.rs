//! `dyno import` reads files from other people, so it trusts none of them:
//! the file's size and its counts are bounded, a test kind it does not know
//! is refused rather than guessed, headline figures are recomputed from the
//! samples, and a file never rewrites this machine's own record.

use crate::common::*;
use dyno::report::TargetKind;
use serde_json::{json, Value};

/// A real exported sweep (three SmolLM2 levels), the base of every file.
fn base() -> Value {
    serde_json::from_str(include_str!("../fixtures/sweep-export.json")).unwrap()
}

/// Write `doc` into the scratch folder and import it.
fn import(s: &Scratch, doc: &Value) -> std::process::Output {
    let file = s.path("shared.json");
    std::fs::write(&file, serde_json::to_vec(doc).unwrap()).unwrap();
    s.run(&["import", file.to_str().unwrap()])
}

/// Nothing was stored: the refusal came before the database was touched.
fn assert_nothing_stored(s: &Scratch) {
    let o = s.run(&["runs", "--json"]);
    assert_code(&o, 0);
    assert_eq!(json(&o)["runs"], json!([]), "a refused file stored runs");
}

#[test]
fn a_file_over_64_mib_is_refused_before_it_is_read() {
    let s = Scratch::new();
    let file = s.path("huge.json");
    let f = std::fs::File::create(&file).unwrap();
    f.set_len(64 * 1024 * 1024 + 1).unwrap();
    let o = s.run(&["import", file.to_str().unwrap()]);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("64 MiB"), "{err}");
    assert!(
        !err.contains("not JSON"),
        "the size is checked first: {err}"
    );
    assert_nothing_stored(&s);
}

#[test]
fn too_many_runs_are_refused() {
    let s = Scratch::new();
    let mut doc = base();
    let mut run = doc["runs"][0].clone();
    run["results"] = json!([]);
    run["telemetry"] = json!(null);
    doc["runs"] = Value::Array(vec![run; 10_001]);
    let o = import(&s, &doc);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("10001 runs") && err.contains("10000"), "{err}");
    assert_nothing_stored(&s);
}

#[test]
fn too_many_results_in_a_run_are_refused() {
    let s = Scratch::new();
    let mut doc = base();
    let mut result = doc["runs"][0]["results"][0].clone();
    result["telemetry"] = json!(null);
    doc["runs"][0]["results"] = Value::Array(vec![result; 1_001]);
    let o = import(&s, &doc);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("1001 results") && err.contains("1000"),
        "{err}"
    );
    assert_nothing_stored(&s);
}

#[test]
fn too_many_samples_in_a_result_are_refused() {
    let s = Scratch::new();
    let mut doc = base();
    doc["runs"][0]["results"][0]["samples_ns"] = Value::Array(vec![json!(1_000_000); 10_001]);
    let o = import(&s, &doc);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("10001 samples") && err.contains("10000"),
        "{err}"
    );
    assert_nothing_stored(&s);
}

#[test]
fn an_unknown_test_kind_is_refused_not_taken_for_a_prompt_test() {
    let s = Scratch::new();
    let mut doc = base();
    doc["runs"][1]["results"][2]["kind"] = json!("speculative");
    let o = import(&s, &doc);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("'speculative'") && err.contains("prompt, gen, prompt_gen, parallel"),
        "{err}"
    );
    assert_nothing_stored(&s);
}

#[test]
fn headline_figures_come_from_the_samples_not_the_file() {
    let s = Scratch::new();
    let mut doc = base();
    let fig = |x: &Value| x["mean_tokens_per_s"].as_f64().unwrap();
    let honest: Vec<(String, f64)> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let name = r["model"]["file_name"].as_str().unwrap().to_string();
            (name, fig(&r["results"][0]))
        })
        .collect();
    for run in doc["runs"].as_array_mut().unwrap() {
        for r in run["results"].as_array_mut().unwrap() {
            r["mean_tokens_per_s"] = json!(1e9);
            r["stddev_tokens_per_s"] = json!(0.0);
            r["median_tokens_per_s"] = json!(1e9);
        }
    }
    let o = import(&s, &doc);
    assert_code(&o, 0);

    // What the list of runs (the app's Results view) shows is the stored
    // headline.
    let (rt, store) = store(&s.db());
    let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
    for (name, want) in &honest {
        let row = rows
            .iter()
            .find(|r| r.kind == TargetKind::Run && &r.file_name == name)
            .unwrap_or_else(|| panic!("no run of {name}: {rows:?}"));
        let got = row.pp_mean.expect("a prefill headline");
        assert!((got - want).abs() / want < 1e-6, "{name}: {got} vs {want}");
    }
    // And the documents agree.
    let j = json(&s.run(&["runs", "--json"]));
    for run in j["runs"].as_array().unwrap() {
        for r in run["results"].as_array().unwrap() {
            assert!(fig(r) < 1e6, "{r}");
        }
    }
}

#[test]
fn a_file_claiming_this_machine_leaves_its_record_alone() {
    let s = Scratch::new();
    let here = dyno::machine::Machine::detect();
    let (rt, store) = store(&s.db());
    let id = rt.block_on(store.upsert_machine(&here)).unwrap();
    let before = format!("{:?}", rt.block_on(store.machine(id)).unwrap());
    rt.block_on(store.close());

    let mut doc = base();
    doc["machine"]["fingerprint"] = json!(here.fingerprint);
    doc["machine"]["cpu"] = json!("Forged CPU 9000");
    doc["machine"]["os"] = json!("ForgedOS 1");
    doc["machine"]["kernel"] = json!("0.0.0-forged");
    doc["machine"]["cores"] = json!(512);
    doc["machine"]["memory_bytes"] = json!(1u64 << 50);
    let o = import(&s, &doc);
    assert_code(&o, 0);

    let (rt, store) = crate::common::store(&s.db());
    let after = format!("{:?}", rt.block_on(store.machine(id)).unwrap());
    assert_eq!(after, before, "the import rewrote this machine's record");
    assert!(!after.contains("Forged"), "{after}");
}
