//! One open JSONL session file.

use super::file_source::{FileLines, FileSource};
use super::layout;
use super::load::{self, Loaded, Tail};
use super::writer::{SessionWriter, SyncPolicy, WriterFactory};
use crate::append;
use crate::entry::{EntryKind, LeafEntry, SessionEntry, SessionHeader};
use crate::error::{Result, SessionError};
use crate::index::{Index, LineSource, Raw};
use crate::index_reads;
use crate::storage::{DerivedSettings, EntryDraft, EntryPage, SessionStats, SessionStorage};
use crate::stored_lines::{LineSnapshot, Lines, StoredLines};
use async_trait::async_trait;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use tokio::sync::RwLock;

/// A fork's new file as [`JsonlStorage::copy_for_fork`] wrote it: the copy's index, its
/// physical lines (header included) and its length.
pub(crate) struct ForkCopy {
    index: Index,
    lines: u32,
    len: u64,
}

/// What opening a file found and repaired.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenReport {
    /// An incomplete last line (crash during an append).
    pub torn_tail: Option<TornTail>,
    /// The last line lacked its newline (a writable open appended one).
    pub missing_newline: bool,
    /// The version of a v1/v2 file that was migrated in memory.
    pub migrated_from: Option<u32>,
    /// Where the original of a migrated file was kept once the file was rewritten.
    pub backup: Option<PathBuf>,
}

/// The incomplete bytes at the end of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct TornTail {
    /// Byte offset where the incomplete line starts; a writable open cuts the file back to it.
    pub offset: u64,
    /// The incomplete line's length in bytes.
    pub len: u64,
    /// Where a writable open moved the bytes (`<file>.torn-<unix ms>`); `None` when read-only.
    pub sidecar: Option<PathBuf>,
}

/// A JSONL session (pi v3 format). Writable handles hold the file's advisory lock until dropped.
pub struct JsonlStorage {
    path: PathBuf,
    location: String,
    state: RwLock<State>,
}

struct State {
    header: SessionHeader,
    index: Index,
    /// Read handle for entry lines (and, for writable opens, the lock holder).
    file: File,
    write: Option<WriteSide>,
    report: OpenReport,
    lines: u32,
}

struct WriteSide {
    writer: Box<dyn SessionWriter>,
    factory: WriterFactory,
    sync: SyncPolicy,
    /// File length covered by committed entries.
    committed: u64,
    /// A failed append may have left bytes after `committed` that must be cut first.
    dirty_tail: bool,
    unsynced: bool,
    identity: Option<(u64, u64)>,
    /// When the path last resolved to our file.
    checked_at: Option<std::time::Instant>,
    /// Set for migrated files: rewritten (with a backup) before the first append.
    rewrite_from: Option<u32>,
    header_line: String,
    scratch: Vec<u8>,
    /// A new session's temporary name until its first conversation message (DECISIONS §29.5).
    pending: Option<PathBuf>,
}

impl Drop for WriteSide {
    fn drop(&mut self) {
        if pending::discard(self.pending.take()) {
            return;
        }
        if self.unsynced && self.sync != SyncPolicy::Never {
            let _ = self.writer.sync();
        }
    }
}

#[cfg(unix)]
fn identity_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity_of(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// The error a second writer gets (DECISIONS §4.4).
pub(crate) fn locked_error(path: &Path) -> SessionError {
    SessionError::Storage(format!(
        "session is open for writing by another process: {}",
        path.display()
    ))
}

/// The write lock for opening an existing file: a lock that is still held is tried again for
/// up to ~200 ms before the second-writer refusal. A `flock` lives on the open file
/// description, which a child process forked elsewhere in this process shares until its
/// `exec` closes it; a session just closed here (a fork reopened at once, a `/new` after a
/// tool ran `git`) can stay locked for that window (DECISIONS §25.41).
fn lock_for_open(file: &File, path: &Path) -> Result<()> {
    const TRIES: u32 = 10;
    for _ in 1..TRIES {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(path)(e)),
        }
    }
    try_lock(file, path)
}

/// Takes the advisory write lock on `file` without waiting (`File::try_lock`, std 1.89+).
pub(crate) fn try_lock(file: &File, path: &Path) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(locked_error(path)),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(SessionError::io(path.display().to_string(), e))
        }
    }
}

use super::files;
pub(crate) use super::files::sync_dir;
use super::pending;

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SessionError + '_ {
    move |e| SessionError::io(path.display().to_string(), e)
}

impl JsonlStorage {
    /// Opens `path` for writing: takes the lock, loads, repairs a torn or unterminated tail.
    pub(crate) fn open_writable(
        path: &Path,
        sync: SyncPolicy,
        factory: WriterFactory,
    ) -> Result<JsonlStorage> {
        let file = match OpenOptions::new().read(true).append(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(format!(
                    "Session not found: {}",
                    path.display()
                )))
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        lock_for_open(&file, path)?;
        // Temporaries an interrupted rewrite or fork left here (DECISIONS §25.5).
        if let Some(dir) = files::real_path(path).parent() {
            files::sweep_stale_temps(dir);
        }
        Self::from_locked(path, file, sync, factory)
    }

    /// Builds a writable storage from an opened, locked append-mode handle.
    pub(crate) fn from_locked(
        path: &Path,
        file: File,
        sync: SyncPolicy,
        factory: WriterFactory,
    ) -> Result<JsonlStorage> {
        let loaded = load::load(&path.display().to_string(), &file)?;
        Self::from_loaded(path, file, sync, factory, loaded)
    }

    /// A new session whose file is still the temporary `at` (locked, header written); it
    /// takes `path` with the first conversation message (DECISIONS §29.5).
    pub(crate) fn pending(
        path: &Path,
        at: PathBuf,
        file: File,
        sync: SyncPolicy,
        factory: WriterFactory,
    ) -> Result<JsonlStorage> {
        let made = Self::from_locked(path, file, sync, factory);
        let mut storage = made.inspect_err(|_| drop(std::fs::remove_file(&at)))?;
        if let Some(ws) = storage.state.get_mut().write.as_mut() {
            ws.pending = Some(at);
        }
        Ok(storage)
    }

    /// A writable storage over a new fork file and the index its copy built (no re-read).
    pub(crate) fn from_copy(
        path: &Path,
        file: File,
        sync: SyncPolicy,
        factory: WriterFactory,
        header: SessionHeader,
        copy: ForkCopy,
    ) -> Result<JsonlStorage> {
        let loaded = Loaded {
            header_line: header.to_json(),
            header,
            index: copy.index,
            lines: copy.lines,
            file_len: copy.len,
            tail: Tail::Clean,
            migrated_from: None,
        };
        Self::from_loaded(path, file, sync, factory, loaded)
    }

    fn from_loaded(
        path: &Path,
        file: File,
        sync: SyncPolicy,
        factory: WriterFactory,
        loaded: Loaded,
    ) -> Result<JsonlStorage> {
        let location = path.display().to_string();
        let mut report = OpenReport {
            migrated_from: loaded.migrated_from,
            ..OpenReport::default()
        };
        let committed = repair_tail(path, &file, &loaded, &mut report, sync)?;
        let identity = file.metadata().ok().as_ref().and_then(identity_of);
        let writer = factory(file.try_clone().map_err(io_err(path))?);
        let Loaded {
            header,
            header_line,
            index,
            lines,
            migrated_from,
            ..
        } = loaded;
        Ok(JsonlStorage {
            path: path.to_owned(),
            location,
            state: RwLock::new(State {
                header,
                index,
                file,
                write: Some(WriteSide {
                    writer,
                    factory,
                    sync,
                    committed,
                    dirty_tail: false,
                    unsynced: false,
                    identity,
                    checked_at: None,
                    rewrite_from: migrated_from,
                    header_line,
                    scratch: Vec::new(),
                    pending: None,
                }),
                report,
                lines,
            }),
        })
    }

    /// Opens without the lock; never modifies the file. Writes fail with a `storage` error.
    pub(crate) fn open_read_only(path: &Path) -> Result<JsonlStorage> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(format!(
                    "Session not found: {}",
                    path.display()
                )))
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        let location = path.display().to_string();
        let loaded = load::load(&location, &file)?;
        let report = OpenReport {
            migrated_from: loaded.migrated_from,
            missing_newline: loaded.tail == Tail::MissingNewline,
            torn_tail: match &loaded.tail {
                Tail::Torn { offset, bytes } => Some(TornTail {
                    offset: *offset,
                    len: bytes.len() as u64,
                    sidecar: None,
                }),
                _ => None,
            },
            backup: None,
        };
        Ok(JsonlStorage {
            path: path.to_owned(),
            location,
            state: RwLock::new(State {
                header: loaded.header,
                index: loaded.index,
                file,
                write: None,
                report,
                lines: loaded.lines,
            }),
        })
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the open found and repaired.
    pub async fn report(&self) -> OpenReport {
        self.state.read().await.report.clone()
    }

    /// Opened for writing (holds the file's lock).
    pub async fn is_writable(&self) -> bool {
        self.state.read().await.write.is_some()
    }

    /// The entries a fork copies, in file order (DECISIONS §5).
    pub(crate) async fn fork_selection(&self, opts: &crate::ForkOptions) -> Result<Vec<u32>> {
        self.with_read(|index, src| index_reads::fork_selection(index, src, opts))
            .await
    }

    /// Writes the `selection` (from [`JsonlStorage::fork_selection`]) byte for byte to `out`,
    /// which holds `written` bytes (the header) of the file `origin`, indexing the copy from this
    /// session's index, so the new file is never read back (DECISIONS §25.92). Blocking; the
    /// storage must not be locked for writing (a fork's source is a read-only open).
    pub(crate) fn copy_for_fork(
        &self,
        selection: &[u32],
        origin: &str,
        out: &mut dyn Write,
        written: u64,
    ) -> Result<ForkCopy> {
        let st = self.state.try_read().map_err(|_| {
            SessionError::Storage(format!(
                "{} is busy; the fork was not written",
                self.location
            ))
        })?;
        let src = FileSource::new(&st.file, &self.location);
        let mut index = Index::new(origin);
        let mut offset = written;
        let io = |e| SessionError::io(origin, e);
        for (k, &ix) in selection.iter().enumerate() {
            let line = u32::try_from(k + 2).unwrap_or(u32::MAX);
            src.with_line(&st.index.slot(ix).raw, &mut |text| {
                out.write_all(text.as_bytes()).map_err(io)?;
                out.write_all(b"\n").map_err(io)?;
                let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
                index.load_copy(&st.index, ix, text, Raw::File { offset, len }, line)?;
                offset += u64::from(len) + 1;
                Ok(())
            })?;
        }
        index.finish_load()?;
        Ok(ForkCopy {
            index,
            lines: u32::try_from(selection.len() + 1).unwrap_or(u32::MAX),
            len: offset,
        })
    }

    async fn with_read<T>(
        &self,
        f: impl FnOnce(&Index, &dyn LineSource) -> Result<T>,
    ) -> Result<T> {
        let st = self.state.read().await;
        let src = FileSource::new(&st.file, &self.location);
        f(&st.index, &src)
    }

    /// Rewrites a migrated file as v3 (keeping the original as a backup) unless already done.
    fn rewrite_if_migrated(&self, st: &mut State) -> Result<Option<(u32, PathBuf)>> {
        let Some(ws) = st.write.as_mut() else {
            return Err(SessionError::Storage(format!(
                "session {} is open read-only",
                self.path.display()
            )));
        };
        let Some(version) = ws.rewrite_from else {
            return Ok(None);
        };
        let (file, backup) = rewrite_migrated(&self.path, &st.index, ws, version)?;
        st.file = file;
        st.report.backup = Some(backup.clone());
        st.lines = u32::try_from(st.index.len() + 1).unwrap_or(u32::MAX);
        Ok(Some((version, backup)))
    }

    /// Writes a v1/v2 file out as v3 now rather than at the first append (DECISIONS §4.3,
    /// §25.3): `Some((from version, backup path))`, or `None` when the file was already v3.
    /// The same code path as the rewrite an append triggers.
    pub async fn migrate_now(&self) -> Result<Option<(u32, PathBuf)>> {
        let mut guard = self.state.write().await;
        let st = &mut *guard;
        if let Some(ws) = st.write.as_mut() {
            check_identity(&self.path, &st.file, ws)?;
        }
        self.rewrite_if_migrated(st)
    }

    fn write_line(&self, st: &mut State, line: &str) -> Result<()> {
        let path = self.path.as_path();
        let Some(ws) = st.write.as_mut() else {
            return Err(SessionError::Storage(format!(
                "session {} is open read-only",
                path.display()
            )));
        };
        let len = u32::try_from(line.len())
            .map_err(|_| SessionError::InvalidEntry("entry larger than 4 GiB".into()))?;
        let env = append::checked_probe(&st.index, line)?;
        let at = ws.pending.clone();
        check_identity(at.as_deref().unwrap_or(path), &st.file, ws)?;
        if ws.dirty_tail {
            ws.writer.truncate(ws.committed).map_err(io_err(path))?;
            ws.dirty_tail = false;
        }
        if pending::name_on_message(&mut ws.pending, line, path, ws.sync)? {
            ws.checked_at = None;
        }
        self.rewrite_if_migrated(st)?;
        let Some(ws) = st.write.as_mut() else {
            return Err(SessionError::Storage("session lost its writer".into()));
        };
        ws.scratch.clear();
        ws.scratch.extend_from_slice(line.as_bytes());
        ws.scratch.push(b'\n');
        let outcome = ws.writer.append(&ws.scratch).and_then(|()| {
            if ws.sync == SyncPolicy::Always {
                ws.writer.sync()
            } else {
                Ok(())
            }
        });
        if let Err(e) = outcome {
            // Undo a partial line so the file ends on a complete entry again.
            if ws.writer.truncate(ws.committed).is_err() {
                ws.dirty_tail = true;
            }
            return Err(io_err(path)(e));
        }
        let offset = ws.committed;
        ws.committed += ws.scratch.len() as u64;
        ws.unsynced = ws.sync != SyncPolicy::Always;
        st.lines += 1;
        st.index.append(&env, Raw::File { offset, len }, st.lines);
        Ok(())
    }
}

/// How often the path is re-resolved to notice a file replaced under us (a deletion is noticed
/// on every append through the open handle's link count, which is cheaper).
const REPLACE_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Refuses to write when the path no longer names the file we hold (deleted or replaced).
fn check_identity(path: &Path, file: &File, ws: &mut WriteSide) -> Result<()> {
    let Some(ours) = ws.identity else {
        return Ok(());
    };
    let deleted = || {
        SessionError::Storage(format!(
            "session file {} was deleted or replaced while open; nothing was written",
            path.display()
        ))
    };
    if link_count(file).map_err(io_err(path))? == Some(0) {
        return Err(deleted());
    }
    let now = std::time::Instant::now();
    if ws
        .checked_at
        .is_some_and(|t| now.duration_since(t) < REPLACE_CHECK_EVERY)
    {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(meta) if identity_of(&meta) == Some(ours) => {
            ws.checked_at = Some(now);
            Ok(())
        }
        Ok(_) => Err(SessionError::Storage(format!(
            "session file {} was replaced by another file while open; nothing was written",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(deleted()),
        Err(e) => Err(io_err(path)(e)),
    }
}

#[cfg(unix)]
fn link_count(file: &File) -> std::io::Result<Option<u64>> {
    use std::os::unix::fs::MetadataExt;
    Ok(Some(file.metadata()?.nlink()))
}

#[cfg(not(unix))]
fn link_count(_file: &File) -> std::io::Result<Option<u64>> {
    Ok(None)
}

/// Moves a torn tail to a sidecar and cuts it off; appends a missing final newline.
fn repair_tail(
    path: &Path,
    file: &File,
    loaded: &Loaded,
    report: &mut OpenReport,
    sync: SyncPolicy,
) -> Result<u64> {
    match &loaded.tail {
        Tail::Clean => Ok(loaded.file_len),
        Tail::MissingNewline => {
            let mut f = file;
            f.write_all(b"\n").map_err(io_err(path))?;
            if sync != SyncPolicy::Never {
                f.sync_data().map_err(io_err(path))?;
            }
            report.missing_newline = true;
            Ok(loaded.file_len + 1)
        }
        Tail::Torn { offset, bytes } => {
            let mut ms = crate::time::now_ms();
            // Sidecars sit beside the real file (not a symlink to it) and keep its mode.
            let real = files::real_path(path);
            let mode = files::mode_of(&file.metadata().map_err(io_err(path))?);
            let (sidecar, mut out) = loop {
                let candidate = layout::torn_sidecar(&real, ms);
                match files::create_new(&candidate, mode) {
                    Ok(f) => break (candidate, f),
                    Err(SessionError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::AlreadyExists =>
                    {
                        ms += 1
                    }
                    Err(e) => return Err(e),
                }
            };
            out.write_all(bytes).map_err(io_err(&sidecar))?;
            out.sync_all().map_err(io_err(&sidecar))?;
            file.set_len(*offset).map_err(io_err(path))?;
            file.sync_all().map_err(io_err(path))?;
            if let Some(dir) = path.parent() {
                sync_dir(dir);
            }
            report.torn_tail = Some(TornTail {
                offset: *offset,
                len: bytes.len() as u64,
                sidecar: Some(sidecar),
            });
            Ok(*offset)
        }
    }
}

/// DECISIONS §4.3, §25.3: keep the original as `<file>.v<N>.bak` (a verified, durable copy),
/// write the migrated content to a locked temporary with the original's mode, fsync, and
/// rename it over the original — over the file a symlink names, never over the link.
fn rewrite_migrated(
    path: &Path,
    index: &Index,
    ws: &mut WriteSide,
    version: u32,
) -> Result<(File, PathBuf)> {
    let target = files::real_path(path);
    let mode = files::mode_of(&std::fs::metadata(&target).map_err(io_err(&target))?);
    let backup = layout::backup_path(&target, version);
    files::make_backup(&target, &backup)?;
    let tmp = layout::temp_path(&target, crate::time::now_ms());
    let result = (|| -> Result<File> {
        let mut out = files::create_new(&tmp, mode)?;
        try_lock(&out, &tmp)?;
        let mut text = String::with_capacity(ws.header_line.len() + 1);
        text.push_str(&ws.header_line);
        text.push('\n');
        for slot in index.slots() {
            match &slot.raw {
                Raw::Mem(s) => text.push_str(s),
                Raw::File { .. } => {
                    return Err(SessionError::Storage(
                        "a migrated session holds a file-backed line".into(),
                    ))
                }
            }
            text.push('\n');
        }
        out.write_all(text.as_bytes()).map_err(io_err(&tmp))?;
        out.sync_all().map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, &target).map_err(io_err(&target))?;
        Ok(out)
    })();
    let file = match result {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if let Some(dir) = target.parent() {
        sync_dir(dir);
    }
    let len = file.metadata().map_err(io_err(path))?.len();
    ws.writer = (ws.factory)(file.try_clone().map_err(io_err(path))?);
    ws.committed = len;
    ws.identity = file.metadata().ok().as_ref().and_then(identity_of);
    ws.checked_at = None;
    ws.rewrite_from = None;
    ws.unsynced = false;
    Ok((file, backup))
}

#[async_trait]
impl SessionStorage for JsonlStorage {
    async fn header(&self) -> Result<SessionHeader> {
        Ok(self.state.read().await.header.clone())
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    async fn leaf_id(&self) -> Result<Option<String>> {
        Ok(self.state.read().await.index.leaf_id().map(str::to_owned))
    }

    async fn set_leaf(&self, target: Option<&str>) -> Result<SessionEntry> {
        self.append(EntryDraft::new(EntryKind::Leaf(LeafEntry {
            target_id: target.map(str::to_owned),
            extra: Default::default(),
        })))
        .await
    }

    async fn create_entry_id(&self) -> Result<String> {
        let st = self.state.read().await;
        Ok(crate::ids::new_entry_id(|c| st.index.contains(c)))
    }

    async fn append(&self, draft: EntryDraft) -> Result<SessionEntry> {
        let mut guard = self.state.write().await;
        let st = &mut *guard;
        if st.write.is_none() {
            return Err(SessionError::Storage(format!(
                "session {} is open read-only",
                self.location
            )));
        }
        let prepared = {
            let src = FileSource::new(&st.file, &self.location);
            append::prepare_draft(&st.index, &src, draft)?
        };
        self.write_line(st, &prepared.line)?;
        Ok(prepared.entry)
    }

    async fn append_entry(&self, entry: SessionEntry) -> Result<()> {
        let mut guard = self.state.write().await;
        let st = &mut *guard;
        let prepared = append::prepare_entry(entry)?;
        self.write_line(st, &prepared.line)
    }

    async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>> {
        self.with_read(|index, src| match index.resolve(id) {
            None => Ok(None),
            Some(ix) => index_reads::read_entry(index, src, ix).map(Some),
        })
        .await
    }

    async fn find_entries(&self, entry_type: &str) -> Result<Vec<SessionEntry>> {
        self.with_read(|index, src| index_reads::read_all(index, src, &index.of_type(entry_type)))
            .await
    }

    async fn get_label(&self, id: &str) -> Result<Option<String>> {
        Ok(self.state.read().await.index.label(id).map(str::to_owned))
    }

    async fn session_name(&self) -> Result<Option<String>> {
        Ok(self.state.read().await.index.name().map(str::to_owned))
    }

    async fn stats(&self) -> Result<SessionStats> {
        self.with_read(index_reads::stats).await
    }

    async fn path_to_root_or_compaction(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        self.with_read(|index, src| {
            let start = index_reads::leaf_arg(index, leaf)?;
            index_reads::read_all(index, src, &index.path_to_root_or_compaction(start)?)
        })
        .await
    }

    async fn ancestry(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        self.with_read(|index, src| {
            let start = index_reads::leaf_arg(index, leaf)?;
            index_reads::read_all(index, src, &index.ancestry(start)?)
        })
        .await
    }

    async fn path_tail(&self, leaf: Option<&str>, max_entries: usize) -> Result<Vec<SessionEntry>> {
        self.with_read(|index, src| {
            let start = index_reads::leaf_arg(index, leaf)?;
            index_reads::read_all(index, src, &index.path_tail(start, max_entries)?)
        })
        .await
    }

    async fn entries(&self, after_seq: Option<u64>, limit: Option<usize>) -> Result<EntryPage> {
        self.with_read(|index, src| index_reads::page(index, src, after_seq, limit))
            .await
    }

    async fn children(&self, id: Option<&str>) -> Result<Vec<SessionEntry>> {
        self.with_read(|index, src| {
            let parent = match id {
                None => None,
                Some(id) => Some(
                    index
                        .resolve(id)
                        .ok_or_else(|| SessionError::NotFound(format!("Entry not found: {id}")))?,
                ),
            };
            index_reads::read_all(index, src, &index.children(parent))
        })
        .await
    }

    async fn entry_count(&self) -> Result<u64> {
        Ok(self.state.read().await.index.len() as u64)
    }

    async fn derived_settings(&self, leaf: Option<&str>) -> Result<DerivedSettings> {
        self.with_read(|index, src| index_reads::derived_settings(index, src, leaf))
            .await
    }

    fn lines(&self) -> Option<&dyn StoredLines> {
        Some(self)
    }

    async fn save_point(&self) -> Result<()> {
        let mut guard = self.state.write().await;
        if let Some(ws) = guard.write.as_mut() {
            if ws.unsynced && ws.sync == SyncPolicy::SavePoint {
                ws.writer.sync().map_err(io_err(&self.path))?;
                ws.unsynced = false;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl StoredLines for JsonlStorage {
    async fn read_lines(
        &self,
        read: &mut (dyn for<'l> FnMut(Lines<'l>) -> Result<()> + Send),
    ) -> Result<()> {
        let st = self.state.read().await;
        let (file, origin) = (&st.file, self.location.as_str());
        let sources = || -> Box<dyn LineSource + '_> { Box::new(FileSource::new(file, origin)) };
        read(Lines {
            index: &st.index,
            sources: &sources,
        })
    }

    async fn snapshot(&self) -> Result<LineSnapshot> {
        let st = self.state.read().await;
        let file = st.file.try_clone().map_err(io_err(&self.path))?;
        let origin = st.index.origin().to_owned();
        Ok(LineSnapshot::of(
            &st.index,
            Box::new(FileLines { file, origin }),
        ))
    }
}
