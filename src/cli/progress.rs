//! Progress on stderr: an indicatif bar on a terminal, one plain line per
//! run otherwise (CI logs, pipes), so stdout stays clean for tables and JSON.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::app::bench::BenchProgress;
use crate::bench::sweep::{SweepEvent, SweepReporter};
use crate::bench::{BenchEvent, Flow, Reporter};
use crate::quantize::QuantizeProgress;
use crate::units::human_bytes;

pub struct Progress {
    bar: ProgressBar,
    tty: bool,
    label: String,
    /// The missing-telemetry line is said once, not per model.
    said_unavailable: bool,
}

impl Progress {
    pub fn new(total_samples: u64, tty: bool) -> Progress {
        let bar = if tty {
            let b =
                ProgressBar::with_draw_target(Some(total_samples), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:30.cyan/blue} {pos}/{len} reps · {elapsed_precise} · {msg}",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            b
        } else {
            ProgressBar::hidden()
        };
        Progress {
            bar,
            tty,
            label: String::new(),
            said_unavailable: false,
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn line(&self, s: String) {
        if self.tty {
            self.bar.println(s);
        } else {
            eprintln!("{s}");
        }
    }
}

impl Reporter for Progress {
    fn event(&mut self, e: &BenchEvent<'_>) -> Flow {
        match e {
            BenchEvent::Loading {
                model,
                n_runs,
                unavailable,
            } => {
                if !unavailable.is_empty() && !self.said_unavailable {
                    self.said_unavailable = true;
                    self.line(format!(
                        "dyno: telemetry without {}",
                        unavailable.join(", ")
                    ));
                }
                self.label = format!("{} {}", model.file_name, model.quant);
                self.bar.set_message(format!("loading {}", self.label));
                if !self.tty {
                    eprintln!("dyno: loading {} for {n_runs} configuration(s)", self.label);
                }
            }
            BenchEvent::Loaded { load_time_ms, .. } => {
                self.bar
                    .set_message(format!("{} loaded in {load_time_ms:.0} ms", self.label));
            }
            BenchEvent::RunStarted { run_id, config, .. } => {
                let c = &config.ctx;
                self.bar.set_message(format!(
                    "{} · run {run_id} · {} threads, batch {}",
                    self.label, c.n_threads, c.n_batch
                ));
            }
            BenchEvent::TestStarted { test, .. } => {
                self.bar
                    .set_message(format!("{} · {} (warm-up)", self.label, test.name()));
            }
            BenchEvent::Sample {
                test, rep, reps, ..
            } => {
                self.bar.inc(1);
                // A sustained decode repeats for a time, not a count.
                let of = if *reps == 0 {
                    " (sustained)".to_string()
                } else {
                    format!("/{reps}")
                };
                self.bar.set_message(format!(
                    "{} · {} rep {}{of}",
                    self.label,
                    test.name(),
                    rep + 1
                ));
            }
            BenchEvent::TestFinished {
                test,
                status,
                error,
                ..
            } => {
                if let Some(e) = error {
                    self.line(format!(
                        "dyno: {} {} {status}: {e}",
                        self.label,
                        test.name()
                    ));
                }
            }
            BenchEvent::RunFinished {
                run_id,
                status,
                error,
            } => {
                let why = error.map(|e| format!(": {e}")).unwrap_or_default();
                self.line(format!("dyno: run {run_id} ({}) {status}{why}", self.label));
            }
            BenchEvent::CoolingDown { limit_s, still } => {
                self.line(format!(
                    "dyno: cooling down before the next load ({}), up to {limit_s} s",
                    still.join(", ")
                ));
                self.bar.set_message("cooling down".to_string());
            }
        }
        Flow::Continue
    }
}

impl BenchProgress for Progress {
    fn planned(&mut self, samples: u64) {
        self.bar.set_length(samples);
    }

    fn note(&mut self, text: &str) {
        self.line(format!("dyno: {text}"));
    }
}

impl QuantizeProgress for Progress {
    fn progress(&mut self, done: u64, total: u64) {
        self.bar.set_message(format!(
            "{} · {} of about {}",
            self.label,
            human_bytes(done),
            human_bytes(total.max(done))
        ));
    }
}

impl SweepReporter for Progress {
    fn planned(&mut self, samples: u64) {
        self.bar.set_length(samples);
    }

    fn sweep(&mut self, e: &SweepEvent<'_>) {
        match e {
            SweepEvent::Warning(w) => self.line(format!("dyno: warning: {w}")),
            SweepEvent::Info(w) => self.line(format!("dyno: {w}")),
            SweepEvent::Level {
                level,
                index,
                total,
            } => {
                self.label = format!("level {}/{total} {level}", index + 1);
                self.bar.set_message(self.label.clone());
            }
            SweepEvent::Skipped { level, why } => {
                self.line(format!("dyno: {level} skipped: {why}"));
            }
            SweepEvent::Quantizing { level } => {
                self.label = format!("quantizing {level}");
                self.bar.set_message(self.label.clone());
                if !self.tty {
                    eprintln!("dyno: quantizing {level} with llama.cpp's quantizer");
                }
            }
            SweepEvent::Quantized {
                level,
                path,
                cached,
            } => {
                let how = if *cached { "from the cache" } else { "made" };
                self.line(format!("dyno: {level} {how}: {}", path.display()));
            }
            SweepEvent::LevelFinished {
                level,
                status,
                error,
            } => {
                let why = error.map(|e| format!(": {e}")).unwrap_or_default();
                self.line(format!("dyno: level {level} {status}{why}"));
            }
            SweepEvent::Quality { level, reference } => {
                self.label = if *reference {
                    format!("quality reference {level}")
                } else {
                    format!("quality {level}")
                };
                self.bar.set_message(self.label.clone());
                if !self.tty {
                    eprintln!("dyno: {}", self.label);
                }
            }
            SweepEvent::QualityProgress { done, total } => {
                self.bar
                    .set_message(format!("{} · chunk {done}/{total}", self.label));
            }
            SweepEvent::QualityDone {
                level,
                figures,
                error,
            } => match (figures, error) {
                (Some(f), _) => self.line(format!(
                    "dyno: quality {level}: PPL {:.3}{}",
                    f.ppl,
                    match (f.kld_mean, f.top1_agreement) {
                        (Some(k), Some(t)) => format!(", KLD {k:.4}, top-1 {:.1}%", t * 100.0),
                        _ => " (reference)".into(),
                    }
                )),
                (None, e) => self.line(format!(
                    "dyno: quality {level} failed: {}",
                    e.unwrap_or("unknown error")
                )),
            },
        }
    }
}
