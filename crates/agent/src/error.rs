//! The crate's one error type, with the reference's error codes.

/// Errors of the session layer. [`SessionError::code`] gives the reference's code.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A session, entry or target does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Stored data breaks the format (bad line, dangling parent, duplicate id, cycle...).
    #[error("invalid session: {0}")]
    InvalidSession(String),
    /// An entry the caller tried to append is not acceptable.
    #[error("invalid entry: {0}")]
    InvalidEntry(String),
    /// A fork target is not a user message (position `before`) or does not exist.
    #[error("invalid fork target: {0}")]
    InvalidForkTarget(String),
    /// The backend failed (I/O, database, lock) and there is no underlying error to keep.
    #[error("storage error: {0}")]
    Storage(String),
    /// The backend failed with an underlying error (a database driver's, a task's), kept as
    /// the source so callers can inspect it.
    #[error("storage error: {message} ({source})")]
    Backend {
        message: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("storage error: {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A line of a session file that cannot be read.
    #[error("invalid session: {file}:{line}: {message}")]
    Line {
        file: String,
        line: usize,
        message: String,
    },
}

impl SessionError {
    /// The stable error code: `not_found`, `invalid_session`, `invalid_entry`,
    /// `invalid_fork_target` or `storage`.
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::NotFound(_) => "not_found",
            SessionError::InvalidSession(_) | SessionError::Line { .. } => "invalid_session",
            SessionError::InvalidEntry(_) => "invalid_entry",
            SessionError::InvalidForkTarget(_) => "invalid_fork_target",
            SessionError::Storage(_) | SessionError::Backend { .. } | SessionError::Io { .. } => {
                "storage"
            }
        }
    }

    /// A backend failure caused by `source`.
    pub fn backend(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        SessionError::Backend {
            message: message.into(),
            source: Box::new(source),
        }
    }

    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        SessionError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Why one JSON line is not a session entry or header: the text names the entry id and the
/// failing field. Callers that know the file and line wrap it into [`SessionError::Line`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl From<ParseError> for String {
    fn from(e: ParseError) -> String {
        e.0
    }
}

impl From<String> for ParseError {
    fn from(message: String) -> Self {
        ParseError(message)
    }
}

pub type Result<T, E = SessionError> = std::result::Result<T, E>;
