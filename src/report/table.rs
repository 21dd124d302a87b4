//! The Markdown table `dyno bench` prints, shaped like llama-bench's:
//! model, size, params, backend, threads, ngl, test, t/s; then Dyno's own
//! columns for time to first token and model load time.
//!
//! "size" means what it means in llama-bench: the bytes of the model's
//! tensors (`llama_model_size`), not the file, whose header and metadata add
//! a few MiB. The same model then reads the same in both tables.
//!
//! A `pp+tg` test prints two rows (prefill and decode) and a parallel test
//! prints total and per-sequence decode, so no cell blends two rates.

use super::{ModelJson, Report, ResultJson, RunJson};
use crate::bench::figures::Figures;
use crate::units::{human_bytes, human_params};
use crate::vocab::status::{ResultStatus, RunStatus};
use crate::vocab::TestKind;

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
    let name = if r.status == ResultStatus::Ok {
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
    let rows = match r.kind {
        TestKind::PromptGen => vec![
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
        TestKind::Parallel => {
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
        TestKind::Prompt => vec![(
            name.clone(),
            rate(r.prefill_tokens_per_s.as_ref()),
            "-".into(),
        )],
        TestKind::Gen => vec![(
            name.clone(),
            rate(r.decode_tokens_per_s.as_ref()),
            "-".into(),
        )],
    };
    if r.status == ResultStatus::Ok && r.disturbed {
        // The figure stands, but not as this machine's clean speed; the
        // notes under the table say what disturbed it. The mark ends the
        // label, so "pp512+tg128 prefill" still reads as llama-bench's.
        rows.into_iter()
            .map(|(l, t, ttft)| (format!("{l} (disturbed)"), t, ttft))
            .collect()
    } else if r.status == ResultStatus::Ok {
        rows
    } else if r.samples_tokens_per_s.is_empty() {
        failed(Vec::new())
    } else {
        failed(rows)
    }
}

/// The "size" cell: tensor bytes as llama-bench prints them, or "-" when a
/// record (an old import) does not know them, rather than the file size
/// under llama-bench's name.
pub(crate) fn weight_size(m: &ModelJson) -> String {
    if m.weight_bytes == 0 {
        "-".into()
    } else {
        human_bytes(m.weight_bytes)
    }
}

/// Optional columns, shown (as llama-bench does) only when some run uses a
/// value other than the default.
struct Extra {
    name: &'static str,
    get: fn(&RunJson) -> String,
    default: &'static str,
}

const EXTRAS: [Extra; 13] = [
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
        get: |r| {
            r.config
                .use_mmap
                .map(|m| u8::from(m).to_string())
                .unwrap_or_else(|| "auto".into())
        },
        default: "auto",
    },
    Extra {
        name: "nkvo",
        get: |r| u8::from(r.config.no_kv_offload).to_string(),
        default: "0",
    },
    Extra {
        name: "sm",
        get: |r| r.config.split_mode.clone(),
        default: "layer",
    },
    Extra {
        name: "mg",
        get: |r| r.config.main_gpu.to_string(),
        default: "0",
    },
    Extra {
        name: "dev",
        get: |r| r.config.devices_label(),
        default: "auto",
    },
    Extra {
        name: "fit",
        get: |r| {
            r.config
                .fit_margin_mib
                .map_or("off".into(), |m| format!("{m} MiB"))
        },
        default: "off",
    },
    Extra {
        name: "n_cpu_moe",
        get: |r| r.config.n_cpu_moe.unwrap_or(0).to_string(),
        default: "0",
    },
    Extra {
        name: "ot",
        get: |r| {
            r.config
                .tensor_overrides
                .clone()
                .unwrap_or_else(|| "none".into())
        },
        default: "none",
    },
    Extra {
        name: "rpc",
        get: |r| r.config.rpc.as_ref().map_or("none".into(), |e| e.join(",")),
        default: "none",
    },
];

/// The table `dyno bench` and `dyno show` print: llama-bench's grid, then
/// its notes (what a TTFT at a depth means, the offload curve, the build).
pub fn bench_table(report: &Report) -> String {
    grid(report) + &notes(report)
}

/// The grid alone: a row per test of each run (two for a pp+tg test), a
/// failed run's reason in a row of its own.
fn grid(report: &Report) -> String {
    let extras: Vec<&Extra> = EXTRAS
        .iter()
        .filter(|e| report.runs.iter().any(|r| (e.get)(r) != e.default))
        .collect();
    let mut header: Vec<String> = ["model", "size", "params", "backend", "threads", "ngl"]
        .map(String::from)
        .to_vec();
    header.extend(extras.iter().map(|e| e.name.to_string()));
    header.extend(["test", "t/s", "TTFT ms", "load ms"].map(String::from));
    // Decode rows carry the roofline when the machine's bandwidth is known.
    let roofline = report
        .runs
        .iter()
        .flat_map(|r| &r.results)
        .any(|r| r.roofline_pct.is_some());
    if roofline {
        header.push("roofline".into());
    }

    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .flat_map(|run| run_rows(run, &extras, roofline))
        .collect();
    aligned(&header, &rows)
}

/// A run's rows of the grid: one per figure of each test, and a failed run's
/// reason in a row of its own.
fn run_rows(run: &RunJson, extras: &[&Extra], roofline: bool) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let model = run
        .model_desc
        .clone()
        .unwrap_or_else(|| format!("{} {}", run.model.arch, run.model.quant));
    let mut fixed = vec![
        // Never shown as the real model's figure (the note says of what).
        match run.model.synthetic {
            Some(_) => format!("{model} (synthetic)"),
            None => model,
        },
        weight_size(&run.model),
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
            let decode_row = r.kind == TestKind::Gen
                || test.ends_with(" decode")
                || test.ends_with(" decode per seq");
            let roof = match r.roofline_pct {
                Some(p) if decode_row => format!("{p:.1}%"),
                _ => "-".into(),
            };
            let mut row = fixed.clone();
            row.extend([test, ts, ttft, load.clone()]);
            if roofline {
                row.push(roof);
            }
            rows.push(row);
            any = true;
        }
    }
    if !any
        || (run.status != RunStatus::Ok && run.results.iter().all(|r| r.status == ResultStatus::Ok))
    {
        let mut row = fixed.clone();
        let why = run.error.clone().unwrap_or_else(|| run.status.to_string());
        row.extend([
            "-".into(),
            format!("{}: {why}", run.status.as_str().to_uppercase()),
            "-".into(),
            load.clone(),
        ]);
        if roofline {
            row.push("-".into());
        }
        rows.push(row);
    }
    rows
}

/// A Markdown table with its columns padded to their widest cell, figures
/// right-aligned (as llama-bench prints its grid).
fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
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
                | "roofline"
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
    let mut out = line(header);
    out.push('|');
    for (i, w) in widths.iter().enumerate() {
        if numeric(&header[i]) {
            out.push_str(&format!(" {}: |", "-".repeat(w.saturating_sub(1))));
        } else {
            out.push_str(&format!(" {} |", "-".repeat(*w)));
        }
    }
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// What the grid's figures need beside them, each part opening with a blank
/// line: a TTFT at a depth, the offload curve, and the build and machine.
/// A sweep's export puts these under its own table instead of the grid.
pub(crate) fn notes(report: &Report) -> String {
    let mut out = String::new();
    // A TTFT at a depth is timed after the depth's tokens are restored into
    // the cache, so it is not the empty-cache figure the column otherwise is.
    let ttft_at_depth = report
        .runs
        .iter()
        .flat_map(|r| &r.results)
        .any(|r| r.n_depth > 0 && r.ttft_ms.is_some());
    if ttft_at_depth {
        out.push_str(
            "\nTTFT of a test at @dN: the prompt follows N tokens already in the cache (restored, not timed), not an empty cache.\n",
        );
    }
    out.push_str(&synthetic_notes(report));
    out.push_str(&super::laptop::disturbed_notes(report));
    out.push_str(&super::laptop::sustained_notes(report));
    out.push_str(&super::offload::table(&report.offload_sweep));
    if let Some(b) = &report.machine.llama_cpp_build {
        out.push_str(&format!(
            "\nbuild: {b}; machine: {} ({} cores, {})\n",
            report.machine.cpu,
            report.machine.cores,
            human_bytes(report.machine.memory_bytes)
        ));
    }
    let mut modules: Vec<String> = Vec::new();
    for m in report
        .runs
        .iter()
        .flat_map(|r| r.backend_modules.iter().flatten())
    {
        let l = format!("{} {}", m.backend, m.label());
        if !modules.contains(&l) {
            modules.push(l);
        }
    }
    if !modules.is_empty() {
        out.push_str(&format!("backend modules: {}\n", modules.join(", ")));
    }
    out.push_str(&super::laptop::machine_state_notes(report));
    out
}

/// What each model with synthetic weights stands for: its figures are that
/// shape's speed here, and its text means nothing.
pub(crate) fn synthetic_notes(report: &Report) -> String {
    let mut out = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for run in &report.runs {
        let Some(label) = run.model.synthetic.as_deref() else {
            continue;
        };
        if seen.contains(&label) {
            continue;
        }
        seen.push(label);
        out.push_str(&format!(
            "\nsynthetic weights ({}): {label}. The figures estimate the speed of that shape on this machine. On Dyno's 2-core test machine, at one thread, each level of a quantisation ladder measured within 3% of its real file's prefill and decode (most within 2%, 0.99 on average), with the same peak memory, and where a file's pages land in memory moves one measurement there by about 2% (docs/method.md, \"Synthetic weights\"). Its output is noise, so quality is not measured, and its load time (a file written just now) is not reported.\n",
            run.model.file_name
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figures::Rate;
    use crate::report::{ConfigJson, MachineJson, ResultJson};

    fn figs(samples: &[f64]) -> Figures {
        Figures::of(samples.to_vec()).unwrap()
    }

    fn result(test: &str, kind: &str, rate: Rate, head: &[f64]) -> ResultJson {
        let f = figs(head);
        ResultJson {
            test: test.into(),
            kind: serde_json::from_value(serde_json::json!(kind)).unwrap(),
            status: ResultStatus::Ok,
            n_parallel: 1,
            reps: head.len() as u32,
            rate,
            samples_tokens_per_s: f.samples.clone(),
            mean_tokens_per_s: Some(f.mean),
            stddev_tokens_per_s: Some(f.stddev),
            median_tokens_per_s: Some(f.median),
            min_tokens_per_s: Some(f.min),
            max_tokens_per_s: Some(f.max),
            ci95_tokens_per_s: f.ci95,
            ..ResultJson::default()
        }
    }

    fn report() -> Report {
        let mut pp = result("pp512", "prompt", Rate::Prefill, &[100.0, 102.0]);
        pp.prefill_tokens_per_s = Some(figs(&[100.0, 102.0]));
        let mut pg = result("pp16+tg4", "prompt_gen", Rate::Decode, &[20.0, 22.0]);
        pg.prefill_tokens_per_s = Some(figs(&[300.0, 300.0]));
        pg.decode_tokens_per_s = Some(figs(&[20.0, 22.0]));
        pg.ttft_ms = Some(53.5);
        let run = RunJson {
            run_id: 7,
            sweep_id: Some(1),
            level_sweep_id: None,
            status: ResultStatus::Ok,
            error: None,
            error_code: None,
            model: ModelJson {
                path: "/m/x.gguf".into(),
                file_name: "x.gguf".into(),
                sha256: "ab".into(),
                arch: "llama".into(),
                name: None,
                quant: "Q4_1".into(),
                size_bytes: 100_150_976,
                n_params: 134_515_008,
                weight_bytes: 98_365_312,
                bits_per_weight: 0.0,
                n_layers: Some(30),
                context_length: None,
                synthetic: None,
            },
            config: ConfigJson {
                n_threads: 2,
                n_gpu_layers: Some(0),
                n_gpu_layers_requested: None,
                n_batch: 2048,
                n_ubatch: 512,
                flash_attn: "auto".into(),
                cache_type: "q8_0".into(),
                use_mmap: None,
                reps: 2,
                warmup: true,
                split_mode: "layer".into(),
                main_gpu: 0,
                devices: None,
                no_kv_offload: false,
                fit_margin_mib: None,
                sustain_s: None,
                n_cpu_moe: None,
                tensor_overrides: None,
                rpc: None,
            },
            backend: Some("CPU".into()),
            backend_modules: None,
            offload: None,
            power: None,
            cooldown: None,
            llama_cpp_build: Some("b1".into()),
            load_time_ms: Some(12.25),
            model_desc: Some("llama 256M Q4_1".into()),
            peak_rss_bytes: None,
            dyno_version: "0.1.0".into(),
            started_at: "t".into(),
            finished_at: None,
            results: vec![pp, pg],
            telemetry: None,
            quality: None,
            what_this_means: None,
            prediction: None,
        };
        Report {
            schema_version: 1,
            machine: MachineJson {
                fingerprint: "f".into(),
                cpu: "Test CPU".into(),
                cores: 2,
                cores_physical: Some(1),
                memory_bytes: 1 << 30,
                os: None,
                kernel: None,
                gpus: vec![],
                backend: Some("CPU".into()),
                llama_cpp_build: Some("b1".into()),
                memory_bandwidth_bytes_per_s: None,
            },
            runs: vec![run],
            offload_sweep: vec![],
            team: None,
        }
    }

    #[test]
    fn table_matches_the_pinned_rendering() {
        let expected = "\
| model           |      size |   params | backend | threads | ngl | type_kv | test             |           t/s | TTFT ms | load ms |
| --------------- | --------: | -------: | ------- | ------: | --: | ------- | ---------------- | ------------: | ------: | ------: |
| llama 256M Q4_1 | 93.81 MiB | 134.52 M | CPU     |       2 |   0 | q8_0    | pp512            | 101.00 ± 1.41 |       - |   12.25 |
| llama 256M Q4_1 | 93.81 MiB | 134.52 M | CPU     |       2 |   0 | q8_0    | pp16+tg4 prefill | 300.00 ± 0.00 |   53.50 |   12.25 |
| llama 256M Q4_1 | 93.81 MiB | 134.52 M | CPU     |       2 |   0 | q8_0    | pp16+tg4 decode  |  21.00 ± 1.41 |       - |   12.25 |

build: b1; machine: Test CPU (2 cores, 1.00 GiB)
";
        assert_eq!(bench_table(&report()), expected);
    }

    #[test]
    fn size_is_the_weight_size_as_llama_bench_prints_it() {
        // gemma-3-270m Q4_K_M: a 253,113,024-byte file holding 246,587,904
        // bytes of tensors; llama-bench's "size" is the latter.
        let mut r = report();
        r.runs[0].model.size_bytes = 253_113_024;
        r.runs[0].model.weight_bytes = 246_587_904;
        let t = bench_table(&r);
        let row = t.lines().find(|l| l.contains("pp512")).unwrap();
        assert!(row.contains("| 235.16 MiB |"), "{t}");
        assert!(
            !t.contains("241.39 MiB"),
            "the file size is not the size: {t}"
        );
    }

    #[test]
    fn ttft_at_a_depth_says_it_is_not_from_an_empty_cache() {
        let mut r = report();
        let t = bench_table(&r);
        assert!(
            !t.contains("already in the cache"),
            "no depth, no note: {t}"
        );
        let pg = &mut r.runs[0].results[1];
        pg.test = "pp16+tg4@d32".into();
        pg.n_depth = 32;
        let t = bench_table(&r);
        assert!(
            t.contains("TTFT of a test at @dN: the prompt follows N tokens already in the cache"),
            "{t}"
        );
    }

    #[test]
    fn decode_rows_show_the_roofline_when_bandwidth_is_known() {
        let mut r = report();
        r.runs[0].results[1].roofline_pct = Some(12.345);
        let t = bench_table(&r);
        let header = t.lines().next().unwrap();
        assert!(header.ends_with("| roofline |"), "{header}");
        let decode = t.lines().find(|l| l.contains("pp16+tg4 decode")).unwrap();
        assert!(decode.ends_with("|    12.3% |"), "{decode}");
        let prefill = t.lines().find(|l| l.contains("pp16+tg4 prefill")).unwrap();
        assert!(
            prefill.ends_with("|        - |"),
            "the roofline is a decode figure: {prefill}"
        );
    }

    #[test]
    fn runs_differing_only_in_gpu_layers_make_an_offload_table() {
        let mut r = report();
        let mut other = r.runs[0].clone();
        other.run_id = 2;
        other.config.n_gpu_layers = Some(31);
        other.offload = Some(crate::vocab::Offload {
            layers_offloaded: Some(31),
            layers_total: Some(31),
            ..Default::default()
        });
        other.results[0]
            .prefill_tokens_per_s
            .as_mut()
            .unwrap()
            .summary
            .mean = 900.0;
        // A run with other conditions is not on the curve.
        let mut apart = r.runs[0].clone();
        apart.run_id = 3;
        apart.config.n_threads = 1;
        r.runs.insert(0, other);
        r.runs.push(apart);
        r.offload_sweep = crate::report::offload::series(&r.runs);
        assert_eq!(r.offload_sweep.len(), 1);
        let s = &r.offload_sweep[0];
        let ngl: Vec<u32> = s.points.iter().map(|p| p.n_gpu_layers).collect();
        assert_eq!(ngl, [0, 31], "ordered by layers, not by run");
        let t = bench_table(&r);
        assert!(t.contains("offload sweep: x.gguf"), "{t}");
        let rows: Vec<&str> = t
            .lines()
            .filter(|l| l.starts_with("| 0 ") || l.starts_with("| 31/31 "))
            .collect();
        assert_eq!(rows.len(), 2, "{t}");
        assert!(rows[0].contains("101.00 ± "), "{}", rows[0]);
        assert!(rows[1].contains("900.00 ± "), "{}", rows[1]);
        let header = t.lines().find(|l| l.starts_with("| GPU layers")).unwrap();
        assert!(
            header.contains("pp512 prefill") && header.contains("pp16+tg4 decode"),
            "prefill and decode stay apart: {header}"
        );
    }

    #[test]
    fn failed_run_without_results_gets_a_row_with_its_reason() {
        let mut r = report();
        r.runs[0].results.clear();
        r.runs[0].status = RunStatus::Failed;
        r.runs[0].error = Some("the worker was killed by signal 6".into());
        let t = bench_table(&r);
        assert!(
            t.contains("FAILED: the worker was killed by signal 6"),
            "{t}"
        );
    }
}
