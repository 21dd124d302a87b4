//! What a card says, apart from where it says it.
//!
//! An adapter ([`super::run`], [`super::serve`]) turns a document into a
//! [`CardSpec`]: plain text, numbers and roles (a series' colour, a line's
//! tone), with no coordinates. [`super::draw`] places any spec on the grid.
//! So what a card says is tested on the spec, and how it is laid out is
//! tested once, for every card.

/// A series on a card. Each quantity keeps its colour on every card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Prefill,
    Decode,
    FirstToken,
    /// Output of all parallel requests together (a server run).
    Total,
    /// A tail percentile, behind its median.
    Tail,
}

/// How a line of text reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Muted,
    /// Bold: the line the card leads to (a sweep's recommendation).
    Strong,
    /// Something failed or went wrong.
    Bad,
}

/// A line of text and how it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub text: String,
    pub tone: Tone,
}

impl Line {
    pub fn new(text: impl Into<String>, tone: Tone) -> Self {
        Line {
            text: text.into(),
            tone,
        }
    }
}

/// One card, top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct CardSpec {
    /// What the card shows, beside the brand ("quantisation sweep · 4 levels").
    pub kind: String,
    /// The run's status at the header's right, where it is worth saying.
    pub status: Option<Line>,
    /// The model (and server) the figures are of.
    pub title: String,
    /// Under the title: the model's file and size, or how to read the
    /// figures (two lines at most).
    pub subtitle: String,
    pub body: Body,
    /// The column on the right, one block under another, in the order of
    /// what must not be left out for lack of room.
    pub context: Vec<Block>,
    /// Under the chart, the card's whole width: a recommendation, failures,
    /// a knee. Two lines at most; the rest are counted.
    pub notes: Vec<Line>,
    /// The foot: the conditions, then when and by which Dyno.
    pub footer: Vec<String>,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A single row of figures, written large beside its label: bars each
    /// scaled to themselves would say nothing.
    Figures { label: String, figures: Vec<Figure> },
    /// Rows (levels, runs, tests) across panels of bars, one panel per
    /// quantity, each on its own scale.
    Bars(Bars),
}

/// A figure written large: what it is, its value (or a dash and why not)
/// and its unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub title: String,
    pub colour: Colour,
    pub value: Option<String>,
    pub unit: String,
    pub missing: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    pub rows: Vec<Row>,
    pub panels: Vec<Panel>,
    /// What the rows are, for the count of those that do not fit ("runs",
    /// "tests (dyno serve-show lists them all)").
    pub rest: String,
}

/// A row's label, and why it has no figures if it failed (written across
/// the panels instead of bars).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub failed: Option<String>,
}

/// A panel of bars on its own scale, one bar per row.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// What it measures ("DECODE tg128"), in the series' colour.
    pub title: String,
    /// Its unit, under the title ("t/s").
    pub unit: String,
    pub colour: Colour,
    pub bars: Vec<Bar>,
}

/// One bar: its value, a faint longer bar behind it (a tail percentile)
/// where there is one, and the text beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub value: Option<f64>,
    pub tail: Option<f64>,
    pub text: String,
}

/// A block of the context column: a small heading, then its lines, each
/// wrapped onto up to `most` lines rather than cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub head: String,
    pub lines: Vec<String>,
    pub most: usize,
    /// The block says only that something is missing ("no power reading"),
    /// so on a full card it may be the one left out for lack of room.
    pub optional: bool,
}

impl Block {
    pub fn new(head: impl Into<String>, lines: Vec<String>) -> Self {
        Block {
            head: head.into(),
            lines,
            most: 2,
            optional: false,
        }
    }
}

impl CardSpec {
    /// Every text the spec holds, for tests of what a card says.
    pub fn all_text(&self) -> Vec<String> {
        let mut out = vec![self.kind.clone(), self.title.clone(), self.subtitle.clone()];
        out.extend(self.status.iter().map(|s| s.text.clone()));
        match &self.body {
            Body::Figures { label, figures } => {
                out.push(label.clone());
                for f in figures {
                    out.extend([f.title.clone(), f.unit.clone(), f.missing.clone()]);
                    out.extend(f.value.clone());
                }
            }
            Body::Bars(b) => {
                for r in &b.rows {
                    out.push(r.label.clone());
                    out.extend(r.failed.clone());
                }
                for p in &b.panels {
                    out.extend([p.title.clone(), p.unit.clone()]);
                    out.extend(p.bars.iter().map(|b| b.text.clone()));
                }
            }
        }
        for b in &self.context {
            out.push(b.head.clone());
            out.extend(b.lines.iter().cloned());
        }
        out.extend(self.notes.iter().map(|n| n.text.clone()));
        out.extend(self.footer.iter().cloned());
        out
    }

    /// The context block with this heading.
    pub fn block(&self, head: &str) -> Option<&Block> {
        self.context.iter().find(|b| b.head == head)
    }
}

#[cfg(test)]
impl CardSpec {
    /// The chart's bars, for tests of a card that has them.
    pub(super) fn bars(&self) -> &Bars {
        match &self.body {
            Body::Bars(b) => b,
            Body::Figures { .. } => panic!("bars expected: {self:#?}"),
        }
    }
}
