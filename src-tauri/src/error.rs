//! Errors as they cross to the UI: `{code, message}` (docs/app-api.md),
//! where the message is the same line the CLI prints, written for a person.

use dyno::error::DynoError;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AppError {
    pub code: &'static str,
    pub message: String,
}

impl AppError {
    pub fn new(code: &'static str, message: impl Into<String>) -> AppError {
        AppError {
            code,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> AppError {
        AppError::new("internal", message)
    }
}

impl From<DynoError> for AppError {
    fn from(e: DynoError) -> AppError {
        let code = match &e {
            DynoError::BadModel { .. } | DynoError::Unsupported { .. } | DynoError::BadInput(_) => {
                "bad_input"
            }
            DynoError::NotFound(_) => "not_found",
            // The UI asks "Replace?" and calls again with overwrite.
            DynoError::Exists(p) => {
                return AppError::new("exists", format!("{} already exists.", p.display()))
            }
            DynoError::Network(_) => "network",
            DynoError::Internal(_) => "internal",
            // The database, the disk, a worker or a download failed while
            // running: not the user's input, and not a bug either.
            _ => "failed",
        };
        let line = dyno::error::error_line(&e);
        let message = line.strip_prefix("error: ").unwrap_or(&line).to_string();
        AppError { code, message }
    }
}

pub type AppResult<T> = Result<T, AppError>;
