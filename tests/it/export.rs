//! `dyno export` on a real run: every format carries the figures and their
//! conditions, llama-bench's JSON has its field names, and no export holds
//! the user's name, home directory or host name unless asked to.

use crate::common::*;

const USER: &str = "zyxwvutsrq";

#[test]
fn exports_carry_the_figures_and_nothing_private() {
    let s = Scratch::new();
    // A home whose path holds a distinctive user name, with the model in it.
    let home = s.path(USER);
    let models = home.join("models");
    std::fs::create_dir_all(&models).unwrap();
    let m = models.join(SMOL);
    std::os::unix::fs::symlink(model(SMOL), &m).unwrap();
    let dyno = || {
        let mut c = s.dyno();
        c.env("HOME", &home).env("USER", USER);
        c
    };
    let o = dyno()
        .arg("bench")
        .arg(&m)
        .args(argv("-p 16 -n 4 --pg 16,4 -r 2 --json"))
        .output()
        .unwrap();
    assert_code(&o, 0);
    let run_id = json(&o)["runs"][0]["run_id"].to_string();

    let export = |format: &str, extra: &[&str]| {
        let o = dyno()
            .args(["export", &run_id, "--format", format])
            .args(extra)
            .output()
            .unwrap();
        assert_code(&o, 0);
        stdout(&o)
    };
    let md = export("md", &[]);
    let csv = export("csv", &[]);
    let doc = export("json", &[]);
    let lb = export("llama-bench-json", &[]);
    let card = check_card(&s, &run_id, dyno);
    for (name, text) in [
        ("svg card", &card),
        ("md", &md),
        ("csv", &csv),
        ("json", &doc),
        ("llama-bench-json", &lb),
    ] {
        assert!(!text.contains(USER), "{name} leaks the user name:\n{text}");
        assert!(
            !text.contains(&*home.to_string_lossy()),
            "{name} leaks the home directory"
        );
        if let Some(host) = sysinfo::System::host_name().filter(|h| h.len() > 3) {
            assert!(!text.contains(&host), "{name} leaks the host name");
        }
    }

    // Markdown: llama-bench's table shape plus the conditions.
    assert!(md.contains("| model") && md.contains("pp16"), "{md}");
    assert!(
        md.contains("what this means") && md.contains("500-word reply"),
        "{md}"
    );
    // The conditions line names the threads the run used (one per physical
    // core by default), not just the word.
    let threads = json(&dyno().args(["show", &run_id, "--json"]).output().unwrap())["runs"][0]
        ["config"]["n_threads"]
        .as_u64()
        .unwrap();
    assert!(md.contains(&format!("threads {threads}")), "{md}");
    assert!(md.contains(SMOL) && md.contains("sha256"), "{md}");

    // CSV: a header and one row per result (pp16, tg4, pp16+tg4).
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    for col in [
        "model_sha256",
        "n_threads",
        "n_batch",
        "test",
        "mean_tokens_per_s",
        "ttft_ms",
    ] {
        assert!(header.contains(&col), "{col} missing: {}", lines[0]);
    }

    // JSON: the full document, scrubbed.
    let d: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(d["schema_version"], 1);
    assert_eq!(
        d["runs"][0]["model"]["path"], SMOL,
        "a path becomes its file name"
    );
    // Words, not tokens: measured with the model's tokenizer, and the reply
    // time is TTFT plus 500 words of tokens at the decode speed.
    let w = &d["runs"][0]["what_this_means"];
    let tpw = f(&w["tokens_per_word"]);
    assert!(
        (1.0..3.0).contains(&tpw),
        "English is 1-3 tokens per word: {tpw}"
    );
    // It speaks of this run's own figures: the pp+tg test's decode and TTFT
    // (one request as a reader meets it), as the results report them.
    let result = |test: &str| {
        d["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["test"] == test)
            .unwrap()
            .clone()
    };
    let decode = f(&w["decode_tokens_per_s"]);
    assert_eq!(
        decode,
        f(&result("pp16+tg4")["decode_tokens_per_s"]["mean"])
    );
    assert_eq!(f(&w["ttft_ms"]), f(&result("pp16+tg4")["ttft_ms"]));
    // A word is more than a token, and a reply takes longer than its first token.
    assert!(f(&w["words_per_s"]) < decode);
    assert!(f(&w["reply_500_words_s"]) > 500.0 / decode);
    assert!(f(&w["reply_500_words_s"]) * 1e3 > f(&w["ttft_ms"]));

    // llama-bench's names, and its pp+tg rate: all tokens over the total time.
    let v: serde_json::Value = serde_json::from_str(&lb).unwrap();
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 3);
    for r in recs {
        for k in [
            "model_filename",
            "model_type",
            "model_size",
            "model_n_params",
            "n_batch",
            "n_ubatch",
            "n_threads",
            "n_gpu_layers",
            "n_prompt",
            "n_gen",
            "avg_ns",
            "stddev_ns",
            "avg_ts",
            "stddev_ts",
            "samples_ns",
            "samples_ts",
        ] {
            assert!(r.get(k).is_some(), "{k} missing in {r}");
        }
        let ns = samples(&r["samples_ns"]);
        let ts = samples(&r["samples_ts"]);
        let tokens = f(&r["n_prompt"]) + f(&r["n_gen"]);
        for (n, t) in ns.iter().zip(&ts) {
            assert!((tokens / (n / 1e9) - t).abs() / t < 1e-9);
        }
        let mean = ts.iter().sum::<f64>() / ts.len() as f64;
        assert!((f(&r["avg_ts"]) - mean).abs() / mean < 1e-9);
    }

    // Opting in keeps the path.
    let with = export("json", &["--include-host"]);
    assert!(
        with.contains(&*m.to_string_lossy()),
        "--include-host keeps paths"
    );

    // The list row (the app's Results view) carries the same headline figures
    // as the full document, from its light queries.
    let (rt, store) = store(&s.db());
    let rows = rt.block_on(dyno::report::list::build(&store, 10)).unwrap();
    let row = rows
        .iter()
        .find(|r| r.target.to_string() == run_id)
        .expect("the run is listed");
    let full = &d["runs"][0]["results"];
    assert_eq!(row.pp_test.as_deref(), Some("pp16"));
    // The list's mean comes from a lighter query that may sum the samples in
    // another order, so the last bits of the float can differ.
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs(),
        _ => false,
    };
    assert!(same(row.pp_mean, full[0]["mean_tokens_per_s"].as_f64()));
    assert_eq!(row.tg_test.as_deref(), Some("tg4"));
    assert!(same(row.tg_mean, full[1]["mean_tokens_per_s"].as_f64()));
    assert_eq!(
        (row.kind, row.quant.as_str()),
        (dyno::report::TargetKind::Run, "Q4_1")
    );
    rt.block_on(store.close());

    // A bad id says how to write one.
    let o = dyno().args(["export", "banana"]).output().unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("sweep:3"), "{}", stderr(&o));
}

#[test]
fn compare_matches_tests_of_two_real_runs() {
    let s = Scratch::new();
    let bench = |threads: &str| {
        let o = s.bench(&format!("-p 16 -n 4 -r 3 -t {threads} --json"));
        assert_code(&o, 0);
        json(&o)["runs"][0].clone()
    };
    let (a, b) = (bench("1"), bench("2"));
    let (ia, ib) = (a["run_id"].to_string(), b["run_id"].to_string());
    let o = s.run(&["compare", &ia, &ib, "--json"]);
    assert_code(&o, 0);
    let c = json(&o);
    let tests = c["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{c}");
    for (i, t) in tests.iter().enumerate() {
        // Each side is that run's own figure for that test, as `dyno bench`
        // reported it; and the reported change has the direction of the
        // figures.
        assert_eq!(t["test"], a["results"][i]["test"]);
        let ma = f(&a["results"][i]["mean_tokens_per_s"]);
        let mb = f(&b["results"][i]["mean_tokens_per_s"]);
        assert!((f(&t["a_tokens_per_s"]) - ma).abs() < 1e-9 * ma, "{t}");
        assert!((f(&t["b_tokens_per_s"]) - mb).abs() < 1e-9 * mb, "{t}");
        assert_eq!(f(&t["change_pct"]) > 0.0, mb > ma, "{t}");
        assert_eq!(t["a_reps"], 3);
        let p = f(&t["p_value"]);
        assert!((0.0..=1.0).contains(&p));
        // Two tests: Holm multiplies the smaller p by 2, the larger by 1.
        let adj = f(&t["p_adjusted"]);
        assert!(adj >= p && adj <= (2.0 * p).min(1.0) + 1e-12, "{t}");
        assert_eq!(t["significant"], adj < 0.05);
        // The runs differ in threads: the change is put down to that, openly.
        assert_eq!(t["differs"], serde_json::json!(["threads 1 → 2"]), "{t}");
    }
    assert!(c["method"].as_str().unwrap().contains("Holm"), "{c}");
    assert_eq!(c["unmatched"], serde_json::json!([]));
    let o = s.run(&["compare", &ia, &ib]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("B÷A"), "{}", stdout(&o));
    assert!(stdout(&o).contains("**threads 1 → 2**"), "{}", stdout(&o));
    let o = s.run(&["compare", &ia, "run:999"]);
    assert_code(&o, 2);
}

#[test]
fn import_round_trips_is_idempotent_and_refuses_unknown_schemas() {
    let (a, b) = (Scratch::new(), Scratch::new());
    let o = a.bench("-p 16 -n 4 --pg 16,4 -r 2 --json");
    assert_code(&o, 0);
    let original = json(&o)["runs"][0].clone();
    let file = a.path("shared.json");
    let o = a.run(&[
        "export",
        &original["run_id"].to_string(),
        "--format",
        "json",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_code(&o, 0);

    // Into another database: stored once, however often it is imported.
    let o = b.run(&["import", file.to_str().unwrap()]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("imported 1 run"), "{}", stdout(&o));
    let o = b.run(&["import", file.to_str().unwrap()]);
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("imported 0 run(s)") && stdout(&o).contains("1 were already stored")
    );
    let runs = json(&b.run(&["runs", "--json"]));
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    let imported = &runs["runs"][0];
    assert_eq!(imported["model"]["sha256"], original["model"]["sha256"]);
    for (x, y) in imported["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(original["results"].as_array().unwrap())
    {
        assert_eq!(x["test"], y["test"]);
        let (mx, my) = (f(&x["mean_tokens_per_s"]), f(&y["mean_tokens_per_s"]));
        assert!((mx - my).abs() / my < 1e-6, "{mx} vs {my}");
    }
    assert!(
        (f(&imported["results"][2]["ttft_ms"]) - f(&original["results"][2]["ttft_ms"])).abs()
            < 1e-3
    );
    // Back into the database it came from: already there.
    let o = a.run(&["import", file.to_str().unwrap()]);
    assert!(stdout(&o).contains("imported 0 run(s)"), "{}", stdout(&o));
    // And comparable with a local run.
    let o = b.bench("-p 16 -n 4 -r 2 --json");
    assert_code(&o, 0);
    let local = json(&o)["runs"][0]["run_id"].to_string();
    let c = b.run(&["compare", &imported["run_id"].to_string(), &local, "--json"]);
    assert_code(&c, 0);
    assert_eq!(json(&c)["tests"].as_array().unwrap().len(), 2);

    // A file from a newer Dyno is refused, and says why.
    let text = std::fs::read_to_string(&file).unwrap();
    let newer = a.path("newer.json");
    std::fs::write(
        &newer,
        text.replacen("\"schema_version\": 1", "\"schema_version\": 99", 1),
    )
    .unwrap();
    let o = b.run(&["import", newer.to_str().unwrap()]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("schema 99"), "{}", stderr(&o));
    let junk = a.path("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let o = b.run(&["import", junk.to_str().unwrap()]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("not a Dyno result file"),
        "{}",
        stderr(&o)
    );
}
