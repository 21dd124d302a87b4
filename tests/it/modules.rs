//! llama.cpp's backend modules end to end: the real binary loads the CPU
//! module its build put beside it, lists every module with what became of
//! it, refuses modules that its folder's `dyno-backends.txt` does not vouch
//! for (another build, a changed file), says what to install when a GPU
//! module's runtime is missing, and records the modules that measured each
//! run with their sha256.
//!
//! The GPU module here is a real shared library made with the system's C
//! compiler, linked against a `libcudart.so.13` that is then taken away: the
//! loader's failure is real, only the module's contents are not CUDA's.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use serde_json::Value;

fn exe_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_dyno"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn hw(s: &Scratch, env: &[(&str, &Path)]) -> Value {
    let mut c = s.dyno();
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.args(["hw", "--json"]).output().expect("dyno hw runs");
    assert_code(&o, 0);
    json(&o)
}

fn modules(hw: &Value) -> Vec<Value> {
    hw["llama_cpp"]["modules"]["modules"]
        .as_array()
        .unwrap_or_else(|| panic!("hw lists modules: {hw}"))
        .clone()
}

fn module<'a>(mods: &'a [Value], file: &str) -> &'a Value {
    mods.iter()
        .find(|m| m["file"] == file)
        .unwrap_or_else(|| panic!("{file} is listed: {mods:?}"))
}

/// The build's module folder copied to `dir`: its modules and list.
fn copy_modules(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(exe_dir()).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if (n.starts_with("libggml-") && n.ends_with(".so") && n != "libggml-base.so")
            || n == "dyno-backends.txt"
        {
            std::fs::copy(e.path(), dir.join(&n)).unwrap();
        }
    }
}

fn sha256(p: &Path) -> String {
    dyno::model::sha256_file(p).unwrap()
}

fn cc(args: &[&str]) {
    let o = Command::new("cc").args(args).output().expect("cc runs");
    assert!(o.status.success(), "cc {args:?}: {}", stderr(&o));
}

#[test]
fn the_cpu_module_loads_from_beside_the_executable_and_is_listed_with_its_hash() {
    let s = Scratch::new();
    let h = hw(&s, &[]);
    let m = &h["llama_cpp"]["modules"];
    assert_eq!(m["source"], "executable folder", "{m}");
    assert_eq!(Path::new(m["dir"].as_str().unwrap()), exe_dir());
    let build = m["build"].as_str().unwrap();
    assert!(build.starts_with("llama-cpp-sys-2 0."), "{build}");
    let mods = modules(&h);
    let cpu: Vec<&Value> = mods
        .iter()
        .filter(|x| x["backend"] == "CPU" && x["loaded"] == true)
        .collect();
    assert_eq!(cpu.len(), 1, "exactly one CPU module loads: {mods:?}");
    let file = exe_dir().join(cpu[0]["file"].as_str().unwrap());
    assert_eq!(cpu[0]["sha256"], sha256(&file));
    assert_eq!(cpu[0]["devices"][0]["kind"], "cpu", "{}", cpu[0]);
    // The devices llama.cpp reports are the module's.
    assert!(h["llama_cpp"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["kind"] == "cpu"));
}

#[test]
fn a_run_records_the_modules_that_measured_it_with_their_sha256() {
    let s = Scratch::new();
    let o = s.bench("-p 16 -n 4 -r 1 --json");
    assert_code(&o, 0);
    let run = &json(&o)["runs"][0];
    let mods = run["backend_modules"].as_array().expect("backend_modules");
    let cpu = mods
        .iter()
        .find(|m| m["backend"] == "CPU")
        .unwrap_or_else(|| panic!("{mods:?}"));
    let file = exe_dir().join(cpu["file"].as_str().unwrap());
    assert_eq!(cpu["sha256"], sha256(&file));
    // `dyno show` and the Markdown export say so too.
    let id = run["run_id"].as_i64().unwrap().to_string();
    let shown = stdout(&s.run(&["show", &id]));
    let short = &cpu["sha256"].as_str().unwrap()[..12];
    assert!(
        shown.contains("backend modules: CPU ") && shown.contains(short),
        "{shown}"
    );
    let md = stdout(&s.run(&["export", &id, "--format", "md"]));
    assert!(md.contains(short), "{md}");
}

#[test]
fn modules_of_another_build_or_changed_since_are_refused_and_a_bench_says_why() {
    let s = Scratch::new();
    let dir = s.path("other-build");
    copy_modules(&dir);
    let list = dir.join("dyno-backends.txt");
    let text = std::fs::read_to_string(&list).unwrap();
    let other: String = text
        .lines()
        .map(|l| {
            if l.starts_with("# build:") {
                "# build: llama-cpp-sys-2 0.0.1".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&list, other).unwrap();
    let h = hw(&s, &[("DYNO_BACKEND_DIR", &dir)]);
    assert_eq!(h["llama_cpp"]["modules"]["source"], "DYNO_BACKEND_DIR");
    for m in modules(&h) {
        assert_eq!(m["loaded"], false, "{m}");
        let r = m["reason"].as_str().unwrap();
        assert!(r.contains("built for llama-cpp-sys-2 0.0.1"), "{r}");
    }
    let o = s
        .dyno()
        .env("DYNO_BACKEND_DIR", &dir)
        .args(argv("bench SMOL -p 16 -n 0 -r 1"))
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        all.contains("refused: built for llama-cpp-sys-2 0.0.1"),
        "{all}"
    );

    // The right build, but a module changed after it was listed.
    std::fs::write(&list, &text).unwrap();
    let cpu = modules(&hw(&s, &[("DYNO_BACKEND_DIR", &dir)]))
        .into_iter()
        .find(|m| m["loaded"] == true)
        .expect("a module loads from an intact copy");
    let path = dir.join(cpu["file"].as_str().unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.push(0);
    std::fs::write(&path, bytes).unwrap();
    let after = modules(&hw(&s, &[("DYNO_BACKEND_DIR", &dir)]));
    let changed = module(&after, cpu["file"].as_str().unwrap());
    assert_eq!(changed["loaded"], false);
    assert!(
        changed["reason"]
            .as_str()
            .unwrap()
            .contains("changed after it was built"),
        "{changed}"
    );
}

#[test]
fn a_gpu_module_whose_runtime_is_missing_says_what_to_install_and_the_cpu_still_runs() {
    let s = Scratch::new();
    let dir = s.path("modules");
    copy_modules(&dir);
    // A runtime library to link against, then gone from every path.
    let stub = s.path("stub");
    std::fs::create_dir_all(&stub).unwrap();
    std::fs::write(
        s.path("rt.c"),
        "int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }\n",
    )
    .unwrap();
    std::fs::write(s.path("mod.c"), "int cudaRuntimeGetVersion(int *); int dyno_probe(void) { int v; return cudaRuntimeGetVersion(&v); }\n").unwrap();
    let lib = stub.join("libcudart.so.13");
    cc(&[
        "-shared",
        "-fPIC",
        "-Wl,-soname,libcudart.so.13",
        "-o",
        lib.to_str().unwrap(),
        s.path("rt.c").to_str().unwrap(),
    ]);
    let module_path = dir.join("libggml-cuda.so");
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        module_path.to_str().unwrap(),
        s.path("mod.c").to_str().unwrap(),
        "-Wl,--no-as-needed",
        lib.to_str().unwrap(),
    ]);
    // Listed for this build: the refusal must not be what stops it.
    let mut text = std::fs::read_to_string(dir.join("dyno-backends.txt")).unwrap();
    text.push_str(&format!("{}  libggml-cuda.so\n", sha256(&module_path)));
    std::fs::write(dir.join("dyno-backends.txt"), text).unwrap();
    // A HOME of its own, so no pip-installed runtime of this machine is found.
    let home = s.path("home");
    let h = hw(&s, &[("DYNO_BACKEND_DIR", &dir), ("HOME", &home)]);
    let mods = modules(&h);
    let cuda = module(&mods, "libggml-cuda.so");
    assert_eq!(cuda["loaded"], false);
    let reason = cuda["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("libcudart.so.13 not found: install the CUDA 13 runtime"),
        "{reason}"
    );
    assert!(mods
        .iter()
        .any(|m| m["backend"] == "CPU" && m["loaded"] == true));

    // With the runtime's folder named, Dyno provides it and says from where;
    // llama.cpp then refuses this module, which is no backend, in its words.
    let h = hw(
        &s,
        &[
            ("DYNO_BACKEND_DIR", &dir),
            ("HOME", &home),
            ("DYNO_CUDA_LIB_DIR", &stub),
        ],
    );
    let cuda = module(&modules(&h), "libggml-cuda.so").clone();
    assert_eq!(cuda["loaded"], false);
    assert!(
        cuda["runtime"]
            .as_str()
            .unwrap_or_default()
            .contains(lib.to_str().unwrap()),
        "{cuda}"
    );
    assert!(
        cuda["reason"]
            .as_str()
            .unwrap()
            .starts_with("llama.cpp did not load it"),
        "{cuda}"
    );
    // The CPU still measures.
    let o = s
        .dyno()
        .env("DYNO_BACKEND_DIR", &dir)
        .env("HOME", &home)
        .args(argv("bench SMOL -p 16 -n 0 -r 1 --json"))
        .output()
        .unwrap();
    assert_code(&o, 0);
}

/// Issue U: `dyno --version` names the llama.cpp build and every module it
/// found, loaded or not, so a shared figure or a bug report says which code
/// measured.
#[test]
fn version_names_the_llama_cpp_build_and_the_modules() {
    let s = Scratch::new();
    let o = s.run(&["--version"]);
    assert_code(&o, 0);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("dyno {}", env!("CARGO_PKG_VERSION")),
        "{out}"
    );
    assert!(lines[1].starts_with("llama.cpp: llama-cpp-sys-2 "), "{out}");
    assert!(lines[2].starts_with("backend modules: "), "{out}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("libggml-cpu") && l.ends_with("(CPU): loaded")),
        "{out}"
    );
    assert!(!s.db().exists(), "--version touches no database");
}
