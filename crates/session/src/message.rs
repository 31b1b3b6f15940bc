//! Agent messages: the LLM roles plus the roles the harness adds (`custom`, `bashExecution`,
//! `branchSummary`, `compactionSummary`). These are what `message` entries hold and what context
//! projection yields before `convert_to_llm` turns them into provider messages.

use arbor_ai::json::{describe, deserialize_kept_ms, from_object, RoleTagged};
use arbor_ai::types::{Content, Extra, Message};
use arbor_ai::Kept;
use serde::de::Error as _;

use crate::error::SessionError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// `role:"custom"` (v2 name `hookMessage`): extension-injected content that reaches the model as
/// a user message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// The extension's key (for a projected `custom_message` entry, that entry's `customType`).
    pub custom_type: String,
    /// What the model reads, as user content; absent or `null` reads as empty (DECISIONS §8.2).
    #[serde(default)]
    pub content: Content,
    /// Whether a UI shows the message in the transcript; the model sees it either way.
    #[serde(default)]
    pub display: bool,
    /// Extension metadata kept with the message; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Unix milliseconds; a message read without one stays without one (DECISIONS §25.40).
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    /// Fields this version does not model, kept in order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"bashExecution"`: a command the user ran with `!cmd`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command line that ran (without the `!`/`!!` prefix).
    pub command: String,
    /// What the command printed (stdout and stderr together), possibly cut; see `truncated`.
    #[serde(default)]
    pub output: String,
    /// Absent when the command was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The user stopped the command before it finished.
    #[serde(default)]
    pub cancelled: bool,
    /// `output` holds only part of what was printed; the rest is in `full_output_path`.
    #[serde(default)]
    pub truncated: bool,
    /// A file holding the whole output when `output` was cut; the model is told its path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// Set by `!!cmd`: recorded but never shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    /// Unix milliseconds; a message read without one stays without one (DECISIONS §25.40).
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    /// Fields this version does not model, kept in order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"branchSummary"`: projected from a `branch_summary` entry; never stored as a message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary text; the model reads it as user text between
    /// [`BRANCH_SUMMARY_PREFIX`](crate::context::BRANCH_SUMMARY_PREFIX) and its suffix.
    pub summary: String,
    /// The leaf the summarized branch ended at (`"root"` when there was none).
    pub from_id: String,
    /// Unix milliseconds; a message read without one stays without one (DECISIONS §25.40).
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    /// Fields this version does not model, kept in order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"compactionSummary"`: projected from a `compaction` entry; never stored as a message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text; the model reads it as user text between
    /// [`COMPACTION_SUMMARY_PREFIX`](crate::context::COMPACTION_SUMMARY_PREFIX) and its suffix.
    pub summary: String,
    /// The compaction's `tokensBefore`: the context's size when it was compacted.
    #[serde(default, deserialize_with = "arbor_ai::json::deserialize_count")]
    pub tokens_before: u64,
    /// Unix milliseconds; a message read without one stays without one (DECISIONS §25.40).
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    /// Fields this version does not model, kept in order and written back (DECISIONS §1.3).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Any message the agent keeps in its transcript.
// Messages are built and matched far more often than moved; boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    /// A provider message (`user`, `assistant`, `toolResult`, `system`), sent to the model as
    /// it is.
    Llm(Message),
    /// `custom`: an extension's message; the model reads it as a user message.
    Custom(CustomMessage),
    /// `bashExecution`: a command the user ran; user text for the model unless excluded.
    BashExecution(BashExecutionMessage),
    /// `branchSummary`: the projection of a `branch_summary` entry.
    BranchSummary(BranchSummaryMessage),
    /// `compactionSummary`: the projection of a `compaction` entry.
    CompactionSummary(CompactionSummaryMessage),
    /// A role this version does not know, kept verbatim; never sent to a model.
    Other(Map<String, Value>),
}

impl AgentMessage {
    /// The JSON `role` (`""` for an unknown message without a string `role`).
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::Llm(m) => m.role(),
            AgentMessage::Custom(_) => "custom",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::BranchSummary(_) => "branchSummary",
            AgentMessage::CompactionSummary(_) => "compactionSummary",
            AgentMessage::Other(map) => map.get("role").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The provider message, when this is one; `None` for the harness's roles and unknown ones
    /// (use [`convert_to_llm`](crate::context::convert_to_llm) for their model-visible form).
    pub fn as_llm(&self) -> Option<&Message> {
        match self {
            AgentMessage::Llm(m) => Some(m),
            _ => None,
        }
    }

    /// Parses from a JSON object, naming the failing field in the error.
    pub fn from_map(map: Map<String, Value>) -> Result<Self, SessionError> {
        Self::parse_map(map)
    }

    fn parse_map(map: Map<String, Value>) -> Result<Self, SessionError> {
        let map = match Message::from_map(map).map_err(|e| SessionError::Parse(e.to_string()))? {
            Ok(m) => return Ok(AgentMessage::Llm(m)),
            Err(map) => map,
        };
        let role = match map.get("role") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(SessionError::Parse(format!(
                    "role: expected a string, found {}",
                    describe(other)
                )))
            }
            None => return Err(SessionError::Parse("missing field `role`".to_owned())),
        };
        let strip = |mut m: Map<String, Value>| {
            // Not `remove`, which would move the last key into the role's place (DECISIONS
            // §25.61).
            m.shift_remove("role");
            m
        };
        let res = match role.as_str() {
            "custom" => from_object(strip(map)).map(AgentMessage::Custom),
            "bashExecution" => from_object(strip(map)).map(AgentMessage::BashExecution),
            "branchSummary" => from_object(strip(map)).map(AgentMessage::BranchSummary),
            "compactionSummary" => from_object(strip(map)).map(AgentMessage::CompactionSummary),
            _ => return Ok(AgentMessage::Other(map)),
        };
        res.map_err(|e| SessionError::Parse(format!("{role} message: {e}")))
    }
}

impl From<Message> for AgentMessage {
    fn from(m: Message) -> Self {
        AgentMessage::Llm(m)
    }
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let role = self.role();
        match self {
            AgentMessage::Llm(m) => m.serialize(s),
            AgentMessage::Custom(inner) => RoleTagged { role, inner }.serialize(s),
            AgentMessage::BashExecution(inner) => RoleTagged { role, inner }.serialize(s),
            AgentMessage::BranchSummary(inner) => RoleTagged { role, inner }.serialize(s),
            AgentMessage::CompactionSummary(inner) => RoleTagged { role, inner }.serialize(s),
            // Unknown roles carry their own `role`.
            AgentMessage::Other(map) => map.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        AgentMessage::from_map(map).map_err(D::Error::custom)
    }
}
