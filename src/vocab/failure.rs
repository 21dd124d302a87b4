//! Why a run, a level or a worker task failed, as one closed list of codes.
//!
//! The codes are stored in the `error_code` columns of `runs` and
//! `sweep_levels`, appear in the JSON report, and travel from the worker in
//! its `fatal` event. They were bare strings, so a typo made a new code and
//! the CLI's exit code was picked from a hand-kept list. Here each code is a
//! variant whose text is written once; serde and sqlx read and write that
//! same text, so the database and the JSON are unchanged.
//!
//! A code this build does not know (a newer worker's, or one in a database
//! written by a newer Dyno) is kept as [`FailureCode::Other`] rather than
//! refused: reading a failure must never fail.

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

/// Declares the known codes once: the enum, its text, and its parsing.
macro_rules! failure_codes {
    ($($(#[$doc:meta])* $variant:ident = $text:literal,)*) => {
        /// Why something failed. Serialised as its snake_case text (e.g.
        /// `"timed_out"`), in JSON and in SQLite alike.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum FailureCode {
            $($(#[$doc])* $variant,)*
            /// A code this build does not know, kept as it was read.
            Other(String),
        }

        impl FailureCode {
            /// Every known code, for tests and documentation.
            pub const KNOWN: &'static [FailureCode] = &[$(FailureCode::$variant,)*];

            /// The code's text, as stored and as shown in JSON.
            pub fn as_str(&self) -> &str {
                match self {
                    $(FailureCode::$variant => $text,)*
                    FailureCode::Other(s) => s,
                }
            }

            fn known(text: &str) -> Option<FailureCode> {
                match text {
                    $($text => Some(FailureCode::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

failure_codes! {
    // Sent by the worker in its `fatal` event.
    /// llama.cpp does not know the model's architecture.
    UnsupportedArchitecture = "unsupported_architecture",
    /// A `--device` this machine does not have.
    UnknownDevice = "unknown_device",
    /// An `--override-tensor` entry llama.cpp cannot use: an unknown buffer
    /// type or a pattern that is not a regular expression.
    BadOverride = "bad_override",
    /// llama.cpp could not load the model.
    LoadFailed = "load_failed",
    /// An `--rpc` server did not answer, offered no device, or this build
    /// has no RPC module.
    RpcFailed = "rpc_failed",
    /// The worker could not read its plan (a parent and worker of
    /// different builds).
    BadPlan = "bad_plan",
    /// llama.cpp found no backend to run on.
    NoBackend = "no_backend",
    /// llama.cpp's quantizer refused or failed.
    QuantizeFailed = "quantize_failed",
    /// A quality pass failed in the worker, or ended without figures.
    QualityFailed = "quality_failed",

    // Decided by the parent about a worker.
    /// The memory check refused the model or a test before loading.
    InsufficientMemory = "insufficient_memory",
    /// A test failed cleanly and the worker went on.
    TestFailed = "test_failed",
    /// The worker died: a signal, an abort, an unexpected exit.
    Crashed = "crashed",
    /// The worker sent nothing for longer than `--timeout` and was killed.
    TimedOut = "timed_out",
    /// The user cancelled.
    Cancelled = "cancelled",
    /// Found running at start-up: the Dyno that ran it was killed.
    Interrupted = "interrupted",

    // Quantisation in the parent.
    /// A level name llama.cpp's quantizer does not have.
    BadLevel = "bad_level",
    /// The cache folder cannot be created or written.
    CacheUnwritable = "cache_unwritable",
    /// Not enough disk space for the quantised file.
    DiskFull = "disk_full",
    /// The quantizer wrote a file whose header does not read back.
    BadOutput = "bad_output",

    // A sweep's levels.
    /// A level's file is not a usable GGUF.
    BadFile = "bad_file",
    /// A level whose benchmark made no runs.
    NoRuns = "no_runs",
    /// A level whose failed run stored no code.
    Failed = "failed",

    // Requests to a server (`dyno serve-bench`).
    /// The server could not be reached (refused, DNS, TLS).
    Unreachable = "unreachable",
    /// The server answered with an HTTP error (4xx or 5xx).
    ServerError = "server_error",
    /// The stream was not valid Server-Sent Events or JSON, or held no text.
    BadStream = "bad_stream",
    /// The server closed the stream before it ended.
    StreamCut = "stream_cut",
}

impl FailureCode {
    /// The CLI's exit code when every failure of a command has this code:
    /// 2 when the input must change (the model, a device name, or a machine
    /// with more memory), 130 for a cancel (as `cli::EXIT_CANCELLED`),
    /// 1 for anything that failed while running.
    pub fn exit_code(&self) -> i32 {
        match self {
            FailureCode::UnknownDevice
            | FailureCode::BadOverride
            | FailureCode::UnsupportedArchitecture
            | FailureCode::LoadFailed
            | FailureCode::InsufficientMemory => 2,
            FailureCode::Cancelled => 130,
            _ => 1,
        }
    }

    /// The model file itself cannot be used, whatever the options: a sweep
    /// counts such a level as bad input. Narrower than an exit code of 2,
    /// which also blames a device name or the machine's memory.
    pub fn blames_the_model(&self) -> bool {
        matches!(
            self,
            FailureCode::LoadFailed | FailureCode::UnsupportedArchitecture
        )
    }
}

impl From<&str> for FailureCode {
    fn from(text: &str) -> Self {
        FailureCode::known(text).unwrap_or_else(|| FailureCode::Other(text.to_string()))
    }
}

impl From<String> for FailureCode {
    fn from(text: String) -> Self {
        FailureCode::known(&text).unwrap_or(FailureCode::Other(text))
    }
}

impl FromStr for FailureCode {
    type Err = Infallible;
    fn from_str(s: &str) -> Result<Self, Infallible> {
        Ok(FailureCode::from(s))
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for FailureCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for FailureCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(FailureCode::from(Cow::<'de, str>::deserialize(d)?.as_ref()))
    }
}

/// Stored as TEXT, the column's type today.
impl<DB: sqlx::Database> sqlx::Type<DB> for FailureCode
where
    str: sqlx::Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <str as sqlx::Type<DB>>::type_info()
    }
    fn compatible(ty: &DB::TypeInfo) -> bool {
        <str as sqlx::Type<DB>>::compatible(ty)
    }
}

impl<'q, DB: sqlx::Database> sqlx::Encode<'q, DB> for FailureCode
where
    String: sqlx::Encode<'q, DB>,
{
    fn encode_by_ref(
        &self,
        buf: &mut <DB as sqlx::Database>::ArgumentBuffer<'q>,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        self.as_str().to_string().encode(buf)
    }
}

impl<'r, DB: sqlx::Database> sqlx::Decode<'r, DB> for FailureCode
where
    &'r str: sqlx::Decode<'r, DB>,
{
    fn decode(
        value: <DB as sqlx::Database>::ValueRef<'r>,
    ) -> Result<Self, sqlx::error::BoxDynError> {
        Ok(FailureCode::from(
            <&'r str as sqlx::Decode<'r, DB>>::decode(value)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_code_reads_back_as_itself() {
        for code in FailureCode::KNOWN {
            assert_eq!(&FailureCode::from(code.as_str()), code);
            assert_eq!(code.to_string(), code.as_str());
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(&serde_json::from_str::<FailureCode>(&json).unwrap(), code);
        }
    }

    #[test]
    fn an_unknown_code_is_kept_not_refused() {
        // A newer worker's fatal event must not break an older parent.
        let c: FailureCode = serde_json::from_str("\"gpu_on_fire\"").unwrap();
        assert_eq!(c, FailureCode::Other("gpu_on_fire".into()));
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"gpu_on_fire\"");
        assert_eq!(c.exit_code(), 1);
    }

    #[test]
    fn exit_codes_are_the_cli_s() {
        let bad_input = [
            "unknown_device",
            "bad_override",
            "unsupported_architecture",
            "load_failed",
            "insufficient_memory",
        ];
        for code in FailureCode::KNOWN {
            let want = if bad_input.contains(&code.as_str()) {
                2
            } else if code.as_str() == "cancelled" {
                130
            } else {
                1
            };
            assert_eq!(code.exit_code(), want, "{code}");
        }
    }

    #[tokio::test]
    async fn sqlite_stores_the_text() {
        use sqlx::sqlite::SqlitePoolOptions;
        let pool = SqlitePoolOptions::new()
            .connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (code TEXT)")
            .execute(&pool)
            .await
            .unwrap();
        for code in [FailureCode::TimedOut, FailureCode::Other("new".into())] {
            sqlx::query("INSERT INTO t VALUES (?)")
                .bind(&code)
                .execute(&pool)
                .await
                .unwrap();
        }
        let text: Vec<String> = sqlx::query_scalar("SELECT code FROM t")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(text, ["timed_out", "new"]);
        let typed: Vec<FailureCode> = sqlx::query_scalar("SELECT code FROM t")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(typed[0], FailureCode::TimedOut);
        assert_eq!(typed[1], FailureCode::Other("new".into()));
    }
}
