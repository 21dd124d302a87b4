//! Everything that touches llama.cpp. Runs only inside a worker process, so a
//! crash or abort in llama.cpp takes down the worker and never the parent.

pub mod llama;
pub mod measure;
pub mod quality;

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event as TracingEvent, Level, Subscriber};
use tracing_subscriber::layer::{Context as LayerContext, Layer};

use crate::worker::protocol::Device;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("llama.cpp could not load the model: {0}")]
    Load(String),
    #[error("this llama.cpp build does not support the model's architecture: {0}")]
    UnsupportedArch(String),
    #[error("{0}")]
    Context(String),
    #[error("llama_decode failed with code {0} (1: no KV cache slot; <0: error)")]
    Decode(i32),
    #[error("the model produced non-finite logits: its weights are corrupt, so no speed is reported for it")]
    NonFinite,
}

/// The llama.cpp source Dyno was built with: the llama-cpp-sys-2 crate
/// version (which pins one llama.cpp commit) plus ggml's own version.
pub fn llama_cpp_build() -> String {
    format!(
        "llama-cpp-sys-2 {}, {}",
        env!("DYNO_LLAMA_SYS_VERSION"),
        llama::ggml_version()
    )
}

/// Names of the non-CPU backends compiled in and registered, as llama-bench's
/// "backend" column shows them; "CPU" when there are none.
pub fn backend_name(devices: &[Device]) -> String {
    let mut names: Vec<String> = Vec::new();
    for d in devices.iter().filter(|d| d.kind != "cpu") {
        // Device names are the backend name plus an index: "CUDA0", "Vulkan1".
        let base = d
            .name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .to_string();
        if !names.contains(&base) {
            names.push(base);
        }
    }
    if names.is_empty() {
        "CPU".into()
    } else {
        names.join(",")
    }
}

static BACKEND: OnceLock<llama_cpp_2::llama_backend::LlamaBackend> = OnceLock::new();

/// Initialise llama.cpp once per process and route its logs into `tracing`.
pub fn init() {
    BACKEND.get_or_init(|| {
        llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
        llama_cpp_2::llama_backend::LlamaBackend::init()
            .expect("llama.cpp backend initialised twice")
    });
}

/// The last warnings and errors llama.cpp logged, so a failure can say why
/// (llama.cpp reports most failures only through its log).
static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

pub fn last_errors() -> String {
    let mut q = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    let s = q
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    q.clear();
    s
}

/// A `tracing` layer that keeps the last few WARN and ERROR messages.
pub struct CaptureLayer;

struct MessageVisitor(String);

impl Visit for MessageVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_string();
        }
    }
}

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &TracingEvent<'_>, _ctx: LayerContext<'_, S>) {
        if *event.metadata().level() <= Level::WARN {
            let mut v = MessageVisitor(String::new());
            event.record(&mut v);
            let mut q = RECENT.lock().unwrap_or_else(|e| e.into_inner());
            if q.len() >= 4 {
                q.pop_front();
            }
            q.push_back(v.0);
        }
    }
}
