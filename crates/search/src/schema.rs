//! The index file: where it lives, its private modes, its schema and the rebuild rule.
//!
//! The index is a cache of the session files (DECISIONS §34.6): when it is missing, of
//! another schema version, or unreadable, it is deleted and built again from the files.

use std::fs::OpenOptions;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::error::{io, sql, Result};

/// Bumped whenever the tables or what is extracted into them change; an index of another
/// version is rebuilt (DECISIONS §34.6).
pub const SCHEMA_VERSION: i64 = 2;

/// The index file's name inside the sessions directory.
pub const INDEX_FILE_NAME: &str = "search-index.sqlite";

const SCHEMA: &str = "
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL DEFAULT '',
    cwd TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL DEFAULT '',
    name TEXT,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    indexed_to INTEGER NOT NULL DEFAULT 0,
    lines INTEGER NOT NULL DEFAULT 0,
    head_hash INTEGER NOT NULL DEFAULT 0,
    tail_start INTEGER NOT NULL DEFAULT 0,
    tail_hash INTEGER NOT NULL DEFAULT 0,
    leaf_id TEXT,
    problem TEXT,
    broken INTEGER NOT NULL DEFAULT 0,
    store TEXT
);
CREATE TABLE entries(
    file_id INTEGER NOT NULL,
    entry_id TEXT NOT NULL,
    parent_id TEXT,
    active INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY(file_id, entry_id)
) WITHOUT ROWID;
CREATE TABLE docs(
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    entry_id TEXT NOT NULL,
    target_id TEXT NOT NULL,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_len INTEGER NOT NULL
);
CREATE INDEX docs_by_file ON docs(file_id);
CREATE VIRTUAL TABLE fts USING fts5(
    body,
    content='',
    contentless_delete=1,
    tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO fts(fts, rank) VALUES('hashsize', 33554432);
";

/// Where the index of the sessions under `sessions_dir` lives.
pub fn index_path(sessions_dir: &Path) -> PathBuf {
    sessions_dir.join(INDEX_FILE_NAME)
}

/// Opens the index at `path`, creating it (0600, its directory 0700) when missing and
/// rebuilding it when its schema version is not [`SCHEMA_VERSION`]. Returns whether it was
/// (re)built empty.
pub(crate) fn open(path: &Path) -> Result<(Connection, bool)> {
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            std::fs::create_dir_all(dir).map_err(io(dir, "cannot create the directory"))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(io(dir, "cannot make the directory private"))?;
        }
    }
    // Create the file ourselves so it is private from its first byte; SQLite gives its WAL
    // and shared-memory files the database file's mode.
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .map_err(io(path, "cannot create the file"))?;
    let conn = Connection::open(path).map_err(sql(path, "cannot open"))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sql(path, "cannot set the busy timeout"))?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536;",
    )
    .map_err(sql(path, "cannot set the journal mode"))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql(path, "cannot read the schema version"))?;
    if version == SCHEMA_VERSION {
        return Ok((conn, false));
    }
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(sql(path, "cannot read the schema"))?;
    if tables > 0 {
        // Another schema: start again from an empty file.
        drop(conn);
        remove(path)?;
        return open(path);
    }
    conn.execute_batch(&format!(
        "BEGIN; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
    ))
    .map_err(sql(path, "cannot create the tables"))?;
    Ok((conn, true))
}

/// Deletes the index file and its WAL and shared-memory companions.
pub(crate) fn remove(path: &Path) -> Result<()> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let p = PathBuf::from(p);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&p, "cannot remove the old index")(e)),
        }
    }
    Ok(())
}

/// WAL bytes above which a refresh folds the WAL back into the index file and truncates it.
const WAL_SETTLE_BYTES: u64 = 4 << 20;

/// After a refresh that wrote much (a build, many new files), copies the WAL into the index
/// file and truncates it, so the index takes its own size on disk and not twice that
/// (DECISIONS §34.14). Small appends leave the WAL to SQLite's own checkpoints. A checkpoint
/// that other readers hold back is only an optimisation missed, never an error.
pub(crate) fn settle_wal(conn: &Connection, path: &Path) {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let big = std::fs::metadata(PathBuf::from(wal)).is_ok_and(|m| m.len() > WAL_SETTLE_BYTES);
    if big {
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
}
