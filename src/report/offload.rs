//! Offload sweeps: prefill and decode against the layers on the GPU.
//!
//! `dyno bench --ngl 0,8,16,99` makes one run per layer count. Read as a
//! list of runs, the answer to "how much does offloading buy me" is lost, so
//! the runs of one model that differ only in their layer count become one
//! series, a point per layer count, each test apart. Prefill and decode stay
//! separate series: offload moves them very differently.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RunJson;
use crate::bench::figures::Figures;
use crate::vocab::status::{ResultStatus, RunStatus};
use crate::vocab::TestKind;

/// One model's runs that differ only in GPU layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OffloadSeries {
    pub model: String,
    pub sha256: String,
    /// The other conditions, shared by every point ("threads 2, fa auto").
    pub conditions: String,
    /// Ordered by layers on the GPU.
    pub points: Vec<OffloadPoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OffloadPoint {
    pub run_id: i64,
    /// Layers on the GPU as llama.cpp reported them (else as asked, capped).
    pub n_gpu_layers: u32,
    /// Of how many it could offload, when llama.cpp said.
    pub layers_total: Option<u32>,
    pub status: RunStatus,
    pub tests: Vec<PointTest>,
}

/// One test's figure at one layer count: prefill for pp tests, decode for
/// tg tests (pp+tg tests give both, as two entries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "OffloadPointTest"))]
pub struct PointTest {
    pub test: String,
    /// "prefill" or "decode".
    pub rate: String,
    pub mean_tokens_per_s: f64,
    pub ci95_tokens_per_s: Option<f64>,
}

/// Everything about a run that must match for two runs to sit on one
/// offload curve: every condition except the layer count.
fn curve_key(r: &RunJson) -> String {
    let c = &r.config;
    let devices = c.devices_label();
    let mut key = format!(
        "threads {}, batch {}/{}, fa {}, kv {}{}, split {}, main GPU {}, devices {devices}",
        c.n_threads,
        c.n_batch,
        c.n_ubatch,
        c.flash_attn,
        c.cache_type,
        if c.no_kv_offload { " on CPU" } else { "" },
        c.split_mode,
        c.main_gpu,
    );
    if c.use_mmap == Some(false) {
        key.push_str(", no mmap");
    }
    if let Some(n) = c.n_cpu_moe {
        key.push_str(&format!(", experts of {n} layers on CPU"));
    }
    if let Some(o) = &c.tensor_overrides {
        key.push_str(&format!(", tensors {o}"));
    }
    if let Some(m) = c.fit_margin_mib {
        key.push_str(&format!(", fit {m} MiB"));
    }
    if let Some(r) = &c.rpc {
        key.push_str(&format!(", RPC servers {}", r.join(", ")));
    }
    key
}

fn point_tests(r: &RunJson) -> Vec<PointTest> {
    let mut out = Vec::new();
    let mut push = |test: &str, rate: &str, f: Option<&Figures>| {
        if let Some(f) = f {
            out.push(PointTest {
                test: test.to_string(),
                rate: rate.into(),
                mean_tokens_per_s: f.mean,
                ci95_tokens_per_s: f.ci95,
            });
        }
    };
    for t in r.results.iter().filter(|t| t.status == ResultStatus::Ok) {
        match t.kind {
            TestKind::Prompt => push(&t.test, "prefill", t.prefill_tokens_per_s.as_ref()),
            TestKind::Gen => push(&t.test, "decode", t.decode_tokens_per_s.as_ref()),
            TestKind::PromptGen => {
                push(&t.test, "prefill", t.prefill_tokens_per_s.as_ref());
                push(&t.test, "decode", t.decode_tokens_per_s.as_ref());
            }
            // Parallel decode is a throughput of many sequences; it has its
            // own view and is not mixed into a per-request curve.
            _ => {}
        }
    }
    out
}

/// The offload series in `runs`: for each model and set of other
/// conditions, the runs at two or more different layer counts.
pub fn series(runs: &[RunJson]) -> Vec<OffloadSeries> {
    let mut groups: BTreeMap<(String, String), Vec<&RunJson>> = BTreeMap::new();
    for r in runs {
        groups
            .entry((r.model.sha256.clone(), curve_key(r)))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((sha256, conditions), rs) in groups {
        let mut points: Vec<OffloadPoint> = rs
            .iter()
            .map(|r| OffloadPoint {
                run_id: r.run_id,
                // A run that failed before loading has no layer count of its
                // own; it sits at what was asked.
                n_gpu_layers: r
                    .config
                    .n_gpu_layers
                    .or(r.config.n_gpu_layers_requested)
                    .unwrap_or(0),
                layers_total: r.offload.as_ref().and_then(|o| o.layers_total),
                status: r.status,
                tests: point_tests(r),
            })
            .collect();
        points.sort_by_key(|p| (p.n_gpu_layers, p.run_id));
        let distinct = points
            .windows(2)
            .filter(|w| w[0].n_gpu_layers != w[1].n_gpu_layers)
            .count();
        if distinct == 0 {
            continue;
        }
        out.push(OffloadSeries {
            model: rs[0].model.file_name.clone(),
            sha256,
            conditions,
            points,
        });
    }
    out
}

/// The series as a Markdown table: a row per layer count, a column per
/// test and rate, mean ± 95% CI.
pub fn table(all: &[OffloadSeries]) -> String {
    let mut out = String::new();
    for s in all {
        let mut cols: Vec<(String, String)> = Vec::new();
        for p in &s.points {
            for t in &p.tests {
                let k = (t.test.clone(), t.rate.clone());
                if !cols.contains(&k) {
                    cols.push(k);
                }
            }
        }
        out.push_str(&format!(
            "\noffload sweep: {} ({}), t/s against layers on the GPU\n\n",
            s.model, s.conditions
        ));
        let mut header = vec!["GPU layers".to_string(), "run".into()];
        header.extend(cols.iter().map(|(t, r)| format!("{t} {r}")));
        out.push_str(&format!("| {} |\n", header.join(" | ")));
        out.push_str(&format!(
            "|{}\n",
            header
                .iter()
                .map(|h| format!(" {}: |", "-".repeat(h.len().max(2) - 1)))
                .collect::<String>()
        ));
        for p in &s.points {
            let mut row = vec![
                match p.layers_total {
                    Some(t) => format!("{}/{t}", p.n_gpu_layers),
                    None => p.n_gpu_layers.to_string(),
                },
                p.run_id.to_string(),
            ];
            for (test, rate) in &cols {
                let cell = p
                    .tests
                    .iter()
                    .find(|t| &t.test == test && &t.rate == rate)
                    .map(|t| match t.ci95_tokens_per_s {
                        Some(ci) => format!("{:.2} ± {:.2}", t.mean_tokens_per_s, ci),
                        None => format!("{:.2}", t.mean_tokens_per_s),
                    })
                    .unwrap_or_else(|| p.status.as_str().to_uppercase());
                row.push(cell);
            }
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
    }
    out
}

/// Where a run's model sat, in one line for `dyno show`: layers on the
/// GPU as llama.cpp counted them, weight buffers per device, and the
/// offload settings that differ from llama.cpp's defaults.
pub fn describe(r: &RunJson) -> String {
    let c = &r.config;
    let mut parts = Vec::new();
    match r.offload.as_ref() {
        Some(o) => {
            parts.push(match (o.layers_offloaded, o.layers_total) {
                (Some(n), Some(t)) if o.rpc.is_empty() => format!("{n}/{t} layers on the GPU"),
                (Some(n), Some(t)) => format!("{n}/{t} layers offloaded"),
                _ => "no GPU offload in this build".into(),
            });
            // Each server's devices as it reported them when the run began.
            for s in &o.rpc {
                let devs: Vec<String> = s
                    .devices
                    .iter()
                    .map(|d| {
                        // ggml's RPC client names a server's device only by
                        // its endpoint: the server itself prints what it is.
                        let what = if d.description == s.endpoint {
                            String::new()
                        } else {
                            format!(" {}", d.description)
                        };
                        format!(
                            "{}{what} ({} free of {})",
                            d.name,
                            crate::units::human_bytes(d.memory_free_bytes),
                            crate::units::human_bytes(d.memory_total_bytes)
                        )
                    })
                    .collect();
                parts.push(format!("RPC server {}: {}", s.endpoint, devs.join(", ")));
            }
            let bufs: Vec<String> = o
                .buffers
                .iter()
                .filter(|b| b.bytes > 0)
                .map(|b| format!("{} {}", b.name, crate::units::human_bytes(b.bytes)))
                .collect();
            if !bufs.is_empty() {
                parts.push(format!("weights in {}", bufs.join(", ")));
            }
            if let Some(f) = &o.fit {
                parts.push(format!(
                    "--fit ({} MiB margin) chose {} layers",
                    f.margin_mib,
                    if f.n_gpu_layers < 0 {
                        "all".to_string()
                    } else {
                        f.n_gpu_layers.to_string()
                    }
                ));
            }
        }
        None => parts.push(format!(
            "{} layers on the GPU (not reported by llama.cpp for this run)",
            c.n_gpu_layers.unwrap_or(0)
        )),
    }
    if c.main_gpu != 0 {
        parts.push(format!("main GPU {}", c.main_gpu));
    }
    if c.devices.is_some() {
        parts.push(format!("devices {}", c.devices_label()));
    }
    if c.split_mode != "layer" {
        parts.push(format!("split {}", c.split_mode));
    }
    if c.no_kv_offload {
        parts.push("KV cache on the CPU".into());
    }
    if let Some(n) = c.n_cpu_moe {
        parts.push(format!("experts of {n} layers on the CPU"));
    }
    if let Some(o) = &c.tensor_overrides {
        parts.push(format!("tensors placed {o}"));
    }
    if let Some(n) = r.offload.as_ref().and_then(|o| o.tensors_overridden) {
        parts.push(format!(
            "{n} tensors placed by override, as llama.cpp reported"
        ));
    }
    parts.join(" · ")
}
