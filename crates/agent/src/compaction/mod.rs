//! Compaction: summarizing the older part of the active path into a `compaction` entry so the
//! context fits the model again. A projection, never a rewrite: the log keeps everything and
//! the context starts at the summary (DECISIONS §6, §21).
//!
//! - `tokens`: chars/4 estimates, context size from the last usage, the trigger.
//! - `prepare`: where to cut and what to summarize (pi 1.6.0's `prepareCompaction`).
//! - `serialize`: the transcript text the summarizer reads.
//! - `file_ops`: files read / modified, carried between summaries.
//! - `summarize`: the summary requests and [`compact`].
//! - `auto`: when to compact automatically (threshold, overflow) and the events.
//! - `plan`: the dry-run JSON of a preparation (`arbor session compact --dry-run --json`).
//!
//! Pure except for the summary request itself, which goes through an
//! [`arbor_ai::stream::ApiProvider`] the caller supplies.

pub(crate) mod auto;
pub(crate) mod error;
pub(crate) mod file_ops;
pub(crate) mod js;
pub(crate) mod plan;
pub(crate) mod prepare;
pub(crate) mod projected;
pub(crate) mod prompts;
pub(crate) mod serialize;
pub(crate) mod summarize;
pub(crate) mod tokens;

use serde::{Deserialize, Serialize};

pub use auto::{
    AutoCompaction, CompactionEndEvent, CompactionReason, CompactionStartEvent,
    OVERFLOW_RECOVERY_FAILED,
};
pub use error::{BranchSummaryError, CompactionError};
pub use file_ops::{format_file_operations, FileLists, FileOperations};
pub use plan::compaction_plan_json;
pub use prepare::{prepare_compaction, CompactionPreparation, CutPoint};
pub use serialize::serialize_conversation;
pub use summarize::{
    compact, CompactionResult, SummaryEvent, SummaryEventSink, SummaryOptions, SummaryRequestKind,
};
pub use tokens::{
    calculate_context_tokens, estimate_context_tokens, estimate_tokens, should_compact,
    ContextUsageEstimate,
};

/// The three compaction settings (pi's `compaction` block of `settings.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSettings {
    pub enabled: bool,
    /// Head-room kept free in the context window.
    pub reserve_tokens: u64,
    /// Approximate size of the recent tail kept verbatim.
    pub keep_recent_tokens: u64,
}

/// Default reserve (compaction and branch summaries).
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default size of the kept tail.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
        }
    }
}
