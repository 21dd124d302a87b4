//! Bad input: every case exits with code 2 and one line that names the file
//! and says what to do. Nothing panics and no run is started for a file the
//! header check can reject.

mod common;

use common::*;

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
    let mut bytes = std::fs::read(model(SMOL)).unwrap();
    // Rename the architecture in place ("llama" -> "zzzzz", same length):
    // the header stays valid and only llama.cpp can say it does not know it.
    let key = b"general.architecture";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("key present")
        + key.len();
    // type (u32) + string length (u64) then the value.
    let value = at + 4 + 8;
    assert_eq!(&bytes[value..value + 5], b"llama");
    bytes[value..value + 5].copy_from_slice(b"zzzzz");
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
    // clap's own errors also exit with 2.
    let o = s.run(&["bench", m.to_str().unwrap(), "--pg", "512"]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--pg PROMPT,GEN"));
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
