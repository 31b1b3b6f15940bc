//! The connection of one database file and how async code reaches it without stalling tokio.
//!
//! Every operation takes the connection's mutex and runs to completion (one transaction for a
//! write), which serializes appends within this process; across processes SQLite's write lock
//! (`BEGIN IMMEDIATE`) does the same. On a multi-thread runtime the blocking call runs in place
//! under `block_in_place` (tokio moves the worker's other tasks elsewhere first), which costs no
//! thread hand-off; on a current-thread runtime it goes to `spawn_blocking`. Measured on the
//! 2-core CI machine, the in-place call needs about 40% less CPU per append than a dedicated
//! connection thread fed through a channel (two context switches per call).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_session::error::SessionError;
use rusqlite::{Connection, OpenFlags};

use crate::error::sql_error;
use crate::schema;

type Result<T> = std::result::Result<T, SessionError>;

/// How hard each commit is pushed to stable storage (SQLite `PRAGMA synchronous`, WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// No fsync per commit. A process crash loses nothing (the commit is in the WAL); an OS crash
    /// or power loss may lose commits made after the last checkpoint / `save_point`, never
    /// corrupting the database. `save_point` fsyncs the WAL (one fsync per turn).
    #[default]
    Normal,
    /// fsync of the WAL on every commit: every successful append survives power loss.
    Full,
}

/// Tuning for a database file.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// How each commit reaches stable storage (default: [`Synchronous::Normal`]).
    pub synchronous: Synchronous,
    /// How long a write waits for another connection's write lock before failing.
    pub busy_timeout: Duration,
    /// WAL size (in pages) that triggers an automatic checkpoint. Each checkpoint costs two
    /// fsyncs, so it should be rare; `save_point` makes turns durable without one.
    pub wal_autocheckpoint: u32,
    /// Page size of a newly created database file (ignored for existing files). 2048 by
    /// default: every commit writes its dirty pages whole to the WAL, and appends (a handful of
    /// pages each) are the hot path; larger payloads simply span more overflow pages.
    pub page_size: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            wal_autocheckpoint: 16_000,
            page_size: 2048,
        }
    }
}

/// After a burst grew the WAL, it is cut back to this size when it restarts.
const WAL_KEEP_BYTES: u64 = 16 << 20;

/// Handle to one database file's connection.
pub(crate) struct Db {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
    options: SqliteOptions,
    /// The opened file's absolute path and identity, to notice it being deleted or replaced
    /// (`None` for databases without a file, e.g. `:memory:`).
    file: Option<(PathBuf, FileId)>,
    writers: crate::writer_lock::WriterLocks,
}

/// Device and inode (Unix); elsewhere only existence is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

fn file_id(path: &Path) -> std::io::Result<FileId> {
    let meta = std::fs::metadata(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(FileId(meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok(FileId(0, 0))
    }
}

impl Db {
    /// Opens (or creates) the file, applies the pragmas and migrates the schema forward.
    pub(crate) async fn open(path: &Path, options: SqliteOptions) -> Result<Db> {
        let p = path.to_path_buf();
        let o = options.clone();
        let (conn, file) = tokio::task::spawn_blocking(move || {
            let conn = open_connection(&p, &o)?;
            let file = std::fs::canonicalize(&p)
                .and_then(|abs| Ok((file_id(&abs)?, abs)))
                .ok()
                .map(|(id, abs)| (abs, id));
            Ok::<_, SessionError>((conn, file))
        })
        .await
        .map_err(|_| task_gone(path))??;
        let writers =
            crate::writer_lock::WriterLocks::for_database(file.as_ref().map(|(p, _)| p.as_path()));
        Ok(Db {
            conn: Arc::new(Mutex::new(conn)),
            path: path.to_path_buf(),
            options,
            file,
            writers,
        })
    }

    /// Writes into a database file that was deleted or replaced since it was opened would
    /// succeed and then vanish with the last connection; refuse them instead. One `stat` per
    /// write transaction.
    pub(crate) fn check_file(&self) -> Result<()> {
        let Some((abs, id)) = &self.file else {
            return Ok(());
        };
        match file_id(abs) {
            Ok(now) if now == *id => Ok(()),
            Ok(_) => Err(SessionError::Storage(format!(
                "session database {} was replaced by another file while open; reopen it (writes to the old file would be lost)",
                self.path.display()
            ))),
            Err(e) => Err(SessionError::backend(
                format!(
                    "session database {} was deleted while open; writes would be lost",
                    self.path.display()
                ),
                e,
            )),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The writer locks of this repository's sessions (DECISIONS §25.8).
    pub(crate) fn writers(&self) -> &crate::writer_lock::WriterLocks {
        &self.writers
    }

    pub(crate) fn options(&self) -> &SqliteOptions {
        &self.options
    }

    /// Runs `f` with the connection, off the async scheduler.
    pub(crate) async fn call<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let run = move || {
            // A panic inside `f` unwinds through rusqlite's `Transaction`, which rolls back, so
            // a poisoned connection is still consistent.
            let mut guard = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut guard)
        };
        let in_place = tokio::runtime::Handle::try_current()
            .map(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
            .unwrap_or(false);
        if in_place {
            tokio::task::block_in_place(run)
        } else {
            tokio::task::spawn_blocking(run)
                .await
                .map_err(|_| task_gone(&self.path))?
        }
    }
}

fn task_gone(path: &Path) -> SessionError {
    SessionError::Storage(format!(
        "SQLite task for {} stopped unexpectedly",
        path.display()
    ))
}

fn open_connection(path: &Path, options: &SqliteOptions) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)
        .map_err(|e| sql_error(path, "cannot open session database", e))?;
    conn.busy_timeout(options.busy_timeout)
        .map_err(|e| sql_error(path, "cannot set busy timeout", e))?;
    conn.execute_batch(&format!("PRAGMA page_size={}", options.page_size))
        .map_err(|e| sql_error(path, "cannot set page size", e))?;
    // journal_mode returns a row; query it so a refusal (e.g. a read-only medium) is visible.
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(|e| sql_error(path, "cannot switch session database to WAL", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(SessionError::Storage(format!(
            "session database {} refused WAL mode (journal_mode is {mode})",
            path.display()
        )));
    }
    let sync = match options.synchronous {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA wal_autocheckpoint={}; PRAGMA temp_store=MEMORY;
         PRAGMA journal_size_limit={WAL_KEEP_BYTES};",
        options.wal_autocheckpoint
    ))
    .map_err(|e| sql_error(path, "cannot apply pragmas", e))?;
    conn.set_prepared_statement_cache_capacity(64);
    schema::migrate(&mut conn, path)?;
    Ok(conn)
}
