//! Issue K5: more parallel sequences than `-b` tokens per batch. One decode
//! step of 64 sequences is 64 tokens, past llama.cpp's `n_batch` of 32,
//! which used to trip its `n_tokens_all <= n_batch` assert and abort the
//! worker. The real binary, llama.cpp and SmolLM2-135M.
//!
//! Kept short (2 + 2 tokens, no warm-up): llama.cpp gives each of the 64
//! sequences at least 256 cells of KV cache, so every chunk attends over
//! 16 K cells and even this takes seconds on two cores.

mod common;

use common::*;

#[test]
fn more_sequences_than_the_batch_size_are_decoded_in_chunks() {
    let s = Scratch::new();
    let model = model(SMOL);
    let o = s.run(&[
        "bench",
        model.to_str().unwrap(),
        "-p",
        "0",
        "-n",
        "0",
        "--npl",
        "64",
        "--npp",
        "2",
        "--ntg",
        "2",
        "-b",
        "32",
        "-r",
        "1",
        "--no-warmup",
        "--json",
    ]);
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
