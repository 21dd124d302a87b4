//! Exports of a run or a sweep: Markdown for forum posts, CSV with every
//! condition a column, the full JSON document, and llama-bench's JSON field
//! names (so llama.cpp's `compare-llama-bench.py` reads Dyno's results).
//!
//! Every export goes through [`scrub`] first: no file paths, user names or
//! host names leave the machine unless the user opts in. Models are named by
//! file name and sha256.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::{card, sweep, table, Loaded, Report, ResultJson, RunJson, Target};
use crate::error::{DynoError, Result};
use crate::store::Store;

/// What `dyno export` and the app's Export view write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Csv,
    Json,
    LlamaBenchJson,
    /// The result card, 1200×630.
    Png,
    /// The result card as SVG (text stays text).
    Svg,
}

impl Format {
    /// Binary or picture formats go to a file, never to a terminal.
    pub fn is_image(self) -> bool {
        matches!(self, Format::Png | Format::Svg)
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Md => "md",
            Format::Csv => "csv",
            Format::Json | Format::LlamaBenchJson => "json",
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = DynoError;

    fn from_str(s: &str) -> Result<Format> {
        <Format as clap::ValueEnum>::from_str(s, true).map_err(|_| {
            DynoError::BadInput(format!(
                "'{s}' is not an export format; use md, csv, json, llama-bench-json, png or svg"
            ))
        })
    }
}

/// Export `target` from the store in `format`. Everything is built from the
/// scrubbed document, so no format can leak what the JSON leaves out.
pub async fn export(
    store: &Store,
    db: &Path,
    target: Target,
    format: Format,
    include_host: bool,
) -> Result<Vec<u8>> {
    let private = Private::here();
    let loaded = super::load(store, db, target).await?;
    let doc = match &loaded {
        Loaded::Run(r) => document(r, include_host, &private),
        Loaded::Sweep(s) => document(s, include_host, &private),
    };
    let back = |e: serde_json::Error| DynoError::Internal(format!("a scrubbed report: {e}"));
    let report: Report = serde_json::from_value(doc.clone()).map_err(back)?;
    let swept: Option<sweep::SweepReport> = match loaded {
        Loaded::Sweep(_) => Some(serde_json::from_value(doc.clone()).map_err(back)?),
        Loaded::Run(_) => None,
    };
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&doc).expect("serialises") + "\n",
        Format::LlamaBenchJson => {
            serde_json::to_string_pretty(&llama_bench_json(&report)).expect("serialises") + "\n"
        }
        Format::Csv => csv(&report),
        Format::Md => match &swept {
            Some(s) => {
                sweep::markdown(s)
                    + "\n"
                    + &markdown(&report)
                        .split_once("\n\n")
                        .map(|x| x.1.to_string())
                        .unwrap_or_default()
            }
            None => markdown(&report),
        },
        Format::Svg => card::svg(&report, swept.as_ref().map(|s| &s.sweep)),
        Format::Png => return card::png(&card::svg(&report, swept.as_ref().map(|s| &s.sweep))),
    };
    Ok(text.into_bytes())
}

/// Check where an export will go before anything is written. The file's
/// extension must be the format's, since a PNG named `.json` opens as
/// garbage and a mistyped format would otherwise go unnoticed until it is
/// shared; and an existing file is replaced only when `overwrite` says so,
/// because the person asked for it (`--force`, or Replace in the app).
pub fn check_destination(path: &Path, format: Format, overwrite: bool) -> Result<()> {
    let want = format.extension();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let fits = ext.as_deref() == Some(want) || (want == "md" && ext.as_deref() == Some("markdown"));
    if !fits {
        let stem = path.with_extension(want);
        return Err(DynoError::BadInput(format!(
            "{} does not end in .{want}, the extension of a {} export; name it {}",
            path.display(),
            <Format as clap::ValueEnum>::to_possible_value(&format)
                .map(|v| v.get_name().to_string())
                .unwrap_or_else(|| want.to_string()),
            stem.display()
        )));
    }
    if !overwrite && std::fs::symlink_metadata(path).is_ok() {
        return Err(DynoError::Exists(path.to_path_buf()));
    }
    if path.is_dir() {
        return Err(DynoError::BadInput(format!(
            "{} is a folder; give a file name inside it",
            path.display()
        )));
    }
    Ok(())
}

/// Write an export next to its destination and rename it into place, so a
/// full disk or a crash never leaves a half-written file under the name.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .ok_or_else(|| DynoError::BadInput(format!("{} is not a file name", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.partial", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let res = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    res.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        DynoError::io(format!("cannot write {}", path.display()), e)
    })
}

/// What [`scrub`] removes: the home directory, the user name and the host
/// name of this machine, and directories in front of file names.
#[derive(Debug, Clone, Default)]
pub struct Private {
    pub home: Option<String>,
    pub user: Option<String>,
    pub host: Option<String>,
}

impl Private {
    pub fn here() -> Private {
        let non_empty = |s: Option<String>| s.filter(|s| s.len() >= 2);
        Private {
            home: non_empty(
                directories::BaseDirs::new().map(|d| d.home_dir().display().to_string()),
            ),
            user: non_empty(
                std::env::var("USER")
                    .or_else(|_| std::env::var("USERNAME"))
                    .ok(),
            ),
            host: non_empty(sysinfo::System::host_name()),
        }
    }

    fn text(&self, s: &str) -> String {
        // An absolute path becomes its file name.
        let looks_absolute = s.starts_with('/')
            || (s.len() > 2 && s.as_bytes()[1] == b':' && matches!(s.as_bytes()[2], b'\\' | b'/'));
        if looks_absolute && !s.contains(' ') {
            return s.rsplit(['/', '\\']).next().unwrap_or("").to_string();
        }
        let mut out = s.to_string();
        if let Some(h) = &self.home {
            out = out.replace(h.as_str(), "~");
        }
        if let Some(u) = &self.user {
            out = replace_word(&out, u, "<user>");
        }
        if let Some(h) = &self.host {
            out = replace_word(&out, h, "<host>");
        }
        out
    }
}

/// Replace `word` where it stands as a word of its own, so a user called
/// "ai" does not mangle "failed".
fn replace_word(s: &str, word: &str, with: &str) -> String {
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(word) {
        let before = if i > 0 {
            rest[..i].chars().last()
        } else {
            out.chars().last()
        };
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        if is_word(before) || is_word(after) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

/// Remove private details from every string of a document.
pub fn scrub(v: &mut Value, p: &Private) {
    match v {
        Value::String(s) => *s = p.text(s),
        Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, p)),
        Value::Object(o) => o.values_mut().for_each(|x| scrub(x, p)),
        _ => {}
    }
}

/// The document as JSON, scrubbed unless `include_host`, with a header
/// saying what it is.
pub fn document<T: serde::Serialize>(doc: &T, include_host: bool, p: &Private) -> Value {
    let mut v = serde_json::to_value(doc).expect("reports serialise");
    if !include_host {
        scrub(&mut v, p);
    }
    if let Value::Object(o) = &mut v {
        o.insert(
            "exported_by".into(),
            json!(format!("dyno {}", env!("CARGO_PKG_VERSION"))),
        );
    }
    v
}

/// Markdown for a forum post: llama-bench's table shape, then the machine
/// and the conditions each figure was measured under.
pub fn markdown(r: &Report) -> String {
    let mut out = table::markdown(r);
    let m = &r.machine;
    let gpus: Vec<&str> = m.gpus.iter().map(|g| g.description.as_str()).collect();
    out.push_str(&format!(
        "\nmachine: {} ({} cores), {} RAM{}{}\n",
        m.cpu,
        m.cores,
        super::human_bytes(m.memory_bytes),
        if gpus.is_empty() {
            String::new()
        } else {
            format!(", GPU {}", gpus.join(", "))
        },
        m.os.as_ref().map(|o| format!(", {o}")).unwrap_or_default()
    ));
    for run in &r.runs {
        let c = &run.config;
        out.push_str(&format!(
            "run {}: {} (sha256 {}), {} · threads {} · ngl {} · batch {}/{} · flash attention {} · KV {} · {} repetitions · {} · dyno {}\n",
            run.run_id,
            run.model.file_name,
            &run.model.sha256,
            run.backend.as_deref().unwrap_or("-"),
            c.n_threads,
            c.n_gpu_layers.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
            c.n_batch,
            c.n_ubatch,
            c.flash_attn,
            c.cache_type,
            c.reps,
            run.llama_cpp_build.as_deref().unwrap_or("llama.cpp build unknown"),
            run.dyno_version
        ));
        if let Some(w) = &run.what_this_means {
            out.push_str(&format!(
                "  what this means: {:.1} words/s ({:.2} tokens per word with this tokenizer){}\n",
                w.words_per_s,
                w.tokens_per_word,
                w.reply_500_words_s
                    .map(|s| format!(
                        "; a 500-word reply takes {s:.1} s including {:.0} ms to the first token",
                        w.ttft_ms.unwrap_or_default()
                    ))
                    .unwrap_or_default()
            ));
        }
    }
    out
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
        ("model_size_bytes", json!(run.model.size_bytes)),
        ("model_n_params", json!(run.model.n_params)),
        ("bits_per_weight", json!(run.model.bits_per_weight)),
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

/// llama-bench's `-o json` records, one per pp, tg and pp+tg result (a
/// parallel test has no llama-bench form and is left out). As llama-bench
/// does, a pp+tg record's rate is (prompt + generated tokens) ÷ total time.
pub fn llama_bench_json(r: &Report) -> Value {
    let mut out = Vec::new();
    for run in r
        .runs
        .iter()
        .filter(|x| x.status == "ok" || !x.results.is_empty())
    {
        let c = &run.config;
        for res in run
            .results
            .iter()
            .filter(|x| x.kind != "parallel" && x.status == "ok" && !x.samples_ns.is_empty())
        {
            let tokens = f64::from(res.n_prompt) + f64::from(res.n_gen);
            let ns: Vec<f64> = res.samples_ns.iter().map(|&n| n as f64).collect();
            let ts: Vec<f64> = ns.iter().map(|n| tokens / (n / 1e9)).collect();
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let sd = |v: &[f64]| {
                if v.len() < 2 {
                    0.0
                } else {
                    let m = mean(v);
                    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
                }
            };
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
            o.insert("model_filename".into(), json!(run.model.file_name));
            o.insert(
                "model_type".into(),
                json!(run
                    .model_desc
                    .clone()
                    .unwrap_or_else(|| format!("{} {}", run.model.arch, run.model.quant))),
            );
            o.insert("model_size".into(), json!(run.model.size_bytes));
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
            o.insert(
                "flash_attn".into(),
                json!(match c.flash_attn.as_str() {
                    "on" => 1,
                    "off" => 0,
                    _ => -1,
                }),
            );
            o.insert("use_mmap".into(), json!(c.use_mmap.unwrap_or(true)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubbing_removes_paths_user_and_host() {
        let p = Private {
            home: Some("/home/zelda".into()),
            user: Some("zelda".into()),
            host: Some("castle-7".into()),
        };
        let mut v = json!({
            "path": "/home/zelda/models/m.gguf",
            "win": "C:\\Users\\zelda\\m.gguf",
            "error": "cannot read /home/zelda/x on castle-7 as zelda",
            "n": 3,
            "list": ["/opt/a/b.gguf", "plain"]
        });
        scrub(&mut v, &p);
        let s = v.to_string();
        assert!(!s.contains("zelda") && !s.contains("castle-7"), "{s}");
        assert_eq!(v["path"], "m.gguf");
        assert_eq!(v["win"], "m.gguf");
        assert_eq!(v["list"][0], "b.gguf");
        assert_eq!(v["list"][1], "plain");
        assert_eq!(v["n"], 3);
        assert_eq!(
            replace_word("failed as ai", "ai", "<user>"),
            "failed as <user>"
        );
    }

    #[test]
    fn csv_cells_are_quoted_when_needed() {
        assert_eq!(csv_cell(&json!("a,b")), "\"a,b\"");
        assert_eq!(csv_cell(&json!("say \"hi\"")), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell(&json!(null)), "");
        assert_eq!(csv_cell(&json!(1.5)), "1.5");
    }
}
