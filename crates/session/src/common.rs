//! Append preparation shared by the memory and JSONL backends: a draft or a verbatim entry
//! checked against the index and serialized, ready to be written.

use crate::entry::{EntryKind, SessionEntry};
use crate::error::{Result, SessionError};
use crate::index::{Index, LineSource};
use crate::line::envelope::{probe, Envelope};
use crate::storage::EntryDraft;
use serde_json::Value;

/// An entry checked against the index and serialized, ready to be written.
pub(crate) struct Prepared {
    pub entry: SessionEntry,
    pub line: String,
}

/// Builds the entry for `append`: id (given or fresh), parent = current leaf, timestamp.
pub(crate) fn prepare_draft(
    index: &Index,
    src: &dyn LineSource,
    draft: EntryDraft,
) -> Result<Prepared> {
    let id = match draft.id {
        Some(id) => id,
        None => crate::ids::new_entry_id(|c| index.contains(c)),
    };
    let mut kind = draft.kind;
    crate::rules::normalize_draft(&mut kind);
    if let EntryKind::ContextEdit(edit) = &kind {
        check_context_edit(index, src, &edit.target_id, &edit.replacement)?;
    }
    let entry = SessionEntry {
        id,
        parent_id: index.leaf_id().map(str::to_owned),
        timestamp: draft.timestamp.unwrap_or_else(crate::time::now_iso),
        kind,
    };
    finish(index, entry)
}

/// Checks a verbatim entry (fork, import): new id, existing parent and targets.
pub(crate) fn prepare_entry(index: &Index, entry: SessionEntry) -> Result<Prepared> {
    finish(index, entry)
}

fn finish(_index: &Index, entry: SessionEntry) -> Result<Prepared> {
    let line = serde_json::to_string(&entry)
        .map_err(|e| SessionError::InvalidEntry(format!("entry {}: {e}", entry.id)))?;
    Ok(Prepared { entry, line })
}

/// Reads a prepared line's envelope and checks it against the index (no state change): the
/// last step before a backend writes the line.
pub(crate) fn checked_probe<'a>(index: &Index, line: &'a str) -> Result<Envelope<'a>> {
    let env = probe(line).map_err(|e| SessionError::InvalidEntry(e.to_string()))?;
    index.check_append(&env)?;
    Ok(env)
}

/// DECISIONS §3.5: the target must be on the active branch and be a user/assistant/toolResult
/// message or a custom_message; the replacement is `null` or `{content}`.
fn check_context_edit(
    index: &Index,
    src: &dyn LineSource,
    target: &str,
    replacement: &Value,
) -> Result<()> {
    let Some(tix) = index.resolve(target) else {
        return Err(SessionError::NotFound(format!("Entry not found: {target}")));
    };
    crate::rules::check_replacement_shape(target, replacement)?;
    let on_branch = index.ancestry(index.leaf())?.contains(&tix);
    let raw = src.read(&index.slot(tix).raw)?;
    let env = probe(&raw).map_err(|e| line_error(index, tix, &e.to_string()))?;
    crate::rules::check_context_edit_target(
        target,
        on_branch,
        env.ty.as_ref(),
        env.message.role.as_deref(),
    )
}

pub(crate) fn line_error(index: &Index, ix: u32, message: &str) -> SessionError {
    let slot = index.slot(ix);
    if slot.line > 0 {
        SessionError::Line {
            file: index.origin().to_owned(),
            line: slot.line as usize,
            message: format!("entry {}: {message}", index.id(ix)),
        }
    } else {
        SessionError::InvalidEntry(format!(
            "{}: entry {}: {message}",
            index.origin(),
            index.id(ix)
        ))
    }
}
