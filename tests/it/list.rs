//! The Results list's rows (`report::list`, the app's `result_list`): runs
//! named by their file, and a sweep's row carrying its fastest level's
//! prefill and decode rather than blanks.

use crate::common::*;
use dyno::report::TargetKind;

#[test]
fn sweep_rows_carry_their_fastest_levels_figures_and_runs_their_file_name() {
    let s = Scratch::new();
    let o = s.run_line("sweep --from SMOL --levels Q4_1,Q8_0 -p 16 -n 4 -r 2 --no-quality --json");
    assert_code(&o, 0);
    let doc = json(&o);
    let sweep_id = doc["sweep_id"].as_i64().unwrap();
    let (rt, store) = store(&s.db());
    let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
    let runs: Vec<_> = rows.iter().filter(|r| r.kind == TargetKind::Run).collect();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        assert_eq!(r.title, r.file_name, "a run is named by its file first");
        assert!(r.file_name.ends_with(".gguf"), "{r:?}");
    }
    let sweep = rows.iter().find(|r| r.kind == TargetKind::Sweep).unwrap();
    assert_eq!(sweep.id, sweep_id);
    // Named by file as its runs are, without a level: not by the name
    // inside the GGUF ("Smollm2 135M 8k Lc100K Mix1 Ep2").
    assert!(
        sweep.title.starts_with("SmolLM2-135M-Instruct") && !sweep.title.ends_with(".gguf"),
        "{sweep:?}"
    );
    let max = |f: fn(&&dyno::report::list::ListRow) -> Option<f64>| {
        runs.iter().filter_map(f).fold(f64::MIN, f64::max)
    };
    assert_eq!(sweep.pp_mean, Some(max(|r| r.pp_mean)));
    assert_eq!(sweep.tg_mean, Some(max(|r| r.tg_mean)));
    assert_eq!(sweep.pp_test.as_deref(), Some("pp16"));
    assert_eq!(sweep.tg_test.as_deref(), Some("tg4"));
}

/// A finished run whose figure other programs disturbed is never listed as
/// clean: its row names the test and marks the figure, `dyno runs` says so,
/// and `predict --accuracy` leaves it out unless asked (the verdict is the
/// one the measuring process stores; here it is written as a busy machine
/// would have it, so the test does not depend on this machine's load).
#[test]
fn a_disturbed_figure_is_marked_in_the_list_and_left_out_of_accuracy() {
    use dyno::telemetry::disturbance::{Disturbance, ProcessLoad};
    let s = Scratch::new();
    let o = s.bench("-p 16 -n 4 -r 2 --json");
    assert_code(&o, 0);
    let run_id = json(&o)["runs"][0]["run_id"].as_i64().unwrap();
    let (rt, store) = store(&s.db());
    let results = rt.block_on(store.results(run_id)).unwrap();
    let verdict = |disturbed: bool| Disturbance {
        disturbed,
        reasons: if disturbed {
            vec!["other programs kept 1.9 of 2 cores busy".into()]
        } else {
            vec![]
        },
        others_cpu_cores: Some(if disturbed { 1.9 } else { 0.0 }),
        cores_in_use: 2,
        steal_pct: None,
        cv: Some(0.01),
        processes: if disturbed {
            vec![ProcessLoad {
                name: "cc1plus".into(),
                cpu_cores: 1.9,
            }]
        } else {
            vec![]
        },
    };
    for r in &results {
        rt.block_on(store.set_result_disturbance(r.id, &verdict(r.test == "tg4")))
            .unwrap();
    }

    let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
    let row = rows.iter().find(|r| r.id == run_id).unwrap();
    assert_eq!(row.status, "ok");
    assert_eq!(row.disturbed, vec!["tg4".to_string()]);
    assert!(row.tg_disturbed && !row.pp_disturbed, "{row:?}");

    let o = s.run_line("runs");
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("| ok (disturbed: tg4) |"),
        "{}",
        stdout(&o)
    );

    let o = s.run_line("predict --accuracy --json");
    assert_code(&o, 0);
    let a = json(&o);
    assert_eq!(a["disturbed_left_out"], 1, "{a}");
    let decode = a["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "decode");
    assert!(
        decode.is_none(),
        "the only decode figure was disturbed: {a}"
    );
    let o = s.run_line("predict --accuracy");
    assert!(
        stdout(&o).contains("1 disturbed figure left out (--include-disturbed counts it)"),
        "{}",
        stdout(&o)
    );
    let o = s.run_line("predict --accuracy --include-disturbed --json");
    let a = json(&o);
    assert_eq!(a["disturbed_left_out"], 0);
    assert!(a["phases"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["phase"] == "decode" && p["n"] == 1));

    // A verdict damaged on disk (a hand edit, a half-written import) reads
    // as not disturbed; the list and the accuracy still answer.
    rt.block_on(store.close());
    sql(
        &s.db(),
        &format!("UPDATE results SET disturbance_json = '{{not json' WHERE run_id = {run_id}"),
    );
    let (rt, store) = crate::common::store(&s.db());
    let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
    let row = rows.iter().find(|r| r.id == run_id).unwrap();
    assert!(row.disturbed.is_empty() && !row.tg_disturbed, "{row:?}");
    rt.block_on(store.close());
    assert_code(&s.run_line("predict --accuracy --json"), 0);
    // So does the run itself, with its plan damaged too: the settings that
    // have columns of their own still show, and the figures with them.
    sql(
        &s.db(),
        &format!("UPDATE runs SET config_json = '[1,' WHERE id = {run_id}"),
    );
    let shown = s.run_line(&format!("show {run_id} --json"));
    assert_code(&shown, 0);
    let doc = json(&shown);
    let run = &doc["runs"][0];
    assert!(run["config"]["n_threads"].as_u64().is_some(), "{run}");
    assert!(
        run["results"][0]["mean_tokens_per_s"].as_f64().is_some(),
        "{run}"
    );
}
