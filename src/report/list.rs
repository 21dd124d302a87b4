//! Runs and sweeps as rows of a list (the app's Results view): what each is,
//! its status and its headline prefill and decode figures, built from two
//! light queries so 1,000 runs list in milliseconds. The full document of
//! one run or sweep is `report::load`.

use std::collections::HashMap;

use serde::Serialize;

use super::{Target, TargetKind};
use crate::error::Result;
use crate::store::Store;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "ResultListRow"))]
pub struct ListRow {
    /// What the backend loads, exports or compares for this row.
    pub target: Target,
    pub kind: TargetKind,
    pub id: i64,
    /// A run's model file name (what a person sees on disk; the model's
    /// own name is in the documents); a sweep's model name, else file name.
    pub title: String,
    pub file_name: String,
    /// A run's quant; a sweep's levels, joined with ", ".
    pub quant: String,
    pub arch: String,
    pub status: String,
    pub started_at: String,
    /// A run's first finished prefill test and its mean t/s; for a sweep,
    /// the fastest level's (of the runs listed), so its row is not blank;
    /// for a server run, the per-request median of its first test that has
    /// one (the lowest concurrency comes first).
    pub pp_mean: Option<f64>,
    pub pp_test: Option<String>,
    /// A run's first finished decode test and its mean t/s; for a sweep, the
    /// fastest level's.
    pub tg_mean: Option<f64>,
    pub tg_test: Option<String>,
    /// Whether the prefill and decode figures above were disturbed: shown
    /// with a mark, never as clean.
    pub pp_disturbed: bool,
    pub tg_disturbed: bool,
    /// Every finished test of the row that was disturbed ("tg128"; a
    /// sweep's as "Q4_0 tg128"), so the list can mark the row and say why
    /// its status is not a plain "ok".
    pub disturbed: Vec<String>,
    pub levels: usize,
    pub sweep_id: Option<i64>,
    /// The machine that measured it ("CPU · 16 threads · 32 GiB"), so runs
    /// imported from other machines can be told apart and picked by machine.
    pub machine: String,
    /// Whether that machine is this one.
    pub this_machine: bool,
    /// A server run's server and build ("llama-server b6000"); null for
    /// in-process runs and sweeps.
    pub server: Option<String>,
    /// What a model with synthetic weights stands for ("twin of SmolLM2
    /// 135M, seed 1"), so the list never shows its figures as the real
    /// model's; null for a real model and for server runs.
    pub synthetic: Option<String>,
}

/// The stored machines as a list names them, and which one is this one.
struct Machines {
    labels: HashMap<i64, String>,
    here: Option<i64>,
}

impl Machines {
    async fn load(store: &Store) -> Result<Machines> {
        let fingerprint = crate::machine::Machine::detect().fingerprint;
        let mut labels = HashMap::new();
        let mut here = None;
        for m in store.machine_labels().await? {
            if m.fingerprint == fingerprint {
                here = Some(m.id);
            }
            labels.insert(
                m.id,
                format!(
                    "{} · {} threads · {}",
                    m.cpu.trim(),
                    m.cores_logical,
                    crate::units::human_bytes(m.memory_bytes.max(0) as u64)
                ),
            );
        }
        Ok(Machines { labels, here })
    }

    fn label(&self, id: Option<i64>) -> String {
        id.and_then(|i| self.labels.get(&i).cloned())
            .unwrap_or_else(|| "unknown machine".to_string())
    }

    fn is_here(&self, id: Option<i64>) -> bool {
        id.is_some() && id == self.here
    }
}

/// A headline figure: its test, its mean, and whether it was disturbed.
type Headline = (String, Option<f64>, bool);

/// The newest `limit` runs and server runs, and every sweep, newest first.
pub async fn build(store: &Store, limit: i64) -> Result<Vec<ListRow>> {
    let machines = Machines::load(store).await?;
    let mut rows = run_rows(store, limit, &machines).await?;
    let sweeps = sweep_rows(store, &rows, &machines).await?;
    rows.extend(sweeps);
    rows.extend(serve_rows(store, limit, &machines).await?);
    // RFC 3339 UTC timestamps sort as strings.
    rows.sort_by(|a, b| b.started_at.cmp(&a.started_at));
    Ok(rows)
}

/// The newest `limit` runs, each with its first prefill and decode figure.
async fn run_rows(store: &Store, limit: i64, machines: &Machines) -> Result<Vec<ListRow>> {
    let runs = store.run_list(limit.max(0)).await?;
    let oldest = runs.iter().map(|r| r.id).min().unwrap_or(i64::MAX);
    let mut first: HashMap<(i64, &str), Headline> = HashMap::new();
    let mut disturbed: HashMap<i64, Vec<String>> = HashMap::new();
    let heads = store.headlines(oldest).await?;
    for h in &heads {
        if h.disturbed {
            disturbed.entry(h.run_id).or_default().push(h.test.clone());
        }
        if matches!(h.kind.as_str(), "prompt" | "gen") {
            first
                .entry((h.run_id, h.kind.as_str()))
                .or_insert_with(|| (h.test.clone(), h.mean_tokens_per_s, h.disturbed));
        }
    }
    Ok(runs
        .iter()
        .map(|r| {
            let pp = first.get(&(r.id, "prompt"));
            let tg = first.get(&(r.id, "gen"));
            ListRow {
                target: Target::Run(r.id),
                kind: TargetKind::Run,
                id: r.id,
                title: r.file_name.clone(),
                file_name: r.file_name.clone(),
                quant: r.quant.clone(),
                arch: r.arch.clone(),
                status: r.status.to_string(),
                started_at: r.started_at.clone(),
                pp_mean: pp.and_then(|x| x.1),
                pp_test: pp.map(|x| x.0.clone()),
                tg_mean: tg.and_then(|x| x.1),
                tg_test: tg.map(|x| x.0.clone()),
                pp_disturbed: pp.is_some_and(|x| x.2),
                tg_disturbed: tg.is_some_and(|x| x.2),
                disturbed: disturbed.remove(&r.id).unwrap_or_default(),
                levels: 1,
                sweep_id: r.sweep_id,
                machine: machines.label(r.machine_id),
                this_machine: machines.is_here(r.machine_id),
                server: None,
                synthetic: r.synthetic.clone(),
            }
        })
        .collect())
}

/// Every sweep, each with its fastest level's prefill and decode among
/// `runs` (so its row is not blank) and its levels' disturbed tests.
async fn sweep_rows(store: &Store, runs: &[ListRow], machines: &Machines) -> Result<Vec<ListRow>> {
    let mut best: HashMap<(i64, bool), (String, f64, bool)> = HashMap::new();
    let mut sweep_disturbed: HashMap<i64, Vec<String>> = HashMap::new();
    for r in runs {
        let Some(sweep) = r.sweep_id else { continue };
        for (decode, test, mean, bad) in [
            (false, &r.pp_test, r.pp_mean, r.pp_disturbed),
            (true, &r.tg_test, r.tg_mean, r.tg_disturbed),
        ] {
            if let (Some(t), Some(m)) = (test, mean) {
                let e = best
                    .entry((sweep, decode))
                    .or_insert_with(|| (t.clone(), m, bad));
                if m > e.1 {
                    *e = (t.clone(), m, bad);
                }
            }
        }
        sweep_disturbed
            .entry(sweep)
            .or_default()
            .extend(r.disturbed.iter().map(|t| format!("{} {t}", r.quant)));
    }
    let mut rows = Vec::new();
    for s in store.sweeps(i64::MAX).await? {
        let pp = best.get(&(s.id, false));
        let tg = best.get(&(s.id, true));
        let levels = store.levels(s.id).await?;
        let model = match levels.iter().find_map(|l| l.model_id) {
            Some(id) => Some(store.model(id).await?),
            None => None,
        };
        rows.push(ListRow {
            target: Target::Sweep(s.id),
            kind: TargetKind::Sweep,
            id: s.id,
            title: model
                .as_ref()
                .map(|m| sweep_title(&m.file_name))
                .unwrap_or_else(|| format!("sweep {}", s.id)),
            file_name: model
                .as_ref()
                .map(|m| m.file_name.clone())
                .unwrap_or_default(),
            quant: levels
                .iter()
                .map(|l| l.level.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            arch: model.as_ref().map(|m| m.arch.clone()).unwrap_or_default(),
            status: s.status.map_or_else(|| "-".into(), |s| s.to_string()),
            started_at: s.created_at.clone(),
            pp_mean: pp.map(|x| x.1),
            pp_test: pp.map(|x| x.0.clone()),
            tg_mean: tg.map(|x| x.1),
            tg_test: tg.map(|x| x.0.clone()),
            pp_disturbed: pp.is_some_and(|x| x.2),
            tg_disturbed: tg.is_some_and(|x| x.2),
            disturbed: sweep_disturbed.remove(&s.id).unwrap_or_default(),
            levels: levels.len(),
            sweep_id: Some(s.id),
            machine: machines.label(s.machine_id),
            this_machine: machines.is_here(s.machine_id),
            server: None,
            synthetic: model.as_ref().and_then(|m| m.synthetic.clone()),
        });
    }
    Ok(rows)
}

/// The newest `limit` server runs, each with the per-request medians of its
/// first test that has them.
async fn serve_rows(store: &Store, limit: i64, machines: &Machines) -> Result<Vec<ListRow>> {
    let mut rows = Vec::new();
    for s in store.server_runs(limit.max(0)).await? {
        // A run whose stored documents no longer read is still listed, by
        // its columns, without figures: one bad row never hides the rest.
        let r = match crate::serve::report::load(store, s.id, false).await {
            Ok(r) => Some(super::export::serve::scrubbed(r, false)),
            Err(e) => {
                tracing::warn!("server run {} is listed without its figures: {e}", s.id);
                None
            }
        };
        let first = |f: fn(&crate::serve::summary::TestSummary) -> Option<f64>| {
            r.as_ref()?
                .results
                .iter()
                .find_map(|t| f(&t.summary).map(|v| (t.test.clone(), v)))
        };
        let pp = first(|t| t.prefill_tokens_per_s.as_ref().map(|p| p.p50.value));
        let tg = first(|t| t.decode_tokens_per_s.as_ref().map(|p| p.p50.value));
        rows.push(ListRow {
            target: Target::Server(s.id),
            kind: TargetKind::Serve,
            id: s.id,
            title: r
                .as_ref()
                .map_or(s.model.clone(), |r| r.server.model.clone()),
            file_name: r
                .as_ref()
                .and_then(|r| r.server.model_path.clone())
                .unwrap_or_default(),
            quant: String::new(),
            arch: String::new(),
            status: s.status.to_string(),
            started_at: s.started_at.clone(),
            pp_mean: pp.as_ref().map(|x| x.1),
            pp_test: pp.map(|x| x.0),
            tg_mean: tg.as_ref().map(|x| x.1),
            tg_test: tg.map(|x| x.0),
            // A server run's figures are per request under a concurrency
            // the run chose; no disturbance verdict is made for them.
            pp_disturbed: false,
            tg_disturbed: false,
            disturbed: Vec::new(),
            levels: 1,
            sweep_id: None,
            machine: machines.label(s.machine_id),
            this_machine: machines.is_here(s.machine_id),
            server: Some(r.as_ref().map_or_else(
                || {
                    let v = s.server_version.as_deref().unwrap_or_default();
                    format!("{} {v}", s.server_kind).trim_end().to_string()
                },
                |r| r.server.label(),
            )),
            synthetic: None,
        });
    }
    Ok(rows)
}
/// A sweep's title: its model's file name without the level and the
/// extension ("SmolLM2-135M-Instruct" for "SmolLM2-135M-Instruct-Q8_0.gguf"),
/// so a sweep of levels is named as its runs are, by file, and not by the
/// name written inside the file.
pub fn sweep_title(file_name: &str) -> String {
    let stem = file_name.strip_suffix(".gguf").unwrap_or(file_name);
    // A synthetic twin's ".synth" is said by its mark, not its name.
    let stem = stem.strip_suffix(".synth").unwrap_or(stem);
    let Some(level) = crate::hub::files::level_of(file_name) else {
        return stem.to_string();
    };
    let upper = stem.to_ascii_uppercase();
    match upper.rfind(&level) {
        Some(at) if at > 0 && matches!(stem.as_bytes()[at - 1], b'-' | b'.' | b'_') => {
            format!("{}{}", &stem[..at - 1], &stem[at + level.len()..])
        }
        _ => stem.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_is_named_by_its_file_without_the_level() {
        assert_eq!(
            sweep_title("SmolLM2-135M-Instruct-Q8_0.gguf"),
            "SmolLM2-135M-Instruct"
        );
        assert_eq!(
            sweep_title("SmolLM2-135M-Instruct.Q4_1.gguf"),
            "SmolLM2-135M-Instruct"
        );
        assert_eq!(
            sweep_title("Llama-3.2-1B-Instruct-Q4_K_M.gguf"),
            "Llama-3.2-1B-Instruct"
        );
        assert_eq!(sweep_title("model-f16.gguf"), "model");
        assert_eq!(sweep_title("notes.gguf"), "notes");
        assert_eq!(
            sweep_title("org-x-GGUF-Q4_K_M.synth.gguf"),
            "org-x-GGUF",
            "a twin's name, without the level or .synth"
        );
    }
}
