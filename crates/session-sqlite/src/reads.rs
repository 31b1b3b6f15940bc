//! Reading entries by id, type, parent, log position and label, and the leaf.

use arbor_session::error::SessionError;
use arbor_session::rules;
use arbor_session::{EntryKind, EntryPage, SessionEntry};
use rusqlite::{params, OptionalExtension, Row};

use crate::conn::{to_i64, Conn, Sid};
use crate::keys;
use crate::rows::decode_payload;

type Result<T> = std::result::Result<T, SessionError>;

impl Conn<'_> {
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
        rules::check_page_limit(limit)?;
        // not_found once deleted.
        self.state(s)?;
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
}

fn key_id_payload(row: &Row<'_>) -> rusqlite::Result<(i64, String, String)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}
