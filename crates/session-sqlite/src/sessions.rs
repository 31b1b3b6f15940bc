//! Session rows: finding, creating and deleting sessions, their materialized state, and
//! the repository's listing.

use arbor_session::error::SessionError;
use arbor_session::time;
use arbor_session::MaterializedState;
use arbor_session::{ListResult, SessionHeader, SessionInfo};
use rusqlite::{params, OptionalExtension, Row};

use crate::conn::{gone, to_i64, Conn, Sid};
use crate::keys;

type Result<T> = std::result::Result<T, SessionError>;

impl Conn<'_> {
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

    pub(crate) fn write_state(&self, s: &Sid, st: &MaterializedState) -> Result<()> {
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
