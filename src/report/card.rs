//! The result card people post: a 1200×630 picture (the size link previews
//! use) of one run or one sweep, with the conditions every figure needs.
//!
//! Dyno writes the card as SVG itself and renders PNGs with resvg and the
//! bundled DejaVu Sans (`assets/fonts`), never with system fonts or a
//! browser, so a card looks the same on every machine and in CI. It is drawn
//! from the scrubbed export document, so it can show nothing that the JSON
//! export leaves out.
//!
//! Prefill, decode and time to first token are three panels with their own
//! scales and units: they are different quantities and are never blended.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use super::sweep::SweepJson;
use super::{MachineJson, Report, ResultJson, RunJson};
use crate::error::{DynoError, Result};
use crate::units::{human_bytes, human_params};
use crate::vocab::status::{LevelStatus, ResultStatus, RunStatus};
use crate::vocab::TestKind;

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 630;

const FONT_REGULAR: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const FONT_BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Bold.ttf");
pub(super) const FAMILY: &str = "DejaVu Sans";

pub(super) const BG: &str = "#0f172a";
pub(super) const PANEL: &str = "#1e293b";
pub(super) const TEXT: &str = "#e2e8f0";
pub(super) const MUTED: &str = "#94a3b8";
pub(super) const PP: &str = "#38bdf8";
pub(super) const TG: &str = "#f59e0b";
pub(super) const TTFT: &str = "#a78bfa";
pub(super) const BAD: &str = "#f87171";

/// One bar row: a level of a sweep, or the run itself.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    label: String,
    /// Prefill t/s (the first pp test).
    pp: Option<f64>,
    /// Decode t/s (the first tg test).
    tg: Option<f64>,
    ttft_ms: Option<f64>,
    tokens_per_j: Option<f64>,
    kld: Option<f64>,
    /// Why the level has no figures.
    failed: Option<String>,
    /// Why a test behind the row's figures was disturbed (the first reason).
    disturbed: Option<String>,
}

/// Test names of the three panels, from the first run that has them.
#[derive(Debug, Default)]
struct Tests {
    pp: Option<String>,
    tg: Option<String>,
    ttft: Option<String>,
}

fn ok(r: &ResultJson) -> bool {
    r.status == ResultStatus::Ok
}

fn prefill(run: &RunJson) -> Option<(&str, f64)> {
    run.results
        .iter()
        .filter(|r| ok(r) && r.kind == TestKind::Prompt)
        .find_map(|r| Some((r.test.as_str(), r.mean_tokens_per_s?)))
}

fn decode(run: &RunJson) -> Option<(&str, f64)> {
    run.results
        .iter()
        .filter(|r| ok(r) && r.kind == TestKind::Gen)
        .find_map(|r| Some((r.test.as_str(), r.mean_tokens_per_s?)))
}

fn first_token(run: &RunJson) -> Option<(&str, f64)> {
    run.results
        .iter()
        .filter(|r| ok(r))
        .find_map(|r| Some((r.test.as_str(), r.ttft_ms?)))
}

/// Decode tokens per joule, where a power reading covered the decode test.
fn decode_tokens_per_j(run: &RunJson) -> Option<f64> {
    run.results
        .iter()
        .filter(|r| ok(r) && r.kind == TestKind::Gen)
        .find_map(|r| r.telemetry.as_ref()?.energy.as_ref()?.tokens_per_j)
}

fn row_of(label: String, run: &RunJson) -> Row {
    let failed = (run.status != RunStatus::Ok && decode(run).is_none() && prefill(run).is_none())
        .then(|| run.error.clone().unwrap_or_else(|| run.status.to_string()));
    Row {
        label,
        pp: prefill(run).map(|x| x.1),
        tg: decode(run).map(|x| x.1),
        ttft_ms: first_token(run).map(|x| x.1),
        tokens_per_j: decode_tokens_per_j(run),
        kld: run
            .quality
            .as_ref()
            .filter(|q| !q.is_reference)
            .map(|q| q.kld_mean),
        failed,
        disturbed: run
            .results
            .iter()
            .filter(|r| ok(r) && r.disturbed)
            .find_map(|r| {
                let why = r.disturbance.as_ref()?.reasons.first()?;
                Some(format!("{}: {why}", r.test))
            }),
    }
}

fn rows(r: &Report, sweep: Option<&SweepJson>) -> Vec<Row> {
    let by_id = |id: i64| r.runs.iter().find(|x| x.run_id == id);
    match sweep {
        Some(s) => s
            .levels
            .iter()
            .map(|l| match l.run_ids.iter().rev().find_map(|&id| by_id(id)) {
                Some(run) => {
                    let mut row = row_of(l.level.clone(), run);
                    if l.status != LevelStatus::Ok && row.failed.is_none() && row.tg.is_none() {
                        row.failed = Some(l.error.clone().unwrap_or_else(|| l.status.to_string()));
                    }
                    row
                }
                None => Row {
                    label: l.level.clone(),
                    pp: None,
                    tg: None,
                    ttft_ms: None,
                    tokens_per_j: None,
                    kld: None,
                    failed: Some(l.error.clone().unwrap_or_else(|| l.status.to_string())),
                    disturbed: None,
                },
            })
            .collect(),
        None => r
            .runs
            .iter()
            .map(|run| row_of(run.model.quant.clone(), run))
            .collect(),
    }
}

fn tests(r: &Report) -> Tests {
    let mut t = Tests::default();
    for run in &r.runs {
        t.pp = t.pp.or_else(|| prefill(run).map(|x| x.0.to_string()));
        t.tg = t.tg.or_else(|| decode(run).map(|x| x.0.to_string()));
        t.ttft = t.ttft.or_else(|| first_token(run).map(|x| x.0.to_string()));
    }
    t
}

/// XML-escape text for an SVG text node or attribute.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The bundled faces, parsed once, for measuring text as it will be drawn.
fn faces() -> &'static [ttf_parser::Face<'static>; 2] {
    static FACES: OnceLock<[ttf_parser::Face<'static>; 2]> = OnceLock::new();
    FACES.get_or_init(|| {
        [FONT_REGULAR, FONT_BOLD]
            .map(|b| ttf_parser::Face::parse(b, 0).expect("the bundled font parses"))
    })
}

/// The width of `s` at `size` px in the bundled face: the sum of its
/// glyphs' advances, as the renderer lays them out (kerning only narrows
/// DejaVu's pairs, so this never comes out short). A character the face
/// lacks counts as a wide one.
fn measure(s: &str, size: f64, bold: bool) -> f64 {
    let face = &faces()[usize::from(bold)];
    let em = f64::from(face.units_per_em());
    s.chars()
        .map(|c| {
            face.glyph_index(c)
                .and_then(|g| face.glyph_hor_advance(g))
                .map_or(1.0, |a| f64::from(a) / em)
        })
        .sum::<f64>()
        * size
}

/// Width of `s` in the regular face, in px.
pub(super) fn width_px(s: &str, size: f64) -> f64 {
    measure(s, size, false)
}

/// Width of `s` in the bold face, in px.
pub(super) fn width_bold_px(s: &str, size: f64) -> f64 {
    measure(s, size, true)
}

/// `s` cut with an ellipsis to fit `max` pixels (regular face).
pub(super) fn fit(s: &str, size: f64, max: f64) -> String {
    fit_face(s, size, max, false)
}

/// [`fit`] for bold text.
pub(super) fn fit_bold(s: &str, size: f64, max: f64) -> String {
    fit_face(s, size, max, true)
}

fn fit_face(s: &str, size: f64, max: f64, bold: bool) -> String {
    if measure(s, size, bold) <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().collect();
    while !out.is_empty() && measure(&out, size, bold) + measure("…", size, bold) > max {
        out.pop();
    }
    format!("{}…", out.trim_end())
}

/// Greedy word wrap into at most `lines` lines of `max` pixels.
pub(super) fn wrap(s: &str, size: f64, max: f64, lines: usize) -> Vec<String> {
    wrap_face(s, size, max, lines, false)
}

/// [`wrap`] in the regular or the bold face.
fn wrap_face(s: &str, size: f64, max: f64, lines: usize, bold: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let candidate = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if measure(&candidate, size, bold) <= max || cur.is_empty() {
            cur = candidate;
        } else {
            out.push(std::mem::take(&mut cur));
            cur = word.to_string();
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.len() > lines {
        let rest = out[lines - 1..].join(" ");
        out.truncate(lines - 1);
        out.push(fit_face(&rest, size, max, bold));
    }
    out.into_iter()
        .map(|l| fit_face(&l, size, max, bold))
        .collect()
}

/// A rate with three significant figures ("1234", "73.5", "4.21").
pub(super) fn num(v: f64) -> String {
    crate::units::three_figures(v)
}

pub(super) struct Svg(pub(super) String);

impl Svg {
    pub(super) fn text(&mut self, x: f64, y: f64, size: f64, fill: &str, weight: &str, s: &str) {
        let _ = writeln!(
            self.0,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" fill="{fill}" font-weight="{weight}">{}</text>"#,
            esc(s)
        );
    }

    pub(super) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, rx: f64) {
        let _ = writeln!(
            self.0,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="{rx}" fill="{fill}"/>"#,
            w.max(0.0),
            h.max(0.0)
        );
    }
}

/// One panel of bars: a title, then one bar per row scaled to the panel's
/// own maximum, with the value written next to it.
#[allow(clippy::too_many_arguments)]
fn panel(
    svg: &mut Svg,
    x: f64,
    w: f64,
    top: f64,
    row_h: f64,
    title: &str,
    colour: &str,
    values: &[Option<f64>],
    unit_fmt: &dyn Fn(f64) -> String,
) {
    svg.text(x, top - 12.0, 15.0, MUTED, "normal", &fit(title, 15.0, w));
    let max = values.iter().flatten().copied().fold(0.0_f64, f64::max);
    let label_w = 72.0;
    let bar_w = w - label_w - 6.0;
    for (i, v) in values.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let h = (row_h * 0.62).min(24.0);
        let by = y + (row_h - h) / 2.0;
        svg.rect(x, by, bar_w, h, PANEL, 3.0);
        if let Some(v) = v {
            let len = if max > 0.0 { bar_w * v / max } else { 0.0 };
            svg.rect(x, by, len.max(2.0), h, colour, 3.0);
            svg.text(
                x + bar_w + 6.0,
                by + h * 0.5 + 5.5,
                15.0,
                TEXT,
                "normal",
                &unit_fmt(*v),
            );
        }
    }
}

/// The card as an SVG document, 1200×630, drawn top to bottom: the header,
/// the chart, the column of context on the right, then the recommendation
/// and the conditions at the foot.
pub fn svg(r: &Report, sweep: Option<&SweepJson>) -> String {
    let rows = rows(r, sweep);
    let mut s = Svg(String::new());
    let _ = writeln!(
        s.0,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FAMILY}, sans-serif">"#
    );
    s.rect(0.0, 0.0, WIDTH as f64, HEIGHT as f64, BG, 0.0);
    header(&mut s, r, sweep);
    chart(&mut s, &rows, &tests(r));
    context(&mut s, r, sweep, &rows);
    recommendation(&mut s, sweep);
    if let Some(run) = r.runs.first() {
        footer(&mut s, run, &r.machine);
    }
    s.0.push_str("</svg>\n");
    s.0
}

/// The brand and what the card shows, then the model by name, parameters
/// and file.
fn header(s: &mut Svg, r: &Report, sweep: Option<&SweepJson>) {
    let first = r.runs.first();
    s.text(40.0, 52.0, 17.0, PP, "bold", "DYNO");
    let title = first.map_or_else(
        || "no runs".to_string(),
        |run| {
            run.model
                .name
                .clone()
                .unwrap_or_else(|| run.model.file_name.clone())
        },
    );
    let what = match sweep {
        Some(sw) => format!("quantisation sweep · {} levels", sw.levels.len()),
        None if r.runs.len() == 1 => "benchmark".to_string(),
        None => format!("{} runs", r.runs.len()),
    };
    // A twin keeps the real model's name: the card must say what it is.
    let what = match first.and_then(|run| run.model.synthetic.as_ref()) {
        Some(_) => format!("{what} · synthetic weights"),
        None => what,
    };
    s.text(106.0, 52.0, 17.0, MUTED, "normal", &what);
    s.text(
        40.0,
        92.0,
        32.0,
        TEXT,
        "bold",
        &fit_bold(&title, 32.0, 1120.0),
    );
    if let Some(run) = first {
        let md = &run.model;
        let model_line = if sweep.is_some() {
            format!(
                "{} · {} params · {} (sha256 {}) and its levels",
                md.arch,
                human_params(md.n_params).trim(),
                md.file_name,
                &md.sha256[..md.sha256.len().min(12)]
            )
        } else {
            // Weights as llama-bench's "size", the file apart, each named:
            // the Models view lists the file's size.
            format!(
                "{} · {} · {} params · {} weights in a {} file · sha256 {}",
                md.file_name,
                md.quant,
                human_params(md.n_params).trim(),
                super::table::weight_size(md),
                human_bytes(md.size_bytes),
                &md.sha256[..md.sha256.len().min(12)]
            )
        };
        // A long file name takes a second line rather than being cut.
        for (i, l) in wrap(&model_line, 16.0, 1120.0, 2).iter().enumerate() {
            s.text(40.0, 122.0 + 20.0 * i as f64, 16.0, MUTED, "normal", l);
        }
    }
}

/// The chart: a label per row (a level, or a run), three panels of bars
/// beside them, and across a failed row the reason instead of bars.
fn chart(s: &mut Svg, rows: &[Row], tests: &Tests) {
    let left = 40.0;
    // As wide as the widest label ("Q4_K_M *"), so no level name is cut.
    let label_col = rows
        .iter()
        .map(|r| width_bold_px(&format!("{} *", r.label), 16.0) + 12.0)
        .fold(92.0_f64, f64::max)
        .min(180.0);
    let top = 180.0;
    let bottom = 512.0;
    let n = rows.len().max(1);
    let row_h = ((bottom - top) / n as f64).min(44.0);
    for (i, row) in rows.iter().enumerate() {
        // A lone row's label stands beside its large figures.
        let y = if rows.len() == 1 && row.failed.is_none() {
            top + 112.0
        } else {
            top + i as f64 * row_h + row_h / 2.0 + 6.0
        };
        let colour = if row.failed.is_some() { BAD } else { TEXT };
        // A disturbed row is starred; the context panel says why.
        let label = if row.disturbed.is_some() {
            format!("{} *", row.label)
        } else {
            row.label.clone()
        };
        s.text(
            left,
            y,
            16.0,
            colour,
            "bold",
            &fit_bold(&label, 16.0, label_col - 8.0),
        );
    }
    let px = left + label_col;
    let gap = 16.0;
    // Three panels share what the labels leave, up to the context column.
    let pw = (CONTEXT_X - 30.0 - px - 2.0 * gap) / 3.0;
    if let [one] = rows {
        if one.failed.is_none() {
            lone(s, px, pw + gap, top, one, tests);
            return;
        }
    }
    let t_s = |v: f64| num(v);
    let ms = |v: f64| format!("{} ms", num(v));
    panel(
        s,
        px,
        pw,
        top,
        row_h,
        &format!("prefill {} · t/s", tests.pp.as_deref().unwrap_or("pp")),
        PP,
        &rows.iter().map(|r| r.pp).collect::<Vec<_>>(),
        &t_s,
    );
    panel(
        s,
        px + pw + gap,
        pw,
        top,
        row_h,
        &format!("decode {} · t/s", tests.tg.as_deref().unwrap_or("tg")),
        TG,
        &rows.iter().map(|r| r.tg).collect::<Vec<_>>(),
        &t_s,
    );
    panel(
        s,
        px + 2.0 * (pw + gap),
        pw,
        top,
        row_h,
        &format!("TTFT {} · ms", tests.ttft.as_deref().unwrap_or("")),
        TTFT,
        &rows.iter().map(|r| r.ttft_ms).collect::<Vec<_>>(),
        &ms,
    );
    // A failed level says why across its row, instead of empty bars.
    for (i, row) in rows.iter().enumerate() {
        if let Some(why) = &row.failed {
            let y = top + i as f64 * row_h + row_h / 2.0 + 5.0;
            s.text(
                px + 8.0,
                y,
                14.0,
                BAD,
                "normal",
                &fit(&format!("failed: {why}"), 14.0, 3.0 * pw),
            );
        }
    }
}

/// One run's three figures, written large: a bar scaled to itself would
/// say nothing. A figure the run did not measure says so.
fn lone(s: &mut Svg, px: f64, step: f64, top: f64, row: &Row, tests: &Tests) {
    let figure = |title: String, colour, value: Option<f64>, unit: &str, missing| BigFigure {
        title,
        colour,
        value: value.map(num),
        unit: unit.to_string(),
        missing,
    };
    big_figures(
        s,
        px,
        step,
        top,
        &[
            figure(
                format!("prefill {}", tests.pp.as_deref().unwrap_or("")),
                PP,
                row.pp,
                "tokens per second",
                "no prompt test in this run",
            ),
            figure(
                format!("decode {}", tests.tg.as_deref().unwrap_or("")),
                TG,
                row.tg,
                "tokens per second",
                "no generation test in this run",
            ),
            figure(
                format!("TTFT {}", tests.ttft.as_deref().unwrap_or("")),
                TTFT,
                row.ttft_ms,
                "ms to the first token",
                "no pp+tg test in this run",
            ),
        ],
    );
}

/// A figure written large in a column of its own: what it is, its colour,
/// its value (or a dash and why not) and its unit.
pub(super) struct BigFigure<'a> {
    pub(super) title: String,
    pub(super) colour: &'a str,
    pub(super) value: Option<String>,
    pub(super) unit: String,
    pub(super) missing: &'a str,
}

/// Figures written large side by side, `step` apart from `px`, for a card
/// with a single row of figures (a lone run, a server run of one test),
/// where bars each scaled to themselves would say nothing.
pub(super) fn big_figures(s: &mut Svg, px: f64, step: f64, top: f64, figures: &[BigFigure]) {
    let w = step - 16.0;
    for (i, f) in figures.iter().enumerate() {
        let x = px + i as f64 * step;
        s.text(
            x,
            top - 12.0,
            15.0,
            MUTED,
            "normal",
            &fit(f.title.trim(), 15.0, w),
        );
        s.rect(x, top + 4.0, w, 4.0, f.colour, 2.0);
        match &f.value {
            Some(v) => {
                let mut size = 52.0;
                while size > 24.0 && width_bold_px(v, size) > w {
                    size -= 4.0;
                }
                s.text(x, top + 120.0, size, f.colour, "bold", v);
                for (j, l) in wrap(&f.unit, 15.0, w, 2).iter().enumerate() {
                    s.text(x, top + 150.0 + 19.0 * j as f64, 15.0, MUTED, "normal", l);
                }
            }
            None => {
                s.text(x, top + 120.0, 52.0, MUTED, "bold", "–");
                for (j, l) in wrap(f.missing, 14.0, w, 2).iter().enumerate() {
                    s.text(x, top + 150.0 + 18.0 * j as f64, 14.0, MUTED, "normal", l);
                }
            }
        }
    }
}

/// The right column's left edge and width.
pub(super) const CONTEXT_X: f64 = 790.0;
pub(super) const CONTEXT_W: f64 = 370.0;

/// The right column, one block under another: a small heading, then its
/// lines, each wrapped onto a second (indented) line rather than cut, down
/// to `bottom` (the column's last baseline).
pub(super) struct Blocks {
    pub(super) y: f64,
    pub(super) bottom: f64,
}

impl Blocks {
    pub(super) fn block(&mut self, s: &mut Svg, head: &str, lines: &[String]) {
        self.block_of(s, head, lines, 2);
    }

    /// [`Blocks::block`], each line taking up to `most` lines.
    pub(super) fn block_of(&mut self, s: &mut Svg, head: &str, lines: &[String], most: usize) {
        if self.y > self.bottom - 20.0 {
            return;
        }
        s.text(CONTEXT_X, self.y, 13.0, MUTED, "bold", head);
        self.y += 21.0;
        const INDENT: f64 = 14.0;
        for l in lines {
            let parts = if width_px(l, 15.0) <= CONTEXT_W {
                vec![l.clone()]
            } else {
                wrap(l, 15.0, CONTEXT_W - INDENT, most)
            };
            for (i, part) in parts.iter().enumerate() {
                if self.y > self.bottom {
                    break;
                }
                let x = if i == 0 {
                    CONTEXT_X
                } else {
                    CONTEXT_X + INDENT
                };
                s.text(x, self.y, 15.0, TEXT, "normal", part);
                self.y += 20.0;
            }
        }
        self.y += 8.0;
    }
}

/// The right column: a disturbance first, then machine, build, the team,
/// energy, what the speed means, and a sweep's divergence from its
/// reference.
fn context(s: &mut Svg, r: &Report, sweep: Option<&SweepJson>, rows: &[Row]) {
    let first = r.runs.first();
    s.rect(
        CONTEXT_X - 18.0,
        150.0,
        CONTEXT_W + 36.0,
        372.0,
        PANEL,
        10.0,
    );
    let mut blocks = Blocks {
        y: 180.0,
        bottom: 508.0,
    };
    // A starred row's figure was taken while the machine was busy: the
    // card must not travel without saying so, so it comes first, before
    // anything the column may run out of room for. The reason names the
    // programs, and may take a few lines.
    if let Some((head, lines)) = disturbed_block(rows) {
        blocks.block_of(s, &head, &lines, 4);
    }
    blocks.block(s, "MACHINE", &machine_lines(&r.machine));
    blocks.block(s, "BACKEND", &backend_lines(first, &r.machine));
    if let (Some(t), Some(run)) = (&r.team, first) {
        let (head, lines) = team_block(t, run);
        blocks.block(s, &head, &lines);
    }
    blocks.block(s, "ENERGY (DECODE)", &energy_lines(rows));
    if let Some(lines) = meaning_lines(r, sweep) {
        blocks.block(s, "WHAT THIS MEANS", &lines);
    }
    if sweep.is_some() {
        let kld: Vec<String> = rows
            .iter()
            .filter_map(|r| r.kld.map(|k| format!("{} {:.3}", r.label, k)))
            .collect();
        if !kld.is_empty() {
            let l = [kld.join(" · ")];
            blocks.block(s, "KL DIVERGENCE FROM THE REFERENCE", &l);
        }
    }
}

/// The heading and line of the rows timed while the machine was busy.
fn disturbed_block(rows: &[Row]) -> Option<(String, Vec<String>)> {
    let (row, why) = rows
        .iter()
        .find_map(|r| r.disturbed.as_ref().map(|w| (r, w)))?;
    let n = rows.iter().filter(|r| r.disturbed.is_some()).count();
    let head = if n == 1 {
        "* DISTURBED WHILE TIMED".to_string()
    } else {
        format!("* DISTURBED WHILE TIMED ({n} ROWS)")
    };
    Some((head, vec![format!("{}: {why}", row.label)]))
}

/// CPU, memory (with its measured bandwidth) and up to two GPUs.
fn machine_lines(m: &MachineJson) -> Vec<String> {
    let mut hw = vec![format!("{} · {} cores", m.cpu, m.cores)];
    let mut mem = format!("{} RAM", human_bytes(m.memory_bytes));
    if let Some(bw) = m.memory_bandwidth_bytes_per_s {
        let _ = write!(mem, " · {:.1} GB/s measured", bw as f64 / 1e9);
    }
    hw.push(mem);
    if m.gpus.is_empty() {
        hw.push("no GPU".into());
    }
    for g in m.gpus.iter().take(2) {
        hw.push(format!(
            "{} · {} VRAM",
            g.description,
            human_bytes(g.memory_total_bytes)
        ));
    }
    hw
}

/// The backend, the llama.cpp build, and the modules that measured (a
/// dynamic-backends build), GPU first: the engine a figure came from, down
/// to its file's hash.
fn backend_lines(first: Option<&RunJson>, m: &MachineJson) -> Vec<String> {
    let backend = first
        .and_then(|x| x.backend.clone())
        .or_else(|| m.backend.clone())
        .unwrap_or_else(|| "-".into());
    let build = first
        .and_then(|x| x.llama_cpp_build.clone())
        .or_else(|| m.llama_cpp_build.clone())
        .unwrap_or_else(|| "-".into());
    let mut lines = vec![backend, build];
    if let Some(run) = first {
        let mut mods: Vec<&crate::vocab::ModuleRef> =
            run.backend_modules.iter().flatten().collect();
        mods.sort_by_key(|m| m.backend == "CPU");
        lines.extend(mods.iter().take(2).map(|m| m.label()));
    }
    lines
}

/// Against the team (`--vs-team`): the median of per-machine medians for
/// this file and level, decode and prefill apart, and this run's difference.
fn team_block(t: &super::json::TeamMedian, run: &RunJson) -> (String, Vec<String>) {
    let mine = |kind: TestKind| {
        run.results
            .iter()
            .find(|x| x.kind == kind && x.status == ResultStatus::Ok)
            .and_then(|x| x.mean_tokens_per_s)
    };
    let size = |p: &str, n: Option<u32>| n.map_or_else(String::new, |n| format!(" {p}{n}"));
    let line = |what: String, team: Option<f64>, me: Option<f64>| match (team, me) {
        (Some(t), Some(m)) => format!(
            "{what} median {} t/s · run {:+.0}%",
            num(t),
            (m / t - 1.0) * 100.0
        ),
        (Some(t), None) => format!("{what} median {} t/s", num(t)),
        _ => format!("{what}: no team figure"),
    };
    let head = format!(
        "VS TEAM ({} MACHINE{})",
        t.machines,
        if t.machines == 1 { "" } else { "S" }
    );
    let lines = vec![
        line(
            format!("decode{}", size("tg", t.n_gen)),
            t.decode_tps,
            mine(TestKind::Gen),
        ),
        line(
            format!("prefill{}", size("pp", t.n_prompt)),
            t.prefill_tps,
            mine(TestKind::Prompt),
        ),
    ];
    (head, lines)
}

/// Tokens per joule where a power reading covered decode; said otherwise.
fn energy_lines(rows: &[Row]) -> Vec<String> {
    let tpj: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.tokens_per_j
                .map(|v| format!("{} {} tokens/J", r.label, num(v)))
        })
        .collect();
    if tpj.is_empty() {
        vec!["tokens per joule: no power reading".to_string()]
    } else {
        vec![tpj.iter().take(2).cloned().collect::<Vec<_>>().join(" · ")]
    }
}

/// What the speed means in words, for the recommended level or the one run.
fn meaning_lines(r: &Report, sweep: Option<&SweepJson>) -> Option<Vec<String>> {
    let pick = sweep
        .and_then(|sw| sw.recommendation.as_deref())
        .and_then(|rec| rec.split(':').next())
        .and_then(|lvl| {
            sweep?.levels.iter().find(|l| l.level == lvl).and_then(|l| {
                l.run_ids
                    .iter()
                    .rev()
                    .find_map(|&id| r.runs.iter().find(|x| x.run_id == id))
            })
        })
        .or(r.runs.first())?;
    let w = pick.what_this_means.as_ref()?;
    let mut l = vec![format!(
        "{}: {:.1} words/s ({:.2} tokens per word)",
        pick.model.quant, w.words_per_s, w.tokens_per_word
    )];
    if let Some(t) = w.reply_500_words_s {
        l.push(format!("a 500-word reply in {t:.1} s"));
    }
    Some(l)
}

/// A sweep's recommendation, under the chart.
fn recommendation(s: &mut Svg, sweep: Option<&SweepJson>) {
    if let Some(rec) = sweep.and_then(|sw| sw.recommendation.as_deref()) {
        let text = format!("→ {rec}");
        if width_bold_px(&text, 17.0) <= 1120.0 {
            s.text(40.0, 548.0, 17.0, TEXT, "bold", &text);
            return;
        }
        // A long one takes two lines, set a little smaller.
        let lines = wrap_face(&text, 16.0, 1120.0, 2, true);
        for (i, l) in lines.iter().enumerate() {
            s.text(40.0, 538.0 + 20.0 * i as f64, 16.0, TEXT, "bold", l);
        }
    }
}

/// The foot: the conditions every figure was measured under, with the tests
/// run, then when, by which Dyno, on which OS, and how the mean was taken.
fn footer(s: &mut Svg, run: &RunJson, m: &MachineJson) {
    let c = &run.config;
    let mut pn: Vec<String> = run
        .results
        .iter()
        .map(|r| r.test.clone())
        .collect::<Vec<_>>();
    pn.dedup();
    let cond = format!(
        "{} · tests {}",
        super::conditions(c, super::Wording::Card),
        pn.join(", ")
    );
    s.text(
        40.0,
        578.0,
        14.0,
        MUTED,
        "normal",
        &fit(&cond, 14.0, 1120.0),
    );
    let date = run.started_at.get(..10).unwrap_or(&run.started_at);
    let foot = format!(
        "{date} · dyno {} · {} · mean of {} timed repetitions after a warm-up",
        run.dyno_version,
        m.os.as_deref().unwrap_or(""),
        c.reps
    );
    s.text(
        40.0,
        604.0,
        14.0,
        MUTED,
        "normal",
        &fit(&foot, 14.0, 1120.0),
    );
}

/// The bundled fonts, loaded once.
fn fonts() -> Arc<resvg::usvg::fontdb::Database> {
    static DB: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_font_data(FONT_REGULAR.to_vec());
        db.load_font_data(FONT_BOLD.to_vec());
        db.set_sans_serif_family(FAMILY);
        Arc::new(db)
    })
    .clone()
}

/// Render a card's SVG to PNG bytes with the bundled fonts.
pub fn png(svg: &str) -> Result<Vec<u8>> {
    let opt = resvg::usvg::Options {
        font_family: FAMILY.to_string(),
        fontdb: fonts(),
        ..Default::default()
    };
    let tree = resvg::usvg::Tree::from_str(svg, &opt)
        .map_err(|e| DynoError::Internal(format!("the card's SVG does not parse: {e}")))?;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(WIDTH, HEIGHT)
        .ok_or_else(|| DynoError::Internal("cannot allocate the card's pixels".into()))?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| DynoError::Internal(format!("cannot encode the card as PNG: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::TeamMedian;

    #[test]
    fn text_is_escaped_and_cut_to_fit() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let long = "x".repeat(400);
        let cut = fit(&long, 16.0, 200.0);
        assert!(cut.ends_with('…'));
        assert!(width_px(&cut, 16.0) <= 200.0 + 1e-9);
        assert_eq!(fit("short", 16.0, 200.0), "short");
    }

    #[test]
    fn wrap_keeps_to_its_line_budget() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let lines = wrap(text, 15.0, 120.0, 2);
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| width_px(l, 15.0) <= 120.0 + 1e-9));
        assert!(lines[1].ends_with('…'));
        assert_eq!(wrap("a b", 15.0, 500.0, 3), vec!["a b".to_string()]);
    }

    #[test]
    fn the_team_block_counts_its_machines_in_words() {
        let mut r: Report = serde_json::from_value(fixture()).unwrap();
        r.runs.truncate(1);
        let team = |machines| TeamMedian {
            machines,
            decode_tps: Some(100.0),
            prefill_tps: None,
            n_gen: Some(16),
            n_prompt: Some(64),
        };
        r.team = Some(team(1));
        let one = svg(&r, None);
        assert!(one.contains("VS TEAM (1 MACHINE)"), "{one}");
        assert!(one.contains("decode tg16 median 100 t/s · run "));
        assert!(one.contains("prefill pp64: no team figure"));
        r.team = Some(team(3));
        assert!(svg(&r, None).contains("VS TEAM (3 MACHINES)"));
    }

    /// A four-level sweep's export, as `dyno export` writes it.
    fn fixture() -> serde_json::Value {
        serde_json::from_str(include_str!("../../tests/fixtures/sweep-export.json")).unwrap()
    }

    /// Every text element's content, as drawn.
    fn texts(svg: &str) -> Vec<String> {
        svg.lines()
            .filter(|l| l.starts_with("<text"))
            .map(|l| l[l.find('>').unwrap() + 1..l.rfind("</text>").unwrap()].to_string())
            .collect()
    }

    #[test]
    fn no_text_on_the_card_is_cut_and_a_lone_run_is_written_large() {
        let doc = fixture();
        let sweep: SweepJson = serde_json::from_value(doc["sweep"].clone()).unwrap();
        let mut r: Report = serde_json::from_value(doc).unwrap();
        // A disturbance names the programs, at length.
        let res = &mut r.runs[1].results[1];
        res.disturbed = true;
        res.disturbance = Some(crate::telemetry::disturbance::Disturbance {
            disturbed: true,
            reasons: vec!["2 cores in use (0.35 cores: WebKitWebProcess 0.2, WebKitNetworkProcess 0.1, dyno-app 0.05)".into()],
            others_cpu_cores: Some(0.35),
            cores_in_use: 2,
            steal_pct: None,
            cv: Some(0.01),
            processes: Vec::new(),
        });
        let mut one = r.clone();
        one.runs.truncate(1);
        // A long file name wraps onto a second line instead.
        one.runs[0].model.file_name =
            "Meta-Llama-3.1-8B-Instruct-abliterated-uncensored-v2.Q4_K_M.imatrix-calibrated.gguf"
                .into();
        for (what, card) in [
            ("sweep", svg(&r, Some(&sweep))),
            ("runs", svg(&r, None)),
            ("one run", svg(&one, None)),
        ] {
            let cut: Vec<String> = texts(&card)
                .into_iter()
                .filter(|t| t.contains('…'))
                .collect();
            assert!(cut.is_empty(), "{what}: {cut:?}");
        }
        // The lone run's decode is its own large figure, not a bar.
        let one_svg = svg(&one, None);
        let tg = one.runs[0]
            .results
            .iter()
            .find(|x| x.kind == TestKind::Gen)
            .and_then(|x| x.mean_tokens_per_s)
            .unwrap();
        assert!(
            one_svg.contains(&format!(
                r#"font-size="52" fill="{TG}" font-weight="bold">{}</text>"#,
                num(tg)
            )),
            "{one_svg}"
        );
        assert!(one_svg.contains("synthetic") == one.runs[0].model.synthetic.is_some());
    }

    #[test]
    fn a_card_of_synthetic_weights_says_so() {
        let mut r: Report = serde_json::from_value(fixture()).unwrap();
        r.runs.truncate(1);
        assert!(!svg(&r, None).contains("synthetic weights"));
        r.runs[0].model.synthetic = Some("twin of SmolLM2 135M, seed 1".into());
        assert!(svg(&r, None).contains("benchmark · synthetic weights"));
    }

    #[test]
    fn numbers_keep_three_significant_figures() {
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(73.54), "73.5");
        assert_eq!(num(4.2149), "4.21");
    }
}
