//! The error every subcommand returns: a message in words and the exit code it means
//! ([`Exit`]), with the conversions from each room's typed errors (a bad scenario or version is
//! bad input; an install, a store or a folder that cannot be written is a setup failure).

use crate::cli::Exit;

/// An error with the exit code it means.
#[derive(Debug)]
pub struct AppError {
    pub code: Exit,
    pub message: String,
}

impl AppError {
    pub fn bad_input(message: impl Into<String>) -> AppError {
        AppError {
            code: Exit::BadInput,
            message: message.into(),
        }
    }
    pub fn setup(message: impl Into<String>) -> AppError {
        AppError {
            code: Exit::Setup,
            message: message.into(),
        }
    }
    /// The same error, its message led by `prefix` (the flag it is about).
    pub fn prefixed(self, prefix: &str) -> AppError {
        AppError {
            message: format!("{prefix}{}", self.message),
            ..self
        }
    }
}

impl From<crate::scenario::ScenarioError> for AppError {
    fn from(e: crate::scenario::ScenarioError) -> AppError {
        AppError::bad_input(e.to_string())
    }
}

impl From<crate::backend::install::InstallError> for AppError {
    fn from(e: crate::backend::install::InstallError) -> AppError {
        match e {
            crate::backend::install::InstallError::BadVersion(_) => {
                AppError::bad_input(e.to_string())
            }
            other => AppError::setup(other.to_string()),
        }
    }
}

impl From<crate::backend::catalog::CatalogError> for AppError {
    fn from(e: crate::backend::catalog::CatalogError) -> AppError {
        if e.is_bad_input() {
            AppError::bad_input(e.to_string())
        } else {
            AppError::setup(e.to_string())
        }
    }
}

/// A file that could not be written is a setup failure.
impl From<crate::store::StoreError> for AppError {
    fn from(e: crate::store::StoreError) -> AppError {
        AppError::setup(e.to_string())
    }
}

/// A file named for writing: a wrong path is bad input, a folder that cannot be written a
/// setup failure.
impl From<crate::store::output::OutputError> for AppError {
    fn from(e: crate::store::output::OutputError) -> AppError {
        match e {
            crate::store::output::OutputError::Path { .. } => AppError::bad_input(e.to_string()),
            crate::store::output::OutputError::Unwritable { .. } => AppError::setup(e.to_string()),
        }
    }
}

impl From<crate::store::saved::SavedError> for AppError {
    fn from(e: crate::store::saved::SavedError) -> AppError {
        match e {
            crate::store::saved::SavedError::Store(s) => s.into(),
            other => AppError::bad_input(other.to_string()),
        }
    }
}

/// What a subcommand ends with: its exit code, or an error that carries one.
pub type AppResult = Result<Exit, AppError>;
