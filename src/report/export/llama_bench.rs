//! llama-bench's JSON: Dyno's results under llama-bench's `-o json` field
//! names, so llama.cpp's `compare-llama-bench.py` and other tools written
//! for llama-bench read them.

use serde_json::{json, Map, Value};

use super::{Exported, Exporter};
use crate::error::Result;
use crate::report::Report;
use crate::vocab::status::{ResultStatus, RunStatus};
use crate::vocab::TestKind;

/// `--format llama-bench-json`.
pub struct LlamaBenchExporter;

impl Exporter for LlamaBenchExporter {
    fn serialize(&self, e: &Exported) -> Result<Vec<u8>> {
        Ok(
            (serde_json::to_string_pretty(&llama_bench_json(&e.report)).expect("serialises")
                + "\n")
                .into_bytes(),
        )
    }
}

/// llama-bench's `-o json` records, one per pp, tg and pp+tg result (a
/// parallel test has no llama-bench form and is left out). As llama-bench
/// does, a pp+tg record's rate is (prompt + generated tokens) ÷ total time.
pub fn llama_bench_json(r: &Report) -> Value {
    let mut out = Vec::new();
    for run in r
        .runs
        .iter()
        .filter(|x| x.status == RunStatus::Ok || !x.results.is_empty())
    {
        let fields = run_fields(r, run);
        for res in run.results.iter().filter(|x| {
            x.kind != TestKind::Parallel && x.status == ResultStatus::Ok && !x.samples_ns.is_empty()
        }) {
            let tokens = f64::from(res.n_prompt) + f64::from(res.n_gen);
            let ns: Vec<f64> = res.samples_ns.iter().map(|&n| n as f64).collect();
            let ts: Vec<f64> = ns.iter().map(|n| tokens / (n / 1e9)).collect();
            let mut o = fields.clone();
            o.insert("n_prompt".into(), json!(res.n_prompt));
            o.insert("n_gen".into(), json!(res.n_gen));
            o.insert("n_depth".into(), json!(res.n_depth));
            o.insert("test_time".into(), json!(run.started_at));
            o.insert("avg_ns".into(), json!(mean(&ns).round() as u64));
            o.insert("stddev_ns".into(), json!(sd(&ns).round() as u64));
            o.insert("avg_ts".into(), json!(mean(&ts)));
            o.insert("stddev_ts".into(), json!(sd(&ts)));
            o.insert("samples_ns".into(), json!(res.samples_ns));
            o.insert("samples_ts".into(), json!(ts));
            out.push(Value::Object(o));
        }
    }
    Value::Array(out)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The sample standard deviation, as llama-bench reports it (0 for one
/// sample).
fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// The fields every record of one run shares: build, machine, model and
/// the run's settings, under llama-bench's names.
fn run_fields(r: &Report, run: &crate::report::RunJson) -> Map<String, Value> {
    let c = &run.config;
    let mut o = Map::new();
    o.insert("build_commit".into(), json!(run.llama_cpp_build));
    o.insert("cpu_info".into(), json!(r.machine.cpu));
    o.insert(
        "gpu_info".into(),
        json!(r
            .machine
            .gpus
            .iter()
            .map(|g| g.description.clone())
            .collect::<Vec<_>>()
            .join(", ")),
    );
    o.insert("backends".into(), json!(run.backend));
    // Not a llama-bench field: the module files that measured, with
    // their hashes, so a reader comparing with llama-bench can see
    // that both loaded the same ones. Readers of llama-bench's JSON
    // ignore keys they do not know.
    o.insert(
        "dyno_backend_modules".into(),
        json!(run
            .backend_modules
            .iter()
            .flatten()
            .map(|m| m.full())
            .collect::<Vec<_>>()),
    );
    o.insert("model_filename".into(), json!(run.model.file_name));
    o.insert(
        "model_type".into(),
        json!(run
            .model_desc
            .clone()
            .unwrap_or_else(|| format!("{} {}", run.model.arch, run.model.quant))),
    );
    // llama-bench's model_size is llama_model_size: tensor bytes.
    o.insert("model_size".into(), json!(run.model.weight_bytes));
    o.insert("model_n_params".into(), json!(run.model.n_params));
    o.insert("n_batch".into(), json!(c.n_batch));
    o.insert("n_ubatch".into(), json!(c.n_ubatch));
    o.insert("n_threads".into(), json!(c.n_threads));
    o.insert("type_k".into(), json!(c.cache_type));
    o.insert("type_v".into(), json!(c.cache_type));
    o.insert("n_gpu_layers".into(), json!(c.n_gpu_layers.unwrap_or(0)));
    o.insert("split_mode".into(), json!(c.split_mode));
    o.insert("main_gpu".into(), json!(c.main_gpu));
    o.insert("no_kv_offload".into(), json!(c.no_kv_offload));
    o.insert("devices".into(), json!(c.devices_label()));
    o.insert("n_cpu_moe".into(), json!(c.n_cpu_moe.unwrap_or(0)));
    o.insert(
        "tensor_buft_overrides".into(),
        json!(c.tensor_overrides.as_deref().unwrap_or("none")),
    );
    o.insert(
        "flash_attn".into(),
        json!(match c.flash_attn.as_str() {
            "on" => 1,
            "off" => 0,
            _ => -1,
        }),
    );
    // llama-bench at the llama.cpp Dyno builds writes `load_mode`
    // (older builds wrote `use_mmap`). Dyno's default is llama.cpp's
    // "auto", which maps the file unless a device cannot, and what it
    // chose is not recorded: the record says "auto" and leaves the
    // old flag null rather than guess `true`.
    o.insert(
        "load_mode".into(),
        json!(match c.use_mmap {
            None => "auto",
            Some(true) => "mmap",
            Some(false) => "none",
        }),
    );
    o.insert("use_mmap".into(), json!(c.use_mmap));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Report {
        crate::report::import::parse(
            include_str!("../../../tests/fixtures/sweep-export.json"),
            "fixture",
        )
        .unwrap()
    }

    #[test]
    fn llama_bench_json_says_how_the_model_was_loaded() {
        // Dyno's default leaves the choice to llama.cpp (LLAMA_LOAD_MODE_AUTO,
        // mmap unless a device cannot map files), and does not record what it
        // chose: "true" would be a guess, so the record says "auto".
        let mut r = fixture();
        r.runs.truncate(1);
        let modes = [
            (None, "auto", json!(null)),
            (Some(true), "mmap", json!(true)),
        ];
        for (use_mmap, load_mode, flag) in
            modes
                .into_iter()
                .chain([(Some(false), "none", json!(false))])
        {
            r.runs[0].config.use_mmap = use_mmap;
            let v = llama_bench_json(&r);
            let rec = &v[0];
            assert_eq!(rec["load_mode"], load_mode, "{use_mmap:?}: {rec}");
            assert_eq!(rec["use_mmap"], flag, "{use_mmap:?}: {rec}");
        }
    }

    #[test]
    fn llama_bench_json_model_size_is_the_weight_bytes() {
        let r = fixture();
        let v = llama_bench_json(&r);
        assert_eq!(v[0]["model_size"], json!(r.runs[0].model.weight_bytes));
        assert_ne!(r.runs[0].model.weight_bytes, r.runs[0].model.size_bytes);
    }
}

#[cfg(test)]
mod module_tests {
    use super::*;
    use crate::vocab::ModuleRef;

    /// Every text export names the module files that measured, with their
    /// whole hash: a GPU figure is only comparable with one from the same
    /// CUDA module.
    #[test]
    fn exports_name_the_modules_that_measured() {
        let mut r = crate::report::import::parse(
            include_str!("../../../tests/fixtures/sweep-export.json"),
            "fixture",
        )
        .unwrap();
        r.runs.truncate(1);
        let cuda = ModuleRef {
            backend: "CUDA".into(),
            file: "libggml-cuda.so".into(),
            sha256: Some("7a41da6c".repeat(8)),
        };
        let cpu = ModuleRef {
            backend: "CPU".into(),
            file: "libggml-cpu.so".into(),
            sha256: None,
        };
        r.runs[0].backend_modules = Some(vec![cuda.clone(), cpu]);
        let want = format!("CUDA libggml-cuda.so sha256:{}", "7a41da6c".repeat(8));
        let lb = llama_bench_json(&r);
        assert_eq!(lb[0]["dyno_backend_modules"][0], json!(want), "{lb}");
        assert_eq!(
            lb[0]["dyno_backend_modules"][1],
            json!("CPU libggml-cpu.so")
        );
        let csv = super::super::csv::csv(&r);
        let (head, row) = csv.split_once('\n').unwrap();
        let col = head
            .split(',')
            .position(|c| c == "backend_modules")
            .unwrap();
        assert!(
            row.contains(&format!("{want}; CPU libggml-cpu.so")),
            "column {col}: {row}"
        );
        let md = super::super::markdown::markdown(&r);
        assert!(md.contains(&format!("measured by: {want}")), "{md}");
        // A run from before modules were recorded says nothing, not "none".
        r.runs[0].backend_modules = None;
        assert!(!super::super::markdown::markdown(&r).contains("measured by"));
        assert_eq!(llama_bench_json(&r)[0]["dyno_backend_modules"], json!([]));
    }
}
