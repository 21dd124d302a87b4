//! Parameters of a model load and of a llama.cpp context, and the KV cache
//! types llama.cpp accepts: the settings every layer passes along, from the
//! CLI's flags through the plan and the worker to the engine.

use serde::{Deserialize, Serialize};

use super::Named;

/// Flash attention policy, as llama.cpp's `llama_flash_attn_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlashAttn {
    Auto,
    On,
    Off,
}

impl Named for FlashAttn {
    const VALUES: &'static [FlashAttn] = &[FlashAttn::Auto, FlashAttn::On, FlashAttn::Off];

    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl FlashAttn {
    pub fn as_str(self) -> &'static str {
        match self {
            FlashAttn::Auto => "auto",
            FlashAttn::On => "on",
            FlashAttn::Off => "off",
        }
    }
}

/// How llama.cpp spreads a model over several GPUs (`llama_split_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitMode {
    /// Everything on the main GPU.
    None,
    /// Whole layers (and their KV cache) per GPU: llama.cpp's default.
    #[default]
    Layer,
    /// Rows of each weight matrix across GPUs (tensor parallel where the
    /// backend supports it).
    Row,
}

impl Named for SplitMode {
    const VALUES: &'static [SplitMode] = &[SplitMode::None, SplitMode::Layer, SplitMode::Row];

    fn name(self) -> &'static str {
        self.as_str()
    }

    fn help(self) -> Option<&'static str> {
        Some(match self {
            SplitMode::None => "everything on the main GPU",
            SplitMode::Layer => "whole layers per GPU (llama.cpp's default)",
            SplitMode::Row => "rows of each weight matrix across GPUs",
        })
    }
}

impl SplitMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SplitMode::None => "none",
            SplitMode::Layer => "layer",
            SplitMode::Row => "row",
        }
    }
}

/// One tensor override (llama-bench's `-ot PATTERN=BUFFER`): tensors whose
/// names match `pattern`, a regular expression as llama.cpp matches it
/// (ECMAScript syntax, anywhere in the name), are placed in the buffer type
/// named `buffer` ("CPU", "CUDA0", "Vulkan0": the devices `dyno hw` lists)
/// instead of where the layer split would put them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorOverride {
    pub pattern: String,
    pub buffer: String,
}

impl TensorOverride {
    /// One group as llama-bench's `-ot` takes it: `PATTERN=BUFFER` entries
    /// joined by ';'. An empty group is no override.
    pub fn parse_group(s: &str) -> Result<Vec<TensorOverride>, String> {
        s.split(';')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| match e.rsplit_once('=') {
                Some((p, b)) if !p.trim().is_empty() && !b.trim().is_empty() => {
                    Ok(TensorOverride {
                        pattern: p.trim().to_string(),
                        buffer: b.trim().to_string(),
                    })
                }
                _ => Err(format!(
                    "'{e}' is not an override; write PATTERN=BUFFER, e.g. exps=CPU (several joined by ';')"
                )),
            })
            .collect()
    }

    /// A group as llama-bench writes it in its JSON and tables:
    /// `PATTERN=BUFFER;...`, or "none".
    pub fn label(group: &[TensorOverride]) -> String {
        if group.is_empty() {
            return "none".into();
        }
        group
            .iter()
            .map(|o| format!("{}={}", o.pattern, o.buffer))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// llama.cpp's pattern for the expert tensors of layer `layer` (its
/// `--n-cpu-moe` keeps those of the first N layers on the CPU): the up,
/// gate and down experts, fused or not.
pub fn expert_tensors_of_layer(layer: u32) -> String {
    format!("blk\\.{layer}\\.ffn_(up|down|gate|gate_up)_(ch|)exps")
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Parameters fixed when the model is loaded. A change of any of these needs
/// a new load, and so a new worker.
///
/// The offload fields default to llama.cpp's own defaults, so plans stored
/// before they existed still read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelParams {
    /// Layers to offload; `None` lets the worker choose: all layers when a GPU
    /// device is present, otherwise 0.
    pub n_gpu_layers: Option<u32>,
    /// `None`: llama.cpp's automatic load mode (llama-bench's default).
    pub use_mmap: Option<bool>,
    #[serde(default)]
    pub split_mode: SplitMode,
    /// The GPU (index among the devices in use) that holds the whole model
    /// with split mode `none`, and the small tensors otherwise.
    #[serde(default)]
    pub main_gpu: u32,
    /// Backend devices to use by name (`dyno hw` lists them); `None`: every
    /// GPU llama.cpp sees; an empty list: none (CPU only).
    #[serde(default)]
    pub devices: Option<Vec<String>>,
    /// Let llama.cpp fit the offload to free device memory, leaving this
    /// margin (MiB) free on each device; `n_gpu_layers` must then be `None`.
    #[serde(default)]
    pub fit_margin_mib: Option<u32>,
    /// Keep the expert tensors of the first N layers on the CPU
    /// (llama-bench's `--n-cpu-moe`): a mixture of experts whose experts do
    /// not fit on the GPU runs its attention there and its experts here.
    /// Left out of stored plans when 0, so older plans keep their keys.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n_cpu_moe: u32,
    /// Tensor placement overrides (llama-bench's `-ot`), applied before the
    /// `n_cpu_moe` patterns, as llama-bench applies them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_overrides: Vec<TensorOverride>,
    /// RPC servers (HOST:PORT) whose devices join the load, as llama-bench's
    /// `--rpc`: their devices are registered before the model loads and
    /// take layers as GPUs do. Left out of stored plans when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpc: Vec<String>,
}

/// Check one `--rpc` endpoint: HOST:PORT, an IPv4 address or a host name
/// and a port from 1 to 65535, as ggml's RPC client reads it (it splits at
/// the first ':' and speaks IPv4 only). ggml aborts the process on an
/// endpoint it cannot parse, so a bad one must be caught before it gets
/// there.
pub fn check_rpc_endpoint(s: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "'{s}' is not an RPC server address; give HOST:PORT, e.g. 192.168.1.20:50052 \
             (the address `dyno rpc-server` prints)"
        ))
    };
    let Some((host, port)) = s.split_once(':') else {
        return bad();
    };
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == ',' || c == '[') {
        return bad();
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => bad(),
    }
}

impl ModelParams {
    /// Whether tensors are placed by pattern (`--n-cpu-moe`, `-ot`), which
    /// splits layers between devices whatever `n_gpu_layers` says.
    pub fn places_tensors(&self) -> bool {
        self.n_cpu_moe > 0 || !self.tensor_overrides.is_empty()
    }
}

/// Parameters of one llama.cpp context.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContextParams {
    pub n_threads: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub flash_attn: FlashAttn,
    /// KV cache element type for K and V ("f16", "q8_0", ...).
    pub cache_type: String,
    /// Keep the KV cache and the attention on the CPU even when layers are
    /// offloaded (llama-bench's `-nkvo 1`).
    #[serde(default)]
    pub no_kv_offload: bool,
}

/// A KV cache element type llama.cpp accepts (the set llama-bench's `-ctk`
/// takes). This one table serves the plan's check of `--ctk`, the memory
/// estimate, the worker's choice of the widest cache for `--fit` and the
/// engine's mapping to ggml's types, which once each kept their own copy.
///
/// `ContextParams::cache_type` stays the string the user gave, because it is
/// a stored condition printed as given; this type is how code reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheType {
    F32,
    F16,
    Bf16,
    Q8_0,
    Q4_0,
    Q4_1,
    Iq4Nl,
    Q5_0,
    Q5_1,
}

impl CacheType {
    /// Every type, in the order the `--ctk` error lists them.
    pub const ALL: [CacheType; 9] = [
        CacheType::F32,
        CacheType::F16,
        CacheType::Bf16,
        CacheType::Q8_0,
        CacheType::Q4_0,
        CacheType::Q4_1,
        CacheType::Iq4Nl,
        CacheType::Q5_0,
        CacheType::Q5_1,
    ];

    /// The name as llama.cpp and llama-bench spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheType::F32 => "f32",
            CacheType::F16 => "f16",
            CacheType::Bf16 => "bf16",
            CacheType::Q8_0 => "q8_0",
            CacheType::Q4_0 => "q4_0",
            CacheType::Q4_1 => "q4_1",
            CacheType::Iq4Nl => "iq4_nl",
            CacheType::Q5_0 => "q5_0",
            CacheType::Q5_1 => "q5_1",
        }
    }

    /// Reads a name in any case ("Q8_0" as well as "q8_0"), as llama.cpp
    /// does; `None` for a type llama.cpp would refuse.
    pub fn parse(s: &str) -> Option<CacheType> {
        CacheType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(s))
    }

    /// Bytes per cached element, block types at their average (a q8_0 block
    /// holds 32 values in 34 bytes).
    pub fn bytes_per_element(self) -> f64 {
        match self {
            CacheType::F32 => 4.0,
            CacheType::F16 | CacheType::Bf16 => 2.0,
            CacheType::Q8_0 => 34.0 / 32.0,
            CacheType::Q4_0 | CacheType::Iq4Nl => 18.0 / 32.0,
            CacheType::Q4_1 => 20.0 / 32.0,
            CacheType::Q5_0 => 22.0 / 32.0,
            CacheType::Q5_1 => 24.0 / 32.0,
        }
    }

    /// "f32, f16, …": the list an error shows.
    pub fn names() -> String {
        CacheType::ALL.map(CacheType::as_str).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::{check_rpc_endpoint, CacheType};

    #[test]
    fn rpc_endpoints_are_host_and_port_as_ggml_reads_them() {
        for ok in ["127.0.0.1:50052", "gpu-box:1", "10.0.0.2:65535"] {
            assert_eq!(check_rpc_endpoint(ok), Ok(()), "{ok}");
        }
        for bad in [
            "127.0.0.1",
            ":50052",
            "host:0",
            "host:70000",
            "host:port",
            "[::1]:50052",
            "a b:1",
        ] {
            let e = check_rpc_endpoint(bad).unwrap_err();
            assert!(e.contains("HOST:PORT") && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn cache_types_read_in_any_case_and_refuse_the_unknown() {
        assert_eq!(CacheType::parse("Q8_0"), Some(CacheType::Q8_0));
        assert_eq!(CacheType::parse("iq4_nl"), Some(CacheType::Iq4Nl));
        assert_eq!(CacheType::parse("q3_k"), None);
        for t in CacheType::ALL {
            assert_eq!(CacheType::parse(t.as_str()), Some(t));
        }
        assert_eq!(
            CacheType::names(),
            "f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1"
        );
    }
}
