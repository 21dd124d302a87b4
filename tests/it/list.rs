//! The Results list's rows (`report::list`, the app's `result_list`): runs
//! named by their file, and a sweep's row carrying its fastest level's
//! prefill and decode rather than blanks.

use crate::common::*;

#[test]
fn sweep_rows_carry_their_fastest_levels_figures_and_runs_their_file_name() {
    let s = Scratch::new();
    let o = s.run_line("sweep --from SMOL --levels Q4_1,Q8_0 -p 16 -n 4 -r 2 --no-quality --json");
    assert_code(&o, 0);
    let doc = json(&o);
    let sweep_id = doc["sweep_id"].as_i64().unwrap();
    let (rt, store) = store(&s.db());
    let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
    let runs: Vec<_> = rows.iter().filter(|r| r.kind == "run").collect();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        assert_eq!(r.title, r.file_name, "a run is named by its file first");
        assert!(r.file_name.ends_with(".gguf"), "{r:?}");
    }
    let sweep = rows.iter().find(|r| r.kind == "sweep").unwrap();
    assert_eq!(sweep.id, sweep_id);
    let max = |f: fn(&&dyno::report::list::ListRow) -> Option<f64>| {
        runs.iter().filter_map(f).fold(f64::MIN, f64::max)
    };
    assert_eq!(sweep.pp_mean, Some(max(|r| r.pp_mean)));
    assert_eq!(sweep.tg_mean, Some(max(|r| r.tg_mean)));
    assert_eq!(sweep.pp_test.as_deref(), Some("pp16"));
    assert_eq!(sweep.tg_test.as_deref(), Some("tg4"));
}
