//! The in-memory backend: the reference behaviour of the storage contract, used in tests and
//! for `--no-session` runs. Entries are kept as their JSON lines, exactly as a file would hold
//! them, so the memory and file backends share one index and one set of rules.

use crate::append;
use crate::entry::{SessionEntry, SessionHeader};
use crate::error::{Result, SessionError};
use crate::index::{Index, LineSource, MemSource, Raw};
use crate::index_reads;
use crate::line::envelope::probe;
use crate::storage::{
    user_text, CreateOptions, DerivedSettings, EntryDraft, EntryPage, ForkOptions, ListResult,
    SessionInfo, SessionRepository, SessionStats, SessionStorage,
};
use crate::stored_lines::{LineSnapshot, Lines, SnapshotSources, StoredLines};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::RwLock;

const PREFIX: &str = "memory:";

/// One in-memory session. Cloning gives another handle to the same session.
#[derive(Clone)]
pub struct MemoryStorage {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for MemoryStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStorage")
            .field("location", &self.location())
            .finish_non_exhaustive()
    }
}

struct Inner {
    header: SessionHeader,
    index: RwLock<Index>,
    modified_ms: AtomicI64,
}

impl MemoryStorage {
    /// A standalone session with a fresh id (not registered in any repository).
    pub fn new(cwd: impl Into<String>) -> Self {
        let header = SessionHeader::new(crate::ids::new_session_id(), crate::time::now_iso(), cwd);
        Self::from_header(header)
    }

    fn from_header(header: SessionHeader) -> Self {
        let origin = format!("{PREFIX}{}", header.id);
        MemoryStorage {
            inner: Arc::new(Inner {
                header,
                index: RwLock::new(Index::new(origin)),
                modified_ms: AtomicI64::new(crate::time::now_ms()),
            }),
        }
    }

    /// Appends already-serialized lines verbatim (fork copies), in order.
    async fn import_lines(&self, lines: Vec<Box<str>>) -> Result<()> {
        let mut index = self.inner.index.write().await;
        for line in lines {
            let env = probe(&line).map_err(|e| SessionError::InvalidEntry(e.to_string()))?;
            index.check_append(&env)?;
            index.append(&env, Raw::Mem(line.clone()), 0);
        }
        Ok(())
    }

    fn touch(&self) {
        self.inner
            .modified_ms
            .store(crate::time::now_ms(), Ordering::Relaxed);
    }

    async fn info(&self) -> Result<SessionInfo> {
        let index = self.inner.index.read().await;
        let mut first_message = None;
        for ix in index.of_type("message") {
            let raw = MemSource.read_raw(&index, ix);
            let value: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
            if let Some(m) = value.get("message") {
                if m.get("role").and_then(Value::as_str) == Some("user") {
                    first_message = user_text(m);
                    break;
                }
            }
        }
        let h = &self.inner.header;
        Ok(SessionInfo {
            id: h.id.clone(),
            location: self.location(),
            cwd: h.cwd.clone(),
            name: index.name().map(str::to_owned),
            created: h.timestamp.clone(),
            modified_ms: self.inner.modified_ms.load(Ordering::Relaxed),
            entry_count: Some(index.len() as u64),
            first_message,
            parent_session: h.parent_session.clone(),
        })
    }
}

/// The memory backend's snapshot sources: its lines are copied into the snapshot.
struct MemLines;

impl SnapshotSources for MemLines {
    fn source(&self) -> Box<dyn LineSource + '_> {
        Box::new(MemSource)
    }
}

impl MemSource {
    fn read_raw<'a>(&self, index: &'a Index, ix: u32) -> &'a str {
        match &index.slot(ix).raw {
            Raw::Mem(s) => s,
            Raw::File { .. } => "",
        }
    }
}

#[async_trait]
impl SessionStorage for MemoryStorage {
    async fn header(&self) -> Result<SessionHeader> {
        Ok(self.inner.header.clone())
    }

    fn location(&self) -> String {
        format!("{PREFIX}{}", self.inner.header.id)
    }

    async fn leaf_id(&self) -> Result<Option<String>> {
        Ok(self.inner.index.read().await.leaf_id().map(str::to_owned))
    }

    async fn set_leaf(&self, target: Option<&str>) -> Result<SessionEntry> {
        self.append(EntryDraft::new(super::entry::EntryKind::Leaf(
            super::entry::LeafEntry {
                target_id: target.map(str::to_owned),
                extra: Default::default(),
            },
        )))
        .await
    }

    async fn create_entry_id(&self) -> Result<String> {
        let index = self.inner.index.read().await;
        Ok(crate::ids::new_entry_id(|c| index.contains(c)))
    }

    async fn append(&self, draft: EntryDraft) -> Result<SessionEntry> {
        let mut index = self.inner.index.write().await;
        let prepared = append::prepare_draft(&index, &MemSource, draft)?;
        let env = append::checked_probe(&index, &prepared.line)?;
        index.append(&env, Raw::Mem(prepared.line.as_str().into()), 0);
        drop(index);
        self.touch();
        Ok(prepared.entry)
    }

    async fn append_entry(&self, entry: SessionEntry) -> Result<()> {
        let mut index = self.inner.index.write().await;
        let prepared = append::prepare_entry(entry)?;
        let env = append::checked_probe(&index, &prepared.line)?;
        index.append(&env, Raw::Mem(prepared.line.as_str().into()), 0);
        drop(index);
        self.touch();
        Ok(())
    }

    async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>> {
        let index = self.inner.index.read().await;
        match index.resolve(id) {
            None => Ok(None),
            Some(ix) => index_reads::read_entry(&index, &MemSource, ix).map(Some),
        }
    }

    async fn find_entries(&self, entry_type: &str) -> Result<Vec<SessionEntry>> {
        let index = self.inner.index.read().await;
        index_reads::read_all(&index, &MemSource, &index.of_type(entry_type))
    }

    async fn get_label(&self, id: &str) -> Result<Option<String>> {
        Ok(self.inner.index.read().await.label(id).map(str::to_owned))
    }

    async fn session_name(&self) -> Result<Option<String>> {
        Ok(self.inner.index.read().await.name().map(str::to_owned))
    }

    async fn stats(&self) -> Result<SessionStats> {
        index_reads::stats(&*self.inner.index.read().await, &MemSource)
    }

    async fn path_to_root_or_compaction(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        let index = self.inner.index.read().await;
        let start = index_reads::leaf_arg(&index, leaf)?;
        let path = index.path_to_root_or_compaction(start)?;
        index_reads::read_all(&index, &MemSource, &path)
    }

    async fn ancestry(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>> {
        let index = self.inner.index.read().await;
        let start = index_reads::leaf_arg(&index, leaf)?;
        let path = index.ancestry(start)?;
        index_reads::read_all(&index, &MemSource, &path)
    }

    async fn path_tail(&self, leaf: Option<&str>, max_entries: usize) -> Result<Vec<SessionEntry>> {
        let index = self.inner.index.read().await;
        let start = index_reads::leaf_arg(&index, leaf)?;
        let path = index.path_tail(start, max_entries)?;
        index_reads::read_all(&index, &MemSource, &path)
    }

    async fn entries(&self, after_seq: Option<u64>, limit: Option<usize>) -> Result<EntryPage> {
        let index = self.inner.index.read().await;
        index_reads::page(&index, &MemSource, after_seq, limit)
    }

    async fn children(&self, id: Option<&str>) -> Result<Vec<SessionEntry>> {
        let index = self.inner.index.read().await;
        let parent = match id {
            None => None,
            Some(id) => Some(
                index
                    .resolve(id)
                    .ok_or_else(|| SessionError::NotFound(format!("Entry not found: {id}")))?,
            ),
        };
        index_reads::read_all(&index, &MemSource, &index.children(parent))
    }

    async fn entry_count(&self) -> Result<u64> {
        Ok(self.inner.index.read().await.len() as u64)
    }

    async fn derived_settings(&self, leaf: Option<&str>) -> Result<DerivedSettings> {
        let index = self.inner.index.read().await;
        index_reads::derived_settings(&index, &MemSource, leaf)
    }

    fn lines(&self) -> Option<&dyn StoredLines> {
        Some(self)
    }

    async fn save_point(&self) -> Result<()> {
        Ok(())
    }
}

#[async_trait]
impl StoredLines for MemoryStorage {
    async fn read_lines(
        &self,
        read: &mut (dyn for<'l> FnMut(Lines<'l>) -> Result<()> + Send),
    ) -> Result<()> {
        let index = self.inner.index.read().await;
        let sources = || -> Box<dyn LineSource> { Box::new(MemSource) };
        read(Lines {
            index: &index,
            sources: &sources,
        })
    }

    async fn snapshot(&self) -> Result<LineSnapshot> {
        let index = self.inner.index.read().await;
        Ok(LineSnapshot::of(&index, Box::new(MemLines)))
    }
}

/// A set of in-memory sessions, keyed by id.
#[derive(Debug, Clone, Default)]
pub struct MemoryRepository {
    sessions: Arc<Mutex<Registry>>,
}

#[derive(Debug, Default)]
struct Registry {
    by_id: HashMap<String, MemoryStorage>,
    order: Vec<String>,
}

impl MemoryRepository {
    /// An empty repository.
    pub fn new() -> Self {
        Self::default()
    }

    fn lookup(&self, id_or_location: &str) -> Result<Option<MemoryStorage>> {
        let id = id_or_location
            .strip_prefix(PREFIX)
            .unwrap_or(id_or_location);
        let reg = self
            .sessions
            .lock()
            .map_err(|_| SessionError::Storage("memory repository lock poisoned".into()))?;
        Ok(reg.by_id.get(id).cloned())
    }

    fn register(&self, storage: &MemoryStorage) -> Result<()> {
        let id = storage.inner.header.id.clone();
        let mut reg = self
            .sessions
            .lock()
            .map_err(|_| SessionError::Storage("memory repository lock poisoned".into()))?;
        if reg.by_id.contains_key(&id) {
            return Err(SessionError::InvalidSession(format!(
                "session {id} already exists"
            )));
        }
        reg.order.push(id.clone());
        reg.by_id.insert(id, storage.clone());
        Ok(())
    }
}

#[async_trait]
impl SessionRepository for MemoryRepository {
    type Storage = MemoryStorage;

    async fn create(&self, opts: CreateOptions) -> Result<MemoryStorage> {
        let header = SessionHeader::create(opts.id, opts.cwd, opts.parent_session, opts.metadata)?;
        let storage = MemoryStorage::from_header(header);
        self.register(&storage)?;
        Ok(storage)
    }

    async fn open(&self, id_or_location: &str) -> Result<MemoryStorage> {
        self.lookup(id_or_location)?
            .ok_or_else(|| SessionError::NotFound(format!("Session not found: {id_or_location}")))
    }

    async fn list(&self) -> Result<ListResult> {
        let all: Vec<MemoryStorage> = {
            let reg = self
                .sessions
                .lock()
                .map_err(|_| SessionError::Storage("memory repository lock poisoned".into()))?;
            reg.order
                .iter()
                .filter_map(|id| reg.by_id.get(id).cloned())
                .collect()
        };
        let mut sessions = Vec::with_capacity(all.len());
        for (pos, s) in all.iter().enumerate() {
            sessions.push((pos, s.info().await?));
        }
        // Newest first; creation order breaks ties within one millisecond.
        sessions.sort_by(|(pa, a), (pb, b)| b.modified_ms.cmp(&a.modified_ms).then(pb.cmp(pa)));
        Ok(ListResult {
            sessions: sessions.into_iter().map(|(_, s)| s).collect(),
            skipped: Vec::new(),
        })
    }

    async fn delete(&self, id_or_location: &str) -> Result<()> {
        let id = id_or_location
            .strip_prefix(PREFIX)
            .unwrap_or(id_or_location);
        let mut reg = self
            .sessions
            .lock()
            .map_err(|_| SessionError::Storage("memory repository lock poisoned".into()))?;
        reg.by_id.remove(id);
        reg.order.retain(|x| x != id);
        Ok(())
    }

    async fn fork(&self, source: &str, opts: ForkOptions) -> Result<MemoryStorage> {
        let src = self.open(source).await?;
        let lines: Vec<Box<str>> = {
            let index = src.inner.index.read().await;
            let selection = index_reads::fork_selection(&index, &MemSource, &opts)?;
            selection
                .iter()
                .map(|ix| MemSource.read_raw(&index, *ix).into())
                .collect()
        };
        let source_header = &src.inner.header;
        let header = SessionHeader::create(
            opts.id.clone(),
            opts.cwd
                .clone()
                .unwrap_or_else(|| source_header.cwd.clone()),
            Some(source_header.id.clone()),
            source_header.metadata.clone(),
        )?;
        let storage = MemoryStorage::from_header(header);
        storage.import_lines(lines).await?;
        self.register(&storage)?;
        Ok(storage)
    }
}
