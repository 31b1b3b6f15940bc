//! The storage contract every session backend implements.
//!
//! One [`SessionStorage`] is one open session: an append-only log of entries forming a tree, plus
//! the current leaf. Backends keep the invariants below; the conformance suite checks them:
//! - appends are serialized per session, and each append's parent is the leaf at that moment, so
//!   concurrent callers never create accidental siblings;
//! - a failed append changes nothing (no entry, no leaf move, no id taken) and later appends work;
//! - the leaf after reopening equals the leaf before closing (log-order leaf recovery).

use async_trait::async_trait;
use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry, SessionHeader};
use crate::error::Result;
use crate::stored_lines::StoredLines;

/// What [`SessionStorage::append`] turns into an entry. Id and timestamp are assigned by the
/// storage unless given; the parent is always the current leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryDraft {
    /// What the entry is.
    pub kind: EntryKind,
    /// A caller-chosen id (must be new); a fresh one otherwise.
    pub id: Option<String>,
    /// A caller-chosen ISO timestamp; now otherwise.
    pub timestamp: Option<String>,
}

impl EntryDraft {
    /// A draft of `kind` with a fresh id and the current time.
    pub fn new(kind: EntryKind) -> Self {
        Self {
            kind,
            id: None,
            timestamp: None,
        }
    }
}

impl From<EntryKind> for EntryDraft {
    fn from(kind: EntryKind) -> Self {
        Self::new(kind)
    }
}

/// One page of the log, in log order. `seq` numbers are positions in the log (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct EntryPage {
    /// `(seq, entry)` pairs.
    pub entries: Vec<(u64, SessionEntry)>,
    /// Pass as `after_seq` to get the next page; `None` at the end.
    pub next_after_seq: Option<u64>,
}

/// Session totals (pi's `SessionStats`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SessionStats {
    /// Message entries.
    pub message_count: u64,
    /// Input tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// Input tokens not read from the cache: fresh input plus cache writes.
    pub uncached_tokens: u64,
    /// All tokens reported.
    pub total_tokens: u64,
    /// Total cost in dollars.
    pub cost_total: f64,
}

/// The settings that replaying the full ancestry of a leaf yields (DECISIONS §3.2).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DerivedSettings {
    /// `(provider, model id)` from the latest `model_change` or assistant message.
    pub model: Option<(String, String)>,
    /// The latest `thinking_level_change`; `None` means the default, `"off"`.
    pub thinking_level: Option<String>,
    /// The latest `active_tools_change` (`None`: never set, or set to `null`).
    pub active_tool_names: Option<Vec<String>>,
}

impl DerivedSettings {
    /// Replays `entries` (root to leaf).
    pub fn from_entries(entries: &[SessionEntry]) -> Self {
        let mut out = DerivedSettings::default();
        for e in entries {
            out.apply(e);
        }
        out
    }

    /// Applies one entry as a replay step (later entries win). Returns whether it mattered.
    pub fn apply(&mut self, entry: &SessionEntry) -> bool {
        match &entry.kind {
            EntryKind::ModelChange(m) => {
                self.model = Some((m.provider.clone(), m.model_id.clone()));
            }
            EntryKind::ThinkingLevelChange(t) => {
                self.thinking_level = Some(t.thinking_level.clone());
            }
            EntryKind::ActiveToolsChange(a) => {
                self.active_tool_names = a.active_tool_names.get().cloned();
            }
            EntryKind::Message(m) => match m.message.as_llm() {
                Some(arbor_ai::types::Message::Assistant(a)) => {
                    self.model = Some((a.provider.clone(), a.model.clone()));
                }
                _ => return false,
            },
            _ => return false,
        }
        true
    }
}

/// One open session.
///
/// The low-level contract: appends take drafts and check only ids and parents. Programs
/// usually go through [`Session`](crate::handle::Session), which validates what it appends and
/// caches the projected context.
///
/// ```
/// use arbor_session::prelude::*;
/// use arbor_ai::Message;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), SessionError> {
/// let storage = MemoryRepository::new().create(CreateOptions::new("/work/app")).await?;
/// // The storage picks id and timestamp unless the draft gives them; the parent is the leaf.
/// let hello = storage.append(EntryKind::message(Message::user("hello", 0)).into()).await?;
/// let mut draft = EntryDraft::new(EntryKind::message(Message::user("again", 1)));
/// draft.id = Some("again-1".into());
/// let again = storage.append(draft).await?;
/// assert_eq!(again.parent_id.as_deref(), Some(hello.id.as_str()));
/// assert_eq!(storage.leaf_id().await?.as_deref(), Some("again-1"));
///
/// // Moving the leaf is an entry too; `None` makes the next append another root.
/// storage.set_leaf(None).await?;
/// storage.append(EntryKind::message(Message::user("fresh start", 2)).into()).await?;
/// assert_eq!(storage.children(None).await?.len(), 2);
/// assert_eq!(storage.ancestry(None).await?.len(), 1);
///
/// // The log in pages, every branch and the `leaf` entry included.
/// let page = storage.entries(None, Some(3)).await?;
/// assert_eq!(page.entries.len(), 3);
/// let rest = storage.entries(page.next_after_seq, Some(3)).await?;
/// assert_eq!(rest.entries.len(), 1);
/// assert_eq!(rest.next_after_seq, None);
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait SessionStorage: Send + Sync {
    /// The session's header (id, cwd, parent session, metadata) as stored.
    async fn header(&self) -> Result<SessionHeader>;
    /// Where the session lives (a file path, or a database path plus id), used as the
    /// `parentSession` of forks.
    fn location(&self) -> String;
    /// The current leaf, which the next append takes as its parent; `None` when the session
    /// is empty or the leaf was moved before the first entry.
    async fn leaf_id(&self) -> Result<Option<String>>;
    /// Checks that `target` exists (`not_found` otherwise), appends a `leaf` entry and moves the
    /// leaf there; `None` moves it before the first entry.
    async fn set_leaf(&self, target: Option<&str>) -> Result<SessionEntry>;
    /// A fresh id unused in this session.
    async fn create_entry_id(&self) -> Result<String>;
    /// Appends under the session's append lock: parent = current leaf, id and timestamp assigned
    /// unless the draft gives them; then moves the leaf (to the new entry, or for a `leaf` entry
    /// to its target). A duplicate id is `invalid_entry` and changes nothing.
    async fn append(&self, draft: EntryDraft) -> Result<SessionEntry>;
    /// Appends a complete entry verbatim (fork, import): the id must be new and the parent must
    /// exist; moves the leaf by the log-order recovery rule.
    async fn append_entry(&self, entry: SessionEntry) -> Result<()>;
    /// One entry by id; `None` when the session has no such entry.
    async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>>;
    /// All entries of one `type`, in log order.
    async fn find_entries(&self, entry_type: &str) -> Result<Vec<SessionEntry>>;
    /// The current label of an entry (the latest `label` entry for it; cleared labels are None).
    async fn get_label(&self, id: &str) -> Result<Option<String>>;
    /// The latest `session_info` name (None when never set or cleared).
    async fn session_name(&self) -> Result<Option<String>>;
    /// Message count, tokens and cost over the whole log (every branch): the usage of
    /// assistant messages, summaries and `usage` entries counts, incomplete usage is skipped.
    async fn stats(&self) -> Result<SessionStats>;
    /// From the root (or the newest compaction boundary on the way up) to `leaf` (default: the
    /// current leaf), in root-to-leaf order. See DECISIONS §3.1.
    async fn path_to_root_or_compaction(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>>;
    /// The full ancestry root..=leaf (default: the current leaf), in root-to-leaf order.
    async fn ancestry(&self, leaf: Option<&str>) -> Result<Vec<SessionEntry>>;
    /// A page of the log: entries with `seq > after_seq`, at most `limit` of them.
    async fn entries(&self, after_seq: Option<u64>, limit: Option<usize>) -> Result<EntryPage>;
    /// Children of `id` (roots for `None`), in log order.
    async fn children(&self, id: Option<&str>) -> Result<Vec<SessionEntry>>;
    /// How many entries the log holds: every branch, control entries included, the header
    /// not counted.
    async fn entry_count(&self) -> Result<u64>;
    /// Model, thinking level and active tools from the full ancestry of `leaf` (default: the
    /// current leaf). Backends with an index override this to avoid parsing the whole path.
    async fn derived_settings(&self, leaf: Option<&str>) -> Result<DerivedSettings> {
        Ok(DerivedSettings::from_entries(&self.ancestry(leaf).await?))
    }
    /// The last `max_entries` entries of the root..=leaf path (default: the current leaf), in
    /// path order and ending at the leaf. Lets a UI draw the end of a long session before the
    /// whole context is built; backends with an index override it to read only those entries.
    async fn path_tail(&self, leaf: Option<&str>, max_entries: usize) -> Result<Vec<SessionEntry>> {
        let mut path = self.ancestry(leaf).await?;
        let cut = path.len().saturating_sub(max_entries);
        path.drain(..cut);
        Ok(path)
    }
    /// Fast access to the stored lines behind the log, for backends that keep them (memory,
    /// JSONL): the rows and context views read those lines directly and on several threads
    /// (`crate::stored_lines`). `None` (the default) sends the views through the methods above.
    fn lines(&self) -> Option<&dyn StoredLines> {
        None
    }
    /// A durability point (turn end): flushes to stable storage under the `save_point` policy.
    async fn save_point(&self) -> Result<()>;
}

/// Options for [`SessionRepository::create`]. Non-exhaustive (DECISIONS §20.41): start from
/// [`CreateOptions::new`] and chain the setters.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CreateOptions {
    /// A caller-chosen session id (validated); a UUIDv7 otherwise.
    pub id: Option<String>,
    /// The working directory the session belongs to (the header's `cwd`).
    pub cwd: String,
    /// The session this one continues (the header's `parentSession`).
    pub parent_session: Option<String>,
    /// Free-form data kept in the header.
    pub metadata: Option<Value>,
}

impl CreateOptions {
    /// A session for `cwd`, with a fresh id.
    pub fn new(cwd: impl Into<String>) -> Self {
        CreateOptions {
            cwd: cwd.into(),
            ..CreateOptions::default()
        }
    }
    /// Sets [`CreateOptions::id`].
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
    /// Sets [`CreateOptions::parent_session`].
    pub fn with_parent_session(mut self, parent: impl Into<String>) -> Self {
        self.parent_session = Some(parent.into());
        self
    }
    /// Sets [`CreateOptions::metadata`].
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }
}

/// Which part of the source a fork copies (DECISIONS §5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ForkPosition {
    /// Root up to the target's parent; the target must be a user message.
    #[default]
    Before,
    /// Root up to and including the target.
    At,
}

/// Options for [`SessionRepository::fork`]. No `entry_id` copies the whole tree.
/// Non-exhaustive (DECISIONS §20.41): start from `default()` or [`ForkOptions::at`] /
/// [`ForkOptions::before`] and chain the setters.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ForkOptions {
    /// The entry the copy ends at (see `position`); `None` copies the whole tree.
    pub entry_id: Option<String>,
    /// Whether the copy includes `entry_id` or ends just before it.
    pub position: ForkPosition,
    /// The new session's working directory (default: the source's).
    pub cwd: Option<String>,
    /// A caller-chosen id for the new session (validated); a UUIDv7 otherwise.
    pub id: Option<String>,
}

impl ForkOptions {
    /// Root up to and including `entry_id`.
    pub fn at(entry_id: impl Into<String>) -> Self {
        ForkOptions {
            entry_id: Some(entry_id.into()),
            position: ForkPosition::At,
            ..ForkOptions::default()
        }
    }
    /// Root up to the parent of `entry_id` (a user message, to be re-sent).
    pub fn before(entry_id: impl Into<String>) -> Self {
        ForkOptions {
            entry_id: Some(entry_id.into()),
            position: ForkPosition::Before,
            ..ForkOptions::default()
        }
    }
    /// Sets [`ForkOptions::cwd`].
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
    /// Sets [`ForkOptions::id`].
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// What listings show about a session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// File path or backend location.
    pub location: String,
    /// The working directory from the header.
    pub cwd: String,
    /// The session's name, if one was set.
    pub name: Option<String>,
    /// ISO creation time from the header.
    pub created: String,
    /// Unix ms of the last modification.
    pub modified_ms: i64,
    /// Number of entries, when the backend knows it without reading the whole session (JSONL
    /// listings count only files small enough to read cheaply).
    pub entry_count: Option<u64>,
    /// The first user message's text.
    pub first_message: Option<String>,
    /// The session this one was forked from.
    pub parent_session: Option<String>,
}

/// A listing; sessions that could not be read are reported, not fatal.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListResult {
    /// Newest first.
    pub sessions: Vec<SessionInfo>,
    /// `(location, reason)` of each skipped session.
    pub skipped: Vec<(String, String)>,
}

/// Creates, finds and removes sessions of one backend.
#[async_trait]
pub trait SessionRepository: Send + Sync {
    /// The open-session handle this backend hands out.
    type Storage: SessionStorage;
    /// Creates an empty session (a header, no entries) and opens it for writing. An id that is
    /// not a safe name or is already taken is `invalid_session`.
    async fn create(&self, opts: CreateOptions) -> Result<Self::Storage>;
    /// Opens by id or location; `not_found` when absent.
    async fn open(&self, id_or_location: &str) -> Result<Self::Storage>;
    /// Every session of the repository (all working directories), newest first; sessions that
    /// cannot be read are listed in [`ListResult::skipped`].
    async fn list(&self) -> Result<ListResult>;
    /// Removes a session; deleting a missing one is not an error.
    async fn delete(&self, id_or_location: &str) -> Result<()>;
    /// Copies (part of) a session into a new one; the source is never modified.
    async fn fork(&self, source: &str, opts: ForkOptions) -> Result<Self::Storage>;
}

/// The text of a user message for listings: a string content, or text blocks joined by spaces.
pub(crate) fn user_text(message: &Value) -> Option<String> {
    match message.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            Some(parts.join(" "))
        }
        _ => None,
    }
}
