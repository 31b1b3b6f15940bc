//! Where to cut the active path and what the summary must cover: pi 1.6.0's
//! `prepareCompaction` over the projected path (DECISIONS §6.1, §21.2). `testdata/plans/` holds pi's own answers; the tests hold these equal.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};

use arbor_ai::Message;

use crate::compaction::error::CompactionError;
use crate::compaction::file_ops::FileOperations;
use crate::compaction::projected::{intrinsically_visible, project_path, ProjectedEntry};
use crate::compaction::settings::CompactionSettings;
use crate::compaction::tokens::{
    calculate_context_tokens, current_system_tokens, estimate_tokens, valid_usage,
};
use crate::context::projection::CustomProjector;
use crate::message::AgentMessage;
use crate::session::entry::{EntryKind, SessionEntry};

/// Everything a summary request and the compaction entry need, computed without a model.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPreparation {
    /// The first entry kept verbatim after the summary.
    pub first_kept_entry_id: String,
    /// History before the cut (or before the split turn), to be summarized.
    pub messages_to_summarize: Vec<AgentMessage>,
    /// The start of a turn the cut splits, summarized separately (empty when not split).
    pub turn_prefix_messages: Vec<AgentMessage>,
    /// The cut falls inside a turn, so its start is summarized apart (two summary requests).
    pub is_split_turn: bool,
    /// The context size before compacting (projected estimate).
    pub tokens_before: u64,
    /// The newest compaction's summary on the path: the new summary updates it.
    pub previous_summary: Option<String>,
    /// Files the summarized part read, wrote and edited.
    pub file_ops: FileOperations,
    /// The settings it was prepared with.
    pub settings: CompactionSettings,
}

/// A cut over projected entries: indices into the projected list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CutPoint {
    /// Index of the first kept entry in the path.
    pub first_kept_entry_index: usize,
    /// The entry that starts the split turn (`None` when the cut is at a turn start).
    pub turn_start_index: Option<usize>,
    /// The first kept entry is not the start of its turn (the turn is cut in two).
    pub is_split_turn: bool,
}

fn has_role(messages: &[AgentMessage], pred: impl Fn(&AgentMessage) -> bool) -> bool {
    messages.iter().any(pred)
}

/// Roles the kept range may start at (never a tool result: it must follow its call).
fn is_cut_point_message(m: &AgentMessage) -> bool {
    matches!(
        m,
        AgentMessage::Llm(Message::User(_) | Message::Assistant(_))
            | AgentMessage::BashExecution(_)
            | AgentMessage::Custom(_)
            | AgentMessage::BranchSummary(_)
            | AgentMessage::CompactionSummary(_)
    )
}

/// Roles that open a turn.
fn is_turn_start_message(m: &AgentMessage) -> bool {
    matches!(
        m,
        AgentMessage::Llm(Message::User(_))
            | AgentMessage::BashExecution(_)
            | AgentMessage::Custom(_)
            | AgentMessage::BranchSummary(_)
            | AgentMessage::CompactionSummary(_)
    )
}

fn is_turn_start(e: &ProjectedEntry<'_>) -> bool {
    !e.is_compaction() && has_role(&e.messages, is_turn_start_message)
}

fn entry_tokens(e: &ProjectedEntry<'_>) -> u64 {
    e.messages.iter().map(estimate_tokens).sum()
}

/// The projected cut point over `[start, end)` keeping about `keep_recent_tokens`.
pub fn find_cut_point(
    entries: &[ProjectedEntry<'_>],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
    projectors: &HashMap<String, CustomProjector>,
) -> CutPoint {
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| {
            !entries[i].is_compaction() && has_role(&entries[i].messages, is_cut_point_message)
        })
        .collect();
    let (Some(&first_cut), Some(&last_cut)) = (cut_points.first(), cut_points.last()) else {
        return CutPoint {
            first_kept_entry_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first_cut;
    let mut exceeded = false;
    let mut accumulated = 0u64;
    for i in (start..end).rev() {
        let tokens = entry_tokens(&entries[i]);
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent_tokens {
            exceeded = true;
            cut = cut_points
                .iter()
                .copied()
                .find(|&c| c >= i)
                .unwrap_or(last_cut);
            break;
        }
    }

    // A failed attempt hidden by context edits after the last visible input: keep the cut
    // from landing before it (pi's recovery-omission rule).
    if exceeded && recovery_omission_suffix(&entries[(cut + 1).min(end)..end], projectors) {
        cut += 1;
    }

    // Pull invisible metadata right before the cut into the kept range.
    while cut > start {
        let prev = &entries[cut - 1];
        if prev.is_compaction() || !prev.messages.is_empty() {
            break;
        }
        cut -= 1;
    }

    let starts_turn = is_turn_start(&entries[cut]);
    let turn_start_index = if starts_turn {
        None
    } else {
        (start..=cut).rev().find(|&i| is_turn_start(&entries[i]))
    };
    CutPoint {
        first_kept_entry_index: cut,
        turn_start_index,
        is_split_turn: !starts_turn && turn_start_index.is_some(),
    }
}

fn recovery_omission_suffix(
    suffix: &[ProjectedEntry<'_>],
    projectors: &HashMap<String, CustomProjector>,
) -> bool {
    let omitted = |e: &ProjectedEntry<'_>| {
        !matches!(e.entry.kind, EntryKind::ContextEdit(_))
            && intrinsically_visible(e.entry, projectors)
            && e.messages.is_empty()
    };
    let omitted_ids: HashSet<&str> = suffix
        .iter()
        .filter(|e| omitted(e))
        .map(|e| e.entry.id.as_str())
        .collect();
    let external_replacement = suffix.iter().any(|e| match &e.entry.kind {
        EntryKind::ContextEdit(edit) => {
            !edit.replacement.is_null() && !omitted_ids.contains(edit.target_id.as_str())
        }
        _ => false,
    });
    let omitted_assistant = suffix.iter().any(|e| {
        matches!(&e.entry.kind, EntryKind::Message(m) if matches!(m.message, AgentMessage::Llm(Message::Assistant(_))))
            && omitted(e)
    });
    let all_hidden = suffix
        .iter()
        .all(|e| !e.is_compaction() && (!intrinsically_visible(e.entry, projectors) || omitted(e)));
    !external_replacement && omitted_assistant && all_hidden
}

/// Messages a projected entry contributes to a summary: none from a compaction, never
/// `system` messages (prompt state, replayed by the compaction entry instead).
fn summary_messages<'e>(e: &'e ProjectedEntry<'_>) -> impl Iterator<Item = &'e AgentMessage> {
    let skip = e.is_compaction();
    e.messages
        .iter()
        .filter(move |m| !skip && !matches!(m, AgentMessage::Llm(Message::System(_))))
}

/// Checks that `path` is a parent chain (each entry's parent is the one before it).
fn check_chain<E: Borrow<SessionEntry>>(path: &[E]) -> Result<(), CompactionError> {
    for pair in path.windows(2) {
        let (parent, child) = (pair[0].borrow(), pair[1].borrow());
        if child.parent_id.as_deref() != Some(parent.id.as_str()) {
            return Err(CompactionError::InvalidPath(format!(
                "entry {} does not follow {} (its parent is {})",
                child.id,
                parent.id,
                child.parent_id.as_deref().unwrap_or("none")
            )));
        }
    }
    Ok(())
}

/// The projected context estimate (`tokensBefore`): the last usage is trusted only when no
/// `context_edit` or `compaction` on the path comes after its entry; otherwise every message
/// is estimated, system messages as one replayed system prompt.
pub fn projected_context_tokens<E: Borrow<SessionEntry>>(
    path: &[E],
    projected: &[ProjectedEntry<'_>],
) -> u64 {
    let messages: Vec<&AgentMessage> = projected.iter().flat_map(|e| e.messages.iter()).collect();
    let anchor = messages.iter().rposition(|m| valid_usage(m).is_some());
    if let Some(idx) = anchor {
        let mut seen = 0usize;
        let mut usage_path_index = None;
        for e in projected {
            let next = seen + e.messages.len();
            if idx < next {
                usage_path_index = Some(e.path_index);
                break;
            }
            seen = next;
        }
        let latest_invalidating = path.iter().rposition(|e| {
            matches!(
                e.borrow().kind,
                EntryKind::ContextEdit(_) | EntryKind::Compaction(_)
            )
        });
        let trusted = match (usage_path_index, latest_invalidating) {
            (Some(u), Some(l)) => u > l,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if trusted {
            let usage = valid_usage(messages[idx]).map_or(0, calculate_context_tokens);
            let trailing: u64 = messages[idx + 1..].iter().map(|m| estimate_tokens(m)).sum();
            return usage + trailing;
        }
    }
    let system: Vec<AgentMessage> = messages
        .iter()
        .filter(|m| matches!(m, AgentMessage::Llm(Message::System(_))))
        .map(|m| (*m).clone())
        .collect();
    let mut tokens = current_system_tokens(&system).unwrap_or(0);
    tokens += messages
        .iter()
        .filter(|m| !matches!(m, AgentMessage::Llm(Message::System(_))))
        .map(|m| estimate_tokens(m))
        .sum::<u64>();
    tokens
}

/// pi 1.6.0's `prepareCompaction` on the active path: `path` is the full ancestry root..=leaf
/// (`Session::ancestry`) or the bounded branch (`Session::branch`), oldest first.
/// `Ok(None)`: nothing to compact (empty path, the leaf is a compaction, or nothing before the
/// cut).
pub fn prepare_compaction<E: Borrow<SessionEntry>>(
    path: &[E],
    settings: &CompactionSettings,
) -> Result<Option<CompactionPreparation>, CompactionError> {
    prepare_compaction_with(path, settings, &HashMap::new())
}

/// [`prepare_compaction`] with the session's custom projectors (for `custom` entries that
/// reach the model).
pub fn prepare_compaction_with<E: Borrow<SessionEntry>>(
    path: &[E],
    settings: &CompactionSettings,
    projectors: &HashMap<String, CustomProjector>,
) -> Result<Option<CompactionPreparation>, CompactionError> {
    check_chain(path)?;
    match path.last() {
        None => return Ok(None),
        Some(last) if matches!(last.borrow().kind, EntryKind::Compaction(_)) => return Ok(None),
        Some(_) => {}
    }
    let projected = project_path(path, projectors);

    // The newest compaction opens the projection; older ones inside its kept range project
    // nothing.
    let prev_index = projected
        .iter()
        .position(|e| e.is_compaction() && !e.messages.is_empty());
    let (previous_summary, prev_compaction, boundary_start) = match prev_index {
        Some(i) => match &projected[i].entry.kind {
            EntryKind::Compaction(c) => (Some(c.summary.clone()), Some(c), i + 1),
            _ => (None, None, 0),
        },
        None => (None, None, 0),
    };
    let boundary_end = projected.len();
    let tokens_before = projected_context_tokens(path, &projected);
    let cut = find_cut_point(
        &projected,
        boundary_start,
        boundary_end,
        settings.keep_recent_tokens,
        projectors,
    );
    let Some(first_kept) = projected.get(cut.first_kept_entry_index) else {
        return Ok(None);
    };
    let first_kept_entry_id = first_kept.entry.id.clone();
    let history_end = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(t)) => t,
        _ => cut.first_kept_entry_index,
    };

    // A previous compaction with a retained tail (written by pi's harness) keeps those
    // messages inside its own entry: Arbor's compactions cannot point into them, so they are
    // summarized now (DECISIONS §21.3).
    let mut messages_to_summarize: Vec<AgentMessage> = Vec::new();
    if let Some(c) = prev_compaction {
        if let Some(tail) = &c.retained_tail {
            messages_to_summarize.extend(
                tail.iter()
                    .filter(|m| !matches!(m, AgentMessage::Llm(Message::System(_))))
                    .cloned(),
            );
        }
    }
    messages_to_summarize.extend(
        projected[boundary_start.min(history_end)..history_end]
            .iter()
            .flat_map(summary_messages)
            .cloned(),
    );
    let turn_prefix_messages: Vec<AgentMessage> = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(t)) => projected[t..cut.first_kept_entry_index]
            .iter()
            .flat_map(summary_messages)
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return Ok(None);
    }

    let mut file_ops = FileOperations::default();
    if let Some(c) = prev_compaction {
        if c.from_hook != Some(true) {
            if let Some(details) = &c.details {
                file_ops.add_details(details);
            }
        }
    }
    for m in &messages_to_summarize {
        file_ops.add_message(m);
    }
    if cut.is_split_turn {
        for m in &turn_prefix_messages {
            file_ops.add_message(m);
        }
    }

    Ok(Some(CompactionPreparation {
        first_kept_entry_id,
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary,
        file_ops,
        settings: *settings,
    }))
}
