//! Offload controls end to end: the real binary, real llama.cpp, the real
//! SmolLM2 model, real SQLite files.
//!
//! The CPU tests run in every build. The `vulkan` module runs when the crate
//! is built with `--features vulkan`, which `scripts/test/vulkan.sh` does on a
//! machine without a GPU through Mesa's software Vulkan driver (lavapipe, named
//! with `GGML_VK_VISIBLE_DEVICES=0`, as llama.cpp skips CPU-type devices otherwise):
//! there, layers really run on a Vulkan device, and llama.cpp's own load
//! report must say so.

use crate::common::*;
use serde_json::Value;

fn smol() -> String {
    model(SMOL).to_str().unwrap().to_string()
}

/// A short bench: two tests, two repetitions.
fn bench(s: &Scratch, extra: &[&str]) -> std::process::Output {
    let m = smol();
    let mut args = vec![
        "bench",
        m.as_str(),
        "-p",
        "32",
        "-n",
        "8",
        "-r",
        "2",
        "--json",
    ];
    args.extend_from_slice(extra);
    s.run(&args)
}

fn runs(o: &std::process::Output) -> Vec<Value> {
    json(o)["runs"].as_array().unwrap().clone()
}

fn decode(run: &Value) -> f64 {
    let tg = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "gen")
        .expect("a tg result");
    f(&tg["decode_tokens_per_s"]["mean"])
}

#[test]
fn kv_offload_is_a_context_setting_swept_in_one_load_and_recorded() {
    let s = Scratch::new();
    let o = bench(&s, &["--nkvo", "0,1", "--sm", "none"]);
    assert_code(&o, 0);
    let rs = runs(&o);
    assert_eq!(rs.len(), 2, "one run per KV offload setting");
    let nkvo: Vec<bool> = rs
        .iter()
        .map(|r| r["config"]["no_kv_offload"].as_bool().unwrap())
        .collect();
    assert_eq!(nkvo, [false, true]);
    for r in &rs {
        assert_eq!(r["status"], "ok");
        assert_eq!(r["config"]["split_mode"], "none");
        assert!(decode(r) > 0.0);
        // llama.cpp's load report is stored: the weights' buffers add up
        // to the model, and on a CPU build they are all CPU buffers.
        let bufs = r["offload"]["buffers"].as_array().unwrap();
        let total: u64 = bufs.iter().map(|b| b["bytes"].as_u64().unwrap()).sum();
        assert!(total > 90_000_000 && total < 200_000_000, "{bufs:?}");
        if !dyno_has_gpu(r) {
            assert!(
                bufs.iter()
                    .all(|b| b["name"].as_str().unwrap().starts_with("CPU")),
                "{bufs:?}"
            );
        }
    }
    // Both runs came from one model load (one worker): the same load time.
    assert_eq!(rs[0]["load_time_ms"], rs[1]["load_time_ms"]);
    let table = stdout(&s.run(&["show", &rs[1]["run_id"].to_string()]));
    assert!(table.contains("KV cache on the CPU"), "{table}");
    assert!(table.contains("split none"), "{table}");
}

#[test]
fn an_unknown_device_is_refused_naming_the_devices_there_are() {
    let s = Scratch::new();
    let o = bench(&s, &["--device", "Nonesuch0"]);
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(e.contains("no backend device named 'Nonesuch0'"), "{e}");
    assert!(e.contains("CPU"), "the message lists what exists: {e}");
    let r = &runs(&o)[0];
    assert_eq!(r["error_code"], "unknown_device");
}

/// A small mixture of experts (2 layers of 4 experts, 2 per token), written
/// by `dyno synth` from SmolLM2's header: real llama.cpp loads and routes it.
fn small_moe(s: &Scratch) -> String {
    let out = s.path("moe.gguf");
    let o = s.run(&[
        "synth",
        "--like",
        &smol(),
        "--shape",
        "layers=2,embd=256,ff=512,heads=4,heads_kv=2,experts=4",
        "--type",
        "Q4_0",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_code(&o, 0);
    out.to_str().unwrap().to_string()
}

#[test]
fn expert_placement_is_swept_recorded_and_written_as_llama_bench_writes_it() {
    let s = Scratch::new();
    let m = small_moe(&s);
    let o = s.run(&[
        "bench",
        &m,
        "-p",
        "16",
        "-n",
        "4",
        "-r",
        "1",
        "--n-cpu-moe",
        "0,2",
        "--override-tensor",
        "attn_q=CPU",
        "--json",
    ]);
    assert_code(&o, 0);
    let rs = runs(&o);
    assert_eq!(rs.len(), 2, "one load per expert placement");
    assert!(rs[0]["config"].get("n_cpu_moe").is_none(), "{}", rs[0]);
    assert_eq!(rs[1]["config"]["n_cpu_moe"], 2);
    // llama.cpp's own report says the patterns matched: attn_q of both
    // layers, then also the 3 expert tensors of each of the 2 layers.
    assert_eq!(rs[0]["offload"]["tensors_overridden"], 2, "{}", rs[0]);
    assert_eq!(rs[1]["offload"]["tensors_overridden"], 8, "{}", rs[1]);
    for r in &rs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["config"]["tensor_overrides"], "attn_q=CPU");
        assert!(decode(r) > 0.0);
    }
    // A decode step of this mixture reads the shared weights and 2 of each
    // layer's 4 experts, not every weight.
    let tg = rs[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "gen")
        .unwrap();
    let per_step = f(&tg["decode_bytes_per_s"]) / decode(&rs[0]);
    let weights = f(&rs[0]["model"]["weight_bytes"]);
    assert!(
        per_step > 0.5 * weights && per_step < 0.95 * weights,
        "{per_step} bytes a step of {weights}"
    );
    let id = rs[1]["run_id"].to_string();
    let table = stdout(&s.run(&["show", &id]));
    assert!(
        table.contains("n_cpu_moe") && table.contains("attn_q=CPU"),
        "llama-bench's columns: {table}"
    );
    assert!(table.contains("experts of 2 layers on the CPU"), "{table}");
    let lb: Value = serde_json::from_str(&stdout(&s.run(&[
        "export",
        &id,
        "--format",
        "llama-bench-json",
    ])))
    .unwrap();
    assert_eq!(lb[0]["n_cpu_moe"], 2, "{lb}");
    assert_eq!(lb[0]["tensor_buft_overrides"], "attn_q=CPU");

    // A buffer type that does not exist is refused, naming those that do.
    let o = s.run(&[
        "bench",
        &m,
        "-p",
        "16",
        "-n",
        "4",
        "-r",
        "1",
        "--ot",
        "exps=Nonesuch0",
        "--json",
    ]);
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(e.contains("no buffer type named 'Nonesuch0'"), "{e}");
    assert!(e.contains("CPU"), "the message lists what exists: {e}");
    // A pattern that is not a regular expression fails llama.cpp's load; the
    // error names the pattern and is the option's fault, not the file's.
    let o = s.run(&[
        "bench",
        &m,
        "-p",
        "16",
        "-n",
        "4",
        "-r",
        "1",
        "--ot",
        "blk\\.(0=CPU",
        "--json",
    ]);
    assert_code(&o, 2);
    let r = &runs(&o)[0];
    assert_eq!(r["error_code"], "bad_override", "{r}");
    let e = r["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("'blk\\.(0' in --override-tensor is not a regular expression"),
        "{e}"
    );
    // --fit places tensors itself, so it cannot be given with them.
    let o = s.run(&["bench", &m, "--fit", "--n-cpu-moe", "1"]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("--fit places the tensors itself"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn device_none_runs_on_the_cpu_and_fit_records_its_choice() {
    let s = Scratch::new();
    let o = bench(&s, &["--device", "none"]);
    assert_code(&o, 0);
    let r = &runs(&o)[0];
    assert_eq!(r["config"]["devices"], serde_json::json!([]));
    assert_eq!(r["config"]["n_gpu_layers"], 0);

    let o = bench(&s, &["--fit=256"]);
    assert_code(&o, 0);
    let r = &runs(&o)[0];
    assert_eq!(r["config"]["fit_margin_mib"], 256);
    let fit = &r["offload"]["fit"];
    assert_eq!(fit["margin_mib"], 256, "{r}");
    assert!(
        fit["n_gpu_layers"].is_i64(),
        "what the fit chose is stored: {fit}"
    );
    assert!(decode(r) > 0.0);
    let o = bench(&s, &["--fit", "--ngl", "4"]);
    assert_code(&o, 2);
}

#[test]
fn an_ngl_range_plans_one_load_per_layer_count() {
    let s = Scratch::new();
    let m = smol();
    // A CPU build offloads nothing whatever is asked, so every run records
    // 0 layers on the GPU and there is no offload curve to draw.
    let o = s.run(&[
        "bench", &m, "-p", "16", "-n", "4", "-r", "1", "--ngl", "0-8+4", "--json",
    ]);
    assert_code(&o, 0);
    let rs = runs(&o);
    let asked: Vec<Value> = rs
        .iter()
        .map(|r| r["config"]["n_gpu_layers_requested"].clone())
        .collect();
    assert_eq!(asked, [0, 4, 8].map(Value::from));
    let gpu = dyno_has_gpu(&rs[0]);
    if !gpu {
        assert!(rs.iter().all(|r| r["config"]["n_gpu_layers"] == 0));
        assert!(json(&o).get("offload_sweep").is_none());
    }
    // Three loads: three load times measured on their own.
    assert!(rs.iter().all(|r| f(&r["load_time_ms"]) > 0.0));
}

/// Whether the run's worker saw an offload-capable GPU device.
fn dyno_has_gpu(run: &Value) -> bool {
    run["offload"]["layers_total"].is_u64()
}

#[cfg(feature = "vulkan")]
mod vulkan {
    use super::*;

    #[test]
    fn layers_run_on_the_vulkan_device_and_the_offload_sweep_shows_it() {
        let s = Scratch::new();
        let m = smol();
        let o = s.run(&["hw"]);
        assert_code(&o, 0);
        let hw = stdout(&o);
        assert!(
            hw.contains("device Vulkan0"),
            "dyno hw lists the Vulkan device: {hw}"
        );

        let o = s.run(&[
            "bench", &m, "-p", "64", "-n", "16", "-r", "2", "--ngl", "0,16,99", "--json",
        ]);
        assert_code(&o, 0);
        let doc = json(&o);
        let rs = doc["runs"].as_array().unwrap();
        assert_eq!(rs.len(), 3);
        for r in rs {
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["backend"], "Vulkan");
            assert!(decode(r) > 0.0);
        }
        let on_gpu = |r: &Value| -> u64 {
            r["offload"]["buffers"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["name"].as_str().unwrap().starts_with("Vulkan"))
                .map(|b| b["bytes"].as_u64().unwrap())
                .sum()
        };
        // SmolLM2 has 30 layers plus the output layer: llama.cpp's own
        // count, and weights in a Vulkan buffer, prove where they ran.
        assert_eq!(rs[0]["offload"]["layers_offloaded"], 0);
        assert_eq!(rs[1]["offload"]["layers_offloaded"], 16);
        assert_eq!(rs[2]["offload"]["layers_offloaded"], 31);
        assert_eq!(rs[2]["config"]["n_gpu_layers"], 31);
        assert_eq!(on_gpu(&rs[0]), 0);
        assert!(on_gpu(&rs[1]) > 0 && on_gpu(&rs[1]) < on_gpu(&rs[2]));
        assert!(on_gpu(&rs[2]) > 50_000_000, "{}", rs[2]["offload"]);

        let sweep = &doc["offload_sweep"][0];
        let layers: Vec<u64> = sweep["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["n_gpu_layers"].as_u64().unwrap())
            .collect();
        assert_eq!(layers, [0, 16, 31]);
        let table = stdout(&s.run(&["show", &rs[2]["run_id"].to_string()]));
        assert!(table.contains("31/31 layers on the GPU"), "{table}");
        assert!(
            table.contains("offload sweep:"),
            "a run of the sweep shows the curve: {table}"
        );
    }

    #[test]
    fn fit_chooses_layers_for_the_vulkan_device_and_device_none_keeps_them_off() {
        let s = Scratch::new();
        let o = bench(&s, &["--fit=128"]);
        assert_code(&o, 0);
        let r = &runs(&o)[0];
        let chose = r["offload"]["fit"]["n_gpu_layers"].as_i64().unwrap();
        assert!(chose != 0, "lavapipe has room for SmolLM2: {r}");
        assert!(r["offload"]["layers_offloaded"].as_u64().unwrap() > 0);

        let o = bench(&s, &["--device", "none", "--ngl", "99"]);
        assert_code(&o, 0);
        let r = &runs(&o)[0];
        assert_eq!(
            r["offload"]["layers_offloaded"].as_u64().unwrap_or(0),
            0,
            "{r}"
        );
    }
}
