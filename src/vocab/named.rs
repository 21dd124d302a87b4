//! Closed sets of values that each have one name: the name a person types
//! (`--fa on`, `dyno export --format png`) and the one JSON carries. The
//! core lists and parses them through [`Named`] without knowing any front
//! end; the CLI turns the same list into its parser and its `--help`, so
//! the core needs no command-line library.

/// A type whose values are all listed, each with a name.
pub trait Named: Copy + PartialEq + Sized + 'static {
    /// Every value, in the order a help text lists them.
    const VALUES: &'static [Self];

    /// The value's name, as typed and as stored.
    fn name(self) -> &'static str;

    /// One line on what the value means, for a help text; most need none.
    fn help(self) -> Option<&'static str> {
        None
    }

    /// The value named `s`, in any case.
    fn from_name(s: &str) -> Option<Self> {
        let s = s.trim();
        Self::VALUES
            .iter()
            .copied()
            .find(|v| v.name().eq_ignore_ascii_case(s))
    }

    /// The names joined for an error message: "a, b or c".
    fn names() -> String {
        let names: Vec<&str> = Self::VALUES.iter().map(|v| v.name()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            Some((last, _)) => last.to_string(),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{FlashAttn, SplitMode};

    #[test]
    fn names_round_trip_and_match_the_stored_form() {
        for v in FlashAttn::VALUES {
            assert_eq!(FlashAttn::from_name(v.name()), Some(*v));
            // The name typed is the name JSON carries.
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
        }
        for v in SplitMode::VALUES {
            assert_eq!(SplitMode::from_name(&v.name().to_uppercase()), Some(*v));
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
        }
        assert_eq!(FlashAttn::from_name("maybe"), None);
        assert_eq!(FlashAttn::names(), "auto, on or off");
    }
}
