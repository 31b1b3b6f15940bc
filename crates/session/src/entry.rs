//! Session entries: the nodes of the append-only tree, in pi's v3 JSONL shape.
//!
//! Every entry is `{type, id, parentId, timestamp, ...}`. Known entry types are typed; unknown
//! ones ([`EntryKind::Other`]) and unknown fields on known ones (`extra`) are kept verbatim so
//! that opening, forking or migrating a file never loses data a newer writer put there.
//! Output key order follows pi (`type, id, parentId, timestamp`, then the type's fields) so files
//! diff cleanly against pi's.

use arbor_ai::json::{describe, deserialize_count, from_object, Nullable};
use arbor_ai::types::{Content, Extra, Usage};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::SessionError;
use crate::message::AgentMessage;

/// `type:"message"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEntry {
    /// The conversation message: any role, including the harness's own (`custom`,
    /// `bashExecution`, ...).
    pub message: AgentMessage,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"thinking_level_change"`. The level is a free string at this layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingLevelChangeEntry {
    /// The level from here on; [`Session`](crate::handle::Session) only writes one of
    /// [`THINKING_LEVELS`](crate::handle::THINKING_LEVELS), files may hold anything.
    pub thinking_level: String,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"model_change"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChangeEntry {
    /// The provider id of the model chosen from here on (`anthropic`, `openai`, ...).
    pub provider: String,
    /// The model id within that provider (`modelId`). pi may name a virtual model here; the
    /// assistant messages that follow name the model that answered.
    pub model_id: String,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"active_tools_change"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveToolsChangeEntry {
    /// `null` (or absent) means "all tools".
    #[serde(default, skip_serializing_if = "Nullable::is_absent")]
    pub active_tool_names: Nullable<Vec<String>>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"compaction"`: a summary that replaces older history in the projection (never in the
/// log).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEntry {
    /// The summary text of everything the compaction replaces; projected as a
    /// `compactionSummary` message.
    pub summary: String,
    /// The first entry of the branch kept verbatim after the summary (pi's required field;
    /// Arbor writes it, DECISIONS §6.3). The compaction's own id keeps nothing before it
    /// (DECISIONS §14.5); `None` keeps nothing either and leaves the branch boundary at the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<String>,
    /// The context's size in tokens when it was compacted; informational (shown, never used by
    /// the projection). Integral floats are accepted on read.
    #[serde(default, deserialize_with = "deserialize_count")]
    pub tokens_before: u64,
    /// Messages kept verbatim after the summary (newer harness); when present the projection
    /// starts at the compaction itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained_tail: Option<Vec<AgentMessage>>,
    /// The full system-prompt checkpoint; supersedes earlier `system` messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<AgentMessage>,
    /// What the summarizer recorded beside the text (pi's default is `{readFiles,
    /// modifiedFiles}`; extensions put their own data); never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Tokens and cost of generating the summary; counted in the session's stats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// `true` when an extension produced the summary (pi's legacy field name); absent or
    /// `false` for a built-in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"branch_summary"`: what an abandoned branch did, placed under the navigation target.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryEntry {
    /// The leaf navigated away from (`"root"` when there was none).
    pub from_id: String,
    /// What the abandoned branch did; projected as a `branchSummary` message when non-empty.
    pub summary: String,
    /// What the summarizer recorded beside the text (pi's default is `{readFiles,
    /// modifiedFiles}`); never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Tokens and cost of generating the summary; counted in the session's stats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// `true` when an extension produced the summary (pi's legacy field name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"custom"`: extension state; reaches the model only through a registered projector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomEntry {
    /// The extension's key (`customType`): lets it find its entries on reload and selects the
    /// projector, if one is registered in [`ContextOptions`](crate::context::ContextOptions).
    pub custom_type: String,
    /// The extension's state, free-form; `None` when the entry has no `data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"custom_message"`: extension content projected as a `custom` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessageEntry {
    /// The extension's key (`customType`), carried over to the projected message.
    pub custom_type: String,
    /// What the model reads (as user content): a string or text and image blocks; absent
    /// reads as empty.
    #[serde(default)]
    pub content: Content,
    /// Whether a UI shows the message in the transcript; the model sees it either way.
    #[serde(default)]
    pub display: bool,
    /// Extension metadata kept with the entry; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"label"`: a bookmark on another entry; an absent label clears it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelEntry {
    /// The entry the label is on.
    pub target_id: String,
    /// The label text. Absent, `null` or blank clears the target's label; absent and `null`
    /// are kept apart so a rewrite writes back what was read (DECISIONS §8.3).
    #[serde(default, skip_serializing_if = "Nullable::is_absent")]
    pub label: Nullable<String>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"session_info"`: the session's display name (absent or empty clears it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfoEntry {
    /// The name listings show instead of the first message. Absent, `null` and empty clear
    /// it; absent and `null` are kept apart for rewrites (DECISIONS §8.3).
    #[serde(default, skip_serializing_if = "Nullable::is_absent")]
    pub name: Nullable<String>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"leaf"`: moves the current position; `null` moves it before the first entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeafEntry {
    /// The entry that becomes the leaf (`targetId`); `None` (`null`) puts the leaf before
    /// the first entry, so the next append starts a new root (DECISIONS §2.1).
    #[serde(default)]
    pub target_id: Option<String>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"context_edit"`: changes how one entry projects on this branch. `replacement` is
/// `null` (omit the target) or `{content}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextEditEntry {
    /// The message or `custom_message` entry whose contribution changes; the latest edit of
    /// a target among the context entries wins (DECISIONS §3.5).
    pub target_id: String,
    /// `null` (or absent) leaves the target out; `{"content": ...}` replaces its content and
    /// keeps its role and metadata.
    #[serde(default)]
    pub replacement: Value,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `type:"usage"`: tokens spent outside a message (e.g. cache warming); counted, never projected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageEntry {
    /// What the tokens were spent on (pi writes `cache_warm`); free-form, and an unknown kind
    /// counts like any other.
    #[serde(default)]
    pub kind: String,
    /// The provider that was billed.
    #[serde(default)]
    pub provider: String,
    /// The model id that spent the tokens.
    #[serde(default)]
    pub model: String,
    /// The tokens and cost, added to the session's stats; `None` when absent (nothing counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A short human-readable qualifier a UI may show with the usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// What an entry is, by its `type`.
// Messages are built and matched far more often than moved; boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// `message`: one conversation message, the only kind most entries are.
    Message(MessageEntry),
    /// `thinking_level_change`: a new reasoning level for the following turns.
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    /// `model_change`: the user switched models.
    ModelChange(ModelChangeEntry),
    /// `active_tools_change`: a new set of tools offered to the model.
    ActiveToolsChange(ActiveToolsChangeEntry),
    /// Boxed: rare, and the largest kind (a system-prompt checkpoint and usage inline), it
    /// would set the size of every entry (DECISIONS §22.60).
    Compaction(Box<CompactionEntry>),
    /// `branch_summary`: what a branch navigated away from did.
    BranchSummary(BranchSummaryEntry),
    /// `custom`: extension state, outside the context unless a projector maps it.
    Custom(CustomEntry),
    /// `custom_message`: extension content the model sees.
    CustomMessage(CustomMessageEntry),
    /// `label`: sets or clears a bookmark on another entry.
    Label(LabelEntry),
    /// `session_info`: sets or clears the session's display name.
    SessionInfo(SessionInfoEntry),
    /// `leaf`: a recorded move of the current position (hidden in tree views).
    Leaf(LeafEntry),
    /// `context_edit`: replaces or hides an earlier message in the model's view of the branch.
    ContextEdit(ContextEditEntry),
    /// `usage`: tokens spent outside a message; counted in stats, never projected.
    Usage(UsageEntry),
    /// An entry type this version does not know: stored, listed and copied verbatim, never
    /// projected. `fields` excludes the envelope (`type`, `id`, `parentId`, `timestamp`).
    Other {
        /// The entry's `type` as written.
        entry_type: String,
        /// Every field but the envelope, in file order.
        fields: Map<String, Value>,
    },
}

impl EntryKind {
    /// The JSON `type` of this kind.
    pub fn entry_type(&self) -> &str {
        match self {
            EntryKind::Message(_) => "message",
            EntryKind::ThinkingLevelChange(_) => "thinking_level_change",
            EntryKind::ModelChange(_) => "model_change",
            EntryKind::ActiveToolsChange(_) => "active_tools_change",
            EntryKind::Compaction(_) => "compaction",
            EntryKind::BranchSummary(_) => "branch_summary",
            EntryKind::Custom(_) => "custom",
            EntryKind::CustomMessage(_) => "custom_message",
            EntryKind::Label(_) => "label",
            EntryKind::SessionInfo(_) => "session_info",
            EntryKind::Leaf(_) => "leaf",
            EntryKind::ContextEdit(_) => "context_edit",
            EntryKind::Usage(_) => "usage",
            EntryKind::Other { entry_type, .. } => entry_type,
        }
    }

    /// A `message` kind holding `message`.
    pub fn message(message: impl Into<AgentMessage>) -> Self {
        EntryKind::Message(MessageEntry {
            message: message.into(),
            extra: Extra::new(),
        })
    }

    /// The entry another entry points at (`leaf`, `label`, `context_edit`).
    pub fn target_id(&self) -> Option<&str> {
        match self {
            EntryKind::Leaf(e) => e.target_id.as_deref(),
            EntryKind::Label(e) => Some(&e.target_id),
            EntryKind::ContextEdit(e) => Some(&e.target_id),
            _ => None,
        }
    }

    /// Parses the type-specific fields (the envelope already removed from `fields`).
    pub fn from_fields(entry_type: &str, fields: Map<String, Value>) -> Result<Self, SessionError> {
        Ok(match entry_type {
            "message" => EntryKind::Message(from_object(fields)?),
            "thinking_level_change" => EntryKind::ThinkingLevelChange(from_object(fields)?),
            "model_change" => EntryKind::ModelChange(from_object(fields)?),
            "active_tools_change" => EntryKind::ActiveToolsChange(from_object(fields)?),
            "compaction" => EntryKind::Compaction(from_object(fields)?),
            "branch_summary" => EntryKind::BranchSummary(from_object(fields)?),
            "custom" => EntryKind::Custom(from_object(fields)?),
            "custom_message" => EntryKind::CustomMessage(from_object(fields)?),
            "label" => EntryKind::Label(from_object(fields)?),
            "session_info" => EntryKind::SessionInfo(from_object(fields)?),
            "leaf" => EntryKind::Leaf(from_object(fields)?),
            "context_edit" => EntryKind::ContextEdit(from_object(fields)?),
            "usage" => EntryKind::Usage(from_object(fields)?),
            other => EntryKind::Other {
                entry_type: other.to_owned(),
                fields,
            },
        })
    }
}

/// One node of the session tree.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    /// Unique within the session. Arbor creates 8 lowercase hex characters (DECISIONS §1.5);
    /// any non-empty string is read.
    pub id: String,
    /// `None` for a root.
    pub parent_id: Option<String>,
    /// ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The entry's type and its type-specific fields.
    pub kind: EntryKind,
}

/// The envelope every entry line carries, as the strict loader checks it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Envelope {
    /// The `type` string; any value (unknown types are kept).
    pub entry_type: String,
    /// The non-empty `id`.
    pub id: String,
    /// `parentId`; `None` for an explicit `null` (a root).
    pub parent_id: Option<String>,
    /// `timestamp`, checked only to be a string.
    pub timestamp: String,
}

impl Envelope {
    /// Takes and checks the envelope fields out of an entry object: `type` a string, `id` a
    /// non-empty string, `parentId` a string or null, `timestamp` a string.
    /// (`shift_remove` keeps the remaining keys in file order; `remove` would move the last key
    /// into the hole and reorder unknown fields when the entry is written back.)
    pub(crate) fn take(map: &mut Map<String, Value>) -> Result<Self, SessionError> {
        Self::take_fields(map)
    }

    fn take_fields(map: &mut Map<String, Value>) -> Result<Self, SessionError> {
        let entry_type = match map.shift_remove("type") {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(SessionError::Parse(format!(
                    "`type` must be a string, found {}",
                    describe(&other)
                )))
            }
            None => return Err(SessionError::Parse("missing `type`".to_owned())),
        };
        let id = match map.shift_remove("id") {
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(Value::String(_)) => {
                return Err(SessionError::Parse(format!(
                    "{entry_type} entry has an empty `id`"
                )))
            }
            Some(other) => {
                return Err(SessionError::Parse(format!(
                    "{entry_type} entry: `id` must be a string, found {}",
                    describe(&other)
                )))
            }
            None => {
                return Err(SessionError::Parse(format!(
                    "{entry_type} entry has no `id`"
                )))
            }
        };
        let parent_id = match map.shift_remove("parentId") {
            Some(Value::String(s)) => Some(s),
            Some(Value::Null) => None,
            Some(other) => {
                return Err(SessionError::Parse(format!(
                    "entry {id}: `parentId` must be a string or null, found {}",
                    describe(&other)
                )))
            }
            None => {
                return Err(SessionError::Parse(format!(
                    "entry {id}: missing `parentId`"
                )))
            }
        };
        let timestamp = match map.shift_remove("timestamp") {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(SessionError::Parse(format!(
                    "entry {id}: `timestamp` must be a string, found {}",
                    describe(&other)
                )))
            }
            None => {
                return Err(SessionError::Parse(format!(
                    "entry {id}: missing `timestamp`"
                )))
            }
        };
        Ok(Envelope {
            entry_type,
            id,
            parent_id,
            timestamp,
        })
    }
}

impl SessionEntry {
    /// An entry from its parts, taken as given: nothing is checked or generated (storages
    /// assign ids and timestamps to an [`EntryDraft`](crate::storage::EntryDraft)).
    pub fn new(
        id: impl Into<String>,
        parent_id: Option<String>,
        timestamp: impl Into<String>,
        kind: EntryKind,
    ) -> Self {
        Self {
            id: id.into(),
            parent_id,
            timestamp: timestamp.into(),
            kind,
        }
    }

    /// The entry's `type` (`message`, `compaction`, ...).
    pub fn entry_type(&self) -> &str {
        self.kind.entry_type()
    }

    /// A `message` entry holding a user message (what `/tree` and `fork` let one re-edit).
    pub fn is_user_message(&self) -> bool {
        matches!(
            self.message(),
            Some(AgentMessage::Llm(arbor_ai::types::Message::User(_)))
        )
    }

    /// Parses an entry from a JSON object; errors name the entry id and the failing field.
    pub fn from_map(mut map: Map<String, Value>) -> Result<Self, SessionError> {
        let env = Envelope::take(&mut map)?;
        let kind = EntryKind::from_fields(&env.entry_type, map)
            .map_err(|e| e.within(format_args!("{} entry {}", env.entry_type, env.id)))?;
        Ok(SessionEntry {
            id: env.id,
            parent_id: env.parent_id,
            timestamp: env.timestamp,
            kind,
        })
    }

    /// Parses one JSONL line through a `serde_json::Value`: the reference path, whose errors
    /// [`SessionEntry::from_json`] reports. Public for the tests that compare both paths.
    #[doc(hidden)]
    pub fn from_json_via_value(line: &str) -> Result<Self, SessionError> {
        match arbor_ai::json::parse_then_explain(|| Self::parse_line(line)) {
            Ok(entry) => Ok(entry),
            // Failure path only: a lone UTF-16 surrogate escape (DECISIONS §25.8).
            Err(e) => match arbor_ai::json::strip_lone_surrogates(line) {
                Some(fixed) => arbor_ai::json::parse_then_explain(|| Self::parse_line(&fixed)),
                None => Err(e),
            },
        }
    }

    fn parse_line(line: &str) -> Result<Self, SessionError> {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => Self::from_map(map),
            Ok(other) => Err(SessionError::Parse(format!(
                "expected a JSON object, found {}",
                describe(&other)
            ))),
            Err(e) => Err(SessionError::Parse(format!("invalid JSON: {e}"))),
        }
    }

    /// The entry as one JSON line (no trailing newline).
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: keys are strings and values plain JSON.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The `message` of a message entry.
    pub fn message(&self) -> Option<&AgentMessage> {
        match &self.kind {
            EntryKind::Message(m) => Some(&m.message),
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct EntryOut<'a, T: ?Sized> {
    #[serde(rename = "type")]
    entry_type: &'a str,
    id: &'a str,
    #[serde(rename = "parentId")]
    parent_id: &'a Option<String>,
    timestamp: &'a str,
    #[serde(flatten)]
    fields: &'a T,
}

impl Serialize for SessionEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        macro_rules! out {
            ($fields:expr) => {
                EntryOut {
                    entry_type: self.kind.entry_type(),
                    id: &self.id,
                    parent_id: &self.parent_id,
                    timestamp: &self.timestamp,
                    fields: $fields,
                }
                .serialize(s)
            };
        }
        match &self.kind {
            EntryKind::Message(e) => out!(e),
            EntryKind::ThinkingLevelChange(e) => out!(e),
            EntryKind::ModelChange(e) => out!(e),
            EntryKind::ActiveToolsChange(e) => out!(e),
            EntryKind::Compaction(e) => out!(e),
            EntryKind::BranchSummary(e) => out!(e),
            EntryKind::Custom(e) => out!(e),
            EntryKind::CustomMessage(e) => out!(e),
            EntryKind::Label(e) => out!(e),
            EntryKind::SessionInfo(e) => out!(e),
            EntryKind::Leaf(e) => out!(e),
            EntryKind::ContextEdit(e) => out!(e),
            EntryKind::Usage(e) => out!(e),
            EntryKind::Other { fields, .. } => out!(fields),
        }
    }
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        SessionEntry::from_map(map).map_err(D::Error::custom)
    }
}

/// The first line of a session file (`type:"session"`); not part of the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`: what tells the header line from an entry.
    #[serde(rename = "type")]
    pub header_type: HeaderTag,
    /// Absent in v1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The session id: a UUIDv7, or a caller-chosen safe name (see [`SessionHeader::create`]).
    pub id: String,
    /// When the session was created, ISO-8601 UTC.
    pub timestamp: String,
    /// The working directory the session belongs to; picks its folder in the per-cwd layout.
    /// Empty when absent.
    #[serde(default)]
    pub cwd: String,
    /// The session this one was forked or continued from: the source's file path, or its id
    /// for backends without files (DECISIONS §5.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Free-form data the creator attached
    /// ([`CreateOptions::metadata`](crate::storage::CreateOptions::metadata)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Fields this version does not model, kept in file order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The literal `"session"` tag of a header line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HeaderTag {
    /// `"session"`, the only value.
    #[default]
    #[serde(rename = "session")]
    Session,
}

/// The session format version Arbor writes.
pub const CURRENT_VERSION: u32 = 3;

impl SessionHeader {
    /// A current-version header from its parts. Unlike [`SessionHeader::create`] the id is
    /// taken as given.
    pub fn new(
        id: impl Into<String>,
        timestamp: impl Into<String>,
        cwd: impl Into<String>,
    ) -> Self {
        Self {
            header_type: HeaderTag::Session,
            version: Some(CURRENT_VERSION),
            id: id.into(),
            timestamp: timestamp.into(),
            cwd: cwd.into(),
            parent_session: None,
            metadata: None,
            extra: Extra::new(),
        }
    }

    /// The header of a new session: a caller-given id (validated, `invalid_session` when it is
    /// not a safe name) or a fresh UUIDv7, created now.
    pub fn create(
        id: Option<String>,
        cwd: impl Into<String>,
        parent_session: Option<String>,
        metadata: Option<Value>,
    ) -> crate::error::Result<Self> {
        let id = match id {
            Some(id) => {
                crate::ids::validate_session_id(&id)?;
                id
            }
            None => crate::ids::new_session_id(),
        };
        let mut header = SessionHeader::new(id, crate::time::now_iso(), cwd);
        header.parent_session = parent_session;
        header.metadata = metadata;
        Ok(header)
    }

    /// The format version (`1` when the field is absent, as in v1 files).
    pub fn format_version(&self) -> u32 {
        self.version.unwrap_or(1)
    }

    /// Parses a header line, naming what is wrong.
    pub fn from_json(line: &str) -> Result<Self, SessionError> {
        Self::parse_line(line)
    }

    fn parse_line(line: &str) -> Result<Self, SessionError> {
        let map = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(SessionError::Parse(format!(
                    "expected a JSON object, found {}",
                    describe(&other)
                )))
            }
            Err(e) => return Err(SessionError::Parse(format!("invalid JSON: {e}"))),
        };
        match map.get("type") {
            Some(Value::String(t)) if t == "session" => {}
            Some(other) => {
                return Err(SessionError::Parse(format!(
                "the first line must be a session header (`type`: \"session\"), found `type` {}",
                describe(other)
            )))
            }
            None => {
                return Err(SessionError::Parse(
                    "the first line has no `type`; expected a session header".to_owned(),
                ))
            }
        }
        from_object(map).map_err(|e| SessionError::Parse(format!("session header: {e}")))
    }

    /// The header as one JSON line (no trailing newline), keys in pi's order.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod key_order_tests {
    use super::*;

    #[test]
    fn rewriting_an_entry_keeps_unknown_field_order() {
        let line = r#"{"type":"future_kind","id":"f1","parentId":null,"timestamp":"t","x":1,"y":null,"z":[2]}"#;
        assert_eq!(SessionEntry::from_json(line).unwrap().to_json(), line);
        let extra = r#"{"type":"custom","id":"c1","parentId":"f1","timestamp":"t","customType":"k","b":1,"a":2}"#;
        assert_eq!(SessionEntry::from_json(extra).unwrap().to_json(), extra);
    }
}
