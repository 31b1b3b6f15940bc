//! Compaction: summarizing the older part of the active path into a `compaction` entry so the
//! context fits the model again. A projection, never a rewrite: the log keeps everything and
//! the context starts at the summary (DECISIONS §6, §21).
//!
//! - `settings`: [`CompactionSettings`] and the defaults.
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
pub(crate) mod settings;
pub(crate) mod summarize;
pub(crate) mod tokens;

pub use auto::{
    AutoCompaction, AutoDecision, CheckPoint, CompactionCheck, CompactionEndEvent,
    CompactionEndResult, CompactionReason, CompactionStartEvent, OVERFLOW_RECOVERY_FAILED,
};
pub use error::{BranchSummaryError, CompactionError};
pub use file_ops::{format_file_operations, FileLists, FileOperations};
pub use plan::compaction_plan_json;
pub use prepare::{prepare_compaction, CompactionPreparation};
pub use serialize::serialize_conversation;
pub use settings::{CompactionSettings, DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS};
pub use summarize::{
    compact, CompactionResult, SummaryEvent, SummaryEventSink, SummaryOptions, SummaryRequestKind,
};
pub use tokens::{
    calculate_context_tokens, estimate_context_tokens, estimate_tokens, should_compact,
    ContextUsageEstimate,
};
