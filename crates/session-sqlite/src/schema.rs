//! Schema and forward migrations.
//!
//! `schema_version` holds one row per applied migration; the database's version is the highest.
//! Migrations run in one `BEGIN IMMEDIATE` transaction, so a failed migration leaves the file
//! exactly as it was and two processes opening an old file at once migrate it only once.
//! A shipped migration is never edited; changes go into a new one.

use std::path::Path;

use arbor_session::error::SessionError;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::error::sql_error;
use arbor_session::MaterializedState;

type Result<T> = std::result::Result<T, SessionError>;

/// The version this build writes.
pub const CURRENT_VERSION: u32 = 2;

/// Version 1: sessions, one row per entry, and the materialized leaf/name/count per session.
///
/// `entries.key` is `sid * 2^32 + seq`: the table b-tree itself is the per-session log order, so
/// a cursor read is a rowid range scan and no separate `(sid, seq)` index has to be maintained on
/// every append. The single-column indexes get the session filter from the same rowid range
/// (SQLite keeps the rowid as the last index column). `sid` is AUTOINCREMENT so a deleted
/// session's number is never reused: a stale handle can only ever see "not found".
const V1: &str = "
CREATE TABLE sessions (
    sid            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT NOT NULL UNIQUE,
    created_at     TEXT NOT NULL,
    cwd            TEXT NOT NULL,
    parent_session TEXT,
    header         TEXT NOT NULL
);
CREATE INDEX sessions_created ON sessions(created_at);
CREATE TABLE entries (
    key       INTEGER PRIMARY KEY,
    sid       INTEGER NOT NULL,
    id        TEXT NOT NULL,
    parent_id TEXT,
    type      TEXT NOT NULL,
    target_id TEXT,
    payload   TEXT NOT NULL
);
CREATE UNIQUE INDEX entries_id ON entries(sid, id);
CREATE INDEX entries_parent ON entries(parent_id);
CREATE INDEX entries_type ON entries(type);
CREATE INDEX entries_target ON entries(target_id) WHERE target_id IS NOT NULL;
CREATE TABLE session_state (
    sid         INTEGER PRIMARY KEY,
    leaf_id     TEXT,
    name        TEXT,
    entry_count INTEGER NOT NULL,
    updated_at  TEXT NOT NULL
);
";

/// Version 2: session statistics, the latest compaction and the first prompt join the
/// materialized state, so `stats()` and listings are one row read instead of a payload scan.
const V2: &str = "
ALTER TABLE session_state ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_state ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_state ADD COLUMN uncached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_state ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_state ADD COLUMN cost_total REAL NOT NULL DEFAULT 0;
ALTER TABLE session_state ADD COLUMN latest_compaction_id TEXT;
ALTER TABLE session_state ADD COLUMN first_message TEXT;
";

struct Migration {
    version: u32,
    sql: &'static str,
    /// Data back-fill run after `sql`, inside the same transaction.
    backfill: Option<fn(&Connection, &Path) -> Result<()>>,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: V1,
        backfill: None,
    },
    Migration {
        version: 2,
        sql: V2,
        backfill: Some(backfill_v2),
    },
];

/// Brings the database to [`CURRENT_VERSION`]; refuses files from a newer build and SQLite files
/// that are not Arbor session databases.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<u32> {
    let err = |ctx: &'static str| move |e| sql_error(path, ctx, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err("cannot start schema migration"))?;
    let has_version_table =
        table_exists(&tx, "schema_version").map_err(err("cannot read schema"))?;
    let from = if has_version_table {
        tx.query_row("SELECT MAX(version) FROM schema_version", [], |r| {
            r.get::<_, Option<u32>>(0)
        })
        .map_err(err("cannot read schema_version"))?
        .unwrap_or(0)
    } else {
        let tables: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
                [],
                |r| r.get(0),
            )
            .map_err(err("cannot read schema"))?;
        if tables > 0 {
            return Err(SessionError::Storage(format!(
                "{} is not an Arbor session database (it has tables but no schema_version)",
                path.display()
            )));
        }
        tx.execute_batch(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
        )
        .map_err(err("cannot create schema_version"))?;
        0
    };
    if from > CURRENT_VERSION {
        return Err(SessionError::Storage(format!(
            "session database {} has schema version {from}, newer than this build supports ({CURRENT_VERSION}); upgrade Arbor",
            path.display()
        )));
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > from) {
        tx.execute_batch(m.sql).map_err(|e| {
            sql_error(
                path,
                &format!("schema migration to version {} failed", m.version),
                e,
            )
        })?;
        if let Some(backfill) = m.backfill {
            backfill(&tx, path)?;
        }
        tx.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            params![m.version],
        )
        .map_err(err("cannot record schema version"))?;
    }
    tx.commit().map_err(err("cannot commit schema migration"))?;
    Ok(CURRENT_VERSION)
}

fn table_exists(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |_| Ok(()),
    )
    .optional()
    .map(|r| r.is_some())
}

/// Recomputes the v2 state columns of every session by replaying its entries in log order.
/// A payload that does not parse aborts the migration (naming session and entry) rather than
/// writing statistics that silently leave the entry out.
fn backfill_v2(conn: &Connection, path: &Path) -> Result<()> {
    let err = |ctx: &'static str| move |e| sql_error(path, ctx, e);
    let mut sessions = conn
        .prepare("SELECT sid, id FROM sessions ORDER BY sid")
        .map_err(err("v2 back-fill"))?;
    let sessions: Vec<(i64, String)> = sessions
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(err("v2 back-fill"))?
        .collect::<rusqlite::Result<_>>()
        .map_err(err("v2 back-fill"))?;
    let mut rows = conn
        .prepare("SELECT key, id, payload FROM entries WHERE key BETWEEN ?1 AND ?2 ORDER BY key")
        .map_err(err("v2 back-fill"))?;
    let mut update = conn
        .prepare(
            "UPDATE session_state SET message_count = ?2, cached_tokens = ?3, uncached_tokens = ?4,
             total_tokens = ?5, cost_total = ?6, latest_compaction_id = ?7, first_message = ?8
             WHERE sid = ?1",
        )
        .map_err(err("v2 back-fill"))?;
    for (sid, session_id) in sessions {
        let (lo, hi) = crate::keys::range(sid);
        let mut state = MaterializedState::default();
        let mut cursor = rows.query(params![lo, hi]).map_err(err("v2 back-fill"))?;
        while let Some(row) = cursor.next().map_err(err("v2 back-fill"))? {
            let key: i64 = row.get(0).map_err(err("v2 back-fill"))?;
            let id: String = row.get(1).map_err(err("v2 back-fill"))?;
            let payload: String = row.get(2).map_err(err("v2 back-fill"))?;
            let entry =
                crate::rows::decode_payload(&session_id, key, &id, &payload).map_err(|e| {
                    SessionError::Storage(format!(
                        "schema migration to version 2 of {} failed: {e}",
                        path.display()
                    ))
                })?;
            state.apply(&entry);
        }
        let s = &state.stats;
        update
            .execute(params![
                sid,
                s.message_count as i64,
                s.cached_tokens as i64,
                s.uncached_tokens as i64,
                s.total_tokens as i64,
                s.cost_total,
                state.latest_compaction_id,
                state.first_message,
            ])
            .map_err(err("v2 back-fill"))?;
    }
    Ok(())
}
