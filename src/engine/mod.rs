//! Everything that touches llama.cpp. Runs only inside a worker process, so a
//! crash or abort in llama.cpp takes down the worker and never the parent.

pub mod llama;
pub mod measure;
pub mod modules;
pub mod quality;
pub mod rpc;

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event as TracingEvent, Level, Subscriber};
use tracing_subscriber::layer::{Context as LayerContext, Layer};

use crate::vocab::{BackendModules, Buffer, Device, Offload};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("llama.cpp could not load the model: {0}")]
    Load(String),
    #[error("this llama.cpp build does not support the model's architecture: {0}")]
    UnsupportedArch(String),
    #[error("{0}")]
    Context(String),
    /// A `--device` name this build does not have.
    #[error("{0}")]
    Device(String),
    /// An `--override-tensor` entry llama.cpp cannot use: an unknown buffer
    /// type, or a pattern that is not a regular expression.
    #[error("{0}")]
    Override(String),
    /// An RPC server that cannot be reached or served, or no RPC module.
    #[error("{0}")]
    Rpc(String),
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

/// llama.cpp's backend, once initialised; `None` when no backend module
/// could be loaded (see [`init`]).
static BACKEND: OnceLock<Option<llama_cpp_2::llama_backend::LlamaBackend>> = OnceLock::new();

/// What the module loader found and loaded; `None` in a build with
/// llama.cpp's backends linked in.
static MODULES: OnceLock<Option<BackendModules>> = OnceLock::new();

/// The backend modules of this process, once [`init`] has run.
pub fn modules() -> Option<BackendModules> {
    MODULES.get().cloned().flatten()
}

/// How many backends llama.cpp has registered.
fn registered() -> usize {
    // SAFETY: no arguments; it reads ggml's registry, built on first use.
    unsafe { llama_cpp_sys_2::ggml_backend_reg_count() }
}

/// Initialise llama.cpp once per process and route its logs into `tracing`.
/// A build with loadable backends (`.cargo/config.toml`) has no backend at
/// all until its modules are loaded (see [`modules`]); one with llama.cpp's
/// backends linked in has them registered already, and must load no module,
/// since a module would bring a second copy of ggml into the process.
///
/// Returns false when no backend could be loaded. llama.cpp must then not
/// be initialised: with an empty registry, `llama_backend_init` (and
/// `llama_supports_gpu_offload`) load every module they find beside the
/// executable or in the working folder, unchecked, which would undo every
/// refusal the loader made.
pub fn init() -> bool {
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            let linked_in = registered() > 0;
            MODULES.get_or_init(|| (!linked_in).then(modules::load));
            (registered() > 0).then(|| {
                llama_cpp_2::llama_backend::LlamaBackend::init()
                    .expect("llama.cpp backend initialised twice")
            })
        })
        .is_some()
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

/// The `tracing` target llama-cpp-2 gives every llama.cpp and ggml message.
const LLAMA_TARGET: &str = "llama-cpp-2";

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

/// What llama.cpp said about where it put the model during the last load.
static LOAD_REPORT: Mutex<Option<Offload>> = Mutex::new(None);

/// Start collecting llama.cpp's load report (call just before a load).
pub fn start_load_report() {
    *LOAD_REPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Offload::default());
}

/// Whether llama.cpp has allocated a weight buffer since
/// [`start_load_report`]: a failed load got that far.
pub fn load_allocated() -> bool {
    LOAD_REPORT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|r| !r.buffers.is_empty())
}

/// What llama.cpp reported since [`start_load_report`]; collection stops.
pub fn take_load_report() -> Offload {
    LOAD_REPORT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default()
}

/// Read one of llama.cpp's load lines into the report: "offloaded 31/31
/// layers to GPU" and "Vulkan0 model buffer size = 98.00 MiB". llama.cpp
/// says where layers went only in these lines, so they are the record.
fn read_load_line(report: &mut Offload, msg: &str) {
    let msg = msg.trim();
    if let Some(rest) = msg.strip_prefix("offloaded ") {
        if let Some((n, rest)) = rest.split_once('/') {
            let m = rest.split_whitespace().next().unwrap_or("");
            report.layers_offloaded = n.trim().parse().ok();
            report.layers_total = m.parse().ok();
        }
    } else if msg.starts_with("tensor ") && msg.contains(" buffer type overridden to ") {
        *report.tensors_overridden.get_or_insert(0) += 1;
    } else if let Some((name, size)) = msg.split_once(" model buffer size =") {
        let mib: Option<f64> = size
            .trim()
            .strip_suffix("MiB")
            .and_then(|v| v.trim().parse().ok());
        if let Some(mib) = mib {
            report.buffers.push(Buffer {
                name: name.trim().to_string(),
                bytes: (mib * 1024.0 * 1024.0).round() as u64,
            });
        }
    }
}

impl<S: Subscriber> Layer<S> for CaptureLayer {
    fn on_event(&self, event: &TracingEvent<'_>, _ctx: LayerContext<'_, S>) {
        let level = *event.metadata().level();
        // llama.cpp says which tensors an override placed at debug level.
        // Dyno's own debug events (the sampler's, with DYNO_LOG) are many
        // and never load lines, so they pass without taking the lock.
        if (level == Level::INFO || level == Level::DEBUG)
            && event.metadata().target() == LLAMA_TARGET
        {
            let mut report = LOAD_REPORT.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = report.as_mut() {
                let mut v = MessageVisitor(String::new());
                event.record(&mut v);
                read_load_line(r, &v.0);
            }
        }
        if level <= Level::WARN {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_lines_give_layers_and_buffers() {
        let mut r = Offload::default();
        read_load_line(&mut r, "offloaded 31/31 layers to GPU\n");
        read_load_line(&mut r, "     Vulkan0 model buffer size =    93.81 MiB\n");
        read_load_line(&mut r, "  CPU_Mapped model buffer size =     8.00 MiB");
        read_load_line(&mut r, "layer   0 assigned to device Vulkan0");
        assert_eq!((r.layers_offloaded, r.layers_total), (Some(31), Some(31)));
        assert_eq!(r.buffers.len(), 2);
        assert_eq!(r.buffers[0].name, "Vulkan0");
        assert_eq!(r.buffers[1].bytes, 8 * 1024 * 1024);
        assert_eq!(r.tensors_overridden, None);
        read_load_line(
            &mut r,
            "tensor blk.0.ffn_gate_exps.weight (0 MiB q4_0) buffer type overridden to CPU_REPACK",
        );
        read_load_line(
            &mut r,
            "tensor blk.1.ffn_up_exps.weight (0 MiB q4_0) buffer type overridden to CPU",
        );
        assert_eq!(r.tensors_overridden, Some(2));
    }
}
