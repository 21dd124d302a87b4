//! The Markdown table `dyno bench` prints, shaped like llama-bench's:
//! model, size, params, backend, threads, ngl, test, t/s; then Dyno's own
//! columns for time to first token and model load time.
//!
//! A `pp+tg` test prints two rows (prefill and decode) and a parallel test
//! prints total and per-sequence decode, so no cell blends two rates.

use super::{human_bytes, human_params, Report, ResultJson, RunJson};
use crate::bench::figures::Figures;

fn rate(f: Option<&Figures>) -> String {
    match f {
        Some(f) => format!("{:.2} ± {:.2}", f.mean, f.stddev),
        None => "-".into(),
    }
}

fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// Rows of (test label, t/s cell, TTFT cell) for one result.
fn result_rows(r: &ResultJson) -> Vec<(String, String, String)> {
    let name = if r.status == "ok" {
        r.test.clone()
    } else {
        format!("{} ({})", r.test, r.status)
    };
    let failed = |mut rows: Vec<(String, String, String)>| {
        if let Some(e) = &r.error {
            rows.push((name.clone(), format!("error: {e}"), "-".into()));
        }
        rows
    };
    let rows = match r.kind.as_str() {
        "prompt_gen" => vec![
            (
                format!("{name} prefill"),
                rate(r.prefill_tokens_per_s.as_ref()),
                ms(r.ttft_ms),
            ),
            (
                format!("{name} decode"),
                rate(r.decode_tokens_per_s.as_ref()),
                "-".into(),
            ),
        ],
        "parallel" => {
            let mut v = vec![
                (
                    format!("{name} decode total"),
                    rate(r.decode_tokens_per_s.as_ref()),
                    "-".into(),
                ),
                (
                    format!("{name} decode per seq"),
                    rate(r.decode_per_sequence_tokens_per_s.as_ref()),
                    "-".into(),
                ),
            ];
            if r.prefill_tokens_per_s.is_some() {
                v.push((
                    format!("{name} prefill total"),
                    rate(r.prefill_tokens_per_s.as_ref()),
                    "-".into(),
                ));
            }
            v
        }
        "prompt" => vec![(
            name.clone(),
            rate(r.prefill_tokens_per_s.as_ref()),
            "-".into(),
        )],
        _ => vec![(
            name.clone(),
            rate(r.decode_tokens_per_s.as_ref()),
            "-".into(),
        )],
    };
    if r.status == "ok" {
        rows
    } else if r.samples_tokens_per_s.is_empty() {
        failed(Vec::new())
    } else {
        failed(rows)
    }
}

/// Optional columns, shown (as llama-bench does) only when some run uses a
/// value other than the default.
struct Extra {
    name: &'static str,
    get: fn(&RunJson) -> String,
    default: &'static str,
}

const EXTRAS: [Extra; 5] = [
    Extra {
        name: "n_batch",
        get: |r| r.config.n_batch.to_string(),
        default: "2048",
    },
    Extra {
        name: "n_ubatch",
        get: |r| r.config.n_ubatch.to_string(),
        default: "512",
    },
    Extra {
        name: "fa",
        get: |r| r.config.flash_attn.clone(),
        default: "auto",
    },
    Extra {
        name: "type_kv",
        get: |r| r.config.cache_type.clone(),
        default: "f16",
    },
    Extra {
        name: "mmap",
        get: |r| u8::from(r.config.use_mmap).to_string(),
        default: "1",
    },
];

/// Render the report as a Markdown table.
pub fn markdown(report: &Report) -> String {
    let extras: Vec<&Extra> = EXTRAS
        .iter()
        .filter(|e| report.runs.iter().any(|r| (e.get)(r) != e.default))
        .collect();
    let mut header: Vec<String> = ["model", "size", "params", "backend", "threads", "ngl"]
        .map(String::from)
        .to_vec();
    header.extend(extras.iter().map(|e| e.name.to_string()));
    header.extend(["test", "t/s", "TTFT ms", "load ms"].map(String::from));

    let mut rows: Vec<Vec<String>> = Vec::new();
    for run in &report.runs {
        let mut fixed = vec![
            run.model_desc
                .clone()
                .unwrap_or_else(|| format!("{} {}", run.model.arch, run.model.quant)),
            human_bytes(run.model.size_bytes),
            human_params(run.model.n_params),
            run.backend.clone().unwrap_or_else(|| "-".into()),
            run.config.n_threads.to_string(),
            run.config
                .n_gpu_layers
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
        ];
        fixed.extend(extras.iter().map(|e| (e.get)(run)));
        let load = ms(run.load_time_ms);
        let mut any = false;
        for r in &run.results {
            for (test, ts, ttft) in result_rows(r) {
                let mut row = fixed.clone();
                row.extend([test, ts, ttft, load.clone()]);
                rows.push(row);
                any = true;
            }
        }
        if !any || (run.status != "ok" && run.results.iter().all(|r| r.status == "ok")) {
            let mut row = fixed.clone();
            let why = run.error.clone().unwrap_or_else(|| run.status.clone());
            row.extend([
                "-".into(),
                format!("{}: {why}", run.status.to_uppercase()),
                "-".into(),
                load.clone(),
            ]);
            rows.push(row);
        }
    }

    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numeric = |h: &str| {
        matches!(
            h,
            "size"
                | "params"
                | "threads"
                | "ngl"
                | "t/s"
                | "TTFT ms"
                | "load ms"
                | "n_batch"
                | "n_ubatch"
        )
    };
    let line = |cells: &[String]| {
        let mut s = String::from("|");
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if numeric(&header[i]) {
                s.push_str(&format!(" {}{c} |", " ".repeat(pad)));
            } else {
                s.push_str(&format!(" {c}{} |", " ".repeat(pad)));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&header);
    out.push('|');
    for (i, w) in widths.iter().enumerate() {
        if numeric(&header[i]) {
            out.push_str(&format!(" {}: |", "-".repeat(w.saturating_sub(1))));
        } else {
            out.push_str(&format!(" {} |", "-".repeat(*w)));
        }
    }
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r));
    }
    if let Some(b) = &report.machine.llama_cpp_build {
        out.push_str(&format!(
            "\nbuild: {b}; machine: {} ({} cores, {})\n",
            report.machine.cpu,
            report.machine.cores,
            human_bytes(report.machine.memory_bytes)
        ));
    }
    out
}
