//! llama.cpp's backend modules in a `dynamic-backends` build: where Dyno
//! looks for them, which of them are this build's, which CPU variant suits
//! this processor, and why each GPU module did or did not load.
//!
//! llama.cpp's own loader (`ggml_backend_load_all_from_path`) loads what it
//! can and says nothing when a module fails, so a user with a GPU and a CPU
//! result cannot tell why. Dyno walks the folder itself: it refuses a module
//! its folder's `dyno-backends.txt` does not list for this llama.cpp build
//! (before the module is ever mapped into the process: a module of another
//! build can crash in its constructors), opens each candidate with `dlopen`
//! first to catch the loader's own error ("libcudart.so.13: cannot open
//! shared object file"), turns that into what to install, and only then hands
//! the module to `ggml_backend_load`. Everything it learns is reported in
//! [`BackendModules`], which `dyno hw` and the app's Overview show and each
//! run records.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr, CString};
use std::path::{Path, PathBuf};

use llama_cpp_sys_2 as sys;

use crate::vocab::{BackendModule, BackendModules};

/// The file in a module folder that lists its modules and the llama.cpp
/// build they come from: sha256sum's format ("HASH  FILE"), with a
/// `# build: ...` comment line.
pub const MANIFEST: &str = "dyno-backends.txt";

/// The build a module must come from: the llama-cpp-sys-2 release, which
/// pins one llama.cpp commit.
pub fn build_key() -> String {
    format!("llama-cpp-sys-2 {}", env!("DYNO_LLAMA_SYS_VERSION"))
}

/// The per-user folder, one per llama.cpp build so that modules of two
/// Dyno versions never mix: `~/.local/share/dyno/backends/llama-cpp-sys-2-X`.
pub fn user_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|b| {
        b.data_local_dir()
            .join("dyno")
            .join("backends")
            .join(build_key().replace(' ', "-"))
    })
}

/// The folders to look in, in order, with the name of each place:
/// `DYNO_BACKEND_DIR`, the executable's folder, the app's resources (the app
/// sets `DYNO_RESOURCE_DIR` for itself and its workers), the user folder.
/// The build machine's own output folder is never one: a binary that works
/// only where it was built hides a packaging bug.
pub fn candidates() -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    if let Some(d) = std::env::var_os("DYNO_BACKEND_DIR").filter(|d| !d.is_empty()) {
        out.push(("DYNO_BACKEND_DIR", PathBuf::from(d)));
    }
    if let Some(d) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        out.push(("executable folder", d));
    }
    if let Some(d) = std::env::var_os("DYNO_RESOURCE_DIR").filter(|d| !d.is_empty()) {
        out.push(("app resources", PathBuf::from(d)));
    }
    if let Some(d) = user_dir() {
        out.push(("user folder", d));
    }
    out
}

/// Is `name` a backend module's file name? `libggml-cuda.so`,
/// `libggml-cpu-haswell.so`, `ggml-vulkan.dll`; not the core libraries
/// (`libggml-base.so`, `libggml.so`) nor versioned links (`….so.0`).
pub fn is_module_name(name: &str) -> bool {
    let stem = name
        .strip_suffix(std::env::consts::DLL_SUFFIX)
        .unwrap_or("");
    let stem = stem.strip_prefix("lib").unwrap_or(stem);
    stem.strip_prefix("ggml-")
        .is_some_and(|b| !b.is_empty() && b != "base")
}

/// The backend a module's file name says it holds, and its CPU variant:
/// `libggml-cpu-haswell.so` is ("CPU", Some("haswell")).
pub fn backend_of(file: &str) -> (String, Option<String>) {
    let stem = file
        .strip_suffix(std::env::consts::DLL_SUFFIX)
        .unwrap_or(file);
    let stem = stem.strip_prefix("lib").unwrap_or(stem);
    let b = stem.strip_prefix("ggml-").unwrap_or(stem);
    let (name, variant) = match b.split_once('-') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (b, None),
    };
    let name = match name {
        "cpu" => "CPU".to_string(),
        "cuda" => "CUDA".to_string(),
        "vulkan" => "Vulkan".to_string(),
        "metal" => "Metal".to_string(),
        "rpc" => "RPC".to_string(),
        "blas" => "BLAS".to_string(),
        other => other.to_uppercase(),
    };
    (name, variant)
}

/// The module files in a folder, sorted by name.
fn module_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .filter(|e| is_module_name(&e.file_name().to_string_lossy()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// A folder's `dyno-backends.txt`: the build its modules come from and the
/// sha256 of each.
#[derive(Debug, Default, PartialEq)]
pub struct Manifest {
    pub build: Option<String>,
    pub sha256: HashMap<String, String>,
}

/// Read a manifest's text. Lines are "HASH  FILE" (sha256sum's format, so
/// `sha256sum -c dyno-backends.txt` checks a folder by hand) or comments;
/// the `# build: ...` comment names the llama.cpp build.
pub fn parse_manifest(text: &str) -> Manifest {
    let mut m = Manifest::default();
    for line in text.lines().map(str::trim) {
        if let Some(c) = line.strip_prefix('#') {
            if let Some(b) = c.trim().strip_prefix("build:") {
                m.build = Some(b.trim().to_string());
            }
            continue;
        }
        if let Some((hash, file)) = line.split_once(char::is_whitespace) {
            let file = file.trim().trim_start_matches('*');
            if hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()) {
                m.sha256.insert(file.to_string(), hash.to_ascii_lowercase());
            }
        }
    }
    m
}

/// Why a module may not be loaded into this process, or `None` when its
/// folder's manifest lists it, for this build, with its actual hash.
pub fn refusal(
    manifest: Option<&Manifest>,
    file: &str,
    sha256: Option<&str>,
    ours: &str,
) -> Option<String> {
    let Some(m) = manifest else {
        return Some(format!(
            "refused: its folder has no {MANIFEST}, so nothing shows it was built from this Dyno's \
             llama.cpp ({ours}); a module of another build can crash Dyno. Use the modules that came \
             with this Dyno, or build one with scripts/gpu/build-cuda.sh or build-vulkan.sh"
        ));
    };
    match m.build.as_deref() {
        Some(b) if b == ours => {}
        Some(b) => {
            return Some(format!(
                "refused: built for {b}, and this Dyno runs {ours}; a module of another llama.cpp \
                 build can crash Dyno. Get the modules of this Dyno's build"
            ))
        }
        None => {
            return Some(format!(
                "refused: {MANIFEST} names no build (a `# build: {ours}` line), so nothing shows \
                 this module was built from this Dyno's llama.cpp"
            ))
        }
    }
    let Some(listed) = m.sha256.get(file) else {
        return Some(format!(
            "refused: not listed in {MANIFEST}, so nothing shows it was built from this Dyno's \
             llama.cpp ({ours}); rebuild it with scripts/gpu/build-cuda.sh or build-vulkan.sh, which \
             list what they build"
        ));
    };
    match sha256 {
        None => Some("refused: the file could not be read".into()),
        Some(h) if h != listed => Some(format!(
            "refused: its sha256 is not the one {MANIFEST} lists: the file changed after it was built"
        )),
        Some(_) => None,
    }
}

/// The loader's error for a module, in words that say what to do. The
/// message of `dlopen` names the first library it could not find.
pub fn explain_dlerror(backend: &str, err: &str) -> String {
    let missing = err
        .split(": cannot open shared object file")
        .next()
        .filter(|_| err.contains("cannot open shared object file"))
        .map(|s| s.rsplit(": ").next().unwrap_or(s).trim().to_string());
    let Some(lib) = missing else {
        return format!("{backend} module did not load: {err}");
    };
    let cuda_major = lib
        .rsplit(".so.")
        .next()
        .filter(|v| v.parse::<u32>().is_ok());
    if lib.starts_with("libcuda.so") {
        format!("{lib} not found: no NVIDIA driver is installed")
    } else if lib.starts_with("libcudart") || lib.starts_with("libcublas") {
        let major = cuda_major.unwrap_or("");
        let what = if lib.starts_with("libcudart") {
            format!("the CUDA {major} runtime (or `pip install nvidia-cuda-runtime`)")
        } else {
            format!("cuBLAS of CUDA {major} (or `pip install nvidia-cublas`)")
        };
        format!("{lib} not found: install {what}, or set LD_LIBRARY_PATH to its folder")
    } else if lib.starts_with("libvulkan") {
        format!("{lib} not found: install the Vulkan loader (libvulkan1 on Debian and Ubuntu)")
    } else {
        format!("{lib} not found: install it, or set LD_LIBRARY_PATH to its folder")
    }
}

/// Why a loaded module gave no device, from what llama.cpp logged while it
/// initialised (`last` is [`super::last_errors`]).
pub fn explain_no_device(backend: &str, last: &str, driver: Option<&str>) -> String {
    if last.contains("insufficient") || last.contains("driver version") {
        let d = driver.map_or(String::new(), |d| format!(" {d}"));
        return format!(
            "driver{d} is older than this module's CUDA runtime: update the NVIDIA driver \
             (CUDA 13 needs 580 or newer)"
        );
    }
    // The RPC module has its devices only once a server is added.
    if backend == "RPC" {
        return "no RPC device until servers are given: `dyno bench --rpc HOST:PORT` (RPC servers \
                on the app's Benchmark page) adds the devices of a `dyno rpc-server`"
            .into();
    }
    let hint = if backend == "Vulkan" {
        ": install your GPU's Vulkan driver (Mesa's, or the vendor's)"
    } else {
        ""
    };
    if last.is_empty() {
        format!("no {backend} device{hint}")
    } else {
        format!("no {backend} device{hint} (llama.cpp: {last})")
    }
}

/// `dlerror()`'s message, or a stand-in.
fn dlerror() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string owned by the C
    // library, valid until the next dl* call on this thread; it is copied
    // out at once.
    let p = unsafe { libc::dlerror() };
    if p.is_null() {
        return "unknown loader error".into();
    }
    // SAFETY: non-null and NUL-terminated (above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// An open library, closed when dropped.
struct Handle(*mut std::ffi::c_void);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: a handle from a successful dlopen, closed once, here; a
        // module ggml loaded meanwhile stays mapped through ggml's own handle.
        unsafe { libc::dlclose(self.0) };
    }
}

/// Open a library; `Err` carries the loader's message. With `global`, its
/// symbols serve every library loaded after it (how a runtime found in a
/// wheel is provided) and it stays loaded for the process.
fn dlopen(path: &Path, global: bool) -> Result<Option<Handle>, String> {
    let c = CString::new(path.as_os_str().to_string_lossy().as_bytes())
        .map_err(|_| "the path holds a NUL byte".to_string())?;
    let flags = libc::RTLD_NOW
        | if global {
            libc::RTLD_GLOBAL
        } else {
            libc::RTLD_LOCAL
        };
    // SAFETY: a NUL-terminated path; a module that loads runs its
    // constructors, as it would under ggml_backend_load.
    let h = unsafe { libc::dlopen(c.as_ptr(), flags) };
    if h.is_null() {
        return Err(dlerror());
    }
    // Built only when kept: a `Handle` closes the library when dropped.
    Ok((!global).then(|| Handle(h)))
}

/// A CPU module's score for this processor (0: it cannot run here), read
/// as llama.cpp's own loader reads it. A module without a score (a build
/// with one CPU backend) scores 1.
fn cpu_score(path: &Path) -> Result<i32, String> {
    let h = dlopen(path, false)?.expect("a local open returns its handle");
    // SAFETY: a live handle and a NUL-terminated literal.
    let f = unsafe { libc::dlsym(h.0, c"ggml_backend_score".as_ptr()) };
    if f.is_null() {
        return Ok(1);
    }
    // SAFETY: ggml's modules export `int ggml_backend_score(void)`
    // (ggml-backend-dl.h) under this name; `h` keeps it mapped for the call.
    let f: extern "C" fn() -> c_int = unsafe { std::mem::transmute(f) };
    Ok(f())
}

/// Folders where a pip-installed CUDA runtime may be (`nvidia-*` wheels put
/// their libraries under `site-packages/nvidia/<part>/lib`), and toolkits
/// outside the loader's path. `DYNO_CUDA_LIB_DIR` comes first.
fn runtime_dirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::env::var_os("DYNO_CUDA_LIB_DIR")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    let mut lib_roots: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV") {
        lib_roots.push(PathBuf::from(v).join("lib"));
    }
    if let Some(h) = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()) {
        lib_roots.push(h.join(".local/lib"));
        if let Ok(it) = std::fs::read_dir(h.join(".pyenv/versions")) {
            lib_roots.extend(it.filter_map(|e| e.ok()).map(|e| e.path().join("lib")));
        }
    }
    lib_roots.extend(["/usr/local/lib", "/usr/lib", "/opt/conda/lib"].map(PathBuf::from));
    for root in lib_roots {
        let Ok(it) = std::fs::read_dir(&root) else {
            continue;
        };
        for py in it.filter_map(|e| e.ok()) {
            if !py.file_name().to_string_lossy().starts_with("python3") {
                continue;
            }
            for sp in ["site-packages", "dist-packages"] {
                let nv = py.path().join(sp).join("nvidia");
                let Ok(parts) = std::fs::read_dir(&nv) else {
                    continue;
                };
                out.extend(parts.filter_map(|e| e.ok()).map(|e| e.path().join("lib")));
            }
        }
    }
    out.extend(
        [
            "/usr/local/cuda/lib64",
            "/usr/local/cuda/targets/x86_64-linux/lib",
        ]
        .map(PathBuf::from),
    );
    out.into_iter().filter(|d| d.is_dir()).collect()
}

/// The library the loader could not find, from its message.
fn missing_lib(err: &str) -> Option<String> {
    err.contains("cannot open shared object file").then(|| {
        let head = err
            .split(": cannot open shared object file")
            .next()
            .unwrap_or("");
        head.rsplit(": ").next().unwrap_or(head).trim().to_string()
    })
}

/// Open a module, providing each library it lacks from the CUDA runtime
/// folders when one there has that name. Returns the open module (kept open
/// until ggml has its own handle, so it is loaded once) and what was
/// provided from where, or the loader's last message.
fn open_with_runtime(path: &Path) -> Result<(Option<Handle>, Vec<String>), String> {
    let dirs = runtime_dirs();
    let mut provided = Vec::new();
    // A module needs a handful of libraries; each round provides one.
    for _ in 0..8 {
        match dlopen(path, false) {
            Ok(h) => return Ok((h, provided)),
            Err(e) => {
                let Some(lib) = missing_lib(&e) else {
                    return Err(e);
                };
                let Some(found) = dirs.iter().map(|d| d.join(&lib)).find(|p| p.exists()) else {
                    return Err(e);
                };
                dlopen(&found, true)?;
                provided.push(found.display().to_string());
            }
        }
    }
    Err("too many missing libraries".into())
}

/// The files of already-loaded libraries whose names start with `prefix`
/// (Linux: from /proc/self/maps), to say which runtime a module uses.
fn loaded_libs(prefix: &str) -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        let name = path.rsplit('/').next().unwrap_or("");
        if name.starts_with(prefix) && !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    out
}

/// Load one module into llama.cpp's registry; its backend name and devices
/// on success, llama.cpp's complaint otherwise.
fn ggml_load(path: &Path) -> Result<(String, Vec<crate::vocab::Device>), String> {
    let c = CString::new(path.as_os_str().to_string_lossy().as_bytes())
        .map_err(|_| "the path holds a NUL byte".to_string())?;
    super::last_errors();
    // SAFETY: a NUL-terminated path; ggml keeps the library loaded and the
    // registration alive for the rest of the process.
    let reg = unsafe { sys::ggml_backend_load(c.as_ptr()) };
    if reg.is_null() {
        let last = super::last_errors();
        return Err(if last.is_empty() {
            "llama.cpp refused it (not supported on this system)".into()
        } else {
            last
        });
    }
    // SAFETY: a live registration (above), which owns its name for the
    // process's lifetime.
    let name =
        unsafe { super::llama::owned_string(sys::ggml_backend_reg_name(reg) as *const c_char) };
    // SAFETY: a live registration.
    let n = unsafe { sys::ggml_backend_reg_dev_count(reg) };
    let devices = (0..n)
        // SAFETY: `i` is below the count just read from the same live
        // registration.
        .map(|i| unsafe { sys::ggml_backend_reg_dev_get(reg, i) })
        .filter(|d| !d.is_null())
        // SAFETY: a non-null device of a registered backend, alive for the
        // process.
        .map(|d| unsafe { super::llama::device_info(d) })
        .collect();
    Ok((name, devices))
}

/// Find this build's modules and load them: every GPU module that can run
/// here, then the best CPU variant. Called once per process, before
/// llama.cpp is used.
pub fn load() -> BackendModules {
    let ours = build_key();
    let mut out = BackendModules::default();
    let chosen = candidates().into_iter().find(|(_, d)| {
        out.searched.push(d.display().to_string());
        !module_files(d).is_empty()
    });
    let Some((source, dir)) = chosen else {
        return out;
    };
    out.dir = Some(dir.display().to_string());
    out.source = Some(source.to_string());
    let manifest = std::fs::read_to_string(dir.join(MANIFEST))
        .ok()
        .map(|t| parse_manifest(&t));
    out.build = manifest.as_ref().and_then(|m| m.build.clone());
    let files = module_files(&dir);
    let mut cpu: Vec<(usize, i32)> = Vec::new();
    for path in &files {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (backend, variant) = backend_of(&file);
        let sha256 = crate::model::sha256_file(path).ok();
        let mut m = BackendModule {
            file: file.clone(),
            path: path.display().to_string(),
            backend: backend.clone(),
            variant,
            size_bytes: std::fs::metadata(path).map_or(0, |m| m.len()),
            sha256: sha256.clone(),
            loaded: false,
            reason: refusal(manifest.as_ref(), &file, sha256.as_deref(), &ours),
            runtime: None,
            devices: Vec::new(),
        };
        if m.reason.is_none() && backend == "CPU" {
            match cpu_score(path) {
                Ok(0) => {
                    m.reason = Some(
                        "not for this processor: it lacks the instructions this variant needs"
                            .into(),
                    )
                }
                Ok(s) => cpu.push((out.modules.len(), s)),
                Err(e) => m.reason = Some(explain_dlerror(&backend, &e)),
            }
        }
        out.modules.push(m);
    }
    // GPU modules first, in llama.cpp's own order, so device numbering and
    // the CPU device's place at the end match llama-bench's.
    let order = ["BLAS", "CUDA", "HIP", "Metal", "RPC", "SYCL", "Vulkan"];
    let rank = |b: &str| order.iter().position(|o| *o == b).unwrap_or(order.len());
    let mut gpu: Vec<usize> = (0..out.modules.len())
        .filter(|&i| out.modules[i].backend != "CPU" && out.modules[i].reason.is_none())
        .collect();
    gpu.sort_by_key(|&i| rank(&out.modules[i].backend));
    for i in gpu {
        load_one(&mut out.modules[i]);
    }
    if let Some(&(best, _)) = cpu.iter().max_by_key(|(_, s)| *s) {
        load_one(&mut out.modules[best]);
        let name = out.modules[best].file.clone();
        for &(i, _) in cpu.iter().filter(|(i, _)| *i != best) {
            out.modules[i].reason = Some(format!("not needed: {name} suits this processor better"));
        }
    }
    out
}

/// What to tell a user whose Dyno loaded no backend: where it looked, and
/// why each module it found was not loaded.
pub fn none_loaded(m: Option<&BackendModules>) -> String {
    let Some(m) = m else {
        return "llama.cpp has no backend".into();
    };
    let Some(dir) = &m.dir else {
        return format!(
            "no llama.cpp backend module (libggml-cpu-*.so and friends) was found; looked in {}. \
             Put the modules that came with Dyno next to the dyno executable, or set \
             DYNO_BACKEND_DIR to their folder",
            m.searched.join(", ")
        );
    };
    let why: Vec<String> = m
        .modules
        .iter()
        .map(|x| format!("{}: {}", x.file, x.reason.as_deref().unwrap_or("loaded")))
        .collect();
    format!(
        "no llama.cpp backend module in {dir} could be loaded ({})",
        why.join("; ")
    )
}

/// A module that opened but whose backend would not start. For Vulkan this
/// is the loader failing to create an instance: on the H100 machines the
/// kit ran on, NVIDIA's ICD was installed and its library present, yet it
/// gave no `vkCreateInstance`, and llama.cpp only said "returned NULL".
fn explain_init_failure(backend: &str, err: &str) -> String {
    if backend == "Vulkan" && err.contains("returned NULL") {
        return "no usable Vulkan driver: the Vulkan loader could not start one (none installed, or \
                the installed driver failed, as NVIDIA's does in some containers); install your GPU's \
                Vulkan driver, and run with VK_LOADER_DEBUG=error to see the loader's reason"
            .into();
    }
    format!("llama.cpp did not load it: {err}")
}

/// Load one verified module, recording how it went.
fn load_one(m: &mut BackendModule) {
    let path = PathBuf::from(&m.path);
    let _open = match open_with_runtime(&path) {
        Err(e) => {
            m.reason = Some(explain_dlerror(&m.backend, &e));
            return;
        }
        Ok((h, provided)) => {
            if !provided.is_empty() {
                m.runtime = Some(format!("provided by Dyno from {}", provided.join(", ")));
            }
            h
        }
    };
    match ggml_load(&path) {
        Err(e) => m.reason = Some(explain_init_failure(&m.backend, &e.to_string())),
        Ok((name, devices)) => {
            m.loaded = true;
            m.backend = name;
            if m.backend == "CUDA" && m.runtime.is_none() {
                let libs = loaded_libs("libcudart");
                if !libs.is_empty() {
                    m.runtime = Some(format!("system: {}", libs.join(", ")));
                }
            }
            if devices.is_empty() && m.backend != "CPU" {
                let last = super::last_errors();
                let driver = crate::telemetry::gpu::inventory()
                    .into_iter()
                    .find_map(|g| g.driver);
                m.reason = Some(explain_no_device(&m.backend, &last, driver.as_deref()));
            }
            m.devices = devices;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_are_backends_not_the_core_libraries() {
        assert!(is_module_name("libggml-cuda.so"));
        assert!(is_module_name("libggml-cpu-haswell.so"));
        assert!(!is_module_name("libggml-base.so"));
        assert!(!is_module_name("libggml.so"));
        assert!(!is_module_name("libggml-base.so.0"));
        assert!(!is_module_name("libllama.so"));
        assert_eq!(
            backend_of("libggml-cpu-haswell.so"),
            ("CPU".into(), Some("haswell".into()))
        );
        assert_eq!(backend_of("libggml-vulkan.so"), ("Vulkan".into(), None));
    }

    #[test]
    fn a_manifest_reads_its_build_and_hashes() {
        let h = "a".repeat(64);
        let m = parse_manifest(&format!(
            "# llama.cpp backend modules for Dyno\n# build: llama-cpp-sys-2 0.1.161\n{h}  libggml-cuda.so\nnot a line\n"
        ));
        assert_eq!(m.build.as_deref(), Some("llama-cpp-sys-2 0.1.161"));
        assert_eq!(m.sha256.get("libggml-cuda.so"), Some(&h));
        assert_eq!(m.sha256.len(), 1);
    }

    #[test]
    fn a_module_of_another_build_or_changed_or_unlisted_is_refused() {
        let h = "b".repeat(64);
        let ours = "llama-cpp-sys-2 0.1.161";
        let m = parse_manifest(&format!("# build: {ours}\n{h}  libggml-cuda.so\n"));
        assert_eq!(refusal(Some(&m), "libggml-cuda.so", Some(&h), ours), None);
        let changed = refusal(Some(&m), "libggml-cuda.so", Some(&"c".repeat(64)), ours).unwrap();
        assert!(changed.contains("changed after it was built"), "{changed}");
        let unlisted = refusal(Some(&m), "libggml-vulkan.so", Some(&h), ours).unwrap();
        assert!(unlisted.contains("not listed"), "{unlisted}");
        let old = parse_manifest(&format!(
            "# build: llama-cpp-sys-2 0.1.150\n{h}  libggml-cuda.so\n"
        ));
        let other = refusal(Some(&old), "libggml-cuda.so", Some(&h), ours).unwrap();
        assert!(
            other.contains("built for llama-cpp-sys-2 0.1.150") && other.contains(ours),
            "{other}"
        );
        let none = refusal(None, "libggml-cuda.so", Some(&h), ours).unwrap();
        assert!(none.contains(MANIFEST), "{none}");
    }

    #[test]
    fn loader_errors_say_what_to_install() {
        let e = "/k/libggml-cuda.so: libcudart.so.13: cannot open shared object file: No such file or directory";
        assert_eq!(missing_lib(e).as_deref(), Some("libcudart.so.13"));
        let r = explain_dlerror("CUDA", e);
        assert!(
            r.starts_with("libcudart.so.13 not found: install the CUDA 13 runtime"),
            "{r}"
        );
        assert!(r.contains("LD_LIBRARY_PATH"), "{r}");
        let d = explain_dlerror(
            "CUDA",
            "libcuda.so.1: cannot open shared object file: No such file or directory",
        );
        assert_eq!(d, "libcuda.so.1 not found: no NVIDIA driver is installed");
        let v = explain_dlerror(
            "Vulkan",
            "libvulkan.so.1: cannot open shared object file: No such file",
        );
        assert!(v.contains("libvulkan1"), "{v}");
        let other = explain_dlerror("CUDA", "undefined symbol: foo");
        assert_eq!(other, "CUDA module did not load: undefined symbol: foo");
    }

    #[test]
    fn a_vulkan_module_whose_driver_fails_says_what_to_do() {
        let v = explain_init_failure(
            "Vulkan",
            "failed to initialize backend from /k/libggml-vulkan.so: ggml_backend_init returned NULL",
        );
        assert!(v.starts_with("no usable Vulkan driver"), "{v}");
        assert!(v.contains("VK_LOADER_DEBUG=error"), "{v}");
        let other = explain_init_failure("CUDA", "ggml_backend_init returned NULL");
        assert_eq!(
            other,
            "llama.cpp did not load it: ggml_backend_init returned NULL"
        );
    }

    #[test]
    fn a_module_without_a_device_says_why() {
        let old = explain_no_device(
            "CUDA",
            "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version",
            Some("535.104.05"),
        );
        assert!(
            old.starts_with("driver 535.104.05 is older than this module's CUDA runtime"),
            "{old}"
        );
        assert_eq!(
            explain_no_device("Vulkan", "", None),
            "no Vulkan device: install your GPU's Vulkan driver (Mesa's, or the vendor's)"
        );
        assert!(
            explain_no_device("CUDA", "no CUDA-capable device is detected", None)
                .starts_with("no CUDA device (llama.cpp:")
        );
        assert!(explain_no_device("RPC", "", None).contains("--rpc HOST:PORT"));
    }
}
