//! The card of a run, of several runs, or of a sweep: what
//! `dyno export ID|sweep:ID --format png|svg` draws.
//!
//! Prefill, decode and time to first token are three panels with their own
//! scales and units: they are different quantities and are never blended.
//! It is drawn from the scrubbed export document, so it can show nothing
//! that the JSON export leaves out.

use std::fmt::Write as _;

use super::spec::{Bar, Bars, Block, Body, CardSpec, Colour, Figure, Line, Panel, Row, Tone};
use crate::report::json::TeamMedian;
use crate::report::sweep::SweepJson;
use crate::report::{MachineJson, Report, ResultJson, RunJson};
use crate::units::{human_bytes, human_params};
use crate::vocab::status::{LevelStatus, ResultStatus, RunStatus};
use crate::vocab::TestKind;

/// One row's figures: a level of a sweep, or a run.
#[derive(Debug, Clone, Default, PartialEq)]
struct Figures {
    label: String,
    /// Prefill t/s (the first pp test).
    pp: Option<f64>,
    /// Decode t/s (the first tg test).
    tg: Option<f64>,
    ttft_ms: Option<f64>,
    tokens_per_j: Option<f64>,
    kld: Option<f64>,
    /// Why the level has no figures.
    failed: Option<String>,
    /// Why a test behind the row's figures was disturbed (the first reason).
    disturbed: Option<String>,
}

impl Figures {
    /// The label as drawn: a disturbed row is starred, and the context
    /// column says why.
    fn shown_label(&self) -> String {
        if self.disturbed.is_some() {
            format!("{} *", self.label)
        } else {
            self.label.clone()
        }
    }
}

/// Test names of the three panels, from the first run that has them.
#[derive(Debug, Default)]
struct Tests {
    pp: Option<String>,
    tg: Option<String>,
    ttft: Option<String>,
}

fn ok(r: &ResultJson) -> bool {
    r.status == ResultStatus::Ok
}

fn prefill(run: &RunJson) -> Option<(&str, f64)> {
    run.results
        .iter()
        .filter(|r| ok(r) && r.kind == TestKind::Prompt)
        .find_map(|r| Some((r.test.as_str(), r.mean_tokens_per_s?)))
}

fn decode(run: &RunJson) -> Option<(&str, f64)> {
    run.results
        .iter()
        .filter(|r| ok(r) && r.kind == TestKind::Gen)
        .find_map(|r| Some((r.test.as_str(), r.mean_tokens_per_s?)))
}

fn first_token(run: &RunJson) -> Option<(&str, f64)> {
    run.results
        .iter()
        .filter(|r| ok(r))
        .find_map(|r| Some((r.test.as_str(), r.ttft_ms?)))
}

/// Decode tokens per joule, where a power reading covered the decode test.
fn decode_tokens_per_j(run: &RunJson) -> Option<f64> {
    run.results
        .iter()
        .filter(|r| ok(r) && r.kind == TestKind::Gen)
        .find_map(|r| r.telemetry.as_ref()?.energy.as_ref()?.tokens_per_j)
}

fn figures_of(label: String, run: &RunJson) -> Figures {
    let failed = (run.status != RunStatus::Ok && decode(run).is_none() && prefill(run).is_none())
        .then(|| run.error.clone().unwrap_or_else(|| run.status.to_string()));
    Figures {
        label,
        pp: prefill(run).map(|x| x.1),
        tg: decode(run).map(|x| x.1),
        ttft_ms: first_token(run).map(|x| x.1),
        tokens_per_j: decode_tokens_per_j(run),
        kld: run
            .quality
            .as_ref()
            .filter(|q| !q.is_reference)
            .map(|q| q.kld_mean),
        failed,
        disturbed: run
            .results
            .iter()
            .filter(|r| ok(r) && r.disturbed)
            .find_map(|r| {
                let why = r.disturbance.as_ref()?.reasons.first()?;
                Some(format!("{}: {why}", r.test))
            }),
    }
}

/// A row per level of a sweep (its last run), or per run.
fn rows(r: &Report, sweep: Option<&SweepJson>) -> Vec<Figures> {
    let by_id = |id: i64| r.runs.iter().find(|x| x.run_id == id);
    let Some(s) = sweep else {
        return r
            .runs
            .iter()
            .map(|run| figures_of(run.model.quant.clone(), run))
            .collect();
    };
    s.levels
        .iter()
        .map(|l| {
            let why = || l.error.clone().unwrap_or_else(|| l.status.to_string());
            match l.run_ids.iter().rev().find_map(|&id| by_id(id)) {
                Some(run) => {
                    let mut row = figures_of(l.level.clone(), run);
                    if l.status != LevelStatus::Ok && row.failed.is_none() && row.tg.is_none() {
                        row.failed = Some(why());
                    }
                    row
                }
                None => Figures {
                    label: l.level.clone(),
                    failed: Some(why()),
                    ..Figures::default()
                },
            }
        })
        .collect()
}

fn tests(r: &Report) -> Tests {
    let mut t = Tests::default();
    for run in &r.runs {
        t.pp = t.pp.or_else(|| prefill(run).map(|x| x.0.to_string()));
        t.tg = t.tg.or_else(|| decode(run).map(|x| x.0.to_string()));
        t.ttft = t.ttft.or_else(|| first_token(run).map(|x| x.0.to_string()));
    }
    t
}

/// A rate with three significant figures ("1234", "73.5", "4.21").
pub(super) fn num(v: f64) -> String {
    crate::units::three_figures(v)
}

/// The card of a report: its runs, or the sweep it belongs to.
pub fn spec(r: &Report, sweep: Option<&SweepJson>) -> CardSpec {
    let rows = rows(r, sweep);
    let first = r.runs.first();
    CardSpec {
        kind: kind(r, sweep),
        status: None,
        title: first.map_or_else(
            || "no runs".to_string(),
            |run| {
                run.model
                    .name
                    .clone()
                    .unwrap_or_else(|| run.model.file_name.clone())
            },
        ),
        subtitle: first.map(|run| model_line(run, sweep)).unwrap_or_default(),
        body: body(&rows, &tests(r)),
        context: context(r, sweep, &rows),
        notes: sweep
            .and_then(|sw| sw.recommendation.as_deref())
            .map(|rec| vec![Line::new(format!("→ {rec}"), Tone::Strong)])
            .unwrap_or_default(),
        footer: first.map(|run| footer(run, &r.machine)).unwrap_or_default(),
    }
}

/// What the card shows; a twin keeps the real model's name, so the card
/// must say what it is.
fn kind(r: &Report, sweep: Option<&SweepJson>) -> String {
    let what = match sweep {
        Some(sw) => format!("quantisation sweep · {} levels", sw.levels.len()),
        None if r.runs.len() == 1 => "benchmark".to_string(),
        None => format!("{} runs", r.runs.len()),
    };
    match r.runs.first().and_then(|run| run.model.synthetic.as_ref()) {
        Some(_) => format!("{what} · synthetic weights"),
        None => what,
    }
}

/// The model by architecture, parameters and file, with its hash. A long
/// file name takes the subtitle's second line rather than being cut.
fn model_line(run: &RunJson, sweep: Option<&SweepJson>) -> String {
    let md = &run.model;
    let sha = &md.sha256[..md.sha256.len().min(12)];
    if sweep.is_some() {
        format!(
            "{} · {} params · {} (sha256 {sha}) and its levels",
            md.arch,
            human_params(md.n_params).trim(),
            md.file_name,
        )
    } else {
        // Weights as llama-bench's "size", the file apart, each named:
        // the Models view lists the file's size.
        format!(
            "{} · {} · {} params · {} weights in a {} file · sha256 {sha}",
            md.file_name,
            md.quant,
            human_params(md.n_params).trim(),
            crate::report::table::weight_size(md),
            human_bytes(md.size_bytes),
        )
    }
}

/// A lone measured row's three figures written large, or a panel per
/// quantity with a bar per row.
fn body(rows: &[Figures], tests: &Tests) -> Body {
    let name = |t: &Option<String>| t.clone().unwrap_or_default();
    if let [one] = rows {
        if one.failed.is_none() {
            let figure =
                |title: String, colour, value: Option<f64>, unit: &str, missing: &str| Figure {
                    title,
                    colour,
                    value: value.map(num),
                    unit: unit.into(),
                    missing: missing.into(),
                };
            return Body::Figures {
                label: one.shown_label(),
                figures: vec![
                    figure(
                        format!("prefill {}", name(&tests.pp)),
                        Colour::Prefill,
                        one.pp,
                        "tokens per second",
                        "no prompt test in this run",
                    ),
                    figure(
                        format!("decode {}", name(&tests.tg)),
                        Colour::Decode,
                        one.tg,
                        "tokens per second",
                        "no generation test in this run",
                    ),
                    figure(
                        format!("TTFT {}", name(&tests.ttft)),
                        Colour::FirstToken,
                        one.ttft_ms,
                        "ms to the first token",
                        "no pp+tg test in this run",
                    ),
                ],
            };
        }
    }
    let panel = |title: String, unit: &str, colour, value: &dyn Fn(&Figures) -> Option<f64>| {
        let bars = rows
            .iter()
            .map(|r| Bar {
                value: value(r),
                tail: None,
                text: value(r).map(num).unwrap_or_default(),
            })
            .collect();
        Panel {
            title: title.trim().to_string(),
            unit: unit.into(),
            colour,
            bars,
        }
    };
    Body::Bars(Bars {
        rows: rows
            .iter()
            .map(|r| Row {
                label: r.shown_label(),
                failed: r.failed.clone(),
            })
            .collect(),
        panels: vec![
            panel(
                format!("PREFILL {}", name(&tests.pp)),
                "t/s",
                Colour::Prefill,
                &|r| r.pp,
            ),
            panel(
                format!("DECODE {}", name(&tests.tg)),
                "t/s",
                Colour::Decode,
                &|r| r.tg,
            ),
            panel(
                format!("FIRST TOKEN {}", name(&tests.ttft)),
                "TTFT ms",
                Colour::FirstToken,
                &|r| r.ttft_ms,
            ),
        ],
        rest: "rows (dyno show lists them all)".into(),
    })
}

/// The right column: a disturbance first, then the team (when asked for),
/// machine, build, energy, what the speed means, and a sweep's divergence
/// from its reference.
fn context(r: &Report, sweep: Option<&SweepJson>, rows: &[Figures]) -> Vec<Block> {
    let first = r.runs.first();
    let mut blocks = Vec::new();
    // A starred row's figure was taken while the machine was busy: the
    // card must not travel without saying so, so it comes first, before
    // anything the column may run out of room for. The reason names the
    // programs, and may take a few lines.
    if let Some(b) = disturbed_block(rows) {
        blocks.push(b);
    }
    // The comparison the user asked for (`--vs-team`) comes before what
    // every card shows, so a long disturbance cannot push it off.
    if let (Some(t), Some(run)) = (&r.team, first) {
        blocks.push(team_block(t, run));
    }
    blocks.push(Block::new("MACHINE", machine_lines(&r.machine)));
    blocks.push(Block::new("BACKEND", backend_lines(first, &r.machine)));
    let energy = energy_lines(rows);
    blocks.push(Block {
        optional: energy.is_none(),
        ..Block::new(
            "ENERGY (DECODE)",
            vec![energy.unwrap_or_else(|| "tokens per joule: no power reading".into())],
        )
    });
    if let Some(lines) = meaning_lines(r, sweep) {
        blocks.push(Block::new("WHAT THIS MEANS", lines));
    }
    let kld: Vec<String> = rows
        .iter()
        .filter_map(|r| r.kld.map(|k| format!("{} {:.3}", r.label, k)))
        .collect();
    if sweep.is_some() && !kld.is_empty() {
        blocks.push(Block::new(
            "KL DIVERGENCE FROM THE REFERENCE",
            vec![kld.join(" · ")],
        ));
    }
    blocks
}

/// The block of the rows timed while the machine was busy.
fn disturbed_block(rows: &[Figures]) -> Option<Block> {
    let (row, why) = rows
        .iter()
        .find_map(|r| r.disturbed.as_ref().map(|w| (r, w)))?;
    let n = rows.iter().filter(|r| r.disturbed.is_some()).count();
    let head = if n == 1 {
        "* DISTURBED WHILE TIMED".to_string()
    } else {
        format!("* DISTURBED WHILE TIMED ({n} ROWS)")
    };
    Some(Block {
        most: 4,
        ..Block::new(head, vec![format!("{}: {why}", row.label)])
    })
}

/// CPU, memory (with its measured bandwidth) and up to two GPUs; "no
/// GPU" shares the CPU's line, to leave the column room.
fn machine_lines(m: &MachineJson) -> Vec<String> {
    let no_gpu = if m.gpus.is_empty() { " · no GPU" } else { "" };
    let mut hw = vec![format!("{} · {} cores{no_gpu}", m.cpu, m.cores)];
    let mut mem = format!("{} RAM", human_bytes(m.memory_bytes));
    if let Some(bw) = m.memory_bandwidth_bytes_per_s {
        let _ = write!(mem, " · {:.1} GB/s measured", bw as f64 / 1e9);
    }
    hw.push(mem);
    for g in m.gpus.iter().take(2) {
        hw.push(format!(
            "{} · {} VRAM",
            g.description,
            human_bytes(g.memory_total_bytes)
        ));
    }
    hw
}

/// The backend and the llama.cpp build on one line, then the modules that
/// measured (a dynamic-backends build), GPU first: the engine a figure came
/// from, down to its file's hash.
fn backend_lines(first: Option<&RunJson>, m: &MachineJson) -> Vec<String> {
    let backend = first
        .and_then(|x| x.backend.clone())
        .or_else(|| m.backend.clone())
        .unwrap_or_else(|| "-".into());
    let build = first
        .and_then(|x| x.llama_cpp_build.clone())
        .or_else(|| m.llama_cpp_build.clone())
        .unwrap_or_else(|| "-".into());
    let mut lines = vec![format!("{backend} · {build}")];
    if let Some(run) = first {
        let mut mods: Vec<&crate::vocab::ModuleRef> =
            run.backend_modules.iter().flatten().collect();
        mods.sort_by_key(|m| m.backend == "CPU");
        lines.extend(mods.iter().take(2).map(|m| m.label()));
    }
    lines
}

/// Against the team (`--vs-team`): the median of per-machine medians for
/// this file and level, decode and prefill apart, and this run's difference.
fn team_block(t: &TeamMedian, run: &RunJson) -> Block {
    let mine = |kind: TestKind| {
        run.results
            .iter()
            .find(|x| x.kind == kind && x.status == ResultStatus::Ok)
            .and_then(|x| x.mean_tokens_per_s)
    };
    let size = |p: &str, n: Option<u32>| n.map_or_else(String::new, |n| format!(" {p}{n}"));
    let line = |what: String, team: Option<f64>, me: Option<f64>| match (team, me) {
        (Some(t), Some(m)) => format!(
            "{what} median {} t/s · run {:+.0}%",
            num(t),
            (m / t - 1.0) * 100.0
        ),
        (Some(t), None) => format!("{what} median {} t/s", num(t)),
        _ => format!("{what}: no team figure"),
    };
    let head = format!(
        "VS TEAM ({} MACHINE{})",
        t.machines,
        if t.machines == 1 { "" } else { "S" }
    );
    Block::new(
        head,
        vec![
            line(
                format!("decode{}", size("tg", t.n_gen)),
                t.decode_tps,
                mine(TestKind::Gen),
            ),
            line(
                format!("prefill{}", size("pp", t.n_prompt)),
                t.prefill_tps,
                mine(TestKind::Prompt),
            ),
        ],
    )
}

/// Tokens per joule of the first two rows with a power reading over
/// decode; `None` when no row has one.
fn energy_lines(rows: &[Figures]) -> Option<String> {
    let tpj: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.tokens_per_j
                .map(|v| format!("{} {} tokens/J", r.label, num(v)))
        })
        .take(2)
        .collect();
    (!tpj.is_empty()).then(|| tpj.join(" · "))
}

/// What the speed means in words, for the recommended level or the one run.
fn meaning_lines(r: &Report, sweep: Option<&SweepJson>) -> Option<Vec<String>> {
    let pick = sweep
        .and_then(|sw| sw.recommendation.as_deref())
        .and_then(|rec| rec.split(':').next())
        .and_then(|lvl| {
            sweep?.levels.iter().find(|l| l.level == lvl).and_then(|l| {
                l.run_ids
                    .iter()
                    .rev()
                    .find_map(|&id| r.runs.iter().find(|x| x.run_id == id))
            })
        })
        .or(r.runs.first())?;
    let w = pick.what_this_means.as_ref()?;
    let mut l = vec![format!(
        "{}: {:.1} words/s ({:.2} tokens per word)",
        pick.model.quant, w.words_per_s, w.tokens_per_word
    )];
    if let Some(t) = w.reply_500_words_s {
        l.push(format!("a 500-word reply in {t:.1} s"));
    }
    Some(l)
}

/// The conditions every figure was measured under, with the tests run,
/// then when, by which Dyno, on which OS, and how the mean was taken.
fn footer(run: &RunJson, m: &MachineJson) -> Vec<String> {
    let c = &run.config;
    let mut tests: Vec<String> = run.results.iter().map(|r| r.test.clone()).collect();
    tests.dedup();
    let date = run.started_at.get(..10).unwrap_or(&run.started_at);
    vec![
        format!(
            "{} · tests {}",
            crate::report::conditions(c, crate::report::Wording::Card),
            tests.join(", ")
        ),
        format!(
            "{date} · dyno {} · {} · mean of {} timed repetitions after a warm-up",
            run.dyno_version,
            m.os.as_deref().unwrap_or(""),
            c.reps
        ),
    ]
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::report::json::TeamMedian;

    /// A four-level sweep's export, as `dyno export` writes it.
    pub(in crate::report::card) fn fixture() -> (Report, SweepJson) {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/sweep-export.json"))
                .unwrap();
        let sweep = serde_json::from_value(doc["sweep"].clone()).unwrap();
        (serde_json::from_value(doc).unwrap(), sweep)
    }

    /// The fixture's first run alone.
    pub(in crate::report::card) fn one_run() -> Report {
        let mut r = fixture().0;
        r.runs.truncate(1);
        r
    }

    /// Mark `res` as timed while other programs used `reason`'s cores.
    pub(in crate::report::card) fn disturb(res: &mut ResultJson, reason: &str) {
        res.disturbed = true;
        res.disturbance = Some(crate::telemetry::disturbance::Disturbance {
            disturbed: true,
            reasons: vec![reason.into()],
            others_cpu_cores: Some(0.35),
            cores_in_use: 2,
            steal_pct: None,
            cv: Some(0.01),
            processes: Vec::new(),
        });
    }

    #[test]
    fn the_team_block_counts_its_machines_in_words() {
        let mut r = one_run();
        let team = |machines| TeamMedian {
            machines,
            decode_tps: Some(100.0),
            prefill_tps: None,
            n_gen: Some(16),
            n_prompt: Some(64),
        };
        r.team = Some(team(1));
        let s = spec(&r, None);
        let b = s.block("VS TEAM (1 MACHINE)").expect("a team block");
        assert!(
            b.lines[0].starts_with("decode tg16 median 100 t/s · run "),
            "{b:?}"
        );
        assert_eq!(b.lines[1], "prefill pp64: no team figure");
        r.team = Some(team(3));
        assert!(spec(&r, None).block("VS TEAM (3 MACHINES)").is_some());
    }

    #[test]
    fn a_sweep_has_a_row_per_level_and_three_panels_that_never_share_a_bar() {
        let (r, sweep) = fixture();
        let s = spec(&r, Some(&sweep));
        assert_eq!(
            s.kind,
            format!("quantisation sweep · {} levels", sweep.levels.len())
        );
        let b = s.bars();
        let labels: Vec<&str> = b.rows.iter().map(|r| r.label.as_str()).collect();
        let levels: Vec<&str> = sweep.levels.iter().map(|l| l.level.as_str()).collect();
        assert_eq!(labels, levels);
        let colours: Vec<Colour> = b.panels.iter().map(|p| p.colour).collect();
        assert_eq!(
            colours,
            [Colour::Prefill, Colour::Decode, Colour::FirstToken]
        );
        assert!(
            b.panels[0].title.starts_with("PREFILL pp"),
            "{:?}",
            b.panels[0]
        );
        assert!(
            b.panels[1].title.starts_with("DECODE tg"),
            "{:?}",
            b.panels[1]
        );
        // Each level's decode bar is its last run's decode figure.
        for (row, bar) in b.rows.iter().zip(&b.panels[1].bars) {
            let level = sweep.levels.iter().find(|l| l.level == row.label).unwrap();
            let run = r
                .runs
                .iter()
                .find(|x| Some(&x.run_id) == level.run_ids.last())
                .unwrap();
            assert_eq!(bar.value, decode(run).map(|x| x.1), "{}", row.label);
        }
        if let Some(rec) = &sweep.recommendation {
            assert_eq!(s.notes, [Line::new(format!("→ {rec}"), Tone::Strong)]);
        }
    }

    #[test]
    fn a_failed_level_says_why_and_has_no_bars() {
        let (r, mut sweep) = fixture();
        let lvl = &mut sweep.levels[1];
        lvl.run_ids.clear();
        lvl.status = LevelStatus::Failed;
        lvl.error = Some("out of memory loading the model".into());
        let s = spec(&r, Some(&sweep));
        let b = s.bars();
        assert_eq!(
            b.rows[1].failed.as_deref(),
            Some("out of memory loading the model")
        );
        assert!(b
            .panels
            .iter()
            .all(|p| p.bars[1].value.is_none() && p.bars[1].text.is_empty()));
    }

    #[test]
    fn a_disturbed_row_is_starred_and_the_column_says_why_first() {
        let (mut r, _) = fixture();
        disturb(
            &mut r.runs[1].results[1],
            "2 cores in use (0.35 cores: WebKitWebProcess 0.2)",
        );
        let s = spec(&r, None);
        let starred = &s.bars().rows[1].label;
        assert!(starred.ends_with(" *"), "{starred}");
        assert_eq!(s.context[0].head, "* DISTURBED WHILE TIMED");
        assert!(s.context[0].lines[0].contains("WebKitWebProcess 0.2"));
        assert_eq!(s.context[0].most, 4);
    }

    #[test]
    fn a_lone_run_is_written_large_with_its_conditions() {
        let r = one_run();
        let s = spec(&r, None);
        let Body::Figures { label, figures } = &s.body else {
            panic!("figures expected: {:?}", s.body);
        };
        assert_eq!(label, &r.runs[0].model.quant);
        let tg = decode(&r.runs[0]).unwrap().1;
        assert_eq!(figures[1].value.as_deref(), Some(num(tg).as_str()));
        assert_eq!(figures[1].colour, Colour::Decode);
        assert_eq!(s.kind, "benchmark");
        assert!(s.subtitle.contains(&r.runs[0].model.sha256[..12]));
        assert!(s.footer[0].contains("tests "), "{:?}", s.footer);
        assert!(s.footer[1].contains("timed repetitions after a warm-up"));
        assert!(s.block("MACHINE").is_some() && s.block("BACKEND").is_some());
    }

    #[test]
    fn a_card_of_synthetic_weights_says_so() {
        let mut r = one_run();
        assert!(!spec(&r, None).kind.contains("synthetic weights"));
        r.runs[0].model.synthetic = Some("twin of SmolLM2 135M, seed 1".into());
        assert_eq!(spec(&r, None).kind, "benchmark · synthetic weights");
    }

    #[test]
    fn numbers_keep_three_significant_figures() {
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(73.54), "73.5");
        assert_eq!(num(4.2149), "4.21");
    }
}
