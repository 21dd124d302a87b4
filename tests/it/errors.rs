//! Bad input: every case exits with code 2 and one line that names the file
//! and says what to do. Nothing panics and no run is started for a file the
//! header check can reject.

use crate::common::*;

/// Run `dyno bench` on `path` and return its stderr, checking exit code 2.
fn bench_fails(s: &Scratch, path: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec!["bench", path.to_str().unwrap(), "-p", "16", "-n", "4"];
    args.extend_from_slice(extra);
    let o = s.run(&args);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(err.starts_with("error: "), "{err}");
    err
}

#[test]
fn missing_file_directory_and_non_gguf_fail_fast() {
    let s = Scratch::new();
    let missing = s.path("nope.gguf");
    let e = bench_fails(&s, &missing, &[]);
    assert!(e.contains("nope.gguf") && e.contains("not found"), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
    assert!(
        !s.db().exists(),
        "a bad file is rejected before the database is touched"
    );

    let e = bench_fails(&s, s.dir.path(), &[]);
    assert!(e.contains("is a directory"), "{e}");

    let text = s.path("notes.gguf");
    std::fs::write(&text, "these are not weights\n").unwrap();
    let e = bench_fails(&s, &text, &[]);
    assert!(
        e.contains("notes.gguf") && e.contains("not a GGUF file"),
        "{e}"
    );

    let empty = s.path("empty.gguf");
    std::fs::write(&empty, "").unwrap();
    let e = bench_fails(&s, &empty, &[]);
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn truncated_model_is_caught_by_the_header_check() {
    let s = Scratch::new();
    let full = std::fs::read(model(SMOL)).unwrap();
    let cut = s.path("half.gguf");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let e = bench_fails(&s, &cut, &[]);
    assert!(
        e.contains("half.gguf") && e.contains("truncated") && e.contains("download it again"),
        "{e}"
    );
    // A later good model in the same command is not run either: input is
    // checked as a whole before any measuring starts.
    let e = bench_fails(&s, &model(SMOL), &[cut.to_str().unwrap()]);
    assert!(e.contains("half.gguf"), "{e}");
    assert!(!s.db().exists());
}

#[test]
fn unsupported_architecture_is_recorded_and_exits_2() {
    let s = Scratch::new();
    let bytes = with_arch(&std::fs::read(model(SMOL)).unwrap(), b"zzzzz");
    let odd = s.path("odd-arch.gguf");
    std::fs::write(&odd, &bytes).unwrap();

    let o = s.run(&[
        "bench",
        odd.to_str().unwrap(),
        "-p",
        "16",
        "-n",
        "4",
        "-r",
        "1",
        "--json",
    ]);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("odd-arch.gguf") && err.contains("zzzzz"),
        "{err}"
    );
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error_code"], "unsupported_architecture");
    assert!(r["error"].as_str().unwrap().contains("zzzzz"));
}

#[test]
fn bad_options_name_the_option() {
    let s = Scratch::new();
    let m = model(SMOL);
    let e = bench_fails(&s, &m, &["-r", "0"]);
    assert!(e.contains("--reps"), "{e}");
    let e = bench_fails(&s, &m, &["--ctk", "q3_z"]);
    assert!(e.contains("q3_z"), "{e}");
    let e = bench_fails(&s, &m, &["-t", "0"]);
    assert!(e.contains("--threads"), "{e}");
    // -p 0 alone skips the prefill tests, as in llama-bench; nothing left to
    // measure at all is refused.
    let o = s.run(&["bench", m.to_str().unwrap(), "-p", "0", "-n", "0"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("nothing to measure"), "{}", stderr(&o));
    let e = bench_fails(&s, &m, &["-b", "0"]);
    assert!(e.contains("--batch-size"), "{e}");
    // clap's own errors also exit with 2.
    let o = s.run(&["bench", m.to_str().unwrap(), "--pg", "512"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--pg PROMPT,GEN"));
    let o = s.run(&["bench", m.to_str().unwrap(), "--ngl=-5"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--ngl"), "{}", stderr(&o));
    // An unknown level stops a sweep before anything is quantised or run.
    let o = s.run(&[
        "sweep",
        "--from",
        m.to_str().unwrap(),
        "--levels",
        "q4_k_m,Q9_9",
    ]);
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(
        e.contains("unknown quantisation level 'Q9_9'") && e.contains("Q4_K_M"),
        "{e}"
    );
    assert!(
        !e.contains("quantizing"),
        "nothing ran before the refusal: {e}"
    );
    let (rt, store) = store(&s.db());
    assert!(
        rt.block_on(store.runs(10)).unwrap().is_empty(),
        "no run was started"
    );
    rt.block_on(store.close());
}

#[test]
fn unknown_run_is_a_clear_error() {
    let s = Scratch::new();
    let o = s.run(&["show", "999"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("no run 999"), "{}", stderr(&o));
    let o = s.run(&["runs"]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("no runs stored"));
}

#[test]
fn database_that_is_not_sqlite_is_refused_without_damage() {
    let s = Scratch::new();
    let junk = b"definitely not a database, but the user's file".repeat(100);
    std::fs::write(s.db(), &junk).unwrap();
    let o = s.run(&["runs"]);
    assert_code(&o, 1);
    assert!(
        stderr(&o).contains(s.db().to_str().unwrap()),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(s.db()).unwrap(),
        junk,
        "the file is left as it was"
    );
}

/// Little-endian helpers for mutating a real GGUF file in place.
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn a_corpus_of_malformed_models_is_rejected_one_line_each_without_damage() {
    let s = Scratch::new();
    let real = std::fs::read(model(SMOL)).unwrap();
    // A stored run first, to prove bad input never touches what is there.
    let o = s.bench("-p 8 -n 2 -r 1 --no-telemetry");
    assert_code(&o, 0);

    // Where the first tensor's description sits: its name, then n_dims (u32),
    // the dims (u64 each), the type (u32) and the data offset (u64).
    let header = dyno::model::gguf::read_header(&model(SMOL)).unwrap();
    let t0 = &header.tensors[0];
    let mut needle = (t0.name.len() as u64).to_le_bytes().to_vec();
    needle.extend_from_slice(t0.name.as_bytes());
    let name_at = real
        .windows(needle.len())
        .position(|w| w == needle.as_slice())
        .unwrap();
    let dims_at = name_at + needle.len();
    let type_at = dims_at + 4 + 8 * t0.dims.len();
    let offset_at = type_at + 4;
    // The first metadata key's length is at byte 24, its value type after it.
    let key_len = u64::from_le_bytes(real[24..32].try_into().unwrap()) as usize;
    let value_type_at = 32 + key_len;
    // The vocabulary: key, then type 9 (array), item type, item count.
    let vocab_key = b"tokenizer.ggml.tokens";
    let vocab_len_at = real
        .windows(vocab_key.len())
        .position(|w| w == vocab_key)
        .unwrap()
        + vocab_key.len()
        + 8;

    type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Mutation, &str)> = vec![
        ("bad-magic", Box::new(|b| b[0] = b'X'), "not a GGUF file"),
        ("version-99", Box::new(|b| put_u32(b, 4, 99)), "version 99"),
        (
            "tensor-count",
            Box::new(|b| put_u64(b, 8, u64::MAX / 2)),
            "tensors",
        ),
        (
            "kv-count",
            Box::new(|b| put_u64(b, 16, 1 << 40)),
            "metadata entries",
        ),
        (
            "huge-string",
            Box::new(|b| put_u64(b, 24, 1 << 40)),
            "bytes",
        ),
        (
            "huge-array",
            Box::new(move |b| put_u64(b, vocab_len_at, 1 << 40)),
            "1099511627776 strings",
        ),
        (
            "value-type",
            Box::new(move |b| put_u32(b, value_type_at, 77)),
            "unknown value type",
        ),
        (
            "tensor-type",
            Box::new(move |b| put_u32(b, type_at, 1000)),
            "unknown type",
        ),
        (
            "offset-past-end",
            Box::new(move |b| put_u64(b, offset_at, 1 << 50)),
            "ends at byte",
        ),
        (
            "misaligned",
            Box::new(move |b| put_u64(b, offset_at, 3)),
            "misaligned",
        ),
        (
            "truncated-header",
            Box::new(|b| b.truncate(4096)),
            "truncated",
        ),
        (
            "truncated-data",
            Box::new(|b| b.truncate(b.len() - 1)),
            "truncated",
        ),
        (
            "random-bytes",
            Box::new(|b| {
                let mut x = 0x9E37_79B9_7F4A_7C15u64;
                for v in b.iter_mut().take(1 << 20) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *v = x as u8;
                }
                b.truncate(1 << 20);
            }),
            "not a GGUF file",
        ),
    ];
    for (name, mutate, expect) in cases {
        let mut b = real.clone();
        mutate(&mut b);
        let path = s.path(&format!("{name}.gguf"));
        std::fs::write(&path, &b).unwrap();
        let o = s.run(&["bench", path.to_str().unwrap(), "-r", "1"]);
        assert_code(&o, 2);
        let e = stderr(&o);
        assert_eq!(e.trim_end().lines().count(), 1, "{name}: one line: {e}");
        assert!(
            e.contains(&format!("{name}.gguf")) && e.contains(expect),
            "{name}: {e}"
        );
    }
    let dir = s.path("folder.gguf");
    std::fs::create_dir(&dir).unwrap();
    let o = s.run(&["bench", dir.to_str().unwrap()]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("is a directory"));

    let (rt, store) = store(&s.db());
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
    assert_eq!(
        rt.block_on(store.runs(10)).unwrap().len(),
        1,
        "the earlier run is intact, nothing added"
    );
    rt.block_on(store.close());
}

#[test]
fn two_processes_write_one_database_at_once() {
    let s = Scratch::new();
    let args = argv("bench SMOL -p 16,32 -n 4 -r 2 -t 1 --json");
    let a = s
        .dyno()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let b = s
        .dyno()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_code(&oa, 0);
    assert_code(&ob, 0);
    let (ja, jb) = (json(&oa), json(&ob));
    assert_ne!(ja["runs"][0]["run_id"], jb["runs"][0]["run_id"]);
    let (rt, store) = store(&s.db());
    let runs = rt.block_on(store.runs(10)).unwrap();
    assert_eq!(runs.len(), 2);
    for r in &runs {
        assert_eq!(r.status, dyno::vocab::status::RunStatus::Ok);
        assert_eq!(
            rt.block_on(store.results(r.id)).unwrap().len(),
            3,
            "no result lost"
        );
    }
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
    rt.block_on(store.close());
}

#[test]
fn processes_creating_one_database_at_once_all_open_it() {
    // Switching a new database to WAL takes a lock SQLite's busy timeout
    // does not wait for; the loser of that race once failed at once with
    // "database is locked". Race four processes on fresh files many times.
    let s = Scratch::new();
    for round in 0..40 {
        let db = s.path(&format!("race-{round}.db"));
        let kids: Vec<_> = (0..4)
            .map(|_| {
                s.dyno()
                    .args(["--db", db.to_str().unwrap(), "runs", "--json"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for k in kids {
            let o = k.wait_with_output().unwrap();
            assert_code(&o, 0);
            assert_eq!(json(&o)["runs"], serde_json::json!([]), "round {round}");
        }
        let (rt, store) = store(&db);
        assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
        rt.block_on(store.close());
    }
}

#[test]
fn corrupt_weights_give_no_speed() {
    // Structure intact, weights garbage: one layer's F32 norm becomes NaN,
    // so every logit is NaN. Dyno must refuse to report a speed for it.
    let s = Scratch::new();
    let mut b = std::fs::read(model(SMOL)).unwrap();
    let h = dyno::model::gguf::read_header(&model(SMOL)).unwrap();
    let norm = h
        .tensors
        .iter()
        .find(|t| t.name == "blk.0.attn_norm.weight")
        .expect("tensor present");
    assert_eq!(norm.ggml_type, 0, "an F32 tensor");
    let start = (h.data_offset + norm.offset) as usize;
    b[start..start + norm.n_bytes as usize].fill(0xFF); // 0xFFFFFFFF is a NaN
    let path = s.path("nan-weights.gguf");
    std::fs::write(&path, &b).unwrap();
    for extra in [&[][..], &["--no-warmup"][..]] {
        let mut args = vec![
            "bench",
            path.to_str().unwrap(),
            "-p",
            "16",
            "-n",
            "4",
            "-r",
            "2",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = s.run(&args);
        assert_code(&o, 1);
        let j = json(&o);
        for x in j["runs"][0]["results"].as_array().unwrap() {
            assert_eq!(x["status"], "failed", "{extra:?}: {x}");
            assert!(
                x["error"].as_str().unwrap().contains("non-finite logits"),
                "{}",
                x["error"]
            );
            assert!(
                x["mean_tokens_per_s"].is_null(),
                "no speed for garbage: {extra:?} {x}"
            );
        }
    }
}
