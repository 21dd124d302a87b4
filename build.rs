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
    // With dynamically loaded backends, libllama and libggml are shared
    // libraries that the build puts next to the executable; let the
    // executable find them there, as llama.cpp's own release archives do.
    if std::env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_some()
        && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN");
    }
}
