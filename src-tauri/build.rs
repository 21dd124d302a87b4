//! Build script: Tauri's, plus where the app finds llama.cpp.

fn main() {
    // llama.cpp is built as shared libraries with loadable backends
    // (.cargo/config.toml); dyno's build script puts them next to the
    // executables, and the app finds them there, as the CLI does.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN");
    }
    tauri_build::build();
}
