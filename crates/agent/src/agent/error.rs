//! The error of the agent loop and the harness: pi's `AgentHarnessError` with its codes
//! (DECISIONS §20.10). A struct with a code rather than another enum, so the
//! crate keeps one `thiserror` enum ([`crate::SessionError`]) and this one wraps it as `source`.

use std::fmt;

use crate::error::SessionError;

/// What kind of failure an [`AgentError`] is: pi's `AgentHarnessError.code`, serialized in
/// snake_case. Match on this, not on the message; new codes may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// Another operation (turn, compaction, branch summary) is running; the call was refused
    /// without side effects. Wait for idle or abort first.
    Busy,
    /// The call does not fit the current state: steering or a follow-up while idle, continuing
    /// from an empty context or from an assistant message, a run that ended without a reply.
    InvalidState,
    /// An argument names something that does not exist or repeats: an unknown entry id, an
    /// unknown or duplicate tool name.
    InvalidArgument,
    /// Reading or writing the session failed; the [`SessionError`] is the source.
    Session,
    /// A hook or a loop callback failed; its message says which.
    Hook,
    /// Credentials were missing or refused. Kept for pi's vocabulary: this crate does not raise
    /// it (a provider reports a missing key in the reply it streams).
    Auth,
    /// Manual compaction failed, was cancelled or had nothing to do (see
    /// [`crate::harness::NOTHING_TO_COMPACT`] and its siblings for the texts).
    Compaction,
    /// The branch summary of a tree navigation failed, or the branch to summarize could not
    /// be collected.
    BranchSummary,
    /// A failure with no better code, such as reporting a failed run failing in turn.
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
