//! Build script: embed the llama-cpp-sys-2 version (which pins the llama.cpp
//! source) so every result can name the llama.cpp build it came from, and
//! rebuild when a migration changes so a binary never misses one.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut version = "unknown".to_string();
    let mut in_pkg = false;
    for line in lock.lines() {
        if line.starts_with("name = ") {
            in_pkg = line == "name = \"llama-cpp-sys-2\"";
        } else if in_pkg && line.starts_with("version = ") {
            version = line
                .trim_start_matches("version = ")
                .trim_matches('"')
                .to_string();
            break;
        }
    }
    println!("cargo:rustc-env=DYNO_LLAMA_SYS_VERSION={version}");
    println!("cargo:rerun-if-env-changed=DEP_LLAMA_BACKENDS_DIR");
    // llama.cpp is built as shared libraries with loadable backends
    // (.cargo/config.toml): the executables find libllama and libggml next
    // to themselves, as llama.cpp's own release archives do.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN");
        stage_modules(&version);
    }
}

/// Put llama.cpp's shared libraries and backend modules next to the
/// executables of this profile (`target/release/`), with the
/// `dyno-backends.txt` that lists each module's sha256 for this llama.cpp
/// build. Dyno never looks in the build's own output folder at run time, so
/// `cargo build` must leave a folder that runs as it will ship: the CLI, the
/// app and the tests all load their modules from beside the executable.
fn stage_modules(version: &str) {
    use sha2::{Digest, Sha256};
    use std::path::{Path, PathBuf};

    println!("cargo:rerun-if-env-changed=DEP_LLAMA_GGML_CMAKE_DIR");
    // llama-cpp-sys-2's output folder: it names its backends folder with
    // `--features dynamic-backends` (every CPU variant), and its CMake
    // package folder (`out/lib/cmake`) always; without the feature, CMake
    // installs the modules into `out/bin`.
    let backends = match (
        std::env::var_os("DEP_LLAMA_BACKENDS_DIR"),
        std::env::var_os("DEP_LLAMA_GGML_CMAKE_DIR"),
    ) {
        (Some(b), _) => PathBuf::from(b),
        (None, Some(c)) => match PathBuf::from(c).ancestors().nth(2) {
            Some(out) => out.join("bin"),
            None => return,
        },
        (None, None) => return,
    };
    // llama.cpp linked in statically: nothing to stage.
    if !backends.is_dir() {
        return;
    }
    println!("cargo:rerun-if-changed={}", backends.display());
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/dyno-<hash>/out.
    let Some(profile_dir) = out.ancestors().nth(3) else {
        return;
    };
    // Copy through a temporary name and rename, so a process that has the
    // old file loaded keeps its copy intact.
    let copy = |from: &Path, name: &str| {
        let tmp = profile_dir.join(format!(".{name}.staging"));
        std::fs::copy(from, &tmp).expect("copy a llama.cpp library");
        std::fs::rename(&tmp, profile_dir.join(name)).expect("stage a llama.cpp library");
    };
    // The core libraries by their sonames (libllama.so.0), which is what the
    // executables ask the loader for.
    if let Some(lib) = backends.parent().map(|o| o.join("lib")) {
        println!("cargo:rerun-if-changed={}", lib.display());
        for e in std::fs::read_dir(&lib).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let soname = name
                .split_once(".so.")
                .is_some_and(|(_, v)| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()));
            if soname {
                copy(&e.path(), &name);
            }
        }
    }
    let mut lines = vec![
        "# llama.cpp backend modules for Dyno: sha256, two spaces, file name".to_string(),
        format!("# build: llama-cpp-sys-2 {version}"),
    ];
    let is_module = |p: &Path| {
        let n = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        n.starts_with("libggml-") && n.ends_with(".so") && n != "libggml-base.so"
    };
    let mut modules: Vec<PathBuf> = std::fs::read_dir(&backends)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_module(p))
        .collect();
    modules.sort();
    // Modules of an earlier build in this folder (another feature set) go:
    // they are not in this build's list, so Dyno would refuse them anyway.
    let names: Vec<_> = modules.iter().filter_map(|m| m.file_name()).collect();
    for e in std::fs::read_dir(profile_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        if is_module(&e.path()) && !names.contains(&e.file_name().as_os_str()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    for m in modules {
        let name = m
            .file_name()
            .expect("a file")
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(&m).expect("read a backend module");
        let hash: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        copy(&m, &name);
        lines.push(format!("{hash}  {name}"));
    }
    let manifest = profile_dir.join("dyno-backends.txt");
    std::fs::write(&manifest, lines.join("\n") + "\n").expect("write dyno-backends.txt");
}
