//! The error of the agent loop and the harness: pi's `AgentHarnessError` with its codes
//! (DECISIONS §20.10). A struct with a code rather than another enum, so the
//! crate keeps one `thiserror` enum ([`crate::SessionError`]) and this one wraps it as `source`.

use std::fmt;

use crate::error::SessionError;

/// `AgentHarnessError.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    Busy,
    InvalidState,
    InvalidArgument,
    Session,
    Hook,
    Auth,
    Compaction,
    BranchSummary,
    Unknown,
}

impl ErrorCode {
    /// The code as pi writes it (`busy`, `invalid_state`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Busy => "busy",
            ErrorCode::InvalidState => "invalid_state",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::Session => "session",
            ErrorCode::Hook => "hook",
            ErrorCode::Auth => "auth",
            ErrorCode::Compaction => "compaction",
            ErrorCode::BranchSummary => "branch_summary",
            ErrorCode::Unknown => "unknown",
        }
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failed harness or loop operation: a stable [`ErrorCode`], a message for people, and the
/// original error kept as `source`.
#[derive(Debug)]
pub struct AgentError {
    code: ErrorCode,
    message: String,
    source: Option<Source>,
}

/// pi's name for it.
pub type AgentHarnessError = AgentError;

impl AgentError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AgentError {
            code,
            message: message.into(),
            source: None,
        }
    }

    /// Keeps the underlying error as the source.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// A hook or listener failure (`hook`), keeping the cause.
    pub fn hook(message: impl Into<String>) -> Self {
        AgentError::new(ErrorCode::Hook, message)
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message for people.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<SessionError> for AgentError {
    fn from(e: SessionError) -> Self {
        AgentError::new(ErrorCode::Session, e.to_string()).with_source(e)
    }
}
