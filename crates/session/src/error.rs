//! The crate's one error enum, with the reference's error codes. The session store, compaction
//! and branch summaries all fail through it; the loop and harness wrap it in their coded
//! `arbor_agent::agent::AgentError` (pi's `AgentHarnessError`), and tools fail with a
//! `arbor_agent::agent::ToolError` whose text the model reads (DECISIONS §8.9).

/// Errors of the session layer. [`SessionError::code`] gives the reference's code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
        /// What was being done (`reading JSON`, `session I/O task failed`, ...).
        message: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Reading, writing, locking or syncing a file or folder failed (code `storage`).
    #[error("storage error: {path}: {source}")]
    Io {
        /// The file or folder the operation was on.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// One JSON value is not a session entry, header or message: the text names the entry id
    /// and the failing field. Callers that know the file and line turn it into
    /// [`SessionError::Line`] with [`SessionError::at_line`].
    #[error("{0}")]
    Parse(String),
    /// Compaction or branch summary: the entries handed in are not a root→leaf chain (names the
    /// entry that breaks it).
    #[error("invalid path: {0}")]
    InvalidPath(String),
    /// A summary request was cancelled (by the caller's token or the provider reporting
    /// `aborted`). Its own variant: the harness reports it as "cancelled", not as a failure.
    #[error("{0}")]
    Aborted(String),
    /// A summary's model call failed, stopped on `length`, or answered with a tool call. The text
    /// says which request (`Summarization failed: ...`, `Branch summarization failed: ...`).
    #[error("{0}")]
    SummarizationFailed(String),
    /// A line of a session file that cannot be read.
    #[error("invalid session: {file}:{line}: {message}")]
    Line {
        /// The session file's path.
        file: String,
        /// The 1-based line number in that file.
        line: usize,
        /// What is wrong with the line, naming the entry id and field when known.
        message: String,
    },
}

impl SessionError {
    /// The stable error code: the reference's `not_found`, `invalid_session`, `invalid_entry`,
    /// `invalid_fork_target` and `storage`, and for summaries `invalid_path`, `aborted` and
    /// `summarization_failed` (DECISIONS §8.9).
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::NotFound(_) => "not_found",
            SessionError::InvalidSession(_)
            | SessionError::Parse(_)
            | SessionError::Line { .. } => "invalid_session",
            SessionError::InvalidEntry(_) => "invalid_entry",
            SessionError::InvalidForkTarget(_) => "invalid_fork_target",
            SessionError::Storage(_) | SessionError::Backend { .. } | SessionError::Io { .. } => {
                "storage"
            }
            SessionError::InvalidPath(_) => "invalid_path",
            SessionError::Aborted(_) => "aborted",
            SessionError::SummarizationFailed(_) => "summarization_failed",
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

    /// An I/O failure on `path`, keeping the error.
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        SessionError::Io {
            path: path.into(),
            source,
        }
    }
}

impl SessionError {
    /// Whether a summary request was cancelled rather than failed.
    pub fn is_aborted(&self) -> bool {
        matches!(self, SessionError::Aborted(_))
    }

    /// Puts `prefix` before a [`SessionError::Parse`] text (what was being read); other errors
    /// are returned as they are.
    pub fn within(self, prefix: impl std::fmt::Display) -> Self {
        match self {
            SessionError::Parse(m) => SessionError::Parse(format!("{prefix}: {m}")),
            other => other,
        }
    }

    /// The text of a [`SessionError::Parse`] placed at `file:line`; other errors unchanged.
    pub fn at_line(self, file: impl Into<String>, line: usize) -> Self {
        match self {
            SessionError::Parse(message) => SessionError::Line {
                file: file.into(),
                line,
                message,
            },
            other => other,
        }
    }
}

/// The shapes arbor-ai checks while reading JSON become parse errors here; anything else it
/// could report is kept as the source.
impl From<arbor_ai::AiError> for SessionError {
    fn from(e: arbor_ai::AiError) -> Self {
        match e {
            arbor_ai::AiError::InvalidJson(m) => SessionError::Parse(m),
            other => SessionError::backend("reading JSON", other),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = SessionError> = std::result::Result<T, E>;
