//! The result cards people post: 1200×630 pictures (the size link previews
//! use) of a run, a sweep or a server run, with the conditions every figure
//! needs.
//!
//! One toolkit draws every card. An adapter turns a document into a plain
//! [`CardSpec`] (what the card says: text, numbers, roles): [`run`] for runs
//! and sweeps, [`serve`] for server runs. [`draw`] lays any spec out on the
//! named regions of [`grid`], on a [`canvas`] that measures text in the
//! bundled font. So an adapter is tested on its spec, without parsing SVG;
//! the layout is tested once for all cards; and golden images catch a
//! change in how the cards look (`DYNO_WRITE_GOLDEN=1` rewrites them after
//! a change made on purpose).

mod canvas;
mod draw;
pub mod grid;
pub mod run;
pub mod serve;
mod spec;

pub use canvas::{png, Text, HEIGHT, WIDTH};
pub use spec::{Bar, Bars, Block, Body, CardSpec, Colour, Figure, Line, Panel, Row, Tone};

use super::sweep::SweepJson;
use super::Report;
use crate::serve::report::ServeReport;

/// A card's SVG document, and every text on it as drawn.
pub fn draw(spec: &CardSpec) -> (String, Vec<Text>) {
    draw::draw(spec)
}

/// The card of a report (its runs, or the sweep they belong to) as SVG.
pub fn svg(r: &Report, sweep: Option<&SweepJson>) -> String {
    draw::draw(&run::spec(r, sweep)).0
}

/// The card of a server run as SVG.
pub fn serve_svg(r: &ServeReport) -> String {
    draw::draw(&serve::spec(r)).0
}

#[cfg(test)]
mod tests {
    use super::grid::{CHART, CONTEXT};
    use super::*;

    /// Every card the tests draw, by name: the adapters' fixtures, and the
    /// cases that strain the layout (a long file name, a long disturbance,
    /// more tests than rows).
    fn cards() -> Vec<(&'static str, CardSpec)> {
        let (r, sweep) = run::tests::fixture();
        let mut busy = r.clone();
        let long_reason = "2 cores in use (0.35 cores: WebKitWebProcess 0.2, WebKitNetworkProcess 0.1, dyno-app 0.05)";
        run::tests::disturb(&mut busy.runs[1].results[1], long_reason);
        let mut long = run::tests::one_run();
        long.runs[0].model.file_name =
            "Meta-Llama-3.1-8B-Instruct-abliterated-uncensored-v2.Q4_K_M.imatrix-calibrated.gguf"
                .into();
        // The app's Export of a disturbed run against the team, with two
        // modules: the column's fullest case.
        let mut team = run::tests::one_run();
        run::tests::disturb(&mut team.runs[0].results[0], long_reason);
        team.runs[0].backend_modules = Some(
            ["RPC libggml-rpc.so", "CPU libggml-cpu.so"]
                .map(|m| {
                    let (backend, file) = m.split_once(' ').unwrap();
                    crate::vocab::ModuleRef {
                        backend: backend.into(),
                        file: file.into(),
                        sha256: Some("732fcb63f6083c0d".into()),
                    }
                })
                .to_vec(),
        );
        team.team = Some(crate::report::json::TeamMedian {
            machines: 2,
            decode_tps: Some(120.0),
            prefill_tps: Some(300.0),
            n_gen: Some(16),
            n_prompt: Some(64),
        });
        let mut many = serve::tests::sweep();
        let slo = many.plan.slo;
        many.results = (0..15)
            .map(|i| serve::tests::test(i * 1024, 1 + i % 3, 20.0, &slo))
            .collect();
        vec![
            ("run-sweep", run::spec(&r, Some(&sweep))),
            ("run-runs-disturbed", run::spec(&busy, None)),
            ("run-one", run::spec(&run::tests::one_run(), None)),
            ("run-one-long-name", run::spec(&long, None)),
            ("run-one-team-busy", run::spec(&team, None)),
            ("serve-sweep", serve::spec(&serve::tests::sweep())),
            ("serve-one", serve::spec(&serve::tests::one_test())),
            ("serve-many", serve::spec(&many)),
        ]
    }

    #[test]
    fn no_text_runs_off_the_card_into_the_column_or_is_cut() {
        for (name, spec) in cards() {
            let (_, texts) = draw(&spec);
            for t in &texts {
                let end = t.end();
                assert!(
                    end <= f64::from(WIDTH) - 20.0,
                    "{name}: {:?} ends at {end}",
                    t.text
                );
                // Left of the column, at its height, text ends before it.
                let beside = (CONTEXT.y..=CONTEXT.bottom() + t.size).contains(&t.y);
                if t.x < CONTEXT.x && beside {
                    assert!(
                        end <= CONTEXT.x,
                        "{name}: {:?} runs into the column",
                        t.text
                    );
                }
                assert!(
                    t.y <= f64::from(HEIGHT) - 8.0,
                    "{name}: {:?} below the card",
                    t.text
                );
                // Nothing is cut, except a model path in the column, which
                // is cut at its start on purpose to keep the file name.
                let path = t.text.starts_with("model …") || t.text.starts_with("file …");
                assert!(!t.text.contains('…') || path, "{name}: cut {:?}", t.text);
            }
        }
    }

    /// The column leaves out a block that finds no room; on none of the
    /// cards tested, the fullest included, may that be one that says more
    /// than that something is missing.
    #[test]
    fn every_context_block_finds_room_on_the_cards_tested() {
        for (name, spec) in cards() {
            let texts: Vec<String> = draw(&spec).1.into_iter().map(|t| t.text).collect();
            for b in spec.context.iter().filter(|b| !b.optional) {
                assert!(texts.contains(&b.head), "{name}: no room for {:?}", b.head);
                let last = b.lines.last().expect("a block has lines");
                let drawn = texts.iter().any(|t| last.starts_with(t.as_str()));
                assert!(drawn, "{name}: {:?} lost its last line {last:?}", b.head);
            }
        }
    }

    #[test]
    fn more_rows_than_fit_show_the_first_ones_and_count_the_rest() {
        let (_, spec) = cards().into_iter().find(|c| c.0 == "serve-many").unwrap();
        let texts: Vec<String> = draw(&spec).1.into_iter().map(|t| t.text).collect();
        assert!(
            texts.iter().any(|t| t.starts_with("+4 more tests")),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t == "@d10240 c2"));
        assert!(!texts.iter().any(|t| t == "@d11264 c1"));
    }

    #[test]
    fn a_lone_run_is_written_large_and_bars_keep_to_the_chart() {
        for (name, spec) in cards() {
            let (_, texts) = draw(&spec);
            let large = texts
                .iter()
                .filter(|t| t.size >= 24.0 && t.y > CHART.y)
                .count();
            match &spec.body {
                Body::Figures { figures, .. } => assert_eq!(large, figures.len(), "{name}"),
                Body::Bars(_) => assert_eq!(large, 0, "{name}"),
            }
        }
    }

    /// The golden images: each card rendered to PNG must match its image in
    /// `tests/fixtures/cards` within a tolerance (resvg's anti-aliasing may
    /// differ in the last bit between CPUs). With `DYNO_WRITE_GOLDEN=1` the
    /// images are written instead, after a change to the cards' look.
    #[test]
    fn each_card_matches_its_golden_image() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cards");
        let write = std::env::var_os("DYNO_WRITE_GOLDEN").is_some();
        let mut failed = Vec::new();
        for (name, spec) in cards() {
            let bytes = png(&draw(&spec).0).unwrap();
            let path = dir.join(format!("{name}.png"));
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &bytes).unwrap();
                continue;
            }
            let want = std::fs::read(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; write the golden images with DYNO_WRITE_GOLDEN=1",
                    path.display()
                )
            });
            let (a, b) = (pixels(&bytes), pixels(&want));
            assert_eq!(a.len(), b.len(), "{name}: the sizes differ");
            // A pixel differs when a channel moves by more than 24 of 255.
            let differ = a
                .chunks(4)
                .zip(b.chunks(4))
                .filter(|(p, q)| p.iter().zip(*q).any(|(x, y)| x.abs_diff(*y) > 24))
                .count();
            let share = differ as f64 / (a.len() / 4) as f64;
            if share > 0.002 {
                let out = std::env::temp_dir().join(format!("dyno-card-{name}.png"));
                std::fs::write(&out, &bytes).unwrap();
                failed.push(format!(
                    "{name}: {:.2}% of pixels differ from {} (drawn: {})",
                    share * 100.0,
                    path.display(),
                    out.display()
                ));
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }

    /// A PNG's pixels as RGBA, decoded with the `png` crate rather than
    /// the renderer under test.
    fn pixels(bytes: &[u8]) -> Vec<u8> {
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("the PNG decodes");
        assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
        assert_eq!(info.color_type, png::ColorType::Rgba, "resvg writes RGBA");
        buf.truncate(info.buffer_size());
        buf
    }
}
