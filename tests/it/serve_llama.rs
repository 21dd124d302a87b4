//! `dyno serve-bench` against a real llama-server, built from llama.cpp's
//! tools/server against the llama.cpp Dyno itself compiles
//! (scripts/lib/llama-server.sh; scripts/test.sh passes its path in
//! DYNO_LLAMA_SERVER, and without it the test builds it, once per machine).
//! The server runs on SmolLM2 on a private port for this test only.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn llama_server() -> String {
    if let Ok(p) = std::env::var("DYNO_LLAMA_SERVER") {
        return p;
    }
    script_stdout(
        &["scripts/lib/llama-server.sh".as_ref()],
        "build llama-server",
    )
    .trim()
    .to_string()
}

/// A llama-server that is stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(extra: &[&str]) -> Server {
    let port = free_port();
    let child = Command::new(llama_server())
        .arg("-m")
        .arg(model(SMOL))
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            // One thread: the suite runs several llama.cpp processes on two
            // cores at once, and spinning thread pools that outnumber the
            // cores can stall a stream for a minute (CI timed out a request
            // this way before the kill).
            "-t",
            "1",
            "-c",
            "4096",
        ])
        .args(["--no-webui", "--no-warmup"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("llama-server starts");
    let url = format!("http://127.0.0.1:{port}");
    let server = Server { child, url };
    // Ready when /health says so (it answers 503 while loading).
    let t0 = Instant::now();
    loop {
        let ok = std::net::TcpStream::connect(("127.0.0.1", port))
            .ok()
            .and_then(|mut s| {
                use std::io::{Read, Write};
                s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
                write!(
                    s,
                    "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                )
                .ok()?;
                let mut r = String::new();
                s.read_to_string(&mut r).ok()?;
                Some(r.starts_with("HTTP/1.1 200"))
            })
            .unwrap_or(false);
        if ok {
            return server;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "llama-server did not become ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn llama_server_is_measured_with_its_own_counts_and_cache_control() {
    let server = start(&["-np", "2"]);
    let s = Scratch::new();
    let o = s.run_line(&format!(
        "serve-bench {} -p 64 -n 16 -c 1,2 -r 2 --json",
        server.url
    ));
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["server"]["kind"], "llama_server");
    // Built outside git, it says "b0-unknown": no version, so none is shown.
    assert_ne!(j["server"]["version"], "b0-unknown");
    assert!(j["server"]["model_path"]
        .as_str()
        .unwrap()
        .ends_with("SmolLM2-135M-Instruct.Q4_1.gguf"));
    assert_eq!(j["server"]["slots"], 2);
    for r in j["results"].as_array().unwrap() {
        let m = &r["summary"];
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m["token_source"], "usage");
        // ignore_eos: every request decodes exactly what was asked.
        assert_eq!(m["completion_tokens_mean"], 16.0, "{r}");
        // Prompts are cut to the model's own tokens per word, learnt from
        // the warm-up: within a quarter of the length asked for.
        let pt = m["prompt_tokens_mean"].as_f64().unwrap();
        assert!((48.0..=80.0).contains(&pt), "prompt tokens {pt}");
        // cache_prompt false: the server reused nothing.
        assert_eq!(m["cached_tokens_mean"], 0.0, "{r}");
        // The client's and the server's clocks both measured decode.
        assert!(m["decode_tokens_per_s"]["p50"]["value"].as_f64().unwrap() > 0.0);
        assert!(
            m["server_decode_tokens_per_s"]["p50"]["value"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        assert!(m["ttft_ms"]["p50"]["value"].as_f64().unwrap() > 0.0);
    }

    // Shared, the model is named by its file, never by the path the server
    // reported (which holds the user's folders).
    let exported = json(&s.run(&[
        "export",
        &format!("serve:{}", j["run_id"]),
        "--format",
        "json",
    ]));
    assert_eq!(
        exported["server"]["model_path"],
        "SmolLM2-135M-Instruct.Q4_1.gguf"
    );
    assert!(!exported
        .to_string()
        .contains(&*models_dir().to_string_lossy()));

    // Cached-prefix mode: the depth's context is sent once, then each
    // request reuses it and only its own prompt is new.
    let o = s.run_line(&format!(
        "serve-bench {} -p 32 -n 4 -d 256 -r 2 --prefix-cache --json",
        server.url
    ));
    assert_code(&o, 0);
    let r = &json(&o)["results"][0];
    let cached = r["summary"]["cached_tokens_mean"].as_f64().unwrap();
    assert!(cached >= 180.0, "the shared context was not reused: {r}");

    // The same model in-process, with the same lengths: what the server
    // costs. Each ratio is the server's figure over the engine's, both
    // positive, and the engine's run is stored as any other. How far apart
    // they are is not checked here: the suite runs tests side by side on two
    // cores, and CI saw the server's four-token decode at 0.06 and then 0.005
    // of the engine's while a sweep test held both cores (llama.cpp's
    // spinning threads starve each other). The bounds below only catch a
    // unit slip of a million (ns for ms, t/s for t/µs).
    let o = s.run_line(&format!(
        "serve-bench {} -p 64 -n 8 -r 2 --engine SMOL --engine-threads 2 --json",
        server.url
    ));
    assert_code(&o, 0);
    let j = json(&o);
    let rows = j["engine_comparison"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{j}");
    for (k, server_k, engine_k) in [
        (
            "prefill_ratio",
            "server_prefill_tokens_per_s",
            "engine_prefill_tokens_per_s",
        ),
        (
            "decode_ratio",
            "server_decode_tokens_per_s",
            "engine_decode_tokens_per_s",
        ),
        ("ttft_ratio", "server_ttft_ms", "engine_ttft_ms"),
    ] {
        let r = rows[0][k].as_f64().unwrap();
        let (a, b) = (
            rows[0][server_k].as_f64().unwrap(),
            rows[0][engine_k].as_f64().unwrap(),
        );
        assert!(a > 0.0 && b > 0.0, "{k}: {a} over {b}");
        assert!(
            (r - a / b).abs() <= 1e-9 * r.abs(),
            "{k} {r} is not {a} / {b}"
        );
        assert!(r > 1e-4 && r < 1e4, "{k} {r}");
    }
    let run_id = rows[0]["engine_run_id"].clone();
    let runs = json(&s.run(&["runs", "--json"]));
    assert!(runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["run_id"] == run_id));
}

#[test]
fn a_llama_server_killed_mid_run_gives_recorded_failures_and_the_run_ends() {
    let mut server = start(&[]);
    let s = Scratch::new();
    let mut c = s.dyno();
    c.args(argv(&format!(
        "serve-bench {} -p 32 -n 64 -c 1,2 -r 6 --stall 300 --timeout 600 --json",
        server.url
    )))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = c.spawn().expect("dyno runs");
    // Kill the server once the first test (concurrency 1) is stored, so
    // the second meets it dead.
    // The wait is generous: in CI this test shares two cores with the rest
    // of the suite, and a kill before the first test is stored would test
    // nothing (CI once killed it at 60 s with 5 of 6 requests done).
    let db = s.db();
    let t0 = Instant::now();
    let mut stored = false;
    while !stored && t0.elapsed() < Duration::from_secs(480) {
        std::thread::sleep(Duration::from_millis(200));
        stored = first_request_stored(&db);
    }
    assert!(stored, "the first test was not stored within 480 s");
    let _ = server.child.kill();
    let _ = server.child.wait();
    let t_kill = Instant::now();
    let o = child.wait_with_output().expect("dyno ends");
    assert!(
        t_kill.elapsed() < Duration::from_secs(60),
        "serve-bench did not hang on a dead server"
    );
    // Requests failed: the run says so with exit code 1, and keeps every
    // measured one.
    assert_code(&o, 1);
    let j = json(&o);
    // Before the kill every request of the first test is measured. (The
    // deadline is generous: CI once timed one out at 20 s while the suite's
    // quantisation sweep held both cores; a dead server fails at once
    // whatever the deadline.)
    let first: Vec<&str> = j["results"][0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["error_code"].as_str())
        .collect();
    assert_eq!(
        j["results"][0]["summary"]["ok"], 6,
        "failures before the kill: {first:?}"
    );
    let r = &j["results"][1];
    let m = &r["summary"];
    assert!(m["failed"].as_u64().unwrap() >= 1, "{m}");
    let codes: Vec<&str> = r["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["error_code"].as_str())
        .collect();
    assert!(
        codes
            .iter()
            .all(|c| ["unreachable", "stream_cut", "bad_stream", "timed_out"].contains(c)),
        "each failure has a reason a person can act on: {codes:?}"
    );
    assert!(
        codes.contains(&"unreachable"),
        "requests after the kill: {codes:?}"
    );
}

/// True once a server run holds a finished test.
fn first_request_stored(db: &std::path::Path) -> bool {
    if !db.exists() {
        return false;
    }
    let (rt, store) = store(db);
    let any = rt.block_on(async {
        for r in store.server_runs(5).await.unwrap_or_default() {
            if store
                .server_results(r.id)
                .await
                .is_ok_and(|v| !v.is_empty())
            {
                return true;
            }
        }
        false
    });
    rt.block_on(store.close());
    any
}

/// A TLS proxy (Debian's stunnel) in front of a server, as a remote https
/// server would be, with a certificate for 127.0.0.1 signed by an authority
/// of its own: nothing a public root vouches for. Stopped when dropped.
struct TlsProxy {
    child: Child,
    url: String,
    /// The authority's certificate (PEM), for `--ca-cert`.
    ca: std::path::PathBuf,
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let o = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs (scripts/setup.sh installs it)");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn tls_proxy(s: &Scratch, backend: &str) -> TlsProxy {
    let dir = s.path("tls");
    std::fs::create_dir_all(&dir).unwrap();
    let key = ["-newkey", "rsa:2048", "-nodes"];
    openssl(
        &dir,
        &[
            &["req", "-x509", "-new"][..],
            &key,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=Dyno test authority",
            ],
        ]
        .concat(),
    );
    openssl(
        &dir,
        &[
            &["req", "-new"][..],
            &key,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
    let port = free_port();
    let backend = backend.trim_start_matches("http://");
    std::fs::write(
        dir.join("stunnel.conf"),
        format!(
            "foreground = yes\npid =\n[dyno]\naccept = 127.0.0.1:{port}\nconnect = {backend}\ncert = {}\nkey = {}\n",
            dir.join("server.pem").display(),
            dir.join("server.key").display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("stunnel.log")).unwrap();
    let child = Command::new("stunnel4")
        .arg(dir.join("stunnel.conf"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("stunnel4 runs (scripts/setup.sh installs it)");
    let mut proxy = TlsProxy {
        child,
        url: format!("https://127.0.0.1:{port}"),
        ca: dir.join("ca.pem"),
    };
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        // An exit means it could not listen (the port taken meanwhile):
        // its log says why.
        let exited = proxy.child.try_wait().ok().flatten();
        assert!(
            exited.is_none() && t0.elapsed() < Duration::from_secs(30),
            "stunnel did not listen ({exited:?}): {}",
            std::fs::read_to_string(dir.join("stunnel.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Listening is not enough if the port went to another test: stunnel
    // must be the one that holds it.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        proxy.child.try_wait().ok().flatten().is_none(),
        "stunnel exited: {}",
        std::fs::read_to_string(dir.join("stunnel.log")).unwrap_or_default()
    );
    proxy
}

/// Over https each request's TTFT holds a TLS handshake as well as a TCP
/// one: the run measures both apart and says so beside TTFT. A server
/// whose authority the user did not give is refused with what to do.
#[test]
fn an_https_server_is_measured_with_its_connection_set_up_stated() {
    let server = start(&[]);
    let s = Scratch::new();
    let proxy = tls_proxy(&s, &server.url);
    let o = s.run_line(&format!("serve-bench {} -p 32 -n 4 -r 2", proxy.url));
    assert_ne!(o.status.code(), Some(0));
    let e = stderr(&o);
    assert!(
        e.contains("certificate") && e.contains("--ca-cert"),
        "an unknown authority says what to do: {e}"
    );

    let ca = proxy.ca.to_str().unwrap();
    let o = s.run(&[
        "serve-bench",
        &proxy.url,
        "-p",
        "32",
        "-n",
        "4",
        "-r",
        "2",
        "--ca-cert",
        ca,
        "--json",
    ]);
    assert_code(&o, 0);
    let j = json(&o);
    let c = &j["server"]["connect"];
    assert_eq!(c["probes"], 5, "{j}");
    let (tcp, tls) = (f(&c["tcp_ms"]), f(&c["tls_ms"]));
    assert!(tcp > 0.0 && tls > 0.0, "{c}");
    let r = &j["results"][0];
    assert_eq!(r["status"], "ok", "{r}");
    assert!(r["summary"]["ttft_ms"]["p50"]["value"].as_f64().unwrap() > 0.0);
    // The text report says what each TTFT holds.
    let text = stdout(&s.run(&[
        "export",
        &format!("serve:{}", j["run_id"]),
        "--format",
        "md",
    ]));
    assert!(
        text.contains("each TTFT includes opening a connection") && text.contains("TLS"),
        "{text}"
    );
    // Over plain HTTP there is no TLS part.
    let o = s.run_line(&format!(
        "serve-bench {} -p 32 -n 4 -r 2 --json",
        server.url
    ));
    assert_code(&o, 0);
    let c = &json(&o)["server"]["connect"];
    assert!(f(&c["tcp_ms"]) > 0.0 && c["tls_ms"].is_null(), "{c}");
}
