//! Typed errors for the core. Each message names the thing at fault and says
//! what the user can do about it; `main` prints the chain and picks the exit
//! code from [`DynoError::exit_code`].

use std::path::PathBuf;

mod gguf;

pub use gguf::GgufError;

#[derive(Debug, thiserror::Error)]
pub enum DynoError {
    /// A model file that cannot be used. Exit code 2.
    #[error("{}: {source}", path.display())]
    BadModel { path: PathBuf, source: GgufError },
    /// llama.cpp in the worker refused the model (e.g. an architecture this
    /// build does not know). Exit code 2.
    #[error("{}: {message}", path.display())]
    Unsupported { path: PathBuf, message: String },
    /// An option or argument out of range. Exit code 2.
    #[error("{0}")]
    BadInput(String),
    #[error("database {}: {source}", path.display())]
    Store { path: PathBuf, source: sqlx::Error },
    /// The database was written by a newer Dyno: its schema has migrations
    /// this build does not know. It is refused before anything is written,
    /// so the newer Dyno still reads it. Exit code 2.
    #[error("{} was written by a newer Dyno (its schema is at version {have}; this Dyno knows versions up to {known}). It was left unchanged: update Dyno, or choose another database with --db or DYNO_DB", path.display())]
    NewerDatabase {
        path: PathBuf,
        have: i64,
        known: i64,
    },
    #[error("database migration failed for {}: {source}; the file may be from a newer Dyno", path.display())]
    Migrate {
        path: PathBuf,
        source: sqlx::migrate::MigrateError,
    },
    #[error("{0}")]
    NotFound(String),
    /// The team store (`dyno sync`, `--db postgres://`) failed or refused;
    /// `store` is its URL with the password hidden. Exit code 1.
    #[error("team store {store}: {message}")]
    Team { store: String, message: String },
    #[error("worker: {0}")]
    Worker(String),
    /// The network failed (connection refused, reset, DNS, TLS). Exit code 1.
    #[error("network error: {0}")]
    Network(String),
    /// A download arrived but is not the file the hub announced; it was
    /// deleted. Exit code 1.
    #[error("{0}")]
    Integrity(String),
    /// A file that would be replaced without the person asking for it.
    /// Exit code 2.
    #[error("{} already exists; choose another name, or pass --force to replace it", .0.display())]
    Exists(PathBuf),
    /// Something that should not happen; the message asks for a report.
    #[error("internal error (a bug in Dyno; please report it): {0}")]
    Internal(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl DynoError {
    /// 2 for bad input (the user must change something), 1 for a failure
    /// while running.
    pub fn exit_code(&self) -> i32 {
        match self {
            DynoError::BadModel { .. }
            | DynoError::Unsupported { .. }
            | DynoError::BadInput(_)
            | DynoError::NotFound(_)
            | DynoError::NewerDatabase { .. }
            | DynoError::Exists(_) => 2,
            _ => 1,
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        DynoError::Io {
            context: context.into(),
            source,
        }
    }
}

pub type Result<T, E = DynoError> = std::result::Result<T, E>;

/// An error and its sources in one line, without repeating what thiserror
/// messages already embed.
pub fn error_line(e: &DynoError) -> String {
    let mut msg = format!("error: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(&format!(": {text}"));
        }
        source = s.source();
    }
    msg
}
