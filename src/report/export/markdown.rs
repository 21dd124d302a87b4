//! Markdown for a forum post: llama-bench's table shape (or a sweep's table
//! of levels), then the machine and the conditions each figure was measured
//! under.

use super::{Exported, Exporter};
use crate::error::Result;
use crate::report::sweep::{self, SweepReport};
use crate::report::{conditions, table, Report, Wording};
use crate::units::human_bytes;

/// `--format md`.
pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn serialize(&self, e: &Exported) -> Result<Vec<u8>> {
        let text = match &e.sweep {
            Some(s) => sweep_markdown(s, &e.report),
            None => markdown(&e.report),
        };
        Ok(text.into_bytes())
    }
}

/// A run's (or several runs') Markdown: llama-bench's table and its notes,
/// then the machine and each run's conditions.
pub fn markdown(r: &Report) -> String {
    table::bench_table(r) + &machine_and_runs(r)
}

/// A sweep's Markdown: its table of levels in place of llama-bench's grid,
/// then the same notes, machine and conditions as a run's.
fn sweep_markdown(s: &SweepReport, r: &Report) -> String {
    sweep::levels_table(s) + &table::notes(r) + &machine_and_runs(r)
}

/// The machine, then a line per run with its model, backend, conditions,
/// build and what its speed means.
fn machine_and_runs(r: &Report) -> String {
    let mut out = String::new();
    let m = &r.machine;
    let gpus: Vec<&str> = m.gpus.iter().map(|g| g.description.as_str()).collect();
    out.push_str(&format!(
        "\nmachine: {} ({} cores), {} RAM{}{}\n",
        m.cpu,
        m.cores,
        human_bytes(m.memory_bytes),
        if gpus.is_empty() {
            String::new()
        } else {
            format!(", GPU {}", gpus.join(", "))
        },
        m.os.as_ref().map(|o| format!(", {o}")).unwrap_or_default()
    ));
    for run in &r.runs {
        out.push_str(&format!(
            "run {}: {} (sha256 {}), {} · {} · {} · dyno {}\n",
            run.run_id,
            run.model.file_name,
            &run.model.sha256,
            run.backend.as_deref().unwrap_or("-"),
            conditions(&run.config, Wording::Prose),
            run.llama_cpp_build
                .as_deref()
                .unwrap_or("llama.cpp build unknown"),
            run.dyno_version
        ));
        let mods = crate::vocab::ModuleRef::list(run.backend_modules.as_deref());
        if !mods.is_empty() {
            out.push_str(&format!("  measured by: {mods}\n"));
        }
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
