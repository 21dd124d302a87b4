//! A synthetic twin against its real file, loosely: both test models, two
//! alternated rounds, the median ratio within 0.6–1.6. The tight check (2%,
//! with intervals) is the benchmark scripts/bench/synth-vs-real.sh; this one
//! catches a synthesiser that has gone badly wrong (sparse zeros, random
//! bytes, a broken layout) in CI. It needs the machine to itself: in the
//! `it` binary other tests' processes made the ratio 3.

use std::path::Path;

use crate::common::*;

fn rates(s: &Scratch, p: &Path) -> (f64, f64) {
    let o = s
        .dyno()
        .arg("bench")
        .arg(p)
        .args(argv("-p 64 -n 32 -r 2 --json"))
        .output()
        .unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    let get = |test: &str| {
        j["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["test"] == test)
            .map(|r| f(&r["mean_tokens_per_s"]))
            .unwrap_or_else(|| panic!("no {test}: {j}"))
    };
    (get("pp64"), get("tg32"))
}

#[test]
fn a_synthetic_twin_measures_near_its_real_file() {
    let _q = crate::quiet();
    let s = Scratch::new();
    for name in [SMOL, GEMMA] {
        let real = model(name);
        let twin = s.path(&format!("twin-{name}"));
        let o = s
            .dyno()
            .args(["synth", "--like"])
            .arg(&real)
            .arg("-o")
            .arg(&twin)
            .output()
            .unwrap();
        assert_code(&o, 0);
        let mut ratios = (Vec::new(), Vec::new());
        for _ in 0..2 {
            let (rp, rt) = rates(&s, &real);
            let (yp, yt) = rates(&s, &twin);
            ratios.0.push(yp / rp);
            ratios.1.push(yt / rt);
        }
        for (test, mut r) in [("pp64", ratios.0), ("tg32", ratios.1)] {
            r.sort_by(f64::total_cmp);
            let median = (r[0] + r[1]) / 2.0;
            assert!(
                (0.6..1.6).contains(&median),
                "{name} {test}: synthetic ÷ real = {r:?}"
            );
        }
    }
}
