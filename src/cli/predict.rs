//! `dyno predict`: a file's or a repo's levels predicted before download, and
//! `--accuracy`, the predictions held against what runs measured. Also the
//! short forms the `hub ls` and `models` tables show.

use std::path::Path;

use super::args::PredictArgs;
use super::open_store;
use crate::app;
use crate::app::predict::{PredictInput, PredictOutcome};
use crate::error::Result;
use crate::predict::accuracy::AccuracyReport;
use crate::predict::Prediction;
use crate::units::{human_bytes, human_params};

pub async fn predict(db: &Path, a: PredictArgs) -> Result<i32> {
    let store = open_store(db).await?;
    let out = run(&store, &a).await;
    store.close().await;
    out
}

async fn run(store: &crate::store::Store, a: &PredictArgs) -> Result<i32> {
    if a.accuracy {
        let r = app::predict::accuracy(store, a.include_disturbed).await?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&r).expect("serialises"));
        } else {
            print_accuracy(&r);
        }
        return Ok(0);
    }
    let input = PredictInput {
        target: a.target.clone().unwrap_or_default(),
        ctx: Some(a.ctx),
        threads: a.threads,
        n_prompt: Some(a.n_prompt),
        n_gen: Some(a.n_gen),
        gpu_layers: a.gpu_layers,
        min_decode: Some(a.min_tps),
    };
    let out = app::predict::predict(store, a.endpoint.as_deref(), &input).await?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialises")
        );
    } else {
        print_outcome(&out);
    }
    Ok(0)
}

/// "38 t/s (31–44)".
pub fn rate(e: &crate::predict::Estimate) -> String {
    let f = crate::units::three_figures;
    format!("{} ({}–{})", f(e.tokens_per_s), f(e.low), f(e.high))
}

fn print_outcome(o: &PredictOutcome) {
    if let (Some(repo), Some(commit)) = (&o.repo, &o.commit) {
        println!(
            "{repo} @ {} — headers only: {} fetched of {} in the files",
            commit.chars().take(12).collect::<String>(),
            human_bytes(o.header_bytes_fetched),
            human_bytes(o.file_bytes)
        );
    }
    let first = o.levels.iter().find_map(|l| l.prediction.as_ref());
    if let Some(p) = first {
        let c = &p.conditions;
        println!(
            "predicted for pp{} and tg{} at {} threads, {} GPU layers; fit at {} context",
            c.n_prompt,
            c.n_gen,
            c.threads,
            c.gpu_layers,
            crate::predict::ctx_words(c.ctx)
        );
        println!(
            "basis: decode {}; prefill {}",
            p.decode_basis.text, p.prefill_basis.text
        );
    }
    println!(
        "| level | size | params | prefill t/s (80%) | decode t/s (80%) | memory | quality (KLD) |"
    );
    println!(
        "| ----- | ---: | -----: | ----------------: | ---------------: | ------ | ------------- |"
    );
    for l in &o.levels {
        match &l.prediction {
            Some(p) => println!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                l.level,
                human_bytes(l.size_bytes),
                params(p),
                rate(&p.prefill),
                rate(&p.decode),
                p.memory.words,
                quality(p),
            ),
            None => println!(
                "| {} | {} | - | - | - | - | no prediction: {} |",
                l.level,
                human_bytes(l.size_bytes),
                l.error.as_deref().unwrap_or("?")
            ),
        }
    }
    if let Some(a) = &o.advice {
        println!("{}.", a.text);
        if let Some(l) = &a.largest_fast_enough {
            println!(
                "The largest level predicted at {:.0} t/s decode or faster: {l}.",
                a.min_decode_tokens_per_s
            );
        }
    }
}

fn params(p: &Prediction) -> String {
    let s = &p.shape;
    if s.n_expert > 0 {
        format!(
            "{} ({} active)",
            human_params(s.n_params),
            human_params(s.n_active_params)
        )
    } else {
        human_params(s.n_params)
    }
}

/// "0.031 small (prior, another model)".
pub fn quality(p: &Prediction) -> String {
    let q = &p.quality;
    let from = match q.source.as_str() {
        "measured" => "measured",
        _ => "prior, another model",
    };
    format!("{:.4} {} ({from})", q.kld, q.words)
}

/// The short column `hub ls` and `models` print: "decode ~38 t/s (31–44)".
pub fn column(p: Option<&Prediction>) -> String {
    match p {
        Some(p) => format!("decode ~{}", rate(&p.decode)),
        None => "decode ?".into(),
    }
}

fn print_accuracy(r: &AccuracyReport) {
    let left_out = match r.disturbed_left_out {
        0 => String::new(),
        1 => "1 disturbed figure left out (--include-disturbed counts it)".into(),
        n => format!("{n} disturbed figures left out (--include-disturbed counts them)"),
    };
    if r.phases.is_empty() {
        if left_out.is_empty() {
            println!(
                "no run has a stored prediction yet; every `dyno bench` and `dyno sweep` stores one before it measures"
            );
        } else {
            println!("no clean figure to judge predictions by: {left_out}");
        }
        return;
    }
    println!("| phase | tests | median error | p90 error | median predicted ÷ measured | inside the 80% interval |");
    println!("| ----- | ----: | -----------: | --------: | --------------------------: | ----------------------: |");
    for p in &r.phases {
        println!(
            "| {} | {} | {:.1}% | {:.1}% | {:.3} | {:.0}% |",
            p.phase.as_str(),
            p.n,
            p.median_abs_error * 100.0,
            p.p90_abs_error * 100.0,
            p.median_ratio,
            p.within_interval * 100.0
        );
    }
    if let Some(m) = &r.memory {
        println!(
            "memory: estimate ÷ peak RSS over {} runs: median {:.2} (from {:.2} to {:.2})",
            m.n, m.median_ratio, m.min_ratio, m.max_ratio
        );
    }
    if !left_out.is_empty() {
        println!("{left_out}");
    }
}
