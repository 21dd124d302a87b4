//! The result card of a server run: `dyno export serve:ID --format
//! png|svg` after a real `serve-bench` against the fake server
//! (tests/fixtures/fake_openai.rs), checked as a viewer sees it.

use crate::common::*;
use crate::fake_openai::{FakeOpenAi, Pace};

/// A rate as the card writes it: three significant figures.
fn card_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn p50(r: &serde_json::Value, measure: &str) -> f64 {
    r["summary"][measure]["p50"]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {measure} p50 in {r}"))
}

#[test]
fn a_server_run_exports_a_card_with_its_figures_and_conditions() {
    // llama-like: the server names its model file by a path with folders,
    // which the card must not show unless asked.
    let server = FakeOpenAi::start(Pace {
        llama_like: true,
        ..Pace::default()
    });
    let s = Scratch::new();
    let mut c = s.dyno();
    c.env_remove("DYNO_API_KEY")
        .args(["serve-bench", &server.url])
        .args(argv("-p 24 -n 8 -d 0,32 -c 1,2 -r 2 --json"));
    let o = c.output().unwrap();
    assert_code(&o, 0);
    let j = json(&o);
    let target = format!("serve:{}", j["run_id"]);

    // Both formats write, the PNG decodes at 1200×630 and is not blank,
    // the SVG parses.
    let svg = check_card(&s, &target, || s.dyno());
    for want in [
        "llama-server b0-fake · fake.gguf",
        "concurrency 1, 2 · 2 requests per test",
        "context depth 0, 32 tokens",
        "prompt 24 · generate 8 tokens",
        "prompt cache defeated",
        "4 slots · 4096-token context per slot",
        "PER REQUEST",
        "ALL REQUESTS",
        "FIRST TOKEN",
        ">@d32 c2</text>",
    ] {
        assert!(svg.contains(want), "{want:?} missing from\n{svg}");
    }
    // Each test's own figures: per-request decode and total output, apart.
    for r in j["results"].as_array().unwrap() {
        let decode = card_num(p50(r, "decode_tokens_per_s"));
        let total = card_num(r["summary"]["total_output_tokens_per_s"].as_f64().unwrap());
        assert!(
            svg.contains(&format!(">{decode}</text>")),
            "{decode}\n{svg}"
        );
        assert!(
            svg.contains(&format!(">{total}</text>"))
                || svg.contains(&format!(">{total} ◆</text>")),
            "{total}\n{svg}"
        );
    }
    // The endpoint as the document has it (loopback names only this
    // machine), and no folder of the model's path.
    assert!(svg.contains(&format!("endpoint {}", j["endpoint"].as_str().unwrap())));
    assert!(!svg.contains("/models/"), "{svg}");

    // Asked for, the path is there.
    let path = s.path("host.svg");
    let o = s.run(&[
        "export",
        &target,
        "--format",
        "svg",
        "--include-host",
        "-o",
        &path.to_string_lossy(),
    ]);
    assert_code(&o, 0);
    let shown = std::fs::read_to_string(&path).unwrap();
    assert!(shown.contains("/models/fake.gguf"), "{shown}");

    // llama-bench's JSON has no place for a server's requests: refused,
    // with the formats that work.
    let o = s.run(&["export", &target, "--format", "llama-bench-json"]);
    assert_code(&o, 2);
    assert!(
        stderr(&o).contains("md, csv, json, png or svg"),
        "{}",
        stderr(&o)
    );
}
