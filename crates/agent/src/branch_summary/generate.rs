//! The branch-summary request: the abandoned entries as a transcript under the branch prompt,
//! the reference's preamble in front of the answer and the file lists after it.

use arbor_ai::stream::ApiProvider;
use arbor_ai::{Model, Usage};

use crate::branch_summary::prepare::prepare_branch_entries;
use crate::compaction::error::CompactionError;
use crate::compaction::file_ops::{format_file_operations, FileLists};
use crate::compaction::prompts;
use crate::compaction::serialize::serialize_conversation;
use crate::compaction::settings::DEFAULT_RESERVE_TOKENS;
use crate::compaction::summarize::{summary_request, SummaryOptions, SummaryRequestKind};
use crate::session::entry::SessionEntry;
use crate::session::BranchSummaryDraft;

/// Context window assumed for a model that does not declare one.
pub const FALLBACK_CONTEXT_WINDOW: u64 = 128_000;

/// How to summarize a branch.
#[derive(Debug, Clone)]
pub struct BranchSummaryOptions {
    /// `custom_instructions`, `thinking_level`, `cancel`, `retry`, `on_event`, `stream`.
    pub summary: SummaryOptions,
    /// With custom instructions: use them instead of the branch prompt (not as a focus).
    pub replace_instructions: bool,
    /// Head-room subtracted from the context window for the transcript budget.
    pub reserve_tokens: u64,
}

impl Default for BranchSummaryOptions {
    fn default() -> Self {
        BranchSummaryOptions {
            summary: SummaryOptions::default(),
            replace_instructions: false,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
        }
    }
}

/// The written summary and what the `branch_summary` entry records with it.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummaryResult {
    /// The summary text.
    pub summary: String,
    /// Files read and modified on the branch.
    pub details: FileLists,
    /// `None` when no model call was needed (nothing to summarize).
    pub usage: Option<Usage>,
}

impl BranchSummaryResult {
    /// The draft `Session::move_to` writes (`fromHook: false`).
    pub fn to_draft(&self) -> BranchSummaryDraft {
        BranchSummaryDraft {
            summary: self.summary.clone(),
            details: serde_json::to_value(&self.details).ok(),
            usage: self.usage.clone(),
            from_hook: Some(false),
        }
    }
}

/// The transcript budget for `model`: its context window (128,000 when unknown) minus the
/// reserve.
pub fn branch_token_budget(model: &Model, reserve_tokens: u64) -> u64 {
    let window = if model.context_window > 0 {
        model.context_window
    } else {
        FALLBACK_CONTEXT_WINDOW
    };
    window.saturating_sub(reserve_tokens)
}

/// Summarizes the abandoned `entries` (oldest first, as collected). Nothing to summarize
/// gives "No content to summarize" without a model call.
pub async fn generate_branch_summary(
    entries: &[SessionEntry],
    provider: &dyn ApiProvider,
    model: &Model,
    options: &BranchSummaryOptions,
) -> Result<BranchSummaryResult, CompactionError> {
    let preparation =
        prepare_branch_entries(entries, branch_token_budget(model, options.reserve_tokens));
    if preparation.messages.is_empty() {
        return Ok(BranchSummaryResult {
            summary: prompts::NO_BRANCH_CONTENT.to_string(),
            details: FileLists::default(),
            usage: None,
        });
    }
    let prompt = prompts::branch_prompt(
        &serialize_conversation(&preparation.messages),
        options.summary.instructions(),
        options.replace_instructions,
    );
    let (text, usage) = summary_request(
        provider,
        model,
        &options.summary,
        SummaryRequestKind::Branch,
        prompt,
    )
    .await?;
    let details = preparation.file_ops.file_lists();
    Ok(BranchSummaryResult {
        summary: format!(
            "{}{text}{}",
            prompts::BRANCH_SUMMARY_PREAMBLE,
            format_file_operations(&details)
        ),
        details,
        usage: Some(usage),
    })
}
