//! `dyno synth`: a real model's header with synthetic weights, written by the
//! real binary and loaded by real llama.cpp.
//!
//! The values are checked where they decide the speed: how widely the
//! quantised blocks' scales spread (docs/method.md, "Synthetic weights").
//! The speed itself is compared loosely in tests/quiet/synth.rs and tightly
//! by a benchmark, `scripts/bench/synth-vs-real.sh`, never a timed test.

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

fn data_offset(p: &Path) -> u64 {
    dyno::model::gguf::read_header(p).unwrap().data_offset
}

/// Mean block-scale spread per tensor role and type, from `synth --stats`.
fn spreads(s: &Scratch, p: &Path) -> BTreeMap<String, f64> {
    let o = s
        .dyno()
        .args(["synth", "--stats", "--like"])
        .arg(p)
        .output()
        .unwrap();
    assert_code(&o, 0);
    let mut sums: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for t in json(&o).as_array().unwrap() {
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
        // Byte for byte up to the data, the same size, other data.
        let (a, b) = (std::fs::read(&real).unwrap(), std::fs::read(&out).unwrap());
        assert_eq!(a.len(), b.len());
        let at = data_offset(&real) as usize;
        assert_eq!(a[..at], b[..at], "{name}: the header differs");
        assert_ne!(a[at..], b[at..]);
        assert!(b[at..].iter().filter(|&&x| x != 0).count() > (b.len() - at) / 2);
        assert_eq!(f(&j["stats"]["file_bytes"]) as usize, b.len());
        // The scales spread as the real model's do, role by role (the
        // measured spreads are 0.3 to 0.75 in log2; all-zero data gives 0,
        // random bytes over 5).
        let (want, got) = (spreads(&s, &real), spreads(&s, &out));
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
        assert!(tps(&json(&o), "tg4") > 0.0);
    }
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

    // An output that exists is kept unless --force.
    std::fs::write(&out, b"mine").unwrap();
    let o = synth(&s, &model(SMOL), &out, &[]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"mine");
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
