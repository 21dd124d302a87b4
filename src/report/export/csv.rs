//! CSV: one row per result with every condition a column, for a
//! spreadsheet or a script that wants the figures without parsing JSON.

use serde_json::{json, Value};

use super::{Exported, Exporter};
use crate::error::Result;
use crate::report::{Report, ResultJson, RunJson};

/// `--format csv`.
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn serialize(&self, e: &Exported) -> Result<Vec<u8>> {
        Ok(csv(&e.report).into_bytes())
    }
}

fn csv_cell(v: &Value) -> String {
    let s = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// The columns of one result row: the run's conditions, then the result.
fn csv_row(r: &Report, run: &RunJson, res: &ResultJson) -> Vec<(&'static str, Value)> {
    let m = &r.machine;
    let c = &run.config;
    let q = run.quality.as_ref();
    let energy = res.telemetry.as_ref().and_then(|t| t.energy.as_ref());
    vec![
        ("run_id", json!(run.run_id)),
        ("sweep_id", json!(run.sweep_id)),
        ("run_status", json!(run.status)),
        ("model_file", json!(run.model.file_name)),
        ("model_sha256", json!(run.model.sha256)),
        ("arch", json!(run.model.arch)),
        ("quant", json!(run.model.quant)),
        // Weights as llama-bench's model_size; the file apart, named so.
        ("model_weight_bytes", json!(run.model.weight_bytes)),
        ("model_file_bytes", json!(run.model.size_bytes)),
        ("model_n_params", json!(run.model.n_params)),
        ("bits_per_weight", json!(run.model.bits_per_weight)),
        ("model_synthetic", json!(run.model.synthetic)),
        ("cpu", json!(m.cpu)),
        ("cores", json!(m.cores)),
        ("memory_bytes", json!(m.memory_bytes)),
        (
            "gpus",
            json!(m
                .gpus
                .iter()
                .map(|g| g.description.clone())
                .collect::<Vec<_>>()
                .join("; ")),
        ),
        ("backend", json!(run.backend)),
        ("llama_cpp_build", json!(run.llama_cpp_build)),
        (
            "backend_modules",
            json!(crate::vocab::ModuleRef::list(
                run.backend_modules.as_deref()
            )),
        ),
        ("dyno_version", json!(run.dyno_version)),
        ("n_threads", json!(c.n_threads)),
        ("n_gpu_layers", json!(c.n_gpu_layers)),
        ("n_batch", json!(c.n_batch)),
        ("n_ubatch", json!(c.n_ubatch)),
        ("flash_attn", json!(c.flash_attn)),
        ("cache_type", json!(c.cache_type)),
        ("use_mmap", json!(c.use_mmap)),
        ("reps", json!(c.reps)),
        ("started_at", json!(run.started_at)),
        ("test", json!(res.test)),
        ("kind", json!(res.kind)),
        ("status", json!(res.status)),
        ("n_prompt", json!(res.n_prompt)),
        ("n_gen", json!(res.n_gen)),
        ("n_depth", json!(res.n_depth)),
        ("n_parallel", json!(res.n_parallel)),
        ("rate", json!(res.rate)),
        ("mean_tokens_per_s", json!(res.mean_tokens_per_s)),
        ("stddev_tokens_per_s", json!(res.stddev_tokens_per_s)),
        ("median_tokens_per_s", json!(res.median_tokens_per_s)),
        ("ci95_tokens_per_s", json!(res.ci95_tokens_per_s)),
        (
            "prefill_tokens_per_s",
            json!(res.prefill_tokens_per_s.as_ref().map(|f| f.mean)),
        ),
        (
            "decode_tokens_per_s",
            json!(res.decode_tokens_per_s.as_ref().map(|f| f.mean)),
        ),
        ("ttft_ms", json!(res.ttft_ms)),
        ("load_time_ms", json!(run.load_time_ms)),
        ("energy_j", json!(energy.map(|e| e.energy_j))),
        ("tokens_per_j", json!(energy.and_then(|e| e.tokens_per_j))),
        ("roofline_pct", json!(res.roofline_pct)),
        ("ppl", json!(q.map(|q| q.ppl))),
        ("kld_mean", json!(q.map(|q| q.kld_mean))),
        ("kld_p99", json!(q.map(|q| q.kld_p99))),
        ("top1_agreement", json!(q.map(|q| q.top1_agreement))),
        (
            "samples_tokens_per_s",
            json!(res
                .samples_tokens_per_s
                .iter()
                .map(|v| format!("{v:.4}"))
                .collect::<Vec<_>>()
                .join(" ")),
        ),
    ]
}

/// One row per result, every condition a column.
pub fn csv(r: &Report) -> String {
    let mut out = String::new();
    let mut header_done = false;
    for run in &r.runs {
        for res in &run.results {
            let row = csv_row(r, run, res);
            if !header_done {
                let names: Vec<&str> = row.iter().map(|(k, _)| *k).collect();
                out.push_str(&names.join(","));
                out.push('\n');
                header_done = true;
            }
            let cells: Vec<String> = row.iter().map(|(_, v)| csv_cell(v)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_quoted_when_needed() {
        assert_eq!(csv_cell(&json!("a,b")), "\"a,b\"");
        assert_eq!(csv_cell(&json!("say \"hi\"")), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell(&json!(null)), "");
        assert_eq!(csv_cell(&json!(1.5)), "1.5");
    }
}
