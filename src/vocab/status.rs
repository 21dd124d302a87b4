//! The states a run, a test, a download, a sweep and a sweep level move
//! through, as enums instead of string literals.
//!
//! Each enum is stored as the same lowercase TEXT the database has always
//! held (the migrations' CHECK constraints list these words) and serialises
//! to the same JSON strings, so neither the schema nor any export changes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Declares a status enum with its words: serde, sqlx (as TEXT), `as_str`,
/// `Display` and `FromStr` all come from the one list, so they cannot drift.
macro_rules! status_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        #[serde(rename_all = "lowercase")]
        #[sqlx(rename_all = "lowercase")]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every state, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word stored in the database and written in JSON.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownStatus;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $word => Ok($name::$variant), )+
                    _ => Err(UnknownStatus {
                        kind: stringify!($name),
                        word: s.to_string(),
                    }),
                }
            }
        }
    };
}

status_enum! {
    /// A run's state (`runs.status`). Tests (`results.status`) and downloads
    /// (`downloads.status`) move through the same four states under the same
    /// CHECK constraint; [`ResultStatus`] and [`DownloadStatus`] name them.
    pub enum RunStatus {
        /// Measuring now, or left so by a Dyno process that died (until the
        /// store's orphan reaping closes it as failed).
        Running => "running",
        Ok => "ok",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

/// A new run or test is running until it ends.
impl Default for RunStatus {
    fn default() -> Self {
        RunStatus::Running
    }
}

/// A test's state (`results.status`): the same words as a run's.
pub type ResultStatus = RunStatus;

/// A Hugging Face download's state (`downloads.status`): the same words as
/// a run's.
pub type DownloadStatus = RunStatus;

status_enum! {
    /// A quantisation sweep's state (`sweeps.status`; NULL for `bench`
    /// sweeps, which have no state of their own).
    pub enum SweepStatus {
        Running => "running",
        /// Every level measured.
        Ok => "ok",
        /// Some levels failed, the others were measured.
        Partial => "partial",
        /// The sweep itself could not go on (an error outside any level).
        Failed => "failed",
        Cancelled => "cancelled",
        /// The process running it died; found and closed by orphan reaping.
        Interrupted => "interrupted",
    }
}

status_enum! {
    /// One level of a sweep (`sweep_levels.status`): pending until its runs
    /// end, and again when a resumed sweep retries it.
    pub enum LevelStatus {
        Pending => "pending",
        Ok => "ok",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

/// A status word that is not one of its enum's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{word}'")]
pub struct UnknownStatus {
    pub kind: &'static str,
    pub word: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are the database's and the JSON's: every path that turns a
    /// status into text must give the same one, and parse it back.
    fn round_trip<T>(all: &[T])
    where
        T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr + Serialize,
        T: for<'de> Deserialize<'de>,
        <T as FromStr>::Err: fmt::Debug,
    {
        for &s in all {
            let word = s.to_string();
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::json!(word));
            assert_eq!(
                serde_json::from_value::<T>(serde_json::json!(word)).unwrap(),
                s
            );
            assert_eq!(word.parse::<T>().unwrap(), s);
        }
    }

    #[test]
    fn words_round_trip() {
        round_trip(RunStatus::ALL);
        round_trip(SweepStatus::ALL);
        round_trip(LevelStatus::ALL);
        assert_eq!(RunStatus::Cancelled.as_str(), "cancelled");
        assert_eq!(SweepStatus::Interrupted.as_str(), "interrupted");
        assert_eq!(LevelStatus::Pending.as_str(), "pending");
        assert!("done".parse::<RunStatus>().is_err());
    }

    /// sqlx stores the same TEXT the migrations' CHECK constraints allow,
    /// and reads it back.
    #[tokio::test]
    async fn stored_as_text() {
        let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
        sqlx::query(
            "CREATE TABLE t (status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'cancelled')))",
        )
        .execute(&pool)
        .await
        .unwrap();
        for &s in RunStatus::ALL {
            sqlx::query("INSERT INTO t (status) VALUES (?)")
                .bind(s)
                .execute(&pool)
                .await
                .unwrap();
        }
        let words: Vec<String> = sqlx::query_scalar("SELECT status FROM t ORDER BY rowid")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(words, ["running", "ok", "failed", "cancelled"]);
        let typed: Vec<RunStatus> = sqlx::query_scalar("SELECT status FROM t ORDER BY rowid")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(typed, RunStatus::ALL);
    }
}
