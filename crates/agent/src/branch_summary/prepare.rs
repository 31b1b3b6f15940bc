//! What of the abandoned entries the summarizer reads: newest first until the token budget is
//! spent (earlier summaries squeezed in while under 90 %), tool results left out (their call
//! says what happened), context edits honoured, file operations from every entry.

use std::collections::HashMap;

use arbor_ai::Message;

use crate::compaction::file_ops::FileOperations;
use crate::compaction::tokens::estimate_tokens;
use crate::context::projection::{apply_edit, edit_replacement, entry_ms, latest_edits};
use crate::message::{AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage};
use crate::session::entry::{EntryKind, SessionEntry};

/// Messages to summarize (oldest first), their estimated size and the files touched.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BranchPreparation {
    /// The branch's messages, oldest first, cut to the token budget.
    pub messages: Vec<AgentMessage>,
    /// Files the branch read, wrote and edited.
    pub file_ops: FileOperations,
    /// Estimated tokens of `messages`.
    pub total_tokens: u64,
}

/// The message an abandoned entry contributes (`None`: nothing).
fn branch_message(entry: &SessionEntry, edit: Option<&SessionEntry>) -> Option<AgentMessage> {
    let edited = |m: AgentMessage| match edit {
        Some(e) => apply_edit(vec![m], edit_replacement(e)).into_iter().next(),
        None => Some(m),
    };
    match &entry.kind {
        EntryKind::Message(m) => match &m.message {
            AgentMessage::Llm(Message::ToolResult(_)) => None,
            other => edited(other.clone()),
        },
        EntryKind::CustomMessage(c) => edited(AgentMessage::Custom(CustomMessage {
            custom_type: c.custom_type.clone(),
            content: c.content.clone(),
            display: c.display,
            details: c.details.clone(),
            timestamp: entry_ms(entry).into(),
            extra: Default::default(),
        })),
        EntryKind::BranchSummary(b) => Some(AgentMessage::BranchSummary(BranchSummaryMessage {
            summary: b.summary.clone(),
            from_id: b.from_id.clone(),
            timestamp: entry_ms(entry).into(),
            extra: Default::default(),
        })),
        EntryKind::Compaction(c) => {
            Some(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: c.summary.clone(),
                tokens_before: c.tokens_before,
                timestamp: entry_ms(entry).into(),
                extra: Default::default(),
            }))
        }
        _ => None,
    }
}

/// pi 1.6.0's `prepareBranchEntries`: `token_budget` 0 means no limit.
pub fn prepare_branch_entries(entries: &[SessionEntry], token_budget: u64) -> BranchPreparation {
    let mut file_ops = FileOperations::default();
    for e in entries {
        if let EntryKind::BranchSummary(b) = &e.kind {
            if b.from_hook != Some(true) {
                if let Some(details) = &b.details {
                    file_ops.add_details(details);
                }
            }
        }
    }
    let edits: HashMap<&str, &SessionEntry> = latest_edits(entries);
    let mut newest_first: Vec<AgentMessage> = Vec::new();
    let mut total = 0u64;
    for e in entries.iter().rev() {
        let Some(message) = branch_message(e, edits.get(e.id.as_str()).copied()) else {
            continue;
        };
        file_ops.add_message(&message);
        let tokens = estimate_tokens(&message);
        if token_budget > 0 && total + tokens > token_budget {
            let is_summary = matches!(
                e.kind,
                EntryKind::Compaction(_) | EntryKind::BranchSummary(_)
            );
            // total < 0.9 × budget, in integers.
            if is_summary && u128::from(total) * 10 < u128::from(token_budget) * 9 {
                newest_first.push(message);
                total += tokens;
            }
            break;
        }
        newest_first.push(message);
        total += tokens;
    }
    newest_first.reverse();
    BranchPreparation {
        messages: newest_first,
        file_ops,
        total_tokens: total,
    }
}
