//! `dyno bench` end to end: the real binary, real llama.cpp, the real
//! SmolLM2-135M and gemma-3-270m models, and a real SQLite file. Also the
//! size column as llama-bench prints it, and more parallel sequences than a
//! batch holds.

use crate::common::*;
use serde_json::Value;

const SMOL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// Summary fields must describe the samples they came with.
fn check_figures(name: &str, fig: &Value, reps: usize) {
    let s = samples(&fig["samples"]);
    assert_eq!(s.len(), reps, "{name}: one sample per repetition");
    assert!(s.iter().all(|x| *x > 0.0 && x.is_finite()), "{name}: {s:?}");
    let (min, max) = (f(&fig["min"]), f(&fig["max"]));
    assert!(
        min <= f(&fig["mean"]) && f(&fig["mean"]) <= max,
        "{name}: mean outside [min, max]"
    );
    assert!(min <= f(&fig["median"]) && f(&fig["median"]) <= max);
    assert!(f(&fig["stddev"]) >= 0.0);
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    assert!(
        (mean - f(&fig["mean"])).abs() < 1e-9 * mean.max(1.0),
        "{name}: mean is not the mean of the samples"
    );
}

#[test]
fn bench_json_has_every_test_figure_and_condition() {
    let s = Scratch::new();
    let model = model(SMOL);
    let o = s.bench("-p 32 -n 8 --pg 16,4 -d 0,16 --npl 2 --npp 8 --ntg 4 -r 2 -t 2 --json");
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["schema_version"], 1);

    let m = &j["machine"];
    assert!(!m["cpu"].as_str().unwrap().is_empty());
    assert!(m["cores"].as_u64().unwrap() >= 1);
    assert!(m["memory_bytes"].as_u64().unwrap() > 1 << 30);
    assert!(m["gpus"].is_array());
    assert!(m["backend"].as_str().is_some());
    assert!(m["llama_cpp_build"]
        .as_str()
        .unwrap()
        .contains("llama-cpp-sys-2"));

    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert!(r["error"].is_null());
    let md = &r["model"];
    assert_eq!(md["sha256"], SMOL_SHA256);
    assert_eq!(md["file_name"], SMOL);
    assert_eq!(md["arch"], "llama");
    assert_eq!(md["quant"], "Q4_1");
    assert_eq!(
        md["size_bytes"].as_u64().unwrap(),
        std::fs::metadata(&model).unwrap().len()
    );
    let n_params = md["n_params"].as_u64().unwrap();
    assert!(
        (130_000_000..140_000_000).contains(&n_params),
        "SmolLM2-135M has {n_params} params"
    );
    let c = &r["config"];
    assert_eq!(c["n_threads"], 2);
    assert_eq!(c["n_batch"], 2048);
    assert_eq!(c["n_ubatch"], 512);
    assert_eq!(c["flash_attn"], "auto");
    assert_eq!(c["cache_type"], "f16");
    assert!(
        c["use_mmap"].is_null(),
        "llama.cpp's automatic load mode by default"
    );
    assert_eq!(c["reps"], 2);
    assert!(c["n_gpu_layers"].as_u64().is_some());
    assert!(f(&r["load_time_ms"]) > 0.0);
    assert!(r["peak_rss_bytes"].as_u64().unwrap() > 50 << 20);

    let results = r["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|x| x["test"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "pp32",
            "tg8",
            "pp16+tg4",
            "pp32@d16",
            "tg8@d16",
            "pp16+tg4@d16",
            "pp8+tg4@npl2"
        ]
    );
    for x in results {
        let name = x["test"].as_str().unwrap();
        assert_eq!(x["status"], "ok", "{name}");
        assert_eq!(x["reps"], 2);
        let headline = serde_json::json!({
            "samples": x["samples_tokens_per_s"], "mean": x["mean_tokens_per_s"],
            "stddev": x["stddev_tokens_per_s"], "median": x["median_tokens_per_s"],
            "min": x["min_tokens_per_s"], "max": x["max_tokens_per_s"],
        });
        check_figures(name, &headline, 2);
        assert!(
            f(&x["ci95_tokens_per_s"]) >= 0.0,
            "{name}: two samples give an interval"
        );
        assert_eq!(x["samples_ns"].as_array().unwrap().len(), 2);
    }
    let by = |n: &str| results.iter().find(|x| x["test"] == n).unwrap();

    assert_eq!(by("pp32")["rate"], "prefill");
    assert_eq!(by("tg8")["rate"], "decode");
    assert_eq!(by("pp32@d16")["n_depth"], 16);
    assert!(
        by("pp32")["ttft_ms"].is_null(),
        "TTFT belongs to pp+tg tests only"
    );

    // pp+tg: prefill and decode apart, TTFT a latency at least as long as the prefill.
    let pg = by("pp16+tg4");
    assert_eq!(pg["rate"], "decode");
    check_figures("pg prefill", &pg["prefill_tokens_per_s"], 2);
    check_figures("pg decode", &pg["decode_tokens_per_s"], 2);
    check_figures("pg ttft", &pg["ttft_stats_ms"], 2);
    let prefill = samples(&pg["prefill_tokens_per_s"]["samples"]);
    let ttft = samples(&pg["ttft_stats_ms"]["samples"]);
    for (p, t) in prefill.iter().zip(&ttft) {
        let prefill_ms = 16.0 / p * 1e3;
        assert!(
            *t >= prefill_ms * (1.0 - 1e-9),
            "TTFT {t} ms shorter than its prefill {prefill_ms} ms"
        );
    }
    assert!((f(&pg["ttft_ms"]) - f(&pg["ttft_stats_ms"]["mean"])).abs() < 1e-9);

    // Parallel: the prefill and total decode rates account for each
    // repetition's whole timed region (llama-bench's samples_ns, taken by a
    // clock of its own): 2 × 8 prompt tokens at the prefill rate plus 2 × 4
    // generated tokens at the total rate is the repetition's time.
    let par = by("pp8+tg4@npl2");
    assert_eq!(par["rate"], "decode_total");
    assert_eq!(par["n_parallel"], 2);
    check_figures("parallel prefill", &par["prefill_tokens_per_s"], 2);
    let total = samples(&par["decode_tokens_per_s"]["samples"]);
    let per_seq = samples(&par["decode_per_sequence_tokens_per_s"]["samples"]);
    let prefill = samples(&par["prefill_tokens_per_s"]["samples"]);
    let whole_ns = samples(&par["samples_ns"]);
    assert_eq!(whole_ns.len(), 2);
    for i in 0..2 {
        let parts_s = 16.0 / prefill[i] + 8.0 / total[i];
        let whole_s = whole_ns[i] / 1e9;
        assert!(
            (parts_s - whole_s).abs() < 0.01 * whole_s + 1e-4,
            "rep {i}: prefill and decode make {parts_s} s of a {whole_s} s region"
        );
        // A sequence shares the batch: it decodes no faster than all of them.
        assert!(
            per_seq[i] < total[i],
            "per sequence {} >= total {}",
            per_seq[i],
            total[i]
        );
    }

    // The same figures are in the database, committed.
    let (rt, store) = store(&s.db());
    let run_id = r["run_id"].as_i64().unwrap();
    let row = rt.block_on(store.run(run_id)).unwrap().unwrap();
    assert_eq!(row.status, dyno::vocab::status::RunStatus::Ok);
    assert_eq!(row.n_threads, 2);
    assert!(row.llama_cpp_build.unwrap().contains("llama-cpp-sys-2"));
    let rows = rt.block_on(store.results(run_id)).unwrap();
    assert_eq!(rows.len(), 7);
    for (row, x) in rows.iter().zip(results) {
        assert_eq!(row.status, dyno::vocab::status::ResultStatus::Ok);
        assert_eq!(row.test, x["test"].as_str().unwrap());
        assert_eq!(row.samples.as_ref().map(Vec::len), Some(2), "{row:?}");
        assert!((row.mean_tokens_per_s.unwrap() - f(&x["mean_tokens_per_s"])).abs() < 1e-9);
    }
    let m = rt.block_on(store.model(row.model_id)).unwrap();
    assert_eq!(m.sha256, SMOL_SHA256);
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
    rt.block_on(store.close());

    // `runs` and `show` read back the same run.
    let o = s.run(&["runs", "--json"]);
    assert_code(&o, 0);
    let listed = json(&o);
    assert_eq!(listed["runs"][0]["run_id"], run_id);
    let o = s.run(&["show", &run_id.to_string(), "--json"]);
    assert_code(&o, 0);
    let shown = json(&o);
    assert_eq!(shown["runs"][0]["results"], r["results"]);
    let o = s.run(&["show", &run_id.to_string()]);
    assert_code(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains(SMOL_SHA256),
        "show names the model's sha256:\n{text}"
    );
    assert!(text.contains("model load"), "{text}");
    assert!(
        text.contains("pp16+tg4 prefill") && text.contains("pp16+tg4 decode"),
        "{text}"
    );
    let o = s.run(&["runs"]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains(SMOL));
}

#[test]
fn context_lists_share_a_load_and_model_lists_reload() {
    let s = Scratch::new();
    let o = s.bench("-p 16 -n 4 -r 1 -t 1,2 --mmap 1,0 --json");
    assert_code(&o, 0);
    let j = json(&o);
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let cfg: Vec<(u64, bool)> = runs
        .iter()
        .map(|r| {
            (
                r["config"]["n_threads"].as_u64().unwrap(),
                r["config"]["use_mmap"]
                    .as_bool()
                    .expect("asked for explicitly"),
            )
        })
        .collect();
    assert_eq!(cfg, [(1, true), (2, true), (1, false), (2, false)]);
    let load: Vec<f64> = runs.iter().map(|r| f(&r["load_time_ms"])).collect();
    assert_eq!(load[0], load[1], "thread counts share one model load");
    assert_eq!(load[2], load[3]);
    assert_ne!(load[0], load[2], "mmap on and off are two loads");
    assert!(runs.iter().all(|r| r["status"] == "ok"));
}

#[test]
fn table_is_llama_bench_shaped_and_db_flag_is_honoured() {
    let s = Scratch::new();
    let db = s.path("flag.db");
    let o = s
        .dyno()
        .env_remove("DYNO_DB")
        .arg("--db")
        .arg(&db)
        .args(argv("bench SMOL -p 16 -n 4 --pg 8,2 -r 1"))
        .output()
        .unwrap();
    assert_code(&o, 0);
    let out = stdout(&o);
    let header = out.lines().next().unwrap();
    for col in [
        "model", "size", "params", "backend", "threads", "ngl", "test", "t/s", "TTFT ms", "load ms",
    ] {
        assert!(header.contains(col), "missing column {col}: {header}");
    }
    // The suite's other tests run beside this one, so a test may read
    // "pp16 (disturbed)" (tests/quiet checks the flag on a quiet machine).
    assert!(out.contains("| pp16 ") && out.contains("| tg4 "), "{out}");
    assert!(
        out.contains("pp8+tg2 prefill") && out.contains("pp8+tg2 decode"),
        "{out}"
    );
    assert!(out.contains(" ± "), "{out}");
    assert!(db.is_file(), "--db names the database file");
    assert!(
        !s.db().exists(),
        "DYNO_DB was not set, nothing else written"
    );
}

#[test]
fn gemma_runs_through_the_same_path() {
    let s = Scratch::new();
    let o = s.run_line("bench GEMMA -p 16 -n 4 -r 2 --json");
    assert_code(&o, 0);
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "ok");
    assert_eq!(r["model"]["arch"], "gemma3");
    assert_eq!(r["model"]["quant"], "Q4_K_M");
    assert_eq!(
        r["model"]["sha256"],
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    );
    assert!(f(&r["results"][1]["mean_tokens_per_s"]) > 0.0);
}

/// The size `dyno bench` prints is llama-bench's: the bytes of the model's
/// tensors, not the file's (which adds the GGUF header and metadata).
#[test]
fn the_gemma_table_shows_the_weight_size_as_llama_bench_does() {
    let s = Scratch::new();
    let o = s.run_line("bench GEMMA -p 8 -n 2 -r 1 --no-telemetry");
    assert_code(&o, 0);
    let table = stdout(&o);
    // llama-bench: "| gemma3 270M Q4_K - Medium | 235.16 MiB | 268.10 M | ..."
    assert!(table.contains(" 235.16 MiB "), "{table}");
    assert!(
        !table.contains("241.39 MiB"),
        "the file size is shown as the size: {table}"
    );
}

/// Issue K5: more parallel sequences than `-b` tokens per batch. One decode
/// step of 64 sequences is 64 tokens, past llama.cpp's `n_batch` of 32,
/// which used to trip its `n_tokens_all <= n_batch` assert and abort the
/// worker.
///
/// Kept short (2 + 2 tokens, no warm-up): llama.cpp gives each of the 64
/// sequences at least 256 cells of KV cache, so every chunk attends over
/// 16 K cells and even this takes seconds on two cores.
#[test]
fn more_sequences_than_the_batch_size_are_decoded_in_chunks() {
    let s = Scratch::new();
    let o = s.bench("-p 0 -n 0 --npl 64 --npp 2 --ntg 2 -b 32 -r 1 --no-warmup --json");
    assert_code(&o, 0);
    let j = json(&o);
    let r = &j["runs"][0];
    assert_eq!(r["status"], "ok", "{r}");
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    let par = &results[0];
    assert_eq!(par["test"], "pp2+tg2@npl64");
    assert_eq!(par["status"], "ok", "{par}");
    assert_eq!(par["n_parallel"], 64);
    let total = samples(&par["decode_tokens_per_s"]["samples"]);
    let per_seq = samples(&par["decode_per_sequence_tokens_per_s"]["samples"]);
    assert_eq!((total.len(), per_seq.len()), (1, 1));
    assert!(per_seq[0] > 0.0 && per_seq[0].is_finite(), "{per_seq:?}");
    assert!(
        (total[0] - 64.0 * per_seq[0]).abs() < 1e-6 * total[0],
        "total {total:?} != 64 x {per_seq:?}"
    );
    let prefill = samples(&par["prefill_tokens_per_s"]["samples"]);
    assert!(prefill[0] > 0.0 && prefill[0].is_finite(), "{prefill:?}");
}

/// `dyno bench --again RUN` (the app's "Measure these again") measures
/// exactly the tests of that run flagged as disturbed, with its setup and
/// repetitions, as a run of its own; the first run and its figures stay.
#[test]
fn again_measures_only_the_flagged_tests_with_the_same_setup() {
    let s = Scratch::new();
    let first = json(&s.bench("-p 16 -n 8 --pg 16,4 -r 2 -t 1 --json"));
    let run_id = first["runs"][0]["run_id"].as_i64().unwrap();
    let verdict = serde_json::json!({
        "disturbed": true,
        "reasons": ["other programs kept 1.5 cores busy"],
        "others_cpu_cores": 1.5,
        "cores_in_use": 1,
        "steal_pct": null,
        "cv": 0.2,
        "processes": []
    });
    // As an imported run: no group, so no stored plan; the repetitions and
    // warm-up must still be the run's own (2, not llama-bench's 5).
    sql(
        &s.db(),
        &format!("UPDATE runs SET sweep_id = NULL WHERE id = {run_id}"),
    );
    // Only these two are flagged, whatever the suite beside this test did
    // to the first run's own verdicts.
    sql(
        &s.db(),
        &format!("UPDATE results SET disturbance_json = NULL WHERE run_id = {run_id}"),
    );
    sql(
        &s.db(),
        &format!(
            "UPDATE results SET disturbance_json = '{verdict}' WHERE run_id = {run_id} AND test IN ('tg8', 'pp16+tg4')"
        ),
    );

    let o = s.run_line(&format!("bench --again {run_id} --json"));
    assert_code(&o, 0);
    let again = json(&o);
    let runs = again["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "one new run: {again}");
    let new = &runs[0];
    assert_ne!(new["run_id"].as_i64().unwrap(), run_id);
    let tests: Vec<&str> = new["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["test"].as_str().unwrap())
        .collect();
    assert_eq!(tests, ["tg8", "pp16+tg4"], "only the flagged tests");
    // The same setup and repetitions as the first run.
    for key in ["n_threads", "n_batch", "n_ubatch"] {
        assert_eq!(new["config"][key], first["runs"][0]["config"][key], "{key}");
    }
    assert_eq!(new["results"][0]["samples_ns"].as_array().unwrap().len(), 2);
    assert_eq!(new["model"]["sha256"], first["runs"][0]["model"]["sha256"]);

    // Both runs are kept: the disturbed figures and the new ones.
    let shown = json(&s.run_line(&format!("show {run_id} --json")));
    assert_eq!(shown["runs"][0]["results"][1]["disturbed"], true);

    // A run with nothing flagged, and one that is not there, say so.
    let new_id = new["run_id"].as_i64().unwrap();
    sql(
        &s.db(),
        &format!("UPDATE results SET disturbance_json = NULL WHERE run_id = {new_id}"),
    );
    let o = s.run_line(&format!("bench --again {new_id}"));
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("has no disturbed test to measure again"),
        "{}",
        stderr(&o)
    );
    let o = s.run_line("bench --again 999");
    assert!(stderr(&o).contains("no run 999"), "{}", stderr(&o));
    // A model path, or a plan, with --again is refused before anything runs:
    // the run's own setup is what is measured again.
    for extra in ["SMOL", "-r 3", "-t 1", "--preset quick"] {
        let o = s.run_line(&format!("bench {extra} --again {run_id}"));
        assert_code(&o, 2);
    }
}
