//! `dyno serve-bench` against a fake OpenAI-compatible server with a known
//! pace and chosen faults (tests/fixtures/fake_openai.rs). The real
//! llama-server is measured in `serve_llama`.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::fake_openai::{FakeOpenAi, Mode, Pace};

fn serve_bench(s: &Scratch, url: &str, opts: &str) -> std::process::Output {
    let mut c = s.dyno();
    c.env_remove("DYNO_API_KEY");
    c.arg("serve-bench").arg(url).args(argv(opts));
    c.output().expect("dyno runs")
}

fn pct(v: &serde_json::Value, measure: &str, p: &str) -> f64 {
    v["summary"][measure][p]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {measure}.{p} in {v}"))
}

#[test]
fn a_server_is_measured_per_request_and_in_total_and_stored() {
    let server = FakeOpenAi::start(Pace::default());
    let s = Scratch::new();
    let mut c = s.dyno();
    c.env("DYNO_API_KEY", "sk-not-for-the-database")
        .args(["serve-bench", &format!("{}/v1", server.url)])
        .args(argv("-p 40 -n 12 -c 1,3 -r 3 --slo-ttft-ms 5000 --json"));
    let o = c.output().unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["schema"], "dyno.serve/1");
    assert_eq!(j["server"]["kind"], "open_ai");
    assert_eq!(j["server"]["model"], "fake-model");
    assert_eq!(j["status"], "ok");
    // Loopback is not hidden: it names only this machine.
    assert_eq!(j["endpoint"], server.url);
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["summary"]["ok"], 3);
        assert_eq!(r["summary"]["token_source"], "usage");
        assert_eq!(r["summary"]["completion_tokens_mean"], 12.0);
        // TTFT includes the server's 30 ms wait before the first token;
        // each later token comes ≥ 5 ms after the one before.
        assert!(pct(r, "ttft_ms", "p50") >= 30.0, "{r}");
        assert!(pct(r, "itl_ms", "p50") >= 4.5, "{r}");
        let tpot = pct(r, "tpot_ms", "p50");
        let decode = pct(r, "decode_tokens_per_s", "p50");
        assert!(
            (decode - 1e3 / tpot).abs() / decode < 0.2,
            "{tpot} {decode}"
        );
        assert_eq!(r["summary"]["goodput"]["met"], 3);
        assert_eq!(r["samples"].as_array().unwrap().len(), 3);
    }
    // Three requests side by side deliver more in total than one at a time,
    // while each is no faster.
    let total = |r: &serde_json::Value| r["summary"]["total_output_tokens_per_s"].as_f64().unwrap();
    assert!(
        total(&results[1]) > 1.5 * total(&results[0]),
        "{} {}",
        total(&results[1]),
        total(&results[0])
    );
    assert_eq!(server.max_in_flight(), 3);

    // Every prompt was its own from the first words (the prefix cache can
    // serve none from another), cut from real text, and the key was sent.
    let seen = server.seen();
    let prompts: Vec<String> = seen
        .iter()
        .map(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let heads: std::collections::HashSet<String> = prompts
        .iter()
        .map(|p| p.chars().take(24).collect())
        .collect();
    assert_eq!(heads.len(), prompts.len());
    assert!(prompts.iter().any(|p| p.contains("Alice")), "{prompts:?}");
    assert!(seen
        .iter()
        .all(|r| r.authorization.as_deref() == Some("Bearer sk-not-for-the-database")));
    assert!(seen.iter().all(|r| r.body["stream"] == true
        && r.body["stream_options"]["include_usage"] == true
        && r.body.get("ignore_eos").is_none()));

    // Stored: listed, shown the same, and the key is nowhere in the files.
    let listed = json(&s.run(&["serve-runs", "--json"]));
    assert_eq!(listed[0]["run_id"], j["run_id"]);
    let shown = json(&s.run(&["serve-show", &j["run_id"].to_string(), "--json"]));
    assert_eq!(shown, j);
    for f in std::fs::read_dir(s.db().parent().unwrap()).unwrap() {
        let path = f.unwrap().path();
        if path.is_dir() {
            continue; // the owners' lock folder: empty files
        }
        let bytes = std::fs::read(path).unwrap();
        assert!(!bytes
            .windows(b"sk-not-for".len())
            .any(|w| w == b"sk-not-for"));
    }
    let table = stdout(&s.run(&["serve-show", &j["run_id"].to_string()]));
    assert!(table.contains("pp40+tg12 @d0 c3"), "{table}");
    assert!(table.contains("prefix cache defeated"), "{table}");

    // Exports: the document, a CSV row per test, and a clear refusal of
    // llama-bench's form, which describes in-process tests only.
    let target = format!("serve:{}", j["run_id"]);
    let doc = json(&s.run(&["export", &target, "--format", "json"]));
    assert_eq!(doc["results"], j["results"]);
    assert!(doc["exported_by"].as_str().unwrap().starts_with("dyno "));
    let csv = stdout(&s.run(&["export", &target, "--format", "csv"]));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("run_id,server_kind"));
    assert!(lines[2].contains("pp40+tg12 @d0 c3"));
    let o = s.run(&["export", &target, "--format", "llama-bench-json"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("in-process runs"), "{}", stderr(&o));
    // A run compared with itself changes nothing.
    let o = s.run(&["compare", &target, &target, "--json"]);
    assert_code(&o, 0);
    let c = json(&o);
    assert!(!c["tests"].as_array().unwrap().is_empty(), "{c}");
    for t in c["tests"].as_array().unwrap() {
        assert_eq!(t["ratio"], 1.0, "{t}");
    }
}

#[test]
fn llama_server_is_recognised_and_its_own_timings_are_kept() {
    let server = FakeOpenAi::start(Pace {
        llama_like: true,
        usage: false,
        ..Pace::default()
    });
    let s = Scratch::new();
    let o = serve_bench(&s, &server.url, "--api completions -p 30 -n 8 -r 2 --json");
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["server"]["kind"], "llama_server");
    assert_eq!(j["server"]["version"], "b0-fake");
    assert_eq!(j["server"]["slots"], 4);
    let r = &j["results"][0];
    // No usage object: the counts come from the server's timings, and say so.
    assert_eq!(r["summary"]["token_source"], "timings");
    assert!(pct(r, "server_decode_tokens_per_s", "p50") > 0.0);
    let seen = server.seen();
    let last = &seen.last().unwrap().body;
    assert_eq!(last["ignore_eos"], true);
    assert_eq!(last["cache_prompt"], false);
    assert!(last["prompt"].is_string());
}

#[test]
fn a_misbehaving_server_gives_recorded_failures_and_never_hangs() {
    for (mode, code, words) in [
        (Mode::Http500, "server_error", "HTTP 500"),
        (Mode::Malformed, "bad_stream", "not JSON"),
        (Mode::Stall, "timed_out", "stalled"),
        (Mode::Cut, "stream_cut", "closed the stream"),
    ] {
        let server = FakeOpenAi::start(Pace::default());
        let s = Scratch::new();
        server.set_mode(mode);
        let t0 = Instant::now();
        // Two tests: the first failing does not stop the second.
        let o = serve_bench(
            &s,
            &server.url,
            "-p 20 -n 4,6 -r 2 --stall 1 --timeout 10 --json",
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{mode:?} took {:?}",
            t0.elapsed()
        );
        assert_code(&o, 1);
        let j = json(&o);
        assert_eq!(j["status"], "failed", "{mode:?}");
        assert_eq!(j["error_code"], code, "{mode:?}: {j}");
        let results = j["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{mode:?}");
        for r in results {
            assert_eq!(r["status"], "failed");
            let why = r["error"].as_str().unwrap();
            assert!(why.contains(words), "{mode:?}: {why}");
            assert!(r["samples"]
                .as_array()
                .unwrap()
                .iter()
                .all(|x| x["error_code"] == code));
        }
        // Stored as failed, with the reason.
        let shown = stdout(&s.run(&["serve-show", &j["run_id"].to_string()]));
        assert!(shown.contains("FAILED"), "{shown}");
    }
}

#[test]
fn some_failed_requests_leave_the_others_measured_and_goodput_counts_them_missed() {
    let server = FakeOpenAi::start(Pace::default());
    server.set_mode(Mode::FailEverySecond);
    let s = Scratch::new();
    let o = serve_bench(
        &s,
        &server.url,
        "-p 20 -n 4 -r 4 --slo-ttft-ms 10000 --json",
    );
    let j = json(&o);
    let r = &j["results"][0];
    // Every second request fails with 503: two of the test's four (the two
    // warm-ups came first).
    assert_eq!(r["summary"]["ok"], 2, "{r}");
    assert_eq!(r["summary"]["failed"], 2);
    assert_eq!(r["status"], "ok");
    assert!(r["error"]
        .as_str()
        .unwrap()
        .contains("2 of 4 requests failed"));
    assert_eq!(r["summary"]["goodput"]["fraction"], 0.5);
}

/// This machine's name and a loopback address it resolves to: a named
/// host that is not "localhost", so Dyno hides it, on which a test server
/// can listen. Debian's /etc/hosts names the machine.
fn named_loopback_host() -> (String, std::net::IpAddr) {
    use std::net::ToSocketAddrs;
    let host = sysinfo::System::host_name().expect("the machine has a name");
    let ip = (host.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.find(|a| a.ip().is_loopback()))
        .unwrap_or_else(|| {
            panic!("{host} does not resolve to a loopback address; name it in /etc/hosts")
        })
        .ip();
    (host, ip)
}

/// A named host is hidden wherever a shown or exported server run would
/// carry it: the endpoint, and the error texts, where reqwest quotes the
/// URL it failed on. Asked for, it is shown.
#[test]
fn a_named_host_is_hidden_in_error_texts_as_in_the_endpoint() {
    let (host, ip) = named_loopback_host();
    let server = FakeOpenAi::start_at(Pace::default(), ip);
    server.set_mode(Mode::Hangup);
    let port = server.url.rsplit(':').next().unwrap();
    let url = format!("http://{host}:{port}");
    let s = Scratch::new();
    let o = serve_bench(&s, &url, "-p 20 -n 4 -r 1 --json");
    assert_code(&o, 1);
    let j = json(&o);
    assert_eq!(j["error_code"], "unreachable", "{j}");
    assert!(j.to_string().contains("cannot reach the server"), "{j}");
    let id = j["run_id"].to_string();
    let mut seen = vec![("serve-bench --json".to_string(), stdout(&o))];
    for args in [
        vec!["serve-runs", "--json"],
        vec!["serve-show", id.as_str()],
        vec!["serve-show", id.as_str(), "--json"],
        vec!["export", &format!("serve:{id}"), "--format", "json"],
        vec!["export", &format!("serve:{id}"), "--format", "csv"],
        vec!["export", &format!("serve:{id}"), "--format", "md"],
    ] {
        let o = s.run(&args);
        assert_code(&o, 0);
        seen.push((args.join(" "), stdout(&o)));
    }
    for (what, text) in &seen {
        assert!(!text.contains(&host), "{what} shows {host}:\n{text}");
        assert!(text.contains("<host>"), "{what}:\n{text}");
    }
    let o = s.run(&["serve-show", &id, "--json", "--show-host"]);
    assert!(stdout(&o).contains(&url), "{}", stdout(&o));
}

#[test]
fn bad_addresses_and_plans_are_clear_errors() {
    let s = Scratch::new();
    // Nothing listens on this port once the listener is dropped.
    let port = free_port();
    let o = serve_bench(&s, &format!("http://127.0.0.1:{port}"), "-r 1");
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("cannot reach a server at"),
        "{}",
        stderr(&o)
    );
    let o = serve_bench(&s, "ftp://example.com", "-r 1");
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("not an http(s) server URL"),
        "{}",
        stderr(&o)
    );
    let server = FakeOpenAi::start(Pace::default());
    let o = serve_bench(&s, &server.url, "-c 0");
    assert_code(&o, 2);
    assert!(server.seen().is_empty(), "a bad plan sends nothing");
    // Durations past what a clock holds are refused before a row exists.
    for bad in [
        "--stall inf",
        "--timeout 1e20",
        "--stall nan",
        "--timeout 86401",
    ] {
        let o = serve_bench(&s, &server.url, bad);
        assert_code(&o, 2);
        assert!(stderr(&o).contains("a day"), "{bad}: {}", stderr(&o));
    }
    assert!(server.seen().is_empty(), "a bad duration sends nothing");
    let o = s.run(&["serve-runs", "--json"]);
    assert_eq!(json(&o).as_array().map_or(0, Vec::len), 0, "no run stored");
    let o = s.run(&["bench", "SMOL", "--timeout", "18446744073709551615"]);
    assert_code(&o, 2);
}

#[test]
fn a_killed_serve_bench_keeps_its_finished_tests_and_is_closed_as_interrupted() {
    // 4 tokens, then 3,000 at 5 ms each (15 s): killed during the second test.
    let server = FakeOpenAi::start(Pace::default());
    let s = Scratch::new();
    let mut child = s
        .dyno()
        .env_remove("DYNO_API_KEY")
        .arg("serve-bench")
        .arg(&server.url)
        .args(argv("-p 20 -n 4,3000 -r 1 --json"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let (rt, store) = store(&s.db());
        let done = rt
            .block_on(store.server_runs(1))
            .ok()
            .and_then(|r| r.first().map(|r| r.id))
            .map(|id| {
                rt.block_on(store.server_results(id))
                    .unwrap_or_default()
                    .len()
            })
            .unwrap_or(0);
        rt.block_on(store.close());
        if done >= 1 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the first test never finished"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The next Dyno closes the run as interrupted and keeps the finished test.
    let list = json(&s.run(&["serve-runs", "--json"]));
    assert_eq!(list[0]["status"], "failed", "{list}");
    assert!(list[0]["error"].as_str().unwrap().contains("interrupted"));
    let shown = json(&s.run(&["serve-show", "1", "--json"]));
    assert_eq!(shown["error_code"], "interrupted");
    let results = shown["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["test"], "pp20+tg4 @d0 c1");
    assert_eq!(results[0]["status"], "ok");
}

/// The fake as Ollama: 30 ms of prefill, then a token every 12.5 ms, so
/// 16 tokens take 200 ms by its clock: 80 t/s.
fn fake_ollama() -> FakeOpenAi {
    FakeOpenAi::start(Pace {
        ollama_like: true,
        per_token: Duration::from_micros(12_500),
        ..Pace::default()
    })
}

#[test]
fn ollama_is_measured_through_its_native_route_with_its_own_timings() {
    let server = fake_ollama();
    let s = Scratch::new();
    let o = serve_bench(&s, &server.url, "-p 40 -n 16 -r 2 --json");
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["server"]["kind"], "ollama");
    assert_eq!(j["server"]["version"], "0.0.0-fake");
    let r = &j["results"][0];
    assert_eq!(r["status"], "ok", "{r}");
    // The counts are Ollama's own (eval_count, prompt_eval_count).
    assert_eq!(r["summary"]["token_source"], "timings");
    assert_eq!(r["summary"]["completion_tokens_mean"], 16.0);
    // The server's figures are exactly what it reported: 16 tokens in
    // 200 ms, and the prompt's count in 30 ms.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b;
    let decode = pct(r, "server_decode_tokens_per_s", "p50");
    assert!(close(decode, 80.0), "{decode}");
    let prompt = r["summary"]["prompt_tokens_mean"].as_f64().unwrap();
    let prefill = pct(r, "server_prefill_tokens_per_s", "p50");
    assert!(close(prefill, prompt / 0.030), "{prefill} {prompt}");
    // The warm-ups taught the prompt cutter from Ollama's counts (one token
    // a word here, where the default guess is 1.35): about 40 in all, plus
    // the request's tag.
    assert!((40.0..=48.0).contains(&prompt), "{prompt}");
    // The client's clock still times every line: TTFT holds the prefill
    // wait, each later token comes ≥ 12.5 ms after the one before.
    assert!(pct(r, "ttft_ms", "p50") >= 30.0, "{r}");
    assert!(pct(r, "itl_ms", "p50") >= 12.0, "{r}");
    let t = &r["samples"][0]["timings"];
    assert_eq!(t["predicted_n"], 16);
    assert_eq!(t["predicted_ms"], 200.0);
    assert_eq!(t["prompt_ms"], 30.0);
    assert_eq!(t["load_ms"], 2.0);
    assert_eq!(t["total_ms"], 232.0);
    assert!(t["cache_n"].is_null(), "{t}");
    assert_eq!(r["samples"][0]["finish_reason"], "length");

    // Every request went to /api/chat with Ollama's options, none to the
    // OpenAI route.
    let seen = server.seen();
    assert_eq!(seen.len(), 4, "two warm-ups and two requests");
    for q in &seen {
        assert_eq!(q.path, "/api/chat");
        assert_eq!(q.body["stream"], true);
        assert_eq!(q.body["options"]["temperature"], 0);
        assert!(q.body.get("stream_options").is_none(), "{}", q.body);
    }
    assert_eq!(seen.last().unwrap().body["options"]["num_predict"], 16);
    let heads: std::collections::HashSet<String> = seen
        .iter()
        .map(|q| {
            let p = q.body["messages"][0]["content"].as_str().unwrap();
            p.chars().take(24).collect()
        })
        .collect();
    assert_eq!(heads.len(), seen.len(), "every prompt is its own");
}

#[test]
fn ollama_with_a_shared_prefix_gives_no_server_prefill_rate() {
    // Ollama counts a cached context in prompt_eval_count but not in
    // prompt_eval_duration: with --prefix-cache the pair would count the
    // context as prefilled, so no rate comes from it. Decode stands.
    let server = fake_ollama();
    let s = Scratch::new();
    let o = serve_bench(
        &s,
        &server.url,
        "-p 20 -d 64 -n 4 -r 2 --prefix-cache --json",
    );
    assert_code(&o, 0);
    let j = json(&o);
    let r = &j["results"][0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["summary"]["token_source"], "timings");
    assert!(r["summary"]["server_prefill_tokens_per_s"].is_null(), "{r}");
    assert!(pct(r, "server_decode_tokens_per_s", "p50") > 0.0);
    for x in r["samples"].as_array().unwrap() {
        assert_eq!(x["timings"]["prompt_n_counts_cache"], true, "{x}");
        assert_eq!(x["shared_prefix_tokens"], 64, "{x}");
    }
    // Nor does the client-side rate count the context as prefilled: Ollama
    // says nothing of its cache, so the 64 tokens sent first come off.
    let fresh: Vec<f64> = r["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (f(&x["prompt_tokens"]) - 64.0) / (f(&x["ttft_ms"]) / 1e3))
        .collect();
    let mean = fresh.iter().sum::<f64>() / fresh.len() as f64;
    let got = f(&r["summary"]["prefill_tokens_per_s"]["mean"]);
    assert!(
        (got - mean).abs() < 1e-6 * mean.max(1.0),
        "{got} against {mean}: {r}"
    );
    // The context went once, then each request carried it first.
    let seen = server.seen();
    let context = seen[2].body["messages"][0]["content"].as_str().unwrap();
    assert!(seen[3..].iter().all(|q| q.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with(context)));
}

#[test]
fn a_misbehaving_ollama_stream_is_a_recorded_failure_with_its_reason() {
    for (mode, code, words) in [
        (Mode::Malformed, "bad_stream", "not JSON"),
        (Mode::ErrorMidStream, "bad_stream", "error mid-stream"),
        (Mode::Cut, "stream_cut", "closed the stream"),
        (Mode::Http500, "server_error", "HTTP 500"),
    ] {
        let server = fake_ollama();
        server.set_mode(mode);
        let s = Scratch::new();
        let o = serve_bench(
            &s,
            &server.url,
            "-p 20 -n 4 -r 2 --stall 5 --timeout 10 --json",
        );
        assert_code(&o, 1);
        let j = json(&o);
        assert_eq!(j["server"]["kind"], "ollama", "{mode:?}");
        assert_eq!(j["status"], "failed", "{mode:?}");
        assert_eq!(j["error_code"], code, "{mode:?}: {j}");
        let r = &j["results"][0];
        assert_eq!(r["status"], "failed", "{mode:?}");
        let why = r["error"].as_str().unwrap();
        assert!(why.contains(words), "{mode:?}: {why}");
        assert!(r["samples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["error_code"] == code));
        assert!(server.seen().iter().all(|q| q.path == "/api/chat"));
    }
}

#[test]
fn a_server_without_counts_is_counted_with_the_models_tokenizer() {
    // No usage and no timings: only the text comes back.
    let server = FakeOpenAi::start(Pace {
        usage: false,
        ..Pace::default()
    });
    let s = Scratch::new();
    let o = serve_bench(
        &s,
        &server.url,
        "--api completions -p 24 -n 12 -r 2 --json --tokenizer SMOL",
    );
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["plan"]["tokenizer"], SMOL, "the file name, not its path");
    let r = &j["results"][0];
    assert_eq!(r["summary"]["token_source"], "tokenizer", "{r}");
    for q in r["samples"].as_array().unwrap() {
        // The fake sends " t0", " t1", …: SmolLM2's tokenizer reads each as
        // more than one token, so a chunk count would be too low.
        let chunks = q["content_chunks"].as_u64().unwrap();
        let counted = q["completion_tokens"].as_u64().unwrap();
        assert_eq!(chunks, 12);
        assert!(counted > chunks, "{q}");
        assert!(q["prompt_tokens"].as_u64().unwrap() > 0, "{q}");
        assert!(
            q.get("text").is_none(),
            "the generated text is never stored"
        );
    }
    assert!(pct(r, "decode_tokens_per_s", "p50") > 0.0);

    // Without a tokenizer the same server is counted by chunks, and says so.
    let o = serve_bench(&s, &server.url, "--api completions -p 24 -n 12 -r 1 --json");
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["results"][0]["summary"]["token_source"], "chunks");
    assert!(j["plan"]["tokenizer"].is_null());

    // A tokenizer file that is not a GGUF is refused before anything is sent.
    let bad = s.dir.path().join("bad.gguf");
    std::fs::write(&bad, b"not a model").unwrap();
    let before = server.seen().len();
    let o = serve_bench(
        &s,
        &server.url,
        &format!("-p 8 -n 2 -r 1 --tokenizer {}", bad.display()),
    );
    assert_code(&o, 2);
    assert_eq!(server.seen().len(), before, "nothing was sent");
}

#[test]
fn a_server_run_whose_stored_plan_is_damaged_is_a_clear_error_and_still_listed() {
    let server = FakeOpenAi::start(Pace::default());
    let s = Scratch::new();
    let o = serve_bench(&s, &server.url, "-p 20 -n 4 -r 2 --json");
    assert_code(&o, 0);
    let id = json(&o)["run_id"].to_string();
    // The store reads each document as its type: a plan damaged on disk
    // (a hand edit, an older Dyno's) reads as absent rather than as text.
    sql(
        &s.db(),
        &format!("UPDATE server_runs SET plan_json = '{{\"api\": 7' WHERE id = {id}"),
    );
    let shown = s.run(&["serve-show", &id]);
    assert_code(&shown, 2);
    assert!(
        stderr(&shown).contains(&format!("server run {id}'s stored plan does not read back")),
        "{}",
        stderr(&shown)
    );
    // The lists still answer, with the run in them by its columns.
    let listed = json(&s.run(&["serve-runs", "--json"]));
    assert_eq!(listed[0]["run_id"].to_string(), id);
    // So does the app's list of everything, which reads every server run.
    let (rt, store) = crate::common::store(&s.db());
    let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
    rt.block_on(store.close());
    let row = rows
        .iter()
        .find(|r| r.target.to_string() == format!("serve:{id}"))
        .unwrap_or_else(|| panic!("serve:{id} is listed: {rows:?}"));
    assert_eq!(row.title, "fake-model");
    assert_eq!(row.tg_mean, None, "{row:?}");
}
