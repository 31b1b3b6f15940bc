//! The projected active path with provenance: each context entry beside the messages it
//! projects to (pi 1.6.0's `buildSessionProjection`, DECISIONS §6.1).
//! Compaction preparation cuts over this list, so context edits and the newest compaction's
//! kept range are already applied.

use std::borrow::Borrow;
use std::collections::HashMap;

use crate::context::projection::{
    apply_edit, default_context_indices, edit_replacement, entry_messages, latest_edits,
    CustomProjector,
};
use crate::message::AgentMessage;
use crate::session::entry::{EntryKind, SessionEntry};

/// One context entry and what it shows the model (after its latest context edit).
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedEntry<'a> {
    /// The entry.
    pub entry: &'a SessionEntry,
    /// Index of the entry in the full ancestry it came from.
    pub path_index: usize,
    /// What it contributes to the context (empty for most non-message entries).
    pub messages: Vec<AgentMessage>,
}

impl ProjectedEntry<'_> {
    /// The entry is a `compaction`.
    pub fn is_compaction(&self) -> bool {
        matches!(self.entry.kind, EntryKind::Compaction(_))
    }
}

/// Projects the full ancestry (root..=leaf) entry by entry, the way the context is built
/// (DECISIONS §3.3–§3.5), keeping which entry each message came from.
pub fn project_path<'a, E: Borrow<SessionEntry>>(
    path: &'a [E],
    projectors: &HashMap<String, CustomProjector>,
) -> Vec<ProjectedEntry<'a>> {
    let indices = default_context_indices(path);
    let entries: Vec<&SessionEntry> = indices.iter().map(|&i| path[i].borrow()).collect();
    let edits = latest_edits(&entries);
    indices
        .iter()
        .zip(entries.iter())
        .enumerate()
        .map(|(position, (&path_index, &entry))| {
            let raw = entry_messages(entry, position, projectors);
            let messages = match edits.get(entry.id.as_str()) {
                Some(edit) => apply_edit(raw, edit_replacement(edit)),
                None => raw,
            };
            ProjectedEntry {
                entry,
                path_index,
                messages,
            }
        })
        .collect()
}

/// Whether an entry projects at least one message on its own, with no context edit applied
/// (pi's "intrinsically visible"; a `context_edit` never is).
pub fn intrinsically_visible(
    entry: &SessionEntry,
    projectors: &HashMap<String, CustomProjector>,
) -> bool {
    match &entry.kind {
        EntryKind::Message(_) | EntryKind::CustomMessage(_) | EntryKind::Compaction(_) => true,
        EntryKind::BranchSummary(b) => !b.summary.is_empty(),
        EntryKind::Custom(c) => projectors
            .get(&c.custom_type)
            .is_some_and(|p| !p(entry).is_empty()),
        _ => false,
    }
}
