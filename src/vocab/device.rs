//! The devices llama.cpp sees and where it put a loaded model: the evidence
//! of GPU offload that a result's conditions carry.

use serde::{Deserialize, Serialize};

/// A llama.cpp backend device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "OffloadBuffer")]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct FitChoice {
    pub margin_mib: u32,
    /// Layers it chose to offload (-1 or more than the model has: all).
    pub n_gpu_layers: i32,
    /// Share of the model per device, when it split one.
    pub tensor_split: Vec<f32>,
    /// Tensor-name patterns it kept in host memory (mixture-of-experts).
    pub overrides: Vec<String>,
}
