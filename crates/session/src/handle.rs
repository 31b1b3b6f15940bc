//! `Session`: the typed, validated write API and the projected read API over any
//! [`SessionStorage`] (the seeds' `Session` class, DECISIONS §2–§3).

use std::sync::Arc;

use arbor_ai::{Content, ContentBlock, Message, Usage};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::context::cache::ProjectionCache;
use crate::context::projection::{ContextOptions, DerivedState, SessionContext};
use crate::entry::*;
use crate::error::{Result, SessionError};
use crate::message::AgentMessage;
use crate::rows::{RowCaps, RowSummary};
use crate::storage::{EntryDraft, SessionStats, SessionStorage};
use crate::tree::SessionTree;

/// Thinking levels a `thinking_level_change` may carry.
pub const THINKING_LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/// Everything a compaction entry records besides its id/parent/timestamp.
#[derive(Debug, Clone, Default)]
pub struct CompactionDraft {
    /// The summary text that replaces the older history in the model's view.
    pub summary: String,
    /// First entry kept verbatim after the summary; must be on the active path
    /// (`invalid_entry` otherwise).
    pub first_kept_entry_id: Option<String>,
    /// The context's size in tokens before compacting; recorded for display only.
    pub tokens_before: u64,
    /// Messages that replace everything before the compaction (self-contained checkpoint).
    /// pi does not know the field; Arbor's compactor writes `first_kept_entry_id` instead
    /// (DECISIONS §6.3).
    pub retained_tail: Option<Vec<AgentMessage>>,
    /// The system prompt state at compaction time; supersedes older system messages. Must be
    /// a `system` message (`invalid_entry` otherwise).
    pub system_message: Option<Message>,
    /// Data recorded beside the summary (e.g. `{readFiles, modifiedFiles}`); not sent to the
    /// model.
    pub details: Option<Value>,
    /// Tokens and cost of generating the summary; counted in the session's stats.
    pub usage: Option<Usage>,
    /// `Some(true)` when an extension produced the summary rather than the built-in compactor.
    pub from_hook: Option<bool>,
}

/// The summary `move_to` writes on the branch it moves to.
#[derive(Debug, Clone, Default)]
pub struct BranchSummaryDraft {
    /// What the branch being left did; the model reads it on the new branch.
    pub summary: String,
    /// Data recorded beside the summary (e.g. `{readFiles, modifiedFiles}`); not sent to the
    /// model.
    pub details: Option<Value>,
    /// Tokens and cost of generating the summary; counted in the session's stats.
    pub usage: Option<Usage>,
    /// `Some(true)` when an extension produced the summary rather than the built-in summarizer.
    pub from_hook: Option<bool>,
}

/// A session: appends go through here so they are validated, serialized and reflected in the
/// cached projection.
pub struct Session {
    storage: Arc<dyn SessionStorage>,
    options: ContextOptions,
    /// Serializes this session's writes (validate-then-append, `move_to`'s two appends) and
    /// holds the projection of the last leaf seen.
    cache: Mutex<Option<ProjectionCache>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("location", &self.storage.location())
            .field("options", &self.options)
            .finish()
    }
}

/// Collapses every run of CR/LF into one space and trims (pi's session name rule).
pub fn sanitize_session_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_break = false;
    for ch in name.chars() {
        if ch == '\r' || ch == '\n' {
            if !in_break {
                out.push(' ');
                in_break = true;
            }
        } else {
            out.push(ch);
            in_break = false;
        }
    }
    out.trim().to_string()
}

impl Session {
    /// A session over `storage` with no caller projection hooks.
    pub fn new(storage: Arc<dyn SessionStorage>) -> Self {
        Self::with_options(storage, ContextOptions::default())
    }

    /// A session whose every `build_context` also applies `options` (instance options; per-call
    /// options are merged after them).
    pub fn with_options(storage: Arc<dyn SessionStorage>, options: ContextOptions) -> Self {
        Session {
            storage,
            options,
            cache: Mutex::new(None),
        }
    }

    /// The storage this session writes to.
    pub fn storage(&self) -> &Arc<dyn SessionStorage> {
        &self.storage
    }

    // ---- reads ----------------------------------------------------------------------

    /// The current leaf (`None`: before the first entry).
    pub async fn leaf_id(&self) -> Result<Option<String>> {
        self.storage.leaf_id().await
    }

    /// One entry by id.
    pub async fn get_entry(&self, id: &str) -> Result<Option<SessionEntry>> {
        self.storage.get_entry(id).await
    }

    /// Every entry in log order (all branches, control entries included).
    pub async fn entries(&self) -> Result<Vec<SessionEntry>> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = self.storage.entries(after, None).await?;
            out.extend(page.entries.into_iter().map(|(_, e)| e));
            match page.next_after_seq {
                Some(next) if Some(next) != after => after = Some(next),
                _ => break,
            }
        }
        Ok(out)
    }

    /// pi's `getBranch(from?)`, named for what it does: the path from `from` (default: the
    /// leaf) back to the root or, when one is on the way, to the newest compaction boundary
    /// (DECISIONS §3.1) — entries a compaction summarized are not in it. For the whole path use
    /// [`Session::ancestry`]. The storage walks it (bounded, no full-ancestry read); the tests
    /// hold it equal to `bounded_branch` over the full ancestry.
    pub async fn branch_since_compaction(&self, from: Option<&str>) -> Result<Vec<SessionEntry>> {
        let start = match from {
            Some(id) => Some(id.to_string()),
            None => self.storage.leaf_id().await?,
        };
        if let Some(id) = &start {
            if self.storage.get_entry(id).await?.is_none() {
                return Err(SessionError::NotFound(format!("entry {id} not found")));
            }
        }
        self.storage
            .path_to_root_or_compaction(start.as_deref())
            .await
    }

    /// The old name of [`Session::branch_since_compaction`], which says where it stops.
    #[deprecated(
        note = "stops at the compaction boundary; use `branch_since_compaction` (or `ancestry` for the whole path)"
    )]
    pub async fn branch(&self, from: Option<&str>) -> Result<Vec<SessionEntry>> {
        self.branch_since_compaction(from).await
    }

    /// The full ancestry root..=`from` (default: the leaf).
    pub async fn ancestry(&self, from: Option<&str>) -> Result<Vec<SessionEntry>> {
        match from {
            Some(id) => self.storage.ancestry(Some(id)).await,
            None => {
                let mut guard = self.cache.lock().await;
                let cache = self.cache_for_leaf(&mut guard).await?;
                if cache.is_full() {
                    Ok(cache.path().to_vec())
                } else {
                    // A window (DECISIONS §22.50): the part above it is only in storage.
                    let leaf = cache.leaf_id().map(str::to_string);
                    self.storage.ancestry(leaf.as_deref()).await
                }
            }
        }
    }

    /// The context of the current leaf (instance options, then `options`).
    pub async fn build_context(&self, options: &ContextOptions) -> Result<SessionContext> {
        let mut guard = self.cache.lock().await;
        let cache = self.cache_for_leaf(&mut guard).await?;
        // The cache already applies the instance projectors; transforms (instance or
        // per-call) and per-call projectors need a pass over the cached context entries.
        Ok(
            if options.is_empty() && self.options.entry_transforms.is_empty() {
                cache.context()
            } else {
                cache.context_with(&self.options.merged(options))
            },
        )
    }

    /// [`Self::build_context`] with default options, plus the projection's append-only
    /// generation when the context came from the cache unchanged (`None` when session entry
    /// transforms rebuilt it): while the generation stays the same, a later context starts
    /// with this one's messages (DECISIONS §20.13).
    pub async fn build_context_tracked(&self) -> Result<(SessionContext, Option<u64>)> {
        let mut guard = self.cache.lock().await;
        let cache = self.cache_for_leaf(&mut guard).await?;
        Ok(if self.options.entry_transforms.is_empty() {
            (cache.context(), Some(cache.generation()))
        } else {
            (cache.context_with(&self.options), None)
        })
    }

    /// The context as of another entry, without moving the leaf.
    pub async fn build_context_at(
        &self,
        leaf: Option<&str>,
        options: &ContextOptions,
    ) -> Result<SessionContext> {
        if let Some(id) = leaf {
            if self.storage.get_entry(id).await?.is_none() {
                return Err(SessionError::NotFound(format!("entry {id} not found")));
            }
        }
        let ancestry = self.storage.ancestry(leaf).await?;
        let merged = self.options.merged(options);
        Ok(crate::context::projection::build_session_context(
            &ancestry, &merged,
        ))
    }

    /// The label of an entry (latest `label` entry for it, trimmed; empty = none).
    pub async fn label(&self, id: &str) -> Result<Option<String>> {
        self.storage.get_label(id).await
    }

    /// Every current label: target id → label (latest `label` entry per target, trimmed; blank
    /// clears), in the order the targets were first labelled.
    pub async fn labels(&self) -> Result<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = Vec::new();
        for e in self.storage.find_entries("label").await? {
            if let EntryKind::Label(l) = &e.kind {
                let text = l.label.get().map(|s| s.trim()).filter(|s| !s.is_empty());
                match (out.iter().position(|(t, _)| *t == l.target_id), text) {
                    (Some(i), Some(t)) => out[i].1 = t.to_string(),
                    (Some(i), None) => {
                        out.remove(i);
                    }
                    (None, Some(t)) => out.push((l.target_id.clone(), t.to_string())),
                    (None, None) => {}
                }
            }
        }
        Ok(out)
    }

    /// The session's display name (latest `session_info`, empty = none).
    pub async fn name(&self) -> Result<Option<String>> {
        self.storage.session_name().await
    }

    /// Message count, tokens and cost.
    pub async fn stats(&self) -> Result<SessionStats> {
        self.storage.stats().await
    }

    /// The whole tree for a `/tree` view (see [`SessionTree`]), built from row summaries
    /// rather than parsed entries (DECISIONS §25.80).
    pub async fn tree(&self) -> Result<SessionTree> {
        let mut guard = self.cache.lock().await;
        let cache = self.cache_for_leaf(&mut guard).await?;
        let leaf = cache.leaf_id().map(str::to_string);
        let source = crate::rows::row_source(&*self.storage).await?;
        let rows = source.summaries(RowCaps::TREE)?;
        // A windowed cache (DECISIONS §22.50) holds only part of the path; the rows have it all.
        let walked: Vec<Box<str>> = if cache.is_full() {
            Vec::new()
        } else {
            path_in_rows(&rows, leaf.as_deref())
        };
        let active: Vec<&str> = if cache.is_full() {
            cache.path().iter().map(|e| e.id.as_str()).collect()
        } else {
            walked.iter().map(|id| &**id).collect()
        };
        Ok(SessionTree::from_rows(
            rows,
            leaf.as_deref(),
            &active,
            Some(source),
        ))
    }

    // ---- typed appends ----------------------------------------------------------------

    /// Appends a `message` entry under the leaf; returns its id.
    pub async fn append_message(&self, message: AgentMessage) -> Result<String> {
        if let AgentMessage::Other(map) = &message {
            let role = map.get("role").and_then(Value::as_str).unwrap_or("<none>");
            return Err(SessionError::InvalidEntry(format!(
                "message: unknown role {role:?}; use a user, assistant, toolResult, system, custom, bashExecution, branchSummary or compactionSummary message"
            )));
        }
        self.append(EntryKind::Message(MessageEntry {
            message,
            extra: Default::default(),
        }))
        .await
    }

    /// Appends a `thinking_level_change` entry; returns its id.
    pub async fn append_thinking_level_change(&self, level: &str) -> Result<String> {
        if !THINKING_LEVELS.contains(&level) {
            return Err(SessionError::InvalidEntry(format!(
                "thinking_level_change: unknown thinkingLevel {level:?} (expected one of {})",
                THINKING_LEVELS.join(", ")
            )));
        }
        self.append(EntryKind::ThinkingLevelChange(ThinkingLevelChangeEntry {
            thinking_level: level.to_string(),
            extra: Default::default(),
        }))
        .await
    }

    /// Appends a `model_change` entry; returns its id.
    pub async fn append_model_change(&self, provider: &str, model_id: &str) -> Result<String> {
        if provider.trim().is_empty() || model_id.trim().is_empty() {
            return Err(SessionError::InvalidEntry(format!(
                "model_change: provider and modelId must be non-empty (got {provider:?}, {model_id:?})"
            )));
        }
        self.append(EntryKind::ModelChange(ModelChangeEntry {
            provider: provider.to_string(),
            model_id: model_id.to_string(),
            extra: Default::default(),
        }))
        .await
    }

    /// Appends an `active_tools_change` entry; returns its id.
    pub async fn append_active_tools_change(&self, names: &[String]) -> Result<String> {
        self.append(EntryKind::ActiveToolsChange(ActiveToolsChangeEntry {
            active_tool_names: Some(names.to_vec()).into(),
            extra: Default::default(),
        }))
        .await
    }

    /// Appends a compaction. `first_kept_entry_id` must be on the active path (root..=leaf).
    pub async fn append_compaction(&self, draft: CompactionDraft) -> Result<String> {
        let mut guard = self.cache.lock().await;
        if let Some(kept) = &draft.first_kept_entry_id {
            let cache = self.cache_for_leaf(&mut guard).await?;
            if self.on_active_path(cache, kept).await?.is_none() {
                return Err(SessionError::InvalidEntry(format!(
                    "compaction: firstKeptEntryId {kept} is not on the active branch"
                )));
            }
        }
        let system_message = match draft.system_message {
            Some(m @ Message::System(_)) => Some(AgentMessage::Llm(m)),
            Some(_) => {
                return Err(SessionError::InvalidEntry(
                    "compaction: systemMessage must have role system".to_string(),
                ))
            }
            None => None,
        };
        let kind = EntryKind::Compaction(Box::new(CompactionEntry {
            summary: draft.summary,
            first_kept_entry_id: draft.first_kept_entry_id,
            tokens_before: draft.tokens_before,
            retained_tail: draft.retained_tail,
            system_message,
            details: draft.details,
            usage: draft.usage,
            from_hook: draft.from_hook,
            extra: Default::default(),
        }));
        self.append_locked(&mut guard, kind).await
    }

    /// Appends a `custom` entry (extension data, not in the context); returns its id.
    pub async fn append_custom_entry(
        &self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String> {
        check_custom_type(custom_type, "custom")?;
        self.append(EntryKind::Custom(CustomEntry {
            custom_type: custom_type.to_string(),
            data,
            extra: Default::default(),
        }))
        .await
    }

    /// Appends a `custom_message` entry (an extension's message in the context); returns its id.
    pub async fn append_custom_message(
        &self,
        custom_type: &str,
        content: Content,
        display: bool,
        details: Option<Value>,
    ) -> Result<String> {
        check_custom_type(custom_type, "custom_message")?;
        self.append(EntryKind::CustomMessage(CustomMessageEntry {
            custom_type: custom_type.to_string(),
            content,
            display,
            details,
            extra: Default::default(),
        }))
        .await
    }

    /// Labels an entry (`None` or blank clears). The target must exist (`not_found`).
    pub async fn append_label(&self, target_id: &str, label: Option<&str>) -> Result<String> {
        if self.storage.get_entry(target_id).await?.is_none() {
            return Err(SessionError::NotFound(format!(
                "label: target entry {target_id} not found"
            )));
        }
        let label = label.map(str::trim).filter(|l| !l.is_empty());
        self.append(EntryKind::Label(LabelEntry {
            target_id: target_id.to_string(),
            label: label.map(str::to_string).into(),
            extra: Default::default(),
        }))
        .await
    }

    /// Names the session; CR/LF runs become one space, the result is trimmed (empty clears).
    pub async fn append_session_name(&self, name: &str) -> Result<String> {
        self.append(EntryKind::SessionInfo(SessionInfoEntry {
            name: Some(sanitize_session_name(name)).into(),
            extra: Default::default(),
        }))
        .await
    }

    /// Replaces (`Some`) or removes (`None`) an earlier message in the model's view of this
    /// branch (DECISIONS §3.5). The target must be on the active path and be a
    /// user/assistant/toolResult message or a custom_message; a string replacement for an
    /// assistant or toolResult target is stored as one text block.
    pub async fn append_context_edit(
        &self,
        target_id: &str,
        replacement: Option<Content>,
    ) -> Result<String> {
        let mut guard = self.cache.lock().await;
        let cache = self.cache_for_leaf(&mut guard).await?;
        let target = self
            .on_active_path(cache, target_id)
            .await?
            .ok_or_else(|| {
                SessionError::InvalidEntry(format!(
                    "context_edit: target {target_id} is not on the active branch"
                ))
            })?;
        let target_kind = match &target.kind {
            EntryKind::Message(m) => match &m.message {
                AgentMessage::Llm(Message::User(_)) => EditTarget::UserSide,
                AgentMessage::Llm(Message::Assistant(_)) => EditTarget::Assistant,
                AgentMessage::Llm(Message::ToolResult(_)) => EditTarget::ToolResult,
                other => {
                    return Err(SessionError::InvalidEntry(format!(
                        "context_edit: target {target_id} is a {} message; only user, assistant, toolResult and custom_message entries can be edited",
                        role_of(other)
                    )))
                }
            },
            EntryKind::CustomMessage(_) => EditTarget::UserSide,
            _ => {
                return Err(SessionError::InvalidEntry(format!(
                    "context_edit: target {target_id} is a {} entry; only user, assistant, toolResult and custom_message entries can be edited",
                    target.entry_type()
                )))
            }
        };
        let replacement = match replacement {
            None => Value::Null,
            Some(content) => {
                let content = match (target_kind, content) {
                    (EditTarget::Assistant | EditTarget::ToolResult, Content::Text(t)) => {
                        Content::Blocks(vec![crate::context::convert::text_block(t)])
                    }
                    (EditTarget::UserSide | EditTarget::ToolResult, Content::Blocks(b)) => {
                        check_user_blocks(&b, target_id)?;
                        Content::Blocks(b)
                    }
                    (_, c) => c,
                };
                json!({ "content": content })
            }
        };
        let kind = EntryKind::ContextEdit(ContextEditEntry {
            target_id: target_id.to_string(),
            replacement,
            extra: Default::default(),
        });
        self.append_locked(&mut guard, kind).await
    }

    // ---- navigation ---------------------------------------------------------------------

    /// Moves the leaf (DECISIONS §2.1): checks the target, appends a `leaf` entry, and with a
    /// summary appends a `branch_summary` under the target whose `fromId` is the leaf we left
    /// (`"root"` if none). Returns the summary entry's id when one was written.
    pub async fn move_to(
        &self,
        target: Option<&str>,
        summary: Option<BranchSummaryDraft>,
    ) -> Result<Option<String>> {
        let mut guard = self.cache.lock().await;
        if let Some(id) = target {
            if self.storage.get_entry(id).await?.is_none() {
                return Err(SessionError::NotFound(format!(
                    "move_to: entry {id} not found"
                )));
            }
        }
        let old_leaf = self.storage.leaf_id().await?;
        self.storage.set_leaf(target).await?;
        if let Some(cache) = guard.as_mut() {
            if !cache.retreat_to(target) {
                *guard = None;
            }
        }
        let Some(summary) = summary else {
            return Ok(None);
        };
        let kind = EntryKind::BranchSummary(BranchSummaryEntry {
            from_id: old_leaf.unwrap_or_else(|| "root".to_string()),
            summary: summary.summary,
            details: summary.details,
            usage: summary.usage,
            from_hook: summary.from_hook,
            extra: Default::default(),
        });
        self.append_locked(&mut guard, kind).await.map(Some)
    }

    // ---- internals ------------------------------------------------------------------------

    /// The entry `id` when it is on the cached leaf's ancestry; a windowed cache (DECISIONS
    /// §22.50) asks storage for the part above its window.
    async fn on_active_path(
        &self,
        cache: &ProjectionCache,
        id: &str,
    ) -> Result<Option<SessionEntry>> {
        if let Some(p) = cache.position(id) {
            return Ok(Some(cache.path()[p].clone()));
        }
        let above = match cache.path().first() {
            Some(first) if !cache.is_full() => first.parent_id.clone(),
            _ => return Ok(None),
        };
        let Some(above) = above else {
            return Ok(None);
        };
        Ok(self
            .storage
            .ancestry(Some(&above))
            .await?
            .into_iter()
            .rfind(|e| e.id == id))
    }

    async fn append(&self, kind: EntryKind) -> Result<String> {
        let mut guard = self.cache.lock().await;
        self.append_locked(&mut guard, kind).await
    }

    async fn append_locked(
        &self,
        guard: &mut Option<ProjectionCache>,
        kind: EntryKind,
    ) -> Result<String> {
        let entry = self
            .storage
            .append(EntryDraft {
                kind,
                id: None,
                timestamp: None,
            })
            .await?;
        let id = entry.id.clone();
        if let Some(cache) = guard.as_mut() {
            if cache.push(entry).is_err() {
                // Someone else moved the leaf under us; the next read rebuilds.
                *guard = None;
            }
        }
        Ok(id)
    }

    /// Makes `guard` hold the projection of the storage's current leaf, reusing what it can.
    async fn cache_for_leaf<'a>(
        &self,
        guard: &'a mut Option<ProjectionCache>,
    ) -> Result<&'a mut ProjectionCache> {
        let leaf = self.storage.leaf_id().await?;
        let reusable = match guard.as_mut() {
            Some(cache) if cache.leaf_id() == leaf.as_deref() => true,
            Some(cache) => match leaf.as_deref() {
                None => cache.retreat_to(None),
                Some(id) => {
                    if cache.position(id).is_some() {
                        cache.retreat_to(Some(id))
                    } else {
                        match self.storage.get_entry(id).await? {
                            Some(e) if e.parent_id.as_deref() == cache.leaf_id() => {
                                cache.push(e).is_ok()
                            }
                            _ => false,
                        }
                    }
                }
            },
            None => false,
        };
        if !reusable {
            // The bounded branch and the settings of what lies above it: the summarized past
            // is neither parsed nor held (DECISIONS §22.50).
            let window = self
                .storage
                .path_to_root_or_compaction(leaf.as_deref())
                .await?;
            let base = match window.first().and_then(|e| e.parent_id.as_deref()) {
                Some(above) => {
                    DerivedState::from_settings(self.storage.derived_settings(Some(above)).await?)
                }
                None => DerivedState::default(),
            };
            *guard = Some(ProjectionCache::from_window(
                window,
                base,
                self.options.projectors.clone(),
            ));
        }
        guard
            .as_mut()
            .ok_or_else(|| SessionError::Storage("projection cache unexpectedly empty".to_string()))
    }
}

/// The root..=`leaf` path through a log (log order), by parent links.
fn path_in_rows(rows: &[RowSummary], leaf: Option<&str>) -> Vec<Box<str>> {
    let by_id: std::collections::HashMap<&str, &RowSummary> =
        rows.iter().map(|r| (&*r.id, r)).collect();
    let mut out = Vec::new();
    let mut cur = leaf;
    while let Some(r) = cur.and_then(|id| by_id.get(id)) {
        out.push(r.id.clone());
        if out.len() > rows.len() {
            break;
        }
        cur = r.parent_id.as_deref();
    }
    out.reverse();
    out
}

#[derive(Clone, Copy)]
enum EditTarget {
    /// user message or custom_message: string or text/image blocks
    UserSide,
    /// blocks only; a string becomes one text block
    ToolResult,
    /// any assistant blocks; a string becomes one text block
    Assistant,
}

/// `Session` is shared across tasks (agent loop, UI, RPC handlers).
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Session>();
};

fn role_of(m: &AgentMessage) -> &'static str {
    match m {
        AgentMessage::Llm(Message::User(_)) => "user",
        AgentMessage::Llm(Message::Assistant(_)) => "assistant",
        AgentMessage::Llm(Message::ToolResult(_)) => "toolResult",
        AgentMessage::Llm(Message::System(_)) => "system",
        AgentMessage::Custom(_) => "custom",
        AgentMessage::BashExecution(_) => "bashExecution",
        AgentMessage::BranchSummary(_) => "branchSummary",
        AgentMessage::CompactionSummary(_) => "compactionSummary",
        AgentMessage::Other(_) => "unknown",
    }
}

fn check_custom_type(custom_type: &str, what: &str) -> Result<()> {
    if custom_type.trim().is_empty() {
        return Err(SessionError::InvalidEntry(format!(
            "{what}: customType must be non-empty"
        )));
    }
    Ok(())
}

/// User-side content holds text and images only.
fn check_user_blocks(blocks: &[ContentBlock], target_id: &str) -> Result<()> {
    for b in blocks {
        if !matches!(b, ContentBlock::Text(_) | ContentBlock::Image(_)) {
            return Err(SessionError::InvalidEntry(format!(
                "context_edit: replacement for {target_id} may only hold text and image blocks"
            )));
        }
    }
    Ok(())
}
