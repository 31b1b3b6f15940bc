//! Creating, finding, listing, deleting and forking JSONL session files.

use super::files;
use super::layout;
use super::list;
use super::storage::{sync_dir, try_lock, ForkCopy, JsonlStorage};
use super::writer::{file_writer_factory, SyncPolicy, WriterFactory};
use crate::entry::SessionHeader;
use crate::error::{Result, SessionError};
use crate::storage::{CreateOptions, ForkOptions, ListResult, SessionRepository, SessionStorage};
use async_trait::async_trait;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// How session files are arranged on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// `<root>/--<encoded cwd>--/<ts>_<id>.jsonl` (the default, pi's layout).
    PerCwd(PathBuf),
    /// Files directly in one directory (`--session-dir`). Listing and lookup also look one
    /// level down into `--…--` directories, so pi's `~/.pi/agent/sessions` can be given here.
    Flat(PathBuf),
}

/// What [`JsonlRepository::migrate`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// The version the file declared (3 when it was already current).
    pub from_version: u32,
    /// Where the original was kept; `None` when the file was already v3 and left untouched.
    pub backup: Option<PathBuf>,
}

/// JSONL sessions under one root.
///
/// [`JsonlRepository::new`] arranges files as pi does, one folder per working directory
/// (`<root>/--<encoded cwd>--/<time>_<id>.jsonl`); [`JsonlRepository::flat`] keeps them in one
/// folder. A writable open holds the file's advisory lock until the storage is dropped;
/// [`JsonlRepository::open_read_only`] never locks or changes the file.
///
/// ```
/// use std::sync::Arc;
/// use arbor_session::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), SessionError> {
/// let root = tempfile::tempdir().map_err(|e| SessionError::io("tempdir", e))?;
/// let repo = JsonlRepository::new(root.path());
///
/// let session = Session::new(Arc::new(repo.create(CreateOptions::new("/work/app")).await?));
/// let question = session
///     .append_message(arbor_ai::Message::user("what does main do?", 0).into())
///     .await?;
/// session.append_session_name("main walkthrough").await?;
/// let source = session.storage().location(); // the file's path
/// drop(session); // releases the write lock
///
/// // Listings read the name and the first prompt from the file.
/// let listed = repo.list_cwd("/work/app").await?;
/// assert_eq!(listed.sessions.len(), 1);
/// assert_eq!(listed.sessions[0].name.as_deref(), Some("main walkthrough"));
/// assert_eq!(listed.sessions[0].first_message.as_deref(), Some("what does main do?"));
///
/// // A fork copies root..=question into a new file that names its source; the source is
/// // never changed.
/// let fork = repo.fork(&source, ForkOptions::at(question.as_str())).await?;
/// assert_eq!(fork.header().await?.parent_session.as_deref(), Some(source.as_str()));
/// assert_eq!(fork.entry_count().await?, 1);
/// assert_eq!(repo.open_read_only(&source).await?.entry_count().await?, 2);
/// assert_eq!(repo.list().await?.sessions.len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct JsonlRepository {
    layout: Layout,
    sync: SyncPolicy,
    writer: WriterFactory,
    /// New sessions keep their file under a temporary name until the first user or assistant
    /// message (DECISIONS §29.5).
    file_with_first_message: bool,
}

impl std::fmt::Debug for JsonlRepository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlRepository")
            .field("layout", &self.layout)
            .field("sync", &self.sync)
            .finish_non_exhaustive()
    }
}

fn join_err(e: tokio::task::JoinError) -> SessionError {
    SessionError::backend("session I/O task failed", e)
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SessionError + '_ {
    move |e| SessionError::io(path.display().to_string(), e)
}

impl JsonlRepository {
    /// Per-cwd directories under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self::with_layout(Layout::PerCwd(root.into()))
    }

    /// `~/.arbor/sessions` (or `$ARBOR_HOME/sessions`).
    pub fn default_location() -> Self {
        Self::new(layout::default_sessions_root())
    }

    /// All files directly in `dir` (plus pi-style `--…--` subdirectories when listing).
    pub fn flat(dir: impl Into<PathBuf>) -> Self {
        Self::with_layout(Layout::Flat(dir.into()))
    }

    /// A repository over `layout`.
    pub fn with_layout(layout: Layout) -> Self {
        JsonlRepository {
            layout,
            sync: SyncPolicy::default(),
            writer: file_writer_factory(),
            file_with_first_message: false,
        }
    }

    /// Sessions this repository creates appear under their name with their first user or
    /// assistant message, as pi's do (DECISIONS §29.5): until then the file is a locked
    /// temporary beside it, removed when the session is dropped without one.
    pub fn with_file_on_first_message(mut self, on: bool) -> Self {
        self.file_with_first_message = on;
        self
    }

    /// When the sessions it opens fsync.
    pub fn with_sync(mut self, sync: SyncPolicy) -> Self {
        self.sync = sync;
        self
    }

    /// Replaces the byte sink of every session this repository opens (fault injection in
    /// tests; feature `internals`, not a stable API).
    #[cfg(feature = "internals")]
    pub fn with_writer(mut self, writer: WriterFactory) -> Self {
        self.writer = writer;
        self
    }

    /// Where its files go.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// When its sessions fsync.
    pub fn sync_policy(&self) -> SyncPolicy {
        self.sync
    }

    /// The directory new sessions for `cwd` go to.
    pub fn dir_for_cwd(&self, cwd: &str) -> PathBuf {
        match &self.layout {
            Layout::PerCwd(root) => root.join(layout::encode_cwd(cwd)),
            Layout::Flat(dir) => dir.clone(),
        }
    }

    /// Every session file this repository can see, sorted by path: the files of every
    /// per-cwd folder (per-cwd layout), or of the flat directory and its pi-style `--…--`
    /// folders. A missing root is simply empty. Reads no file.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut dirs = self.session_dirs();
        dirs.sort();
        let mut files = Vec::new();
        for dir in dirs {
            let mut here = Self::files_in(&dir);
            here.sort();
            files.extend(here);
        }
        files
    }

    /// Every directory that may hold session files.
    fn session_dirs(&self) -> Vec<PathBuf> {
        let (base, include_base) = match &self.layout {
            Layout::PerCwd(root) => (root, false),
            Layout::Flat(dir) => (dir, true),
        };
        let mut dirs = Vec::new();
        if include_base {
            dirs.push(base.clone());
        }
        if let Ok(rd) = std::fs::read_dir(base) {
            for e in rd.flatten() {
                let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
                let name = e.file_name();
                let name = name.to_string_lossy();
                if is_dir && (!include_base || layout::is_cwd_dir_name(&name)) {
                    dirs.push(e.path());
                }
            }
        }
        dirs
    }

    fn files_in(dir: &Path) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        rd.flatten()
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect()
    }

    /// Resolves an id (by file name) or a path. `Ok(None)` when nothing matches.
    pub fn find(&self, id_or_path: &str) -> Result<Option<PathBuf>> {
        if layout::looks_like_path(id_or_path) {
            let p = PathBuf::from(id_or_path);
            return Ok(p.is_file().then_some(p));
        }
        if crate::ids::validate_session_id(id_or_path).is_err() {
            return Ok(None);
        }
        for dir in self.session_dirs() {
            for file in Self::files_in(&dir) {
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
                if name.as_deref().and_then(layout::session_id_from_file_name) == Some(id_or_path) {
                    return Ok(Some(file));
                }
            }
        }
        Ok(None)
    }

    fn require(&self, id_or_path: &str) -> Result<PathBuf> {
        self.find(id_or_path)?
            .ok_or_else(|| SessionError::NotFound(format!("Session not found: {id_or_path}")))
    }

    /// Creates a new session file at `path` instead of the layout's place and name (DECISIONS
    /// §12.16). The file must not exist (`invalid_session` naming it otherwise); missing
    /// folders are created private. It is an ordinary session file: [`JsonlRepository::open`]
    /// and `open_read_only` take the path, and this repository lists it when `path` is in one
    /// of its folders.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), arbor_session::SessionError> {
    /// use arbor_session::{CreateOptions, JsonlRepository, SessionStorage};
    ///
    /// let dir = tempfile::tempdir().map_err(|e| arbor_session::SessionError::io("tempdir", e))?;
    /// let path = dir.path().join("notes/first.jsonl");
    /// let storage = JsonlRepository::flat(dir.path())
    ///     .create_at(&path, CreateOptions::new("/my/project"))
    ///     .await?;
    /// assert_eq!(storage.location(), path.display().to_string());
    /// assert_eq!(storage.header().await?.cwd, "/my/project");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_at(
        &self,
        path: impl AsRef<Path>,
        opts: CreateOptions,
    ) -> Result<JsonlStorage> {
        let header = SessionHeader::create(opts.id, opts.cwd, opts.parent_session, opts.metadata)?;
        let path = path.as_ref().to_path_buf();
        if path.exists() {
            return Err(SessionError::InvalidSession(format!(
                "session file {} already exists",
                path.display()
            )));
        }
        let repo = self.clone();
        tokio::task::spawn_blocking(move || repo.publish(&header, None, Some(path)))
            .await
            .map_err(join_err)?
    }

    /// Opens a session without taking the write lock; the file is never modified. Use this
    /// for viewers and for sessions another process is writing.
    pub async fn open_read_only(&self, id_or_path: &str) -> Result<JsonlStorage> {
        let path = self.require(id_or_path)?;
        tokio::task::spawn_blocking(move || JsonlStorage::open_read_only(&path))
            .await
            .map_err(join_err)?
    }

    /// Rewrites a v1/v2 session file as v3 now (DECISIONS §4.3, §25.3), under the writer's
    /// lock, with the same crash-safe backup and rewrite an append would do. A v3 file is left
    /// untouched.
    pub async fn migrate(&self, id_or_path: &str) -> Result<Migration> {
        let storage = self.open(id_or_path).await?;
        match storage.migrate_now().await? {
            Some((from_version, backup)) => Ok(Migration {
                from_version,
                backup: Some(backup),
            }),
            None => Ok(Migration {
                from_version: storage.header().await?.format_version(),
                backup: None,
            }),
        }
    }

    /// Sessions whose files live in `cwd`'s directory (per-cwd layout) or whose header names
    /// `cwd` (flat layout), newest first.
    pub async fn list_cwd(&self, cwd: &str) -> Result<ListResult> {
        let files = match &self.layout {
            Layout::PerCwd(_) => Self::files_in(&self.dir_for_cwd(cwd)),
            Layout::Flat(_) => self
                .session_dirs()
                .iter()
                .flat_map(|d| Self::files_in(d))
                .collect(),
        };
        let cwd = cwd.to_owned();
        let flat = matches!(self.layout, Layout::Flat(_));
        let mut result = tokio::task::spawn_blocking(move || list_files(files))
            .await
            .map_err(join_err)?;
        if flat {
            result.sessions.retain(|s| s.cwd == cwd);
        }
        Ok(result)
    }

    /// Writes a new session file atomically and opens it for writing: the header, then the
    /// lines a fork copies (indexed as they are written, DECISIONS §25.92).
    fn publish(
        &self,
        header: &SessionHeader,
        copy: Option<(&JsonlStorage, &[u32])>,
        at: Option<PathBuf>,
    ) -> Result<JsonlStorage> {
        if self.find(&header.id)?.is_some() {
            return Err(SessionError::InvalidSession(format!(
                "session {} already exists",
                header.id
            )));
        }
        let (dir, path) = match at {
            Some(path) => {
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                (dir, path)
            }
            None => {
                let dir = self.dir_for_cwd(&header.cwd);
                // Transcripts are private: folders 0700, files 0600 (DECISIONS §25.4).
                if let Layout::PerCwd(root) = &self.layout {
                    files::create_private_dirs(root)?;
                }
                files::create_private_dirs(&dir)?;
                files::sweep_stale_temps(&dir);
                let path = dir.join(layout::session_file_name(&header.timestamp, &header.id));
                (dir, path)
            }
        };
        // A caller's own folder is never swept: its files are the caller's.
        files::create_private_dirs(&dir)?;
        let mut text = header.to_json();
        text.push('\n');
        let durable = self.sync != SyncPolicy::Never;
        let Some((source, selection)) = copy.filter(|(_, s)| !s.is_empty()) else {
            // A lone header: exclusive create is atomic enough (an empty file is never valid).
            // Deferred, it is written to a temporary that takes the real name later.
            let at = if self.file_with_first_message {
                layout::temp_path(&path, crate::time::now_ms())
            } else {
                path.clone()
            };
            let mut f = files::create_new(&at, files::FILE_MODE)?;
            try_lock(&f, &at)?;
            f.write_all(text.as_bytes()).map_err(io_err(&at))?;
            if self.file_with_first_message {
                return JsonlStorage::pending(&path, at, f, self.sync, self.writer.clone());
            }
            if durable {
                f.sync_all().map_err(io_err(&path))?;
                sync_dir(&dir);
            }
            return JsonlStorage::from_locked(&path, f, self.sync, self.writer.clone());
        };
        let tmp = layout::temp_path(&path, crate::time::now_ms());
        let made = (|| -> Result<(File, ForkCopy)> {
            let f = files::create_new(&tmp, files::FILE_MODE)?;
            // Locked from the start: a sweep never takes a temporary still being written.
            try_lock(&f, &tmp)?;
            // Large writes straight from the source's read window (DECISIONS §25.92).
            let mut out = std::io::BufWriter::with_capacity(1 << 20, &f);
            out.write_all(text.as_bytes()).map_err(io_err(&tmp))?;
            let origin = path.display().to_string();
            let copied = source.copy_for_fork(selection, &origin, &mut out, text.len() as u64)?;
            out.flush().map_err(io_err(&tmp))?;
            drop(out);
            if durable {
                f.sync_all().map_err(io_err(&tmp))?;
            }
            if path.exists() {
                return Err(SessionError::InvalidSession(format!(
                    "session file {} already exists",
                    path.display()
                )));
            }
            std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
            Ok((f, copied))
        })();
        let (file, copied) = match made {
            Ok(made) => made,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        if durable {
            sync_dir(&dir);
        }
        JsonlStorage::from_copy(
            &path,
            file,
            self.sync,
            self.writer.clone(),
            header.clone(),
            copied,
        )
    }
}

fn list_files(files: Vec<PathBuf>) -> ListResult {
    let mut result = ListResult::default();
    for f in files {
        match list::read_info(&f) {
            Ok(info) => result.sessions.push(info),
            Err(reason) => result
                .skipped
                .push((f.display().to_string(), reason.to_string())),
        }
    }
    result.sessions.sort_by(|a, b| {
        b.modified_ms
            .cmp(&a.modified_ms)
            .then_with(|| b.created.cmp(&a.created))
    });
    result.skipped.sort();
    result
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[async_trait]
impl SessionRepository for JsonlRepository {
    type Storage = JsonlStorage;

    async fn create(&self, opts: CreateOptions) -> Result<JsonlStorage> {
        let header = SessionHeader::create(opts.id, opts.cwd, opts.parent_session, opts.metadata)?;
        let repo = self.clone();
        tokio::task::spawn_blocking(move || repo.publish(&header, None, None))
            .await
            .map_err(join_err)?
    }

    async fn open(&self, id_or_location: &str) -> Result<JsonlStorage> {
        let path = self.require(id_or_location)?;
        let (sync, writer) = (self.sync, self.writer.clone());
        tokio::task::spawn_blocking(move || JsonlStorage::open_writable(&path, sync, writer))
            .await
            .map_err(join_err)?
    }

    async fn list(&self) -> Result<ListResult> {
        let files: Vec<PathBuf> = self
            .session_dirs()
            .iter()
            .flat_map(|d| Self::files_in(d))
            .collect();
        tokio::task::spawn_blocking(move || list_files(files))
            .await
            .map_err(join_err)
    }

    async fn delete(&self, id_or_location: &str) -> Result<()> {
        let Some(path) = self.find(id_or_location)? else {
            return Ok(());
        };
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    async fn fork(&self, source: &str, opts: ForkOptions) -> Result<JsonlStorage> {
        let src = self.open_read_only(source).await?;
        let selection = src.fork_selection(&opts).await?;
        let src_header = src.header().await?;
        let parent = absolute(src.path()).display().to_string();
        let header = SessionHeader::create(
            opts.id,
            opts.cwd.unwrap_or(src_header.cwd),
            Some(parent),
            src_header.metadata,
        )?;
        let repo = self.clone();
        tokio::task::spawn_blocking(move || repo.publish(&header, Some((&src, &selection)), None))
            .await
            .map_err(join_err)?
    }
}
