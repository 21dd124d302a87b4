//! Server runs beside in-process ones: `dyno compare serve:A serve:B`
//! matches two servers test by test (time to first token as a latency,
//! per-request rates apart from the total), names what differs between
//! them, and refuses to pair a server run with an in-process run; the
//! Results list (`report::list`) carries server runs as rows of their own.

use dyno::report::TargetKind;
use std::time::Duration;

use crate::common::*;
use crate::fake_openai::{FakeOpenAi, Pace};

fn serve_bench(s: &Scratch, url: &str) -> i64 {
    let mut c = s.dyno();
    c.env_remove("DYNO_API_KEY")
        .args(["serve-bench", url])
        .args(argv("-p 32 -n 10 -c 1,2 -r 4 --json"));
    let o = c.output().expect("dyno runs");
    assert_code(&o, 0);
    json(&o)["run_id"].as_i64().expect("a run id")
}

#[test]
fn two_servers_compare_test_by_test_with_latency_and_rates_apart() {
    // B takes four times as long to its first token and twice as long per
    // token: the comparison must say B is slower on each, the right way round.
    let fast = FakeOpenAi::start(Pace::default());
    let slow = FakeOpenAi::start(Pace {
        prefill: Duration::from_millis(120),
        per_token: Duration::from_millis(10),
        ..Pace::default()
    });
    let s = Scratch::new();
    let a = serve_bench(&s, &fast.url);
    let b = serve_bench(&s, &slow.url);
    let (ta, tb) = (format!("serve:{a}"), format!("serve:{b}"));

    let o = s.run(&["compare", &ta, &tb, "--json"]);
    assert_code(&o, 0);
    let c = json(&o);
    assert!(
        c["method"].as_str().unwrap().contains("on the requests"),
        "{c}"
    );
    let tests = c["tests"].as_array().unwrap();
    let find = |test: &str, rate: &str| {
        tests
            .iter()
            .find(|t| t["test"] == test && t["rate"] == rate)
            .unwrap_or_else(|| panic!("no {test} {rate} in {c}"))
    };
    for test in ["pp32+tg10 @d0 c1", "pp32+tg10 @d0 c2"] {
        let ttft = find(test, "ttft");
        assert_eq!(ttft["unit"], "ms");
        assert_eq!(ttft["higher_is_better"], false);
        assert!(ttft["ratio"].as_f64().unwrap() > 2.0, "{ttft}");
        assert_eq!(ttft["a_reps"], 4, "every request is a sample");
        assert!(ttft["p_value"].as_f64().is_some(), "{ttft}");
        let decode = find(test, "decode");
        assert_eq!(decode["unit"], "t/s");
        assert_eq!(decode["higher_is_better"], true);
        assert!(decode["ratio"].as_f64().unwrap() < 0.8, "{decode}");
        // The total over concurrent requests is one figure per test: no
        // test of significance can be made on it.
        let total = find(test, "decode_total");
        assert_eq!(total["a_reps"], 1);
        assert!(total["p_value"].is_null(), "{total}");
        assert!(total["ratio"].as_f64().unwrap() < 0.8, "{total}");
        // Both are "fake-model" on an OpenAI-compatible server: same conditions.
        assert_eq!(ttft["differs"], serde_json::json!([]), "{ttft}");
        assert!(
            ttft["conditions"]
                .as_str()
                .unwrap()
                .contains("prompt cache defeated"),
            "{ttft}"
        );
    }
    assert_eq!(c["unmatched"], serde_json::json!([]), "{c}");

    // The table gives each figure its unit and says which way is better.
    let o = s.run(&["compare", &ta, &tb]);
    assert_code(&o, 0);
    let text = stdout(&o);
    assert!(text.contains(" ms |"), "{text}");
    assert!(
        text.contains("ttft: time to first token, a latency (lower is better)"),
        "{text}"
    );

    // A server run and an in-process run do not pair: the message says what does.
    let o = s.run_line("bench SMOL -p 8 -n 4 -r 1 --json");
    assert_code(&o, 0);
    let run = json(&o)["runs"][0]["run_id"].as_i64().unwrap().to_string();
    let o = s.run(&["compare", &ta, &run]);
    assert_code(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("--engine"), "{err}");

    // The Results list holds both server runs, newest first, with their
    // server and their first test's per-request medians.
    let (rt, store) = store(&s.db());
    let rows = rt.block_on(dyno::report::list::build(&store, 100)).unwrap();
    let served: Vec<_> = rows
        .iter()
        .filter(|r| r.kind == TargetKind::Serve)
        .collect();
    assert_eq!(served.len(), 2, "{rows:?}");
    assert_eq!(served[0].target.to_string(), tb, "newest first");
    for r in &served {
        assert_eq!(r.server.as_deref(), Some("OpenAI-compatible"));
        assert_eq!(r.title, "fake-model");
        assert_eq!(r.tg_test.as_deref(), Some("pp32+tg10 @d0 c1"));
        assert!(
            r.tg_mean.unwrap() > 0.0 && r.pp_mean.unwrap() > 0.0,
            "{r:?}"
        );
    }
    assert!(
        served[1].tg_mean > served[0].tg_mean,
        "the faster server decodes faster"
    );
    assert!(rows.iter().any(|r| r.kind == TargetKind::Run));
}
