//! Compaction and branch summaries fail through the crate's one error enum (DECISIONS §8.9):
//! [`SessionError::InvalidPath`], [`SessionError::Aborted`] and
//! [`SessionError::SummarizationFailed`], next to the storage failures they can also meet.

use crate::error::SessionError;

/// pi's name for a failed compaction.
pub type CompactionError = SessionError;

/// pi's name for a failed branch summary (`BranchSummaryError::Aborted` etc.).
pub type BranchSummaryError = SessionError;
