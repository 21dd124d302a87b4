//! The machine's inventory, with its memory bandwidth measured once and
//! cached per machine in the database: `dyno hw` prints it, the app's
//! Overview shows it, and a benchmark records it beside its results so a
//! roofline figure has a bandwidth to divide by.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::error::{DynoError, Result};
use crate::machine::Machine;
use crate::store::Store;
use crate::telemetry::gpu::{self, GpuInfo};
use crate::telemetry::{bandwidth, Sampler, Sources};
use crate::vocab::{BackendModules, Device};
use crate::worker::protocol::Event;

/// How long the bandwidth test reads memory.
const BANDWIDTH_TEST: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LlamaCpp {
    pub backend: Option<String>,
    pub build: Option<String>,
    pub gpu_offload: Option<bool>,
    pub devices: Vec<Device>,
    /// The backend modules found and what became of each (a
    /// `dynamic-backends` build); `None` where llama.cpp is linked in.
    pub modules: Option<BackendModules>,
}

/// What `dyno hw --json` prints and the app's Overview shows.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "Hardware"))]
pub struct Hw {
    pub cpu: String,
    pub cores: usize,
    pub cores_physical: Option<usize>,
    pub memory_bytes: u64,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub memory_bandwidth_bytes_per_s: Option<u64>,
    pub bandwidth_threads: Option<i64>,
    pub bandwidth_measured_at: Option<String>,
    pub gpus: Vec<GpuInfo>,
    pub llama_cpp: LlamaCpp,
    pub telemetry: Sources,
}

/// Record the machine's GPUs and its memory bandwidth, measuring the
/// bandwidth only when the store lacks it (or `remeasure`). Returns
/// (bytes/s, threads, when measured).
pub async fn ensure_inventory(
    store: &Store,
    machine_id: i64,
    machine: &Machine,
    remeasure: bool,
) -> Result<(u64, i64, String)> {
    store
        .set_machine_gpus(machine_id, &gpu::inventory())
        .await?;
    let row = store.machine(machine_id).await?;
    if let (false, Some(b), Some(t), Some(at)) = (
        remeasure,
        row.memory_bandwidth_bytes_per_s,
        row.bandwidth_threads,
        row.bandwidth_measured_at.clone(),
    ) {
        return Ok((b as u64, t, at));
    }
    let threads = machine.cores_logical;
    let bps = tokio::task::spawn_blocking(move || bandwidth::measure(threads, BANDWIDTH_TEST))
        .await
        .map_err(|e| DynoError::Worker(format!("the bandwidth test failed: {e}")))?;
    store
        .set_machine_bandwidth(machine_id, bps, threads)
        .await?;
    let row = store.machine(machine_id).await?;
    Ok((
        bps,
        threads as i64,
        row.bandwidth_measured_at.unwrap_or_default(),
    ))
}

/// The machine: CPU, memory and its bandwidth (measured once and cached),
/// GPUs, llama.cpp's build and devices (from a probe of a worker), and the
/// telemetry sources.
/// llama.cpp as this Dyno's worker finds it: its build, backend, devices
/// and modules, from a worker started to say hello (the parent never loads
/// llama.cpp). Every field is empty when the worker does not start.
pub async fn llama_cpp() -> Result<LlamaCpp> {
    let exe =
        std::env::current_exe().map_err(|e| DynoError::io("cannot find the dyno executable", e))?;
    let ready = crate::worker::client::probe(&exe, Duration::from_secs(60)).await;
    Ok(match ready {
        Some(Event::Ready {
            llama_cpp_build,
            backend,
            gpu_offload,
            devices,
            modules,
            ..
        }) => LlamaCpp {
            backend: Some(backend),
            build: Some(llama_cpp_build),
            gpu_offload: Some(gpu_offload),
            devices,
            modules,
        },
        _ => LlamaCpp {
            backend: None,
            build: None,
            gpu_offload: None,
            devices: Vec::new(),
            modules: None,
        },
    })
}

/// What `dyno --version` prints: Dyno's version, the llama.cpp build it
/// runs, and each backend module, loaded or why not, so a bug report or a
/// shared figure names the code that measured it.
pub async fn version_text() -> Result<String> {
    let llama = llama_cpp().await?;
    let mut out = format!(
        "dyno {}
",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str(&format!(
        "llama.cpp: {}
",
        llama
            .build
            .as_deref()
            .unwrap_or("unknown (the worker did not start)")
    ));
    if let Some(m) = &llama.modules {
        out.push_str(&format!(
            "backend modules: {}
",
            m.dir.as_deref().unwrap_or("none found")
        ));
        for x in &m.modules {
            let state = match (x.loaded, &x.reason) {
                (true, None) => "loaded".to_string(),
                (true, Some(r)) => format!("loaded: {r}"),
                (false, r) => format!("not loaded: {}", r.as_deref().unwrap_or("?")),
            };
            out.push_str(&format!(
                "  {} ({}): {state}
",
                x.file, x.backend
            ));
        }
    }
    Ok(out)
}

/// This machine as `dyno hw` shows it: the inventory, its memory bandwidth
/// (measured once and stored in `db`, or again with `remeasure`), llama.cpp's
/// modules and the telemetry sources.
pub async fn inventory(db: &Path, remeasure: bool) -> Result<Hw> {
    let store = Store::open(db).await?;
    let hw = inventory_in(&store, remeasure).await;
    store.close().await;
    hw
}

/// [`inventory`] in a store already open: the app's, which stays open for
/// its whole life.
pub async fn inventory_in(store: &Store, remeasure: bool) -> Result<Hw> {
    let machine = Machine::detect();
    let machine_id = store.upsert_machine(&machine).await?;
    let (bps, threads, at) = ensure_inventory(store, machine_id, &machine, remeasure).await?;
    let llama = llama_cpp().await?;
    let sampler = Sampler::start(Duration::from_secs(1));
    let sources = sampler.sources().clone();
    drop(sampler);
    Ok(Hw {
        cpu: machine.cpu.clone(),
        cores: machine.cores_logical,
        cores_physical: machine.cores_physical,
        memory_bytes: machine.memory_bytes,
        os: machine.os.clone(),
        kernel: machine.kernel.clone(),
        memory_bandwidth_bytes_per_s: Some(bps),
        bandwidth_threads: Some(threads),
        bandwidth_measured_at: Some(at),
        gpus: gpu::inventory(),
        llama_cpp: llama,
        telemetry: sources,
    })
}
