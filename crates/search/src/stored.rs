//! Sessions kept in a database store (PostgreSQL, SQLite) rather than in files.
//!
//! A store has no byte offsets; its log has sequence numbers instead. Each stored session's
//! row (in `files`, with `store` set to the store's name and `path` to the session's
//! location) remembers the last sequence number indexed, so a refresh reads only the entries
//! appended since (DECISIONS §34.15). The listing's modification time and entry count say
//! which sessions changed at all; a session whose log is shorter than what was indexed (deleted and made
//! again under the same id) is indexed again from its start; sessions gone from the listing
//! drop out. Snippets of stored hits are cut from the entry read back from the store.
//!
//! This crate does not know the stores: the caller passes the listing and a way to open a
//! session for reading (never for writing: a live agent holds the writer).

use std::collections::HashMap;
use std::future::Future;

use arbor_session::{ListResult, SessionStorage};
use rusqlite::params;

use crate::branch::move_leaf;
use crate::error::sql;
use crate::query::Hit;
use crate::refresh::{clear_file, index_entry, RefreshReport};
use crate::snippet::excerpt;
use crate::{extract, words, SearchIndex};

/// Entries read from a store per page (and per index transaction).
const PAGE: usize = 500;

/// What the index remembers of one stored session.
struct StoredRow {
    id: i64,
    /// The listing's modification time (ms), kept in the `mtime_ns` column.
    mtime_ms: i64,
    last_seq: i64,
    entries: i64,
    leaf: Option<String>,
}

impl SearchIndex {
    /// Brings the index up to date with the sessions of store `store` (a name that says which
    /// store, without secrets, e.g. `postgres://user@host/db`): `listing` is every session
    /// the store lists, `open` opens one by id for reading. A session that cannot be read is
    /// reported in the warnings and left as it was; an index write that fails is an error.
    pub async fn refresh_store<S, F, Fut>(
        &mut self,
        store: &str,
        listing: &ListResult,
        open: F,
    ) -> crate::Result<RefreshReport>
    where
        S: SessionStorage,
        F: Fn(String) -> Fut,
        Fut: Future<Output = arbor_session::Result<S>>,
    {
        let path = self.path.clone();
        let fail = |what| sql(&path, what);
        let mut report = RefreshReport::default();
        let mut known = self
            .stored_rows(store)
            .map_err(fail("cannot read the stored sessions"))?;
        for (location, reason) in &listing.skipped {
            report
                .warnings
                .push(format!("{location}: {reason}; skipped by search"));
        }
        for info in &listing.sessions {
            let row = known.remove(&info.location);
            // Unchanged: same modification time and entry count (an append within the same
            // millisecond still adds an entry). Without a count the session is read.
            let same = |r: &StoredRow| {
                r.mtime_ms == info.modified_ms
                    && info
                        .entry_count
                        .is_some_and(|n| i64::try_from(n) == Ok(r.entries))
            };
            if row.as_ref().is_some_and(same) {
                report.unchanged += 1;
                continue;
            }
            let storage = match open(info.id.clone()).await {
                Ok(s) => s,
                Err(e) => {
                    report.warnings.push(format!(
                        "{}: cannot open: {e}; skipped by search",
                        info.location
                    ));
                    continue;
                }
            };
            match self
                .index_stored(store, &info.location, info.modified_ms, row, &storage)
                .await
            {
                Ok(Fresh::Appended) => report.appended += 1,
                Ok(Fresh::Indexed) => report.indexed += 1,
                Err(StoredError::Read(e)) => report.warnings.push(format!(
                    "{}: cannot read: {e}; skipped by search",
                    info.location
                )),
                Err(StoredError::Sql(e)) => return Err(fail("cannot update")(e)),
            }
        }
        for (_, row) in known {
            let tx = self.conn.transaction().map_err(fail("cannot update"))?;
            clear_file(&tx, row.id).map_err(fail("cannot update"))?;
            tx.execute("DELETE FROM files WHERE id = ?1", [row.id])
                .map_err(fail("cannot update"))?;
            tx.commit().map_err(fail("cannot update"))?;
            report.removed += 1;
        }
        crate::schema::settle_wal(&self.conn, &self.path);
        Ok(report)
    }

    fn stored_rows(&self, store: &str) -> rusqlite::Result<HashMap<String, StoredRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT path, id, mtime_ns, indexed_to, lines, leaf_id FROM files WHERE store = ?1",
        )?;
        let rows = stmt.query_map([store], |r| {
            Ok((
                r.get::<_, String>(0)?,
                StoredRow {
                    id: r.get(1)?,
                    mtime_ms: r.get(2)?,
                    last_seq: r.get(3)?,
                    entries: r.get(4)?,
                    leaf: r.get(5)?,
                },
            ))
        })?;
        rows.collect()
    }

    /// Reads the entries of one stored session past what `row` remembers (all of them
    /// without a row, or when the session's log is now shorter) and indexes them, a page per
    /// transaction; the leaf's active path moves once at the end.
    async fn index_stored<S: SessionStorage>(
        &mut self,
        store: &str,
        location: &str,
        modified_ms: i64,
        row: Option<StoredRow>,
        storage: &S,
    ) -> Result<Fresh, StoredError> {
        let count = storage.entry_count().await.map_err(StoredError::Read)? as i64;
        let row = match row {
            Some(r) if r.entries <= count => Some(r),
            Some(r) => {
                let tx = self.conn.transaction()?;
                clear_file(&tx, r.id)?;
                tx.execute("DELETE FROM files WHERE id = ?1", [r.id])?;
                tx.commit()?;
                None
            }
            None => None,
        };
        let fresh = if row.is_some() {
            Fresh::Appended
        } else {
            Fresh::Indexed
        };
        let (file_id, mut after, mut entries, old_leaf) = match row {
            Some(r) => (r.id, r.last_seq, r.entries, r.leaf),
            None => {
                let header = storage.header().await.map_err(StoredError::Read)?;
                self.conn.execute(
                    "INSERT INTO files(path, session_id, cwd, created, store) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![location, header.id, header.cwd, header.timestamp, store],
                )?;
                (self.conn.last_insert_rowid(), -1, 0, None)
            }
        };
        let mut leaf = old_leaf.clone();
        loop {
            let from = u64::try_from(after).ok();
            let page = storage
                .entries(from, Some(PAGE))
                .await
                .map_err(StoredError::Read)?;
            let tx = self.conn.transaction()?;
            for (seq, entry) in &page.entries {
                let seq = i64::try_from(*seq).unwrap_or(i64::MAX);
                index_entry(&tx, file_id, entry, &mut leaf, seq, 0)?;
                after = after.max(seq);
                entries += 1;
            }
            tx.execute(
                "UPDATE files SET indexed_to = ?2, lines = ?3 WHERE id = ?1",
                params![file_id, after, entries],
            )?;
            tx.commit()?;
            if page.next_after_seq.is_none() || page.entries.is_empty() {
                break;
            }
        }
        let tx = self.conn.transaction()?;
        move_leaf(&tx, file_id, old_leaf.as_deref(), leaf.as_deref(), entries)?;
        tx.execute(
            "UPDATE files SET mtime_ns = ?2, leaf_id = ?3 WHERE id = ?1",
            params![file_id, modified_ms, leaf],
        )?;
        tx.commit()?;
        Ok(fresh)
    }
}

/// How a stored session was brought up to date.
enum Fresh {
    Indexed,
    Appended,
}

enum StoredError {
    /// The store could not be read: a warning, the session stays as it was.
    Read(arbor_session::SessionError),
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for StoredError {
    fn from(e: rusqlite::Error) -> Self {
        StoredError::Sql(e)
    }
}

/// Fills the snippets of the hits in stored sessions (file hits have theirs already) from
/// the entries read back through `open`; a hit whose session or entry cannot be read keeps
/// an empty snippet.
pub async fn fill_stored_snippets<S, F, Fut>(hits: &mut [Hit], query_text: &str, open: F)
where
    S: SessionStorage,
    F: Fn(String) -> Fut,
    Fut: Future<Output = arbor_session::Result<S>>,
{
    let words = words(query_text);
    for hit in hits.iter_mut().filter(|h| h.store.is_some()) {
        let Ok(storage) = open(hit.session_id.clone()).await else {
            continue;
        };
        if let Ok(Some(entry)) = storage.get_entry(&hit.matched_entry_id).await {
            if let Some(doc) = extract::extract(&entry) {
                hit.snippet = excerpt(&doc.body, &words);
            }
        }
    }
}
