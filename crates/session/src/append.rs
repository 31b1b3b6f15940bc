//! Turning an [`EntryDraft`] into the entry a backend stores, the same way in all four
//! backends: the draft is normalized ([`rules::normalize_draft`]), then placed under the
//! current leaf with its given id (or a fresh one) and a timestamp. What differs per backend —
//! how a context-edit target is looked up, how an id collision is detected — stays in the
//! backend; the steps around it live here so that no backend can drift from the others.
//!
//! The memory and JSONL backends also share the index-side half (`prepare_draft`,
//! `prepare_entry`, `checked_probe`): checks against their in-memory index and the
//! serialized line they write.

use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::error::{Result, SessionError};
use crate::ids;
use crate::index::{Index, LineSource};
use crate::index_reads::line_error;
use crate::line::envelope::{probe, LineEnvelope};
use crate::rules;
use crate::storage::EntryDraft;

/// A draft whose kind is normalized, not yet placed in the log. Backends run their target
/// checks on [`DraftEntry::kind`] before [`DraftEntry::place`].
#[derive(Debug)]
pub struct DraftEntry {
    id: Option<String>,
    timestamp: Option<String>,
    kind: EntryKind,
}

impl DraftEntry {
    /// Normalizes the draft (today: the `session_info` name, see [`rules::normalize_draft`]).
    pub fn new(draft: EntryDraft) -> DraftEntry {
        let mut kind = draft.kind;
        rules::normalize_draft(&mut kind);
        DraftEntry {
            id: draft.id,
            timestamp: draft.timestamp,
            kind,
        }
    }

    /// The normalized kind, for the backend's target checks.
    pub fn kind(&self) -> &EntryKind {
        &self.kind
    }

    /// Refuses an empty caller-given id. The database backends call it before relying on their
    /// unique index; memory and JSONL leave it to the envelope check of the written line.
    pub fn check_given_id(&self) -> Result<()> {
        match &self.id {
            Some(id) => check_entry_id(id),
            None => Ok(()),
        }
    }

    /// The entry as appended under `parent` (the current leaf): the given id or `fresh_id()`,
    /// the given timestamp or now.
    pub fn place(self, parent: Option<String>, fresh_id: impl FnOnce() -> String) -> PendingEntry {
        let generated = self.id.is_none();
        PendingEntry {
            entry: SessionEntry {
                id: self.id.unwrap_or_else(fresh_id),
                parent_id: parent,
                timestamp: self.timestamp.unwrap_or_else(crate::time::now_iso),
                kind: self.kind,
            },
            generated,
            redraws: 0,
        }
    }
}

/// Refuses an empty entry id: the database backends' check of a given id (a draft's or a
/// verbatim entry's) before their unique index sees it.
pub fn check_entry_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(SessionError::InvalidEntry(
            "entry id must not be empty".to_owned(),
        ));
    }
    Ok(())
}

/// A placed entry waiting to be stored. A backend whose unique index is the existence check
/// stores it with a random id and, on a collision, calls [`PendingEntry::redraw_id`].
#[derive(Debug)]
pub struct PendingEntry {
    entry: SessionEntry,
    generated: bool,
    redraws: usize,
}

impl PendingEntry {
    /// The entry as it would be stored now.
    pub fn entry(&self) -> &SessionEntry {
        &self.entry
    }

    /// The entry, once stored.
    pub fn into_entry(self) -> SessionEntry {
        self.entry
    }

    /// After an id collision: draws another id and returns `true`, following the rule of
    /// [`ids::new_entry_id`] (random ids for [`ids::ENTRY_ID_TRIES`] tries, then a UUID).
    /// Returns `false` when the id was given by the caller (a duplicate is the caller's error)
    /// or the UUID fallback collided too.
    pub fn redraw_id(&mut self) -> bool {
        if !self.generated || self.redraws >= ids::ENTRY_ID_TRIES {
            return false;
        }
        self.redraws += 1;
        self.entry.id = if self.redraws < ids::ENTRY_ID_TRIES {
            ids::random_entry_id()
        } else {
            ids::fallback_entry_id()
        };
        true
    }
}

/// An entry checked against the index and serialized, ready to be written.
pub(crate) struct Prepared {
    pub entry: SessionEntry,
    pub line: String,
}

impl Prepared {
    fn new(entry: SessionEntry) -> Result<Prepared> {
        let line = serde_json::to_string(&entry)
            .map_err(|e| SessionError::InvalidEntry(format!("entry {}: {e}", entry.id)))?;
        Ok(Prepared { entry, line })
    }
}

/// Builds the entry for `append` in the memory and JSONL backends: the shared draft steps with
/// the context-edit target checked against the index and a fresh id unused in it.
pub(crate) fn prepare_draft(
    index: &Index,
    src: &dyn LineSource,
    draft: EntryDraft,
) -> Result<Prepared> {
    let draft = DraftEntry::new(draft);
    if let EntryKind::ContextEdit(edit) = draft.kind() {
        check_context_edit(index, src, &edit.target_id, &edit.replacement)?;
    }
    let pending = draft.place(index.leaf_id().map(str::to_owned), || {
        ids::new_entry_id(|c| index.contains(c))
    });
    Prepared::new(pending.into_entry())
}

/// A verbatim entry (fork, import), serialized; `checked_probe` checks it before the write.
pub(crate) fn prepare_entry(entry: SessionEntry) -> Result<Prepared> {
    Prepared::new(entry)
}

/// Reads a prepared line's envelope and checks it against the index (no state change): the
/// last step before a backend writes the line.
pub(crate) fn checked_probe<'a>(index: &Index, line: &'a str) -> Result<LineEnvelope<'a>> {
    let env = probe(line).map_err(|e| SessionError::InvalidEntry(e.to_string()))?;
    index.check_append(&env)?;
    Ok(env)
}

/// DECISIONS §3.5 against the index: the target must exist, be on the active branch and be a
/// user/assistant/toolResult message or a custom_message; the replacement is `null` or
/// `{content}`.
fn check_context_edit(
    index: &Index,
    src: &dyn LineSource,
    target: &str,
    replacement: &Value,
) -> Result<()> {
    let Some(tix) = index.resolve(target) else {
        return Err(SessionError::NotFound(format!("Entry not found: {target}")));
    };
    rules::check_replacement_shape(target, replacement)?;
    let on_branch = index.ancestry(index.leaf())?.contains(&tix);
    let raw = src.read(&index.slot(tix).raw)?;
    let env = probe(&raw).map_err(|e| line_error(index, tix, &e.to_string()))?;
    rules::check_context_edit_target(
        target,
        on_branch,
        env.ty.as_ref(),
        env.message.role.as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::LeafEntry;

    fn leaf_draft(id: Option<&str>) -> EntryDraft {
        let mut draft = EntryDraft::new(EntryKind::Leaf(LeafEntry {
            target_id: None,
            extra: Default::default(),
        }));
        draft.id = id.map(str::to_owned);
        draft
    }

    #[test]
    fn placing_uses_the_given_id_parent_and_a_timestamp() {
        let pending = DraftEntry::new(leaf_draft(Some("given")))
            .place(Some("leaf".to_owned()), || "fresh".to_owned());
        let entry = pending.entry();
        assert_eq!(entry.id, "given");
        assert_eq!(entry.parent_id.as_deref(), Some("leaf"));
        assert!(!entry.timestamp.is_empty());
        let fresh = DraftEntry::new(leaf_draft(None)).place(None, || "fresh".to_owned());
        assert_eq!(fresh.entry().id, "fresh");
    }

    #[test]
    fn empty_given_ids_are_refused() {
        let err = DraftEntry::new(leaf_draft(Some("")))
            .check_given_id()
            .unwrap_err();
        assert_eq!(err.to_string(), "invalid entry: entry id must not be empty");
        assert!(DraftEntry::new(leaf_draft(None)).check_given_id().is_ok());
    }

    #[test]
    fn only_generated_ids_are_redrawn_and_the_last_try_is_a_uuid() {
        let mut given = DraftEntry::new(leaf_draft(Some("mine"))).place(None, String::new);
        assert!(!given.redraw_id());
        assert_eq!(given.entry().id, "mine");

        let mut generated = DraftEntry::new(leaf_draft(None)).place(None, ids::random_entry_id);
        for _ in 1..ids::ENTRY_ID_TRIES {
            assert!(generated.redraw_id());
            assert_eq!(generated.entry().id.len(), 8);
        }
        assert!(generated.redraw_id());
        assert_eq!(generated.entry().id.len(), 36, "{}", generated.entry().id);
        assert!(!generated.redraw_id());
    }
}
