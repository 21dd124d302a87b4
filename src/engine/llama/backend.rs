//! What this build of llama.cpp has: its backend devices, whether it can
//! offload at all, and its version. These are process-wide queries that need
//! no model, asked once when a worker says hello.

use std::ffi::{c_char, CStr};

use llama_cpp_sys_2 as sys;

use crate::vocab::Device;

/// Copy a C string llama.cpp owns into a `String`; "" for null.
///
/// # Safety
/// `p` is null or points at a NUL-terminated string that stays alive and
/// unchanged until this returns.
pub(crate) unsafe fn owned_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null here, and NUL-terminated and alive per this
    // function's contract.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// llama.cpp's backend devices, as `llama-bench --list-devices` shows them.
pub fn devices() -> Vec<Device> {
    // SAFETY: no arguments; ggml builds its device registry on first use.
    let n = unsafe { sys::ggml_backend_dev_count() };
    let mut out = Vec::new();
    for i in 0..n {
        // SAFETY: `i` is below the count just read. Devices are never
        // unregistered (Dyno unloads no backend), so the count still holds.
        let dev = unsafe { sys::ggml_backend_dev_get(i) };
        if dev.is_null() {
            continue;
        }
        // SAFETY: a non-null device of the registry, which lives as long as
        // the process.
        out.push(unsafe { device_info(dev) });
    }
    out
}

/// One device's name, kind and memory.
///
/// # Safety
/// `dev` is a non-null device of llama.cpp's registry (registered devices
/// live as long as the process).
pub(crate) unsafe fn device_info(dev: sys::ggml_backend_dev_t) -> Device {
    // SAFETY: a live device, per this function's contract.
    let kind = match unsafe { sys::ggml_backend_dev_type(dev) } {
        sys::GGML_BACKEND_DEVICE_TYPE_CPU => "cpu",
        sys::GGML_BACKEND_DEVICE_TYPE_GPU => "gpu",
        sys::GGML_BACKEND_DEVICE_TYPE_IGPU => "igpu",
        _ => "accel",
    };
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: a live device; ggml writes one size_t through each pointer,
    // both to locals that outlive the call.
    unsafe { sys::ggml_backend_dev_memory(dev, &mut free, &mut total) };
    // SAFETY: a live device's name and description are strings the device
    // owns for its (the process's) lifetime, or null.
    let (name, description) = unsafe {
        (
            owned_string(sys::ggml_backend_dev_name(dev)),
            owned_string(sys::ggml_backend_dev_description(dev)),
        )
    };
    Device {
        name,
        description,
        kind: kind.to_string(),
        memory_total_bytes: total as u64,
        memory_free_bytes: free as u64,
    }
}

pub fn supports_gpu_offload() -> bool {
    // SAFETY: no arguments; it only reads which backends are registered.
    unsafe { sys::llama_supports_gpu_offload() }
}

pub fn system_info() -> String {
    // SAFETY: llama.cpp returns its own static buffer, NUL-terminated, which
    // only the next call rewrites; it is copied out here before returning,
    // and only the worker's main thread asks (once, for its hello).
    unsafe { owned_string(sys::llama_print_system_info()) }
        .trim()
        .to_string()
}

pub fn ggml_version() -> String {
    // SAFETY: both return string literals compiled into ggml.
    let (version, commit) = unsafe {
        (
            owned_string(sys::ggml_version()),
            owned_string(sys::ggml_commit()),
        )
    };
    // A llama.cpp built outside a git checkout (the crate's package) says
    // "unknown": no commit at all, so none is written rather than that word.
    match commit.as_str() {
        "" | "unknown" => format!("ggml {version}"),
        _ => format!("ggml {version} ({commit})"),
    }
}
