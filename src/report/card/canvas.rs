//! The drawing surface of the cards: SVG text and rectangles, text measured
//! in the bundled font, and the PNG renderer.
//!
//! Dyno writes the SVG itself and renders PNGs with resvg and the bundled
//! DejaVu Sans (`assets/fonts`), never with system fonts or a browser, so a
//! card looks the same on every machine and in CI. Text is measured from
//! the same font's advances (through `ttf-parser`, the library resvg lays
//! text out with), so what is fitted here is what is drawn there. Each text
//! drawn is also kept as a [`Text`], so layout tests read positions without
//! parsing SVG.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use super::spec::{Colour, Tone};
use crate::error::{DynoError, Result};

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 630;

const FONT_REGULAR: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
const FONT_BOLD: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans-Bold.ttf");
const FAMILY: &str = "DejaVu Sans";

pub(super) const BG: &str = "#0f172a";
pub(super) const PANEL: &str = "#1e293b";
pub(super) const TEXT: &str = "#e2e8f0";
pub(super) const MUTED: &str = "#94a3b8";
pub(super) const BAD: &str = "#f87171";

/// A series' colour. Prefill, decode, time to first token and total
/// output each keep theirs on every card, so a reader who learnt one card
/// reads the next.
pub(super) fn colour(c: Colour) -> &'static str {
    match c {
        Colour::Prefill => "#38bdf8",
        Colour::Decode => "#f59e0b",
        Colour::FirstToken => "#a78bfa",
        // Total output across parallel requests: never read as the
        // per-request decode rate.
        Colour::Total => "#34d399",
        // A tail percentile, drawn faint behind its median.
        Colour::Tail => "#574a8c",
    }
}

/// The colour of text in a tone.
pub(super) fn tone(t: Tone) -> &'static str {
    match t {
        Tone::Plain | Tone::Strong => TEXT,
        Tone::Muted => MUTED,
        Tone::Bad => BAD,
    }
}

/// Whether text of a tone is set bold.
pub(super) fn bold(t: Tone) -> bool {
    t == Tone::Strong
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
pub(super) fn measure(s: &str, size: f64, bold: bool) -> f64 {
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

/// `s` cut with an ellipsis to fit `max` pixels.
pub(super) fn fit(s: &str, size: f64, max: f64, bold: bool) -> String {
    if measure(s, size, bold) <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().collect();
    while !out.is_empty() && measure(&out, size, bold) + measure("…", size, bold) > max {
        out.pop();
    }
    format!("{}…", out.trim_end())
}

/// `s` cut at its start to fit `max` pixels, keeping the first word (what
/// the line is) and the end: a model path's file name matters more than
/// its folders.
pub(super) fn fit_start(s: &str, size: f64, max: f64) -> String {
    if measure(s, size, false) <= max {
        return s.to_string();
    }
    let (head, rest) = s.split_once(' ').unwrap_or(("", s));
    let mut tail: Vec<char> = rest.chars().collect();
    let line = |tail: &[char]| format!("{head} …{}", String::from_iter(tail));
    while !tail.is_empty() && measure(&line(&tail), size, false) > max {
        tail.remove(0);
    }
    line(&tail)
}

/// Greedy word wrap into at most `lines` lines of `max` pixels; what does
/// not fit is cut with an ellipsis on the last line.
pub(super) fn wrap(s: &str, size: f64, max: f64, lines: usize, bold: bool) -> Vec<String> {
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
    if out.len() > lines.max(1) {
        let rest = out[lines.max(1) - 1..].join(" ");
        out.truncate(lines.max(1) - 1);
        out.push(fit(&rest, size, max, bold));
    }
    out.into_iter().map(|l| fit(&l, size, max, bold)).collect()
}

/// One text as drawn: where, how large, and what it says (unescaped).
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    pub x: f64,
    pub y: f64,
    pub size: f64,
    pub bold: bool,
    pub fill: &'static str,
    pub text: String,
}

impl Text {
    /// Where the text ends, measured as it is drawn.
    pub fn end(&self) -> f64 {
        self.x + measure(&self.text, self.size, self.bold)
    }
}

/// An SVG document being drawn, 1200×630, with what it wrote.
pub(super) struct Canvas {
    svg: String,
    pub(super) texts: Vec<Text>,
}

impl Canvas {
    /// A blank card: the document's head and its background.
    pub(super) fn new() -> Self {
        let mut c = Canvas {
            svg: String::new(),
            texts: Vec::new(),
        };
        let _ = writeln!(
            c.svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FAMILY}, sans-serif">"#
        );
        c.rect(0.0, 0.0, f64::from(WIDTH), f64::from(HEIGHT), BG, 0.0);
        c
    }

    pub(super) fn text(
        &mut self,
        x: f64,
        y: f64,
        size: f64,
        fill: &'static str,
        bold: bool,
        s: &str,
    ) {
        let weight = if bold { "bold" } else { "normal" };
        let _ = writeln!(
            self.svg,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" fill="{fill}" font-weight="{weight}">{}</text>"#,
            esc(s)
        );
        self.texts.push(Text {
            x,
            y,
            size,
            bold,
            fill,
            text: s.to_string(),
        });
    }

    pub(super) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, rx: f64) {
        let _ = writeln!(
            self.svg,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="{rx}" fill="{fill}"/>"#,
            w.max(0.0),
            h.max(0.0)
        );
    }

    /// The finished document.
    pub(super) fn finish(mut self) -> (String, Vec<Text>) {
        self.svg.push_str("</svg>\n");
        (self.svg, self.texts)
    }
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

    #[test]
    fn text_is_escaped_and_cut_to_fit() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let long = "x".repeat(400);
        let cut = fit(&long, 16.0, 200.0, false);
        assert!(cut.ends_with('…'));
        assert!(measure(&cut, 16.0, false) <= 200.0 + 1e-9);
        assert_eq!(fit("short", 16.0, 200.0, true), "short");
        let path = fit_start("file /a/very/long/folder/name/model.gguf", 15.0, 150.0);
        assert!(
            path.starts_with("file …") && path.ends_with("model.gguf"),
            "{path}"
        );
    }

    #[test]
    fn wrap_keeps_to_its_line_budget() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let lines = wrap(text, 15.0, 120.0, 2, false);
        assert_eq!(lines.len(), 2);
        assert!(lines
            .iter()
            .all(|l| measure(l, 15.0, false) <= 120.0 + 1e-9));
        assert!(lines[1].ends_with('…'));
        assert_eq!(wrap("a b", 15.0, 500.0, 3, false), vec!["a b".to_string()]);
    }

    #[test]
    fn bold_text_measures_wider_than_regular() {
        let s = "Q4_K_M decode 123.4";
        assert!(measure(s, 16.0, true) > measure(s, 16.0, false));
        assert!((measure(s, 32.0, false) - 2.0 * measure(s, 16.0, false)).abs() < 1e-9);
    }
}
