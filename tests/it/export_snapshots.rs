//! Snapshots of every text export, from a fixed stored sweep: a real
//! three-level sweep of SmolLM2 exported with `dyno export sweep:1 --format
//! json` and frozen in tests/fixtures/sweep-export.json. A change to any
//! format shows up here as a diff to review (`cargo insta review`).

use dyno::report::export::{csv, llama_bench_json, markdown, scrub, Private};
use dyno::report::import::parse;
use dyno::report::sweep::{levels_table as sweep_markdown, SweepReport};

fn fixture() -> &'static str {
    include_str!("../fixtures/sweep-export.json")
}

#[test]
fn markdown_export() {
    let report = parse(fixture(), "fixture").unwrap();
    insta::assert_snapshot!("markdown", markdown(&report));
    let sweep: SweepReport = serde_json::from_str(fixture()).unwrap();
    insta::assert_snapshot!("sweep_markdown", sweep_markdown(&sweep));
}

#[test]
fn csv_export() {
    let report = parse(fixture(), "fixture").unwrap();
    insta::assert_snapshot!("csv", csv(&report));
}

#[test]
fn llama_bench_json_export() {
    let report = parse(fixture(), "fixture").unwrap();
    insta::assert_json_snapshot!("llama_bench_json", llama_bench_json(&report));
}

#[test]
fn json_export_is_stable_under_scrubbing() {
    // The fixture is already scrubbed; scrubbing again changes nothing, and
    // the document keeps its schema version and quality.
    let mut v: serde_json::Value = serde_json::from_str(fixture()).unwrap();
    let before = v.clone();
    scrub(
        &mut v,
        &Private {
            home: Some("/home/nobody-here".into()),
            user: Some("nobody-here".into()),
            host: Some("no-such-host".into()),
        },
    );
    assert_eq!(v, before);
    assert_eq!(v["schema_version"], 1);
    insta::assert_json_snapshot!(
        "json_runs_quality",
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["quality"])
            .collect::<Vec<_>>()
    );
}
