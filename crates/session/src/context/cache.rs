//! An incrementally maintained projection of one root→leaf path.
//!
//! The projection of a leaf depends only on its ancestry, and entries are immutable, so a
//! projection keyed by the leaf id stays valid forever. Appending a child of the cached leaf
//! extends it in O(1) (amortized; a new compaction or an edit re-projects what it changes),
//! moving back to an ancestor truncates it, and only a jump elsewhere needs a fresh ancestry.
//!
//! The path it holds may be a *window*: the bounded branch (`getBranch()`, from the newest
//! compaction's boundary to the leaf) plus the settings derived from everything above it
//! (DECISIONS §22.50). The summarized past is then neither parsed nor held; an operation that
//! would need it (moving back above the boundary, a compaction keeping entries above it) makes
//! the cache hand back and the session rebuild from storage.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::context::projection::{
    apply_edit, default_context_indices, edit_replacement, entry_messages, newest_compaction,
    ContextOptions, CustomProjector, DerivedState, SessionContext,
};
use crate::entry::{EntryKind, SessionEntry};
use crate::message::AgentMessage;

/// The projected path of one leaf under fixed custom projectors (the default transform only;
/// caller entry transforms run on top, see [`ProjectionCache::context_with`]).
pub struct ProjectionCache {
    projectors: HashMap<String, CustomProjector>,
    /// The held part of the ancestry, ending at the leaf: all of it (root..=leaf) or a window
    /// that starts at a compaction boundary (see the module docs).
    path: Vec<SessionEntry>,
    /// Derived state of the ancestry above `path[0]` (the default state for a full path).
    base: DerivedState,
    /// Derived state folded over `base` and `path`.
    state: DerivedState,
    /// Context entries (default transform) as indices into `path`.
    ctx: Vec<usize>,
    /// Entry id → position in `ctx`.
    ctx_pos: HashMap<String, usize>,
    /// Target id → index in `path` of the latest `context_edit` among the context entries.
    edits: HashMap<String, usize>,
    /// All projected messages (edits applied), shared with the contexts handed out: a warm
    /// build is a reference-count bump, and an append extends the vector in place unless a
    /// caller still holds the previous context.
    messages: Arc<Vec<AgentMessage>>,
    /// Where each `ctx` position's messages start in `messages`.
    starts: Vec<usize>,
    /// Changes whenever `messages` changes other than by appending (a rebuild, a retreat, a
    /// compaction, an edit), and is unique across every cache of the process: a holder of
    /// `(generation, len)` knows the first `len` messages are unchanged while the generation
    /// is (DECISIONS §20.13).
    generation: u64,
}

impl std::fmt::Debug for ProjectionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectionCache")
            .field("leaf_id", &self.leaf_id())
            .field("path", &self.path.len())
            .field("messages", &self.messages.len())
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// Source of [`ProjectionCache`] generations.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATIONS.fetch_add(1, Ordering::Relaxed)
}

impl ProjectionCache {
    /// Builds the projection of a full root→leaf ancestry.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // tests build one directly
    pub fn new(path: Vec<SessionEntry>, projectors: HashMap<String, CustomProjector>) -> Self {
        Self::from_window(path, DerivedState::default(), projectors)
    }

    /// Builds the projection from the bounded branch of the leaf (what
    /// `SessionStorage::path_to_root_or_compaction` returns) and `base`, the state derived from
    /// the ancestry above its first entry (DECISIONS §22.50). A full ancestry with the default
    /// `base` is the same as [`Self::new`].
    pub fn from_window(
        path: Vec<SessionEntry>,
        base: DerivedState,
        projectors: HashMap<String, CustomProjector>,
    ) -> Self {
        let mut cache = ProjectionCache {
            projectors,
            path,
            state: base.clone(),
            base,
            ctx: Vec::new(),
            ctx_pos: HashMap::new(),
            edits: HashMap::new(),
            messages: Arc::new(Vec::new()),
            starts: Vec::new(),
            generation: next_generation(),
        };
        cache.rebuild();
        cache
    }

    /// The leaf this projection belongs to (`None` = empty path).
    pub fn leaf_id(&self) -> Option<&str> {
        self.path.last().map(|e| e.id.as_str())
    }

    /// The held path, ending at the leaf: the full ancestry when [`Self::is_full`], else the
    /// bounded branch (it holds every entry the context comes from).
    pub fn path(&self) -> &[SessionEntry] {
        &self.path
    }

    /// Whether [`Self::path`] starts at the root (it is the whole ancestry).
    pub fn is_full(&self) -> bool {
        self.path.first().is_none_or(|e| e.parent_id.is_none())
    }

    /// Position of `id` on the path.
    pub fn position(&self, id: &str) -> Option<usize> {
        // Recent entries are the common targets; search from the leaf.
        self.path.iter().rposition(|e| e.id == id)
    }

    /// The append-only generation of [`Self::context`]'s messages (see the field).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Derived settings of the leaf.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // read by tests only
    pub fn state(&self) -> &DerivedState {
        &self.state
    }

    /// Extends the path by a child of the current leaf. Hands the entry back when its parent
    /// is not the cached leaf, or when it is a `leaf` control entry (which moves the leaf
    /// elsewhere instead of extending the path); the caller then re-resolves from storage.
    pub fn push(&mut self, entry: SessionEntry) -> Result<(), Box<SessionEntry>> {
        if entry.parent_id.as_deref() != self.leaf_id() || matches!(entry.kind, EntryKind::Leaf(_))
        {
            return Err(Box::new(entry));
        }
        if let EntryKind::Compaction(c) = &entry.kind {
            // A window can only serve a compaction whose kept range it holds.
            let kept_held = c.retained_tail.is_some()
                || c.first_kept_entry_id
                    .as_deref()
                    .is_some_and(|k| self.position(k).is_some());
            if !self.is_full() && !kept_held {
                return Err(Box::new(entry));
            }
        }
        self.state.apply(&entry);
        let idx = self.path.len();
        let is_compaction = matches!(entry.kind, EntryKind::Compaction(_));
        let edit_target = match &entry.kind {
            EntryKind::ContextEdit(e) => Some(e.target_id.clone()),
            _ => None,
        };
        self.path.push(entry);
        if is_compaction {
            // A new newest compaction redraws the whole window.
            self.rebuild_context();
            return Ok(());
        }
        let pos = self.ctx.len();
        self.ctx.push(idx);
        self.ctx_pos.insert(self.path[idx].id.clone(), pos);
        let msgs = self.project_position(pos);
        self.starts.push(self.messages.len());
        self.messages_mut().extend(msgs);
        if let Some(target) = edit_target {
            self.edits.insert(target.clone(), idx);
            if let Some(&tpos) = self.ctx_pos.get(&target) {
                self.reproject(tpos);
            }
        }
        Ok(())
    }

    /// Moves the leaf back to an entry on the path (or to nothing). `false` (and nothing
    /// changed) when `target` is not on the held path, or when the path is a window and the
    /// target's context reaches above it.
    pub fn retreat_to(&mut self, target: Option<&str>) -> bool {
        let keep = match target {
            None => 0,
            Some(id) => match self.position(id) {
                Some(p) => p + 1,
                None => return false,
            },
        };
        if keep == 0 {
            self.path.clear();
            self.base = DerivedState::default();
            self.rebuild();
        } else if keep < self.path.len() {
            if !self.is_full() && !window_holds_context(&self.path[..keep]) {
                return false;
            }
            self.path.truncate(keep);
            self.rebuild();
        }
        true
    }

    /// The context under the cached projectors and no caller transforms (shares the cached
    /// messages; O(1)).
    pub fn context(&self) -> SessionContext {
        SessionContext::from_shared(self.messages.clone(), self.state.clone())
    }

    /// The context under other options: transforms run over the cached context entries and
    /// the result is projected from scratch (transforms can see and change every entry).
    pub fn context_with(&self, options: &ContextOptions) -> SessionContext {
        if options.entry_transforms.is_empty() && options.projectors.is_empty() {
            return self.context();
        }
        let mut projectors = self.projectors.clone();
        for (k, v) in &options.projectors {
            projectors.insert(k.clone(), v.clone());
        }
        let mut entries: Vec<SessionEntry> =
            self.ctx.iter().map(|&i| self.path[i].clone()).collect();
        for t in &options.entry_transforms {
            entries = t(entries);
        }
        let messages = crate::context::projection::project_entries(&entries, &projectors);
        SessionContext::from_parts(messages, self.state.clone())
    }

    fn rebuild(&mut self) {
        self.state = self.base.clone();
        for e in &self.path {
            self.state.apply(e);
        }
        self.rebuild_context();
    }

    fn rebuild_context(&mut self) {
        self.ctx = default_context_indices(&self.path);
        debug_assert!(newest_compaction(&self.path).is_none_or(|c| self.ctx[0] == c));
        self.ctx_pos = self
            .ctx
            .iter()
            .enumerate()
            .map(|(pos, &i)| (self.path[i].id.clone(), pos))
            .collect();
        self.edits.clear();
        for &i in &self.ctx {
            if let EntryKind::ContextEdit(e) = &self.path[i].kind {
                self.edits.insert(e.target_id.clone(), i);
            }
        }
        let mut messages = Vec::with_capacity(self.ctx.len());
        self.starts = Vec::with_capacity(self.ctx.len());
        for pos in 0..self.ctx.len() {
            self.starts.push(messages.len());
            messages.extend(self.project_position(pos));
        }
        self.messages = Arc::new(messages);
        self.generation = next_generation();
    }

    /// Re-projects one context position in place (after an edit targeting it).
    fn reproject(&mut self, pos: usize) {
        let msgs = self.project_position(pos);
        let start = self.starts[pos];
        let end = self
            .starts
            .get(pos + 1)
            .copied()
            .unwrap_or(self.messages.len());
        let (old_len, new_len) = (end - start, msgs.len());
        self.messages_mut().splice(start..end, msgs);
        self.generation = next_generation();
        if old_len != new_len {
            for s in &mut self.starts[pos + 1..] {
                *s = *s + new_len - old_len;
            }
        }
    }

    /// The messages for writing: a copy when a handed-out context still shares them (counted,
    /// DECISIONS §20.21).
    fn messages_mut(&mut self) -> &mut Vec<AgentMessage> {
        if Arc::get_mut(&mut self.messages).is_none() {
            arbor_ai::work::add(arbor_ai::work::Work::Copied, self.messages.len());
        }
        Arc::make_mut(&mut self.messages)
    }

    fn project_position(&self, pos: usize) -> Vec<AgentMessage> {
        let entry = &self.path[self.ctx[pos]];
        let msgs = entry_messages(entry, pos, &self.projectors);
        match self.edits.get(&entry.id) {
            Some(&edit_idx) => apply_edit(msgs, edit_replacement(&self.path[edit_idx])),
            None => msgs,
        }
    }
}

/// Whether a window (a path that does not start at the root) holds every entry its context
/// comes from: its newest compaction has a retained tail, or keeps from an entry inside it.
fn window_holds_context(path: &[SessionEntry]) -> bool {
    let Some(c_idx) = newest_compaction(path) else {
        return false;
    };
    match &path[c_idx].kind {
        EntryKind::Compaction(c) => {
            c.retained_tail.is_some()
                || c.first_kept_entry_id
                    .as_deref()
                    .is_some_and(|k| path[..c_idx].iter().any(|e| e.id == k))
        }
        _ => false,
    }
}
