//! The connection worker: one OS thread owns the `rusqlite::Connection` of a database file and
//! runs jobs sent from async code, so blocking SQLite calls never stall a tokio worker.
//!
//! Jobs run strictly in submission order, which is what serializes appends within this process;
//! across processes SQLite's write lock (taken by `BEGIN IMMEDIATE`) does the same.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use arbor_agent::error::SessionError;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use tokio::sync::oneshot;

use crate::schema;

type Result<T> = std::result::Result<T, SessionError>;
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// How hard each commit is pushed to stable storage (SQLite `PRAGMA synchronous`, WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// No fsync per commit. A process crash loses nothing (the commit is in the WAL); an OS crash
    /// or power loss may lose commits made after the last checkpoint / `save_point`, never
    /// corrupting the database. `save_point` checkpoints, which fsyncs the WAL and the database.
    #[default]
    Normal,
    /// fsync of the WAL on every commit: every successful append survives power loss.
    Full,
}

/// Tuning for a database file.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    pub synchronous: Synchronous,
    /// How long a write waits for another connection's write lock before failing.
    pub busy_timeout: Duration,
    /// WAL size (in pages) that triggers an automatic checkpoint.
    pub wal_autocheckpoint: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
            wal_autocheckpoint: 4000,
        }
    }
}

/// Handle to the worker thread of one database file.
pub(crate) struct Db {
    jobs: mpsc::Sender<Job>,
    path: PathBuf,
    options: SqliteOptions,
}

impl Db {
    /// Starts the worker thread, opens (or creates) the file, applies the pragmas and migrates
    /// the schema forward. All of it happens on the worker thread.
    pub(crate) async fn open(path: &Path, options: SqliteOptions) -> Result<Db> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = oneshot::channel::<Result<()>>();
        let thread_path = path.to_path_buf();
        let thread_options = options.clone();
        std::thread::Builder::new()
            .name("arbor-sqlite".into())
            .spawn(move || {
                let mut conn = match open_connection(&thread_path, &thread_options) {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        conn
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(job) = rx.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|e| {
                SessionError::Storage(format!("cannot start SQLite worker thread: {e}"))
            })?;
        ready_rx
            .await
            .map_err(|_| worker_gone(path))
            .and_then(|r| r)?;
        Ok(Db {
            jobs,
            path: path.to_path_buf(),
            options,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn options(&self) -> &SqliteOptions {
        &self.options
    }

    /// Runs `f` on the worker thread and waits for its result without blocking the runtime.
    pub(crate) async fn call<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = tx.send(f(conn));
        });
        self.jobs.send(job).map_err(|_| worker_gone(&self.path))?;
        rx.await.map_err(|_| worker_gone(&self.path))?
    }
}

fn worker_gone(path: &Path) -> SessionError {
    SessionError::Storage(format!(
        "SQLite worker for {} stopped unexpectedly",
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
        "PRAGMA synchronous={sync}; PRAGMA wal_autocheckpoint={}; PRAGMA temp_store=MEMORY;",
        options.wal_autocheckpoint
    ))
    .map_err(|e| sql_error(path, "cannot apply pragmas", e))?;
    conn.set_prepared_statement_cache_capacity(64);
    schema::migrate(&mut conn, path)?;
    Ok(conn)
}

/// Maps a rusqlite error to the session error model; lock contention gets its own message
/// because it is the one failure a user can act on (another process is writing).
pub(crate) fn sql_error(path: &Path, context: &str, e: rusqlite::Error) -> SessionError {
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        match f.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                return SessionError::Storage(format!(
                    "{context}: session database {} is locked by another writer ({e})",
                    path.display()
                ));
            }
            ErrorCode::NotADatabase => {
                return SessionError::Storage(format!(
                    "{context}: {} is not a SQLite database ({e})",
                    path.display()
                ));
            }
            _ => {}
        }
    }
    SessionError::Storage(format!("{context}: {} ({e})", path.display()))
}
