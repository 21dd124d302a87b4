//! Telemetry and the roofline in reports: per-test energy and the machine's
//! state during the timed repetitions, per-run summaries, and decode speed as
//! a share of the memory bandwidth that bounds it.

use serde::{Deserialize, Serialize};

use super::ResultJson;
use crate::store::MachineRow;
use crate::telemetry::summary::{self, Energy, Window};
use crate::telemetry::{Phase, Reading, Sources};

/// A run's telemetry in the JSON document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "RunTelemetry"))]
pub struct RunTelemetryJson {
    pub samples: usize,
    pub cpu_util_mean_pct: Option<f64>,
    pub rss_peak_bytes: Option<u64>,
    pub vram_peak_bytes: Option<u64>,
    pub gpu_power_mean_w: Option<f64>,
    pub cpu_package_power_mean_w: Option<f64>,
    pub cpu_temp_max_c: Option<f64>,
    pub gpu_temp_max_c: Option<f64>,
    /// Energy of all timed repetitions of the run's tests.
    pub energy_j: Option<f64>,
    /// Tokens processed in those repetitions per joule.
    pub tokens_per_j: Option<f64>,
    /// Whether a GPU reported throttling; null where none reports it.
    pub throttled: Option<bool>,
    /// NVML throttle-reason bits seen (benign ones removed).
    pub throttle_reasons: Option<u64>,
    /// Sources this machine does not have, so a null above says why.
    pub unavailable: Vec<String>,
}

/// Per-test telemetry: the timed repetitions only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "ResultTelemetry"))]
pub struct ResultTelemetryJson {
    pub during_timed: Window,
    pub energy: Option<Energy>,
}

/// Tokens one repetition of a result processes (prompt plus generated, over
/// all sequences).
fn tokens_per_rep(r: &ResultJson) -> u64 {
    (u64::from(r.n_prompt) + u64::from(r.n_gen)).saturating_mul(u64::from(r.n_parallel.max(1)))
}

/// Fill each result's telemetry from the readings taken during its timed
/// phase and return the run's summary. `readings` are (result id, reading)
/// in time order; `result_ids` pairs with `results`.
pub fn attach(
    results: &mut [ResultJson],
    result_ids: &[i64],
    readings: &[(Option<i64>, Reading)],
    sources: Option<&Sources>,
) -> Option<RunTelemetryJson> {
    let sources = sources?;
    let mut energy_total = 0.0;
    let mut energy_tokens = 0u64;
    let mut any_energy = false;
    for (r, id) in results.iter_mut().zip(result_ids) {
        let timed: Vec<Reading> = readings
            .iter()
            .filter(|(rid, x)| *rid == Some(*id) && x.phase == Phase::Timed)
            .map(|(_, x)| x.clone())
            .collect();
        let timed_s = r.samples_ns.iter().sum::<u64>() as f64 / 1e9;
        let tokens = tokens_per_rep(r) * r.samples_ns.len() as u64;
        let energy = summary::energy(&timed, None, timed_s, tokens);
        if let Some(e) = &energy {
            energy_total += e.energy_j;
            energy_tokens += tokens;
            any_energy = true;
        }
        r.telemetry = Some(ResultTelemetryJson {
            during_timed: summary::window(&timed, None),
            energy,
        });
    }
    let all: Vec<Reading> = readings.iter().map(|(_, x)| x.clone()).collect();
    let w = summary::window(&all, None);
    Some(RunTelemetryJson {
        samples: w.samples,
        cpu_util_mean_pct: w.cpu_util_mean_pct,
        rss_peak_bytes: w.rss_peak_bytes,
        vram_peak_bytes: w.vram_peak_bytes,
        gpu_power_mean_w: w.gpu_power_mean_w,
        cpu_package_power_mean_w: w.cpu_package_power_mean_w,
        cpu_temp_max_c: w.cpu_temp_max_c,
        gpu_temp_max_c: w.gpu_temp_max_c,
        energy_j: any_energy.then_some(energy_total),
        tokens_per_j: (any_energy && energy_total > 0.0)
            .then(|| energy_tokens as f64 / energy_total),
        throttled: w.gpu_throttle_reasons.map(|t| t != 0),
        throttle_reasons: w.gpu_throttle_reasons,
        unavailable: sources.missing().into_iter().map(String::from).collect(),
    })
}

/// Bandwidth of the memory that holds the weights: host RAM's measured
/// figure when nothing is offloaded, the first GPU's datasheet figure when
/// every layer (and the output layer) is, and `None` for a split, where no
/// single memory bounds decode.
pub fn weights_bandwidth(
    m: &MachineRow,
    n_gpu_layers: Option<i64>,
    n_layers: Option<i64>,
) -> Option<u64> {
    match (n_gpu_layers, n_layers) {
        (None | Some(0), _) => m.memory_bandwidth_bytes_per_s.map(|b| b as u64),
        (Some(g), Some(l)) if g > l => m.gpus.as_ref()?.first()?.theoretical_bandwidth_bytes_per_s,
        _ => None,
    }
}

/// Decode reads every weight once per step (a mixture of experts: the
/// weights it routes to, `step_bytes`), so those bytes × steps per
/// second is the memory traffic decode needs; as a share of the measured
/// bandwidth it says how close decode runs to the machine's limit. Steps per
/// second is the per-sequence decode rate (parallel sequences share a step).
pub fn roofline(r: &mut ResultJson, step_bytes: u64, bandwidth_bytes_per_s: Option<u64>) {
    let steps = match r.kind {
        crate::vocab::TestKind::Parallel => r.decode_per_sequence_tokens_per_s.as_ref(),
        _ => r.decode_tokens_per_s.as_ref(),
    };
    let Some(steps) = steps.map(|f| f.mean) else {
        return;
    };
    let bytes = step_bytes as f64 * steps;
    r.decode_bytes_per_s = Some(bytes);
    r.roofline_pct = bandwidth_bytes_per_s
        .filter(|b| *b > 0)
        .map(|b| bytes / b as f64 * 100.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figures::{Figures, Rate};
    use crate::vocab::status::ResultStatus;

    fn result(kind: &str, n_prompt: u32, n_gen: u32, samples_ns: Vec<u64>) -> ResultJson {
        ResultJson {
            kind: serde_json::from_value(serde_json::json!(kind)).unwrap(),
            status: ResultStatus::Ok,
            n_prompt,
            n_gen,
            n_parallel: 1,
            reps: samples_ns.len() as u32,
            rate: Rate::Decode,
            samples_ns,
            ..ResultJson::default()
        }
    }

    fn reading(t_ms: f64, phase: Phase, uj: u64) -> Reading {
        Reading {
            t_ms,
            phase,
            cpu_energy_uj: Some(uj),
            ..Reading::default()
        }
    }

    #[test]
    fn energy_is_counted_per_test_over_its_timed_readings_only() {
        // Test 7: two reps of 64 tokens, 1 s in all, at 20 W (2 J per 100 ms).
        // Its warm-up readings burn far more and must not count.
        let mut results = vec![result("gen", 0, 64, vec![500_000_000, 500_000_000])];
        let readings = vec![
            (Some(7), reading(0.0, Phase::Warmup, 0)),
            (Some(7), reading(100.0, Phase::Warmup, 50_000_000)),
            (Some(7), reading(200.0, Phase::Timed, 50_000_000)),
            (Some(7), reading(300.0, Phase::Timed, 52_000_000)),
            (Some(7), reading(400.0, Phase::Timed, 54_000_000)),
        ];
        let sources = Sources {
            rapl: true,
            nvml: false,
            temperature: false,
        };
        let run = attach(&mut results, &[7], &readings, Some(&sources)).unwrap();
        let e = results[0]
            .telemetry
            .as_ref()
            .unwrap()
            .energy
            .as_ref()
            .unwrap();
        assert!((e.energy_j - 20.0).abs() < 1e-9, "{e:?}");
        assert!((e.tokens_per_j.unwrap() - 128.0 / 20.0).abs() < 1e-9);
        assert_eq!(run.energy_j, Some(e.energy_j));
        assert_eq!(run.samples, 5);
        assert_eq!(run.unavailable.len(), 2);
    }

    #[test]
    fn telemetry_off_gives_none() {
        let mut results = vec![result("gen", 0, 8, vec![1])];
        assert!(attach(&mut results, &[1], &[], None).is_none());
        assert!(results[0].telemetry.is_none());
    }

    #[test]
    fn roofline_uses_the_per_sequence_decode_rate() {
        let fig = |mean| Figures::of(vec![mean]).unwrap();
        // 1 GB of weights at 10 steps/s = 10 GB/s of a 20 GB/s machine.
        let mut tg = result("gen", 0, 8, vec![1]);
        tg.decode_tokens_per_s = Some(fig(10.0));
        roofline(&mut tg, 1_000_000_000, Some(20_000_000_000));
        assert_eq!(tg.roofline_pct, Some(50.0));
        // Four sequences at 10 steps/s read the weights 10 times a second, not 40.
        let mut par = result("parallel", 8, 8, vec![1]);
        par.decode_tokens_per_s = Some(fig(40.0));
        par.decode_per_sequence_tokens_per_s = Some(fig(10.0));
        roofline(&mut par, 1_000_000_000, Some(20_000_000_000));
        assert_eq!(par.roofline_pct, Some(50.0));
        let mut pp = result("prompt", 8, 0, vec![1]);
        roofline(&mut pp, 1_000_000_000, Some(20_000_000_000));
        assert_eq!((pp.roofline_pct, pp.decode_bytes_per_s), (None, None));
    }
}

/// Most points a run's timeline keeps: enough for a chart a few hundred
/// pixels wide, and a bounded answer however long the run was.
pub const TIMELINE_POINTS: usize = 400;

/// One reading of a run's stored telemetry, as a timeline chart draws it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TimelinePoint {
    /// Seconds since the run's sampler started.
    pub t_s: f64,
    pub phase: String,
    pub cpu_pct: Option<f32>,
    /// System RAM in use, whole machine.
    pub ram_used_bytes: Option<u64>,
    /// The worker's resident memory.
    pub rss_bytes: Option<u64>,
    pub gpu_pct: Option<f32>,
    pub power_w: Option<f64>,
    pub vram_bytes: Option<u64>,
}

/// A run's stored telemetry over time (load, warm-up, timed tests),
/// thinned evenly to at most [`TIMELINE_POINTS`] readings. Empty when the
/// run was measured with `--no-telemetry`.
pub async fn timeline(
    store: &crate::store::Store,
    run_id: i64,
) -> crate::error::Result<Vec<TimelinePoint>> {
    let readings = store.telemetry(run_id).await?;
    let step = readings.len().div_ceil(TIMELINE_POINTS).max(1);
    Ok(readings
        .iter()
        .step_by(step)
        .map(|(_, r)| TimelinePoint {
            t_s: r.t_ms / 1e3,
            phase: r.phase.as_str().to_string(),
            cpu_pct: r.cpu_util_pct,
            ram_used_bytes: r.ram_used_bytes,
            rss_bytes: r.worker_rss_bytes,
            gpu_pct: r.gpu_util_pct,
            power_w: r.gpu_power_mw.map(|mw| mw as f64 / 1e3),
            vram_bytes: r.gpu_mem_used_bytes,
        })
        .collect())
}
