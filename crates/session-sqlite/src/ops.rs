//! The SQL behind every storage and repository operation. Everything here runs with the
//! connection held (see `db.rs`); writes are one `BEGIN IMMEDIATE` transaction each, so
//! a failure anywhere rolls back the entry row and the `session_state` update together.

use std::path::Path;

use arbor_ai::types::Message;
use arbor_session::error::SessionError;
use arbor_session::ids;
use arbor_session::message::AgentMessage;
use arbor_session::time;
use arbor_session::{
    DerivedSettings, EntryDraft, EntryKind, EntryPage, ListResult, SessionEntry, SessionHeader,
    SessionInfo,
};
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};

use crate::db::Db;
use crate::error::sql_error;
use crate::keys;
use crate::rows::decode_payload;
use arbor_session::append::DraftEntry;
use arbor_session::rules;
use arbor_session::MaterializedState;
use serde_json::Value;

type Result<T> = std::result::Result<T, SessionError>;

/// The identity of one session inside the database.
#[derive(Debug, Clone)]
pub(crate) struct Sid {
    pub sid: i64,
    pub id: String,
}

/// A connection (or transaction) bound to the database path, for error messages.
pub(crate) struct Ctx<'a> {
    pub conn: &'a Connection,
    pub path: &'a Path,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(conn: &'a Connection, path: &'a Path) -> Self {
        Self { conn, path }
    }

    fn err(&self, context: &str) -> impl Fn(rusqlite::Error) -> SessionError + '_ {
        let context = context.to_owned();
        move |e| sql_error(self.path, &context, e)
    }

    // ---- session rows -------------------------------------------------------------------

    /// Finds a session by id; `None` when absent.
    pub(crate) fn find_session(&self, id: &str) -> Result<Option<Sid>> {
        self.conn
            .prepare_cached("SELECT sid FROM sessions WHERE id = ?1")
            .and_then(|mut st| st.query_row([id], |r| r.get::<_, i64>(0)).optional())
            .map_err(self.err("cannot look up session"))
            .map(|sid| {
                sid.map(|sid| Sid {
                    sid,
                    id: id.to_owned(),
                })
            })
    }

    pub(crate) fn require_session(&self, id: &str) -> Result<Sid> {
        self.find_session(id)?
            .ok_or_else(|| SessionError::NotFound(format!("Session not found: {id}")))
    }

    pub(crate) fn header(&self, s: &Sid) -> Result<SessionHeader> {
        let json: Option<String> = self
            .conn
            .prepare_cached("SELECT header FROM sessions WHERE sid = ?1")
            .and_then(|mut st| st.query_row([s.sid], |r| r.get(0)).optional())
            .map_err(self.err("cannot read session header"))?;
        let json = json.ok_or_else(|| gone(s))?;
        SessionHeader::from_json(&json).map_err(|e| {
            SessionError::InvalidSession(format!(
                "session {} in {}: stored header is unusable: {e}",
                s.id,
                self.path.display()
            ))
        })
    }

    /// Inserts the session row and its empty state row.
    pub(crate) fn insert_session(&self, header: &SessionHeader) -> Result<Sid> {
        if self.find_session(&header.id)?.is_some() {
            return Err(SessionError::InvalidSession(format!(
                "session {} already exists in {}",
                header.id,
                self.path.display()
            )));
        }
        self.conn
            .prepare_cached(
                "INSERT INTO sessions (id, created_at, cwd, parent_session, header)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    header.id,
                    header.timestamp,
                    header.cwd,
                    header.parent_session,
                    header.to_json()
                ])
            })
            .map_err(self.err("cannot insert session"))?;
        let sid = Sid {
            sid: self.conn.last_insert_rowid(),
            id: header.id.clone(),
        };
        if sid.sid > i64::from(i32::MAX) {
            return Err(SessionError::Storage(format!(
                "{} holds too many sessions for its key layout",
                self.path.display()
            )));
        }
        self.conn
            .prepare_cached(
                "INSERT INTO session_state (sid, leaf_id, name, entry_count, updated_at)
                 VALUES (?1, NULL, NULL, 0, ?2)",
            )
            .and_then(|mut st| st.execute(params![sid.sid, header.timestamp]))
            .map_err(self.err("cannot insert session state"))?;
        Ok(sid)
    }

    /// Removes a session and everything it owns; `false` when it did not exist.
    pub(crate) fn delete_session(&self, id: &str) -> Result<bool> {
        let Some(s) = self.find_session(id)? else {
            return Ok(false);
        };
        let (lo, hi) = keys::range(s.sid);
        self.conn
            .execute(
                "DELETE FROM entries WHERE key BETWEEN ?1 AND ?2",
                params![lo, hi],
            )
            .and_then(|_| {
                self.conn
                    .execute("DELETE FROM session_state WHERE sid = ?1", [s.sid])
            })
            .and_then(|_| {
                self.conn
                    .execute("DELETE FROM sessions WHERE sid = ?1", [s.sid])
            })
            .map_err(self.err("cannot delete session"))?;
        Ok(true)
    }

    // ---- state ---------------------------------------------------------------------------

    pub(crate) fn state(&self, s: &Sid) -> Result<MaterializedState> {
        let state = self
            .conn
            .prepare_cached(
                "SELECT leaf_id, name, entry_count, message_count, cached_tokens, uncached_tokens,
                        total_tokens, cost_total, latest_compaction_id, first_message
                 FROM session_state WHERE sid = ?1",
            )
            .and_then(|mut st| st.query_row([s.sid], state_from_row).optional())
            .map_err(self.err("cannot read session state"))?;
        state.ok_or_else(|| gone(s))
    }

    fn write_state(&self, s: &Sid, st: &MaterializedState) -> Result<()> {
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE session_state SET leaf_id = ?2, name = ?3, entry_count = ?4,
                    message_count = ?5, cached_tokens = ?6, uncached_tokens = ?7,
                    total_tokens = ?8, cost_total = ?9, latest_compaction_id = ?10,
                    first_message = ?11, updated_at = ?12
                 WHERE sid = ?1",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    s.sid,
                    st.leaf_id,
                    st.name,
                    to_i64(st.entry_count),
                    to_i64(st.stats.message_count),
                    to_i64(st.stats.cached_tokens),
                    to_i64(st.stats.uncached_tokens),
                    to_i64(st.stats.total_tokens),
                    st.stats.cost_total,
                    st.latest_compaction_id,
                    st.first_message,
                    time::now_iso(),
                ])
            })
            .map_err(self.err("cannot update session state"))?;
        if changed == 1 {
            Ok(())
        } else {
            Err(gone(s))
        }
    }

    // ---- entries -------------------------------------------------------------------------

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
        if entry.id.is_empty() {
            return Err(SessionError::InvalidEntry(
                "entry id must not be empty".to_owned(),
            ));
        }
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

    pub(crate) fn get_entry(&self, s: &Sid, id: &str) -> Result<Option<SessionEntry>> {
        let row = self
            .conn
            .prepare_cached("SELECT key, payload FROM entries WHERE sid = ?1 AND id = ?2")
            .and_then(|mut st| {
                st.query_row(params![s.sid, id], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })
                .optional()
            })
            .map_err(self.err("cannot read entry"))?;
        row.map(|(key, payload)| decode_payload(&s.id, key, id, &payload))
            .transpose()
    }

    /// Runs a query returning `(key, id, payload)` rows and decodes them in order.
    fn decode_rows(
        &self,
        s: &Sid,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<(u64, SessionEntry)>> {
        let mut st = self
            .conn
            .prepare_cached(sql)
            .map_err(self.err("cannot read entries"))?;
        let mut rows = st.query(params).map_err(self.err("cannot read entries"))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(self.err("cannot read entries"))? {
            let (key, id, payload) =
                key_id_payload(row).map_err(self.err("cannot read entries"))?;
            out.push((
                keys::seq(key) as u64,
                decode_payload(&s.id, key, &id, &payload)?,
            ));
        }
        Ok(out)
    }

    pub(crate) fn find_entries(&self, s: &Sid, entry_type: &str) -> Result<Vec<SessionEntry>> {
        let (lo, hi) = keys::range(s.sid);
        Ok(self
            .decode_rows(
                s,
                "SELECT key, id, payload FROM entries
                 WHERE type = ?1 AND key BETWEEN ?2 AND ?3 ORDER BY key",
                params![entry_type, lo, hi],
            )?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    pub(crate) fn children(&self, s: &Sid, parent: Option<&str>) -> Result<Vec<SessionEntry>> {
        if let Some(p) = parent {
            if !self.entry_exists(s, p)? {
                return Err(SessionError::NotFound(format!("Entry not found: {p}")));
            }
        }
        let (lo, hi) = keys::range(s.sid);
        Ok(self
            .decode_rows(
                s,
                "SELECT key, id, payload FROM entries
                 WHERE parent_id IS ?1 AND key BETWEEN ?2 AND ?3 ORDER BY key",
                params![parent, lo, hi],
            )?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    /// Log positions `after_seq + 1 ..= after_seq + limit`; `next_after_seq` is set while
    /// entries remain. Rows past the page are never decoded.
    pub(crate) fn entries_page(
        &self,
        s: &Sid,
        after_seq: Option<u64>,
        limit: Option<usize>,
    ) -> Result<EntryPage> {
        if limit == Some(0) {
            return Err(SessionError::InvalidEntry(
                "limit must be a positive integer".into(),
            ));
        }
        self.state(s)?; // not_found once deleted
                        // The table's own last position (one rowid lookup), so a state row that is out of step
                        // never hides entries.
        let (lo_all, hi_all) = keys::range(s.sid);
        let last: Option<i64> = self
            .conn
            .prepare_cached("SELECT MAX(key) FROM entries WHERE key BETWEEN ?1 AND ?2")
            .and_then(|mut st| st.query_row(params![lo_all, hi_all], |r| r.get(0)))
            .map_err(self.err("cannot read entries"))?;
        let total = last.map(|k| keys::seq(k) as u64).unwrap_or(0);
        let start = after_seq.unwrap_or(0).min(total);
        let end = match limit {
            Some(l) => start.saturating_add(l as u64).min(total),
            None => total,
        };
        let (lo, hi) = (
            keys::key(s.sid, to_i64(start)),
            keys::key(s.sid, to_i64(end)),
        );
        let entries = self.decode_rows(
            s,
            "SELECT key, id, payload FROM entries WHERE key > ?1 AND key <= ?2 ORDER BY key",
            params![lo, hi],
        )?;
        Ok(EntryPage {
            entries,
            next_after_seq: (end < total).then_some(end),
        })
    }

    pub(crate) fn get_label(&self, s: &Sid, target: &str) -> Result<Option<String>> {
        let (lo, hi) = keys::range(s.sid);
        let found = self.decode_rows(
            s,
            "SELECT key, id, payload FROM entries
             WHERE target_id = ?1 AND type = 'label' AND key BETWEEN ?2 AND ?3
             ORDER BY key DESC LIMIT 1",
            params![target, lo, hi],
        )?;
        Ok(found.into_iter().next().and_then(|(_, e)| match e.kind {
            EntryKind::Label(l) => l
                .label
                .get()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty()),
            _ => None,
        }))
    }

    /// The current leaf, checked to exist.
    pub(crate) fn leaf_id(&self, s: &Sid) -> Result<Option<String>> {
        let state = self.state(s)?;
        if let Some(leaf) = &state.leaf_id {
            if !self.entry_exists(s, leaf)? {
                return Err(SessionError::InvalidSession(format!(
                    "session {}: the leaf points at entry {leaf}, which does not exist",
                    s.id
                )));
            }
        }
        Ok(state.leaf_id)
    }

    /// Walks from `from` (default: the leaf) towards the root and returns root..=from.
    /// With `stop_at_compaction` the walk ends at the newest compaction boundary (DECISIONS
    /// §3.1). A missing parent or a parent cycle is `invalid_session`; the walk is bounded by
    /// the session's entry count, so a cycle cannot hang it.
    pub(crate) fn walk(
        &self,
        s: &Sid,
        from: Option<&str>,
        stop_at_compaction: bool,
    ) -> Result<Vec<SessionEntry>> {
        self.walk_with(s, from, stop_at_compaction, |entry, _| entry)
    }

    /// [`Ctx::walk`], handing each entry and its stored payload to `keep`.
    fn walk_with<T>(
        &self,
        s: &Sid,
        from: Option<&str>,
        stop_at_compaction: bool,
        mut keep: impl FnMut(SessionEntry, String) -> T,
    ) -> Result<Vec<T>> {
        let state = self.state(s)?;
        let start = match from {
            Some(id) => id.to_owned(),
            None => match state.leaf_id {
                Some(leaf) => leaf,
                None => return Ok(Vec::new()),
            },
        };
        let bound = to_i64(state.entry_count);
        let mut st = self
            .conn
            .prepare_cached(
                "WITH RECURSIVE up(key, id, parent_id, n) AS (
                     SELECT key, id, parent_id, 1 FROM entries WHERE sid = ?1 AND id = ?2
                     UNION ALL
                     SELECT e.key, e.id, e.parent_id, up.n + 1
                     FROM up JOIN entries e ON e.sid = ?1 AND e.id = up.parent_id
                     WHERE up.n <= ?3
                 )
                 SELECT key, id FROM up",
            )
            .map_err(self.err("cannot walk entry path"))?;
        let mut rows = st
            .query(params![s.sid, start, bound])
            .map_err(self.err("cannot walk entry path"))?;
        let mut out: Vec<T> = Vec::new();
        let mut boundary_fixed = !stop_at_compaction;
        let mut stop_at: Option<String> = None;
        let mut stopped = false;
        // The last entry kept: its parent must exist unless the walk stopped at a boundary.
        let mut last: Option<(String, Option<String>)> = None;
        // The recursive query carries only envelope columns (payloads would be copied through
        // its queue); each payload is then one rowid lookup.
        let mut payload_of = self
            .conn
            .prepare_cached("SELECT payload FROM entries WHERE key = ?1")
            .map_err(self.err("cannot walk entry path"))?;
        while let Some(row) = rows.next().map_err(self.err("cannot walk entry path"))? {
            let (key, id): (i64, String) = (|| Ok((row.get(0)?, row.get(1)?)))()
                .map_err(self.err("cannot walk entry path"))?;
            let payload: String = payload_of
                .query_row([key], |r| r.get(0))
                .map_err(self.err("cannot read entry payload"))?;
            if out.len() as u64 >= state.entry_count {
                return Err(SessionError::InvalidSession(format!(
                    "session {}: the parentId chain through entry {id} forms a cycle",
                    s.id
                )));
            }
            let entry = decode_payload(&s.id, key, &id, &payload)?;
            let mut at_boundary = false;
            if !boundary_fixed {
                if let EntryKind::Compaction(c) = &entry.kind {
                    boundary_fixed = true;
                    if c.retained_tail.is_some() {
                        at_boundary = true;
                    } else {
                        stop_at = c.first_kept_entry_id.clone();
                    }
                }
            }
            // A compaction that kept nothing names itself as the first kept entry.
            at_boundary |= stop_at.as_deref() == Some(entry.id.as_str());
            last = Some((entry.id.clone(), entry.parent_id.clone()));
            out.push(keep(entry, payload));
            if at_boundary {
                stopped = true;
                break;
            }
        }
        if out.is_empty() {
            return Err(match from {
                Some(id) => SessionError::NotFound(format!("Entry not found: {id}")),
                None => SessionError::InvalidSession(format!(
                    "session {}: the leaf points at entry {start}, which does not exist",
                    s.id
                )),
            });
        }
        if let (false, Some((id, Some(parent)))) = (stopped, &last) {
            return Err(SessionError::InvalidSession(format!(
                "session {}: entry {id} has parentId {parent}, which is not in the session",
                s.id
            )));
        }
        out.reverse();
        Ok(out)
    }

    /// The envelope chain from `from` (default: the leaf) to the root, leaf first:
    /// `(key, type)` per entry. Validated like [`Ctx::walk`] (missing start, dangling parent,
    /// cycle) without reading any payload.
    fn envelope_chain(&self, s: &Sid, from: Option<&str>) -> Result<Vec<(i64, String)>> {
        let state = self.state(s)?;
        let start = match from {
            Some(id) => id.to_owned(),
            None => match state.leaf_id {
                Some(leaf) => leaf,
                None => return Ok(Vec::new()),
            },
        };
        let mut st = self
            .conn
            .prepare_cached(
                "WITH RECURSIVE up(key, id, parent_id, type, n) AS (
                     SELECT key, id, parent_id, type, 1 FROM entries WHERE sid = ?1 AND id = ?2
                     UNION ALL
                     SELECT e.key, e.id, e.parent_id, e.type, up.n + 1
                     FROM up JOIN entries e ON e.sid = ?1 AND e.id = up.parent_id
                     WHERE up.n <= ?3
                 )
                 SELECT key, id, parent_id, type FROM up",
            )
            .map_err(self.err("cannot walk entry path"))?;
        let mut rows = st
            .query(params![s.sid, start, to_i64(state.entry_count)])
            .map_err(self.err("cannot walk entry path"))?;
        let mut out = Vec::new();
        let mut last: Option<(String, Option<String>)> = None;
        while let Some(row) = rows.next().map_err(self.err("cannot walk entry path"))? {
            let read = || -> rusqlite::Result<(i64, String, Option<String>, String)> {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            };
            let (key, id, parent, ty) = read().map_err(self.err("cannot walk entry path"))?;
            if out.len() as u64 >= state.entry_count {
                return Err(SessionError::InvalidSession(format!(
                    "session {}: the parentId chain through entry {id} forms a cycle",
                    s.id
                )));
            }
            out.push((key, ty));
            last = Some((id, parent));
        }
        match last {
            None => Err(match from {
                Some(id) => SessionError::NotFound(format!("Entry not found: {id}")),
                None => SessionError::InvalidSession(format!(
                    "session {}: the leaf points at entry {start}, which does not exist",
                    s.id
                )),
            }),
            Some((id, Some(parent))) => Err(SessionError::InvalidSession(format!(
                "session {}: entry {id} has parentId {parent}, which is not in the session",
                s.id
            ))),
            Some((_, None)) => Ok(out),
        }
    }

    /// DECISIONS §3.2 without parsing the whole path: walk the (validated) envelope chain from
    /// the leaf and parse only rows that can still decide a setting; message rows are first
    /// probed for their role, so only assistant messages are built.
    pub(crate) fn derived_settings(&self, s: &Sid, from: Option<&str>) -> Result<DerivedSettings> {
        let chain = self.envelope_chain(s, from)?;
        let mut payload_of = self
            .conn
            .prepare_cached("SELECT id, payload FROM entries WHERE key = ?1")
            .map_err(self.err("cannot read entry payload"))?;
        let mut out = DerivedSettings::default();
        let (mut model, mut thinking, mut tools) = (false, false, false);
        for (key, ty) in chain {
            if model && thinking && tools {
                break;
            }
            let wanted = match ty.as_str() {
                "model_change" | "message" => !model,
                "thinking_level_change" => !thinking,
                "active_tools_change" => !tools,
                _ => false,
            };
            if !wanted {
                continue;
            }
            let (id, payload): (String, String) = payload_of
                .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(self.err("cannot read entry payload"))?;
            if ty == "message" && !probe_is_assistant(&payload) {
                continue;
            }
            let entry = decode_payload(&s.id, key, &id, &payload)?;
            let mut single = DerivedSettings::default();
            if !single.apply(&entry) {
                continue;
            }
            match ty.as_str() {
                "thinking_level_change" => {
                    out.thinking_level = single.thinking_level;
                    thinking = true;
                }
                "active_tools_change" => {
                    out.active_tool_names = single.active_tool_names;
                    tools = true;
                }
                _ => {
                    out.model = single.model;
                    model = true;
                }
            }
        }
        Ok(out)
    }

    // ---- repository ------------------------------------------------------------------------

    /// Every session, newest first; a session whose header row is unusable is reported.
    pub(crate) fn list(&self, location: impl Fn(&str) -> String) -> Result<ListResult> {
        let mut st = self
            .conn
            .prepare(
                "SELECT s.id, s.header, st.name, st.entry_count, st.updated_at, st.first_message
                 FROM sessions s LEFT JOIN session_state st ON st.sid = s.sid
                 ORDER BY st.updated_at DESC, s.sid DESC",
            )
            .map_err(self.err("cannot list sessions"))?;
        let mut rows = st.query([]).map_err(self.err("cannot list sessions"))?;
        let mut sessions = Vec::new();
        let mut skipped = Vec::new();
        while let Some(row) = rows.next().map_err(self.err("cannot list sessions"))? {
            let read = || -> rusqlite::Result<_> {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<String>>(2)?,
                    row.get::<_, Option<i64>>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, Option<String>>(5)?,
                ))
            };
            let (id, header, name, count, updated, first_message) =
                read().map_err(self.err("cannot list sessions"))?;
            let header = match SessionHeader::from_json(&header) {
                Ok(h) => h,
                Err(e) => {
                    skipped.push((location(&id), format!("unusable session header: {e}")));
                    continue;
                }
            };
            let Some(count) = count else {
                skipped.push((location(&id), "session has no state row".to_owned()));
                continue;
            };
            let modified_ms = updated
                .as_deref()
                .and_then(time::iso_to_ms)
                .or_else(|| time::iso_to_ms(&header.timestamp))
                .unwrap_or(0);
            sessions.push(SessionInfo {
                location: location(&id),
                id,
                cwd: header.cwd,
                name,
                created: header.timestamp,
                modified_ms,
                entry_count: Some(count.max(0) as u64),
                first_message,
                parent_session: header.parent_session,
            });
        }
        Ok(ListResult { sessions, skipped })
    }

    /// The root→target path a fork copies (DECISIONS §5), with the stored payloads (copied byte
    /// for byte).
    pub(crate) fn fork_rows(
        &self,
        s: &Sid,
        target_id: &str,
        position: arbor_session::ForkPosition,
    ) -> Result<Vec<(SessionEntry, String)>> {
        use arbor_session::ForkPosition;
        let target = self.get_entry(s, target_id)?.ok_or_else(|| {
            SessionError::InvalidForkTarget(format!("Entry {target_id} not found"))
        })?;
        let last = match position {
            ForkPosition::At => Some(target.id),
            ForkPosition::Before => {
                let is_user = matches!(target.message(), Some(AgentMessage::Llm(Message::User(_))));
                if !is_user {
                    return Err(SessionError::InvalidForkTarget(format!(
                        "Entry {target_id} is not a user message"
                    )));
                }
                target.parent_id
            }
        };
        let Some(last) = last else {
            return Ok(Vec::new());
        };
        self.walk_with(s, Some(&last), false, |entry, payload| (entry, payload))
    }
}

/// Starts the one transaction a write runs in, after checking the file is still the one opened.
pub(crate) fn immediate<'c>(conn: &'c mut Connection, db: &Db) -> Result<Transaction<'c>> {
    db.check_file()?;
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql_error(db.path(), "cannot start transaction", e))
}

pub(crate) fn commit(tx: Transaction<'_>, path: &Path) -> Result<()> {
    tx.commit()
        .map_err(|e| sql_error(path, "cannot commit transaction", e))
}

/// Whether a message payload's `message.role` is `assistant`, skipping everything else without
/// building it. A payload this cannot read counts as a candidate, so the full parse reports it.
fn probe_is_assistant(payload: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow, default)]
        message: Option<Role<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Role<'a> {
        #[serde(borrow, default)]
        role: Option<std::borrow::Cow<'a, str>>,
    }
    match serde_json::from_str::<Entry<'_>>(payload) {
        Ok(e) => e
            .message
            .and_then(|m| m.role)
            .is_some_and(|r| r == "assistant"),
        Err(_) => true,
    }
}

fn key_id_payload(row: &Row<'_>) -> rusqlite::Result<(i64, String, String)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}

fn state_from_row(r: &Row<'_>) -> rusqlite::Result<MaterializedState> {
    let count = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)?.max(0) as u64) };
    Ok(MaterializedState {
        leaf_id: r.get(0)?,
        name: r.get(1)?,
        entry_count: count(2)?,
        stats: arbor_session::SessionStats {
            message_count: count(3)?,
            cached_tokens: count(4)?,
            uncached_tokens: count(5)?,
            total_tokens: count(6)?,
            cost_total: r.get(7)?,
        },
        latest_compaction_id: r.get(8)?,
        first_message: r.get(9)?,
    })
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn gone(s: &Sid) -> SessionError {
    SessionError::NotFound(format!("Session not found: {} (it was deleted)", s.id))
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
