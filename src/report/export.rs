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
        let mut out = strip_dirs(s);
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

/// Keys whose string values are file system paths in Dyno's documents:
/// `model.path`, a level's `path`, and a sweep spec's `source` (`files`,
/// `dir`, `from`) or a bench's `models`. They keep only their last part,
/// whatever the path looks like, since a relative path names folders too.
const PATH_KEYS: [&str; 5] = ["path", "files", "dir", "from", "models"];

/// The last part of a Unix or Windows path: a file's name, or a folder's
/// own name when the path ends in a separator.
fn last_part(p: &str) -> &str {
    p.trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
}

/// Characters that end a path in running text. Spaces do not: folder names
/// hold them ("LLM Models"), so a path goes on while separators follow.
fn ends_path(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\t'
            | '"'
            | '\''
            | '`'
            | '('
            | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | '<'
            | '>'
            | '|'
            | ';'
            | ','
    )
}

/// Where a path may begin: at the start, or after a space or an opening
/// delimiter ("'/x'", "(/x", "--db=/x"), never inside a word ("t/s", "2048/512",
/// "owner/repo") or after "https:".
fn may_start(prev: Option<char>) -> bool {
    prev.is_none_or(|c| c.is_whitespace() || ends_path(c) || c == '=')
}

/// Length of the absolute-path prefix at `i`, if one starts there: "/x",
/// "~/", "C:\\" or "C:/", or a UNC "\\\\server".
fn path_start(c: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| c.get(i + k).copied();
    if !may_start(i.checked_sub(1).map(|p| c[p])) {
        return None;
    }
    match (at(0)?, at(1), at(2)) {
        ('/', Some(n), _) if !n.is_whitespace() => Some(1),
        ('~', Some('/'), _) => Some(2),
        ('\\', Some('\\'), _) => Some(2),
        (d, Some(':'), Some('\\' | '/')) if d.is_ascii_alphabetic() => Some(3),
        _ => None,
    }
}

/// Cut the folders off every absolute path in free text (an error message,
/// a spec), Unix and Windows alike, keeping the file name and the words
/// around it: "cannot read /data/LLM Models/x.gguf: gone" becomes "cannot
/// read x.gguf: gone". A path runs over spaces to its last separator, and
/// stops at a character that cannot be part of it, at ": " and at a
/// separator after a space (where the next path begins).
fn strip_dirs(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < c.len() {
        let Some(start) = path_start(&c, i) else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        let mut last_sep = i + start - 1;
        let mut k = i + start;
        while k < c.len() {
            let ch = c[k];
            let next = c.get(k + 1).copied();
            if ends_path(ch) || (ch == ':' && next.is_none_or(char::is_whitespace)) {
                break;
            }
            if ch == '/' || ch == '\\' {
                if c[k - 1].is_whitespace() {
                    break;
                }
                last_sep = k;
            }
            k += 1;
        }
        i = last_sep + 1;
    }
    out
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

/// Remove private details from every string of a document: path fields
/// keep their last part, and free text loses the folders of any path in it.
pub fn scrub(v: &mut Value, p: &Private) {
    match v {
        Value::String(s) => *s = p.text(s),
        Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, p)),
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if PATH_KEYS.contains(&k.as_str()) {
                    to_last_part(x);
                }
                scrub(x, p);
            }
        }
        _ => {}
    }
}

/// A path field (a string, or a list of them) as its last parts.
fn to_last_part(v: &mut Value) {
    match v {
        Value::String(s) => *s = last_part(s).to_string(),
        Value::Array(a) => a.iter_mut().for_each(to_last_part),
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
        crate::units::human_bytes(m.memory_bytes),
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
        // Weights as llama-bench's model_size; the file apart, named so.
        ("model_weight_bytes", json!(run.model.weight_bytes)),
        ("model_file_bytes", json!(run.model.size_bytes)),
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

    fn fixture() -> Report {
        super::super::import::parse(
            include_str!("../../tests/fixtures/sweep-export.json"),
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

    #[test]
    fn free_text_keeps_only_the_file_names_of_paths_with_spaces() {
        let p = Private::default();
        let cases = [
            (
                "cannot read /data/LLM Models/smol copy.gguf: permission denied",
                "cannot read smol copy.gguf: permission denied",
            ),
            ("/data/LLM Models/x.gguf", "x.gguf"),
            (
                "cannot open C:\\Users\\x\\a b\\m.gguf (access denied)",
                "cannot open m.gguf (access denied)",
            ),
            (
                "copy \\\\server\\share\\LLM Models\\m.gguf failed",
                "copy m.gguf failed",
            ),
            (
                "load 'D:/My Models/q 4.gguf' and '/opt/other dir/b.gguf'",
                "load 'q 4.gguf' and 'b.gguf'",
            ),
            ("--db=/srv/my data/dyno.db", "--db=dyno.db"),
            ("see ~/LLM Models/m.gguf", "see m.gguf"),
            // What is not a path stays as it was.
            (
                "batch 2048/512, 12 t/s, 1 / 2, https://huggingface.co/a/b",
                "batch 2048/512, 12 t/s, 1 / 2, https://huggingface.co/a/b",
            ),
            ("bartowski/Llama-3-GGUF", "bartowski/Llama-3-GGUF"),
        ];
        for (raw, want) in cases {
            assert_eq!(p.text(raw), want, "{raw}");
        }
    }

    #[test]
    fn typed_path_fields_become_file_names() {
        let mut v = json!({
            "model": { "path": "models/LLM Models/smol copy.gguf", "file_name": "smol copy.gguf" },
            "levels": [ { "path": "C:\\Users\\x\\a b\\m.gguf" }, { "path": null } ],
            "spec": {
                "source": { "files": ["/data/LLM Models/a.gguf", "rel dir/b.gguf"] },
                "models": ["/data/LLM Models/c.gguf"]
            },
            "dir_spec": { "source": { "dir": "/data/LLM Models/" } },
            "from_spec": { "source": { "from": "\\\\server\\share\\m.gguf" } },
            "repo_spec": { "source": { "repo": "bartowski/Llama-3-GGUF" } }
        });
        scrub(&mut v, &Private::default());
        assert_eq!(v["model"]["path"], "smol copy.gguf");
        assert_eq!(v["levels"][0]["path"], "m.gguf");
        assert_eq!(v["levels"][1]["path"], json!(null));
        assert_eq!(v["spec"]["source"]["files"], json!(["a.gguf", "b.gguf"]));
        assert_eq!(v["spec"]["models"], json!(["c.gguf"]));
        assert_eq!(v["dir_spec"]["source"]["dir"], "LLM Models");
        assert_eq!(v["from_spec"]["source"]["from"], "m.gguf");
        assert_eq!(v["repo_spec"]["source"]["repo"], "bartowski/Llama-3-GGUF");
    }

    #[test]
    fn csv_cells_are_quoted_when_needed() {
        assert_eq!(csv_cell(&json!("a,b")), "\"a,b\"");
        assert_eq!(csv_cell(&json!("say \"hi\"")), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell(&json!(null)), "");
        assert_eq!(csv_cell(&json!(1.5)), "1.5");
    }
}
