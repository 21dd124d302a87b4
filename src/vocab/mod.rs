//! The shared vocabulary: the nouns every layer of Dyno speaks.
//!
//! Tests, run configurations, load and context parameters, samples, devices,
//! memory profiles and quality figures are passed from the CLI and the app
//! through the planner and the worker to the store and the reports. They
//! live at the bottom of the crate, with no dependency on any layer above,
//! so that no layer has to reach upward to name what it handles. See the
//! layer order in the crate's top-level documentation.

mod device;
pub mod failure;
mod memory;
mod named;
mod params;
pub mod prediction;
pub mod quality;
pub mod request;
pub mod serve;
mod spec;
pub mod status;

pub use device::{
    BackendModule, BackendModules, Buffer, Device, FitChoice, ModuleRef, Offload, RpcServer,
};
pub use memory::MemoryProfile;
pub use named::Named;
pub use params::{
    check_rpc_endpoint, expert_tensors_of_layer, CacheType, ContextParams, FlashAttn, ModelParams,
    SplitMode, TensorOverride,
};
pub use quality::QualityFigures;
pub use spec::{Job, RunConfig, Sample, TestKind, TestSpec, MAX_N_CTX};
