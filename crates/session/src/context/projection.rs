//! The projection pipeline of DECISIONS §3, as pure functions over entries (no IO).
//!
//! ```text
//! full ancestry (root..=leaf) ──► derived state (model, thinking level, active tools)
//!            │
//!            └─► default transform (newest compaction) ─► caller entry_transforms
//!                      ─► per-entry projection (+ context_edit) ─► AgentMessage[]
//! ```
//! `convert_to_llm` (see `convert.rs`) then yields what the model sees.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arbor_ai::{Content, ContentBlock, Message};
use serde::Serialize;
use serde_json::Value;

use crate::context::convert::text_block;
use crate::entry::{EntryKind, SessionEntry};
use crate::error::SessionError;
use crate::message::{AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage};
use crate::storage::DerivedSettings;

/// Rewrites the list of context entries after the default compaction transform.
/// Transforms run in order; each gets the previous one's output.
pub type EntryTransform = Arc<dyn Fn(Vec<SessionEntry>) -> Vec<SessionEntry> + Send + Sync>;

/// Turns a `custom` entry (registered by its `customType`) into model-visible messages.
pub type CustomProjector = Arc<dyn Fn(&SessionEntry) -> Vec<AgentMessage> + Send + Sync>;

/// Caller hooks for [`build_session_context`]. Empty by default (pure DECISIONS §3 behaviour).
///
/// A projector lets an extension's `custom` entries speak to the model; a transform rewrites
/// the entry list the context is projected from (after the compaction window).
///
/// ```
/// use std::sync::Arc;
/// use arbor_session::message::CustomMessage;
/// use arbor_session::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), SessionError> {
/// let storage = MemoryRepository::new().create(CreateOptions::new("/work/app")).await?;
/// let session = Session::new(Arc::new(storage));
/// session.append_message(arbor_ai::Message::user("plan the release", 0).into()).await?;
/// // Extension state: stored in the log, not part of the context by itself.
/// session.append_custom_entry("todo", Some(serde_json::json!({ "open": 3 }))).await?;
/// assert_eq!(session.build_context(&ContextOptions::default()).await?.messages.len(), 1);
///
/// let todos = ContextOptions::default().with_projector("todo", |entry| {
///     let EntryKind::Custom(todo) = &entry.kind else {
///         return Vec::new();
///     };
///     let open = todo.data.as_ref().and_then(|d| d["open"].as_u64()).unwrap_or(0);
///     vec![AgentMessage::Custom(CustomMessage {
///         custom_type: "todo".into(),
///         content: format!("{open} todos are open").into(),
///         ..CustomMessage::default()
///     })]
/// });
/// let context = session.build_context(&todos).await?;
/// let llm = context.llm_messages(); // a `custom` message reaches the model as a user message
/// assert_eq!(llm.len(), 2);
/// assert_eq!(llm[1].role(), "user");
///
/// // A transform that keeps only the newest entry of the list.
/// let last_only = todos.with_transform(|mut entries| entries.split_off(entries.len().saturating_sub(1)));
/// assert_eq!(session.build_context(&last_only).await?.messages.len(), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct ContextOptions {
    /// Rewrites of the context entry list, run in order after the compaction window is applied
    /// (DECISIONS §3.3).
    pub entry_transforms: Vec<EntryTransform>,
    /// How `custom` entries reach the model, by `customType`; a `custom` entry whose type has
    /// no projector contributes nothing.
    pub projectors: HashMap<String, CustomProjector>,
}

impl ContextOptions {
    /// Adds a transform that runs after the ones already registered.
    pub fn with_transform(
        mut self,
        f: impl Fn(Vec<SessionEntry>) -> Vec<SessionEntry> + Send + Sync + 'static,
    ) -> Self {
        self.entry_transforms.push(Arc::new(f));
        self
    }

    /// Registers (or replaces) the projector for one `customType`.
    pub fn with_projector(
        mut self,
        custom_type: impl Into<String>,
        f: impl Fn(&SessionEntry) -> Vec<AgentMessage> + Send + Sync + 'static,
    ) -> Self {
        self.projectors.insert(custom_type.into(), Arc::new(f));
        self
    }

    /// No transform and no projector: the context is the plain DECISIONS §3 projection (what
    /// lets a session serve it from its cache).
    pub fn is_empty(&self) -> bool {
        self.entry_transforms.is_empty() && self.projectors.is_empty()
    }

    /// `self` then `other`: transforms concatenate, `other`'s projectors win per custom type
    /// (how pi merges instance and per-call options).
    pub fn merged(&self, other: &ContextOptions) -> ContextOptions {
        let mut out = self.clone();
        out.entry_transforms
            .extend(other.entry_transforms.iter().cloned());
        for (k, v) in &other.projectors {
            out.projectors.insert(k.clone(), v.clone());
        }
        out
    }
}

impl fmt::Debug for ContextOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut types: Vec<&String> = self.projectors.keys().collect();
        types.sort();
        f.debug_struct("ContextOptions")
            .field("entry_transforms", &self.entry_transforms.len())
            .field("projectors", &types)
            .finish()
    }
}

/// The model a branch is using: the latest `model_change` or assistant message on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelRef {
    /// The provider id (`anthropic`, `openai`, ...).
    pub provider: String,
    /// The model id within that provider (`modelId` in JSON).
    #[serde(rename = "modelId")]
    pub model_id: String,
}

/// Settings replayed from the full ancestry of the leaf (DECISIONS §3.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DerivedState {
    /// The model in use; `None` when the ancestry names none.
    pub model: Option<ModelRef>,
    /// The latest `thinking_level_change`, `"off"` when there is none.
    pub thinking_level: String,
    /// The latest `active_tools_change`; `None` means every tool (never set, or set to `null`).
    pub active_tool_names: Option<Vec<String>>,
}

impl Default for DerivedState {
    fn default() -> Self {
        DerivedState {
            model: None,
            thinking_level: "off".to_string(),
            active_tool_names: None,
        }
    }
}

impl DerivedState {
    /// The same settings as a storage's [`DerivedSettings`] replay (no thinking level = `"off"`).
    pub fn from_settings(settings: DerivedSettings) -> Self {
        DerivedState {
            model: settings
                .model
                .map(|(provider, model_id)| ModelRef { provider, model_id }),
            thinking_level: settings
                .thinking_level
                .unwrap_or_else(|| DerivedState::default().thinking_level),
            active_tool_names: settings.active_tool_names,
        }
    }

    /// Folds one ancestry entry (in root→leaf order) into the state.
    pub fn apply(&mut self, entry: &SessionEntry) {
        match &entry.kind {
            EntryKind::ThinkingLevelChange(e) => self.thinking_level = e.thinking_level.clone(),
            EntryKind::ModelChange(e) => {
                self.model = Some(ModelRef {
                    provider: e.provider.clone(),
                    model_id: e.model_id.clone(),
                })
            }
            EntryKind::ActiveToolsChange(e) => {
                self.active_tool_names = e.active_tool_names.get().cloned()
            }
            EntryKind::Message(m) => {
                if let AgentMessage::Llm(Message::Assistant(a)) = &m.message {
                    self.model = Some(ModelRef {
                        provider: a.provider.clone(),
                        model_id: a.model.clone(),
                    });
                }
            }
            _ => {}
        }
    }
}

/// What a session hands to the agent loop for one turn.
///
/// `messages` is shared with the session's projection cache, so handing out a context costs
/// nothing; use `Arc::make_mut` / `to_vec()` to change a copy.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionContext {
    /// The projected messages in order, the harness's roles included; [`Self::llm_messages`]
    /// gives what a provider is sent.
    #[serde(serialize_with = "serialize_shared")]
    pub messages: Arc<Vec<AgentMessage>>,
    /// The model the branch uses ([`DerivedState::model`]).
    pub model: Option<ModelRef>,
    /// The branch's thinking level ([`DerivedState::thinking_level`]).
    pub thinking_level: String,
    /// The tools offered to the model; `None` means all ([`DerivedState::active_tool_names`]).
    pub active_tool_names: Option<Vec<String>>,
}

fn serialize_shared<S: serde::Serializer>(
    messages: &Arc<Vec<AgentMessage>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    messages.as_slice().serialize(s)
}

impl SessionContext {
    /// A context of `messages` under the settings of `state`.
    pub fn from_parts(messages: Vec<AgentMessage>, state: DerivedState) -> Self {
        Self::from_shared(Arc::new(messages), state)
    }

    /// [`Self::from_parts`] with messages already shared (a projection cache's list, not
    /// copied).
    pub fn from_shared(messages: Arc<Vec<AgentMessage>>, state: DerivedState) -> Self {
        SessionContext {
            messages,
            model: state.model,
            thinking_level: state.thinking_level,
            active_tool_names: state.active_tool_names,
        }
    }

    /// The model-visible form of [`Self::messages`].
    pub fn llm_messages(&self) -> Vec<Message> {
        crate::context::convert::convert_to_llm(&self.messages)
    }
}

/// Replays the whole ancestry into [`DerivedState`].
pub fn derive_state<E: Borrow<SessionEntry>>(ancestry: &[E]) -> DerivedState {
    let mut state = DerivedState::default();
    for e in ancestry {
        state.apply(e.borrow());
    }
    state
}

fn compaction_of(entry: &SessionEntry) -> Option<&crate::entry::CompactionEntry> {
    match &entry.kind {
        EntryKind::Compaction(c) => Some(c),
        _ => None,
    }
}

pub(crate) fn is_system_message(entry: &SessionEntry) -> bool {
    matches!(&entry.kind, EntryKind::Message(m) if matches!(m.message, AgentMessage::Llm(Message::System(_))))
}

/// Index of the newest compaction on a root→leaf path.
pub fn newest_compaction<E: Borrow<SessionEntry>>(path: &[E]) -> Option<usize> {
    path.iter()
        .rposition(|e| matches!(e.borrow().kind, EntryKind::Compaction(_)))
}

/// Where `getBranch()` starts on a root→leaf path (DECISIONS §3.1): walking up, the first
/// compaction met fixes the boundary — the compaction itself when it has a `retainedTail`,
/// else its `firstKeptEntryId` (the root when that id is not on the path).
pub fn branch_start<E: Borrow<SessionEntry>>(path: &[E]) -> usize {
    let Some(c_idx) = newest_compaction(path) else {
        return 0;
    };
    let Some(c) = compaction_of(path[c_idx].borrow()) else {
        return 0;
    };
    if c.retained_tail.is_some() {
        return c_idx;
    }
    match &c.first_kept_entry_id {
        Some(kept) => path[..=c_idx]
            .iter()
            .rposition(|e| &e.borrow().id == kept)
            .unwrap_or(0),
        None => 0,
    }
}

/// The bounded branch (`getBranch()`) as a sub-slice of the full ancestry.
pub fn bounded_branch<E: Borrow<SessionEntry>>(path: &[E]) -> &[E] {
    &path[branch_start(path)..]
}

/// The default context transform (DECISIONS §3.3) as indices into the full ancestry:
/// no compaction → everything; newest compaction C with `retainedTail` → `[C, after C]`;
/// otherwise `[C, firstKept..C minus system messages, after C]`.
pub fn default_context_indices<E: Borrow<SessionEntry>>(path: &[E]) -> Vec<usize> {
    let Some(c_idx) = newest_compaction(path) else {
        return (0..path.len()).collect();
    };
    let mut out = Vec::with_capacity(path.len() - c_idx);
    out.push(c_idx);
    if let Some(c) = compaction_of(path[c_idx].borrow()) {
        if c.retained_tail.is_none() {
            if let Some(kept) = &c.first_kept_entry_id {
                if let Some(start) = path[..c_idx].iter().position(|e| &e.borrow().id == kept) {
                    out.extend((start..c_idx).filter(|&i| !is_system_message(path[i].borrow())));
                }
            }
        }
    }
    out.extend(c_idx + 1..path.len());
    out
}

/// Hands the entries of the default context list ([`default_context_indices`]) of `window` to
/// `visit` one at a time, in the order [`visit_context_entries`] promises:
/// every `context_edit` of the list first, then every other entry in list order (DECISIONS
/// §25.100). What storages without an index of entry types do; `window` is their
/// `path_to_root_or_compaction`.
///
/// [`visit_context_entries`]: crate::context::visit_context_entries
pub fn visit_context_list(
    window: Vec<SessionEntry>,
    visit: &mut (dyn FnMut(SessionEntry) -> Result<(), SessionError> + Send),
) -> Result<(), SessionError> {
    let indices = default_context_indices(&window);
    let mut slots: Vec<Option<SessionEntry>> = window.into_iter().map(Some).collect();
    let is_edit = |e: &SessionEntry| matches!(e.kind, EntryKind::ContextEdit(_));
    for &i in &indices {
        if slots[i].as_ref().is_some_and(is_edit) {
            if let Some(e) = slots[i].take() {
                visit(e)?;
            }
        }
    }
    for &i in &indices {
        if let Some(e) = slots[i].take() {
            visit(e)?;
        }
    }
    Ok(())
}

/// [`default_context_indices`] as entry references.
pub fn default_context_entries<E: Borrow<SessionEntry>>(path: &[E]) -> Vec<&SessionEntry> {
    default_context_indices(path)
        .into_iter()
        .map(|i| path[i].borrow())
        .collect()
}

/// The epoch milliseconds of an entry's ISO timestamp (0 when unparsable, which strict
/// loading never lets through).
pub fn entry_ms(entry: &SessionEntry) -> i64 {
    crate::time::iso_to_ms(&entry.timestamp).unwrap_or(0)
}

/// Messages of one context entry at `position` in the context-entry list, before edits.
pub fn entry_messages(
    entry: &SessionEntry,
    position: usize,
    projectors: &HashMap<String, CustomProjector>,
) -> Vec<AgentMessage> {
    arbor_ai::work::add(arbor_ai::work::Work::Projected, 1);
    match &entry.kind {
        EntryKind::Message(m) => vec![m.message.clone()],
        EntryKind::CustomMessage(c) => vec![AgentMessage::Custom(CustomMessage {
            custom_type: c.custom_type.clone(),
            content: c.content.clone(),
            display: c.display,
            details: c.details.clone(),
            timestamp: entry_ms(entry).into(),
            extra: Default::default(),
        })],
        EntryKind::BranchSummary(b) if !b.summary.is_empty() => {
            vec![AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: b.from_id.clone(),
                timestamp: entry_ms(entry).into(),
                extra: Default::default(),
            })]
        }
        // Only the compaction that opens the context speaks; older ones inside the kept
        // range were already folded into its summary.
        EntryKind::Compaction(c) if position == 0 => {
            let mut out = Vec::with_capacity(2 + c.retained_tail.as_ref().map_or(0, Vec::len));
            if let Some(sys) = &c.system_message {
                out.push(sys.clone());
            }
            out.push(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: c.summary.clone(),
                tokens_before: c.tokens_before,
                timestamp: entry_ms(entry).into(),
                extra: Default::default(),
            }));
            if let Some(tail) = &c.retained_tail {
                out.extend(tail.iter().cloned());
            }
            out
        }
        EntryKind::Custom(c) => match projectors.get(&c.custom_type) {
            Some(p) => p(entry),
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Applies a `context_edit` replacement to a target's projected messages (DECISIONS §3.5):
/// `null` removes them; otherwise user/assistant/toolResult/custom messages get the new
/// content with role and metadata kept. A replacement without usable `content` changes
/// nothing (appends never write one).
pub fn apply_edit(messages: Vec<AgentMessage>, replacement: &Value) -> Vec<AgentMessage> {
    if replacement.is_null() {
        return Vec::new();
    }
    let Some(content) = replacement.get("content") else {
        return messages;
    };
    messages
        .into_iter()
        .map(|m| replace_content(m, content))
        .collect()
}

fn parse_content(v: &Value) -> Option<Content> {
    match v {
        Value::String(s) => Some(Content::Text(s.clone())),
        Value::Array(_) => serde_json::from_value::<Vec<ContentBlock>>(v.clone())
            .ok()
            .map(Content::Blocks),
        _ => None,
    }
}

fn as_blocks(c: Content) -> Vec<ContentBlock> {
    match c {
        Content::Text(t) => vec![text_block(t)],
        Content::Blocks(b) => b,
    }
}

fn replace_content(message: AgentMessage, content: &Value) -> AgentMessage {
    let Some(new) = parse_content(content) else {
        return message;
    };
    match message {
        AgentMessage::Llm(Message::User(mut u)) => {
            u.content = new;
            AgentMessage::Llm(Message::User(u))
        }
        AgentMessage::Llm(Message::Assistant(mut a)) => {
            a.content = as_blocks(new);
            AgentMessage::Llm(Message::Assistant(a))
        }
        AgentMessage::Llm(Message::ToolResult(mut t)) => {
            t.content = Content::Blocks(as_blocks(new));
            AgentMessage::Llm(Message::ToolResult(t))
        }
        AgentMessage::Custom(mut c) => {
            c.content = new;
            AgentMessage::Custom(c)
        }
        other => other,
    }
}

/// Target id → the latest `context_edit` among `entries` (later entries win).
pub fn latest_edits<E: Borrow<SessionEntry>>(entries: &[E]) -> HashMap<&str, &SessionEntry> {
    let mut edits = HashMap::new();
    for e in entries {
        let e = e.borrow();
        if let EntryKind::ContextEdit(edit) = &e.kind {
            edits.insert(edit.target_id.as_str(), e);
        }
    }
    edits
}

/// The replacement carried by a `context_edit` entry (`null` = remove).
pub fn edit_replacement(edit: &SessionEntry) -> &Value {
    match &edit.kind {
        EntryKind::ContextEdit(e) => &e.replacement,
        _ => &Value::Null,
    }
}

/// Projects a list of context entries (after transforms) into agent messages, applying
/// the latest `context_edit` per target among them.
pub fn project_entries<E: Borrow<SessionEntry>>(
    entries: &[E],
    projectors: &HashMap<String, CustomProjector>,
) -> Vec<AgentMessage> {
    let edits = latest_edits(entries);
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let e = e.borrow();
        let msgs = entry_messages(e, i, projectors);
        match edits.get(e.id.as_str()) {
            Some(edit) => out.extend(apply_edit(msgs, edit_replacement(edit))),
            None => out.extend(msgs),
        }
    }
    out
}

/// The whole pipeline over the full ancestry (root..=leaf) of the leaf.
pub fn build_session_context<E: Borrow<SessionEntry>>(
    ancestry: &[E],
    options: &ContextOptions,
) -> SessionContext {
    let state = derive_state(ancestry);
    let indices = default_context_indices(ancestry);
    let messages = if options.entry_transforms.is_empty() {
        let entries: Vec<&SessionEntry> = indices.iter().map(|&i| ancestry[i].borrow()).collect();
        project_entries(&entries, &options.projectors)
    } else {
        let mut entries: Vec<SessionEntry> = indices
            .iter()
            .map(|&i| ancestry[i].borrow().clone())
            .collect();
        for t in &options.entry_transforms {
            entries = t(entries);
        }
        project_entries(&entries, &options.projectors)
    };
    SessionContext::from_parts(messages, state)
}

/// [`build_session_context`] that consumes the ancestry: messages are moved out of their
/// entries instead of cloned, and entries outside the context window are freed before
/// projection. For one-shot callers over big sessions (the `arbor session context` command).
pub fn build_session_context_owned(
    ancestry: Vec<SessionEntry>,
    options: &ContextOptions,
) -> SessionContext {
    let state = derive_state(&ancestry);
    let indices = default_context_indices(&ancestry);
    let mut slots: Vec<Option<SessionEntry>> = ancestry.into_iter().map(Some).collect();
    let mut entries: Vec<SessionEntry> = indices.iter().filter_map(|&i| slots[i].take()).collect();
    drop(slots);
    for t in &options.entry_transforms {
        entries = t(entries);
    }
    let edits: HashMap<String, Value> = latest_edits(&entries)
        .into_iter()
        .map(|(target, edit)| (target.to_string(), edit_replacement(edit).clone()))
        .collect();
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.into_iter().enumerate() {
        let edit = edits.get(&e.id);
        let msgs = entry_messages_owned(e, i, &options.projectors);
        match edit {
            Some(replacement) => out.extend(apply_edit(msgs, replacement)),
            None => out.extend(msgs),
        }
    }
    SessionContext::from_parts(out, state)
}

/// The context from the bounded branch (`getBranch()`, [`bounded_branch`]) plus settings
/// derived elsewhere: the window holds every entry the messages come from, so a storage that
/// can fold settings over the full ancestry cheaply never has to parse the summarized past.
/// Equals [`build_session_context`] over the full ancestry when `state` is its derived state.
pub fn build_session_context_from_window(
    window: Vec<SessionEntry>,
    state: DerivedState,
    options: &ContextOptions,
) -> SessionContext {
    let mut ctx = build_session_context_owned(window, options);
    ctx.model = state.model;
    ctx.thinking_level = state.thinking_level;
    ctx.active_tool_names = state.active_tool_names;
    ctx
}

/// [`entry_messages`] moving the message out of the entry.
pub(crate) fn entry_messages_owned(
    entry: SessionEntry,
    position: usize,
    projectors: &HashMap<String, CustomProjector>,
) -> Vec<AgentMessage> {
    arbor_ai::work::add(arbor_ai::work::Work::Projected, 1);
    // Only the kinds that carry the entry's time parse it (not every message).
    let ms = |ts: &str| crate::time::iso_to_ms(ts).unwrap_or(0);
    match entry.kind {
        EntryKind::Message(m) => vec![m.message],
        EntryKind::CustomMessage(c) => vec![AgentMessage::Custom(CustomMessage {
            custom_type: c.custom_type,
            content: c.content,
            display: c.display,
            details: c.details,
            timestamp: ms(&entry.timestamp).into(),
            extra: Default::default(),
        })],
        EntryKind::Compaction(c) if position == 0 => {
            let mut out = Vec::with_capacity(2 + c.retained_tail.as_ref().map_or(0, Vec::len));
            out.extend(c.system_message);
            out.push(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: c.summary,
                tokens_before: c.tokens_before,
                timestamp: ms(&entry.timestamp).into(),
                extra: Default::default(),
            }));
            out.extend(c.retained_tail.into_iter().flatten());
            out
        }
        _ => entry_messages(&entry, position, projectors),
    }
}

/// Root→leaf ancestry of `leaf` inside an unordered set of entries (for callers that hold
/// a whole log in memory, e.g. fixture checks). A missing leaf is `not_found`; a missing parent
/// or a parent cycle is `invalid_session`, naming the entry.
pub fn ancestry_in<'a>(
    by_id: &HashMap<&str, &'a SessionEntry>,
    leaf: Option<&str>,
) -> Result<Vec<&'a SessionEntry>, SessionError> {
    let mut path = Vec::new();
    let mut cur = match leaf {
        None => return Ok(path),
        Some(id) => *by_id
            .get(id)
            .ok_or_else(|| SessionError::NotFound(format!("leaf entry {id} not found")))?,
    };
    loop {
        path.push(cur);
        if path.len() > by_id.len() {
            return Err(SessionError::InvalidSession(format!(
                "entry {} is part of a parent cycle",
                cur.id
            )));
        }
        match cur.parent_id.as_deref() {
            None => break,
            Some(p) => {
                cur = by_id.get(p).ok_or_else(|| {
                    SessionError::InvalidSession(format!(
                        "entry {} has a missing parent {p}",
                        cur.id
                    ))
                })?;
            }
        }
    }
    path.reverse();
    Ok(path)
}

/// The leaf a log recovers to (DECISIONS §2.3): ordinary entries move it to themselves,
/// `leaf` entries to their target.
pub fn recovered_leaf<E: Borrow<SessionEntry>>(log: &[E]) -> Option<String> {
    let mut leaf = None;
    for e in log {
        let e = e.borrow();
        leaf = match &e.kind {
            EntryKind::Leaf(l) => l.target_id.clone(),
            _ => Some(e.id.clone()),
        };
    }
    leaf
}
