//! Lays a [`CardSpec`] out on the grid: the one place that knows where
//! things go and how large they are, for every card.

use super::canvas::{
    self, bold, colour, fit, measure, tone, wrap, Canvas, Text, MUTED, PANEL, TEXT,
};
use super::grid::{CHART, CHART_HEAD, CONTEXT, FOOTER, HEADER, INSET, NOTES};
use super::spec::{Bars, Block, Body, CardSpec, Colour, Figure, Line, Panel};

/// Rows the chart holds at a readable size; more show the first ones and
/// a count of the rest.
pub const MAX_ROWS: usize = 12;

/// The width of a line of the context column.
pub const CONTEXT_TEXT_W: f64 = CONTEXT.w - 2.0 * INSET;

/// The size of a context line's text.
pub const CONTEXT_SIZE: f64 = 15.0;

/// The card as an SVG document, and every text on it as drawn.
pub fn draw(spec: &CardSpec) -> (String, Vec<Text>) {
    let mut c = Canvas::new();
    header(&mut c, spec);
    match &spec.body {
        Body::Figures { label, figures } => big_figures(&mut c, label, figures),
        Body::Bars(b) => bars(&mut c, b),
    }
    context(&mut c, &spec.context);
    notes(&mut c, &spec.notes);
    footer(&mut c, &spec.footer);
    c.finish()
}

/// The brand, what the card shows and its status on the first line; the
/// title, made smaller before any of it is cut; the subtitle on up to two
/// lines.
fn header(c: &mut Canvas, spec: &CardSpec) {
    let first = 52.0;
    c.text(HEADER.x, first, 17.0, colour(Colour::Prefill), true, "DYNO");
    let kind_x = HEADER.x + 66.0;
    let mut kind_w = HEADER.right() - kind_x;
    if let Some(s) = &spec.status {
        let w = measure(&s.text, 17.0, true);
        c.text(HEADER.right() - w, first, 17.0, tone(s.tone), true, &s.text);
        kind_w -= w + 24.0;
    }
    c.text(
        kind_x,
        first,
        17.0,
        MUTED,
        false,
        &fit(&spec.kind, 17.0, kind_w, false),
    );
    let mut size = 32.0;
    while size > 24.0 && measure(&spec.title, size, true) > HEADER.w {
        size -= 2.0;
    }
    c.text(
        HEADER.x,
        92.0,
        size,
        TEXT,
        true,
        &fit(&spec.title, size, HEADER.w, true),
    );
    for (i, l) in wrap(&spec.subtitle, 16.0, HEADER.w, 2, false)
        .iter()
        .enumerate()
    {
        c.text(HEADER.x, 122.0 + 20.0 * i as f64, 16.0, MUTED, false, l);
    }
}

/// Rows down the left, a failed one's label in red with its reason across
/// the panels, the panels side by side, and a count of rows that did not
/// fit.
fn bars(c: &mut Canvas, b: &Bars) {
    let top = CHART.y + CHART_HEAD;
    let all = b.rows.len();
    let (shown, lines) = if all > MAX_ROWS {
        (MAX_ROWS - 1, MAX_ROWS)
    } else {
        (all, all.max(1))
    };
    let row_h = ((CHART.bottom() - top) / lines as f64).min(44.0);
    let size = if row_h < 30.0 { 14.0 } else { 16.0 };
    let rows = &b.rows[..shown];
    let label_w = rows
        .iter()
        .map(|r| measure(&r.label, size, true))
        .fold(0.0_f64, f64::max)
        .clamp(48.0, 200.0);
    let baseline = |i: usize| top + i as f64 * row_h + row_h / 2.0 + size * 0.36;
    for (i, row) in rows.iter().enumerate() {
        let fill = if row.failed.is_some() {
            canvas::BAD
        } else {
            TEXT
        };
        c.text(
            CHART.x,
            baseline(i),
            size,
            fill,
            true,
            &fit(&row.label, size, label_w, true),
        );
    }
    if all > shown {
        let more = format!("+{} more {}", all - shown, b.rest);
        c.text(
            CHART.x,
            baseline(shown),
            size,
            MUTED,
            false,
            &fit(&more, size, CHART.w, false),
        );
    }
    let gap = 18.0;
    let px = CHART.x + label_w + 14.0;
    let n = b.panels.len().max(1) as f64;
    let pw = (CHART.right() - px - (n - 1.0) * gap) / n;
    for (k, p) in b.panels.iter().enumerate() {
        panel(c, px + k as f64 * (pw + gap), pw, row_h, p, shown);
    }
    for (i, row) in rows.iter().enumerate() {
        if let Some(why) = &row.failed {
            let line = fit(
                &format!("failed: {why}"),
                14.0,
                CHART.right() - px - 8.0,
                false,
            );
            c.text(px + 8.0, baseline(i) - 1.0, 14.0, canvas::BAD, false, &line);
        }
    }
}

/// A panel of bars on its own scale: the title in the series' colour, the
/// unit under it, then one bar per row with its figure beside it. The
/// figures' column is as wide as the widest figure, so long ones (p50 and
/// p99 together) shorten the bars rather than run into the next panel.
fn panel(c: &mut Canvas, x: f64, w: f64, row_h: f64, p: &Panel, shown: usize) {
    let top = CHART.y + CHART_HEAD;
    let fill = colour(p.colour);
    c.text(
        x,
        top - 32.0,
        14.0,
        fill,
        true,
        &fit(&p.title, 14.0, w, true),
    );
    c.text(
        x,
        top - 13.0,
        13.0,
        MUTED,
        false,
        &fit(&p.unit, 13.0, w, false),
    );
    let bars = &p.bars[..shown.min(p.bars.len())];
    let size = if row_h < 30.0 { 14.0 } else { 15.0 };
    let max = bars
        .iter()
        .flat_map(|b| [b.value, b.tail])
        .flatten()
        .fold(0.0_f64, f64::max);
    let text_w = bars
        .iter()
        .map(|b| measure(&b.text, size, false))
        .fold(0.0_f64, f64::max);
    let bar_w = (w - text_w - 8.0).max(w * 0.25);
    let scale = |v: f64| if max > 0.0 { bar_w * v / max } else { 0.0 };
    for (i, b) in bars.iter().enumerate() {
        // A row with nothing to draw (a failed one) is left bare for its
        // reason, written across the panels.
        if b.value.is_none() && b.tail.is_none() && b.text.is_empty() {
            continue;
        }
        let h = (row_h * 0.62).min(24.0);
        let by = top + i as f64 * row_h + (row_h - h) / 2.0;
        c.rect(x, by, bar_w, h, PANEL, 3.0);
        if let Some(t) = b.tail {
            c.rect(x, by, scale(t).max(2.0), h, colour(Colour::Tail), 3.0);
        }
        if let Some(v) = b.value {
            c.rect(x, by, scale(v).max(2.0), h, fill, 3.0);
        }
        if !b.text.is_empty() {
            let t = fit(&b.text, size, w - bar_w - 6.0, false);
            c.text(
                x + bar_w + 6.0,
                by + h * 0.5 + size * 0.36,
                size,
                TEXT,
                false,
                &t,
            );
        }
    }
}

/// One row's figures written large side by side, its label beside them.
fn big_figures(c: &mut Canvas, label: &str, figures: &[Figure]) {
    let top = CHART.y + CHART_HEAD - 20.0;
    let label_w = measure(label, 16.0, true).clamp(48.0, 200.0);
    c.text(
        CHART.x,
        top + 112.0,
        16.0,
        TEXT,
        true,
        &fit(label, 16.0, label_w, true),
    );
    let gap = 18.0;
    let px = CHART.x + label_w + 24.0;
    let n = figures.len().max(1) as f64;
    let step = (CHART.right() - px + gap) / n;
    let w = step - gap;
    for (i, f) in figures.iter().enumerate() {
        let x = px + i as f64 * step;
        let fill = colour(f.colour);
        c.text(
            x,
            top - 12.0,
            15.0,
            MUTED,
            false,
            &fit(f.title.trim(), 15.0, w, false),
        );
        c.rect(x, top + 4.0, w, 4.0, fill, 2.0);
        let (value, fill, under, size) = match &f.value {
            Some(v) => (v.as_str(), fill, &f.unit, 15.0),
            None => ("–", MUTED, &f.missing, 14.0),
        };
        let mut big = 52.0;
        while big > 24.0 && measure(value, big, true) > w {
            big -= 4.0;
        }
        c.text(x, top + 120.0, big, fill, true, value);
        for (j, l) in wrap(under, size, w, 2, false).iter().enumerate() {
            c.text(
                x,
                top + 150.0 + (size + 4.0) * j as f64,
                size,
                MUTED,
                false,
                l,
            );
        }
    }
}

/// The right column: its panel, then block under block down to its foot.
/// A line too long for the column wraps onto indented lines; a block that
/// finds no room is left out (the adapters put what must be said first).
fn context(c: &mut Canvas, blocks: &[Block]) {
    c.rect(CONTEXT.x, CONTEXT.y, CONTEXT.w, CONTEXT.h, PANEL, 10.0);
    const INDENT: f64 = 14.0;
    let x = CONTEXT.x + INSET;
    // The last baseline: a descender's room above the panel's foot.
    let bottom = CONTEXT.bottom() - 7.0;
    let mut y = CONTEXT.y + 30.0;
    for b in blocks {
        if y > bottom - 20.0 {
            return;
        }
        c.text(
            x,
            y,
            13.0,
            MUTED,
            true,
            &fit(&b.head, 13.0, CONTEXT_TEXT_W, true),
        );
        y += 21.0;
        for l in &b.lines {
            let parts = if measure(l, CONTEXT_SIZE, false) <= CONTEXT_TEXT_W {
                vec![l.clone()]
            } else {
                wrap(l, CONTEXT_SIZE, CONTEXT_TEXT_W - INDENT, b.most, false)
            };
            for (i, part) in parts.iter().enumerate() {
                if y > bottom {
                    break;
                }
                let at = if i == 0 { x } else { x + INDENT };
                c.text(at, y, CONTEXT_SIZE, TEXT, false, part);
                y += 20.0;
            }
        }
        y += 8.0;
    }
}

/// Two lines under the chart. A lone note too long for one line takes
/// both; with more notes than lines, the last line counts the rest.
fn notes(c: &mut Canvas, notes: &[Line]) {
    const SIZE: f64 = 15.0;
    let y = |i: usize| NOTES.y + 19.0 + 21.0 * i as f64;
    if let [one] = notes {
        let b = bold(one.tone);
        // The line a card leads to (a sweep's recommendation) is set larger,
        // and a little smaller again when it needs both lines.
        let (one_line, two_lines) = if b { (17.0, 16.0) } else { (SIZE, SIZE) };
        if measure(&one.text, one_line, b) <= NOTES.w {
            c.text(NOTES.x, y(0), one_line, tone(one.tone), b, &one.text);
            return;
        }
        for (i, l) in wrap(&one.text, two_lines, NOTES.w, 2, b).iter().enumerate() {
            c.text(NOTES.x, y(i), two_lines, tone(one.tone), b, l);
        }
        return;
    }
    for (i, n) in notes.iter().take(2).enumerate() {
        let text = if i == 1 && notes.len() > 2 {
            format!("{} (and {} more notes)", n.text, notes.len() - 2)
        } else {
            n.text.clone()
        };
        let b = bold(n.tone);
        c.text(
            NOTES.x,
            y(i),
            SIZE,
            tone(n.tone),
            b,
            &fit(&text, SIZE, NOTES.w, b),
        );
    }
}

/// The foot's two lines, cut to the card's width.
fn footer(c: &mut Canvas, lines: &[String]) {
    for (i, l) in lines.iter().take(2).enumerate() {
        let y = FOOTER.y + 19.0 + 23.0 * i as f64;
        c.text(
            FOOTER.x,
            y,
            14.0,
            MUTED,
            false,
            &fit(l, 14.0, FOOTER.w, false),
        );
    }
}
