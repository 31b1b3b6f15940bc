//! `SqliteRepository`: a database file holding many sessions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_session::error::{Result, SessionError};
use arbor_session::{CreateOptions, ForkOptions, ListResult, SessionHeader, SessionRepository};
use async_trait::async_trait;

use crate::conn::{commit, immediate, Conn};
use crate::db::{Db, SqliteOptions};
use crate::storage::{location, SqliteStorage};

/// Sessions stored in one SQLite database file (created on first open). Handles returned by
/// `create`/`open`/`fork` share the repository's connection.
#[derive(Clone)]
pub struct SqliteRepository {
    db: Arc<Db>,
}

/// Names the database file; the connection has nothing worth printing.
impl std::fmt::Debug for SqliteRepository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteRepository")
            .field("path", &self.db.path())
            .finish_non_exhaustive()
    }
}

impl SqliteRepository {
    /// Opens (creating if needed) the database at `path` with default options and migrates its
    /// schema to the current version.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// Like [`open`](Self::open), with `options` instead of the defaults.
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        let db = Db::open(path.as_ref(), options).await?;
        Ok(Self { db: Arc::new(db) })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.db.path()
    }

    /// Accepts a session id or a location (`<db path>#<id>`) of this database.
    fn session_id<'a>(&self, id_or_location: &'a str) -> Result<&'a str> {
        match id_or_location.rsplit_once('#') {
            Some((path, id)) if Path::new(path) == self.db.path() => Ok(id),
            Some((path, _)) => Err(SessionError::NotFound(format!(
                "Session not found: {id_or_location} (it belongs to {path}, not {})",
                self.db.path().display()
            ))),
            None => Ok(id_or_location),
        }
    }

    async fn insert(&self, header: SessionHeader) -> Result<SqliteStorage> {
        let db = Arc::clone(&self.db);
        let sid = self
            .db
            .call(move |conn| {
                let path: PathBuf = db.path().to_path_buf();
                let tx = immediate(conn, &db)?;
                let sid = Conn::new(&tx, &path).insert_session(&header)?;
                commit(tx, &path)?;
                Ok((sid, header))
            })
            .await?;
        SqliteStorage::new(Arc::clone(&self.db), sid.0, sid.1)
    }
}

#[async_trait]
impl SessionRepository for SqliteRepository {
    type Storage = SqliteStorage;

    async fn create(&self, opts: CreateOptions) -> Result<SqliteStorage> {
        let header = SessionHeader::create(opts.id, opts.cwd, opts.parent_session, opts.metadata)?;
        self.insert(header).await
    }

    async fn open(&self, id_or_location: &str) -> Result<SqliteStorage> {
        let id = self.session_id(id_or_location)?.to_owned();
        let db = Arc::clone(&self.db);
        let (sid, header) = self
            .db
            .call(move |conn| {
                let c = Conn::new(conn, db.path());
                let sid = c.require_session(&id)?;
                let header = c.header(&sid)?;
                Ok((sid, header))
            })
            .await?;
        SqliteStorage::new(Arc::clone(&self.db), sid, header)
    }

    async fn list(&self) -> Result<ListResult> {
        let db = Arc::clone(&self.db);
        self.db
            .call(move |conn| Conn::new(conn, db.path()).list(|id| location(&db, id)))
            .await
    }

    async fn delete(&self, id_or_location: &str) -> Result<()> {
        let id = match self.session_id(id_or_location) {
            Ok(id) => id.to_owned(),
            // A location in another database names nothing here: deleting it is a no-op.
            Err(SessionError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let db = Arc::clone(&self.db);
        self.db
            .call(move |conn| {
                let tx = immediate(conn, &db)?;
                Conn::new(&tx, db.path()).delete_session(&id)?;
                commit(tx, db.path())
            })
            .await
    }

    /// One transaction: reads the source's entries, creates the new session and copies them
    /// (payloads byte for byte, new seqs from 1). `parentSession` is the source's id.
    async fn fork(&self, source: &str, opts: ForkOptions) -> Result<SqliteStorage> {
        let source_id = self.session_id(source)?.to_owned();
        let db = Arc::clone(&self.db);
        let (sid, header) = self
            .db
            .call(move |conn| {
                let path = db.path();
                let tx = immediate(conn, &db)?;
                let c = Conn::new(&tx, path);
                let src = c.require_session(&source_id)?;
                let src_header = c.header(&src)?;
                let rows = match opts.entry_id.as_deref() {
                    Some(target) => Some(c.fork_rows(&src, target, opts.position)?),
                    None => None,
                };
                let header = SessionHeader::create(
                    opts.id,
                    opts.cwd.unwrap_or(src_header.cwd),
                    Some(src.id.clone()),
                    src_header.metadata,
                )?;
                let sid = c.insert_session(&header)?;
                match rows {
                    Some(rows) => c.copy_entries(&sid, &rows)?,
                    None => c.copy_whole(&src, &sid)?,
                }
                commit(tx, path)?;
                Ok((sid, header))
            })
            .await?;
        SqliteStorage::new(Arc::clone(&self.db), sid, header)
    }
}
