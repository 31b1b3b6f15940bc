//! The crate's one error type.

/// Errors of the AI layer. Failures *during* a stream are not errors of this type: they become
/// terminal `error` events (see [`crate::event`]).
#[derive(Debug, thiserror::Error)]
pub enum AiError {
    /// A JSON value did not have the expected shape; the message names the field.
    #[error("invalid {what}: {message}")]
    InvalidJson { what: String, message: String },
    /// No API key for the provider (neither passed nor in the environment).
    #[error("No API key for provider: {0}")]
    NoApiKey(String),
    /// A model or provider was not found.
    #[error("unknown model {0}")]
    UnknownModel(String),
    /// The model's `api` has no client.
    #[error("unsupported api {0}")]
    UnsupportedApi(String),
    #[error("{0}")]
    Config(String),
    /// A model catalogue (`models.json` or the built-in one) was refused; `message` names the
    /// offending field path.
    #[error("{source_name}: {message}")]
    ModelsConfig {
        source_name: String,
        message: String,
    },
    #[error("io error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = AiError> = std::result::Result<T, E>;
