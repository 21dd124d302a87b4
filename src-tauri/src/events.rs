//! The progress a job pushes to the UI, as one typed enum: the UI switches on
//! `kind`, so a renamed field or a forgotten variant here would break a view
//! without a word. Being a Rust type, it is checked where it is built and its
//! TypeScript twin is generated from it (ui/src/bindings/), so the two cannot
//! drift apart silently. docs/app-api.md describes each variant.

use dyno::vocab::status::{LevelStatus, ResultStatus, RunStatus};
use serde::Serialize;

/// One progress message on a job's channel.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobEvent {
    Warning {
        message: String,
    },
    /// A sweep level begins; `index` counts from 0.
    Level {
        level: String,
        index: u32,
        total: u32,
    },
    Skipped {
        level: String,
        why: String,
    },
    Quantizing {
        level: String,
    },
    /// Bytes written by the quantizer, or by the synthesiser for "Synthetic
    /// model…".
    QuantizeProgress {
        done: u64,
        total: u64,
    },
    LevelFinished {
        level: String,
        status: LevelStatus,
        error: Option<String>,
    },
    /// A quality pass starts; `reference` for the reference level's own pass.
    Quality {
        level: String,
        reference: bool,
    },
    /// Tokens scored so far.
    QualityProgress {
        done: u64,
        total: u64,
    },
    /// A level's quality pass ended, scored or failed (the sweep's report
    /// says which), so the view can stop showing it as in progress.
    QualityDone {
        level: String,
    },
    /// A model's worker starts; `model` is the file name.
    Loading {
        model: String,
    },
    /// `quiet`: nothing more is sent until `test_finished`, so the webview
    /// does not take CPU from the test. `reps` and `warmup` are the run's
    /// plan, so the view can say how long the silence should last.
    TestStarted {
        run_id: i64,
        test: String,
        quiet: bool,
        reps: u32,
        warmup: bool,
    },
    /// One timed repetition. The app never sends it (the view stays still
    /// while a test is timed); the UI still understands it from other senders.
    Sample {
        run_id: i64,
        test: String,
        rep: u32,
        reps: u32,
    },
    TestFinished {
        run_id: i64,
        test: String,
        status: ResultStatus,
        error: Option<String>,
    },
    RunFinished {
        run_id: i64,
        status: RunStatus,
        error: Option<String>,
    },
    /// The whole machine, about once a second while a job runs; `t_s` is
    /// seconds since the job's sampler started, so held-back readings land
    /// at their own time on the chart.
    Telemetry {
        t_s: f64,
        cpu_pct: Option<f32>,
        /// System RAM in use, not the worker's RSS.
        ram_used_bytes: Option<u64>,
        gpu_pct: Option<f32>,
        power_w: Option<f64>,
        vram_bytes: Option<u64>,
    },
    DownloadStart {
        path: String,
        total: u64,
        already: u64,
    },
    /// `done`: bytes on disk so far, resumed bytes included.
    DownloadProgress {
        done: u64,
        total: u64,
    },
    DownloadFinished {
        path: String,
    },
    /// A benchmark is timing a test: the download holds still until it ends.
    DownloadPaused,
    DownloadResumed,
    /// A server benchmark found its server.
    ServeDetected {
        /// "llama-server", "Ollama", "LM Studio", "vLLM" or "OpenAI-compatible".
        server: String,
        version: Option<String>,
        model: String,
    },
    /// A server benchmark's test `index` of `total` begins.
    ServeTest {
        test: String,
        index: usize,
        total: usize,
    },
    /// Requests of the current server test that have ended.
    ServeRequests {
        done: usize,
        total: usize,
    },
    ServeTestFinished {
        test: String,
        status: ResultStatus,
        ok: usize,
        requests: usize,
        error: Option<String>,
    },
    ServeWarning {
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_cross_as_the_ui_reads_them() {
        let v = serde_json::to_value(JobEvent::TestStarted {
            run_id: 3,
            test: "pp512".into(),
            quiet: true,
            reps: 5,
            warmup: true,
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "test_started", "run_id": 3, "test": "pp512",
                "quiet": true, "reps": 5, "warmup": true})
        );
        let v = serde_json::to_value(JobEvent::RunFinished {
            run_id: 3,
            status: RunStatus::Ok,
            error: None,
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "run_finished", "run_id": 3, "status": "ok", "error": null})
        );
        assert_eq!(
            serde_json::to_value(JobEvent::DownloadPaused).unwrap(),
            serde_json::json!({"kind": "download_paused"})
        );
        assert_eq!(
            serde_json::to_value(JobEvent::QualityDone {
                level: "Q8_0".into()
            })
            .unwrap(),
            serde_json::json!({"kind": "quality_done", "level": "Q8_0"})
        );
    }
}
