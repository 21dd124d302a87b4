//! llama.cpp's RPC backend end to end: two `dyno rpc-server`s on 127.0.0.1
//! lend this machine's CPU as two devices, `dyno bench --rpc` splits
//! SmolLM2's layers between them, and llama-bench (linked against Dyno's own
//! libraries and RPC module, scripts/lib/llama-server.sh llama-bench-linked)
//! measures over the same servers. A server that dies mid-test must leave a
//! recorded failure, not a hang.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// A `dyno rpc-server` on a free port of 127.0.0.1, killed when dropped.
struct RpcServer {
    child: Child,
    endpoint: String,
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RpcServer {
    fn start(s: &Scratch) -> RpcServer {
        let port = free_port();
        let mut child = s
            .dyno()
            .args([
                "rpc-server",
                "--port",
                &port.to_string(),
                "-t",
                "1",
                "--json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dyno rpc-server starts");
        // Its one JSON line says what it serves, just before it listens.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let hello: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("rpc-server printed {line:?}: {e}"));
        let endpoint = format!("127.0.0.1:{port}");
        assert_eq!(hello["endpoint"], endpoint.as_str());
        assert_eq!(hello["devices"][0]["name"], "CPU", "{hello}");
        let t0 = Instant::now();
        while std::net::TcpStream::connect(&endpoint).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{endpoint} never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        RpcServer { child, endpoint }
    }
}

fn llama_bench_linked() -> String {
    script_stdout(
        &[
            "scripts/lib/llama-server.sh".as_ref(),
            "llama-bench-linked".as_ref(),
        ],
        "build llama-bench against Dyno's libraries",
    )
    .trim()
    .to_string()
}

#[test]
fn two_servers_split_the_layers_and_llama_bench_measures_over_the_same_servers() {
    let s = Scratch::new();
    let (a, b) = (RpcServer::start(&s), RpcServer::start(&s));
    let rpc = format!("{},{}", a.endpoint, b.endpoint);
    let o = s.bench(&format!(
        "-p 32 -n 8 -r 2 -t 1 --no-telemetry --json --rpc {rpc}"
    ));
    assert_code(&o, 0);
    let j = json(&o);
    let run = &j["runs"][0];
    assert_eq!(run["backend"], "RPC", "llama-bench's backend name: {run}");
    assert_eq!(
        run["config"]["rpc"],
        serde_json::json!([a.endpoint, b.endpoint])
    );
    let off = &run["offload"];
    // Every layer went to the servers, by llama.cpp's own count …
    assert_eq!(off["layers_offloaded"], off["layers_total"], "{off}");
    // … and its weight buffers say both servers hold a share.
    for ep in [&a.endpoint, &b.endpoint] {
        let held: u64 = off["buffers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["name"].as_str().unwrap().ends_with(&format!("[{ep}]")))
            .map(|x| x["bytes"].as_u64().unwrap())
            .sum();
        assert!(held > 1 << 20, "{ep} holds {held} bytes of weights: {off}");
    }
    // Each server is recorded with the devices it lent, in the order given.
    let servers = off["rpc"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{off}");
    for (srv, (ep, dev)) in servers
        .iter()
        .zip([(&a.endpoint, "RPC0"), (&b.endpoint, "RPC1")])
    {
        assert_eq!(srv["endpoint"], ep.as_str());
        assert_eq!(srv["devices"][0]["name"], dev, "{srv}");
        assert!(f(&srv["devices"][0]["memory_total_bytes"]) > 0.0, "{srv}");
    }
    let dyno_tg = f(&run["results"][1]["mean_tokens_per_s"]);
    assert!(dyno_tg > 0.0);
    // The conditions say so wherever the figure goes.
    let id = run["run_id"].to_string();
    let md = stdout(&s.run(&["export", &id, "--format", "md"]));
    assert!(
        md.contains(&format!("RPC servers {}, {}", a.endpoint, b.endpoint)),
        "{md}"
    );
    let show = stdout(&s.run(&["show", &id]));
    assert!(
        show.contains(&format!("RPC server {}: RPC0", a.endpoint)),
        "{show}"
    );

    // llama-bench over the same two servers, loading the same RPC module.
    let lb = Command::new(llama_bench_linked())
        .args(["-m", model(SMOL).to_str().unwrap()])
        .args([
            "-p", "32", "-n", "8", "-r", "2", "-t", "1", "-o", "json", "--rpc", &rpc,
        ])
        .output()
        .unwrap();
    assert!(
        lb.status.success(),
        "llama-bench --rpc failed: {}",
        stderr(&lb)
    );
    let rows: serde_json::Value = serde_json::from_slice(&lb.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r["backends"], "RPC", "{r}");
        assert!(f(&r["avg_ts"]) > 0.0, "{r}");
    }
    let lb_tg = f(&rows[1]["avg_ts"]);
    eprintln!("rpc: tg8 over two local servers: Dyno {dyno_tg:.1} t/s, llama-bench {lb_tg:.1} t/s");
}

#[test]
fn a_server_that_dies_mid_test_fails_that_test_and_keeps_what_was_measured() {
    let s = Scratch::new();
    let server = RpcServer::start(&s);
    let mut child = s
        .dyno()
        .args(argv(&format!(
            "bench SMOL -p 16 -n 2048 -r 1 -t 1 --no-telemetry --json --rpc {}",
            server.endpoint
        )))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The prefill test is stored; the long decode is under way on the server.
    let started = wait_for_results(&s, &mut child, "the first test never finished", |r| {
        r.iter()
            .any(|x| x.status == dyno::vocab::status::ResultStatus::Ok)
    });
    assert!(started, "the bench ended before its first test was stored");
    drop(server);
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "the bench took {:?} to notice its server was gone",
        t0.elapsed()
    );
    assert_code(&o, 1);
    let j = json(&o);
    let results = j["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results[0]["status"], "ok", "{results:?}");
    assert_eq!(results[1]["status"], "failed", "{results:?}");
    let err = results[1]["error"].as_str().unwrap();
    assert!(err.contains("an RPC server stopped answering"), "{err}");
}

#[test]
fn a_server_that_is_not_there_is_named_with_what_to_do() {
    let s = Scratch::new();
    let port = free_port();
    let o = s.bench(&format!("-p 16 -n 4 -r 1 --json --rpc 127.0.0.1:{port}"));
    assert_code(&o, 1);
    let j = json(&o);
    let run = &j["runs"][0];
    assert_eq!(run["status"], "failed", "{run}");
    let err = run["error"].as_str().unwrap();
    assert!(
        err.contains(&format!("no RPC server answers at 127.0.0.1:{port}"))
            && err.contains("dyno rpc-server"),
        "{err}"
    );
    // A malformed address is bad input, refused before any worker starts.
    let o = s.bench("-p 16 -n 4 -r 1 --rpc 127.0.0.1");
    assert_code(&o, 2);
    assert!(stderr(&o).contains("HOST:PORT"), "{}", stderr(&o));
}
