//! Runs as the team store holds them, and what is read across machines.
//!
//! A pushed run is its scrubbed JSON document (what `dyno export --format
//! json` writes for it: paths cut to file names, no user or host), split
//! into the run and one document per test so the store can index the tests;
//! reading joins them back into a [`Report`], so `show`, `compare` and every
//! export work on a team run exactly as on a local one.
//!
//! The machines ranking and the team median are computed here from plain
//! rows, whichever store they came from.

use serde::{Deserialize, Serialize};

use super::export::{document, Private};
use super::json::{MachineJson, Report, ResultJson};
use crate::error::{DynoError, Result};
use crate::store::team::{TeamDoc, TeamMachine, TeamModel, TeamResult, TeamRunIn, TeamRunRow};
use crate::vocab::TestKind;

/// A run's headline figures, which rankings and the team median read:
/// (prefill, decode, TTFT). One sequence from an empty cache only, so a
/// `-d 4096` or parallel test is never ranked against other machines' plain
/// ppN and tgN; TTFT comes from the same prompt length as the prefill.
fn headline(results: &[ResultJson]) -> (Option<&ResultJson>, Option<&ResultJson>, Option<f64>) {
    let plain = |r: &&ResultJson| {
        r.status == crate::vocab::status::ResultStatus::Ok && r.n_depth == 0 && r.n_parallel <= 1
    };
    let first = |kind: TestKind| results.iter().filter(plain).find(|r| r.kind == kind);
    let prefill = first(TestKind::Prompt);
    let ttft = prefill.and_then(|p| {
        results
            .iter()
            .filter(plain)
            .filter(|r| r.n_prompt == p.n_prompt)
            .find_map(|r| r.ttft_ms)
    });
    (prefill, first(TestKind::Gen), ttft)
}

/// The machine as the team store keeps it: its GPUs as one list of names.
fn team_machine(m: &MachineJson) -> TeamMachine {
    let gpus = m
        .gpus
        .iter()
        .map(|g| g.description.clone())
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    TeamMachine {
        fingerprint: m.fingerprint.clone(),
        cpu: m.cpu.clone(),
        cores: m.cores as i64,
        memory_bytes: m.memory_bytes as i64,
        os: m.os.clone(),
        gpus: (!gpus.is_empty()).then_some(gpus),
    }
}

/// The team store's form of a one-run report. `telemetry` is the run's
/// series as JSON, pushed only when asked for.
/// The model's name in the team store. The store has no column for
/// synthetic weights, and a twin keeps the real model's name, so its name
/// carries the whole label (the hub file and sha256 it stands for, its
/// seed) wherever a teammate sees it listed.
fn team_model_name(name: Option<&str>, file_name: &str, synthetic: Option<&str>) -> Option<String> {
    match synthetic {
        Some(label) => Some(format!(
            "{} (synthetic weights: {label})",
            name.unwrap_or(file_name)
        )),
        None => name.map(String::from),
    }
}

pub fn to_team(report: &Report, uid: Option<&str>, telemetry: Option<String>) -> Result<TeamRunIn> {
    let doc = document(report, false, &Private::here());
    let mut scrubbed: Report = serde_json::from_value(doc)
        .map_err(|e| DynoError::Internal(format!("a scrubbed report: {e}")))?;
    if scrubbed.runs.len() != 1 {
        return Err(DynoError::Internal(format!(
            "a team run is one run; this report has {}",
            scrubbed.runs.len()
        )));
    }
    // The key is computed from the unscrubbed report, as `dyno import` does.
    let uid = uid.map_or_else(
        || super::import::key(report, &report.runs[0]),
        str::to_string,
    );
    let mut run = scrubbed.runs.remove(0);
    let m = &scrubbed.machine;
    let results = std::mem::take(&mut run.results);
    let (prefill, decode, ttft) = headline(&results);
    let team_results = results
        .iter()
        .map(|r| TeamResult {
            test: r.test.clone(),
            kind: r.kind.as_str().to_string(),
            status: r.status.to_string(),
            mean_tokens_per_s: r.mean_tokens_per_s,
            n_samples: r.samples_ns.len().max(r.samples_tokens_per_s.len()) as i64,
            doc: serde_json::to_string(r).expect("a result serialises"),
        })
        .collect();
    let out = TeamRunIn {
        uid,
        machine: team_machine(m),
        model: TeamModel {
            sha256: run.model.sha256.clone(),
            file_name: run.model.file_name.clone(),
            name: team_model_name(
                run.model.name.as_deref(),
                &run.model.file_name,
                run.model.synthetic.as_deref(),
            ),
            arch: run.model.arch.clone(),
            quant: run.model.quant.clone(),
            size_bytes: run.model.size_bytes as i64,
            n_params: run.model.n_params as i64,
        },
        local_id: run.run_id,
        status: run.status.to_string(),
        backend: run.backend.clone(),
        llama_cpp_build: run.llama_cpp_build.clone(),
        dyno_version: run.dyno_version.clone(),
        n_threads: run.config.n_threads as i64,
        n_gpu_layers: run.config.n_gpu_layers.map(i64::from),
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        prefill_tps: prefill.and_then(|r| r.mean_tokens_per_s),
        decode_tps: decode.and_then(|r| r.mean_tokens_per_s),
        ttft_ms: ttft,
        n_prompt: prefill.map(|r| r.n_prompt as i64),
        n_gen: decode.map(|r| r.n_gen as i64),
        disturbed: results.iter().any(|r| r.disturbed),
        doc: String::new(),
        results: team_results,
        telemetry,
    };
    let doc = Report {
        schema_version: scrubbed.schema_version,
        machine: scrubbed.machine,
        runs: vec![run],
        offload_sweep: Vec::new(),
        team: None,
    };
    Ok(TeamRunIn {
        doc: serde_json::to_string(&doc).expect("a report serialises"),
        ..out
    })
}

/// A team run's report, its tests joined back in order.
pub fn from_team(d: &TeamDoc) -> Result<Report> {
    let bad = |e: serde_json::Error| {
        DynoError::BadInput(format!(
            "team run {} has a document this Dyno cannot read ({e}); update Dyno",
            d.uid
        ))
    };
    let mut report: Report = serde_json::from_str(&d.doc).map_err(bad)?;
    let results = d
        .results
        .iter()
        .map(|r| serde_json::from_str(r).map_err(bad))
        .collect::<Result<Vec<_>>>()?;
    if let Some(run) = report.runs.first_mut() {
        run.results = results;
    }
    Ok(report)
}

/// One machine's standing for one model and level.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "TeamMachineRank"))]
pub struct MachineRank {
    pub rank: u32,
    pub machine: String,
    pub cpu: String,
    pub cores: i64,
    pub memory_bytes: i64,
    pub gpus: Option<String>,
    /// Backends of the counted runs ("CPU", "CUDA"), comma-separated.
    pub backends: String,
    pub dyno_versions: String,
    /// Thread counts of the counted runs, comma-separated.
    pub threads: String,
    /// The one setup the machine's figures come from, in words ("CUDA, 99
    /// GPU layers, 16 threads"): see [`SETUP_RULE`].
    pub setup: String,
    /// Clean, successful runs counted (of that setup).
    pub runs: u32,
    /// The machine's runs of the level in other setups (fewer GPU layers,
    /// other thread counts), left out of its figures.
    pub other_setup_runs: u32,
    /// Runs left out because the machine was busy while they were timed.
    pub disturbed_runs: u32,
    /// Medians over the machine's runs, tokens/s; never blended.
    pub decode_tps: Option<f64>,
    pub prefill_tps: Option<f64>,
    /// Median time to first token, ms (a latency, not a throughput).
    pub ttft_ms: Option<f64>,
    /// Decode as a share of the fastest machine's decode (1.0 for it).
    pub decode_vs_best: Option<f64>,
}

/// How a machine's one setup is chosen, said wherever its figures are.
pub const SETUP_RULE: &str = "each machine at one setup: the most GPU layers it ran, then llama-bench's batch sizes (2048/512), f16 KV cache on the GPU and no tensor overrides where it ran them, then the setup it ran most (threads, flash attention); tests from an empty cache, one sequence";

/// A run's context settings, which change its speed as much as its
/// threads do but have no column in the team store: read from the run's
/// document (`runs[0].config`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
struct Context {
    n_batch: u32,
    n_ubatch: u32,
    cache_type: String,
    flash_attn: String,
    #[serde(default)]
    n_cpu_moe: Option<u32>,
    #[serde(default)]
    tensor_overrides: Option<String>,
    /// `-nkvo 1`: the KV cache and attention kept on the CPU.
    #[serde(default)]
    no_kv_offload: bool,
}

impl Context {
    /// llama-bench's defaults, which most runs use and the ranking prefers.
    fn is_default(&self) -> bool {
        self.n_batch == 2048
            && self.n_ubatch == 512
            && self.cache_type.eq_ignore_ascii_case("f16")
            && self.n_cpu_moe.unwrap_or(0) == 0
            && self.tensor_overrides.is_none()
            && !self.no_kv_offload
    }

    fn of(doc: &str) -> Option<Context> {
        #[derive(Deserialize)]
        struct Run {
            config: Context,
        }
        #[derive(Deserialize)]
        struct Doc {
            runs: Vec<Run>,
        }
        serde_json::from_str::<Doc>(doc)
            .ok()?
            .runs
            .into_iter()
            .next()
            .map(|r| r.config)
    }
}

/// A run's setup: backend, GPU layers, threads, and its context settings
/// (`None` where its document does not say).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Setup {
    backend: Option<String>,
    gpu_layers: Option<i64>,
    threads: i64,
    context: Option<Context>,
}

fn setup_of(r: &TeamRunRow) -> Setup {
    Setup {
        backend: r.backend.clone(),
        gpu_layers: r.n_gpu_layers,
        threads: r.n_threads,
        context: Context::of(&r.doc),
    }
}

/// The setup to rank a machine at, among `runs`: the most GPU layers (full
/// offload where it ran it), then llama-bench's default context settings,
/// then the setup (threads, flash attention) it ran most, then the most
/// threads.
fn chosen_setup(runs: &[&TeamRunRow]) -> Option<Setup> {
    use std::collections::BTreeMap;
    let mut count: BTreeMap<Setup, u32> = BTreeMap::new();
    for r in runs {
        *count.entry(setup_of(r)).or_default() += 1;
    }
    count
        .into_iter()
        .max_by(|(a, na), (b, nb)| {
            let layers = |s: &Setup| s.gpu_layers.unwrap_or(0);
            let usual = |s: &Setup| s.context.as_ref().is_none_or(Context::is_default);
            layers(a)
                .cmp(&layers(b))
                .then(usual(a).cmp(&usual(b)))
                .then(na.cmp(nb))
                .then(a.threads.cmp(&b.threads))
                .then(b.backend.cmp(&a.backend))
                .then(b.context.cmp(&a.context))
        })
        .map(|(s, _)| s)
}

/// "CUDA, 99 GPU layers, 16 threads"; "CPU, 2 threads, batch 512/128, KV
/// q8_0": context settings are named where they are not llama-bench's
/// defaults.
fn setup_words(s: &Setup) -> String {
    let mut out = vec![s
        .backend
        .clone()
        .unwrap_or_else(|| "backend unknown".into())];
    if let Some(l) = s.gpu_layers.filter(|l| *l > 0) {
        out.push(format!("{l} GPU layers"));
    }
    out.push(format!(
        "{} thread{}",
        s.threads,
        if s.threads == 1 { "" } else { "s" }
    ));
    if let Some(c) = &s.context {
        if (c.n_batch, c.n_ubatch) != (2048, 512) {
            out.push(format!("batch {}/{}", c.n_batch, c.n_ubatch));
        }
        if !c.cache_type.eq_ignore_ascii_case("f16") {
            out.push(format!("KV {}", c.cache_type));
        }
        if c.flash_attn != "auto" {
            out.push(format!("flash attention {}", c.flash_attn));
        }
        if let Some(n) = c.n_cpu_moe.filter(|n| *n > 0) {
            out.push(format!("experts of {n} layers on the CPU"));
        }
        if let Some(o) = &c.tensor_overrides {
            out.push(format!("-ot {o}"));
        }
        if c.no_kv_offload {
            out.push("KV cache on the CPU".into());
        }
    }
    out.join(", ")
}

/// A model and level the store holds runs of, and on how many machines.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "TeamModelLevel"))]
pub struct ModelLevel {
    pub model_sha256: String,
    pub file_name: String,
    pub name: Option<String>,
    pub quant: String,
    pub machines: u32,
    pub runs: u32,
}

/// Machines ranked by decode, then prefill, for one model and level.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "TeamRanking"))]
pub struct Ranking {
    /// What was ranked; null when the store holds no matching run.
    pub level: Option<ModelLevel>,
    pub machines: Vec<MachineRank>,
    /// Every model and level the filters allow, most machines first, for a
    /// picker.
    pub choices: Vec<ModelLevel>,
    /// The team median (of per-machine medians) decode and prefill.
    pub median_decode_tps: Option<f64>,
    pub median_prefill_tps: Option<f64>,
    /// The test sizes compared: decode figures are of tgN runs with this N,
    /// prefill figures of ppN runs with this N (the sizes most runs of the
    /// level used), so no machine is ranked on a different test.
    pub n_gen: Option<i64>,
    pub n_prompt: Option<i64>,
    /// How each machine's one setup was chosen ([`SETUP_RULE`]).
    pub setup_rule: String,
}

/// The test size to compare: the one most machines measured, then the one
/// with most runs, then the smallest. `v` holds (machine, size) per run.
fn common_size<'a>(v: impl Iterator<Item = (&'a str, Option<i64>)>) -> Option<i64> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut by: BTreeMap<i64, (BTreeSet<&str>, u32)> = BTreeMap::new();
    for (m, size) in v {
        if let Some(size) = size {
            let e = by.entry(size).or_default();
            e.0.insert(m);
            e.1 += 1;
        }
    }
    let best = by.values().map(|(ms, n)| (ms.len(), *n)).max()?;
    by.into_iter()
        .find(|(_, (ms, n))| (ms.len(), *n) == best)
        .map(|(k, _)| k)
}

/// The median, or `None` for no values (a machine with no run of the
/// compared test).
fn median(v: &mut [f64]) -> Option<f64> {
    (!v.is_empty()).then(|| crate::bench::stats::median(v))
}

/// The models and levels in `rows`, most machines first.
pub fn levels(rows: &[TeamRunRow]) -> Vec<ModelLevel> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut by: BTreeMap<(String, String), (ModelLevel, BTreeSet<String>)> = BTreeMap::new();
    for r in rows {
        let e = by
            .entry((r.model_sha256.clone(), r.quant.clone()))
            .or_insert_with(|| {
                (
                    ModelLevel {
                        model_sha256: r.model_sha256.clone(),
                        file_name: r.file_name.clone(),
                        name: r.model_name.clone(),
                        quant: r.quant.clone(),
                        machines: 0,
                        runs: 0,
                    },
                    BTreeSet::new(),
                )
            });
        e.0.runs += 1;
        e.1.insert(r.machine.clone());
    }
    let mut out: Vec<ModelLevel> = by
        .into_values()
        .map(|(mut l, m)| {
            l.machines = m.len() as u32;
            l
        })
        .collect();
    out.sort_by(|a, b| {
        b.machines
            .cmp(&a.machines)
            .then(b.runs.cmp(&a.runs))
            .then(a.file_name.cmp(&b.file_name))
    });
    out
}
/// One machine's entry in a ranking, from its runs at the ranked level: the
/// runs of the compared test (decode `n_gen`, else prefill `n_prompt`),
/// clean ones first, at the one setup [`chosen_setup`] picks; each figure is
/// the median over those runs of the compared size. Its rank is set later.
fn rank_machine(runs: &[&TeamRunRow], n_gen: Option<i64>, n_prompt: Option<i64>) -> MachineRank {
    // The runs the figures can come from: those with the compared
    // decode (machines are ranked by it), else the compared prefill.
    let with = |f: &dyn Fn(&TeamRunRow) -> bool| -> Vec<&TeamRunRow> {
        runs.iter().copied().filter(|r| f(r)).collect()
    };
    let decodes = with(&|r| r.decode_tps.is_some() && r.n_gen == n_gen);
    let prefills = with(&|r| r.prefill_tps.is_some() && r.n_prompt == n_prompt);
    let pool: &[&TeamRunRow] = [decodes.as_slice(), prefills.as_slice()]
        .into_iter()
        .find(|v| !v.is_empty())
        .unwrap_or(runs);
    // Busy runs count only where the machine has no clean one of
    // the compared test: a clean run of another size must not empty
    // its figure.
    let clean: Vec<&TeamRunRow> = pool.iter().copied().filter(|r| r.disturbed == 0).collect();
    let usable = if clean.is_empty() {
        pool.to_vec()
    } else {
        clean
    };
    // One setup per machine, so an offload or thread sweep's runs
    // are not blended into its figure, and an offload sweep's layer
    // counts on a CPU-only machine, run at other sizes, never win.
    let setup = chosen_setup(&usable).expect("a machine has runs");
    let counted: Vec<&TeamRunRow> = usable
        .iter()
        .copied()
        .filter(|r| setup_of(r) == setup)
        .collect();
    let busy = pool.len() - usable.len();
    // Each figure only from runs of the compared test size.
    let col = |f: fn(&TeamRunRow) -> Option<f64>,
               size: fn(&TeamRunRow) -> Option<i64>,
               want: Option<i64>| {
        let mut v: Vec<f64> = counted
            .iter()
            .filter(|r| size(r) == want)
            .filter_map(|r| f(r))
            .collect();
        median(&mut v)
    };
    let join = |f: fn(&TeamRunRow) -> Option<String>| {
        let mut v: Vec<String> = counted.iter().filter_map(|r| f(r)).collect();
        v.sort();
        v.dedup();
        v.join(", ")
    };
    let first = runs[0];
    MachineRank {
        rank: 0,
        machine: first.machine.clone(),
        cpu: first.cpu.clone(),
        cores: first.cores,
        memory_bytes: first.memory_bytes,
        gpus: first.gpus.clone(),
        backends: join(|r| r.backend.clone()),
        dyno_versions: join(|r| Some(r.dyno_version.clone())),
        threads: join(|r| Some(r.n_threads.to_string())),
        setup: setup_words(&setup),
        runs: counted.len() as u32,
        other_setup_runs: (usable.len() - counted.len()) as u32,
        disturbed_runs: busy as u32,
        decode_tps: col(|r| r.decode_tps, |r| r.n_gen, n_gen),
        prefill_tps: col(|r| r.prefill_tps, |r| r.n_prompt, n_prompt),
        ttft_ms: col(|r| r.ttft_ms, |r| r.n_prompt, n_prompt),
        decode_vs_best: None,
    }
}

/// Rank the machines of `rows` (successful runs) for the model and level
/// `pick` (sha256 and quant), or for the level most machines measured.
/// Disturbed runs count only for a machine with no clean run, as in
/// predictions: a busy machine's figure is not its speed.
pub fn rank(rows: &[TeamRunRow], pick: Option<(&str, &str)>) -> Ranking {
    use std::collections::BTreeMap;
    let choices = levels(rows);
    let level = match pick {
        Some((sha, quant)) => choices
            .iter()
            .find(|l| l.model_sha256 == sha && l.quant.eq_ignore_ascii_case(quant))
            .cloned(),
        None => choices.first().cloned(),
    };
    let Some(level) = level else {
        return Ranking {
            level: None,
            machines: Vec::new(),
            choices,
            median_decode_tps: None,
            median_prefill_tps: None,
            n_gen: None,
            n_prompt: None,
            setup_rule: SETUP_RULE.into(),
        };
    };
    let at_level: Vec<&TeamRunRow> = rows
        .iter()
        .filter(|r| r.model_sha256 == level.model_sha256 && r.quant == level.quant)
        .collect();
    let n_gen = common_size(
        at_level
            .iter()
            .filter(|r| r.decode_tps.is_some())
            .map(|r| (r.machine.as_str(), r.n_gen)),
    );
    let n_prompt = common_size(
        at_level
            .iter()
            .filter(|r| r.prefill_tps.is_some())
            .map(|r| (r.machine.as_str(), r.n_prompt)),
    );
    let mut by: BTreeMap<&str, Vec<&TeamRunRow>> = BTreeMap::new();
    for r in at_level {
        by.entry(r.machine.as_str()).or_default().push(r);
    }
    let mut machines: Vec<MachineRank> = by
        .into_values()
        .map(|runs| rank_machine(&runs, n_gen, n_prompt))
        .collect();
    machines.sort_by(|a, b| {
        let key = |m: &MachineRank| (m.decode_tps.unwrap_or(-1.0), m.prefill_tps.unwrap_or(-1.0));
        key(b)
            .0
            .total_cmp(&key(a).0)
            .then(key(b).1.total_cmp(&key(a).1))
            .then(a.machine.cmp(&b.machine))
    });
    let best = machines.first().and_then(|m| m.decode_tps);
    for (i, m) in machines.iter_mut().enumerate() {
        m.rank = i as u32 + 1;
        m.decode_vs_best = m.decode_tps.zip(best).map(|(d, b)| d / b);
    }
    let mut dec: Vec<f64> = machines.iter().filter_map(|m| m.decode_tps).collect();
    let mut pre: Vec<f64> = machines.iter().filter_map(|m| m.prefill_tps).collect();
    Ranking {
        level: Some(level),
        median_decode_tps: median(&mut dec),
        median_prefill_tps: median(&mut pre),
        machines,
        choices,
        n_gen,
        n_prompt,
        setup_rule: SETUP_RULE.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(machine: &str, decode: f64, prefill: f64, disturbed: bool) -> TeamRunRow {
        TeamRunRow {
            uid: format!("{machine}-{decode}"),
            machine: machine.into(),
            cpu: "cpu".into(),
            cores: 8,
            memory_bytes: 1 << 34,
            gpus: None,
            model_sha256: "abc".into(),
            file_name: "m.gguf".into(),
            model_name: None,
            arch: "llama".into(),
            quant: "Q4_K_M".into(),
            status: "ok".into(),
            backend: Some("CPU".into()),
            dyno_version: "0.1.0".into(),
            n_threads: 8,
            n_gpu_layers: None,
            started_at: "2026-11-26T00:00:00Z".into(),
            prefill_tps: Some(prefill),
            decode_tps: Some(decode),
            ttft_ms: None,
            n_prompt: Some(512),
            n_gen: Some(128),
            disturbed: disturbed as i64,
            doc: String::new(),
        }
    }

    #[test]
    fn a_twin_is_named_in_the_team_store_with_the_file_it_stands_for() {
        let label = "twin of Llama 3.2 1B (org/x-GGUF/x-Q4_K_M.gguf, sha256 0123456789ab), seed 1";
        assert_eq!(
            team_model_name(Some("Llama 3.2 1B"), "x-Q4_K_M.synth.gguf", Some(label)).unwrap(),
            format!("Llama 3.2 1B (synthetic weights: {label})")
        );
        assert_eq!(
            team_model_name(None, "x.gguf", None),
            None,
            "a real file keeps its own (absent) name"
        );
    }

    #[test]
    fn machines_rank_by_their_median_decode_and_busy_runs_do_not_count() {
        let rows = vec![
            row("a", 10.0, 100.0, false),
            row("a", 12.0, 110.0, false),
            row("a", 50.0, 500.0, true),
            row("b", 20.0, 90.0, false),
            row("c", 5.0, 300.0, true),
            // Another decode length, run more often but by one machine:
            // not compared with the tg128 that every machine ran.
            TeamRunRow {
                n_gen: Some(16),
                n_prompt: Some(64),
                ..row("b", 99.0, 999.0, false)
            },
            TeamRunRow {
                n_gen: Some(16),
                n_prompt: Some(64),
                ..row("b", 98.0, 999.0, false)
            },
            TeamRunRow {
                n_gen: Some(16),
                n_prompt: Some(64),
                ..row("b", 97.0, 999.0, false)
            },
        ];
        let r = rank(&rows, None);
        let order: Vec<&str> = r.machines.iter().map(|m| m.machine.as_str()).collect();
        assert_eq!(order, ["b", "a", "c"]);
        let a = &r.machines[1];
        assert_eq!((a.decode_tps, a.runs, a.disturbed_runs), (Some(11.0), 2, 1));
        // A machine with only busy runs still ranks, on them.
        assert_eq!(r.machines[2].decode_tps, Some(5.0));
        assert_eq!(r.median_decode_tps, Some(11.0));
        assert_eq!(r.machines[1].decode_vs_best, Some(11.0 / 20.0));
        assert_eq!(r.choices[0].machines, 3);
        assert_eq!((r.n_gen, r.n_prompt), (Some(128), Some(512)));
        assert_eq!(r.machines[0].decode_tps, Some(20.0));
    }

    /// A run's headline figures are its tests from an empty cache: a deep
    /// test measured first is not what the team compares, and TTFT is of
    /// the prefill's own prompt length.
    #[test]
    fn a_runs_team_figures_are_from_an_empty_cache_and_one_prompt_length() {
        let mut report: Report =
            serde_json::from_str(include_str!("../../tests/fixtures/sweep-export.json")).unwrap();
        report.runs.truncate(1);
        let run = &mut report.runs[0];
        let plain = |kind: TestKind| {
            run.results
                .iter()
                .find(|r| r.kind == kind)
                .cloned()
                .unwrap()
        };
        let (pp, tg, pg) = (
            plain(TestKind::Prompt),
            plain(TestKind::Gen),
            plain(TestKind::PromptGen),
        );
        let deep = |mut r: super::super::json::ResultJson| {
            r.n_depth = 4096;
            r.mean_tokens_per_s = Some(1.0);
            r.ttft_ms = Some(9999.0);
            r
        };
        let other_prompt = super::super::json::ResultJson {
            n_prompt: 7,
            ttft_ms: Some(5.0),
            ..pg.clone()
        };
        run.results = vec![
            deep(pp.clone()),
            deep(tg.clone()),
            other_prompt,
            deep(pg.clone()),
        ];
        run.results.extend([pp.clone(), tg.clone(), pg.clone()]);
        let t = to_team(&report, Some("u"), None).unwrap();
        assert_eq!(t.prefill_tps, pp.mean_tokens_per_s);
        assert_eq!(t.decode_tps, tg.mean_tokens_per_s);
        assert_eq!(t.ttft_ms, pg.ttft_ms);
        assert_eq!((t.n_prompt, t.n_gen), (Some(64), Some(16)));
    }

    /// The e2e Team journey's empty decode: this machine's only tg128 run
    /// was timed while busy, its clean runs were of other sizes. Its busy
    /// tg128 counts, rather than its clean tg32 leaving it no figure.
    #[test]
    fn a_busy_run_of_the_compared_test_counts_when_no_clean_one_has_it() {
        let rows = vec![
            row("other", 80.0, 400.0, false),
            row("here", 60.0, 500.0, true),
            TeamRunRow {
                n_gen: Some(32),
                n_prompt: Some(128),
                ..row("here", 90.0, 900.0, false)
            },
        ];
        let r = rank(&rows, None);
        let here = r.machines.iter().find(|m| m.machine == "here").unwrap();
        assert_eq!(here.decode_tps, Some(60.0));
        assert_eq!((here.runs, here.disturbed_runs), (1, 0));
    }

    /// An offload sweep and a thread sweep are not blended into a machine's
    /// figure: each machine counts its fullest offload, then its most-used
    /// thread count, and says so.
    #[test]
    fn each_machine_ranks_at_one_setup_its_fullest_offload_and_usual_threads() {
        let gpu = |decode: f64, layers: i64| TeamRunRow {
            backend: Some("CUDA".into()),
            n_gpu_layers: Some(layers),
            n_threads: 16,
            ..row("gpu", decode, 1000.0, false)
        };
        let cpu = |decode: f64, threads: i64| TeamRunRow {
            n_threads: threads,
            ..row("cpu", decode, 100.0, false)
        };
        let rows = vec![
            gpu(100.0, 99),
            gpu(104.0, 99),
            // An offload sweep: slower, and not this machine's speed.
            gpu(10.0, 0),
            gpu(20.0, 8),
            gpu(40.0, 16),
            cpu(12.0, 8),
            // An offload sweep's layer count on a CPU-only machine, at a
            // decode length nobody compares: never its setup.
            TeamRunRow {
                n_gpu_layers: Some(30),
                n_gen: Some(32),
                ..cpu(30.0, 8)
            },
            cpu(12.4, 8),
            cpu(2.0, 1),
        ];
        let r = rank(&rows, None);
        let g = &r.machines[0];
        assert_eq!(g.machine, "gpu");
        assert_eq!(g.decode_tps, Some(102.0));
        assert_eq!((g.runs, g.other_setup_runs), (2, 3));
        assert_eq!(g.setup, "CUDA, 99 GPU layers, 16 threads");
        let c = &r.machines[1];
        assert_eq!(c.decode_tps, Some(12.2));
        assert_eq!((c.runs, c.other_setup_runs), (2, 1));
        assert_eq!(c.setup, "CPU, 8 threads");
        assert_eq!(r.setup_rule, SETUP_RULE);
    }

    /// A run's document as the team store keeps it, with the context
    /// settings that have no column.
    fn doc(n_batch: u32, n_ubatch: u32, cache_type: &str) -> String {
        serde_json::json!({
            "schema_version": 1,
            "runs": [{ "config": {
                "n_batch": n_batch, "n_ubatch": n_ubatch,
                "cache_type": cache_type, "flash_attn": "auto",
            } }],
        })
        .to_string()
    }

    /// A machine that ran a batch or KV-type sweep is ranked at
    /// llama-bench's defaults, and says so; one that ran only other
    /// settings is ranked at them, named in its setup.
    #[test]
    fn batch_sizes_and_the_kv_type_are_part_of_a_machine_s_setup() {
        let a = |decode: f64, d: String| TeamRunRow {
            doc: d,
            ..row("a", decode, 100.0, false)
        };
        let rows = vec![
            a(10.0, doc(2048, 512, "f16")),
            // A KV sweep, run more often than the default: not its speed.
            a(14.0, doc(2048, 512, "q4_0")),
            a(14.2, doc(2048, 512, "q4_0")),
            a(13.0, doc(512, 128, "f16")),
            TeamRunRow {
                doc: doc(512, 128, "q8_0"),
                ..row("b", 9.0, 90.0, false)
            },
        ];
        let r = rank(&rows, None);
        let m = |name: &str| r.machines.iter().find(|m| m.machine == name).unwrap();
        assert_eq!(m("a").decode_tps, Some(10.0));
        assert_eq!((m("a").runs, m("a").other_setup_runs), (1, 3));
        assert_eq!(m("a").setup, "CPU, 8 threads");
        assert_eq!(m("b").setup, "CPU, 8 threads, batch 512/128, KV q8_0");
        // A document that cannot be read counts as a setup of its own.
        assert_eq!(Context::of("{}"), None);
        assert!(SETUP_RULE.contains("batch sizes"));
    }
}
