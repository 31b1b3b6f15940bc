//! Writing entries: `append` (a draft made an entry by `arbor_session::append`, checked and
//! inserted), verbatim appends, and the copies a fork makes.

use arbor_session::append::{self, DraftEntry};
use arbor_session::error::SessionError;
use arbor_session::ids;
use arbor_session::rules;
use arbor_session::time;
use arbor_session::MaterializedState;
use arbor_session::{EntryDraft, EntryKind, SessionEntry};
use rusqlite::params;
use serde_json::Value;

use crate::conn::{gone, to_i64, Conn, Sid};
use crate::error::sql_error;
use crate::keys;

type Result<T> = std::result::Result<T, SessionError>;

impl Conn<'_> {
    pub(crate) fn entry_exists(&self, s: &Sid, id: &str) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM entries WHERE sid = ?1 AND id = ?2")
            .and_then(|mut st| st.exists(params![s.sid, id]))
            .map_err(self.err("cannot look up entry"))
    }

    /// A fresh id unused in the session.
    pub(crate) fn new_entry_id(&self, s: &Sid) -> Result<String> {
        let failure = std::cell::RefCell::new(None);
        let id = ids::new_entry_id(|candidate| match self.entry_exists(s, candidate) {
            Ok(found) => found,
            Err(e) => {
                failure.borrow_mut().get_or_insert(e);
                true
            }
        });
        match failure.into_inner() {
            Some(e) => Err(e),
            None => Ok(id),
        }
    }

    fn insert_entry(&self, s: &Sid, seq: u64, entry: &SessionEntry, payload: &str) -> Result<()> {
        if seq > keys::MAX_SEQ as u64 {
            return Err(SessionError::Storage(format!(
                "session {} is full ({} entries)",
                s.id,
                keys::MAX_SEQ
            )));
        }
        self.conn
            .prepare_cached(
                "INSERT INTO entries (key, sid, id, parent_id, type, target_id, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    keys::key(s.sid, seq as i64),
                    s.sid,
                    entry.id,
                    entry.parent_id,
                    entry.entry_type(),
                    entry.kind.target_id(),
                    payload,
                ])
            })
            .map_err(|e| match constraint(&e) {
                Some(rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE) => SessionError::InvalidEntry(format!(
                    "duplicate entry id {} in session {}",
                    entry.id, s.id
                )),
                Some(rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY) => {
                    SessionError::InvalidSession(format!(
                        "session {}: log position {seq} is already taken (its entry count is out of step with its entries)",
                        s.id
                    ))
                }
                _ => sql_error(self.path, &format!("cannot append entry {}", entry.id), e),
            })?;
        Ok(())
    }

    /// Targets of `leaf`, `label` and `context_edit` must exist (`not_found`, like pi).
    fn check_target(&self, s: &Sid, kind: &EntryKind) -> Result<()> {
        match kind.target_id() {
            Some(t) if !self.entry_exists(s, t)? => {
                Err(SessionError::NotFound(format!("Entry not found: {t}")))
            }
            _ => Ok(()),
        }
    }

    /// DECISIONS §3.5: the replacement is `null` or `{content}`, and the target is a user,
    /// assistant or toolResult message or a custom_message on the active branch.
    fn check_context_edit(
        &self,
        s: &Sid,
        state: &MaterializedState,
        target: &str,
        replacement: &Value,
    ) -> Result<()> {
        let Some(entry) = self.get_entry(s, target)? else {
            return Err(SessionError::NotFound(format!("Entry not found: {target}")));
        };
        rules::check_replacement_shape(target, replacement)?;
        let on_branch = match &state.leaf_id {
            Some(leaf) => self.is_ancestor(s, target, leaf, state.entry_count)?,
            None => false,
        };
        let role = match &entry.kind {
            EntryKind::Message(m) => Some(m.message.role()),
            _ => None,
        };
        rules::check_context_edit_target(target, on_branch, entry.entry_type(), role)
    }

    /// Whether `ancestor` is on the path root..=`from`. Reads only the envelope columns (the
    /// payload is the row's last column, so large payloads are never touched).
    fn is_ancestor(&self, s: &Sid, ancestor: &str, from: &str, bound: u64) -> Result<bool> {
        self.conn
            .prepare_cached(
                "WITH RECURSIVE up(id, parent_id, n) AS (
                     SELECT id, parent_id, 1 FROM entries WHERE sid = ?1 AND id = ?2
                     UNION ALL
                     SELECT e.id, e.parent_id, up.n + 1
                     FROM up JOIN entries e ON e.sid = ?1 AND e.id = up.parent_id
                     WHERE up.n <= ?3
                 )
                 SELECT 1 FROM up WHERE id = ?4 LIMIT 1",
            )
            .and_then(|mut st| st.exists(params![s.sid, from, to_i64(bound), ancestor]))
            .map_err(self.err("cannot walk entry path"))
    }

    /// The body of `SessionStorage::append` (run inside a transaction).
    pub(crate) fn append(&self, s: &Sid, draft: EntryDraft) -> Result<SessionEntry> {
        let mut state = self.state(s)?;
        let draft = DraftEntry::new(draft);
        self.check_target(s, draft.kind())?;
        if let EntryKind::ContextEdit(edit) = draft.kind() {
            self.check_context_edit(s, &state, &edit.target_id, &edit.replacement)?;
        }
        draft.check_given_id()?;
        let mut pending = draft.place(state.leaf_id.clone(), ids::random_entry_id);
        // The (sid, id) UNIQUE index is the existence check: a duplicate given id fails the
        // insert (`invalid_entry`, the transaction rolls back); a generated id that collides is
        // drawn again.
        loop {
            let entry = pending.entry();
            match self.insert_entry(s, state.entry_count + 1, entry, &entry.to_json()) {
                Ok(()) => break,
                Err(SessionError::InvalidEntry(_)) if pending.redraw_id() => {}
                Err(e) => return Err(e),
            }
        }
        let entry = pending.into_entry();
        state.apply(&entry);
        self.write_state(s, &state)?;
        Ok(entry)
    }

    /// The body of `SessionStorage::append_entry`: a complete entry, verbatim.
    pub(crate) fn append_entry(&self, s: &Sid, entry: &SessionEntry) -> Result<()> {
        let mut state = self.state(s)?;
        append::check_entry_id(&entry.id)?;
        if self.entry_exists(s, &entry.id)? {
            return Err(SessionError::InvalidEntry(format!(
                "duplicate entry id {} in session {}",
                entry.id, s.id
            )));
        }
        if let Some(p) = &entry.parent_id {
            if !self.entry_exists(s, p)? {
                return Err(SessionError::InvalidEntry(format!(
                    "entry {} has parentId {p}, which is not in session {}",
                    entry.id, s.id
                )));
            }
        }
        self.check_target(s, &entry.kind)?;
        self.insert_entry(s, state.entry_count + 1, entry, &entry.to_json())?;
        state.apply(entry);
        self.write_state(s, &state)
    }

    /// Copies already-serialized entries into a fresh session (fork), computing its state.
    pub(crate) fn copy_entries(&self, s: &Sid, rows: &[(SessionEntry, String)]) -> Result<()> {
        let mut state = self.state(s)?;
        for (entry, payload) in rows {
            self.insert_entry(s, state.entry_count + 1, entry, payload)?;
            state.apply(entry);
        }
        self.write_state(s, &state)
    }

    /// A whole-tree fork inside SQLite: every row of `src` re-keyed into `dst` (payload bytes
    /// untouched, same seqs), and `src`'s materialized state copied — the same entries in the same
    /// order fold to the same state. Corrupt rows are copied as they are, like any verbatim copy.
    pub(crate) fn copy_whole(&self, src: &Sid, dst: &Sid) -> Result<()> {
        let (src_lo, src_hi) = keys::range(src.sid);
        let (dst_lo, _) = keys::range(dst.sid);
        self.conn
            .prepare_cached(
                "INSERT INTO entries (key, sid, id, parent_id, type, target_id, payload)
                 SELECT key - ?1 + ?3, ?4, id, parent_id, type, target_id, payload
                 FROM entries WHERE key BETWEEN ?1 AND ?2 ORDER BY key",
            )
            .and_then(|mut st| st.execute(params![src_lo, src_hi, dst_lo, dst.sid]))
            .map_err(self.err("cannot copy entries"))?;
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE session_state SET (leaf_id, name, entry_count, message_count, cached_tokens,
                        uncached_tokens, total_tokens, cost_total, latest_compaction_id,
                        first_message, updated_at) =
                    (SELECT leaf_id, name, entry_count, message_count, cached_tokens,
                            uncached_tokens, total_tokens, cost_total, latest_compaction_id,
                            first_message, ?3
                     FROM session_state WHERE sid = ?1)
                 WHERE sid = ?2",
            )
            .and_then(|mut st| st.execute(params![src.sid, dst.sid, time::now_iso()]))
            .map_err(self.err("cannot copy session state"))?;
        if changed == 1 {
            Ok(())
        } else {
            Err(gone(dst))
        }
    }
}

/// The extended result code of a constraint failure.
fn constraint(e: &rusqlite::Error) -> Option<std::ffi::c_int> {
    match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Some(f.extended_code)
        }
        _ => None,
    }
}
