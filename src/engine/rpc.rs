//! llama.cpp's RPC backend (`libggml-rpc.so`, one more loadable module):
//! how a model too large for one machine is split over several. A client
//! registers each server's devices ("RPC0", "RPC1" …), which then take
//! layers as GPUs do; a server lends this machine's devices to such a
//! client.
//!
//! Both ends are reached through the module's registry entry and its
//! exported functions (`ggml_backend_reg_get_proc_address`), as llama-bench
//! reaches them, because the module is loaded at run time and Dyno links
//! none of its symbols.
//!
//! ggml's RPC client aborts the process when a server cannot be reached or
//! its address cannot be parsed. This runs in a worker, so an abort would
//! still be a recorded failure; but "Failed to connect" in a crash report is
//! a worse answer than one that names the server and what to do, so each
//! server is dialled here first.

use std::ffi::{c_char, CString};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use llama_cpp_sys_2 as sys;

use super::llama::device_info;
use super::EngineError;
use crate::vocab::{check_rpc_endpoint, Device, RpcServer};

/// How long a server has to accept a connection before it counts as not
/// there. A server on a local network answers in milliseconds.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

type AddServerFn = unsafe extern "C" fn(endpoint: *const c_char) -> sys::ggml_backend_reg_t;
type StartServerFn = unsafe extern "C" fn(
    endpoint: *const c_char,
    cache_dir: *const c_char,
    n_threads: usize,
    n_devices: usize,
    devices: *mut sys::ggml_backend_dev_t,
);

/// The RPC module's registry entry, or why there is none.
fn rpc_reg() -> Result<sys::ggml_backend_reg_t, EngineError> {
    // SAFETY: a NUL-terminated name; ggml reads its registry, which lives
    // for the process.
    let reg = unsafe { sys::ggml_backend_reg_by_name(c"RPC".as_ptr()) };
    if reg.is_null() {
        return Err(EngineError::Rpc(
            "this Dyno has no RPC backend: libggml-rpc.so is not among its loaded modules \
             (`dyno hw` lists them and says why one did not load); reinstall Dyno or put \
             the module of this build beside it"
                .into(),
        ));
    }
    Ok(reg)
}

/// A function the RPC module exports by name.
fn proc_address(
    reg: sys::ggml_backend_reg_t,
    name: &std::ffi::CStr,
) -> Option<*mut std::ffi::c_void> {
    // SAFETY: a registry entry from `rpc_reg` (alive for the process) and a
    // NUL-terminated name.
    let p = unsafe { sys::ggml_backend_reg_get_proc_address(reg, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Open and close a TCP connection to `endpoint`, so that a server that is
/// not there is reported in words instead of by ggml's abort.
fn dial(endpoint: &str) -> Result<(), String> {
    let addrs: Vec<_> = endpoint
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {endpoint}: {e}"))?
        .filter(|a| a.is_ipv4())
        .collect();
    let mut last = format!("{endpoint} has no IPv4 address (ggml's RPC speaks IPv4 only)");
    for a in addrs {
        match TcpStream::connect_timeout(&a, DIAL_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(last)
}

/// Register the devices of each RPC server, in the order given, as
/// llama-bench's `--rpc` does, so that the next model load spreads its
/// layers over them. Each server is dialled first; one that does not answer
/// or offers no device fails the whole call with its address and what to do.
pub fn add_servers(endpoints: &[String]) -> Result<Vec<RpcServer>, EngineError> {
    let reg = rpc_reg()?;
    let add = proc_address(reg, c"ggml_backend_rpc_add_server").ok_or_else(|| {
        EngineError::Rpc("the RPC module exports no ggml_backend_rpc_add_server: it is not of this llama.cpp build".into())
    })?;
    // SAFETY: the symbol the module exports under this name has this
    // signature (ggml-rpc.h: `ggml_backend_reg_t (const char *)`).
    let add: AddServerFn =
        unsafe { std::mem::transmute::<*mut std::ffi::c_void, AddServerFn>(add) };
    let mut out = Vec::new();
    for endpoint in endpoints {
        if out.iter().any(|s: &RpcServer| &s.endpoint == endpoint) {
            continue;
        }
        check_rpc_endpoint(endpoint).map_err(EngineError::Rpc)?;
        dial(endpoint).map_err(|e| {
            EngineError::Rpc(format!(
                "no RPC server answers at {endpoint} ({e}); start one on that machine with \
                 `dyno rpc-server --host 0.0.0.0 --port {}` (or llama.cpp's rpc-server) and \
                 check that its firewall lets the port through",
                endpoint.rsplit(':').next().unwrap_or("50052")
            ))
        })?;
        let c = CString::new(endpoint.as_str())
            .map_err(|_| EngineError::Rpc(format!("'{endpoint}' holds a NUL byte")))?;
        // SAFETY: a NUL-terminated endpoint that ggml copies; the returned
        // registry entry lives for the process.
        let server = unsafe { add(c.as_ptr()) };
        if server.is_null() {
            return Err(EngineError::Rpc(format!(
                "the RPC server at {endpoint} offers no device"
            )));
        }
        // SAFETY: a live registry entry; registering makes its devices
        // visible to llama.cpp's model loader (each endpoint once: the
        // loop skips one given twice).
        unsafe { sys::ggml_backend_register(server) };
        // SAFETY: a live registry entry.
        let n = unsafe { sys::ggml_backend_reg_dev_count(server) };
        let devices: Vec<Device> = (0..n)
            .filter_map(|i| {
                // SAFETY: a live registry entry and an index below its count.
                let dev = unsafe { sys::ggml_backend_reg_dev_get(server, i) };
                // SAFETY: a non-null device of a registered entry.
                (!dev.is_null()).then(|| unsafe { device_info(dev) })
            })
            .collect();
        out.push(RpcServer {
            endpoint: endpoint.clone(),
            devices,
        });
    }
    Ok(out)
}

/// The devices a server lends when none are named: every GPU this process
/// sees (not the RPC devices of other servers), else the CPU, as llama.cpp's
/// rpc-server chooses.
fn default_devices() -> Vec<sys::ggml_backend_dev_t> {
    // SAFETY: no arguments; the device registry lives for the process.
    let n = unsafe { sys::ggml_backend_dev_count() };
    let mut gpus = Vec::new();
    for i in 0..n {
        // SAFETY: `i` is below the count just read.
        let dev = unsafe { sys::ggml_backend_dev_get(i) };
        if dev.is_null() {
            continue;
        }
        // SAFETY: a live device of the registry.
        let info = unsafe { device_info(dev) };
        if (info.kind == "gpu" || info.kind == "igpu") && !info.name.starts_with("RPC") {
            gpus.push(dev);
        }
    }
    if gpus.is_empty() {
        // SAFETY: no arguments; null when no CPU backend is registered.
        let cpu = unsafe { sys::ggml_backend_dev_by_type(sys::GGML_BACKEND_DEVICE_TYPE_CPU) };
        if !cpu.is_null() {
            gpus.push(cpu);
        }
    }
    gpus
}

/// Serve this machine's devices to RPC clients at `endpoint` (HOST:PORT),
/// with `n_threads` for a CPU device. `devices` names them (as `dyno hw`
/// lists them); `None` lends every GPU, else the CPU. Returns only when
/// the server cannot start (the port is taken, the address is not this
/// machine's) or stops; `on_ready` is called with the devices just before
/// it starts listening.
pub fn serve(
    endpoint: &str,
    n_threads: usize,
    devices: Option<&[String]>,
    on_ready: impl FnOnce(&[Device]),
) -> Result<(), EngineError> {
    check_rpc_endpoint(endpoint).map_err(EngineError::Rpc)?;
    let reg = rpc_reg()?;
    let start = proc_address(reg, c"ggml_backend_rpc_start_server").ok_or_else(|| {
        EngineError::Rpc("the RPC module exports no ggml_backend_rpc_start_server: it is not of this llama.cpp build".into())
    })?;
    // SAFETY: the symbol has this signature in ggml-rpc.h of this build.
    let start: StartServerFn =
        unsafe { std::mem::transmute::<*mut std::ffi::c_void, StartServerFn>(start) };
    let mut devs = match devices {
        None => default_devices(),
        Some(names) => {
            let mut out = Vec::new();
            for name in names {
                let c = CString::new(name.as_str())
                    .map_err(|_| EngineError::Device(format!("'{name}' holds a NUL byte")))?;
                // SAFETY: a NUL-terminated name; the registry lives for the process.
                let dev = unsafe { sys::ggml_backend_dev_by_name(c.as_ptr()) };
                if dev.is_null() {
                    let known: Vec<String> = super::llama::devices()
                        .into_iter()
                        .map(|d| d.name)
                        .collect();
                    return Err(EngineError::Device(format!(
                        "no device '{name}' to serve; this machine has {}",
                        known.join(", ")
                    )));
                }
                out.push(dev);
            }
            out
        }
    };
    if devs.is_empty() {
        return Err(EngineError::Rpc(
            "no device to serve: no backend has one".into(),
        ));
    }
    // SAFETY: live devices of the registry.
    let info: Vec<Device> = devs.iter().map(|&d| unsafe { device_info(d) }).collect();
    // The port is tried here first: ggml says only "Failed to create server
    // socket" when it is taken.
    let port_free = std::net::TcpListener::bind(endpoint);
    if let Err(e) = port_free {
        return Err(EngineError::Rpc(format!(
            "cannot listen at {endpoint}: {e}; pick another --port, or a --host address of this machine"
        )));
    }
    drop(port_free);
    on_ready(&info);
    let c = CString::new(endpoint)
        .map_err(|_| EngineError::Rpc(format!("'{endpoint}' holds a NUL byte")))?;
    // SAFETY: a NUL-terminated endpoint, no cache folder (null is allowed),
    // and `devs.len()` live devices in a buffer that outlives the call,
    // which serves clients until it fails.
    unsafe {
        start(
            c.as_ptr(),
            std::ptr::null(),
            n_threads,
            devs.len(),
            devs.as_mut_ptr(),
        )
    };
    Err(EngineError::Rpc(format!(
        "the RPC server at {endpoint} stopped (its reason is on stderr above)"
    )))
}
