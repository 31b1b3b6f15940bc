//! The crate's one error type.

/// Errors of the AI layer. Failures *during* a stream are not errors of this type: they become
/// terminal `error` events (see [`crate::event`]), whose `errorMessage` is this error's text
/// when a request could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AiError {
    /// No API key for the provider (neither passed nor in the environment).
    #[error("No API key for provider: {0}")]
    NoApiKey(String),
    /// A model or provider was not found in the catalogue.
    #[error("unknown model {0}")]
    UnknownModel(String),
    /// No implementation serves the model's `api` (pi's wording).
    #[error("No API provider registered for api: {0}")]
    UnsupportedApi(String),
    /// The request cannot be expressed for this model (a refused option or thinking level).
    #[error("{0}")]
    InvalidRequest(String),
    /// A model catalogue (`models.json` or the built-in one) was refused; `message` names the
    /// offending field path.
    #[error("{source_name}: {message}")]
    ModelsConfig {
        /// The catalogue's name (a path, or "built-in catalog").
        source_name: String,
        /// What is wrong, starting with the field path.
        message: String,
    },
    /// A JSON value does not have the shape a type needs; the text names the failing field's
    /// path (`content[1].text: invalid type ...`), so a bad value in a session file is found.
    #[error("{0}")]
    InvalidJson(String),
    /// A file could not be read.
    #[error("{path}: cannot read file: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
}

impl AiError {
    /// Puts `prefix` (a field path or what was being read) before an [`AiError::InvalidJson`]
    /// text; other errors are returned as they are.
    pub fn within(self, prefix: impl std::fmt::Display) -> Self {
        match self {
            AiError::InvalidJson(m) => AiError::InvalidJson(format!("{prefix}: {m}")),
            other => other,
        }
    }
}

/// `Result` with [`AiError`] as the default error.
pub type Result<T, E = AiError> = std::result::Result<T, E>;
