//! Progress on stderr: an indicatif bar on a terminal, one plain line per
//! run otherwise (CI logs, pipes), so stdout stays clean for tables and JSON.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::bench::{BenchEvent, Flow, Reporter};

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
                self.bar.set_message(format!(
                    "{} · {} rep {}/{reps}",
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
        }
        Flow::Continue
    }
}
