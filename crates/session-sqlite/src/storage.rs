//! `SqliteStorage`: one open session of a database file.

use std::sync::Arc;

use arbor_session::error::{Result, SessionError};
use arbor_session::{
    DerivedSettings, EntryDraft, EntryKind, EntryPage, LeafEntry, SessionEntry, SessionHeader,
    SessionStats, SessionStorage,
};
use async_trait::async_trait;

use crate::conn::{commit, immediate, Conn, Sid};
use crate::db::{Db, Synchronous};
use crate::writer_lock::WriterLock;

/// One session in a SQLite database. Handles share the database's connection; nothing but the (immutable) header is cached, so several handles and other processes see
/// each other's appends immediately.
#[derive(Clone)]
pub struct SqliteStorage {
    db: Arc<Db>,
    sid: Arc<Sid>,
    header: SessionHeader,
    /// This process's claim to write the session (shared by clones).
    _writer: Option<Arc<WriterLock>>,
}

/// Names the session by its location and says whether this handle may write.
impl std::fmt::Debug for SqliteStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStorage")
            .field("location", &location(&self.db, &self.sid.id))
            .field("writer", &self._writer.is_some())
            .finish_non_exhaustive()
    }
}

impl SqliteStorage {
    /// A writable handle: takes (or shares) the session's writer lock, refusing when another
    /// repository or process holds it.
    pub(crate) fn new(db: Arc<Db>, sid: Sid, header: SessionHeader) -> Result<Self> {
        let writer = db.writers().acquire(sid.sid, &location(&db, &sid.id))?;
        Ok(Self {
            db,
            sid: Arc::new(sid),
            header,
            _writer: writer,
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.sid.id
    }

    /// Runs a read with the connection held.
    async fn read<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&Conn<'_>, &Sid) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let sid = Arc::clone(&self.sid);
        let db = Arc::clone(&self.db);
        self.db
            .call(move |conn| f(&Conn::new(conn, db.path()), &sid))
            .await
    }

    /// Runs a write in one IMMEDIATE transaction; any error rolls everything back.
    async fn write<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&Conn<'_>, &Sid) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let sid = Arc::clone(&self.sid);
        let db = Arc::clone(&self.db);
        self.db
            .call(move |conn| {
                let path = db.path();
                let tx = immediate(conn, &db)?;
                let out = f(&Conn::new(&tx, path), &sid)?;
                commit(tx, path)?;
                Ok(out)
            })
            .await
    }
}

pub(crate) fn location(db: &Db, id: &str) -> String {
    format!("{}#{id}", db.path().display())
}

#[async_trait]
impl SessionStorage for SqliteStorage {
    async fn header(&self) -> Result<SessionHeader> {
        Ok(self.header.clone())
    }

    fn location(&self) -> String {
        location(&self.db, &self.sid.id)
    }

    async fn leaf_id(&self) -> Result<Option<String>> {
        // A closure, not the method path: the path is not general over the borrow's lifetime.
        #[allow(clippy::redundant_closure_for_method_calls)]
        self.read(|c, s| c.leaf_id(s)).await
    }

    async fn set_leaf(&self, target: Option<&str>) -> Result<SessionEntry> {
        let draft = EntryDraft::new(EntryKind::Leaf(LeafEntry {
            target_id: target.map(str::to_owned),
            extra: Default::default(),
        }));
        self.append(draft).await
    }

    async fn create_entry_id(&self) -> Result<String> {
        // A closure, not the method path: the path is not general over the borrow's lifetime.
        #[allow(clippy::redundant_closure_for_method_calls)]
        self.read(|c, s| c.new_entry_id(s)).await
    }

    async fn append(&self, draft: EntryDraft) -> Result<SessionEntry> {
        self.write(move |c, s| c.append(s, draft)).await
    }

    async fn append_entry(&self, entry: SessionEntry) -> Result<()> {
        self.write(move |c, s| c.append_entry(s, &entry)).await
    }

    async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>> {
        let id = id.to_owned();
        self.read(move |c, s| c.get_entry(s, &id)).await
    }

    async fn find_entries(&self, entry_type: &str) -> Result<Vec<SessionEntry>> {
        let ty = entry_type.to_owned();
        self.read(move |c, s| c.find_entries(s, &ty)).await
    }

    async fn get_label(&self, id: &str) -> Result<Option<String>> {
        let id = id.to_owned();
        self.read(move |c, s| c.get_label(s, &id)).await
    }

    async fn session_name(&self) -> Result<Option<String>> {
        self.read(|c, s| Ok(c.state(s)?.name)).await
    }

    async fn stats(&self) -> Result<SessionStats> {
        self.read(|c, s| Ok(c.state(s)?.stats)).await
    }

    async fn path_to_root_or_compaction(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        let leaf = leaf.map(str::to_owned);
        self.read(move |c, s| c.walk(s, leaf.as_deref(), true))
            .await
    }

    async fn ancestry(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        let leaf = leaf.map(str::to_owned);
        self.read(move |c, s| c.walk(s, leaf.as_deref(), false))
            .await
    }

    async fn entries(&self, after_seq: Option<u64>, limit: Option<usize>) -> Result<EntryPage> {
        self.read(move |c, s| c.entries_page(s, after_seq, limit))
            .await
    }

    async fn children(&self, id: Option<&str>) -> Result<Vec<SessionEntry>> {
        let id = id.map(str::to_owned);
        self.read(move |c, s| c.children(s, id.as_deref())).await
    }

    async fn derived_settings(&self, leaf: Option<&str>) -> Result<DerivedSettings> {
        let leaf = leaf.map(str::to_owned);
        self.read(move |c, s| c.derived_settings(s, leaf.as_deref()))
            .await
    }

    async fn entry_count(&self) -> Result<u64> {
        self.read(|c, s| Ok(c.state(s)?.entry_count)).await
    }

    /// Under `Synchronous::Normal` commits reach the WAL without fsync. A save point fsyncs the
    /// WAL file: one fsync makes every earlier commit durable (recovery replays the WAL's
    /// committed frames). Copying the WAL into the database is left to auto-checkpoints, which
    /// would cost a second fsync of the database file on every turn. Under `Full` every commit
    /// is already durable.
    async fn save_point(&self) -> Result<()> {
        // A durability point on a file that is no longer reachable would be a lie.
        self.db.check_file()?;
        if self.db.options().synchronous == Synchronous::Full {
            return Ok(());
        }
        let mut wal = self.db.path().as_os_str().to_owned();
        wal.push("-wal");
        let wal = std::path::PathBuf::from(wal);
        tokio::task::spawn_blocking(move || match std::fs::File::open(&wal) {
            Ok(file) => file
                .sync_data()
                .map_err(|e| SessionError::io(wal.display().to_string(), e)),
            // No WAL file: nothing is pending; the last checkpoint synced the database.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(SessionError::io(wal.display().to_string(), e)),
        })
        .await
        .map_err(|e| SessionError::backend("save point task failed", e))?
    }
}
