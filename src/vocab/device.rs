//! The devices llama.cpp sees and where it put a loaded model: the evidence
//! of GPU offload that a result's conditions carry.

use serde::{Deserialize, Serialize};

/// A llama.cpp backend device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Device {
    pub name: String,
    pub description: String,
    /// "cpu", "gpu", "igpu" or "accel".
    pub kind: String,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
}

/// Where llama.cpp put a loaded model, as it reported it while loading
/// (its "offloaded N/M layers to GPU" and "… model buffer size" lines), plus
/// what `--fit` chose. This is the evidence that layers really ran on a
/// device, not just that they were asked to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Offload {
    /// Layers llama.cpp placed on GPUs, and how many could be.
    pub layers_offloaded: Option<u32>,
    pub layers_total: Option<u32>,
    /// Weight buffers by backend buffer name ("CPU_Mapped", "Vulkan0",
    /// "CUDA0"), in bytes.
    pub buffers: Vec<Buffer>,
    /// The devices handed to llama.cpp by name: `None` for "all it sees",
    /// empty for none (CPU only).
    #[serde(default)]
    pub devices: Option<Vec<String>>,
    /// What llama.cpp's fit chose, when `--fit` was given.
    pub fit: Option<FitChoice>,
    /// Tensors llama.cpp placed by an override (`--n-cpu-moe`,
    /// `--override-tensor`), counted from its own "buffer type overridden"
    /// lines: the evidence that the patterns matched. Absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub tensors_overridden: Option<u32>,
    /// The RPC servers (`--rpc`) whose devices joined the load, each with
    /// the devices it offered and their memory when the run began. Absent
    /// when none were used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(as = "Option<Vec<RpcServer>>", optional))]
    pub rpc: Vec<RpcServer>,
}

/// An RPC server (llama.cpp's `rpc-server`, or `dyno rpc-server`) that lent
/// its devices to a run: a model split over machines is measured with them,
/// so which machines and devices took part is a condition of the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RpcServer {
    /// HOST:PORT as given to `--rpc`.
    pub endpoint: String,
    /// Its devices as this process registered them: named "RPC0", "RPC1" …
    /// in the order the servers were given, with the server's own memory
    /// figures.
    pub devices: Vec<Device>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "OffloadBuffer"))]
pub struct Buffer {
    pub name: String,
    pub bytes: u64,
}

impl Buffer {
    /// Device memory, not host memory: "CUDA0", "Vulkan0", "Metal", but not
    /// "CPU", "CPU_Mapped" or pinned host buffers such as "CUDA_Host".
    pub fn on_device(&self) -> bool {
        !self.name.starts_with("CPU") && !self.name.ends_with("_Host")
    }
}

/// The outcome of llama.cpp's fit (`common_fit_params`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FitChoice {
    pub margin_mib: u32,
    /// Layers it chose to offload (-1 or more than the model has: all).
    pub n_gpu_layers: i32,
    /// Share of the model per device, when it split one.
    pub tensor_split: Vec<f32>,
    /// Tensor-name patterns it kept in host memory (mixture-of-experts).
    pub overrides: Vec<String>,
}

/// One of llama.cpp's backend modules (a shared library that a
/// `dynamic-backends` build loads at run time), and what became of it here.
/// A result names the modules that measured it, with their sha256, because
/// two builds of "the CUDA backend" are not the same engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BackendModule {
    /// The file name: "libggml-cuda.so", "libggml-cpu-haswell.so".
    pub file: String,
    pub path: String,
    /// The backend's name as llama.cpp registers it ("CUDA", "Vulkan",
    /// "CPU"), or as the file name says when it did not load.
    pub backend: String,
    /// The CPU generation of a CPU module ("haswell", "x64"); `None` for
    /// GPU modules.
    pub variant: Option<String>,
    pub size_bytes: u64,
    /// `None` when the file could not be read.
    pub sha256: Option<String>,
    pub loaded: bool,
    /// Why it did not load, or why a loaded module has no device, in words
    /// that say what to do.
    pub reason: Option<String>,
    /// Where the libraries it needs came from, when Dyno had to find them
    /// (the CUDA runtime of an installed `nvidia-*` wheel, for example).
    pub runtime: Option<String>,
    /// The devices it gave llama.cpp, with their memory.
    pub devices: Vec<Device>,
}

/// Where the backend modules were looked for, which folder was used, and
/// each module found there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BackendModules {
    /// The folder the modules were loaded from; `None` when none was found.
    pub dir: Option<String>,
    /// Which place that folder is: "DYNO_BACKEND_DIR", "executable folder",
    /// "app resources" or "user folder".
    pub source: Option<String>,
    /// Every folder looked at, in order.
    pub searched: Vec<String>,
    /// The llama.cpp build the folder's `dyno-backends.txt` says its modules
    /// come from.
    pub build: Option<String>,
    pub modules: Vec<BackendModule>,
}

/// A module that measured a run: what a result records of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ModuleRef {
    pub backend: String,
    pub file: String,
    pub sha256: Option<String>,
}

impl BackendModules {
    /// The modules that loaded, as a run records them.
    pub fn loaded(&self) -> Vec<ModuleRef> {
        self.modules
            .iter()
            .filter(|m| m.loaded)
            .map(|m| ModuleRef {
                backend: m.backend.clone(),
                file: m.file.clone(),
                sha256: m.sha256.clone(),
            })
            .collect()
    }
}

impl ModuleRef {
    /// "CUDA libggml-cuda.so sha256:<all 64 digits>": for exports, where a
    /// reader checks the file against the one they hold, so the whole hash.
    pub fn full(&self) -> String {
        match &self.sha256 {
            Some(h) => format!("{} {} sha256:{h}", self.backend, self.file),
            None => format!("{} {}", self.backend, self.file),
        }
    }

    /// Every module of a run, joined by "; " (empty when the run predates
    /// modules or ran a build without them).
    pub fn list(mods: Option<&[ModuleRef]>) -> String {
        mods.unwrap_or_default()
            .iter()
            .map(ModuleRef::full)
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// "libggml-cuda.so (sha256 1a2b3c4d)": the file and enough of its hash
    /// to tell two builds apart at a glance.
    pub fn label(&self) -> String {
        match &self.sha256 {
            Some(h) => format!("{} ({})", self.file, &h[..h.len().min(12)]),
            None => self.file.clone(),
        }
    }
}
