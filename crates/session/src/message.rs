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
    pub custom_type: String,
    #[serde(default)]
    pub content: Content,
    #[serde(default)]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"bashExecution"`: a command the user ran with `!cmd`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    pub command: String,
    #[serde(default)]
    pub output: String,
    /// Absent when the command was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub cancelled: bool,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// Set by `!!cmd`: recorded but never shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"branchSummary"`: projected from a `branch_summary` entry; never stored as a message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    pub summary: String,
    pub from_id: String,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `role:"compactionSummary"`: projected from a `compaction` entry; never stored as a message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    pub summary: String,
    #[serde(default, deserialize_with = "arbor_ai::json::deserialize_count")]
    pub tokens_before: u64,
    #[serde(
        default = "Kept::absent",
        deserialize_with = "deserialize_kept_ms",
        skip_serializing_if = "Kept::is_absent"
    )]
    pub timestamp: Kept<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Any message the agent keeps in its transcript.
// Messages are built and matched far more often than moved; boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    Llm(Message),
    Custom(CustomMessage),
    BashExecution(BashExecutionMessage),
    BranchSummary(BranchSummaryMessage),
    CompactionSummary(CompactionSummaryMessage),
    /// A role this version does not know, kept verbatim; never sent to a model.
    Other(Map<String, Value>),
}

impl AgentMessage {
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
