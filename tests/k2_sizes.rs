//! The size `dyno bench` prints is llama-bench's: the bytes of the model's
//! tensors, not the file's (which adds the GGUF header and metadata).

mod common;

use common::*;

#[test]
fn the_gemma_table_shows_the_weight_size_as_llama_bench_does() {
    let s = Scratch::new();
    let m = model(GEMMA);
    let o = s.run(&[
        "bench",
        m.to_str().unwrap(),
        "-p",
        "8",
        "-n",
        "2",
        "-r",
        "1",
        "--no-telemetry",
    ]);
    assert_code(&o, 0);
    let table = stdout(&o);
    // llama-bench: "| gemma3 270M Q4_K - Medium | 235.16 MiB | 268.10 M | ..."
    assert!(table.contains(" 235.16 MiB "), "{table}");
    assert!(
        !table.contains("241.39 MiB"),
        "the file size is shown as the size: {table}"
    );
}
