//! Why a compaction or branch summary could not be produced.

use crate::error::SessionError;

/// Failures of compaction and branch summaries. An abort is its own variant: the harness
/// reports it as "cancelled", not as an error.
#[derive(Debug, thiserror::Error)]
pub enum CompactionError {
    /// The entries handed in are not a root→leaf chain (names the entry that breaks it).
    #[error("invalid path: {0}")]
    InvalidPath(String),
    /// The request was cancelled (by the caller's token or the provider reporting `aborted`).
    #[error("{0}")]
    Aborted(String),
    /// The model call failed, stopped on `length`, or answered with a tool call. The text says
    /// which request (`Summarization failed: ...`, `Branch summarization failed: ...`).
    #[error("{0}")]
    SummarizationFailed(String),
    /// Reading or writing the session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// Branch summaries fail the same ways (`BranchSummaryError::Aborted` etc.).
pub type BranchSummaryError = CompactionError;

impl CompactionError {
    pub fn is_aborted(&self) -> bool {
        matches!(self, CompactionError::Aborted(_))
    }
}
