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
    /// The backend failed (I/O, database, lock).
    #[error("storage error: {0}")]
    Storage(String),
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
            SessionError::Storage(_) | SessionError::Io { .. } => "storage",
        }
    }

    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        SessionError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = SessionError> = std::result::Result<T, E>;
