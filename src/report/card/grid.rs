//! The regions of the 1200×630 card, named once, so that every card puts
//! its header, chart, context column, notes and foot in the same places and
//! a region's size is read from here rather than written as a literal.
//!
//! ```text
//!  0 ┌──────────────────────────────────────────────────────────────┐
//!    │ HEADER   brand · kind                                 status │
//!    │          title                                               │
//!    │          subtitle (two lines)                                │
//! 150├──────────────────────────────────────────┬───────────────────┤
//!    │ CHART    labels │ panel │ panel │ panel  │ CONTEXT           │
//!    │                 │       │       │        │   blocks          │
//! 515├──────────────────────────────────────────┴───────────────────┤
//!    │ NOTES    (two lines, the whole width)                        │
//! 565├──────────────────────────────────────────────────────────────┤
//!    │ FOOTER   conditions · when, which Dyno                       │
//! 630└──────────────────────────────────────────────────────────────┘
//! ```

/// A rectangle of the card, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Region {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Region {
    pub const fn right(&self) -> f64 {
        self.x + self.w
    }

    pub const fn bottom(&self) -> f64 {
        self.y + self.h
    }
}

/// The card's left and right margin.
pub const MARGIN: f64 = 40.0;

/// Brand, kind and status on the first line, the title, the subtitle.
pub const HEADER: Region = Region {
    x: MARGIN,
    y: 0.0,
    w: 1120.0,
    h: 150.0,
};

/// The context column's panel; its text is inset by [`INSET`].
pub const CONTEXT: Region = Region {
    x: 772.0,
    y: 150.0,
    w: 406.0,
    h: 365.0,
};

/// The context column's padding: text starts this far inside the panel.
pub const INSET: f64 = 18.0;

/// Left of the context column: the panels' titles in its first
/// [`CHART_HEAD`] pixels, then the rows.
pub const CHART: Region = Region {
    x: MARGIN,
    y: 150.0,
    w: CONTEXT.x - 16.0 - MARGIN,
    h: 350.0,
};

/// The height of the panels' titles and units above the first row.
pub const CHART_HEAD: f64 = 50.0;

/// Under the chart and the column, the card's whole width.
pub const NOTES: Region = Region {
    x: MARGIN,
    y: 517.0,
    w: 1120.0,
    h: 48.0,
};

/// The two lines at the foot.
pub const FOOTER: Region = Region {
    x: MARGIN,
    y: 565.0,
    w: 1120.0,
    h: 55.0,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::card::canvas::{HEIGHT, WIDTH};

    #[test]
    fn the_regions_tile_the_card_without_overlap() {
        assert!(HEADER.bottom() <= CHART.y && HEADER.bottom() <= CONTEXT.y);
        assert!(CHART.right() < CONTEXT.x);
        assert!(CONTEXT.right() <= f64::from(WIDTH) - 20.0);
        assert!(CHART.bottom() <= NOTES.y && CONTEXT.bottom() <= NOTES.y);
        assert!(NOTES.bottom() <= FOOTER.y);
        assert!(FOOTER.bottom() <= f64::from(HEIGHT));
        assert_eq!(HEADER.right(), f64::from(WIDTH) - MARGIN);
    }
}
