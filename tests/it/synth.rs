//! `dyno synth`: a real model's header with synthetic weights, written by the
//! real binary and loaded by real llama.cpp.
//!
//! The values are checked where they decide the speed: how widely the
//! quantised blocks' scales spread (docs/method.md, "Synthetic weights").
//! The speed itself is compared loosely in tests/quiet/synth.rs and tightly
//! by a benchmark, `scripts/bench/synth-vs-real.sh`, never a timed test.

use dyno::report::TargetKind;
use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;
use serde_json::Value;

fn synth(s: &Scratch, like: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    s.dyno()
        .arg("synth")
        .arg("--like")
        .arg(like)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("dyno synth runs")
}

/// `twin` is `real`'s twin: the same metadata but for Dyno's
/// `dyno.synthetic.*` label (shape "twin"), the same tensor list with the
/// same offsets, and as many bytes of data. Returns both headers.
fn assert_twin(real: &Path, twin: &Path) -> (dyno::model::gguf::Header, dyno::model::gguf::Header) {
    let (ha, hb) = (
        dyno::model::gguf::read_header(real).unwrap(),
        dyno::model::gguf::read_header(twin).unwrap(),
    );
    let mut rest = hb.metadata.clone();
    rest.retain(|k, _| !k.starts_with("dyno.synthetic."));
    assert_eq!(ha.metadata, rest, "{twin:?}: metadata");
    assert_eq!(hb.get_str("dyno.synthetic.shape"), Some("twin"));
    let tensors = |h: &dyno::model::gguf::Header| {
        h.tensors
            .iter()
            .map(|t| (t.name.clone(), t.dims.clone(), t.ggml_type, t.offset))
            .collect::<Vec<_>>()
    };
    assert_eq!(tensors(&ha), tensors(&hb), "{twin:?}: tensor list");
    assert_eq!(
        ha.file_size - ha.data_offset,
        hb.file_size - hb.data_offset,
        "{twin:?}: data bytes"
    );
    (ha, hb)
}

/// `synth --stats` of the file at `p`: a document per tensor.
fn stats(s: &Scratch, p: &Path) -> Vec<Value> {
    let o = s
        .dyno()
        .args(["synth", "--stats", "--like"])
        .arg(p)
        .output()
        .unwrap();
    assert_code(&o, 0);
    json(&o).as_array().unwrap().clone()
}

/// Mean block-scale spread per tensor role and type.
fn spreads(stats: &[Value]) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for t in stats {
        if t["dims"].as_array().unwrap().len() < 2 {
            continue;
        }
        let key = format!("{} {}", t["role"].as_str().unwrap(), t["ggml_type"]);
        let e = sums.entry(key).or_default();
        e.0 += f(&t["block_scale_spread"]);
        e.1 += 1.0;
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}

fn tps(j: &Value, test: &str) -> f64 {
    let r = j["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["test"].as_str().unwrap().starts_with(test))
        .unwrap_or_else(|| panic!("no {test} result: {j}"));
    f(&r["mean_tokens_per_s"])
}

#[test]
fn a_synthetic_twin_keeps_the_header_and_the_real_scale_spread_and_loads() {
    let s = Scratch::new();
    for name in [SMOL, GEMMA] {
        let real = model(name);
        let out = s.path(&format!("synth-{name}"));
        let o = synth(&s, &real, &out, &["--json"]);
        assert_code(&o, 0);
        let j = json(&o);
        assert_eq!(j["path"].as_str().unwrap(), out.to_str().unwrap());
        // The same metadata and tensor list (the tensors' offsets too), the
        // same amount of data, other data; only Dyno's label is added.
        let (ha, hb) = assert_twin(&real, &out);
        assert_eq!(
            hb.get_str("dyno.synthetic.like"),
            ha.get_str("general.name")
        );
        assert_eq!(hb.get_u64("dyno.synthetic.seed"), Some(1));
        let (a, b) = (std::fs::read(&real).unwrap(), std::fs::read(&out).unwrap());
        let (at, bt) = (ha.data_offset as usize, hb.data_offset as usize);
        assert_ne!(a[at..], b[bt..]);
        assert!(b[bt..].iter().filter(|&&x| x != 0).count() > (b.len() - bt) / 2);
        assert_eq!(f(&j["stats"]["file_bytes"]) as usize, b.len());
        // A twin of a twin carries one label, not two.
        let again = s.path(&format!("synth-again-{name}"));
        assert_code(&synth(&s, &out, &again, &["--seed", "2"]), 0);
        let hc = dyno::model::gguf::read_header(&again).unwrap();
        assert_eq!(
            hc.metadata.len(),
            hb.metadata.len(),
            "{name}: labels replaced"
        );
        assert_eq!(hc.get_u64("dyno.synthetic.seed"), Some(2));
        std::fs::remove_file(&again).unwrap();
        // The scales spread as the real model's do, role by role (the
        // measured spreads are 0.3 to 0.75 in log2; all-zero data gives 0,
        // random bytes over 5).
        let (real_stats, twin_stats) = (stats(&s, &real), stats(&s, &out));
        let (want, got) = (spreads(&real_stats), spreads(&twin_stats));
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>()
        );
        for (k, w) in &want {
            let g = got[k];
            assert!(
                (g - w).abs() < 0.2,
                "{name} {k}: spread {g:.2}, real {w:.2}"
            );
        }
        // The largest matrix, which the file repeats a pool of, touches
        // about as many lines of ggml's f16 table as the real one: repeated
        // as it was, SmolLM2's touched 173 of the real 274 and decoded 2-4%
        // fast; each copy rescaled to fresh row factors, 255.
        let lines = |st: &[Value]| {
            let t = st
                .iter()
                .find(|t| t["name"] == "token_embd.weight")
                .unwrap();
            f(&t["scale_table_lines"])
        };
        let (lw, lg) = (lines(&real_stats), lines(&twin_stats));
        assert!(
            lw > 100.0 && lg > 0.75 * lw,
            "{name}: {lg} table lines, real {lw}"
        );
        // And over every tensor, which takes the tails within rows: drawn
        // normal, gemma-3's twin touched 0.81 of the real file's lines;
        // with rare outliers in the draw, 0.88 (SmolLM2's 0.97).
        let all = |st: &[Value]| st.iter().map(|t| f(&t["scale_table_lines"])).sum::<f64>();
        let (aw, ag) = (all(&real_stats), all(&twin_stats));
        assert!(ag > 0.85 * aw, "{name}: {ag} table lines in all, real {aw}");
        // Real llama.cpp loads and measures it (the speed against the real
        // file is tests/quiet/synth.rs's, which has the machine to itself).
        let o = s
            .dyno()
            .arg("bench")
            .arg(&out)
            .args(argv("-p 16 -n 4 -r 1 --json"))
            .output()
            .unwrap();
        assert_code(&o, 0);
        let j = json(&o);
        assert!(tps(&j, "tg4") > 0.0);
        // Its figures are never shown as the real model's: the run, its
        // table, its list row and its CSV say what the weights stand for.
        let label = format!("twin of {}, seed 1", ha.get_str("general.name").unwrap());
        assert_eq!(j["runs"][0]["model"]["synthetic"], label.as_str(), "{name}");
        let run_id = j["runs"][0]["run_id"].as_i64().unwrap();
        let shown = stdout(&s.run_line(&format!("show {run_id}")));
        assert!(shown.contains("(synthetic)"), "{shown}");
        assert!(
            shown.contains(&format!("synthetic weights (synth-{name}): {label}.")),
            "{shown}"
        );
        let csv = stdout(&s.run_line(&format!("export {run_id} --format csv")));
        assert!(csv.contains(&label), "{csv}");
        let (rt, store) = crate::common::store(&s.db());
        let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
        let row = rows
            .iter()
            .find(|r| r.id == run_id && r.kind == TargetKind::Run)
            .unwrap();
        assert_eq!(row.synthetic.as_deref(), Some(label.as_str()));
        rt.block_on(store.close());
    }
    // The real file's run carries no label.
    let o = s.bench("-p 16 -n 4 -r 1 --json");
    assert_code(&o, 0);
    assert!(json(&o)["runs"][0]["model"].get("synthetic").is_none());
}

#[test]
fn the_same_seed_writes_the_same_bytes_and_another_seed_others() {
    let s = Scratch::new();
    let [a, b, c] = ["a", "b", "c"].map(|n| s.path(&format!("{n}.gguf")));
    assert_code(&synth(&s, &model(GEMMA), &a, &["--seed", "5"]), 0);
    assert_code(&synth(&s, &model(GEMMA), &b, &["--seed", "5"]), 0);
    assert_code(&synth(&s, &model(GEMMA), &c, &["--seed", "6"]), 0);
    let [a, b, c] = [a, b, c].map(|p| std::fs::read(p).unwrap());
    assert!(a == b, "one seed, two files");
    assert!(a != c, "two seeds, one file");
}

#[test]
fn bad_input_gives_a_clear_error_and_leaves_nothing() {
    let s = Scratch::new();
    let real = std::fs::read(model(SMOL)).unwrap();
    let out = s.path("out.gguf");
    let nothing_left = |s: &Scratch| {
        let left: Vec<_> = std::fs::read_dir(s.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("out"))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    };

    // A header that claims more data than the file has.
    let cut = s.path("cut.gguf");
    std::fs::write(&cut, &real[..real.len() / 2]).unwrap();
    let o = synth(&s, &cut, &out, &[]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
    nothing_left(&s);

    // A tensor of a type Dyno cannot write (I8, which ggml cannot quantise
    // to): token_embd's type field follows its name, dimension count and
    // two dimensions.
    let mut odd = real.clone();
    let name = b"token_embd.weight";
    let at = odd
        .windows(name.len())
        .position(|w| w == name)
        .expect("token_embd in the header")
        + name.len();
    assert_eq!(u32::from_le_bytes(odd[at..at + 4].try_into().unwrap()), 2);
    let ty = at + 4 + 16;
    assert_eq!(u32::from_le_bytes(odd[ty..ty + 4].try_into().unwrap()), 8);
    odd[ty..ty + 4].copy_from_slice(&24u32.to_le_bytes());
    let odd_path = s.path("odd-type.gguf");
    std::fs::write(&odd_path, &odd).unwrap();
    let o = synth(&s, &odd_path, &out, &[]);
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(e.contains("token_embd.weight") && e.contains("I8"), "{e}");
    nothing_left(&s);

    // An architecture this llama.cpp build does not know ("llama" renamed
    // "zzzzz", same length): llama.cpp refuses the header before a weight
    // is written, and the message names the architecture.
    let alien_path = s.path("alien.gguf");
    std::fs::write(&alien_path, with_arch(&real, b"zzzzz")).unwrap();
    let o = synth(&s, &alien_path, &out, &[]);
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(e.contains("does not know the architecture 'zzzzz'"), "{e}");
    nothing_left(&s);

    // An output that exists is kept unless --force.
    std::fs::write(&out, b"mine").unwrap();
    let o = synth(&s, &model(SMOL), &out, &[]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"mine");
    let o = synth(&s, &model(SMOL), &out, &["--force"]);
    assert_code(&o, 0);
    assert_eq!(&std::fs::read(&out).unwrap()[..4], b"GGUF");
    std::fs::remove_file(&out).unwrap();

    // A disk too small for the file: refused before writing, naming sizes.
    let small = s.path("small");
    let mut c = s.dyno();
    c.arg("synth")
        .arg("--like")
        .arg(model(SMOL))
        .arg("-o")
        .arg(small.join("out.gguf"));
    let (o, left) = on_small_disk(&c, &small, "20m");
    assert_code(&o, 2);
    let e = stderr(&o);
    assert!(e.contains("free") && e.contains("MiB"), "{e}");
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Every K-quant level Dyno writes has, tensor by tensor, the type
/// llama.cpp's own quantizer (llama-quantize's code) gives it. The sources
/// are F16 files whose rows are all whole K blocks (256 wide), 16 layers
/// deep so that the rules by depth (the first sixteenth, eighth, the "more
/// bits" layers) all come into play: with 4 query heads per KV head (Llama
/// 3's grouping), with none, and with 8 experts (Mixtral's rules).
#[test]
fn a_k_level_has_the_types_llama_quantize_gives() {
    use dyno::model::{gguf, reshape, synth};
    let s = Scratch::new();
    // Routes llama.cpp's log away from the test's output (the quantizer
    // prints a line per tensor); the quantizer itself needs no backend.
    let _ = dyno::engine::init();
    for (i, shape) in [
        "layers=16,embd=256,ff=512,heads=4,heads_kv=1",
        "layers=16,embd=256,ff=512,heads=4,heads_kv=4",
        "layers=16,embd=256,ff=512,heads=4,heads_kv=1,experts=8",
    ]
    .iter()
    .enumerate()
    {
        let src = s.path(&format!("f16-{i}.gguf"));
        let o = synth(&s, &model(SMOL), &src, &["--shape", shape, "--type", "F16"]);
        assert_code(&o, 0);
        for name in [
            "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",
        ] {
            let level = reshape::level(name).unwrap();
            let req = reshape::ShapeRequest {
                spec: "layers=16".into(),
                level: Some(name.into()),
            };
            let ours = synth::prepare(&src, None, Some(&req), &reshape::Origin::seed(1))
                .unwrap_or_else(|e| panic!("{shape} {name}: {e:?}"))
                .header;
            let out = s.path(&format!("{i}-{name}.gguf"));
            dyno::engine::llama::quantize(&src, &out, level.ftype, 2, false).unwrap();
            let theirs = gguf::read_header(&out).unwrap();
            let type_of = |h: &gguf::Header| -> BTreeMap<String, &'static str> {
                h.tensors
                    .iter()
                    .map(|t| (t.name.clone(), gguf::ggml_type_name(t.ggml_type)))
                    .collect()
            };
            assert_eq!(type_of(&ours), type_of(&theirs), "{shape} {name}");
            assert_eq!(
                ours.get_u64("general.file_type"),
                theirs.get_u64("general.file_type"),
                "{shape} {name}"
            );
            std::fs::remove_file(&out).unwrap();
        }
    }
}

#[test]
fn a_resized_header_has_the_published_sizes_and_loads_in_llama_cpp() {
    let s = Scratch::new();
    let smol = model(SMOL);
    let dry = |shape: &str, ty: &str| {
        let o = s
            .dyno()
            .args(["synth", "--dry-run", "--json", "--like"])
            .arg(&smol)
            .args(["--shape", shape, "--type", ty])
            .output()
            .unwrap();
        assert_code(&o, 0);
        let j = json(&o);
        assert!(j["stats"].is_null(), "a dry run writes nothing: {j}");
        (
            (f(&j["n_params"]) / 1e7).round() / 100.0,
            (f(&j["weight_bytes"]) / (1u64 << 30) as f64 * 100.0).round() / 100.0,
        )
    };
    // llama-bench's own tables print these two as "llama 7B Q4_0 3.56 GiB
    // 6.74 B" and "llama 8B Q4_0 4.33 GiB 8.03 B": the shapes, the output
    // layer's Q6_K and the vocabulary (shrunk to 32000, grown to 128256)
    // all match what llama-quantize writes.
    assert_eq!(dry("llama-2-7b", "Q4_0"), (6.74, 3.56));
    assert_eq!(dry("llama-3.1-8b", "q4_0"), (8.03, 4.33));
    // The K-quant levels Dyno knows the rules of, from SmolLM2's Q4_1
    // header, against llama-bench's "llama 8B Q4_K - Medium 4.58 GiB",
    // "Q5_K - Medium 5.33 GiB", "Q6_K 6.14 GiB" and "Q8_0 7.95 GiB".
    assert_eq!(dry("llama-3.1-8b", "Q4_K_M"), (8.03, 4.58));
    assert_eq!(dry("llama-3.1-8b", "Q5_K_M"), (8.03, 5.33));
    assert_eq!(dry("llama-3.1-8b", "Q6_K"), (8.03, 6.14));
    assert_eq!(dry("llama-3.1-8b", "Q8_0"), (8.03, 7.95));
    assert!(!s
        .path("SmolLM2-135M-Instruct.llama-2-7b-Q4_0.synth.gguf")
        .exists());
    // Resized to its own shape, a mixed level keeps every tensor's type; to
    // a deeper model, each layer takes the types of the layer at the same
    // depth: Gemma 3 1B's Q4_K_M comes out as llama-bench prints it,
    // "762.49 MiB, 999.89 M".
    let gemma = |shape: &str| {
        let o = s
            .dyno()
            .args(["synth", "--dry-run", "--json", "--like"])
            .arg(model(GEMMA))
            .args(["--shape", shape])
            .output()
            .unwrap();
        assert_code(&o, 0);
        let j = json(&o);
        (f(&j["n_params"]) as u64, f(&j["weight_bytes"]) as u64)
    };
    let real = dyno::model::gguf::read_header(&model(GEMMA)).unwrap();
    assert_eq!(
        gemma("layers=18").1,
        real.tensors.iter().map(|t| t.n_bytes).sum::<u64>()
    );
    let (p, b) = gemma("gemma-3-1b");
    assert_eq!(
        (
            (p as f64 / 1e4).round() / 100.0,
            (b as f64 / 1048576.0 * 100.0).round() / 100.0
        ),
        (999.89, 762.49)
    );

    // A small file of the 8B model's kind (untied output, 128256 tokens, a
    // head size llama.cpp must be told) loads in real llama.cpp, which
    // checks every tensor's shape against the metadata.
    let out = s.path("small-8b-kind.gguf");
    let o = synth(
        &s,
        &smol,
        &out,
        &[
            "--shape",
            "llama-3.1-8b,layers=2,embd=512,ff=1024,heads=8,heads_kv=2",
            "--type",
            "Q4_0",
            "--json",
        ],
    );
    assert_code(&o, 0);
    let h = dyno::model::gguf::read_header(&out).unwrap();
    let meta = |k: &str| h.metadata.get(k).cloned();
    assert_eq!(h.get_u64("llama.embedding_length"), Some(512));
    assert_eq!(h.get_u64("llama.attention.key_length"), Some(128));
    assert!(matches!(
        meta("tokenizer.ggml.tokens"),
        Some(dyno::model::gguf::Value::Array { len: 128256, .. })
    ));
    assert!(h
        .get_str("dyno.synthetic.like")
        .is_some_and(|n| !n.is_empty()));
    assert_eq!(
        h.get_str("dyno.synthetic.shape"),
        Some("llama-3.1-8b,layers=2,embd=512,ff=1024,heads=8,heads_kv=2 Q4_0")
    );
    let ty = |n: &str| {
        let t = h.tensors.iter().find(|t| t.name == n).unwrap();
        (
            t.dims.clone(),
            dyno::model::gguf::ggml_type_name(t.ggml_type),
        )
    };
    assert_eq!(ty("output.weight"), (vec![512, 128256], "Q6_K"));
    assert_eq!(ty("blk.1.attn_k.weight"), (vec![512, 256], "Q4_0"));
    assert_eq!(ty("blk.1.attn_output.weight"), (vec![1024, 512], "Q4_0"));
    assert_eq!(ty("blk.1.ffn_norm.weight"), (vec![512], "F32"));
    let o = s
        .dyno()
        .arg("bench")
        .arg(&out)
        .args(argv("-p 16 -n 4 -r 1 --json"))
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    assert!(tps(&j, "tg4") > 0.0);
    assert_eq!(j["runs"][0]["model"]["n_layers"], 2);
    assert_eq!(j["runs"][0]["model"]["quant"], "Q4_0");
    // Its run is a real timing of that shape, so predict counts it, and
    // says that the model it counted is a synthetic shape.
    let o = s
        .dyno()
        .arg("predict")
        .arg(&smol)
        .arg("--json")
        .output()
        .unwrap();
    assert_code(&o, 0);
    let basis = &json(&o)["levels"][0]["prediction"]["decode_basis"];
    assert_eq!(basis["source"], "machine", "{basis}");
    assert!(
        basis["text"].as_str().unwrap().starts_with(
            "from 1 run of 1 model on this machine (a synthetic shape, dyno synth --shape)"
        ),
        "{basis}"
    );

    // A template can travel as its header alone: the front of the file, as a
    // .gguf-header (the GPU kit carries SmolLM2's so).
    let front = s.path("smol.gguf-header");
    std::fs::write(&front, &std::fs::read(&smol).unwrap()[..4 << 20]).unwrap();
    let o = synth(
        &s,
        &front,
        &s.path("from-front.gguf"),
        &["--shape", "layers=2"],
    );
    assert_code(&o, 0);
    assert_eq!(
        dyno::model::gguf::read_header(&s.path("from-front.gguf"))
            .unwrap()
            .get_u64("llama.block_count"),
        Some(2)
    );
    std::fs::write(&front, &std::fs::read(&smol).unwrap()[..100_000]).unwrap();
    let o = synth(&s, &front, &s.path("no.gguf"), &[]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("head -c 8M"), "{}", stderr(&o));

    // What cannot be made is refused, naming what to change.
    let refused = |extra: &[&str], want: &str| {
        let o = synth(&s, &smol, &s.path("no.gguf"), extra);
        assert_code(&o, 2);
        let e = stderr(&o);
        assert!(e.contains(want), "{extra:?}: {e}");
        assert!(!s.path("no.gguf").exists());
    };
    refused(&["--shape", "gemma-3-1b"], "give a gemma3 file");
    refused(&["--shape", "llama-9b"], "llama-3.1-8b");
    refused(&["--type", "IQ2_XS"], "Q4_K_M");
    refused(&["--shape", "embd=600"], "does not split into 9 heads");
    refused(&["--shape", "vocab=1"], "beyond a vocabulary of 1");
}

#[test]
fn a_dense_template_makes_a_mixture_of_experts_that_llama_cpp_loads_and_routes() {
    let s = Scratch::new();
    let smol = model(SMOL);
    // Mixtral's published size, as llama-bench prints it ("llama 8x7B ...
    // 46.70 B"), from SmolLM2's dense header.
    let o = s
        .dyno()
        .args(["synth", "--dry-run", "--json", "--like"])
        .arg(&smol)
        .args(["--shape", "mixtral-8x7b", "--type", "Q4_0"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!((f(&json(&o)["n_params"]) / 1e7).round() / 100.0, 46.7);

    // A small mixture: 8 experts, 2 per token.
    let out = s.path("small-moe.gguf");
    let o = synth(
        &s,
        &smol,
        &out,
        &[
            "--shape",
            "layers=2,embd=256,ff=512,heads=4,heads_kv=2,experts=8",
            "--type",
            "Q4_K_M",
            "--json",
        ],
    );
    assert_code(&o, 0);
    let written = json(&o);
    let h = dyno::model::gguf::read_header(&out).unwrap();
    assert_eq!(h.get_u64("llama.expert_count"), Some(8));
    assert_eq!(h.get_u64("llama.expert_used_count"), Some(2));
    let ty = |n: &str| {
        h.tensors.iter().find(|t| t.name == n).map(|t| {
            (
                t.dims.clone(),
                dyno::model::gguf::ggml_type_name(t.ggml_type),
            )
        })
    };
    assert_eq!(ty("blk.1.ffn_gate_inp.weight"), Some((vec![256, 8], "F32")));
    assert_eq!(
        ty("blk.1.ffn_up_exps.weight"),
        Some((vec![256, 512, 8], "Q4_K"))
    );
    // Q4_K_M's extra bits for ffn_down (in the last of 2 layers) reach the
    // experts' down matrices.
    assert_eq!(
        ty("blk.1.ffn_down_exps.weight"),
        Some((vec![512, 256, 8], "Q6_K"))
    );
    assert_eq!(
        ty("blk.0.ffn_down_exps.weight"),
        Some((vec![512, 256, 8], "Q4_K"))
    );
    // Its routers spread a 64-token decode (random tokens, as llama-bench's
    // tg) over more than half of the experts in every layer, as trained
    // routers do; made-up ones that picked the same two would decode too
    // fast. The synthesiser decoded the file it wrote to say so.
    let r = &written["stats"]["routing"];
    assert_eq!(
        (r["n_expert"].as_u64(), r["n_used"].as_u64()),
        (Some(8), Some(2)),
        "{r}"
    );
    // 64 tokens, unless the check's 20 s ran out first: on a loaded
    // machine (another test's threads on the same two cores) it decoded
    // 58 once.
    let tokens = r["tokens"].as_u64().unwrap();
    assert!((16..=64).contains(&tokens), "{r}");
    let reached: Vec<u64> = r["per_layer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(reached.len(), 2, "{r}");
    assert!(reached.iter().all(|&n| n > 4 && n <= 8), "{r}");
    // Every token counted once per layer, with its two experts.
    for layer in r["counts"].as_array().unwrap() {
        let sum: u64 = layer
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(sum, tokens * 2, "{r}");
    }
    assert!(
        f(&r["busiest"]) >= 1.0 && f(&r["busiest_even"]) > 1.0,
        "{r}"
    );

    // The same count for any mixture, as for a real file beside its twin:
    // more tokens, so chance spreads the load less.
    let o = s
        .dyno()
        .args(["synth", "--routing", "128", "--json", "--like"])
        .arg(&out)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let again = json(&o);
    assert_eq!(again["n_expert"].as_u64(), Some(8), "{again}");
    assert_eq!(again["counts"].as_array().map(Vec::len), Some(2), "{again}");
    let o = s
        .dyno()
        .args(["synth", "--routing", "--like"])
        .arg(&smol)
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("no routers to count"), "{}", stderr(&o));
    assert_eq!(ty("blk.0.ffn_up.weight"), None);
    // llama.cpp loads it (checking every tensor against the metadata),
    // counts the same parameters, and routes tokens through the experts.
    let o = s
        .dyno()
        .arg("bench")
        .arg(&out)
        .args(argv("-p 16 -n 4 -r 1 --json"))
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    assert!(tps(&j, "tg4") > 0.0 && tps(&j, "pp16") > 0.0, "{j}");
    assert_eq!(j["runs"][0]["model"]["n_params"], written["n_params"]);

    // A count of experts per token needs experts to choose from.
    let o = synth(
        &s,
        &smol,
        &s.path("no.gguf"),
        &["--shape", "experts_used=2"],
    );
    assert_code(&o, 2);
    assert!(stderr(&o).contains("needs experts="), "{}", stderr(&o));
}

/// A fake hub with one repo, `org/smol-GGUF`, whose one level is SmolLM2's
/// Q4_1 file.
fn smol_hub() -> crate::fake_hub::FakeHub {
    use crate::fake_hub::{Body, FakeHub, RepoSpec};
    FakeHub::start(vec![RepoSpec {
        id: "org/smol-GGUF".into(),
        files: vec![("smol-Q4_1.gguf".into(), Body::File(model(SMOL)))],
        gated_token: None,
        downloads: 1,
        likes: 0,
    }])
}

#[test]
fn a_hub_level_is_synthesised_from_its_header_alone() {
    let s = Scratch::new();
    let hub = smol_hub();
    let out = s.path("from-hub.gguf");
    let o = s
        .hub_dyno(&hub.url)
        .args(["synth", "--like", "org/smol-GGUF:q4_1", "--json", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["source"], "org/smol-GGUF:q4_1");
    let fetched = j["header_bytes_fetched"].as_u64().unwrap();
    // The twin is the real file's header (labelled) with synthetic data of
    // its size, from a small share of it: only ranged requests touched it.
    let real_len = std::fs::metadata(model(SMOL)).unwrap().len();
    assert_twin(&model(SMOL), &out);
    assert!(fetched > 0 && fetched < real_len / 10, "{fetched}");
    assert!(hub
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/resolve/"))
        .all(|r| r.range.is_some()));

    // Resized from the same header, now from the cache: nothing fetched.
    let o = s
        .hub_dyno(&hub.url)
        .args([
            "synth",
            "--like",
            "org/smol-GGUF:Q4_1",
            "--shape",
            "layers=2",
            "--json",
        ])
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["header_bytes_fetched"], 0);
    assert!(
        s.path("org-smol-GGUF-Q4_1.layers_2.synth.gguf").is_file(),
        "{j}"
    );

    // A level the repo does not have, or none named: what to type instead.
    for (like, want) in [
        ("org/smol-GGUF:Q8_0", "it has Q4_1"),
        ("org/smol-GGUF", "org/smol-GGUF:Q4_K_M"),
    ] {
        let o = s
            .hub_dyno(&hub.url)
            .args(["synth", "--like", like, "-o"])
            .arg(s.path("no.gguf"))
            .output()
            .unwrap();
        assert_code(&o, 2);
        assert!(stderr(&o).contains(want), "{like}: {}", stderr(&o));
    }
}

/// Bytes the fake hub served of the model files, from the ranges asked.
fn bytes_served(hub: &crate::fake_hub::FakeHub) -> u64 {
    hub.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.contains("/resolve/"))
        .map(|r| {
            let range = r.range.as_deref().expect("only ranged reads of a model");
            let (a, b) = range
                .trim_start_matches("bytes=")
                .split_once('-')
                .expect("a closed range");
            b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1
        })
        .sum()
}

/// `dyno bench OWNER/NAME:LEVEL --shape-only` and `dyno sweep --repo
/// --shape-only`: a hub level measured on this machine from its header
/// alone, labelled with the hub file and its sha256, the stand-in deleted
/// afterwards, and no quality taken from synthetic weights.
#[test]
fn a_hub_level_is_measured_by_its_shape_before_downloading_it() {
    let s = Scratch::new();
    let hub = smol_hub();
    let real_len = std::fs::metadata(model(SMOL)).unwrap().len();
    let sha = hub.sha256("org/smol-GGUF", "smol-Q4_1.gguf");
    let synth_dir = s.path("cache").join("synth");
    let twins = || {
        std::fs::read_dir(&synth_dir)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_else(|_| Vec::new())
    };
    let plan = ["-p", "16", "-n", "4", "-r", "1", "--json"];

    // Without --shape-only, a hub level is not a file: the two ways on.
    let o = s
        .hub_dyno(&hub.url)
        .args(["bench", "org/smol-GGUF:Q4_1"])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("dyno hub pull org/smol-GGUF --quant Q4_1")
            && stderr(&o).contains("--shape-only"),
        "{}",
        stderr(&o)
    );
    assert!(hub.requests().iter().all(|r| !r.path.contains("/resolve/")));

    let o = s
        .hub_dyno(&hub.url)
        .args(["bench", "org/smol-GGUF:Q4_1", "--shape-only"])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    let run = &j["runs"][0];
    let label = run["model"]["synthetic"].as_str().expect("labelled");
    assert!(
        label.contains(&format!(
            "org/smol-GGUF/smol-Q4_1.gguf, sha256 {}",
            &sha[..12]
        )),
        "{label}"
    );
    assert!(tps(&j, "pp16") > 0.0 && tps(&j, "tg4") > 0.0, "{run}");
    assert!(
        run["load_time_ms"].is_null(),
        "a twin's load is not the file's"
    );
    let served = bytes_served(&hub);
    assert!(
        served > 0 && served < real_len / 20,
        "{served} of {real_len}"
    );
    let err = stderr(&o);
    assert!(
        err.contains("its shape measured with synthetic weights"),
        "{err}"
    );
    assert!(err.contains("deleted"), "{err}");
    assert!(twins().is_empty(), "{:?}", twins());

    // `predict` counts the twin's run as the hub file's own, and says so.
    let o = s
        .hub_dyno(&hub.url)
        .args(["predict", "org/smol-GGUF:Q4_1", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let p = json(&o);
    let basis = &p["levels"][0]["prediction"]["decode_basis"];
    assert_eq!(basis["model_seen"], true, "{p}");
    assert_eq!(basis["by_shape"], true, "{p}");
    assert!(
        basis["text"]
            .as_str()
            .unwrap()
            .contains("measured by its shape"),
        "{basis}"
    );

    // The table says what the figures are, and what is left out.
    let id = run["run_id"].to_string();
    let o = s.hub_dyno(&hub.url).args(["show", &id]).output().unwrap();
    assert_code(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("(synthetic)") && out.contains("quality is not measured"),
        "{out}"
    );

    // --keep keeps it, from the cached header: nothing more is fetched.
    let o = s
        .hub_dyno(&hub.url)
        .args(["bench", "org/smol-GGUF:Q4_1", "--shape-only", "--keep"])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(bytes_served(&hub), served);
    assert!(stderr(&o).contains("header was cached"), "{}", stderr(&o));
    assert_eq!(twins().len(), 1, "{:?}", twins());
    let kept = synth_dir.join(&twins()[0]);

    // A sweep of the repo's levels by shape: nothing downloaded, no quality.
    let o = s
        .hub_dyno(&hub.url)
        .args([
            "sweep",
            "--repo",
            "org/smol-GGUF",
            "--levels",
            "Q4_1",
            "--shape-only",
        ])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    let level = &j["sweep"]["levels"][0];
    assert_eq!(level["status"], "ok", "{level}");
    assert!(
        level["quality_error"].is_null(),
        "quality is not asked: {level}"
    );
    assert!(j["sweep"]["levels"][0]["run_ids"][0].as_i64().is_some());
    assert!(
        stderr(&o).contains("nothing is downloaded"),
        "{}",
        stderr(&o)
    );
    assert_eq!(bytes_served(&hub), served, "the header was cached");
    assert!(kept.is_file(), "a file kept before stays");

    // A sweep of a synthetic file asked for quality records why there is none.
    let o = s
        .hub_dyno(&hub.url)
        .args(["sweep", "--files"])
        .arg(&kept)
        .args(["--quality-tokens", "512"])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    let q = j["sweep"]["levels"][0]["quality_error"]
        .as_str()
        .unwrap_or_default();
    assert!(q.contains("synthetic"), "{}", j["sweep"]["levels"][0]);
}

/// A level split into parts, as large models are on the hub: every part's
/// header is read, and the twin is one file with the first part's metadata
/// and every part's tensors, so it has the unsplit file's metadata and
/// tensor list, and llama.cpp loads and measures it.
#[test]
fn a_split_level_is_measured_by_its_shape_as_one_file() {
    use crate::fake_hub::{Body, FakeHub, RepoSpec};
    let s = Scratch::new();
    let real = std::fs::read(model(SMOL)).unwrap();
    let parts = split_in_two(&real);
    let names = [
        "smol-Q4_1-00001-of-00002.gguf",
        "smol-Q4_1-00002-of-00002.gguf",
    ];
    // The parts are a model llama.cpp loads from its first file, as it
    // loads gguf-split's.
    for (name, bytes) in names.iter().zip(&parts) {
        std::fs::write(s.path(name), bytes).unwrap();
    }
    let o = s
        .dyno()
        .arg("bench")
        .arg(s.path(names[0]))
        .args(["-p", "16", "-n", "4", "-r", "1", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    // What is recorded is the whole model's, not its first part's.
    let whole = dyno::model::inspect(&model(SMOL)).unwrap();
    let m = &json(&o)["runs"][0]["model"];
    assert_eq!(m["n_params"], whole.n_params, "{m}");
    assert_eq!(m["weight_bytes"], whole.weight_bytes, "{m}");
    // The second part alone, or the first without the second, says what to do.
    let o = s
        .dyno()
        .arg("bench")
        .arg(s.path(names[1]))
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("give its first part"), "{}", stderr(&o));
    // And a split file is a template for a twin like any other.
    let local = s.path("local-twin.gguf");
    let o = s
        .dyno()
        .args(["synth", "--like"])
        .arg(s.path(names[0]))
        .arg("-o")
        .arg(&local)
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_twin(&model(SMOL), &local);

    let hub = FakeHub::start(vec![RepoSpec {
        id: "org/split-GGUF".into(),
        files: names
            .iter()
            .zip(parts)
            .map(|(n, b)| (n.to_string(), Body::Bytes(b)))
            .collect(),
        gated_token: None,
        downloads: 1,
        likes: 0,
    }]);
    let out = s.path("joined.gguf");
    let o = s
        .hub_dyno(&hub.url)
        .args(["synth", "--like", "org/split-GGUF:Q4_1", "--json", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let fetched = json(&o)["header_bytes_fetched"].as_u64().unwrap();
    assert!(fetched > 0 && fetched < real.len() as u64 / 10, "{fetched}");
    let (_, twin) = assert_twin(&model(SMOL), &out);
    let sha = hub.sha256("org/split-GGUF", names[0]);
    assert_eq!(
        twin.get_str("dyno.synthetic.source"),
        Some(format!("org/split-GGUF/{} sha256 {sha}", names[0]).as_str())
    );

    let o = s
        .hub_dyno(&hub.url)
        .args(["bench", "org/split-GGUF:Q4_1", "--shape-only"])
        .args(["-p", "16", "-n", "4", "-r", "1", "--json"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    assert!(tps(&j, "pp16") > 0.0 && tps(&j, "tg4") > 0.0, "{j}");
    assert!(stderr(&o).contains("header was cached"), "{}", stderr(&o));

    std::fs::remove_file(s.path(names[1])).unwrap();
    let o = s
        .dyno()
        .arg("bench")
        .arg(s.path(names[0]))
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("is not beside it; download every part"),
        "{}",
        stderr(&o)
    );
}

/// The app's "Synthetic model…" form goes through `app::synth::synth_file`:
/// the same checks and sizes as `dyno synth`, and a level it cannot write
/// refused with the ones it can.
#[test]
fn the_apps_form_describes_a_shape_and_refuses_what_it_cannot_write() {
    use dyno::app::synth::{DefaultPlace, SynthInput};
    use dyno::worker::client::Cancel;
    let synth_file = |i: &SynthInput| {
        let i = i.clone();
        async move {
            dyno::app::synth::synth_file(
                None,
                &i,
                DefaultPlace::Cache,
                &Cancel::default(),
                |_, _| {},
            )
            .await
        }
    };
    let s = Scratch::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let input = |level: &str| SynthInput {
        like: model(SMOL).display().to_string(),
        shape: Some("llama-3.1-8b".into()),
        level: Some(level.into()),
        out: Some(s.path("8b.gguf")),
        dry_run: true,
        ..SynthInput::default()
    };
    let o = rt.block_on(synth_file(&input("Q4_K_M"))).unwrap();
    assert_eq!(o.shape.as_deref(), Some("llama-3.1-8b Q4_K_M"));
    assert_eq!((o.n_params as f64 / 1e7).round() / 100.0, 8.03);
    assert_eq!(
        (o.weight_bytes as f64 / (1u64 << 30) as f64 * 100.0).round() / 100.0,
        4.58
    );
    assert!(o.stats.is_none() && !s.path("8b.gguf").exists());
    let e = rt
        .block_on(synth_file(&input("IQ2_XS")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("Q4_K_M") && e.contains("Q8_0"), "{e}");
    // No template: a llama shape comes from Dyno's built-in header, the
    // same size as from SmolLM2's; a gemma shape, or no shape, is refused.
    let built_in = rt
        .block_on(synth_file(&SynthInput {
            like: " ".into(),
            ..input("Q4_K_M")
        }))
        .unwrap();
    assert_eq!(built_in.source, dyno::app::synth::BUILTIN_SOURCE);
    assert_eq!(
        (built_in.n_params, built_in.weight_bytes),
        (o.n_params, o.weight_bytes)
    );
    let e = rt
        .block_on(synth_file(&SynthInput {
            like: " ".into(),
            shape: Some("gemma-3-1b".into()),
            ..input("Q4_0")
        }))
        .unwrap_err()
        .to_string();
    assert!(e.contains("give a gemma3 file as --like"), "{e}");
    let e = rt
        .block_on(synth_file(&SynthInput {
            like: " ".into(),
            shape: None,
            ..input("Q4_0")
        }))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("choose the GGUF file") && e.contains("llama-3.1-8b"),
        "{e}"
    );
    // A path typed by hand is never replaced; one the save dialog asked
    // about comes with `replace` (writing it needs a worker, which `dyno
    // synth --force` shows above).
    std::fs::write(s.path("8b.gguf"), b"mine").unwrap();
    let e = rt
        .block_on(synth_file(&SynthInput {
            dry_run: false,
            ..input("Q4_0")
        }))
        .unwrap_err();
    assert!(matches!(e, dyno::error::DynoError::Exists(_)), "{e}");
    assert_eq!(std::fs::read(s.path("8b.gguf")).unwrap(), b"mine");
    // Named by default: the template, the shape and the level.
    assert_eq!(
        dyno::app::synth::default_name(
            "/m/SmolLM2-135M-Instruct.Q4_1.gguf",
            Some("llama-3.1-8b"),
            Some("Q4_K_M")
        ),
        "SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf"
    );
    assert_eq!(
        dyno::app::synth::default_name("org/Llama-3.2-1B-GGUF:Q8_0", None, None),
        "org-Llama-3.2-1B-GGUF-Q8_0.synth.gguf"
    );
    // The app's Save as… offers the same name, with the level as the
    // form's list spells it whatever the case typed.
    assert_eq!(
        dyno::app::synth::suggested_name(&SynthInput {
            like: " /m/SmolLM2-135M-Instruct.Q4_1.gguf ".into(),
            shape: Some("llama-3.1-8b".into()),
            level: Some("q4_k_m".into()),
            ..SynthInput::default()
        }),
        "SmolLM2-135M-Instruct.Q4_1.llama-3.1-8b-Q4_K_M.synth.gguf"
    );
    let names = dyno::app::synth::options();
    assert!(names
        .shapes
        .iter()
        .any(|p| p.name == "llama-3.1-8b" && p.arch == "llama"));
    assert!(names.levels.contains(&"Q4_K_M".to_string()));
}

/// With no model and no network, the named llama shapes are written from
/// Dyno's built-in header: `dyno synth --shape` without `--like`, `dyno
/// bench --shape-only SHAPE:LEVEL` and `dyno sweep --shape`. The hub points
/// at a closed port, so anything that reached for it would fail.
#[test]
fn the_built_in_header_measures_a_named_shape_with_no_model_and_no_network() {
    let s = Scratch::new();
    let offline = || {
        let mut c = s.hub_dyno("http://127.0.0.1:9");
        c.current_dir(s.dir.path());
        c
    };
    let dry = |like: Option<&Path>, shape: &str, ty: &str| {
        let mut c = offline();
        c.args([
            "synth",
            "--dry-run",
            "--json",
            "--shape",
            shape,
            "--type",
            ty,
        ]);
        if let Some(l) = like {
            c.arg("--like").arg(l);
        }
        let o = c.output().unwrap();
        assert_code(&o, 0);
        let j = json(&o);
        (f(&j["n_params"]) as u64, f(&j["weight_bytes"]) as u64)
    };
    // The sizes llama-bench prints for the real files ("llama 7B Q4_0
    // 3.56 GiB 6.74 B", "llama 8B Q4_K - Medium 4.58 GiB 8.03 B"), and
    // those of SmolLM2's header resized alike, for every llama shape.
    let gib = |(p, b): (u64, u64)| {
        (
            (p as f64 / 1e7).round() / 100.0,
            (b as f64 / (1u64 << 30) as f64 * 100.0).round() / 100.0,
        )
    };
    assert_eq!(gib(dry(None, "llama-2-7b", "Q4_0")), (6.74, 3.56));
    assert_eq!(gib(dry(None, "llama-3.1-8b", "Q4_K_M")), (8.03, 4.58));
    let smol = model(SMOL);
    for shape in [
        "smollm2-360m",
        "llama-3.2-1b",
        "llama-3.2-3b",
        "mixtral-8x7b",
    ] {
        assert_eq!(
            dry(None, shape, "Q4_K_M"),
            dry(Some(&smol), shape, "Q4_K_M"),
            "{shape}"
        );
    }

    // Written, the tensor list is the one SmolLM2's header gives, tensor by
    // tensor (name, shape, type, offset): only the tokenizer differs.
    let write = |like: Option<&Path>, out: &str| {
        let mut c = offline();
        c.args(["synth", "--shape", "smollm2-360m", "--type", "Q4_0", "-o"])
            .arg(s.path(out));
        if let Some(l) = like {
            c.arg("--like").arg(l);
        }
        let o = c.output().unwrap();
        assert_code(&o, 0);
        dyno::model::gguf::read_header(&s.path(out)).unwrap()
    };
    let built_in = write(None, "built-in.gguf");
    let from_smol = write(Some(&smol), "from-smol.gguf");
    let list = |h: &dyno::model::gguf::Header| {
        h.tensors
            .iter()
            .map(|t| (t.name.clone(), t.dims.clone(), t.ggml_type, t.offset))
            .collect::<Vec<_>>()
    };
    let (mut a, mut b) = (list(&built_in), list(&from_smol));
    a.sort();
    b.sort();
    assert_eq!(a, b);
    // And the tensor data are byte for byte the same: the same seed draws the
    // same values for the same tensor list, whichever header it came from.
    let data = |p: &Path, h: &dyno::model::gguf::Header| {
        let mut b = std::fs::read(p).unwrap();
        b.drain(..h.data_offset as usize);
        b
    };
    assert!(
        data(&s.path("built-in.gguf"), &built_in) == data(&s.path("from-smol.gguf"), &from_smol),
        "the data sections differ"
    );
    std::fs::remove_file(s.path("from-smol.gguf")).unwrap();

    // llama.cpp loads and measures it, labelled as from the built-in header.
    let plan = ["-p", "16", "-n", "4", "-r", "1", "--json"];
    let o = offline()
        .args(["bench", "smollm2-360m:Q4_0", "--shape-only"])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    let label = j["runs"][0]["model"]["synthetic"]
        .as_str()
        .expect("labelled");
    assert!(
        label.contains("smollm2-360m Q4_0 from Dyno's built-in llama header"),
        "{label}"
    );
    assert!(tps(&j, "tg4") > 0.0, "{j}");
    assert!(
        stderr(&o).contains("nothing was downloaded"),
        "{}",
        stderr(&o)
    );
    // Without --shape-only, a named shape is not taken for a missing file.
    let o = offline()
        .args(["bench", "smollm2-360m:Q4_0"])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--shape-only"), "{}", stderr(&o));

    // A sweep of the shape's levels: each one labelled, no quality, the
    // files deleted afterwards.
    let o = offline()
        .args(["sweep", "--shape", "smollm2-360m", "--levels", "Q8_0,Q4_0"])
        .args(plan)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    assert_eq!(j["sweep"]["source_kind"], "shape", "{}", j["sweep"]);
    let levels = j["sweep"]["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{}", j["sweep"]);
    for l in levels {
        assert_eq!(l["status"], "ok", "{l}");
        assert!(l["quality_error"].is_null(), "{l}");
    }
    for r in j["runs"].as_array().unwrap() {
        let label = r["model"]["synthetic"].as_str().unwrap_or_default();
        assert!(label.contains("built-in llama header"), "{r}");
    }
    let left: Vec<_> = std::fs::read_dir(s.path("cache").join("synth"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".synth.gguf"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
