//! A JSON column read back as its type ([S] 4).
//!
//! Several columns hold a document rather than a number: a run's plan, its
//! devices, the offload llama.cpp reported, each result's samples. Their
//! JSON is a storage detail, so it is decoded here, once, as the row is
//! read: the layers above get a [`Doc<T>`] of the type itself and never
//! parse text.
//!
//! Decoding is lenient on purpose. A database may hold a document written by
//! an older Dyno whose shape has since changed, or a value damaged on disk.
//! Such a column reads as absent (with a warning naming the type), and the
//! rest of the row, and every other row, still reads: one bad column must
//! never hide a user's results. A strict `sqlx::types::Json` would fail the
//! whole query.

use std::ops::Deref;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A stored JSON document of type `T`, or `None` where the column is NULL
/// or does not hold a `T` (see the module's documentation).
///
/// Rows declare it with `#[sqlx(rename = "x_json", try_from = "Option<String>")]`,
/// and read it as an `Option<T>` through `Deref`.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc<T>(Option<T>);

impl<T> Doc<T> {
    /// A document, or none, for rows built in memory (tests). Not a `From`
    /// impl: that would overlap the reading one for `Doc<String>`.
    pub fn new(value: Option<T>) -> Doc<T> {
        Doc(value)
    }

    /// The document, if the column held one.
    pub fn into_inner(self) -> Option<T> {
        self.0
    }
}

impl<T> Default for Doc<T> {
    fn default() -> Self {
        Doc(None)
    }
}

impl<T> Deref for Doc<T> {
    type Target = Option<T>;

    fn deref(&self) -> &Option<T> {
        &self.0
    }
}

/// How a row reads the column (sqlx's `try_from`, through the standard
/// `TryFrom` that every `From` gives).
impl<T: DeserializeOwned> From<Option<String>> for Doc<T> {
    fn from(text: Option<String>) -> Self {
        Doc(text.as_deref().and_then(decode::<T>))
    }
}

/// `text` as a `T`, or `None` with a warning: the reader goes on without it.
fn decode<T: DeserializeOwned>(text: &str) -> Option<T> {
    match serde_json::from_str(text) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(
                "a stored {} could not be read and is left out: {e}",
                short_name::<T>()
            );
            None
        }
    }
}

/// The type's name without module paths (`Vec<Sample>`), for a message.
fn short_name<T>() -> String {
    let mut out = String::new();
    let mut segment = 0;
    let mut rest = std::any::type_name::<T>();
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("::") {
            out.truncate(segment);
            rest = after;
            continue;
        }
        out.push(c);
        if !(c.is_alphanumeric() || c == '_') {
            segment = out.len();
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The JSON text a document is stored as, for the insert and update
/// statements: the one place that writes what [`Doc`] reads.
pub(crate) fn text<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        // Only a map with non-string keys or a failing Serialize impl can get
        // here; none of the stored types has either.
        unreachable!("a stored document serialises: {e}")
    })
}

/// [`text`] for an optional document: NULL when there is none.
pub(crate) fn text_opt<T: Serialize>(value: Option<&T>) -> Option<String> {
    value.map(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Sample;

    #[test]
    fn a_document_reads_as_its_type_and_a_bad_or_null_one_as_absent() {
        let s = Sample {
            total_ns: 5,
            prompt_ns: None,
            gen_ns: Some(4),
            ttft_ns: None,
        };
        let good: Doc<Vec<Sample>> = Doc::from(Some(text(&vec![s])));
        assert_eq!(good.as_deref(), Some(&[s][..]));
        let bad: Doc<Vec<Sample>> = Doc::from(Some("{not json".to_string()));
        assert_eq!(*bad, None);
        let wrong: Doc<Vec<Sample>> = Doc::from(Some("{\"a\": 1}".to_string()));
        assert_eq!(*wrong, None);
        let null: Doc<Vec<Sample>> = Doc::from(None);
        assert_eq!(*null, None);
        assert_eq!(short_name::<Vec<Sample>>(), "Vec<Sample>");
        assert_eq!(short_name::<crate::vocab::Offload>(), "Offload");
    }
}
