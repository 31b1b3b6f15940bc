//! The session loader's fast path: a JSONL entry line read straight into [`SessionEntry`],
//! without building a `serde_json::Value` of the line first (DECISIONS §25.60).
//!
//! Accepts a subset of what [`SessionEntry::from_json_via_value`] accepts and, on that subset,
//! yields the same entry. Anything else is an error that [`SessionEntry::from_json`] answers by
//! re-parsing with the `Value` path, so every error text (and the lone-surrogate retry of
//! DECISIONS §25.8) is that path's. Refused here: a line whose first key is not `type`, any
//! duplicate key, a type mismatch, a missing required field. A message whose first key is not
//! `role` is read into a map and handed to [`AgentMessage::from_map`].

use arbor_ai::json::Nullable;
use arbor_ai::kept::Kept;
use arbor_ai::typed_json::{
    first_tag, message_rest, missing, push_extra, rest_into, Count, FastContent, KeptMs, Key,
    KeySeed, OptUsage, Tagged,
};
use arbor_ai::typed_struct;
use arbor_ai::types::Content;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::entry::{
    ActiveToolsChangeEntry, BranchSummaryEntry, CompactionEntry, ContextEditEntry, CustomEntry,
    CustomMessageEntry, EntryKind, LabelEntry, LeafEntry, MessageEntry, ModelChangeEntry,
    SessionEntry, SessionInfoEntry, ThinkingLevelChangeEntry, UsageEntry,
};
use crate::error::SessionError;
use crate::message::{
    AgentMessage, BashExecutionMessage, BranchSummaryMessage, CompactionSummaryMessage,
    CustomMessage,
};

impl SessionEntry {
    /// Parses one JSONL line.
    ///
    /// Tries the direct typed reader first and, when it refuses the line for any reason,
    /// [`SessionEntry::from_json_via_value`], whose result (and error text) it then returns
    /// (DECISIONS §25.60).
    pub fn from_json(line: &str) -> Result<Self, SessionError> {
        match parse_entry(line) {
            Ok(entry) => Ok(entry),
            Err(_) => Self::from_json_via_value(line),
        }
    }

    /// The direct typed reader alone: `None` where [`SessionEntry::from_json`] would fall back
    /// to the `Value` path. For tests and benchmarks that check or measure the fast path.
    #[doc(hidden)]
    #[cfg(feature = "internals")]
    pub fn from_json_direct(line: &str) -> Option<Self> {
        parse_entry(line).ok()
    }
}

/// Parses one entry line; `Err` means "ask the `Value` path", not a message for people.
pub(crate) fn parse_entry(line: &str) -> Result<SessionEntry, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(line);
    let entry = de.deserialize_map(EntryVisitor)?;
    de.end()?;
    Ok(entry)
}

/// An [`AgentMessage`] read directly.
pub(crate) struct FastAgentMessage(pub AgentMessage);

impl<'de> Deserialize<'de> for FastAgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MessageVisitor).map(FastAgentMessage)
    }
}

impl From<FastAgentMessage> for AgentMessage {
    fn from(m: FastAgentMessage) -> Self {
        m.0
    }
}

/// `Option<AgentMessage>` (`null` is `None`).
struct OptMessage(Option<AgentMessage>);

impl<'de> Deserialize<'de> for OptMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<FastAgentMessage>::deserialize(d).map(|m| OptMessage(m.map(|m| m.0)))
    }
}

impl From<OptMessage> for Option<AgentMessage> {
    fn from(m: OptMessage) -> Self {
        m.0
    }
}

/// `Option<Vec<AgentMessage>>`.
struct OptMessages(Option<Vec<AgentMessage>>);

impl<'de> Deserialize<'de> for OptMessages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<Vec<FastAgentMessage>>::deserialize(d)
            .map(|m| OptMessages(m.map(|v| v.into_iter().map(|m| m.0).collect())))
    }
}

impl From<OptMessages> for Option<Vec<AgentMessage>> {
    fn from(m: OptMessages) -> Self {
        m.0
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = AgentMessage;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a message object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AgentMessage, A::Error> {
        let role = match first_tag(&mut map, "role")? {
            Tagged::Tag(role) => role,
            Tagged::Buffered(all) => {
                return AgentMessage::from_map(all).map_err(de::Error::custom);
            }
        };
        let mut map = match message_rest(role.as_str(), map)? {
            Ok(m) => return Ok(AgentMessage::Llm(m)),
            Err(map) => map,
        };
        Ok(match role.as_str() {
            "custom" => AgentMessage::Custom(typed_struct!(map, CustomMessage {
                custom_type: "customType" => String | return Err(missing("customType")),
                content: "content" => FastContent | Content::default(),
                display: "display" => bool | false,
                details: "details" => Option<Value> | None,
                timestamp: "timestamp" => KeptMs | Kept::absent(),
            })),
            "bashExecution" => {
                AgentMessage::BashExecution(typed_struct!(map, BashExecutionMessage {
                    command: "command" => String | return Err(missing("command")),
                    output: "output" => String | String::new(),
                    exit_code: "exitCode" => Option<i64> | None,
                    cancelled: "cancelled" => bool | false,
                    truncated: "truncated" => bool | false,
                    full_output_path: "fullOutputPath" => Option<String> | None,
                    exclude_from_context: "excludeFromContext" => Option<bool> | None,
                    timestamp: "timestamp" => KeptMs | Kept::absent(),
                }))
            }
            "branchSummary" => {
                AgentMessage::BranchSummary(typed_struct!(map, BranchSummaryMessage {
                    summary: "summary" => String | return Err(missing("summary")),
                    from_id: "fromId" => String | return Err(missing("fromId")),
                    timestamp: "timestamp" => KeptMs | Kept::absent(),
                }))
            }
            "compactionSummary" => {
                AgentMessage::CompactionSummary(typed_struct!(map, CompactionSummaryMessage {
                    summary: "summary" => String | return Err(missing("summary")),
                    tokens_before: "tokensBefore" => Count | 0,
                    timestamp: "timestamp" => KeptMs | Kept::absent(),
                }))
            }
            _ => {
                let mut all = Map::new();
                all.insert("role".to_owned(), Value::String(role.into_string()));
                rest_into(&mut all, &mut map)?;
                AgentMessage::Other(all)
            }
        })
    }
}

/// The envelope fields, as they are met (in any order after `type`).
#[derive(Default)]
struct EnvelopeSlots {
    id: Option<String>,
    parent_id: Option<Option<String>>,
    timestamp: Option<String>,
}

/// A [`MapAccess`] that takes `id`, `parentId` and `timestamp` out of the stream into
/// [`EnvelopeSlots`] and passes every other entry on, so the kinds' readers never see them.
struct EnvelopeTap<'s, A> {
    inner: A,
    env: &'s mut EnvelopeSlots,
}

fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(key));
    }
    *slot = Some(value);
    Ok(())
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for EnvelopeTap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key_seed(KeySeed)? else {
                return Ok(None);
            };
            match key.as_str() {
                "id" => {
                    let id: String = self.inner.next_value()?;
                    set_once(&mut self.env.id, id, "id")?;
                }
                "parentId" => {
                    let parent: Option<String> = self.inner.next_value()?;
                    set_once(&mut self.env.parent_id, parent, "parentId")?;
                }
                "timestamp" => {
                    let ts: String = self.inner.next_value()?;
                    set_once(&mut self.env.timestamp, ts, "timestamp")?;
                }
                "type" => return Err(de::Error::duplicate_field("type")),
                _ => {
                    return match key {
                        Key::Borrowed(s) => seed
                            .deserialize(de::value::BorrowedStrDeserializer::new(s))
                            .map(Some),
                        Key::Owned(s) => seed
                            .deserialize(de::value::StringDeserializer::new(s))
                            .map(Some),
                    }
                }
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = SessionEntry;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an entry object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut inner: A) -> Result<SessionEntry, A::Error> {
        // Borrowed from the line when it has no escapes (no allocation per entry).
        let entry_type = match inner.next_key_seed(KeySeed)? {
            Some(key) if key.as_str() == "type" => inner.next_value_seed(KeySeed)?,
            _ => return Err(de::Error::custom("`type` is not the first key")),
        };
        let mut env = EnvelopeSlots::default();
        let kind = {
            let mut map = EnvelopeTap {
                inner,
                env: &mut env,
            };
            kind(entry_type.as_str(), &mut map)?
        };
        match (env.id, env.parent_id, env.timestamp) {
            (Some(id), Some(parent_id), Some(timestamp)) if !id.is_empty() => Ok(SessionEntry {
                id,
                parent_id,
                timestamp,
                kind,
            }),
            _ => Err(de::Error::custom("incomplete envelope")),
        }
    }
}

/// Reads a kind's fields (the envelope filtered out by the tap).
fn kind<'de, A: MapAccess<'de>>(entry_type: &str, map: &mut A) -> Result<EntryKind, A::Error> {
    // `typed_struct!` wants an owned-looking identifier; a `&mut A` is a `MapAccess` too.
    let mut map = map;
    Ok(match entry_type {
        "message" => EntryKind::Message(typed_struct!(map, MessageEntry {
            message: "message" => FastAgentMessage | return Err(missing("message")),
        })),
        "thinking_level_change" => {
            EntryKind::ThinkingLevelChange(typed_struct!(map, ThinkingLevelChangeEntry {
                thinking_level: "thinkingLevel" => String | return Err(missing("thinkingLevel")),
            }))
        }
        "model_change" => EntryKind::ModelChange(typed_struct!(map, ModelChangeEntry {
            provider: "provider" => String | return Err(missing("provider")),
            model_id: "modelId" => String | return Err(missing("modelId")),
        })),
        "active_tools_change" => {
            EntryKind::ActiveToolsChange(typed_struct!(map, ActiveToolsChangeEntry {
                active_tool_names: "activeToolNames" => Nullable<Vec<String>> | Nullable::Absent,
            }))
        }
        "compaction" => EntryKind::Compaction(Box::new(typed_struct!(map, CompactionEntry {
            summary: "summary" => String | return Err(missing("summary")),
            first_kept_entry_id: "firstKeptEntryId" => Option<String> | None,
            tokens_before: "tokensBefore" => Count | 0,
            retained_tail: "retainedTail" => OptMessages | None,
            system_message: "systemMessage" => OptMessage | None,
            details: "details" => Option<Value> | None,
            usage: "usage" => OptUsage | None,
            from_hook: "fromHook" => Option<bool> | None,
        }))),
        "branch_summary" => EntryKind::BranchSummary(typed_struct!(map, BranchSummaryEntry {
            from_id: "fromId" => String | return Err(missing("fromId")),
            summary: "summary" => String | return Err(missing("summary")),
            details: "details" => Option<Value> | None,
            usage: "usage" => OptUsage | None,
            from_hook: "fromHook" => Option<bool> | None,
        })),
        "custom" => EntryKind::Custom(typed_struct!(map, CustomEntry {
            custom_type: "customType" => String | return Err(missing("customType")),
            data: "data" => Option<Value> | None,
        })),
        "custom_message" => EntryKind::CustomMessage(typed_struct!(map, CustomMessageEntry {
            custom_type: "customType" => String | return Err(missing("customType")),
            content: "content" => FastContent | Content::default(),
            display: "display" => bool | false,
            details: "details" => Option<Value> | None,
        })),
        "label" => EntryKind::Label(typed_struct!(map, LabelEntry {
            target_id: "targetId" => String | return Err(missing("targetId")),
            label: "label" => Nullable<String> | Nullable::Absent,
        })),
        "session_info" => EntryKind::SessionInfo(typed_struct!(map, SessionInfoEntry {
            name: "name" => Nullable<String> | Nullable::Absent,
        })),
        "leaf" => EntryKind::Leaf(typed_struct!(map, LeafEntry {
            target_id: "targetId" => Option<String> | None,
        })),
        "context_edit" => EntryKind::ContextEdit(typed_struct!(map, ContextEditEntry {
            target_id: "targetId" => String | return Err(missing("targetId")),
            replacement: "replacement" => Value | Value::Null,
        })),
        "usage" => EntryKind::Usage(typed_struct!(map, UsageEntry {
            kind: "kind" => String | String::new(),
            provider: "provider" => String | String::new(),
            model: "model" => String | String::new(),
            usage: "usage" => OptUsage | None,
            note: "note" => Option<String> | None,
        })),
        other => {
            let mut fields = Map::new();
            while let Some(key) = map.next_key_seed(KeySeed)? {
                push_extra(&mut fields, key, &mut map)?;
            }
            EntryKind::Other {
                entry_type: other.to_owned(),
                fields,
            }
        }
    })
}
