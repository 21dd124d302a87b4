//! Errors as they cross to the UI: `{code, message}` (docs/app-api.md),
//! where the message is the same line the CLI prints, written for a person.

use dyno::error::DynoError;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AppError {
    pub code: ErrorCode,
    pub message: String,
}

/// What kind of failure a rejected command is, so the UI can act on it
/// (ask "Replace?", offer to wait) without reading the message. Generated
/// into the UI's types (bindings/ErrorCode.ts).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The person's input: a bad path, value or model file.
    BadInput,
    NotFound,
    /// The hub or a server could not be reached.
    Network,
    Cancelled,
    /// One of a kind is already running (a benchmark, a sync).
    Busy,
    /// The file is there; the UI asks before replacing it.
    Exists,
    /// The database, the disk, a worker or a download failed while running.
    Failed,
    /// A bug.
    Internal,
}

impl ErrorCode {
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::BadInput,
        ErrorCode::NotFound,
        ErrorCode::Network,
        ErrorCode::Cancelled,
        ErrorCode::Busy,
        ErrorCode::Exists,
        ErrorCode::Failed,
        ErrorCode::Internal,
    ];

    /// The code as the UI reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadInput => "bad_input",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Network => "network",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Busy => "busy",
            ErrorCode::Exists => "exists",
            ErrorCode::Failed => "failed",
            ErrorCode::Internal => "internal",
        }
    }
}

impl AppError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> AppError {
        AppError {
            code,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> AppError {
        AppError::new(ErrorCode::Internal, message)
    }
}

impl From<DynoError> for AppError {
    fn from(e: DynoError) -> AppError {
        let code = match &e {
            DynoError::BadModel { .. } | DynoError::Unsupported { .. } | DynoError::BadInput(_) => {
                ErrorCode::BadInput
            }
            DynoError::NotFound(_) => ErrorCode::NotFound,
            // The UI asks "Replace?" and calls again with overwrite.
            DynoError::Exists(p) => {
                return AppError::new(
                    ErrorCode::Exists,
                    format!("{} already exists.", p.display()),
                )
            }
            DynoError::Network(_) => ErrorCode::Network,
            DynoError::Internal(_) => ErrorCode::Internal,
            // The database, the disk, a worker or a download failed while
            // running: not the user's input, and not a bug either.
            _ => ErrorCode::Failed,
        };
        let line = dyno::error::error_line(&e);
        let message = line.strip_prefix("error: ").unwrap_or(&line).to_string();
        AppError { code, message }
    }
}

pub type AppResult<T> = Result<T, AppError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_crosses_as_its_word() {
        for c in ErrorCode::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
    }
}
